#!/bin/bash
# sweep_check.sh - the seed's sweep (scripts/sweep.sh --one-gpu, experiments
# A-E as 8 ranks on GPU 0, traced only) checked run by run against
# Megatron's own log with check_megatron.py: the quickest way to validate
# every configuration in one GPU call (~8 min).  The loss comparison with
# an untraced twin needs megatron.sh; this part has no untraced runs.
#
#   tests/gpu/sweep_check.sh SUMMARY_FILE
#
# Environment (defaults in brackets): WORK [/tmp/p3d-val/sweep], GPUS [8],
# ITERS [6], NMB [4], RUN_TIMEOUT seconds per run [200], and whatever
# scripts/sweep.sh takes (MEGATRON_DIR, P3D_LIB, RUN_TINY_GPT, EXPS ...).
# Exit 77 without a GPU (unless RUN_TINY_GPT is given), 1 on any FAIL.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
summary=${1:?usage: sweep_check.sh SUMMARY_FILE}
WORK=${WORK:-/tmp/p3d-val/sweep}
export GPUS=${GPUS:-8} ITERS=${ITERS:-6} NMB=${NMB:-4}
export RUN_TIMEOUT=${RUN_TIMEOUT:-200}
export EXTRA_ARGS="${EXTRA_ARGS:-} --log-memory-interval 1"
analyze=${P3D_ANALYZE:-$root/build/p3d-analyze}
say() { echo "$*"; echo "$*" >> "$summary"; }

[ -n "${RUN_TINY_GPT:-}" ] ||
python3 -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
    2>/dev/null || { say "SKIP sweep: no CUDA GPU visible to torch"; exit 77; }
rm -rf "$WORK"
mkdir -p "$WORK"
say "sweep: scripts/sweep.sh --one-gpu, GPUS=$GPUS ITERS=$ITERS NMB=$NMB"
OUT=$WORK bash "$root/scripts/sweep.sh" --one-gpu > "$WORK/sweep.out" 2>&1
r=$?
cat "$WORK/compare.md" >> "$summary" 2>/dev/null
grep "skipping\|failed" "$WORK/sweep.out" | tee -a "$summary"
fail=$(( r != 0 ))
n=0
for d in "$WORK"/traces/*; do
    [ -d "$d" ] || continue
    name=$(basename "$d")
    IFS=- read -r _ tp pp cp dp <<< "$name"
    n=$((n + 1))
    "$analyze" --json "$WORK/$name.json" "$d" > "$WORK/$name.report.txt" \
        2>&1 || { say "FAIL sweep $name: p3d-analyze exit $?"; fail=1; continue; }
    python3 "$here/check_megatron.py" --tp "${tp#tp}" --pp "${pp#pp}" \
        --dp "${dp#dp}" --nmb "$NMB" --iters "$ITERS" \
        --json "$WORK/$name.json" --log "$WORK/$name.log" --name "$name" \
        --summary "$summary" || fail=1
done
(( n > 0 )) || { say "FAIL sweep: no run left traces (see $WORK/sweep.out)"; fail=1; }
say "sweep: $([ $fail -eq 0 ] && echo PASS || echo FAIL), $n runs checked"
exit $fail
