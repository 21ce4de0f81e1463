#!/bin/sh
# The time analysis degrades: traces recorded with P3D_GPU_TIMING=off have
# no GPU_OP records and no compute spans; the report must say it uses
# host call times and cannot judge overlap or dominance (JSON verdict
# null), and step time and bubble (host-blocking calls of the synchronous
# CPU double) must still match the truth.
set -u
. "$P3D_SRC/tests/integration/test_time_lib.inc"
P3D_GPU_TIMING=off
export P3D_GPU_TIMING
time_run nogpu --tp 2 --pp 2 -m 4 --fwd-ms 1 --bwd-ms 2 --opt-ms 0.5 &&
    time_check nogpu steps=0.005 bubble=0.005
for want in "op times: host call times only" \
            "no compute spans in the traces: overlap and idle cannot" \
            "verdict: cannot tell: the traces have no compute kernel times"; do
    grep -q "$want" "$T/nogpu.txt" || {
        echo "FAIL nogpu: no '$want' in the report"
        fails=$((fails + 1))
    }
done
grep -q '"nccl_dominates": null' "$T/nogpu.json" || {
    echo "FAIL nogpu: JSON verdict is not null"
    fails=$((fails + 1))
}
time_done
