#!/bin/sh
# p3d-analyze-mpi (issue 23) gives what p3d-analyze gives: the same --json,
# the same text report and the same exit status, under mpirun -n 1, 2 and
# 4 on this host (and the same --html and --chrome files at -n 2), for a simulated 3D job under the real shim, a hang (a
# rank that skipped an op, and a stall), and a job with damaged files
# (exit 2, the missing ranks named). And no process waits forever: a peer
# that dies ends the run, and a peer that hangs is aborted at the
# deadline (P3D_MPI_DEADLINE_S). Skipped where p3d-analyze-mpi or mpirun
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

# same NAME DIR [ARGS]: p3d-analyze and p3d-analyze-mpi -n 1, 2, 4 agree
same() {
    name=$1 dir=$2
    shift 2
    "$A" "$@" --json "$T/$name.json" "$dir" > "$T/$name.txt" 2> /dev/null
    want=$?
    for n in 1 2 4; do
        timeout 300 mpirun -n "$n" "$M" "$@" --json "$T/$name.$n.json" \
            "$dir" > "$T/$name.$n.txt" 2> "$T/$name.$n.err"
        got=$?
        [ "$got" = "$want" ] ||
            { fail "$name -n $n: exit $got, p3d-analyze $want"; tail -5 "$T/$name.$n.err"; }
        cmp -s "$T/$name.json" "$T/$name.$n.json" ||
            fail "$name -n $n: --json differs from p3d-analyze's"
        cmp -s "$T/$name.txt" "$T/$name.$n.txt" ||
            fail "$name -n $n: the text report differs from p3d-analyze's"
    done
    echo "$name: p3d-analyze exit $want; -n 1, 2, 4 compared"
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
"$S" --tp 2 --pp 2 --dp 2 -m 4 --iters 3 --hang 6:pp:5 --stop-when-hung \
    --out "$T" --job-id hang --shim "$L" --quiet > "$T/hang.log" 2>&1
same hang "$T/hang"
grep -q '"root_ranks": \[6\]' "$T/hang.json" ||
    fail "hang: p3d-analyze did not name rank 6 as the root"
"$G" --tp 2 --pp 2 --dp 4 --gpu --skip 5 --job skip "$T/skip" > /dev/null
same skip "$T/skip"
"$G" --tp 2 --pp 2 --dp 2 --stall --job stall "$T/stall" > /dev/null
same stall "$T/stall"
"$G" --tp 2 --pp 2 --dp 2 --bad-magic 3 --truncate 6 --job bad "$T/bad" \
    > /dev/null
same bad "$T/bad"
[ "$(cat "$T/bad.json" | wc -c)" -gt 0 ] || fail "bad: no JSON"

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
