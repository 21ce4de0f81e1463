#!/bin/sh
# The shared-GPU warning (shim/p3d_gpu_shared.c), over the fakes: 2 ranks
# of gpu_driver nccl.  With LOCAL_WORLD_SIZE=2 and one visible GPU, CUPTI
# chosen by default must say once, from local rank 0 only, that the ranks
# time-slice one GPU; not with two GPUs, not with P3D_GPU_TIMING=events or
# an explicit cupti, and not when the launcher gives no LOCAL_WORLD_SIZE.
set -eu
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
. "$P3D_SRC/tests/integration/gpu_lib.sh"
# run NAME NDEV TIMING LOCAL_WORLD_SIZE: count of the warning's lines
run() {
    d="$tmp/$1"; mkdir -p "$d"
    P3D_FAKE_SHM_DIR="$d" P3D_TRACE_DIR="$d" P3D_JOB_ID="$1" \
    P3D_FAKE_NDEV="$2" P3D_GPU_TIMING="$3" LOCAL_WORLD_SIZE="$4" \
    LD_LIBRARY_PATH="$P3D_BUILD/fakes" LD_PRELOAD="$P3D_BUILD/libp3dtrace.so" \
        timeout 60 "$drv" nccl 2 2> "$d/err" || { cat "$d/err"; exit 1; }
    grep -c "share 1 visible GPU" "$d/err" || true
}
fail=0
expect() {
    if [ "$2" != "$3" ]; then
        echo "FAIL $1: $2 warning lines, want $3"; fail=1
    else
        echo "ok   $1: $2 warning lines"
    fi
}
expect "2 ranks, 1 GPU, auto" "$(run shared 1 auto 2)" 1
expect "2 ranks, 2 GPUs, auto" "$(run apart 2 auto 2)" 0
expect "2 ranks, 1 GPU, events" "$(run events 1 events 2)" 0
expect "2 ranks, 1 GPU, cupti asked for" "$(run asked 1 cupti 2)" 0
expect "no LOCAL_WORLD_SIZE" "$(run unknown 1 auto "")" 0
exit $fail
