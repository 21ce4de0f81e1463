#!/bin/sh
# Real GPU traces (tests/data/h200-mesh-hang, recorded on an H200): the
# layout of the DeviceMesh (pp, dp, tp) job and the hang's root, rank 5,
# with the default GPU timing (all ranks inside NCCL: the root is the
# rank whose op kinds disagree with its group kind's, state "mismatch")
# and with host records only (rank 7's all-gather provably incomplete).
# Megatron-LM's tiny GPT 2/2/2 (tests/data/h200-megatron-gpt): the layout
# from its command line (certain) and from the traces alone (--layout
# infer), with every communicator labelled the same.
. "$(dirname "$0")/analyze_lib.sh"
D=$P3D_SRC/tests/data/h200-mesh-hang
for m in auto off; do
    mkdir -p "$T/$m"
    tar -C "$T/$m" -xzf "$D/$m.tar.gz" || fail "unpack $m"
    "$A" -q --json "$T/$m.json" "$T/$m/job" > "$T/$m.txt" 2>&1
    python3 - "$T/$m.json" "$m" <<'PY' || fail "$m"
import json, sys
j = json.load(open(sys.argv[1]))
l, h = j["layout"], j["hang"]
ok = (l["tp"], l["pp"], l["dp"], l["cp"]) == (2, 2, 2, 1)
# the mesh's groups by member stride (last dim fastest): tp 1, dp 2, pp 4
want = {1: ("TP",), 2: ("DP", "DP-CP"), 4: ("PP",)}
n = 0
for c in j["communicators"]:
    if c["size"] == 2:
        d = c["members"][1] - c["members"][0]
        ok &= c["used_as"] in want.get(d, ())
        n += 1
ok &= n == 12
ok &= h["detected"] and h["root_ranks"] == [5] and not h["stall"]
st = {r["rank"]: r["state"] for r in h["roots"]}
if sys.argv[2] == "auto":
    ok &= st.get(5) == "mismatch"
print("%s: layout tp=%d pp=%d dp=%d, roots %s %s" % (
    sys.argv[2], l["tp"], l["pp"], l["dp"], h["root_ranks"], st))
sys.exit(0 if ok else 1)
PY
done
G=$P3D_SRC/tests/data/h200-megatron-gpt
mkdir -p "$T/gpt"
tar -C "$T/gpt" -xzf "$G/gpt222.tar.gz" || fail "unpack gpt222"
"$A" -q --json "$T/cmd.json" "$T/gpt/gpt222" > /dev/null 2>&1
"$A" -q --layout infer --json "$T/inf.json" "$T/gpt/gpt222" > /dev/null 2>&1
python3 - "$T/cmd.json" "$T/inf.json" <<'PY' || fail "megatron --layout infer"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
size = lambda j: tuple(j["layout"][k] for k in ("tp", "pp", "dp", "cp", "ep"))
lab = lambda j: {c["id"]: (c["label"], c["used_as"]) for c in j["communicators"]}
ok = size(a) == size(b) == (2, 2, 2, 1, 1) and lab(a) == lab(b)
ok &= len(lab(a)) == 20
ok &= a["layout"]["source"] == "cmdline" and a["layout"]["confidence"] == "certain"
ok &= b["layout"]["source"] == "inferred" and b["layout"]["confidence"] == "likely"
print("megatron: %s %s / %s %s, %d communicators" % (
    a["layout"]["source"], a["layout"]["confidence"], b["layout"]["source"],
    b["layout"]["confidence"], len(lab(a))))
sys.exit(0 if ok else 1)
PY
echo "ok: real H200 traces: hang root rank 5 with and without GPU times, Megatron's layout without its command line"
