/*
 * p3d_writer.c - the crash-safe trace file: a MAP_SHARED mapping of the
 * file, grown in windows, cut into chunks that threads own one at a time.
 *
 * Hot path (p3d_rec_reserve/commit): bump a pointer in the thread's own
 * chunk, fill the record, store its 4-byte header last with release order.
 * No lock, no allocation, no syscall.  A new chunk is claimed with one
 * atomic fetch_add; only mapping a new window takes the mutex.
 *
 * Space is reserved with posix_fallocate before a window is mapped, so a
 * full disk is a failed call ("stop recording"), never a SIGBUS.  Windows
 * whose chunks are all finished are unmapped, so the memory held does not
 * grow with run length.  The kernel owns the dirty pages: after kill -9
 * every committed record is in the file.
 *
 * Fresh pages are the real cost of a record (a page fault, zeroing, and
 * on some VMs a host fault: 10-60 us per 4 KiB page, i.e. several hundred
 * ns per 96-byte record; bench/mmap_probe.c).  So a helper thread
 * ("p3d-writer") maps the next window before it is needed and touches its
 * pages, off the application's threads.  Claimers fall back to mapping a
 * window themselves when the helper is late or could not be started.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h> /* its ncclGroupStart() has no (void) */
#pragma GCC diagnostic pop
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "p3d_mem.h"
#include "p3d_safedir.h"
#include "p3d_shim.h"

#define P3D_WIN_BYTES (2u << 20) /* mapped at a time: current + 1 ahead */
#define P3D_CPW (P3D_WIN_BYTES / P3D_CHUNK_BYTES) /* chunks per window */
#define P3D_MAX_WIN 32768                         /* 64 GiB of trace */
#define P3D_CHUNK_ROOM (P3D_CHUNK_BYTES - sizeof(struct p3d_chunk_hdr))
#define P3D_MAX_PENDING 4
#define P3D_PAGE 4096u
#define P3D_AHEAD_WAIT_NS 100000000 /* helper re-checks every 100 ms */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

enum { P3D_W_UNOPENED, P3D_W_OPEN, P3D_W_FAILED, P3D_W_CLOSED };

/*
 * Record counts, one slot per writing thread: a locked increment of a
 * shared counter per record costs 10-20 ns and bounces a cache line
 * between threads.  A thread owns its slot from its first chunk of a file
 * (generation) until it exits; the close sums the slots.
 */
#define P3D_CNT_SLOTS 256
struct p3d_wcnt {
    uint64_t records;
    uint64_t ops;
    uint32_t used;        /* owner's generation, 0 free */
    char pad[64 - 20];
};

/* Per-thread writing state; zero means "no chunk". */
struct p3d_wthr {
    struct p3d_wcnt *cnt; /* this thread's count slot (NULL: shared) */
    uint32_t cnt_gen;     /* generation the slot was taken in */
    char *pos;            /* next free byte in the chunk */
    char *end;            /* end of the chunk */
    uint64_t chunk;       /* index of the owned chunk */
    uint32_t gen;         /* writer generation the chunk belongs to */
    int has_chunk;
    int in_open;
    int key_set;
    int npend;
    int pins;             /* p3d_rec_pin depth */
    int last_words;       /* may take the spare chunk (p3d_writer_last_words) */
    int deferred;         /* a chunk left while pinned awaits finishing */
    uint64_t deferred_chunk;
    uint32_t deferred_gen;
    struct {
        void *rec;
        uint16_t tag;
    } pend[P3D_MAX_PENDING];
};

static pthread_mutex_t p3d_w_lock = PTHREAD_MUTEX_INITIALIZER;
/* Map-ahead helper: wake-up, and "left the pages it was touching". */
static pthread_cond_t p3d_w_wake = PTHREAD_COND_INITIALIZER;
static pthread_cond_t p3d_w_idle = PTHREAD_COND_INITIALIZER;
enum { P3D_AHEAD_NONE, P3D_AHEAD_RUN, P3D_AHEAD_STOP };
static int p3d_w_ahead;          /* P3D_AHEAD_*, under the lock */
static char *p3d_w_ahead_base;   /* window being touched, outside the lock */
static int p3d_w_ahead_unmap;    /* it was finished meanwhile: unmap after */
static int p3d_w_ahead_failed;   /* growing failed: leave it to claimers */
/* Finished windows the helper unmaps (an munmap of a dirty 4 MiB window
 * takes 0.3-7 ms here: not on the application's thread). */
#define P3D_UNMAP_Q 16
static char *p3d_w_unmap_q[P3D_UNMAP_Q];
static int p3d_w_unmap_n;
static pthread_once_t p3d_w_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t p3d_w_key;
static int p3d_w_state;
static uint32_t p3d_w_gen = 1;
static int p3d_w_fd = -1;
static int p3d_w_dfd = -1;      /* the job folder the file is in */
static char p3d_w_name[48];     /* the file's name in it */
static int p3d_w_forked;
static struct p3d_file_hdr *p3d_w_hdr;
static uint64_t p3d_w_next;     /* next chunk index to claim */
static uint64_t p3d_w_touching; /* chunk + 1 the helper touches, 0 none */
static uint64_t p3d_w_mapped;   /* chunks covered by mapped windows */
static uint64_t p3d_w_max;      /* chunk cap */
/*
 * The last chunk under the cap is spare: only a thread that said it has
 * last words (the watchdog: its hang reports and the SIGTERM note) takes
 * it, once the others filled the rest.  Those records say how a rank
 * ended, and they come last, when a long job has long filled its file;
 * without them a hang after the cap leaves no trace at all.
 */
static uint64_t p3d_w_open_max; /* chunks the other threads may claim */
static int p3d_w_spare_taken;
static int p3d_w_full;          /* the cap was reached: drop quickly */
static char *p3d_w_win[P3D_MAX_WIN];
static uint16_t p3d_w_done[P3D_MAX_WIN];
static uint64_t p3d_w_records; /* counts of threads without a slot, */
static uint64_t p3d_w_ops;     /* and of exited threads */
static struct p3d_wcnt p3d_w_cnt[P3D_CNT_SLOTS];
static uint64_t p3d_w_dropped;
static char p3d_w_path[P3D_PATH_MAX + P3D_JOB_ID_LEN + 96];
static char p3d_w_strbuf[P3D_CHUNK_ROOM - sizeof(struct p3d_rec_str)];

static P3D_TLS struct p3d_wthr p3d_w_thr;

static void p3d_writer_finish(uint64_t chunk);
static void p3d_writer_ahead_start(void);

static int p3d_writer_state(void)
{
    return __atomic_load_n(&p3d_w_state, __ATOMIC_ACQUIRE);
}

int p3d_writer_is_open(void)
{
    return p3d_writer_state() == P3D_W_OPEN;
}

uint64_t p3d_writer_dropped(void)
{
    return __atomic_load_n(&p3d_w_dropped, __ATOMIC_RELAXED);
}

void p3d_writer_path(char *buf, size_t n)
{
    pthread_mutex_lock(&p3d_w_lock);
    snprintf(buf, n, "%s", p3d_w_path);
    pthread_mutex_unlock(&p3d_w_lock);
}

static void p3d_writer_flag(uint16_t flag)
{
    if (p3d_w_hdr != NULL)
        __atomic_fetch_or(&p3d_w_hdr->flags, flag, __ATOMIC_RELAXED);
}

static void p3d_writer_drop(void)
{
    __atomic_add_fetch(&p3d_w_dropped, 1, __ATOMIC_RELAXED);
    if (p3d_writer_state() == P3D_W_OPEN && p3d_w_hdr != NULL) {
        __atomic_add_fetch(&p3d_w_hdr->dropped_records, 1, __ATOMIC_RELAXED);
        p3d_writer_flag(P3D_F_DROPPED);
    }
}

void p3d_writer_set_nccl_version(uint32_t v)
{
    if (p3d_writer_state() == P3D_W_OPEN && p3d_w_hdr != NULL)
        __atomic_store_n(&p3d_w_hdr->nccl_version_runtime, v,
                         __ATOMIC_RELAXED);
}

/* Take a count slot for this thread in generation `gen` (or none). */
static void p3d_writer_cnt_take(struct p3d_wthr *t, uint32_t gen)
{
    int i;

    t->cnt = NULL;
    t->cnt_gen = gen;
    for (i = 0; i < P3D_CNT_SLOTS; i++) {
        uint32_t free_gen = 0;

        if (__atomic_load_n(&p3d_w_cnt[i].used, __ATOMIC_RELAXED) == 0 &&
            __atomic_compare_exchange_n(&p3d_w_cnt[i].used, &free_gen, gen,
                                        0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            t->cnt = &p3d_w_cnt[i];
            return;
        }
    }
}

/* Fold this thread's counts into the shared ones and free its slot. */
static void p3d_writer_cnt_give(struct p3d_wthr *t)
{
    struct p3d_wcnt *c = t->cnt;

    t->cnt = NULL;
    if (c == NULL || __atomic_load_n(&c->used, __ATOMIC_RELAXED) !=
                         t->cnt_gen)
        return;
    __atomic_add_fetch(&p3d_w_records, c->records, __ATOMIC_RELAXED);
    __atomic_add_fetch(&p3d_w_ops, c->ops, __ATOMIC_RELAXED);
    __atomic_store_n(&c->records, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&c->ops, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&c->used, 0, __ATOMIC_RELEASE);
}

/* Records (or ops) committed so far, all threads. */
static uint64_t p3d_writer_count(int ops)
{
    uint64_t n = __atomic_load_n(ops ? &p3d_w_ops : &p3d_w_records,
                                 __ATOMIC_RELAXED);
    int i;

    for (i = 0; i < P3D_CNT_SLOTS; i++)
        n += __atomic_load_n(ops ? &p3d_w_cnt[i].ops : &p3d_w_cnt[i].records,
                             __ATOMIC_RELAXED);
    return n;
}

/* Thread exit: give the owned chunk back so its window can be unmapped. */
static void p3d_writer_thread_exit(void *arg)
{
    struct p3d_wthr *t = &p3d_w_thr;

    (void)arg;
    if (t->cnt != NULL)
        p3d_writer_cnt_give(t);
    t->pins = 0;
    p3d_rec_unpin();
    if (t->has_chunk &&
        t->gen == __atomic_load_n(&p3d_w_gen, __ATOMIC_ACQUIRE))
        p3d_writer_finish(t->chunk);
    t->has_chunk = 0;
}

static void p3d_writer_key_init(void)
{
    pthread_key_create(&p3d_w_key, p3d_writer_thread_exit);
}

/* The folder name to fall back to: <job>.<euid>. */
static void p3d_writer_own_name(const struct p3d_cfg *cfg, char *buf,
                                size_t n)
{
    snprintf(buf, n, "%s.%u", cfg->job_id, (unsigned)geteuid());
}

/*
 * Open the job folder through p3d_safedir: <dir>/<job>, or <dir>/<job>.<uid>
 * when the rule refuses the first.  Leaves the folder's path in
 * p3d_w_path.  Returns its descriptor; -1 (errno) on a plain error; -2
 * when refused (warned: the job runs on untraced).
 */
static int p3d_writer_open_dir(const struct p3d_cfg *cfg)
{
    char own[P3D_JOB_ID_LEN + 16];
    const char *why;
    size_t bad;
    int top, dfd, err;

    snprintf(p3d_w_path, sizeof(p3d_w_path), "%s", cfg->dir);
    top = p3d_safedir_open_path(cfg->dir, &why, &bad);
    if (top < 0 && why != NULL) {
        p3d_warn_once("safedir", "trace folder '%.*s' refused: %s; the job "
                      "runs on untraced", (int)bad, cfg->dir, why);
        return -2;
    }
    if (top < 0)
        return -1;
    p3d_cfg_job_dir(cfg, p3d_w_path, sizeof(p3d_w_path));
    dfd = p3d_safedir_open_own(top, cfg->job_id, &why);
    if (dfd < 0 && why != NULL) {
        p3d_writer_own_name(cfg, own, sizeof(own));
        p3d_warn_once("safedir", "trace folder '%s' refused: %s; writing "
                      "to '%s/%s' instead", p3d_w_path, why, cfg->dir, own);
        snprintf(p3d_w_path, sizeof(p3d_w_path), "%s/%s", cfg->dir, own);
        dfd = p3d_safedir_open_own(top, own, &why);
        if (dfd < 0 && why != NULL) {
            p3d_warn_once("safedir_own", "trace folder '%s' refused: %s; "
                          "the job runs on untraced", p3d_w_path, why);
            dfd = -2;
        }
    }
    err = errno;
    close(top);
    errno = err;
    return dfd;
}

/* Create the rank file in the job folder (p3d_w_dfd); its path goes to
 * p3d_w_path.  Returns the file's descriptor, -1 (errno) or -2 (refused,
 * warned). */
static int p3d_writer_create(const struct p3d_cfg *cfg)
{
    const int flags = O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    size_t len;
    int fd;

    p3d_w_dfd = p3d_writer_open_dir(cfg);
    if (p3d_w_dfd < 0) {
        fd = p3d_w_dfd;
        p3d_w_dfd = -1;
        return fd;
    }
    if (cfg->rank >= 0)
        snprintf(p3d_w_name, sizeof(p3d_w_name), "rank-%05d.p3d",
                 (int)cfg->rank);
    else
        snprintf(p3d_w_name, sizeof(p3d_w_name), "pid-%ld.p3d",
                 (long)getpid());
    fd = openat(p3d_w_dfd, p3d_w_name, flags, 0666);
    if (fd < 0 && errno == EEXIST && cfg->rank >= 0) {
        snprintf(p3d_w_name, sizeof(p3d_w_name), "rank-%05d.%ld.p3d",
                 (int)cfg->rank, (long)getpid());
        fd = openat(p3d_w_dfd, p3d_w_name, flags, 0666);
    }
    len = strlen(p3d_w_path);
    snprintf(p3d_w_path + len, sizeof(p3d_w_path) - len, "/%s", p3d_w_name);
    return fd;
}

/* CLOCK_REALTIME next to CLOCK_MONOTONIC: best of three tries. */
static void p3d_writer_anchor(struct p3d_file_hdr *h)
{
    uint64_t best = UINT64_MAX;
    int i;

    for (i = 0; i < 3; i++) {
        uint64_t m0 = p3d_now(), m1;
        uint64_t rt = p3d_now_real();

        m1 = p3d_now();
        if (m1 - m0 < best) {
            best = m1 - m0;
            h->start_realtime_ns = rt;
            h->start_mono_ns = m0 + (m1 - m0) / 2;
        }
    }
    h->clock_uncertainty_ns = best;
}

static void p3d_writer_fill_hdr(struct p3d_file_hdr *h,
                                const struct p3d_cfg *cfg)
{
    memcpy(h->magic, P3D_MAGIC, P3D_MAGIC_LEN);
    h->major = P3D_FORMAT_MAJOR;
    h->minor = P3D_FORMAT_MINOR;
    h->hdr_len = P3D_FILE_HDR_BYTES;
    h->flags = p3d_w_forked ? P3D_F_FORKED : 0;
    h->chunk_bytes = P3D_CHUNK_BYTES;
    h->data_off = P3D_DATA_OFFSET;
    h->rank = cfg->rank;
    h->world_size = cfg->world_size;
    h->local_rank = cfg->local_rank;
    h->local_world_size = cfg->local_world_size;
    h->pid = (uint64_t)getpid();
    h->ppid = (uint64_t)getppid();
    p3d_writer_anchor(h);
    memcpy(h->job_id, cfg->job_id, strnlen(cfg->job_id, P3D_JOB_ID_LEN - 1));
    p3d_env_hostname(h->hostname, sizeof(h->hostname));
    h->nccl_version_compile = NCCL_VERSION_CODE;
}

/*
 * Chunk cap: P3D_MAX_MB, and RLIMIT_FSIZE (growing past it would raise
 * SIGXFSZ, which kills the process).  0 = record nothing.
 */
static uint64_t p3d_writer_cap(const struct p3d_cfg *cfg)
{
    uint64_t max = (uint64_t)P3D_MAX_WIN * P3D_CPW;
    struct rlimit rl;

    if (cfg->max_bytes != 0 && cfg->max_bytes / P3D_CHUNK_BYTES < max)
        max = cfg->max_bytes / P3D_CHUNK_BYTES;
    if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        uint64_t room = rl.rlim_cur > P3D_DATA_OFFSET
                            ? (rl.rlim_cur - P3D_DATA_OFFSET) / P3D_CHUNK_BYTES
                            : 0;
        if (room < max)
            max = room;
    }
    return max;
}

/* Create and map the file header.  Called with the lock held. */
static int p3d_writer_open_file(void)
{
    const struct p3d_cfg *cfg = p3d_core_cfg();
    void *hdr;
    int err;

    p3d_w_fd = p3d_writer_create(cfg);
    if (p3d_w_fd == -2)
        goto refused;
    if (p3d_w_fd < 0)
        goto fail;
    err = posix_fallocate(p3d_w_fd, 0, P3D_DATA_OFFSET);
    if (err != 0) {
        errno = err;
        goto fail_unlink;
    }
    hdr = mmap(NULL, P3D_DATA_OFFSET, PROT_READ | PROT_WRITE, MAP_SHARED,
               p3d_w_fd, 0);
    if (hdr == MAP_FAILED)
        goto fail_unlink;
    p3d_w_hdr = hdr;
    p3d_writer_fill_hdr(p3d_w_hdr, cfg);
    p3d_w_max = p3d_writer_cap(cfg);
    p3d_w_open_max = p3d_w_max > 1 ? p3d_w_max - 1 : p3d_w_max;
    __atomic_store_n(&p3d_w_state, P3D_W_OPEN, __ATOMIC_RELEASE);
    p3d_writer_ahead_start();
    return 0;
fail_unlink:
    err = errno;
    unlinkat(p3d_w_dfd, p3d_w_name, 0);
    errno = err;
fail:
    err = errno;
    p3d_warn_once("open", "cannot create trace file '%s': %s; the job runs "
                          "on untraced", p3d_w_path, strerror(err));
refused:
    if (p3d_w_fd >= 0)
        close(p3d_w_fd);
    if (p3d_w_dfd >= 0)
        close(p3d_w_dfd);
    p3d_w_fd = p3d_w_dfd = -1;
    __atomic_store_n(&p3d_w_state, P3D_W_FAILED, __ATOMIC_RELEASE);
    return -1;
}

/* Open the file if nobody did yet; 1 if this call opened it. */
static int p3d_writer_open_once(struct p3d_wthr *t)
{
    int opened = 0;

    pthread_once(&p3d_w_key_once, p3d_writer_key_init);
    pthread_mutex_lock(&p3d_w_lock);
    if (p3d_writer_state() == P3D_W_UNOPENED) {
        t->in_open = 1;
        opened = p3d_writer_open_file() == 0;
        t->in_open = 0;
    }
    pthread_mutex_unlock(&p3d_w_lock);
    return opened;
}

static int p3d_writer_env_wanted(const char *kv)
{
    static const char *const exact[] = {
        "RANK=", "WORLD_SIZE=", "LOCAL_RANK=", "LOCAL_WORLD_SIZE=",
        "GROUP_RANK=", "MASTER_ADDR=", "MASTER_PORT=",
        "TORCHELASTIC_RUN_ID=", "CUDA_VISIBLE_DEVICES=",
        "PYTORCH_CUDA_ALLOC_CONF=", "SLURM_", "OMPI_COMM_WORLD_", "NCCL_",
        "TORCH_NCCL_", "P3D_", NULL};
    int i;

    for (i = 0; exact[i] != NULL; i++) {
        if (strncmp(kv, exact[i], strlen(exact[i])) == 0)
            return 1;
    }
    return 0;
}

/* Store `n` bytes of p3d_w_strbuf as a string record. */
static void p3d_writer_put_str(uint16_t tag, size_t n)
{
    struct p3d_rec_str *rec = p3d_rec_reserve(tag, sizeof(*rec) + n);

    if (rec == NULL)
        return;
    rec->n_bytes = (uint32_t)n;
    memcpy(rec->text, p3d_w_strbuf, n);
    p3d_rec_commit(rec);
}

static void p3d_writer_cmdline(void)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    size_t n = 0;
    ssize_t k;
    char extra;

    if (fd < 0)
        return;
    while (n < sizeof(p3d_w_strbuf)) {
        k = read(fd, p3d_w_strbuf + n, sizeof(p3d_w_strbuf) - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        n += (size_t)k;
    }
    if (n == sizeof(p3d_w_strbuf) && read(fd, &extra, 1) == 1)
        p3d_writer_flag(P3D_F_TRUNCATED_STR);
    close(fd);
    p3d_writer_put_str(P3D_REC_CMDLINE, n);
}

static void p3d_writer_environ(void)
{
    extern char **environ;
    char **e;
    size_t n = 0;

    for (e = environ; e != NULL && *e != NULL; e++) {
        size_t len = strlen(*e) + 1;

        if (!p3d_writer_env_wanted(*e))
            continue;
        if (n + len > sizeof(p3d_w_strbuf)) {
            p3d_writer_flag(P3D_F_TRUNCATED_STR);
            continue;
        }
        memcpy(p3d_w_strbuf + n, *e, len);
        n += len;
    }
    p3d_writer_put_str(P3D_REC_ENV, n);
}

/* Map window `w` and the ones before it.  Called with the lock held. */
static int p3d_writer_grow(uint64_t w)
{
    while (p3d_w_mapped / P3D_CPW <= w) {
        uint64_t nw = p3d_w_mapped / P3D_CPW;
        uint64_t left = p3d_w_max - p3d_w_mapped;   /* chunks under cap */
        off_t off = (off_t)P3D_DATA_OFFSET + (off_t)nw * P3D_WIN_BYTES;
        off_t len = left < P3D_CPW ? (off_t)left * P3D_CHUNK_BYTES
                                   : (off_t)P3D_WIN_BYTES;
        int err = posix_fallocate(p3d_w_fd, off, len);
        void *p;

        if (err != 0) {
            errno = err;
            return -1;
        }
        p = mmap(NULL, P3D_WIN_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
                 p3d_w_fd, off);
        if (p == MAP_FAILED)
            return -1;
        __atomic_store_n(&p3d_w_win[nw], (char *)p, __ATOMIC_RELEASE);
        p3d_w_mapped += P3D_CPW;
    }
    return 0;
}

/* Base address of the window holding `chunk`, mapping it if needed. */
static char *p3d_writer_window(uint64_t chunk)
{
    uint64_t w = chunk / P3D_CPW;
    char *base = __atomic_load_n(&p3d_w_win[w], __ATOMIC_ACQUIRE);
    int err;

    if (P3D_LIKELY(base != NULL))
        return base;
    pthread_mutex_lock(&p3d_w_lock);
    if (p3d_writer_state() == P3D_W_OPEN && p3d_writer_grow(w) != 0) {
        err = errno;
        __atomic_store_n(&p3d_w_state, P3D_W_FAILED, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&p3d_w_lock);
        p3d_warn_once("grow", "cannot extend trace file '%s': %s; "
                              "recording stops, the job goes on",
                      p3d_w_path, strerror(err));
        return NULL;
    }
    base = __atomic_load_n(&p3d_w_win[w], __ATOMIC_ACQUIRE);
    pthread_mutex_unlock(&p3d_w_lock);
    return base;
}

/* A thread is done with `chunk`; unmap its window once all are. */
static void p3d_writer_finish(uint64_t chunk)
{
    uint64_t w = chunk / P3D_CPW;
    char *base;

    if (__atomic_add_fetch(&p3d_w_done[w], 1, __ATOMIC_ACQ_REL) != P3D_CPW)
        return;
    pthread_mutex_lock(&p3d_w_lock);
    base = p3d_w_win[w];
    __atomic_store_n(&p3d_w_win[w], NULL, __ATOMIC_RELEASE);
    if (base != NULL && base == p3d_w_ahead_base) {
        p3d_w_ahead_unmap = 1; /* the helper is touching it: its job */
        base = NULL;
    } else if (base != NULL && p3d_w_ahead == P3D_AHEAD_RUN &&
               p3d_w_unmap_n < P3D_UNMAP_Q) {
        p3d_w_unmap_q[p3d_w_unmap_n++] = base;
        base = NULL;
        pthread_cond_signal(&p3d_w_wake);
    }
    pthread_mutex_unlock(&p3d_w_lock);
    if (base != NULL)
        munmap(base, P3D_WIN_BYTES);
}

/* Unmap the queued windows.  Called locked; drops the lock meanwhile
 * unless `keep_lock`. */
static void p3d_writer_unmap_queued(int keep_lock)
{
    while (p3d_w_unmap_n > 0) {
        char *base = p3d_w_unmap_q[--p3d_w_unmap_n];

        if (!keep_lock)
            pthread_mutex_unlock(&p3d_w_lock);
        munmap(base, P3D_WIN_BYTES);
        if (!keep_lock)
            pthread_mutex_lock(&p3d_w_lock);
    }
}

/*
 * Touch the pages of window `w` (mapped at `base`) whose chunks nobody
 * claimed yet.  The touch is an atomic "or 0": it faults the page in
 * writable without changing a byte.  Runs without the lock; stops when
 * the file is closing.
 *
 * A claimer writes its chunk with plain stores, so the touch of a page
 * and the claim of its chunk must not overlap: the helper announces the
 * chunk in p3d_w_touching, then checks p3d_w_next; a claimer bumps
 * p3d_w_next, then waits while its chunk is announced (p3d_writer_claim).
 * Both sides are seq_cst, so at least one of them sees the other (Dekker):
 * either the helper skips the chunk, or the claimer waits for one page.
 */
static void p3d_writer_touch(char *base, uint64_t w)
{
    uint64_t first = w * P3D_CPW, left = p3d_w_max - first, off, len;

    len = left < P3D_CPW ? left * P3D_CHUNK_BYTES : P3D_WIN_BYTES;
    madvise(base, len, MADV_POPULATE_WRITE); /* one call where supported */
    for (off = 0; off < len; off += P3D_PAGE) {
        uint64_t c = first + off / P3D_CHUNK_BYTES;

        if (__atomic_load_n(&p3d_w_ahead, __ATOMIC_RELAXED) != P3D_AHEAD_RUN)
            break;
        __atomic_store_n(&p3d_w_touching, c + 1, __ATOMIC_SEQ_CST);
        if (c < __atomic_load_n(&p3d_w_next, __ATOMIC_SEQ_CST))
            continue; /* claimed: its owner is writing there */
        __atomic_fetch_or((uint64_t *)(base + off), 0, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&p3d_w_touching, 0, __ATOMIC_RELEASE);
}

/* Wait until the helper is not touching a page of `chunk` (one page). */
static void p3d_writer_touch_wait(uint64_t chunk)
{
    while (__atomic_load_n(&p3d_w_touching, __ATOMIC_SEQ_CST) == chunk + 1)
        sched_yield();
}

/* Map and touch window `w` ahead of the claimers.  Called locked. */
static void p3d_writer_ahead_one(uint64_t w)
{
    char *base;

    if (p3d_writer_grow(w) != 0) {
        p3d_w_ahead_failed = 1; /* the claimer that needs it will warn */
        return;
    }
    base = p3d_w_win[w];
    if (base == NULL)
        return;
    p3d_w_ahead_base = base;
    pthread_mutex_unlock(&p3d_w_lock);
    p3d_writer_touch(base, w);
    pthread_mutex_lock(&p3d_w_lock);
    p3d_w_ahead_base = NULL;
    if (p3d_w_ahead_unmap)
        munmap(base, P3D_WIN_BYTES);
    p3d_w_ahead_unmap = 0;
    pthread_cond_broadcast(&p3d_w_idle);
}

/* Window the helper should map next, or UINT64_MAX if none. */
static uint64_t p3d_writer_ahead_want(void)
{
    uint64_t next = __atomic_load_n(&p3d_w_next, __ATOMIC_RELAXED);
    uint64_t w = p3d_w_mapped / P3D_CPW;

    if (p3d_w_ahead_failed || p3d_w_mapped >= p3d_w_max ||
        w >= P3D_MAX_WIN || w > next / P3D_CPW + 1)
        return UINT64_MAX;
    return w;
}

/* The helper thread: keep one window mapped and touched ahead. */
static void *p3d_writer_ahead_main(void *arg)
{
    struct timespec ts;
    uint64_t w;

    (void)arg;
    pthread_mutex_lock(&p3d_w_lock);
    while (p3d_w_ahead == P3D_AHEAD_RUN &&
           p3d_writer_state() == P3D_W_OPEN) {
        if (p3d_w_unmap_n > 0) {
            p3d_writer_unmap_queued(0);
            continue;
        }
        w = p3d_writer_ahead_want();
        if (w != UINT64_MAX) {
            p3d_writer_ahead_one(w);
            continue;
        }
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += P3D_AHEAD_WAIT_NS;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&p3d_w_wake, &p3d_w_lock, &ts);
    }
    __atomic_store_n(&p3d_w_ahead, P3D_AHEAD_NONE, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&p3d_w_idle);
    pthread_mutex_unlock(&p3d_w_lock);
    return NULL;
}

/* Start the helper (called locked, at open).  No helper is no error. */
static void p3d_writer_ahead_start(void)
{
    pthread_attr_t attr;
    sigset_t all, old;
    pthread_t th;

    if (p3d_w_ahead != P3D_AHEAD_NONE || pthread_attr_init(&attr) != 0)
        return;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 << 10);
    sigfillset(&all); /* the application's signals are not for us */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    p3d_w_ahead_failed = 0;
    __atomic_store_n(&p3d_w_ahead, P3D_AHEAD_RUN, __ATOMIC_RELEASE);
    if (pthread_create(&th, &attr, p3d_writer_ahead_main, NULL) != 0)
        __atomic_store_n(&p3d_w_ahead, P3D_AHEAD_NONE, __ATOMIC_RELEASE);
    else
        pthread_setname_np(th, "p3d-writer");
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
}

/* Ask the helper to stop; wait until it left the pages.  Locked. */
static void p3d_writer_ahead_stop(int wait_exit)
{
    if (p3d_w_ahead == P3D_AHEAD_RUN)
        __atomic_store_n(&p3d_w_ahead, P3D_AHEAD_STOP, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&p3d_w_wake);
    while (p3d_w_ahead_base != NULL ||
           (wait_exit && p3d_w_ahead != P3D_AHEAD_NONE))
        pthread_cond_wait(&p3d_w_idle, &p3d_w_lock);
}

void p3d_writer_last_words(void)
{
    p3d_w_thr.last_words = 1;
}

/*
 * The spare chunk for a thread with last words, once.  Its index is
 * below p3d_w_next (the caller's fetch_add passed it), so the helper's
 * touch skips it as claimed (p3d_writer_touch).
 */
static int p3d_writer_take_spare(const struct p3d_wthr *t, uint64_t *c)
{
    if (!t->last_words || p3d_w_open_max == p3d_w_max ||
        __atomic_exchange_n(&p3d_w_spare_taken, 1, __ATOMIC_ACQ_REL))
        return 0;
    *c = p3d_w_open_max;
    return 1;
}

static int p3d_writer_claim(struct p3d_wthr *t, uint32_t gen)
{
    uint64_t c = __atomic_fetch_add(&p3d_w_next, 1, __ATOMIC_SEQ_CST);
    struct p3d_chunk_hdr *ch;
    char *base;

    if (c >= p3d_w_open_max) {
        __atomic_store_n(&p3d_w_full, 1, __ATOMIC_RELAXED);
        if (!p3d_writer_take_spare(t, &c)) {
            p3d_warn_once("cap", "trace file '%s' reached its size cap; "
                                 "later records are dropped", p3d_w_path);
            return -1;
        }
    }
    base = p3d_writer_window(c);
    if (base == NULL)
        return -1;
    p3d_writer_touch_wait(c);
    ch = (struct p3d_chunk_hdr *)(base + (c % P3D_CPW) * P3D_CHUNK_BYTES);
    ch->tid = p3d_tid();
    ch->index = (uint32_t)c;
    __atomic_store_n((uint32_t *)&ch->h,
                     P3D_REC_CHUNK | ((uint32_t)sizeof(*ch) << 16),
                     __ATOMIC_RELEASE);
    if (c % P3D_CPW == 0 &&
        __atomic_load_n(&p3d_w_ahead, __ATOMIC_RELAXED) == P3D_AHEAD_RUN)
        pthread_cond_signal(&p3d_w_wake); /* time to map the next one */
    t->pos = (char *)(ch + 1);
    t->end = (char *)ch + P3D_CHUNK_BYTES;
    t->chunk = c;
    t->gen = gen;
    t->has_chunk = 1;
    if (t->cnt_gen != gen)
        p3d_writer_cnt_take(t, gen);
    if (!t->key_set) {
        pthread_setspecific(p3d_w_key, t);
        t->key_set = 1;
    }
    return 0;
}

/*
 * Open the file and write its preamble if nobody did yet.  The
 * application's errno is left as it was, whatever failed on the way.
 */
static void p3d_writer_ensure_open(struct p3d_wthr *t)
{
    int err = errno;

    if (p3d_writer_state() == P3D_W_UNOPENED && p3d_writer_open_once(t)) {
        p3d_writer_cmdline();
        p3d_writer_environ();
    }
    errno = err;
}

int p3d_writer_dir_fd(void)
{
    struct p3d_wthr *t = &p3d_w_thr;

    if (!t->in_open && p3d_core_enabled())
        p3d_writer_ensure_open(t);
    return p3d_writer_state() == P3D_W_OPEN ? p3d_w_dfd : -1;
}

/* Slow path: open the file if needed and claim a fresh chunk. */
static int p3d_writer_refill(struct p3d_wthr *t, size_t len)
{
    uint32_t gen;

    if (t->in_open || !p3d_core_enabled() ||
        (__atomic_load_n(&p3d_w_full, __ATOMIC_RELAXED) && !t->last_words))
        return -1;
    p3d_writer_ensure_open(t);
    if (p3d_writer_state() != P3D_W_OPEN)
        return -1;
    gen = __atomic_load_n(&p3d_w_gen, __ATOMIC_ACQUIRE);
    if (t->has_chunk && t->gen == gen && (size_t)(t->end - t->pos) >= len)
        return 0; /* the preamble just claimed a chunk with room */
    if (t->has_chunk && t->gen == gen && t->pins > 0 && !t->deferred) {
        t->deferred = 1;        /* finished at p3d_rec_unpin */
        t->deferred_chunk = t->chunk;
        t->deferred_gen = gen;
    } else if (t->has_chunk && t->gen == gen && t->pins == 0) {
        p3d_writer_finish(t->chunk);
    }                           /* else: pinned twice, the window stays */
    t->has_chunk = 0;
    return p3d_writer_claim(t, gen);
}

/*
 * Slow path of p3d_rec_reserve, out of line so that the fast path saves
 * no registers: 0 when the thread's chunk has room for `len` now, -1
 * when the record is dropped (counted) or recording is off.
 */
static __attribute__((noinline)) int p3d_writer_room(struct p3d_wthr *t,
                                                     size_t len)
{
    if (len > P3D_CHUNK_ROOM || t->npend >= P3D_MAX_PENDING) {
        p3d_writer_drop();
        return -1;
    }
    if (t->has_chunk && (size_t)(t->end - t->pos) >= len &&
        t->gen == __atomic_load_n(&p3d_w_gen, __ATOMIC_RELAXED))
        return 0;
    if (p3d_writer_refill(t, len) != 0) {
        if (p3d_writer_state() != P3D_W_UNOPENED && p3d_core_enabled())
            p3d_writer_drop();
        return -1;
    }
    return 0;
}

void *p3d_rec_reserve(uint16_t tag, size_t len)
{
    struct p3d_wthr *t = &p3d_w_thr;
    char *rec;

    len = P3D_REC_ROUND(len);
    if (P3D_UNLIKELY(len > P3D_CHUNK_ROOM || t->npend >= P3D_MAX_PENDING ||
                     !t->has_chunk || (size_t)(t->end - t->pos) < len ||
                     t->gen != __atomic_load_n(&p3d_w_gen,
                                               __ATOMIC_RELAXED)) &&
        p3d_writer_room(t, len) != 0)
        return NULL;
    rec = t->pos;
    t->pos += len;
    /* warm the lines of the next records while the caller runs NCCL */
    if (t->end - t->pos > 512)
        __builtin_prefetch(t->pos + 256, 1, 3);
    ((struct p3d_rec_hdr *)rec)->len = (uint16_t)len;
    t->pend[t->npend].rec = rec;
    t->pend[t->npend].tag = tag;
    t->npend++;
    return rec;
}

/*
 * Pinning (for records updated in place after commit, e.g. an op's t_exit
 * after the real call returned): while the calling thread holds a pin,
 * the chunk it leaves is not finished, so its window stays mapped.
 */
void p3d_rec_pin(void)
{
    p3d_w_thr.pins++;
}

void p3d_rec_unpin(void)
{
    struct p3d_wthr *t = &p3d_w_thr;

    if (t->pins > 0 && --t->pins > 0)
        return;
    if (t->deferred &&
        t->deferred_gen == __atomic_load_n(&p3d_w_gen, __ATOMIC_ACQUIRE))
        p3d_writer_finish(t->deferred_chunk);
    t->deferred = 0;
}

void p3d_rec_commit(void *rec)
{
    struct p3d_wthr *t = &p3d_w_thr;
    struct p3d_rec_hdr *h = rec;
    uint16_t tag;
    int i;

    for (i = t->npend - 1; i >= 0 && t->pend[i].rec != rec; i--)
        ;
    if (i < 0)
        return;
    tag = t->pend[i].tag;
    t->pend[i] = t->pend[--t->npend];
    __atomic_store_n((uint32_t *)h, tag | ((uint32_t)h->len << 16),
                     __ATOMIC_RELEASE);
    if (P3D_LIKELY(t->cnt != NULL)) { /* only this thread writes them */
        struct p3d_wcnt *c = t->cnt;

        __atomic_store_n(&c->records, c->records + 1, __ATOMIC_RELAXED);
        if (tag == P3D_REC_OP)
            __atomic_store_n(&c->ops, c->ops + 1, __ATOMIC_RELAXED);
        return;
    }
    __atomic_add_fetch(&p3d_w_records, 1, __ATOMIC_RELAXED);
    if (tag == P3D_REC_OP)
        __atomic_add_fetch(&p3d_w_ops, 1, __ATOMIC_RELAXED);
}

static void p3d_writer_summary(void)
{
    struct p3d_rec_summary *s = p3d_rec_reserve(P3D_REC_SUMMARY, sizeof(*s));

    if (s == NULL)
        return;
    s->t = p3d_now();
    s->async_error_polls = p3d_async_polls();
    s->ops_recorded = p3d_writer_count(1);
    s->dropped = p3d_writer_dropped();
    p3d_mem_peaks(s->peak);
    p3d_rec_commit(s);
}

void p3d_writer_close(void)
{
    uint64_t used;

    if (p3d_writer_state() != P3D_W_OPEN)
        return;
    p3d_writer_summary();
    pthread_mutex_lock(&p3d_w_lock);
    if (p3d_writer_state() != P3D_W_OPEN) {
        pthread_mutex_unlock(&p3d_w_lock);
        return;
    }
    __atomic_store_n(&p3d_w_state, P3D_W_CLOSED, __ATOMIC_RELEASE);
    __atomic_add_fetch(&p3d_w_gen, 1, __ATOMIC_ACQ_REL);
    p3d_writer_ahead_stop(0); /* no page touched past the trim below */
    used = __atomic_load_n(&p3d_w_next, __ATOMIC_RELAXED);
    if (used > p3d_w_mapped)
        used = p3d_w_mapped;
    if (used > p3d_w_open_max) /* the claims that failed */
        used = p3d_w_open_max +
               (uint64_t)__atomic_load_n(&p3d_w_spare_taken, __ATOMIC_ACQUIRE);
    p3d_w_hdr->end_mono_ns = p3d_now();
    p3d_w_hdr->n_records = p3d_writer_count(0);
    p3d_w_hdr->dropped_records = p3d_writer_dropped();
    p3d_writer_flag(P3D_F_CLOSED);
    if (ftruncate(p3d_w_fd, (off_t)P3D_DATA_OFFSET +
                                (off_t)used * P3D_CHUNK_BYTES) != 0) {
        /* keep the zero tail: readers stop at the first zero tag */
    }
    pthread_mutex_unlock(&p3d_w_lock);
}

/* Forget the file without touching it (fork child, tests). */
void p3d_writer_reset(int forked)
{
    uint64_t w;

    if (!forked) { /* the helper lives: stop it; in a child it is gone */
        pthread_mutex_lock(&p3d_w_lock);
        p3d_writer_ahead_stop(1);
        pthread_mutex_unlock(&p3d_w_lock);
    }
    p3d_writer_unmap_queued(1); /* the helper is gone: nobody races */
    __atomic_store_n(&p3d_w_ahead, P3D_AHEAD_NONE, __ATOMIC_RELEASE);
    p3d_w_ahead_base = NULL;
    p3d_w_ahead_unmap = 0;
    pthread_mutex_init(&p3d_w_lock, NULL);
    pthread_cond_init(&p3d_w_wake, NULL);
    pthread_cond_init(&p3d_w_idle, NULL);
    for (w = 0; w < P3D_MAX_WIN; w++) {
        if (p3d_w_win[w] != NULL)
            munmap(p3d_w_win[w], P3D_WIN_BYTES);
        p3d_w_win[w] = NULL;
        p3d_w_done[w] = 0;
    }
    if (p3d_w_hdr != NULL)
        munmap(p3d_w_hdr, P3D_DATA_OFFSET);
    if (p3d_w_fd >= 0)
        close(p3d_w_fd);
    if (p3d_w_dfd >= 0)
        close(p3d_w_dfd);
    p3d_w_hdr = NULL;
    p3d_w_fd = p3d_w_dfd = -1;
    p3d_w_name[0] = '\0';
    p3d_w_next = p3d_w_mapped = 0;
    p3d_w_touching = 0; /* a helper that was touching is gone or stopped */
    p3d_w_full = 0;
    p3d_w_spare_taken = 0;
    p3d_w_records = p3d_w_ops = p3d_w_dropped = 0;
    memset(p3d_w_cnt, 0, sizeof(p3d_w_cnt));
    p3d_w_thr.cnt = NULL;
    p3d_w_thr.cnt_gen = 0;
    p3d_w_path[0] = '\0';
    p3d_w_forked = forked;
    p3d_w_thr.has_chunk = 0;
    p3d_w_thr.npend = 0;
    p3d_w_thr.deferred = 0;
    __atomic_add_fetch(&p3d_w_gen, 1, __ATOMIC_ACQ_REL);
    __atomic_store_n(&p3d_w_state, P3D_W_UNOPENED, __ATOMIC_RELEASE);
}

void p3d_writer_fork_prepare(void)
{
    pthread_mutex_lock(&p3d_w_lock);
}

void p3d_writer_fork_parent(void)
{
    pthread_mutex_unlock(&p3d_w_lock);
}
