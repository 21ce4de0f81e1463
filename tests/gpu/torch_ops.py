"""A real multi-rank PyTorch NCCL job for validating p3dtrace on a GPU.

Every rank issues a known set of NCCL operations (all-reduce, reduce-scatter,
all-gather, broadcast, batch_isend_irecv, collectives on new_group subgroups)
and writes what it issued -- per op kind: calls and bytes as NCCL sees them --
plus a checksum of the results to OUT/issued-rank<r>.json.  The checker
(check_torch_ops.py) compares that with the trace the shim wrote.

Run under torchrun; all ranks may share one GPU: each process gets a distinct
NCCL_HOSTID so NCCL accepts two ranks of one communicator on one device.

  torchrun --nproc_per_node 8 tests/gpu/torch_ops.py --out DIR [--eager]

--eager binds the device in init_process_group(device_id=...), which makes
PyTorch create the world communicator at once and every new_group an
ncclCommSplit (NCCL_SPLIT_NOCOLOR on non-members).
"""
import argparse
import json
import os

import torch
import torch.distributed as dist

ITERS = 5


def tally(issued, op, count, elem_size):
    entry = issued.setdefault(op, {"calls": 0, "bytes": 0})
    entry["calls"] += 1
    entry["bytes"] += count * elem_size


def one_iteration(rank, world, dev, tp_group, dp_group, tp_ranks, issued):
    f32 = 4
    x = torch.full((1 << 16,), float(rank + 1), device=dev)
    dist.all_reduce(x)
    tally(issued, "AllReduce", x.numel(), f32)

    out = torch.empty(1 << 12, device=dev)
    inp = torch.arange((1 << 12) * world, device=dev, dtype=torch.float32)
    dist.reduce_scatter_tensor(out, inp)
    tally(issued, "ReduceScatter", out.numel(), f32)

    src = torch.full((1 << 10,), float(rank), device=dev)
    gathered = torch.empty((1 << 10) * world, device=dev)
    dist.all_gather_into_tensor(gathered, src)
    tally(issued, "AllGather", src.numel(), f32)

    b = torch.full((3000,), float(rank), device=dev)
    dist.broadcast(b, src=0)
    tally(issued, "Broadcast", b.numel(), f32)

    # ring exchange, batched: one ncclGroupStart/End with a Send and a Recv
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    s = torch.full((2048,), float(rank), device=dev)
    r = torch.empty(2048, device=dev)
    reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, s, nxt),
                                   dist.P2POp(dist.irecv, r, prv)])
    for q in reqs:
        q.wait()
    tally(issued, "Send", s.numel(), f32)
    tally(issued, "Recv", r.numel(), f32)

    t = torch.ones(777, device=dev)
    dist.all_reduce(t, group=tp_group)
    tally(issued, "AllReduce", t.numel(), f32)
    d = torch.ones(555, device=dev, dtype=torch.bfloat16)
    dist.all_reduce(d, group=dp_group)
    tally(issued, "AllReduce", d.numel(), 2)
    return float(x[0] + out.sum() + gathered.sum() + b[0] + r[0] + t[0]
                 + d[0].float())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--eager", action="store_true")
    args = ap.parse_args()
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    os.environ.setdefault("NCCL_HOSTID", "p3dhost%d" % rank)
    os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    ndev = torch.cuda.device_count()
    dev = torch.device("cuda", rank % ndev if ndev > 1 else 0)
    torch.cuda.set_device(dev)
    if args.eager:
        dist.init_process_group("nccl", device_id=dev)
    else:
        dist.init_process_group("nccl")
    # TP-like pairs (0,1),(2,3)... and DP-like strided groups, created on
    # every rank in the same order as Megatron does
    tp_groups = [dist.new_group([i, i + 1]) for i in range(0, world, 2)]
    dp_groups = [dist.new_group(list(range(j, world, 2))) for j in range(2)]
    tp_group = tp_groups[rank // 2]
    dp_group = dp_groups[rank % 2]
    issued = {}
    checksum = 0.0
    for _ in range(ITERS):
        checksum += one_iteration(rank, world, dev, tp_group, dp_group,
                                  [2 * (rank // 2), 2 * (rank // 2) + 1],
                                  issued)
    torch.cuda.synchronize()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "issued-rank%d.json" % rank), "w") as f:
        json.dump({"rank": rank, "world": world, "eager": args.eager,
                   "ops": issued, "checksum": checksum}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
