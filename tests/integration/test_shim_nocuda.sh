#!/bin/sh
# A process that calls NCCL but never loaded the CUDA runtime (NCCL links
# its own statically): under the default GPU timing the shim must not load
# libcupti or libcudart on its behalf (the dynamic loader's LD_DEBUG=libs
# log shows every search) and must print nothing; the trace notes why it
# has no GPU times and holds every call.
. "$(dirname "$0")/shim_lib.sh"
BENCH=$B/fakes/null/shim_bench
[ -x "$BENCH" ] || { echo "skip: $BENCH not built"; exit 77; }
unset P3D_GPU_TIMING   # the default (auto), not shim_lib.sh's "off"
LD_DEBUG=libs LD_DEBUG_OUTPUT=$T/ld LD_PRELOAD=$SHIM timeout 30 \
    "$BENCH" 1000 1 > "$T/out" 2> "$T/err" || fail "the program failed"
loads=$(cat "$T"/ld.* | grep -c 'find library=lib\(cupti\|cudart\)')
[ "$loads" -eq 0 ] || fail "the shim looked for CUDA libraries $loads times"
grep 'p3dtrace' "$T/err" && fail "the shim printed the lines above"
python3 - "$S/tests/tools" "$T/traces/job" <<'PY' || fail "trace"
import sys
sys.path.insert(0, sys.argv[1])
import p3d_trace
(t,) = p3d_trace.read_dir(sys.argv[2]).values()
notes = [r["text"] for r in t.records if r["type"] == "note"]
ops = [r for r in t.records if r["type"] == "op"]
assert any("no CUDA runtime" in n for n in notes), notes
assert len(ops) >= 1000, len(ops)
assert not any(r["type"] in ("gpu_op", "gpu_span") for r in t.records)
print("no CUDA runtime: nothing loaded, nothing printed, %d ops" % len(ops))
PY
