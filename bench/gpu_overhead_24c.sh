#!/bin/bash
# bench/gpu_overhead_24c.sh - the third of issue 24's GPU runs (about 6
# minutes): the host-bound 1-rank loop again, every traced setting also
# with call-site stacks off (P3D_STACKS=0, the default where libunwind.so.8
# is missing; gpu_overhead.py forces P3D_STACKS=1, which then unwinds with
# libgcc at 10-20 us per call), 6 pairs, rotated, pinned.
OUT=${OUT:-/tmp/p3d-24c}; mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
make -j8 all > "$OUT/build.log" 2>&1 || { tail "$OUT/build.log"; exit 1; }
{ ldconfig -p | grep -c "libunwind.so.8" | sed 's/^/libunwind.so.8 entries: /'; } | tee "$OUT/overhead.log"
S=P3D_STACKS=0; W=P3D_GPU_WINDOW=off
V="shim0:$S;shimw0:$W,$S;plugin0:P3D_GPU_TIMING=plugin,$W,$S"
V="$V;events0:P3D_GPU_TIMING=events,$S;off0:P3D_GPU_TIMING=off,$S"
V="$V;fr:untraced=1,TORCH_NCCL_ENABLE_TIMING=1,TORCH_NCCL_TRACE_BUFFER_SIZE=2000"
P3D_BENCH_PIN=2 python3 bench/gpu_overhead.py --out /tmp/gb4 --rotate --pairs 6 \
    --steps 500 --nproc 1 --loops host --variants "$V" 2>&1 |
    grep -v " pair " | tee -a "$OUT/overhead.log"
build/p3d-analyze --dump /tmp/gb4/traces/host-p0-shim/rank-00000.p3d | grep -m3 -i "stack" | tee -a "$OUT/overhead.log"
