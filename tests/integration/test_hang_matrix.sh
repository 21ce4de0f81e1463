#!/bin/sh
# Hang diagnosis over a matrix of simulated faults (issue 7): a rank that
# never issues op N of a TP, PP, DP, CP, EMB, MP or distributed-optimizer
# group at points of the 1F1B schedule from warm-up to the optimizer
# (the rank sleeps "in compute"), a rank killed with kill -9, and
# mismatched collectives.  For each, p3d-analyze must name the injected
# root rank and the communicator and position of the op it never issued
# (checked against truth.json), and every rank the analyzer finds waiting
# must have printed the shim's live watchdog report within
# P3D_HANG_TIMEOUT + 5 s.  Runs the faults in parallel.
#   HANG_MATRIX=full  every fault (71; `make hang-matrix`); default: a
#                     representative subset (25), so `make test` stays
#                     fast on 2 cores.
#   HANG_JOBS=N       faults run at once (default 8).
#   HANG_GPU_MODES    GPU timings to run it under (default "auto off";
#                     `make hang-matrix`: "auto events off").
set -u
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
[ -x "$P3D_BUILD/p3d-sim" ] || { echo "no $P3D_BUILD/p3d-sim"; exit 1; }
[ -f "$P3D_BUILD/libp3dtrace.so" ] || { echo "skip: no shim"; exit 77; }
# Each GPU timing the shim offers (HANG_GPU_MODES; P3D_GPU_TIMING of the
# ranks): the roots must not depend on whether GPU completions were
# recorded (with "off" they come from host records alone).
modes=${HANG_GPU_MODES:-${P3D_GPU_TIMING:-auto off}}
rc=0
for gpu_mode in $modes; do
echo "-- P3D_GPU_TIMING=$gpu_mode"
OUT=$(mktemp -d "${TMPDIR:-/tmp}/p3dhang-test.XXXXXX")
P3D_GPU_TIMING=$gpu_mode \
python3 - "$P3D_BUILD" "$OUT" "${HANG_MATRIX:-quick}" "${HANG_JOBS:-8}" \
    "$P3D_SRC" <<'PY'
import json, os, re, signal, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
sys.path.insert(0, os.path.join(sys.argv[5], "tests", "tools"))
from p3d_proc import stop_children

build, out, mode, jobs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
TIMEOUT = 1.0                         # P3D_HANG_TIMEOUT in the ranks
A = "--tp 2 --pp 2 --dp 2 -m 4"       # stage 0: ranks 0-3, stage 1: 4-7
B = "--tp 1 --cp 2 --pp 2 --dp 2 -m 4"
C = "--tp 1 --pp 4 --dp 2 -m 8"       # longer 1F1B steady state
AS = A + " --async"                   # GPU-like streams: calls return,
                                      # ops never complete
E = "--tp 2 --dp 4 --ep 2 -m 4"       # MoE: all-to-all on EP
# (layout, fault kind, rank, group, n, in the quick subset)
F = []
def f(lay, kind, rank, grp, ns, quick=()):
    for n in ns:
        F.append((lay, kind, rank, grp, n, n in quick))
f(A, "hang", 0, "tp", [1, 7, 13, 20, 24], quick=(13,))   # stage 0 TP
f(A, "hang", 5, "tp", [1, 10, 20, 30, 36], quick=(30,))  # stage 1 TP
f(A, "hang", 1, "pp", [1, 3, 5, 7, 8], quick=(1, 7))     # PP send/recv
f(A, "hang", 6, "pp", [1, 3, 5, 7, 8], quick=(5,))
f(A, "hang", 2, "dp", [1, 3], quick=(1,))                # finalize, opt
f(A, "hang", 7, "dp", [1, 3, 5], quick=(5,))             # 5: loss
f(A, "hang", 0, "emb", [1], quick=(1,))
f(A, "hang", 7, "emb", [1])
f(A, "hang", 1, "mp", [1, 2, 3], quick=(2,))             # optimizer
f(A, "hang", 6, "distopt", [1], quick=(1,))
f(A, "kill", 3, None, [5, 20, 40], quick=(20,))
f(A, "kill", 6, None, [10, 35, 50])
f(A, "mismatch", 2, "tp", [5], quick=(5,))
f(A, "mismatch", 7, "tp", [30])
f(A, "mismatch", 4, "dp", [1], quick=(1,))
f(B, "hang", 1, "cp", [1, 4, 8, 16, 30], quick=(8,))     # CP ring
f(B, "hang", 6, "cp", [1, 5, 20], quick=(20,))
f(B, "hang", 3, "dp", [1])
f(B, "kill", 5, None, [30])
f(C, "hang", 2, "pp", [1, 8, 16, 24, 32], quick=(16,))   # middle stages
f(C, "hang", 5, "pp", [4, 20])
f(AS, "hang", 5, "pp", [7], quick=(7,))
f(AS, "hang", 2, "tp", [13])
f(AS, "hang", 6, "dp", [3])
f(AS, "kill", 3, None, [20])
f(C, "hang", 1, "dp", [2])                               # optimizer AG
# PyTorch Flight Recorder's scenario kinds (torch/distributed/
# flight_recorder/components/builder.py, types.py MatchState;
# test/distributed/flight_recorder/test_fr_analysis.py): size, dtype and
# collective-type mismatch, inside a coalesced group, p2p pairing,
# all_to_all sizes, a missing dump, and a mismatch after the first.
f(A, "mismatch:dtype", 2, "tp", [5], quick=(5,))         # bf16/int64 swap
f(A, "mismatch:kind", 2, "tp", [5], quick=(5,))          # AllReduce/Bcast
f(A, "mismatch:kind", 4, "dp", [1], quick=(1,))          # RS/AG: hangs
f(A, "mismatch:op", 7, "tp", [30])                       # max vs sum
f(A, "mismatch", 4, "dp", [2], quick=(2,))               # 2nd of a group
f(A, "mismatch", 1, "pp", [3], quick=(3,))               # send/recv sizes
f(E, "mismatch", 3, "ep", [3], quick=(3,))               # all_to_all size
f(A, "missing", 5, "tp", [30], quick=(30,))              # root's dump lost
f(A, "twomm", 2, "tp", [5], quick=(5,))                  # and 7:tp:30:op
F = [x for x in F if mode == "full" or x[5]]


def run(i):
    lay, kind, rank, grp, n, _ = F[i]
    name = f"f{i:02d}-{kind}-{rank}-{grp}-{n}"
    what = kind.split(":")[1] if ":" in kind else None
    arg = {"hang": f"--hang {rank}:{grp}:{n}", "kill": f"--kill {rank}:{n}",
           "mismatch": f"--mismatch {rank}:{grp}:{n}" + (f":{what}" if what
                                                        else ""),
           "missing": f"--hang {rank}:{grp}:{n}",
           "twomm": f"--mismatch {rank}:{grp}:{n} --mismatch 7:tp:30:op",
           }[kind.split(":")[0]]
    name = name.replace(":", "_")
    env = dict(os.environ, P3D_HANG_TIMEOUT=str(TIMEOUT), P3D_QUIET="1")
    cmd = ([f"{build}/p3d-sim"] + lay.split() + arg.split()
           + ["--iters", "1", "--fwd-ms", "1", "--bwd-ms", "1", "--opt-ms",
              "1", "--timeout", "20", "--grace", "20", "--out", out,
              "--job-id", name, "--shim", f"{build}/libp3dtrace.so",
              "--quiet"])
    with open(f"{out}/{name}.err", "w") as err:
        sim = subprocess.Popen(cmd, env=env, stderr=err,
                               stdout=subprocess.DEVNULL)
        # Hung: stop the ranks once watchdog reports stop coming, at
        # least 2 s + 2 x P3D_HANG_TIMEOUT after the first.  Under load a
        # slow but healthy communicator init can be reported first; a rank
        # that blocks in the fault's init only later must still have
        # reported (an init in flight leaves no other record).
        stop_at, reports = None, 0
        while sim.poll() is None:
            time.sleep(0.1)
            n = open(f"{out}/{name}.err").read().count("HANG?")
            if n > reports and stop_at != float("inf"):
                wait = 2 + (2 * TIMEOUT if reports == 0 else 0)
                stop_at = max(stop_at or 0, time.time() + wait)
                reports = n
            if stop_at is not None and time.time() > stop_at:
                stop_children(sim.pid)
                stop_at = float("inf")
        sim.wait()
    if kind == "missing":               # the root's dump is lost
        os.unlink(f"{out}/{name}/rank-{rank:05d}.p3d")
    with open(f"{out}/{name}.txt", "w") as txt:
        subprocess.run([f"{build}/p3d-analyze", "-q", "--json",
                        f"{out}/{name}.json", f"{out}/{name}"], stdout=txt)
    return name

def comm_of(an, members):
    return {c["id"] for c in an["communicators"]
            if sorted(c["members"]) == sorted(members)}

AXES = {"tp": ["tp"], "cp": ["cp"], "pp": ["pp"], "dp": ["dp", "cp"],
        "mp": ["tp", "pp"], "emb": ["pp"], "world": None, "distopt": None}

def members(t, grp, rank):
    """Global ranks of rank's group of kind grp, from the coordinates."""
    co = {r["rank"]: r["coords"] for r in t["ranks"]}
    if grp not in AXES:                 # ep: the truth's own group
        return next(sorted(g["members"]) for g in t["groups"]
                    if g["group"] == grp and rank in g["members"])
    vary = AXES[grp]
    if vary is None:
        return sorted(co)
    last = t["layout"]["pp"] - 1
    return sorted(r for r, c in co.items()
                  if all(c[a] == co[rank][a] for a in c if a not in vary)
                  and (grp != "emb" or c["pp"] in (0, last)))

def named(h, an, t, rank, grp, seq):
    """The mismatch of rank on its grp communicator (at seq, collectives;
    Send/Recv, EP's all-to-all among them, by their pair's own seq) is in
    h."""
    comms = comm_of(an, members(t, grp, rank))
    return [m for m in h["mismatches"] if m["odd_rank"] == rank and
            m["comm"] in comms and (grp in ("pp", "ep") or m["seq"] == seq)]

def check_watchdog(name, an):
    err = open(f"{out}/{name}.err").read()
    seen = {}
    for m in re.finditer(r"p3dtrace: HANG\? rank (\d+) .* pending ([\d.]+) s",
                         err):
        seen.setdefault(int(m.group(1)), float(m.group(2)))
    # ranks inside NCCL long enough for the report to be due (the job is
    # SIGTERMed a few seconds in; the analyzer gives how long each waited)
    # (not one whose call returned and whose incompleteness the analyzer
    # proved from its peers: the shim's watchdog only sees calls in flight)
    due = [w["rank"] for w in an["hang"]["chain"] if not w["inferred"]
           and not w.get("proven_by_peers") and w["pending_s"] >= TIMEOUT + 2.0]
    for r in due:
        if r not in seen:
            return f"rank {r} waited {TIMEOUT + 2.0} s, no watchdog report"
        if seen[r] > TIMEOUT + 5:
            return f"rank {r}: watchdog report after {seen[r]} s"
    STATS["checked"] += len(due)
    STATS["late"] = max([STATS["late"]] + [seen[r] for r in due])
    return None

def check(i, name):
    lay, kind, rank, grp, n, _ = F[i]
    t = json.load(open(f"{out}/{name}/truth.json"))
    an = json.load(open(f"{out}/{name}.json"))
    h = an["hang"]
    if kind.startswith("mismatch") or kind == "twomm":
        if not named(h, an, t, rank, grp, n - 1):
            return f"mismatch not named: {h['mismatches']}"
        if kind == "twomm" and not named(h, an, t, 7, "tp", 29):
            return f"second mismatch not named: {h['mismatches']}"
        if h["detected"] and h["root_ranks"] != [rank]:
            return f"hung, roots {h['root_ranks']}, not the odd rank {rank}"
        return None
    if kind == "missing":
        ok = h["detected"] and h["root_ranks"] == [rank] and \
            h["roots"][0]["state"] == "no_trace"
        return None if ok else f"missing dump: roots {h['roots']}"
    if not h["detected"] or h["root_ranks"] != [rank]:
        return f"roots {h['root_ranks']} (detected {h['detected']})"
    root = h["roots"][0]
    if kind == "kill":
        if root["state"] != "killed":
            return f"root state {root['state']}"
        if root["ops_issued"] != t["ranks"][rank]["issued_total"]:
            return (f"ops {root['ops_issued']} != issued "
                    f"{t['ranks'][rank]['issued_total']}")
    else:
        st = t["ranks"][rank]["stopped"]
        g = {"id": grp, "members": members(t, grp, rank)}
        if root["state"] != "not_in_nccl":
            return f"root state {root['state']}"
        if not root["owed"] or sorted(root["owed"]["members"]) != sorted(
                g["members"]):
            return f"owed op {root['owed']} not on {g['id']}"
        if root["owed"]["issued_on_comm"] != st["issued_on_group"]:
            return (f"owed op after {root['owed']['issued_on_comm']} ops, "
                    f"truth {st['issued_on_group']}")
    return check_watchdog(name, an)

STATS = {"checked": 0, "late": 0.0}
t0 = time.time()
with ThreadPoolExecutor(max_workers=jobs) as ex:
    names = list(ex.map(run, range(len(F))))
bad = 0
for i, name in enumerate(names):
    try:
        why = check(i, name)
    except Exception as e:          # a missing file or key is a failure
        why = f"{type(e).__name__}: {e}"
    if why:
        bad += 1
        print(f"FAIL {name}: {why}")
print(f"hang matrix ({mode}): {len(F) - bad}/{len(F)} faults diagnosed "
      f"(root rank and op) in {time.time() - t0:.1f} s; watchdog reports "
      f"on {STATS['checked']} waiting ranks, pending at report <= "
      f"{STATS['late']:.2f} s (P3D_HANG_TIMEOUT {TIMEOUT} s)")
sys.exit(1 if bad else 0)
PY
r=$?
[ $r -eq 0 ] && rm -rf "$OUT" || { echo "outputs kept in $OUT"; rc=1; }
done
exit $rc
