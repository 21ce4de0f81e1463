#!/bin/sh
# Signals and the trace (issue 7):
#  - SIGTERM with no handler of the application: the shim finalizes the
#    trace (closed flag, "SIGTERM received" note) and the process still
#    dies of SIGTERM;
#  - SIGTERM when the application has its own handler: that handler runs
#    (exit 3), the trace is readable and notes the signal;
#  - kill -9 of every rank of a hung simulated job, before any watchdog
#    report: the op records written before each call (t_exit = 0) still
#    let p3d-analyze name the root rank.
set -u
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
SHIM="$P3D_BUILD/libp3dtrace.so"
DRV="$P3D_BUILD/fakes/hang_sigdrv"
[ -f "$SHIM" ] || { echo "skip: no shim"; exit 77; }
[ -x "$DRV" ] || { echo "no $DRV"; exit 1; }
T=$(mktemp -d "${TMPDIR:-/tmp}/p3dhangsig.XXXXXX")
trap 'rm -rf "$T"' EXIT
fail=0
run_drv() {
    P3D_TRACE_DIR=$T P3D_JOB_ID=$1 P3D_RANK=0 P3D_WORLD_SIZE=1 \
        P3D_GPU_TIMING=off P3D_QUIET=1 LD_PRELOAD=$SHIM "$DRV" "$1" \
        > "$T/$1.out" 2>&1
    echo $?
}
dump() {
    "$P3D_BUILD/p3d-analyze" --dump "$T/$1/rank-00000.p3d"
}

rc=$(run_drv default)
[ "$rc" -eq 143 ] || { echo "FAIL default: exit $rc, not SIGTERM"; fail=1; }
dump default | grep -q '^header .*flags=0x0001' ||
    { echo "FAIL default: trace not finalized"; fail=1; }
dump default | grep -q 'text="SIGTERM received at_ns [0-9][0-9]*"' ||
    { echo "FAIL default: no SIGTERM note"; fail=1; }

rc=$(run_drv chain)
[ "$rc" -eq 3 ] && grep -q app-handler "$T/chain.out" ||
    { echo "FAIL chain: application handler did not run (exit $rc)"; fail=1; }
dump chain | grep -q '^op .*op=AllReduce' ||
    { echo "FAIL chain: op missing"; fail=1; }
dump chain | grep -q 'text="SIGTERM received at_ns [0-9][0-9]*"' ||
    { echo "FAIL chain: no SIGTERM note"; fail=1; }

python3 - "$P3D_BUILD" "$T" <<'PY' || fail=1
import json, os, signal, subprocess, sys, time
build, t = sys.argv[1], sys.argv[2]
env = dict(os.environ, P3D_HANG_TIMEOUT="60", P3D_QUIET="1")
sim = subprocess.Popen([f"{build}/p3d-sim", "--tp", "2", "--pp", "2", "--dp",
                        "2", "-m", "4", "--iters", "1", "--hang", "5:pp:7",
                        "--stop-when-hung=KILL", "--timeout", "50",
                        "--out", t, "--job-id", "k9",
                        "--shim", f"{build}/libp3dtrace.so"],
                       env=env, stdout=subprocess.DEVNULL,
                       stderr=open(f"{t}/k9.err", "w"))
rc = sim.wait()  # every rank kill -9'ed once the hang formed, before 60 s
if not os.path.exists(f"{t}/k9/truth.json"):
    # say why, so a rare failure can be read from the CI log
    sys.exit("p3d-sim exited %d without truth.json; its stderr:\n%s" %
             (rc, open(f"{t}/k9.err").read()[-3000:]))
truth = json.load(open(f"{t}/k9/truth.json"))
assert truth["outcome"]["stopped_when_hung"], "the hang never formed"
an = json.loads(subprocess.run([f"{build}/p3d-analyze", "-q", "--json", "-",
                                f"{t}/k9"], capture_output=True,
                               text=True).stdout)
h = an["hang"]
assert h["detected"] and h["root_ranks"] == [5], h["root_ranks"]
waiting = sorted(w["rank"] for w in h["chain"])
assert waiting and 5 not in waiting, waiting
assert all(r["closed"] is False for r in an["ranks"]), "files closed?"
print(f"kill -9 of a hung job: root 5 named, ranks {waiting} waiting")
PY
[ $fail -eq 0 ] &&
    echo "signals: SIGTERM finalizes or chains; kill -9 keeps in-flight ops"
exit $fail
