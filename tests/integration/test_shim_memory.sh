#!/bin/sh
# Memory held by the shim does not grow with run length: after 200k
# recorded calls (~19 MiB of trace) at most 8 MiB (two 4 MiB windows) is
# still mapped, and every call is in the file.
. "$(dirname "$0")/shim_lib.sh"
SHIM_LOOP_QUIET=1 SHIM_LOOP_MAPPED_MAX_KIB=8192 run_rank 0 1 loop 200000 \
    > "$T/out" || fail "driver"
kib=$(sed -n 's/^p3d_mapped_kib //p' "$T/out")
[ -n "$kib" ] && [ "$kib" -le 8192 ] || fail "trace mappings: ${kib} KiB"
$CHECK count "$T/traces/job" 200000
echo "memory: $kib KiB mapped at the end"
