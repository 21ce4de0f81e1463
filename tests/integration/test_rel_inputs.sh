#!/bin/sh
# Analyzer input hardening beyond test_analyze_badinput/jobs: a file of a
# newer minor version (longer records, unknown optional records) is read
# in full; a newer major is refused with a message naming the versions
# while the other ranks are still analysed; a FIFO named like a trace and
# an unreadable file (when not root) give a message, not a hang or crash.
set -u
B=${P3D_BUILD:?}
S=${P3D_SRC:?}
A=$B/p3d-analyze
[ -x "$A" ] || { echo "skip: p3d-analyze not built"; exit 77; }
command -v python3 > /dev/null || { echo "skip: no python3"; exit 77; }
export PYTHONDONTWRITEBYTECODE=1
T=$(mktemp -d /tmp/p3d-rel-inputs.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$T/j"
python3 - "$T/j" <<'PY'
import struct, sys
sys.path.insert(0, "%s/tests/regress" % __import__("os").environ["P3D_SRC"])
import mkregress as m
d = sys.argv[1]
def hdr(rank, minor=0, major=1):
    h = bytearray(m.header(rank=rank, world=3))
    struct.pack_into("<HH", h, 8, major, minor)
    return bytes(h)
def longer(rec, extra):
    r = bytearray(rec) + bytes(extra)
    struct.pack_into("<H", r, 2, len(r))
    return bytes(r)
comm = lambda r: m.comm(0xabc, 3, r)
def chunks(*recs):
    return b"".join(m.chunk(*recs[i:i + 4]) for i in range(0, len(recs), 4))
ops = lambda: [m.op(0xabc, seq=i, op_id=i + 1) for i in range(5)]
open(d + "/rank-00000.p3d", "wb").write(hdr(0) + chunks(comm(0), *ops()))
# newer minor: every op 16 bytes longer, an unknown optional record
unk = struct.pack("<HHI", 0x80ff, 16, 7) + bytes(8)
open(d + "/rank-00001.p3d", "wb").write(
    hdr(1, minor=9) + chunks(comm(1), unk, *[longer(o, 16) for o in ops()]))
# newer major
open(d + "/rank-00002.p3d", "wb").write(hdr(2, major=2) + m.chunk(comm(2)))
PY
"$A" --json "$T/o.json" "$T/j" > "$T/out" 2> "$T/err"
rc=$?
[ "$rc" = 2 ] || fail "want status 2 (one unreadable file), got $rc"
grep -q "rank-00002.p3d.*version 2\.0.*reads version 1" "$T/err" ||
    fail "major message: $(cat "$T/err")"
grep -q "rank-00001" "$T/err" && fail "minor file refused: $(cat "$T/err")"
python3 - "$T/o.json" <<'PY' || fail "analysis of the readable ranks"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["job"]["ranks_found"] == 2, doc["job"]
c = [c for c in doc["communicators"] if c["size"] == 3][0]
assert c["ops"] == 10, c
PY
# a FIFO with a trace name: skipped with a note, no hang
mkfifo "$T/j/rank-00003.p3d"
timeout 20 "$A" "$T/j" > /dev/null 2> "$T/err2"
[ $? -le 2 ] || fail "FIFO: $(cat "$T/err2")"
rm -f "$T/j/rank-00003.p3d"
if [ "$(id -u)" != 0 ]; then
    cp "$T/j/rank-00000.p3d" "$T/j/rank-00004.p3d"
    chmod 000 "$T/j/rank-00004.p3d"
    "$A" "$T/j" > /dev/null 2> "$T/err3"
    grep -q "rank-00004.p3d.*ermission" "$T/err3" ||
        fail "unreadable: $(cat "$T/err3")"
fi
echo ok
