"""Check p3d-analyze's view of a Megatron-LM run against Megatron itself.

  python3 check_megatron.py --tp T --pp P --dp D --nmb M \
      --json REPORT_JSON --log TRACED_LOG [--plain-log UNTRACED_LOG] \
      [--tol-step 0.02] [--tol-mem 0.02] [--summary FILE]

Checks, one PASS/FAIL line each (exit 1 on any FAIL):
  layout    the inferred TP/PP/DP equal the run's
  labels    every communicator's label and used_as is one Megatron's groups
            allow for its member set (computed here independently from the
            layout, Megatron's default order tp-cp-ep-dp-pp:
            rank = tp + T*(dp + D*pp)); every TP, DP, PP group of the layout
            was seen; the world-sized communicators are listed
  step      steps.step_time_ms within --tol-step of the median of
            Megatron's iteration period over the same steady iterations
            (the analyzer's last count-warmup iterations): the difference
            of the timestamps of consecutive "iteration N/M" log lines.
            Megatron's "elapsed time per iteration" is printed beside; it
            leaves out the barrier its interval timer takes before
            restarting (megatron/core/timers.py, Timer.elapsed), ~60 ms
            per iteration over sockets, so it is not the reference
  memory    each rank's peak_mem_bytes against the last "max reserved"
            Megatron logged for it (DP-rank-0 ranks log it): not below it,
            at most --tol-mem above
  microbatches  steps.micro_batches == --nmb
  bubble    for P > 1: reported, with the 1F1B theory (P-1)/(M+P-1) beside
  loss      the lm loss of every iteration equal (as printed) with and
            without the shim
"""
import argparse
import datetime
import json
import re
import sys

AX = ("tp", "cp", "dp", "pp", "ep")
FAMILIES = {"TP": {"tp"}, "CP": {"cp"}, "DP": {"dp"}, "PP": {"pp"},
            "EP": {"ep"}, "DP-CP": {"dp", "cp"}, "TP-CP": {"tp", "cp"},
            "MP": {"tp", "pp"}, "EXPERT-DP": {"dp", "cp"},
            "TP-DP-CP": {"tp", "dp", "cp"}, "WORLD": set(AX)}


def coords(rank, tp, dp):
    return {"tp": rank % tp, "cp": 0, "ep": 0, "dp": (rank // tp) % dp,
            "pp": rank // (tp * dp)}


def full_group(members, sizes, tp, dp):
    """The axes a member set spans when it is a complete Megatron group
    (all ranks sharing the other coordinates), else None."""
    cs = [coords(r, tp, dp) for r in members]
    vary = {a for a in AX if len({c[a] for c in cs}) > 1}
    n = 1
    for a in vary:
        n *= sizes[a]
    if n != len(set(members)):
        return None
    return vary


def valid_labels(members, tp, pp, dp):
    """Labels Megatron's groups allow for this member set."""
    sizes = {"tp": tp, "cp": 1, "dp": dp, "pp": pp, "ep": 1}
    nontrivial = {a for a in AX if sizes[a] > 1}
    ok = set()
    vary = full_group(members, sizes, tp, dp)
    if vary is not None:
        ok |= {l for l, f in FAMILIES.items() if f & nontrivial == vary}
    cs = [coords(r, tp, dp) for r in members]
    same_rest = all(c["tp"] == cs[0]["tp"] and c["dp"] == cs[0]["dp"]
                    for c in cs)
    stages = sorted(c["pp"] for c in cs)
    if same_rest and stages == sorted({0, pp - 1}):
        ok.add("EMB")
    if same_rest and stages == [0]:
        ok.add("POS-EMB")
    if same_rest and len(cs) == 2 and (stages[1] - stages[0] == 1 or
                                       stages == [0, pp - 1]):
        ok.add("P2P")
    return ok or {"OTHER"}


def check_labels(rep, tp, pp, dp):
    out = []
    world = tp * pp * dp
    lay = rep.get("layout") or {}
    got = (lay.get("tp"), lay.get("pp"), lay.get("dp"), lay.get("cp"))
    out.append((got == (tp, pp, dp, 1), "layout: inferred tp/pp/dp/cp %s, "
                "run %s" % ("/".join(map(str, got)), "%d/%d/%d/1" % (
                    tp, pp, dp))))
    bad, seen, worlds = [], {}, []
    comms = rep.get("communicators") or []
    for c in comms:
        m = sorted(c.get("members") or [])
        if c.get("missing_members"):
            continue
        ok = valid_labels(m, tp, pp, dp)
        if c.get("label") not in ok or c.get("used_as") not in ok:
            bad.append("%s members %s label %s used_as %s (allowed %s)" % (
                c.get("id"), m, c.get("label"), c.get("used_as"),
                ",".join(sorted(ok))))
        for fam in ("TP", "DP", "PP"):
            if fam in ok:
                seen.setdefault(fam, set()).add(tuple(m))
        if len(m) == world:
            worlds.append("%s/%s ops %s" % (c.get("label"), c.get("used_as"),
                                             c.get("ops")))
    out.append((not bad and bool(comms), "labels: %d communicators, %d not as "
                "Megatron's groups%s" % (len(comms), len(bad),
                                         "".join("; " + b for b in bad[:4]))))
    for fam, size in (("TP", tp), ("DP", dp), ("PP", pp)):
        if size < 2:
            continue
        n = len(seen.get(fam, ()))
        out.append((n == world // size, "labels: %s groups seen %d of %d "
                    "(size %d)" % (fam, n, world // size, size)))
    out.append((len(worlds) > 0, "labels: world-sized communicators "
                "(WORLD, grad norm): %d [%s]" % (len(worlds),
                                                  "; ".join(worlds))))
    return out


ITER_RE = re.compile(r"iteration\s+(\d+)/\s*(\d+)\s*\|")
STAMP_RE = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)\]\s*"
                      r"iteration")
ELAPSED_RE = re.compile(r"elapsed time per iteration \(ms\):\s*([0-9.]+)")
LOSS_RE = re.compile(r"lm loss:\s*([0-9.Ee+-]+)")
GNORM_RE = re.compile(r"grad norm:\s*([0-9.Ee+-]+)")
MEM_RE = re.compile(r"\[Rank (\d+)\] \(after (\d+) iterations\) memory "
                    r"\(MB\).*\| max reserved:\s*([0-9.]+)")


def parse_log(text):
    """{iter: {"ms", "loss", "gnorm"}}, {rank: last max reserved MB}."""
    iters, mem = {}, {}
    for line in text.splitlines():
        m = ITER_RE.search(line)
        e = ELAPSED_RE.search(line)
        if m and e:
            d = iters.setdefault(int(m.group(1)), {})
            d["ms"] = float(e.group(1))
            ts = STAMP_RE.search(line)
            d["stamp"] = datetime.datetime.fromisoformat(ts.group(1)) \
                if ts else None
            lo, gn = LOSS_RE.search(line), GNORM_RE.search(line)
            d["loss"] = lo.group(1) if lo else None
            d["gnorm"] = gn.group(1) if gn else None
        m = MEM_RE.search(line)
        if m:
            mem[int(m.group(1))] = float(m.group(3))
    return iters, mem


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def wall_periods(iters):
    """Megatron's iteration periods from its log timestamps: {iter: ms}
    for every iteration whose line and the previous one are stamped."""
    out = {}
    for i in sorted(iters):
        a, b = iters.get(i - 1, {}).get("stamp"), iters[i].get("stamp")
        if a and b:
            out[i] = (b - a).total_seconds() * 1000
    return out


def steady_period_ms(iters):
    """Median log period from iteration 3 on (the period of iteration 2
    still carries warm-up), None if fewer than 2 such periods."""
    w = wall_periods(iters)
    d = [w[i] for i in sorted(w)][1:]
    return median(d) if len(d) >= 2 else None


def check_step(rep, iters, tol):
    st = rep.get("steps") or {}
    per = st.get("per_iter_ms") or []
    k = len(per) - (st.get("warmup") or 0)
    ms = [iters[i]["ms"] for i in sorted(iters)]
    wall = wall_periods(iters)
    wl = [wall[i] for i in sorted(wall)]
    if st.get("step_time_ms") is None or k < 1 or len(wl) < 1 or \
            min(wl) <= 0:
        return [(False, "step: analyzer step_time_ms %s, %d iterations; "
                 "Megatron logged %d (%d periods from increasing timestamps)" % (
                     st.get("step_time_ms"), len(per), len(ms), len(wl)))]
    ref = median(wl[-k:])
    ela = median(ms[-k:])
    p3d = st["step_time_ms"]
    dev = (p3d - ref) / ref
    return [(abs(dev) <= tol, "step: p3d %.1f ms (median of %d of %d "
             "iterations) | Megatron log period %.1f ms (median of its "
             "last %d of %d) | diff %+.2f%% | Megatron 'elapsed time per "
             "iteration' %.1f ms (%+.2f%%; all: %s)" % (
                 p3d, k, len(per), ref, min(k, len(wl)), len(wl),
                 100 * dev, ela, 100 * (p3d - ela) / ela,
                 " ".join("%.0f" % x for x in ms)))]


def check_memory(rep, mem, tol):
    peaks = {r["rank"]: r.get("peak_mem_bytes") for r in rep.get("ranks", [])}
    if not mem:
        return [(False, "memory: no 'max reserved' line in Megatron's log")]
    out, worst = [], []
    for rank in sorted(mem):
        meg = mem[rank] * 2**20
        p = peaks.get(rank)
        ok = p is not None and p >= meg - 0.01 * 2**20 and \
            p <= meg * (1 + tol)
        worst.append((ok, "rank %d p3d %s B Megatron %.2f MB (%s)" % (
            rank, p, mem[rank], "%+.3f%%" % (100 * (p - meg) / meg)
            if p is not None else "n/a")))
    bad = [t for ok, t in worst if not ok]
    out.append((not bad, "memory: peak vs Megatron max reserved, %d ranks: "
                "%s" % (len(worst), "; ".join(bad or [t for _, t in worst]))))
    return out


def check_mb_bubble(rep, pp, nmb):
    st = rep.get("steps") or {}
    out = [(st.get("micro_batches") == nmb, "microbatches: p3d %s, run %d" % (
        st.get("micro_batches"), nmb))]
    if pp > 1:
        b = rep.get("bubble") or {}
        theory = (pp - 1.0) / (nmb + pp - 1)
        alt = (pp - 1.0) / nmb
        th = b.get("theory_frac")
        ok = b.get("measured_frac") is not None and th is not None and \
            min(abs(th - theory), abs(th - alt)) < 1e-3
        out.append((ok, "bubble: measured %s, analyzer theory %s, 1F1B "
                    "theory (p-1)/(m+p-1) = %.4f ((p-1)/m = %.4f), m %s "
                    "from %s" % (b.get("measured_frac"), th, theory, alt,
                                 b.get("m"), b.get("m_source"))))
    return out


def overhead_info(iters, plain):
    """Megatron's step period traced vs untraced (runs one after the other
    with MG_PAR=0): the shim's overhead as Megatron's log shows it."""
    ma, mb = steady_period_ms(iters), steady_period_ms(plain)
    if ma is None or mb is None:
        return "overhead: n/a (too few iterations logged)"
    return "overhead: Megatron log period traced %.1f ms, untraced %.1f " \
        "ms (medians from iteration 3) %+.2f%%" % (ma, mb,
                                                    100 * (ma / mb - 1))


def check_loss(iters, plain, n_iters):
    a = [(i, iters[i]["loss"]) for i in sorted(iters)]
    b = [(i, plain[i]["loss"]) for i in sorted(plain)]
    ok = a == b and len(a) == n_iters and all(x for _, x in a)
    diff = [(i, x, y) for (i, x), (_, y) in zip(a, b) if x != y]
    return [(ok, "loss: %d iterations traced, %d untraced, %d differ; "
             "traced %s%s" % (len(a), len(b), len(diff),
                              " ".join(x or "?" for _, x in a),
                              "".join("; iter %d traced %s untraced %s" % d
                                      for d in diff[:3])))]


def print_period(log):
    """check_megatron.py --period LOG: the steady log period alone (ms),
    for the overhead bench (bench/gpu_overhead.sh)."""
    ms = steady_period_ms(parse_log(open(log, errors="replace").read())[0])
    print("nan" if ms is None else "%.1f" % ms)
    return 0


def main():
    if sys.argv[1:2] == ["--period"] and len(sys.argv) == 3:
        return print_period(sys.argv[2])
    ap = argparse.ArgumentParser()
    for k in ("tp", "pp", "dp", "nmb"):
        ap.add_argument("--" + k, type=int, required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--plain-log")
    ap.add_argument("--iters", type=int, default=0)
    ap.add_argument("--tol-step", type=float, default=0.02)
    ap.add_argument("--tol-mem", type=float, default=0.02)
    ap.add_argument("--name", default="")
    ap.add_argument("--summary")
    a = ap.parse_args()
    rep = json.load(open(a.json))
    iters, mem = parse_log(open(a.log, errors="replace").read())
    res = check_labels(rep, a.tp, a.pp, a.dp)
    res += check_step(rep, iters, a.tol_step)
    res += check_memory(rep, mem, a.tol_mem)
    res += check_mb_bubble(rep, a.pp, a.nmb)
    if a.plain_log:
        plain, _ = parse_log(open(a.plain_log, errors="replace").read())
        res += check_loss(iters, plain, a.iters or len(iters))
    name = a.name or "%d/%d/%d" % (a.tp, a.pp, a.dp)
    lines = ["%s megatron %s %s" % ("PASS" if ok else "FAIL", name, t)
             for ok, t in res]
    if a.plain_log:
        lines.append("INFO megatron %s %s" % (name, overhead_info(iters,
                                                                  plain)))
    print("\n".join(lines))
    if a.summary:
        with open(a.summary, "a") as f:
            f.write("\n".join(lines) + "\n")
    return 0 if all(ok for ok, _ in res) else 1


if __name__ == "__main__":
    sys.exit(main())
