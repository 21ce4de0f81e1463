#!/bin/sh
# Command-line options: bad values and combinations are usage errors
# (exit 2, a message naming the option and the problem) and leave no
# output file behind; the same options on a valid run still write theirs.
set -u
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
. "$P3D_SRC/tests/integration/analyze_lib.sh"
fails=0
bad() { echo "FAIL $*"; fails=$((fails+1)); }
# usage NAME WANT-RC STDERR-REGEX|- ARGS...: run A -q ARGS, $T/o empty
usage() {
    name=$1 want=$2 emsg=$3
    shift 3
    rm -rf "$T/o" && mkdir "$T/o"
    "$A" -q "$@" > "$T/out" 2> "$T/err"
    rc=$?
    [ $rc -eq "$want" ] || { bad "$name: rc=$rc, want $want"; cat "$T/err"; }
    [ "$emsg" = - ] || grep -Eq -- "$emsg" "$T/err" ||
        { bad "$name: stderr lacks /$emsg/:"; cat "$T/err"; }
}
# nofiles NAME: nothing was written to $T/o
nofiles() {
    [ -z "$(ls -A "$T/o")" ] || bad "$1: wrote $(ls "$T/o")"
}
E="^p3d-analyze: error:"
"$G" --tp 2 --pp 2 --dp 2 "$T/j" || exit 1
J=$T/j
O=$T/o

# 1. --window beyond the trace: error, and no --json/--chrome/--html file
usage window 2 "$E job 'genjob': --window iter:1000-1001 asks for iterations" \
    --window iter:1000-1001 --json "$O/r.json" --chrome "$O/c.json" \
    --html "$O/h.html" "$J"
nofiles window
[ -s "$T/out" ] && bad "window: report printed before the usage error"
# the same outputs with a window the trace has are written
usage window-ok 0 - --window iter:0-0 --json "$O/r.json" \
    --chrome "$O/c.json" --html "$O/h.html" "$J"
[ -s "$O/r.json" ] && [ -s "$O/c.json" ] && [ -s "$O/h.html" ] ||
    bad "window-ok: outputs missing: $(ls "$O")"
# a time window after the trace's end: the same, and a window inside it is
# captioned as a time window in the HTML
usage window-t 2 "$E job 'genjob': --window t:99999999-100000000 starts after the trace ends" \
    --window t:99999999-100000000 --chrome "$O/c.json" --html "$O/h.html" "$J"
nofiles window-t
usage window-t-ok 0 - --window t:0-50 --html "$O/h.html" "$J"
grep -q "<p>Time window: " "$O/h.html" || bad "window-t-ok: no time-window caption"
# --layout that does not fit the job: no empty --json file
usage layout 2 "$E layout 'tp=3' does not fit a world of 8 ranks" \
    --layout tp=3 --json "$O/r.json" "$J"
nofiles layout

# 2. --ranks naming no rank of the job
usage ranks 2 "$E --ranks 9-12: job 'genjob' has no such rank \(it has ranks 0-7\)" \
    --ranks 9-12 --chrome "$O/c.json" --html "$O/h.html" "$J"
nofiles ranks
usage ranks-part 0 "^p3d-analyze: warning: --ranks 6-12: 5 of the ranks given are not in job 'genjob' \(it has ranks 0-7\)" \
    --ranks 6-12 --chrome "$O/c.json" "$J"
grep -q '"pid": *6\|"pid":6' "$O/c.json" || bad "ranks-part: rank 6 not drawn"
# --all: a later job without the ranks removes the earlier job's files
mkdir "$T/two"
"$G" --tp 2 --pp 2 --dp 2 --job big --start 1800000000 "$T/two/big" || exit 1
"$G" --tp 2 --pp 1 --dp 2 --job small --start 1800003600 "$T/two/small" ||
    exit 1
usage ranks-all 2 "$E --ranks 6-7: job 'small' has no such rank \(it has ranks 0-3\)" \
    --all --ranks 6-7 --json "$O/r.json" --html "$O/h.html" "$T/two"
nofiles ranks-all
usage ranks-all-ok 0 - --all --ranks 0-1 --json "$O/r.json" \
    --html "$O/h.html" "$T/two"
[ -s "$O/h.html" ] && [ -s "$O/h.html-1" ] && [ -s "$O/r.json" ] ||
    bad "ranks-all-ok: outputs missing: $(ls "$O")"

# 3. options that do not combine
for v in --chrome --html; do
    usage "compare$v" 2 "$E $v does not combine with --compare" \
        --compare $v "$O/x" "$J"
    nofiles "compare$v"
done
usage dump-json 2 "$E --dump does not combine with --json" \
    --dump --json "$O/r.json" "$J/rank-00000.p3d"
nofiles dump-json
"$A" --window iter:0-1 "$J" > /dev/null 2> "$T/err" ||
    bad "window without views: rc=$?"
grep -q "warning: --window only chooses what --chrome and --html draw" \
    "$T/err" || bad "window without views: no warning"

# 4. --threads
for n in abc -3 0 2x; do
    usage "threads$n" 2 "$E bad --threads '$n': expected a whole number" \
        --threads "$n" "$J"
done
usage threads-ok 0 - --threads 3 "$J"

# 5. a folder without traces is named
mkdir "$T/empty"
usage empty 2 "$E no readable trace files found under '$T/empty'$" \
    "$T/empty"

# 6. an output that cannot be written: the reason, before any work
for v in --json --chrome --html; do
    usage "nodir$v" 2 "$E $v: cannot write '$T/no/such/r': No such file or directory" \
        $v "$T/no/such/r" "$J"
    [ -s "$T/out" ] && bad "nodir$v: analysed before failing"
done
usage isdir 2 "$E --json: cannot write '$O': Is a directory" \
    --json "$O" "$J"
usage compare-nodir 2 "$E --json: cannot write '$T/no/r': No such file" \
    --compare --json "$T/no/r" "$J"

# 7. --compare on a folder holding two jobs says which one it compares,
# as the plain run does
mkdir -p "$T/twojobs"
"$G" --tp 2 --dp 2 --job jobA --start 1700000000 --suffix .a "$T/twojobs" &&
"$G" --tp 2 --dp 2 --job jobB --start 1700009000 --suffix .b "$T/twojobs" || exit 1
usage compare-two 0 "warning: --compare: '$T/twojobs' holds traces of 2 jobs; comparing the newest, job 'jobB'" \
    --compare "$T/twojobs"
# 8. the batch line gives what the command line gave, nothing as 0
"$A" -q "$J" 2> /dev/null | grep -qx "  micro-batch 1, global batch 8, seq-length 512" ||
    bad "batch line: $("$A" -q "$J" 2> /dev/null | grep micro-batch)"

# 9. mistyped options and an output option that swallowed the folder
usage badopt 2 "$E unknown option '--jsn' \(p3d-analyze --help lists the options\)" \
    --jsn x "$J"
usage noval 2 "$E no value given for option '--layout'" "$J" --layout
usage json-dir 2 "$E --json takes a file name, and '$J' is a folder" --json "$J"

# 10. --compare with a --layout that fits one run and not another: the
# misfit run's row says so, the other run is still analysed, exit 2
usage compare-misfit 2 "$E layout 'tp=2,pp=2,dp=2' does not fit a world of 4 ranks" \
    --compare --layout tp=2,pp=2,dp=2 --json "$O/c.json" "$J" "$T/two/small"
grep -q '"config": "j", "tp": 2, "pp": 2, "cp": 1, "dp": 2' "$O/c.json" ||
    { bad "compare-misfit: fitting run not analysed"; cat "$O/c.json"; }
grep -q '"config": "small".*"observations": "not analysed: --layout does not fit its 4 ranks"' \
    "$O/c.json" || { bad "compare-misfit: no row for the misfit run"; cat "$O/c.json"; }
grep -q '| small | n/a .*| not analysed: --layout does not fit its 4 ranks |' "$T/out" ||
    { bad "compare-misfit: table row"; cat "$T/out"; }
[ $fails -eq 0 ]
