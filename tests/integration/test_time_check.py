#!/usr/bin/env python3
"""Compare p3d-analyze's time analysis (--json) of a simulated job with the
simulator's truth.json (helper of tests/integration/test_time_*.sh).

usage: test_time_check.py JOB_DIR ANALYZE_JSON [checks...]
checks: steps[=TOL]  bubble[=PP]  straggler  skew[=NS]  verdict=comm|compute
Prints one line per figure; exits 1 when a check fails.
"""
import json
import sys


def mean(v):
    return sum(v) / len(v) if v else 0.0


def truth_steps(truth):
    """Mean over ranks of each iteration's step, ns."""
    per = {}
    for r in truth["ranks"]:
        for s in r.get("steps", []):
            per.setdefault(s["iter"], []).append(s["end"] - s["start"])
    return [mean(per[k]) for k in sorted(per)]


def check_steps(truth, got, tol):
    ts = truth_steps(truth)
    gs = got["steps"]["per_iter_ms"]
    warm = got["steps"]["warmup"]
    ok = len(gs) == len(ts)
    print("steps: %d found, truth %d" % (len(gs), len(ts)))
    for k in range(warm, min(len(gs), len(ts))):
        err = abs(gs[k] * 1e6 - ts[k]) / ts[k]
        print("  iteration %d: %.3f ms vs truth %.3f ms (%.2f%%)"
              % (k, gs[k], ts[k] / 1e6, 100 * err))
        ok &= err <= tol
    return ok


def check_bubble(truth, got, tol):
    warm = got["steps"]["warmup"]
    b = got["bubble"]
    ok = b is not None
    if not ok:
        print("bubble: none reported")
        return False
    th = truth["schedule"]["bubble_theory_frac"]
    print("bubble: theory %.4f (truth %.4f), m=%d v=%d"
          % (b["theory_frac"] or 0, th, b["m"], b["v"]))
    ok &= abs((b["theory_frac"] or 0) - th) < 1e-3
    for st in truth["stages"]:
        # the same definition as p3d-analyze's: time in pipeline send/recv
        # over the step, summed over the stage's ranks and the steady
        # iterations (truth's per-iteration fractions are means of ratios)
        wait = step = 0
        for r in truth["ranks"]:
            if r["stage"] != st["stage"]:
                continue
            for it in r["steps"][warm:]:
                wait += it["pp_wait_ns"]
                step += it["end"] - it["start"]
        want = wait / step
        got_s = b["per_stage"][st["stage"]]["bubble_frac"]
        print("  stage %d: measured %.4f vs truth %.4f (%.2f points)"
              % (st["stage"], got_s, want, 100 * abs(got_s - want)))
        ok &= abs(got_s - want) <= tol
        # and every steady iteration but the last (whose end p3d can only
        # estimate: no op follows it) against truth's per-iteration value
        per = b["per_stage"][st["stage"]]["per_iter"]
        for it in st["per_iter"][warm:-1]:
            d = abs(per[it["iter"]] - it["bubble_frac"])
            if d > tol:
                print("  stage %d iteration %d: measured %.4f vs truth %.4f"
                      % (st["stage"], it["iter"], per[it["iter"]],
                         it["bubble_frac"]))
                ok = False
    return ok


def check_straggler(truth, got):
    want = truth["faults"]["straggler"]["rank"]
    s = got["wait"]["stragglers"]
    print("straggler: injected rank %d, named first rank %d (%.3f ms caused;"
          " next rank %d %.3f ms)" % (want, s[0]["rank"], s[0]["caused_ms"],
                                      s[1]["rank"], s[1]["caused_ms"]))
    return s[0]["rank"] == want


def check_skew(truth, got, tol_ns):
    off = {}
    for r in truth["ranks"]:
        off[r["host"]] = r["clock_offset_ns"]
    hosts = got["clock"]["hosts"]
    ref = off[hosts[0]["host"]]
    ok = len(hosts) == len(off)
    for h in hosts:
        want = off[h["host"]] - ref
        err = abs(h["offset_ns"] - want)
        print("clock: %s offset %.3f ms (+- %.3f) vs injected %.3f ms: "
              "error %.1f us" % (h["host"], h["offset_ns"] / 1e6,
                                 h["uncertainty_ns"] / 1e6, want / 1e6,
                                 err / 1e3))
        ok &= err <= tol_ns
    return ok


def check_verdict(got, want):
    v = got["verdict"]
    print("verdict: nccl_dominates=%s (%s)" % (v["nccl_dominates"], v["why"]))
    return v["nccl_dominates"] == (want == "comm")


def main():
    d, js = sys.argv[1:3]
    truth = json.load(open(d + "/truth.json"))
    got = json.load(open(js))
    ok = True
    for c in sys.argv[3:]:
        name, _, arg = c.partition("=")
        if name == "steps":
            ok &= check_steps(truth, got, float(arg or 0.01))
        elif name == "bubble":
            ok &= check_bubble(truth, got, float(arg or 0.02))
        elif name == "straggler":
            ok &= check_straggler(truth, got)
        elif name == "skew":
            ok &= check_skew(truth, got, float(arg or 100000))
        elif name == "verdict":
            ok &= check_verdict(got, arg)
        else:
            print("unknown check " + c)
            ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
