#!/bin/sh
# rel_check.sh - the checker runs of issue 11, run by .ci/run after
# `make test`:
#   asan      the unit tests and the integration tests under ASan+UBSan
#             (build-asan/, the flags of `make asan`); the ASan shim is
#             preloaded into ASan-built test programs, so ASan's link-order
#             check is off and test-double leaks are suppressed
#   tsan      the writer unit test and the shim's threaded integration
#             tests under ThreadSanitizer (build/tsan/)
#   valgrind  memcheck over p3d-analyze (build/) on the example traces and
#             on damaged inputs (generator faults, fuzz regressions)
#   fuzz      a short libFuzzer run (tests/fuzz/run.sh; skipped without
#             clang's fuzzer runtime)
#   all       all of the above
# Exit 0 when every run is clean; prints one line per step.
set -u
cd "$(dirname "$0")/../.."
S=$(pwd)
MAKE=${MAKE:-make}
J=${REL_JOBS:--j2}
# Timing-truth tests: their tolerances assume an uninstrumented build.
# test_rel_forkmid: fork() while other threads allocate is outside what
# GCC 12's ASan allocator survives: a child forked while another thread
# held a size-class lock blocks in its first malloc (gdb: child in
# SizeClassAllocator64::GetFromAllocator, from fake_nccl's TLS; ~1 run
# in 150).  It runs uninstrumented in make test.  test_shim_fork: the
# same under load (a forked child of the driver hangs until the 30 s
# timeout: 6 of 40 runs with two busy loops, 4 of 40 with b449553's
# build too, and once in CI on 2026-12-02); uninstrumented in make test.
# test_mpi_equiv: run apart, under ASan without LeakSanitizer (OpenMPI's
# MPI_Init allocations are never freed, which it would report).
REL_ASAN_SKIP=${REL_ASAN_SKIP:-"test_time_bubble test_time_skew test_time_straggler 
    test_time_verdict test_sim_faults test_hang_matrix test_rel_forkmid
    test_shim_fork test_mpi_equiv"}
failed=""

say() { printf 'rel_check: %s\n' "$*"; }

# run_tests BUILD SKIP TESTS...: integration tests with P3D_BUILD=BUILD
run_tests() {
    b=$1 skip=$2; shift 2
    bad=""
    for t in "$@"; do
        name=$(basename "$t" .sh)
        case " $skip " in *" $name "*) continue ;; esac
        shell=sh
        case $(head -1 "$t") in *bash*) shell=bash ;; esac
        P3D_BUILD=$S/$b P3D_SRC=$S $shell "$t" > "$S/$b/rel-$name.log" 2>&1
        rc=$?
        grep -q 'Sanitizer\|runtime error' "$S/$b/rel-$name.log" && rc=99
        case $rc in 0) ;; 77) say "$b: $name skipped: $(tail -1 \
            "$S/$b/rel-$name.log")" ;; *) bad="$bad $name"
            tail -20 "$S/$b/rel-$name.log" ;; esac
    done
    [ -z "$bad" ] || { say "failed:$bad"; return 1; }
}

step_asan() {
    flags="-fsanitize=address,undefined -fno-sanitize-recover=all"
    export ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=1
    export LSAN_OPTIONS=suppressions=$S/tests/integration/rel_lsan.supp
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    export REL_SANITIZED=1
    mkdir -p build-asan
    $MAKE $J BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
        EXTRA_CFLAGS="$flags" all unit rel-test-deps > build-asan/rel-build.log 2>&1 ||
        { tail -30 build-asan/rel-build.log; return 1; }
    grep -q 'runtime error\|Sanitizer' build-asan/rel-build.log &&
        { grep -B2 -A10 'runtime error\|Sanitizer' build-asan/rel-build.log
          return 1; }
    run_tests build-asan "$REL_ASAN_SKIP" tests/integration/test_*.sh
    rc=$?
    (ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0
     export ASAN_OPTIONS
     run_tests build-asan "" tests/integration/test_mpi_equiv.sh) || rc=1
    return $rc
}

step_tsan() {
    unset ASAN_OPTIONS LSAN_OPTIONS
    # libunwind's thread-exit destructor crashes inside TSan's mutex
    # interceptor once TSan's thread state is gone: no call-site stacks
    export P3D_STACKS=0 REL_SANITIZED=1
    mkdir -p build/tsan
    export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$S/tests/integration/rel_tsan.supp"
    $MAKE $J BUILD=build/tsan OPT="-O1 -g" EXTRA_CFLAGS=-fsanitize=thread \
        all build/tsan/tests/test_shim_writer rel-test-deps \
        > build/tsan/rel-build.log 2>&1 ||
        { tail -30 build/tsan/rel-build.log; return 1; }
    build/tsan/tests/test_shim_writer > build/tsan/rel-writer.log 2>&1 ||
        { tail -30 build/tsan/rel-writer.log; return 1; }
    # fork after threads is outside what TSan supports: no fork tests
    run_tests build/tsan "" tests/integration/test_shim_threads.sh \
        tests/integration/test_rel_exitthread.sh \
        tests/integration/test_rel_signals.sh \
        tests/integration/test_rel_abort.sh
}

step_valgrind() {
    command -v valgrind > /dev/null || { say "valgrind: skipped"; return 0; }
    $MAKE $J all build/tests/p3d-gen > /dev/null || return 1
    d=$(mktemp -d /tmp/p3d-rel-vg.XXXXXX)
    G=build/tests/p3d-gen
    $G --tp 2 --pp 2 --dp 2 --gpu --steps 2 "$d/ok" > /dev/null
    $G --tp 2 --pp 1 --dp 2 --truncate 1 --killed 1 --bad-magic 2 \
        --huge-len 3 "$d/bad" > /dev/null 2>&1
    $G --tp 1 --pp 1 --dp 2 --unknown-tag 1 --future-major 1 \
        --empty 0 "$d/bad2" > /dev/null 2>&1
    mkdir -p "$d/regress"
    cp tests/regress/* "$d/regress/" 2>/dev/null
    for f in "$d"/regress/*; do [ -f "$f" ] && mv "$f" "$f.p3d"; done
    vg="valgrind -q --error-exitcode=99 --leak-check=full
        --errors-for-leak-kinds=definite,indirect"
    bad=0
    for a in "traces/example-tp2pp2dp2" "$d/ok" "$d/bad" "$d/bad2" \
        "--dump $d/bad/rank-00000.p3d" "--json - $d/ok" "$d/regress"; do
        # shellcheck disable=SC2086
        $vg build/p3d-analyze -q --threads 2 $a > /dev/null 2> "$d/vg.err"
        rc=$?
        if [ "$rc" = 99 ] || grep -q '^==[0-9]*==' "$d/vg.err"; then
            say "valgrind: errors on $a"; cat "$d/vg.err"; bad=1
        fi
    done
    rm -rf "$d"
    [ "$bad" = 0 ]
}

step_fuzz() {
    sh tests/fuzz/run.sh
}

steps=${1:-all}
[ "$steps" = all ] && steps="asan tsan valgrind fuzz"
for s in $steps; do
    t0=$(date +%s)
    if "step_$s"; then
        say "$s: clean ($(( $(date +%s) - t0 ))s)"
    else
        say "$s: FAILED ($(( $(date +%s) - t0 ))s)"
        failed="$failed $s"
    fi
done
[ -z "$failed" ] || { say "failed:$failed"; exit 1; }
