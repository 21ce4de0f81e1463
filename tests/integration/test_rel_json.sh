#!/bin/sh
# --json escapes every string taken from a trace (command line, host
# name, job id) and stays valid JSON on damaged input: hostile strings
# round-trip through a JSON parser, and every fuzz seed and crash
# reproducer analysed as a job gives output json.loads accepts.
set -u
B=${P3D_BUILD:?}
S=${P3D_SRC:?}
A=$B/p3d-analyze
G=$B/tests/p3d-gen
[ -x "$A" ] && [ -x "$G" ] || { echo "skip: p3d-analyze/p3d-gen not built"; exit 77; }
command -v python3 > /dev/null || { echo "skip: no python3"; exit 77; }
T=$(mktemp -d /tmp/p3d-rel-json.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
evil=$(printf 'x"y\\z</script><img src=x onerror=alert(1)>\033[31m\ttab\rcr\302\251\377')
"$G" --tp 2 --pp 1 --dp 1 --steps 1 --job 'j"<b>' --cmd "$evil" \
    "$T/job" > /dev/null || fail "p3d-gen"
"$A" -q --json "$T/out.json" "$T/job" > /dev/null 2>&1 ||
    fail "p3d-analyze on the hostile job"
EVIL=$evil python3 - "$T/out.json" <<'PY' || fail "hostile strings"
import json, os, sys
raw = open(sys.argv[1], "rb").read()
doc = json.loads(raw.decode("utf-8"))
evil = os.environb[b"EVIL"].decode("latin-1")
cmd = doc["job"]["cmdline"]
assert evil in cmd, (evil, cmd)
assert any('"' in h for h in doc["job"]["hosts"]), doc["job"]["hosts"]
assert b"</script>" not in raw or b"\\u" in raw
PY
# --chrome stays valid JSON and --html shows the strings as text (the
# views' own tests cover their layout)
if "$A" --help | grep -q -- --html; then
    "$A" -q --chrome "$T/c.json" --html "$T/r.html" "$T/job" \
        > /dev/null 2>&1 || fail "--chrome/--html on the hostile job"
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' \
        "$T/c.json" || fail "--chrome: invalid JSON"
    grep -q '<img src=x' "$T/r.html" && fail "--html: unescaped markup"
    grep -qi '</script><' "$T/r.html" && fail "--html: unescaped </script>"
    grep -q 'onerror=alert' "$T/r.html" ||
        echo "note: the command line does not appear in the HTML"
fi
n=0
for f in "$S"/tests/fuzz/corpus/* "$S"/tests/regress/*; do
    case $f in *.py) continue ;; esac
    rm -rf "$T/j" && mkdir "$T/j"
    # a multi-rank seed is rank files one after the other
    python3 - "$f" "$T/j" <<'PY'
import sys
d = open(sys.argv[1], "rb").read()
cuts = [0] + [o for o in range(8, len(d) - 7, 8) if d[o:o + 8] == b"P3DTRACE"]
cuts.append(len(d))
for i in range(len(cuts) - 1):
    open("%s/rank-%05d.p3d" % (sys.argv[2], i), "wb").write(d[cuts[i]:cuts[i + 1]])
PY
    chrome=""
    "$A" --help | grep -q -- --chrome && chrome="--chrome $T/c2.json"
    rm -f "$T/c2.json"
    # shellcheck disable=SC2086
    timeout 60 "$A" -q --json - $chrome "$T/j" > "$T/o.json" 2> /dev/null
    rc=$?
    if [ -s "$T/c2.json" ]; then
        python3 -c 'import json,sys; json.load(open(sys.argv[1]))' \
            "$T/c2.json" 2> "$T/jerr" ||
            fail "$(basename "$f"): invalid --chrome JSON: $(tail -1 "$T/jerr")"
    fi
    [ "$rc" = 0 ] || [ "$rc" = 2 ] || fail "$(basename "$f"): status $rc"
    [ -s "$T/o.json" ] || continue
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' \
        "$T/o.json" 2> "$T/jerr" ||
        fail "$(basename "$f"): invalid JSON: $(tail -1 "$T/jerr")"
    n=$((n + 1))
done
echo "$n JSON documents valid"
