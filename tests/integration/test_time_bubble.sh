#!/bin/sh
# Step time and pipeline bubble against the simulator's truth: PP = 2 and
# 4 with m = 4, 8, 16 and an interleaved schedule (--vpp 2): every steady
# iteration's step within 1 %, every stage's bubble fraction within 2
# points of the true time in pipeline send/recv, theory (p-1)/(m+p-1)/v
# with m and v read from the schedule.
set -u
. "$P3D_SRC/tests/integration/test_time_lib.inc"
C="--fwd-ms 1 --bwd-ms 2 --opt-ms 0.5"
for cfg in "pp2m4:--pp 2 --dp 2 -m 4" "pp2m8:--pp 2 -m 8" \
           "pp2m16:--pp 2 -m 16" "pp4m4:--pp 4 -m 4" "pp4m8:--pp 4 -m 8" \
           "pp4m16:--pp 4 -m 16" "vpp:--pp 4 -m 8 --vpp 2"; do
    n=${cfg%%:*}
    # shellcheck disable=SC2086
    time_run "$n" ${cfg#*:} $C && time_check "$n" steps=0.01 bubble=0.02
done
grep -q "pipeline bubble: p=4 m=8 v=2 (m from the schedule)" "$T/vpp.txt" || {
    echo "FAIL vpp: m/v not read from the schedule"
    fails=$((fails + 1))
}
grep -q "^| pp4m8 | 1 | 4 | 1 | 1 | 8 |" "$T/pp4m8.txt" || {
    echo "FAIL pp4m8: no seed table row"
    fails=$((fails + 1))
}
time_done
