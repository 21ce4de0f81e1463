# rel_lib.sh - sourced by the fault-injection tests (test_rel_*.sh): a
# scratch directory, the driver, and helpers that run a scenario with
# and without the shim and check the job saw no difference and the trace
# recorded before the fault is readable.
set -u
B=${P3D_BUILD:?}
S=${P3D_SRC:?}
SHIM=$B/libp3dtrace.so
ANALYZE=$B/p3d-analyze
export REL_DRIVER=$B/fakes/rel_driver REL_LIB=$B/fakes/librel_drv.so
for f in "$SHIM" "$ANALYZE" "$REL_DRIVER" "$REL_LIB"; do
    [ -e "$f" ] || { echo "skip: $f not built"; exit 77; }
done
T=$(mktemp -d /tmp/p3d-rel-test.XXXXXX)
[ -n "${REL_KEEP:-}" ] || trap 'rm -rf "$T"' EXIT
export P3D_TRACE_DIR=$T/traces P3D_FAKE_SHM_DIR=$T REL_ID_DIR=$T
unset RANK WORLD_SIZE LOCAL_RANK P3D_RANK P3D_DISABLE SLURM_JOB_ID \
    TORCHELASTIC_RUN_ID 2>/dev/null
export P3D_JOB_ID=job P3D_GPU_TIMING=off
# an ASan build of the shim preloaded into a program (see tests/rel/)
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
fail() { echo "FAIL: $*"; exit 1; }

# run_both NAME WANT_STATUS ARGS...: the scenario without, then with the
# shim; same stdout and exit status (WANT_STATUS) both times.
run_both() {
    name=$1 want=$2; shift 2
    timeout 60 "$REL_DRIVER" "$REL_LIB" "$@" > "$T/$name.plain" \
        2> "$T/$name.plain.err"
    st0=$?
    LD_PRELOAD=$SHIM timeout 60 "$REL_DRIVER" "$REL_LIB" "$@" \
        > "$T/$name.shim" 2> "$T/$name.shim.err"
    st1=$?
    [ "$st0" = "$want" ] ||
        fail "$name without the shim: status $st0, want $want: $(cat "$T/$name.plain.err")"
    [ "$st1" = "$st0" ] ||
        fail "$name: status $st1 under the shim, $st0 without: $(cat "$T/$name.shim.err")"
    cmp -s "$T/$name.plain" "$T/$name.shim" ||
        fail "$name: output differs under the shim: $(diff "$T/$name.plain" "$T/$name.shim")"
    # (under a sanitizer the two runs' reports may differ: not compared)
    [ -n "${REL_SANITIZED:-}" ] || grep -v '^p3dtrace: ' "$T/$name.shim.err" |
        cmp -s - "$T/$name.plain.err" ||
        fail "$name: stderr under the shim: $(cat "$T/$name.shim.err")"

}

# ops FILE: number of op records p3d-analyze --dump reads from FILE
# (fails the test if the file cannot be read).
ops() {
    "$ANALYZE" --dump "$1" > "$T/dump" 2> "$T/dump.err" ||
        fail "cannot read $1: $(cat "$T/dump.err")"
    awk '$1 == "op"' "$T/dump" | wc -l
}

# want_ops FILE MIN: FILE is readable and holds at least MIN op records.
want_ops() {
    got_=$(ops "$1")
    [ "$got_" -ge "$2" ] || fail "$1: $got_ op records, want >= $2"
}
