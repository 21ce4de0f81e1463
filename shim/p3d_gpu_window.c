/*
 * p3d_gpu_window.c - when CUPTI records kernels under the default GPU
 * timing: for the first FIRST seconds, then the last ON seconds of every
 * EVERY seconds of wall-clock time after that, so that every rank of a
 * job (on hosts whose clocks agree) records the same moments
 * (P3D_GPU_WINDOW=FIRST:ON:EVERY, "all", "off").
 *
 * Why windows: CUPTI's kernel records cost every kernel about 0.2 us of
 * GPU time and a microsecond or two of host time at its launch (measured
 * with bench/kernel_cost.py, bench/README.md); a job of many small kernels
 * pays that on every step.  CUDA events time every NCCL op all the time
 * (they cost per NCCL op, not per kernel); the compute timeline the
 * analysis needs for overlap, idle and bubbles comes from the windows.
 * Each switch writes a P3D_REC_GPU_WINDOW record, so the analyzer knows
 * where the trace has kernel records and where it has none.
 *
 * The schedule is a pure function of the time since GPU timing started
 * and the wall clock (p3d_gpu_window_want, tested directly); the background GPU thread calls
 * p3d_gpu_window_tick, the only place that switches CUPTI.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "p3d_env.h"
#include "p3d_gpu.h"
#include "p3d_shim.h"

#define WIN_NS 1000000000.0

static struct p3d_gpu_window win_cfg;
/* win_t0 is set once by the thread that starts GPU timing; the rest
 * belongs to the background GPU thread, the only caller of the tick. */
static _Atomic uint64_t win_t0;  /* p3d_now() when windows began, 0 not */
static int win_cur = -1;         /* kernels being recorded: 1/0, -1 not yet */
static uint32_t win_opened;
static uint64_t win_retry_at;    /* an open CUPTI refused: not before */
static uint64_t win_closed_at;   /* a window closed, spans not yet out */

#define WIN_RETRY_NS 1000000000ull
#define WIN_SPAN_FLUSH_NS 500000000ull

static int win_secs(const char *s, char **end, uint64_t *ns)
{
    double v = strtod(s, end);

    if (*end == s || !(v >= 0 && v <= 1e9))    /* NaN too */
        return -1;
    *ns = (uint64_t)(v * WIN_NS);
    return 0;
}

int p3d_gpu_window_parse(const char *s, struct p3d_gpu_window *w)
{
    struct p3d_gpu_window d = {P3D_GPU_WINDOW_FIRST_S * 1000000000ull,
                               P3D_GPU_WINDOW_ON_S * 1000000000ull,
                               P3D_GPU_WINDOW_EVERY_S * 1000000000ull,
                               P3D_WIN_SOME};
    char *end;

    *w = d;
    if (!s || !*s)
        return 0;
    if (!strcmp(s, "all")) {
        w->mode = P3D_WIN_ALL;
        return 0;
    }
    if (!strcmp(s, "off") || !strcmp(s, "none")) {
        w->mode = P3D_WIN_NONE;
        return 0;
    }
    w->on_ns = w->every_ns = 0;
    if (win_secs(s, &end, &w->first_ns) != 0 ||
        (*end != '\0' &&             /* else FIRST alone: one window */
         !(*end == ':' && win_secs(end + 1, &end, &w->on_ns) == 0 &&
           *end == ':' && win_secs(end + 1, &end, &w->every_ns) == 0 &&
           *end == '\0' && (w->every_ns > 0 || w->on_ns == 0)))) {
        *w = d;
        return -1;
    }
    if (w->first_ns == 0 && w->on_ns == 0)
        w->mode = P3D_WIN_NONE;       /* "0", "0:0:600": never */
    return 0;
}

int p3d_gpu_window_want(const struct p3d_gpu_window *w, uint64_t since_ns,
                        uint64_t wall_ns)
{
    if (w->mode != P3D_WIN_SOME)
        return w->mode == P3D_WIN_ALL;
    if (since_ns < w->first_ns)
        return 1;
    if (!w->every_ns || !w->on_ns)
        return 0;
    if (w->on_ns >= w->every_ns)
        return 1;
    return wall_ns % w->every_ns >= w->every_ns - w->on_ns;
}

static uint64_t win_wall_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void win_record(int on, uint64_t t)
{
    struct p3d_rec_gpu_window *r =
        p3d_rec_reserve(P3D_REC_GPU_WINDOW, sizeof(*r));

    if (!r)
        return;
    r->on = (uint32_t)on;
    r->t = t;
    p3d_rec_commit(r);
}

/*
 * Parse P3D_GPU_WINDOW (warned once if not understood) and say whether
 * windows are wanted at all; the caller then starts CUPTI without
 * enabling kernel records and calls p3d_gpu_window_begin.
 */
int p3d_gpu_window_config(void)
{
    const char *e = getenv(P3D_ENV_GPU_WINDOW);

    if (p3d_gpu_window_parse(e, &win_cfg) != 0)
        p3d_warn_once("gpu_window_env", "%s=%s is not FIRST:ON:EVERY "
                      "seconds, all or off: using %d:%d:%d",
                      P3D_ENV_GPU_WINDOW, e, P3D_GPU_WINDOW_FIRST_S,
                      P3D_GPU_WINDOW_ON_S, P3D_GPU_WINDOW_EVERY_S);
    return win_cfg.mode != P3D_WIN_NONE;
}

/* At GPU timing start: the GPU thread's next tick opens the first window. */
void p3d_gpu_window_begin(void)
{
    atomic_store(&win_t0, p3d_now());
}

/*
 * Open or close a window.  A window is recorded as open only once CUPTI
 * took every kind (else the analyzer would count idle GPU time there);
 * a refused open is tried again a second later.  Nothing is written
 * before the first open: a schedule that starts outside a window has no
 * window to close.  Once a window closed, the kernels it launched finish
 * within a moment: their last spans are written 0.5 s later rather than
 * at the next window (a killed process would lose them).
 */
void p3d_gpu_window_tick(uint64_t now)
{
    uint64_t t0 = atomic_load(&win_t0);
    int want;

    if (t0 == 0)
        return;                       /* windows not in use */
    if (win_closed_at && now - win_closed_at >= WIN_SPAN_FLUSH_NS) {
        p3d_cupti_close_spans();
        win_closed_at = 0;
    }
    want = p3d_gpu_window_want(&win_cfg, now > t0 ? now - t0 : 0,
                               win_wall_ns());
    if (want == win_cur || (want && now < win_retry_at))
        return;
    if (want) {
        if (p3d_cupti_kernels(1) != 0) {
            win_retry_at = now + WIN_RETRY_NS;
            return;
        }
        win_record(1, p3d_now());     /* records are on from here */
        win_opened++;
    } else if (win_cur == 1) {
        win_record(0, p3d_now());     /* and were on until here */
        p3d_cupti_kernels(0);
        win_closed_at = now;
    }
    win_cur = want;
}

/* For the trace's closing note. */
void p3d_gpu_window_describe(char *buf, size_t len)
{
    const struct p3d_gpu_window *w = &win_cfg;

    if (w->mode == P3D_WIN_ALL)
        snprintf(buf, len, "all the run");
    else
        snprintf(buf, len, "windows %g:%g:%g s, %u opened",
                 (double)w->first_ns / WIN_NS, (double)w->on_ns / WIN_NS,
                 (double)w->every_ns / WIN_NS, win_opened);
}
