#!/bin/sh
# Host records only, every call returned, every rank exited (issue 21):
# rank 2 never issued its last DP-CP all-gather while its peer did
# (p3d-gen --skip 2).  NCCL completes a collective only once every member
# has entered it, so the report must not say every op completed: it names
# rank 2 as the member behind and the peer's op that cannot have
# completed, in text and in JSON hang.behind.
. "$(dirname "$0")/analyze_lib.sh"
"$G" --tp 2 --pp 2 --dp 2 --skip 2 "$T/j" > /dev/null || fail "p3d-gen"
"$A" --json "$T/j.json" "$T/j" > "$T/j.txt" 2>&1
python3 - "$T/j.json" <<'PY' || fail "JSON"
import json, sys
h = json.load(open(sys.argv[1]))["hang"]
b = h["behind"]
assert not h["detected"] and len(b) == 1, h
assert b[0]["rank"] == 2 and b[0]["peer"] == 0 and b[0]["label"] == "DP-CP", b
assert b[0]["issued"] + 1 == b[0]["peer_issued"], b
PY
grep -q "every recorded op completed" "$T/j.txt" && fail "says every op completed"
grep -q "rank 2 issued 5 collectives on comm 0x[0-9a-f]* (DP-CP), rank 0 issued 6: rank 0's collective #6 on it cannot have completed; rank 2 never entered it" \
    "$T/j.txt" || fail "text: $(grep -A2 'hang analysis' "$T/j.txt")"
# a clean job still says so
"$G" --tp 2 --pp 2 --dp 2 "$T/k" > /dev/null || fail "p3d-gen"
"$A" "$T/k" | grep -q "no hang: every recorded op completed" ||
    fail "clean job"
echo "behind: rank 2 named, the peer's incomplete collective said"
