#!/bin/sh
# Layout and labels with no command line, for plain PyTorch data
# parallelism as its code issues it (p3d-sim --framework, rank_torch.c):
# DDP's bucket all-reduces and FSDP2's all-gathers and reduce-scatters on
# the world group are DP (dp = world, the world communicator used as a DP
# group), never tp = world or cp = world, and Megatron's DP-only job
# (distributed optimizer: fp32 reduce-scatter, bf16 all-gather) likewise.
# The usage rules and their sources: analyzer/p3d_usage.c.
set -u
. "$(dirname "$0")/sim_lib.sh"
A=$P3D_BUILD/p3d-analyze
fail=0
check() { # check JOB WORLD
    "$A" -q --json "$SIM_OUT/$1.json" "$SIM_OUT/$1" > /dev/null 2>&1 || {
        echo "FAIL $1: p3d-analyze failed"; fail=1; return; }
    python3 - "$SIM_OUT/$1.json" "$2" "$1" <<'PY' || fail=1
import json, sys
j = json.load(open(sys.argv[1]))
w, name = int(sys.argv[2]), sys.argv[3]
l = j["layout"]
got = (l["tp"], l["cp"], l["pp"], l["dp"])
ok = got == (1, 1, 1, w) and l["confidence"] != "certain"
world = [c for c in j["communicators"] if c["size"] == w]
dp = [c for c in world if c["used_as"] in ("DP", "DP-CP")]
# torch's jobs have the one; Megatron's also its WORLD and grad-norm comms
ok &= len(dp) == 1 and (name.startswith("m") or len(world) == 1)
print("%s: tp=%d cp=%d pp=%d dp=%d (%s), world comm used as %s"
      % ((name,) + got + (l["confidence"], [c["used_as"] for c in world])))
if not ok:
    print("FAIL %s" % name)
sys.exit(0 if ok else 1)
PY
}
for w in 8 4; do
    sim_run ddp$w --framework ddp --dp $w -m 2 --iters 4 --layers 4
    sim_run fsdp$w --framework fsdp --dp $w -m 2 --iters 3 --layers 4
    check ddp$w $w
    check fsdp$w $w
done
sim_run mdp8 --dp 8 -m 2 --iters 3
check mdp8 8
[ $fail -eq 0 ] && echo "ok: DDP, FSDP and Megatron DP-only jobs are DP"
exit $fail
