/*
 * p3d_core.c - process-wide life cycle of the recording core: one-time
 * initialisation from the environment, the per-thread recursion guard and
 * thread id, warnings, op ids, fork handling and the exit-time close.
 *
 * Nothing here opens the trace file: the writer does that at the first
 * record, so processes that never call NCCL or CUDA leave no file.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "p3d_hooks.h"
#include "p3d_shim.h"

#define P3D_WARN_KEYS 64

static pthread_once_t p3d_once = PTHREAD_ONCE_INIT;
int p3d_core_ready;         /* set (release) once p3d_core_init ran */
struct p3d_cfg p3d_core_cfg_data;
uint64_t p3d_core_op_ids;
static uint64_t p3d_polls;
static const char *p3d_warn_keys[P3D_WARN_KEYS];

P3D_TLS int p3d_core_depth;
P3D_TLS uint32_t p3d_core_tid;

static void p3d_core_fork_child(void)
{
    p3d_core_tid = 0;
    p3d_writer_fork_parent(); /* release the lock the prepare took */
    p3d_writer_reset(1);
}

static void p3d_core_init(void)
{
    p3d_cfg_load(&p3d_core_cfg_data);
    pthread_atfork(p3d_writer_fork_prepare, p3d_writer_fork_parent,
                   p3d_core_fork_child);
}

/* The flag spares the hot path pthread_once's call and its checks. */
struct p3d_cfg *p3d_core_cfg(void)
{
    if (P3D_UNLIKELY(!__atomic_load_n(&p3d_core_ready, __ATOMIC_ACQUIRE))) {
        pthread_once(&p3d_once, p3d_core_init);
        __atomic_store_n(&p3d_core_ready, 1, __ATOMIC_RELEASE);
    }
    return &p3d_core_cfg_data;
}

int p3d_core_enabled_slow(void)
{
    return !p3d_core_cfg()->disabled;
}

/*
 * Test hook P3D_TEST_CLOCK_OFFSET_NS: a signed offset added to every
 * CLOCK_MONOTONIC and CLOCK_REALTIME value the shim records (GPU times
 * too: they are mapped onto p3d_now()), so one machine can pose as hosts
 * with skewed clocks.  Read once when the library loads.
 */
int64_t p3d_core_clock_off;

__attribute__((constructor(101))) static void p3d_core_clock_hook(void)
{
    p3d_core_clock_off = p3d_env_test_clock_offset();
}

uint64_t p3d_now_real(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec +
           (uint64_t)p3d_core_clock_off;
}

uint32_t p3d_core_tid_slow(void)
{
    p3d_core_tid = (uint32_t)syscall(SYS_gettid);
    return p3d_core_tid;
}

void p3d_count_async_poll(void)
{
    __atomic_add_fetch(&p3d_polls, 1, __ATOMIC_RELAXED);
}

uint64_t p3d_async_polls(void)
{
    return __atomic_load_n(&p3d_polls, __ATOMIC_RELAXED);
}

/* Claim `key` in the seen-set; 1 if this call is the first for it. */
static int p3d_warn_claim(const char *key)
{
    int i;

    for (i = 0; i < P3D_WARN_KEYS; i++) {
        const char *cur = __atomic_load_n(&p3d_warn_keys[i], __ATOMIC_ACQUIRE);
        if (cur == NULL) {
            const char *expect = NULL;
            if (__atomic_compare_exchange_n(&p3d_warn_keys[i], &expect, key,
                                            0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE))
                return 1;
            cur = expect;
        }
        if (cur == key || strcmp(cur, key) == 0)
            return 0;
    }
    return 0; /* table full: stay quiet rather than flood stderr */
}

static void p3d_warn_note(const char *text, size_t n)
{
    struct p3d_rec_str *rec;

    if (!p3d_writer_is_open())
        return;
    rec = p3d_rec_reserve(P3D_REC_NOTE, sizeof(*rec) + n + 1);
    if (rec == NULL)
        return;
    rec->n_bytes = (uint32_t)n;
    memcpy(rec->text, text, n);
    p3d_rec_commit(rec);
}

void p3d_warn_once(const char *key, const char *fmt, ...)
{
    static const char prefix[] = "p3dtrace: warning: ";
    char line[512];
    size_t n = sizeof(prefix) - 1;
    va_list ap;
    int k;

    if (!p3d_warn_claim(key))
        return;
    memcpy(line, prefix, n);
    va_start(ap, fmt);
    k = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
    va_end(ap);
    if (k < 0)
        k = 0;
    n += (size_t)k < sizeof(line) - n - 1 ? (size_t)k : sizeof(line) - n - 2;
    line[n++] = '\n';
    if (write(2, line, n) < 0) {
        /* nothing to do: stderr is gone */
    }
    p3d_warn_note(line + sizeof(prefix) - 1, n - sizeof(prefix));
}

/* A line for the trace only (facts for whoever reads it, not warnings). */
void p3d_note(const char *fmt, ...)
{
    char line[256];
    va_list ap;
    int k;

    va_start(ap, fmt);
    k = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (k > 0)
        p3d_warn_note(line, (size_t)k < sizeof(line) ? (size_t)k
                                                     : sizeof(line) - 1);
}

void p3d_core_fini(void)
{
    static int done;

    if (__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
        return;
    p3d_hook_fini();
    p3d_writer_close();
}

__attribute__((destructor)) static void p3d_core_destructor(void)
{
    p3d_core_fini();
}
