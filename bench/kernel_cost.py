#!/usr/bin/env python3
"""kernel_cost.py - what the shim costs per CUDA kernel, without NCCL.

CUPTI's kernel records are the shim's largest step-time cost on a GPU
(bench/README.md); this measures them per kernel in one process on one
GPU, so the figure does not depend on a training loop's drift:

  small  x.add_(1) on one element: launch-bound, the host's time per
         kernel launch
  mm     a 2048x2048 bf16 matmul: GPU-bound, the GPU's time per kernel
  graph  the small add replayed 200 at a time from a CUDA graph: no host
         launch cost, so what tracing adds on the GPU per small kernel

    python3 bench/kernel_cost.py [--n 20000] [--reps 5]

prints "small US mm US graph US" (microseconds per kernel, median of the reps) for
whatever environment it runs in; bench/gpu_overhead.sh kernels runs it
untraced, traced with defaults and traced with P3D_GPU_TIMING=off, twice
each, interleaved.
"""
import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist


def per_kernel_us(fn, n):
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e6


GRAPH_KERNELS = 200


def graph_of(fn, kernels):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()  # warm-up outside the capture, as torch.cuda.graphs asks
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(kernels):
            fn()
    return g


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    # One all-reduce of a 1-rank NCCL group: the shim starts its GPU
    # timing at the first NCCL op, as in a training job.
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29300 + os.getpid() % 500))
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=0, world_size=1,
                            device_id=torch.device("cuda", 0))
    x = torch.zeros(1, device="cuda")
    dist.all_reduce(x)
    m = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    small = lambda: x.add_(1)
    mm = lambda: torch.mm(m, m)
    graph = graph_of(small, GRAPH_KERNELS)
    per_kernel_us(small, 1000)
    per_kernel_us(mm, 200)
    per_kernel_us(graph.replay, 50)
    s = [per_kernel_us(small, a.n) for _ in range(a.reps)]
    g = [per_kernel_us(mm, a.n // 10) for _ in range(a.reps)]
    r = [per_kernel_us(graph.replay, a.n // GRAPH_KERNELS * 10) /
         GRAPH_KERNELS for _ in range(a.reps)]
    print("small %.3f mm %.3f graph %.3f" % (statistics.median(s),
          statistics.median(g), statistics.median(r)))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
