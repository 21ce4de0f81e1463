#!/usr/bin/env python3
"""sim_check.py - compares a simulated job's traces with its truth.json.

Why: the simulator knows exactly what every rank did; this checks that the
shim recorded it (read with the independent p3d_trace.py reader):
  - one trace per rank, header rank/world size/job id/host as launched;
  - communicators: each trace comm maps to exactly one truth group (by
    creation order), the same commHash on every member, members, nranks,
    comm rank as the truth says;
  - per rank per communicator the op counts and bytes by kind (a rank that
    did not finish may lack the records of the ops it was blocked in);
  - sequence numbers: collectives 0..n-1 per comm, p2p 0..k-1 per
    (comm, peer, direction), and members agree on op/count/dtype per seq
    (except where a mismatch was injected, which must show);
  - faults: the hung rank never issued op N of its group, the killed rank's
    truncated file is readable and holds exactly the ops before op N, skew
    shows as the host clock offset.
Usage: sim_check.py JOBDIR [-v].  Exit 0 ok, 1 mismatch, 77 if the shim
does not honour the P3D_TEST_* hooks a skew run needs.
"""
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import p3d_trace  # noqa: E402

ERRORS = []
VERBOSE = False


def err(msg):
    ERRORS.append(msg)


def info(msg):
    if VERBOSE:
        print(msg)


def check_headers(truth, traces):
    for r in truth["ranks"]:
        rank = r["rank"]
        if rank not in traces:
            err(f"rank {rank}: no trace file")
            continue
        h = traces[rank].header
        if h["world_size"] != truth["world_size"]:
            err(f"rank {rank}: world_size {h['world_size']}")
        if h["job_id"] != truth["job_id"]:
            err(f"rank {rank}: job_id {h['job_id']!r} != {truth['job_id']!r}")
        if r["exit"].get("code") == 0 and not traces[rank].closed:
            err(f"rank {rank}: exited cleanly but file not closed")


def map_comms(truth, traces):
    """commHash -> group id, from each rank's creation order."""
    h2g, g2h = {}, collections.defaultdict(set)
    groups = {g["id"]: g for g in truth["groups"]}
    for r in truth["ranks"]:
        rank = r["rank"]
        if rank not in traces or not r.get("truth"):
            continue
        want = sorted(((c["created_index"], gid, c)
                       for gid, c in r["comms"].items()
                       if c["created_index"] >= 0), key=lambda x: x[0])
        got = sorted(traces[rank].comms(), key=lambda c: c["t_enter"])
        if len(got) != len(want):
            err(f"rank {rank}: {len(got)} comms in trace, truth "
                f"{len(want)}")
            continue
        for (_, gid, tc), rec in zip(want, got):
            hsh = rec["comm_hash"]
            if h2g.setdefault(hsh, gid) != gid:
                err(f"rank {rank}: comm {hsh:#x} is {gid} here, "
                    f"{h2g[hsh]} elsewhere")
            g2h[gid].add(hsh)
            if rec["nranks"] != groups[gid]["size"]:
                err(f"rank {rank}: {gid} nranks {rec['nranks']}")
            if rec["rank"] != tc["comm_rank"]:
                err(f"rank {rank}: {gid} comm rank {rec['rank']} != "
                    f"{tc['comm_rank']}")
    for gid, hs in g2h.items():
        if len(hs) != 1:
            err(f"{gid}: {len(hs)} different comm hashes across members")
    members = collections.defaultdict(set)
    for rank, t in traces.items():
        for c in t.comms():
            members[c["comm_hash"]].add(rank)
    for hsh, gid in h2g.items():
        want = set(groups[gid]["members"])
        if not members[hsh] <= want:
            err(f"{gid}: trace members {sorted(members[hsh])} not in "
                f"{sorted(want)}")
    info(f"comms: {len(h2g)} communicators mapped to truth groups")
    return h2g


def check_counts(truth, traces, h2g):
    for r in truth["ranks"]:
        rank = r["rank"]
        if rank not in traces or not r.get("truth"):
            continue
        got = collections.defaultdict(lambda: [0, 0])
        for o in traces[rank].ops():
            gid = h2g.get(o["comm_hash"], f"?{o['comm_hash']:#x}")
            got[(gid, o["op_name"])][0] += 1
            got[(gid, o["op_name"])][1] += o["bytes"]
        done = r["finished"]
        for gid, c in r["comms"].items():
            for kind, v in c["ops"].items():
                n, b = got.pop((gid, kind), [0, 0])
                fly = c["in_flight"].get(kind, 0) if not done else 0
                if not (v["count"] - fly <= n <= v["count"]):
                    err(f"rank {rank}: {gid} {kind}: {n} ops in trace, "
                        f"truth {v['count']} (in flight {fly})")
                elif n == v["count"] and b != v["bytes"]:
                    err(f"rank {rank}: {gid} {kind}: {b} bytes, truth "
                        f"{v['bytes']}")
        for (gid, kind), (n, _) in got.items():
            err(f"rank {rank}: {n} {kind} ops on {gid} not in truth")
    info("counts: op counts and bytes per rank and communicator agree")


def check_seqs(truth, traces, h2g):
    """Contiguous seqs; members agree per collective instance."""
    mism = {r["rank"]: r.get("mismatch_op") for r in truth["ranks"]}
    inst = collections.defaultdict(dict)     # (hash, seq) -> rank -> op
    p2p = collections.defaultdict(dict)      # (hash, src, dst, seq)
    bad_seen = set()
    for rank, t in traces.items():
        colls = collections.defaultdict(list)
        pts = collections.defaultdict(list)
        for i, o in enumerate(t.ops()):
            o["index"] = i + 1
            if o["op_name"] in ("Send", "Recv"):
                pts[(o["comm_hash"], o["op_name"], o["peer"])].append(o)
            else:
                colls[o["comm_hash"]].append(o)
        for hsh, ops in colls.items():
            seqs = [o["seq"] for o in ops]
            if seqs != list(range(len(seqs))):
                err(f"rank {rank}: {h2g.get(hsh)} collective seqs "
                    f"{seqs[:8]}... not 0..n-1")
            for o in ops:
                inst[(hsh, o["seq"])][rank] = o
        for (hsh, name, peer), ops in pts.items():
            seqs = [o["seq"] for o in ops]
            if seqs != list(range(len(seqs))):
                err(f"rank {rank}: {h2g.get(hsh)} {name} peer {peer} seqs "
                    f"not 0..n-1")
            for o in ops:
                me = o["comm_rank"]
                key = (hsh, me, peer) if name == "Send" else (hsh, peer, me)
                p2p[key + (o["seq"],)][name] = (rank, o)
    for (hsh, seq), by in inst.items():
        sig = {r: (o["op"], o["count"], o["dtype"], o["redop"], o["peer"])
               for r, o in by.items()}
        if len(set(sig.values())) > 1:
            odd = [r for r, o in by.items() if mism.get(r) == o["index"]]
            if odd:
                bad_seen.update(odd)
            else:
                err(f"{h2g.get(hsh)} seq {seq}: members disagree {sig}")
    for key, d in p2p.items():
        if "Send" in d and "Recv" in d:
            s, rv = d["Send"][1], d["Recv"][1]
            if (s["count"], s["dtype"]) != (rv["count"], rv["dtype"]):
                if mism.get(d["Send"][0]) != s["index"] and \
                   mism.get(d["Recv"][0]) != rv["index"]:
                    err(f"{h2g.get(key[0])} p2p {key}: send/recv disagree")
                else:
                    bad_seen.add(d["Send"][0])
    for rank, idx in mism.items():
        if idx and rank not in bad_seen:
            err(f"rank {rank}: injected mismatch at op {idx} not visible")
    info(f"seqs: {len(inst)} collective instances consistent")


def check_faults(truth, traces, h2g):
    f = truth["faults"]
    ranks = {r["rank"]: r for r in truth["ranks"]}
    if f["hang"]:
        h = f["hang"]
        r = ranks[h["rank"]]
        st = r.get("stopped") or {}
        if st.get("kind") != "hang":
            err(f"hang: rank {h['rank']} did not stop")
        else:
            hsh = [k for k, v in h2g.items() if v == h["group_id"]]
            n = sum(1 for o in traces[h["rank"]].ops()
                    if hsh and o["comm_hash"] == hsh[0])
            if n != st["issued_on_group"] or n >= h["n"]:
                err(f"hang: rank {h['rank']} has {n} ops on "
                    f"{h['group_id']}, truth {st['issued_on_group']}, "
                    f"hang before op {h['n']}")
            info(f"hang: rank {h['rank']} stopped after {n} ops on "
                 f"{h['group_id']}")
            if truth["schedule"].get("async_streams") and hsh:
                check_hang_async(truth, traces, h, hsh[0], n)
    if f["kill"]:
        k = f["kill"]
        t = traces.get(k["rank"])
        if t is None:
            err(f"kill: no trace of rank {k['rank']}")
        else:
            if t.closed:
                err(f"kill: rank {k['rank']} file claims a clean close")
            if len(t.ops()) != k["n"] - 1:
                err(f"kill: rank {k['rank']} has {len(t.ops())} ops, "
                    f"expected {k['n'] - 1}")
            info(f"kill: rank {k['rank']} file readable, {len(t.ops())} "
                 f"ops, warnings {t.warnings[:2]}")
    return check_hosts(truth, traces)


def check_hang_async(truth, traces, h, hsh, n):
    """Async streams: a peer enqueued the op the hung rank never issued,
    and it never completed on the GPU."""
    members = [g for g in truth["groups"] if g["id"] == h["group_id"]][0]
    ahead = []
    for r in members["members"]:
        if r == h["rank"] or r not in traces:
            continue
        ops = [o for o in traces[r].ops() if o["comm_hash"] == hsh]
        gpu = {g["op_id"]: g for g in traces[r].of_type("gpu_op")}
        if len(ops) > n:
            done = gpu.get(ops[-1]["op_id"], {}).get("gpu_end", 0)
            ahead.append((r, len(ops), done))
    if not ahead:
        err(f"hang: no member of {h['group_id']} enqueued past op {n}")
    elif any(d for _, _, d in ahead):
        err(f"hang: a peer's blocked op has a GPU end: {ahead}")
    info(f"hang: peers enqueued past the hung rank: {ahead}")


def check_hosts(truth, traces):
    """Skew runs: hostname and clock offset as the P3D_TEST_* hooks say."""
    if truth["layout"] and not any(r["host"] for r in truth["ranks"]):
        return 0
    for r in truth["ranks"]:
        t = traces.get(r["rank"])
        if t is None or not r.get("steps"):
            continue
        if t.header["hostname"] != r["host"]:
            print(f"sim_check: shim ignores P3D_TEST_HOSTNAME (rank "
                  f"{r['rank']} host {t.header['hostname']!r})")
            return 77
        ops = t.ops()
        if not ops:
            continue
        lo = r["steps"][0]["start"] + r["clock_offset_ns"]
        hi = r["steps"][-1]["end"] + r["clock_offset_ns"]
        mid = ops[len(ops) // 2]["t_enter"]
        if not lo - 10**9 <= mid <= hi + 10**9:
            print(f"sim_check: shim ignores P3D_TEST_CLOCK_OFFSET_NS (rank "
                  f"{r['rank']}: op at {mid}, steps {lo}..{hi})")
            return 77
    info("hosts: hostnames and clock offsets as injected")
    return 0


def main(argv):
    global VERBOSE
    VERBOSE = "-v" in argv
    args = [a for a in argv if a != "-v"]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    with open(os.path.join(args[0], "truth.json")) as fh:
        truth = json.load(fh)
    traces = p3d_trace.read_dir(args[0])
    check_headers(truth, traces)
    h2g = map_comms(truth, traces)
    check_counts(truth, traces, h2g)
    check_seqs(truth, traces, h2g)
    rc = check_faults(truth, traces, h2g)
    for e in ERRORS[:30]:
        print(f"sim_check: {e}")
    if ERRORS:
        print(f"sim_check: {len(ERRORS)} problems in {args[0]}")
        return 1
    if rc == 0:
        print(f"sim_check: {args[0]}: {len(traces)} traces agree with "
              f"truth.json")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
