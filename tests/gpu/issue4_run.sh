#!/bin/bash
# issue4_run.sh - run the issue 4 GPU validations on the GPU machine and
# print PASS/FAIL lines with figures.
#
# Usage (repo root):  bash tests/gpu/issue4_run.sh [mem] [timing] [overhead]
#   no argument = all three (about 6-9 minutes: run them one per command
#   if a command may not exceed 10 minutes).
# Environment: PYTHON (default python3, must import torch), P3D_LIB
#   (default build/libp3dtrace.so, built with `make build/libp3dtrace.so`
#   if missing), OUT (default /tmp/p3d-issue4-<time>), NPROC (default 2
#   ranks sharing GPU 0), QUICK=1 (sizes up to 64 MB, 2 overhead pairs).
# "overhead" is the DDP loop of bench/gpu_overhead.py: figures only (a
# benchmark, not a check), it fails only if a run fails.
# Exit 0 only if every check passed.  Logs and traces stay under $OUT.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=${PYTHON:-python3}
out=${OUT:-/tmp/p3d-issue4-$(date +%H%M%S)}
nproc=${NPROC:-2}
export P3D_LIB=${P3D_LIB:-$root/build/libp3dtrace.so}
if [ ! -f "$P3D_LIB" ]; then
    (cd "$root" && make build/libp3dtrace.so) || { echo "FAIL build"; exit 1; }
fi
"$py" -c 'import torch, sys; assert torch.cuda.is_available(); print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), torch.cuda.get_device_name(0))' \
    || { echo "FAIL torch with CUDA not importable by $py"; exit 1; }
mkdir -p "$out"
parts=${*:-mem timing overhead}
max_mb=1024; pairs=4
if [ "${QUICK:-0}" = 1 ]; then max_mb=64; pairs=2; fi
rc=0
for p in $parts; do
    t0=$(date +%s)
    echo "== issue4 $p (output under $out)"
    case $p in
        mem) "$py" "$here/issue4_mem.py" --out "$out" --nproc "$nproc" ;;
        timing) "$py" "$here/issue4_timing.py" --out "$out" --nproc "$nproc" \
                    --max-mb "$max_mb" ;;
        overhead) "$py" "$root/bench/gpu_overhead.py" --out "$out" \
                      --nproc "$nproc" --pairs "$pairs" --loops ddp ;;
        *) echo "unknown part $p"; false ;;
    esac
    r=$?
    [ $r -eq 0 ] || rc=1
    echo "== issue4 $p: $([ $r -eq 0 ] && echo PASS || echo FAIL) ($(( $(date +%s) - t0 )) s)"
done
echo "== issue4 overall: $([ $rc -eq 0 ] && echo PASS || echo FAIL)"
exit $rc
