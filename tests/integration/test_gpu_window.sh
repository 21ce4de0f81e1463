#!/bin/sh
# The default GPU timing (P3D_GPU_TIMING=auto): CUDA events time every
# NCCL op, CUPTI records kernels only in windows (P3D_GPU_WINDOW), over
# the fakes with 2 ranks of gpu_driver nccl.
#   default  the whole short run lies in the first window: every op has
#            an events GPU_OP, all 100 compute kernels are recorded, one
#            window opened, no driver or correlation records asked for
#   off      no kernel records at all, ops still timed by events
#   windows  P3D_GPU_WINDOW=0.2:0.15:0.4 over 80 steps of ~20 ms (8 ms of
#            compute each): spans only inside the windows; the analyzer
#            counts some but not all steady iterations as covered, and
#            its compute share (~40% per covered step) is not diluted by
#            the uncovered ones; JSON gives their compute_ms as null; the
#            Chrome trace marks where each window opened
#   bogus    a value it does not know: warned once per rank, default used
set -eu
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
. "$P3D_SRC/tests/integration/gpu_lib.sh"
an="$P3D_BUILD/p3d-analyze"
for job in default off windows bogus; do
win=; steps=0
case $job in
off) win=off ;;
windows) win=0.2:0.15:0.4; steps=80 ;;
bogus) win=sometimes ;;
esac
P3D_FAKE_SHM_DIR="$tmp" P3D_FAKE_CUPTI_LOG="$tmp/$job.truth" \
P3D_FAKE_CUPTI_KINDS="$tmp/$job.kinds" P3D_GPU_DRIVER_SPREAD=1 \
P3D_GPU_WINDOW=$win P3D_GPU_DRIVER_STEPS=$steps \
P3D_TRACE_DIR="$tmp" P3D_JOB_ID=$job \
LD_LIBRARY_PATH="$P3D_BUILD/fakes" LD_PRELOAD="$P3D_BUILD/libp3dtrace.so" \
    timeout 60 "$drv" nccl 2 2> "$tmp/err"
expect_warnings $job "P3D_GPU_WINDOW=sometimes is not FIRST:ON:EVERY seconds"
echo "-- $job"
# CUPTI_ACTIVITY_KIND_DRIVER is 4, EXTERNAL_CORRELATION 38
if grep -Eq "^enable (4|38)$" "$tmp/$job.kinds" 2>/dev/null; then
    echo "$job: driver or external correlation records asked for"; exit 1
fi
python3 - "$tmp/$job.truth" "$tmp/$job" "$P3D_SRC/tests/tools" $job <<'PY'
import os
import sys
sys.path.insert(0, sys.argv[3])
import p3d_trace
job = sys.argv[4]
truth = {}
if os.path.exists(sys.argv[1]):
    for line in open(sys.argv[1]):
        _, pid, nccl, ext, s, e, name = line.split()
        truth.setdefault(int(pid), []).append((int(nccl), int(s), int(e)))
traces = p3d_trace.read_dir(sys.argv[2])
assert len(traces) == 2, "expected 2 rank files"
fail = []
for rank, t in sorted(traces.items()):
    recs = t.records
    ops = {r["op_id"] for r in recs if r["type"] == "op"}
    gpu = {r["op_id"] for r in recs if r["type"] == "gpu_op"
           and r["source"] == 2}
    if gpu != ops:
        fail.append("rank %d: ops %s without an events gpu_op" %
                    (rank, sorted(ops - gpu)))
    spans = [r for r in recs if r["type"] == "gpu_span" and r["kind"] == 1]
    items = sum(r["n_items"] for r in spans)
    wins = [r for r in recs if r["type"] == "gpu_window"]
    notes = [r["text"] for r in recs if r["type"] == "note"
             and r["text"].startswith("cupti:")]
    kern = [k for k in truth.get(t.header["pid"], []) if not k[0]]
    print("rank %d: %d ops, %d compute kernels recorded (%d reported), %d "
          "window records" % (rank, len(ops), items, len(kern), len(wins)))
    if job in ("default", "bogus"):
        ok = (items == 100 and len(wins) == 1 and wins[0]["on"] == 1 and
              len(notes) == 1 and "windows 300:30:600 s, 1 opened; NCCL "
              "ops timed by CUDA events" in notes[0])
        if not ok:
            fail.append("rank %d: %d items, windows %s, notes %s" %
                        (rank, items, wins, notes))
    elif job == "off":
        if spans or wins or notes:
            fail.append("rank %d: %d spans, %d window records, notes %s "
                        "with windows off" % (rank, len(spans), len(wins),
                                              notes))
    else:
        on = [w for w in wins if w["on"]]
        bounds = t.kernel_windows() or []
        # a window's start is written once recording is on, so a kernel
        # may start just before it; one launched just before a window
        # closes may run after it (4 kernels of 2 ms): 10 ms of slack
        slack = 10_000_000
        out = [r for r in spans if not any(
            a - slack <= r["start"] and r["end"] <= b + slack
            for a, b in bounds)]
        total = 100 + 80 * 4   # the fake logs only the kernels it reports
        if len(on) < 3 or out or not (0 < items < total):
            fail.append("rank %d: %d windows opened, %d spans outside, %d "
                        "of %d kernels" % (rank, len(on), len(out), items,
                                           total))
if fail:
    sys.exit("FAIL: " + "; ".join(fail))
PY
done
# The analysis of the windowed job: fractions over covered iterations.
"$an" "$tmp/windows" > "$tmp/report" 2> "$tmp/aerr" ||
    { cat "$tmp/aerr"; echo "windows: p3d-analyze failed"; exit 1; }
"$an" --json "$tmp/j.json" --chrome "$tmp/c.json" "$tmp/windows" \
    > /dev/null 2>&1
python3 - "$tmp/report" "$tmp/j.json" "$tmp/c.json" "$tmp/windows" \
    "$P3D_SRC/tests/tools" "$tmp/windows.truth" <<'PY'
import json
import re
import sys


def truth_share(path):
    """Compute share of a step as the fake ran it: per rank, the steps'
    2 ms kernels it recorded (inside windows) grouped by step, each fully
    recorded step's busy time over the time to the next step's start
    (the next one in the same window)."""
    kern = {}
    for line in open(path):
        _, pid, nccl, _, s, e, _ = line.split()
        if nccl == "0" and int(e) - int(s) >= 1_000_000:
            kern.setdefault(pid, []).append((int(s), int(e)))
    busy = span = 0
    for ks in kern.values():
        ks.sort()
        steps = []
        for s, e in ks:
            if steps and s - steps[-1][-1][1] < 3_000_000:
                steps[-1].append((s, e))
            else:
                steps.append([(s, e)])
        # consecutive steps only: not a pair across a gap between windows
        pairs = [(a, b) for a, b in zip(steps, steps[1:])
                 if len(a) == len(b) == 4]
        gaps = sorted(b[0][0] - a[0][0] for a, b in pairs)
        for a, b in pairs:
            if b[0][0] - a[0][0] <= 1.5 * gaps[len(gaps) // 2]:
                busy += sum(e - s for s, e in a)
                span += b[0][0] - a[0][0]
    return 100.0 * busy / span if span else None
rep = open(sys.argv[1]).read()
m = re.search(r"kernel records: in windows \(P3D_GPU_WINDOW\); (\d+) of "
              r"(\d+) steady rank-iterations lie inside one", rep)
assert m, "no kernel-window line in the report:\n" + rep
cov, all_ = int(m.group(1)), int(m.group(2))
c = re.search(r"compute ([\d.]+)%, NCCL busy", rep)
assert c, "no breakdown:\n" + rep
comp = float(c.group(1))
print("analyzer: %d of %d steady rank-iterations covered, compute %.1f%%"
      % (cov, all_, comp))
assert 0 < cov < all_, "want some but not all iterations covered"
# 8 ms of compute per ~20 ms step as planned; how much it really was is
# what the fake ran (a loaded host lengthens the 2 ms kernels and the
# 10 ms sleep unevenly); counting the uncovered steps as no compute would
# bring it to about cov/all of that.
want = truth_share(sys.argv[6])
print("truth: compute %.1f%% of a step" % want)
assert abs(comp - want) <= 5, "compute %.1f%%, truth %.1f%%" % (comp, want)
j = json.load(open(sys.argv[2]))
kw = j["verdict"]["kernel_windows"]
assert kw == {"steady_rank_iterations": all_, "covered": cov}, kw
nulls = sum(1 for r in j["ranks"] for it in r["iters"]
            if it["compute_ms"] is None)
assert nulls > 0, "no iteration without compute times in the JSON"
# Perfetto marks each rank's windows: as many "on" marks as the trace has
# window-open records
sys.path.insert(0, sys.argv[5])
import p3d_trace
opens = sum(1 for t in p3d_trace.read_dir(sys.argv[4]).values()
            for r in t.records if r["type"] == "gpu_window" and r["on"])
marks = [e for e in json.load(open(sys.argv[3]))["traceEvents"]
         if e.get("name", "").startswith("kernel records on")]
assert len(marks) == opens > 0, "%d on marks, %d windows" % (len(marks),
                                                             opens)
PY
