#!/bin/sh
# dlclose/reload of libnccl: the framework library (and NCCL with it) is
# unloaded, its old address range made unusable, and loaded again
# elsewhere.  The shim must not call into the old NCCL (SIGSEGV before
# the fix) and records both halves: 40 all-reduces in one file.
. "$(dirname "$0")/rel_lib.sh"
run_both reload 0 reload 20
grep -q 'reloaded elsewhere' "$T/reload.shim" ||
    { echo "skip: libnccl was reloaded at the same address"; exit 77; }
for f in "$T"/traces/job/*.p3d; do
    [ -e "$f" ] || fail "no trace file"
    n=$(ops "$f")
    [ "$n" = 40 ] || fail "$f: $n ops, want 40"
done
