#!/bin/sh
# The CPU test doubles (fake NCCL/cudart) and the trace reader work:
# every collective's result, grouped p2p, split, PreMulSum, abort, kernel
# reports across 2, 3 and 8 processes, synchronous and P3D_FAKE_ASYNC=1;
# p3d_trace.py on hand-built files.
set -eu
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
st="$P3D_BUILD/fakes/p3dfake-selftest"
[ -x "$st" ] || { echo "no $st"; exit 1; }
for n in 2 3 8; do
    "$st" $n
done
# the same with asynchronous streams (work runs on per-stream threads)
for n in 2 8; do
    P3D_FAKE_ASYNC=1 "$st" $n
done
python3 "$P3D_SRC/tests/tools/p3d_trace_selftest.py"
