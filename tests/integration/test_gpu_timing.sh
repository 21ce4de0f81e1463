#!/bin/sh
# GPU op times and compute spans through the CUPTI path (issue 4,
# P3D_GPU_TIMING=cupti; the default's kernel windows are
# test_gpu_window.sh), over the fake CUPTI: 2 ranks of gpu_driver nccl.  Every NCCL kernel the fake
# ran (its truth log) must appear as the GPU_OP of its op (grouped ops:
# of every op of the group) within 5 us; 100 compute kernels must be
# merged into few spans whose busy time equals the kernels' sum (few:
# not checked with asynchronous streams, whose worker-thread gaps depend
# on the load of the machine).  Run
# with the shim's defaults: no driver-API records, so (as measured with
# CUDA 13.0's CUPTI) no external correlation records and launch order per
# stream links the kernels; NO_EXT with P3D_CUPTI_DRIVER=all (CUPTI
# attaches no ids, as to launches from NCCL's own thread for non-blocking
# communicators): launch order; with the fakes' asynchronous streams
# (kernels run on a stream worker thread, the truth log knows no op ids:
# kernels are matched to launch units in order); P3D_CUPTI_DRIVER=launch
# (only the launch APIs' records, which brought no ids on the H200 either:
# launch order); P3D_CUPTI_DRIVER=all, or launch on a CUPTI that refuses
# per-API records (oldcupti): the whole driver kind, and ids link the
# kernels.  A value it does not know (bogus) is warned about once and
# taken as 0.  The ranks use devices 0 and 1
# (P3D_GPU_DRIVER_SPREAD), so no warning at all is allowed.
set -eu
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
. "$P3D_SRC/tests/integration/gpu_lib.sh"
for job in default noext async launch all oldcupti bogus; do
noext=; [ $job = noext ] && noext=1
case $job in
noext|all) nodrv=all ;;
launch|oldcupti) nodrv=launch ;;
bogus) nodrv=yes ;;
*) nodrv= ;;
esac
old=; [ $job = oldcupti ] && old=1
async=; [ $job = async ] && async=1
P3D_FAKE_SHM_DIR="$tmp" P3D_FAKE_CUPTI_LOG="$tmp/$job.truth" \
P3D_FAKE_CUPTI_NO_EXT=$noext P3D_FAKE_ASYNC=$async P3D_CUPTI_DRIVER=$nodrv \
P3D_FAKE_CUPTI_NO_API_FILTER=$old \
P3D_FAKE_CUPTI_KINDS="$tmp/$job.kinds" P3D_GPU_DRIVER_SPREAD=1 \
P3D_TRACE_DIR="$tmp" P3D_JOB_ID=$job P3D_GPU_TIMING=cupti \
LD_LIBRARY_PATH="$P3D_BUILD/fakes" LD_PRELOAD="$P3D_BUILD/libp3dtrace.so" \
    timeout 60 "$drv" nccl 2 2> "$tmp/err"
expect_warnings $job "P3D_CUPTI_DRIVER=yes is not 0, launch or all: using 0"
echo "-- $job"
# CUPTI_ACTIVITY_KIND_DRIVER is 4, cuLaunchKernelEx's callback id 652
drv_on=0; grep -q "^enable 4$" "$tmp/$job.kinds" && drv_on=1
ex_on=0; grep -q "^driverapi 652$" "$tmp/$job.kinds" && ex_on=1
case $job in
noext|all|oldcupti) want="1 0" ;;
launch) want="0 1" ;;
*) want="0 0" ;;
esac
n_ext=$(grep -c "^ext " "$tmp/$job.kinds" || true)
case $job in all|oldcupti) [ "$n_ext" -gt 0 ] ;; *) [ "$n_ext" = 0 ] ;; esac ||
    { echo "$job: $n_ext external correlation records"; exit 1; }
if [ "$drv_on $ex_on" != "$want" ]; then
    echo "$job: driver kind on $drv_on, cuLaunchKernelEx records on" \
         "$ex_on; want $want"; exit 1
fi
python3 - "$tmp/$job.truth" "$tmp/$job" "$P3D_SRC/tests/tools" $job <<'PY'
import re
import sys
sys.path.insert(0, sys.argv[3])
import p3d_trace
GROUP = 1 << 63
truth = {}
for line in open(sys.argv[1]):
    _, pid, nccl, ext, s, e, name = line.split()
    truth.setdefault(int(pid), []).append(
        (int(nccl), int(ext), int(s), int(e)))
traces = p3d_trace.read_dir(sys.argv[2])
assert len(traces) == 2, "expected 2 rank files"
fail = []
for rank, t in sorted(traces.items()):
    recs = t.records
    ops = {r["op_id"]: r for r in recs if r["type"] == "op"}
    gpu = {}
    for r in recs:
        if r["type"] == "gpu_op":
            assert r["source"] == 1, "source %d, want CUPTI" % r["source"]
            gpu.setdefault(r["op_id"], []).append(r)
    kern = truth[t.header["pid"]]
    by_group = {}
    for o in ops.values():
        if o["group_id"]:
            by_group.setdefault(o["group_id"], []).append(o["op_id"])
    groups = sorted(by_group.values())
    # Launch units in call order: an ungrouped op, or a whole group.
    units, seen = [], set()
    for i in sorted(ops):
        g = ops[i]["group_id"]
        if not g:
            units.append([i])
        elif g not in seen:
            seen.add(g)
            units.append(sorted(by_group[g]))
    worst, n_linked = 0, 0
    for nccl, ext, s, e in kern:
        if not nccl:
            continue
        if ext == 0:                       # async: no id in the truth
            ids = units.pop(0)
        else:
            ids = [ext] if ext < GROUP else groups.pop(0)
        for i in ids:
            g = gpu.get(i)
            if not g:
                fail.append("rank %d op %d: no gpu_op" % (rank, i))
                continue
            worst = max(worst, abs(g[0]["gpu_start"] - s),
                        abs(g[0]["gpu_end"] - e))
            n_linked += 1
    if set(gpu) != set(ops):
        fail.append("rank %d: ops %s without gpu_op" %
                    (rank, sorted(set(ops) - set(gpu))))
    if worst > 5000:
        fail.append("rank %d: gpu times off by %d ns" % (rank, worst))
    spans = [r for r in recs if r["type"] == "gpu_span"
             and r["kind"] == 1]
    items = sum(r["n_items"] for r in spans)
    busy = sum(r["busy_ns"] for r in spans)
    true_busy = sum(e - s for n, _, s, e in kern if not n)
    print("rank %d: %d NCCL op times linked, worst error %d ns; %d compute "
          "kernels in %d spans, busy %d ns (truth %d)" %
          (rank, n_linked, worst, items, len(spans), busy, true_busy))
    if items != 100:
        fail.append("rank %d: %d compute items, want 100" % (rank, items))
    # Spans the shim's rule (gap below 10 us, at most 10 ms) makes of the
    # kernels as the fake ran them: a loaded host spaces its launches
    # out, so this comes from the truth, not from a fixed count; buffer
    # flushes may close a span early (a few more).
    want = 0
    ks = sorted((s, e) for n, _, s, e in kern if not n)
    for k, (s, e) in enumerate(ks):
        if k == 0 or s - ks[k - 1][1] >= 10_000 or e - first >= 10_000_000:
            want += 1
            first = s
    print("rank %d: %d spans, %d by the truth's kernel gaps"
          % (rank, len(spans), want))
    if len(spans) > want + 4 and sys.argv[4] != "async":
        fail.append("rank %d: %d spans, %d by the truth: not merged" %
                    (rank, len(spans), want))
    if abs(busy - true_busy) > 1000:
        fail.append("rank %d: busy %d != %d" % (rank, busy, true_busy))
    if any(r["end"] - r["start"] > 10_000_000 and r["n_items"] > 1
           for r in spans):
        fail.append("rank %d: merged span longer than 10 ms" % rank)
    if not any(r["type"] == "clock_sync" for r in recs):
        fail.append("rank %d: no clock_sync" % rank)
    # The shim's own account of how it linked the NCCL kernels.
    job = sys.argv[4]
    notes = [r["text"] for r in recs if r["type"] == "note"
             and r["text"].startswith("cupti:")]
    want_mode = {"noext": "all", "all": "all", "oldcupti": "all",
                 "launch": "launch"}.get(job, "off")
    by_id_expected = job in ("all", "oldcupti")
    if len(notes) != 1:
        fail.append("rank %d: %d cupti notes" % (rank, len(notes)))
    else:
        m = re.match(r"cupti: driver records (\w+); NCCL kernels linked by "
                     r"correlation id (\d+), by launch order (\d+), to no "
                     r"op (\d+)", notes[0])
        mode, by_id, by_order, none = (m.group(1), int(m.group(2)),
                                       int(m.group(3)), int(m.group(4))) \
            if m else ("?", -1, -1, -1)
        ok = (mode == want_mode and none == 0 and
              by_id + by_order == len(kern) - 100 and
              (by_order == 0 if by_id_expected else by_id == 0))
        if not ok:
            fail.append("rank %d: %s (want driver records %s, linked by %s)"
                        % (rank, notes[0], want_mode,
                           "id" if by_id_expected else "order"))
if fail:
    sys.exit("FAIL: " + "; ".join(fail))
PY
done
