#!/bin/sh
# --json: schema p3d-analyze/1 as in README.md ("JSON"), valid JSON with escaped
# strings from traces, GPU time and bus bandwidth once gpu_op records exist.
set -u
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
. "$P3D_SRC/tests/integration/analyze_lib.sh"
"$G" --tp 2 --pp 2 --dp 2 --gpu --cmd 'a"b\c --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2' "$T/j" || exit 1
"$A" -q --json - "$T/j" > "$T/o.json" || fail "rc=$?"
head -2 "$T/o.json" | grep -q '"schema": "p3d-analyze/1"' || fail "schema"
grep -q "^job '" "$T/o.json" && fail "text report mixed into --json -"
grep -q '"world_size": 8, "ranks_found": 8' "$T/o.json" || fail "job"
grep -q '"hosts": \["node0\\"x"\]' "$T/o.json" || fail "host escaping"
grep -q '"cmdline": "python3 pretrain_gpt.py a\\"b\\\\c --tensor' "$T/o.json" ||
    fail "cmdline escaping: $(grep cmdline "$T/o.json")"
grep -q '"layout": {"tp": 2, "pp": 2, "dp": 2, "cp": 1, "ep": 1, "etp": 2, "order": "tp-cp-ep-dp-pp", "dp_shard": 0, "source": "cmdline"' "$T/o.json" ||
    fail "layout: $(grep '"layout"' "$T/o.json")"
grep -Eq '\{"id": "0x[0-9a-f]{16}", "label": "DP", "used_as": "DP-CP", "labels": \["DP", "DP-CP"\], "size": 2, "members": \[4, 6\], "missing_members": 0, "ops": 18, "bytes": [0-9]+, "gpu_time_ms": [0-9.]+, "busbw_gbps": [0-9.]+' "$T/o.json" ||
    fail "DP communicator"
grep -Eq '"by_op": \{"AllReduce": \{"calls": 6, "bytes": 48, "gpu_time_ms": [0-9.]+\}, "ReduceScatter": \{"calls": 6, ' "$T/o.json" ||
    fail "by_op"
grep -Eq '"per_rank": \{"4": \{"calls": 9, "bytes": [0-9]+\}, "6": \{"calls": 9' "$T/o.json" ||
    fail "per_rank"
grep -q '"hang": {"detected": false' "$T/o.json" || fail "placeholders"
grep -Eq '"steps": \{"count": [0-9]+' "$T/o.json" || fail "steps (issue 6)"
if command -v python3 > /dev/null 2>&1; then
    python3 - "$T/o.json" <<'PY' || fail "python check"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "p3d-analyze/1"
for k in ("job", "layout", "communicators", "ranks", "steps", "bubble",
          "verdict", "hang"):
    assert k in d, k
for c in d["communicators"]:
    assert c["members"] == sorted(c["members"]), c
    assert len(c["id"]) == 18 and c["id"].startswith("0x"), c
    assert c["label"] == c["labels"][0], c
    assert c["used_as"] in c["labels"] or c["used_as"] == "OTHER", c
    assert c["ops"] == sum(v["calls"] for v in c["by_op"].values())
    assert c["ops"] == sum(v["calls"] for v in c["per_rank"].values())
    assert c["bytes"] == sum(v["bytes"] for v in c["by_op"].values())
    assert c["ops"] == sum(c["size_hist"].values()), c
assert len(d["ranks"]) == 8 and d["ranks"][3]["rank"] == 3
assert d["job"]["cmdline"].startswith('python3 pretrain_gpt.py a"b\\c')
PY
fi
# text report shows GPU columns (algbw/busbw) when gpu_op records exist
"$A" -q --detail "$T/j" > "$T/o.txt" || fail "text rc"
grep -Eq 'AllReduce +[0-9]+ calls .* gpu +[0-9.]+ ms  algbw +[0-9.]+ GB/s  busbw +[0-9.]+ GB/s' "$T/o.txt" ||
    fail "gpu columns"
exit 0
