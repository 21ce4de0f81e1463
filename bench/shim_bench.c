/*
 * shim_bench.c - host nanoseconds the shim adds per NCCL call and per
 * allocation call, measured against a do-nothing NCCL and CUDA runtime
 * (bench/null_nccl.c, bench/null_cudart.c).
 *
 * Run under LD_PRELOAD=libp3dtrace.so.  Every scenario alternates rounds
 * through the shim (the interposed symbol) and straight to the null
 * library (its own definition, found with dlsym on its handle), in one
 * process, ABBA order, so both see the same noise.  A round's figure is
 * its mean per call; the report gives the median and p99 over rounds of
 * (shim round - neighbouring plain round), in thread CPU time (time the
 * thread was descheduled does not count) and in wall time.
 *
 *   shim_bench [-r ROUNDS] [-n CALLS] [-s SPIN] [coll|p2p|alloc|mem ...]
 *
 * -s SPIN busy-loops SPIN iterations (~1 ns each) after every unit on
 * both paths, to call at a pace closer to real NCCL (whose own host cost
 * is microseconds) than the back-to-back default.
 *
 * "mem" makes ROUNDS x CALLS all-reduces through the shim and prints, at
 * eight points, the process's resident memory and what the trace file's
 * mappings hold (/proc/self/status, /proc/self/smaps): it must not grow.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop
#include <cuda_runtime_api.h>

typedef ncclResult_t (*ar_fn)(const void *, void *, size_t, ncclDataType_t,
                              ncclRedOp_t, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*send_fn)(const void *, size_t, ncclDataType_t, int,
                                ncclComm_t, cudaStream_t);
typedef ncclResult_t (*recv_fn)(void *, size_t, ncclDataType_t, int,
                                ncclComm_t, cudaStream_t);
typedef ncclResult_t (*grp_fn)(void);
typedef cudaError_t (*malloc_fn)(void **, size_t);
typedef cudaError_t (*free_fn)(void *);

/* One way of calling: through the shim or straight to the library. */
struct path {
    ar_fn allreduce;
    send_fn send;
    recv_fn recv;
    grp_fn gstart, gend;
    malloc_fn malloc;
    free_fn free;
};

static struct path shim, plain;
static ncclComm_t comm;
static float buf[1024];
static int spin;

static void pace(void)
{
    volatile int i;

    for (i = 0; i < spin; i++)
        ;
}

static double now_ns(clockid_t id)
{
    struct timespec t;

    clock_gettime(id, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

/* Run `n` units of `scen` on `p`; returns the calls made per unit. */
static int run_units(const char *scen, const struct path *p, int n)
{
    int i;

    if (strcmp(scen, "coll") == 0) {
        for (i = 0; i < n; i++) {
            p->allreduce(buf, buf, 256, ncclFloat32, ncclSum, comm, NULL);
            pace();
        }
        return 1;
    }
    if (strcmp(scen, "p2p") == 0) {
        for (i = 0; i < n; i++) {
            p->gstart();
            p->send(buf, 256, ncclFloat32, 1, comm, NULL);
            p->recv(buf, 256, ncclFloat32, 1, comm, NULL);
            p->gend();
            pace();
        }
        return 4;
    }
    for (i = 0; i < n; i++) {
        void *d = NULL;

        p->malloc(&d, 1 << 20);
        p->free(d);
        pace();
    }
    return 2;
}

/* Per call: thread CPU, wall, process CPU (helper threads included). */
static void measure(const char *scen, const struct path *p, int n,
                    double *cpu, double *wall, double *proc)
{
    double q0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
    double c0 = now_ns(CLOCK_THREAD_CPUTIME_ID), w0 = now_ns(CLOCK_MONOTONIC);
    int per = run_units(scen, p, n);
    double w1 = now_ns(CLOCK_MONOTONIC), c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    double q1 = now_ns(CLOCK_PROCESS_CPUTIME_ID);

    *cpu = (c1 - c0) / ((double)n * per);
    *wall = (w1 - w0) / ((double)n * per);
    *proc = (q1 - q0) / ((double)n * per);
}

/* Sum of field `key` (kB) over smaps entries whose path has `sub`. */
static long smaps_kb(const char *sub, const char *key, int *nmaps)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[4096], perms[8];
    unsigned long lo, hi;
    int in = 0;
    long kb = 0, v;

    *nmaps = 0;
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3) {
            in = strstr(line, sub) != NULL;
            *nmaps += in;
        } else if (in && strncmp(line, key, strlen(key)) == 0 &&
                   sscanf(line + strlen(key), " %ld", &v) == 1) {
            kb += v;
        }
    }
    fclose(f);
    return kb;
}

static long status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;

    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, key, strlen(key)) == 0)
            sscanf(line + strlen(key), " %ld", &v);
    fclose(f);
    return v;
}

static void memory(int rounds, int n)
{
    long long done = 0;
    int r, maps;
    long rss0 = status_kb("VmRSS:");

    printf("mem   VmRSS %ld KiB before the first traced call\n", rss0);
    for (r = 1; r <= rounds; r++) {
        run_units("coll", &shim, n);
        done += n;
        if (r % (rounds / 8 > 0 ? rounds / 8 : 1) == 0 || r == rounds) {
            long tr = smaps_kb(".p3d", "Rss:", &maps);

            printf("mem   after %9lld calls: VmRSS %6ld KiB (anon %6ld, "
                   "file %6ld); trace file: %d mappings, %ld KiB "
                   "resident\n", done, status_kb("VmRSS:"),
                   status_kb("RssAnon:"), status_kb("RssFile:"), maps, tr);
        }
    }
}

static double mean(const double *v, int n)
{
    double s = 0;
    int i;

    for (i = 0; i < n; i++)
        s += v[i];
    return s / n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return v[(int)(q * (n - 1) + 0.5)];
}

static void scenario(const char *scen, int rounds, int n)
{
    double *d = calloc((size_t)rounds * 9, sizeof(double));
    double *dc = d, *dw = d + rounds, *dq = d + 2 * rounds;
    double *sc = d + 3 * rounds, *sw = d + 4 * rounds, *sq = d + 5 * rounds;
    double *pc = d + 6 * rounds, *pw = d + 7 * rounds, *pq = d + 8 * rounds;
    int r;

    measure(scen, &shim, n, &sc[0], &sw[0], &sq[0]); /* warm both paths */
    measure(scen, &plain, n, &pc[0], &pw[0], &pq[0]);
    for (r = 0; r < rounds; r++) {
        if (r % 2 == 0) {
            measure(scen, &shim, n, &sc[r], &sw[r], &sq[r]);
            measure(scen, &plain, n, &pc[r], &pw[r], &pq[r]);
        } else {
            measure(scen, &plain, n, &pc[r], &pw[r], &pq[r]);
            measure(scen, &shim, n, &sc[r], &sw[r], &sq[r]);
        }
        dc[r] = sc[r] - pc[r];
        dw[r] = sw[r] - pw[r];
        dq[r] = sq[r] - pq[r];
    }
    printf("%-5s added ns/call, median / p99 of %d rounds x %d: "
           "thread CPU %6.1f / %7.1f   wall %6.1f / %7.1f   "
           "process CPU %6.1f / %7.1f\n", scen, rounds, n,
           pct(dc, rounds, 0.5), pct(dc, rounds, 0.99),
           pct(dw, rounds, 0.5), pct(dw, rounds, 0.99),
           pct(dq, rounds, 0.5), pct(dq, rounds, 0.99));
    printf("%-5s means: thread CPU %.1f, process CPU %.1f (helper threads "
           "included); plain call %.1f ns, through the shim %.1f ns\n", scen,
           mean(dc, rounds), mean(dq, rounds), pct(pc, rounds, 0.5),
           pct(sc, rounds, 0.5));
    free(d);
}

static void *sym(void *h, const char *name)
{
    void *p = dlsym(h, name);

    if (p == NULL) {
        fprintf(stderr, "shim_bench: %s not found\n", name);
        exit(2);
    }
    return p;
}

static void load_path(struct path *p, void *nccl, void *cudart)
{
    p->allreduce = (ar_fn)sym(nccl, "ncclAllReduce");
    p->send = (send_fn)sym(nccl, "ncclSend");
    p->recv = (recv_fn)sym(nccl, "ncclRecv");
    p->gstart = (grp_fn)sym(nccl, "ncclGroupStart");
    p->gend = (grp_fn)sym(nccl, "ncclGroupEnd");
    p->malloc = (malloc_fn)sym(cudart, "cudaMalloc");
    p->free = (free_fn)sym(cudart, "cudaFree");
}

int main(int argc, char **argv)
{
    int rounds = 200, n = 2000, i, any = 0;
    void *nccl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
    void *cudart = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
    ncclUniqueId id;

    if (nccl == NULL || cudart == NULL) {
        fprintf(stderr, "shim_bench: null NCCL/cudart not loaded\n");
        return 2;
    }
    load_path(&shim, RTLD_DEFAULT, RTLD_DEFAULT);
    load_path(&plain, nccl, cudart);
    if (shim.allreduce == plain.allreduce)
        printf("note: no shim preloaded; both paths are the plain library\n");
    ncclGetUniqueId(&id);
    if (ncclCommInitRank(&comm, 2, id, 0) != ncclSuccess)
        return 2;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-r") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc)
            spin = atoi(argv[++i]);
        else if (strcmp(argv[i], "mem") == 0) {
            memory(rounds, n);
            any = 1;
        } else {
            scenario(argv[i], rounds < 2 ? 2 : rounds, n < 1 ? 1 : n);
            any = 1;
        }
    }
    if (!any) {
        scenario("coll", rounds, n);
        scenario("p2p", rounds, n);
        scenario("alloc", rounds, n);
    }
    return 0;
}
