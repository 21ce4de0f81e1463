#!/usr/bin/env python3
"""plugin_graph_h200.py - P3D_GPU_TIMING=plugin around CUDA-graph replays,
and host cost per op per setting, on the H200 (issue 24; run by
bench/plugin_graph_h200.sh, which says what it prints).

    python3 bench/plugin_graph_h200.py --out DIR [--replays 20]
        [--rounds 3] [--calls 20000] [--budget 420]

1. graph: 2 ranks on one GPU (each its own NCCL "host" over loopback):
   8 eager all-reduces, one captured into a torch.cuda.CUDAGraph, then
   --replays times (replay, eager all-reduce), then 8 eager; traced with
   P3D_GPU_TIMING=plugin and NCCL_DEBUG=INFO.  Prints, from rank 0's
   trace, the eager ops before and after the replays with their plugin
   GPU times, the plugin notes, and NCCL's PROFILER log lines.
2. host: 1 rank, --calls small all-reduces per process, thread CPU time
   (time.thread_time) per op, for untraced, off, events, plugin; one
   process per setting and round, the order rotated each round; median
   and p99 over rounds.  Stops starting rounds past --budget seconds.
3. loop (--loop): the host-bound training-loop step of
   bench/gpu_overhead.py's host loop (64 pairs of a tiny matmul and a
   1-rank all_reduce), thread CPU time per step, median of --steps steps
   per process, for untraced, off, events, plugin and the defaults
   (kernel windows on), rounds rotated: the launching thread's CPU is a
   host-bound step's time, without the descheduling noise of wall time.
   --pin puts the launching thread alone on one CPU (pin_threads).
Figures only, no pass/fail.
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EAGER = 8


def graph_worker(res, replays):
    import torch
    import torch.distributed as dist
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(0)
    dist.init_process_group(backend="nccl",
                            device_id=torch.device("cuda", 0))
    x = torch.ones(1 << 18, device="cuda")
    y = torch.ones(1 << 18, device="cuda")
    order = []                      # what each all_reduce call was
    for _ in range(EAGER):
        dist.all_reduce(y)
        order.append("eager-before")
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, capture_error_mode="thread_local"):
        dist.all_reduce(x)
    order.append("captured")
    torch.cuda.synchronize()
    for _ in range(replays):
        g.replay()
        dist.all_reduce(y)
        order.append("eager-between")
    for _ in range(EAGER):
        dist.all_reduce(y)
        order.append("eager-after")
    torch.cuda.synchronize()
    dist.barrier()  # an all-reduce of its own, the trace's last
    order.append("barrier")
    # no destroy_process_group(): after a CUDA-graph capture it hung on the
    # H200 (PyTorch 2.11), untraced too; the process exits without it
    if rank == 0:
        with open(res, "w") as f:
            json.dump({"order": order, "replays": replays}, f)


def host_worker(res, calls):
    import torch
    import torch.distributed as dist
    torch.cuda.set_device(0)
    dist.init_process_group(backend="nccl",
                            device_id=torch.device("cuda", 0))
    x = torch.ones(256, device="cuda")
    for _ in range(calls // 10):
        dist.all_reduce(x)
    torch.cuda.synchronize()
    t0 = time.thread_time()
    for _ in range(calls):
        dist.all_reduce(x)
    t1 = time.thread_time()
    torch.cuda.synchronize()
    with open(res, "w") as f:
        json.dump({"ns_per_op": (t1 - t0) / calls * 1e9}, f)


def cpu_siblings(c):
    """CPU c and its hyperthread siblings (a set)."""
    path = "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list" % c
    out = {c}
    try:
        for part in open(path).read().strip().split(","):
            lo, _, hi = part.partition("-")
            out.update(range(int(lo), int(hi or lo) + 1))
    except OSError:
        pass
    return out


def pin_threads():
    """--pin: the launching thread alone on one CPU (its hyperthread
    siblings left idle), every other thread of the process (NCCL's proxy
    and the process group's watchdog among them) on the rest.  Without
    it, whether a busy helper thread shared the launching thread's core
    was decided per process, a suspect for rounds falling in two groups.
    Returns what was done, for the result file."""
    import threading
    cpus = sorted(os.sched_getaffinity(0))
    main = cpus[len(cpus) // 2]
    keep = cpu_siblings(main)
    rest = set(cpus) - keep or set(cpus)
    me = threading.get_native_id()
    tids = [int(t) for t in os.listdir("/proc/self/task")]
    for t in tids:
        try:
            os.sched_setaffinity(t, {main} if t == me else rest)
        except OSError:
            pass
    return {"cpu": main, "idle_siblings": sorted(keep - {main}),
            "threads": len(tids)}


def loop_worker(res, steps, pin):
    """The host-bound step: 64 pairs of a tiny matmul and a 1-rank
    all_reduce (NCCL launches no kernel for it: the launch path); thread
    CPU time per step, median and 10th percentile over the steps after
    50 warm-up ones (threads pinned after 20 with --pin)."""
    import torch
    import torch.distributed as dist
    torch.cuda.set_device(0)
    dist.init_process_group(backend="nccl",
                            device_id=torch.device("cuda", 0))
    w = torch.randn(64, 64, device="cuda")
    x = torch.ones(64, 64, device="cuda")
    per, pinned = [], None
    for i in range(50 + steps):
        if pin and i == 20:
            torch.cuda.synchronize()
            pinned = pin_threads()
        t0 = time.thread_time()
        for _ in range(64):
            x = torch.mm(x, w)
            dist.all_reduce(x)
        if i >= 50:
            per.append(time.thread_time() - t0)
    torch.cuda.synchronize()
    per.sort()
    with open(res, "w") as f:
        json.dump({"us_per_step": per[len(per) // 2] * 1e6,
                   "us_p10": per[len(per) // 10] * 1e6,
                   "pinned": pinned}, f)


def loop_part(a, t_start):
    settings = [("untraced", None, None), ("off", "off", None),
                ("events", "events", None), ("plugin", "plugin", None),
                ("defaults", "auto", {"P3D_GPU_WINDOW": None})]
    got = {n: [] for n, _, _ in settings}
    p10 = {n: [] for n, _, _ in settings}
    pinned = None   # what the first pinned process reported
    for rnd in range(a.rounds):
        if time.time() - t_start > a.budget:
            print("loop: stopped after %d rounds (budget)" % rnd)
            break
        for n, timing, extra in settings:
            res = launch(a, "loop", "loop-%s-%d" % (n, rnd), 1, timing,
                         29661 + rnd, extra)
            if res:
                got[n].append(res["us_per_step"])
                p10[n].append(res.get("us_p10", 0))
                pinned = pinned or res.get("pinned")
        settings = settings[1:] + settings[:1]
    if pinned:
        print("loop: pinned: %s" % json.dumps(pinned))
    base = sorted(got["untraced"])
    base = base[len(base) // 2] if base else 0
    print("loop: thread CPU us per host-bound step (64 matmul + 1-rank "
          "all_reduce), median of %d steps per process" % a.steps)
    for n in ("untraced", "off", "events", "plugin", "defaults"):
        v = sorted(got[n])
        if v:
            m = v[len(v) // 2]
            print("loop %-9s median %8.1f  %+6.2f%%  rounds %s" %
                  (n, m, 100 * (m - base) / base if base else 0,
                   " ".join("%.1f" % x for x in got[n])))
            print("loop %-9s p10s %s" % (n, " ".join("%.1f" % x
                                                    for x in p10[n])))


def launch(a, kind, name, nproc, timing, port, extra=None):
    """Run nproc worker processes; timing None: untraced."""
    res = os.path.join(a.out, name + ".json")
    procs = []
    for r in range(nproc):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(nproc),
                   LOCAL_RANK="0", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), NCCL_NVLS_ENABLE="0",
                   TORCH_SYMM_MEM_DISABLE_MULTICAST="1",
                   NVSHMEM_DISABLE_NVLS="1", NCCL_SOCKET_IFNAME="lo",
                   NCCL_HOSTID="p3dgraph-host-%d" % r)
        if timing is not None:
            env.update(LD_PRELOAD=os.path.join(ROOT, "build",
                                               "libp3dtrace.so"),
                       P3D_TRACE_DIR=os.path.join(a.out, "traces"),
                       P3D_JOB_ID=name, P3D_GPU_TIMING=timing,
                       P3D_GPU_WINDOW="off", P3D_STACKS="0")
        env.update(extra or {})   # may undo the above (the defaults)
        env = {k: v for k, v in env.items() if v is not None}
        log = open(os.path.join(a.out, "%s-%d.log" % (name, r)), "w")
        procs.append(subprocess.Popen(
            [sys.executable, __file__, "--worker", kind, "--res", res,
             "--replays", str(a.replays), "--calls", str(a.calls),
             "--steps", str(a.steps)] + (["--pin"] if a.pin else []),
            env=env, stdout=log, stderr=subprocess.STDOUT))
    ok = True
    for p in procs:
        try:
            ok = p.wait(timeout=120) == 0 and ok
        except subprocess.TimeoutExpired:
            p.kill()
            ok = False
    if not os.path.exists(res):
        print("%s: a worker failed, see %s/%s-*.log" % (name, a.out, name))
        return None
    if not ok:  # its figures were written: only the exit went wrong
        print("%s: a worker did not exit cleanly after writing its result"
              % name)
    with open(res) as f:
        return json.load(f)


def show_graph_trace(a, info):
    sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
    import p3d_trace
    t = p3d_trace.read_dir(os.path.join(a.out, "traces", "graph"))[0]
    gpu = {r["op_id"]: r for r in t.records if r["type"] == "gpu_op"}
    ops = sorted((r for r in t.records if r["type"] == "op" and
                  r["op_name"] == "AllReduce"), key=lambda r: r["op_id"])
    # the process group's first ops may be its own (barrier, warm-up)
    ops = ops[len(ops) - len(info["order"]):] if len(ops) >= len(
        info["order"]) else ops
    by = {}
    for o, what in zip(ops, info["order"]):
        g = gpu.get(o["op_id"])
        d = by.setdefault(what, [0, 0, [], 0])
        d[0] += 1
        d[3] += o["flags"] & 16 != 0   # P3D_OPF_CAPTURING
        if g and g["gpu_end"]:
            d[1] += 1
            d[2].append((g["gpu_end"] - g["gpu_start"]) / 1e3)
    for what in ("eager-before", "captured", "eager-between", "eager-after",
                 "barrier"):
        n, timed, us, capt = by.get(what, [0, 0, [], 0])
        us.sort()
        print("graph rank 0 %-14s %3d ops, %3d with GPU times, %d flagged "
              "capturing%s" % (what, n, timed, capt, ", median %.1f us" %
                               us[len(us) // 2] if us else ""))
    for r in t.records:
        if r["type"] == "note" and (r["text"].startswith("plugin") or
                                    r["text"].startswith("gpu timing")):
            print("graph rank 0 note: " + r["text"])


def graph_part(a):
    info = launch(a, "graph", "graph", 2, a.graph_timing, 29611,
                  {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,ENV"})
    for r in range(2):
        for line in open(os.path.join(a.out, "graph-%d.log" % r)):
            if "PROFILER" in line or "rofiler" in line:
                print("nccl rank %d: %s" % (r, line.rstrip()))
    if info:
        show_graph_trace(a, info)


def host_part(a, t_start):
    settings = ["untraced", "off", "events", "plugin"]
    got = {s: [] for s in settings}
    for rnd in range(a.rounds):
        if time.time() - t_start > a.budget:
            print("host: stopped after %d rounds (budget)" % rnd)
            break
        for s in settings:
            res = launch(a, "host", "host-%s-%d" % (s, rnd), 1,
                         None if s == "untraced" else s, 29621 + rnd)
            if res:
                got[s].append(res["ns_per_op"])
        settings = settings[1:] + settings[:1]
    print("host: thread CPU ns per 1-rank all_reduce of 256 floats, %d "
          "calls per process" % a.calls)
    for s in ("untraced", "off", "events", "plugin"):
        v = sorted(got[s])
        if v:
            p99 = v[min(len(v) - 1, int(round(0.99 * (len(v) - 1))))]
            print("host %-9s median %9.0f  p99 %9.0f  rounds %s" %
                  (s, v[len(v) // 2], p99,
                   " ".join("%.0f" % x for x in got[s])))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="plugin_graph_out")
    p.add_argument("--replays", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--budget", type=float, default=420)
    p.add_argument("--graph-timing", default="plugin",
                   help="P3D_GPU_TIMING of the graph part")
    p.add_argument("--skip-host", action="store_true")
    p.add_argument("--skip-graph", action="store_true")
    p.add_argument("--loop", action="store_true",
                   help="the host-bound training-loop step, per setting")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--pin", action="store_true",
                   help="--loop: the launching thread alone on a CPU")
    p.add_argument("--worker")
    p.add_argument("--res")
    a = p.parse_args()
    if a.worker == "graph":
        return graph_worker(a.res, a.replays)
    if a.worker == "host":
        return host_worker(a.res, a.calls)
    if a.worker == "loop":
        return loop_worker(a.res, a.steps, a.pin)
    os.makedirs(os.path.join(a.out, "traces"), exist_ok=True)
    t_start = time.time()
    if not a.skip_graph:
        graph_part(a)
    if not a.skip_host:
        host_part(a, t_start)
    if a.loop:
        loop_part(a, t_start)


if __name__ == "__main__":
    main()
