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
# the abort came while the all-reduce was in the call (the driver waits
# for the thread to block in it), as the trace's own times say
found=0
for f in "$T"/traces/job/*.p3d; do
    want_ops "$f" 0
    grep -q 'how=ncclCommAbort' "$T/dump" || continue
    awk '$1 == "op" && /op=AllReduce/ { for (i = 1; i <= NF; i++)
             if ($i ~ /^t_enter=/) { sub(/t_enter=/, "", $i); op = $i } }
         /how=ncclCommAbort/ { for (i = 1; i <= NF; i++)
             if ($i ~ /^t_enter=/) { sub(/t_enter=/, "", $i); ab = $i } }
         END { exit !(op != "" && ab != "" && op + 0 < ab + 0) }' \
        "$T/dump" && found=1
done
[ "$found" = 1 ] ||
    fail "no file with the all-reduce and an abort after it began"
