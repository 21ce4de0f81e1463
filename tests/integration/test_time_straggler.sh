#!/bin/sh
# Wait states: a rank whose compute is injected 100 % slower must be the
# first straggler (waiting caused to others in its TP group), in a job
# with DP replicas, in one without, and in a pipeline without TP groups
# (Late Sender / Late Receiver on the pipeline send/recv).  A 2-core CI
# box preempts ranks for milliseconds, so the injected delay is kept well
# above that.
set -u
. "$P3D_SRC/tests/integration/test_time_lib.inc"
C="-m 4 --fwd-ms 2 --bwd-ms 4 --opt-ms 0.5"
# shellcheck disable=SC2086
time_run strag5 --tp 2 --pp 2 --dp 2 --straggler 5:100 $C &&
    time_check strag5 straggler steps=0.01
# shellcheck disable=SC2086
time_run strag2 --tp 2 --pp 2 --straggler 2:100 $C &&
    time_check strag2 straggler
# pipeline only: ranked by Late Sender / Late Receiver on send/recv, and
# the slow stage is the busiest
# shellcheck disable=SC2086
time_run ppstrag --pp 4 -m 8 --straggler 2:100 --fwd-ms 1 --bwd-ms 2 &&
    time_check ppstrag straggler bubble=0.02
grep -q "busiest stage (sets the pace): 2" "$T/ppstrag.txt" || {
    echo "FAIL ppstrag: stage 2 is not the busiest"
    fails=$((fails + 1))
}
grep -q "straggler rank 5" "$T/strag5.txt" || {
    echo "FAIL strag5: the seed row does not name the straggler"
    fails=$((fails + 1))
}
time_done
