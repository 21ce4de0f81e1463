#!/bin/bash
# bench/gpu_overhead_24b.sh - the second of issue 24's GPU runs (about 7
# minutes): the host-bound 1-rank loop with kernel windows off (what a
# long run costs between windows: the NCCL path alone), 7 pairs, settings
# rotated, each rank pinned to 2 cores; then P3D_GPU_TIMING=cupti on the
# 2-rank GPU-bound loop, analysed: do its communicators get GPU times?
# OUT: where the logs go [/tmp/p3d-24b].
OUT=${OUT:-/tmp/p3d-24b}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
make -j8 all > "$OUT/build.log" 2>&1 || { tail "$OUT/build.log"; exit 1; }
W=P3D_GPU_WINDOW=off
V="plugin:P3D_GPU_TIMING=plugin,$W;events:P3D_GPU_TIMING=events;off:P3D_GPU_TIMING=off"
V="$V;fr:untraced=1,TORCH_NCCL_ENABLE_TIMING=1,TORCH_NCCL_TRACE_BUFFER_SIZE=2000"
P3D_BENCH_PIN=2 python3 bench/gpu_overhead.py --out /tmp/gb2 --rotate --pairs 7 \
    --steps 600 --nproc 1 --loops host --variants "shimw:$W;$V" 2>&1 |
    grep -v " pair " | tee "$OUT/overhead.log"
python3 bench/gpu_overhead.py --out /tmp/gb3 --pairs 1 --steps 20 --nproc 2 \
    --loops gpu --variants "cupti:P3D_GPU_TIMING=cupti" 2>&1 | tee -a "$OUT/overhead.log"
for m in cupti shim; do
    j=/tmp/gb3/traces/gpu-p0-$m
    build/p3d-analyze --json "$OUT/$m.json" "$j" > "$OUT/$m.txt" 2>&1
    python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))
for c in j["communicators"]:
    print(sys.argv[2], c.get("used_as"), c.get("size"), {k: v for k, v in c.items() if "gpu" in k})' "$OUT/$m.json" "$m" | tee -a "$OUT/overhead.log"
    build/p3d-analyze --dump "$j/rank-00000.p3d" | grep -m4 "gpu timing\|linked\|cupti" | tee -a "$OUT/overhead.log"
done
