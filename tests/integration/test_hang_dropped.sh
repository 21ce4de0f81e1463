#!/bin/sh
# A rank whose trace lost records (its P3D_MAX_MB cap was reached half
# way: p3d-gen --capped 5; the shim then drops every record and counts
# them in the header, shim/p3d_writer.c) recorded fewer ops than it
# issued. What its trace lacks is no evidence: it is not a member behind,
# it proves no peer's op incomplete, and when the others hang waiting for
# it, it is named with state "records_dropped" (it may have issued its
# part: then the hang is a stall), never "exited early". With GPU
# completion records and with host records only. Under the real shim,
# past the cap, the watchdog's reports still name the waits, and the
# root's silent watchdog names it (the last case).
. "$(dirname "$0")/analyze_lib.sh"
for gpu in --gpu ""; do
    w=${gpu:-host}
    "$G" --tp 2 --pp 2 --dp 2 $gpu --capped 5 "$T/c$gpu" > /dev/null ||
        fail "p3d-gen --capped $gpu"
    "$A" --json "$T/c.json" "$T/c$gpu" > "$T/c.txt" 2>&1
    python3 - "$T/c.json" <<'PY' || fail "capped, no hang ($w): $(grep -m2 'hang analysis\|behind' "$T/c.txt")"
import json, sys
j = json.load(open(sys.argv[1]))
assert not j["hang"]["detected"], j["hang"]
assert j["matching"]["members_behind"] == 0, j["matching"]
assert j["ranks"][5]["dropped_records"] > 0, j["ranks"][5]
assert all("dropped_records" not in r for r in j["ranks"] if r["rank"] != 5)
PY
    grep -q "rank(s) 5 lost [0-9]* records while recording" "$T/c.txt" ||
        fail "capped ($w): the report does not say rank 5 lost records"
    grep -q "but rank(s) 5 lost records while recording .* a hang included, is not in the traces" \
        "$T/c.txt" || fail "capped ($w): 'no hang' without its doubt"
    "$G" --tp 2 --pp 2 --dp 2 $gpu --capped 5 --stall "$T/s$gpu" > /dev/null ||
        fail "p3d-gen --capped --stall $gpu"
    "$A" --json "$T/s.json" "$T/s$gpu" > "$T/s.txt" 2>&1
    python3 - "$T/s.json" <<'PY' || fail "capped, stalled ($w): $(grep -m3 'root rank\|waits in' "$T/s.txt")"
import json, sys
h = json.load(open(sys.argv[1]))["hang"]
assert h["detected"] and h["root_ranks"] == [5], h["root_ranks"]
assert h["roots"][0]["state"] == "records_dropped", h["roots"][0]
# every other rank waits in the stalled world all-reduce, and none on an
# op "proven" incomplete by what rank 5's trace lacks
assert len(h["chain"]) == 7, h["chain"]
assert {(w["label"], w["seq"]) for w in h["chain"]} == {("WORLD", 1)}, h["chain"]
assert not any(w["proven_by_peers"] for w in h["chain"]), h["chain"]
PY
    grep -q "records were dropped, so whether it issued it is not known" \
        "$T/s.txt" || fail "capped, stalled ($w): the root's doubt is not said"
    grep -q "for rank(s) 5, whose traces lost records: the root is not known" \
        "$T/s.txt" || fail "capped, stalled ($w): the headline names a root"
done
# The real shim: P3D_MAX_MB=1 on a simulated job whose rank 6 stops
# issuing at its 300th pipeline op, by when every rank's file is full (16
# layers: about 2 MB each by then), so no rank's trace shows the hang.
# Every header must count its dropped records, and the report must not
# say "no hang" without saying what it cannot see.
S=$P3D_BUILD/p3d-sim
if [ -x "$S" ] && [ -f "$P3D_BUILD/libp3dtrace.so" ]; then
    P3D_MAX_MB=1 P3D_QUIET=1 "$S" --tp 2 --pp 2 --dp 2 -m 4 --iters 64 \
        --layers 16 --hang 6:pp:300 --stop-when-hung --out "$T" \
        --job-id simcap --shim "$P3D_BUILD/libp3dtrace.so" --quiet \
        > "$T/sim.log" 2>&1
    "$A" --json "$T/sim.json" "$T/simcap" > "$T/sim.txt" 2>&1
    python3 - "$T/sim.json" <<'PY' || fail "P3D_MAX_MB=1 under the shim: $(grep -m1 'hang analysis' "$T/sim.txt")"
import json, sys
j = json.load(open(sys.argv[1]))
assert len(j["ranks"]) == 8, j["ranks"]
assert all(r.get("dropped_records", 0) > 0 for r in j["ranks"]), j["ranks"]
assert j["matching"]["members_behind"] == 0, j["matching"]
PY
    grep -q "but rank(s) 0-7 lost records while recording" "$T/sim.txt" ||
        fail "P3D_MAX_MB=1 under the shim: 'no hang' without its doubt"
fi
# The real shim, P3D_MAX_MB=1 and P3D_HANG_TIMEOUT=1: every file is full
# before rank 6 stops, so the waits are known only from the watchdog's
# reports, which land in each file's spare chunk (shim/p3d_writer.c).
# Once the 7 other ranks reported (and reports stopped coming), the job
# is stopped with SIGTERM (the watchdog scans once more, then notes the
# signal). Rank 6 reported
# nothing while its peers waited past the timeout: it is named the root,
# not inside NCCL, by its watchdog's silence; the op its peers wait for
# is one it never issued (per truth.json).
if [ -x "$S" ] && [ -f "$P3D_BUILD/libp3dtrace.so" ]; then
    P3D_HANG_TIMEOUT=1 P3D_MAX_MB=1 P3D_QUIET=1 "$S" --tp 2 --pp 2 --dp 2 \
        -m 4 --iters 64 --layers 16 --hang 6:pp:300 --timeout 600 \
        --out "$T" --job-id simrep --shim "$P3D_BUILD/libp3dtrace.so" \
        --quiet > "$T/rep.log" 2> "$T/rep.err" &
    sim=$!
    reported() { grep -o 'HANG? rank [0-9]*' "$T/rep.err" | sort -u | wc -l; }
    reports() { grep -c 'HANG? rank' "$T/rep.err"; }
    while [ "$(reported)" -lt 7 ] && kill -0 "$sim" 2> /dev/null; do
        sleep 0.1
    done
    # Under load a rank's op can pass the 1 s timeout and complete after
    # (its completion lost past the cap): its report is then not its
    # last wait.  So the job is stopped only once reports stopped coming
    # for 2 x P3D_HANG_TIMEOUT + 2 s (the hang matrix's rule), by which a
    # rank whose first report was such has reported its real wait too,
    # which shows the first one done (p3d_hang_report_pending).  Each new
    # report restarts the wait: a slow machine only makes it later.
    n=$(reports) quiet=0
    while [ "$quiet" -lt 40 ] && kill -0 "$sim" 2> /dev/null; do
        sleep 0.1
        m=$(reports)
        if [ "$m" != "$n" ]; then n=$m quiet=0; else quiet=$((quiet + 1)); fi
    done
    kill -TERM "$sim" 2> /dev/null
    wait "$sim"
    [ "$(reported)" -ge 7 ] || fail "P3D_HANG_TIMEOUT=1: $(reported) of 7 ranks reported"
    "$A" --json "$T/rep.json" "$T/simrep" > "$T/rep.txt" 2>&1
    python3 - "$T/rep.json" "$T/simrep/truth.json" <<'PY' || fail "watchdog reports past P3D_MAX_MB: $(grep -m3 'hang analysis\|root rank\|peers wait' "$T/rep.txt")"
import json, sys
j = json.load(open(sys.argv[1]))
truth = json.load(open(sys.argv[2]))
assert truth["faults"]["hang"]["rank"] == 6, truth["faults"]
assert all(r.get("dropped_records", 0) > 0 for r in j["ranks"]), j["ranks"]
h = j["hang"]
assert h["detected"] and h["root_ranks"] == [6], h["root_ranks"]
rt = h["roots"][0]
assert rt["state"] == "not_in_nccl", rt
assert rt["watchdog_silent_s"] == 1.0, rt
# the op its peers wait for is one it never issued (truth.json's counts
# of what it issued on that group); which of those is the earliest wait
# depends on timing
ow = rt["owed"]
mem = next(c["members"] for c in j["communicators"] if c["id"] == ow["comm"])
grp = next(g["id"] for g in truth["groups"] if sorted(g["members"]) == sorted(mem))
did = truth["ranks"][6]["comms"][grp]
n = (did["ops"].get(ow["op"], {}).get("count", 0)
     if ow["op"] in ("Send", "Recv") else did["issued"])
assert ow["seq"] >= n, (ow, did)
# every other rank waits, each in the op its watchdog reported
assert sorted(w["rank"] for w in h["chain"]) == [0, 1, 2, 3, 4, 5, 7], h["chain"]
PY
    grep -q "its watchdog (P3D_HANG_TIMEOUT 1.0 s), alive until SIGTERM, reported no op pending that long" \
        "$T/rep.txt" || fail "watchdog reports past P3D_MAX_MB: the evidence is not said"
fi
echo "dropped records: not behind, no proof from what is missing, the root named as not known; with and without GPU records; past the cap, the watchdog names waits and root"
