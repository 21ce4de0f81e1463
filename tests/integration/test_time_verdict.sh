#!/bin/sh
# NCCL dominance verdict: a communication-bound job (tiny compute, large
# TP and DP messages) must be judged "NCCL dominates" with TP the group
# responsible, a compute-bound one (long kernels, small messages) not.
set -u
. "$P3D_SRC/tests/integration/test_time_lib.inc"
time_run commb --tp 2 --dp 2 -m 4 --fwd-ms 0.05 --bwd-ms 0.1 \
    --opt-ms 0.05 --tp-bytes 2M --dp-bytes 8M &&
    time_check commb verdict=comm steps=0.005
python3 - "$T/commb.json" <<'PY' || fails=$((fails + 1))
import json, sys
v = json.load(open(sys.argv[1]))["verdict"]
if v["group"] != "TP":
    print("FAIL commb: group", v["group"])
    sys.exit(1)
PY
time_run compb --tp 2 --dp 2 -m 4 --fwd-ms 4 --bwd-ms 8 --opt-ms 1 &&
    time_check compb verdict=compute steps=0.005
time_done
