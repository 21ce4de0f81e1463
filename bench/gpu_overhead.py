#!/usr/bin/env python3
"""gpu_overhead.py - step time of real PyTorch training loops with and
without the shim, paired and interleaved in one run (issue 10, part 4).

Runs on the GPU machine (PyTorch 2.11, one GPU shared by all ranks: each
rank is its own NCCL "host" through NCCL_HOSTID, sockets over lo, no NVLS).

    python3 bench/gpu_overhead.py [--pairs 3] [--steps 150] [--nproc 2]
                                  [--loops tp,ddp] [--gpus 1] [--out DIR]

--gpus N puts rank r on GPU r % N; with a GPU per rank the ranks are one
NCCL host (no NCCL_HOSTID), as in a real job, so NCCL uses NVLink.

Loops (each rank trains on GPU 0, torch.cuda.synchronize per step):
  tp   16 "layers" per step, each a 1024x1024 matmul followed by an
       all-reduce of 256 KB (small-message-heavy, like TP), + backward-like
       second pass: 32 NCCL calls per step, host-bound
  ddp  a 6-layer MLP under DistributedDataParallel (bucket 4 MB), AdamW
  gpu  GPU-bound: 8 bf16 8192^3 matmuls and 2 all-reduces of 4 MB per
       step (about 12 ms of matmul per rank and step on an H200)
  host host-bound: 64 tiny matmul + all-reduce (4 KB) pairs per step; run
       it with --nproc 1 (NCCL then launches no kernel for the all-reduce,
       so the step is the host's launch path and the wrapper's cost)
A pair is two runs of the same loop, without and with
LD_PRELOAD=libp3dtrace.so, every feature at its default and call-site
stacks on (P3D_STACKS=1); the order alternates between pairs.  Each run
reports the median step of rank 0 after 30 warm-up steps.  One summary
line per loop: plain and shim medians, the median of the per-pair
overheads and their spread (min..max).  No pass/fail: figures only.

P3D_BENCH_PIN=N pins rank r to cores [rN, (r+1)N) (0: not pinned).

--variants "NAME:K=V,K=V;NAME2:K=V" adds traced runs with extra shim
settings to every pair (to find which feature costs what), e.g.
--variants "gpuoff:P3D_GPU_TIMING=off;events:P3D_GPU_TIMING=events";
one line per run is printed as it ends.  A variant with untraced=1 runs
without the shim, with its other settings (PyTorch's Flight Recorder
timing: "fr:untraced=1,TORCH_NCCL_ENABLE_TIMING=1").  --rotate runs every
pair's settings (plain, shim, variants) in an order rotated by the pair's
index, so no setting always runs first or last.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WARM = 30


def worker(loop, steps, out):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    rank = int(os.environ["RANK"])
    dev = int(os.environ["LOCAL_RANK"])
    pin = int(os.environ.get("P3D_BENCH_PIN", "0"))
    if pin > 0:
        # rank r on its own cores: less run-to-run drift of a host-bound
        # loop than wherever the scheduler puts it (not yet measured)
        os.sched_setaffinity(0, range(rank * pin, (rank + 1) * pin))
    torch.cuda.set_device(dev)
    dist.init_process_group(backend="nccl",
                            device_id=torch.device("cuda", dev))
    torch.manual_seed(rank)
    if loop == "gpu":
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        buf = torch.empty(1024 * 1024, device="cuda")

        def step():
            for i in range(8):
                h = a @ w
                if i % 4 == 3:
                    buf[:1024].copy_(h[0, :1024].float())
                    dist.all_reduce(buf)
    elif loop == "host":
        w = torch.randn(32, 32, device="cuda")
        x = torch.randn(32, 32, device="cuda")
        buf = torch.empty(1024, device="cuda")

        def step():
            h = x
            for _ in range(64):
                h = h @ w
                dist.all_reduce(buf)
    elif loop == "tp":
        w = [torch.randn(1024, 1024, device="cuda") / 32 for _ in range(16)]
        x = torch.randn(64, 1024, device="cuda")
        buf = torch.empty(64 * 1024, device="cuda")

        def step():
            h = x
            for layer in w + w[::-1]:
                h = torch.tanh(h @ layer)
                buf[: h.numel()].copy_(h.reshape(-1))
                dist.all_reduce(buf)
    else:
        layers = []
        for _ in range(6):
            layers += [nn.Linear(1024, 1024), nn.GELU(), nn.LayerNorm(1024)]
        model = nn.Sequential(*layers).cuda()
        ddp = nn.parallel.DistributedDataParallel(model, device_ids=[dev],
                                                  bucket_cap_mb=4)
        opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
        x = torch.randn(64, 1024, device="cuda")
        y = torch.randn(64, 1024, device="cuda")

        def step():
            opt.zero_grad(set_to_none=True)
            nn.functional.mse_loss(ddp(x), y).backward()
            opt.step()
    times = []
    for i in range(WARM + steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        if i >= WARM:
            times.append(time.perf_counter() - t0)
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"median_ms": 1e3 * statistics.median(times)}, f)


def rank_env(r, nproc, gpus, port):
    """Rank r's environment: its own GPU when there are enough, else GPU
    r % gpus, and ranks sharing a GPU are each their own NCCL host."""
    env = {"RANK": str(r), "WORLD_SIZE": str(nproc),
           "LOCAL_RANK": str(r % gpus), "LOCAL_WORLD_SIZE": str(nproc),
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
           "NCCL_NVLS_ENABLE": "0", "OMP_NUM_THREADS": "1"}
    if nproc > gpus:
        env.update({"NCCL_HOSTID": "p3dbench-host-%d" % r,
                    "NCCL_SOCKET_IFNAME": "lo"})
    return env


def launch(loop, steps, nproc, traced, out, tag, port, extra=None, gpus=1):
    """Start nproc ranks directly (no torchrun); rank 0's median ms."""
    res = os.path.join(out, tag + ".json")
    lib = os.environ.get("P3D_LIB", os.path.join(ROOT, "build",
                                                  "libp3dtrace.so"))
    procs = []
    for r in range(nproc):
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        env.update(rank_env(r, nproc, gpus, port))
        if traced:
            env.update({"LD_PRELOAD": os.path.abspath(lib),
                        "P3D_TRACE_DIR": os.path.join(out, "traces"),
                        "P3D_JOB_ID": tag, "P3D_STACKS": "1"})
        env.update(extra or {})
        log = open(os.path.join(out, "%s.rank%d.log" % (tag, r)), "w")
        procs.append(subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", loop,
             "--steps", str(steps), "--result", res],
            env=env, stdout=log, stderr=subprocess.STDOUT))
    rcs = [p.wait(timeout=300) for p in procs]
    if any(rcs) or not os.path.exists(res):
        sys.exit("gpu_overhead: %s failed (exit %s); logs in %s" %
                 (tag, rcs, out))
    with open(res) as f:
        return json.load(f)["median_ms"]


def parse_variants(text):
    """[(name, {env})] from "NAME:K=V,K=V;NAME2:..."."""
    out = []
    for item in filter(None, text.split(";")):
        name, _, kvs = item.partition(":")
        out.append((name, dict(kv.split("=", 1)
                               for kv in filter(None, kvs.split(",")))))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--result")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--loops", default="tp,ddp")
    ap.add_argument("--gpus", type=int, default=1)
    ap.add_argument("--variants", default="")
    ap.add_argument("--rotate", action="store_true")
    ap.add_argument("--out", default="/tmp/p3d-gpu-bench-%d" % os.getpid())
    a = ap.parse_args()
    if a.worker:
        worker(a.worker, a.steps, a.result)
        return 0
    os.makedirs(a.out, exist_ok=True)
    port = 29600 + os.getpid() % 300
    for loop in a.loops.split(","):
        settings = [("plain", False, {}), ("shim", True, {})]
        for name, extra in parse_variants(a.variants):
            untraced = extra.pop("untraced", "0") == "1"
            settings.append((name, not untraced, extra))
        runs = {name: [] for name, _, _ in settings}
        over = {name: [] for name, _, _ in settings}
        for p in range(a.pairs):
            if a.rotate:
                k = p % len(settings)
                order = settings[k:] + settings[:k]
            else:  # plain and shim alternate, the variants after them
                order = settings[:2] if p % 2 == 0 else settings[1::-1]
                order = order + settings[2:]
            got = {}
            for name, traced, extra in order:
                port += 1
                tag = "%s-p%d-%s" % (loop, p, name)
                got[name] = launch(loop, a.steps, a.nproc, traced, a.out,
                                   tag, port, extra, a.gpus)
            for name, _, extra in settings:
                runs[name].append(got[name])
                over[name].append(100.0 * (got[name] / got["plain"] - 1))
                if name != "plain":
                    print("gpu %-4s pair %d %s (%s): %.3f ms, %+.2f%% vs "
                          "plain %.3f ms" % (loop, p, name, extra or "default",
                                             got[name], over[name][-1],
                                             got["plain"]), flush=True)
        print("gpu %-4s %d ranks on %d GPU(s), %d pairs x %d steps, medians:"
              % (loop, a.nproc, a.gpus, a.pairs, a.steps), flush=True)
        for name, _, _ in settings:
            print("gpu %-4s   %-8s %.3f ms; vs plain median %+.2f%% "
                  "(pairs %s)" % (loop, name, statistics.median(runs[name]),
                                  statistics.median(over[name]),
                                  " ".join("%+.2f%%" % o
                                           for o in over[name])),
                  flush=True)
    print("gpu_overhead: logs and traces in %s" % a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
