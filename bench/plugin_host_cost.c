/*
 * plugin_host_cost.c - thread CPU ns per ncclAllReduce as the calling
 * thread sees it, for bench/plugin_host_cost.sh, which runs it untraced
 * and under the shim in each P3D_GPU_TIMING setting, one process per
 * setting and round, over bench/null_nccl_plugin.c (which drives the
 * plugin in plugin mode) and bench/null_cudart.c.
 *
 *   plugin_host_cost CALLS   prints "ns_per_op X" (mean over CALLS
 *                            calls after CALLS/10 warm-up calls)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

static float buf[256];

static double thread_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void calls(ncclComm_t comm, long n)
{
    for (long i = 0; i < n; i++)
        if (ncclAllReduce(buf, buf, 256, ncclFloat, ncclSum, comm, NULL) !=
            ncclSuccess)
            exit(1);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    ncclUniqueId id;
    ncclComm_t comm;
    double t0;

    if (n <= 0 || ncclGetUniqueId(&id) != ncclSuccess ||
        ncclCommInitRank(&comm, 2, id, 0) != ncclSuccess)
        return 1;
    calls(comm, n / 10);
    t0 = thread_ns();
    calls(comm, n);
    printf("ns_per_op %.1f\n", (thread_ns() - t0) / (double)n);
    ncclCommDestroy(comm);
    return 0;
}
