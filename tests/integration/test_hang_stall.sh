#!/bin/sh
# Everyone waiting, nobody missing (issue 21): every rank entered the same
# world all-reduce and none completed, no op disagrees (p3d-gen --stall),
# with GPU completion records (--gpu) and with host records only.
# No rank may be named as the root; the report says it is not a desync
# but an NCCL or network stall and what would tell; JSON hang.stall.
. "$(dirname "$0")/analyze_lib.sh"
for gpu in --gpu ""; do
    "$G" --tp 2 --pp 2 --dp 2 $gpu --stall "$T/j$gpu" > /dev/null ||
        fail "p3d-gen $gpu"
    "$A" --json "$T/j.json" "$T/j$gpu" > "$T/j.txt" 2>&1
    python3 - "$T/j.json" <<'PY' || fail "JSON ${gpu:-host records}"
import json, sys
h = json.load(open(sys.argv[1]))["hang"]
assert h["detected"] and h["stall"] and h["root_ranks"] == [], h
PY
    grep -q "no root rank: every member .* not a desync but a stall in NCCL or the network: NCCL_RAS_ENABLE=1" \
        "$T/j.txt" || fail "text ${gpu:-host}: $(grep 'hang analysis' "$T/j.txt")"
    grep -q "HUNG: no root (all arrived, none completed" "$T/j.txt" ||
        fail "seed row ${gpu:-host}"
done
# A CUDA-graph capture just before the stall (p3d-gen --captured: a world
# all-reduce that returned, flagged capturing, no GPU completion, since
# its kernels run at replays): it waits on nothing, so the ranks still
# wait in the stalled all-reduce, the op after it (seq 2, not 1).
"$G" --tp 2 --pp 2 --dp 2 --gpu --stall --captured "$T/c" > /dev/null ||
    fail "p3d-gen --captured"
"$A" --json "$T/c.json" "$T/c" > "$T/c.txt" 2>&1
python3 - "$T/c.json" <<'PY' || fail "captured: $(grep -m1 'waits in' "$T/c.txt")"
import json, sys
h = json.load(open(sys.argv[1]))["hang"]
assert h["detected"] and h["stall"] and h["root_ranks"] == [], h
seqs = {w["seq"] for w in h["chain"]}
assert seqs == {2}, h["chain"]
PY
# 32 ranks: each waits on 31 others, and its wait lists 8 of them,
# saying the list stops there (hang/p3d_hang_edges.c cuts such waits);
# the text puts waits alike on one line
"$G" --tp 2 --pp 2 --dp 8 --gpu --stall "$T/w" > /dev/null ||
    fail "p3d-gen 32 ranks"
"$A" --json "$T/w.json" "$T/w" > "$T/w.txt" 2>&1
python3 - "$T/w.json" <<'PY' || fail "32 ranks: $(grep -m1 'waits in' "$T/w.txt")"
import json, sys
h = json.load(open(sys.argv[1]))["hang"]
assert h["detected"] and h["stall"] and h["root_ranks"] == [], h
assert len(h["chain"]) == 32, len(h["chain"])
for w in h["chain"]:
    want = [r for r in range(32) if r != w["rank"]][:8]
    assert w["waiting_for"] == want, w
PY
# ranks 8-31 wait alike (same op, same first 8): one line for them
grep -q "^    ranks 8-31 (24) wait in AllReduce #1 on comm .* for rank(s) 0-7 (the list stops at 8)$" \
    "$T/w.txt" || fail "32 ranks: $(grep -m1 'ranks 8-31' "$T/w.txt")"
grep -q "^    rank 1 waits in AllReduce #1 on comm .* for rank(s) 0,2-8 (the list stops at 8)$" \
    "$T/w.txt" || fail "32 ranks, rank 1: $(grep -m1 'rank 1 waits' "$T/w.txt")"
echo "stall: no root named, NCCL/network pointed at, with and without GPU records, and past a graph-captured op"

