"""Compare p3dtrace's per-size GPU time and busbw with what nccl-tests printed.

  python3 check_nccl_tests.py --test all_reduce --log RANK0_STDOUT \
      --traces TRACE_JOB_DIR --nranks 8 --iters N [--min-bytes 1048576] \
      [--tol 0.05] [--summary FILE]

nccl-tests (src/common.cu TimeTest, BenchTime) first runs `warmup` ops of
every size, then per size: out-of-place one untimed "sync" op and `iters`
timed ops back to back, then the same in-place; with -c 0 no check op
follows.  It prints the wall time per timed op averaged over ranks.  So
of the ops of one count in a rank's trace, the last `iters` are the timed
in-place ones and the `iters` before the op before them the timed
out-of-place ones.  (Seen so on the real binaries, run on the CPU test
doubles of tests/fakes.)

p3dtrace's GPU time of an op is gpu_end - gpu_start of its gpu_op record
(for send/recv, the span of the ops of one ncclGroupStart/End); the mean
over the timed ops of a rank, averaged over ranks, is compared with the
nccl-tests time; busbw = size / time * factor (nccl-tests' factors:
all_reduce 2(n-1)/n, all_gather and reduce_scatter (n-1)/n, sendrecv 1).
Sizes >= --min-bytes must agree within --tol; smaller ones are printed.
Prints one PASS/FAIL line per size and placement; exits 1 on any FAIL.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tools"))

OPS = {"all_reduce": ("AllReduce",), "all_gather": ("AllGather",),
       "reduce_scatter": ("ReduceScatter",), "sendrecv": ("Send", "Recv")}


def bus_factor(test, n):
    if test == "all_reduce":
        return 2.0 * (n - 1) / n
    if test in ("all_gather", "reduce_scatter"):
        return (n - 1.0) / n
    return 1.0


def parse_nccl_tests(text):
    """Rows of the nccl-tests table: dicts size, count, type, oop/ip
    (time_us, algbw, busbw).  Lines not of the table are ignored."""
    rows = []
    for line in text.splitlines():
        tok = line.split()
        if len(tok) < 13 or line.lstrip().startswith("#"):
            continue
        try:
            row = {"size": int(tok[0]), "count": int(tok[1]),
                   "type": tok[2], "redop": tok[3]}
            for i, where in ((5, "oop"), (9, "ip")):
                row[where] = {"time_us": float(tok[i]),
                              "algbw": float(tok[i + 1]),
                              "busbw": float(tok[i + 2])}
        except ValueError:
            continue
        rows.append(row)
    return rows


def instances(records, names):
    """Ordered op instances of the given op names: (count, gpu_ns or None).
    Ops of one NCCL group with the same count form one instance."""
    gpu = {r["op_id"]: r for r in records if r["type"] == "gpu_op"}
    out, by_group = [], {}
    for r in records:
        if r["type"] != "op" or r["op_name"] not in names:
            continue
        g = gpu.get(r["op_id"])
        se = (g["gpu_start"], g["gpu_end"]) if g and g["gpu_end"] else None
        key = (r["group_id"], r["count"]) if (r["flags"] & 1 and
                                              r["group_id"]) else None
        if key is not None and key in by_group:
            inst = by_group[key]
            if se:
                inst[1].append(se)
            continue
        inst = [r["count"], [se] if se else []]
        out.append(inst)
        if key is not None:
            by_group[key] = inst
    res = []
    for count, spans in out:
        if spans:
            s, e = min(a for a, _ in spans), max(b for _, b in spans)
            res.append((count, e - s, s, e))
        else:
            res.append((count, None, None, None))
    return res


def rank_times(insts, count, iters):
    """((oop mean ns, ip mean ns), (oop span ns, ip span ns)) of one rank,
    or None when the trace lacks the timed ops or their GPU times.  The
    span is (last end - first start) / iters: GPU time per op including
    the gaps between the ops."""
    mine = [i for i in insts if i[0] == count]
    if len(mine) < 2 * iters + 2:
        return None
    ip = mine[-iters:]
    oop = mine[-2 * iters - 1:-iters - 1]
    if any(i[1] is None for i in oop + ip):
        return None
    return ((sum(i[1] for i in oop) / iters, sum(i[1] for i in ip) / iters),
            ((oop[-1][3] - oop[0][2]) / iters, (ip[-1][3] - ip[0][2]) / iters))


def compare(test, rows, traces, nranks, iters, min_bytes, tol):
    """PASS/FAIL lines and a failure count."""
    names = OPS[test]
    per_rank = {r: instances(t.records, names) for r, t in traces.items()}
    lines, fails, checked = [], 0, 0
    factor = bus_factor(test, nranks)
    for row in rows:
        got = [rank_times(per_rank[r], row["count"], iters)
               for r in sorted(per_rank)]
        for k, where in enumerate(("oop", "ip")):
            nt = row[where]
            if any(g is None for g in got) or not got:
                ok, txt = False, "trace lacks the %d ops or GPU times" % (
                    2 * iters + 2)
            else:
                us = sum(g[0][k] for g in got) / len(got) / 1e3
                span = sum(g[1][k] for g in got) / len(got) / 1e3
                bus = row["size"] / (us * 1e-6) / 1e9 * factor
                dev = (us - nt["time_us"]) / nt["time_us"]
                big = row["size"] >= min_bytes
                ok = abs(dev) <= tol or not big
                txt = ("p3d %.1f us busbw %.3f GB/s | nccl-tests %.1f us "
                       "busbw %.3f GB/s | diff %+.2f%% | p3d span/op %.1f us"
                       "%s" % (us, bus, nt["time_us"], nt["busbw"],
                               100 * dev, span,
                           "" if big else " (below min size: not checked)"))
            checked += row["size"] >= min_bytes
            fails += not ok
            lines.append("%s nccl %s %d B %s: %s" % (
                "PASS" if ok else "FAIL", test, row["size"], where, txt))
    if checked == 0:
        fails += 1
        lines.append("FAIL nccl %s: no size >= %d B in the nccl-tests output"
                     % (test, min_bytes))
    return lines, fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--test", required=True, choices=sorted(OPS))
    ap.add_argument("--log", required=True)
    ap.add_argument("--traces", required=True)
    ap.add_argument("--nranks", type=int, required=True)
    ap.add_argument("--iters", type=int, required=True)
    ap.add_argument("--min-bytes", type=int, default=1 << 20)
    ap.add_argument("--tol", type=float, default=0.05)
    ap.add_argument("--summary")
    a = ap.parse_args()
    import p3d_trace
    rows = parse_nccl_tests(open(a.log, errors="replace").read())
    traces = {r: t for r, t in
              p3d_trace.read_dir(a.traces, strict=False).items()
              if r is not None and r >= 0}
    if len(traces) != a.nranks:
        lines, fails = ["FAIL nccl %s: %d rank traces in %s, expected %d" % (
            a.test, len(traces), a.traces, a.nranks)], 1
    elif not rows:
        lines, fails = ["FAIL nccl %s: no result rows in %s" % (
            a.test, a.log)], 1
    else:
        lines, fails = compare(a.test, rows, traces, a.nranks, a.iters,
                               a.min_bytes, a.tol)
    for line in lines:
        print(line)
    if a.summary:
        with open(a.summary, "a") as f:
            f.write("\n".join(lines) + "\n")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
