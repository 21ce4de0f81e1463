#!/usr/bin/env python3
"""issue4_mem.py - per-rank framework memory peak of the shim vs
torch.cuda.max_memory_reserved(), for the three allocator settings.

Usage (GPU machine, repo root, after `make`):
    python3 tests/gpu/issue4_mem.py [--out DIR] [--nproc 2]
Prints one PASS/FAIL line per (allocator setting, rank); exit 1 on FAIL.

Each setting runs `torchrun --nproc_per_node=N issue4_mem.py --worker`
under LD_PRELOAD=build/libp3dtrace.so.  The worker allocates a mix of
small and large tensors, runs matmuls and all-reduces, frees some, then
destroys the process group, waits 0.3 s (the shim samples memory-pool
high-water marks every 10 ms for backend:cudaMallocAsync) and writes its
own torch numbers to rank<r>.json.  The check compares them with the last
P3D_REC_MEM record (kind "device", device 0) of the rank's trace, which
the shim writes at exit with the final peak.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import issue4_common as c  # noqa: E402

CONFS = [("default", None),
         ("async", "backend:cudaMallocAsync"),
         ("expandable", "expandable_segments:True")]
MB = 1 << 20


def worker(out):
    import torch
    import torch.distributed as dist
    rank, world = c.worker_init()
    keep = []
    # Small-pool and large-pool blocks, odd sizes, frees in between.
    for i, mb in enumerate([1, 3, 17, 64, 200, 5, 0.5, 120, 33]):
        t = torch.empty(int(mb * MB) + 4096 * i, dtype=torch.uint8,
                        device="cuda")
        if i % 3 != 2:
            keep.append(t)
    a = torch.randn(2048, 2048, device="cuda")
    for _ in range(3):
        a = torch.tanh(a @ a / 2048.0)
    x = torch.ones(4 * MB, device="cuda") * (rank + 1)
    for _ in range(5):
        dist.all_reduce(x)
    big = torch.empty(300 * MB + rank * 7 * MB, dtype=torch.uint8,
                      device="cuda")
    del big
    keep = keep[:2]
    torch.cuda.synchronize()
    c.barrier()
    dist.destroy_process_group()
    torch.cuda.synchronize()
    time.sleep(0.3)   # pool high-water mark: sampled every 10 ms
    c.write_json(os.path.join(out, "rank%d.json" % rank), {
        "rank": rank, "pid": os.getpid(),
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
        "memory_reserved": torch.cuda.memory_reserved(),
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "mem_get_info_used": (lambda f, t: t - f)(*torch.cuda.mem_get_info()),
    })


def check(name, out, nproc):
    ok = True
    traces = c.read_traces(os.path.join(out, "trace"))
    for rank in range(nproc):
        jp = os.path.join(out, "rank%d.json" % rank)
        if not os.path.exists(jp):
            ok &= c.report(False, "mem %s rank %d" % (name, rank),
                           "worker wrote no %s (see %s/log)", jp, out)
            continue
        import json
        want = json.load(open(jp))
        t = traces.get(rank)
        rec = c.last_mem(t, "device") if t else None
        if rec is None:
            ok &= c.report(False, "mem %s rank %d" % (name, rank),
                           "no device P3D_REC_MEM in the trace (%s)",
                           "no trace" if t is None else "no record")
            continue
        used = c.last_mem(t, "device_used")
        got, exp = rec["peak"], want["max_memory_reserved"]
        ok &= c.report(got == exp, "mem %s rank %d" % (name, rank),
                       "shim framework peak %d B, torch max_memory_reserved"
                       " %d B (diff %+d B); shim current %d B, torch "
                       "reserved %d B; shim device_used peak %s B",
                       got, exp, got - exp, rec["current"],
                       want["memory_reserved"],
                       used["peak"] if used else "n/a")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--nproc", type=int, default=2)
    a = ap.parse_args()
    if a.worker:
        worker(a.out)
        return 0
    base = a.out or os.path.join("/tmp", "p3d-issue4-%d" % os.getpid())
    ok = True
    for name, conf in CONFS:
        out = os.path.join(base, "mem-" + name)
        os.makedirs(out, exist_ok=True)
        env = c.shim_env(os.path.join(out, "trace"), "mem-" + name,
                         {"PYTORCH_CUDA_ALLOC_CONF": conf})
        rc = c.torchrun(os.path.abspath(__file__),
                        ["--worker", "--out", out], a.nproc, env,
                        os.path.join(out, "log"), timeout=240)
        if rc != 0:
            ok &= c.report(False, "mem %s" % name,
                           "torchrun exit %d, see %s/log", rc, out)
            continue
        ok &= check(name, out, a.nproc)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
