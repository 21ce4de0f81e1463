#!/bin/bash
# test_val_checks.sh - CPU-side checks of the GPU validation suite's own
# logic (tests/gpu/), so that a wrong parser or launcher is found here and
# not in scarce GPU time:
#   1. minimpi (the MPI that nccl-tests is built against) with 5 processes
#      passes its selftest, and a missing peer ends in a timeout error;
#   2. check_nccl_tests.py parses nccl-tests' table, picks the timed ops
#      out of traces and passes/fails on the 5% bound;
#   3. check_megatron.py passes on the example traces with a Megatron log
#      made to agree, and fails on a wrong layout, a step time 5% off, a
#      changed loss and a memory peak below Megatron's;
#   4. megatron.sh, with a fake runner standing in for Megatron-LM (it
#      copies the example traces and the agreeing log), runs the traced and
#      untraced pair, the analyzer and the checks, and writes its summary;
#   4b. sweep_check.sh does the same for the sweep (scripts/sweep.sh with a
#      fake runner), keeps the comparison table and fails a failing run;
#   5. the label expectations agree with the analyzer on simulated
#      Megatron jobs 1/4/2 and 1/1/8 (p3d-sim).
set -u
src=${P3D_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${P3D_BUILD:-$src/build}
gpu=$src/tests/gpu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

# 1. minimpi
cc -std=gnu11 -Wall -Wextra -Werror -O1 -I"$gpu/minimpi" \
    "$gpu/minimpi/minimpi.c" "$gpu/minimpi/selftest.c" -o "$tmp/selftest" ||
    { echo "FAIL: minimpi does not compile"; exit 1; }
mkdir "$tmp/mpi"
pids=()
for r in 0 1 2 3 4; do
    P3D_MPI_DIR=$tmp/mpi P3D_MPI_RANK=$r P3D_MPI_SIZE=5 P3D_MPI_TIMEOUT=20 \
        "$tmp/selftest" > "$tmp/st$r.log" 2>&1 &
    pids+=($!)
done
n=0
for r in 0 1 2 3 4; do
    wait "${pids[$r]}" && grep -q "selftest ok rank $r" "$tmp/st$r.log" &&
        n=$((n + 1))
done
[ $n -eq 5 ] && ok "minimpi selftest, 5 ranks" ||
    { bad "minimpi selftest: $n of 5 ranks passed"; cat "$tmp"/st*.log; }
mkdir "$tmp/mpi2"
P3D_MPI_DIR=$tmp/mpi2 P3D_MPI_RANK=0 P3D_MPI_SIZE=2 P3D_MPI_TIMEOUT=0.2 \
    "$tmp/selftest" > "$tmp/alone.log" 2>&1
r=$?
[ $r -eq 3 ] && grep -q "timed out" "$tmp/alone.log" &&
    ok "minimpi: a missing peer times out (exit $r)" ||
    bad "minimpi: missing peer gave exit $r: $(cat "$tmp/alone.log")"

# 2. check_nccl_tests.py
PYTHONDONTWRITEBYTECODE=1 python3 - "$gpu" <<'PY' || fail=1
import sys
sys.path.insert(0, sys.argv[1])
import check_nccl_tests as c

out = """# nccl-tests all_reduce
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
      524288        131072     float     sum      -1   600.00    0.87    1.53    N/A   610.00    0.86    1.50    N/A
     1048576        262144     float     sum      -1  1000.00    1.05    1.84    N/A  1010.00    1.04    1.82    N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 1.67
"""
rows = c.parse_nccl_tests(out)
assert [r["size"] for r in rows] == [524288, 1048576], rows
assert rows[1]["ip"]["time_us"] == 1010.0 and rows[0]["oop"]["busbw"] == 1.53


class T:
    def __init__(self, recs):
        self.records = recs


def trace(scale, iters=3, n_warm=1, name="AllReduce", group=False):
    recs, oid, t = [], 0, 1000
    for count, (oop, ip) in ((131072, (600, 610)), (262144, (1000, 1010))):
        # warm-up, then per placement one untimed sync op and the timed
        # ops (nccl-tests' TimeTest/BenchTime)
        plan = [5000] * n_warm + [7000] + [oop] * iters + [7000] + \
            [ip] * iters
        for k, us in enumerate(plan):
            names = ("Send", "Recv") if group else (name,)
            gid = t // 10 ** 7 + 1
            for nm in names:
                oid += 1
                recs.append({"type": "op", "op_name": nm, "op_id": oid,
                             "count": count, "flags": 1 if group else 0,
                             "group_id": gid if group else 0})
                recs.append({"type": "gpu_op", "op_id": oid, "gpu_start": t,
                             "gpu_end": t + int(us * 1000 * scale)})
            t += 10 ** 7
    return T(recs)


tr = {r: trace(1.0) for r in range(4)}
lines, fails = c.compare("all_reduce", rows, tr, 4, 3, 1 << 20, 0.05)
assert fails == 0, lines
assert len(lines) == 4 and "not checked" in lines[0], lines
tr[2] = trace(1.3)  # one rank 30% slower: mean 7.5% over
lines, fails = c.compare("all_reduce", rows, tr, 4, 3, 1 << 20, 0.05)
assert fails == 2 and lines[2].startswith("FAIL"), lines
tr = {r: trace(1.0, iters=2) for r in range(4)}  # fewer ops than -n 3
lines, fails = c.compare("all_reduce", rows, tr, 4, 3, 1 << 20, 0.05)
assert fails == 4, lines
# sendrecv: Send+Recv of one group are one instance
srows = c.parse_nccl_tests(out.replace("sum", "none"))
tr = {r: trace(1.0, group=True) for r in range(4)}
lines, fails = c.compare("sendrecv", srows, tr, 4, 3, 1 << 20, 0.05)
assert fails == 0, lines
print("ok: check_nccl_tests parses, selects timed ops, bounds at 5%")
PY

# 3. check_megatron.py on the example traces
ex=$src/traces/example-tp2pp2dp2
if [ ! -x "$build/p3d-analyze" ] || [ ! -d "$ex" ]; then
    echo "skip part 3: no $build/p3d-analyze or $ex"
    exit $fail
fi
"$build/p3d-analyze" --json "$tmp/ex.json" "$ex" > /dev/null 2>&1 ||
    { bad "p3d-analyze --json on $ex"; exit 1; }
python3 - "$tmp/ex.json" "$tmp" <<'PY' || fail=1
import datetime, json, sys
rep = json.load(open(sys.argv[1]))
per = rep["steps"]["per_iter_ms"]
loss = ["1.037E+01", "1.021E+01", "9.876E+00"][:len(per)]


def log(scale=1.0, losses=loss, mem_scale=1.0):
    out, t = [], datetime.datetime(2026, 11, 29, 12, 0, 0)
    for i, ms in enumerate(per, 1):
        t += datetime.timedelta(milliseconds=ms * scale)
        out.append(" [%s] iteration %8d/%8d | consumed "
                   "samples: %12d | elapsed time per iteration (ms): %.1f | "
                   "learning rate: 1.000000E-04 | global batch size:    16 | "
                   "lm loss: %s | loss scale: 1.0 | grad norm: 3.210 | "
                   % (t.isoformat(" "), i, len(per), 16 * i, ms * scale,
                      losses[i - 1]))
        for r in rep["ranks"]:
            if r["rank"] in (0, 1, 4, 5) and r["peak_mem_bytes"]:
                out.append("[Rank %d] (after %d iterations) memory (MB) | "
                           "allocated: 1.00 | max allocated: 1.00 | reserved:"
                           " 2.00 | max reserved: %.2f" % (
                               r["rank"], i,
                               r["peak_mem_bytes"] / 2**20 * mem_scale))
    return "\n".join(out) + "\n"


d = sys.argv[2]
open(d + "/good.log", "w").write(log())
open(d + "/slow.log", "w").write(log(scale=1.05))
open(d + "/loss.log", "w").write(log(losses=loss[:-1] + ["9.877E+00"]))
open(d + "/mem.log", "w").write(log(mem_scale=1.1))
PY
chk() { python3 "$gpu/check_megatron.py" --nmb 8 --json "$tmp/ex.json" "$@"; }
if chk --tp 2 --pp 2 --dp 2 --log "$tmp/good.log" --plain-log "$tmp/good.log" \
        > "$tmp/good.out"; then
    ok "check_megatron passes on agreeing data ($(grep -c ^PASS "$tmp/good.out") checks)"
else
    bad "check_megatron on agreeing data"; cat "$tmp/good.out"
fi
grep -q "PASS megatron 2/2/2 labels: PP groups seen 4 of 4" "$tmp/good.out" &&
    grep -q "PASS megatron 2/2/2 bubble: measured" "$tmp/good.out" &&
    ok "labels and bubble lines" || { bad "labels/bubble lines"; cat "$tmp/good.out"; }
expect_fail() {  # expect_fail WHAT PATTERN ARGS...
    local what=$1 pat=$2; shift 2
    if chk "$@" > "$tmp/neg.out"; then
        bad "check_megatron accepted $what"
    elif grep -q "^FAIL megatron [^ ]* $pat" "$tmp/neg.out"; then
        ok "check_megatron rejects $what"
    else
        bad "check_megatron failed $what without a '$pat' FAIL line"
        cat "$tmp/neg.out"
    fi
}
expect_fail "a wrong layout" "layout" --tp 4 --pp 2 --dp 1 \
    --log "$tmp/good.log"
expect_fail "a step time 5% off" "step" --tp 2 --pp 2 --dp 2 \
    --log "$tmp/slow.log"
expect_fail "a changed loss" "loss" --tp 2 --pp 2 --dp 2 \
    --log "$tmp/good.log" --plain-log "$tmp/loss.log"
expect_fail "a peak below Megatron's" "memory" --tp 2 --pp 2 --dp 2 \
    --log "$tmp/mem.log"
expect_fail "wrong micro-batches" "microbatches" --tp 2 --pp 2 --dp 2 \
    --log "$tmp/good.log" --nmb 4

# 4. megatron.sh end to end with a fake runner
cat > "$tmp/fake_gpt.sh" <<EOF
#!/bin/bash
cp "$tmp/good.log" "\$OUT/\$NAME.log"
[ -z "\$P3D_LIB" ] || cp -r "$ex" "\$OUT/traces/\$NAME"
EOF
chmod +x "$tmp/fake_gpt.sh"
mkdir -p "$tmp/mg/traces"
touch "$tmp/pretrain_gpt.py"
n_it=$(grep -c "elapsed time per iteration" "$tmp/good.log")
if RUN_GPT=$tmp/fake_gpt.sh WORK=$tmp/mg MG_ITERS=$n_it P3D_LIB=$tmp/pretrain_gpt.py \
        MEGATRON_DIR=$tmp bash "$gpu/megatron.sh" "$tmp/mg.txt" 2/2/2 \
        > "$tmp/mg.out" 2>&1 &&
        grep -q "^PASS megatron 2/2/2 loss: $n_it iterations" "$tmp/mg.txt" &&
        grep -q "^megatron: PASS" "$tmp/mg.txt"; then
    ok "megatron.sh runs the pair, analyzes and summarizes"
else
    bad "megatron.sh with a fake runner"; cat "$tmp/mg.out"
fi

# 4b. sweep_check.sh (validate.sh sweep) with the same fake runner: the sweep
#     runs, every run is analyzed and checked, the table lands in the summary
cat > "$tmp/fake_sweep_gpt.sh" <<EOF
#!/bin/bash
mkdir -p "\$OUT/traces"
cp "$tmp/good.log" "\$OUT/\$NAME.log"
cp -r "$ex" "\$OUT/traces/\$NAME"
EOF
chmod +x "$tmp/fake_sweep_gpt.sh"
if RUN_TINY_GPT=$tmp/fake_sweep_gpt.sh EXPS="D:2:2:1 X:3:1:1" NMB=8 \
        ITERS=$n_it WORK=$tmp/sw bash "$gpu/sweep_check.sh" "$tmp/sw.txt" \
        > "$tmp/sw.out" 2>&1 &&
        grep -q "^PASS megatron D-tp2-pp2-cp1-dp2 step: " "$tmp/sw.txt" &&
        grep -q "^| D-tp2-pp2-cp1-dp2 | 2 | 2 | 1 | 2 | 8 |" "$tmp/sw.txt" &&
        grep -q "skipping X (TP=3 PP=1 CP=1): world size 8 is not divisible" "$tmp/sw.txt" &&
        grep -q "^sweep: PASS, 1 runs checked" "$tmp/sw.txt"; then
    ok "sweep_check.sh runs the sweep, checks each run, keeps the table"
else
    bad "sweep_check.sh with a fake runner"; cat "$tmp/sw.out" "$tmp/sw.txt"
fi
if RUN_TINY_GPT=$tmp/fake_sweep_gpt.sh EXPS="D:2:2:1" NMB=4 ITERS=$n_it \
        WORK=$tmp/sw2 bash "$gpu/sweep_check.sh" "$tmp/sw2.txt" \
        > /dev/null 2>&1; then
    bad "sweep_check.sh passed with the wrong micro-batch count"
elif grep -q "^FAIL megatron D-tp2-pp2-cp1-dp2 microbatches" "$tmp/sw2.txt"; then
    ok "sweep_check.sh fails a run whose check fails"
else
    bad "sweep_check.sh failed without a microbatches FAIL"; cat "$tmp/sw2.txt"
fi

# 5. the label expectations against the analyzer on simulated Megatron jobs
#    (p3d-sim lays ranks out as Megatron's RankGenerator does)
# sim TP PP DP JOB: the simulated job; under ASan (rel_check.sh) a run in
# which the leak checker's own tracer failed to stop a rank's threads at
# exit (no leak check ran, as tests/layout/matrix.py says) is repeated
# once; a leak found is another message and fails as before
sim() {
    for try in 1 2; do
        timeout 60 "$build/p3d-sim" --tp "$1" --pp "$2" --dp "$3" -m 8 \
            --out "$tmp/sim" --job-id "$4" --shim "$build/libp3dtrace.so" \
            > "$tmp/$4.out" 2>&1 && return 0
        [ "$try" = 1 ] &&
            grep -q "LeakSanitizer has encountered a fatal error" \
                "$tmp/$4.out" || return 1
        echo "note: the $1/$2/$3 sim run repeated: the leak checker's own" \
             "tracer failed in it (no leak check ran)"
        rm -rf "$tmp/sim/$4"
    done
}
if [ -x "$build/p3d-sim" ] && [ -f "$build/libp3dtrace.so" ]; then
    for cfg in 1/4/2 1/1/8; do
        IFS=/ read -r tp pp dp <<< "$cfg"
        j=sim-$tp-$pp-$dp
        sim "$tp" "$pp" "$dp" "$j" &&
            "$build/p3d-analyze" --json "$tmp/$j.json" "$tmp/sim/$j" \
                > /dev/null 2> "$tmp/$j.err" ||
            { bad "p3d-sim/p3d-analyze $cfg"; tail -n 20 "$tmp/$j.out" \
              "$tmp/$j.err"; continue; }
        python3 "$gpu/check_megatron.py" --tp "$tp" --pp "$pp" --dp "$dp" \
            --nmb 8 --json "$tmp/$j.json" --log /dev/null > "$tmp/$j.chk"
        if grep -q "^FAIL megatron $cfg \(layout\|labels\)" "$tmp/$j.chk" ||
           ! grep -q "^PASS megatron $cfg labels: [0-9]* communicators, 0 not" \
               "$tmp/$j.chk"; then
            bad "labels on the simulated $cfg job"; cat "$tmp/$j.chk"
        else
            ok "labels and layout on the simulated $cfg job"
        fi
    done
else
    echo "skip part 5: no $build/p3d-sim (make fakes)"
fi
exit $fail
