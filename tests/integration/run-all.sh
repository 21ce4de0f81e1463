#!/bin/sh
# Runs every tests/integration/test_*.sh with the build dir in $P3D_BUILD.
# A test script exits 0 (pass), 77 (skipped, with a reason on stdout) or
# anything else (fail).  The runner fails if any test fails.  Each test's
# output goes to $P3D_BUILD/test-logs/NAME.log and is printed only when
# the test fails (P3D_TEST_VERBOSE=1 prints it always), so a failure is
# not buried under the passing tests' lines.
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${P3D_BUILD:?set P3D_BUILD to the build directory}"
export P3D_BUILD
export P3D_SRC="$(cd "$here/../.." && pwd)"
logs=$P3D_BUILD/test-logs
mkdir -p "$logs"
pass=0; fail=0; skip=0; failed=""
for t in "$here"/test_*.sh; do
    [ -e "$t" ] || continue
    name=$(basename "$t" .sh)
    log=$logs/$name.log
    start=$(date +%s)
    case $(head -n 1 "$t") in
        *bash*) bash "$t" > "$log" 2>&1 ;;
        *) sh "$t" > "$log" 2>&1 ;;
    esac
    rc=$?
    dur=$(( $(date +%s) - start ))
    [ "${P3D_TEST_VERBOSE:-0}" = 1 ] && sed 's/^/   | /' "$log"
    case $rc in
        0) pass=$((pass + 1)); printf '== %s: ok (%ss)\n' "$name" "$dur" ;;
        77) skip=$((skip + 1))
            printf '== %s: skipped: %s\n' "$name" "$(tail -n 1 "$log")" ;;
        *) fail=$((fail + 1)); failed="$failed $name"
           printf '== %s: FAILED rc=%s (%ss); its output (%s):\n' \
               "$name" "$rc" "$dur" "$log"
           [ "${P3D_TEST_VERBOSE:-0}" = 1 ] || sed 's/^/   | /' "$log" |
               tail -n 200 ;;
    esac
done
printf 'integration: %d passed, %d skipped, %d failed%s\n' \
    "$pass" "$skip" "$fail" "${failed:+ ($failed )}"
[ "$fail" -eq 0 ]
