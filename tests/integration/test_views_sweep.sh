#!/bin/sh
# scripts/sweep.sh with a stand-in for run_tiny_gpt.sh (RUN_TINY_GPT) that
# logs what it was asked to run and writes a generated trace set of that
# layout: the experiments A-F run or are skipped with the right reason
# for GPUS=8, 4 and 6 (divisibility, heads % TP, layers % PP, CP without
# TransformerEngine), --one-gpu and ITERS reach the runner, a failed run
# is reported and its traces kept, the table ends the sweep, bad
# arguments exit 2.  Also checks the scripts with bash -n and shellcheck.
set -u
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
command -v bash >/dev/null || { echo "skip: no bash"; exit 77; }
S=$P3D_SRC/scripts/sweep.sh
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

for s in sweep.sh run_tiny_gpt.sh; do
    bash -n "$P3D_SRC/scripts/$s" || fail "bash -n $s"
done
if command -v shellcheck >/dev/null; then
    shellcheck -S warning "$S" "$P3D_SRC/scripts/run_tiny_gpt.sh" \
        "$P3D_SRC/scripts/p3d-run" || fail "shellcheck"
fi

. "$P3D_SRC/tests/integration/gen_lib.sh"
gen_find "$T"
cat > "$T/stub.sh" <<EOF
#!/bin/sh
echo "\$NAME TP=\$TP PP=\$PP CP=\$CP GPUS=\$GPUS ITERS=\$ITERS ONE_GPU=\$ONE_GPU" >> "$T/log"
mkdir -p "\$OUT/traces"
dp=\$((GPUS / (TP * PP * CP)))
"$G" --tp \$TP --pp \$PP --cp \$CP --dp \$dp --job "\$NAME" \
    --cmd "--tensor-model-parallel-size \$TP --pipeline-model-parallel-size \$PP --context-parallel-size \$CP" \
    "\$OUT/traces/\$NAME" > /dev/null || exit 3
case "\$NAME" in \${STUB_FAIL:-none}*) exit 1 ;; esac
EOF
chmod +x "$T/stub.sh"
export RUN_TINY_GPT="$T/stub.sh" P3D_ANALYZE="$P3D_BUILD/p3d-analyze"

# 8 GPUs, no TransformerEngine: A-E run, F skipped
: > "$T/log"
GPUS=8 ITERS=3 OUT="$T/o8" PYTHON=false bash "$S" > "$T/out8" 2> "$T/err8" ||
    fail "GPUS=8 sweep rc=$?: $(tail -3 "$T/err8")"
[ "$(wc -l < "$T/log")" -eq 5 ] || fail "GPUS=8: $(wc -l < "$T/log") runs"
grep -q "^A-tp1-pp1-cp1-dp8 TP=1 PP=1 CP=1 GPUS=8 ITERS=3 ONE_GPU=0" \
    "$T/log" || fail "A not run as TP=1 PP=1 DP=8: $(head -1 "$T/log")"
grep -q "^E-tp1-pp4-cp1-dp2 " "$T/log" || fail "E not run"
grep -q "skipping F (TP=2 PP=2 CP=2): CP=2 needs TransformerEngine" \
    "$T/err8" || fail "F not skipped for TransformerEngine"
# the table: 5 rows A..E in order, with the layouts of the runs
sed -n 's/^| \([A-F]\)-[^|]* | \([0-9]\) | \([0-9]\) | \([0-9]\) | \([0-9]\) |.*/\1 \2 \3 \4 \5/p' \
    "$T/out8" > "$T/rows"
printf 'A 1 1 1 8\nB 2 1 1 4\nC 4 1 1 2\nD 2 2 1 2\nE 1 4 1 2\n' > "$T/want"
diff "$T/want" "$T/rows" > /dev/null ||
    fail "table rows differ: $(cat "$T/out8")"
[ -s "$T/o8/compare.json" ] || fail "no compare.json"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); \
assert [x['config'][0] for x in r]==list('ABCDE'), r" "$T/o8/compare.json" ||
    fail "compare.json"

# 4 GPUs, TransformerEngine present, --one-gpu: F needs 8 ranks
: > "$T/log"
GPUS=4 OUT="$T/o4" PYTHON=true bash "$S" --one-gpu > "$T/out4" \
    2> "$T/err4" || fail "GPUS=4 sweep rc=$?"
[ "$(wc -l < "$T/log")" -eq 5 ] || fail "GPUS=4: $(cat "$T/log")"
grep -q "ONE_GPU=1" "$T/log" && ! grep -q "ONE_GPU=0" "$T/log" ||
    fail "--one-gpu did not reach the runner"
grep -q "ITERS=10" "$T/log" || fail "ITERS default is not 10"
grep -q "^C-tp4-pp1-cp1-dp1 " "$T/log" || fail "C on 4 GPUs"
grep -q "skipping F (TP=2 PP=2 CP=2): world size 4 is not divisible by TP\*PP\*CP=8" \
    "$T/err4" || fail "F not skipped for divisibility: $(cat "$T/err4")"

# 6 GPUs and odd experiments: heads % TP, layers % PP; --only; a failure
: > "$T/log"
GPUS=6 OUT="$T/o6" PYTHON=true STUB_FAIL=B EXPS="A:1:1:1 B:2:1:1 C:4:1:1 \
X:3:1:1 Y:1:3:1 Z:1:1:3" bash "$S" --only A,B,C,X,Y > "$T/out6" \
    2> "$T/err6"
rc=$?
[ $rc -eq 1 ] || fail "a failed run should give exit 1, got $rc"
grep -q "skipping C (TP=4 PP=1 CP=1): world size 6 is not divisible" \
    "$T/err6" || fail "C on 6 GPUs not skipped"
grep -q "skipping X (TP=3 PP=1 CP=1): 8 attention heads are not divisible by TP=3" \
    "$T/err6" || fail "heads % TP: $(cat "$T/err6")"
grep -q "skipping Y (TP=1 PP=3 CP=1): 8 layers are not divisible by PP=3" \
    "$T/err6" || fail "layers % PP"
grep -q "^Z" "$T/log" && fail "--only ran Z"
grep -q "B failed (exit 1)" "$T/err6" || fail "failure not reported"
grep -q "^| B-tp2-pp1-cp1-dp3 " "$T/out6" || fail "failed run's row missing"
grep -q "^  X (TP=3" "$T/out6" || fail "skipped list missing from the output"

# bad usage
bash "$S" --bogus > /dev/null 2>&1; [ $? -eq 2 ] || fail "--bogus"
GPUS=x bash "$S" > /dev/null 2>&1; [ $? -eq 2 ] || fail "GPUS=x"
EXPS="A:1:x:1" OUT="$T/ob" bash "$S" > /dev/null 2>&1
[ $? -eq 2 ] || fail "bad EXPS"
: > "$T/log"
OUT="$T/oq" bash "$S" --only A,Q > /dev/null 2> "$T/errq"
[ $? -eq 2 ] && grep -q "no experiment 'Q'" "$T/errq" && [ ! -s "$T/log" ] ||
    fail "--only with an unknown name"
: > "$T/log"
OUT="$T/od" bash "$S" --dry-run > /dev/null 2> "$T/errd" || fail "--dry-run"
[ -s "$T/log" ] && fail "--dry-run ran something"
[ -e "$T/od" ] && fail "--dry-run created its output folder"
grep -q "A: TP=1 PP=1 CP=1 DP=8" "$T/errd" || fail "--dry-run output"
echo "ok"
