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
# every fuzz seed and crash reproducer analysed as a job (a multi-rank
# seed is rank files one after the other) exits 0 or 2 within 60 s and
# writes valid JSON (--json, and --chrome when built); one python process
# splits the seeds, runs the analyzer on each and parses what it wrote
chrome=0
"$A" --help | grep -q -- --chrome && chrome=1
python3 - "$A" "$T" "$chrome" "$S"/tests/fuzz/corpus/* "$S"/tests/regress/* \
    <<'PY' || exit 1
import json, os, subprocess, sys
A, T, chrome = sys.argv[1], sys.argv[2], sys.argv[3] == "1"


def split(f, d):
    data = open(f, "rb").read()
    cuts = [0] + [o for o in range(8, len(data) - 7, 8)
                  if data[o:o + 8] == b"P3DTRACE"]
    cuts.append(len(data))
    os.mkdir(d)
    for i in range(len(cuts) - 1):
        with open("%s/rank-%05d.p3d" % (d, i), "wb") as out:
            out.write(data[cuts[i]:cuts[i + 1]])


def check_json(raw, what, name):
    try:
        json.loads(raw.decode("utf-8"))
    except ValueError as e:
        sys.exit("FAIL: %s: invalid %sJSON: %s" % (name, what, e))


n = 0
for k, f in enumerate(sys.argv[4:]):
    if f.endswith(".py"):
        continue
    name, d, c2 = os.path.basename(f), "%s/j%d" % (T, k), "%s/c2.json" % T
    split(f, d)
    if os.path.exists(c2):
        os.unlink(c2)
    cmd = [A, "-q", "--json", "-"] + (["--chrome", c2] if chrome else [])
    try:
        p = subprocess.run(cmd + [d], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           timeout=60)
    except subprocess.TimeoutExpired:
        sys.exit("FAIL: %s: still running after 60 s" % name)
    if os.path.exists(c2) and os.path.getsize(c2) > 0:
        check_json(open(c2, "rb").read(), "--chrome ", name)
    if p.returncode not in (0, 2):
        sys.exit("FAIL: %s: status %d" % (name, p.returncode))
    if p.stdout:
        check_json(p.stdout, "", name)
        n += 1
print("%d JSON documents valid" % n)
PY
