#!/usr/bin/env python3
"""mkseeds.py - compact seed traces for the libFuzzer harness.

Real trace files are >= 69 KB (data_off 4096, 64 KiB chunks), far too big
for a fast fuzzer.  This repacks a trace's records, in file order, into a
file with data_off 256 and small chunks, keeping the first N records, so a
seed is a few KB but decodes to the same kind of job.  Several rank files
concatenated make one multi-rank seed (the harness cuts the input before
every "P3DTRACE" at a multiple of 8).

usage: mkseeds.py OUTDIR TRACE_DIR...   (each TRACE_DIR: rank-*.p3d)
"""
import glob
import os
import struct
import sys

HDR = 256


def records(data):
    """Yield the raw non-chunk records of a trace file, in file order."""
    chunk_bytes, data_off = struct.unpack_from("<II", data, 16)
    off = data_off
    while off + 8 <= len(data):
        end = min(off + chunk_bytes, len(data))
        p = off
        while p + 4 <= end:
            tag, ln = struct.unpack_from("<HH", data, p)
            if tag == 0 or ln < 8 or p + ln > end:
                break
            if tag != 1:
                yield data[p:p + ln]
            p += ln
        off += chunk_bytes


def repack(data, keep, chunk=512):
    """The header of `data` with data_off 256, chunks of `chunk` bytes."""
    hdr = bytearray(data[:HDR])
    struct.pack_into("<II", hdr, 16, chunk, HDR)
    out = bytearray(hdr)
    cur = None
    index = 0
    for rec in list(records(data))[:keep]:
        if len(rec) > chunk - 16:
            continue
        if cur is None or len(cur) + len(rec) > chunk:
            if cur is not None:
                out += cur + bytes(chunk - len(cur))
            cur = bytearray(struct.pack("<HHIII", 1, 16, 1234, index, 0))
            index += 1
        cur += rec
    if cur is not None:
        out += cur + bytes(chunk - len(cur))
    return bytes(out)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for d in sys.argv[2:]:
        name = os.path.basename(os.path.normpath(d))
        files = sorted(glob.glob(os.path.join(d, "*.p3d")))
        files = [f for f in files if os.path.getsize(f) >= HDR]
        if not files:
            continue
        blobs = [open(f, "rb").read() for f in files]
        if blobs[0][:8] != b"P3DTRACE":
            continue
        with open(os.path.join(out, name + "-r0"), "wb") as f:
            f.write(repack(blobs[0], 60))
        with open(os.path.join(out, name + "-all"), "wb") as f:
            f.write(b"".join(repack(b, 14, 256) for b in blobs[:4]))


if __name__ == "__main__":
    main()
