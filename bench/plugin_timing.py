#!/usr/bin/env python3
"""plugin_timing.py - NCCL op GPU times from NCCL's profiler plugin against
CUDA events, on the GPU machine (issue 24).  One command, interleaved:

    python3 bench/plugin_timing.py [--rounds 3] [--out DIR]
    python3 bench/plugin_timing.py --host-cost [--rounds 5]

1. small: us per all-reduce of 256 floats (2000 timed after 200 warm-up,
   torch.cuda.synchronize around the loop), 2 ranks, for untraced,
   P3D_GPU_TIMING=events and =plugin and the defaults, in --rounds
   interleaved rounds; and
   one round with 1 rank (NCCL makes no kernel of a 1-rank all-reduce:
   the plugin gets no event there).
2. sizes: all-reduce of 1 MiB .. 1 GiB, 10 timed calls per size, each
   bracketed by our own CUDA events; traced with events and with plugin:
   the median per-op GPU time in each trace against the brackets.
3. the plugin run's NCCL_DEBUG=INFO lines about the profiler plugin, and
   the trace notes (timing source, kernel-end-to-callback lag), and how
   many plugin GPU starts lie before their op's host entry (impossible
   unless the clock mapping is wrong).
Ranks get a GPU each where there are 2, else share GPU 0 as NCCL "hosts"
of their own over loopback.  Figures only, no pass/fail.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES_MB = (1, 4, 16, 64, 256, 1024)


def worker(mode, out):
    import torch
    import torch.distributed as dist
    rank = int(os.environ["RANK"])
    dev = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(dev)
    dist.init_process_group(backend="nccl",
                            device_id=torch.device("cuda", dev))
    res = {}
    if mode == "small":
        x = torch.ones(256, device="cuda")
        for _ in range(200):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(2000):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        res["us_per_op"] = (time.perf_counter() - t0) / 2000 * 1e6
    else:
        for mb in SIZES_MB:
            x = torch.ones(mb << 18, device="cuda")
            dist.all_reduce(x)
            ms = []
            for _ in range(10):
                a = torch.cuda.Event(enable_timing=True)
                b = torch.cuda.Event(enable_timing=True)
                a.record()
                dist.all_reduce(x)
                b.record()
                b.synchronize()
                ms.append(a.elapsed_time(b))
            res[str(mb)] = statistics.median(ms)
            del x
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        with open(out, "w") as f:
            json.dump(res, f)


def launch(mode, name, nproc, shim_env, outdir, port):
    ngpu = int(subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.cuda.device_count())"],
        capture_output=True, text=True).stdout.strip() or 0)
    res = os.path.join(outdir, name + ".json")
    procs = []
    for r in range(nproc):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(nproc),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1",
                   NVSHMEM_DISABLE_NVLS="1", NCCL_SOCKET_IFNAME="lo",
                   LOCAL_RANK=str(r if ngpu >= nproc else 0))
        if ngpu < nproc:
            env["NCCL_HOSTID"] = "p3dplugin-host-%d" % r
        if shim_env is not None:
            env.update(shim_env)
            env["LD_PRELOAD"] = os.path.join(ROOT, "build", "libp3dtrace.so")
            env["P3D_TRACE_DIR"] = outdir
            env["P3D_JOB_ID"] = name
        log = open(os.path.join(outdir, "%s-%d.log" % (name, r)), "w")
        procs.append(subprocess.Popen(
            [sys.executable, __file__, "--worker", mode, "--res", res],
            env=env, stdout=log, stderr=subprocess.STDOUT))
    for p in procs:
        p.wait(timeout=240)
    with open(res) as f:
        return json.load(f)


def trace_gpu_ms(outdir, name):
    """Median GPU time per all-reduce size (bytes -> ms) of rank 0, the
    notes, and how many GPU starts precede their op's entry."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
    import p3d_trace
    t = p3d_trace.read_dir(os.path.join(outdir, name))[0]
    ops = {r["op_id"]: r for r in t.records if r["type"] == "op"}
    by, early, n, lead = {}, 0, 0, []
    for r in t.records:
        if r["type"] != "gpu_op" or r["op_id"] not in ops or not r["gpu_end"]:
            continue
        o = ops[r["op_id"]]
        by.setdefault(o["bytes"], []).append((r["gpu_end"] - r["gpu_start"])
                                             / 1e6)
        early += r["gpu_start"] < o["t_enter"]
        lead.append((r["gpu_start"] - o["t_enter"]) / 1e3)
        n += 1
    if lead:
        lead.sort()
        print("%s: GPU start minus host entry, us: min %.1f, 5%% %.1f, "
              "median %.1f" % (name, lead[0], lead[len(lead) // 20],
                               lead[len(lead) // 2]))
    notes = [r["text"] for r in t.records if r["type"] == "note"]
    return ({b: statistics.median(v) for b, v in by.items()}, notes,
            early, n)


# "default": no P3D_GPU_TIMING, what a user gets (auto: the plugin on
# NCCL 2.28, CUPTI kernel records in the first window).
TRACED = [("events", {"P3D_GPU_TIMING": "events"}),
          ("plugin", {"P3D_GPU_TIMING": "plugin"}),
          ("default", {})]


def interleaved(a, settings, prefix, nproc, port):
    """The small loop for each setting, --rounds rounds, every other round
    in reverse order; setting -> us per op of each round."""
    res = {}
    for rnd in range(a.rounds):
        order = settings if rnd % 2 == 0 else settings[::-1]
        for name, env in order:
            port += 1
            r = launch("small", "%s-%s-%d" % (prefix, name, rnd), nproc, env,
                       a.out, port)
            res.setdefault(name, []).append(r["us_per_op"])
            print("%s %d rank(s) round %d %s: %.2f us/op" %
                  (prefix, nproc, rnd, name, r["us_per_op"]), flush=True)
    return res


def host_cost(a):
    """us per 1-rank all-reduce (NCCL launches no kernel there, so this is
    the host side alone: the shim's wrapper and whatever each timing mode
    does per op), windows off so CUPTI records nothing."""
    settings = [("untraced", None)] + [
        (m, {"P3D_GPU_TIMING": m, "P3D_GPU_WINDOW": "off"})
        for m in ("off", "events", "plugin", "auto")]
    res = interleaved(a, settings, "host", 1, 29900)
    for name, v in res.items():
        print("host cost 1 rank %-8s: median %.2f us/op (runs %s)" %
              (name, statistics.median(v), " ".join("%.2f" % x for x in v)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--res")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default="/tmp/p3d-plugin-bench")
    ap.add_argument("--sizes-only", action="store_true",
                    help="only the 1 MiB..1 GiB runs, with how far each "
                    "GPU start lies from its op's host entry")
    ap.add_argument("--proxy-cost", action="store_true",
                    help="the plugin with P3D_PLUGIN_PROXY=1 and =0 "
                    "(NCCL's proxy events): the 2-rank small loop in "
                    "--rounds interleaved rounds, then 1 MiB..1 GiB")
    ap.add_argument("--host-cost", action="store_true",
                    help="only the 1-rank loop, kernel windows off, for "
                    "untraced, off, events, plugin and auto, in --rounds "
                    "interleaved rounds: the shim's host cost per op")
    a = ap.parse_args()
    if a.worker:
        worker(a.worker, a.res)
        return
    os.makedirs(a.out, exist_ok=True)
    if a.host_cost:
        host_cost(a)
        return
    if a.sizes_only:
        sizes_part(a, 29700)
        return
    if a.proxy_cost:
        proxy_cost(a)
        return
    settings = [("untraced", None)] + TRACED
    port = 29600 + 2 * a.rounds * len(settings)
    small = interleaved(a, settings, "small", 2, 29600)
    for name, env in settings:
        port += 1
        r = launch("small", "one-%s" % name, 1, env, a.out, port)
        print("small 1 rank %s: %.2f us/op" % (name, r["us_per_op"]),
              flush=True)
    for name, v in small.items():
        print("small 2 ranks %s: median %.2f us/op (runs %s)" %
              (name, statistics.median(v), " ".join("%.2f" % x for x in v)))
    sizes_part(a, port)


PROXY = [("proxy", {"P3D_GPU_TIMING": "plugin", "P3D_PLUGIN_PROXY": "1"}),
         ("noproxy", {"P3D_GPU_TIMING": "plugin", "P3D_PLUGIN_PROXY": "0"})]


def proxy_cost(a):
    """The plugin with NCCL's proxy events (P3D_PLUGIN_PROXY=1) against
    without: us per small 2-rank all-reduce, then per-op GPU time by
    size."""
    res = interleaved(a, PROXY, "pxsmall", 2, 29800)
    for name, v in res.items():
        print("proxy cost small 2 ranks %-8s: median %.2f us/op (runs %s)"
              % (name, statistics.median(v), " ".join("%.2f" % x for x in v)))
    med, own = {}, {}
    for k, (name, env) in enumerate(PROXY):
        own[name] = launch("sizes", "pxsizes-" + name, 2, env, a.out,
                           29850 + k)
        med[name], notes, _, _ = trace_gpu_ms(a.out, "pxsizes-" + name)
        print("pxsizes %s: notes %s" % (name, notes[-2:]))
    for mb in SIZES_MB:
        p, q = med["proxy"].get(mb << 20), med["noproxy"].get(mb << 20)
        print("pxsizes %5d MiB: trace proxy %.4f ms, noproxy %.4f ms; own "
              "events %.4f / %.4f ms" % (mb, p or 0, q or 0,
                                         own["proxy"][str(mb)],
                                         own["noproxy"][str(mb)]))


def sizes_part(a, port):
    """Each traced setting's 1 MiB..1 GiB run: its trace's per-op GPU time
    against the script's own events, and against the events path."""
    sizes = {}
    for name, env in TRACED:
        port += 1
        env = dict(env, NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="INIT,ENV")
        sizes[name] = launch("sizes", "sizes-" + name, 2, env, a.out, port)
    med = {}
    for name, _ in TRACED:
        med[name], notes, early, n = trace_gpu_ms(a.out, "sizes-" + name)
        print("sizes %s: notes %s" % (name, notes))
        print("sizes %s: %d of %d GPU starts before the op's entry" %
              (name, early, n))
        for mb in SIZES_MB:
            own = sizes[name][str(mb)]
            tr = med[name].get(mb << 20)
            print("sizes %s %5d MiB: trace %.4f ms, own events %.4f ms "
                  "(%+.2f%%)" % (name, mb, tr or 0, own,
                                 100 * ((tr or 0) - own) / own))
    for name, _ in TRACED[1:]:
        for mb in SIZES_MB:
            e, p = med["events"].get(mb << 20), med[name].get(mb << 20)
            if e and p:
                print("sizes %5d MiB: %s %.4f ms vs events %.4f ms (%+.2f%%)"
                      % (mb, name, p, e, 100 * (p - e) / e))
    for name in ("plugin", "default"):
        log = open(os.path.join(a.out, "sizes-%s-0.log" % name)).read()
        for line in log.splitlines():
            if "rofiler" in line or "PROFILER" in line:
                print("nccl %s:" % name, line)


if __name__ == "__main__":
    main()
