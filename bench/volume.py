#!/usr/bin/env python3
"""volume.py - trace volume of a job folder: bytes per op and per second.

Reads rank-*.p3d files directly (header, chunks, record headers as
include/p3d_format.h lays them out) and prints per record type the count
and bytes, then bytes per op and per second of job time.

usage: volume.py JOB_DIR
"""
import glob
import os
import struct
import sys

NAMES = {0x0001: "chunk", 0x0002: "comm", 0x0003: "comm_info",
         0x0004: "comm_end", 0x0005: "op", 0x0006: "group",
         0x8001: "cmdline", 0x8002: "env", 0x8003: "gpu_op",
         0x8004: "gpu_span", 0x8005: "clock_sync", 0x8006: "mem",
         0x8007: "stack", 0x8008: "module", 0x8009: "hang", 0x800a: "mark",
         0x800b: "summary", 0x800c: "note"}


def scan(path, count, size):
    with open(path, "rb") as f:
        buf = f.read()
    chunk_bytes, data_off = struct.unpack_from("<II", buf, 16)
    start, end = struct.unpack_from("<QQ", buf, 64)
    for c in range(data_off, len(buf), chunk_bytes):
        pos, stop = c, min(c + chunk_bytes, len(buf))
        while pos + 4 <= stop:
            tag, ln = struct.unpack_from("<HH", buf, pos)
            if tag == 0 or ln < 8 or pos + ln > stop:
                break
            name = NAMES.get(tag, hex(tag))
            count[name] = count.get(name, 0) + 1
            size[name] = size.get(name, 0) + ln
            pos += ln
    return len(buf), (end - start) if end > start else 0


def main(argv):
    files = sorted(glob.glob(os.path.join(argv[1], "rank-*.p3d")))
    if not files:
        print("volume.py: no rank-*.p3d in %s" % argv[1], file=sys.stderr)
        return 2
    count, size = {}, {}
    total = span = 0
    for p in files:
        n, s = scan(p, count, size)
        total += n
        span = max(span, s)
    ops = count.get("op", 0)
    rec = sum(size.values())
    print("%d rank files, %d bytes on disk (%.1f KiB per rank), "
          "%d bytes of records" % (len(files), total,
                                   total / 1024.0 / len(files), rec))
    for name in sorted(size, key=lambda k: -size[k]):
        print("  %-10s %9d records %11d bytes (%5.1f%%)" % (
            name, count[name], size[name], 100.0 * size[name] / rec))
    if ops:
        print("bytes per NCCL op: %.1f on disk, %.1f of records "
              "(all record types / op records)" % (total / ops, rec / ops))
    if span:
        print("job time %.2f s (longest rank): %.1f KiB/s per rank on disk, "
              "%.0f ops/s per rank" % (span / 1e9,
                                       total / 1024.0 / len(files) / (span / 1e9),
                                       ops / len(files) / (span / 1e9)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
