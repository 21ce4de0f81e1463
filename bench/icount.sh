#!/bin/sh
# bench/icount.sh - instructions the shim executes per call (callgrind),
# a figure that does not move with the machine's load (make bench-icount).
# Counts the inclusive cost of the shim's own wrappers (the null library's
# body, a few instructions, included) over every call the bench made.
# Environment: BUILD, CALLS [20000], P3D_STACKS [0]
set -e
BUILD=${BUILD:-$(pwd)/build}
CALLS=${CALLS:-20000}
command -v valgrind >/dev/null || { echo "icount: valgrind not installed"; exit 0; }
T=$(mktemp -d /tmp/p3d-icount.XXXXXX)
trap 'rm -rf "$T"' EXIT
# shim_bench -r 2: one warm-up and two measured rounds through the shim
calls=$((3 * CALLS))
for scen in coll p2p alloc; do
    P3D_GPU_TIMING=off P3D_STACKS=${P3D_STACKS:-0} P3D_TRACE_DIR=$T/tr \
        LD_PRELOAD=$BUILD/libp3dtrace.so valgrind --tool=callgrind \
        --callgrind-out-file=$T/cg.$scen "$BUILD/bench/null/shim_bench" \
        -r 2 -n "$CALLS" "$scen" >/dev/null 2>&1
    # Inclusive cost of each call edge from the bench's loop into the
    # shim: a function's own total in callgrind_annotate leaves out the
    # lines that came from inlined header functions (and what they call).
    callgrind_annotate --tree=calling --inclusive=yes --auto=no \
        "$T/cg.$scen" 2>/dev/null |
        awk -v scen="$scen" -v calls="$calls" '
        /^ *[0-9,]+ .*\*  .*:run_units / { inside = 1; next }
        /^ *[0-9,]+ .*\*  / { inside = 0 }
        inside && /> .*\/shim\/[^ ]*:(ncclAllReduce|ncclSend|ncclRecv|ncclGroupStart|ncclGroupEnd|cudaMalloc|cudaFree) \(/ {
            n = $1; gsub(",", "", n)
            match($0, /:[A-Za-z_]+ \(/); fn = substr($0, RSTART + 1, RLENGTH - 3)
            tot += n; list = list sprintf(" %s %.0f", fn, n / calls)
        }
        END {
            per = scen == "coll" ? 1 : (scen == "p2p" ? 4 : 2)
            printf "%-5s %6.0f instructions per call in the shim (%s)\n",
                   scen, tot / calls / per, substr(list, 2)
        }'
done
