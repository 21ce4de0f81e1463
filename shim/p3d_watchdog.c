/*
 * p3d_watchdog.c - the hang watchdog and the SIGTERM finalizer (see
 * p3d_watchdog.h).  The report is formatted into a buffer and written to
 * stderr with one write(2), so lines of several ranks do not interleave
 * within a line.
 */

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "p3d_env.h"
#include "p3d_inflight.h"
#include "p3d_stack.h"
#include "p3d_watchdog.h"
#include "p3d_shim.h"

#define P3D_WD_SHOW 4           /* pending ops listed in a report */
#define P3D_WD_REPORTS 8        /* reports per process at most */
#define P3D_WD_TERM_SCAN 64     /* pending ops scanned for inits at SIGTERM */
#define P3D_WD_TERM_INITS 4     /* inits reported at SIGTERM at most */
#define P3D_WD_TERM_WAIT_MS 500 /* SIGTERM handler waits this long */
#define P3D_WD_NOTE_WAIT_MS 100 /* ... for the note, before the app's */

struct p3d_wd_name {
    uint64_t hash;
    char name[P3D_WD_NAME_LEN];
};

static const char *const p3d_wd_ops[P3D_OP_COUNT] = {
#define P3D_X_OPNAME(name, text, traits) text,
    P3D_OPS(P3D_X_OPNAME)
#undef P3D_X_OPNAME
};

static pthread_once_t p3d_wd_once = PTHREAD_ONCE_INIT;
static pthread_once_t p3d_wd_fork_once = PTHREAD_ONCE_INIT;
int p3d_wd_ready;     /* set (release) once p3d_wd_init ran */
static pthread_mutex_t p3d_wd_names_lock = PTHREAD_MUTEX_INITIALIZER;
static struct p3d_wd_name p3d_wd_names[P3D_WD_COMM_NAMES];
static sem_t p3d_wd_sem;
static uint64_t p3d_wd_timeout_ns;
static int p3d_wd_term_req;     /* set by the SIGTERM handler */
static int p3d_wd_term_done;
static int p3d_wd_term_final;   /* finalize (default action follows) */
static uint64_t p3d_wd_term_t;  /* when the last SIGTERM came */
static struct sigaction p3d_wd_old_term;
static int p3d_wd_have_old;

int p3d_watchdog_parse_timeout(const char *s, uint64_t *ns)
{
    uint64_t whole = 0, frac = 0, scale = 1000000000ull;
    const char *p = s;

    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        whole = whole * 10 + (uint64_t)(*p - '0');
        if (whole > 100000000ull)
            return -1;          /* over three years: a typo */
    }
    if (*p == '.') {
        if (p[1] < '0' || p[1] > '9')
            return -1;
        for (p++; *p >= '0' && *p <= '9'; p++)
            if (scale >= 10) {
                scale /= 10;
                frac += (uint64_t)(*p - '0') * scale;
            }
    }
    if (*p != '\0')
        return -1;
    *ns = whole * 1000000000ull + frac;
    return 0;
}

void p3d_watchdog_comm_name(uint64_t comm_hash, const char *name)
{
    uint32_t i = (uint32_t)(comm_hash % P3D_WD_COMM_NAMES);

    if (name == NULL || name[0] == '\0' || comm_hash == 0)
        return;
    pthread_mutex_lock(&p3d_wd_names_lock);
    for (int k = 0; k < P3D_WD_COMM_NAMES; k++) {
        struct p3d_wd_name *e = &p3d_wd_names[(i + k) % P3D_WD_COMM_NAMES];
        if (e->hash != 0 && e->hash != comm_hash)
            continue;
        e->hash = comm_hash;
        snprintf(e->name, sizeof(e->name), "%s", name);
        break;
    }
    pthread_mutex_unlock(&p3d_wd_names_lock);
}

static void p3d_wd_name_of(uint64_t comm_hash, char *out, size_t n)
{
    uint32_t i = (uint32_t)(comm_hash % P3D_WD_COMM_NAMES);

    out[0] = '\0';
    pthread_mutex_lock(&p3d_wd_names_lock);
    for (int k = 0; k < P3D_WD_COMM_NAMES; k++) {
        const struct p3d_wd_name *e =
            &p3d_wd_names[(i + k) % P3D_WD_COMM_NAMES];
        if (e->hash == 0)
            break;
        if (e->hash == comm_hash) {
            snprintf(out, n, "%s", e->name);
            break;
        }
    }
    pthread_mutex_unlock(&p3d_wd_names_lock);
}

/* Append printf output to buf at *len (bounded). */
static void P3D_PRINTF(4, 5) p3d_wd_put(char *buf, size_t cap, size_t *len,
                                        const char *fmt, ...)
{
    va_list ap;
    int k;

    if (*len + 1 >= cap)
        return;
    va_start(ap, fmt);
    k = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (k > 0)
        *len += (size_t)k < cap - *len ? (size_t)k : cap - *len - 1;
}

static const char *p3d_wd_opname(uint8_t op)
{
    return op < P3D_OP_COUNT ? p3d_wd_ops[op] : "?";
}

/* "AllReduce seq 12 on comm 0x... (name) peer 3" */
static void p3d_wd_put_op(char *buf, size_t cap, size_t *len,
                          const struct p3d_inflight_op *o)
{
    char name[P3D_WD_NAME_LEN];

    p3d_wd_name_of(o->comm_hash, name, sizeof(name));
    if (o->op == P3D_INFLIGHT_INIT) {
        p3d_wd_put(buf, cap, len, "communicator init/split of comm 0x%016"
                   PRIx64 "%s%s%s", o->comm_hash, name[0] ? " (" : "",
                   name, name[0] ? ")" : "");
        return;
    }
    p3d_wd_put(buf, cap, len, "%s seq %" PRIu64 " on comm 0x%016" PRIx64,
               p3d_wd_opname(o->op), o->seq, o->comm_hash);
    if (name[0] != '\0')
        p3d_wd_put(buf, cap, len, " (%s)", name);
    if (o->peer >= 0)
        p3d_wd_put(buf, cap, len, " %s %d (comm rank)",
                   P3D_OP_IS_P2P(o->op) ? "peer" : "root", o->peer);
}

/* One line per frame of the op's call-site stack (dladdr names). */
static void p3d_wd_put_stack(char *buf, size_t cap, size_t *len,
                             const struct p3d_inflight_op *o)
{
    uint64_t pc[P3D_STACK_FRAMES];
    int n = p3d_stack_get(o->stack_id, pc, P3D_STACK_FRAMES);
    uint32_t stack_id = o->stack_id;

    if (n == 0 && o->op == P3D_INFLIGHT_INIT) {
        p3d_wd_put(buf, cap, len, "p3dtrace:   call site: not recorded "
                   "for communicator creation (stacks are taken for NCCL "
                   "ops)\n");
        return;
    }
    if (n == 0) {
        p3d_wd_put(buf, cap, len, "p3dtrace:   call site: not recorded "
                   "(%s=0 or no unwinder)\n", P3D_ENV_STACKS);
        return;
    }
    p3d_wd_put(buf, cap, len, "p3dtrace:   call site (stack %u):\n",
               stack_id);
    for (int i = 0; i < n && i < 10; i++) {
        Dl_info di;
        const char *f = "?", *s = NULL, *b;
        uint64_t off = pc[i];

        if (dladdr((void *)(uintptr_t)pc[i], &di) != 0) {
            f = di.dli_fname != NULL ? di.dli_fname : "?";
            s = di.dli_sname;
            off = pc[i] - (uint64_t)(uintptr_t)(s ? di.dli_saddr
                                                  : di.dli_fbase);
        }
        b = strrchr(f, '/');
        p3d_wd_put(buf, cap, len, "p3dtrace:     #%d %s+0x%" PRIx64
                   " (%s)\n", i, s ? s : "", off, b ? b + 1 : f);
    }
}

static const char *p3d_wd_state(const struct p3d_inflight_op *o)
{
    if (o->op == P3D_INFLIGHT_INIT)
        return "inside the init call, waiting for the other members";
    if (!o->issued && o->grouped)
        return "issued in a group whose ncclGroupEnd has not returned";
    if (!o->issued)
        return "inside the NCCL call (it has not returned)";
    return "issued, the GPU has not finished it";
}

size_t p3d_watchdog_format(char *buf, size_t cap,
                           const struct p3d_inflight_op *ops, int n,
                           int n_all, uint64_t now)
{
    const struct p3d_inflight_op *o = &ops[0];
    const struct p3d_cfg *cfg = p3d_core_cfg();
    size_t len = 0;

    p3d_wd_put(buf, cap, &len, "p3dtrace: HANG? rank %d (pid %d): ",
               (int)cfg->rank, (int)getpid());
    p3d_wd_put_op(buf, cap, &len, o);
    p3d_wd_put(buf, cap, &len, " pending %.1f s (%s %.1f s)\n",
               (double)(now - o->t_enqueue) / 1e9, P3D_ENV_HANG_TIMEOUT,
               (double)p3d_wd_timeout_ns / 1e9);
    p3d_wd_put(buf, cap, &len, "p3dtrace:   state: %s; thread %u, op_id "
               "%" PRIu64 ", %d op(s) pending\n", p3d_wd_state(o), o->tid,
               (uint64_t)(o->op_id & (P3D_INFLIGHT_INIT_ID - 1)), n_all);
    for (int i = 1; i < n; i++) {
        p3d_wd_put(buf, cap, &len, "p3dtrace:   also pending: ");
        p3d_wd_put_op(buf, cap, &len, &ops[i]);
        p3d_wd_put(buf, cap, &len, " for %.1f s\n",
                   (double)(now - ops[i].t_enqueue) / 1e9);
    }
    if (!p3d_inflight_gpu_live())
        p3d_wd_put(buf, cap, &len, "p3dtrace:   (no GPU completion times: "
                   "ops that returned are not tracked, completion "
                   "unknown)\n");
    p3d_wd_put_stack(buf, cap, &len, o);
    return len;
}

static void p3d_wd_record(const struct p3d_inflight_op *o, int n_all,
                          uint64_t now)
{
    struct p3d_rec_hang *r = p3d_rec_reserve(P3D_REC_HANG, sizeof(*r));

    if (r == NULL)
        return;
    r->n_pending = (uint32_t)n_all;
    r->t = now;
    r->op_id = o->op_id;
    r->comm_hash = o->comm_hash;
    r->seq = o->seq;
    r->pending_ns = now - o->t_enqueue;
    r->stack_id = o->stack_id;
    r->peer = o->peer;
    r->op = o->op;
    p3d_rec_commit(r);
}

/* One scan: report the oldest pending op once it is past the timeout. */
static void p3d_wd_scan(uint64_t *last_id, int *reports)
{
    static char buf[8192];
    struct p3d_inflight_op ops[P3D_WD_SHOW];
    int n_all = p3d_inflight_pending(ops, P3D_WD_SHOW);
    uint64_t now = p3d_now();   /* after the scan: no op is newer */
    size_t len;

    if (n_all == 0 || p3d_wd_timeout_ns == 0 || *reports >= P3D_WD_REPORTS)
        return;
    if (now - ops[0].t_enqueue < p3d_wd_timeout_ns ||
        ops[0].op_id == *last_id)
        return;
    *last_id = ops[0].op_id;
    (*reports)++;
    len = p3d_watchdog_format(buf, sizeof(buf), ops,
                              n_all < P3D_WD_SHOW ? n_all : P3D_WD_SHOW,
                              n_all, now);
    if (len < sizeof(buf))
        len += p3d_hook_hang_detail(buf + len, sizeof(buf) - len);
    if (write(2, buf, len) < 0) {
        /* stderr is gone; the record below still tells */
    }
    p3d_wd_record(&ops[0], n_all, now);
}

/*
 * Inits still in flight at SIGTERM, reported whatever their age (a
 * P3D_REC_HANG with op P3D_INFLIGHT_INIT, as a report past the timeout
 * is): an init writes its P3D_REC_COMM only when it returns, so a rank
 * blocked creating a communicator (PyTorch creates one lazily at a
 * group's first use, and NCCL's init blocks until every member joined)
 * would read as outside NCCL, like the member that never came, and the
 * hang analysis could not tell the two apart (p3d_hang_init.c).  Ops
 * need no such report: their record is written before the call.
 */
static void p3d_wd_inits_at_term(void)
{
    struct p3d_inflight_op ops[P3D_WD_TERM_SCAN];
    int n_all = p3d_inflight_pending(ops, P3D_WD_TERM_SCAN);
    int n = n_all < P3D_WD_TERM_SCAN ? n_all : P3D_WD_TERM_SCAN;
    uint64_t now = p3d_now();

    for (int i = 0, put = 0; i < n && put < P3D_WD_TERM_INITS; i++)
        if (ops[i].op == P3D_INFLIGHT_INIT) {
            p3d_wd_record(&ops[i], n_all, now);
            put++;
        }
}

/*
 * SIGTERM arrived: note it, finalize the file if the process will die.
 * Ops the in-flight table had no slot for are noted first ("watchdog:
 * untracked_ops N"): it could not have reported them, so its silence
 * then proves nothing.  The SIGTERM note is reserved here, not through
 * p3d_note: it may be the process's first record, and it opens the file
 * then, which p3d_note's notes (warnings' companions) never do.
 */
static void p3d_wd_on_term(void)
{
    uint64_t lost = p3d_inflight_overflow();
    struct p3d_rec_str *r;
    char note[64];
    int n;

    if (lost > 0)
        p3d_note("watchdog: untracked_ops %" PRIu64, lost);
    p3d_wd_inits_at_term();
    /* "SIGTERM received" first (analyzer/read/p3d_reader.c); the time
     * ends the waits of a job stopped while it ran (p3d_hang_stop.c) */
    n = snprintf(note, sizeof(note), "SIGTERM received at_ns %" PRIu64,
                 __atomic_load_n(&p3d_wd_term_t, __ATOMIC_RELAXED));
    r = n > 0 && (size_t)n < sizeof(note)
            ? p3d_rec_reserve(P3D_REC_NOTE, sizeof(*r) + (size_t)n)
            : NULL;
    if (r != NULL) {
        r->n_bytes = (uint32_t)n;
        memcpy(r->text, note, (size_t)n);
        p3d_rec_commit(r);
    }
    if (__atomic_load_n(&p3d_wd_term_final, __ATOMIC_ACQUIRE))
        p3d_writer_close();
    __atomic_store_n(&p3d_wd_term_done, 1, __ATOMIC_RELEASE);
}

static uint64_t p3d_wd_tick_ns(void)
{
    uint64_t t = p3d_wd_timeout_ns / 4;

    if (t == 0 || t > 250000000ull)
        t = 250000000ull;
    return t < 10000000ull ? 10000000ull : t;
}

static void *p3d_wd_main(void *arg)
{
    uint64_t last_id = 0, tick = p3d_wd_tick_ns();
    int reports = 0;

    (void)arg;
    p3d_writer_last_words(); /* its reports outlive a full file */
    /* The timeout in force, for the analyzer: a rank whose trace lost
     * records and whose watchdog, alive until SIGTERM, reported nothing
     * had no op pending that long (analyzer/hang/p3d_hang_root.c; read
     * back by analyzer/read/p3d_reader.c). */
    p3d_note("watchdog: timeout_ns %" PRIu64, p3d_wd_timeout_ns);
    for (;;) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += (long)(tick % 1000000000ull);
        ts.tv_sec += (time_t)(tick / 1000000000ull) + ts.tv_nsec / 1000000000;
        ts.tv_nsec %= 1000000000;
        if (sem_timedwait(&p3d_wd_sem, &ts) == 0 &&
            __atomic_exchange_n(&p3d_wd_term_req, 0, __ATOMIC_ACQ_REL)) {
            /* Scan first: with the note, "no report" then means no op
             * was pending past the timeout when the signal came, however
             * late this thread ran before (hang/p3d_hang_root.c). */
            p3d_wd_scan(&last_id, &reports);
            p3d_wd_on_term();
        }
        p3d_wd_scan(&last_id, &reports);
    }
    return NULL;
}

/*
 * SIGTERM: let the application's handler run if it has one (it decides
 * how the process ends; the watchdog only notes the signal, waited for
 * at most P3D_WD_NOTE_WAIT_MS; a second SIGTERM is noted again).  Otherwise
 * have the watchdog finalize the file (bounded wait; nothing here but
 * async-signal-safe calls), then die of the signal as before.
 */
static void p3d_wd_sigterm(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    struct sigaction dfl;
    struct timespec ms = {0, 1000000};
    void (*h)(int) = p3d_wd_old_term.sa_handler;
    int chain = p3d_wd_have_old && h != SIG_DFL && h != SIG_IGN;

    __atomic_store_n(&p3d_wd_term_t, p3d_now(), __ATOMIC_RELAXED);
    __atomic_store_n(&p3d_wd_term_final, !chain, __ATOMIC_RELEASE);
    __atomic_store_n(&p3d_wd_term_req, 1, __ATOMIC_RELEASE);
    sem_post(&p3d_wd_sem);
    for (int i = 0; i < (chain ? P3D_WD_NOTE_WAIT_MS : P3D_WD_TERM_WAIT_MS) &&
                    !__atomic_load_n(&p3d_wd_term_done, __ATOMIC_ACQUIRE);
         i++)
        nanosleep(&ms, NULL);
    if (chain) {
        if (p3d_wd_old_term.sa_flags & SA_SIGINFO)
            p3d_wd_old_term.sa_sigaction(sig, si, uc);
        else
            h(sig);
        errno = saved;
        return;
    }
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    raise(sig);                 /* delivered when this handler returns */
    errno = saved;
}

static void p3d_wd_install_term(void)
{
    struct sigaction sa, old;

    if (sigaction(SIGTERM, NULL, &old) != 0 || old.sa_handler == SIG_IGN ||
        ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction == p3d_wd_sigterm))
        return;
    p3d_wd_old_term = old;
    p3d_wd_have_old = 1;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = p3d_wd_sigterm;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
}

static void p3d_wd_timeout_load(void)
{
    const char *e = getenv(P3D_ENV_HANG_TIMEOUT);

    p3d_wd_timeout_ns = (uint64_t)(P3D_HANG_TIMEOUT_DEFAULT * 1e9);
    if (e != NULL && *e != '\0' &&
        p3d_watchdog_parse_timeout(e, &p3d_wd_timeout_ns) != 0) {
        p3d_wd_timeout_ns = (uint64_t)(P3D_HANG_TIMEOUT_DEFAULT * 1e9);
        p3d_warn_once("hang_timeout_env", "%s=%s is not a number of "
                      "seconds; using %.0f", P3D_ENV_HANG_TIMEOUT, e,
                      P3D_HANG_TIMEOUT_DEFAULT);
    }
}

static void p3d_wd_fork_child(void)
{
    p3d_inflight_reset();
    p3d_stack_reset();
    p3d_wd_term_req = p3d_wd_term_done = p3d_wd_term_final = 0;
    p3d_wd_once = (pthread_once_t)PTHREAD_ONCE_INIT;
    __atomic_store_n(&p3d_wd_ready, 0, __ATOMIC_RELAXED);
}

static void p3d_wd_fork_register(void)
{
    pthread_atfork(NULL, NULL, p3d_wd_fork_child);
}

static void p3d_wd_init(void)
{
    sigset_t all, old;
    pthread_t t;

    pthread_once(&p3d_wd_fork_once, p3d_wd_fork_register);
    p3d_wd_timeout_load();
    sem_init(&p3d_wd_sem, 0, 0);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (pthread_create(&t, NULL, p3d_wd_main, NULL) == 0) {
        pthread_detach(t);
        p3d_wd_install_term();
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void p3d_watchdog_start_slow(void)
{
    pthread_once(&p3d_wd_once, p3d_wd_init);
    __atomic_store_n(&p3d_wd_ready, 1, __ATOMIC_RELEASE);
}
