#!/usr/bin/env python3
"""Rank groups of every layout in the layout matrix, from the frameworks' own code.

Why: the layout matrix (tests/layout/matrix.py) checks p3d-analyze's labels
against groups that neither our simulator nor our analyzer computed.  This
script asks the frameworks:

  megatron  megatron/core/parallel_state.py's initialize_model_parallel(),
            run unchanged from a Megatron-LM checkout, with
            torch.distributed.new_group() recorded instead of executed
            (rank 0's view: every rank calls new_group for every group, in
            the same order, so rank 0 sees all of them).  One line per
            configuration: every NCCL group Megatron creates, in creation
            order, with its group_desc (gloo twins left out).
  titan     torch.distributed.device_mesh.init_device_mesh() on torch's
            "fake" process-group backend, with the dims torchtitan builds
            (torchtitan/distributed/parallel_dims.py: pp, dp_replicate,
            dp_shard, cp, tp, keeping those > 1) and its flattened
            dp_shard_cp (the FSDP mesh) and dp_cp (the loss mesh); the
            groups are recorded from new_group/split_group as DeviceMesh
            calls them.

  titan-ep  torchtitan's own ParallelDims.build_mesh()
            (torchtitan/distributed/parallel_dims.py, loaded unchanged
            from a checkout; its imports of the config class, the logger,
            the device type and spmd_types stood in for) on the fake
            backend, with expert parallelism: its sparse mesh (pp,
            dp_replicate, efsdp, ep) beside the dense ones.  Both of its
            spmd backends; groups recorded as for titan.

Needs only torch and a Megatron-LM checkout (run on the GPU machine, which
has torch; nothing here is GPU code):

  python3 tests/layout/gen_groups.py --megatron third_party/Megatron-LM \
      --out tests/data/layout [--etp-only]
  python3 tests/layout/gen_groups.py --titan-ep third_party/torchtitan \
      --out tests/data/layout

Writes OUT/megatron-groups.jsonl.gz and OUT/titan-groups.jsonl.gz (with
--etp-only OUT/megatron-etp-groups.jsonl.gz alone: MoE parallel folding,
an "etp" key more), one JSON object
per configuration after a first {"source": ...} line: {"world", "tp", "pp", "cp", "ep", "dp", "order",
"groups": [{"desc", "ranks"}...]} (titan: "mesh" instead of "order").
"""
import argparse
import gzip
import importlib.util
import json
import os
import subprocess
import sys
import types

WORLDS = (8, 16, 24, 32, 64)
ORDERS = ("tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp")
# TP, PP and CP up to 8 each; EP 1, 2, 4 (EP spans DP x CP)
EPS = (1, 2, 4)


def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def megatron_configs():
    """Every (tp, pp, cp, ep) of each world size: tp*pp*cp divides it, tp
    pp and cp at most 8, ep in EPS dividing dp*cp (Megatron's expert
    generator takes EP from DP x CP); both orders where PP and DP > 1."""
    for w in WORLDS:
        for tp in (t for t in divisors(w) if t <= 8):
            for pp in (p for p in divisors(w // tp) if p <= 8):
                for cp in (c for c in divisors(w // (tp * pp)) if c <= 8):
                    dp = w // (tp * pp * cp)
                    for ep in (e for e in EPS if (dp * cp) % e == 0):
                                        # the second order differs only with PP and DP > 1
                        for order in ORDERS[:2 if pp > 1 and dp > 1 else 1]:
                            yield dict(world=w, tp=tp, pp=pp, cp=cp, ep=ep,
                                       dp=dp, order=order)


# MoE parallel folding: --expert-tensor-parallel-size other than TP
ETP_WORLDS = (8, 16, 32)
ETPS = (1, 2, 4)
ETP_EPS = (2, 4, 8)


def megatron_etp_configs():
    """MoE parallel folding: every (tp, pp, cp, ep, etp) of each world in
    ETP_WORLDS with etp other than tp, tp and etp at most 8, pp at most 4,
    cp 1 or 2, where etp * ep * pp divides the world (Megatron's
    RuntimeError otherwise); both orders where PP and DP > 1.  Megatron
    refuses the rest itself (its asserts on the pipeline groups)."""
    for w in ETP_WORLDS:
        for tp in (t for t in divisors(w) if t <= 8):
            for pp in (p for p in divisors(w // tp) if p <= 4):
                for cp in (c for c in divisors(w // (tp * pp)) if c <= 2):
                    dp = w // (tp * pp * cp)
                    for ep in ETP_EPS:
                        for etp in ETPS:
                            if etp == tp or w % (etp * ep * pp):
                                continue
                            for order in ORDERS[:2 if pp > 1 and dp > 1
                                                else 1]:
                                yield dict(world=w, tp=tp, pp=pp, cp=cp,
                                           ep=ep, etp=etp, dp=dp,
                                           order=order)


def load_parallel_state(megatron):
    """parallel_state.py from the checkout, without megatron/core/__init__
    (which imports the whole library): megatron.core.utils is stood in for
    by the two helpers parallel_state takes from it, which create no group."""
    import torch

    core = os.path.join(megatron, "megatron", "core")
    for name, path in (("megatron", os.path.join(megatron, "megatron")),
                       ("megatron.core", core)):
        mod = types.ModuleType(name)
        mod.__path__ = [path]
        sys.modules[name] = mod
    utils = types.ModuleType("megatron.core.utils")

    class GlobalMemoryBuffer:
        pass

    def is_torch_min_version(v, check_equality=True):
        def key(s):
            return tuple(int(x) for x in s.split("+")[0].split(".")[:3]
                         if x.isdigit())
        t = key(torch.__version__)
        return t >= key(v) if check_equality else t > key(v)

    utils.GlobalMemoryBuffer = GlobalMemoryBuffer
    utils.is_torch_min_version = is_torch_min_version
    sys.modules["megatron.core.utils"] = utils
    spec = importlib.util.spec_from_file_location(
        "megatron.core.parallel_state", os.path.join(core, "parallel_state.py"))
    ps = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ps)
    return ps


def megatron_groups(megatron, cfg):
    import torch
    import torch.distributed as dist

    ps = load_parallel_state(megatron)  # fresh module: fresh globals
    rec = []

    def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
                  use_local_synchronization=False, group_desc=None, **kw):
        if backend != "gloo":
            rec.append({"desc": group_desc, "ranks": list(ranks)})
        return object()

    saved = (dist.is_initialized, dist.get_world_size, dist.get_rank,
             dist.new_group)
    dist.is_initialized = lambda: True
    dist.get_world_size = lambda group=None: cfg["world"]
    dist.get_rank = lambda group=None: 0
    dist.new_group = new_group
    try:
        ps.initialize_model_parallel(
            tensor_model_parallel_size=cfg["tp"],
            pipeline_model_parallel_size=cfg["pp"],
            context_parallel_size=cfg["cp"],
            expert_model_parallel_size=cfg["ep"],
            expert_tensor_parallel_size=cfg.get("etp"),
            order=cfg["order"])
    finally:
        (dist.is_initialized, dist.get_world_size, dist.get_rank,
         dist.new_group) = saved
    return rec


def record_groups(mods, rec, with_backend):
    """Wrap new_group and split_group in each module of mods so that every
    group they create is appended to rec ({"desc", "ranks"}, and the
    backend asked for with with_backend); returns what unrecord_groups
    puts back."""
    def wrap(real, kind):
        def f(*a, **k):
            desc = k.get("group_desc")
            be = k.get("backend")
            if kind == "new_group":
                ranks = k.get("ranks", a[0] if a else None)
                found = [ranks] if ranks is not None else []
            else:
                found = k.get("split_ranks", a[1] if len(a) > 1 else [])
            for ranks in found:
                g = {"desc": desc, "ranks": sorted(ranks)}
                if with_backend:
                    g["backend"] = str(be) if be is not None else None
                rec.append(g)
            return real(*a, **k)
        return f

    patched = []
    for mod in mods:
        for name in ("new_group", "split_group"):
            if hasattr(mod, name):
                real = getattr(mod, name)
                patched.append((mod, name, real))
                setattr(mod, name, wrap(real, name))
    return patched


def unrecord_groups(patched):
    for mod, name, real in patched:
        setattr(mod, name, real)


def titan_configs():
    """torchtitan's dims, every (tp, pp, cp) of each world size, each at
    most 8: dp_replicate = 1 (dp_shard = dp: FSDP), and HSDP with
    dp_replicate = 2 where dp is 4 or more; torchtitan has no
    Megatron-style EP in this mesh."""
    for w in WORLDS:
        for tp in (t for t in divisors(w) if t <= 8):
            for pp in (p for p in divisors(w // tp) if p <= 8):
                for cp in (c for c in divisors(w // (tp * pp)) if c <= 8):
                    dp = w // (tp * pp * cp)
                    yield dict(world=w, tp=tp, pp=pp, cp=cp, ep=1, dp=dp,
                               dp_rep=1)
                    if dp >= 4 and dp % 2 == 0:
                        yield dict(world=w, tp=tp, pp=pp, cp=cp, ep=1,
                                   dp=dp, dp_rep=2)


def titan_groups(cfg):
    import torch
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d
    import torch.distributed.device_mesh as dm
    from torch.testing._internal.distributed.fake_pg import FakeStore

    rec = []
    patched = record_groups((dist, c10d, dm), rec, False)
    dist.init_process_group("fake", store=FakeStore(), rank=0,
                            world_size=cfg["world"])
    try:
        rep = cfg["dp_rep"]
        dims = [("pp", cfg["pp"]), ("dp_replicate", rep),
                ("dp_shard", cfg["dp"] // rep), ("cp", cfg["cp"]),
                ("tp", cfg["tp"])]
        dims = [d for d in dims if d[1] > 1] or [("dp_shard", 1)]
        names = tuple(d[0] for d in dims)
        mesh = dm.init_device_mesh("cpu", tuple(d[1] for d in dims),
                                   mesh_dim_names=names)
        # parallel_dims.py: the FSDP mesh dp_shard x cp, the loss mesh
        # dp_replicate x dp_shard x cp (HSDP: fully_shard on the 2-D mesh
        # (dp_replicate, dp_shard_cp))
        for flat, parts in (("dp_shard_cp", ("dp_shard", "cp")),
                            ("dp_cp", ("dp_replicate", "dp_shard", "cp"))):
            have = tuple(p for p in parts if p in names)
            if len(have) > 1:
                mesh[have]._flatten(flat)
        cfg = dict(cfg, mesh=",".join(names))
        # DeviceMesh reuses the default group for a dim spanning the world.
        return cfg, rec
    finally:
        dist.destroy_process_group()
        unrecord_groups(patched)


# torchtitan with EP: worlds, and EP degrees (EP borrows from
# dp_shard x cp x tp: parallel_dims.py _validate)
TITAN_EP_WORLDS = (8, 16, 32)
TITAN_EPS = (2, 4, 8)


def titan_ep_configs():
    """Every (tp, pp, cp, dp_replicate, ep) of each world in
    TITAN_EP_WORLDS: tp up to 8, pp up to 4, cp 1 or 2, dp_replicate 1 or
    2 (where it divides dp), ep in TITAN_EPS dividing dp_shard x cp x tp."""
    for w in TITAN_EP_WORLDS:
        for tp in (t for t in divisors(w) if t <= 8):
            for pp in (p for p in divisors(w // tp) if p <= 4):
                for cp in (c for c in divisors(w // (tp * pp)) if c <= 2):
                    dp = w // (tp * pp * cp)
                    for rep in (1, 2):
                        if dp % rep:
                            continue
                        for ep in TITAN_EPS:
                            if (dp // rep * cp * tp) % ep:
                                continue
                            yield dict(world=w, tp=tp, pp=pp, cp=cp, ep=ep,
                                       etp=1, dp=dp, dp_rep=rep)


def load_parallel_dims(titan):
    """torchtitan/distributed/parallel_dims.py from the checkout, its
    imports stood in for: ParallelismConfig (only named in from_config),
    the logger, device_type ("cpu": the fake backend), spmd_types (only
    used by SpmdLayout, which build_mesh does not call)."""
    import logging

    for name in ("torchtitan", "torchtitan.config", "torchtitan.tools",
                 "torchtitan.distributed"):
        mod = types.ModuleType(name)
        mod.__path__ = []
        sys.modules[name] = mod
    cfgs = types.ModuleType("torchtitan.config.configs")
    cfgs.ParallelismConfig = object
    log = types.ModuleType("torchtitan.tools.logging")
    log.logger = logging.getLogger("torchtitan")
    tu = types.ModuleType("torchtitan.tools.utils")
    tu.device_type = "cpu"
    spmd = types.ModuleType("spmd_types")
    for n in ("PerMeshAxisSpmdType", "PartitionSpec", "Shard", "S", "V"):
        setattr(spmd, n, type(n, (), {}))
    for name, mod in (("torchtitan.config.configs", cfgs),
                      ("torchtitan.tools.logging", log),
                      ("torchtitan.tools.utils", tu), ("spmd_types", spmd)):
        sys.modules[name] = mod
    path = os.path.join(titan, "torchtitan", "distributed", "parallel_dims.py")
    spec = importlib.util.spec_from_file_location(
        "torchtitan.distributed.parallel_dims", path)
    pd = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = pd
    spec.loader.exec_module(pd)
    return pd


def titan_ep_groups(pd, cfg, backend):
    """The groups ParallelDims(...).build_mesh() creates, in order."""
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d
    import torch.distributed.device_mesh as dm
    from torch.testing._internal.distributed.fake_pg import FakeStore

    rec = []
    patched = record_groups((dist, c10d, dm), rec, True)
    dist.init_process_group("fake", store=FakeStore(), rank=0,
                            world_size=cfg["world"])
    try:
        dims = pd.ParallelDims(
            dp_replicate=cfg["dp_rep"], dp_shard=cfg["dp"] // cfg["dp_rep"],
            cp=cfg["cp"], tp=cfg["tp"], pp=cfg["pp"], ep=cfg["ep"],
            world_size=cfg["world"], spmd_backend=backend)
        dims.build_mesh()
        sizes = {k: m.size() for k, m in dims._single_axis_meshes.items()}
        return dict(cfg, backend=backend, mesh_sizes=sizes), rec
    finally:
        dist.destroy_process_group()
        unrecord_groups(patched)


def write_titan_ep(titan, out, src):
    pd = load_parallel_dims(titan)
    n = bad = 0
    with gzip.open(os.path.join(out, "titan-ep-groups.jsonl.gz"), "wt") as f:
        f.write(json.dumps({"source": src}) + "\n")
        for cfg in titan_ep_configs():
            for backend in ("partial_dtensor", "spmd_types"):
                try:
                    c, groups = titan_ep_groups(pd, cfg, backend)
                except Exception as e:  # a layout torchtitan refuses
                    bad += 1
                    print("titan refused", cfg, backend, repr(e)[:300],
                          file=sys.stderr)
                    continue
                c["groups"] = groups
                f.write(json.dumps(c, separators=(",", ":")) + "\n")
                n += 1
    print(f"titan ep: {n} configurations, {bad} refused")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--megatron")
    ap.add_argument("--titan-ep", help="a torchtitan checkout: write "
                    "titan-ep-groups.jsonl.gz alone")
    ap.add_argument("--out", required=True)
    ap.add_argument("--etp-only", action="store_true",
                    help="write megatron-etp-groups.jsonl.gz alone")
    a = ap.parse_args()
    import torch

    os.makedirs(a.out, exist_ok=True)
    if a.titan_ep:
        commit = ""
        if os.path.exists(os.path.join(a.titan_ep, "COMMIT")):
            commit = open(os.path.join(a.titan_ep, "COMMIT")).read().strip()
        write_titan_ep(a.titan_ep, a.out, {"torchtitan_commit": commit or
                                           "unknown",
                                           "torch": torch.__version__})
        return
    if not a.megatron:
        ap.error("--megatron or --titan-ep is needed")
    # An exported tree (no .git of its own) names its commit in COMMIT;
    # git would answer for whatever repository encloses it.
    commit = ""
    if os.path.exists(os.path.join(a.megatron, "COMMIT")):
        commit = open(os.path.join(a.megatron, "COMMIT")).read().strip()
    elif os.path.exists(os.path.join(a.megatron, ".git")):
        commit = subprocess.run(["git", "-C", a.megatron, "rev-parse", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
    src = {"megatron_commit": commit or "unknown", "torch": torch.__version__}
    n = bad = 0
    if a.etp_only:
        with gzip.open(os.path.join(a.out, "megatron-etp-groups.jsonl.gz"),
                       "wt") as f:
            f.write(json.dumps({"source": src}) + "\n")
            for cfg in megatron_etp_configs():
                try:
                    cfg["groups"] = megatron_groups(a.megatron, cfg)
                except Exception as e:  # a layout Megatron refuses
                    bad += 1
                    print("megatron refused", cfg, repr(e)[:200],
                          file=sys.stderr)
                    continue
                f.write(json.dumps(cfg, separators=(",", ":")) + "\n")
                n += 1
        print(f"megatron etp: {n} configurations, {bad} refused")
        return
    with gzip.open(os.path.join(a.out, "megatron-groups.jsonl.gz"), "wt") as f:
        f.write(json.dumps({"source": src}) + "\n")
        for cfg in megatron_configs():
            try:
                cfg["groups"] = megatron_groups(a.megatron, cfg)
            except Exception as e:  # an invalid layout Megatron refuses
                bad += 1
                print("megatron refused", cfg, repr(e)[:200], file=sys.stderr)
                continue
            f.write(json.dumps(cfg, separators=(",", ":")) + "\n")
            n += 1
    print(f"megatron: {n} configurations, {bad} refused")
    n = 0
    with gzip.open(os.path.join(a.out, "titan-groups.jsonl.gz"), "wt") as f:
        f.write(json.dumps({"source": src}) + "\n")
        for cfg in titan_configs():
            try:
                cfg, groups = titan_groups(cfg)
            except Exception as e:
                print("titan failed", cfg, repr(e)[:300], file=sys.stderr)
                continue
            cfg["groups"] = groups
            f.write(json.dumps(cfg, separators=(",", ":")) + "\n")
            n += 1
    print(f"titan: {n} configurations")


if __name__ == "__main__":
    main()
