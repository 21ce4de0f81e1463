#!/bin/sh
# The CPU test doubles (fake NCCL/cudart) and the trace reader work:
# every collective's result, grouped p2p, split, PreMulSum, abort, kernel
# reports across 2, 3 and 8 processes; p3d_trace.py on hand-built files.
set -eu
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
st="$P3D_BUILD/fakes/p3dfake-selftest"
[ -x "$st" ] || { echo "no $st"; exit 1; }
for n in 2 3 8; do
    "$st" $n
done
python3 "$P3D_SRC/tests/tools/p3d_trace_selftest.py"
