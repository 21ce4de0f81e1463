#!/bin/sh
# bench/probe.sh - ns per 96-byte record written into memory obtained in
# different ways (make bench-probe): separates the cost of the stores from
# the cost of fresh pages.  PROBE_DIRS and PROBE_MIB as in shim.sh.
set -e
BUILD=${BUILD:-$(pwd)/build}
for d in ${PROBE_DIRS:-/tmp /dev/shm}; do
    echo "== records written into files on $d (${PROBE_MIB:-256} MiB each)"
    "$BUILD/bench/mmap_probe" "$d" "${PROBE_MIB:-256}"
done
