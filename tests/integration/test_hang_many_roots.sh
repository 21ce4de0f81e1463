#!/bin/sh
# A world collective half the job never reached (p3d-gen --stall
# --stall-absent: 128 ranks, ranks 64-127 stopped outside NCCL, the others
# wait in the world all-reduce): 64 roots. At 10k+ ranks that is
# thousands, so the report names every root in one line, shows four in
# full and the rest by kind, counts every member of the world
# communicator at its frontier (the JSON lists the first 64, and
# member_counts all), puts the members behind in one line each, and the
# 64 waits alike in one line.
# Before, the header named the first 64 roots as if they were all, and the
# text gave every root four lines.
. "$(dirname "$0")/analyze_lib.sh"
"$G" --tp 2 --pp 2 --dp 32 --gpu --stall --stall-absent 64 "$T/h" \
    > /dev/null || fail "p3d-gen --stall-absent"
"$A" --json "$T/h.json" "$T/h" > "$T/h.txt" 2>&1
python3 - "$T/h.json" <<'PY' || fail "JSON: $(grep -m1 'hang analysis' "$T/h.txt")"
import json, sys
h = json.load(open(sys.argv[1]))["hang"]
assert h["detected"] and not h["stall"], h["detected"]
assert h["root_ranks"] == list(range(64, 128)), h["root_ranks"]
assert len(h["chain"]) == 64, len(h["chain"])
fr = [f for f in h["frontiers"] if f["label"] == "WORLD"]
assert len(fr) == 1 and len(fr[0]["members"]) == 64, fr
assert fr[0]["member_counts"] == {"done": 0, "waiting": 64,
                                  "not_arrived": 64}, fr[0]["member_counts"]
PY
t=$T/h.txt
grep -q "HANG: 64 rank(s) wait inside NCCL; root rank(s) 64-127 (64 ranks)$" "$t" ||
    fail "header: $(grep -m1 'hang analysis' "$t")"
[ "$(grep -c '^  root rank [0-9]*:' "$t")" = 4 ] ||
    fail "root blocks shown: $(grep -c '^  root rank [0-9]*:' "$t"), want 4"
grep -q "^  \.\.\. and 60 more root ranks (--detail=hang shows each), by kind:$" "$t" ||
    fail "no line for the roots not shown"
grep -q "^    60: rank(s) 68-127: not inside NCCL .*; their peers wait for their part of AllReduce #1 on comm 0x[0-9a-f]* (WORLD)$" "$t" ||
    fail "roots by kind: $(grep -A1 'more root ranks' "$t")"
grep -q "^    ranks 0-63 (64) wait in AllReduce #1 on comm 0x[0-9a-f]* (WORLD) since [0-9.]* s, for rank(s) 64-71 (the list stops at 8)$" "$t" ||
    fail "chain: $(grep -A1 'chain of waits' "$t")"
grep -q "(WORLD): 1 / 1; 128 members: 64 waiting (0-63), 64 not_arrived (64-127)$" "$t" ||
    fail "frontier: $(grep -A1 'communicators on the chain' "$t")"
grep -q "incomplete: comm 0x[0-9a-f]* (WORLD): 64 ranks (64-127) issued 1 collectives, rank 0 issued 2$" "$t" ||
    fail "members behind: $(grep -m2 'incomplete:' "$t")"
grep -q "HUNG: 64 root ranks 64-127 (stopped outside NCCL)" "$t" ||
    fail "findings/seed row: $(grep -m1 'HUNG' "$t")"
n=$(wc -l < "$t")
[ "$n" -le 80 ] || fail "the report is $n lines (at most 80)"
"$A" --detail=hang "$T/h" > "$T/d.txt" 2>&1
[ "$(grep -c '^  root rank [0-9]*:' "$T/d.txt")" = 64 ] ||
    fail "--detail=hang: $(grep -c '^  root rank [0-9]*:' "$T/d.txt") root blocks, want 64"
# The same at a world communicator's init (p3d-gen --init-absent: ranks
# 0-63 blocked in it, with the watchdog's report, 64-127 never call it):
# each waits on 64 members it must guess from the layout, worked out once
# for all of them (hang/p3d_hang_init.c); 4,096 ranks took 93 s before.
# Its members are the world's, so it is named as WORLD, not "?".
"$G" --tp 2 --pp 2 --dp 32 --gpu --init-absent 64 "$T/i" \
    > /dev/null || fail "p3d-gen --init-absent"
"$A" --json "$T/i.json" "$T/i" > "$T/i.txt" 2>&1
python3 - "$T/i.json" <<'PY' || fail "init JSON: $(grep -m1 'hang analysis' "$T/i.txt")"
import json, sys
h = json.load(open(sys.argv[1]))["hang"]
assert h["detected"] and h["root_ranks"] == list(range(64, 128)), h["root_ranks"]
for r in h["roots"]:
    assert r["owed"]["op"] == "CommInit" and r["waiters"] == 64, r
    # guessed from the layout: the world's members, so a WORLD group
    assert r["owed"]["label"] == "WORLD", r["owed"]
    assert r["owed"]["members"] == list(range(64)), r["owed"]["members"]
assert len(h["chain"]) == 64 and all(
    w["op"] == "CommInit" and w["waiting_for"] == list(range(64, 72))
    for w in h["chain"]), h["chain"][0]
PY
grep -q "root rank(s) 64-127 (64 ranks)$" "$T/i.txt" ||
    fail "init header: $(grep -m1 'hang analysis' "$T/i.txt")"
echo "64 roots: one line names them all, four shown, the rest by kind; the world communicator's 128 members counted; $n lines; the same at a world init"
