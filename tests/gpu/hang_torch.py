"""A real PyTorch NCCL job in which one rank skips an all-reduce (issue 7).

4 ranks (all may share one GPU: each gets a distinct NCCL_HOSTID).  Every
step: some compute, the gradient all-reduce on the world group, a host
sync (like .item()), and with --mode deadlock a tensor-parallel
all-reduce in pairs (new_group [0,1], [2,3]) and another host sync.  At
step --skip-step the rank --skip-rank does not issue the world
all-reduce and goes on:
  desync    its later world all-reduces pair with the others' earlier
            ones (NCCL matches by order), it ends its loop one short and
            sits in host code (--hold s, a stand-in for a data loader or
            checkpoint write); ranks 0-2 wait in their last all-reduce;
  deadlock  its next op is the TP all-reduce, for which its TP peer
            never comes: that peer waits in the skipped world all-reduce.
  half      (--absent N) the last N ranks skip the world all-reduce at
            --skip-step and sit in host code; the others wait in it for
            all of them (at 10k+ ranks, half a job can be absent so).
The driver (hang_run.sh) stops the job after a while.

  torchrun --nproc_per_node 4 tests/gpu/hang_torch.py [--mode desync]
      [--skip-rank 3] [--skip-step 5] [--steps 10] [--torch-timeout 600]
      [--fill-ops N]

Writes OUT/hang-rank<r>.json: what the rank issued.
"""
import argparse
import datetime
import json
import os
import time

import torch
import torch.distributed as dist


def args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["desync", "deadlock", "half"],
                    default="desync")
    ap.add_argument("--skip-rank", type=int, default=3)
    ap.add_argument("--absent", type=int, default=0)
    ap.add_argument("--skip-step", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--torch-timeout", type=float, default=600)
    ap.add_argument("--hold", type=float, default=600)
    ap.add_argument("--out", default=".")
    # before the steps, this many tiny world all-reduces that every rank
    # issues: with P3D_MAX_MB=1 the trace files fill before the hang
    ap.add_argument("--fill-ops", type=int, default=0)
    return ap.parse_args()


def dump(a, rank, issued):
    with open(os.path.join(a.out, f"hang-rank{rank}.json"), "w") as f:
        json.dump({"rank": rank, "world_allreduces": issued,
                   "mode": a.mode, "skip_rank": a.skip_rank,
                   "skip_step": a.skip_step}, f)


def main():
    a = args()
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    os.environ.setdefault("NCCL_HOSTID", "p3dhang%d" % rank)
    ndev = torch.cuda.device_count()
    dev = torch.device("cuda", rank % ndev if ndev > 1 else 0)
    torch.cuda.set_device(dev)
    dist.init_process_group(
        "nccl", device_id=dev,
        timeout=datetime.timedelta(seconds=a.torch_timeout))
    pairs = [dist.new_group([r, r + 1]) for r in range(0, world - 1, 2)]
    tp = pairs[rank // 2]

    w = torch.randn(1024, 1024, device=dev)
    x = torch.randn(1024, 1024, device=dev)
    grad = torch.ones(1 << 18, device=dev)
    small = torch.ones(8, device=dev)
    for i in range(a.fill_ops):
        dist.all_reduce(small)
        if i % 100 == 99:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    issued = 0
    for step in range(a.steps):
        y = x @ w                                   # "forward"
        grad.mul_(0.5).add_(y[0, 0])                # "backward"
        if a.mode == "half" and rank >= world - a.absent and \
                step == a.skip_step:
            print(f"rank {rank}: holding before the world all-reduce of "
                  f"step {step}", flush=True)
            dump(a, rank, issued)
            time.sleep(a.hold)                      # stuck in host code
        if rank == a.skip_rank and step == a.skip_step:
            print(f"rank {rank}: skipping the world all-reduce of step "
                  f"{step}", flush=True)
        else:
            dist.all_reduce(grad)                   # gradient sync
            issued += 1
        torch.cuda.synchronize()                    # host waits (.item())
        if a.mode == "deadlock":
            dist.all_reduce(y, group=tp)            # TP all-reduce
            torch.cuda.synchronize()
        dump(a, rank, issued)
        print(f"rank {rank}: step {step} done", flush=True)
        time.sleep(0.2)
    print(f"rank {rank}: loop finished, {issued} world all-reduces",
          flush=True)
    if rank == a.skip_rank:
        time.sleep(a.hold)                          # stuck in host code
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
