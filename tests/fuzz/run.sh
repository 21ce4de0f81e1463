#!/bin/sh
# run.sh - the short fuzz run of CI: build the libFuzzer harnesses (clang,
# ASan+UBSan), replay tests/regress/, then fuzz the reader for FUZZ_S
# seconds (default 30) and the whole analysis for FUZZ_S/3 seconds, each
# on a scratch copy of tests/fuzz/corpus.  Exit 0 when no finding; skips
# (exit 0, says so) when clang's fuzzer runtime is missing.
# A finding is left in $P3D_BUILD/fuzz/findings/ (crash-*, oom-*, ...).
set -u
cd "$(dirname "$0")/../.."
B=${P3D_BUILD:-$(pwd)/build}
FUZZ_S=${FUZZ_S:-30}
CC=${FUZZ_CC:-clang}
if ! command -v "$CC" > /dev/null ||
    ! printf 'int LLVMFuzzerTestOneInput(const char *d, long n)\n{ return 0; }\n' |
        "$CC" -x c -fsanitize=fuzzer -o /dev/null - 2> /dev/null; then
    echo "fuzz: skipped (no clang with libFuzzer: install clang and libclang-rt-dev)"
    exit 0
fi
make --no-print-directory BUILD="$(basename "$B")" FUZZ_CC="$CC" \
    fuzz-build > /dev/null || exit 1
F=$B/fuzz
rm -rf "$F/work" "$F/findings"
mkdir -p "$F/work/r" "$F/work/a" "$F/findings"
cp tests/fuzz/corpus/* "$F/work/r/"
cp tests/fuzz/corpus/* "$F/work/a/"
regress=$(ls tests/regress/* | grep -v '\.py$')
for h in fuzz_reader fuzz_analyze; do
    # shellcheck disable=SC2086
    "$F/$h" $regress > "$F/findings/replay-$h.log" 2>&1 ||
        { tail -30 "$F/findings/replay-$h.log"; exit 1; }
done
run() { # run HARNESS SECONDS MAXLEN DIR
    "$F/$1" -max_total_time="$2" -max_len="$3" -close_fd_mask=3 \
        -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$F/findings/" "$4" > "$F/findings/$1.log" 2>&1
    rc=$?
    echo "fuzz: $1: $(grep -o 'stat::number_of_executed_units: [0-9]*' \
        "$F/findings/$1.log" | sed 's/.*: //') runs, $(grep -o \
        'cov: [0-9]* ft: [0-9]*' "$F/findings/$1.log" | tail -1)"
    [ "$rc" = 0 ] || { tail -40 "$F/findings/$1.log"; return 1; }
}
run fuzz_reader "$FUZZ_S" 3072 "$F/work/r" || exit 1
run fuzz_analyze "$((FUZZ_S / 3 + 1))" 8192 "$F/work/a" || exit 1
