#!/usr/bin/env python3
"""The layout matrix: p3d-analyze's layout and labels on every configuration
of tests/data/layout (rank groups from Megatron-LM's and torch DeviceMesh's
own code), each run as real processes under the shim on the fake NCCL
(build/p3d-sim), under several usage profiles, with and without a command
line.

Profiles (what issues which collectives, and how communicators appear):
  megatron-lazy   Megatron-LM as it runs today: communicators created at a
                  group's first use (torch without device_id)
  megatron-eager  every Megatron group created at start, in
                  initialize_model_parallel's order, by ncclCommSplit of
                  WORLD (torch with device_id); most carry nothing
  megatron-etp-lazy, megatron-etp-eager
                  the same on MoE parallel folding (megatron-etp-groups:
                  --expert-tensor-parallel-size other than TP)
  titan           torchtitan: DeviceMesh groups, TP sequence parallel, CP
                  K/V all-gather, FSDP2 on dp_shard x cp (titan-groups)
  titan-ep        torchtitan with expert parallelism: its sparse mesh
                  (pp, dp_replicate, efsdp, ep), token all-to-alls on ep,
                  the experts' FSDP on efsdp (titan-ep-groups, from
                  torchtitan's own ParallelDims.build_mesh)
  ddp, fsdp       plain PyTorch DDP / FSDP2 on the world group (the
                  data-parallel-only configurations)
  deepspeed       Megatron-DeepSpeed: Megatron's TP, ZeRO-2 on DP (the
                  TP x DP configurations)
"cmd": the job's command line as its framework writes it (Megatron's flags
for Megatron, torchtitan's for titan, a script's for ddp/fsdp), or none.

What must hold, per run:
  - the simulator's groups are Megatron's (DeviceMesh's) groups;
  - right: the layout sizes (and the order, where it changes the groups)
    are the truth's and every communicator of 2+ ranks with traffic is
    used as its group, every other has a label its member set has;
  - otherwise the report must say it cannot tell (confidence "ambiguous"
    or "none"); a wrong answer stated as "likely" or "certain" fails.

  python3 tests/layout/matrix.py [--sample N] [--profile P ...] [--ep N] [-v]
(--ep N: only the configurations with N expert-parallel ranks.)
Prints one line per failure and the counts; exit 1 on any confident wrong
answer or failed run.
"""
import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(SRC, "tests", "data", "layout")

# Megatron's group_desc and DeviceMesh's mesh names -> p3d's labels.
LABEL = {
    "TENSOR_MODEL_PARALLEL_GROUP": "TP", "EXPERT_TENSOR_PARALLEL_GROUP": "TP",
    "CONTEXT_PARALLEL_GROUP": "CP", "PIPELINE_MODEL_PARALLEL_GROUP": "PP",
    "DATA_PARALLEL_GROUP": "DP", "DATA_PARALLEL_GROUP_WITH_CP": "DP-CP",
    "TENSOR_AND_CONTEXT_PARALLEL_GROUP": "TP-CP",
    "MODEL_PARALLEL_GROUP": "MP",
    "TENSOR_AND_DATA_PARALLEL_GROUP_WITH_CP": "TP-DP-CP",
    "EXPERT_MODEL_PARALLEL_GROUP": "EP", "EXPERT_DATA_PARALLEL_GROUP": "EXPERT-DP",
    "EMBEDDING_GROUP": "EMB", "POSITION_EMBEDDING_GROUP": "POS-EMB",
    "INTRA_DISTRIBUTED_OPTIMIZER_INSTANCE_GROUP": "WORLD",
    "mesh_tp": "TP", "mesh_pp": "PP", "mesh_cp": "CP", "mesh_dp_shard": "DP",
    "mesh_dp_shard_cp": "DP-CP", "mesh_dp_cp": "DP-CP",
    "mesh_dp_replicate": "DP-REPLICATE",
    # torchtitan's build_mesh (titan-ep-groups): FSDP's flattened dp_shard
    # x cp, the loss mesh, the sparse mesh's ep and efsdp
    "mesh_fsdp": "DP-CP", "mesh_loss_mesh": "DP-CP", "mesh_batch": "DP",
    "mesh_dp": "DP", "mesh_ep": "EP", "mesh_efsdp": "EXPERT-DP",
}
# torchtitan's HSDP: FSDP's mesh is the shard group.
HSDP_LABEL = {"mesh_dp_shard": "DP-SHARD", "mesh_dp_shard_cp": "DP-SHARD",
              "mesh_fsdp": "DP-SHARD"}
# Labels that name the same use where the member sets coincide (DP with or
# without CP when CP = 1, the expert DP group when EP = 1; the grad-norm
# world group and MP when MP is the world).
FAMILY = [{"DP", "DP-CP", "EXPERT-DP"}, {"MP", "WORLD"}]


def load(name):
    with gzip.open(os.path.join(DATA, name), "rt") as f:
        lines = [json.loads(x) for x in f]
    return lines[0]["source"], lines[1:]


def key(cfg):
    return (cfg["world"], cfg["tp"], cfg["pp"], cfg["cp"], cfg["ep"],
            cfg.get("order", "tp-cp-ep-dp-pp"))


def runs(profiles):
    """(profile, cfg, cmd) for every run of the matrix, in a fixed order."""
    _, mg = load("megatron-groups.jsonl.gz")
    _, ti = load("titan-groups.jsonl.gz")
    _, et = load("megatron-etp-groups.jsonl.gz")
    _, te = load("titan-ep-groups.jsonl.gz")
    # the partial_dtensor backend's meshes (FSDP on the flattened fsdp
    # mesh, which the simulator's titan issues on); spmd_types builds the
    # same sparse mesh
    # (groups on torch's "fake" backend are no NCCL communicators: left out)
    te = [dict(c, groups=[g for g in c["groups"] if g.get("backend") !=
                          "fake"])
          for c in te if c.get("backend") == "partial_dtensor"]
    out = []
    for p in profiles:
        if p in ("megatron-lazy", "megatron-eager"):
            cfgs = mg
        elif p in ("megatron-etp-lazy", "megatron-etp-eager"):
            cfgs = et
        elif p == "titan":
            cfgs = ti
        elif p == "titan-ep":
            cfgs = te
        elif p == "deepspeed":
            cfgs = [c for c in mg if c["pp"] == c["cp"] == c["ep"] == 1]
        else:  # data parallel only
            cfgs = [c for c in mg if c["dp"] == c["world"] and c["ep"] == 1]
        for c in sorted(cfgs, key=key):
            for cmd in (True, False):
                out.append((p, c, cmd))
    return out


def etp(c):
    """The expert tensor-parallel size: Megatron's default is TP."""
    return c.get("etp", c["tp"])


def job_cmdline(p, c):
    if p == "deepspeed":
        return ["pretrain_gpt.py", "--tensor-model-parallel-size",
                str(c["tp"]), "--deepspeed", "--zero-stage", "2"]
    if p.startswith("megatron"):
        a = ["pretrain_gpt.py", "--tensor-model-parallel-size", c["tp"],
             "--pipeline-model-parallel-size", c["pp"],
             "--context-parallel-size", c["cp"],
             "--expert-model-parallel-size", c["ep"]]
        if etp(c) != c["tp"]:
            a += ["--expert-tensor-parallel-size", etp(c)]
        if c["order"] == "tp-cp-ep-pp-dp":
            a.append("--use-tp-pp-dp-mapping")
        return [str(x) for x in a]
    if p.startswith("titan"):
        a = ["-m", "torchtitan.train", "--job.config_file", "llama3.toml",
             "--parallelism.tensor_parallel_degree=%d" % c["tp"],
             "--parallelism.pipeline_parallel_degree=%d" % c["pp"],
             "--parallelism.context_parallel_degree=%d" % c["cp"]]
        if c["ep"] > 1:
            a.append("--parallelism.expert_parallel_degree=%d" % c["ep"])
        return a
    return ["train.py", "--batch-size", "32"]


def sim_args(p, c, groups_file):
    a = ["--tp", c["tp"], "--pp", c["pp"], "--cp", c["cp"], "--dp", c["dp"],
         "--iters", 2, "-m", 4, "--layers", 2, "--fwd-ms", "0.1",
         "--bwd-ms", "0.1", "--opt-ms", "0.1", "--timeout", 120]
    if p.startswith("megatron"):
        a += ["--ep", c["ep"], "--order", c["order"]]
        if etp(c) != c["tp"]:
            a += ["--etp", etp(c)]
    if p.endswith("-eager"):
        a += ["--eager-groups", groups_file]
    if p in ("titan", "ddp", "fsdp", "deepspeed"):
        a += ["--framework", p]
    if p == "titan-ep":
        a += ["--framework", "titan", "--ep", c["ep"]]
    if c.get("dp_rep", 1) > 1:
        a += ["--dp-replicate", str(c["dp_rep"])]
    return [str(x) for x in a]


def truth_groups(truth):
    """(members, role, used) of each group the simulated job created."""
    used = {}
    for r in truth["ranks"]:
        for gid, cm in r.get("comms", {}).items():
            used[gid] = used.get(gid, 0) + cm.get("issued", 0)
    return [(tuple(g["members"]), g["role"], used.get(g["id"], 0) > 0,
             g["megatron"]) for g in truth["groups"]]


def data_labels(c):
    """members -> the labels of the framework's groups with those members."""
    lab = {}
    hsdp = c.get("dp_rep", 1) > 1
    for g in c["groups"]:
        m = tuple(sorted(g["ranks"]))
        name = HSDP_LABEL.get(g["desc"]) if hsdp else None
        if g["desc"] == "EXPERT_TENSOR_PARALLEL_GROUP" and etp(c) != c["tp"]:
            name = "EXPERT-TP"  # folded: not TP's ranks
        if name or g["desc"] in LABEL:
            lab.setdefault(m, set()).add(name or LABEL[g["desc"]])
    lab.setdefault(tuple(range(c["world"])), set()).add("WORLD")
    for s in lab.values():   # at CP = 1 the DP-CP group is the DP group
        if c["cp"] == 1 and s & {"DP", "DP-CP"}:
            s |= {"DP", "DP-CP"}
    return lab


def same_use(a, b, labels):
    if a == b:
        return True
    return any(a in f and b in f for f in FAMILY) and a in labels


def check_groups(p, c, truth):
    """The simulator laid ranks out as the framework does."""
    if p in ("ddp", "fsdp"):
        return []
    want = {}
    for g in c["groups"]:
        want.setdefault(g["desc"], set()).add(tuple(sorted(g["ranks"])))
    bad = []
    for m, role, _, desc in truth_groups(truth):
        if p == "titan" and c.get("dp_rep", 1) > 1:
            desc = {"TP": "mesh_tp", "PP": "mesh_pp", "CP": "mesh_cp",
                    "DP-CP": "mesh_dp_cp", "DP-REPLICATE": "mesh_dp_replicate",
                    "DP-SHARD": "mesh_dp_shard_cp" if c["cp"] > 1
                    else "mesh_dp_shard"}.get(role)
            if desc is None or len(m) == c["world"] or len(m) < 2:
                continue
        elif p == "titan-ep":
            hsdp = c.get("dp_rep", 1) > 1
            desc = {"TP": "mesh_tp", "PP": "mesh_pp", "CP": "mesh_cp",
                    "EP": "mesh_ep", "EXPERT-DP": "mesh_efsdp",
                    "DP-REPLICATE": "mesh_dp_replicate",
                    "DP-SHARD": "mesh_fsdp",
                    "DP-CP": "mesh_loss_mesh" if hsdp else "mesh_fsdp",
                    }.get(role)
            if desc is None or len(m) == c["world"] or len(m) < 2:
                continue
        elif p == "titan":
            desc = {"TP": "mesh_tp", "PP": "mesh_pp", "CP": "mesh_cp",
                    "DP-CP": "mesh_dp_shard_cp" if c["cp"] > 1 and c["dp"] > 1
                    else ("mesh_cp" if c["dp"] == 1 else "mesh_dp_shard")
                    }.get(role)
            if desc is None or len(m) == c["world"] or len(m) < 2:
                continue
        if desc in want and m not in want[desc]:
            bad.append("%s %s not one of the framework's" % (desc, list(m)))
    return bad


def matches(uses, want, labels):
    """Each communicator of a member set used as one of its groups."""
    left = list(want)
    for u in sorted(uses, key=lambda u: u not in left):
        hit = next((w for w in left if same_use(u, w, labels | {w})), None)
        if hit is None:
            return False
        left.remove(hit)
    return not left


def parse_layout(s):
    d = dict(x.split("=") for x in s.split())
    return (int(d["tp"]), int(d["pp"]), int(d["dp"]), int(d["cp"]),
            int(d["ep"]), d["order"], int(d.get("dp_shard", 0)),
            int(d.get("etp", d["tp"])))


def order_matters(c):
    return c["pp"] > 1 and c["dp"] > 1


def layout_right(c, lay):
    tp, pp, dp, cp, ep, order, dps, etp_ = lay
    rep = c.get("dp_rep", 1)
    ok = (tp, pp, dp, cp, ep) == (c["tp"], c["pp"], c["dp"], c["cp"], c["ep"])
    ok = ok and (ep == 1 or etp_ == etp(c))
    ok = ok and dps == (c["dp"] // rep if rep > 1 else 0)
    if ok and order_matters(c) and "order" in c:
        ok = order == c["order"]
    return ok


def judge(p, c, an, truth):
    """'right', 'ambiguous' (said so), or 'wrong: why'."""
    L = an["layout"]
    lay = (L["tp"], L["pp"], L["dp"], L["cp"], L["ep"], L["order"],
           L.get("dp_shard", 0), L.get("etp", L["tp"]))
    why = []
    if p in ("ddp", "fsdp"):
        c = dict(c, order="tp-cp-ep-dp-pp")
    if not layout_right(c, lay):
        why.append("layout tp=%d pp=%d dp=%d cp=%d ep=%d %s dp_shard=%d "
                   "etp=%d" % lay)
    lab = data_labels(c)
    roles = {}
    for m, role, used, _ in truth_groups(truth):
        if used:
            roles.setdefault(m, []).append(role)
    got = {}
    for cm in an["communicators"]:
        m = tuple(cm["members"])
        if len(m) < 2 or cm["missing_members"]:
            continue
        if cm["ops"]:
            got.setdefault(m, []).append(cm["used_as"])
        elif m in lab and cm["label"] not in lab[m]:
            why.append("%s labelled %s (idle; %s)" % (list(m), cm["label"],
                                                      "/".join(sorted(lab[m]))))
    for m, uses in got.items():
        want = list(roles.get(m, []))
        if p in ("ddp", "fsdp"):
            want = ["DP"] * len(uses)
        world_ok = len(m) == c["world"] and p not in ("ddp", "fsdp",
                                                      "deepspeed")
        if world_ok:  # a world-wide data or loss group read as WORLD
            uses = [w for u in uses for w in ([u] if u != "WORLD" else [
                next((r for r in want if r in FAMILY[0] | FAMILY[1]),
                     "WORLD")])]
        if not matches(uses, want, lab.get(m, set())):
            why.append("%s used as %s, truth %s" % (list(m)[:6], uses, want))
    if not why:
        return "right"
    if L["confidence"] in ("ambiguous", "none"):
        alts = [parse_layout(a["layout"]) for a in L.get("alternatives", [])]
        if layout_right(c, lay) or any(layout_right(c, a) for a in alts):
            return "ambiguous"
        return "ambiguous-miss: " + "; ".join(why[:3])
    return "wrong (%s): %s" % (L["confidence"], "; ".join(why[:3]))


LSAN_DIED = "LeakSanitizer has encountered a fatal error"


def run_one(build, tmp, p, c, cmd, verbose):
    gf = os.path.join(tmp, "groups.txt")
    with open(gf, "w") as f:
        for g in c["groups"]:
            f.write(g["desc"] + " " + " ".join(map(str, g["ranks"])) + "\n")
    out = os.path.join(tmp, "out")
    argv = [os.path.join(build, "p3d-sim")] + sim_args(p, c, gf) + [
        "--out", out, "--job-id", "j", "--quiet",
        "--shim", os.path.join(build, "libp3dtrace.so")]
    if cmd:
        argv += ["--"] + job_cmdline(p, c)
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0 and LSAN_DIED in r.stderr:
        # Under ASan (tests/integration/rel_check.sh) LeakSanitizer's own
        # tracer can fail to stop a rank's threads at exit ("Tracer caught
        # signal 11", once in CI in a 24-rank job, not seen again in 48
        # runs under load): then no leak check ran and nothing was found.
        # The run is repeated once; a leak found is another message
        # ("detected memory leaks") and fails as before.
        shutil.rmtree(out, ignore_errors=True)
        print("note: a sim run repeated: the leak checker's own tracer "
              "failed in it (no leak check ran)", flush=True)
        r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        return "sim failed (rc %d): %s" % (r.returncode, r.stderr[-300:])
    truth = json.load(open(os.path.join(out, "j", "truth.json")))
    bad = check_groups(p, c, truth)
    if bad:
        return "sim groups differ: " + "; ".join(bad[:2])
    aj = os.path.join(tmp, "an.json")
    r = subprocess.run([os.path.join(build, "p3d-analyze"), "-q", "--json",
                        aj, os.path.join(out, "j")], capture_output=True,
                       text=True)
    if r.returncode not in (0,) or not os.path.exists(aj):
        return "analyze failed (rc %d): %s" % (r.returncode, r.stderr[-300:])
    return judge(p, c, json.load(open(aj)), truth)


# make test's share of each profile in a sample of 40.
SHARE = {"megatron-lazy": 12, "megatron-eager": 11, "titan": 8, "ddp": 3,
         "fsdp": 3, "deepspeed": 3, "megatron-etp-lazy": 2,
         "megatron-etp-eager": 2, "titan-ep": 2}


def sample(all_runs, n):
    """About n runs spread evenly over each profile's part of the matrix
    (fixed: the same every time), world sizes up to 32 so make test stays
    quick."""
    out = []
    for p, share in SHARE.items():
        mine = [r for r in all_runs if r[0] == p and r[1]["world"] <= 32]
        k = min(len(mine), max(1, round(share * n / 40)))
        out += [mine[int(i * len(mine) / k)] for i in range(k)] if k else []
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", type=int, default=0)
    ap.add_argument("--profile", action="append")
    ap.add_argument("--build", default=os.environ.get(
        "P3D_BUILD", os.path.join(SRC, "build")))
    ap.add_argument("-j", "--jobs", type=int, default=1,
                    help="runs at once (each is a whole job of processes)")
    ap.add_argument("--ep", type=int, default=0,
                    help="only configurations with this EP size")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    profiles = a.profile or ["megatron-lazy", "megatron-eager", "titan",
                             "ddp", "fsdp", "deepspeed", "megatron-etp-lazy",
                             "megatron-etp-eager", "titan-ep"]
    todo = runs(profiles)
    if a.ep:
        todo = [r for r in todo if r[1]["ep"] == a.ep]
    if a.sample:
        todo = sample(todo, a.sample)
    counts = {}
    fails = 0
    base = tempfile.mkdtemp(prefix="p3d-matrix-")

    def slot(i):  # one work folder per worker thread
        with lock:
            k = free.pop()
        try:
            tmp = os.path.join(base, str(k))
            os.makedirs(tmp, exist_ok=True)
            p, c, cmd = todo[i]
            return run_one(a.build, tmp, p, c, cmd, a.v)
        finally:
            with lock:
                free.append(k)

    import threading
    from concurrent.futures import ThreadPoolExecutor
    lock, free = threading.Lock(), list(range(max(1, a.jobs)))
    try:
        with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
            results = ex.map(slot, range(len(todo)))
            for i, res in enumerate(results):
                p, c, cmd = todo[i]
                if i and i % 250 == 0:
                    print("... %d of %d runs" % (i, len(todo)),
                          file=sys.stderr, flush=True)
                kind = res.split(" ")[0].split(":")[0]
                counts.setdefault(p, {}).setdefault(kind, 0)
                counts[p][kind] += 1
                name = "%s %s %s" % (p, "cmd" if cmd else "nocmd", " ".join(
                    "%s=%s" % (k, c[k]) for k in
                    ("world", "tp", "pp", "cp", "ep", "dp") if k in c)
                    + (" etp=%d" % etp(c) if etp(c) != c["tp"] else "")
                    + " " + c.get("order", c.get("mesh", ""))
                    + (" dp_rep=%d" % c["dp_rep"]
                       if c.get("dp_rep", 1) > 1 else ""))
                if kind in ("wrong", "sim", "analyze"):
                    fails += 1
                    print("FAIL", name, res, flush=True)
                elif a.v or kind == "ambiguous-miss":
                    print(kind.upper() if kind != "right" else "ok", name,
                          res if kind != "right" else "")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    total = sum(sum(v.values()) for v in counts.values())
    for p in profiles:
        v = counts.get(p, {})
        print("%-15s %4d runs: %s" % (p, sum(v.values()), ", ".join(
            "%s %d" % (k, n) for k, n in sorted(v.items()))))
    print("layout matrix: %d runs, %d right, %d said ambiguous, %d confident "
          "wrong or failed" % (total, sum(v.get("right", 0) for v in
                                          counts.values()),
                               sum(v.get("ambiguous", 0) +
                                   v.get("ambiguous-miss", 0)
                                   for v in counts.values()), fails))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
