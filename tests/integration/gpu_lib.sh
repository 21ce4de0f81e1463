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
