#!/bin/sh
# Job discovery: a folder of job folders, two runs in one folder (newest
# analysed and said so, --all analyses each), non-trace files skipped with
# a note, symlink loops survived.
set -u
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
. "$P3D_SRC/tests/integration/analyze_lib.sh"

# traces/ with two job folders of different ids
mkdir -p "$T/traces"
"$G" --tp 2 --pp 2 --dp 2 --job old --start 1800000000 "$T/traces/old" || exit 1
"$G" --tp 4 --pp 1 --dp 2 --job new --start 1800003600 "$T/traces/new" || exit 1
echo hello > "$T/traces/new/notes.txt"
echo hello > "$T/traces/new/rank-00009.p3d.bak"
ln -s .. "$T/traces/new/loop"
"$A" "$T/traces" > "$T/out" 2> "$T/err" || fail "rc=$? on traces/"
grep -q "found traces of 2 jobs; analysing the newest, job 'new'" "$T/err" ||
    fail "newest job not announced: $(cat "$T/err")"
grep -q "^job 'new': 8 of 8" "$T/out" || fail "wrong job analysed"
grep -q "^job 'old'" "$T/out" && fail "old job analysed without --all"
# a renamed trace is noted; other files are skipped without a note
grep -q "note: skipping '$T/traces/new/rank-00009.p3d.bak': not a trace file" "$T/err" ||
    fail "renamed trace file not noted: $(cat "$T/err")"
grep -q "notes.txt" "$T/err" && fail "a note about notes.txt"
"$A" "$T/traces/" > /dev/null 2> "$T/err"
grep -q "skipping '$T/traces/new/rank-00009.p3d.bak'" "$T/err" ||
    fail "paths under 'DIR/' are not joined with one slash: $(cat "$T/err")"
"$A" --all "$T/traces" > "$T/out" 2> "$T/err" || fail "rc=$? with --all"
[ "$(grep -c "^job '" "$T/out")" -eq 2 ] || fail "--all did not analyse both"
grep -q "tp=4 cp=1 ep=1 dp=2 pp=1" "$T/out" || fail "second job layout"

# the same job id, two runs an hour apart, in one folder
"$G" --tp 2 --pp 2 --dp 2 --job none --start 1800000000 "$T/same" || exit 1
"$G" --tp 2 --pp 1 --dp 4 --job none --start 1800003600 --suffix -b \
    "$T/same" || exit 1
"$A" "$T/same" > "$T/out" 2> "$T/err" || fail "rc=$? on two runs"
grep -q "found traces of 2 jobs" "$T/err" || fail "runs not separated"
grep -q "tp=2 cp=1 ep=1 dp=4 pp=1" "$T/out" || fail "newest run not chosen"
grep -q "rank 3 has two trace files" "$T/err" && fail "runs mixed up"

# a rerun 10 s later (the shim names its files rank-N.<pid>.p3d)
"$G" --tp 2 --pp 1 --dp 2 --job none --start 1800000000 "$T/rerun" || exit 1
"$G" --tp 1 --pp 1 --dp 4 --job none --start 1800000010 --suffix .999 \
    "$T/rerun" || exit 1
"$A" "$T/rerun" > "$T/out" 2> "$T/err" || fail "rc=$? on a rerun"
grep -q "found traces of 2 jobs" "$T/err" || fail "rerun not separated"
grep -q "tp=1 cp=1 ep=1 dp=4 pp=1" "$T/out" || fail "rerun not chosen"

# JSON for several jobs is an array
"$A" -q --all --json "$T/all.json" "$T/same" > /dev/null || fail "json all"
head -c 1 "$T/all.json" | grep -q '\[' || fail "--all JSON is not an array"

# a single file is accepted too
"$A" -q "$T/same/rank-00000.p3d" > "$T/out" 2>&1 || true
grep -q "1 of 8 ranks have readable traces" "$T/out" || fail "single file"
exit 0
