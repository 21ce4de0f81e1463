/*
 * fake_selftest.c - checks that the fake NCCL and cudart behave like the
 * real ones: results of every collective, grouped p2p, split, PreMulSum,
 * kernel reports, abort, InitRankScalable, shrink.  Run as
 * `p3dfake-selftest N`: the parent
 * fork+execs N ranks (each a fresh process, so it also works under the
 * shim), which rendezvous through a unique id written to a file.
 * Exit 0 when every rank passed.
 */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "p3dfake.h"

#define CHECK(cond)                                                           \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "rank %d: %s:%d: check failed: %s\n", st_rank,    \
                    __FILE__, __LINE__, #cond);                               \
            exit(1);                                                          \
        }                                                                     \
    } while (0)
#define NCCLOK(x) CHECK((x) == ncclSuccess)
/* Results are ready only after a sync when P3D_FAKE_ASYNC=1. */
#define SYNC(s) CHECK(cudaStreamSynchronize(s) == cudaSuccess)

static int st_rank, st_n;
static int st_kernels, st_nccl_kernels;

static void st_listener(const char *name, void *stream, uint64_t s,
                        uint64_t e, int is_nccl)
{
    (void)stream;
    CHECK(e >= s && name && *name);
    st_kernels++;
    st_nccl_kernels += is_nccl;
    if (is_nccl)
        CHECK(strncmp(name, "ncclDevKernel_", 14) == 0);
}

static void st_allreduce(ncclComm_t c, cudaStream_t s)
{
    size_t n = 100000;   /* 400 KB: several rounds */
    float *x = malloc(n * sizeof(*x));
    int32_t v[4] = { st_rank, st_rank + 1, -st_rank, 3 };

    for (size_t i = 0; i < n; i++)
        x[i] = (float)(st_rank + 1) + (float)(i % 7);
    NCCLOK(ncclAllReduce(x, x, n, ncclFloat, ncclSum, c, s));
    SYNC(s);
    for (size_t i = 0; i < n; i++)
        CHECK(x[i] == (float)(st_n * (st_n + 1) / 2 + st_n * (int)(i % 7)));
    NCCLOK(ncclAllReduce(v, v, 1, ncclInt32, ncclMax, c, s));
    NCCLOK(ncclAllReduce(v + 1, v + 1, 1, ncclInt32, ncclProd, c, s));
    NCCLOK(ncclAllReduce(v + 2, v + 2, 1, ncclInt32, ncclMin, c, s));
    NCCLOK(ncclAllReduce(v + 3, v + 3, 1, ncclInt32, ncclAvg, c, s));
    SYNC(s);
    CHECK(v[0] == st_n - 1 && v[2] == -(st_n - 1) && v[3] == 3);
    {
        int f = 1;
        for (int i = 1; i <= st_n; i++)
            f *= i;
        CHECK(v[1] == f);
    }
    free(x);
}

static void st_gathers(ncclComm_t c, cudaStream_t s)
{
    size_t k = 70000;   /* RS input st_n*k floats */
    float *in = malloc(st_n * k * sizeof(float));
    float *out = malloc(st_n * k * sizeof(float));
    double d = st_rank;

    for (size_t i = 0; i < st_n * k; i++)
        in[i] = (float)(st_rank * 1000 + (int)(i / k));
    NCCLOK(ncclReduceScatter(in, out, k, ncclFloat, ncclSum, c, s));
    SYNC(s);
    for (size_t i = 0; i < k; i++)
        CHECK(out[i] == (float)(1000 * st_n * (st_n - 1) / 2 +
                                st_n * st_rank));
    NCCLOK(ncclAlltoAll(in, out, k, ncclFloat, c, s));
    SYNC(s);
    for (int j = 0; j < st_n; j++)
        CHECK(out[j * k + 5] == (float)(j * 1000 + st_rank));
    NCCLOK(ncclAllGather(in, out, k, ncclFloat, c, s));
    SYNC(s);
    for (int j = 0; j < st_n; j++)
        CHECK(out[j * k + 1] == (float)(j * 1000));
    NCCLOK(ncclBcast(&d, 1, ncclDouble, st_n - 1, c, s));
    SYNC(s);
    CHECK(d == st_n - 1);
    d = st_rank + 1;
    NCCLOK(ncclReduce(&d, out, 1, ncclDouble, ncclSum, 0, c, s));
    SYNC(s);
    if (st_rank == 0)
        CHECK(*(double *)out == st_n * (st_n + 1) / 2);
    NCCLOK(ncclGather(in, out, 3, ncclFloat, 1 % st_n, c, s));
    SYNC(s);
    if (st_rank == 1 % st_n)
        CHECK(out[(st_n - 1) * 3] == (float)((st_n - 1) * 1000));
    NCCLOK(ncclScatter(in, out, k, ncclFloat, 0, c, s));
    SYNC(s);
    CHECK(out[0] == (float)st_rank);
    free(in);
    free(out);
}

static void st_ring(ncclComm_t c, cudaStream_t s)
{
    size_t n = 300000;   /* several p2p chunks each way */
    int *a = malloc(n * sizeof(int)), *b = malloc(n * sizeof(int));
    int *d = malloc(n * sizeof(int)), *e = malloc(n * sizeof(int));
    int next = (st_rank + 1) % st_n, prev = (st_rank + st_n - 1) % st_n;

    for (size_t i = 0; i < n; i++) {
        a[i] = st_rank * 7 + (int)i;
        b[i] = -st_rank - (int)i;
    }
    NCCLOK(ncclGroupStart());
    NCCLOK(ncclSend(a, n, ncclInt32, next, c, s));
    NCCLOK(ncclRecv(d, n, ncclInt32, prev, c, s));
    NCCLOK(ncclGroupStart());
    NCCLOK(ncclSend(b, n, ncclInt32, prev, c, s));
    NCCLOK(ncclRecv(e, n, ncclInt32, next, c, s));
    NCCLOK(ncclGroupEnd());
    NCCLOK(ncclGroupEnd());
    SYNC(s);
    CHECK(d[n - 1] == prev * 7 + (int)(n - 1));
    CHECK(e[12345] == -next - 12345);
    free(a);
    free(b);
    free(d);
    free(e);
}

static void st_split(ncclComm_t c, cudaStream_t s)
{
    ncclComm_t sub = NULL;
    int color = st_rank == st_n - 1 && st_n > 2 ? NCCL_SPLIT_NOCOLOR
                                                : st_rank % 2;
    int r, n, v = st_rank;
    float x = 2.0f, y = (float)st_rank;
    ncclRedOp_t op;

    NCCLOK(ncclCommSplit(c, color, -st_rank, &sub, NULL));
    if (color == NCCL_SPLIT_NOCOLOR) {
        CHECK(sub == NULL);
        return;
    }
    NCCLOK(ncclCommCount(sub, &n));
    NCCLOK(ncclCommUserRank(sub, &r));
    /* keys are -rank: the highest parent rank becomes rank 0 */
    CHECK(r == n - 1 - st_rank / 2);
    NCCLOK(ncclAllReduce(&v, &v, 1, ncclInt32, ncclMax, sub, s));
    SYNC(s);
    NCCLOK(ncclRedOpCreatePreMulSum(&op, &x, ncclFloat, ncclScalarHostImmediate,
                                    sub));
    NCCLOK(ncclAllReduce(&y, &y, 1, ncclFloat, op, sub, s));
    SYNC(s);
    NCCLOK(ncclRedOpDestroy(op, sub));
    CHECK(v % 2 == color && v >= st_rank);
    {
        float want = 0.0f;
        for (int i = 0; i < st_n; i++)
            if (i % 2 == color && !(i == st_n - 1 && st_n > 2))
                want += 2.0f * (float)i;
        CHECK(y == want);
    }
    NCCLOK(ncclCommDestroy(sub));
}

/* InitRankScalable with two ids, then shrink the last rank away. */
static void st_scalable(ncclUniqueId *ids, cudaStream_t s)
{
    ncclComm_t c, sh = NULL;
    int v = 1, excl = st_n - 1, n = 0;

    NCCLOK(ncclCommInitRankScalable(&c, st_n, st_rank, 2, ids, NULL));
    NCCLOK(ncclAllReduce(&v, &v, 1, ncclInt32, ncclSum, c, s));
    SYNC(s);
    CHECK(v == st_n);
    if (st_rank != excl) {
        NCCLOK(ncclCommShrink(c, &excl, 1, &sh, NULL, NCCL_SHRINK_DEFAULT));
        NCCLOK(ncclCommCount(sh, &n));
        CHECK(n == st_n - 1);
        NCCLOK(ncclAllReduce(&v, &v, 1, ncclInt32, ncclSum, sh, s));
        SYNC(s);
        CHECK(v == st_n * (st_n - 1));
        NCCLOK(ncclCommDestroy(sh));
    }
    NCCLOK(ncclCommDestroy(c));
}

static void *st_blocked_recv(void *arg)
{
    ncclComm_t c = arg;
    int x;

    ncclResult_t r = ncclRecv(&x, 1, ncclInt32, 1, c, NULL);

    cudaDeviceSynchronize();   /* async mode: the stream is what blocks */
    return (void *)(long)r;
}

/*
 * While another thread waits in cudaDeviceSynchronize on a stream that
 * cannot drain (st_blocked_recv, in async mode), a new stream can be made
 * and an event on it recorded and waited for, as on a GPU (the shim's GPU
 * thread does this; the fake once blocked it for good).
 */
static void st_new_stream_while_synced(void)
{
    cudaStream_t s;
    cudaEvent_t e;

    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) ==
          cudaSuccess);
    CHECK(cudaEventCreateWithFlags(&e, cudaEventDefault) == cudaSuccess);
    CHECK(cudaEventRecord(e, s) == cudaSuccess);
    CHECK(cudaEventSynchronize(e) == cudaSuccess);
    CHECK(cudaEventDestroy(e) == cudaSuccess);
    CHECK(cudaStreamDestroy(s) == cudaSuccess);
}

/* Single process: InitAll, a grouped all-reduce, and abort of a waiter. */
static void st_local(void)
{
    ncclComm_t cs[2];
    int a[2] = { 3, 4 }, ver = 0;
    pthread_t t;
    void *ret;
    ncclResult_t err = ncclSuccess;
    struct timespec ts = { 0, 50000000 };

    NCCLOK(ncclGetVersion(&ver));
    CHECK(ver == 22809);
    NCCLOK(ncclCommInitAll(cs, 2, NULL));
    NCCLOK(ncclGroupStart());
    for (int i = 0; i < 2; i++)
        NCCLOK(ncclAllReduce(&a[i], &a[i], 1, ncclInt32, ncclSum, cs[i],
                             NULL));
    NCCLOK(ncclGroupEnd());
    SYNC(NULL);
    CHECK(a[0] == 7 && a[1] == 7);
    pthread_create(&t, NULL, st_blocked_recv, cs[0]);
    nanosleep(&ts, NULL);
    st_new_stream_while_synced();
    NCCLOK(ncclCommAbort(cs[0]));
    pthread_join(t, &ret);
    CHECK((long)ret != ncclSuccess || getenv("P3D_FAKE_ASYNC"));
    NCCLOK(ncclCommGetAsyncError(cs[0], &err));
    CHECK(err != ncclSuccess);
    NCCLOK(ncclCommDestroy(cs[1]));
}

static int st_child(const char *idfile)
{
    ncclUniqueId id, ids[2];
    ncclComm_t c;
    cudaStream_t s;
    FILE *f = fopen(idfile, "rb");
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    ncclResult_t st = ncclInProgress;

    CHECK(f && fread(&id, sizeof(id), 1, f) == 1);
    CHECK(fread(ids, sizeof(ids[0]), 2, f) == 2);
    fclose(f);
    p3dfake_set_kernel_observer(st_listener);   /* CUPTI may listen */
    CHECK(cudaSetDevice(st_rank % 8) == cudaSuccess);
    CHECK(cudaStreamCreate(&s) == cudaSuccess);
    cfg.blocking = 0;
    CHECK(ncclCommInitRankConfig(&c, st_n, id, st_rank, &cfg) ==
          ncclInProgress);
    NCCLOK(ncclCommGetAsyncError(c, &st));
    CHECK(st == ncclSuccess);
    st_allreduce(c, s);
    st_gathers(c, s);
    st_ring(c, s);
    st_split(c, s);
    st_scalable(ids, s);
    SYNC(s);
    CHECK(st_nccl_kernels >= 13);
    if (st_rank == 0)
        st_local();
    NCCLOK(ncclCommFinalize(c));
    NCCLOK(ncclCommDestroy(c));
    return 0;
}

int main(int argc, char **argv)
{
    char idfile[] = "/tmp/p3dfake-selftest-XXXXXX";
    const char *r = getenv("P3DFAKE_ST_RANK");
    ncclUniqueId id[3];
    int fd, bad = 0;
    pid_t *pids;

    st_n = argc > 1 ? atoi(argv[1]) : 4;
    if (r) {
        st_rank = atoi(r);
        return st_child(getenv("P3DFAKE_ST_ID"));
    }
    if (st_n < 2)
        return 2;
    fd = mkstemp(idfile);
    for (int i = 0; i < 3; i++)
        NCCLOK(ncclGetUniqueId(&id[i]));
    CHECK(fd >= 0 && write(fd, id, sizeof(id)) == sizeof(id));
    close(fd);
    pids = calloc((size_t)st_n, sizeof(*pids));
    for (int i = 0; i < st_n; i++) {
        char buf[16];

        pids[i] = fork();
        if (pids[i] == 0) {
            snprintf(buf, sizeof(buf), "%d", i);
            setenv("P3DFAKE_ST_RANK", buf, 1);
            setenv("RANK", buf, 1);
            snprintf(buf, sizeof(buf), "%d", st_n);
            setenv("WORLD_SIZE", buf, 1);
            setenv("P3DFAKE_ST_ID", idfile, 1);
            execv("/proc/self/exe", argv);
            _exit(127);
        }
    }
    alarm(60);
    for (int i = 0; i < st_n; i++) {
        int status;

        waitpid(pids[i], &status, 0);
        bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    unlink(idfile);
    free(pids);
    printf("p3dfake-selftest: %d ranks %s\n", st_n, bad ? "FAILED" : "ok");
    return bad;
}
