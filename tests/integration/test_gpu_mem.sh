#!/bin/sh
# Memory accounting of the shim (issue 4) over the fake cudart/driver:
# the framework device peak equals the known pattern of gpu_driver mem,
# whose peak is reached through a cuMemAlloc obtained by cuGetProcAddress
# and only counts right if cuMemCreate/cuMemMap obtained through
# cudaGetDriverEntryPoint* are counted too; current, pinned and managed
# levels, device-wide used memory, and the throttle on peak records.
set -eu
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
. "$P3D_SRC/tests/integration/gpu_lib.sh"
P3D_TRACE_DIR="$tmp" P3D_JOB_ID=mem LD_PRELOAD="$P3D_BUILD/libp3dtrace.so" \
    "$drv" mem > "$tmp/expect"
python3 - "$tmp/expect" "$tmp/mem" "$P3D_SRC/tests/tools" <<'PY'
import sys
sys.path.insert(0, sys.argv[3])
import p3d_trace
exp = {}
for line in open(sys.argv[1]):
    _, k, v = line.split()
    exp[k] = int(v)
traces = list(p3d_trace.read_dir(sys.argv[2]).values())
assert len(traces) == 1, "expected one trace file, got %d" % len(traces)
mem = [r for r in traces[0].records if r["type"] == "mem"]
def last(kind):
    rs = [r for r in mem if r["kind_name"] == kind]
    assert rs, "no %s record" % kind
    return rs[-1]
fail = []
def check(what, got, want):
    print("%-22s got %12d want %12d" % (what, got, want))
    if got != want:
        fail.append(what)
check("device peak", last("device")["peak"], exp["device"])
check("device current", last("device")["current"], exp["device_current"])
check("host_pinned peak", last("host_pinned")["peak"], exp["host_pinned"])
check("managed peak", last("managed")["peak"], exp["managed"])
summ = [r for r in traces[0].records if r["type"] == "summary"]
assert len(summ) == 1, "expected one summary record, got %d" % len(summ)
check("summary device peak", summ[0]["peak_device"], exp["device"])
check("summary pinned peak", summ[0]["peak_host_pinned"], exp["host_pinned"])
used = last("device_used")
print("device_used peak      ", used["peak"])
if used["peak"] < 512 << 20:
    fail.append("device_used (context bytes of the fake missing)")
n_dev = sum(1 for r in mem if r["kind_name"] == "device")
print("device mem records    ", n_dev, "(2000+ peak changes)")
if n_dev > 400:
    fail.append("peak records not throttled")
peaks = [r["peak"] for r in mem if r["kind_name"] == "device"]
if peaks != sorted(peaks):
    fail.append("device peaks not monotonic")
if fail:
    sys.exit("FAIL: " + ", ".join(fail))
PY
