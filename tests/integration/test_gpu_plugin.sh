#!/bin/sh
# NCCL op GPU times from NCCL's profiler plugin (issue 24), over the fake
# NCCL's plugin calls (tests/fakes/fake_profiler.c): 2 ranks of
# gpu_driver nccl with every op kind (P3D_GPU_DRIVER_MIXED=1).
#   plugin, v4, async   P3D_GPU_TIMING=plugin (the fake loads the v5
#                       table, the v4 one, or calls from stream worker
#                       threads): every op the plugin can time has one
#                       GPU_OP of source PLUGIN whose duration equals
#                       within 10 us, and whose place within 2 ms, the
#                       earliest channel start and latest channel stop the
#                       fake sent (its truth log, P3D_FAKE_PROFILER_LOG),
#                       and that starts after its call;
#                       AlltoAll (sent as Send/Recv tasks) and the empty
#                       all-reduce (no task) get none, and the sends after
#                       the AlltoAll still match; no CUDA-event GPU_OP;
#                       the trace notes the plugin as the timing source;
#   other               NCCL_PROFILER_PLUGIN names another plugin: one
#                       warning per process, CUDA events for every op;
#   none                a fake NCCL without plugin support
#                       (P3D_FAKE_NO_PROFILER=1): same, its own warning;
#   events              P3D_GPU_TIMING=events: the plugin is not loaded;
#   auto                no P3D_GPU_TIMING: CUDA events, the plugin is
#                       not loaded, nothing on stderr;
#   groupinit           plugin with the communicator made inside a group
#                       (as nccl-tests does), whose ncclGroupEnd runs the
#                       init and NCCL's init of the plugin: still the
#                       plugin;
#   v6                  P3D_GPU_TIMING=plugin on the 2.29.7 fake: the
#                       plugin (v6 table), asked for by name;
#   dlopened            no LD_PRELOAD, NCCL_PROFILER_PLUGIN names us: NCCL
#                       loads the library as a plugin only; the job runs,
#                       nothing is recorded and the fake sends no event;
#   (report)            p3d-analyze on plugin says its send/recv times came
#                       from the plugin (they read nccl-tests' sendrecv
#                       short on the H200); on events it does not.
#   late, early         the fake's globaltimer reads 200 ms late / early
#                       (P3D_FAKE_PROFILER_SKEW_NS): the causal bounds
#                       (no kernel before its call, none ending after we
#                       hear of it) bring every op within 2 ms of the
#                       truth, plus how loose those bounds were on that
#                       rank (the longest call-to-start or stop-to-return;
#                       3 ms once under ASan with two busy loops), and the
#                       note counts the ops they moved.
set -eu
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
. "$P3D_SRC/tests/integration/gpu_lib.sh"
run() { run_plugin_job "$@"; }
run plugin P3D_GPU_TIMING=plugin
run v4 P3D_GPU_TIMING=plugin P3D_FAKE_PROFILER_V4=1
run async P3D_GPU_TIMING=plugin P3D_FAKE_ASYNC=1
run other P3D_GPU_TIMING=plugin NCCL_PROFILER_PLUGIN=libnccl-profiler-x.so
run none P3D_GPU_TIMING=plugin P3D_FAKE_NO_PROFILER=1
run events P3D_GPU_TIMING=events
run late P3D_GPU_TIMING=plugin P3D_FAKE_PROFILER_SKEW_NS=200000000
run early P3D_GPU_TIMING=plugin P3D_FAKE_PROFILER_SKEW_NS=-200000000
run auto
run groupinit P3D_GPU_TIMING=plugin P3D_GPU_DRIVER_GROUP_INIT=1
run v6 P3D_GPU_TIMING=plugin P3D_FAKE_NCCL_VERSION=22907 \
    P3D_FAKE_PROFILER_V6=1
mkdir "$tmp/dl"
run dlopened LD_PRELOAD= P3D_TRACE_DIR="$tmp/dl" P3D_GPU_TIMING=plugin \
    NCCL_PROFILER_PLUGIN="$P3D_BUILD/libp3dtrace.so" ||
    { cat "$tmp/dlopened.err"; echo "FAIL: dlopened: the job failed"; exit 1; }
if [ -e "$tmp/dlopened.truth" ] || [ -n "$(ls -A "$tmp/dl")" ]; then
    echo "FAIL: dlopened: events sent or files written:"; ls -R "$tmp/dl"
    exit 1
fi
echo "dlopened: job ran, nothing recorded, no event sent"
python3 - "$tmp" "$P3D_SRC/tests/tools" <<'PY'
import os
import sys
sys.path.insert(0, sys.argv[2])
import p3d_trace
d = sys.argv[1]
TOL = 10_000            # ns: a duration (no clock offset in it)
# ns: a placement.  The shim learns the fake globaltimer's offset from the
# wall clock and causal bounds (no kernel before its call, none ending
# after it is reported); the wall clock of a VM can step against
# CLOCK_MONOTONIC by 0.5 ms at a time, so an op lies within its bounds'
# width (tens of us) of the truth, not within a fixed 10 us.
PLACE = 2_000_000
COLLS = ("AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce")
fail = []

def truth(job):
    """(pid, comm, func, peer, number) -> (start, stop, channels)."""
    out, ords = {}, {}
    for line in open("%s/%s.truth" % (d, job)):
        pid, comm, func, peer, seq, nch, lo, hi = line.split()
        k = (int(pid), int(comm, 16), func, int(peer))
        if func in ("Send", "Recv"):
            seq = ords.get(k, 0)
            ords[k] = seq + 1
        out[k + (int(seq),)] = (int(lo), int(hi), int(nch))
    return out

def keys(t):
    """op_id -> the key its plugin events carry, None if it has none."""
    n, coll, p2p, out = t.header["world_size"], {}, {}, {}
    for o in sorted((r for r in t.records if r["type"] == "op"),
                    key=lambda r: r["op_id"]):
        name, c = o["op_name"], o["comm_hash"]
        k = None
        if name in COLLS and o["count"]:
            k = (c, name, -1)
            seq = coll.get(k, 0)
            coll[k] = seq + 1
        elif name in ("Send", "Recv"):
            k = (c, name, o["peer"])
            seq = p2p.get(k, 0)
            p2p[k] = seq + 1
        elif name == "AlltoAll":
            for r in range(n):
                for f in ("Send", "Recv"):
                    p2p[(c, f, r)] = p2p.get((c, f, r), 0) + 1
        out[o["op_id"]] = (t.header["pid"],) + k + (seq,) if k else None
    return out

def notes(t):
    return [r["text"] for r in t.records if r["type"] == "note"]

def slack(t, tr, ks):
    """How loose the causal bounds of a skewed job were, from what the
    fake and the rank did: the longest time from an op's call to its first
    channel start, or from its last channel stop to the call's return
    (the fake sends the events inside the call). A loaded machine
    stretches both, and the bounds place an op only that closely."""
    worst = 0
    for o in (r for r in t.records if r["type"] == "op"):
        k = ks.get(o["op_id"])
        if k is None or k not in tr or not o["t_exit"]:
            continue
        lo, hi, _ = tr[k]
        worst = max(worst, lo - o["t_enter"], o["t_exit"] - hi)
    return worst

def plugin_ok(job, abi, skewed=False):
    tr, spread = truth(job), 0
    for rank, t in sorted(p3d_trace.read_dir(d + "/" + job).items()):
        gpu = {}
        for r in t.records:
            if r["type"] == "gpu_op":
                gpu.setdefault(r["op_id"], []).append(r)
        ks, worst, n = keys(t), 0, 0
        tol = PLACE + (slack(t, tr, ks) if skewed else 0)
        enter = {r["op_id"]: r["t_enter"] for r in t.records
                 if r["type"] == "op"}
        for i, k in ks.items():
            g = gpu.get(i, [])
            if k is None:
                if g:
                    fail.append("%s rank %d op %d: GPU time without plugin "
                                "events" % (job, rank, i))
                continue
            if k not in tr:
                fail.append("%s rank %d op %d: the fake sent no %s" %
                            (job, rank, i, k))
                continue
            lo, hi, nch = tr[k]
            if len(g) != 1 or g[0]["source"] != 3:
                fail.append("%s rank %d op %d: GPU_OPs %s, want one of the "
                            "plugin" % (job, rank, i, g))
                continue
            err = max(abs(g[0]["gpu_start"] - lo), abs(g[0]["gpu_end"] - hi))
            worst = max(worst, err)
            dur = abs((g[0]["gpu_end"] - g[0]["gpu_start"]) - (hi - lo))
            if dur > TOL:
                fail.append("%s rank %d op %d: duration off by %d ns" %
                            (job, rank, i, dur))
            if g[0]["gpu_start"] < enter[i]:
                fail.append("%s rank %d op %d: GPU start %d ns before its "
                            "call" % (job, rank, i, enter[i] -
                                      g[0]["gpu_start"]))
            n += 1
            spread += (hi - lo) // (2 * nch) > 5 * TOL
        if worst > tol:
            fail.append("%s rank %d: GPU times off by %d ns (%d allowed)" %
                        (job, rank, worst, tol))
        moved = [x for x in notes(t) if x.startswith("plugin:")]
        if skewed and not (moved and " 0 ops moved" not in moved[0]):
            fail.append("%s rank %d: no op moved onto the bounds: %s" %
                        (job, rank, moved))
        want = ["gpu timing: NCCL ops timed by the NCCL profiler plugin"]
        if [x for x in notes(t) if x.startswith("gpu timing:")] != want:
            fail.append("%s rank %d: notes %s" % (job, rank, notes(t)))
        pl = [x for x in notes(t) if x.startswith("plugin:")]
        if len(pl) != 1 or "(v%d, 1 communicators): %d ops timed" % (abi, n) \
                not in pl[0] or " 0 lost" not in pl[0]:
            fail.append("%s rank %d: plugin note %s" % (job, rank, pl))
        print("%s rank %d: %d ops with plugin GPU times, worst error %d ns"
              " (allowed %d)" % (job, rank, n, worst, tol))
    if spread < 2:
        fail.append("%s: only %d ops whose channels differ by more than "
                    "the tolerance" % (job, spread))
    if open("%s/%s.err" % (d, job)).read().count("p3dtrace: warning"):
        fail.append("%s: unexpected warning" % job)

def events_ok(job, warning):
    err = open("%s/%s.err" % (d, job)).read()
    n = err.count(warning) if warning else 0
    if n != (2 if warning else 0) or err.count("p3dtrace: warning") != n:
        fail.append("%s: stderr %r, want %s once per process" %
                    (job, err, warning))
    for rank, t in sorted(p3d_trace.read_dir(d + "/" + job).items()):
        ops = {r["op_id"] for r in t.records if r["type"] == "op"}
        src = {r["op_id"]: r["source"] for r in t.records
               if r["type"] == "gpu_op"}
        if not ops or set(src) != ops or set(src.values()) != {2}:
            fail.append("%s rank %d: want CUDA-event times for all %d ops"
                        % (job, rank, len(ops)))
        want = "gpu timing: NCCL ops timed by CUDA events"
        if want not in notes(t) or any(x.startswith("plugin:")
                                       for x in notes(t)):
            fail.append("%s rank %d: notes %s" % (job, rank, notes(t)))
        if warning and not any(warning in x for x in notes(t)):
            fail.append("%s rank %d: the warning is not in the trace" %
                        (job, rank))
        print("%s rank %d: %d ops timed by CUDA events" %
              (job, rank, len(ops)))
    if os.path.exists("%s/%s.truth" % (d, job)):
        fail.append("%s: the fake loaded a profiler plugin" % job)

plugin_ok("plugin", 5)
plugin_ok("v4", 4)
plugin_ok("async", 5)
plugin_ok("late", 5, skewed=True)
plugin_ok("early", 5, skewed=True)
events_ok("other", "NCCL_PROFILER_PLUGIN=libnccl-profiler-x.so is another "
          "profiler plugin")
events_ok("none", "NCCL did not load libp3dtrace.so as its profiler plugin")
events_ok("events", None)
events_ok("auto", None)
plugin_ok("groupinit", 5)
plugin_ok("v6", 6)
if fail:
    sys.exit("FAIL: " + "; ".join(fail))
PY
# The report says where send/recv times came from the plugin (nccl-tests'
# sendrecv read 20-99% short with it on the H200), and only there.
for job in plugin events; do
    "$P3D_BUILD/p3d-analyze" "$tmp/$job" > "$tmp/$job.report" 2>/dev/null
    n=$(grep -c "send/recv times: 2 rank(s) took them from NCCL's profiler" \
        "$tmp/$job.report" || true)
    want=1; [ "$job" = events ] && want=0
    [ "$n" = "$want" ] ||
        { echo "FAIL: $job: the send/recv caveat appears $n times, want $want"
          exit 1; }
done
echo "report: the send/recv caveat with the plugin only"
