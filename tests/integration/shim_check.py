#!/usr/bin/env python3
"""shim_check.py - assertions of the shim's integration tests.

Reads the traces with tests/tools/p3d_trace.py (an independent reader)
and checks what the shim recorded against what shim_drvlib.c did.
Usage: shim_check.py CHECK TRACE_DIR [ARGS...]; exit 0 = pass, 1 = fail
(with the reason on stderr).  NCCL's getHash is reimplemented here from
NCCL's bitops.h, independently of shim/p3d_commhash.c.
"""
import os
import sys

sys.path.insert(0, os.environ.get(
    "P3D_TRACE_PY_DIR",
    os.path.join(os.environ.get("P3D_SRC", "."), "tests", "tools")))
import p3d_trace  # noqa: E402

M64 = (1 << 64) - 1


def eat(acc, data):
    acc[0] ^= len(data)
    for i in range(0, len(data), 8):
        acc[0] = (acc[0] + acc[1]) & M64
        acc[1] ^= acc[0]
        acc[0] ^= acc[0] >> 31
        acc[0] = (acc[0] * 0x9de62bbc8cef3ce3) & M64
        acc[1] ^= acc[1] >> 32
        acc[1] = (acc[1] * 0x485cd6311b599e79) & M64
        acc[0] = (acc[0] + int.from_bytes(data[i:i + 8], "little")) & M64


def digest(acc):
    h = acc[0]
    h ^= h >> 31
    h = (h * 0xbac3bd562846de6b) & M64
    h = (h + acc[1]) & M64
    h ^= h >> 32
    return (h * 0x995a187a14e7b445) & M64


def root_hash(uid):
    acc = [1, 1]
    eat(acc, uid[:128])
    return digest(acc)


def split_hash(parent, count, color):
    acc = [1, 1]
    eat(acc, parent.to_bytes(8, "little"))
    eat(acc, (count & 0xffffffff).to_bytes(4, "little"))
    eat(acc, (color & 0xffffffff).to_bytes(4, "little"))
    return digest(acc)


class Fail(Exception):
    pass


def want(cond, msg):
    if not cond:
        raise Fail(msg)


def files(d):
    return p3d_trace.trace_files(d)


def check_all(d, id_dir, polls, revoked, stream):
    """Every wrapped call once, with the right fields, on both ranks."""
    tr = p3d_trace.read_dir(d)
    want(sorted(tr) == [0, 1], f"ranks {sorted(tr)} != [0, 1]")
    stream = stream.split(",")
    world = root_hash(open(os.path.join(id_dir, "world.id"), "rb").read())
    cfgh = root_hash(open(os.path.join(id_dir, "cfg.id"), "rb").read())
    scal = root_hash(open(os.path.join(id_dir, "scal.id"), "rb").read())
    for rank, t in tr.items():
        want(all(o["stream"] == int(stream[rank]) for o in t.ops()),
             f"rank {rank}: stream != {stream[rank]}")
        check_rank_all(rank, t, world, cfgh, scal, int(polls),
                       int(revoked))
    return "all: 2 ranks ok"


def check_rank_all(rank, t, world, cfgh, scal, polls, revoked):
    h = t.header
    want(h["flags"] & p3d_trace.F_CLOSED, f"rank {rank}: not closed")
    want(h["world_size"] == 2 and h["dropped_records"] == 0, "header")
    want(not t.warnings, f"rank {rank}: warnings {t.warnings}")
    check_comms(rank, t, world, cfgh, scal)
    check_ops(rank, t, world)
    check_groups(rank, t)
    ends = [(e["how_name"], e["comm_hash"]) for e in t.of_type("comm_end")]
    want(("ncclCommFinalize", world) in ends and
         ("ncclCommDestroy", world) in ends and
         ("ncclCommRevoke", cfgh) in ends, f"rank {rank}: ends {ends}")
    want(sum(1 for e in ends if e[0] == "ncclCommAbort") == 1, "abort")
    d = [e for e in t.of_type("comm_end")
         if e["comm_hash"] == cfgh and e["how_name"] == "ncclCommDestroy"]
    want(len(d) == 1 and d[0]["last_async_error"] == revoked,
         f"rank {rank}: destroy after revoke {d}: want last_async_error "
         f"{revoked}")
    failed = [o for o in t.ops() if o["comm_hash"] == cfgh and o["ret"]]
    want(len(failed) == 1, f"rank {rank}: the op on the revoked comm")
    s = t.of_type("summary")
    want(len(s) == 1, "one summary")
    want(s[0]["async_error_polls"] == 3 + polls,
         f"rank {rank}: async polls {s[0]['async_error_polls']} != "
         f"{3 + polls} (nested polls from init must not count)")
    want(s[0]["ops_recorded"] == len(t.ops()), "ops_recorded")
    want(h["n_records"] == len(t.records), "n_records")
    env = t.of_type("env")[0]["items"]
    want(f"RANK={rank}" in env and "WORLD_SIZE=2" in env, f"env {env}")
    want(t.of_type("cmdline")[0]["items"][-1] == "all", "cmdline")


def check_comms(rank, t, world, cfgh, scal):
    c = t.comms()
    how = [x["how_name"] for x in c]
    want(how == ["ncclCommInitRank", "ncclCommSplit", "ncclCommSplit",
                 "ncclCommShrink", "ncclCommInitRankConfig",
                 "ncclCommInitRankScalable", "ncclCommInitAll"],
         f"rank {rank}: comm sequence {how}")
    want(c[0]["comm_hash"] == world and c[0]["nranks"] == 2 and
         c[0]["rank"] == rank, f"rank {rank}: world {c[0]}")
    s1, s2, shr = c[1], c[2], c[3]
    want(s1["split_count"] == 1 and s1["color"] == rank % 2 and
         s1["comm_hash"] == split_hash(world, 1, rank % 2) and
         s1["parent_hash"] == world and s1["nranks"] == 1,
         f"rank {rank}: first split {s1}")
    want(s2["split_count"] == 2, f"rank {rank}: NOCOLOR must advance")
    if rank == 0:
        want(s2["comm_hash"] == split_hash(world, 2, 5) and
             not s2["flags"] & 1, f"split color 5 {s2}")
    else:
        want(s2["flags"] & 1 and s2["comm_hash"] == 0 and
             s2["color"] == -1 and s2["comm_ptr"] == 0, f"nocolor {s2}")
    want(shr["comm_hash"] == split_hash(world, 0, 0) and
         shr["split_count"] == 0, f"rank {rank}: shrink {shr}")
    want(c[4]["comm_hash"] == cfgh and c[4]["name"] == "p3d-test" and
         c[4]["flags"] & 2 and c[4]["ret"] == 7,
         f"rank {rank}: nonblocking config comm {c[4]}")
    info = [i for i in t.of_type("comm_info") if i["comm_hash"] == cfgh]
    want(len(info) == 1 and info[0]["nranks"] == 2 and
         info[0]["rank"] == rank, f"rank {rank}: comm_info {info}")
    want(c[5]["comm_hash"] == scal, f"rank {rank}: scalable {c[5]}")
    want(c[6]["nranks"] == 1 and c[6]["rank"] == 0, f"initall {c[6]}")


EXPECT_OPS = [  # (op, count, peer, redop, flags) on the world comm
    ("AllReduce", 4, -1, 0, 0), ("ReduceScatter", 2, -1, 0, 0),
    ("AllGather", 2, -1, 255, 0), ("Broadcast", 3, 1, 255, 0),
    ("Broadcast", 5, 0, 255, 2 | 8), ("Reduce", 2, 0, 2, 0),
    ("AlltoAll", 2, -1, 255, 0), ("Gather", 2, 1, 255, 0),
    ("Scatter", 2, 0, 255, 0), ("AllReduce", 4, -1, 0, 0),
    ("AllReduce", 1, -1, 0, 0)]


def check_ops(rank, t, world):
    ops = t.ops()
    w = [o for o in ops if o["comm_hash"] == world]
    coll = [o for o in w if o["op_name"] not in ("Send", "Recv")]
    want(len(coll) == len(EXPECT_OPS), f"rank {rank}: {len(coll)} colls")
    for i, (o, e) in enumerate(zip(coll, EXPECT_OPS)):
        got = (o["op_name"], o["count"], o["peer"], o["redop"], o["flags"])
        want(got == e, f"rank {rank}: op {i}: {got} != {e}")
        want(o["seq"] == i and o["stream"] != 0 and o["dtype"] in (7, 99)
             and o["comm_rank"] == rank and o["t_exit"] >= o["t_enter"],
             f"rank {rank}: op {i} fields {o}")
        want(o["ret"] == (4 if i == 9 else 0), f"ret of op {i}")
        want(o["dtype"] == (99 if i == 9 else 7), f"dtype of op {i}")
    want(coll[0]["bytes"] == 16, "bytes = count * sizeof(float)")
    peer = (rank + 1) % 2
    p2p = [(o["op_name"], o["seq"], o["peer"], o["count"])
           for o in w if o["op_name"] in ("Send", "Recv")]
    want(p2p == [("Send", 0, peer, 4), ("Recv", 0, peer, 4),
                 ("Send", 1, peer, 2), ("Recv", 1, peer, 2)],
         f"rank {rank}: p2p {p2p}")
    # + split child, shrink child, 2 on the config comm (one failed)
    want(len(ops) == len(w) + 4, f"rank {rank}: {len(ops)} ops in all")
    ids = [o["op_id"] for o in ops]
    want(ids == sorted(set(ids)), "op ids unique")


def check_groups(rank, t):
    g = [(x["is_end"], x["depth"], x["n_ops"]) for x in t.of_type("group")]
    want(g == [(0, 1, 0), (0, 2, 0), (1, 1, 0), (1, 0, 4)],
         f"rank {rank}: groups {g}")
    gid = {x["group_id"] for x in t.of_type("group")}
    want(len(gid) == 1 and 0 not in gid, f"one group id {gid}")
    inside = [o for o in t.ops() if o["flags"] & 1]
    want(len(inside) == 4 and all(o["group_id"] in gid for o in inside),
         "ops inside carry the outermost group id")


def check_loop(d, last):
    """After kill -9: readable, every returned call present."""
    fs = files(d)
    want(len(fs) == 1, f"one file, got {fs}")
    t = p3d_trace.read_file(fs[0])
    want(not t.closed, "a killed process cannot have closed its file")
    ops = t.ops()
    n = int(last) + 1
    want(len(ops) >= n, f"{len(ops)} ops < {n} returned calls")
    want([o["seq"] for o in ops] == list(range(len(ops))), "seq 0..n-1")
    return f"loop: {len(ops)} ops recorded, {n} returned before kill"


def check_threads(d, nthreads, n):
    fs = files(d)
    want(len(fs) == 1, f"one file, got {fs}")
    t = p3d_trace.read_file(fs[0])
    want(t.closed and t.header["dropped_records"] == 0, "closed, no drops")
    ops = t.ops()
    want(len(ops) == int(nthreads) * int(n), f"{len(ops)} ops")
    by = {}
    for o in ops:
        by.setdefault(o["comm_hash"], []).append(o)
    want(len(by) == int(nthreads), f"{len(by)} comms")
    for lst in by.values():
        want([o["seq"] for o in lst] == list(range(int(n))), "per-comm seq")
        want(len({o["tid"] for o in lst}) == 1, "one thread per comm")
    return f"threads: {len(ops)} ops over {len(by)} comms"


def check_fork(d, with_exec):
    tr = [p3d_trace.read_file(f) for f in files(d)]
    parent = [t for t in tr if not t.header["flags"] & p3d_trace.F_FORKED
              and os.path.basename(t.path) == "rank-00000.p3d"]
    forked = [t for t in tr if t.header["flags"] & p3d_trace.F_FORKED]
    want(len(parent) == 1, f"parent file: {[t.path for t in tr]}")
    p = parent[0]
    want(len(p.ops()) == 2 and p.closed, f"parent ops {len(p.ops())}")
    want(len(forked) == 1, f"one forked file (the NCCL child), got "
         f"{[t.path for t in forked]}")
    c = forked[0]
    want(len(c.ops()) == 2 and c.header["ppid"] == p.header["pid"] and
         c.header["pid"] != p.header["pid"], "child has its own ops/file")
    want(len(tr) == (3 if with_exec == "1" else 2),
         f"{len(tr)} files: {[t.path for t in tr]}")
    if with_exec == "1":
        ex = [t for t in tr if t not in parent and t not in forked][0]
        want(len(ex.ops()) == 3 and ex.closed, "exec'd child traced")
    return f"fork: {len(tr)} files"


def check_count(d, n, upto=None):
    """One file; its ops are seq 0..k-1 with k == n (or n < k <= upto)."""
    fs = files(d)
    want(len(fs) == 1, f"one file, got {fs}")
    t = p3d_trace.read_file(fs[0])
    k = len(t.ops())
    if upto is None:
        want(k == int(n), f"{k} ops != {n}")
    else:
        want(int(n) < k <= int(upto), f"{k} ops not in ({n}, {upto}]")
    want([o["seq"] for o in t.ops()] == list(range(k)), "seq 0..k-1")
    return f"count: {k} ops"


def main(argv):
    checks = {"all": check_all, "loop": check_loop, "count": check_count,
              "threads": check_threads, "fork": check_fork}
    try:
        print(checks[argv[0]](*argv[1:]))
    except (Fail, p3d_trace.TraceError, OSError, IndexError) as e:
        print(f"shim_check: FAIL: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
