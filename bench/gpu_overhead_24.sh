#!/bin/bash
# bench/gpu_overhead_24.sh - issue 24's training-loop runs on the GPU machine, in one
# command (about 7 minutes): the host-bound 1-rank loop and the GPU-bound
# 2-rank loop of gpu_overhead.py, untraced, traced with the defaults, with
# the plugin, with CUDA events, and untraced with Flight Recorder timing,
# 5 pairs each, settings rotated.  OUT: where the log goes [/tmp/p3d-24].
OUT=${OUT:-/tmp/p3d-24}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
make -j8 all > $OUT/build.log 2>&1 || { tail $OUT/build.log; exit 1; }
V="plugin:P3D_GPU_TIMING=plugin;events:P3D_GPU_TIMING=events;fr:untraced=1,TORCH_NCCL_ENABLE_TIMING=1,TORCH_NCCL_TRACE_BUFFER_SIZE=2000"
( python3 bench/gpu_overhead.py --out /tmp/gb --rotate --pairs 5 --steps 300 --nproc 1 --loops host --variants "$V"
  python3 bench/gpu_overhead.py --out /tmp/gb --rotate --pairs 5 --steps 40 --nproc 2 --loops gpu --variants "$V" ) 2>&1 | tee $OUT/overhead.log
for j in /tmp/gb/traces/gpu-p0-plugin /tmp/gb/traces/host-p0-plugin; do [ -d $j ] && build/p3d-analyze --dump $j/rank-00000.p3d 2>/dev/null | grep -m3 "gpu timing\|plugin:" ; done | tee -a $OUT/overhead.log
