#!/bin/sh
# GPU timing fallbacks (issue 4) over the fakes, 2 ranks of gpu_driver:
#   P3D_GPU_TIMING=events  every op gets a CUDA-event GPU_OP inside its call
#                          (grouped ops: ending at the group's end), no spans;
#                          "inside": from the shim's entry time to when the
#                          call returned to gpu_driver, which logs that (the
#                          fake stamps the end event when the op's work
#                          ended, before the call returned, however late
#                          the shim records it);
#                          with asynchronous fake streams (events complete
#                          after the call returned) the times of one
#                          stream's ops follow each other without overlap;
#   CUPTI held by another tool (fake cuptiSubscribe fails): auto (busy)
#                          and plugin (busyplugin) warn once per process
#                          and still time every op, by events and by the
#                          plugin;
#   P3D_GPU_TIMING=off     no GPU_OP/GPU_SPAN/CLOCK_SYNC at all.
set -eu
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
. "$P3D_SRC/tests/integration/gpu_lib.sh"
run() {   # job, then env assignments
    job=$1; shift
    mkdir "$tmp/$job.ret"
    env P3D_FAKE_SHM_DIR="$tmp" P3D_TRACE_DIR="$tmp" P3D_JOB_ID="$job" \
        P3D_GPU_DRIVER_RETURNS="$tmp/$job.ret" \
        LD_LIBRARY_PATH="$P3D_BUILD/fakes" \
        LD_PRELOAD="$P3D_BUILD/libp3dtrace.so" "$@" \
        timeout 60 "$drv" nccl 2 2> "$tmp/$job.err"
}
run events P3D_GPU_TIMING=events
run evasync P3D_GPU_TIMING=events P3D_FAKE_ASYNC=1
run busy P3D_FAKE_CUPTI_BUSY=1
run busyplugin P3D_FAKE_CUPTI_BUSY=1 P3D_GPU_TIMING=plugin
run off P3D_GPU_TIMING=off
python3 - "$tmp" "$P3D_SRC/tests/tools" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
import p3d_trace
d = sys.argv[1]
fail = []
def returns(job, rank):
    """When gpu_driver saw its NCCL calls return (CLOCK_MONOTONIC ns)."""
    with open("%s/%s.ret/returns-%d" % (d, job, rank)) as f:
        return [int(v) for v in f.read().split()]
def events_ok(job, want=2):
    for rank, t in sorted(p3d_trace.read_dir(d + "/" + job).items()):
        recs = t.records
        rets = returns(job, rank)
        ops = {r["op_id"]: r for r in recs if r["type"] == "op"}
        gpu = {r["op_id"]: r for r in recs if r["type"] == "gpu_op"}
        ends = {r["group_id"]: r for r in recs
                if r["type"] == "group" and r["is_end"]}
        if set(gpu) != set(ops) or not ops:
            fail.append("%s rank %d: ops without gpu_op" % (job, rank))
            continue
        for i, o in ops.items():
            g = gpu[i]
            if g["source"] != want:
                fail.append("%s: source %d, want %d" % (job, g["source"],
                                                        want))
            # the call returned to the app at the first logged return
            # after the shim's exit time (of the group for grouped ops)
            ex = ends[o["group_id"]]["t_exit"] if o["group_id"] else \
                o["t_exit"]
            back = min([r for r in rets if r >= ex], default=None)
            if back is None:
                fail.append("%s rank %d op %d: no return logged after %d"
                            % (job, rank, i, ex))
                continue
            lo, hi = o["t_enter"] - 2_000_000, back + 100_000
            if not lo <= g["gpu_start"] <= g["gpu_end"] <= hi:
                fail.append("%s rank %d op %d: gpu %d..%d outside call "
                            "%d..%d" % (job, rank, i, g["gpu_start"],
                                        g["gpu_end"], lo, hi))
        if any(r["type"] == "gpu_span" for r in recs):
            fail.append("%s: spans without CUPTI" % job)
        print("%s rank %d: %d ops, all with %s times" %
              (job, rank, len(ops), "plugin" if want == 3 else "event"))
events_ok("events")
events_ok("busy")
events_ok("busyplugin", 3)
for rank, t in sorted(p3d_trace.read_dir(d + "/evasync").items()):
    ops = {r["op_id"]: r for r in t.records if r["type"] == "op"}
    gpu = {r["op_id"]: r for r in t.records if r["type"] == "gpu_op"}
    if set(gpu) != set(ops) or not ops:
        fail.append("evasync rank %d: ops without gpu_op" % rank)
        continue
    prev_end, prev_g = 0, None
    for i in sorted(ops):
        g, o = gpu[i], ops[i]
        if g["gpu_start"] < o["t_enter"] - 2_000_000 or \
                g["gpu_end"] < g["gpu_start"]:
            fail.append("evasync rank %d op %d: bad times" % (rank, i))
        grp = o["group_id"]
        if g["gpu_start"] < prev_end - 1000 and not (grp and grp == prev_g):
            fail.append("evasync rank %d op %d: overlaps the previous op"
                        % (rank, i))
        prev_end, prev_g = g["gpu_end"], grp
    print("evasync rank %d: %d ops in stream order" % (rank, len(ops)))
for job in ("busy", "busyplugin"):
    err = open(d + "/" + job + ".err").read()
    n = err.count("CUPTI is in use by another tool")
    print("%s: %d warnings for 2 processes" % (job, n))
    if n != 2 or err.count("p3dtrace: warning") != 2:
        fail.append("%s: %d CUPTI warnings, want one per process, and no "
                    "other: %s" % (job, n, err))
if open(d + "/events.err").read().count("p3dtrace: warning"):
    fail.append("events: unexpected warning")
for rank, t in sorted(p3d_trace.read_dir(d + "/off").items()):
    types = {r["type"] for r in t.records}
    if types & {"gpu_op", "gpu_span", "clock_sync"} or "op" not in types:
        fail.append("off rank %d: record types %s" % (rank, sorted(types)))
print("off: no GPU records")
if fail:
    sys.exit("FAIL: " + "; ".join(fail))
PY
