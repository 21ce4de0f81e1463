#!/bin/sh
# bench/analyzer.sh - p3d-analyze on synthetic trace sets (make
# bench-analyzer): for each size, generate RANKS x OPS ops (the test
# generator, real format, gpu_op records on), `cat` the files to
# /dev/null twice (warm cache, the second timed), then the full analysis
# under /usr/bin/time -v: wall, CPU, peak RSS, ratio to cat.  Each set is
# deleted before the next is made.
# Environment:
#   BUILD        build directory                         [build]
#   SIZES        rank counts (64 256 1024 known layouts)  [64 256 1024]
#   OPS          ops per rank                            [100000]
#   SCALE_DIR    where the sets go (needs ~13 GB at 1024) [/work/p3d-scale]
#   MEM_CAP_MB   address-space cap of the analyzer, so a blow-up fails
#                instead of pushing the machine into OOM   [6144]
#                (the hang analysis maps every rank file at once: at
#                1,024 ranks it needs MEM_CAP_MB=20480 to map them all)
#   TIME_CAP_S   wall-time cap of one analysis             [900]
#   ANALYZE_ARGS extra p3d-analyze options                 []
#   ANALYZE      the p3d-analyze to time        [$BUILD/p3d-analyze]
#                (under make, the Makefile's ANALYZE wins: use
#                BENCH_ANALYZE, e.g. a build of another commit)
#   KEEP=1       keep each set, and reuse a set already in SCALE_DIR
#                (generating 1,024 ranks takes ~30 s and 12 GB)
set -e
BUILD=${BUILD:-$(pwd)/build}
SIZES=${SIZES:-"64 256 1024"}
OPS=${OPS:-100000}
D=${SCALE_DIR:-/work/p3d-scale}
MEM_CAP_MB=${MEM_CAP_MB:-6144}
TIME_CAP_S=${TIME_CAP_S:-900}
GEN=$BUILD/bench/p3d-gen-bench
ANALYZE=${BENCH_ANALYZE:-${ANALYZE:-$BUILD/p3d-analyze}}
[ -x /usr/bin/time ] || { echo "analyzer.sh: /usr/bin/time missing"; exit 2; }
layout() {
    case $1 in
        16) echo "--tp 2 --pp 2 --dp 4" ;;
        64) echo "--tp 2 --pp 4 --dp 8" ;;
        256) echo "--tp 4 --pp 4 --dp 16" ;;
        1024) echo "--tp 8 --pp 8 --dp 16" ;;
        *) echo "--tp 2 --pp 2 --dp $(($1 / 4))" ;;
    esac
}
field() { sed -n "s/^.*$1: *//p" "$2" | head -1; }
secs() { # h:mm:ss.ss or m:ss.ss -> seconds
    echo "$1" | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i;
                            printf "%.2f", s }'
}
mkdir -p "$D"
echo "analyzer scale: $(nproc) cores, $(free -g | awk '/Mem/ {print $2}') GiB," \
     "$OPS ops per rank, sets in $D"
for n in $SIZES; do
    set=$D/s$n
    t0=$(date +%s)
    if [ "${KEEP:-0}" = 1 ] && [ -d "$set" ]; then
        echo "   (reusing $set)"
    else
        rm -rf "$set"
        # shellcheck disable=SC2046
        "$GEN" $(layout "$n") --ops "$OPS" --gpu --job "s$n" "$set" >/dev/null
    fi
    bytes=$(du -sb "$set" | cut -f1)
    echo "== $n ranks: $(($(date +%s) - t0)) s to generate," \
         "$((bytes / 1048576)) MiB"
    cat "$set"/*.p3d >/dev/null
    c0=$(date +%s.%N)
    cat "$set"/*.p3d >/dev/null
    c1=$(date +%s.%N)
    cat_s=$(echo "$c0 $c1" | awk '{printf "%.2f", $2 - $1}')
    rc=0
    ( ulimit -v $((MEM_CAP_MB * 1024)); exec timeout "$TIME_CAP_S" \
        /usr/bin/time -v "$ANALYZE" -q $ANALYZE_ARGS "$set" \
        >"$D/report.txt" 2>"$D/time.txt" ) || rc=$?
    wall=$(secs "$(field 'Elapsed (wall clock) time (h:mm:ss or m:ss)' "$D/time.txt")")
    rss=$(field 'Maximum resident set size (kbytes)' "$D/time.txt")
    user=$(field 'User time (seconds)' "$D/time.txt")
    sys=$(field 'System time (seconds)' "$D/time.txt")
    if [ "$rc" -ne 0 ]; then
        echo "   p3d-analyze FAILED rc=$rc (124 = over ${TIME_CAP_S} s;" \
             "allocation failure = over ${MEM_CAP_MB} MiB):"
        grep -v '^	' "$D/time.txt" | tail -3 | sed 's/^/   /'
    fi
    echo "$n $wall $user $sys $rss $cat_s $bytes" | awk '{
        printf "   p3d-analyze: %.1f s wall, %.1f s user, %.1f s sys, " \
               "peak RSS %.0f MiB; cat %.2f s (%.0f MiB/s); " \
               "analyze/cat = %.1fx\n", $2, $3, $4, $5 / 1024, $6,
               $7 / 1048576 / ($6 > 0 ? $6 : 1), $2 / ($6 > 0 ? $6 : 0.01) }'
    [ "${KEEP:-0}" = 1 ] || rm -rf "$set"
done
rm -f "$D/report.txt" "$D/time.txt"
rmdir "$D" 2>/dev/null || true
