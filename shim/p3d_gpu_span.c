/*
 * p3d_gpu_span.c - merge kernels and copies into busy spans per stream.
 *
 * A busy GPU runs thousands of tiny kernels a second; one record each
 * would dwarf the NCCL trace.  Consecutive items of one kind on one
 * stream whose gap is below gap_ns are merged into one span; a span is
 * closed when the gap is larger, when it reaches max_ns, when an NCCL
 * kernel runs on the stream (p3d_span_cut) and at flush.  Only the CUPTI
 * buffer thread calls these (under the CUPTI backend's lock).
 */
#include <string.h>

#include "p3d_gpu.h"
#include "p3d_shim.h"

void p3d_span_init(struct p3d_span_set *set, p3d_span_emit_fn emit,
                   void *arg)
{
    memset(set, 0, sizeof(*set));
    set->gap_ns = P3D_SPAN_GAP_NS;
    set->max_ns = P3D_SPAN_MAX_NS;
    set->emit = emit;
    set->arg = arg;
}

static uint32_t span_hash(uint16_t device, uint64_t stream, uint8_t kind)
{
    uint64_t h = (stream * 0x9e3779b97f4a7c15ull) ^
                 ((uint64_t)device << 8 | kind) * 0xc2b2ae3d27d4eb4full;

    return (uint32_t)(h >> 40) % P3D_SPAN_STREAMS;
}

/* The slot of (device, stream, kind), claimed if free; NULL if full. */
static struct p3d_span_open *span_slot(struct p3d_span_set *set,
                                       uint16_t device, uint64_t stream,
                                       uint8_t kind)
{
    uint32_t h = span_hash(device, stream, kind);
    int i;

    for (i = 0; i < P3D_SPAN_STREAMS; i++) {
        struct p3d_span_open *s = &set->slot[(h + i) % P3D_SPAN_STREAMS];

        if (!s->used) {
            s->used = 1;
            s->device = device;
            s->stream = stream;
            s->kind = kind;
            s->n = 0;
            return s;
        }
        if (s->device == device && s->stream == stream && s->kind == kind)
            return s;
    }
    return NULL;
}

static void span_close(struct p3d_span_set *set, struct p3d_span_open *s)
{
    if (s->n)
        set->emit(s, set->arg);
    s->n = 0;
}

void p3d_span_add(struct p3d_span_set *set, uint16_t device, uint64_t stream,
                  uint8_t kind, uint64_t start, uint64_t end)
{
    struct p3d_span_open *s = span_slot(set, device, stream, kind);

    if (end < start)
        end = start;
    if (!s) {
        struct p3d_span_open one = {stream, start, end, end - start, 1,
                                    device, kind, 1};

        set->overflow++;
        set->emit(&one, set->arg);
        return;
    }
    if (s->n && (start > s->end + set->gap_ns || start < s->start ||
                 end - s->start > set->max_ns))
        span_close(set, s);
    if (!s->n) {
        s->start = start;
        s->end = end;
        s->busy = 0;
    }
    if (end > s->end)
        s->end = end;
    s->busy += end - start;
    s->n++;
}

/* The open slot of (device, stream, kind), or NULL; claims nothing. */
static struct p3d_span_open *span_find(struct p3d_span_set *set,
                                       uint16_t device, uint64_t stream,
                                       uint8_t kind)
{
    uint32_t h = span_hash(device, stream, kind);
    int i;

    for (i = 0; i < P3D_SPAN_STREAMS; i++) {
        struct p3d_span_open *s = &set->slot[(h + i) % P3D_SPAN_STREAMS];

        if (!s->used)
            return NULL;       /* slots are never released: end of probe */
        if (s->device == device && s->stream == stream && s->kind == kind)
            return s;
    }
    return NULL;
}

void p3d_span_cut(struct p3d_span_set *set, uint16_t device, uint64_t stream)
{
    static const uint8_t kinds[] = {P3D_SPAN_COMPUTE, P3D_SPAN_COPY};
    size_t k;

    for (k = 0; k < sizeof(kinds); k++) {
        struct p3d_span_open *s = span_find(set, device, stream, kinds[k]);

        if (s && s->n)
            span_close(set, s);
    }
}

void p3d_span_flush(struct p3d_span_set *set)
{
    int i;

    for (i = 0; i < P3D_SPAN_STREAMS; i++)
        if (set->slot[i].used)
            span_close(set, &set->slot[i]);
}

void p3d_span_write(const struct p3d_span_open *s, void *arg)
{
    struct p3d_rec_gpu_span *r;

    (void)arg;
    r = p3d_rec_reserve(P3D_REC_GPU_SPAN, sizeof(*r));
    if (!r)
        return;
    r->kind = s->kind;
    r->device = s->device;
    r->stream = s->stream;
    r->start = s->start;
    r->end = s->end;
    r->busy_ns = s->busy;
    r->n_items = s->n;
    p3d_rec_commit(r);
}
