# gpu_lib.sh - sourced by the GPU-timeline tests (test_gpu_*.sh): drv,
# the gpu_driver program (gpu.mk; exit 1 when it is not built), and tmp,
# a scratch directory removed at exit.
# shellcheck shell=sh disable=SC2034  # drv is for the tests that source this
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
drv="$P3D_BUILD/tests/gpu_driver"
[ -x "$drv" ] || { echo "no $drv"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect_warnings JOB PATTERN: the job "bogus" (a setting the shim does
# not know) printed the warning PATTERN once per rank of 2, any other
# job no warning at all; stderr is in $tmp/err.
expect_warnings() {
    if [ "$1" = bogus ]; then
        n=$(grep -c "$2" "$tmp/err" || true)
        [ "$n" = 2 ] || { cat "$tmp/err"; echo "bogus: want one warning per rank"; exit 1; }
    elif grep -q "p3dtrace: warning" "$tmp/err"; then
        cat "$tmp/err"; echo "$1: unexpected warning"; exit 1
    fi
}

# run_plugin_job JOB [ENV=VALUE ...]: the 2-rank gpu_driver nccl job over
# the fakes with the plugin tests' settings (mixed ops spread over
# streams, no kernel window), its fake's truth in $tmp/JOB.truth, its
# stderr in $tmp/JOB.err; the assignments come last, so they win.
run_plugin_job() {
    job=$1; shift
    env P3D_FAKE_SHM_DIR="$tmp" P3D_TRACE_DIR="$tmp" P3D_JOB_ID="$job" \
        P3D_FAKE_PROFILER_LOG="$tmp/$job.truth" P3D_GPU_DRIVER_MIXED=1 \
        P3D_GPU_DRIVER_SPREAD=1 P3D_GPU_WINDOW=off \
        LD_LIBRARY_PATH="$P3D_BUILD/fakes" \
        LD_PRELOAD="$P3D_BUILD/libp3dtrace.so" "$@" \
        timeout 60 "$drv" nccl 2 2> "$tmp/$job.err"
}
