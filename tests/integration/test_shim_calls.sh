#!/bin/sh
# Every wrapped NCCL call recorded once with the right fields on 2 ranks:
# hashes (root, split, NOCOLOR, shrink), seq numbers, groups, the nested
# ncclBcast -> ncclBroadcast guard, non-blocking init, async-error count.
. "$(dirname "$0")/shim_lib.sh"
run_rank 0 2 all > "$T/out0" 2> "$T/err0" &
p0=$!
run_rank 1 2 all > "$T/out1" 2> "$T/err1" || fail "rank 1: $(cat "$T/err1")"
wait $p0 || fail "rank 0: $(cat "$T/err0")"
grep -q p3dtrace "$T/err0" "$T/err1" && fail "unexpected warning"
polls=$(sed -n 's/^cfg_polls //p' "$T/out0")
[ "$polls" = "$(sed -n 's/^cfg_polls //p' "$T/out1")" ] || fail "polls"
rev=$(sed -n 's/^revoked_err //p' "$T/out0")
st="$(sed -n 's/^stream //p' "$T/out0"),$(sed -n 's/^stream //p' "$T/out1")"
$CHECK all "$T/traces/job" "$T/ids" "$polls" "$rev" "$st"
