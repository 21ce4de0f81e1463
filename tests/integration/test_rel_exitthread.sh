#!/bin/sh
# exit(7) from one thread while 4 others are recording NCCL calls: the
# process ends with status 7 (no crash in the shim's exit path while
# other threads write, no hang) and the trace is readable.
. "$(dirname "$0")/rel_lib.sh"
# LeakSanitizer cannot stop the world while other threads still run at
# exit(): no leak check here
export ASAN_OPTIONS=$ASAN_OPTIONS:detect_leaks=0
for i in 1 2 3; do
    rm -rf "$T/traces"
    run_both exitthread 7 exitthread 4
    for f in "$T"/traces/job/*.p3d; do
        [ -e "$f" ] || fail "no trace file"
        want_ops "$f" 1
    done
done
