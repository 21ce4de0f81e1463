#!/bin/sh
# kill -9 in the middle of a run: the file is readable and holds every
# call that returned before the kill.
. "$(dirname "$0")/shim_lib.sh"
: > "$T/out"
(RANK=0 WORLD_SIZE=1 SHIM_LOOP_SLEEP_US=200 LD_PRELOAD=$SHIM \
    exec "$DRV" "$DRVLIB" loop 100000000) >> "$T/out" 2>&1 &
pid=$!
i=0
while [ "$(grep -c '^returned' "$T/out")" -lt 3000 ] && [ $i -lt 300 ]; do
    sleep 0.05; i=$((i + 1))
done
kill -9 $pid
wait $pid 2>/dev/null
last=$(grep '^returned' "$T/out" | tail -n 1 | cut -d' ' -f2)
[ -n "$last" ] || fail "the driver never returned a call"
$CHECK loop "$T/traces/job" "$last"
