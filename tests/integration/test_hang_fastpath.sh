#!/bin/sh
# The hang analysis' fast path (analyzer/p3d_hang.c, p3d_hang_all_exited):
# a job whose every rank file was closed cleanly, with no watchdog report,
# SIGTERM, abort or mismatch, is classified "all exited" from the scan's
# counts, without reading the files again.  Outside sign: p3d-analyze
# opens the rank files fewer times (open_count.c counts opens of *.p3d)
# for the committed example job than for the same job with rank 3's
# "closed cleanly" header flag cleared, which must take the hang scan.
set -eu
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
lib="$P3D_BUILD/tests/libopen_count.so"
[ -f "$lib" ] || { echo "no $lib"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$P3D_SRC/traces/example-tp2pp2dp2" "$tmp/ok"
cp -r "$tmp/ok" "$tmp/killed"
python3 - "$tmp/killed/rank-00003.p3d" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
b[14] &= 0xfe                    # header flags: clear P3D_F_CLOSED
open(sys.argv[1], "wb").write(b)
PY
# opens JOB: how many times p3d-analyze opened a rank file of JOB
opens() {
    P3D_OPEN_COUNT_FILE="$tmp/$1.count" LD_PRELOAD="$lib" \
        "$P3D_BUILD/p3d-analyze" -q --detail=ranks "$tmp/$1" > "$tmp/$1.out" 2>&1 ||
        { cat "$tmp/$1.out"; exit 1; }
    cat "$tmp/$1.count"
}
ok=$(opens ok)
killed=$(opens killed)
grep -q "rank 3: .*(not closed cleanly)" "$tmp/killed.out" ||
    { echo "FAIL: the edited file was not seen as not closed"; exit 1; }
echo "rank-file opens: healthy job $ok, job with a killed rank $killed"
if [ "$ok" -ge "$killed" ]; then
    echo "FAIL: the healthy job read its files as often as one that needs"
    echo "      the hang scan: the fast path was not taken"
    exit 1
fi
echo "ok: the healthy job skipped the hang scan"
