#!/usr/bin/env python3
"""Compare p3d-analyze's step times with Megatron-LM's own iteration timer
(for the GPU machine; not run by run-all.sh).

usage: test_time_megatron_cmp.py MEGATRON_LOG ANALYZE_JSON [TOL]

MEGATRON_LOG holds Megatron's training log lines
  "iteration 3/ 6 | ... | elapsed time per iteration (ms): 4321.5 | ...";
ANALYZE_JSON is `p3d-analyze --json` of the run's traces.  Iterations
are paired from the last one backwards (p3d's iteration k of n is
Megatron's N - n + 1 + k).  Exit 0 when the median over Megatron's steady
iterations (all but the first) is within TOL (default 0.02) of p3d's
median step time, 1 otherwise, 2 on bad input.
"""
import json
import re
import statistics
import sys

PAT = re.compile(r"iteration\s+(\d+)\s*/\s*(\d+).*?elapsed time per "
                 r"iteration \(ms\):\s*([0-9.]+)")


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    tol = float(sys.argv[3]) if len(sys.argv) > 3 else 0.02
    meg = {}
    for line in open(sys.argv[1], errors="replace"):
        m = PAT.search(line)
        if m:
            meg[int(m.group(1))] = float(m.group(3))
    steps = json.load(open(sys.argv[2]))["steps"]
    if not meg or not steps:
        print("no Megatron iterations or no p3d steps")
        return 2
    ours = steps["per_iter_ms"]
    last = max(meg)
    for k, ms in enumerate(ours):
        it = last - len(ours) + 1 + k
        ref = meg.get(it)
        print("iteration %d: p3d %.1f ms, Megatron %s" %
              (it, ms, "%.1f ms (%+.2f%%)" % (ref, 100 * (ms - ref) / ref)
               if ref else "-"))
    steady = [v for k, v in sorted(meg.items()) if k > min(meg)]
    ref = statistics.median(steady)
    got = steps["step_time_ms"]
    err = abs(got - ref) / ref
    print("median: p3d %.1f ms (%d steady), Megatron %.1f ms (%d steady): "
          "%.2f%%" % (got, len(ours) - steps["warmup"], ref, len(steady),
                       100 * err))
    return 0 if err <= tol else 1


if __name__ == "__main__":
    sys.exit(main())
