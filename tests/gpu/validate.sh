#!/bin/bash
# validate.sh - the GPU validation suite (issue 9), one command.
#
#   tests/gpu/validate.sh [-o OUTDIR] [part ...]
#
# Parts (default: torch mem nccl megatron), each time-bounded, each
# printing PASS/FAIL lines with figures and writing OUTDIR/<part>.txt:
#   torch      8-rank PyTorch job under the shim, lazy and eager
#              communicators: per-rank op counts/bytes equal what the
#              script issued, results equal without the shim
#              (tests/gpu/run_torch_ops.sh)                        ~1.5 min
#   mem        memory peaks equal torch.cuda.max_memory_reserved() for the
#              three allocator settings (tests/gpu/issue4_run.sh mem) ~1 min
#   nccl       nccl-tests all_reduce/all_gather/reduce_scatter/sendrecv,
#              8 processes, per-size GPU time and busbw within 5% for
#              sizes >= 1 MB (tests/gpu/nccl_tests.sh)   ~3 min build + ~2
#   megatron [TP/PP/DP ...]  Megatron-LM tiny GPT per configuration,
#              traced and untraced (tests/gpu/megatron.sh)  ~1.3 min each
#   sweep      scripts/sweep.sh --one-gpu (experiments A-E, traced only,
#              ITERS 6, NMB 4), each run checked against Megatron's log
#              like megatron (no loss check) (tests/gpu/sweep_check.sh) ~8 min
# Configurations may follow "megatron": validate.sh megatron 2/2/2 1/4/2.
# OUTDIR defaults to $OUT (the device machine's return folder) or
# /tmp/p3d-val-out; logs and traces stay under WORK (/tmp/p3d-val).
# Time bounds: torch and mem VAL_TIMEOUT (360 s) each, nccl
# VAL_NCCL_TIMEOUT (540 s), megatron MG_TIMEOUT (240 s) per run; a part
# killed by its bound counts as FAIL (exit 124 in its "==" line).
# Always set here: NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
# NVSHMEM_DISABLE_NVLS=1 NCCL_SOCKET_IFNAME=lo.
# Exit 0 all passed, 77 no GPU (nothing ran), 1 any failure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
outdir=${OUT:-/tmp/p3d-val-out}
if [ "${1:-}" = -o ]; then outdir=${2:?-o needs a folder}; shift 2; fi
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export NVSHMEM_DISABLE_NVLS=1 NCCL_SOCKET_IFNAME=lo
export WORK_ROOT=${WORK:-/tmp/p3d-val}

if ! command -v nvidia-smi > /dev/null || ! nvidia-smi -L > /dev/null 2>&1; then
    echo "skip: no NVIDIA GPU here (nvidia-smi -L failed); the suite needs one"
    exit 77
fi
mkdir -p "$outdir" "$WORK_ROOT"
outdir=$(cd "$outdir" && pwd)
if [ ! -f "$root/build/libp3dtrace.so" ] || [ ! -x "$root/build/p3d-analyze" ]; then
    (cd "$root" && make -j"$(nproc)" build/libp3dtrace.so build/p3d-analyze \
        > "$WORK_ROOT/make.log" 2>&1) ||
        { echo "FAIL build (see $WORK_ROOT/make.log)"; exit 1; }
fi

# Split "megatron 2/2/2 1/4/2 nccl" into parts and megatron's configurations.
parts=() mg_cfgs=()
for a in "${@:-torch mem nccl megatron}"; do
    for w in $a; do
        case $w in
            */*) mg_cfgs+=("$w") ;;
            *) parts+=("$w") ;;
        esac
    done
done
[ ${#parts[@]} -eq 0 ] && parts=(megatron)

versions() {
    python3 - <<'PY' 2>&1 | tail -1
import torch
v = torch.cuda.nccl.version()
v = ".".join(map(str, v)) if isinstance(v, tuple) else v
print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", v,
      torch.cuda.get_device_name(0))
PY
    "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" --version 2>/dev/null | tail -2 | head -1
    echo "p3dtrace $(git -C "$root" rev-parse --short HEAD 2>/dev/null)"
}

rc=0
t_all=$(date +%s)
for p in "${parts[@]}"; do
    s=$outdir/$p.txt
    : > "$s"
    versions >> "$s"
    t0=$(date +%s)
    echo "== $p"
    case $p in
        torch)
            WORK=$WORK_ROOT/torch
            timeout -k 10 "${VAL_TIMEOUT:-360}" bash "$here/run_torch_ops.sh" \
                "$WORK" > "$WORK_ROOT/torch.log" 2>&1
            r=$?
            grep -E '^(PASS|FAIL|skip)|: exit [0-9]' "$WORK_ROOT/torch.log" |
                tee -a "$s" ;;
        mem)
            OUT=$WORK_ROOT/mem timeout -k 10 "${VAL_TIMEOUT:-360}" \
                bash "$here/issue4_run.sh" mem > "$WORK_ROOT/mem.log" 2>&1
            r=$?
            grep -E '^(PASS|FAIL|==)' "$WORK_ROOT/mem.log" | tee -a "$s" ;;
        nccl)
            WORK=$WORK_ROOT/nccl timeout -k 10 "${VAL_NCCL_TIMEOUT:-540}" \
                bash "$here/nccl_tests.sh" "$s"
            r=$? ;;
        megatron)
            WORK=$WORK_ROOT/megatron bash "$here/megatron.sh" "$s" \
                ${mg_cfgs[@]+"${mg_cfgs[@]}"}
            r=$? ;;
        sweep)
            WORK=$WORK_ROOT/sweep bash "$here/sweep_check.sh" "$s"
            r=$? ;;
        *) echo "unknown part '$p' (torch mem nccl megatron sweep)" | tee -a "$s"
           r=2 ;;
    esac
    v=$([ $r -eq 0 ] && echo PASS || { [ $r -eq 77 ] && echo SKIP; } || echo FAIL)
    [ $r -eq 0 ] || [ $r -eq 77 ] || rc=1
    echo "== $p: $v (exit $r, $(( $(date +%s) - t0 )) s)" | tee -a "$s"
done
echo "== validate: $([ $rc -eq 0 ] && echo PASS || echo FAIL) ($(( $(date +%s) - t_all )) s); summaries in $outdir"
exit $rc
