#!/bin/sh
# A hang stopped before the shim's watchdog timeout, where the victims
# block creating a communicator: PyTorch creates one lazily at a group's
# first use, and NCCL's init blocks until every member joined.  An init
# writes its record only when it returns, so without the SIGTERM scan's
# report of inits in flight (shim/p3d_watchdog.c) the member blocked in
# it read as outside NCCL, like the member that never came, and the
# analyzer named the wrong one (rank 1, the EP group's id maker, where
# rank 5 had hung).  Also the layouts where the group being created is
# one of Megatron's expert grid (p3d_hang_init.c): an EP group of 2 among
# 4 DP ranks, and a folded expert TP group (--etp), whose members the
# dense axes cannot express (they gave an extra root, or a circular wait
# among the healthy ranks).  Stopped when the hang has formed (p3d-sim
# --stop-when-hung waits for that event), with the watchdog's timeout
# far away, so no timeout report is written.
. "$(dirname "$0")/sim_lib.sh"
A="$P3D_BUILD/p3d-analyze"
export P3D_HANG_TIMEOUT=300

# case NAME ARGS...: rank 5 never issues its first EP op; root must be 5
check_root() {
    name=$1; shift
    sim_run "$name" "$@" --hang 5:ep:1 --stop-when-hung > /dev/null
    "$A" --json "$SIM_OUT/$name.json" "$SIM_OUT/$name" \
        > "$SIM_OUT/$name.txt" 2>&1
    python3 - "$SIM_OUT/$name.json" "$name" <<'PY' ||
import json, sys
h = json.load(open(sys.argv[1]))["hang"]
assert h["detected"] and h["root_ranks"] == [5], (sys.argv[2], h["root_ranks"])
inits = [w for w in h["chain"] if w["op"] == "CommInit"]
assert inits and all(5 in w["waiting_for"] for w in inits
                     if w["label"] == "EP"), (sys.argv[2], inits)
PY
        { grep -A3 'hang analysis' "$SIM_OUT/$name.txt"; exit 1; }
}

check_root ep-over-dp --tp 4 --dp 2 --ep 2 -m 2
check_root ep-in-dp --tp 2 --dp 4 --ep 2 -m 2
check_root ep-folded --tp 4 --dp 2 --ep 4 --etp 2 -m 2
# the report of the init at SIGTERM is in the blocked rank's trace
"$A" --dump "$SIM_OUT/ep-over-dp/rank-00001.p3d" | grep -q '^hang .*op=128' ||
    { echo "FAIL: no init report in rank 1's trace"; exit 1; }
echo "init at SIGTERM: root rank 5 named in 3 layouts (EP over DP, inside DP, folded)"
