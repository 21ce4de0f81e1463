#!/bin/bash
# Runs the seed's tiny GPT (8 layers, hidden 512, 8 heads; LAYERS, HIDDEN and
# HEADS make it bigger) with Megatron-LM's pretrain_gpt.py on mock data under
# libp3dtrace.so, one configuration.
#
#   MEGATRON_DIR=~/Megatron-LM GPUS=8 TP=2 PP=2 CP=1 scripts/run_tiny_gpt.sh
#
# Environment (defaults in brackets):
#   MEGATRON_DIR  Megatron-LM checkout                      [third_party/Megatron-LM]
#   GPUS          number of ranks                           [8]
#   TP PP CP      parallel sizes; DP = GPUS/(TP*PP*CP)      [1 1 1]
#   NMB           micro-batches per iteration               [8]
#   MBS           micro-batch size                          [1]
#   SEQ           sequence length                           [512]
#   ITERS         training iterations                       [10]
#   LAYERS HIDDEN HEADS  model size                         [8 512 8]
#   ONE_GPU=1     all ranks on GPU 0, each its own NCCL "host" (NCCL_HOSTID)
#   P3D_LIB       libp3dtrace.so to preload; P3D_LIB= (empty) runs untraced
#                                                           [build/libp3dtrace.so]
#   OUT           output folder: OUT/traces/NAME/, OUT/NAME.log [runs]
#   NAME          run name                                  [tpTP-ppPP-cpCP-dpDP]
#   PORT          master port                               [29500]
#   EXTRA_ARGS    more pretrain_gpt.py flags
# Exit status is Megatron's.  Prints the p3d-analyze command to run after.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
MEGATRON_DIR=${MEGATRON_DIR:-$here/third_party/Megatron-LM}
GPUS=${GPUS:-8}; TP=${TP:-1}; PP=${PP:-1}; CP=${CP:-1}
NMB=${NMB:-8}; MBS=${MBS:-1}; SEQ=${SEQ:-512}; ITERS=${ITERS:-10}
P3D_LIB=${P3D_LIB-$here/build/libp3dtrace.so}
OUT=${OUT:-runs}; PORT=${PORT:-29500}
LAYERS=${LAYERS:-8}; HIDDEN=${HIDDEN:-512}; HEADS=${HEADS:-8}

die() { echo "run_tiny_gpt.sh: $*" >&2; exit 2; }
[ -f "$MEGATRON_DIR/pretrain_gpt.py" ] || die "no pretrain_gpt.py in MEGATRON_DIR='$MEGATRON_DIR'"
(( GPUS % (TP * PP * CP) == 0 )) || die "GPUS=$GPUS not divisible by TP*PP*CP=$((TP*PP*CP))"
(( HEADS % TP == 0 )) || die "TP=$TP does not divide $HEADS heads"
(( LAYERS % PP == 0 )) || die "PP=$PP does not divide $LAYERS layers"
DP=$(( GPUS / (TP * PP * CP) ))
GBS=$(( MBS * DP * NMB ))
NAME=${NAME:-tp$TP-pp$PP-cp$CP-dp$DP}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
IMPL=local
if (( CP > 1 )); then
    python3 -c 'import transformer_engine' 2>/dev/null ||
        die "CP=$CP needs TransformerEngine, which is not importable here"
    IMPL=transformer_engine
fi

wrapper=$OUT/.rank_wrapper_$NAME.sh
cat > "$wrapper" <<WRAP
#!/bin/bash
export CUDA_DEVICE_MAX_CONNECTIONS=1 NCCL_NVLS_ENABLE=0
export TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if [ "${ONE_GPU:-0}" = 1 ]; then
    export NCCL_HOSTID=p3dhost\$RANK NCCL_SOCKET_IFNAME=lo LOCAL_RANK=0
fi
cd "$MEGATRON_DIR"
exec python3 pretrain_gpt.py "\$@"
WRAP
chmod +x "$wrapper"

preload=()
if [ -n "$P3D_LIB" ]; then
    [ -f "$P3D_LIB" ] || die "P3D_LIB='$P3D_LIB' does not exist (run make)"
    preload=(env LD_PRELOAD="$P3D_LIB" P3D_TRACE_DIR="$OUT/traces" P3D_JOB_ID="$NAME")
fi
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
rm -rf "${OUT:?}/traces/$NAME"
set +e
"${preload[@]}" torchrun --nproc_per_node "$GPUS" --nnodes 1 \
  --master_addr 127.0.0.1 --master_port "$PORT" --no-python "$wrapper" \
  --tensor-model-parallel-size "$TP" --pipeline-model-parallel-size "$PP" \
  --context-parallel-size "$CP" \
  --num-layers $LAYERS --hidden-size $HIDDEN --num-attention-heads $HEADS \
  --seq-length "$SEQ" --max-position-embeddings "$SEQ" \
  --micro-batch-size "$MBS" --global-batch-size "$GBS" --train-iters "$ITERS" \
  --lr 1e-4 --min-lr 1e-5 --lr-decay-style constant --weight-decay 0.01 \
  --clip-grad 1.0 --mock-data --tokenizer-type NullTokenizer --vocab-size 32000 \
  --transformer-impl "$IMPL" --no-masked-softmax-fusion \
  --no-gradient-accumulation-fusion --no-persist-layer-norm \
  --attention-dropout 0 --hidden-dropout 0 --bf16 --use-distributed-optimizer \
  --distributed-backend nccl --eval-iters 0 --eval-interval 1000000 \
  --log-interval 1 --seed 1234 ${EXTRA_ARGS:-} 2>&1 | tee "$OUT/$NAME.log"
rc=${PIPESTATUS[0]}
set -e
if [ -n "$P3D_LIB" ]; then
    echo "run_tiny_gpt.sh: traces in $OUT/traces/$NAME; analyse with:"
    echo "  p3d-analyze $OUT/traces/$NAME"
fi
exit "$rc"
