/*
 * p3d_chrome.c - --chrome FILE: Chrome trace-event JSON (the "JSON Object
 * Format" of the Trace Event Format), written one rank at a time so the
 * whole trace never sits in memory.  One process per rank, named with its
 * coordinates; one thread per host thread, GPU stream and kind (compute,
 * NCCL, copies), split into lanes where events would overlap; NCCL ops
 * named and coloured by the group label of their communicator; flow
 * arrows Send -> Recv; memory counters; iteration starts as process-wide
 * instant events.  Times: microseconds since the
 * job's first rank started, on the clock of p3d_vclock_shift (host
 * offsets from the time analysis when it ran).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_chrome.h"
#include "p3d_chrome_flow.h"
#include "p3d_chrome_lane.h"
#include "p3d_vclock.h"
#include "p3d_layout.h"
#include "p3d_util.h"

#define P3D_CHROME_BIG (200ull << 20) /* warn above this many bytes */

struct p3d_cw {
    FILE *f;
    const struct p3d_job *job;
    struct p3d_flows flows;
    struct p3d_vwin win;
    uint64_t n_events, n_dropped;
};

void p3d_chrome_us(FILE *f, uint64_t ns)
{
    fprintf(f, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

static const char *p3d_chrome_lbl(int l)
{
    return l >= 0 && l < P3D_LBL_COUNT ? p3d_label_name[l] : NULL;
}

void p3d_chrome_name(char *buf, size_t n, const struct p3d_vev *e)
{
    const char *l = p3d_chrome_lbl(e->label);

    switch (e->kind) {
    case P3D_V_COMPUTE: snprintf(buf, n, "compute"); return;
    case P3D_V_COPY: snprintf(buf, n, "memcpy"); return;
    case P3D_V_GROUP: snprintf(buf, n, "ncclGroup"); return;
    default: break;
    }
    if (e->op == P3D_V_INIT)
        snprintf(buf, n, "init %s comm", l ? l : "NCCL");
    else if (e->op < P3D_OP_COUNT)
        snprintf(buf, n, "%s%s%s", l ? l : "", l ? " " : "",
                 p3d_op_name[e->op]);
    else
        snprintf(buf, n, "?");
}

/* chrome://tracing's reserved colour names; Perfetto colours by name. */
static const char *p3d_chrome_color(const struct p3d_vev *e)
{
    if (e->kind == P3D_V_COMPUTE)
        return "thread_state_running";
    if (e->kind == P3D_V_COPY || e->kind == P3D_V_GROUP)
        return "generic_work";
    switch (e->label) {
    case P3D_LBL_TP: case P3D_LBL_TP_CP: return "rail_response";
    case P3D_LBL_PP: case P3D_LBL_P2P: return "terrible";
    case P3D_LBL_DP: case P3D_LBL_DP_CP: return "thread_state_runnable";
    case P3D_LBL_CP: return "yellow";
    case P3D_LBL_EP: case P3D_LBL_EXPERT_DP: return "olive";
    case P3D_LBL_EMB: case P3D_LBL_POS_EMB: return "rail_load";
    default: return "grey";
    }
}

static void p3d_chrome_sep(struct p3d_cw *w)
{
    fputs(w->n_events++ ? ",\n" : "\n", w->f);
}

static void p3d_chrome_proc(struct p3d_cw *w, const struct p3d_rank *r)
{
    const struct p3d_layout *l = &w->job->layout;
    char name[160], host[P3D_HOST_LEN + 1];
    int c[P3D_AX_N];

    if (l->valid) {
        p3d_layout_coords(l, r->rank, c);
        int k = snprintf(name, sizeof(name), "rank %d (TP %d, PP %d, DP %d",
                         r->rank, c[P3D_AX_TP], c[P3D_AX_PP], c[P3D_AX_DP]);
        if (l->size[P3D_AX_CP] > 1)
            k += snprintf(name + k, sizeof(name) - (size_t)k, ", CP %d",
                          c[P3D_AX_CP]);
        snprintf(name + k, sizeof(name) - (size_t)k, ")");
    } else {
        snprintf(name, sizeof(name), "rank %d", r->rank);
    }
    p3d_fixed_str(host, r->hdr.hostname, P3D_HOST_LEN);
    p3d_chrome_sep(w);
    fprintf(w->f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,"
            "\"args\":{\"name\":\"%s\"}}", r->rank, name);
    p3d_chrome_sep(w);
    fprintf(w->f, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%d,"
            "\"args\":{\"sort_index\":%d}}", r->rank, r->rank);
    p3d_chrome_sep(w);
    fprintf(w->f, "{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":%d,"
            "\"args\":{\"labels\":", r->rank);
    p3d_json_str(w->f, host, strlen(host));
    fputs("}}", w->f);
}

static void p3d_chrome_thread(struct p3d_cw *w, int rank,
                              const struct p3d_vev *e)
{
    static const char *const what[] = {"host NCCL calls, thread",
                                       "GPU compute, stream",
                                       "GPU NCCL, stream",
                                       "GPU copies, stream"};
    int cls = p3d_chrome_class(e);
    char lane[32] = "";

    if (e->lane)
        snprintf(lane, sizeof(lane), " (lane %u)", e->lane + 1);
    p3d_chrome_sep(w);
    fprintf(w->f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,"
            "\"tid\":%u,\"args\":{\"name\":\"%s ", rank, e->tid, what[cls]);
    fprintf(w->f, cls ? "0x%" PRIx64 : "%" PRIu64, e->track);
    fprintf(w->f, "%s\"}}", lane);
    p3d_chrome_sep(w);
    fprintf(w->f, "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%d,"
            "\"tid\":%u,\"args\":{\"sort_index\":%u}}", rank, e->tid,
            e->tid);
}

static void p3d_chrome_args(struct p3d_cw *w, const struct p3d_vev *e)
{
    if (e->kind == P3D_V_COMPUTE || e->kind == P3D_V_COPY) {
        fputs("{}", w->f);
        return;
    }
    if (e->kind == P3D_V_GROUP) {
        fprintf(w->f, "{\"ops\":%" PRIu64 "}", e->seq);
        return;
    }
    fprintf(w->f, "{\"comm\":\"0x%016" PRIx64 "\"", e->comm);
    if (e->op != P3D_V_INIT)
        fprintf(w->f, ",\"bytes\":%" PRIu64 ",\"seq\":%" PRIu64
                ",\"peer\":%d,\"comm_rank\":%d,\"op_id\":%" PRIu64,
                e->bytes, e->seq, e->peer, e->comm_rank, e->op_id);
    fputc('}', w->f);
}

static void p3d_chrome_event(struct p3d_cw *w, int rank,
                             const struct p3d_vev *e)
{
    const char *l = p3d_chrome_lbl(e->label);
    char name[64];

    p3d_chrome_name(name, sizeof(name), e);
    p3d_chrome_sep(w);
    fprintf(w->f, "{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"%s\","
            "\"cname\":\"%s\",\"pid\":%d,\"tid\":%u,\"ts\":", name,
            e->kind == P3D_V_COMPUTE ? "compute" : l ? l : "nccl",
            p3d_chrome_color(e), rank, e->tid);
    p3d_chrome_us(w->f, e->t0);
    fputs(",\"dur\":", w->f);
    p3d_chrome_us(w->f, e->t1 - e->t0);
    fputs(",\"args\":", w->f);
    p3d_chrome_args(w, e);
    fputc('}', w->f);
}

static void p3d_chrome_mem(struct p3d_cw *w, const struct p3d_vrank *v)
{
    for (size_t i = 0; i < v->n_mem; i++) {
        const struct p3d_vmem *m = &v->mem[i];
        static const char *const kind[] = {"device", "host_pinned",
                                           "managed", "device_used"};
        p3d_chrome_sep(w);
        fprintf(w->f, "{\"ph\":\"C\",\"name\":\"memory %s\",\"pid\":%d,"
                "\"ts\":", kind[m->kind], v->rank);
        p3d_chrome_us(w->f, m->t);
        fprintf(w->f, ",\"args\":{\"MiB\":%.3f}}", (double)m->cur / 1048576);
    }
}

/* One process-wide mark at job time t (ns), if inside the window. */
static void p3d_chrome_mark(struct p3d_cw *w, int rank, int64_t t,
                            const char *name)
{
    if (t < 0 || (uint64_t)t < w->win.t0 ||
        (w->win.t1 && (uint64_t)t >= w->win.t1))
        return;
    p3d_chrome_sep(w);
    fprintf(w->f, "{\"ph\":\"i\",\"s\":\"p\",\"name\":\"%s\",\"pid\":%d,"
            "\"tid\":0,\"ts\":", name, rank);
    p3d_chrome_us(w->f, (uint64_t)t);
    fputc('}', w->f);
}

/* Iteration starts of the rank (time analysis) as process-wide marks. */
static void p3d_vsels(struct p3d_cw *w, const struct p3d_rank *r)
{
    const struct p3d_time_res *t = p3d_vtime(w->job);
    long i = r - w->job->ranks;
    int64_t c, s, e;

    if (!t || p3d_vtime_base(w->job, &c) != 0)
        return;
    for (int k = 0; k < t->n_iter; k++) {
        char name[48];
        if (!p3d_time_window(&t->tl[i], k, &s, &e))
            continue;
        snprintf(name, sizeof(name), "iteration %d%s", k,
                 k < t->warm ? " (warm-up)" : "");
        p3d_chrome_mark(w, r->rank, s + c, name);
    }
}

/* Where the rank recorded kernels, when only in windows: compute spans
 * are missing outside them, which is not idle time. */
static void p3d_chrome_kwin(struct p3d_cw *w, const struct p3d_rank *r)
{
    const struct p3d_time_res *t = p3d_vtime(w->job);
    const struct p3d_tl *tl;
    int64_t c;

    if (!t || p3d_vtime_base(w->job, &c) != 0)
        return;
    tl = &t->tl[r - w->job->ranks];
    for (size_t k = 0; tl->windowed && k < tl->kwin.n; k++) {
        p3d_chrome_mark(w, r->rank, tl->kwin.v[k].s + c,
                        "kernel records on (P3D_GPU_WINDOW)");
        if (tl->kwin.v[k].e < P3D_KWIN_OPEN_END / 2) /* closed */
            p3d_chrome_mark(w, r->rank, tl->kwin.v[k].e + c,
                            "kernel records off");
    }
}

static void p3d_chrome_rank(struct p3d_cw *w, const struct p3d_rank *r)
{
    struct p3d_vrank v;
    struct p3d_map gpu = {0};
    uint32_t last_tid = 0;

    if (p3d_vrank_load(w->job, r, &w->win, &v) != 0)
        return;
    w->n_dropped += p3d_chrome_lanes(&v);
    p3d_flow_gpu_ops(&v, &gpu);
    p3d_chrome_proc(w, r);
    for (size_t i = 0; i < v.n; i++) {
        const struct p3d_vev *e = &v.ev[i];
        if (e->kind == P3D_V_KIND_N)
            continue;
        if (e->tid > last_tid)
            p3d_chrome_thread(w, r->rank, e), last_tid = e->tid;
        p3d_chrome_event(w, r->rank, e);
        p3d_flows_note(&w->flows, e, r->rank, &gpu);
    }
    p3d_chrome_mem(w, &v);
    p3d_vsels(w, r);
    p3d_chrome_kwin(w, r);
    p3d_map_free(&gpu);
    p3d_vrank_free(&v);
}

static void p3d_chrome_head(struct p3d_cw *w)
{
    const struct p3d_job *job = w->job;
    char lay[128] = "unknown";

    if (job->layout.valid)
        p3d_layout_str(&job->layout, lay, sizeof(lay));
    fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":"
          "\"p3d-analyze\",\"job\":", w->f);
    p3d_json_str(w->f, job->job_id, strlen(job->job_id));
    fprintf(w->f, ",\"world_size\":%d,\"layout\":\"%s\",\"start_unix_ns\":"
            "%" PRIu64 ",\"window_ns\":[%" PRIu64 ",%" PRIu64 "],"
            "\"clock\":\"%s\"},\n\"traceEvents\":[", job->world_size, lay,
            job->start_ns, w->win.t0, w->win.t1,
            p3d_vtime(job) ? "host offsets from the time analysis" :
            "CLOCK_REALTIME per host, no cross-host offset correction");
}

static int p3d_chrome_close(struct p3d_cw *w, const char *path)
{
    long size;

    fputs("\n]}\n", w->f);
    size = w->f == stdout ? -1 : ftell(w->f);
    if (w->f != stdout ? fclose(w->f) != 0 : fflush(w->f) != 0)
        return p3d_error("cannot write '%s': %s", path,
                         strerror(errno));
    if (w->n_dropped)
        p3d_warning("--chrome: %" PRIu64 " events nested deeper than %d "
                    "levels or in more than %d lanes were left out",
                    w->n_dropped, P3D_LANE_DEPTH, P3D_LANES);
    if (size > 0 && (uint64_t)size > P3D_CHROME_BIG)
        p3d_warning("--chrome: '%s' is %ld MiB; chrome://tracing fails "
                    "near 256 MB: choose less with --window and --ranks",
                    path, size >> 20);
    return 0;
}

int p3d_chrome_write(const char *path, const struct p3d_job *job,
                     const struct p3d_vsel *sel)
{
    struct p3d_cw w;

    memset(&w, 0, sizeof(w));
    w.job = job;
    if (p3d_vsel_resolve(job, sel, &w.win) != 0)
        return -1;
    w.f = strcmp(path, "-") ? fopen(path, "w") : stdout;
    if (!w.f)
        return p3d_error("cannot write '%s': %s", path,
                         strerror(errno));
    p3d_chrome_head(&w);
    for (int i = 0; i < job->n_ranks; i++)
        if (!job->ranks[i].failed && p3d_vsel_has(sel, job->ranks[i].rank))
            p3d_chrome_rank(&w, &job->ranks[i]);
    w.n_events += p3d_flows_write(w.f, &w.flows, !w.n_events);
    p3d_flows_free(&w.flows);
    return p3d_chrome_close(&w, path);
}
