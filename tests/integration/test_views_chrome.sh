#!/bin/sh
# p3d-analyze --chrome on a simulated TP=2 PP=2 DP=2 job: the file is
# strict JSON, every complete event nests on its track, each rank is a
# process named with its coordinates (checked against the simulator's
# truth), NCCL ops are named by group, every flow arrow has both ends and
# there is one per Send/Recv pair, memory counters exist; --window and
# --ranks cut the file down; bad selections are refused with status 2.
set -u
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
. "$P3D_SRC/tests/integration/sim_lib.sh"
command -v python3 >/dev/null || { echo "skip: no python3"; exit 77; }
A=$P3D_BUILD/p3d-analyze
T=$SIM_OUT

sim_run ch --tp 2 --pp 2 --dp 2 -m 4 --iters 3 --fwd-ms 1 --bwd-ms 2 \
    --opt-ms 1
[ "$(sim_rc ch)" = 0 ] || { echo "FAIL: simulator rc=$(sim_rc ch)"; exit 1; }
"$A" -q --chrome "$T/all.json" "$T/ch" > /dev/null 2> "$T/err" ||
    { echo "FAIL: --chrome rc=$?"; cat "$T/err"; exit 1; }
"$A" -q --chrome "$T/win.json" --window iter:1-1 --ranks 0,4 "$T/ch" \
    > /dev/null 2> "$T/err" || { echo "FAIL: --window rc=$?"; exit 1; }

python3 - "$T/ch/truth.json" "$T/all.json" "$T/win.json" <<'EOF' || exit 1
import collections, json, re, sys

def strict(path):
    def bad(x):
        raise ValueError("non-JSON constant " + x)
    def pairs(kv):
        keys = [k for k, _ in kv]
        assert len(keys) == len(set(keys)), "duplicate key in " + path
        return dict(kv)
    with open(path, "rb") as f:
        return json.loads(f.read().decode("utf-8"), parse_constant=bad,
                          object_pairs_hook=pairs)

def check_nesting(ev):
    tracks = collections.defaultdict(list)
    for e in ev:
        if e["ph"] == "X":
            assert e["dur"] >= 0 and e["ts"] >= 0, e
            # in integer ns, as Perfetto reads them: the ops of one group
            # end together, and ts + dur in floating point may differ in
            # the last bit where the ns are the same
            a = round(e["ts"] * 1000)
            tracks[(e["pid"], e["tid"])].append(
                (a, a + round(e["dur"] * 1000)))
    for k, v in tracks.items():
        v.sort(key=lambda x: (x[0], -x[1]))
        stack = []
        for a, b in v:
            while stack and stack[-1] <= a:
                stack.pop()
            assert not stack or b <= stack[-1], "partial overlap on %s" % (k,)
            stack.append(b)
    return tracks

def flows(ev):
    s = collections.Counter(e["id"] for e in ev if e["ph"] == "s")
    f = collections.Counter(e["id"] for e in ev if e["ph"] == "f")
    assert s == f, "flow ends differ: %d starts, %d ends" % (len(s), len(f))
    assert all(n == 1 for n in s.values()), "flow id used twice"
    return len(s)

truth = json.load(open(sys.argv[1]))
full = strict(sys.argv[2])
ev = full["traceEvents"]
tracks = check_nesting(ev)
names = {e["pid"]: e["args"]["name"] for e in ev
         if e["ph"] == "M" and e["name"] == "process_name"}
assert sorted(names) == list(range(8)), names
for r in truth["ranks"]:
    c = r["coords"]
    want = "rank %d (TP %d, PP %d, DP %d)" % (r["rank"], c["tp"], c["pp"],
                                              c["dp"])
    assert names[r["rank"]] == want, (names[r["rank"]], want)
threads = [e["args"]["name"] for e in ev
           if e["ph"] == "M" and e["name"] == "thread_name"]
for kind in ("host NCCL calls", "GPU compute", "GPU NCCL"):
    n = sum(t.startswith(kind) for t in threads)
    assert n >= 8, "%s tracks: %d" % (kind, n)
xnames = collections.Counter(e["name"] for e in ev if e["ph"] == "X")
for n in ("TP AllReduce", "PP Send", "PP Recv", "DP-CP ReduceScatter",
          "compute", "ncclGroup"):
    assert xnames[n] > 0, "no '%s' events: %s" % (n, xnames)
# one arrow per send/recv pair: the sends the truth counts on PP comms
sends = sum(v["ops"].get("Send", {}).get("count", 0)
            for r in truth["ranks"] for v in r["comms"].values())
nflow = flows(ev)
assert nflow == sends, "flows %d, sends %d" % (nflow, sends)
assert any(e["ph"] == "C" and e["name"].startswith("memory") for e in ev)
for e in ev:
    if e["ph"] == "f":
        assert e.get("bp") == "e"

win = strict(sys.argv[3])
wev = win["traceEvents"]
check_nesting(wev)
pids = {e["pid"] for e in wev}
assert pids == {0, 4}, pids
assert len(wev) * 4 < len(ev), (len(wev), len(ev))
flows(wev)
lo, hi = win["otherData"]["window_ns"]
assert 0 < lo < hi
for e in wev:
    if e["ph"] == "X":
        assert e["ts"] * 1000 + e["dur"] * 1000 >= lo - 1
        assert e["ts"] * 1000 < hi + 1
print("chrome: %d events on %d tracks, %d flows; window: %d events"
      % (len(ev), len(tracks), nflow, len(wev)))
EOF

# two hosts, the second one's clocks 50 ms ahead: with the time
# analysis's offsets no receive ends before its send starts
sim_run sk --tp 2 --pp 2 --dp 2 -m 4 --iters 3 --fwd-ms 1 --bwd-ms 2 \
    --hosts 2 --skew 4:50000000
"$A" -q --chrome "$T/sk.json" "$T/sk" > /dev/null 2>&1 ||
    { echo "FAIL: --chrome on the skewed job"; exit 1; }
python3 - "$T/sk.json" <<'EOF2' || exit 1
import collections, json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
assert d["otherData"]["clock"].startswith("host offsets"), d["otherData"]
X = collections.defaultdict(list)
for e in ev:
    if e["ph"] == "X" and e["name"].startswith("PP "):
        X[(e["pid"], e["tid"])].append(e)
def at(e):
    for x in X[(e["pid"], e["tid"])]:
        if x["ts"] <= e["ts"] <= x["ts"] + x["dur"]:
            return x
    raise AssertionError("flow end outside a PP slice: %r" % e)
s = {e["id"]: at(e) for e in ev if e["ph"] == "s"}
f = {e["id"]: at(e) for e in ev if e["ph"] == "f"}
assert s.keys() == f.keys() and len(s) > 0
bad = [i for i in s if f[i]["ts"] + f[i]["dur"] < s[i]["ts"]]
assert not bad, "%d receives end before their send starts" % len(bad)
print("skewed job: %d flows, all causal" % len(s))
EOF2

# bad selections: exit 2 with a message naming the problem
for bad in "--window iter:9" "--window x:1-2" "--ranks 5-2"; do
    # shellcheck disable=SC2086
    "$A" -q --chrome "$T/bad.json" $bad "$T/ch" > /dev/null 2> "$T/err"
    rc=$?
    [ $rc -eq 2 ] || { echo "FAIL: '$bad' gave rc=$rc"; exit 1; }
    grep -q "error: .*\(window\|ranks\)" "$T/err" ||
        { echo "FAIL: '$bad': no message"; cat "$T/err"; exit 1; }
done
echo "ok"
