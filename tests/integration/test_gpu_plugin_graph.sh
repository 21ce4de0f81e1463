#!/bin/sh
# CUDA-graph captures and replays under P3D_GPU_TIMING=plugin (issue 24),
# over the fake NCCL (tests/fakes/fake_profiler.c, P3D_FAKE_GRAPH): 2
# ranks of gpu_driver nccl with every op kind (P3D_GPU_DRIVER_MIXED=1);
# on each rank the 3rd and 4th ungrouped all-reduce are captured, and
# replayed 3 times (from another thread, as CUDA's host callback) before
# the 5th, the way NCCL sends them (docs/nccl-profiler-notes.md): each
# replayed task's parent is the capture-time API handle, and its
# seqNumber is a new one when that handle is not NULL.
#   graph    the v5 table (NCCL 2.28's loader);
#   graph6   the v6 table (P3D_FAKE_PROFILER_V6=1, NCCL 2.29+'s loader).
# Asserts, per rank, from the fake's truth log (P3D_FAKE_PROFILER_LOG):
# every eager op the plugin can time, before and after the replays, has
# one plugin GPU_OP equal to the channels the fake sent for it (duration
# within 10 us, place within 2 ms); captured calls get none (a replay is
# never attached to an op record) and are flagged capturing, no other op
# is (the stream reads as capturing, cudaStreamIsCapturing, right after a
# call the fake kept in its graph); the closing plugin note counts the
# captured calls, the replayed tasks and their summed kernel time the
# fake sent, the ops timed, and the ABI version NCCL loaded; and the
# live watchdog does not report a captured call as a hang.
set -eu
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
. "$P3D_SRC/tests/integration/gpu_lib.sh"
run() {   # job, then env assignments
    job=$1; shift
    run_plugin_job "$job" P3D_GPU_TIMING=plugin P3D_FAKE_GRAPH=2:2:3 "$@"
}
run graph
run graph6 P3D_FAKE_PROFILER_V6=1
# The watchdog: a captured call that is its stream's last op for a while
# (the 5th all-reduce captured, then 3 s with nothing on that stream)
# waits on nothing, so no "HANG?" may name it (seq 4) after the 1 s
# timeout; before the fix both ranks reported it.
run linger P3D_FAKE_GRAPH=4:1:0 P3D_GPU_DRIVER_MIXED=0 P3D_HANG_TIMEOUT=1 \
    P3D_GPU_DRIVER_LINGER_MS=3000
if grep "HANG?.*AllReduce seq 4 " "$tmp/linger.err"; then
    echo "FAIL: the watchdog reported the captured call as a hang"
    exit 1
fi
python3 - "$tmp" "$P3D_SRC/tests/tools" <<'PY'
import re
import sys
sys.path.insert(0, sys.argv[2])
import p3d_trace
d = sys.argv[1]
TOL = 10_000          # ns: a duration
PLACE = 2_000_000     # ns: a placement (see test_gpu_plugin.sh)
COLLS = ("AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce")
fail = []

def truth(job):
    """pid -> ({(comm, func, peer): [entry, ...] in call order}, replays);
    an entry is ("eager", lo, hi) or ("captured",)."""
    out = {}
    for line in open("%s/%s.truth" % (d, job)):
        f = line.split()
        pid, comm, func, peer = int(f[0]), int(f[1], 16), f[2], int(f[3])
        tasks, reps = out.setdefault(pid, ({}, []))
        tag = f[8] if len(f) > 8 else "eager"
        if tag == "replay":
            reps.append(int(f[7]) - int(f[6]))
        elif tag == "captured":
            tasks.setdefault((comm, func, peer), []).append(("captured",))
        else:
            tasks.setdefault((comm, func, peer), []).append(
                ("eager", int(f[6]), int(f[7])))
    return out

def entries(t, tasks):
    """(op record, its truth entry or None), in call order."""
    n, seen, out = t.header["world_size"], {}, []
    for o in sorted((r for r in t.records if r["type"] == "op"),
                    key=lambda r: r["op_id"]):
        name, c = o["op_name"], o["comm_hash"]
        k = None
        if name in COLLS and o["count"]:
            k = (c, name, -1)
        elif name in ("Send", "Recv"):
            k = (c, name, o["peer"])
        elif name == "AlltoAll":      # its hidden tasks, not its own
            for r in range(n):
                for f in ("Send", "Recv"):
                    seen[(c, f, r)] = seen.get((c, f, r), 0) + 1
        if k is None:
            out.append((o, None))
            continue
        i = seen.get(k, 0)
        seen[k] = i + 1
        lst = tasks.get(k, [])
        out.append((o, lst[i] if i < len(lst) else ("missing",)))
    return out

def check_rank(job, abi, rank, t, tasks, reps):
    gpu = {}
    for r in t.records:
        if r["type"] == "gpu_op":
            gpu.setdefault(r["op_id"], []).append(r)
    timed = captured = after = 0
    for o, e in entries(t, tasks):
        i, g = o["op_id"], gpu.get(o["op_id"], [])
        what = "%s rank %d op %d (%s)" % (job, rank, i, o["op_name"])
        flagged = "capturing" in o["flag_names"]
        if flagged != (e is not None and e[0] == "captured"):
            fail.append("%s: capturing flag %s, want %s" %
                        (what, flagged, not flagged))
        if e is None or e[0] == "captured":
            captured += e is not None
            if g:
                fail.append("%s: GPU time %s, want none" % (what, g))
            continue
        if e[0] == "missing":
            fail.append("%s: the fake sent no task for it" % what)
            continue
        if len(g) != 1 or g[0]["source"] != 3:
            fail.append("%s: GPU_OPs %s, want one of the plugin" % (what, g))
            continue
        lo, hi = e[1], e[2]
        dur = abs((g[0]["gpu_end"] - g[0]["gpu_start"]) - (hi - lo))
        err = max(abs(g[0]["gpu_start"] - lo), abs(g[0]["gpu_end"] - hi))
        if dur > TOL or err > PLACE:
            fail.append("%s: duration off by %d ns, place by %d ns" %
                        (what, dur, err))
        timed += 1
        after += captured == 2
    if captured != 2 or after < 3:
        fail.append("%s rank %d: %d captured calls, %d eager ops after "
                    "them; want 2 and >= 3" % (job, rank, captured, after))
    notes = [r["text"] for r in t.records
             if r["type"] == "note" and r["text"].startswith("plugin")]
    m = re.search(r"^plugin: .*\(v(\d+), 1 communicators\): (\d+) ops "
                  r"timed .*\nplugin graphs: (\d+) graph-captured calls, "
                  r"(\d+) replayed tasks \((\d+) with kernel times, "
                  r"([0-9.]+) us in all\)", "\n".join(notes))
    want = (abi, timed, captured, len(reps), len(reps))
    got = tuple(int(x) for x in m.groups()[:5]) if m else None
    if got != want or abs(float(m.group(6)) - sum(reps) / 1e3) > 0.051:
        fail.append("%s rank %d: plugin note %s; want v%d, %d ops timed, "
                    "%d captured, %d replayed tasks of %.1f us" %
                    ((job, rank, notes) + want[:4] + (sum(reps) / 1e3,)))
    print("%s rank %d: %d eager ops timed (%d after the replays), %d "
          "captured, %d replayed tasks" %
          (job, rank, timed, after, captured, len(reps)))

def graph_ok(job, abi):
    tr = truth(job)
    for rank, t in sorted(p3d_trace.read_dir(d + "/" + job).items()):
        tasks, reps = tr.get(t.header["pid"], ({}, []))
        if len(reps) != 2 * 3:
            fail.append("%s rank %d: the fake replayed %d tasks, want 6" %
                        (job, rank, len(reps)))
        check_rank(job, abi, rank, t, tasks, reps)
    if open("%s/%s.err" % (d, job)).read().count("p3dtrace: warning"):
        fail.append("%s: unexpected warning" % job)

graph_ok("graph", 5)
graph_ok("graph6", 6)
if fail:
    sys.exit("FAIL: " + "; ".join(fail))
PY
