#!/bin/sh
# The simulated Megatron job under the shim, for the layouts (TP,PP,DP,CP)
# (2,2,2,1) (1,4,2,1) (2,1,4,1) (2,2,1,2) (4,2,1,1), both Megatron orders
# and the torchtitan-style one, sequence parallel, plain DP all-reduce, the
# interleaved schedule (pp=4, 2 virtual chunks), GPU-like async streams and
# MoE expert parallelism (ep=2):
# every trace must agree with the simulator's truth.json (comm membership,
# per-comm op counts and bytes, contiguous and consistent seqs).
set -u
. "$(dirname "$0")/sim_lib.sh"
fail=0
run() {
    name=$1; shift
    sim_run "$name" "$@"
    if [ "$(sim_rc "$name")" != 0 ]; then
        echo "FAIL $name: p3d-sim exit $(sim_rc "$name")"; fail=1; return
    fi
    sim_check "$name" || fail=1
}
run l2221 --tp 2 --pp 2 --dp 2 --cp 1
run l1421 --tp 1 --pp 4 --dp 2 --cp 1 -m 4
run l2141 --tp 2 --pp 1 --dp 4 --cp 1 -m 4
run l2212 --tp 2 --pp 2 --dp 1 --cp 2 -m 4
run l4211 --tp 4 --pp 2 --dp 1 --cp 1 -m 4
run ppdp --tp 2 --pp 2 --dp 2 --order tp-cp-ep-pp-dp -m 4 --sequence-parallel
run titan --tp 2 --pp 2 --dp 2 --order titan -m 4 --no-dist-opt
run vpp --tp 2 --pp 4 --vpp 2 -m 4
run async --tp 2 --pp 2 --dp 2 -m 4 --cp 1 --async
run moe --tp 1 --pp 2 --dp 4 --ep 2 -m 4
# Ground truth itself: Megatron's worked example (W=8, TP=2, PP=2, DP=2: the groups Megatron-LM's initialize_model_parallel makes, as tests/data/layout records them).
python3 - "$SIM_OUT" <<'PY' || fail=1
import json, sys
def groups(job, kind):
    t = json.load(open(f"{sys.argv[1]}/{job}/truth.json"))
    return sorted(g["members"] for g in t["groups"] if g["group"] == kind)
assert groups("l2221", "tp") == [[0, 1], [2, 3], [4, 5], [6, 7]]
assert groups("l2221", "pp") == [[0, 4], [1, 5], [2, 6], [3, 7]]
assert groups("l2221", "dp") == [[0, 2], [1, 3], [4, 6], [5, 7]]
assert groups("l2221", "mp") == [[0, 1, 4, 5], [2, 3, 6, 7]]
assert groups("ppdp", "pp") == [[0, 2], [1, 3], [4, 6], [5, 7]]
assert groups("ppdp", "dp") == [[0, 4], [1, 5], [2, 6], [3, 7]]
assert groups("l2212", "cp") == [[0, 2], [1, 3], [4, 6], [5, 7]]
assert groups("l2212", "dp") == [[0, 2], [1, 3], [4, 6], [5, 7]]
t = json.load(open(f"{sys.argv[1]}/l2221/truth.json"))
dp = [g for g in t["groups"] if g["group"] == "dp"][0]
assert dp["labels"] == ["DP", "DP-CP"], dp
r0 = t["ranks"][0]["comms"]
# 1F1B, stage 0 of 2, m=8: 8 forward sends + 8 backward receives per iter
assert r0["pp-0"]["ops"]["Send"]["count"] == 16, r0["pp-0"]
assert r0["pp-0"]["ops"]["Recv"]["count"] == 16, r0["pp-0"]
t = json.load(open(f"{sys.argv[1]}/vpp/truth.json"))
# interleaved, stage 0 per iteration: sends 2 chunks x 4 activations + 4
# chunk-1 grads to the last stage (ring wrap); receives 4 chunk-1 inputs
# from the last stage + 2 x 4 grads.  2 iterations.
pp0 = t["ranks"][0]["comms"]["pp-0"]["ops"]
assert pp0["Send"]["count"] == pp0["Recv"]["count"] == 24, pp0
# expert generator (Megatron-LM parallel_state.py, RankGenerator): tp=1 ep=2 edp=2 pp=2
assert groups("moe", "ep") == [[0, 1], [2, 3], [4, 5], [6, 7]]
assert groups("moe", "epdp") == [[0, 2], [1, 3], [4, 6], [5, 7]]
print("truth: Megatron groups of Megatron-LM's W=8 TP=2 PP=2 DP=2 example")
PY
# A rerun removes only its own leftovers; a job id that is not one folder
# is refused before anything is touched.
mkdir -p "$SIM_OUT/rerun"
echo keep > "$SIM_OUT/rerun/notes.txt"
echo old > "$SIM_OUT/rerun/rank-00007.p3d"
echo keep > "$SIM_OUT/outside.txt"
sim_run rerun --tp 2 --dp 2 -m 2
[ -f "$SIM_OUT/rerun/notes.txt" ] && [ -f "$SIM_OUT/rerun/truth.json" ] &&
    [ ! -f "$SIM_OUT/rerun/rank-00007.p3d" ] || {
    echo "FAIL rerun: the user's file or the new truth.json is gone"; fail=1; }
for bad in . .. a/b; do
    "$SIM" --out "$SIM_OUT" --job-id "$bad" --shim "$SHIM" --quiet \
        > /dev/null 2> "$SIM_OUT/bad.err"
    rc=$?
    [ $rc = 2 ] && grep -q "must name one folder" "$SIM_OUT/bad.err" &&
        [ -f "$SIM_OUT/outside.txt" ] || {
        echo "FAIL --job-id '$bad': exit $rc"; cat "$SIM_OUT/bad.err"; fail=1; }
done
exit $fail
