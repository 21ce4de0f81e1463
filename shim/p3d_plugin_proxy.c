/*
 * p3d_plugin_proxy.c - where NCCL's network transfers stand, from the
 * profiler plugin's ProxyOp and ProxyStep events (issue 24), for the
 * watchdog's hang report.
 *
 * NCCL's proxy thread starts a ProxyOp per channel of a task's network
 * send or receive (its parent: the task's handle), a ProxyStep per step
 * (slice) of it, records each step's state as it moves (waits for the
 * GPU's data, for the receiver's buffer, for the peer's data, ...), and
 * stops steps and ops as they finish (NVIDIA/nccl v2.28.9
 * src/plugin/profiler.cc:478-660).  Transfers that stay inside a node
 * (P2P, SHM, NVLink) have no proxy op and so no event.
 *
 * Memory is flat: a fixed table of ProxyOps in flight, each with the
 * NCCL_STEPS (8) step slots NCCL itself cycles through; a finished
 * ProxyOp frees its entry, and one that finds the table full is counted
 * and not kept.  Nothing is written while the job runs.  When the
 * watchdog reports a hang, the transfers still in flight are written as
 * notes ("proxy: ...", oldest first, at most PX_NOTES) and summed up in
 * the report on stderr: the step each waits in, for how long, and which
 * peer it waits on.
 *
 * Callbacks come from NCCL's proxy thread; the hang report from the
 * watchdog's.  Every field is atomic; a report may see a transfer half
 * updated, never a torn value.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_hooks.h"
#include "p3d_nccl_profiler_abi.h"
#include "p3d_plugin.h"
#include "p3d_shim.h"

#define PX_SLOTS 1024
#define PX_STEPS 8       /* NCCL_STEPS: a ProxyOp's steps in flight */
#define PX_TRIES 8
#define PX_NOTES 16      /* notes written per hang report */
#define PX_SHOW 4        /* lines added to the stderr report */

struct px_step {
    _Atomic int32_t step;      /* -1: free */
    _Atomic int32_t state;     /* P3D_NP_STEP_*, 0: started */
    _Atomic uint64_t t;        /* host ns of its last change */
};

struct px_op {
    _Atomic int live;           /* 0 free, 2 being filled in, 1 live */
    _Atomic uint64_t op_id, comm, t_start;
    _Atomic int32_t peer, n_steps, channel, is_send;
    _Atomic int32_t done;       /* steps stopped */
    struct px_step st[PX_STEPS];
} __attribute__((aligned(64)));

#define PX_SET(o, f, v) atomic_store_explicit(&(o)->f, (v), \
                                              memory_order_relaxed)
#define PX_GET(o, f) atomic_load_explicit(&(o)->f, memory_order_relaxed)

static struct px_op px_ops[PX_SLOTS];
static _Atomic uint64_t px_cursor, px_full;

static struct px_op *px_of(const void *h, struct px_step **step)
{
    uintptr_t p = (uintptr_t)h, base = (uintptr_t)px_ops;
    size_t off;

    if (p < base || p >= base + sizeof(px_ops))
        return NULL;
    off = (p - base) % sizeof(struct px_op);
    *step = off == 0 ? NULL : (struct px_step *)p;
    return &px_ops[(p - base) / sizeof(struct px_op)];
}

int p3d_plugin_proxy_owns(const void *h)
{
    struct px_step *s;

    return px_of(h, &s) != NULL;
}

void p3d_plugin_proxy_op_start(void **h, uint64_t comm, uint64_t op_id,
                               const struct p3d_np_proxy_op *d)
{
    for (int i = 0; i < PX_TRIES; i++) {
        struct px_op *o = &px_ops[atomic_fetch_add(&px_cursor, 1) % PX_SLOTS];
        int free_ = 0;

        if (!atomic_compare_exchange_strong(&o->live, &free_, 2))
            continue;               /* 2: being filled in */
        PX_SET(o, op_id, op_id);
        PX_SET(o, comm, comm);
        PX_SET(o, peer, d->peer);
        PX_SET(o, n_steps, d->n_steps);
        PX_SET(o, channel, d->channel_id);
        PX_SET(o, is_send, d->is_send != 0);
        PX_SET(o, t_start, p3d_now());
        atomic_store(&o->done, 0);
        for (int k = 0; k < PX_STEPS; k++)
            atomic_store(&o->st[k].step, -1);
        atomic_store(&o->live, 1);
        *h = o;
        return;
    }
    atomic_fetch_add_explicit(&px_full, 1, memory_order_relaxed);
}

void p3d_plugin_proxy_step_start(void **h, const void *parent, int step)
{
    struct px_step *s;
    struct px_op *o = px_of(parent, &s);

    if (o == NULL || s != NULL || step < 0)
        return;
    s = &o->st[step % PX_STEPS];
    atomic_store(&s->state, 0);
    atomic_store(&s->t, p3d_now());
    atomic_store(&s->step, step);
    *h = s;
}

void p3d_plugin_proxy_record(void *h, int state)
{
    struct px_step *s;
    struct px_op *o = px_of(h, &s);

    if (o == NULL || s == NULL)
        return;
    atomic_store(&s->state, state);
    atomic_store(&s->t, p3d_now());
}

void p3d_plugin_proxy_stop(void *h)
{
    struct px_step *s;
    struct px_op *o = px_of(h, &s);

    if (o == NULL)
        return;
    if (s != NULL) {
        atomic_store(&s->step, -1);
        atomic_fetch_add(&o->done, 1);
        return;
    }
    atomic_store(&o->live, 0);
}

static const char *px_state(int state, int is_send)
{
    switch (state) {
    case P3D_NP_STEP_SEND_GPU_WAIT: return "waits for the GPU's data";
    case P3D_NP_STEP_SEND_PEER_WAIT: return "waits for the receiver's buffer";
    case P3D_NP_STEP_SEND_WAIT: return "sent, waits for the network";
    case P3D_NP_STEP_RECV_WAIT: return "waits for the peer's data";
    case P3D_NP_STEP_RECV_FLUSH_WAIT: return "flushing to the GPU";
    case P3D_NP_STEP_RECV_GPU_WAIT: return "waits for the GPU to take it";
    default: return is_send ? "send posted" : "receive posted";
    }
}

/* The transfer's oldest step still in flight (NULL: none started). */
static const struct px_step *px_oldest(const struct px_op *o, int32_t *step)
{
    const struct px_step *best = NULL;

    *step = INT32_MAX;
    for (int k = 0; k < PX_STEPS; k++) {
        int32_t v = atomic_load(&o->st[k].step);
        if (v >= 0 && v < *step) {
            *step = v;
            best = &o->st[k];
        }
    }
    return best;
}

/* One line about transfer o at host time now (without a newline). */
static int px_line(char *buf, size_t cap, const struct px_op *o,
                   uint64_t now)
{
    int32_t step;
    const struct px_step *s = px_oldest(o, &step);
    uint64_t t = s ? atomic_load(&s->t) : PX_GET(o, t_start);
    uint64_t op_id = PX_GET(o, op_id);
    int send = PX_GET(o, is_send);
    char what[96], id[40] = "";

    if (s != NULL)
        snprintf(what, sizeof(what), "step %d %s", (int)step,
                 px_state(atomic_load(&s->state), send));
    else
        snprintf(what, sizeof(what), "no step in flight");
    if (op_id)
        snprintf(id, sizeof(id), " (op_id %" PRIu64 ")", op_id);
    return snprintf(buf, cap,
                    "proxy: comm 0x%016" PRIx64 " %s comm rank %d, channel "
                    "%d: %d of %d steps done, %s for %.1f s%s",
                    PX_GET(o, comm), send ? "send to" : "receive from",
                    (int)PX_GET(o, peer), (int)PX_GET(o, channel),
                    (int)atomic_load(&o->done), (int)PX_GET(o, n_steps),
                    what, now > t ? (double)(now - t) / 1e9 : 0.0, id);
}

struct px_live_op {
    uint64_t t_start; /* read once: NCCL's proxy thread may reuse the slot */
    int i;
};

static int px_older(const void *a, const void *b)
{
    const struct px_live_op *x = a, *y = b;

    return x->t_start < y->t_start ? -1 : x->t_start > y->t_start;
}

/* The live transfers, oldest first, into live; their number.  The sort
 * reads the start times taken once, as slots can change under it, and a
 * comparison that changes its answer mid-sort is undefined for qsort. */
static int px_live(struct px_live_op *live)
{
    int n = 0;

    for (int i = 0; i < PX_SLOTS; i++)
        if (atomic_load(&px_ops[i].live) == 1)
            live[n++] = (struct px_live_op){PX_GET(&px_ops[i], t_start), i};
    qsort(live, (size_t)n, sizeof(*live), px_older);
    return n;
}

size_t p3d_hook_hang_detail(char *buf, size_t cap)
{
    static struct px_live_op live[PX_SLOTS];
    int n = px_live(live);
    uint64_t now = p3d_now();
    size_t len = 0;
    char line[256];

    for (int i = 0; i < n && i < PX_NOTES; i++) {
        px_line(line, sizeof(line), &px_ops[live[i].i], now);
        p3d_note("%s", line);
        if (i < PX_SHOW && len < cap) {
            int w = snprintf(buf + len, cap - len, "p3dtrace:   %s\n", line);
            len += w > 0 ? (size_t)w : 0;
        }
    }
    if ((n > PX_SHOW || atomic_load(&px_full)) && len < cap) {
        int w = snprintf(buf + len, cap - len, "p3dtrace:   %d network "
                         "transfers in flight (trace notes: %d; %" PRIu64
                         " not kept, table full)\n", n,
                         n < PX_NOTES ? n : PX_NOTES,
                         (uint64_t)atomic_load(&px_full));
        len += w > 0 ? (size_t)w : 0;
    }
    return len < cap ? len : cap;
}
