#!/usr/bin/env python3
"""issue4_timing.py - GPU durations of all-reduces (1 MB .. 1 GB) from the
shim's P3D_REC_GPU_OP records vs CUDA events recorded by the program.

Usage (GPU machine, repo root, after `make`):
    python3 tests/gpu/issue4_timing.py [--out DIR] [--nproc 2]
        [--modes auto,events] [--max-mb 1024]
Prints one PASS/FAIL line per (timing mode, size) with the median
relative difference over ranks and iterations (limit 5%), plus a line
saying which source (CUPTI=1, events=2) the shim used; exit 1 on FAIL.

How the program times an op: it queues torch.cuda._sleep (~0.2 ms) on the
current stream, records a start event, calls dist.all_reduce, records an
end event.  The sleep keeps the stream busy while the host enqueues the
op, so the start event fires when the GPU reaches the op, not when the
host got there, and the NCCL stream (which waits on the current stream)
starts its kernel right after: both measures then see the same interval
up to stream-wait latency.  Each measured op is matched to the shim's op
record by (bytes, order); warm-up ops are skipped.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import issue4_common as c  # noqa: E402

MB = 1 << 20
SIZES_MB = [1, 4, 16, 64, 256, 1024]
WARMUP = 3
ALLREDUCE = 0     # enum p3d_op


def iters(mb):
    return 10 if mb <= 64 else 5


def worker(out, max_mb):
    import torch
    import torch.distributed as dist
    rank, world = c.worker_init()
    stream = torch.cuda.current_stream()
    res = []
    for mb in [m for m in SIZES_MB if m <= max_mb]:
        x = torch.ones(mb * MB // 4, dtype=torch.float32, device="cuda")
        for it in range(WARMUP + iters(mb)):
            c.barrier()
            torch.cuda._sleep(400000)      # ~0.2 ms of GPU time
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record(stream)
            dist.all_reduce(x)
            e.record(stream)
            e.synchronize()
            if it >= WARMUP:
                res.append({"bytes": mb * MB, "ms": s.elapsed_time(e)})
        del x
        torch.cuda.synchronize()
    dist.destroy_process_group()
    c.write_json(os.path.join(out, "rank%d.json" % rank),
                 {"rank": rank, "warmup": WARMUP, "ops": res})


def shim_durations(trace, nbytes, warmup):
    """GPU durations (ms) of the shim's all-reduces of `nbytes`, in call
    order, warm-ups dropped; and the set of sources seen."""
    ops = sorted((r for r in trace.records if r["type"] == "op"
                  and r["op"] == ALLREDUCE and r["bytes"] == nbytes),
                 key=lambda r: r["op_id"])
    gpu = {}
    for r in trace.records:
        if r["type"] == "gpu_op" and r["gpu_end"]:
            g = gpu.setdefault(r["op_id"], [r["gpu_start"], r["gpu_end"],
                                            r["source"]])
            g[0] = min(g[0], r["gpu_start"])
            g[1] = max(g[1], r["gpu_end"])
    out, src = [], set()
    for o in ops[warmup:]:
        g = gpu.get(o["op_id"])
        out.append((g[1] - g[0]) / 1e6 if g else None)
        if g:
            src.add(g[2])
    return out, src


def check(mode, out, nproc):
    ok = True
    traces = c.read_traces(os.path.join(out, "trace"))
    per_size, sources, missing = {}, set(), 0
    for rank in range(nproc):
        jp = os.path.join(out, "rank%d.json" % rank)
        t = traces.get(rank)
        if not os.path.exists(jp) or t is None:
            ok &= c.report(False, "timing %s rank %d" % (mode, rank),
                           "missing %s", "json" if t else "trace")
            continue
        mine = json.load(open(jp))
        by_size = {}
        for r in mine["ops"]:
            by_size.setdefault(r["bytes"], []).append(r["ms"])
        for nbytes, ev in sorted(by_size.items()):
            sh, src = shim_durations(t, nbytes, mine["warmup"])
            sources |= src
            for e_ms, s_ms in zip(ev, sh):
                if s_ms is None:
                    missing += 1
                    continue
                per_size.setdefault(nbytes, []).append(
                    (s_ms - e_ms) / e_ms)
            if len(sh) != len(ev):
                ok &= c.report(False, "timing %s rank %d" % (mode, rank),
                               "%d B: %d shim ops vs %d timed", nbytes,
                               len(sh), len(ev))
    ok &= c.report(missing == 0, "timing %s coverage" % mode,
                   "%d timed ops without GPU_OP; sources %s "
                   "(1=CUPTI 2=events)", missing, sorted(sources))
    for nbytes, errs in sorted(per_size.items()):
        med = c.median(errs)
        worst = max(errs, key=abs)
        ok &= c.report(abs(med) <= 0.05,
                       "timing %s %d MB" % (mode, nbytes // MB),
                       "median (shim-events)/events %+.2f%% over %d ops, "
                       "worst %+.2f%%", 100 * med, len(errs), 100 * worst)
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--modes", default="auto,events")
    ap.add_argument("--max-mb", type=int, default=1024)
    a = ap.parse_args()
    if a.worker:
        worker(a.out, a.max_mb)
        return 0
    base = a.out or os.path.join("/tmp", "p3d-issue4-%d" % os.getpid())
    ok = True
    for mode in a.modes.split(","):
        out = os.path.join(base, "timing-" + mode)
        os.makedirs(out, exist_ok=True)
        env = c.shim_env(os.path.join(out, "trace"), "timing-" + mode,
                         {"P3D_GPU_TIMING": mode})
        rc = c.torchrun(os.path.abspath(__file__),
                        ["--worker", "--out", out, "--max-mb",
                         str(a.max_mb)], a.nproc, env,
                        os.path.join(out, "log"), timeout=300)
        if rc != 0:
            ok &= c.report(False, "timing %s" % mode,
                           "torchrun exit %d, see %s/log", rc, out)
            continue
        ok &= check(mode, out, a.nproc)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
