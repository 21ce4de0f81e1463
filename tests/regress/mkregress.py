#!/usr/bin/env python3
"""mkregress.py - rebuild the hand-made crash reproducers in tests/regress/.

Each file is a tiny trace (data_off 256, one 512-byte chunk) holding the
shape of one fuzz finding; tests/integration/test_rel_regress.sh feeds
every file here to p3d-analyze (analysis and --dump) and the fuzz
harnesses.  Files not made here are libFuzzer artifacts kept as found.
usage: mkregress.py OUTDIR
"""
import os
import struct
import sys

CHUNK = 512


def header(rank=0, world=1, rt=1795950000000000000, mono=4000000000000):
    h = bytearray(256)
    struct.pack_into("<8sHHHHIIiiii", h, 0, b"P3DTRACE", 1, 0, 256, 1,
                     CHUNK, 256, rank, world, 0, 1)
    struct.pack_into("<QQQQQQQ", h, 40, 1234, 1, rt, mono, mono + 10**9,
                     3, 0)
    h[96:99] = b"job"
    h[160:164] = b"host"
    return bytes(h)


def chunk(*recs):
    c = struct.pack("<HHIII", 1, 16, 99, 0, 0) + b"".join(recs)
    return c + bytes(CHUNK - len(c))


def comm(hash_, nranks, rank):
    return struct.pack("<HHBBHQQQQQiiiiiiiI", 2, 80, 0, 0, 0, hash_, 0,
                       0x1000, 5, 6, nranks, rank, 0, 0, 0, 0, 0, 99)


def comm_info(hash_, nranks, rank):
    return struct.pack("<HHIQQiiii", 3, 40, 0, hash_, 7, nranks, rank, 0, 0)


def op(hash_, seq=0, op_id=1, t0=5000000000000, t1=5000000001000):
    return struct.pack("<HHBBBBQQQQQQQQiiIIIi", 5, 96, 0, 7, 0, 0, op_id,
                       hash_, seq, 1, 4, 0, t0, t1, -1, 0, 99, 0, 0, 0)


FILES = {
    # comm_info nranks 705033715: p3d_comm_join malloc'ed 2.8 GB (OOM)
    "comm-nranks-huge": header() + chunk(comm_info(0xabc, 705033715, 0),
                                         op(0xabc)),
    # header rank INT32_MAX: world_size = rank + 1 overflowed
    "hdr-rank-max": header(rank=0x7fffffff, world=-1) + chunk(op(0xabc)),
    # start_realtime - start_mono overflowed int64 (UBSan, p3d_time_load)
    "time-overflow": header(rt=0x9000000000000000, mono=0x7000000000000000)
    + chunk(comm(0xabc, 1, 0), op(0xabc, t0=0xf000000000000000,
                                  t1=0x1000)),
    # seq 2^28-1 / op_id 2^26-1 sized 6 GB / 256 MB arrays
    "seq-huge": header() + chunk(comm(0xabc, 1, 0),
                                 op(0xabc, seq=(1 << 28) - 1,
                                    op_id=(1 << 26) - 1)),
    # rank -1 file, comm of 2^18 ranks: one warning per empty slot (20 s)
    "slot-flood": header(rank=-1, world=-1)
    + chunk(comm(0xabc, 1 << 18, 0), op(0xabc)),
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, data in FILES.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
