#!/bin/sh
# p3d-analyze --compare RUN... : one row per run in the seed's record
# template, in the order given, as Markdown and as a JSON array (--json);
# layout columns from the traces, micro-batches from the PP schedule,
# step time within 0.5 % of the simulator's truth, and the row's bubble
# the one the single-run analysis measures (itself checked against the
# truth: 0.5 points); a folder without traces gives a "no readable
# traces" row and exit status 2.
set -u
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
. "$P3D_SRC/tests/integration/sim_lib.sh"
A=$P3D_BUILD/p3d-analyze
T=$SIM_OUT

sim_run tp2 --tp 2 --pp 1 --dp 2 --iters 3 --fwd-ms 1 --bwd-ms 2
sim_run pp2 --tp 1 --pp 2 --dp 2 -m 6 --iters 3 --fwd-ms 1 --bwd-ms 2
for r in tp2 pp2; do
    [ "$(sim_rc $r)" = 0 ] || { echo "FAIL: simulator $r"; exit 1; }
done
"$A" -q --compare "$T/pp2" "$T/tp2/" > "$T/md" 2> "$T/err" ||
    { echo "FAIL: --compare rc=$?"; cat "$T/err"; exit 1; }
"$A" -q --compare --json "$T/rows.json" "$T/pp2" "$T/tp2" > /dev/null \
    2>&1 || { echo "FAIL: --compare --json"; exit 1; }
"$A" -q --json "$T/pp2.json" "$T/pp2" > /dev/null 2>&1 ||
    { echo "FAIL: --json pp2"; exit 1; }
python3 "$P3D_SRC/tests/integration/test_time_check.py" "$T/pp2" \
    "$T/pp2.json" steps=0.005 bubble=0.005 || { echo "FAIL: pp2 vs truth"; exit 1; }
mkdir -p "$T/empty"
"$A" -q --compare "$T/tp2" "$T/empty" > "$T/md2" 2> "$T/err2"
rc=$?

python3 - "$T" "$rc" <<'EOF' || exit 1
import json, statistics, sys
t, rc = sys.argv[1], int(sys.argv[2])
md = open(t + "/md").read().splitlines()
assert md[0].startswith("| config | TP | PP | CP | DP | micro-batches |"), md
assert len(md) == 4, md
rows = [[c.strip() for c in l.strip("|").split("|")] for l in md[2:]]
assert rows[0][:6] == ["pp2", "1", "2", "1", "2", "6"], rows[0]
assert rows[1][:5] == ["tp2", "2", "1", "1", "2"], rows[1]
assert "bubble" in rows[0][9] and "theory" in rows[0][9], rows[0][9]
assert "exposed NCCL" in rows[1][9], rows[1][9]
js = json.load(open(t + "/rows.json"))
assert [r["config"] for r in js] == ["pp2", "tp2"]
for r, name in zip(js, ("pp2", "tp2")):
    # the step as p3d-analyze defines it: per iteration the mean over
    # ranks (ranks end the last iteration at different times, the more so
    # on a loaded machine), then the median of the steady iterations
    truth = json.load(open("%s/%s/truth.json" % (t, name)))
    per = {}
    for rk in truth["ranks"]:
        for s in rk["steps"]:
            per.setdefault(s["iter"], []).append((s["end"] - s["start"]) / 1e6)
    steps = [statistics.mean(per[k]) for k in sorted(per)]
    want = statistics.median(steps[1:])
    got = r["step_time_ms"]
    assert abs(got - want) <= 0.005 * want, (name, got, want)
    assert r["max_mem_bytes"] > 0 and r["tokens_per_s"] is None
assert js[0]["micro_batches"] == 6 and js[0]["pp"] == 2
one = json.load(open(t + "/pp2.json"))["bubble"]
want = "bubble %.0f%% vs %.0f%% theory" % (100 * one["measured_frac"],
                                           100 * one["theory_frac"])
assert want in js[0]["observations"], (want, js[0]["observations"])
md2 = open(t + "/md2").read()
assert rc == 2, rc
assert "| empty |" in md2 and "no readable traces" in md2, md2
print("compare: rows in order, step times within 0.5% of the truth, "
      "the bubble of the single-run analysis")
EOF
echo "ok"
