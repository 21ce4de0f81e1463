#!/bin/sh
# plugin_default_h200.sh - the default GPU timing (no P3D_GPU_TIMING: auto)
# against events and the plugin on the H200, issue 24 (run while auto
# took the plugin; bench/README.md, fifteenth session):
#   1. bench/plugin_timing.py --sizes-only: 2 ranks, all-reduce 1 MiB ..
#      1 GiB, per-op GPU time of events, plugin and the defaults against
#      the script's own CUDA events, and NCCL's profiler log lines;
#   2. tests/gpu/run_torch_ops.sh: 8 ranks, every torch.distributed op
#      kind, lazy and eager communicators, under the defaults; then, per
#      op kind, how many ops of rank 0 got GPU times and from which source
#      (2 events, 3 plugin), and the trace's timing notes;
#   3. bench/plugin_graph_h200.py --graph-timing auto: eager ops around
#      CUDA-graph replays under the defaults.
# Figures only.  Writes its logs under $OUT (about 6 minutes).
#   OUT=/tmp/x sh bench/plugin_default_h200.sh
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:?set OUT to a folder for the results}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export NVSHMEM_DISABLE_NVLS=1 NCCL_SOCKET_IFNAME=lo
cd "$here"
make -j16 all > "$OUT/build.log" 2>&1 || { tail "$OUT/build.log"; exit 1; }
work=${WORK:-/tmp/p3d-plugin-default}
rm -rf "$work"; mkdir -p "$work"
echo "== sizes"
timeout 200 python3 bench/plugin_timing.py --sizes-only --out "$work/pt" 2>&1
echo "== torch ops (defaults)"
timeout 240 bash tests/gpu/run_torch_ops.sh "$work/to" 2>&1 | tail -20
for mode in lazy eager; do
    python3 - "$work/to/$mode/traces/job" "$mode" <<'PY'
import collections
import sys
sys.path.insert(0, "tests/tools")
import p3d_trace
t = p3d_trace.read_dir(sys.argv[1])[0]
ops = {r["op_id"]: r["op_name"] for r in t.records if r["type"] == "op"}
src = {}
for r in t.records:
    if r["type"] == "gpu_op" and r["op_id"] in ops:
        src[r["op_id"]] = r["source"]
by = collections.defaultdict(collections.Counter)
for i, name in ops.items():
    by[name][src.get(i, 0)] += 1
print("%s rank 0: op kind -> {GPU source: ops} (0 none, 2 events, "
      "3 plugin):" % sys.argv[2])
for name in sorted(by):
    print("  %-14s %s" % (name, dict(by[name])))
for r in t.records:
    if r["type"] == "note" and r["text"].startswith(("gpu timing", "plugin")):
        print("  note:", r["text"])
PY
done
echo "== graph (defaults)"
timeout 150 python3 bench/plugin_graph_h200.py --skip-host --graph-timing auto \
    --out "$work/pg" 2>&1 | tail -40
