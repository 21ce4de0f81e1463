#!/bin/sh
# fork(): a child that calls nothing leaves no file; a child that calls
# NCCL gets its own file flagged forked; an exec'd child is a new process.
. "$(dirname "$0")/shim_lib.sh"
run_rank 0 1 fork || fail "driver (no exec) failed"
$CHECK fork "$T/traces/job" 0 || exit 1
rm -rf "$T/traces"
run_rank 0 1 fork "$DRV" "$DRVLIB" loop 3 > /dev/null || fail "exec run"
$CHECK fork "$T/traces/job" 1
