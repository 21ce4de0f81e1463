#!/bin/sh
# The CPU test doubles (fake NCCL/cudart) and the trace reader work:
# every collective's result, grouped p2p, split, PreMulSum, abort, kernel
# reports across 2, 3 and 8 processes, synchronous and P3D_FAKE_ASYNC=1;
# p3d_trace.py on hand-built files.
set -eu
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
st="$P3D_BUILD/fakes/p3dfake-selftest"
[ -x "$st" ] || { echo "no $st"; exit 1; }
for n in 2 3 8; do
    "$st" $n
done
# the same with asynchronous streams (work runs on per-stream threads)
for n in 2 8; do
    P3D_FAKE_ASYNC=1 "$st" $n
done
python3 "$P3D_SRC/tests/tools/p3d_trace_selftest.py"
# under the shim (when built): splits, NOCOLOR, InitAll, InitRankScalable,
# shrink and abort recorded
shim="$P3D_BUILD/libp3dtrace.so"
[ -f "$shim" ] || exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
LD_LIBRARY_PATH="$P3D_BUILD/fakes" LD_PRELOAD="$shim" P3D_QUIET=1 \
    P3D_TRACE_DIR="$tmp" P3D_JOB_ID=st "$st" 4
python3 - "$tmp/st" "$P3D_SRC/tests/tools" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
import p3d_trace
tr = p3d_trace.read_dir(sys.argv[1])
assert sorted(tr) == [0, 1, 2, 3], sorted(tr)
hows = {r: [c["how_name"] for c in t.comms()] for r, t in tr.items()}
assert all(h[0] == "ncclCommInitRankConfig" for h in hows.values()), hows
assert all("ncclCommSplit" in h for h in hows.values()), hows
assert hows[0].count("ncclCommInitAll") == 2, hows[0]
assert all("ncclCommInitRankScalable" in h for h in hows.values()), hows
assert ["ncclCommShrink" in hows[r] for r in range(4)] == [1, 1, 1, 0], hows
nocolor = [c for c in tr[3].comms() if "nocolor" in c["flag_names"]]
assert len(nocolor) == 1, tr[3].comms()
ends = [e["how_name"] for e in tr[0].of_type("comm_end")]
assert "ncclCommAbort" in ends, ends
# ncclBcast calls ncclBroadcast through the PLT: recorded once, as Bcast
b = [o for o in tr[1].ops() if o["op_name"] == "Broadcast"]
assert len(b) == 1 and "bcast_api" in b[0]["flag_names"], b
print("shim over the fakes: splits, NOCOLOR, InitAll, abort, Bcast ok")
PY
