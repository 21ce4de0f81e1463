#!/bin/sh
# Kernel timestamps from the hardware (issue 24): under the default GPU
# timing the shim asks CUPTI for cuptiActivityEnableHWTrace before it
# enables any record kind, over the fake CUPTI with 2 ranks of gpu_driver
# nccl.
#   refused  the fake answers CUPTI_ERROR_NOT_SUPPORTED (an H200): no
#            warning, kernels still recorded, and each trace notes that
#            its kernel times come from software instrumentation
#   hw       P3D_FAKE_CUPTI_HWTRACE=1 (a Blackwell GPU): the trace notes
#            the hardware event system
# What the shim asked is the fake's own log (P3D_FAKE_CUPTI_KINDS).
set -eu
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
. "$P3D_SRC/tests/integration/gpu_lib.sh"
for job in refused hw; do
hw=0
[ $job = hw ] && hw=1
P3D_FAKE_SHM_DIR="$tmp" P3D_FAKE_CUPTI_LOG="$tmp/$job.truth" \
P3D_FAKE_CUPTI_KINDS="$tmp/$job.kinds" P3D_FAKE_CUPTI_HWTRACE=$hw \
P3D_GPU_DRIVER_SPREAD=1 \
P3D_TRACE_DIR="$tmp" P3D_JOB_ID=$job \
LD_LIBRARY_PATH="$P3D_BUILD/fakes" LD_PRELOAD="$P3D_BUILD/libp3dtrace.so" \
    timeout 60 "$drv" nccl 2 2> "$tmp/err"
expect_warnings $job none
echo "-- $job"
python3 - "$tmp/$job.kinds" "$tmp/$job" "$P3D_SRC/tests/tools" $job \
    "$tmp/$job.truth" <<'PY'
import sys
sys.path.insert(0, sys.argv[3])
import p3d_trace
kinds, job = open(sys.argv[1]).read().split("\n"), sys.argv[4]
fail = []
# per process: "hwtrace 1" asked, and before any kind was enabled
asked = [k for k in kinds if k.startswith("hwtrace")]
if asked != ["hwtrace 1"] * 2:
    fail.append("hwtrace calls %s, want one 'hwtrace 1' per rank" % asked)
first_enable = next((i for i, k in enumerate(kinds)
                     if k.startswith("enable")), len(kinds))
if kinds.index("hwtrace 1") > first_enable:
    fail.append("hwtrace asked after a kind was enabled")
want = ("the hardware event system" if job == "hw" else
        "software instrumentation (hardware trace refused), error")
kernels = sum(1 for line in open(sys.argv[5]) if line.startswith("kernel"))
traces = p3d_trace.read_dir(sys.argv[2])
assert len(traces) == 2, "expected 2 rank files"
spans = 0
for rank, t in sorted(traces.items()):
    notes = [r["text"] for r in t.records if r["type"] == "note"
             and r["text"].startswith("cupti kernel clock: ")]
    if len(notes) != 1 or want not in notes[0]:
        fail.append("rank %d: notes %s, want one with %r" % (rank, notes,
                                                           want))
    spans += sum(1 for r in t.records if r["type"] == "gpu_span")
if not kernels or not spans:
    fail.append("kernels ran %d, spans recorded %d: want both" %
                (kernels, spans))
if fail:
    print("\n".join(fail))
    sys.exit(1)
print("%s: asked before enabling, %d kernels, %d spans, note %r" %
      (job, kernels, spans, want))
PY
done
