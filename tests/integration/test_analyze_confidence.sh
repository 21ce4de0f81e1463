#!/bin/sh
# The layout says how sure it is (issue 21): "likely" for a complete job
# whose traces fit one layout best, "none" (and n/a in the seed row, the
# verdict marked as one rank's) for a single rank file, never "certain"
# with ranks missing, "certain" for a --layout the traces agree with and
# "ambiguous" for one they contradict; --layout infer ignores what is
# stated.  Mismatch values appear by name (redop max/sum), in text and
# JSON.
. "$(dirname "$0")/analyze_lib.sh"
EX=$P3D_SRC/traces/example-tp2pp2dp2
[ -d "$EX" ] || { echo "skip: no example traces"; exit 77; }
conf() { # conf OUT.json: layout.confidence
    python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["layout"]["confidence"])' "$1"
}
"$A" --json "$T/full.json" "$EX" > "$T/full.txt" 2>&1 || fail "full"
[ "$(conf "$T/full.json")" = likely ] || fail "full: $(conf "$T/full.json")"
grep -q "^  confidence: likely: inferred: no other layout fits" \
    "$T/full.txt" || fail "full: no confidence line"
python3 - "$T/full.json" <<'PY' || fail "full: alternatives"
import json, sys
l = json.load(open(sys.argv[1]))["layout"]
assert l["alternatives"] and all(a["why"] for a in l["alternatives"]), l
assert all(a["layout"] != "tp=2 cp=1 ep=1 dp=2 pp=2 order=tp-cp-ep-dp-pp"
           for a in l["alternatives"]), "the chosen layout listed as its own alternative"
PY
# one rank file of eight
"$A" --json "$T/one.json" "$EX/rank-00000.p3d" > "$T/one.txt" 2>&1
[ "$(conf "$T/one.json")" = none ] || fail "one file: $(conf "$T/one.json")"
grep -q "^  confidence: none: no communicator of 2+ ranks has every member" \
    "$T/one.txt" || fail "one file: no confidence line"
grep -q "^| example-tp2pp2dp2 | n/a | n/a | n/a | n/a |" "$T/one.txt" ||
    fail "one file: the seed row states a layout"
grep -q "verdict: .*(from the 1 of 8 ranks traced only)" "$T/one.txt" ||
    fail "one file: the verdict does not say it is one rank's"
grep -q "verdict: .*most exposed time is on OTHER" "$T/one.txt" &&
    fail "one file: the verdict names a group it cannot know"
# six of eight ranks
mkdir "$T/six"
for r in 0 1 2 3 4 5; do cp "$EX/rank-0000$r.p3d" "$T/six/"; done
"$A" -q --json "$T/six.json" "$T/six" > /dev/null 2>&1
c=$(conf "$T/six.json")
[ "$c" != certain ] && [ "$c" != likely ] || fail "six of eight: $c"
# stated layouts
"$A" -q --json "$T/ok.json" --layout tp=2,pp=2 "$EX" > /dev/null 2>&1
[ "$(conf "$T/ok.json")" = certain ] || fail "--layout: $(conf "$T/ok.json")"
"$A" -q --json "$T/bad.json" --layout tp=4,pp=2 "$EX" > /dev/null 2>&1
[ "$(conf "$T/bad.json")" = ambiguous ] ||
    fail "contradicted --layout: $(conf "$T/bad.json")"
"$A" -q --json "$T/inf.json" --layout infer "$EX" > /dev/null 2>&1 ||
    fail "--layout infer"
python3 -c 'import json, sys
l = json.load(open(sys.argv[1]))["layout"]
assert l["source"] == "inferred" and (l["tp"], l["pp"], l["dp"]) == (2, 2, 2), l
' "$T/inf.json" || fail "--layout infer: not the traces' layout"
# mismatch values by name
S=$P3D_BUILD/p3d-sim
if [ -x "$S" ]; then
    P3D_QUIET=1 "$S" --tp 2 --pp 2 --dp 2 -m 4 --iters 2 \
        --mismatch 2:tp:3:op --out "$T" --job-id mo \
        --shim "$P3D_BUILD/libp3dtrace.so" --quiet > /dev/null 2>&1
    "$A" --json "$T/mo.json" "$T/mo" > "$T/mo.txt" 2>&1
    grep -q "redop differs: rank 2 has max, rank 3 has sum" "$T/mo.txt" ||
        fail "mismatch not by name: $(grep mismatch "$T/mo.txt")"
    python3 -c 'import json, sys
m = json.load(open(sys.argv[1]))["matching"]["mismatches"][0]
assert (m["value_a"], m["value_b"], m["value_a_raw"]) == ("max", "sum", 2), m
' "$T/mo.json" || fail "JSON mismatch values not by name"
fi
echo "confidence: likely / none / not certain / certain / ambiguous; names"
