#!/bin/sh
# p3d-analyze-mpi (issue 23) gives what p3d-analyze gives: the same --json,
# the same text report and the same exit status, under mpirun -n 1, 2 and
# 4 on this host (and the same --html and --chrome files at -n 2), for a simulated 3D job under the real shim, a hang (a
# rank that skipped an op, and a stall), mismatched and unintroduced
# communicators (matched where each communicator is owned), a rank with
# thousands of gaps in its seqs (dropped records), and a job with damaged files
# (exit 2, the missing ranks named). And no process waits forever: a peer
# that dies ends the run, and a peer that hangs is aborted at the
# deadline (P3D_MPI_DEADLINE_S). With --local (each process reads its own
# folder) the same answers, the hang's and the views' included. Skipped where p3d-analyze-mpi or mpirun
# is missing (make mpi; scripts/install-deps.sh installs OpenMPI).
set -u
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
A=$P3D_BUILD/p3d-analyze
M=$P3D_BUILD/p3d-analyze-mpi
G=$P3D_BUILD/tests/p3d-gen
S=$P3D_BUILD/p3d-sim
L=$P3D_BUILD/libp3dtrace.so
[ -x "$M" ] || { echo "no $M (make mpi)"; exit 77; }
command -v mpirun > /dev/null || { echo "no mpirun"; exit 77; }
[ -x "$G" ] && [ -x "$S" ] && [ -f "$L" ] || { echo "no generator or simulator"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/p3dmpi.XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM
export P3D_QUIET=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# agree NAME SUFFIX WHAT WANT GOT: run SUFFIX of NAME (its exit GOT) gave
# p3d-analyze's exit WANT, JSON and text; WHAT names the run in messages
agree() {
    [ "$5" = "$4" ] ||
        { fail "$1 $3: exit $5, p3d-analyze $4"; tail -5 "$T/$1.$2.err"; }
    cmp -s "$T/$1.json" "$T/$1.$2.json" ||
        fail "$1 $3: --json differs from p3d-analyze's"
    cmp -s "$T/$1.txt" "$T/$1.$2.txt" ||
        fail "$1 $3: the text report differs from p3d-analyze's"
}
# same NAME DIR [ARGS]: p3d-analyze and p3d-analyze-mpi -n 1, 2, 4 agree,
# and -n 3 with every communicator's instances dealt one seq at a time
# round the processes (P3D_MPI_SEQ_BLOCK=1: these jobs have too few ops
# for the default block of 256 to split a communicator)
same() {
    name=$1 dir=$2
    shift 2
    "$A" "$@" --json "$T/$name.json" "$dir" > "$T/$name.txt" 2> /dev/null
    want=$?
    for n in 1 2 4 3b1; do
        blk=256
        case $n in *b*) blk=${n#*b} ;; esac
        P3D_MPI_SEQ_BLOCK=$blk timeout 300 mpirun -n "${n%b*}" "$M" "$@" \
            --json "$T/$name.$n.json" "$dir" > "$T/$name.$n.txt" \
            2> "$T/$name.$n.err"
        agree "$name" "$n" "-n $n" "$want" $?
    done
    echo "$name: p3d-analyze exit $want; -n 1, 2, 4, 3 (block 1) compared"
}

"$S" --tp 2 --pp 2 --dp 2 -m 4 --iters 3 --out "$T" --job-id sim3d \
    --shim "$L" --quiet > "$T/sim.log" 2>&1 || { fail "simulator"; cat "$T/sim.log"; }
same sim3d "$T/sim3d"
same sim3d-infer "$T/sim3d" --layout infer
# the views process 0 writes: the HTML report and the Chrome timeline
"$A" -q --html "$T/a.html" --chrome "$T/a.chrome" "$T/sim3d" 2> /dev/null
timeout 300 mpirun -n 2 "$M" -q --html "$T/m.html" --chrome "$T/m.chrome" \
    "$T/sim3d" 2> /dev/null || fail "views -n 2: exit $?"
cmp -s "$T/a.html" "$T/m.html" || fail "views -n 2: --html differs"
cmp -s "$T/a.chrome" "$T/m.chrome" || fail "views -n 2: --chrome differs"
# two hosts with kernel windows: the H200 recording with ranks 4-7 given
# another host name, so the clocks are aligned from the collectives, and
# the window marks --chrome draws for ranks process 1 read are on the
# aligned clock too (process 0 keeps pass 1's of them)
mkdir -p "$T/h2"
tar -C "$T/h2" -xzf "$P3D_SRC/tests/data/h200-megatron-gpt/gpt222.tar.gz" ||
    fail "unpack gpt222"
python3 - "$T/h2/gpt222" <<'PY' || fail "gpt222: cannot rename its hosts"
import glob, sys
for f in glob.glob(sys.argv[1] + "/rank-*.p3d"):
    if int(f[-9:-4]) < 4:
        continue
    b = bytearray(open(f, "rb").read())
    i = b[:256].find(b"vm\0")
    assert i > 0, f
    b[i:i + 2] = b"vn"
    open(f, "wb").write(b)
PY
same h2 "$T/h2/gpt222"
grep -q '"host": "vn", "offset_ns": [1-9-]' "$T/h2.json" ||
    fail "h2: no clock offset found for the second host"
"$A" -q --chrome "$T/h2.chrome" "$T/h2/gpt222" 2> /dev/null
timeout 300 mpirun -n 2 "$M" -q --chrome "$T/h2.2.chrome" "$T/h2/gpt222" \
    2> /dev/null || fail "h2 views -n 2: exit $?"
grep -q "kernel records on" "$T/h2.chrome" || fail "h2: no window marks drawn"
cmp -s "$T/h2.chrome" "$T/h2.2.chrome" || fail "h2 views -n 2: --chrome differs"
"$S" --tp 2 --pp 2 --dp 2 -m 4 --iters 3 --hang 6:pp:5 --stop-when-hung \
    --out "$T" --job-id hang --shim "$L" --quiet > "$T/hang.log" 2>&1
same hang "$T/hang"
grep -q '"root_ranks": \[6\]' "$T/hang.json" ||
    fail "hang: p3d-analyze did not name rank 6 as the root"
"$G" --tp 2 --pp 2 --dp 4 --gpu --skip 5 --job skip "$T/skip" > /dev/null
same skip "$T/skip"
"$G" --tp 2 --pp 2 --dp 2 --stall --job stall "$T/stall" > /dev/null
same stall "$T/stall"
# the same, stopped 0.1 ms into the all-reduce, less than a step: no hang
# shown (hang/p3d_hang_stop.c), from the ranks gathered on process 0
"$G" --tp 2 --pp 2 --dp 2 --gpu --stall --stall-us 100 --steps 6 \
    --job stopped "$T/stopped" > /dev/null
same stopped "$T/stopped"
grep -q '"stopped_running"' "$T/stopped.json" ||
    fail "stopped: p3d-analyze did not say the job was stopped while it ran"
# matching is split by communicator between the processes: a mismatch,
# send/recv pairs, and ops on communicators no record introduces all
# have to meet at their communicator's owner and fold back the same
"$G" --tp 2 --pp 2 --dp 4 --p2p --mismatch 3 --job mm "$T/mm" > /dev/null
same mm "$T/mm"
grep -q '"mismatch_count": 1' "$T/mm.json" ||
    fail "mm: p3d-analyze did not find the mismatch"
# a rank whose records of every other TP collective were dropped: more
# than the 4,096 runs of seqs the matcher remembers of a member (and its
# last run), and its TP all-reduces disagree in the last step, past them:
# only the one in its last run is found. Where the rank is read, the scan
# decides which of its ops the matchers remember, marks the copies it
# sends (P3D_MATCH_UNNOTED) and sends every matcher the rank's last run,
# so however the seqs are dealt the answer is one process's (a matcher
# deciding from its own blocks, or ignoring the mark, reports 16; one
# without the last run, none)
"$G" --tp 2 --pp 1 --dp 2 --ops 40000 --gaps 1 --job gaps "$T/gaps" > /dev/null
same gaps "$T/gaps"
grep -q '"dropped_records": 17780' "$T/gaps.json" &&
    grep -q '"mismatch_count": 1' "$T/gaps.json" ||
    fail "gaps: p3d-analyze did not see rank 1's dropped records, or not one mismatch"
# a rank whose trace reached its size cap, the others stalled: the hang's
# root "records_dropped" wherever the ranks are read
"$G" --tp 2 --pp 2 --dp 2 --capped 5 --stall --job capped "$T/capped" > /dev/null
same capped "$T/capped"
grep -q '"state": "records_dropped"' "$T/capped.json" ||
    fail "capped: p3d-analyze did not name rank 5 records_dropped"
# the work is split: P3D_MPI_STATS=1 has each of the 4 processes say what
# it moved. The ops go to their communicators' owners in the rounds, so
# no process takes in most of the rounds' bytes, and what a process sends
# process 0 besides (scan summaries, per-rank results, sums) is less than
# what it sends in the rounds (before the split every loaded timeline,
# 80-96 bytes an op, went to process 0)
# spread NAME DIR [MAX]: that, at -n 4 on DIR, against $T/NAME.json; no
# process takes in MAX (default 0.6) of the rounds' bytes
spread() {
    P3D_MPI_STATS=1 timeout 300 mpirun -n 4 "$M" -q --json "$T/$1.st.json" \
        "$2" 2> "$T/$1.st.err"
    cmp -s "$T/$1.json" "$T/$1.st.json" || fail "$1 with P3D_MPI_STATS: --json differs"
    sed -n 's/^p3d-analyze-mpi: process \([0-3]\): [0-9]* rounds, [0-9]* messages and \([0-9]*\) bytes sent in them, \([0-9]*\) bytes received; [0-9]* messages and \([0-9]*\) bytes sent to process 0$/\1 \2 \3 \4/p' \
        "$T/$1.st.err" > "$T/$1.st"
    [ "$(wc -l < "$T/$1.st")" = 4 ] || { fail "$1: P3D_MPI_STATS printed no line per process"; cat "$T/$1.st.err"; }
    awk -v max="${3:-0.6}" \
        '{ s += $3; if ($3 > m) m = $3; if ($1 > 0 && $4 >= $2) bad = 1 }
         END { exit !(s > 0 && m < max * s && !bad) }' "$T/$1.st" ||
        { fail "$1: the rounds' work is not split (process, sent, received, to 0):"; cat "$T/$1.st"; }
}
spread mm "$T/mm"
# FSDP: every op on one world communicator, whose instances the scan and
# the time passes deal round the processes by blocks of seq (8 here: the
# job is small), so the one communicator's work is split too (a 64-rank
# FSDP job: its owner took in 97% of the rounds' bytes before the time
# passes were split, 76% with only them split)
"$S" --framework fsdp --dp 8 --iters 12 --buckets 16 --out "$T" \
    --job-id fsdp --shim "$L" --quiet > "$T/fsdp.log" 2>&1 ||
    { fail "simulator (fsdp)"; cat "$T/fsdp.log"; }
"$A" --json "$T/fsdp.json" "$T/fsdp" > /dev/null 2>&1
P3D_MPI_SEQ_BLOCK=8 spread fsdp "$T/fsdp"
# rounds of 1 KiB: the scan's exchange runs many rounds, and its threads
# wait for the rounds to take their ops, on a small job
export P3D_MPI_ROUND_BYTES=1024
same mm-rounds "$T/mm"
same nomatch-rounds "$T/mm" --no-match # the rounds carry scan results only
unset P3D_MPI_ROUND_BYTES
r=$(sed -n 's/^p3d-analyze-mpi: the scan took \([0-9]*\) rounds$/\1/p' "$T/mm-rounds.4.err")
[ "${r:-0}" -ge 2 ] || fail "mm-rounds: the scan took ${r:-no} rounds at -n 4"
"$G" --tp 2 --pp 2 --dp 2 --no-comms --mismatch 5 --job nc "$T/nc" > /dev/null
same nc "$T/nc"
"$G" --tp 2 --pp 2 --dp 2 --bad-magic 3 --truncate 6 --job bad "$T/bad" \
    > /dev/null
same bad "$T/bad"
[ "$(cat "$T/bad.json" | wc -c)" -gt 0 ] || fail "bad: no JSON"

# --local: each process reads its own folder and the answer is
# p3d-analyze's on all the files. The files are split between folders
# n0, n1, ... the way nodes hold them, and each process works in its own
# (cd DEST/n$RANK) on the relative path JOB: one path, each process's own
# files, as on nodes' local disks; process 0 cannot see the others'.
split() { # SRC DEST MODE: DEST/n0/JOB, DEST/n1/JOB by blocks of 4 or odd/even
    job=$(basename "$1")
    mkdir -p "$2/n0/$job" "$2/n1/$job"
    for f in "$1"/rank-*.p3d; do
        r=$(basename "$f" .p3d | sed 's/^rank-0*//')
        r=${r:-0}
        if [ "$3" = blocks ]; then k=$((r / 4)); else k=$((r % 2)); fi
        cp "$f" "$2/n$k/$job/"
    done
}
# on_nodes DEST NPROC ARGS...: mpirun p3d-analyze-mpi --local ARGS, each
# process in DEST/n$RANK
on_nodes() {
    dest=$1 np=$2
    shift 2
    timeout 300 mpirun -n "$np" sh -c \
        'cd "$1/n$OMPI_COMM_WORLD_RANK" 2>/dev/null || cd "$1"; shift; exec "$0" --local "$@"' \
        "$M" "$dest" "$@"
}
# local_same NAME SRC DEST NPROC [ARGS]: on_nodes against p3d-analyze run
# in SRC's folder (so both name the files JOB/rank-N.p3d)
local_same() {
    name=$1 src=$2 dest=$3 np=$4
    shift 4
    job=$(basename "$src")
    (cd "$(dirname "$src")" && "$A" "$@" --json "$T/$name.json" "$job") \
        > "$T/$name.txt" 2> /dev/null
    want=$?
    on_nodes "$dest" "$np" "$@" --json "$T/$name.l.json" "$job" \
        > "$T/$name.l.txt" 2> "$T/$name.l.err"
    agree "$name" l "--local -n $np" "$want" $?
    echo "$name: --local -n $np compared"
}
split "$T/sim3d" "$T/lb" blocks
local_same sim3d-local "$T/sim3d" "$T/lb" 2
split "$T/hang" "$T/lh" odd
local_same hang-local "$T/hang" "$T/lh" 2
# the hang analysis reads each file where it lies: process 0 gets what
# each rank keeps, not the files, so it needs no room for copies
timeout 300 mpirun -n 2 sh -c \
    'cd "$1/n$OMPI_COMM_WORLD_RANK"; shift; TMPDIR=/nonexistent exec "$0" --local "$@"' \
    "$M" "$T/lh" --json "$T/hang-nocopy.json" hang > /dev/null \
    2> "$T/hang-nocopy.err"
cmp -s "$T/hang-local.json" "$T/hang-nocopy.json" ||
    fail "hang --local, no room for copies: --json differs from p3d-analyze's"
grep -q "has no copy" "$T/hang-nocopy.err" &&
    fail "hang --local: process 0 fetched files for the hang analysis"
grep -q '"root_ranks": \[6\]' "$T/hang-local.l.json" ||
    fail "hang --local: rank 6 not named as the root"
# a third process whose node has no such folder: said, and nothing else
local_same hang-local3 "$T/hang" "$T/lh" 3
grep -q "1 of 3 processes found no trace files.*2 (.*no such folder)" \
    "$T/hang-local3.l.err" || fail "--local: the process without a folder is not named"
# the views read every file again too
(cd "$T" && "$A" -q --html "$T/r.html" --chrome "$T/r.chrome" sim3d) 2> /dev/null
on_nodes "$T/lb" 2 -q --html "$T/l.html" --chrome "$T/l.chrome" sim3d \
    2> /dev/null || fail "views --local: exit $?"
cmp -s "$T/r.html" "$T/l.html" || fail "views --local: --html differs"
cmp -s "$T/r.chrome" "$T/l.chrome" || fail "views --local: --chrome differs"
# every process sees one shared folder: each file counts once
timeout 300 mpirun -n 3 "$M" --local --json "$T/shared.json" "$T/sim3d" \
    > "$T/shared.txt" 2> "$T/shared.err" || fail "shared --local: exit $?"
cmp -s "$T/sim3d.json" "$T/shared.json" || fail "shared --local: --json differs"
grep -q "two trace files" "$T/shared.err" && fail "shared --local: files counted twice"
# what another process could not read is said by process 0, with its name
mkdir -p "$T/lx" && cp -r "$T/lb/n0" "$T/lb/n1" "$T/lx/"
printf 'not a trace' > "$T/lx/n1/sim3d/junk.p3d"
printf 'not a trace either' > "$T/lx/n1/sim3d/rank-00005.p3d"
on_nodes "$T/lx" 2 sim3d > /dev/null 2> "$T/lx.err"
rc=$?
[ "$rc" = 2 ] || fail "--local, a bad file on process 1: exit $rc, want 2"
grep -q "error: process 1 (.*): 'sim3d/junk.p3d': file too short" "$T/lx.err" ||
    { fail "--local: process 1's message is missing"; cat "$T/lx.err"; }
grep -q "error: process 1: 'sim3d/rank-00005.p3d': file too short" "$T/lx.err" ||
    { fail "--local: process 1's unreadable rank file is not named as its"; cat "$T/lx.err"; }
# process 0 cannot keep the copies the views need: an error naming the
# ranks, exit 2, and no file of another node read instead
timeout 300 mpirun -n 2 sh -c \
    'cd "$1/n$OMPI_COMM_WORLD_RANK"; shift; TMPDIR=/nonexistent exec "$0" --local "$@"' \
    "$M" "$T/lh" --chrome "$T/lnc.chrome" hang > /dev/null 2> "$T/lnc.err"
rc=$?
[ "$rc" = 2 ] || fail "--local, no room for the copies: exit $rc, want 2"
grep -q "has no copy of the rank files of 4 rank(s) (1,3,5,7): cannot create" "$T/lnc.err" ||
    { fail "--local: the missing copies are not said"; cat "$T/lnc.err"; }
# process 0 killed (SIGTERM, as mpirun ends it when a peer fails) once it
# holds its copies: it removes them, and still dies of the signal
mkdir -p "$T/ltmp"
P3D_MPI_TEST_PEER=term0 P3D_MPI_DEADLINE_S=60 timeout 100 mpirun -n 2 sh -c \
    'cd "$1/n$OMPI_COMM_WORLD_RANK"; shift; TMPDIR="$0" exec "$@"' \
    "$T/ltmp" "$T/lh" "$M" --local --chrome "$T/lterm.chrome" hang \
    > /dev/null 2> "$T/lterm.err"
rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "--local, process 0 killed: exit $rc"
left=$(find "$T/ltmp" -mindepth 1 | head -3)
[ -z "$left" ] || fail "--local, process 0 killed: its copies are left: $left"
# process 0 cannot write an output: every process stops, none waits for
# the deadline
P3D_MPI_DEADLINE_S=120 timeout 100 mpirun -n 2 "$M" --json /nonexistent/x.json \
    "$T/sim3d" > /dev/null 2> "$T/nout.err"
rc=$?
[ "$rc" = 2 ] || { fail "-n 2, an output that cannot be written: exit $rc, want 2"; tail -3 "$T/nout.err"; }
"$A" --local "$T/sim3d" > /dev/null 2> "$T/nolocal.err"
[ $? = 2 ] && grep -q "is for p3d-analyze-mpi" "$T/nolocal.err" ||
    fail "p3d-analyze --local: not refused"

# A peer that dies, a peer that hangs: the run ends, not zero.
for f in exit stall; do
    P3D_MPI_TEST_PEER=$f P3D_MPI_DEADLINE_S=5 timeout 300 \
        mpirun -n 2 "$M" --json "$T/$f.json" "$T/sim3d" > "$T/$f.out" 2>&1
    rc=$?
    [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] ||
        { fail "peer $f: mpirun exit $rc (0: no error seen; 124: still waiting)"; tail -5 "$T/$f.out"; }
done
grep -q "P3D_MPI_DEADLINE_S=5" "$T/stall.out" ||
    { fail "peer stall: the deadline's message is missing"; tail -5 "$T/stall.out"; }

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "ok"
