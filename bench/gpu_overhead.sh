#!/bin/bash
# bench/gpu_overhead.sh - step-time overhead of the shim on the GPU machine
# (issue 10, part 4).  From the repo root, after `make`:
#
#   bash bench/gpu_overhead.sh            # PyTorch loops, about 2-3 minutes
#   bash bench/gpu_overhead.sh megatron   # + Megatron tiny GPT, ~3 min more
#   bash bench/gpu_overhead.sh megatron-only
#   bash bench/gpu_overhead.sh ablate     # which feature costs what in
#                                         # Megatron 4/1/2, ~6 min
#   bash bench/gpu_overhead.sh ablate-tp  # the same for the 8-rank TP loop
#                                         # (4 s per step there: ~25 min)
#   bash bench/gpu_overhead.sh kernels    # us per kernel, 1 GPU, ~1 min
#   bash bench/gpu_overhead.sh megapair   # 2 GPUs: one-GPU Megatron jobs,
#                                         # traced and untraced at once
#   bash bench/gpu_overhead.sh perproc    # a rank per GPU (2+ GPUs): the
#                                         # DDP loop, shim settings, ~4 min
#
# Prints one summary line per comparison ("gpu tp ...", "gpu ddp ...",
# "megatron ..."): plain vs shim medians and the overhead of each pair.
# Environment: PYTHON [python3], P3D_LIB [build/libp3dtrace.so],
#   PAIRS [3], STEPS [150], NPROC [2], MEGATRON_DIR (see run_tiny_gpt.sh),
#   MEGA_ITERS [30], MEGA_TIMEOUT [200 s per ablate run], OUT [/tmp/p3d-gpu-bench-<time>], ONE_GPU [1] (0: a
#   GPU per Megatron rank, for machines with several)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python3}
out=${OUT:-/tmp/p3d-gpu-bench-$(date +%H%M%S)}
export P3D_LIB=${P3D_LIB:-$root/build/libp3dtrace.so}
[ -f "$P3D_LIB" ] || (cd "$root" && make build/libp3dtrace.so) || exit 1
"$py" -c 'import torch; assert torch.cuda.is_available(); print("torch", torch.__version__, "nccl", torch.cuda.nccl.version(), torch.cuda.get_device_name(0))' ||
    { echo "gpu_overhead: torch with CUDA not importable by $py"; exit 1; }
mkdir -p "$out"

# ablate: Megatron TP=4 PP=1 DP=2 as 8 ranks on the one GPU (where the
# slowdown was seen; ABLATE_CFG picks another), untraced, traced with defaults,
# traced without GPU timing, traced with CUDA events instead of CUPTI,
# traced with CUPTI recording every driver call, untraced again
# (the spread between the two untraced runs is the noise).
# Megatron's figure is the median period of its log lines (timestamps,
# tests/gpu/check_megatron.py --period).
log_period_ms() {
    python3 "$root/tests/gpu/check_megatron.py" --period "$1"
}
# mega_run NAME LIB GPUS TP PP NMB ITERS SECONDS: the tiny GPT on one GPU,
# untraced when LIB is empty; log in $out/NAME.log.  MEGA_PORT: the
# master port (else a random one); MEGA_CPUS: taskset's CPU list.
mega_run() {
    local pin=()
    [ -n "${MEGA_CPUS:-}" ] && pin=(taskset -c "$MEGA_CPUS")
    ONE_GPU=${ONE_GPU:-1} GPUS=$3 TP=$4 PP=$5 NMB=$6 ITERS=$7 P3D_LIB=$2 OUT=$out \
        NAME=$1 PORT=${MEGA_PORT:-$((29400 + RANDOM % 100))} timeout "$8" \
        ${pin[@]+"${pin[@]}"} bash "$root/scripts/run_tiny_gpt.sh" \
        > /dev/null 2>&1 || echo "megatron: $1 run failed (log $out/$1.log)"
}
if [ "${1:-}" = ablate-tp ]; then
    variants="gpuoff:P3D_GPU_TIMING=off;events:P3D_GPU_TIMING=events"
    variants="$variants;alldriver:P3D_CUPTI_DRIVER=all"
    exec "$py" "$root/bench/gpu_overhead.py" --out "$out" --pairs 1 \
        --steps "${STEPS:-40}" --nproc 8 --loops tp --variants "$variants"
fi
if [ "${1:-}" = perproc ]; then
    # PERPROC_GPUS [all visible], LOOPS [ddp], PAIRS [3], STEPS [800],
    # VARIANTS: traced runs with other settings added to every pair
    ng=${PERPROC_GPUS:-$(nvidia-smi -L | wc -l)}
    [ "$ng" -ge 2 ] || { echo "gpu_overhead perproc: needs 2+ GPUs"; exit 1; }
    v="all:P3D_CUPTI_DRIVER=all;events:P3D_GPU_TIMING=events"
    v="$v;gpuoff:P3D_GPU_TIMING=off;nostacks:P3D_STACKS=0"
    exec "$py" "$root/bench/gpu_overhead.py" --out "$out" \
        --pairs "${PAIRS:-3}" --steps "${STEPS:-800}" --nproc "$ng" \
        --gpus "$ng" --loops "${LOOPS:-ddp}" --variants "${VARIANTS:-$v}"
fi
# megapair: two one-GPU Megatron jobs at the same time, one untraced on
# one GPU and one traced on the other, swapped every round (so a GPU that
# is faster, and whatever else the host does meanwhile, falls on both
# sides alike).  Each round prints both log periods and the overhead.
# ROUNDS [4], MEGA_ITERS [30], MEGA_NMB [4], PIN [0: cores per job], the model through
# run_tiny_gpt.sh's LAYERS/HIDDEN/HEADS/SEQ/MBS; TRACED_ENV="K=V ..."
# adds settings to the traced job.
# kernels: microseconds per CUDA kernel (bench/kernel_cost.py: a
# launch-bound add, a GPU-bound matmul, small kernels replayed from a CUDA
# graph), untraced and traced with KVARIANTS (NAME:K=V,K=V ...; "shim" =
# the defaults, inside the first kernel window; "cupti" = CUPTI all the
# run; "winpast" = after a 0.2 s window, CUPTI claimed but recording
# nothing; "winoff" = no kernel windows), ROUNDS [2] times interleaved.
if [ "${1:-}" = kernels ]; then
    kv=${KVARIANTS:-"shim: cupti:P3D_GPU_TIMING=cupti winpast:P3D_GPU_WINDOW=0.2 winoff:P3D_GPU_WINDOW=off gpuoff:P3D_GPU_TIMING=off"}
    for r in $(seq 1 "${ROUNDS:-2}"); do
        got=$("$py" "$root/bench/kernel_cost.py")
        echo "kernels round $r plain: us per kernel: $got"
        for v in $kv; do
            e=(LD_PRELOAD="$P3D_LIB" P3D_TRACE_DIR="$out/traces"
               P3D_JOB_ID="k$r-${v%%:*}")
            IFS=, read -r -a set <<< "${v#*:}"
            got=$(env "${e[@]}" ${set[@]+"${set[@]}"} "$py" \
                  "$root/bench/kernel_cost.py")
            echo "kernels round $r ${v%%:*}: us per kernel: $got"
        done
    done
    exit 0
fi
if [ "${1:-}" = megapair ]; then
    [ "$(nvidia-smi -L | wc -l)" -ge 2 ] ||
        { echo "gpu_overhead megapair: needs 2 GPUs"; exit 1; }
    one() {  # one NAME GPU LIB PORT; PIN=N: the job on cores [gN, (g+1)N)
        ( export CUDA_VISIBLE_DEVICES=$2 MEGA_PORT=$4 ONE_GPU=0
          [ "${PIN:-0}" -gt 0 ] &&
              export MEGA_CPUS="$(( $2 * PIN ))-$(( ($2 + 1) * PIN - 1 ))"
          if [ -n "$3" ] && [ -n "${TRACED_ENV:-}" ]; then export $TRACED_ENV; fi
          mega_run "$1" "$3" 1 1 1 "${MEGA_NMB:-4}" "${MEGA_ITERS:-30}" \
                   "${MEGA_TIMEOUT:-200}" )
    }
    for r in $(seq 1 "${ROUNDS:-4}"); do
        tg=$(( r % 2 )); pg=$(( 1 - tg ))
        one "mp$r-plain" "$pg" "" $((29500 + 2 * r)) &
        one "mp$r-shim" "$tg" "$P3D_LIB" $((29501 + 2 * r)) &
        wait
        pm=$(log_period_ms "$out/mp$r-plain.log")
        sm=$(log_period_ms "$out/mp$r-shim.log")
        echo "$r $pg $pm $tg $sm" | awk '{ printf "megatron 1 GPU each, " \
            "round %d: plain (GPU %d) %s ms, shim (GPU %d) %s ms per " \
            "iteration (log period), %+.1f%%\n", $1, $2, $3, $4, $5,
            ($3 > 0 ? 100 * ($5 / $3 - 1) : 0) }'
    done
    exit 0
fi
if [ "${1:-}" = ablate ]; then
    # ABLATE_CFG="GPUS TP PP": ranks (all on GPU 0) and the layout
    set -- ${ABLATE_CFG:-8 4 1}
    cfg="TP=$2 PP=$3 DP=$(($1 / ($2 * $3))), $1 ranks on"
    cfg="$cfg $([ "${ONE_GPU:-1}" = 1 ] && echo 1 GPU || echo a GPU each)"
    base=""
    for v in ${ABLATE_VARIANTS:-plain full gpuoff:P3D_GPU_TIMING=off \
             events:P3D_GPU_TIMING=events alldriver:P3D_CUPTI_DRIVER=all \
             plain2}; do
        name=mega$1-$2-$3-${v%%:*}
        lib=$(case $v in plain*) ;; *) echo "$P3D_LIB" ;; esac)
        ( [ "${v#*:}" != "$v" ] && export "${v#*:}"
          mega_run "$name" "$lib" "$1" "$2" "$3" "${MEGA_NMB:-2}" \
                   "${MEGA_ITERS:-5}" "${MEGA_TIMEOUT:-200}" )
        ms=$(log_period_ms "$out/$name.log")
        base=${base:-$ms}
        echo "$name $ms $base" | awk -v cfg="$cfg" '{ printf "megatron " \
            "%s, %s: %s ms per iteration (log period), %+.1f%% vs plain\n",
            cfg, $1, $2, ($3 > 0 ? 100 * ($2 / $3 - 1) : 0) }'
    done
    exit 0
fi
if [ "${1:-}" != megatron-only ]; then
    "$py" "$root/bench/gpu_overhead.py" --out "$out" --pairs "${PAIRS:-3}" \
        --steps "${STEPS:-150}" --nproc "${NPROC:-2}" || exit 1
fi

# Megatron: the seed's tiny GPT, TP=2 PP=2 on 4 ranks of one GPU, one pair
# (plain first, then traced); Megatron's own "elapsed time per iteration",
# median over the iterations after the 5th.
case ${1:-} in megatron|megatron-only) ;; *) exit 0 ;; esac
mega_ms() {
    sed -n 's/.*elapsed time per iteration (ms): *\([0-9.]*\).*/\1/p' "$1" |
        tail -n +6 | sort -n | awk '{ v[NR] = $1 } END {
            if (NR == 0) { print "nan"; exit }
            print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
for lib in "" "$P3D_LIB"; do
    name=mega-$([ -n "$lib" ] && echo shim || echo plain)
    mega_run "$name" "$lib" 4 2 2 "${NMB:-8}" "${MEGA_ITERS:-30}" 280
done
p=$(mega_ms "$out/mega-plain.log")
s=$(mega_ms "$out/mega-shim.log")
echo "$p $s" | awk '{ printf "megatron tiny GPT TP=2 PP=2 DP=1, 4 ranks on 1 GPU:" \
    " plain %s ms, shim %s ms per iteration (medians); overhead %+.2f%%\n",
    $1, $2, ($1 > 0 ? 100 * ($2 / $1 - 1) : 0) }'
