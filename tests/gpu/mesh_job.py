"""A torchtitan-style DeviceMesh job with no Megatron command line (issue 21).

8 ranks (all may share one GPU: each gets a distinct NCCL_HOSTID), mesh
init_device_mesh("cuda", (2, 2, 2), mesh_dim_names=MESH), the last dim
varying fastest as DeviceMesh lays ranks out.  Per step, as torchtitan's
parallelisms issue them (torchtitan/distributed, torch FSDP2
_fsdp_collectives.py, torch.distributed.pipelining):
  tp  two bf16 all-reduces of the activations per layer, forward and
      backward (TP without sequence parallelism: DTensor Partial -> Replicate)
  pp  (mesh pp,dp,tp) per micro-batch the activations sent forward, the
      gradients back, batched send/recv on the pp group
  cp  (mesh dp,cp,tp) per layer cp-1 ring steps of K/V, batched
      send-next/recv-prev on the cp group
  dp  FSDP2: per layer a bf16 all-gather of the parameters in forward and
      again in backward, and a reduce-scatter of fp32 gradients with AVG
      on the last micro-batch; a 1-float loss all-reduce per step
--hang-rank R --hang-step S: rank R skips its dp reduce-scatters from step
S on and sits in host code (a stand-in for a data loader), the others wait.
Writes OUT/mesh-rank<r>.json: the mesh and the groups the rank is in.
"""
import argparse
import datetime
import json
import os
import time

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh


def args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mesh", default="pp,dp,tp")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--micro", type=int, default=4)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--hang-rank", type=int, default=-1)
    ap.add_argument("--hang-step", type=int, default=3)
    ap.add_argument("--hold", type=float, default=600)
    ap.add_argument("--out", default=".")
    return ap.parse_args()


def p2p(group, send, recv, peer_send, peer_recv):
    """Batched send/recv on group (one NCCL group call, the group's comm)."""
    ops = []
    if send is not None:
        ops.append(dist.P2POp(dist.isend, send, peer_send, group=group))
    if recv is not None:
        ops.append(dist.P2POp(dist.irecv, recv, peer_recv, group=group))
    if ops:
        for r in dist.batch_isend_irecv(ops):
            r.wait()


def main():
    a = args()
    rank = int(os.environ["RANK"])
    os.environ.setdefault("NCCL_HOSTID", "p3dmesh%d" % rank)
    ndev = torch.cuda.device_count()
    dev = torch.device("cuda", rank % ndev if ndev > 1 else 0)
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl",
                            timeout=datetime.timedelta(seconds=900))
    names = tuple(a.mesh.split(","))
    mesh = init_device_mesh("cuda", (2, 2, 2), mesh_dim_names=names)
    g = {n: mesh.get_group(n) for n in names}
    gr = {n: dist.get_process_group_ranks(g[n]) for n in names}
    with open(os.path.join(a.out, "mesh-rank%d.json" % rank), "w") as f:
        json.dump({"rank": rank, "mesh": names, "groups": gr}, f)
    h = a.hidden
    act = torch.randn(8, 128, h, device=dev, dtype=torch.bfloat16)
    w = torch.randn(h, h, device=dev, dtype=torch.bfloat16)
    shard = torch.randn(h * h // 2, device=dev, dtype=torch.bfloat16)
    full = torch.empty(h * h, device=dev, dtype=torch.bfloat16)
    grad = torch.randn(h * h, device=dev, dtype=torch.float32)
    gshard = torch.empty(h * h // 2, device=dev, dtype=torch.float32)
    kv = torch.randn(2, 8, 128, 64, device=dev, dtype=torch.bfloat16)
    kv_in = torch.empty_like(kv)
    loss = torch.zeros(1, device=dev)
    pp = "pp" in names
    stage = gr["pp"].index(rank) if pp else 0
    for step in range(a.steps):
        hang = rank == a.hang_rank and step >= a.hang_step
        for mb in range(a.micro):
            if pp and stage == 1:
                p2p(g["pp"], None, act, None, gr["pp"][0])
            for _ in range(a.layers):
                dist.all_gather_into_tensor(full, shard, group=g["dp"])
                y = act @ w
                if "cp" in names:
                    me = gr["cp"].index(rank)
                    p2p(g["cp"], kv, kv_in, gr["cp"][(me + 1) % 2],
                        gr["cp"][(me + 1) % 2])
                dist.all_reduce(y, group=g["tp"])
                dist.all_reduce(y, group=g["tp"])
            if pp and stage == 0:  # activations out, their gradients back
                p2p(g["pp"], act, None, gr["pp"][1], None)
                p2p(g["pp"], None, act, None, gr["pp"][1])
            for _ in range(a.layers):
                dist.all_gather_into_tensor(full, shard, group=g["dp"])
                y = act @ w
                dist.all_reduce(y, group=g["tp"])
                dist.all_reduce(y, group=g["tp"])
                if mb == a.micro - 1 and not hang:
                    dist.reduce_scatter_tensor(gshard, grad,
                                               op=dist.ReduceOp.AVG,
                                               group=g["dp"])
            if pp and stage == 1:  # the input's gradients back
                p2p(g["pp"], act, None, gr["pp"][0], None)
        if hang:
            print("rank %d: skipped its dp reduce-scatters at step %d"
                  % (rank, step), flush=True)
            time.sleep(a.hold)
        dist.all_reduce(loss, group=g["dp"])
        torch.cuda.synchronize()
        print("rank %d: step %d done" % (rank, step), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
