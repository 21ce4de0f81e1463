#!/usr/bin/env python3
"""p3d_trace.py - an independent reader of p3dtrace trace files.

Why: integration tests need an oracle that reads the traces exactly as
include/p3d_format.h documents them, written without the C analyzer's code,
so a shared misreading cannot hide a bug.

Module use:
    import p3d_trace
    t = p3d_trace.read_file("traces/job/rank-00000.p3d")
    t.header["rank"], t.records (list of dicts, each with "type"),
    t.warnings (truncated tails, torn records), t.ops(), t.comms()
    traces = p3d_trace.read_dir("traces/job")   # {rank: Trace}

CLI: p3d_trace.py [--type T[,T..]] [--header] FILE|DIR...
prints one JSON object per line: the header ("type": "header"), then the
records.  Exit 2 on unreadable input.
"""
import json
import os
import struct
import sys

MAGIC = b"P3DTRACE"
MAJOR = 1
HDR_FMT = "<8sHHHHIIiiiiQQQQQQQ64s64sIIQ16s"
HDR_FIELDS = ("magic", "major", "minor", "hdr_len", "flags", "chunk_bytes",
              "data_off", "rank", "world_size", "local_rank",
              "local_world_size", "pid", "ppid", "start_realtime_ns",
              "start_mono_ns", "end_mono_ns", "n_records", "dropped_records",
              "job_id", "hostname", "nccl_version_runtime",
              "nccl_version_compile", "clock_uncertainty_ns", "reserved")
assert struct.calcsize(HDR_FMT) == 256

F_CLOSED, F_DROPPED, F_TRUNCATED_STR, F_FORKED = 1, 2, 4, 8
TAG_OPTIONAL = 0x8000

OPS = ("AllReduce", "ReduceScatter", "AllGather", "Broadcast", "Reduce",
       "AlltoAll", "Gather", "Scatter", "Send", "Recv")
COMM_HOWS = ("ncclCommInitRank", "ncclCommInitRankConfig",
             "ncclCommInitRankScalable", "ncclCommInitAll", "ncclCommSplit",
             "ncclCommShrink")
END_HOWS = ("ncclCommFinalize", "ncclCommDestroy", "ncclCommAbort",
            "ncclCommRevoke")
MEM_KINDS = ("device", "host_pinned", "managed", "device_used")
OPF = {"in_group": 1, "bcast_api": 2, "comm_unknown": 4, "in_place": 8,
       "capturing": 16}
COMMF = {"nocolor": 1, "nonblocking": 2, "parent_unknown": 4}

# tag: (type name, struct format after the 4-byte header, field names,
#       tail kind: None | "str" (NUL-terminated) | "text" | "pcs")
RECORDS = {
    0x0001: ("chunk", "<III", ("tid", "index", "reserved"), None),
    0x0002: ("comm", "<BBHQQQQQiiiiiiiI",
             ("how", "flags", "reserved", "comm_hash", "parent_hash",
              "comm_ptr", "t_enter", "t_exit", "nranks", "rank", "color",
              "key", "split_count", "device", "ret", "tid"), "str"),
    0x0003: ("comm_info", "<IQQiiii",
             ("reserved", "comm_hash", "t", "nranks", "rank", "device",
              "reserved2"), None),
    0x0004: ("comm_end", "<B3sQQQiIiI",
             ("how", "reserved", "comm_hash", "t_enter", "t_exit", "ret",
              "tid", "last_async_error", "pending_ops"), None),
    0x0005: ("op", "<BBBBQQQQQQQQiiIIIi",
             ("op", "dtype", "redop", "flags", "op_id", "comm_hash", "seq",
              "count", "bytes", "stream", "t_enter", "t_exit", "peer", "ret",
              "tid", "group_id", "stack_id", "comm_rank"), None),
    0x0006: ("group", "<BBHQQIiII",
             ("is_end", "depth", "reserved", "t_enter", "t_exit", "group_id",
              "ret", "tid", "n_ops"), None),
    0x8001: ("cmdline", "<I", ("n_bytes",), "text"),
    0x8002: ("env", "<I", ("n_bytes",), "text"),
    0x8003: ("gpu_op", "<BBBBQQQ",
             ("source", "algo", "proto", "nchannels", "op_id", "gpu_start",
              "gpu_end"), None),
    0x8004: ("gpu_span", "<BBHQQQQII",
             ("kind", "reserved", "device", "stream", "start", "end",
              "busy_ns", "n_items", "reserved2"), None),
    0x8005: ("clock_sync", "<iQQQ",
             ("device", "gpu_ns", "host_mono_ns", "uncertainty_ns"), None),
    0x8006: ("mem", "<BBHQQQ",
             ("kind", "reserved", "device", "t", "current", "peak"), None),
    0x8007: ("stack", "<III", ("stack_id", "n_frames", "reserved"), "pcs"),
    0x8008: ("module", "<IQQ", ("reserved", "base", "size"), "str"),
    0x8009: ("hang", "<IQQQQQIiB7s",
             ("n_pending", "t", "op_id", "comm_hash", "seq", "pending_ns",
              "stack_id", "peer", "op", "reserved"), None),
    0x800a: ("mark", "<IQQ", ("reserved", "t", "value"), "str"),
    0x800b: ("summary", "<IQQQQ4Q",
             ("reserved", "t", "async_error_polls", "ops_recorded",
              "dropped", "peak_device", "peak_host_pinned", "peak_managed",
              "peak_device_used"), None),
    0x800c: ("note", "<I", ("n_bytes",), "text"),
    0x800d: ("gpu_window", "<IQ", ("on", "t"), None),
}
FIXED_LEN = {tag: 4 + struct.calcsize(fmt)
             for tag, (_, fmt, _, _) in RECORDS.items()}
assert FIXED_LEN[0x0005] == 96 and FIXED_LEN[0x0002] == 80
assert FIXED_LEN[0x8009] == 64 and FIXED_LEN[0x800b] == 72


class TraceError(Exception):
    """The file cannot be read as a p3dtrace trace."""


class Trace:
    """One rank's trace file, decoded."""

    def __init__(self, path, header, records, warnings):
        self.path = path
        self.header = header
        self.records = records
        self.warnings = warnings

    @property
    def rank(self):
        return self.header["rank"]

    def of_type(self, name):
        return [r for r in self.records if r["type"] == name]

    def ops(self):
        """NCCL op records in op_id (call) order."""
        return sorted(self.of_type("op"), key=lambda r: r["op_id"])

    def comms(self):
        return self.of_type("comm")

    def kernel_windows(self, offset_ns=0):
        """The rank's kernel windows (P3D_REC_GPU_WINDOW) as [on, off)
        pairs, times minus offset_ns; one still open at the end runs to
        infinity; None when the trace has no window record (kernels
        recorded all the run).  A second "on" while one is open changes
        nothing, as for the analyzer."""
        recs = self.of_type("gpu_window")
        if not recs:
            return None
        wins, on = [], None
        for r in recs:
            t = r["t"] - offset_ns
            if r["on"] and on is None:
                on = t
            elif not r["on"] and on is not None:
                wins.append((on, t))
                on = None
        if on is not None:
            wins.append((on, float("inf")))
        return wins

    @property
    def closed(self):
        return bool(self.header["flags"] & F_CLOSED)


def _cstr(b):
    return b.split(b"\0", 1)[0].decode("utf-8", "replace")


def parse_header(buf, path="<buffer>"):
    if len(buf) < 256:
        raise TraceError(f"{path}: shorter than the 256-byte header")
    vals = struct.unpack_from(HDR_FMT, buf, 0)
    h = dict(zip(HDR_FIELDS, vals))
    if h["magic"] != MAGIC:
        raise TraceError(f"{path}: bad magic {h['magic']!r}")
    if h["major"] != MAJOR:
        raise TraceError(f"{path}: format major {h['major']} unsupported")
    if h["chunk_bytes"] < 16 or h["chunk_bytes"] % 8:
        raise TraceError(f"{path}: bad chunk_bytes {h['chunk_bytes']}")
    if h["data_off"] < 256:
        raise TraceError(f"{path}: bad data_off {h['data_off']}")
    h["job_id"] = _cstr(h["job_id"])
    h["hostname"] = _cstr(h["hostname"])
    h["magic"] = MAGIC.decode()
    del h["reserved"]
    return h


def _decode(tag, buf, pos, length):
    name, fmt, fields, tail = RECORDS[tag]
    fixed = FIXED_LEN[tag]
    short = length < fixed
    if short:
        # An older minor may lack trailing fields: they read as zero.
        if tail is not None:
            raise ValueError(f"{name} record of {length} bytes < {fixed}")
        buf = bytes(buf[pos:pos + length]) + b"\0" * (fixed - length)
        pos = 0
    rec = dict(zip(fields, struct.unpack_from(fmt, buf, pos + 4)))
    rec["type"] = name
    if short:
        rec["short"] = length
    for k in ("reserved", "reserved2"):
        rec.pop(k, None)
    end = pos + length
    if tail == "str":
        field = {"comm": "name", "module": "path", "mark": "name"}[name]
        rec[field] = _cstr(buf[pos + fixed:end])
    elif tail == "text":
        n = rec["n_bytes"]
        if fixed + n > length:
            raise ValueError(f"{name}: n_bytes {n} past the record")
        text = buf[pos + fixed:pos + fixed + n].decode("utf-8", "replace")
        rec["text"] = text
        if name in ("cmdline", "env"):
            rec["items"] = [s for s in text.split("\0") if s]
    elif tail == "pcs":
        n = rec["n_frames"]
        if fixed + 8 * n > length:
            raise ValueError("stack: n_frames past the record")
        rec["pc"] = list(struct.unpack_from(f"<{n}Q", buf, pos + fixed))
    _names(rec)
    return rec


def _names(rec):
    t = rec["type"]
    if t == "op":
        rec["op_name"] = OPS[rec["op"]] if rec["op"] < len(OPS) else "?"
        rec["flag_names"] = [k for k, v in OPF.items() if rec["flags"] & v]
    elif t == "comm":
        rec["how_name"] = (COMM_HOWS[rec["how"]]
                           if rec["how"] < len(COMM_HOWS) else "?")
        rec["flag_names"] = [k for k, v in COMMF.items() if rec["flags"] & v]
    elif t == "comm_end":
        rec["how_name"] = (END_HOWS[rec["how"]]
                           if rec["how"] < len(END_HOWS) else "?")
        rec.pop("reserved", None)
    elif t == "mem":
        rec["kind_name"] = (MEM_KINDS[rec["kind"]]
                            if rec["kind"] < len(MEM_KINDS) else "?")
    elif t == "hang":
        rec["op_name"] = OPS[rec["op"]] if rec["op"] < len(OPS) else "?"


def _chunk(buf, start, end, index, path, records, warnings, strict):
    """Decode one chunk's records; stop at a zero tag or a torn tail."""
    if start + 16 > end:
        warnings.append(f"chunk {index}: truncated before its header")
        return
    tag, length = struct.unpack_from("<HH", buf, start)
    if tag == 0:
        return                          # reserved, never written
    if tag != 0x0001 or length != 16:
        raise TraceError(f"{path}: chunk {index} at {start}: bad chunk "
                         f"header tag={tag:#x} len={length}")
    chunk = _decode(tag, buf, start, length)
    chunk["chunk"] = index
    records.append(chunk)
    pos = start + 16
    while pos + 4 <= end:
        tag, length = struct.unpack_from("<HH", buf, pos)
        if tag == 0:
            return
        if length < 8 or length % 8 or pos + length > end:
            warnings.append(f"chunk {index} at {pos}: torn record "
                            f"tag={tag:#x} len={length}")
            return
        if tag not in RECORDS or tag == 0x0001:
            if tag & TAG_OPTIONAL:
                pos += length
                continue
            raise TraceError(f"{path}: unknown required record tag "
                             f"{tag:#x} at offset {pos}")
        try:
            rec = _decode(tag, buf, pos, length)
        except ValueError as e:
            if strict:
                raise TraceError(f"{path}: offset {pos}: {e}") from e
            warnings.append(f"offset {pos}: {e}")
            pos += length
            continue
        rec["chunk"] = index
        rec["tid_chunk"] = chunk["tid"]
        records.append(rec)
        pos += length


def read_bytes(buf, path="<buffer>", strict=True):
    h = parse_header(buf, path)
    records, warnings = [], []
    cb, off, index = h["chunk_bytes"], h["data_off"], 0
    while off < len(buf):
        end = min(off + cb, len(buf))
        if end - off < cb:
            warnings.append(f"chunk {index}: file ends {end - off} bytes "
                            f"into it (truncated tail)")
        _chunk(buf, off, end, index, path, records, warnings, strict)
        off += cb
        index += 1
    return Trace(path, h, [r for r in records if r["type"] != "chunk"],
                 warnings)


def read_file(path, strict=True):
    try:
        with open(path, "rb") as f:
            buf = f.read()
    except OSError as e:
        raise TraceError(f"{path}: {e.strerror}") from e
    return read_bytes(buf, path, strict)


def trace_files(d):
    """Trace files of a job folder (or of its single job sub-folder)."""
    out = []
    for root, _, files in os.walk(d):
        out += [os.path.join(root, f) for f in files if f.endswith(".p3d")]
    return sorted(out)


def read_dir(d, strict=True):
    """{global rank: Trace} for every *.p3d under d."""
    res = {}
    for p in trace_files(d):
        t = read_file(p, strict)
        res[t.rank] = t
    return res


def main(argv):
    types, header_only, paths = None, False, []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--type":
            i += 1
            types = set(argv[i].split(","))
        elif a == "--header":
            header_only = True
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            paths.append(a)
        i += 1
    if not paths:
        print("usage: p3d_trace.py [--type T,..] [--header] FILE|DIR...",
              file=sys.stderr)
        return 2
    files = []
    for p in paths:
        files += trace_files(p) if os.path.isdir(p) else [p]
    try:
        for p in files:
            t = read_file(p)
            print(json.dumps(dict(t.header, type="header", path=p,
                                  warnings=t.warnings)))
            if header_only:
                continue
            for r in t.records:
                if types is None or r["type"] in types:
                    print(json.dumps(r))
    except TraceError as e:
        print(f"p3d_trace: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
