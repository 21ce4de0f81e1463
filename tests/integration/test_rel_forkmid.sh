#!/bin/sh
# fork() in the middle of NCCL traffic: 3 threads keep issuing
# all-reduces (so writer state is in use) while the main thread forks 6
# children: two call nothing, two call NCCL, two exec a new traced run.
# No child deadlocks or crashes, results and exit status are unchanged,
# and every file is readable: the parent's, the NCCL-calling children's
# (flagged forked) and the exec'd runs' (5 ops each).
. "$(dirname "$0")/rel_lib.sh"
# LeakSanitizer in a child forked from a multi-threaded parent can hang
# stopping threads that do not exist there: no leak check here
export ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0
run_both forkmid 0 forkmid 3 6
[ "$(grep -c '^loop 5 ok$' "$T/forkmid.shim")" = 2 ] || fail "exec children"
n=0
for f in "$T"/traces/job/*.p3d; do
    [ -e "$f" ] || fail "no trace files"
    want_ops "$f" 3
    n=$((n + 1))
done
# parent + 2 NCCL children + 2 exec'd runs (calling-nothing children
# leave no file)
[ "$n" = 5 ] || fail "want 5 trace files, got $n: $(ls "$T/traces/job")"
# A forked child takes no call-site stacks (a parent thread may have held
# the unwinder's lock at fork(): the child's first walk would block)
forked=0
for f in "$T"/traces/job/*.p3d; do
    "$ANALYZE" --dump "$f" > "$T/dump" 2>&1
    head -1 "$T/dump" | grep -q 'flags=0x000[89]' || continue
    forked=$((forked + 1))
    grep '^op ' "$T/dump" | grep -qv ' stack_id=0 ' &&
        fail "a forked child took a stack: $(grep '^op ' "$T/dump" | head -2)"
done
[ "$forked" = 2 ] || fail "want 2 files flagged forked, got $forked"
