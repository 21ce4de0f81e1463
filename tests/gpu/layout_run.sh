#!/bin/bash
# layout_run.sh - on the GPU machine (issue 21), with third_party/Megatron-LM
# carried there:
#   1. the layout matrix's ground truth: tests/layout/gen_groups.py runs
#      Megatron-LM's initialize_model_parallel and torch's DeviceMesh (torch
#      is only there) and writes OUTDIR/groups/*.jsonl.gz, to be committed
#      as tests/data/layout/;
#   2. Megatron-LM's tiny GPT at TP/PP/DP 2/2/2 (scripts/run_tiny_gpt.sh, 8
#      ranks on GPU 0) under the shim, analysed with its recorded command
#      line and with --layout infer (the traces alone): the same layout
#      sizes and every communicator's label the same.
#   tests/gpu/layout_run.sh OUTDIR     (exit 0 pass, 1 fail, 77 no GPU)
. "$(dirname "$0")/torch_lib.sh" layout_run.sh "${1:-}"
mg=${MEGATRON_DIR:-$here/third_party/Megatron-LM}
fail=0
python3 "$here/tests/layout/gen_groups.py" --megatron "$mg" \
    --out "$out/groups" 2> "$out/groups.err" || fail=1
tail -3 "$out/groups.err"
ONE_GPU=1 GPUS=8 TP=2 PP=2 ITERS=${LAYOUT_ITERS:-4} NMB=4 MEGATRON_DIR="$mg" \
    OUT="$out/gpt" NAME=gpt222 timeout -k 20 300 \
    "$here/scripts/run_tiny_gpt.sh" > "$out/gpt.log" 2>&1
echo "== tiny GPT 2/2/2: exit $?"
tail -3 "$out/gpt.log"
t=$out/gpt/traces/gpt222
"$analyze" --json "$out/cmdline.json" "$t" > "$out/cmdline.txt" 2>&1
"$analyze" --layout infer --json "$out/infer.json" "$t" > "$out/infer.txt" 2>&1
grep -A2 '^layout' "$out/cmdline.txt" "$out/infer.txt"
python3 - "$out" <<'PY' || fail=1
import json, sys
d = sys.argv[1]
def load(n):
    j = json.load(open(f"{d}/{n}.json"))
    lay = {k: j["layout"][k] for k in ("tp", "pp", "dp", "cp", "ep")}
    labels = {c["id"]: (c["label"], c.get("used_as")) for c in j["communicators"]}
    return lay, labels, j["layout"].get("source"), j["layout"].get("confidence")
a, b = load("cmdline"), load("infer")
print("cmdline:", a[0], a[2], a[3]); print("infer:  ", b[0], b[2], b[3])
want = {"tp": 2, "pp": 2, "dp": 2, "cp": 1, "ep": 1}
ok = a[0] == want and b[0] == want and a[1] == b[1] and len(a[1]) > 0
diff = [(k, a[1][k], b[1].get(k)) for k in a[1] if a[1][k] != b[1].get(k)]
print(("PASS" if ok else "FAIL"), "layout infer: %d communicators, %d labels differ %s"
      % (len(a[1]), len(diff), diff[:4]))
sys.exit(0 if ok else 1)
PY
exit $fail
