#!/bin/sh
# Memory held by the shim does not grow with run length: after 400k
# recorded calls (~38 MiB of trace) at most 16 MiB of the trace file is
# still mapped, and every call is in the file.
. "$(dirname "$0")/shim_lib.sh"
SHIM_LOOP_QUIET=1 run_rank 0 1 loop 400000 > "$T/out" || fail "driver"
kib=$(sed -n 's/^p3d_mapped_kib //p' "$T/out")
[ -n "$kib" ] && [ "$kib" -le 16384 ] || fail "trace mappings: ${kib} KiB"
$CHECK count "$T/traces/job" 400000
echo "memory: $kib KiB mapped at the end"
