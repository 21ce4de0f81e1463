#!/bin/sh
# ncclCommAbort during an op: rank 0 blocks in an all-reduce that rank 1
# never joins; another thread aborts the comm.  The blocked call returns
# the same error with and without the shim, and the trace holds the op
# and the comm's end by ncclCommAbort.
. "$(dirname "$0")/rel_lib.sh"
one() { # one MODE: both ranks, with the shim if MODE = shim
    pre=""
    [ "$1" = shim ] && pre=$SHIM
    rm -f "$T"/abort.id*
    RANK=1 WORLD_SIZE=2 LD_PRELOAD=$pre timeout 60 "$REL_DRIVER" \
        "$REL_LIB" abort > "$T/r1.$1" 2>&1 &
    p1=$!
    RANK=0 WORLD_SIZE=2 LD_PRELOAD=$pre timeout 60 "$REL_DRIVER" \
        "$REL_LIB" abort > "$T/r0.$1" 2> "$T/r0.$1.err" ||
        fail "rank 0 ($1): $(cat "$T/r0.$1.err")"
    wait $p1 || fail "rank 1 ($1): $(cat "$T/r1.$1")"
}
one plain
one shim
cmp -s "$T/r0.plain" "$T/r0.shim" ||
    fail "output differs: $(cat "$T/r0.plain") / $(cat "$T/r0.shim")"
grep -q 'returned an error' "$T/r0.shim" || fail "$(cat "$T/r0.shim")"
f=$(grep -l . "$T"/traces/job/*0.p3d 2>/dev/null | head -1)
[ -n "$f" ] || f=$(ls "$T"/traces/job/*.p3d | head -1)
found=0
for f in "$T"/traces/job/*.p3d; do
    want_ops "$f" 0
    grep -q 'how=ncclCommAbort' "$T/dump" && awk '$1 == "op"' "$T/dump" |
        grep -q AllReduce && found=1
done
[ "$found" = 1 ] || fail "no file with the all-reduce and the abort"
