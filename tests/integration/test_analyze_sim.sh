#!/bin/sh
# p3d-analyze on real traces: the simulator (tests/sim) runs Megatron-like
# jobs under the shim; every communicator's used_as must be the group
# Megatron uses it as (truth.json "role"), its label the most specific
# label of its members, its labels must include the truth's, and the
# inferred layout must be the simulated one; or, where the traces cannot
# tell (a 2-rank EP all-to-all is a 2-rank CP ring step), the report must
# say "ambiguous" and list the simulated layout among the alternatives.
set -u
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
A=$P3D_BUILD/p3d-analyze
S=$P3D_BUILD/p3d-sim
L=$P3D_BUILD/libp3dtrace.so
[ -x "$S" ] && [ -f "$L" ] || { echo "no simulator or shim built"; exit 77; }
command -v python3 > /dev/null || { echo "no python3"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# under make asan the shim needs the ASan runtime, which cannot come first
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
export P3D_QUIET=1
fails=0
run() { # name sim-args...
    name=$1
    shift
    "$S" "$@" -m 4 --iters 2 --fwd-ms 0.2 --bwd-ms 0.4 --opt-ms 0.1 \
        --out "$T" --job-id "$name" --shim "$L" --quiet > "$T/$name.sim" 2>&1
    [ -f "$T/$name/truth.json" ] || { echo "FAIL $name: sim made no truth"; cat "$T/$name.sim"; fails=$((fails+1)); return; }
    ls "$T/$name"/rank-*.p3d > /dev/null 2>&1 ||
        { echo "FAIL $name: no traces"; cat "$T/$name.sim"; fails=$((fails+1)); return; }
    "$A" -q --json "$T/$name.json" "$T/$name" > /dev/null 2> "$T/$name.err"
    for f in "$T/$name"/rank-*.p3d; do
        "$A" --dump "$f" | awk -v f="$(basename "$f")" \
            '$1 == "comm" { for (i = 2; i <= NF; i++) if ($i ~ /^comm_hash=/) print f, substr($i, 11) }'
    done > "$T/$name.comms"
    python3 - "$T/$name" "$T/$name.json" "$T/$name.comms" <<'PY' || fails=$((fails+1))
import json, sys
d, out, comms = sys.argv[1:4]
truth = json.load(open(d + "/truth.json"))
got = json.load(open(out))
order = {}
for line in open(comms):
    f, h = line.split()
    order.setdefault(int(f[5:10]), []).append(h)
by_id = {c["id"]: c for c in got["communicators"]}
lay, t = got["layout"], truth["layout"]
want = "tp=%d cp=%d ep=%d dp=%d pp=%d " % tuple(t[k] for k in
                                               ("tp", "cp", "ep", "dp", "pp"))
if lay["confidence"] == "ambiguous" and any(
        a["layout"].startswith(want) for a in lay["alternatives"]):
    print("%s: ambiguous, the truth listed: %s" % (d, lay["confidence_why"]))
    sys.exit(0)
bad = 0
for r in truth["ranks"]:
    for gid, c in r.get("comms", {}).items():
        g = next(x for x in truth["groups"] if x["id"] == gid)
        h = order[r["rank"]][c["created_index"]]
        a = by_id[h]
        if a["used_as"] != g["role"] or a["label"] != g["label"] \
                or not set(g["labels"]) <= set(a["labels"]) \
                or a["members"] != g["members"]:
            print("FAIL %s: %s %s members %s: got %s/%s %s %s, want %s/%s %s"
                  % (d, gid, h, g["members"], a["used_as"], a["label"],
                     a["labels"], a["members"], g["role"], g["label"],
                     g["labels"]))
            bad += 1
for k in ("tp", "pp", "dp", "cp"):
    if lay[k] != t[k]:
        print("FAIL %s: layout %s=%s, want %s" % (d, k, lay[k], t[k]))
        bad += 1
sys.exit(1 if bad else 0)
PY
}
run l2221 --tp 2 --pp 2 --dp 2
run l1421 --tp 1 --pp 4 --dp 2
run l2141 --tp 2 --pp 1 --dp 4
run l2212 --tp 2 --pp 2 --dp 1 --cp 2
run l4211 --tp 4 --pp 2 --dp 1
run l2221pd --tp 2 --pp 2 --dp 2 --order tp-cp-ep-pp-dp
run l2221sp --tp 2 --pp 2 --dp 2 --sequence-parallel --no-dist-opt
if "$S" --help 2>&1 | grep -q -- --ep; then
    run ep2141 --tp 2 --pp 1 --dp 4 --ep 2
    run ep2221 --tp 2 --pp 2 --dp 2 --ep 2
    run ep1241 --tp 1 --pp 2 --dp 4 --ep 4
fi
[ $fails -eq 0 ]
