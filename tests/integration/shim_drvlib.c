/*
 * shim_drvlib.c - the "torch" of the shim's integration tests: a library
 * that links libnccl.so.2 (the CPU fake) and is opened by shim_driver
 * with dlopen(RTLD_LOCAL), so NCCL sits in a local scope where
 * dlsym(RTLD_NEXT) from the preloaded shim finds nothing.
 *
 * Scenarios (shim_drv_main(argc, argv), argv[0] = scenario):
 *   all            every wrapped NCCL call, 2 ranks (RANK, WORLD_SIZE)
 *   loop N         N 1-rank all-reduces, "returned i" on stdout after each
 *   threads T N    T threads, each its own 1-rank comm, N all-reduces
 *   fork           calls NCCL, then forks: a child that calls nothing, a
 *                  child that calls NCCL, a child that execs argv[1..]
 *   bench N        time N 1-rank in-place all-reduces
 *   noop           no NCCL call at all
 * Results of the calls are checked here; exit status 0 means they were
 * right (so a shim that changed a result fails the test).
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "drvlib.h"

static int drv_rank, drv_world;
static cudaStream_t drv_stream; /* a real (fake-cudart) stream */

static int drv_env_int(const char *name, int dflt)
{
    const char *v = getenv(name);

    return v != NULL && *v != '\0' ? atoi(v) : dflt;
}

/* Rank 0 makes and publishes the id `name` in $SHIM_ID_DIR. */
static ncclUniqueId drv_id(const char *name)
{
    return drv_share_id("SHIM_ID_DIR", name, drv_rank);
}

static int drv_wait_ready(ncclComm_t c)
{
    ncclResult_t st = ncclInProgress;
    int polls = 0;

    while (st == ncclInProgress) {
        OK(ncclCommGetAsyncError(c, &st));
        polls++;
    }
    OK(st);
    return polls;
}

static void drv_collectives(ncclComm_t w)
{
    float s[8], r[8];
    int i, n = drv_world, me = drv_rank;

    for (i = 0; i < 8; i++)
        s[i] = (float)(me + 1);
    OK(ncclAllReduce(s, r, 4, ncclFloat32, ncclSum, w, drv_stream));
    CHECK(r[0] == (float)(n * (n + 1) / 2));
    OK(ncclReduceScatter(s, r, 2, ncclFloat32, ncclSum, w, drv_stream));
    CHECK(r[1] == (float)(n * (n + 1) / 2));
    OK(ncclAllGather(s, r, 2, ncclFloat32, w, drv_stream));
    CHECK(r[2 * (n - 1)] == (float)n);
    OK(ncclBroadcast(s, r, 3, ncclFloat32, 1, w, drv_stream));
    CHECK(r[0] == 2.0f);
    OK(ncclBcast(s, 5, ncclFloat32, 0, w, drv_stream));
    CHECK(s[0] == 1.0f);
    for (i = 0; i < 8; i++)
        s[i] = (float)(me + 1);
    OK(ncclReduce(s, r, 2, ncclFloat32, ncclMax, 0, w, drv_stream));
    CHECK(me != 0 || r[0] == (float)n);
    OK(ncclAlltoAll(s, r, 2, ncclFloat32, w, drv_stream));
    OK(ncclGather(s, r, 2, ncclFloat32, 1, w, drv_stream));
    OK(ncclScatter(s, r, 2, ncclFloat32, 0, w, drv_stream));
    /* an error passes through unchanged */
    CHECK(ncclAllReduce(s, r, 4, (ncclDataType_t)99, ncclSum, w,
                        drv_stream) == ncclInvalidArgument);
}

static void drv_p2p(ncclComm_t w)
{
    float s[4] = {1, 2, 3, 4}, r[4], r2[4];
    int peer = (drv_rank + 1) % drv_world;

    OK(ncclGroupStart());
    OK(ncclGroupStart());
    OK(ncclSend(s, 4, ncclFloat32, peer, w, drv_stream));
    OK(ncclRecv(r, 4, ncclFloat32, peer, w, drv_stream));
    OK(ncclGroupEnd());
    OK(ncclSend(s, 2, ncclFloat32, peer, w, drv_stream));
    OK(ncclRecv(r2, 2, ncclFloat32, peer, w, drv_stream));
    OK(ncclGroupEnd());
    CHECK(r[3] == 4.0f && r2[1] == 2.0f);
}

static void drv_splits(ncclComm_t w)
{
    ncclComm_t a = NULL, b = NULL, shr = NULL;
    float x = 1, y = 0;
    int n = 0;

    OK(ncclCommSplit(w, drv_rank % 2, 0, &a, NULL));
    OK(ncclCommCount(a, &n));
    CHECK(n == 1);
    OK(ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, a, drv_stream));
    OK(ncclCommSplit(w, drv_rank == 0 ? 5 : NCCL_SPLIT_NOCOLOR, 0, &b, NULL));
    CHECK((drv_rank == 0) == (b != NULL));
    OK(ncclCommShrink(w, NULL, 0, &shr, NULL, NCCL_SHRINK_DEFAULT));
    OK(ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, shr, drv_stream));
    OK(ncclCommAbort(shr));
    OK(ncclCommDestroy(a));
    if (b != NULL)
        OK(ncclCommDestroy(b));
}

static void drv_other_inits(ncclComm_t w)
{
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    ncclUniqueId id = drv_id("cfg"), sid = drv_id("scal");
    ncclComm_t c, s, all[1];
    ncclResult_t st;
    float x = 1, y = 0;
    int polls;

    cfg.blocking = 0;
    cfg.commName = "p3d-test";
    CHECK(ncclCommInitRankConfig(&c, drv_world, id, drv_rank, &cfg) ==
          ncclInProgress);
    polls = drv_wait_ready(c);
    OK(ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, c, drv_stream));
    /* barrier on the world: the peer is done with c before the revoke */
    OK(ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, w, drv_stream));
    OK(ncclCommRevoke(c, NCCL_REVOKE_DEFAULT));
    /* an op on the revoked comm fails; the watchdog-style poll sees it */
    CHECK(ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, c, drv_stream) !=
          ncclSuccess);
    OK(ncclCommGetAsyncError(c, &st));
    CHECK(st != ncclSuccess && st != ncclInProgress);
    OK(ncclCommDestroy(c));
    OK(ncclCommInitRankScalable(&s, drv_world, drv_rank, 1, &sid, NULL));
    OK(ncclCommFinalize(s));
    OK(ncclCommDestroy(s));
    OK(ncclCommInitAll(all, 1, NULL));
    OK(ncclCommDestroy(all[0]));
    printf("cfg_polls %d\n", polls + 1);
    printf("revoked_err %d\n", (int)st);
}

static int drv_all(void)
{
    ncclUniqueId id = drv_id("world");
    ncclComm_t w;
    ncclResult_t st;
    int i;

    OK(ncclCommInitRank(&w, drv_world, id, drv_rank));
    for (i = 0; i < 3; i++) {
        OK(ncclCommGetAsyncError(w, &st));
        OK(st);
    }
    drv_collectives(w);
    drv_p2p(w);
    drv_splits(w);
    drv_other_inits(w);
    OK(ncclCommFinalize(w));
    OK(ncclCommDestroy(w));
    return 0;
}

/* KiB of this process's address space mapped from *.p3d files. */
static long drv_p3d_mapped_kib(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    unsigned long a, b;
    long kib = 0;

    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strstr(line, ".p3d") != NULL &&
            sscanf(line, "%lx-%lx", &a, &b) == 2)
            kib += (long)((b - a) >> 10);
    }
    fclose(f);
    return kib;
}

/*
 * The shim's trace mappings once its map-ahead thread has unmapped the
 * finished windows: with SHIM_LOOP_MAPPED_MAX_KIB set, wait up to 20 s for
 * them to fall to it (the thread may not have run yet on a loaded
 * machine); what is still mapped then is the answer.
 */
static long drv_mapped_settled(void)
{
    const char *e = getenv("SHIM_LOOP_MAPPED_MAX_KIB");
    long want = e ? atol(e) : -1, kib = drv_p3d_mapped_kib();

    for (int i = 0; want >= 0 && kib > want && i < 2000; i++) {
        usleep(10000);
        kib = drv_p3d_mapped_kib();
    }
    return kib;
}

static int drv_loop(int n)
{
    ncclComm_t c = drv_solo();
    float x = 1, y = 0;
    int i, quiet = getenv("SHIM_LOOP_QUIET") != NULL;

    for (i = 0; i < n; i++) {
        OK(ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, c, drv_stream));
        if (!quiet) {
            printf("returned %d\n", i);
            fflush(stdout);
        }
        if (getenv("SHIM_LOOP_SLEEP_US"))
            usleep((useconds_t)atoi(getenv("SHIM_LOOP_SLEEP_US")));
    }
    printf("p3d_mapped_kib %ld\n", drv_mapped_settled());
    return 0;
}

/* Mean wall time of n 1-rank in-place all-reduces, for overhead checks. */
static int drv_bench(int n)
{
    ncclComm_t c = drv_solo();
    struct timespec a, b;
    float x = 1;
    int i;

    clock_gettime(CLOCK_MONOTONIC, &a);
    for (i = 0; i < n; i++)
        OK(ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, c, drv_stream));
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("bench %.1f ns/call\n",
           ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
    return 0;
}

static int drv_thread_n;

static void *drv_thread(void *arg)
{
    ncclComm_t c = drv_solo();
    float x = 1, y = 0;
    int i;

    (void)arg;
    for (i = 0; i < drv_thread_n; i++)
        OK(ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, c, drv_stream));
    OK(ncclCommDestroy(c));
    return NULL;
}

static int drv_threads(int t, int n)
{
    pthread_t th[64];
    int i;

    drv_thread_n = n;
    CHECK(t > 0 && t <= 64);
    for (i = 0; i < t; i++)
        CHECK(pthread_create(&th[i], NULL, drv_thread, NULL) == 0);
    for (i = 0; i < t; i++)
        pthread_join(th[i], NULL);
    return 0;
}

static int drv_fork(char **exec_argv)
{
    ncclComm_t c = drv_solo();
    float x = 1, y = 0;
    pid_t p;

    OK(ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, c, drv_stream));
    p = fork();
    if (p == 0)
        _exit(0); /* calls nothing: must leave no file */
    CHECK(drv_wait_pid(p) == 0);
    p = fork();
    if (p == 0) {
        ncclComm_t cc = drv_solo();
        OK(ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, cc, drv_stream));
        OK(ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, cc, drv_stream));
        exit(0);
    }
    CHECK(drv_wait_pid(p) == 0);
    if (exec_argv[0] != NULL) {
        p = fork();
        if (p == 0) {
            execv(exec_argv[0], exec_argv);
            _exit(127);
        }
        CHECK(drv_wait_pid(p) == 0);
    }
    OK(ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, c, drv_stream));
    return 0;
}

__attribute__((visibility("default"))) int shim_drv_main(int argc,
                                                         char **argv)
{
    drv_rank = drv_env_int("RANK", 0);
    drv_world = drv_env_int("WORLD_SIZE", 1);
    if (drv_stream == NULL && strcmp(argv[0], "noop") != 0)
        CHECK(cudaStreamCreate(&drv_stream) == cudaSuccess);
    if (strcmp(argv[0], "all") == 0)
        printf("stream %lu\n", (unsigned long)(uintptr_t)drv_stream);
    if (argc < 1)
        return 2;
    if (strcmp(argv[0], "all") == 0)
        return drv_all();
    if (strcmp(argv[0], "loop") == 0 && argc > 1)
        return drv_loop(atoi(argv[1]));
    if (strcmp(argv[0], "threads") == 0 && argc > 2)
        return drv_threads(atoi(argv[1]), atoi(argv[2]));
    if (strcmp(argv[0], "fork") == 0)
        return drv_fork(argv + 1);
    if (strcmp(argv[0], "bench") == 0 && argc > 1)
        return drv_bench(atoi(argv[1]));
    if (strcmp(argv[0], "noop") == 0)
        return 0;
    fprintf(stderr, "shim_drvlib: unknown scenario '%s'\n", argv[0]);
    return 2;
}
