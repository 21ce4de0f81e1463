#!/bin/sh
# Many threads recording at once: every op, per-comm seq numbers intact.
. "$(dirname "$0")/shim_lib.sh"
run_rank 0 1 threads 8 3000 || fail "driver failed"
$CHECK threads "$T/traces/job" 8 3000
