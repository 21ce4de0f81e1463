#!/bin/bash
# Runs tests/gpu/torch_ops.py (8 ranks, one GPU) under the shim, lazy and
# eager communicator creation, plus once without the shim, and checks that
# the traces hold exactly the ops the script issued and the results match.
#   tests/gpu/run_torch_ops.sh OUTDIR
# Exit 77 when there is no GPU, 1 on any failed check.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: run_torch_ops.sh OUTDIR}
mkdir -p "$out"; out=$(cd "$out" && pwd)
python3 -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
    2>/dev/null || { echo "skip: no CUDA GPU visible to torch"; exit 77; }
lib=$here/build/libp3dtrace.so
analyze=$here/build/p3d-analyze
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export NCCL_SOCKET_IFNAME=lo
N=${N:-8}
fail=0
run() {  # run NAME PRELOAD ARGS...
    name=$1 pre=$2; shift 2
    rm -rf "$out/$name"; mkdir -p "$out/$name"
    env ${pre:+LD_PRELOAD=$pre} P3D_TRACE_DIR="$out/$name/traces" \
        P3D_JOB_ID=job torchrun --nproc_per_node "$N" --master_port 29517 \
        "$here/tests/gpu/torch_ops.py" --out "$out/$name" "$@" \
        > "$out/$name/log" 2>&1
    rc=$?
    echo "$name: exit $rc"
    [ $rc -eq 0 ] || { tail -30 "$out/$name/log"; fail=1; }
}
run plain ""
run lazy "$lib"
run eager "$lib" --eager
for name in lazy eager; do
    [ -d "$out/$name/traces/job" ] || { echo "FAIL $name: no traces"; fail=1; continue; }
    python3 "$here/tests/gpu/check_torch_ops.py" "$analyze" "$out/$name" \
        "$out/$name/traces/job" || fail=1
    "$analyze" "$out/$name/traces/job" > "$out/$name/report.txt" 2>&1 ||
        { echo "FAIL $name: p3d-analyze exit $?"; fail=1; }
    "$analyze" --json "$out/$name/report.json" "$out/$name/traces/job" \
        > /dev/null 2>&1
    python3 - "$out/plain" "$out/$name" <<'PY' || fail=1
import glob, json, os, sys
plain, traced = sys.argv[1:3]
for p in sorted(glob.glob(os.path.join(plain, "issued-rank*.json"))):
    q = os.path.join(traced, os.path.basename(p))
    a, b = json.load(open(p))["checksum"], json.load(open(q))["checksum"]
    print("%s %s %s: checksum plain %r traced %r" % (
        "PASS" if a == b else "FAIL", os.path.basename(traced),
        os.path.basename(p), a, b))
    if a != b:
        sys.exit(1)
PY
done
grep -h "p3dtrace" "$out"/lazy/log "$out"/eager/log | sort | uniq -c | head -20
exit $fail
