#!/bin/sh
# The shim changes nothing and writes nothing where it must not:
# P3D_DISABLE=1, processes that never call NCCL, an unwritable trace dir
# (one warning line, job unharmed), and NCCL symbols that cannot be found
# (error code, one warning per symbol, no crash).
. "$(dirname "$0")/shim_lib.sh"
P3D_DISABLE=1 run_rank 0 1 threads 2 10 2> "$T/err" || fail "disabled run"
[ -e "$T/traces" ] && fail "P3D_DISABLE=1 wrote $(ls -R "$T/traces")"
[ -s "$T/err" ] && fail "P3D_DISABLE=1 printed: $(cat "$T/err")"
run_rank 0 1 noop || fail "noop run"
LD_PRELOAD=$SHIM sh -c 'true; ls / > /dev/null' || fail "shell"
[ -e "$T/traces" ] && fail "a process without NCCL wrote a trace"
: > "$T/plain"
P3D_TRACE_DIR=$T/plain/sub run_rank 0 1 threads 2 50 2> "$T/err" ||
    fail "job harmed by an unwritable trace dir"
[ "$(grep -c '^p3dtrace: warning: ' "$T/err")" = 1 ] ||
    fail "want one warning line, got: $(cat "$T/err")"
RANK=0 LD_PRELOAD=$SHIM timeout 30 "$DRV" "$B/fakes/libshim_missing.so" x \
    > "$T/out" 2> "$T/err" || fail "missing symbols: $(cat "$T/err")"
grep -q '^missing_ok 1' "$T/out" || fail "wrong error codes"
[ "$(grep -c "^p3dtrace: warning: cannot find the real 'ncclAllReduce'" \
    "$T/err")" = 1 ] || fail "want one warning for ncclAllReduce"
[ "$(grep -c '^p3dtrace: warning: ' "$T/err")" = 3 ] ||
    fail "want 3 warnings (one per symbol): $(cat "$T/err")"
# a file size limit (ulimit -f, 512 or 1024-byte blocks) caps the trace
# instead of raising SIGXFSZ
(ulimit -f 4096; SHIM_LOOP_QUIET=1 run_rank 0 1 loop 50000 > /dev/null \
    2> "$T/err") || fail "job harmed by ulimit -f: $(cat "$T/err")"
grep -q '^p3dtrace: warning: .*size cap' "$T/err" || fail "no cap warning"
$CHECK count "$T/traces/job" 10000 44000 || exit 1  # 2 or 4 MiB
echo "quiet: ok"
