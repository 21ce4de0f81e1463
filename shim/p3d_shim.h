/*
 * p3d_shim.h - the internal API of the recording core.
 *
 * Every wrapper (NCCL, CUDA runtime/driver, GPU timing, watchdog) is a thin
 * layer over these functions, and cmocka tests call them directly.  The
 * core owns: one-time initialisation from the environment, the per-process
 * trace file, per-thread record chunks, the recursion guard, warnings and
 * resolution of the real library functions.
 *
 * Invariants:
 *   - Nothing here allocates, locks or makes a syscall on the hot path
 *     (p3d_rec_reserve/commit with room left in the thread's chunk).
 *   - A record returned by p3d_rec_reserve belongs to the calling thread
 *     until p3d_rec_commit; it is zero-filled except for nothing: the
 *     caller writes every field it cares about (the space is zero on disk
 *     because the file is extended with ftruncate).
 *   - No function here ever calls into NCCL or CUDA.
 *   - After fork() the child records into a file of its own, or none.
 */
#ifndef P3D_SHIM_H
#define P3D_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "p3d_format.h"

#define P3D_EXPORT __attribute__((visibility("default")))
#define P3D_LIKELY(x) __builtin_expect(!!(x), 1)
#define P3D_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define P3D_PRINTF(f, a) __attribute__((format(printf, f, a)))
/*
 * Thread-local storage of the shim.  initial-exec: a plain %fs-relative
 * access instead of a __tls_get_addr call per use (the shim is preloaded,
 * so its TLS is in the static block; glibc keeps surplus static TLS for
 * the rare dlopen of it).
 */
#define P3D_TLS __thread __attribute__((tls_model("initial-exec")))

/*
 * State behind the inline hot-path functions below (p3d_core.c owns it;
 * nobody else touches it).  Inline: an NCCL call uses each of them once
 * or twice, and a call across files costs more than their bodies.
 */
extern int p3d_core_ready;          /* set (release) once the cfg is read */
extern int64_t p3d_core_clock_off;  /* P3D_TEST_CLOCK_OFFSET_NS */
extern uint64_t p3d_core_op_ids;
extern P3D_TLS int p3d_core_depth;
extern P3D_TLS uint32_t p3d_core_tid;
int p3d_core_enabled_slow(void);
uint32_t p3d_core_tid_slow(void);

/*
 * Initialise once (thread-safe, idempotent, cheap after the first call).
 * Returns 1 if recording is on, 0 if disabled (P3D_DISABLE=1, or a failure
 * that was already warned about).  Wrappers call the real function either
 * way.
 */
static inline int p3d_core_enabled(void);

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t p3d_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec +
           (uint64_t)p3d_core_clock_off;
}
/* CLOCK_REALTIME ns, shifted like p3d_now() by the test clock offset. */
uint64_t p3d_now_real(void);
/*
 * Test hooks (documented in tests/sim/README.md): P3D_TEST_CLOCK_OFFSET_NS
 * (signed ns added to every recorded clock value, 0 if unset or bad) and
 * P3D_TEST_HOSTNAME (the hostname written in the header, NULL if unset).
 */
int64_t p3d_env_test_clock_offset(void);
const char *p3d_env_test_hostname(void);
/* This host's name as the traces record it (the test hook, else
 * gethostname), cut to fit `n` bytes with its NUL. */
void p3d_env_hostname(char *buf, size_t n);

/* Kernel thread id of the caller, cached per thread. */
static inline uint32_t p3d_tid(void)
{
    if (P3D_LIKELY(p3d_core_tid != 0))
        return p3d_core_tid;
    return p3d_core_tid_slow();
}

/*
 * Recursion guard: NCCL calls its own public API through the PLT
 * (ncclBcast -> ncclBroadcast).  p3d_guard_enter returns 1 for the
 * outermost call on this thread, 0 for a nested one; every enter is paired
 * with a p3d_guard_leave.
 */
static inline int p3d_guard_enter(void)
{
    return ++p3d_core_depth == 1;
}

static inline void p3d_guard_leave(void)
{
    p3d_core_depth--;
}

/*
 * Reserve a record of `len` bytes (rounded up to 8, at most
 * P3D_REC_MAX_LEN) with tag `tag` in the calling thread's chunk.  Opens
 * the trace file on the first call of the process.  Returns NULL when
 * recording is off or the record had to be dropped (counted in the file
 * header).  Thread-safe; lock-free unless a new chunk is needed.
 */
void *p3d_rec_reserve(uint16_t tag, size_t len);

/*
 * Publish a reserved record: stores its header last with release order, so
 * a reader (or a post-mortem of a killed process) sees all or nothing.
 */
void p3d_rec_commit(void *rec);

/*
 * Keep the calling thread's committed records mapped until the matching
 * unpin (nestable), so a record may be updated in place after commit:
 * while pinned, a chunk the thread leaves is finished only at the unpin.
 */
void p3d_rec_pin(void);
void p3d_rec_unpin(void);

/*
 * Process-unique, increasing id for an op record (P3D_REC_OP op_id), also
 * the key that GPU-time and hang records refer to.
 */
static inline uint64_t p3d_next_op_id(void)
{
    return __atomic_add_fetch(&p3d_core_op_ids, 1, __ATOMIC_RELAXED);
}

/*
 * Print "p3dtrace: warning: <msg>" once per distinct `key` (a string
 * literal) to stderr with write(2); also stored as a P3D_REC_NOTE record
 * when a trace file is open.  Safe from any thread.
 */
void p3d_warn_once(const char *key, const char *fmt, ...) P3D_PRINTF(2, 3);
void p3d_note(const char *fmt, ...) P3D_PRINTF(1, 2);

/*
 * Find the real definition of `name` in the process: dlsym(RTLD_NEXT),
 * then a scan of every loaded object (dl_iterate_phdr + dlopen RTLD_NOLOAD
 * + dlsym) for `name` and then `alt` (e.g. "pncclAllReduce"), skipping
 * libp3dtrace.so itself.  Returns NULL if not found; never aborts.
 */
void *p3d_resolve(const char *name, const char *alt);

/*
 * Resolve-once helper for wrappers: `*slot` caches the pointer.  Returns
 * the real function or NULL (and warns once, naming the symbol).  Inline:
 * every wrapped call goes through it; the first one resolves.
 */
#define P3D_RESOLVE_FAILED ((void *)1)
void *p3d_resolve_slow(void **slot, const char *name, const char *alt);

static inline void *p3d_resolve_cached(void **slot, const char *name,
                                       const char *alt)
{
    void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

    if (P3D_LIKELY(p != NULL && p != P3D_RESOLVE_FAILED))
        return p;
    return p3d_resolve_slow(slot, name, alt);
}


/*
 * Process configuration, read once from the environment (p3d_env.c).
 * rank/world/local_* are -1 when the launcher did not say.
 */
#define P3D_PATH_MAX 1024
struct p3d_cfg {
    int disabled;                  /* P3D_DISABLE=1 */
    int32_t rank;
    int32_t world_size;
    int32_t local_rank;
    int32_t local_world_size;
    uint64_t max_bytes;            /* P3D_MAX_MB cap, 0 = none */
    char dir[P3D_PATH_MAX];        /* P3D_TRACE_DIR */
    char job_id[P3D_JOB_ID_LEN];   /* sub-folder, sanitised */
};

/*
 * Strictly parse a decimal int: optional sign, digits, nothing else.
 * Returns 0 and stores *out on success, -1 on NULL/empty/garbage/overflow.
 */
int p3d_env_parse_int(const char *s, int *out);

/*
 * First of `names` (NULL-terminated) that is set and parses as an int
 * >= 0; -1 if none.  Thread-safe as far as getenv is.
 */
int32_t p3d_env_first_int(const char *const *names);

/*
 * Job sub-folder name from the launcher's environment (P3D_JOB_ID,
 * slurm-<SLURM_JOB_ID>, run-<TORCHELASTIC_RUN_ID> unless "none",
 * <MASTER_ADDR>-<MASTER_PORT>, else pid-<pid>), sanitised to
 * [A-Za-z0-9._-] and cut to fit `n` (>= 16) bytes with its NUL.
 */
void p3d_env_job_id(char *buf, size_t n);

/* Fill *cfg from the environment (no side effects). */
void p3d_cfg_load(struct p3d_cfg *cfg);

/* The job's trace folder: <P3D_TRACE_DIR>/<job id>. */
void p3d_cfg_job_dir(const struct p3d_cfg *cfg, char *buf, size_t n);

/*
 * The process configuration, loaded once (pthread_once).  Tests may edit
 * the returned struct before the trace file is opened.
 */
struct p3d_cfg *p3d_core_cfg(void);
extern struct p3d_cfg p3d_core_cfg_data; /* behind p3d_core_cfg() */

static inline int p3d_core_enabled(void)
{
    if (P3D_LIKELY(__atomic_load_n(&p3d_core_ready, __ATOMIC_ACQUIRE)))
        return !p3d_core_cfg_data.disabled;
    return p3d_core_enabled_slow();
}

/*
 * Writer control (p3d_writer.c).  p3d_writer_reset drops the current
 * file without finalising it (fork child, tests): the next record opens a
 * new file.  p3d_writer_close finalises (summary, counts, P3D_F_CLOSED,
 * trim); later records are dropped.  Neither calls NCCL or CUDA.
 * p3d_writer_path copies the open file's path (empty if none).
 */
void p3d_writer_reset(int forked);
void p3d_writer_close(void);
void p3d_writer_path(char *buf, size_t n);

/*
 * The job folder the trace file is in, as a descriptor (opened through
 * p3d_safedir, so it is the folder the file went to, <job> or
 * <job>.<uid>), for other files of the job folder.  Opens the file first
 * if no record did yet.  -1 when the process runs untraced.  Owned by the
 * writer: do not close it; valid until p3d_writer_reset.
 */
int p3d_writer_dir_fd(void);
int p3d_writer_is_open(void);
uint64_t p3d_writer_dropped(void);
/* The calling thread may write in the chunk kept past a full file: for a
 * rank's last records (the watchdog's hang reports, the SIGTERM note). */
void p3d_writer_last_words(void);
/* Store the run-time NCCL version (ncclGetVersion) in the file header. */
void p3d_writer_set_nccl_version(uint32_t v);
/* pthread_atfork handlers: hold the writer lock across fork(). */
void p3d_writer_fork_prepare(void);
void p3d_writer_fork_parent(void);

/* Counters reported in P3D_REC_SUMMARY. */
void p3d_count_async_poll(void);
uint64_t p3d_async_polls(void);

/* Flush and close the trace file (atexit / destructor); idempotent. */
void p3d_core_fini(void);

#endif /* P3D_SHIM_H */
