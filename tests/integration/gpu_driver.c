/*
 * gpu_driver.c - the program the GPU-timeline integration tests run under
 * the shim, over the fake NCCL/cudart/CUPTI/driver (tests/fakes/).
 *
 *   gpu_driver nccl N   N ranks (fork+exec): ungrouped all-reduces whose
 *                       kernel lengths rank 1 controls by arriving late,
 *                       a group of two all-reduces (one kernel), and 100
 *                       back-to-back 20 us compute kernels on a stream.
 *                       With $P3D_GPU_DRIVER_RETURNS = DIR, each rank
 *                       writes DIR/returns-RANK: the CLOCK_MONOTONIC ns
 *                       at which each all-reduce and the ncclGroupEnd
 *                       returned to it, one per line.
 *                       With $P3D_GPU_DRIVER_GROUP_INIT=1, the
 *                       communicator is made inside a group.
 *                       With $P3D_GPU_DRIVER_MIXED=1, each rank then
 *                       issues one of each other collective, an
 *                       AlltoAll and a grouped send/recv with its peer.
 *                       With $P3D_GPU_DRIVER_LINGER_MS = MS, each rank
 *                       waits MS ms after the first all-reduces.
 *                       With $P3D_GPU_DRIVER_STEPS = N, each rank then
 *                       runs N training-like steps of 20 ms: 4 compute
 *                       kernels of 2 ms and an all-reduce, then sleeps
 *                       the rest (for the kernel-window tests).
 *   gpu_driver mem      one process: a known allocation pattern through
 *                       every allocation path, including functions got
 *                       from cudaGetDriverEntryPoint(ByVersion) and
 *                       cuGetProcAddress; prints the expected peaks as
 *                       "expect <kind> <bytes>".
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
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

#define MIB (1ull << 20)
#define CHECK(c)                                                              \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "gpu_driver: %s:%d: %s\n", __FILE__, __LINE__,    \
                    #c);                                                      \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* A "kernel" for the fake cudart: args[0] -> duration in ns. */
void p3d_test_compute_kernel(void);
void p3d_test_compute_kernel(void)
{
}

static void compute(cudaStream_t s, int n, uint64_t ns)
{
    void *args[1] = {&ns};
    dim3 one = {1, 1, 1};
    int i;

    for (i = 0; i < n; i++)
        CHECK(cudaLaunchKernel((const void *)p3d_test_compute_kernel, one,
                               one, args, 0, s) == cudaSuccess);
}

static uint64_t ret_ns[8];   /* when the NCCL calls returned */
static int ret_n;

static void returned(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (ret_n < 8)
        ret_ns[ret_n++] = (uint64_t)ts.tv_sec * 1000000000ull +
                          (uint64_t)ts.tv_nsec;
}

static void write_returns(int rank)
{
    const char *dir = getenv("P3D_GPU_DRIVER_RETURNS");
    char path[512];
    FILE *f;

    if (dir == NULL)
        return;
    snprintf(path, sizeof(path), "%s/returns-%d", dir, rank);
    f = fopen(path, "w");
    CHECK(f != NULL);
    for (int i = 0; i < ret_n; i++)
        fprintf(f, "%llu\n", (unsigned long long)ret_ns[i]);
    CHECK(fclose(f) == 0);
}

static void steps(ncclComm_t comm, cudaStream_t s, cudaStream_t cs,
                  float *buf, size_t count)
{
    const char *e = getenv("P3D_GPU_DRIVER_STEPS");
    int n = e ? atoi(e) : 0;

    for (int k = 0; k < n; k++) {
        compute(cs, 4, 2000000);
        CHECK(cudaStreamSynchronize(cs) == cudaSuccess);
        CHECK(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, s) ==
              ncclSuccess);
        CHECK(cudaStreamSynchronize(s) == cudaSuccess);
        sleep_ms(10);
    }
}

/* $P3D_GPU_DRIVER_LINGER_MS: wait that long after the first all-reduces,
 * before anything else runs on their stream (the watchdog's view of a
 * last op that never completes: test_gpu_plugin_graph.sh). */
static void linger(void)
{
    const char *e = getenv("P3D_GPU_DRIVER_LINGER_MS");

    if (e && *e)
        sleep_ms(atoi(e));
}

/* Whether environment variable `name` is "1". */
static int env_on(const char *name)
{
    const char *e = getenv(name);

    return e != NULL && strcmp(e, "1") == 0;
}

/* P3D_GPU_DRIVER_MIXED=1: every op kind the plugin path joins. */
static void mixed(ncclComm_t comm, cudaStream_t s, float *buf, int rank,
                  int n)
{
    size_t c = 1024;
    int peer = (rank + 1) % n;

    if (!env_on("P3D_GPU_DRIVER_MIXED"))
        return;
    CHECK(ncclBroadcast(buf, buf, c, ncclFloat, 0, comm, s) == ncclSuccess);
    CHECK(ncclAllGather(buf, buf + 4096, c, ncclFloat, comm, s) ==
          ncclSuccess);
    CHECK(ncclReduceScatter(buf + 4096, buf, c, ncclFloat, ncclSum, comm,
                            s) == ncclSuccess);
    CHECK(ncclReduce(buf, buf, c, ncclFloat, ncclSum, 0, comm, s) ==
          ncclSuccess);
    CHECK(ncclAlltoAll(buf, buf + 4096, c, ncclFloat, comm, s) ==
          ncclSuccess);
    CHECK(ncclGroupStart() == ncclSuccess);
    CHECK(ncclSend(buf, c, ncclFloat, peer, comm, s) == ncclSuccess);
    CHECK(ncclRecv(buf + 4096, c, ncclFloat, (rank + n - 1) % n, comm, s) ==
          ncclSuccess);
    CHECK(ncclGroupEnd() == ncclSuccess);
    CHECK(ncclAllReduce(buf, buf, 0, ncclFloat, ncclSum, comm, s) ==
          ncclSuccess);    /* empty: NCCL makes no task of it */
    CHECK(ncclAllReduce(buf, buf, c, ncclFloat, ncclSum, comm, s) ==
          ncclSuccess);
    CHECK(cudaStreamSynchronize(s) == cudaSuccess);
}

static int rank_main(int rank, int n, const char *idfile)
{
    ncclUniqueId id;
    ncclComm_t comm;
    cudaStream_t s, cs;
    float *buf;
    size_t count = 1 << 16;
    FILE *f = fopen(idfile, "rb");
    const char *spread;
    int k;

    CHECK(f && fread(&id, sizeof(id), 1, f) == 1);
    fclose(f);
    /* P3D_GPU_DRIVER_SPREAD=1: rank r on device r, else all on device 0 */
    spread = getenv("P3D_GPU_DRIVER_SPREAD");
    CHECK(cudaSetDevice(spread && *spread == '1' ? rank : 0) == cudaSuccess);
    CHECK(cudaStreamCreate(&s) == cudaSuccess);
    CHECK(cudaStreamCreate(&cs) == cudaSuccess);
    CHECK(cudaMalloc((void **)&buf, count * sizeof(float)) == cudaSuccess);
    /* P3D_GPU_DRIVER_GROUP_INIT=1: the init inside a group, as nccl-tests
     * does (NCCL then runs it at the ncclGroupEnd) */
    if (env_on("P3D_GPU_DRIVER_GROUP_INIT"))
        CHECK(ncclGroupStart() == ncclSuccess);
    CHECK(ncclCommInitRank(&comm, n, id, rank) == ncclSuccess);
    if (env_on("P3D_GPU_DRIVER_GROUP_INIT"))
        CHECK(ncclGroupEnd() == ncclSuccess);
    for (k = 0; k < 5; k++) {
        if (rank == 1)
            sleep_ms(3 * (k + 1));     /* rank 0's kernel waits for us */
        CHECK(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, s) ==
              ncclSuccess);
        returned();
    }
    linger();
    compute(cs, 100, 20000);
    if (rank == 1)
        sleep_ms(5);
    CHECK(ncclGroupStart() == ncclSuccess);
    CHECK(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, s) ==
          ncclSuccess);
    CHECK(ncclAllReduce(buf, buf, count / 2, ncclFloat, ncclSum, comm, s) ==
          ncclSuccess);
    CHECK(ncclGroupEnd() == ncclSuccess);
    returned();
    CHECK(cudaStreamSynchronize(s) == cudaSuccess);
    mixed(comm, s, buf, rank, n);
    steps(comm, s, cs, buf, count);
    CHECK(ncclCommDestroy(comm) == ncclSuccess);
    CHECK(cudaFree(buf) == cudaSuccess);
    write_returns(rank);
    return 0;
}

static int nccl_main(char **argv, int n)
{
    char idfile[] = "/tmp/p3d-gpu-driver-XXXXXX";
    int fd = mkstemp(idfile), bad = 0, i;
    ncclUniqueId id;
    pid_t pids[16];

    CHECK(fd >= 0 && n >= 2 && n <= 16);
    CHECK(ncclGetUniqueId(&id) == ncclSuccess);
    CHECK(write(fd, &id, sizeof(id)) == sizeof(id));
    close(fd);
    for (i = 0; i < n; i++) {
        char buf[16];

        pids[i] = fork();
        if (pids[i] == 0) {
            snprintf(buf, sizeof(buf), "%d", i);
            setenv("RANK", buf, 1);
            setenv("P3D_GPU_DRIVER_RANK", buf, 1);
            snprintf(buf, sizeof(buf), "%d", n);
            setenv("WORLD_SIZE", buf, 1);
            setenv("P3D_GPU_DRIVER_ID", idfile, 1);
            execv("/proc/self/exe", argv);
            _exit(127);
        }
    }
    for (i = 0; i < n; i++) {
        int st;

        waitpid(pids[i], &st, 0);
        bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    unlink(idfile);
    return bad;
}

typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t,
                              const CUmemAllocationProp *,
                              unsigned long long);
typedef CUresult (*map_fn)(CUdeviceptr, size_t, size_t,
                           CUmemGenericAllocationHandle, unsigned long long);
typedef CUresult (*unmap_fn)(CUdeviceptr, size_t);
typedef CUresult (*release_fn)(CUmemGenericAllocationHandle);
typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);

static void *entry(const char *name, int by_version)
{
    void *p = NULL;

    if (by_version)
        CHECK(cudaGetDriverEntryPointByVersion(name, &p, 12000, 0, NULL) ==
              cudaSuccess);
    else {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        CHECK(cudaGetDriverEntryPoint(name, &p, 0, NULL) == cudaSuccess);
#pragma GCC diagnostic pop
    }
    CHECK(p);
    return p;
}

/* Expandable-segments style: 4 x 64 MiB mapped into one reservation. */
static CUdeviceptr vmm_map(CUmemGenericAllocationHandle h[4])
{
    create_fn create = entry("cuMemCreate", 1);
    map_fn map = entry("cuMemMap", 0);
    CUmemAllocationProp prop;
    CUdeviceptr va = 0;
    int i;

    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CHECK(cuMemAddressReserve(&va, 1024 * MIB, 0, 0, 0) == CUDA_SUCCESS);
    for (i = 0; i < 4; i++) {
        CHECK(create(&h[i], 64 * MIB, &prop, 0) == CUDA_SUCCESS);
        CHECK(map(va + i * 64 * MIB, 64 * MIB, 0, h[i], 0) == CUDA_SUCCESS);
    }
    return va;
}

static void vmm_unmap_two(CUdeviceptr va, CUmemGenericAllocationHandle h[4])
{
    unmap_fn unmap = entry("cuMemUnmap", 1);
    release_fn release = entry("cuMemRelease", 1);

    /* One unmap covering two mappings. */
    CHECK(unmap(va + 2 * 64 * MIB, 128 * MIB) == CUDA_SUCCESS);
    CHECK(release(h[2]) == CUDA_SUCCESS);
    CHECK(release(h[3]) == CUDA_SUCCESS);
}

static void gpa_alloc(void)
{
    alloc_fn alloc = NULL;
    free_fn dfree = NULL;
    CUdeviceptr p = 0;

    CHECK(cuGetProcAddress("cuMemAlloc", (void **)&alloc, 12000, 0, NULL) ==
          CUDA_SUCCESS);
    CHECK(cuGetProcAddress("cuMemFree", (void **)&dfree, 12000, 0, NULL) ==
          CUDA_SUCCESS);
    CHECK(alloc(&p, 200 * MIB) == CUDA_SUCCESS);     /* the peak: 408 MiB */
    CHECK(dfree(p) == CUDA_SUCCESS);
}

#define SMALL_N 2000
static void *small[SMALL_N];

/*
 * Until the shim's sampler has called cudaMemGetInfo twice more (so the
 * first sample's record is written), 20 s at most: it samples on its own
 * thread every 100 ms, which a loaded machine may not run in time for a
 * fixed sleep.
 */
static void wait_meminfo(void)
{
    uint64_t n0 = p3dfake_meminfo_calls();

    for (int i = 0; i < 2000 && p3dfake_meminfo_calls() < n0 + 2; i++)
        sleep_ms(10);
}

static int mem_main(void)
{
    void *a, *b, *c, *x, *y, *h1, *h2, *m;
    CUmemGenericAllocationHandle h[4];
    CUdeviceptr d, va;
    cudaStream_t s;
    int i;

    CHECK(cudaSetDevice(0) == cudaSuccess);
    CHECK(cudaStreamCreate(&s) == cudaSuccess);
    for (i = 0; i < SMALL_N; i++)   /* 2000 small peaks: throttled records */
        CHECK(cudaMalloc(&small[i], 64 << 10) == cudaSuccess);
    for (i = 0; i < SMALL_N; i++)
        CHECK(cudaFree(small[i]) == cudaSuccess);
    CHECK(cudaMalloc(&a, 100 * MIB) == cudaSuccess);
    CHECK(cudaMalloc(&b, 50 * MIB) == cudaSuccess);
    CHECK(cudaFree(a) == cudaSuccess);                 /* 50 */
    CHECK(cudaMalloc(&c, 30 * MIB) == cudaSuccess);    /* 80 */
    CHECK(cuMemAlloc(&d, 10 * MIB) == CUDA_SUCCESS);   /* 90 */
    CHECK(cuMemFree(d) == CUDA_SUCCESS);               /* 80 */
    va = vmm_map(h);                                   /* 336 */
    vmm_unmap_two(va, h);                              /* 208 */
    gpa_alloc();                                       /* 408, then 208 */
    CHECK(cudaMallocAsync(&x, 64 * MIB, s) == cudaSuccess);      /* 272 */
    CHECK(cudaMallocFromPoolAsync(&y, 16 * MIB, NULL, s) == cudaSuccess);
    CHECK(cudaFreeAsync(x, s) == cudaSuccess);
    CHECK(cudaFreeAsync(y, s) == cudaSuccess);                   /* 208 */
    CHECK(cudaMallocHost(&h1, 8 * MIB) == cudaSuccess);
    CHECK(cudaHostAlloc(&h2, 4 * MIB, 0) == cudaSuccess);
    CHECK(cudaFreeHost(h1) == cudaSuccess);
    CHECK(cudaFreeHost(h2) == cudaSuccess);
    CHECK(cudaMallocManaged(&m, 2 * MIB, 1) == cudaSuccess);
    printf("expect device %llu\n", 408 * MIB);
    printf("expect device_current %llu\n", 208 * MIB);
    printf("expect host_pinned %llu\n", 12 * MIB);
    printf("expect managed %llu\n", 2 * MIB);
    (void)b;
    (void)c;
    wait_meminfo();
    return 0;
}

int main(int argc, char **argv)
{
    const char *r = getenv("P3D_GPU_DRIVER_RANK");

    if (argc < 2)
        return 2;
    if (!strcmp(argv[1], "mem"))
        return mem_main();
    if (r)
        return rank_main(atoi(r), atoi(argv[2]),
                         getenv("P3D_GPU_DRIVER_ID"));
    if (!strcmp(argv[1], "nccl") && argc > 2)
        return nccl_main(argv, atoi(argv[2]));
    return 2;
}
