#!/usr/bin/env python3
"""Compare p3d-analyze's time analysis (--json) of a simulated job with the
simulator's truth.json (helper of tests/integration/test_time_*.sh).

usage: test_time_check.py JOB_DIR ANALYZE_JSON [checks...]
checks: steps[=TOL]  bubble[=FRAC]  straggler  skew[=NS]  verdict=comm|compute
Prints one line per figure; exits 1 when a check fails.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tools"))
import p3d_trace  # noqa: E402


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


def read_rank(job_dir, rank):
    """The rank's trace, by the independent reader."""
    return p3d_trace.read_file("%s/rank-%05d.p3d" % (job_dir, rank))


def pp_calls(trace, truth_rank, offset_ns):
    """The host calls of the rank's pipeline exchanges as the shim
    recorded them, on the truth's clock (the shim's minus the simulated
    host offset): [outermost ncclGroupStart entry, ncclGroupEnd return)
    of each group with an op on the PP communicator, else the op's own
    call.  The PP communicator is the one the rank created as the
    truth's "pp" group (its created_index-th comm record)."""
    idx = [c["created_index"] for c in truth_rank["comms"].values()
           if c["group"] == "pp"]
    comms = sorted(trace.comms(), key=lambda c: c["t_enter"])
    if not idx or idx[0] >= len(comms):
        return []
    pp = comms[idx[0]]["comm_hash"]
    starts, ends, calls = {}, {}, []
    for g in trace.of_type("group"):
        if g["is_end"] and g["depth"] == 0:
            ends[g["group_id"]] = g["t_exit"]
        elif not g["is_end"] and g["depth"] == 1:
            starts[g["group_id"]] = g["t_enter"]
    seen = set()
    for o in trace.ops():
        if o["comm_hash"] != pp:
            continue
        gid = o["group_id"]
        if not gid:
            calls.append((o["t_enter"], o["t_exit"]))
        elif gid not in seen and gid in starts and gid in ends:
            seen.add(gid)
            calls.append((starts[gid], ends[gid]))
    return sorted((a - offset_ns, z - offset_ns) for a, z in calls if z > a)


def call_time(calls, a, z):
    """How long the (ascending) calls cover [a, z), ns."""
    tot, cur = 0, a
    for s, e in calls:
        s, e = max(s, cur), min(e, z)
        if e > s:
            tot += e - s
            cur = e
    return tot


def covered(wins, a, z):
    """Whether windows (disjoint, ascending) cover all of [a, z)."""
    if wins is None:
        return True
    for on, off in wins:
        if on <= a < off:
            if z <= off:
                return True
            a = off
    return False


def counted(truth_step, wins, got_iter, slack_ns=1000000):
    """Whether p3d-analyze counted this rank-iteration for compute and
    bubble (its per-iteration compute figures are not null), after
    checking that decision against the windows: an iteration counts only
    when a window covers it and the iteration before it (step length
    back from its start).  p3d's iteration bounds are its own, within a
    fraction of a millisecond of the truth's, so a decision within
    slack_ns of a window edge may go either way.  Returns (counted,
    error text or None)."""
    s, e = truth_step["start"], truth_step["end"]
    n = e - s
    got = got_iter["pp_wait_ms"] is not None
    surely_in = covered(wins, s - n - slack_ns, e + slack_ns)
    surely_out = not covered(wins, s - n + slack_ns, e - slack_ns)
    if got and surely_out:
        return got, "counted, but no kernel window covers it"
    if not got and surely_in:
        return got, "left out, but a kernel window covers it"
    return got, None


def band_miss(meas, lo, hi):
    """How far meas lies outside [lo, hi] (0 inside)."""
    return lo - meas if meas < lo else meas - hi if meas > hi else 0.0


def check_bubble(truth, got, tol, job_dir, tol_iter=0.02):
    """Measured bubble against the truth of the same rank-iterations:
    time in pipeline send/recv without compute, over the step, as the
    fakes ran it.  Per stage, the sum over the steady rank-iterations p3d
    counted within tol; per stage and steady iteration but the last
    (whose end p3d can only estimate: no op follows it), the same sum
    within tol_iter (one rank-iteration's figure rests on op times that
    a loaded host can shift by its CUDA-event anchor's error; the sums
    average that out).

    The truth is a band, not a point, where the shim's own calls say so:
    a blocking PP call starts at the shim's ncclGroupStart entry and ends
    at its ncclGroupEnd return, the fakes' time inside it, so time the
    host spent in the shim around the fakes (a stalled page fault on the
    trace mapping, a descheduled thread on a loaded machine) is in the
    call as p3d measures it and not in the fakes' figure.  The upper end
    is the larger of the two per rank-iteration: the same as the lower
    one, to the microsecond, on an unloaded machine and for the
    asynchronous fakes (whose calls return at once)."""
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
    gr = {r["rank"]: r for r in got["ranks"]}
    for st in truth["stages"]:
        tot = [0, 0, 0, 0, 0]  # truth wait, step; measured; truth's top
        per, rows = {}, []
        n_all = n_in = 0
        for r in truth["ranks"]:
            if r["stage"] != st["stage"]:
                continue
            tr = read_rank(job_dir, r["rank"])
            wins = tr.kernel_windows(r["clock_offset_ns"])
            calls = pp_calls(tr, r, r["clock_offset_ns"])
            its = gr[r["rank"]]["iters"]
            for it in r["steps"][warm:]:
                k = it["iter"]
                n_all += 1
                inside, err = counted(it, wins, its[k])
                if err:
                    print("  rank %d iteration %d: %s" % (r["rank"], k, err))
                    ok = False
                if not inside:
                    continue
                n_in += 1
                top = max(it["pp_wait_ns"],
                          call_time(calls, it["start"], it["end"]))
                v = (it["pp_wait_ns"], it["end"] - it["start"],
                     its[k]["pp_wait_ms"] * 1e6, its[k]["step_ms"] * 1e6, top)
                rows.append((r["rank"], k, v))
                row = per.setdefault(k, [0, 0, 0, 0, 0])
                for i in range(5):
                    row[i] += v[i]
                    tot[i] += v[i]
        if not per:
            print("  stage %d: no steady iteration inside a kernel window"
                  % st["stage"])
            ok = False
            continue
        last = max(it["iter"] for it in st["per_iter"])
        for k, row in sorted(per.items()):
            want, meas, top = row[0] / row[1], row[2] / row[3], row[4] / row[1]
            if k < last and band_miss(meas, want, top) > tol_iter:
                print("  stage %d iteration %d: measured %.4f vs truth %.4f"
                      "%s" % (st["stage"], k, meas, want, shim_said(top, want)))
                ok = False
        want, top = tot[0] / tot[1], tot[4] / tot[1]
        got_s = b["per_stage"][st["stage"]]["bubble_frac"]
        miss = band_miss(got_s, want, top)
        if miss > tol or not ok:
            print_rows(rows)
        print("  stage %d: measured %.4f vs truth %.4f%s (%.2f points; %d of "
              "%d steady rank-iterations in kernel windows)"
              % (st["stage"], got_s, want, shim_said(top, want), 100 * miss,
                 sum(1 for _ in per) and n_all - sum(
                     1 for r in truth["ranks"] if r["stage"] == st["stage"]
                     for it in r["steps"][warm:]
                     if gr[r["rank"]]["iters"][it["iter"]]["pp_wait_ms"]
                     is None), n_all))
        ok &= miss <= tol
    return ok


def print_rows(rows):
    """Each rank-iteration's figures, ms: what a failure is read from."""
    for rank, k, v in rows:
        print("    rank %d iteration %d: fakes' PP wait %.3f (shim's PP "
              "calls %.3f) of %.3f; measured %.3f of %.3f"
              % (rank, k, v[0] / 1e6, v[4] / 1e6, v[1] / 1e6, v[2] / 1e6,
                 v[3] / 1e6))


def shim_said(top, want):
    """The band's upper end, when the shim's calls widen it."""
    if top - want < 0.0005:
        return ""
    return (" to %.4f (the shim's calls held %.2f points more than the"
            " fakes ran)" % (top, 100 * (top - want)))


def check_straggler(truth, got):
    """The first straggler named is the rank that computed the most, as
    the fakes ran it (steady iterations): the injected one, unless a
    loaded machine slowed another rank more, which the test then says."""
    want = truth["faults"]["straggler"]["rank"]
    warm = got["steps"]["warmup"]
    busy = {r["rank"]: sum(it["busy_ns"] for it in r["steps"][warm:])
            for r in truth["ranks"]}
    top = sorted(busy, key=busy.get, reverse=True)
    s = got["wait"]["stragglers"]
    print("straggler: injected rank %d (computed %.1f ms; most: rank %d "
          "%.1f ms), named first rank %d (%.3f ms caused; next rank %d "
          "%.3f ms)" % (want, busy[want] / 1e6, top[0], busy[top[0]] / 1e6,
                        s[0]["rank"], s[0]["caused_ms"], s[1]["rank"],
                        s[1]["caused_ms"]))
    if top[0] != want:
        print("  note: the fakes ran rank %d longest, not the injected one"
              % top[0])
    return s[0]["rank"] == top[0]


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
            ok &= check_bubble(truth, got, float(arg or 0.005), d)
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
