#!/bin/sh
# plugin_graph_h200.sh - on the H200 (PyTorch 2.11, NCCL 2.28.9, one GPU):
# P3D_GPU_TIMING=plugin around CUDA-graph replays, and host cost per op
# of untraced, off, events and plugin (bench/plugin_graph_h200.py).
# Prints eager ops with plugin GPU times before, between and after the
# replays, the "plugin:" / "plugin graphs:" notes (replay count), NCCL's
# profiler log lines, p3d-analyze --json's communicator GPU times and
# --dump's notes, and the host-cost medians.  Writes all under $OUT.
#   sh bench/plugin_graph_h200.sh        (after make; about 5 minutes)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:?set OUT to a folder for the results}
mkdir -p "$OUT"
[ -f "$here/build/libp3dtrace.so" ] && [ -x "$here/build/p3d-analyze" ] ||
    make -C "$here" -j16 all > "$OUT/build.log" 2>&1 ||
    { tail "$OUT/build.log"; exit 1; }
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export NVSHMEM_DISABLE_NVLS=1 NCCL_SOCKET_IFNAME=lo
cd "$here"
timeout 460 python3 bench/plugin_graph_h200.py --out "$OUT" \
    --replays "${REPLAYS:-20}" --rounds "${ROUNDS:-3}" \
    --calls "${CALLS:-20000}" --budget 330 2>&1 | tee "$OUT/summary.log"
job="$OUT/traces/graph"
if [ -d "$job" ]; then
    build/p3d-analyze --json "$OUT/graph.json" "$job" > "$OUT/graph.txt" \
        2> "$OUT/graph.err" ||
        echo "p3d-analyze --json failed, see $OUT/graph.err"
    python3 - "$OUT/graph.json" <<'PY' | tee -a "$OUT/summary.log"
import json
import sys
try:
    d = json.load(open(sys.argv[1]))
except ValueError as e:
    sys.exit("graph.json: %s" % e)
for c in d.get("communicators", []):
    print("analyze comm %s (%s): %s ops, gpu_time_ms %s" %
          (c.get("id"), c.get("label"), c.get("ops"), c.get("gpu_time_ms")))
PY
    for f in "$job"/rank-*.p3d; do
        echo "== $f"
        build/p3d-analyze --dump "$f" | grep -E "gpu timing|plugin" || true
    done | tee -a "$OUT/summary.log"
fi
