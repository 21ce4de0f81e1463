# gpu_lib.sh - sourced by the GPU-timeline tests (test_gpu_*.sh): drv,
# the gpu_driver program (gpu.mk; exit 1 when it is not built), and tmp,
# a scratch directory removed at exit.
# shellcheck shell=sh disable=SC2034  # drv is for the tests that source this
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
drv="$P3D_BUILD/tests/gpu_driver"
[ -x "$drv" ] || { echo "no $drv"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
