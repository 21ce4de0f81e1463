#!/bin/sh
# bench/volume.sh - trace volume and shim memory (make bench-volume).
#  1. the simulated 8-rank Megatron-style job (TP=2 PP=2 DP=2, m=8, fake
#     NCCL/cudart/CUPTI, every shim feature at its default) for ITERS
#     iterations: bytes per op and per second (bench/volume.py);
#  2. a long run of all-reduces on the null NCCL (MEM_CALLS, default 8M):
#     the process's resident memory and the trace mappings at 8 points.
# Environment: BUILD, ITERS [20], MEM_CALLS [8000000], VOL_DIR [/tmp/p3d-vol]
set -e
BUILD=${BUILD:-$(pwd)/build}
SRC=$(cd "$(dirname "$0")/.." && pwd)
ITERS=${ITERS:-20}
MEM_CALLS=${MEM_CALLS:-8000000}
D=${VOL_DIR:-/tmp/p3d-vol}
rm -rf "$D"
echo "== simulated job: p3d-sim --tp 2 --pp 2 --dp 2 -m 8 --iters $ITERS"
"$BUILD/p3d-sim" --tp 2 --pp 2 --dp 2 -m 8 --iters "$ITERS" --out "$D" \
    --job-id vol --shim "$BUILD/libp3dtrace.so" --quiet
python3 "$SRC/bench/volume.py" "$D/vol"
rm -rf "$D"
echo "== shim memory over $MEM_CALLS traced all-reduces (null NCCL)"
if [ -x "$BUILD/bench/null/shim_bench" ]; then
    P3D_GPU_TIMING=off P3D_TRACE_DIR="$D" \
        LD_PRELOAD="$BUILD/libp3dtrace.so" "$BUILD/bench/null/shim_bench" \
        -r 80 -n $((MEM_CALLS / 80)) mem 2>&1 | grep -v '^p3dtrace: warning'
    du -sh "$D" | sed 's/^/trace written: /'
else
    echo "(build/bench/null/shim_bench not built: make bench-shim first)"
fi
rm -rf "$D"
