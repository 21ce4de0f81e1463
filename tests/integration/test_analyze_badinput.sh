#!/bin/sh
# Bad input: every injected fault gives a clear message naming the file
# (and the offset where there is one), the documented exit status, and the
# partial result where one makes sense.
set -u
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
. "$P3D_SRC/tests/integration/analyze_lib.sh"
fails=0
# case NAME GEN-OPTS WANT-RC STDERR-REGEX STDOUT-REGEX
case_() {
    name=$1 opts=$2 want=$3 emsg=$4 omsg=$5
    d=$T/$name
    "$G" --tp 2 --pp 2 --dp 2 $opts "$d" || { echo "gen failed"; exit 1; }
    "$A" --detail "$d" > "$T/out" 2> "$T/err"
    rc=$?
    if [ $rc -ne $want ]; then
        echo "FAIL $name: rc=$rc, want $want"; cat "$T/err"
        fails=$((fails+1)); return
    fi
    if [ "$emsg" != - ] && ! grep -Eq -- "$emsg" "$T/err"; then
        echo "FAIL $name: stderr lacks /$emsg/:"; cat "$T/err"
        fails=$((fails+1)); return
    fi
    if ! grep -Eq -- "$omsg" "$T/out"; then
        echo "FAIL $name: stdout lacks /$omsg/"; head -3 "$T/out"
        fails=$((fails+1))
    fi
}
R3="'[^']*/rank-00003.p3d'"
case_ truncated "--truncate 3" 0 \
    "^p3d-analyze: warning: $R3: truncated tail; using [0-9]+ records$" \
    "^job 'genjob': 8 of 8 ranks"
grep -Eq "^  rank 3: $R3: truncated tail; using [0-9]+ records$" "$T/out" ||
    { echo "FAIL truncated: the report does not name rank 3's damage"
      fails=$((fails+1)); }
case_ killed "--killed 3" 0 \
    "^p3d-analyze: warning: $R3: not closed cleanly \(process killed\?\); using [0-9]+ records$" \
    "unmatched: comm 0x[0-9a-f]{16} \(PP\) 7 -> 3: [1-9][0-9]* sends never received"
grep -Eq "rank 3 issued [0-9]+ collectives on comm 0x[0-9a-f]{16} \(TP\), rank 2 issued [0-9]+" "$T/out" ||
    { echo "FAIL killed: rank 3 not reported behind on TP"; fails=$((fails+1)); }
case_ badmagic "--bad-magic 3" 2 \
    "^p3d-analyze: error: $R3: bad magic" "7 of 8 ranks have readable traces"
grep -Eq "^  rank 3: $R3: bad magic" "$T/out" ||
    { echo "FAIL badmagic: the report does not name rank 3's file"
      fails=$((fails+1)); }
# a file cut inside its header: named in the report, its host not listed
"$G" --tp 2 --pp 2 --dp 2 "$T/short" || exit 1
head -c 100 "$T/short/rank-00003.p3d" > "$T/short3" &&
    mv "$T/short3" "$T/short/rank-00003.p3d"
"$A" --json "$T/short.json" "$T/short" > "$T/out" 2> "$T/err"
[ $? -eq 2 ] || { echo "FAIL short: rc"; fails=$((fails+1)); }
grep -Eq "^  rank 3: $R3: file too short for a trace header \(100 bytes" \
    "$T/out" || { echo "FAIL short: not named in the report"; cat "$T/out" | head -4
                  fails=$((fails+1)); }
[ "$(grep -c "file too short" "$T/err")" = 1 ] ||
    { echo "FAIL short: stderr"; cat "$T/err"; fails=$((fails+1)); }
grep -q '"hosts": \[""\|, ""\]' "$T/short.json" &&
    { echo "FAIL short: an empty host listed"; fails=$((fails+1)); }
case_ future "--future-major 3" 2 \
    "^p3d-analyze: error: $R3: trace format version 2\.0, this p3d-analyze reads version 1\.x" \
    "missing ranks: 3"
case_ hugelen "--huge-len 3" 2 \
    "^p3d-analyze: error: $R3: record length 65528 \(tag 0x0005\) runs past the end of its chunk at offset [0-9]+ .*; using the [0-9]+ records before it" \
    "rank 3: [0-9]+ records"
case_ unknowntag "--unknown-tag 3" 2 \
    "^p3d-analyze: error: $R3: unknown required record tag 0x0077 at offset [0-9]+" \
    "rank 3: [0-9]+ records"
case_ missing "--missing 3" 0 \
    "^p3d-analyze: warning: job 'genjob': 1 of 8 ranks have no readable trace file \(ranks 3\)" \
    "members completed from the layout"
case_ duplicate "--duplicate 3" 0 \
    "^p3d-analyze: warning: rank 3 has two trace files" "8 of 8 ranks"
case_ empty "--empty 3" 0 \
    "^p3d-analyze: warning: $R3: empty file" "missing ranks: 3"
case_ mismatch "--mismatch 3" 0 - \
    "mismatch: comm 0x[0-9a-f]{16} \(TP\) AllReduce #[0-9]+: count differs: rank 2 has 262144, rank 3 has 262145"
# keeps matching after a mismatch: exactly one mismatch, instances all seen
grep -q "1 mismatches" "$T/out" || { echo "FAIL: mismatch count"; fails=$((fails+1)); }
# the odd member of a 4-rank TP group stands out
"$G" --tp 4 --pp 1 --dp 2 --mismatch 0 "$T/odd" || exit 1
"$A" -q "$T/odd" | grep -Eq "mismatch: comm 0x[0-9a-f]{16} \(TP\) AllReduce #[0-9]+: count differs: rank 0 has 262145, ranks 1,2,3 have 262144" ||
    { echo "FAIL: odd member not named"; fails=$((fails+1)); }
# the optional unknown record every generated file carries is skipped
grep -q "unknown" "$T/err" && { echo "FAIL: optional record not skipped"; fails=$((fails+1)); }

# usage and unreadable input: exit 2
"$A" > /dev/null 2>&1; [ $? -eq 2 ] || { echo "FAIL: no args"; fails=$((fails+1)); }
"$A" --bogus x > /dev/null 2>&1; [ $? -eq 2 ] || { echo "FAIL: bad option"; fails=$((fails+1)); }
"$A" "$T/nonexistent" > /dev/null 2> "$T/err"; rc=$?
[ $rc -eq 2 ] && grep -q "cannot read '$T/nonexistent'" "$T/err" ||
    { echo "FAIL: nonexistent dir rc=$rc"; fails=$((fails+1)); }
mkdir "$T/emptydir"
"$A" "$T/emptydir" > /dev/null 2> "$T/err"; rc=$?
[ $rc -eq 2 ] && grep -q "no readable trace files found" "$T/err" ||
    { echo "FAIL: empty dir rc=$rc"; fails=$((fails+1)); }
"$A" --layout tp=x "$T/killed" > /dev/null 2>&1; [ $? -eq 2 ] ||
    { echo "FAIL: bad --layout"; fails=$((fails+1)); }
"$A" --layout tp=3 "$T/killed" > /dev/null 2> "$T/err"; rc=$?
[ $rc -eq 2 ] && grep -q "does not fit a world of 8 ranks" "$T/err" ||
    { echo "FAIL: --layout not fitting rc=$rc"; fails=$((fails+1)); }
[ $fails -eq 0 ]
