#!/bin/sh
# Wait states: a rank whose compute is injected 100 % slower must be the
# first straggler (waiting caused to others in its TP group), in a job
# with DP replicas, in one without, in a pipeline without TP groups
# (Late Sender / Late Receiver on the pipeline send/recv), and in a
# data-parallel-only job (waiting caused at the step's collectives).  A loaded
# 2-core CI box delays ranks by milliseconds (rank start-up, wake-ups):
# at load 10 that noise made a peer cause 0.6-1.1x the straggler's waiting
# with 2+4 ms per micro-batch over 2 layers, so the injected delay is 8+16
# ms in one kernel per micro-batch (3-15x the noise; ~0.5 s per job); in
# the pipeline-only job, where 1+2 ms over 2 layers let the noise make
# stage 3 look busier than the slow stage 2, it is 4+8 ms in one kernel.
set -u
. "$P3D_SRC/tests/integration/test_time_lib.inc"
C="-m 4 --fwd-ms 8 --bwd-ms 16 --opt-ms 0.5 --layers 1"
# shellcheck disable=SC2086
time_run strag5 --tp 2 --pp 2 --dp 2 --straggler 5:100 $C &&
    time_check strag5 straggler steps=0.005
# shellcheck disable=SC2086
time_run strag2 --tp 2 --pp 2 --straggler 2:100 $C &&
    time_check strag2 straggler
# pipeline only: ranked by Late Sender / Late Receiver on send/recv, and
# the slow stage is the busiest
# shellcheck disable=SC2086
time_run ppstrag --pp 4 -m 8 --straggler 2:100 --fwd-ms 4 --bwd-ms 8 \
    --layers 1 &&
    time_check ppstrag straggler bubble=0.005
# data parallel only (the seed's experiment A): no layer group and no
# pipeline, so ranked by the waiting caused at the step's collectives
# shellcheck disable=SC2086
time_run dpstrag --dp 4 --straggler 3:100 $C &&
    time_check dpstrag straggler
time_expect dpstrag dpstrag.json '"stragglers_by": "step_collectives"' \
    "stragglers not ranked by the step's collectives"
time_expect dpstrag dpstrag.txt "straggler rank 3" \
    "the seed row does not name the straggler"
time_expect ppstrag ppstrag.txt "busiest stage (sets the pace): 2" \
    "stage 2 is not the busiest"
time_expect strag5 strag5.txt "straggler rank 5" \
    "the seed row does not name the straggler"
time_done
