#!/usr/bin/env python3
"""issue4_overhead.py - step time of a PyTorch DDP training loop with and
without the shim (GPU timing and memory tracking on), paired and
interleaved in one run.

Usage (GPU machine, repo root, after `make`):
    python3 tests/gpu/issue4_overhead.py [--out DIR] [--pairs 5]
        [--steps 200] [--nproc 2]
Prints the median step time of every child run, the per-pair ratio
shim/plain, and one PASS/FAIL line: median ratio - 1 < 1%; exit 1 on FAIL.

A pair is two torchrun children started one after the other, plain and
with LD_PRELOAD=build/libp3dtrace.so (default P3D_GPU_TIMING=auto), the
order alternating from pair to pair so drift and warm-up of the machine
hit both sides equally.  Each child trains a small MLP with DDP (many
small kernels plus one gradient all-reduce bucket set per step), runs
30 warm-up steps and reports the median wall time of the next --steps
steps (torch.cuda.synchronize per step) measured on rank 0.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import issue4_common as c  # noqa: E402

WARM = 30


def worker(out, steps):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    rank, world = c.worker_init()
    torch.manual_seed(0)
    layers = []
    for _ in range(6):
        layers += [nn.Linear(1024, 1024), nn.GELU(), nn.LayerNorm(1024)]
    model = nn.Sequential(*layers).cuda()
    ddp = nn.parallel.DistributedDataParallel(model, device_ids=[0],
                                              bucket_cap_mb=4)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
    x = torch.randn(64, 1024, device="cuda")
    y = torch.randn(64, 1024, device="cuda")
    times = []
    for i in range(WARM + steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        if i >= WARM:
            times.append(time.perf_counter() - t0)
    c.barrier()
    dist.destroy_process_group()
    if rank == 0:
        c.write_json(os.path.join(out, "steps.json"),
                     {"median_s": c.median(times), "n": len(times)})


def run_one(base, tag, shim, steps, nproc):
    out = os.path.join(base, tag)
    os.makedirs(out, exist_ok=True)
    if shim:
        env = c.shim_env(os.path.join(out, "trace"), tag)
    else:
        env = c.base_env()
    rc = c.torchrun(os.path.abspath(__file__),
                    ["--worker", "--out", out, "--steps", str(steps)],
                    nproc, env, os.path.join(out, "log"), timeout=240)
    p = os.path.join(out, "steps.json")
    if rc != 0 or not os.path.exists(p):
        print("run %s: torchrun exit %d, see %s/log" % (tag, rc, out))
        return None
    med = json.load(open(p))["median_s"]
    print("run %-12s %s median step %.3f ms" %
          (tag, "shim " if shim else "plain", med * 1e3), flush=True)
    return med


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--nproc", type=int, default=2)
    a = ap.parse_args()
    if a.worker:
        worker(a.out, a.steps)
        return 0
    base = a.out or os.path.join("/tmp", "p3d-issue4-%d" % os.getpid())
    ratios = []
    for i in range(a.pairs):
        order = [False, True] if i % 2 == 0 else [True, False]
        med = {}
        for shim in order:
            tag = "ovh-%d-%s" % (i, "shim" if shim else "plain")
            med[shim] = run_one(base, tag, shim, a.steps, a.nproc)
        if med[True] and med[False]:
            ratios.append(med[True] / med[False])
            print("pair %d: shim/plain = %.4f" % (i, ratios[-1]), flush=True)
    if not ratios:
        c.report(False, "overhead", "no successful pair")
        return 1
    over = c.median(ratios) - 1.0
    ok = c.report(over < 0.01, "overhead",
                  "median step-time increase %+.2f%% over %d pairs "
                  "(ratios %s)", 100 * over, len(ratios),
                  " ".join("%.4f" % r for r in ratios))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
