#!/bin/sh
# A full disk: one warning line, recording stops, the job goes on and
# ends well, and the file holds what fitted (no SIGBUS: space is reserved
# with posix_fallocate before pages are touched).  Needs a small tmpfs,
# so it runs only where mount(2) is allowed (root in CI containers).
. "$(dirname "$0")/shim_lib.sh"
mkdir -p "$T/full"
mount -t tmpfs -o size=6m tmpfs "$T/full" 2>/dev/null ||
    { echo "skip: cannot mount a small tmpfs"; exit 77; }
trap 'umount "$T/full" 2>/dev/null; rm -rf "$T"' EXIT
P3D_TRACE_DIR=$T/full SHIM_LOOP_QUIET=1 run_rank 0 1 loop 200000 \
    > "$T/out" 2> "$T/err" || fail "job harmed: $(cat "$T/err")"
[ "$(grep -c '^p3dtrace: warning: cannot extend' "$T/err")" = 1 ] ||
    fail "want one warning: $(cat "$T/err")"
[ "$(grep -c . "$T/err")" = 1 ] || fail "stderr: $(cat "$T/err")"
$CHECK count "$T/full/job" 40000 43700  # one 4 MiB window
