"""issue4_common.py - shared helpers of the issue 4 GPU validation scripts.

Runs on the GPU machine only (PyTorch 2.11 cu130, one GPU shared by all
ranks): launches torchrun children with or without the shim, sets up a
rank so that several ranks can share GPU 0 (distinct NCCL_HOSTID, sockets
over lo, no NVLS), reads traces with tests/tools/p3d_trace.py.
Standard library and torch only; no network.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))


def lib_path():
    """The shim to preload: $P3D_LIB or build/libp3dtrace.so."""
    p = os.environ.get("P3D_LIB", os.path.join(ROOT, "build",
                                                 "libp3dtrace.so"))
    if not os.path.exists(p):
        sys.exit("no shim at %s: run `make` first or set P3D_LIB" % p)
    return os.path.abspath(p)


def base_env(extra=None):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update({
        "NCCL_SOCKET_IFNAME": "lo",
        "NCCL_NVLS_ENABLE": "0",
        "NCCL_DEBUG": env.get("NCCL_DEBUG", "WARN"),
        "OMP_NUM_THREADS": "1",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
    })
    for k, v in (extra or {}).items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def torchrun(script, args, nproc, env, log, timeout=600):
    """Run `script args` as `nproc` ranks; returns the exit status."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           "--nproc_per_node=%d" % nproc, script] + list(args)
    with open(log, "w") as f:
        try:
            p = subprocess.run(cmd, env=env, stdout=f,
                               stderr=subprocess.STDOUT, timeout=timeout)
            return p.returncode
        except subprocess.TimeoutExpired:
            f.write("\nissue4: TIMEOUT after %d s\n" % timeout)
            return 124


def shim_env(trace_dir, job, extra=None):
    e = {"LD_PRELOAD": lib_path(), "P3D_TRACE_DIR": trace_dir,
         "P3D_JOB_ID": job}
    e.update(extra or {})
    return base_env(e)


def worker_init():
    """In a torchrun child: share GPU 0, init the NCCL process group."""
    import torch
    import torch.distributed as dist
    rank = int(os.environ["RANK"])
    # Each rank its own NCCL "host", so ranks may share one GPU.
    os.environ["NCCL_HOSTID"] = "p3d-issue4-host-%d" % rank
    torch.cuda.set_device(0)
    dist.init_process_group(backend="nccl")
    return rank, int(os.environ["WORLD_SIZE"])


def barrier():
    """A barrier that needs no device guess (ranks share cuda:0)."""
    import torch
    import torch.distributed as dist
    t = torch.ones(1, device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)


def read_traces(d):
    """{rank: Trace} of the rank trace files under d (launchers skipped)."""
    import p3d_trace
    return {r: t for r, t in p3d_trace.read_dir(d, strict=False).items()
            if r is not None and r >= 0}


def last_mem(trace, kind, dev=0):
    """The last P3D_REC_MEM of `kind` ("device", ...) on `dev`, or None."""
    rs = [r for r in trace.records if r["type"] == "mem"
          and r["kind_name"] == kind and r["device"] == dev]
    return rs[-1] if rs else None


def report(ok, name, fmt, *args):
    line = ("PASS " if ok else "FAIL ") + name + ": " + (fmt % args)
    print(line, flush=True)
    return ok


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    if not n:
        return float("nan")
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])

