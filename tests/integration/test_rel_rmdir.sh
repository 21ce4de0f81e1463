#!/bin/sh
# The trace folder is removed while the job records: the job goes on and
# ends as without the shim, and the file (kept through a hard link made
# before the removal) is readable with every call.
. "$(dirname "$0")/rel_lib.sh"
REL_SLEEP_US=1000 timeout 60 "$REL_DRIVER" "$REL_LIB" loop 400 \
    > "$T/plain" || fail "plain run"
mkdir -p "$T/keep"
# the driver waits after its first call until $T/go exists: the folder
# is removed while the job still has 399 calls to make
REL_SAY_FIRST=1 REL_GO=$T/go REL_SLEEP_US=1000 LD_PRELOAD=$SHIM timeout 60 \
    "$REL_DRIVER" "$REL_LIB" loop 400 > "$T/shim" 2> "$T/err" &
pid=$!
i=0
until grep -q 'first call' "$T/shim" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 3000 ] || fail "no first call"; sleep 0.01
done
f=$(ls "$T"/traces/job/*.p3d | head -1)
ln "$f" "$T/keep/rank.p3d" || fail "hard link"
rm -rf "$T/traces" || fail "rm"
: > "$T/go"
wait $pid || fail "job harmed: $(cat "$T/err")"
grep -v 'first call' "$T/shim" | cmp -s - "$T/plain" || fail "output differs"
[ -e "$T/traces" ] && fail "trace folder came back"
n=$(ops "$T/keep/rank.p3d")
[ "$n" = 400 ] || fail "$n ops in the kept file, want 400"
