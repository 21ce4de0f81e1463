#!/bin/sh
# A rank whose trace lost records (its P3D_MAX_MB cap was reached half
# way: p3d-gen --capped 5; the shim then drops every record and counts
# them in the header, shim/p3d_writer.c) recorded fewer ops than it
# issued. What its trace lacks is no evidence: it is not a member behind,
# it proves no peer's op incomplete, and when the others hang waiting for
# it, it is named with state "records_dropped" (it may have issued its
# part: then the hang is a stall), never "exited early". With GPU
# completion records and with host records only.
. "$(dirname "$0")/analyze_lib.sh"
for gpu in --gpu ""; do
    w=${gpu:-host}
    "$G" --tp 2 --pp 2 --dp 2 $gpu --capped 5 "$T/c$gpu" > /dev/null ||
        fail "p3d-gen --capped $gpu"
    "$A" --json "$T/c.json" "$T/c$gpu" > "$T/c.txt" 2>&1
    python3 - "$T/c.json" <<'PY' || fail "capped, no hang ($w): $(grep -m2 'hang analysis\|behind' "$T/c.txt")"
import json, sys
j = json.load(open(sys.argv[1]))
assert not j["hang"]["detected"], j["hang"]
assert j["matching"]["members_behind"] == 0, j["matching"]
assert j["ranks"][5]["dropped_records"] > 0, j["ranks"][5]
assert all("dropped_records" not in r for r in j["ranks"] if r["rank"] != 5)
PY
    grep -q "rank(s) 5 lost [0-9]* records while recording" "$T/c.txt" ||
        fail "capped ($w): the report does not say rank 5 lost records"
    "$G" --tp 2 --pp 2 --dp 2 $gpu --capped 5 --stall "$T/s$gpu" > /dev/null ||
        fail "p3d-gen --capped --stall $gpu"
    "$A" --json "$T/s.json" "$T/s$gpu" > "$T/s.txt" 2>&1
    python3 - "$T/s.json" <<'PY' || fail "capped, stalled ($w): $(grep -m3 'root rank\|waits in' "$T/s.txt")"
import json, sys
h = json.load(open(sys.argv[1]))["hang"]
assert h["detected"] and h["root_ranks"] == [5], h["root_ranks"]
assert h["roots"][0]["state"] == "records_dropped", h["roots"][0]
# every other rank waits in the stalled world all-reduce, and none on an
# op "proven" incomplete by what rank 5's trace lacks
assert len(h["chain"]) == 7, h["chain"]
assert {(w["label"], w["seq"]) for w in h["chain"]} == {("WORLD", 1)}, h["chain"]
assert not any(w["proven_by_peers"] for w in h["chain"]), h["chain"]
PY
    grep -q "records were dropped, so whether it issued it is not known" \
        "$T/s.txt" || fail "capped, stalled ($w): the root's doubt is not said"
done
echo "dropped records: not behind, no proof from what is missing, the root named as not known; with and without GPU records"
