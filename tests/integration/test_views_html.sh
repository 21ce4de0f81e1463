#!/bin/sh
# p3d-analyze --html: the report of a simulated TP=2 PP=2 DP=2 job is one
# self-contained file (no scripts, no external references) that headless
# Chromium renders to PNG and whose DOM holds the coordinate map (8 rank
# cells, 2 stage panels, 4 TP boxes, 4 PP links), the timeline (8 rank
# rows with compute and NCCL rectangles), the time bars and memory bars
# (8 each).  Strings from traces (a command line full of HTML) come out
# escaped.  Skips (77) without chromium: scripts/install-deps.sh adds it.
set -u
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
. "$P3D_SRC/tests/integration/sim_lib.sh"
A=$P3D_BUILD/p3d-analyze
T=$SIM_OUT

sim_run ht --tp 2 --pp 2 --dp 2 -m 4 --iters 3 --fwd-ms 1 --bwd-ms 2 \
    --opt-ms 1
[ "$(sim_rc ht)" = 0 ] || { echo "FAIL: simulator rc=$(sim_rc ht)"; exit 1; }
"$A" -q --html "$T/r.html" "$T/ht" > /dev/null 2> "$T/err" ||
    { echo "FAIL: --html rc=$?"; cat "$T/err"; exit 1; }

# self-contained: nothing to fetch, nothing to run
if grep -qiE '<script|<link|<img|<iframe|src=|@import|url\(' "$T/r.html"; then
    echo "FAIL: the report references or runs something"
    grep -oiE '<script|<link|<img|<iframe|src=|@import|url\(' "$T/r.html" |
        head -3
    exit 1
fi
if grep -oE 'https?://[^" ]*' "$T/r.html" | grep -qv '^http://www.w3.org/2000/svg$'
then
    echo "FAIL: the report names a network address"; exit 1
fi

# escaping: a generated job whose command line is HTML
. "$P3D_SRC/tests/integration/gen_lib.sh"
gen_find "$T"
"$G" --tp 2 --pp 1 --dp 2 --cmd \
    "--x <script>alert('p3d')</script> \"q\"&amp; --tensor-model-parallel-size 2" \
    "$T/esc" > /dev/null || { echo "FAIL: p3d-gen"; exit 1; }
"$A" -q --html "$T/esc.html" "$T/esc" > /dev/null 2>&1 ||
    { echo "FAIL: --html on the generated job"; exit 1; }
grep -q '<script' "$T/esc.html" && { echo "FAIL: unescaped <script>"; exit 1; }
grep -q "&lt;script&gt;alert(&#39;p3d&#39;)&lt;/script&gt; &quot;q&quot;&amp;amp;" \
    "$T/esc.html" || { echo "FAIL: command line not escaped as expected";
                       grep -o 'command.\{0,200\}' "$T/esc.html"; exit 1; }

CHROME=""
for c in chromium chromium-browser google-chrome; do
    command -v "$c" >/dev/null 2>&1 && { CHROME=$c; break; }
done
[ -n "$CHROME" ] || { echo "skip: chromium not installed" \
    "(scripts/install-deps.sh installs it); file checks passed"; exit 77; }
headless() {
    rm -rf "$T/profile"
    timeout 90 "$CHROME" --headless --no-sandbox --disable-gpu \
        --disable-quic --no-first-run --disable-background-networking \
        --disable-component-update --disable-sync --disable-dev-shm-usage \
        --user-data-dir="$T/profile" "$@" 2> "$T/chrome.err"
}
headless --dump-dom "file://$T/r.html" > "$T/dom.html" ||
    { echo "FAIL: chromium --dump-dom"; tail -5 "$T/chrome.err"; exit 1; }
headless --window-size=1200,2000 --screenshot="$T/r.png" \
    "file://$T/r.html" > /dev/null ||
    { echo "FAIL: chromium --screenshot"; tail -5 "$T/chrome.err"; exit 1; }

python3 - "$T/dom.html" "$T/r.png" <<'EOF' || exit 1
import re, struct, sys
dom = open(sys.argv[1], encoding="utf-8").read()
def count(pat):
    return len(re.findall(pat, dom))
want = {
    r'<g class="stage">': 2,
    r'<rect class="rank"': 8,
    r'<rect class="tpbox"': 4,
    r'<line class="pp"': 4,
    r'<svg [^>]*class="timeline"': 1,
    r'<g class="tl-rank"': 8,
    r'<g class="bar"': 8,
    r'<rect class="mem"': 8,
}
for pat, n in want.items():
    assert count(pat) == n, "%s: %d, want %d" % (pat, count(pat), n)
# each timeline row holds compute and NCCL rectangles
rows = re.findall(r'<g class="tl-rank".*?</g>', dom, re.S)
for r in rows:
    assert r.count('class="compute"') > 3 and r.count('class="nccl"') > 3, r[:200]
for sec in ("findings", "map", "timeline", "bars", "memory", "traffic"):
    assert 'id="%s"' % sec in dom, sec
assert "TP groups:" in dom and "PP groups:" in dom and "DP groups:" in dom
png = open(sys.argv[2], "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", png[16:24])
assert (w, h) == (1200, 2000) and len(png) > 20000, (w, h, len(png))
print("html: DOM checks passed, screenshot %dx%d %d bytes" % (w, h, len(png)))
EOF
echo "ok"
