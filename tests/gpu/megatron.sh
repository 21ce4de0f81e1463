#!/bin/bash
# megatron.sh - run Megatron-LM's pretrain_gpt.py (the seed's tiny GPT,
# scripts/run_tiny_gpt.sh) as 8 ranks on GPU 0, with and without the shim,
# for each TP/PP/DP configuration given, and check the analyzer against
# Megatron's own log (tests/gpu/check_megatron.py).
#
#   tests/gpu/megatron.sh SUMMARY_FILE [TP/PP/DP ...]
#       default configurations: 1/1/8 2/1/4 4/1/2 2/2/2 1/4/2
#
# Environment (defaults in brackets):
#   MEGATRON_DIR  Megatron-LM checkout        [<repo>/third_party/Megatron-LM]
#   WORK          logs and traces             [/tmp/p3d-val/megatron]
#   MG_ITERS      iterations per run          [5]
#   MG_NMB        micro-batches per iteration [8]
#   MG_PAR        1: the untraced run of a configuration runs at the same
#                 time as its traced run (halves the wall time; both share
#                 the GPU, so step times are those of a loaded GPU, the same
#                 for Megatron's log and the trace); 0: one after the other
#                                             [1]
#   MG_REPEAT     1: a second untraced run, to measure the untraced spread
#                 of the loss                 [0]
#   MG_TIMEOUT    seconds per run             [240]
#   P3D_LIB       the shim                    [<repo>/build/libp3dtrace.so]
#   RUN_GPT       the runner, called as scripts/run_tiny_gpt.sh is (the
#                 CPU-side test gives a fake one; no GPU check then)
#                                             [<repo>/scripts/run_tiny_gpt.sh]
# Exit 77 without a GPU, 1 on any failed check.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
summary=${1:?usage: megatron.sh SUMMARY_FILE [TP/PP/DP ...]}
shift
configs=${*:-1/1/8 2/1/4 4/1/2 2/2/2 1/4/2}
export MEGATRON_DIR=${MEGATRON_DIR:-$root/third_party/Megatron-LM}
WORK=${WORK:-/tmp/p3d-val/megatron}
ITERS=${MG_ITERS:-5}; NMB=${MG_NMB:-8}; PAR=${MG_PAR:-1}
TMO=${MG_TIMEOUT:-240}
P3D_LIB=${P3D_LIB:-$root/build/libp3dtrace.so}
analyze=$root/build/p3d-analyze
say() { echo "$*"; echo "$*" >> "$summary"; }

RUN_GPT=${RUN_GPT:-}
[ -n "$RUN_GPT" ] ||
python3 -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
    2>/dev/null || { say "SKIP megatron: no CUDA GPU visible to torch"; exit 77; }
[ -f "$MEGATRON_DIR/pretrain_gpt.py" ] ||
    { say "FAIL megatron: no pretrain_gpt.py in MEGATRON_DIR=$MEGATRON_DIR"; exit 1; }
[ -f "$P3D_LIB" ] && [ -x "$analyze" ] ||
    { say "FAIL megatron: build/libp3dtrace.so or build/p3d-analyze missing (make)"; exit 1; }
mkdir -p "$WORK"
# An exported tree (git archive) has no .git: then MEGATRON_DIR/COMMIT, if
# whoever exported it wrote one, else "unknown"; never the enclosing repo's.
if [ -e "$MEGATRON_DIR/.git" ]; then
    mg_commit=$(git -C "$MEGATRON_DIR" rev-parse --short HEAD 2>/dev/null)
else
    mg_commit=$(head -c 40 "$MEGATRON_DIR/COMMIT" 2>/dev/null)
fi
mg_commit=${mg_commit:-unknown}
say "megatron: Megatron-LM $mg_commit, tiny GPT (8 layers, hidden 512), 8 ranks on GPU 0, $ITERS iterations, $NMB micro-batches, MG_PAR=$PAR"

one_run() {  # one_run NAME PORT LIB TP PP
    local name=$1 port=$2 lib=$3 tp=$4 pp=$5
    ONE_GPU=1 GPUS=8 TP=$tp PP=$pp NMB=$NMB ITERS=$ITERS OUT="$WORK" \
        NAME=$name PORT=$port P3D_LIB=$lib \
        EXTRA_ARGS="--log-memory-interval 1" \
        timeout -k 10 "$TMO" "${RUN_GPT:-$root/scripts/run_tiny_gpt.sh}" \
        > "$WORK/$name.out" 2>&1
}

fail=0
port=29600
for cfg in $configs; do
    IFS=/ read -r tp pp dp <<< "$cfg"
    if [ -z "$dp" ] || (( tp * pp * dp != 8 )); then
        say "FAIL megatron $cfg: not TP/PP/DP with TP*PP*DP = 8"; fail=1; continue
    fi
    t0=$(date +%s)
    base=tp$tp-pp$pp-dp$dp
    rm -rf "$WORK/traces/$base"
    if [ "$PAR" = 1 ]; then
        one_run "$base-plain" $((port + 1)) "" "$tp" "$pp" & p1=$!
        one_run "$base" $port "$P3D_LIB" "$tp" "$pp"; r0=$?
        wait $p1; r1=$?
    else
        one_run "$base-plain" $((port + 1)) "" "$tp" "$pp"; r1=$?
        one_run "$base" $port "$P3D_LIB" "$tp" "$pp"; r0=$?
    fi
    r2=0
    if [ "${MG_REPEAT:-0}" = 1 ]; then
        one_run "$base-plain2" $((port + 2)) "" "$tp" "$pp"; r2=$?
    fi
    port=$((port + 10))
    if [ $r0 -ne 0 ] || [ $r1 -ne 0 ] || [ $r2 -ne 0 ]; then
        tail -15 "$WORK/$base.out"
        say "FAIL megatron $cfg: exit traced $r0 untraced $r1 repeat $r2 (logs $WORK/$base*.log)"
        fail=1; continue
    fi
    "$analyze" --json "$WORK/$base.json" "$WORK/traces/$base" \
        > "$WORK/$base.report.txt" 2>&1 ||
        { say "FAIL megatron $cfg: p3d-analyze exit $?"; fail=1; continue; }
    python3 "$here/check_megatron.py" --tp "$tp" --pp "$pp" --dp "$dp" \
        --nmb "$NMB" --iters "$ITERS" --json "$WORK/$base.json" \
        --log "$WORK/$base.log" --plain-log "$WORK/$base-plain.log" \
        --name "$cfg" --summary "$summary" || fail=1
    if [ "${MG_REPEAT:-0}" = 1 ]; then
        python3 - "$WORK/$base-plain.log" "$WORK/$base-plain2.log" <<'PY' |
import re, sys
ls = [re.findall(r"lm loss:\s*([0-9.Ee+-]+)", open(p).read())
      for p in sys.argv[1:]]
print("INFO megatron untraced repeat: %s (%d iterations)" % (
    "identical loss" if ls[0] == ls[1] else "loss differs: %s vs %s" % tuple(
        " ".join(x) for x in ls), len(ls[0])))
PY
        tee -a "$summary"
    fi
    say "megatron $cfg: $(( $(date +%s) - t0 )) s"
done
say "megatron: $([ $fail -eq 0 ] && echo PASS || echo FAIL)"
exit $fail
