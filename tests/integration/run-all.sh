#!/bin/sh
# Runs every tests/integration/test_*.sh with the build dir in $P3D_BUILD.
# A test script exits 0 (pass), 77 (skipped, with a reason on stdout) or
# anything else (fail).  The runner fails if any test fails.
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${P3D_BUILD:?set P3D_BUILD to the build directory}"
export P3D_BUILD
export P3D_SRC="$(cd "$here/../.." && pwd)"
pass=0; fail=0; skip=0; failed=""
for t in "$here"/test_*.sh; do
    [ -e "$t" ] || continue
    name=$(basename "$t" .sh)
    printf '== %s\n' "$name"
    start=$(date +%s)
    case $(head -n 1 "$t") in
        *bash*) bash "$t" ;;
        *) sh "$t" ;;
    esac
    rc=$?
    dur=$(( $(date +%s) - start ))
    case $rc in
        0) pass=$((pass + 1)); printf '   ok (%ss)\n' "$dur" ;;
        77) skip=$((skip + 1)); printf '   skipped\n' ;;
        *) fail=$((fail + 1)); failed="$failed $name"
           printf '   FAILED rc=%s (%ss)\n' "$rc" "$dur" ;;
    esac
done
printf 'integration: %d passed, %d skipped, %d failed%s\n' \
    "$pass" "$skip" "$fail" "${failed:+ ($failed )}"
[ "$fail" -eq 0 ]
