#!/bin/bash
# DeviceMesh jobs and a host-records hang on the GPU machine (issue 21):
# tests/gpu/mesh_job.py, 8 ranks on one GPU (distinct NCCL_HOSTID), under
# the shim, with no Megatron command line; then p3d-analyze, checked
# against the groups each rank's DeviceMesh reported:
#   pp,dp,tp  and  dp,cp,tp   layout sizes and every communicator's label
#                             (TP, PP, CP, DP or DP-CP) right;
#   hang, P3D_GPU_TIMING=off and the default: rank 5 skips its dp
#                             reduce-scatter at step 3; root rank 5.
#   tests/gpu/mesh_run.sh OUTDIR      (exit 0 pass, 1 fail, 77 no GPU)
. "$(dirname "$0")/torch_lib.sh" mesh_run.sh "${1:-}"
kill_after=${MESH_KILL_AFTER:-60}
fail=0
job() {  # job NAME PORT LIMIT [ENV...] -- ARGS...
    name=$1 port=$2 limit=$3; shift 3
    envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    rm -rf "$out/$name"; mkdir -p "$out/$name"
    env "${envs[@]}" P3D_TRACE_DIR="$out/$name/traces" P3D_JOB_ID=job \
        LD_PRELOAD=$lib timeout -s TERM -k 30 "$limit" \
        torchrun --nproc_per_node 8 --master_port "$port" \
        "$here/tests/gpu/mesh_job.py" --out "$out/$name" "$@" \
        > "$out/$name/log" 2>&1
    echo "== $name: torchrun exit $?"
    "$analyze" --json "$out/$name/report.json" "$out/$name/traces/job" \
        > "$out/$name/report.txt" 2> "$out/$name/analyze.err"
    sed -n '/^layout/,/^coordinate/p' "$out/$name/report.txt"
}
check_layout() {  # check_layout NAME
    python3 - "$out/$1" <<'PY' || fail=1
import glob, json, sys
d = sys.argv[1]
an = json.load(open(d + "/report.json"))
want = {}  # members -> label, from what each rank's DeviceMesh said
sizes = {}
for f in glob.glob(d + "/mesh-rank*.json"):
    m = json.load(open(f))
    for dim, ranks in m["groups"].items():
        want[tuple(sorted(ranks))] = {"tp": "TP", "pp": "PP", "cp": "CP",
                                      "dp": "DP"}[dim]
        sizes[dim] = len(ranks)
l = an["layout"]
ok = all(l[k] == sizes.get(k, 1) for k in ("tp", "pp", "cp", "dp"))
print("layout tp=%d pp=%d cp=%d dp=%d (%s), mesh %s" % (
    l["tp"], l["pp"], l["cp"], l["dp"], l["confidence"], sizes))
for c in an["communicators"]:
    key = tuple(sorted(c["members"]))
    if key not in want:
        continue
    w = want[key]
    good = c["used_as"] == w or (w == "DP" and c["used_as"] == "DP-CP")
    ok &= good
    if not good:
        print("  %s members %s: used as %s, is %s" % (c["id"], list(key),
                                                    c["used_as"], w))
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PY
}
check_root() {  # check_root NAME RANK
    python3 - "$out/$1/report.json" "$2" <<'PY' || fail=1
import json, sys
h = json.load(open(sys.argv[1]))["hang"]
want = [int(sys.argv[2])]
ok = h and h["detected"] and h["root_ranks"] == want
print("%s: root_ranks %s (expected %s)" % ("PASS" if ok else "FAIL",
                                           h and h["root_ranks"], want))
sys.exit(0 if ok else 1)
PY
}
job ppdptp 29541 300 -- --mesh pp,dp,tp && check_layout ppdptp
job dpcptp 29542 300 -- --mesh dp,cp,tp && check_layout dpcptp
for mode in off auto; do
    job hang-$mode 2955${#mode} "$kill_after" P3D_GPU_TIMING=$mode -- \
        --mesh pp,dp,tp --hang-rank 5 --hang-step 3 --steps 8
    sed -n '/^hang analysis/,/^time:/p' "$out/hang-$mode/report.txt" | head -20
    check_root hang-$mode 5
done
exit $fail
