#!/bin/sh
# Crash reproducers (tests/regress/: fuzz findings): p3d-analyze reads
# each as a one-rank job (report, JSON, --dump) and ends with status 0 or
# 2 within 20 s - no signal, no sanitizer report, no runaway memory (4 GiB
# address-space cap unless under ASan, whose shadow needs more).
set -u
B=${P3D_BUILD:?}
S=${P3D_SRC:?}
A=$B/p3d-analyze
[ -x "$A" ] || { echo "skip: $A not built"; exit 77; }
T=$(mktemp -d /tmp/p3d-rel-regress.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cap=4194304
case ${ASAN_OPTIONS:-}:$(nm -D "$A" 2>/dev/null | grep -c __asan_init) in
    *:0) ;; *) cap=unlimited ;;
esac
n=0
for f in "$S"/tests/regress/*; do
    case $f in *.py) continue ;; esac
    name=$(basename "$f")
    rm -rf "$T/job" && mkdir "$T/job" && cp "$f" "$T/job/rank-00000.p3d"
    for args in "-q $T/job" "-q --json - $T/job" "--dump $T/job/rank-00000.p3d"; do
        # shellcheck disable=SC2086
        (ulimit -v $cap; timeout 20 "$A" $args) > "$T/out" 2> "$T/err"
        rc=$?
        case $rc in 0|2) ;; *)
            fail "$name: p3d-analyze $args: status $rc: $(tail -5 "$T/err")" ;;
        esac
        grep -q 'Sanitizer\|runtime error' "$T/err" &&
            fail "$name: $args: $(cat "$T/err")"
    done
    n=$((n + 1))
done
[ "$n" -gt 0 ] || fail "no reproducers in tests/regress"
echo "$n reproducers ok"
