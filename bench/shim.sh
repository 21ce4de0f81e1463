#!/bin/sh
# bench/shim.sh - host ns the shim adds per NCCL call and per allocation
# call (make bench-shim).  Shim and plain rounds alternate inside one
# process (see bench/shim_bench.c).  Environment:
#   BUILD            build directory (absolute)            [build]
#   ROUNDS, CALLS    rounds per scenario, calls per round   [200, 2000]
#   BENCH_DIRS       trace directories to try   [/tmp/p3d-bench /dev/shm/p3d-bench]
set -e
BUILD=${BUILD:-$(pwd)/build}
ROUNDS=${ROUNDS:-200}
CALLS=${CALLS:-2000}
BENCH_DIRS=${BENCH_DIRS:-"/tmp/p3d-bench /dev/shm/p3d-bench"}
BIN=$BUILD/bench/null/shim_bench
LIB=$BUILD/libp3dtrace.so

run() { # label, then env assignments
    label=$1
    shift
    echo "== $label"
    env P3D_GPU_TIMING=off "$@" LD_PRELOAD=$LIB "$BIN" -r "$ROUNDS" \
        -n "$CALLS" 2>&1 | grep -v '^p3dtrace: warning' || true
}

echo "shim hot path vs a do-nothing NCCL/cudart ($(nproc) cores," \
     "$(uname -r)); GPU timing off unless said"
for d in $BENCH_DIRS; do
    rm -rf "$d"
    run "traces on $d, stacks off" P3D_TRACE_DIR="$d" P3D_STACKS=0
    run "traces on $d, stacks on" P3D_TRACE_DIR="$d" P3D_STACKS=1
    # the default GPU timing's NCCL path: two CUDA events per op (on the
    # null runtime, so without what recording an event costs CUDA)
    run "traces on $d, stacks off, GPU timing auto (events)" \
        P3D_TRACE_DIR="$d" P3D_STACKS=0 P3D_GPU_TIMING=auto
    du -sh "$d" | sed 's/^/trace size: /'
    rm -rf "$d"
done
run "P3D_DISABLE=1 (pass-through)" P3D_DISABLE=1
