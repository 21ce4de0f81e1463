#!/bin/bash
# nccl_tests.sh - build nccl-tests (all_reduce, all_gather, reduce_scatter,
# sendrecv) on the GPU machine and run each as N processes sharing GPU 0
# under libp3dtrace.so, then compare p3dtrace's per-size GPU time and busbw
# with what nccl-tests printed (tests/gpu/check_nccl_tests.py).
#
#   tests/gpu/nccl_tests.sh SUMMARY_FILE [test...]
#
# nccl-tests runs several processes only through MPI; the GPU machine has
# none, so it is built with MPI=1 against tests/gpu/minimpi (a small MPI
# over files, enough for nccl-tests) and each rank is started here.  The
# CUDA runtime is linked shared (-cudart=shared) so that the shim finds
# cudart and CUPTI for GPU times as in PyTorch processes (NVCC then is not
# a bare path, so nccl-tests' CUDA version probe fails: CXXSTD is given).
# Environment (defaults in brackets):
#   NCCL_TESTS_DIR  nccl-tests source           [<repo>/third_party/nccl-tests]
#   NT_BUILD        build folder, reused if the binaries exist
#                                               [/tmp/p3d-nccl-tests-build]
#   WORK            logs and traces             [/tmp/p3d-val/nccl]
#   NT_RANKS [8]  NT_ITERS [20]  NT_MIN [1M]  NT_MAX [64M]  NT_TIMEOUT [150]
#   NT_SENDRECV_ITERS [100]  NT_SENDRECV_TIMEOUT [300]: nccl-tests times a
#                   loop of ops from the host, so a fixed ~8 ms of launch and
#                   stream-synchronisation latency (8 processes time-slicing
#                   GPU 0) is spread over the loop; at 20 ops that is 5-8% of
#                   a 1-2 MB send/recv (~5 ms per op), at 100 ops ~1.5%
#   NT_GENCODE      nvcc -gencode flags          [sm_90]
#   P3D_LIB         the shim                    [<repo>/build/libp3dtrace.so]
#   NT_FAKE=1       no GPU: run the real binaries over the CPU test doubles
#                   (make fakes; build/fakes libcudart/libnccl, plus
#                   minimpi/cudart_extra.c), 4 ranks, 1M-4M, 3 iterations:
#                   checks this script and check_nccl_tests.py, not timings
#                   (needs nvcc and nccl.h in CUDA_HOME; ~5 min build on 2 cores)
# Exit 77 without a GPU or nvcc, 1 on any failed check.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
summary=${1:?usage: nccl_tests.sh SUMMARY_FILE [test...]}
shift
tests=${*:-all_reduce all_gather reduce_scatter sendrecv}
NCCL_TESTS_DIR=${NCCL_TESTS_DIR:-$root/third_party/nccl-tests}
NT_BUILD=${NT_BUILD:-/tmp/p3d-nccl-tests-build}
WORK=${WORK:-/tmp/p3d-val/nccl}
FAKE=${NT_FAKE:-0}
if [ "$FAKE" = 1 ]; then d_n=4 d_it=3 d_max=4M; else d_n=8 d_it=20 d_max=64M; fi
N=${NT_RANKS:-$d_n}; ITERS=${NT_ITERS:-$d_it}
if [ "$FAKE" = 1 ]; then d_sr_it=$ITERS; else d_sr_it=100; fi
SR_ITERS=${NT_SENDRECV_ITERS:-$d_sr_it}
NT_MIN=${NT_MIN:-1M}; NT_MAX=${NT_MAX:-$d_max}; TMO=${NT_TIMEOUT:-150}
GENCODE=${NT_GENCODE:--gencode=arch=compute_90,code=sm_90}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
P3D_LIB=${P3D_LIB:-$root/build/libp3dtrace.so}
say() { echo "$*"; echo "$*" >> "$summary"; }

if [ "$FAKE" != 1 ] && ! { command -v nvidia-smi > /dev/null &&
                           nvidia-smi -L > /dev/null 2>&1; }; then
    say "SKIP nccl: no NVIDIA GPU (nvidia-smi -L failed)"; exit 77
fi
[ -x "$CUDA_HOME/bin/nvcc" ] ||
    { say "SKIP nccl: no nvcc at $CUDA_HOME/bin/nvcc"; exit 77; }
[ -f "$NCCL_TESTS_DIR/src/common.cu" ] ||
    { say "FAIL nccl: no nccl-tests source in NCCL_TESTS_DIR=$NCCL_TESTS_DIR"; exit 1; }
[ -f "$P3D_LIB" ] || { say "FAIL nccl: no shim at $P3D_LIB (make)"; exit 1; }

# NCCL of the Python package nvidia-nccl-cu13 (torch's NCCL).
nccl_pkg=$(python3 -c 'import nvidia.nccl as m, os
print(list(m.__path__)[0])' 2>/dev/null)
fakes=$root/build/fakes
if [ "$FAKE" = 1 ]; then
    [ -f "$fakes/libnccl.so.2" ] && [ -f "$fakes/libcudart.so.13" ] ||
        { say "FAIL nccl: NT_FAKE=1 needs build/fakes (make fakes)"; exit 1; }
    nccl_pkg=$NT_BUILD/fakenccl
    mkdir -p "$nccl_pkg/lib"
    ln -sfn "$CUDA_HOME/include" "$nccl_pkg/include"
    ln -sf "$fakes/libnccl.so.2" "$nccl_pkg/lib/libnccl.so.2"
    gcc -shared -fPIC -I"$CUDA_HOME/include" -o "$NT_BUILD/cudart_extra.so" \
        "$here/minimpi/cudart_extra.c" ||
        { say "FAIL nccl: cudart_extra.c does not build"; exit 1; }
fi
[ -n "$nccl_pkg" ] && [ -f "$nccl_pkg/lib/libnccl.so.2" ] ||
    { say "FAIL nccl: python package nvidia.nccl (libnccl.so.2) not found"; exit 1; }
nccl_inc=$nccl_pkg/include
[ -f "$nccl_inc/nccl.h" ] || nccl_inc=$CUDA_HOME/include
[ -f "$nccl_inc/nccl.h" ] || { say "FAIL nccl: no nccl.h"; exit 1; }
if command -v mpirun > /dev/null; then
    echo "note: an MPI exists ($(command -v mpirun)); minimpi is used anyway"
fi

build() {
    local b=$NT_BUILD t bins=()
    for t in $tests; do
        [ -x "$b/bin/${t}_perf" ] || bins+=("$b/bin/${t}_perf")
    done
    # The links are made on every run: a build folder reused from another
    # machine (carried) must load this machine's NCCL.
    mkdir -p "$b/nccl/lib" "$b/mpi/include" "$b/mpi/lib"
    ln -sfn "$nccl_inc" "$b/nccl/include"
    ln -sf "$nccl_pkg/lib/libnccl.so.2" "$b/nccl/lib/libnccl.so"
    ln -sf "$nccl_pkg/lib/libnccl.so.2" "$b/nccl/lib/libnccl.so.2"
    [ ${#bins[@]} -eq 0 ] && { echo "nccl-tests: reusing $b/bin"; return 0; }
    cp "$here/minimpi/mpi.h" "$b/mpi/include/" &&
    gcc -std=gnu11 -O2 -fPIC -I"$b/mpi/include" -c "$here/minimpi/minimpi.c" \
        -o "$b/mpi/minimpi.o" && ar rcs "$b/mpi/lib/libmpi.a" "$b/mpi/minimpi.o" ||
        return 1
    rm -rf "$b/src"; cp -r "$NCCL_TESTS_DIR" "$b/src"
    make -C "$b/src/src" -j"$(nproc)" MPI=1 MPI_HOME="$b/mpi" \
        NCCL_HOME="$b/nccl" CUDA_HOME="$CUDA_HOME" NVCC_GENCODE="$GENCODE" \
        NVCC="$CUDA_HOME/bin/nvcc -cudart=shared" CXXSTD=-std=c++17 \
        BUILDDIR="$b/bin" "${bins[@]}" > "$b/build.log" 2>&1
}

t0=$(date +%s)
if ! build; then
    tail -20 "$NT_BUILD/build.log" 2>/dev/null
    say "FAIL nccl: build failed (log $NT_BUILD/build.log)"; exit 1
fi
say "nccl: nccl-tests built in $(( $(date +%s) - t0 )) s, NCCL $nccl_pkg, $N ranks on GPU 0, -b $NT_MIN -e $NT_MAX -f 2 -n $ITERS (sendrecv $SR_ITERS) -w 1 -c 0"

iters_of() { [ "$1" = sendrecv ] && echo "$SR_ITERS" || echo "$ITERS"; }
timeout_of() { [ "$1" = sendrecv ] && echo "${NT_SENDRECV_TIMEOUT:-300}" || echo "$TMO"; }

run_test() {  # run_test NAME -> 0 if every rank exited 0
    local t=$1 d=$WORK/$1 r pids=() n tmo
    n=$(iters_of "$t"); tmo=$(timeout_of "$t")
    local pre=$P3D_LIB libs=$NT_BUILD/nccl/lib:$CUDA_HOME/lib64
    if [ "$FAKE" = 1 ]; then
        pre="$P3D_LIB $NT_BUILD/cudart_extra.so" libs=$fakes
    fi
    rm -rf "$d"; mkdir -p "$d/mpi"
    for (( r = 0; r < N; r++ )); do
        env LD_PRELOAD="$pre" P3D_TRACE_DIR="$d/traces" P3D_JOB_ID=job \
            P3D_FAKE_SHM_DIR="$d" \
            P3D_RANK=$r P3D_WORLD_SIZE=$N RANK=$r WORLD_SIZE=$N \
            P3D_MPI_DIR="$d/mpi" P3D_MPI_RANK=$r P3D_MPI_SIZE=$N \
            P3D_MPI_TIMEOUT=$tmo NCCL_TESTS_DEVICE=0 NCCL_HOSTID=p3dnt$r \
            NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=0 \
            TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \
            LD_LIBRARY_PATH="$libs:${LD_LIBRARY_PATH:-}" \
            timeout -k 5 "$tmo" "$NT_BUILD/bin/${t}_perf" -b "$NT_MIN" \
            -e "$NT_MAX" -f 2 -g 1 -t 1 -n "$n" -w 1 -c 0 \
            > "$d/rank$r.log" 2>&1 &
        pids+=($!)
    done
    reap "${pids[@]}"
}

reap() {  # reap PID... -> 0 if all exit 0; on a failure end the others
    local pids=("$@") alive r st rc=0
    while :; do
        alive=0
        for r in "${!pids[@]}"; do
            [ -n "${pids[$r]}" ] || continue
            if kill -0 "${pids[$r]}" 2> /dev/null; then
                alive=1; continue
            fi
            wait "${pids[$r]}"; st=$?
            pids[$r]=
            if [ $st -ne 0 ] && [ $rc -eq 0 ]; then
                echo "rank $r: exit $st; ending the other ranks"
                rc=1
                for p in "${pids[@]}"; do [ -n "$p" ] && kill "$p" 2> /dev/null; done
            fi
        done
        [ $alive -eq 1 ] || break
        sleep 0.5
    done
    return $rc
}

cupti_notes() {  # how the shim timed NCCL ops, summed over ranks
    local f
    for f in "$1"/rank-*.p3d; do
        "$root/build/p3d-analyze" --dump "$f" 2> /dev/null |
            sed -n -e 's/.*text="cupti: driver records \([a-z]*\); NCCL kernels linked by correlation id \([0-9]*\), by launch order \([0-9]*\), to no op \([0-9]*\)".*/\1 \2 \3 \4/p' \
                -e 's/.*text="cupti: kernel records in .*NCCL ops timed by CUDA events.*/windows 0 0 0/p'
    done | awk '{ n++; m[$1]++; a += $2; b += $3; c += $4 }
        END { for (k in m) modes = modes " " k "(" m[k] ")"
              printf "cupti notes of %d ranks:%s (windows: NCCL ops timed " \
                  "by CUDA events, kernels in windows); NCCL kernels " \
                  "linked by correlation id %d, by launch order %d, to " \
                  "no op %d\n", n, modes, a, b, c }'
}

fail=0
for t in $tests; do
    t1=$(date +%s)
    if ! run_test "$t"; then
        tail -12 "$WORK/$t/rank0.log"
        say "FAIL nccl $t: a rank failed (logs $WORK/$t/rank*.log)"
        fail=1; continue
    fi
    grep -E 'nccl-tests version|Avg bus' "$WORK/$t/rank0.log" | tee -a "$summary"
    python3 "$here/check_nccl_tests.py" --test "$t" --log "$WORK/$t/rank0.log" \
        --traces "$WORK/$t/traces/job" --nranks "$N" --iters "$(iters_of "$t")" \
        --summary "$summary" || fail=1
    [ -x "$root/build/p3d-analyze" ] &&
        "$root/build/p3d-analyze" "$WORK/$t/traces/job" > "$WORK/$t/report.txt" 2>&1
    cupti_notes "$WORK/$t/traces/job" | sed "s/^/INFO nccl $t: /" | tee -a "$summary"
    say "nccl $t: $(( $(date +%s) - t1 )) s"
done
say "nccl: $([ $fail -eq 0 ] && echo PASS || echo FAIL) ($(( $(date +%s) - t0 )) s)"
exit $fail
