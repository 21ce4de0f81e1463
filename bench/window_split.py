#!/usr/bin/env python3
"""window_split.py - step time inside and outside the kernel windows of one
traced run: what CUPTI's kernel records cost, measured within one process.

Trace a job with short windows (e.g. P3D_GPU_WINDOW=0:5:10: kernel
records 5 s of every 10 s), then

    p3d-analyze --json run.json traces/JOB
    python3 bench/window_split.py run.json

prints, per rank, the median step time of the steady iterations the
analyzer counts as inside a window (compute_ms known) and of the others,
and the difference.  Iterations are interleaved in time, so slow drift of
the machine falls on both sides alike.
"""
import json
import statistics
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: window_split.py ANALYZE.json")
    try:
        j = json.load(open(sys.argv[1]))
    except (OSError, ValueError) as e:
        sys.exit("window_split: %s: %s" % (sys.argv[1], e))
    warm = (j.get("steps") or {}).get("warmup", 0) or 0
    for r in j.get("ranks", []):
        its = (r.get("iters") or [])[warm:]
        on = [i["step_ms"] for i in its if i.get("compute_ms") is not None]
        off = [i["step_ms"] for i in its if i.get("compute_ms") is None]
        if not on or not off:
            print("rank %s: %d iterations in windows, %d outside: need both"
                  % (r.get("rank"), len(on), len(off)))
            continue
        a, b = statistics.median(on), statistics.median(off)
        print("rank %s: kernel records on %.3f ms (%d iterations), off "
              "%.3f ms (%d), on/off %+.2f%%" % (r.get("rank"), a, len(on), b,
                                                len(off), 100 * (a / b - 1)))


if __name__ == "__main__":
    main()
