#!/bin/sh
# The text report of issue 22: it leads with the answer and stays short
# (at most 60 lines for 8 ranks, 80 for 1,024), the per-stage bubble parts
# add up to the bubble, every finding has a next step, --detail adds the
# detail (and rejects unknown words), -q with an output file prints
# nothing on stdout, and clock uncertainties are never negative (p3d-gen's
# hosts have bounds that contradict each other).
. "$P3D_SRC/tests/integration/analyze_lib.sh"
EX=$P3D_SRC/traces/example-tp2pp2dp2
"$A" "$EX" > "$T/ex.txt" 2> "$T/ex.err" || fail "example rc"
n=$(wc -l < "$T/ex.txt")
[ "$n" -le 60 ] || fail "example: $n lines, more than 60"
# the answer's order: layout, time, matching, findings, seed row
order=$(grep -n '^layout:\|^time:\|^cross-rank matching\|^findings\|^seed table row' "$T/ex.txt" | cut -d: -f2 | tr '\n' '|')
[ "$order" = "layout|time|cross-rank matching|findings (most severe first; each with a next step)|seed table row|" ] ||
    fail "example: sections in the wrong order: $order"
grep -q '^per rank' "$T/ex.txt" && fail "per-rank detail without --detail"
# the example's command line has no batch or sequence flags: said so
grep -q '^  throughput: not known (tokens/s needs the global batch' "$T/ex.txt" ||
    fail "example: no throughput line"
# every finding has its next step
f=$(grep -c '^  [0-9]*\. \[' "$T/ex.txt"); x=$(grep -c '^     next: ' "$T/ex.txt")
[ "$f" -ge 1 ] && [ "$f" = "$x" ] || fail "findings $f, next steps $x"
# stage lines: bubble = fill + steady = sender + transfer +- rest (0.1 rounding)
python3 - "$T/ex.txt" <<'PY' || fail "bubble parts do not add up"
import re, sys
n = 0
for l in open(sys.argv[1]):
    m = re.match(r"    stage \d+: bubble ([\d.]+)% = warm-up/cool-down ([\d.]+)% "
                 r"\+ steady ([\d.]+)%; = waiting for the sender ([\d.]+)% \+ "
                 r"transfer ([\d.]+)% ([+-]) .* ([\d.]+)%; compute", l)
    if not m:
        continue
    b, fl, st, se, tr, sg, r = m.groups()
    b, fl, st, se, tr, r = map(float, (b, fl, st, se, tr, r))
    assert abs(b - fl - st) <= 0.15, l
    assert abs(b - se - tr - (r if sg == "+" else -r)) <= 0.2, l
    n += 1
assert n == 2, "stage lines found: %d" % n
PY
# the same findings in the text, the JSON and the HTML; the HTML's legend
# names only groups the job's communicators are
"$A" -q --json "$T/ex.json" --html "$T/ex.html" "$EX" || fail "json+html rc"
# the JSON's stage parts add up too, with the remainder the text names
python3 - "$T/ex.json" <<'PY' || fail "JSON bubble parts do not add up"
import json, sys
st = json.load(open(sys.argv[1]))["bubble"]["per_stage"]
assert len(st) == 2, st
for g in st:
    parts = g["late_sender_frac"] + g["transfer_frac"] + g["rest_frac"]
    assert abs(g["bubble_frac"] - parts) < 1e-5, g
    assert abs(g["bubble_frac"] - g["fill_frac"] - g["steady_frac"]) < 1e-5, g
PY
python3 - "$T/ex.txt" "$T/ex.json" "$T/ex.html" <<'PY' || fail "findings differ between text, JSON and HTML"
import html, json, re, sys
txt = [re.sub(r"^  \d+\. \[\w+\] ", "", l.rstrip("\n"))
       for l in open(sys.argv[1]) if re.match(r"^  \d+\. \[", l)]
js = json.load(open(sys.argv[2]))
fs = js["findings"]
assert fs and [f["what"] for f in fs][:len(txt)] == txt, (txt, fs)
page = html.unescape(open(sys.argv[3]).read())
for f in fs:
    assert f["what"] in page and f["next"] in page, f["what"]
labels = {c["used_as"] for c in js["communicators"]}
legend = re.findall(r'class="key"><i style="background:[^"]*"></i>([^<]+)<', page)
groups = [g for g in legend if g not in ("compute", "other NCCL", "bubble", "idle")]
assert groups and set(groups) <= labels, (groups, labels)
PY
grep -q 'Share of the steady iterations' "$T/ex.html" || fail "HTML bars are not the time analysis's"
# --detail
"$A" --detail "$EX" > "$T/all.txt" 2>/dev/null || fail "--detail rc"
for s in '^per rank' '^communicators (' '^coordinate map' 'wait at NxN = ' '    iteration 1: '; do
    grep -q "$s" "$T/all.txt" || fail "--detail lacks '$s'"
done
"$A" --detail=ranks "$EX" > "$T/r.txt" 2>/dev/null || fail "--detail=ranks rc"
grep -q '^per rank' "$T/r.txt" && ! grep -q '^coordinate map' "$T/r.txt" ||
    fail "--detail=ranks did not add only the ranks"
"$A" --detail=bogus "$EX" > /dev/null 2> "$T/bad.err"; rc=$?
[ $rc -eq 2 ] && grep -q "bad --detail 'bogus'" "$T/bad.err" || fail "--detail=bogus: rc $rc"
# -q with an output file: nothing on stdout; without one: the report
"$A" -q --json "$T/q.json" "$EX" > "$T/q.out" 2>&1 || fail "-q rc"
[ ! -s "$T/q.out" ] && [ -s "$T/q.json" ] || fail "-q --json FILE printed on stdout"
"$A" -q "$EX" | grep -q '^layout:' || fail "-q without an output file printed no report"
# progress: on a terminal only, once the analysis has taken
# P3D_PROGRESS_AFTER seconds (0 here: from the start; 1000: never)
if command -v script > /dev/null && script -qec true /dev/null > /dev/null 2>&1; then
    P3D_PROGRESS_AFTER=0 script -qec "'$A' '$EX' > /dev/null" /dev/null > "$T/tty0" 2>&1
    grep -q "reading the rank files (pass 1 of [0-9]*), [0-9]* of 8 rank files read" "$T/tty0" ||
        fail "no progress on a terminal: $(head -c 300 "$T/tty0")"
    # one process: its passes, not p3d-analyze-mpi's fetch
    grep -q "findings (pass 8 of 8)" "$T/tty0" && ! grep -q "fetching" "$T/tty0" ||
        fail "progress counts a pass one process does not run: $(tr '\r' '\n' < "$T/tty0" | grep -a 'pass' | tail -3)"
    P3D_PROGRESS_AFTER=1000 script -qec "'$A' '$EX' > /dev/null" /dev/null > "$T/tty1" 2>&1
    grep -q "pass 1 of" "$T/tty1" && fail "progress before its threshold"
    P3D_PROGRESS_AFTER=0 script -qec "'$A' -q '$EX' > /dev/null" /dev/null > "$T/tty2" 2>&1
    grep -q "pass 1 of" "$T/tty2" && fail "progress with -q"
fi
P3D_PROGRESS_AFTER=0 "$A" "$EX" 2> "$T/pipe.err" > /dev/null
grep -q "pass 1 of" "$T/pipe.err" && fail "progress on a stderr that is not a terminal"
# --html and --chrome each add one read of each rank file to the
# default report's
lib=$P3D_BUILD/tests/libopen_count.so
if [ -f "$lib" ]; then
    opens() { rm -f "$T/oc"; P3D_OPEN_COUNT_FILE="$T/oc" LD_PRELOAD="$lib" \
        "$A" -q "$@" "$EX" > /dev/null 2>&1; cat "$T/oc"; }
    o0=$(opens) o1=$(opens --html "$T/oc.html") o2=$(opens --chrome "$T/oc.json")
    [ $((o1 - o0)) -eq 8 ] || fail "--html read the 8 rank files $((o1 - o0)) more times, not 8"
    [ $((o2 - o0)) -eq 8 ] || fail "--chrome read the 8 rank files $((o2 - o0)) more times, not 8"
fi
# clocks that contradict: the uncertainty stays >= 0 and the text says so
"$G" --tp 4 --pp 4 --dp 4 --gpu "$T/g64" > /dev/null 2>&1 || fail "p3d-gen"
"$A" --detail=time --json "$T/g.json" "$T/g64" > "$T/g.txt" 2>/dev/null || fail "g64 rc"
grep -q '(+- -' "$T/g.txt" && fail "a negative uncertainty in the text"
python3 - "$T/g.json" <<'PY' || fail "clock JSON"
import json, sys
h = json.load(open(sys.argv[1]))["clock"]["hosts"]
assert all(x["uncertainty_ns"] >= 0 for x in h), h
assert any(x.get("bounds_contradict_ns", 0) > 0 for x in h), "no contradiction flagged"
PY
grep -q 'bounds contradict each other by' "$T/g.txt" || fail "contradiction not said"
# 1,024 ranks: at most 80 lines
"$G" --tp 8 --pp 8 --dp 16 --gpu "$T/g1k" > /dev/null 2>&1 || fail "p3d-gen 1024"
n=$("$A" "$T/g1k" 2>/dev/null | wc -l)
[ "$n" -le 80 ] || fail "1,024 ranks: $n lines, more than 80"
# and its lines stay readable: strided groups are shortened, and a cut
# list says how many groups there are
"$A" "$T/g1k" 2>/dev/null > "$T/g1k.rep"
w=$(awk '{ if (length($0) > m) m = length($0) } END { print m }' "$T/g1k.rep")
[ "$w" -le 400 ] || fail "1,024 ranks: a line of $w characters"
grep -q '^  DP groups: \[0,8,...,120\] .* (64 groups of 16 in all)$' "$T/g1k.rep" ||
    fail "1,024 ranks: DP groups not shortened: $(grep 'DP groups' "$T/g1k.rep" | cut -c1-120)"
# its bounds contradict beyond meaning (the generator's cross-host times
# are not causal): no solver placeholder shows as an uncertainty
"$A" --detail=time --json "$T/g1k.json" "$T/g1k" > "$T/g1k.txt" 2>/dev/null
grep -q 'so the offset is not known' "$T/g1k.txt" || fail "g1k: unknown offsets not said"
grep -q '^    (the clock offsets of 127 host(s) are not known, above: waits between ranks on different hosts' "$T/g1k.txt" ||
    fail "g1k: stragglers without the unknown clocks' caveat"
grep -q 'clock offsets of .* are not known' "$T/ex.txt" && fail "example: a clock caveat on one host"
grep -E '\(\+- [0-9]{7,}' "$T/g1k.txt" && fail "g1k: an uncertainty of hours or more in the text"
python3 - "$T/g1k.json" <<'PY' || fail "g1k clock JSON"
import json, sys
h = json.load(open(sys.argv[1]))["clock"]["hosts"]
unknown = [x for x in h if x.get("offset_known") is False]
assert unknown, "no host's offset is marked unknown"
assert json.load(open(sys.argv[1]))["clock"]["hosts_offset_unknown"] == len(unknown)
assert all(x["uncertainty_ns"] is None and x["bounds_contradict_ns"] is None
           for x in unknown), unknown[:2]
assert all(x["uncertainty_ns"] is not None and 0 <= x["uncertainty_ns"] < 3.6e12
           for x in h if x.get("offset_known") is not False), h[:2]
PY
echo "ok: example $(wc -l < "$T/ex.txt") lines, 1,024 ranks $n lines"
