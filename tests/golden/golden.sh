#!/bin/sh
# The golden comparison of issue 22: p3d-analyze's --json on a fixed corpus
# of trace sets, before and after a change of the analyzer's insides.  The
# JSON must be identical, apart from fields the change adds on purpose.
#
#   tests/golden/golden.sh corpus DIR      write the trace sets to DIR/sets
#   tests/golden/golden.sh run DIR ANALYZE NAME
#                                          DIR/NAME/SET.json (+ .rc) for each
#                                          set, from the analyzer ANALYZE
#   tests/golden/golden.sh diff DIR A B    count the sets whose JSON or exit
#                                          code differs between runs A and B;
#                                          exit 1 if any
#   tests/golden/golden.sh check DIR REV   all three: the corpus from this
#                                          tree's build, REV's analyzer built
#                                          in a temporary worktree, and this
#                                          tree's, compared
#
# The corpus (why each is there):
#   example        the committed example under traces/
#   h200-*         the traces recorded on the H200 (tests/data)
#   gen-*          p3d-gen sets: layouts and orders, GPU records, a stall
#                  (one with a rank whose trace reached its size cap),
#                  a rank with thousands of dropped records,
#                  a skipped op, a mismatch, bad files (deterministic)
#   sim-*          p3d-sim jobs under the real shim: every framework the
#                  simulator replays, MoE, HSDP, the 1F1B schedule with
#                  interleaving, stragglers and clock skew
#   hang-*         the hang matrix's fault kinds: a rank that never issues
#                  an op (TP, PP, DP, CP), a kill, mismatches
# Each set is analysed twice: by default and with --layout infer.  The
# simulator's sets are timing-dependent, so the corpus is written once
# and both analyzers read the same files.
set -eu
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${P3D_BUILD:-$SRC/build}

die() { echo "golden.sh: $*" >&2; exit 2; }

# sim NAME ARGS...: one p3d-sim job into $SETS/NAME
sim() {
    name=$1; shift
    "$BUILD/p3d-sim" --out "$SETS" --job-id "$name" \
        --shim "$BUILD/libp3dtrace.so" --quiet --timeout 60 "$@" \
        > "$SETS/$name.log" 2>&1 || true
    [ -d "$SETS/$name" ] || die "p3d-sim $name wrote no traces: $(tail -n 3 "$SETS/$name.log")"
}

# gen NAME ARGS...: one p3d-gen set into $SETS/NAME
gen() {
    name=$1; shift
    "$BUILD/tests/p3d-gen" --job "$name" "$@" "$SETS/$name" \
        > "$SETS/$name.log" 2>&1
}

corpus() {
    SETS=$1/sets
    [ -x "$BUILD/p3d-sim" ] && [ -x "$BUILD/tests/p3d-gen" ] ||
        die "build the fakes first: make all fakes $BUILD/tests/p3d-gen"
    rm -rf "$SETS" && mkdir -p "$SETS"
    cp -r "$SRC/traces/example-tp2pp2dp2" "$SETS/example"
    for t in "$SRC"/tests/data/h200-*/*.tar.gz; do
        n=h200-$(basename "$t" .tar.gz)
        mkdir -p "$SETS/$n" && tar -xzf "$t" -C "$SETS/$n"
    done
    gen gen-tp2pp2dp2 --tp 2 --pp 2 --dp 2
    gen gen-tp4dp2-ppdp --tp 4 --dp 2 --pp 2 --order tp-cp-ep-pp-dp
    gen gen-cp2 --tp 2 --cp 2 --dp 2 --pp 2 --gpu
    gen gen-ep2 --tp 2 --dp 4 --ep 2 --gpu
    gen gen-64 --tp 4 --pp 4 --dp 4 --gpu
    gen gen-nocmd --tp 2 --pp 2 --dp 2 --no-cmdline --p2p
    gen gen-stall --tp 2 --dp 2 --stall
    gen gen-skip --tp 2 --pp 2 --dp 2 --skip 3
    gen gen-mismatch --tp 2 --dp 2 --mismatch 1
    gen gen-bad --tp 2 --dp 4 --truncate 3 --bad-magic 5 --missing 6
    gen gen-capped --tp 2 --pp 2 --dp 2 --capped 5 --stall
    gen gen-stopped --tp 2 --pp 2 --dp 2 --gpu --stall --stall-us 100 --steps 6
    gen gen-gaps --tp 2 --dp 2 --ops 40000 --gaps 1
    sim sim-tp2pp2dp2 --tp 2 --pp 2 --dp 2 -m 8 --iters 3
    sim sim-vpp --tp 1 --pp 4 --dp 2 -m 8 --vpp 2 --iters 2
    sim sim-ppdp --tp 2 --pp 2 --dp 2 -m 4 --order tp-cp-ep-pp-dp --iters 2
    sim sim-cp --tp 1 --cp 2 --pp 2 --dp 2 -m 4 --iters 2
    sim sim-ep --tp 2 --dp 4 --ep 2 -m 4 --iters 2
    sim sim-straggler --tp 2 --pp 2 --dp 2 -m 4 --straggler 3:100 \
        --iters 3
    sim sim-skew --tp 2 --dp 2 --pp 2 -m 4 --hosts 2 --skew 4:5000000 \
        --iters 2
    sim sim-titan --framework titan --tp 2 --cp 2 --dp 2 --iters 2
    sim sim-hsdp --framework titan --tp 2 --dp 4 --dp-replicate 2 --iters 2
    sim sim-ddp --framework ddp --dp 4 --iters 2
    sim sim-fsdp --framework fsdp --dp 4 --iters 2
    sim sim-deepspeed --framework deepspeed --tp 2 --dp 4 --iters 2
    sim sim-megatron-cmd --tp 2 --pp 2 --dp 2 -m 4 --iters 2 -- \
        pretrain_gpt.py --tensor-model-parallel-size 2 \
        --pipeline-model-parallel-size 2 --micro-batch-size 1 \
        --global-batch-size 8 --seq-length 512
    export P3D_HANG_TIMEOUT=1
    sim hang-tp --tp 2 --pp 2 --dp 2 -m 4 --hang 0:tp:13 --stop-when-hung
    sim hang-pp --tp 2 --pp 2 --dp 2 -m 4 --hang 6:pp:5 --stop-when-hung
    sim hang-dp --tp 2 --pp 2 --dp 2 -m 4 --hang 7:dp:5 --stop-when-hung
    sim hang-cp --tp 1 --cp 2 --pp 2 --dp 2 -m 4 --hang 1:cp:8 \
        --stop-when-hung
    sim hang-async --tp 2 --pp 2 --dp 2 -m 4 --async --hang 5:pp:7 \
        --stop-when-hung
    sim hang-kill --tp 2 --pp 2 --dp 2 -m 4 --kill 3:20
    sim hang-mismatch --tp 2 --pp 2 --dp 2 -m 4 --mismatch 2:tp:5
    sim hang-mismatch-dtype --tp 2 --pp 2 --dp 2 -m 4 \
        --mismatch 2:tp:5:dtype
    sim hang-ep --tp 2 --dp 4 --ep 2 -m 4 --hang 1:ep:3 --stop-when-hung
    unset P3D_HANG_TIMEOUT
    rm -f "$SETS"/*.log "$SETS"/*.rc
    ls "$SETS" | wc -l | sed 's/$/ trace sets/'
}

# Before comparing, JSON drops the fields issue 22 added on purpose
# (GOLDEN_ADDED; "findings", a clock's "bounds_contradict_ns", a hang
# frontier's "member_counts") and
# the fields that say how long the analysis took (none today).
GOLDEN_ADDED=${GOLDEN_ADDED:-findings,bounds_contradict_ns,peers_gpu_unknown,member_counts}
normalize() {
    case $1 in
    *.json) python3 - "$1" "$GOLDEN_ADDED" <<'PY' ;;
import json, sys
drop = set(sys.argv[2].split(","))
def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k not in drop}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x
try:
    d = json.load(open(sys.argv[1]))
except ValueError:
    sys.stdout.write(open(sys.argv[1]).read())
else:
    json.dump(strip(d), sys.stdout, indent=1, sort_keys=True)
PY
    *) cat "$1" ;;
    esac
}

run() {
    dir=$1 an=$2 name=$3
    [ -x "$an" ] || die "no analyzer '$an'"
    mkdir -p "$dir/$name"
    for s in "$dir"/sets/*/; do
        s=${s%/}; n=$(basename "$s")
        for how in default infer; do
            set -- ; [ $how = infer ] && set -- --layout infer
            o=$dir/$name/$n.$how rc=0
            "$an" "$@" --json "$o.json" --chrome "$o.chrome" \
                --html "$o.html" "$s" > "$o.txt" 2> "$o.err" || rc=$?
            echo "$rc" > "$o.rc"
        done
    done
}

# The JSON and exit codes must not change; the text, Chrome and HTML
# views are compared and counted too, for information.
diff_runs() {
    dir=$1 a=$2 b=$3
    for ext in txt chrome html; do
        n=0
        for f in "$dir/$a"/*.$ext; do
            cmp -s "$f" "$dir/$b/$(basename "$f")" || n=$((n + 1))
        done
        echo "golden: $ext views: $n differ (for information)"
    done
    n=0 total=0
    for f in "$dir/$a"/*.json "$dir/$a"/*.rc; do
        g=$dir/$b/$(basename "$f")
        total=$((total + 1))
        if [ ! -f "$g" ] || ! { normalize "$f" > "$f.norm" &&
            normalize "$g" > "$g.norm" && cmp -s "$f.norm" "$g.norm"; }; then
            echo "differs: $(basename "$f")"
            n=$((n + 1))
        fi
        rm -f "$f.norm" "$g.norm"
    done
    echo "golden: $n of $total outputs differ ($a vs $b)"
    [ "$n" -eq 0 ]
}

check() {
    dir=$1 rev=$2
    wt=$(mktemp -d "${TMPDIR:-/tmp}/p3dgolden-wt.XXXXXX")
    git -C "$SRC" worktree add -q --detach "$wt/src" "$rev"
    make -C "$wt/src" -j2 -s build/p3d-analyze > "$dir.ref-build.log" 2>&1 ||
        die "building $rev failed: $dir.ref-build.log"
    [ -d "$dir/sets" ] || corpus "$dir"
    run "$dir" "$wt/src/build/p3d-analyze" ref
    run "$dir" "$BUILD/p3d-analyze" new
    git -C "$SRC" worktree remove --force "$wt/src"
    rm -rf "$wt"
    diff_runs "$dir" ref new
}

cmd=${1:-}; [ $# -gt 0 ] && shift
case $cmd in
corpus) [ $# -eq 1 ] || die "usage: corpus DIR"; corpus "$1" ;;
run) [ $# -eq 3 ] || die "usage: run DIR ANALYZE NAME"; run "$@" ;;
diff) [ $# -eq 3 ] || die "usage: diff DIR A B"; diff_runs "$@" ;;
check) [ $# -eq 2 ] || die "usage: check DIR REV"; check "$@" ;;
*) die "usage: golden.sh corpus|run|diff|check ... (see the top of $0)" ;;
esac
