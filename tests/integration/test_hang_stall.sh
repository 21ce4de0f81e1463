#!/bin/sh
# Everyone waiting, nobody missing (issue 21): every rank entered the same
# world all-reduce and none completed, no op disagrees (p3d-gen --stall).
# No rank may be named as the root; the report says it is not a desync
# but an NCCL or network stall and what would tell; JSON hang.stall.
. "$(dirname "$0")/analyze_lib.sh"
"$G" --tp 2 --pp 2 --dp 2 --gpu --stall "$T/j" > /dev/null || fail "p3d-gen"
"$A" --json "$T/j.json" "$T/j" > "$T/j.txt" 2>&1
python3 - "$T/j.json" <<'PY' || fail "JSON"
import json, sys
h = json.load(open(sys.argv[1]))["hang"]
assert h["detected"] and h["stall"] and h["root_ranks"] == [], h
PY
grep -q "no root rank: every member .* not a desync but a stall in NCCL or the network: NCCL_RAS_ENABLE=1" \
    "$T/j.txt" || fail "text: $(grep 'hang analysis' "$T/j.txt")"
grep -q "HUNG: no root (all arrived, none completed" "$T/j.txt" ||
    fail "seed row"
echo "stall: no root named, NCCL/network pointed at"
