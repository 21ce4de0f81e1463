/*
 * shim_bench.c - host cost the shim adds per NCCL call.  Links the
 * do-nothing NCCL of shim_nullnccl.c; run it with and without
 * LD_PRELOAD=libp3dtrace.so and compare:  shim_bench [CALLS] [ROUNDS]
 * prints the best round in ns per ncclAllReduce.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

static double bench_now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000000;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    ncclUniqueId id = {{0}};
    ncclComm_t c;
    double best = 1e30;
    float x = 1;
    int i, k;

    if (n <= 0 || ncclCommInitRank(&c, 1, id, 0) != ncclSuccess)
        return 1;
    for (k = 0; k < rounds; k++) {
        double a = bench_now(), t;

        for (i = 0; i < n; i++)
            ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, c, NULL);
        t = (bench_now() - a) / n;
        best = t < best ? t : best;
    }
    printf("shim_bench: %.1f ns per ncclAllReduce (best of %d x %d)\n",
           best, rounds, n);
    return 0;
}
