#!/bin/bash
# A real hang on the GPU machine (issue 7): tests/gpu/hang_torch.py, 4
# ranks on one GPU, under the shim with P3D_HANG_TIMEOUT=5 and PyTorch's
# NCCL timeout far away (600 s), stopped like torchrun stops a job
# (SIGTERM) after HANG_KILL_AFTER seconds (default 40); then p3d-analyze
# prints what the user sees.  Two runs:
#   desync:   rank 3 skips one world all-reduce and goes on; all later
#             all-reduces pair up one off; at the end ranks 0-2 wait in
#             an all-reduce rank 3 never issues (it sits in host code);
#   deadlock: the same skip with a TP all-reduce after each world one:
#             rank 3 then waits in TP for rank 2, which waits in the
#             skipped world all-reduce for rank 3 (a circular wait).
#   half:     (HANG_HALF=1) 20 ranks, 10 never reach a world all-reduce.
# Expected: the analyzer names rank 3 as the root in both, ranks 10-19 in
# the third.
#   tests/gpu/hang_run.sh OUTDIR      (exit 0 pass, 1 fail, 77 no GPU)
. "$(dirname "$0")/torch_lib.sh" hang_run.sh "${1:-}"
export P3D_STACKS=1     # libunwind if present, else libgcc (slower, fine here)
kill_after=${HANG_KILL_AFTER:-40}
fail=0
nproc=4 want="[3]"
run() {  # run NAME PORT ARGS... (nproc ranks; want: the roots expected)
    name=$1 port=$2; shift 2
    rm -rf "$out/$name"; mkdir -p "$out/$name"
    echo "== $name: torchrun, $nproc ranks, SIGTERM after ${kill_after}s"
    P3D_TRACE_DIR="$out/$name/traces" P3D_JOB_ID=job LD_PRELOAD=$lib \
        timeout -s TERM -k 30 "$kill_after" \
        torchrun --nproc_per_node "$nproc" --master_port "$port" \
        "$here/tests/gpu/hang_torch.py" --out "$out/$name" "$@" \
        > "$out/$name/log" 2>&1
    echo "torchrun exit $? (124: stopped by the driver, as intended)"
    echo "-- the watchdog's live reports (stderr of the ranks):"
    grep '^p3dtrace:' "$out/$name/log" | grep -v 'warning' | head -60
    echo "-- p3d-analyze $out/$name/traces/job (hang section):"
    "$analyze" --json "$out/$name/report.json" "$out/$name/traces/job" \
        > "$out/$name/report.txt" 2>"$out/$name/analyze.err"
    sed -n '/^hang analysis/,$p' "$out/$name/report.txt"
    python3 - "$out/$name/report.json" "$want" <<'PY' || fail=1
import json, sys
h = json.load(open(sys.argv[1]))["hang"]
want = json.loads(sys.argv[2])
ok = h and h["detected"] and h["root_ranks"] == want
print("%s: root_ranks %s (expected %s)" % ("PASS" if ok else "FAIL",
                                           h and h["root_ranks"], want))
sys.exit(0 if ok else 1)
PY
}
# HANG_ARGS: more arguments for hang_torch.py, e.g. "--fill-ops 12000"
# with P3D_MAX_MB=1: every trace is full before the hang, which is then
# known from the watchdog's reports only
# shellcheck disable=SC2086
run desync 29531 --mode desync ${HANG_ARGS:-}
# shellcheck disable=SC2086
run deadlock 29532 --mode deadlock ${HANG_ARGS:-}
# HANG_HALF=1: 20 ranks, the last 10 never reach a world all-reduce the
# others wait in: each waits on 10 members, more than the 8 a wait keeps
# as edges (hang/p3d_hang_edges.c stands for the rest by a group)
if [ "${HANG_HALF:-0}" = 1 ]; then
    nproc=20 want="[10, 11, 12, 13, 14, 15, 16, 17, 18, 19]"
    run half 29533 --mode half --absent 10 --skip-step 3 --steps 6
fi
exit $fail
