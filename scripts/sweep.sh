#!/bin/bash
# Runs the seed's experiments A-F (the tiny GPT under p3dtrace, one
# configuration each, with scripts/run_tiny_gpt.sh) and ends with the
# comparison table from p3d-analyze --compare.
#
#   scripts/sweep.sh [--one-gpu] [--only A,C,...] [--dry-run]
#
#   exp  TP PP CP DP (DP = GPUS / (TP*PP*CP); the seed's values for 8 GPUs)
#   A    1  1  1  8
#   B    2  1  1  4
#   C    4  1  1  2
#   D    2  2  1  2
#   E    1  4  1  2
#   F    2  2  2  1   (CP needs TransformerEngine)
#
# Illegal configurations are skipped with the reason: GPUS not divisible
# by TP*PP*CP, attention heads (8) not divisible by TP, layers (8) not
# divisible by PP, CP > 1 without TransformerEngine.
#
# Options:
#   --one-gpu     every rank on GPU 0, each its own NCCL host (ONE_GPU=1 of
#                 run_tiny_gpt.sh): structure and schedules are real,
#                 bandwidths are not
#   --only LIST   run only these experiments (e.g. A,D)
#   --dry-run     print what would run, run nothing
# Environment:
#   GPUS [8], ITERS [10], OUT [runs/sweep]: traces in OUT/traces/NAME,
#   logs in OUT/NAME.log, the table in OUT/compare.md and OUT/compare.json;
#   NMB, MBS, SEQ, MEGATRON_DIR, P3D_LIB, EXTRA_ARGS: passed on;
#   RUN_TIMEOUT: seconds per run (0 = none) [0];
#   RUN_TINY_GPT: the runner [scripts/run_tiny_gpt.sh];
#   P3D_ANALYZE: the analyzer [build/p3d-analyze];
#   PYTHON: the python that must import transformer_engine for CP [python3];
#   EXPS: the experiment list, "NAME:TP:PP:CP ..." [the table above].
# Exit status: 0 if every run that was legal succeeded, 1 if a run failed,
# 2 on bad usage.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
GPUS=${GPUS:-8}
ITERS=${ITERS:-10}
OUT=${OUT:-runs/sweep}
RUN_TIMEOUT=${RUN_TIMEOUT:-0}
RUN_TINY_GPT=${RUN_TINY_GPT:-$here/scripts/run_tiny_gpt.sh}
P3D_ANALYZE=${P3D_ANALYZE:-$here/build/p3d-analyze}
PYTHON=${PYTHON:-python3}
EXPS=${EXPS:-"A:1:1:1 B:2:1:1 C:4:1:1 D:2:2:1 E:1:4:1 F:2:2:2"}
LAYERS=8
HEADS=8

usage() {
    sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}

one_gpu=0
only=""
dry=0
while [ $# -gt 0 ]; do
    case $1 in
        --one-gpu) one_gpu=1; shift ;;
        --only) [ $# -ge 2 ] || usage; only=",$2,"; shift 2 ;;
        --only=*) only=",${1#--only=},"; shift ;;
        --dry-run) dry=1; shift ;;
        -h|--help) usage ;;
        *) echo "sweep.sh: unknown argument '$1'" >&2; usage ;;
    esac
done
case $GPUS in ''|*[!0-9]*|0) echo "sweep.sh: GPUS='$GPUS' is not a" \
    "positive number" >&2; exit 2 ;; esac
case $ITERS in ''|*[!0-9]*|0) echo "sweep.sh: ITERS='$ITERS' is not a" \
    "positive number" >&2; exit 2 ;; esac
case $RUN_TIMEOUT in ''|*[!0-9]*) echo "sweep.sh: RUN_TIMEOUT='$RUN_TIMEOUT'" \
    "is not a number" >&2; exit 2 ;; esac
# Every name --only gives must be an experiment (a typo would run nothing)
for want in ${only//,/ }; do
    known=0
    for e in $EXPS; do [ "${e%%:*}" = "$want" ] && known=1; done
    [ $known = 1 ] || { echo "sweep.sh: --only: no experiment '$want'" \
        "(have: $(for e in $EXPS; do printf '%s ' "${e%%:*}"; done))" >&2
        exit 2; }
done

# Why TP/PP/CP cannot run on GPUS ranks; empty if they can.
illegal() {
    local tp=$1 pp=$2 cp=$3
    if (( tp < 1 || pp < 1 || cp < 1 )); then
        echo "TP, PP and CP must be at least 1"
    elif (( GPUS % (tp * pp * cp) != 0 )); then
        echo "world size $GPUS is not divisible by TP*PP*CP=$((tp*pp*cp))"
    elif (( HEADS % tp != 0 )); then
        echo "$HEADS attention heads are not divisible by TP=$tp"
    elif (( LAYERS % pp != 0 )); then
        echo "$LAYERS layers are not divisible by PP=$pp"
    elif (( cp > 1 )) && ! "$PYTHON" -c 'import transformer_engine' \
            >/dev/null 2>&1; then
        echo "CP=$cp needs TransformerEngine, which $PYTHON cannot import"
    fi
}

# --dry-run writes nothing: skips go to /dev/null, paths stay as given
skipped=/dev/null
if ((!dry)); then
    mkdir -p "$OUT" || exit 2
    OUT=$(cd "$OUT" && pwd)
    skipped=$OUT/skipped.txt
    : > "$skipped"
fi
dirs=()
failed=()
port=29500
for e in $EXPS; do
    IFS=: read -r name tp pp cp <<< "$e"
    for v in "$tp" "$pp" "$cp"; do
        case $v in ''|*[!0-9]*) echo "sweep.sh: bad EXPS entry '$e'" \
            "(want NAME:TP:PP:CP)" >&2; exit 2 ;; esac
    done
    [ -z "$only" ] || [[ $only == *",$name,"* ]] || continue
    why=$(illegal "$tp" "$pp" "$cp")
    if [ -n "$why" ]; then
        echo "sweep.sh: skipping $name (TP=$tp PP=$pp CP=$cp): $why" |
            tee -a "$skipped" >&2
        continue
    fi
    dp=$(( GPUS / (tp * pp * cp) ))
    run="$name-tp$tp-pp$pp-cp$cp-dp$dp"
    port=$((port + 1))
    echo "sweep.sh: $name: TP=$tp PP=$pp CP=$cp DP=$dp on $GPUS ranks" \
        "$( ((one_gpu)) && echo '(all on GPU 0)')-> $OUT/traces/$run" >&2
    ((dry)) && continue
    cmd=(env GPUS="$GPUS" TP="$tp" PP="$pp" CP="$cp" ITERS="$ITERS"
         OUT="$OUT" NAME="$run" PORT="$port" ONE_GPU="$one_gpu"
         "$RUN_TINY_GPT")
    if (( RUN_TIMEOUT > 0 )); then
        cmd=(timeout --kill-after=30 "$RUN_TIMEOUT" "${cmd[@]}")
    fi
    "${cmd[@]}" > "$OUT/$run.out" 2>&1
    rc=$?
    if (( rc != 0 )); then
        echo "sweep.sh: $name failed (exit $rc); see $OUT/$run.out" >&2
        failed+=("$name")
    fi
    # a failed run's traces still tell why (OOM, hang): keep its row
    [ -d "$OUT/traces/$run" ] && dirs+=("$OUT/traces/$run")
done
((dry)) && exit 0
if (( ${#dirs[@]} == 0 )); then
    echo "sweep.sh: no run produced traces" >&2
    exit 1
fi
"$P3D_ANALYZE" -q --compare --json "$OUT/compare.json" "${dirs[@]}" \
    > /dev/null 2> "$OUT/compare.err"
"$P3D_ANALYZE" -q --compare "${dirs[@]}" > "$OUT/compare.md" \
    2>> "$OUT/compare.err"
cat "$OUT/compare.md"
if [ -s "$OUT/skipped.txt" ]; then
    echo
    echo "skipped:"
    sed 's/^sweep.sh: skipping /  /' "$OUT/skipped.txt"
fi
if (( ${#failed[@]} )); then
    echo "sweep.sh: failed runs: ${failed[*]}" >&2
    exit 1
fi
exit 0
