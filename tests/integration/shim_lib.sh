# shim_lib.sh - sourced by the shim's integration tests: a scratch
# directory, the paths of the shim and the test programs, and a skip (77)
# when the fakes or python3 are missing.
set -u
B=${P3D_BUILD:?}
S=${P3D_SRC:?}
SHIM=$B/libp3dtrace.so
DRV=$B/fakes/shim_driver
DRVLIB=$B/fakes/libshim_drv.so
CHECK="python3 $S/tests/integration/shim_check.py"
for f in "$SHIM" "$DRV" "$DRVLIB" "$B/fakes/libnccl.so.2"; do
    [ -e "$f" ] || { echo "skip: $f not built"; exit 77; }
done
command -v python3 >/dev/null || { echo "skip: no python3"; exit 77; }
[ -e "$S/tests/tools/p3d_trace.py" ] || [ -n "${P3D_TRACE_PY_DIR:-}" ] ||
    { echo "skip: tests/tools/p3d_trace.py missing"; exit 77; }
T=$(mktemp -d /tmp/p3d-shim-test.XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/ids"
export P3D_TRACE_DIR=$T/traces P3D_FAKE_SHM_DIR=$T SHIM_ID_DIR=$T/ids
unset RANK WORLD_SIZE LOCAL_RANK P3D_RANK P3D_DISABLE SLURM_JOB_ID \
    TORCHELASTIC_RUN_ID MASTER_ADDR MASTER_PORT 2>/dev/null
export P3D_JOB_ID=job
# these tests are about NCCL recording: GPU timing (and its warnings) off
export P3D_GPU_TIMING=off
# under make asan the shim needs the ASan runtime, which cannot come first
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
export LSAN_OPTIONS=${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=$S/tests/integration/shim_lsan.supp
fail() { echo "FAIL: $*"; exit 1; }
# run_rank RANK WORLD ARGS...: one rank of the driver under the shim
run_rank() {
    r=$1 w=$2; shift 2
    RANK=$r WORLD_SIZE=$w LD_PRELOAD=$SHIM timeout 30 "$DRV" "$DRVLIB" "$@"
}
