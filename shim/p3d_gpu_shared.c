/*
 * p3d_gpu_shared.c - say once when processes of one job time-slice one
 * GPU while CUPTI traces every kernel.  There CUPTI is what costs: Megatron
 * TP=4 PP=1 DP=2 as 8 ranks on one H200 ran +49% slower per iteration
 * under CUPTI, +6% with CUDA events and +0% without GPU timing
 * (bench/gpu_overhead.sh ablate), while one rank per GPU is the case the
 * default is meant for.  The user chooses the trade, so this only tells.
 *
 * No process knows the others' devices, and CUDA_VISIBLE_DEVICES may
 * number them differently in each, so every process leaves a marker named
 * after its host and its GPU's PCI bus id in the job folder, holding its
 * pid: the second process to reach the marker of a live process shares
 * that GPU (a rerun into the same folder finds its writer gone).  Markers
 * are made through the writer's descriptor of the job folder, the one the
 * trace went to (p3d_safedir.c), never by path.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "p3d_env.h"
#include "p3d_gpu.h"
#include "p3d_gpu_cuda.h"
#include "p3d_shim.h"

#define P3D_GPU_MARKER_LEN (2 * P3D_JOB_ID_LEN + 64)

/* The pid written into marker `name` in `dfd`; 0 if none can be read
 * (yet). */
static long marker_owner(int dfd, const char *name)
{
    char buf[24];
    long pid = 0;
    ssize_t n;
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
        pid = pid * 10 + (buf[i] - '0');
    return pid;
}

/*
 * A previous run's marker: its writer has exited (markers are per host,
 * so its pid is ours to ask), or it names no writer and is old.  A live
 * writer keeps it however old, as a long job's first rank does.
 */
static int marker_stale(int dfd, const char *name, const struct stat *st)
{
    long pid = marker_owner(dfd, name);

    if (pid > 0)
        return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
    return time(NULL) - st->st_mtime > P3D_GPU_MARKER_STALE_S;
}

/* 0 if this call made `name` in `dfd` (holding our pid), EEXIST if
 * another live process's was there, else another errno. */
static int marker_make(int dfd, const char *name)
{
    struct stat st;
    char pid[24];
    int fd = openat(dfd, name,
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    0644);

    if (fd >= 0) {
        int n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());

        if (write(fd, pid, (size_t)n) != n) {
            /* an empty marker still marks; it goes stale by age */
        }
        close(fd);
        return 0;
    }
    if (errno != EEXIST)
        return errno;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode) && marker_stale(dfd, name, &st) &&
        unlinkat(dfd, name, 0) == 0)
        return marker_make(dfd, name);
    return EEXIST;
}

int p3d_gpu_shared_claim(int job_dfd, const char *host, const char *bus)
{
    char name[P3D_GPU_MARKER_LEN];

    if (job_dfd < 0 || strchr(host, '/') || strchr(bus, '/'))
        return 0;
    snprintf(name, sizeof(name), ".gpu-%s-%s", host, bus);
    if (marker_make(job_dfd, name) != EEXIST)
        return 0;
    snprintf(name, sizeof(name), ".gpu-%s-%s.warned", host, bus);
    return marker_make(job_dfd, name) == 0;
}

static int gpu_bus_id(char *bus, int len)
{
    const struct p3d_cuda_api *c = p3d_cuda_api();
    int dev;

    return c->GetDevice && c->DeviceGetPCIBusId &&
           c->GetDevice(&dev) == cudaSuccess &&
           c->DeviceGetPCIBusId(bus, len, dev) == cudaSuccess;
}

void p3d_gpu_warn_shared(void)
{
    char host[P3D_HOST_LEN];
    char bus[32] = "";

    if (!gpu_bus_id(bus, sizeof(bus)))
        return;
    p3d_env_hostname(host, sizeof(host));
    if (!p3d_gpu_shared_claim(p3d_writer_dir_fd(), host, bus))
        return;
    p3d_warn_once("gpu_shared", "processes of this job share GPU %s on %s; "
                  "CUPTI kernel tracing slows GPUs that processes "
                  "time-slice (measured +49%% step time, 8 ranks on one "
                  "GPU; CUDA events +6%%): set %s=events (no compute "
                  "timeline) or off if the step time matters",
                  bus, host, P3D_ENV_GPU_TIMING);
}
