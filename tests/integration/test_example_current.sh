#!/bin/sh
# The committed example (traces/example-*) must have been recorded with
# today's shim defaults, so that what a new user reads from it is what
# `make demo` prints: the example's own command line (its cmdline record)
# is run again under the current shim, and the kinds of records each rank
# file holds must be the same (a new default that adds records, as kernel
# windows added gpu_window, module and stack records, makes them differ),
# and so must the settings the shim notes (GPU timing, kernel windows).
# Fix: `make example` records it again.
set -u
: "${P3D_BUILD:?}" "${P3D_SRC:?}"
AN=$P3D_BUILD/p3d-analyze
[ -x "$P3D_BUILD/p3d-sim" ] || { echo "no $P3D_BUILD/p3d-sim"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/p3dex.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
# the kinds of records, and the settings the shim notes it ran with (GPU
# timing, kernel windows), without the run's own counts
kinds() {
    "$AN" --dump "$1" | awk '{print $1}' | sort -u | tr '\n' ' '
    "$AN" --dump "$1" | sed -n 's/^note .* text="\(cupti: .*\)"$/\1/p' |
        sed -E 's/, [0-9]+ opened//; s/ \([A-Za-z ]*[0-9]+\)//g' | sort -u | tr '\n' ' '
}
for ex in "$P3D_SRC"/traces/example-*/; do
    ex=${ex%/}; name=$(basename "$ex")
    # the simulator's arguments, as recorded: argv[1..] up to --out
    args=$("$AN" --dump "$ex/rank-00000.p3d" | sed -n 's/^cmdline .* text="\(.*\)"$/\1/p' |
        sed 's/\\0/ /g' | awk '{for (i = 2; i <= NF && $i != "--out"; i++) printf "%s ", $i}')
    [ -n "$args" ] || { echo "FAIL: $name: no command line recorded"; fails=$((fails + 1)); continue; }
    # shellcheck disable=SC2086
    "$P3D_BUILD/p3d-sim" $args --out "$tmp" --job-id "$name" \
        --shim "$P3D_BUILD/libp3dtrace.so" --quiet > "$tmp/sim.log" 2>&1 ||
        { echo "FAIL: $name: p3d-sim $args failed"; cat "$tmp/sim.log"; fails=$((fails + 1)); continue; }
    for f in "$ex"/rank-*.p3d; do
        was=$(kinds "$f") now=$(kinds "$tmp/$name/$(basename "$f")")
        if [ "$was" != "$now" ]; then
            echo "FAIL: $name/$(basename "$f") was recorded with other defaults than today's shim:"
            echo "  committed: $was"
            echo "  today:     $now"
            echo "  record it again: make example"
            fails=$((fails + 1))
            break
        fi
    done
    [ "$fails" -eq 0 ] && echo "ok: $name has the record kinds of today's shim ($args)"
done
[ "$fails" -eq 0 ]
