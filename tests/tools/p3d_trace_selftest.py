#!/usr/bin/env python3
"""p3d_trace_selftest.py - checks p3d_trace.py on hand-built files.

Builds trace files byte by byte from include/p3d_format.h's tables (header,
two chunks, an op, a comm with a name, an unknown optional record, an
unwritten chunk, a torn tail) and asserts the reader's answers.
"""
import os
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import p3d_trace  # noqa: E402


def header(rank=3, flags=0, chunk=256, data_off=4096):
    h = struct.pack("<8sHHHHIIiiiiQQQQQQQ64s64sIIQ16s", b"P3DTRACE", 1, 7,
                    256, flags, chunk, data_off, rank, 8, rank, 8, 100, 1,
                    10**18, 5 * 10**9, 0, 0, 0, b"job-1", b"hostA", 22809,
                    22809, 50, b"")
    return h + b"\0" * (data_off - 256)


def rec(tag, body):
    n = 4 + len(body)
    pad = (-n) % 8
    return struct.pack("<HH", tag, n + pad) + body + b"\0" * pad


def chunk_hdr(index, tid=77):
    return struct.pack("<HHIII", 1, 16, tid, index, 0)


def op(op_id, seq, comm=0xabc):
    return rec(0x0005, struct.pack("<BBBBQQQQQQQQiiIIIi", 0, 7, 0, 1, op_id,
                                   comm, seq, 10, 40, 0, 1000 + op_id,
                                   2000 + op_id, -1, 0, 77, 1, 0, 2))


def main():
    comm = rec(0x0002, struct.pack("<BBHQQQQQiiiiiiiI", 1, 2, 0, 0xabc, 0,
                                   0x1234, 5, 6, 8, 2, 0, 0, 0, 2, 7, 77)
               + b"TENSOR_MODEL_PARALLEL_GROUP\0")
    unknown_opt = rec(0x8fff, b"\1" * 12)
    c0 = chunk_hdr(0) + comm + op(1, 0) + unknown_opt
    c0 += b"\0" * (256 - len(c0))
    c1 = b"\0" * 256                       # reserved, never written
    c2 = chunk_hdr(2) + op(2, 1) + struct.pack("<HH", 0x0005, 96)[:4]
    buf = header() + c0 + c1 + c2          # torn: header of a cut record
    t = p3d_trace.read_bytes(buf, "synthetic")
    assert t.header["rank"] == 3 and t.header["hostname"] == "hostA"
    assert t.header["job_id"] == "job-1" and t.header["minor"] == 7
    ops = t.ops()
    assert [o["seq"] for o in ops] == [0, 1], ops
    assert ops[0]["op_name"] == "AllReduce" and ops[0]["comm_rank"] == 2
    assert ops[0]["flag_names"] == ["in_group"]
    cm = t.comms()
    assert len(cm) == 1 and cm[0]["name"] == "TENSOR_MODEL_PARALLEL_GROUP"
    assert cm[0]["how_name"] == "ncclCommInitRankConfig"
    assert cm[0]["flag_names"] == ["nonblocking"]
    assert any("torn" in w or "truncated" in w for w in t.warnings), t.warnings
    # a record shorter than this reader knows (older minor): zero-filled
    short = header() + chunk_hdr(0) + op(5, 0)[:88].replace(
        struct.pack("<HH", 5, 96), struct.pack("<HH", 5, 88), 1)
    t2 = p3d_trace.read_bytes(short, "short")
    assert t2.ops()[0]["op_id"] == 5 and t2.ops()[0]["comm_rank"] == 0
    assert t2.ops()[0]["short"] == 88
    bad = header() + chunk_hdr(0) + rec(0x0077, b"\0" * 4)
    try:
        p3d_trace.read_bytes(bad, "bad")
        raise AssertionError("unknown required tag accepted")
    except p3d_trace.TraceError as e:
        assert "unknown required" in str(e)
    try:
        p3d_trace.read_bytes(b"NOTATRACE" + b"\0" * 300, "magic")
        raise AssertionError("bad magic accepted")
    except p3d_trace.TraceError:
        pass
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "rank-00003.p3d"), "wb") as f:
            f.write(buf)
        assert list(p3d_trace.read_dir(d)) == [3]
    print("p3d_trace selftest ok")


if __name__ == "__main__":
    main()
