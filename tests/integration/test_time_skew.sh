#!/bin/sh
# Clock alignment: ranks posing as hosts with clocks off by up to 50 ms
# (P3D_TEST_HOSTNAME / P3D_TEST_CLOCK_OFFSET_NS set by p3d-sim --skew);
# the offsets p3d-analyze estimates from matched collectives and
# send/recv pairs must be within 100 us of the injected ones, step times
# (measured after the correction) within 0.5 % and the bubble within 0.5
# points of the truth.
set -u
. "$P3D_SRC/tests/integration/test_time_lib.inc"
C="-m 4 --fwd-ms 1 --bwd-ms 2 --opt-ms 0.5"
# shellcheck disable=SC2086
time_run skew2 --tp 2 --pp 2 --dp 2 --hosts 2 --skew 4:50000000 $C &&
    time_check skew2 skew=100000 steps=0.005 bubble=0.005
# every rank its own host: 8 hosts, offsets from -50 ms to +50 ms
# shellcheck disable=SC2086
time_run skew8 --iters 4 --tp 2 --pp 2 --dp 2 --hosts 8 \
    --skew 1:50000000 --skew 2:-50000000 --skew 3:7000000 \
    --skew 5:-20000000 --skew 6:33000000 --skew 7:1000 $C &&
    time_check skew8 skew=100000 steps=0.005 bubble=0.005
want="clocks: host simhost-2 is -[0-9.]* ms (+- [0-9.]* ms) off host simhost-0"
grep -q "$want" "$T/skew8.txt" || {
    echo "FAIL skew8: offset not in the text report"
    fails=$((fails + 1))
}
grep -q "clocks: 0 receives complete before their send started" \
    "$T/skew8.txt" || {
    echo "FAIL skew8: receives before sends after the alignment"
    fails=$((fails + 1))
}
time_done
