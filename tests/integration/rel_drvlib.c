/*
 * rel_drvlib.c - the "framework" of the reliability tests: links the fake
 * libnccl.so.2 and is opened by rel_driver with dlopen(RTLD_LOCAL).  Each
 * scenario injects one fault while NCCL calls are being recorded and
 * prints only what must not depend on the shim: the tests run it with and
 * without the shim and compare output and exit status.
 *
 *   loop N          N 1-rank all-reduces (REL_SLEEP_US between calls)
 *   forkmid T N     T threads in all-reduce loops; meanwhile N forks: a
 *                   child that calls nothing, one that calls NCCL, one
 *                   that execs rel_driver ... loop 5
 *   signals N       SIGTERM, SIGINT, SIGUSR1 handlers of the application;
 *                   a thread sends N of each while all-reduces run
 *   sigterm N       no handler: N all-reduces, then raise(SIGTERM)
 *   exitthread T    T threads in all-reduce loops; another calls exit(7)
 *   abort           2 ranks: rank 0 blocks in an all-reduce rank 1 never
 *                   joins, another thread calls ncclCommAbort
 * Results of the calls are checked; exit status 0 means they were right.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "drvlib.h"

static cudaStream_t rel_stream;
static int rel_stop; /* atomics */
static const char *rel_self; /* rel_driver path, for exec */
static const char *rel_lib;

/* One all-reduce whose result is checked. */
static void rel_ar(ncclComm_t c, float v)
{
    float x = v, y = 0;

    OK(ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, c, rel_stream));
    CHECK(y == v);
}

/* With $REL_GO = PATH: wait (60 s at most) until PATH exists, so a test
 * can act between two calls of the loop however slow the machine. */
static void rel_wait_go(void)
{
    const char *go = getenv("REL_GO");

    for (int i = 0; go && i < 6000 && access(go, F_OK) != 0; i++)
        usleep(10000);
}

static int rel_loop(int n)
{
    ncclComm_t c = drv_solo();
    const char *s = getenv("REL_SLEEP_US");

    for (int i = 0; i < n; i++) {
        rel_ar(c, (float)i);
        if (s != NULL)
            usleep((useconds_t)atoi(s));
        if (i == 0 && getenv("REL_SAY_FIRST")) {
            printf("first call done\n");
            fflush(stdout);
            rel_wait_go();
        }
    }
    OK(ncclCommDestroy(c));
    printf("loop %d ok\n", n);
    return 0;
}

static long rel_calls; /* all-reduces returned, all threads */

static void *rel_spin(void *arg)
{
    ncclComm_t c = drv_solo();
    long n = 0;

    (void)arg;
    while (!__atomic_load_n(&rel_stop, __ATOMIC_SEQ_CST)) {
        rel_ar(c, (float)(n++ & 1023));
        __atomic_add_fetch(&rel_calls, 1, __ATOMIC_SEQ_CST);
        usleep(20); /* keep the traces small */
    }
    OK(ncclCommDestroy(c));
    return (void *)n;
}

static void rel_child(int kind)
{
    if (kind == 0)
        _exit(0);
    if (kind == 1) {
        ncclComm_t c = drv_solo();
        for (int i = 0; i < 3; i++)
            rel_ar(c, 2.0f);
        exit(0);
    }
    execl(rel_self, rel_self, rel_lib, "loop", "5", (char *)NULL);
    _exit(127);
}

static int rel_forkmid(int t, int n)
{
    pthread_t th[16];

    CHECK(t > 0 && t <= 16);
    for (int i = 0; i < t; i++)
        CHECK(pthread_create(&th[i], NULL, rel_spin, NULL) == 0);
    usleep(20000);
    for (int i = 0; i < n; i++) {
        pid_t p;
        fflush(stdout);
        p = fork();
        CHECK(p >= 0);
        if (p == 0) {
            alarm(20); /* a deadlocked child dies, the test sees it */
            rel_child(i % 3);
        }
        CHECK(drv_wait_pid(p) == 0);
    }
    __atomic_store_n(&rel_stop, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < t; i++)
        pthread_join(th[i], NULL);
    printf("forkmid %d children ok\n", n);
    return 0;
}

static int rel_got[3]; /* atomics: read by other threads */

static void rel_on_sig(int sig)
{
    __atomic_fetch_add(&rel_got[sig == SIGTERM ? 0 : sig == SIGINT ? 1 : 2],
                       1, __ATOMIC_SEQ_CST);
}

static void *rel_sender(void *arg)
{
    int n = *(int *)arg;
    static const int sigs[3] = {SIGTERM, SIGINT, SIGUSR1};

    for (int i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            int before = __atomic_load_n(&rel_got[k], __ATOMIC_SEQ_CST);
            kill(getpid(), sigs[k]);
            for (int w = 0; w < 20000 &&
                            __atomic_load_n(&rel_got[k], __ATOMIC_SEQ_CST) ==
                                before;
                 w++)
                usleep(50); /* one at a time: signals do not queue */
        }
    __atomic_store_n(&rel_stop, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static int rel_signals(int n)
{
    struct sigaction sa;
    pthread_t th;
    ncclComm_t c = drv_solo();
    long calls = 0;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = rel_on_sig;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGTERM, &sa, NULL) == 0);
    CHECK(sigaction(SIGINT, &sa, NULL) == 0);
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    CHECK(pthread_create(&th, NULL, rel_sender, &n) == 0);
    while (!__atomic_load_n(&rel_stop, __ATOMIC_SEQ_CST) || calls < 500)
        rel_ar(c, (float)(calls++ & 1023));
    pthread_join(th, NULL);
    OK(ncclCommDestroy(c));
    printf("signals term=%d int=%d usr1=%d\n", rel_got[0], rel_got[1],
           rel_got[2]);
    return 0;
}

static int rel_sigterm(int n)
{
    ncclComm_t c = drv_solo();

    for (int i = 0; i < n; i++)
        rel_ar(c, 1.0f);
    printf("raising SIGTERM\n");
    fflush(stdout);
    raise(SIGTERM);
    printf("survived SIGTERM\n");
    return 0;
}

static void *rel_exiter(void *arg)
{
    (void)arg;
    /* exit while the others record, however slow their start (load) */
    while (__atomic_load_n(&rel_calls, __ATOMIC_SEQ_CST) < 8)
        usleep(1000);
    usleep(20000);
    printf("exit(7) from a thread\n");
    fflush(stdout);
    exit(7);
}

static int rel_exitthread(int t)
{
    pthread_t th[16], ex;

    CHECK(t > 0 && t <= 16);
    for (int i = 0; i < t; i++)
        CHECK(pthread_create(&th[i], NULL, rel_spin, NULL) == 0);
    CHECK(pthread_create(&ex, NULL, rel_exiter, NULL) == 0);
    for (int i = 0; i < t; i++)
        pthread_join(th[i], NULL);
    return 1; /* not reached: rel_spin loops until exit */
}

static ncclComm_t rel_abort_comm;
static ncclResult_t rel_abort_ret = ncclSuccess;
static _Atomic int rel_blocked_tid;

static void *rel_blocked(void *arg)
{
    float x = 1, y = 0;

    (void)arg;
    atomic_store(&rel_blocked_tid, (int)syscall(SYS_gettid));
    rel_abort_ret = ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum,
                                  rel_abort_comm, rel_stream);
    if (rel_abort_ret == ncclSuccess)
        rel_abort_ret = cudaStreamSynchronize(rel_stream) == cudaSuccess
                            ? ncclSuccess : ncclUnhandledCudaError;
    return NULL;
}

/* Thread tid's scheduler state letter from /proc/self/task/TID/stat. */
static char rel_task_state(int tid)
{
    char path[64], buf[256], *p;
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
    if (!(f = fopen(path, "r")))
        return '?';
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : '?';
}

/*
 * Until the all-reduce thread is blocked inside its call (it started the
 * call and has slept, 'S', at 5 samples 10 ms apart), 30 s at most: a
 * fixed sleep here let a slow start abort the comm before the op began.
 */
static void rel_wait_blocked(void)
{
    int tid, asleep = 0;

    for (int i = 0; i < 3000 && asleep < 5; i++) {
        usleep(10000);
        tid = atomic_load(&rel_blocked_tid);
        asleep = tid && rel_task_state(tid) == 'S' ? asleep + 1 : 0;
    }
}

static int rel_abort(void)
{
    int rank = atoi(getenv("RANK") ? getenv("RANK") : "0");
    ncclUniqueId id = drv_share_id("REL_ID_DIR", "abort", rank);
    pthread_t th;

    OK(ncclCommInitRank(&rel_abort_comm, 2, id, rank));
    if (rank == 1) {
        usleep(1500000); /* never joins the all-reduce */
        printf("rank 1 done\n");
        return 0;
    }
    CHECK(pthread_create(&th, NULL, rel_blocked, NULL) == 0);
    rel_wait_blocked();
    OK(ncclCommAbort(rel_abort_comm));
    pthread_join(th, NULL);
    printf("all-reduce during abort returned %s\n",
           rel_abort_ret == ncclSuccess ? "success" : "an error");
    return 0;
}

__attribute__((visibility("default"))) int rel_drv_main(int argc,
                                                        char **argv)
{
    int a1 = argc > 1 ? atoi(argv[1]) : 0, a2 = argc > 2 ? atoi(argv[2]) : 0;

    rel_self = getenv("REL_DRIVER");
    rel_lib = getenv("REL_LIB");
    rel_stop = 0;
    if (rel_stream == NULL)
        CHECK(cudaStreamCreate(&rel_stream) == cudaSuccess);
    if (!strcmp(argv[0], "loop"))
        return rel_loop(a1);
    if (!strcmp(argv[0], "forkmid") && rel_self && rel_lib)
        return rel_forkmid(a1, a2);
    if (!strcmp(argv[0], "signals"))
        return rel_signals(a1);
    if (!strcmp(argv[0], "sigterm"))
        return rel_sigterm(a1);
    if (!strcmp(argv[0], "exitthread"))
        return rel_exitthread(a1);
    if (!strcmp(argv[0], "abort"))
        return rel_abort();
    fprintf(stderr, "rel_drvlib: unknown scenario '%s'\n", argv[0]);
    return 2;
}
