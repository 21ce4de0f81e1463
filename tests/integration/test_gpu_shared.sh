#!/bin/sh
# The shared-GPU warning (shim/p3d_gpu_shared.c), over the fakes: 2 ranks
# of gpu_driver nccl.  Both ranks on device 0 with CUPTI chosen by default:
# exactly one line for the job, naming the GPU's bus id.  Not when the
# ranks use devices 0 and 1, not with P3D_GPU_TIMING=events, and not when
# cupti was asked for explicitly.  A rerun into the same job folder
# (markers of exited processes left there) says it again when shared and
# stays quiet when not.
set -eu
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
. "$P3D_SRC/tests/integration/gpu_lib.sh"
# run NAME SPREAD TIMING: count of the warning's lines of both ranks
run() {
    d="$tmp/$1"; mkdir -p "$d"
    P3D_FAKE_SHM_DIR="$d" P3D_TRACE_DIR="$d" P3D_JOB_ID="$1" \
    P3D_GPU_DRIVER_SPREAD="$2" P3D_GPU_TIMING="$3" \
    LD_LIBRARY_PATH="$P3D_BUILD/fakes" LD_PRELOAD="$P3D_BUILD/libp3dtrace.so" \
        timeout 60 "$drv" nccl 2 2> "$d/err" || { cat "$d/err" >&2; exit 1; }
    grep -c "share GPU 0000:10:00.0 on " "$d/err" || true
}
fail=0
expect() {
    if [ "$2" != "$3" ]; then
        echo "FAIL $1: $2 warning lines, want $3"; fail=1
    else
        echo "ok   $1: $2 warning lines"
    fi
}
expect "2 ranks on device 0, auto" "$(run shared "" auto)" 1
expect "2 ranks on devices 0 and 1, auto" "$(run apart 1 auto)" 0
expect "2 ranks on device 0, events" "$(run events "" events)" 0
expect "2 ranks on device 0, cupti asked for" "$(run asked "" cupti)" 0
expect "rerun of the shared job, same folder" "$(run shared "" auto)" 1
expect "rerun of the apart job, same folder" "$(run apart 1 auto)" 0
exit $fail
