/*
 * p3d_dump.c - `p3d-analyze --dump FILE`: every record as one text line.
 *
 * The output is a contract (tests and other tools parse it); keep it
 * stable, add fields only at the end of a line.
 *
 *   header magic=P3DTRACE major=1 minor=0 hdr_len=256 flags=0x0001 ...
 *   <name> offset=<byte offset> <field>=<value> ...
 *
 * - The first line is the file header: `header` then every field of
 *   struct p3d_file_hdr in order (reserved omitted).
 * - Then one line per record in file order (chunk by chunk, the chunk
 *   header records included): the record name from P3D_RECORDS ("chunk",
 *   "comm", "op", ...), `offset=` (byte offset of the record in the file),
 *   then the struct's fields by their C names in struct order; the
 *   4-byte record header and reserved fields are omitted.
 * - Numbers are decimal; hashes (comm_hash, parent_hash), pointers
 *   (comm_ptr, stream) and pcs are 0x%016llx; flags are 0x%02x (file header
 *   0x%04x); op is the P3D_OPS text ("AllReduce"), how is the
 *   P3D_COMM_HOWS / P3D_COMM_ENDS text, mem kind the P3D_MEM_KINDS text
 *   (numbers when out of range).
 * - Strings are double-quoted with \" \\ \n \t \0 and \xNN escapes
 *   (cmdline/env text keeps its NUL separators as \0).
 * - An unknown optional record prints `unknown offset=N tag=0x8abc len=N`.
 * - A stop prints the reader's error on stderr; exit status 2.
 */
#include <inttypes.h>
#include <string.h>

#include "p3d_dump.h"
#include "p3d_ops.h"
#include "p3d_reader.h"
#include "p3d_util.h"

#define HX "0x%016" PRIx64

static const char *const p3d_how_names[] = {
#define P3D_X_HOWN(name, text) text,
    P3D_COMM_HOWS(P3D_X_HOWN)
#undef P3D_X_HOWN
};
static const char *const p3d_end_names[] = {
#define P3D_X_ENDN(name, text) text,
    P3D_COMM_ENDS(P3D_X_ENDN)
#undef P3D_X_ENDN
};
static const char *const p3d_mem_names[] = {
#define P3D_X_MEMN(name, text) text,
    P3D_MEM_KINDS(P3D_X_MEMN)
#undef P3D_X_MEMN
};

static void p3d_enum(FILE *f, const char *key, unsigned v,
                     const char *const *names, unsigned n)
{
    if (v < n)
        fprintf(f, " %s=%s", key, names[v]);
    else
        fprintf(f, " %s=%u", key, v);
}

/* Text after a fixed struct, bounded by the record length. */
static void p3d_tail_str(FILE *f, const char *key,
                         const struct p3d_rec_hdr *r, size_t fixed)
{
    const char *s = (const char *)r + fixed;

    fprintf(f, " %s=", key);
    p3d_text_str(f, s, strnlen(s, r->len - fixed));
}

static void p3d_dump_hdr(FILE *f, const struct p3d_file_hdr *h)
{
    char s[P3D_JOB_ID_LEN + 1];

    fprintf(f, "header magic=P3DTRACE major=%u minor=%u hdr_len=%u "
            "flags=0x%04x chunk_bytes=%u data_off=%u rank=%d world_size=%d "
            "local_rank=%d local_world_size=%d pid=%" PRIu64 " ppid=%" PRIu64
            " start_realtime_ns=%" PRIu64 " start_mono_ns=%" PRIu64
            " end_mono_ns=%" PRIu64 " n_records=%" PRIu64
            " dropped_records=%" PRIu64, h->major, h->minor, h->hdr_len,
            h->flags, h->chunk_bytes, h->data_off, h->rank, h->world_size,
            h->local_rank, h->local_world_size, h->pid, h->ppid,
            h->start_realtime_ns, h->start_mono_ns, h->end_mono_ns,
            h->n_records, h->dropped_records);
    p3d_fixed_str(s, h->job_id, P3D_JOB_ID_LEN);
    fputs(" job_id=", f);
    p3d_text_str(f, s, strlen(s));
    p3d_fixed_str(s, h->hostname, P3D_HOST_LEN);
    fputs(" hostname=", f);
    p3d_text_str(f, s, strlen(s));
    fprintf(f, " nccl_version_runtime=%u nccl_version_compile=%u "
            "clock_uncertainty_ns=%" PRIu64 "\n", h->nccl_version_runtime,
            h->nccl_version_compile, h->clock_uncertainty_ns);
}

/*
 * One formatter per record kind: the fields after `offset=`.  Each takes
 * the record as it was validated (at least its struct's size).
 */
static void p3d_dump_op(FILE *f, const void *rec)
{
    const struct p3d_rec_op *o = rec;

    p3d_enum(f, "op", o->op, p3d_op_name, P3D_OP_COUNT);
    fprintf(f, " dtype=%u redop=%u flags=0x%02x op_id=%" PRIu64
            " comm_hash=" HX " seq=%" PRIu64 " count=%" PRIu64
            " bytes=%" PRIu64 " stream=" HX " t_enter=%" PRIu64
            " t_exit=%" PRIu64 " peer=%d ret=%d tid=%u group_id=%u "
            "stack_id=%u comm_rank=%d", o->dtype, o->redop, o->flags,
            o->op_id, o->comm_hash, o->seq, o->count, o->bytes, o->stream,
            o->t_enter, o->t_exit, o->peer, o->ret, o->tid, o->group_id,
            o->stack_id, o->comm_rank);
}

static void p3d_dump_comm(FILE *f, const void *rec)
{
    const struct p3d_rec_comm *c = rec;

    p3d_enum(f, "how", c->how, p3d_how_names, P3D_COMM_HOW_COUNT);
    fprintf(f, " flags=0x%02x comm_hash=" HX " parent_hash=" HX
            " comm_ptr=" HX " t_enter=%" PRIu64 " t_exit=%" PRIu64
            " nranks=%d rank=%d color=%d key=%d split_count=%d device=%d"
            " ret=%d tid=%u", c->flags, c->comm_hash, c->parent_hash,
            c->comm_ptr, c->t_enter, c->t_exit, c->nranks, c->rank, c->color,
            c->key, c->split_count, c->device, c->ret, c->tid);
}

static void p3d_dump_chunk(FILE *f, const void *rec)
{
    const struct p3d_chunk_hdr *c = rec;

    fprintf(f, " tid=%u index=%u", c->tid, c->index);
}

static void p3d_dump_comm_info(FILE *f, const void *rec)
{
    const struct p3d_rec_comm_info *c = rec;

    fprintf(f, " comm_hash=" HX " t=%" PRIu64 " nranks=%d rank=%d device=%d",
            c->comm_hash, c->t, c->nranks, c->rank, c->device);
}

static void p3d_dump_comm_end(FILE *f, const void *rec)
{
    const struct p3d_rec_comm_end *c = rec;

    p3d_enum(f, "how", c->how, p3d_end_names, P3D_END_COUNT);
    fprintf(f, " comm_hash=" HX " t_enter=%" PRIu64 " t_exit=%" PRIu64
            " ret=%d tid=%u last_async_error=%d pending_ops=%u",
            c->comm_hash, c->t_enter, c->t_exit, c->ret, c->tid,
            c->last_async_error, c->pending_ops);
}

static void p3d_dump_group(FILE *f, const void *rec)
{
    const struct p3d_rec_group *g = rec;

    fprintf(f, " is_end=%u depth=%u t_enter=%" PRIu64 " t_exit=%" PRIu64
            " group_id=%u ret=%d tid=%u n_ops=%u", g->is_end, g->depth,
            g->t_enter, g->t_exit, g->group_id, g->ret, g->tid, g->n_ops);
}

/* cmdline, env and note: a byte count and the bytes. */
static void p3d_dump_str(FILE *f, const void *rec)
{
    const struct p3d_rec_str *s = rec;
    size_t n = s->n_bytes;

    if (n > s->h.len - sizeof(*s))
        n = s->h.len - sizeof(*s);
    fprintf(f, " n_bytes=%u text=", s->n_bytes);
    p3d_text_str(f, s->text, n);
}

static void p3d_dump_gpu_op(FILE *f, const void *rec)
{
    const struct p3d_rec_gpu_op *g = rec;

    fprintf(f, " source=%u algo=%u proto=%u nchannels=%u op_id=%" PRIu64
            " gpu_start=%" PRIu64 " gpu_end=%" PRIu64, g->source, g->algo,
            g->proto, g->nchannels, g->op_id, g->gpu_start, g->gpu_end);
}

static void p3d_dump_gpu_span(FILE *f, const void *rec)
{
    const struct p3d_rec_gpu_span *g = rec;

    fprintf(f, " kind=%u device=%u stream=" HX " start=%" PRIu64 " end=%"
            PRIu64 " busy_ns=%" PRIu64 " n_items=%u", g->kind, g->device,
            g->stream, g->start, g->end, g->busy_ns, g->n_items);
}

static void p3d_dump_clock_sync(FILE *f, const void *rec)
{
    const struct p3d_rec_clock_sync *c = rec;

    fprintf(f, " device=%d gpu_ns=%" PRIu64 " host_mono_ns=%" PRIu64
            " uncertainty_ns=%" PRIu64, c->device, c->gpu_ns,
            c->host_mono_ns, c->uncertainty_ns);
}

static void p3d_dump_mem(FILE *f, const void *rec)
{
    const struct p3d_rec_mem *m = rec;

    p3d_enum(f, "kind", m->kind, p3d_mem_names, P3D_MEM_KIND_COUNT);
    fprintf(f, " device=%u t=%" PRIu64 " current=%" PRIu64 " peak=%" PRIu64,
            m->device, m->t, m->current, m->peak);
}

static void p3d_dump_stack(FILE *f, const void *rec)
{
    const struct p3d_rec_stack *s = rec;
    uint32_t max = (s->h.len - sizeof(*s)) / 8;

    fprintf(f, " stack_id=%u n_frames=%u pc=", s->stack_id, s->n_frames);
    for (uint32_t i = 0; i < s->n_frames && i < max; i++)
        fprintf(f, "%s" HX, i ? "," : "", s->pc[i]);
}

static void p3d_dump_module(FILE *f, const void *rec)
{
    const struct p3d_rec_module *m = rec;

    fprintf(f, " base=" HX " size=%" PRIu64, m->base, m->size);
}

static void p3d_dump_hang(FILE *f, const void *rec)
{
    const struct p3d_rec_hang *h = rec;

    fprintf(f, " n_pending=%u t=%" PRIu64 " op_id=%" PRIu64 " comm_hash=" HX
            " seq=%" PRIu64 " pending_ns=%" PRIu64 " stack_id=%u peer=%d",
            h->n_pending, h->t, h->op_id, h->comm_hash, h->seq,
            h->pending_ns, h->stack_id, h->peer);
    p3d_enum(f, "op", h->op, p3d_op_name, P3D_OP_COUNT);
}

static void p3d_dump_mark(FILE *f, const void *rec)
{
    const struct p3d_rec_mark *m = rec;

    fprintf(f, " t=%" PRIu64 " value=%" PRIu64, m->t, m->value);
}

static void p3d_dump_window(FILE *f, const void *rec)
{
    const struct p3d_rec_gpu_window *w = rec;

    fprintf(f, " on=%u t=%" PRIu64, w->on, w->t);
}

static void p3d_dump_summary(FILE *f, const void *rec)
{
    const struct p3d_rec_summary *s = rec;

    fprintf(f, " t=%" PRIu64 " async_error_polls=%" PRIu64 " ops_recorded=%"
            PRIu64 " dropped=%" PRIu64 " peak=%" PRIu64 ",%" PRIu64
            ",%" PRIu64 ",%" PRIu64, s->t, s->async_error_polls,
            s->ops_recorded, s->dropped, s->peak[0], s->peak[1], s->peak[2],
            s->peak[3]);
}

/*
 * A record kind without a row here prints its name and offset only.
 * Records ending in a string name it: `tail` (bounded by the length).
 */
#define P3D_DUMPER(tag, fn, type, tail) {tag, fn, tail, sizeof(struct type)}
static const struct {
    unsigned tag;
    void (*fields)(FILE *f, const void *rec);
    const char *tail;
    size_t fixed;
} p3d_dumpers[] = {
    P3D_DUMPER(P3D_REC_CHUNK, p3d_dump_chunk, p3d_chunk_hdr, NULL),
    P3D_DUMPER(P3D_REC_COMM, p3d_dump_comm, p3d_rec_comm, "name"),
    P3D_DUMPER(P3D_REC_COMM_INFO, p3d_dump_comm_info, p3d_rec_comm_info, NULL),
    P3D_DUMPER(P3D_REC_COMM_END, p3d_dump_comm_end, p3d_rec_comm_end, NULL),
    P3D_DUMPER(P3D_REC_OP, p3d_dump_op, p3d_rec_op, NULL),
    P3D_DUMPER(P3D_REC_GROUP, p3d_dump_group, p3d_rec_group, NULL),
    P3D_DUMPER(P3D_REC_CMDLINE, p3d_dump_str, p3d_rec_str, NULL),
    P3D_DUMPER(P3D_REC_ENV, p3d_dump_str, p3d_rec_str, NULL),
    P3D_DUMPER(P3D_REC_GPU_OP, p3d_dump_gpu_op, p3d_rec_gpu_op, NULL),
    P3D_DUMPER(P3D_REC_GPU_SPAN, p3d_dump_gpu_span, p3d_rec_gpu_span, NULL),
    P3D_DUMPER(P3D_REC_CLOCK_SYNC, p3d_dump_clock_sync, p3d_rec_clock_sync,
               NULL),
    P3D_DUMPER(P3D_REC_MEM, p3d_dump_mem, p3d_rec_mem, NULL),
    P3D_DUMPER(P3D_REC_STACK, p3d_dump_stack, p3d_rec_stack, NULL),
    P3D_DUMPER(P3D_REC_MODULE, p3d_dump_module, p3d_rec_module, "path"),
    P3D_DUMPER(P3D_REC_HANG, p3d_dump_hang, p3d_rec_hang, NULL),
    P3D_DUMPER(P3D_REC_MARK, p3d_dump_mark, p3d_rec_mark, "name"),
    P3D_DUMPER(P3D_REC_SUMMARY, p3d_dump_summary, p3d_rec_summary, NULL),
    P3D_DUMPER(P3D_REC_NOTE, p3d_dump_str, p3d_rec_str, NULL),
    P3D_DUMPER(P3D_REC_GPU_WINDOW, p3d_dump_window, p3d_rec_gpu_window, NULL),
};
#undef P3D_DUMPER

static void p3d_dump_rec(FILE *f, const struct p3d_reader *rd,
                         const struct p3d_rec_hdr *r)
{
    const char *name = p3d_rec_name(r->tag);
    size_t off = p3d_reader_offset(rd, r);

    if (!name) {
        fprintf(f, "unknown offset=%zu tag=0x%04x len=%u\n", off, r->tag,
                r->len);
        return;
    }
    fprintf(f, "%s offset=%zu", name, off);
    for (size_t k = 0; k < sizeof(p3d_dumpers) / sizeof(p3d_dumpers[0]); k++)
        if (p3d_dumpers[k].tag == r->tag) {
            p3d_dumpers[k].fields(f, r);
            if (p3d_dumpers[k].tail)
                p3d_tail_str(f, p3d_dumpers[k].tail, r, p3d_dumpers[k].fixed);
        }
    fputc('\n', f);
}

static void p3d_dump_one(void *ctx, const struct p3d_reader *rd,
                         const struct p3d_rec_hdr *r)
{
    p3d_dump_rec(ctx, rd, r);
}

int p3d_dump_reader(FILE *f, struct p3d_reader *rd)
{
    int ret = 0, n;

    rd->keep_unknown = 1;
    p3d_dump_hdr(f, &rd->hdr);
    n = p3d_reader_walk(rd, p3d_dump_one, f);
    if (n < 0)
        ret = p3d_error("%s", rd->msg);
    else if (rd->truncated)
        p3d_warning("'%s': truncated tail; dumped %" PRIu64 " records",
                    rd->path, rd->n_records);
    return ret;
}

int p3d_dump_file(FILE *f, const char *path)
{
    struct p3d_reader rd;
    int ret = p3d_reader_open(&rd, path);

    if (ret != 0)
        return p3d_error("%s", rd.msg);
    ret = p3d_dump_reader(f, &rd);
    p3d_reader_close(&rd);
    return ret;
}
