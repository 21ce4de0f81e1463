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
# The seed row names a straggler when the analysis found one that stands
# out (caused at least 1.5x the waiting of the next, p3d_time_straggler):
# by the figures of this run's JSON, which come from what the fakes did;
# a loaded machine can make a peer cause almost as much.  Unloaded, the
# injected rank causes 100-400x the next, so the row must name it.
seed_row_names() { # job rank
    python3 - "$T/$1.json" "$T/$1.txt" "$2" <<'PY' || {
import json, sys
an, txt, rank = json.load(open(sys.argv[1])), open(sys.argv[2]).read(), \
    int(sys.argv[3])
def find(x):
    if isinstance(x, dict):
        if "stragglers" in x:
            return x["stragglers"]
        for v in x.values():
            r = find(v)
            if r is not None:
                return r
    return None
s = find(an) or []
out = len(s) > 1 and s[0]["caused_ms"] >= 1.5 * s[1]["caused_ms"] or \
    len(s) == 1
named = "straggler rank %d" % rank in txt
if out and (s[0]["rank"] != rank or not named):
    sys.exit("stands out %s, seed row %s" % (s[:2], named))
if not out and "straggler rank " in txt:
    sys.exit("none stands out %s, but the seed row names one" % s[:2])
print("%s: seed row %s (first two %s)" % (sys.argv[1], "names it" if named
      else "names none", [(x["rank"], round(x["caused_ms"])) for x in s[:2]]))
PY
        echo "FAIL $1: the seed row and the stragglers disagree"
        fails=$((fails + 1))
    }
}
seed_row_names dpstrag 3
time_expect ppstrag ppstrag.txt "busiest stage (sets the pace): 2" \
    "stage 2 is not the busiest"
seed_row_names strag5 5
time_done
