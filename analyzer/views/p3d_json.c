/*
 * p3d_json.c - the report as JSON, schema "p3d-analyze/1" (README.md,
 * "JSON").
 * Fields may be added, never renamed.  "label" is the most specific label
 * of the member set, "labels" all of them (most specific first),
 * "used_as" the one usage shows the communicator serves as (e.g. label
 * "PP", used_as "EMB" for the embedding group at PP = 2).  Added here:
 * communicators[].used_as, .size_hist (calls per power-of-two message
 * size: key 2^b counts sizes in [2^(b-1), 2^b)), job.id,
 * job.missing_ranks, layout.explained/total/contradicted,
 * communicators[].by_op, .per_rank, .role, .missing_members,
 * ranks[].file/records/ops/closed/truncated, matching.  Later issues fill
 * steps, bubble, verdict, hang (null until then).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_bucket.h"
#include "p3d_bw.h"
#include "p3d_hang.h"
#include "p3d_findings.h"
#include "p3d_json.h"
#include "p3d_label.h"
#include "p3d_match.h"
#include "p3d_names.h"
#include "p3d_time.h"
#include "p3d_util.h"

static void p3d_js(FILE *f, const char *s)
{
    p3d_json_str(f, s, strlen(s));
}

static void p3d_json_cmdline(FILE *f, const struct p3d_job *job)
{
    for (int i = 0; i < job->n_ranks; i++) {
        const struct p3d_rank *r = &job->ranks[i];
        if (r->failed || !r->cmdline)
            continue;
        char *s = p3d_xmalloc(r->cmdline_len + 1);
        size_t n = r->cmdline_len;
        memcpy(s, r->cmdline, n);
        while (n && !s[n - 1])
            n--;
        for (size_t k = 0; k < n; k++)
            if (!s[k])
                s[k] = ' ';
        p3d_json_str(f, s, n);
        free(s);
        return;
    }
    fputs("null", f);
}

static void p3d_json_hosts(FILE *f, const struct p3d_job *job)
{
    fputc('[', f);
    for (int i = 0, n = 0; i < job->n_ranks; i++) {
        char h[P3D_HOST_LEN + 1];
        if (!p3d_job_host_first(job, i))
            continue;
        p3d_fixed_str(h, job->ranks[i].hdr.hostname, P3D_HOST_LEN);
        fputs(n++ ? ", " : "", f);
        p3d_js(f, h);
    }
    fputc(']', f);
}

static void p3d_json_job(FILE *f, const struct p3d_job *job)
{
    int found = p3d_job_ranks_found(job), first = 1;

    fprintf(f, "  \"job\": {\"id\": ");
    p3d_js(f, job->job_id);
    fprintf(f, ", \"world_size\": %d, \"ranks_found\": %d, "
            "\"missing_ranks\": [", job->world_size, found);
    for (int r = 0; r < job->world_size; r++) {
        const struct p3d_rank *rk = p3d_job_rank(job, r);
        if (!rk || rk->failed) {
            fprintf(f, "%s%d", first ? "" : ", ", r);
            first = 0;
        }
    }
    fputs("], \"hosts\": ", f);
    p3d_json_hosts(f, job);
    fputs(", \"cmdline\": ", f);
    p3d_json_cmdline(f, job);
    fputs("},\n", f);
}

static void p3d_json_layout(FILE *f, const struct p3d_job *job)
{
    const struct p3d_layout *l = &job->layout;

    if (!l->valid) {
        fputs("  \"layout\": null,\n", f);
        return;
    }
    fprintf(f, "  \"layout\": {\"tp\": %d, \"pp\": %d, \"dp\": %d, "
            "\"cp\": %d, \"ep\": %d, \"etp\": %d, \"order\": ",
            l->size[P3D_AX_TP], l->size[P3D_AX_PP], l->size[P3D_AX_DP],
            l->size[P3D_AX_CP], l->ep, p3d_layout_etp(l));
    p3d_js(f, l->order);
    fprintf(f, ", \"dp_shard\": %d", l->dp_shard > 0 ? l->dp_shard : 0);
    fputs(", \"source\": ", f);
    p3d_js(f, l->source);
    fprintf(f, ", \"explained\": %d, \"total\": %d, \"contradicted\": %s",
            l->explained, l->total, l->contradicted ? "true" : "false");
    fprintf(f, ", \"confidence\": \"%s\", \"confidence_why\": ",
            p3d_conf_name[l->confidence]);
    p3d_js(f, l->conf_why);
    fputs(", \"alternatives\": [", f);
    for (int i = 0; i < l->n_alts; i++) {
        fputs(i ? ", {\"layout\": " : "{\"layout\": ", f);
        p3d_js(f, l->alts[i].text);
        fputs(", \"why\": ", f);
        p3d_js(f, l->alts[i].why);
        fputc('}', f);
    }
    fputs("]},\n", f);
}

static void p3d_json_byop(FILE *f, const struct p3d_opstat *st)
{
    int n = 0;

    fputs("{", f);
    for (int k = 0; k < P3D_OP_COUNT; k++) {
        if (!st[k].calls)
            continue;
        fprintf(f, "%s\"%s\": {\"calls\": %" PRIu64 ", \"bytes\": %" PRIu64,
                n++ ? ", " : "", p3d_op_name[k], st[k].calls, st[k].bytes);
        if (st[k].gpu_calls)
            fprintf(f, ", \"gpu_time_ms\": %.6f", (double)st[k].gpu_ns / 1e6);
        fputc('}', f);
    }
    fputc('}', f);
}

static void p3d_json_gpu(FILE *f, const struct p3d_gcomm *g)
{
    double ns = 0, bus = 0;

    for (int k = 0; k < P3D_OP_COUNT; k++) {
        ns += (double)g->st[k].gpu_ns;
        bus += p3d_bw_bytes(k, g->size, (double)g->st[k].gpu_bytes) *
               p3d_bw_factor(k, g->size);
    }
    if (ns > 0)
        fprintf(f, ", \"gpu_time_ms\": %.6f, \"busbw_gbps\": %.4f", ns / 1e6,
                bus / ns);
    else
        fputs(", \"gpu_time_ms\": null, \"busbw_gbps\": null", f);
}

/*
 * Every rank's communicators as (rank index, comm index) entries, indexed
 * by the global communicator: one walk over them all instead of one per
 * communicator (at 16k ranks that walk took seconds).
 */
struct p3d_json_idx {
    int *rank, *comm;
    struct p3d_bucket of; /* entries of each global communicator */
};

static void p3d_json_index(const struct p3d_job *job, struct p3d_json_idx *x)
{
    size_t n = 0;
    int *gi;

    for (int i = 0; i < job->n_ranks; i++)
        n += (size_t)job->ranks[i].n_comms;
    x->rank = p3d_xcalloc(n + 1, sizeof(*x->rank));
    x->comm = p3d_xcalloc(n + 1, sizeof(*x->comm));
    gi = p3d_xcalloc(n + 1, sizeof(*gi));
    n = 0;
    for (int i = 0; i < job->n_ranks; i++)
        for (int k = 0; k < job->ranks[i].n_comms; k++, n++) {
            x->rank[n] = i;
            x->comm[n] = k;
            gi[n] = job->ranks[i].comms[k].gcomm;
        }
    p3d_bucket_make(&x->of, gi, n, job->n_comms);
    free(gi);
}

static void p3d_json_per_rank(FILE *f, const struct p3d_job *job,
                              const struct p3d_json_idx *x, int gi)
{
    int n_e;
    const int *e = p3d_bucket_of(&x->of, gi, &n_e);

    fputs(", \"per_rank\": {", f);
    for (int i = 0; i < n_e; i++) {
        const struct p3d_rank *r = &job->ranks[x->rank[e[i]]];
        const struct p3d_rcomm *rc = &r->comms[x->comm[e[i]]];
        uint64_t calls = 0, bytes = 0;
        for (int o = 0; o < P3D_OP_COUNT; o++) {
            calls += rc->st[o].calls;
            bytes += rc->st[o].bytes;
        }
        fprintf(f, "%s\"%d\": {\"calls\": %" PRIu64 ", \"bytes\": %"
                PRIu64 "}", i ? ", " : "", r->rank, calls, bytes);
    }
    fputc('}', f);
}

/* Message sizes: {"<2^b>": calls with 2^(b-1) <= bytes < 2^b}, "1": 0 B. */
static void p3d_json_hist(FILE *f, const uint64_t *h)
{
    int n = 0;

    fputs(", \"size_hist\": {", f);
    for (int b = 0; b < P3D_HIST_N; b++)
        if (h[b])
            fprintf(f, "%s\"%llu\": %" PRIu64, n++ ? ", " : "",
                    1ull << b, h[b]);
    fputc('}', f);
}

static void p3d_json_comm(FILE *f, const struct p3d_job *job,
                          const struct p3d_json_idx *x, int gi)
{
    const struct p3d_gcomm *g = &job->comms[gi];
    uint64_t calls = 0, bytes = 0;
    int n = 0;

    for (int k = 0; k < P3D_OP_COUNT; k++) {
        calls += g->st[k].calls;
        bytes += g->st[k].bytes;
    }
    fprintf(f, "    {\"id\": \"0x%016" PRIx64 "\", \"label\": \"%s\", "
            "\"used_as\": \"%s\", \"labels\": [", g->hash,
            p3d_label_name[g->label_first], p3d_label_name[g->label]);
    for (int l = 0; l < P3D_LBL_COUNT; l++)
        if (g->labels & (1u << l))
            fprintf(f, "%s\"%s\"", n++ ? ", " : "", p3d_label_name[l]);
    fprintf(f, "], \"size\": %d, \"members\": [", g->size);
    for (int i = 0; i < g->n_members; i++)
        fprintf(f, "%s%d", i ? ", " : "", g->members[i]);
    fprintf(f, "], \"missing_members\": %d, \"ops\": %" PRIu64 ", \"bytes\": %"
            PRIu64, g->n_missing + g->inferred_members, calls, bytes);
    p3d_json_gpu(f, g);
    if (g->gpu_placed) /* only then: the JSON of other jobs stays as it was */
        fputs(", \"gpu_placed_by_analysis\": true", f);
    fputs(", \"role\": ", f);
    if (g->role)
        p3d_js(f, g->role);
    else
        fputs("null", f);
    fputs(", \"by_op\": ", f);
    p3d_json_byop(f, g->st);
    p3d_json_hist(f, g->hist);
    p3d_json_per_rank(f, job, x, gi);
    fprintf(f, "}%s\n", gi + 1 < job->n_comms ? "," : "");
}

static void p3d_json_ranks(FILE *f, const struct p3d_job *job)
{
    fputs("  \"ranks\": [\n", f);
    for (int i = 0; i < job->n_ranks; i++) {
        const struct p3d_rank *r = &job->ranks[i];
        char h[P3D_HOST_LEN + 1];
        p3d_fixed_str(h, r->hdr.hostname, P3D_HOST_LEN);
        fprintf(f, "    {\"rank\": %d, \"host\": ", r->rank);
        p3d_js(f, h);
        fputs(", \"file\": ", f);
        p3d_js(f, r->path);
        fprintf(f, ", \"readable\": %s, \"records\": %" PRIu64 ", \"ops\": %"
                PRIu64 ", \"closed\": %s, \"truncated\": %s",
                r->failed ? "false" : "true", r->n_records, r->n_ops,
                r->closed ? "true" : "false", r->truncated ? "true" : "false");
        if (p3d_lost_records(r)) /* only then: the rest read as before */
            fprintf(f, ", \"dropped_records\": %" PRIu64,
                    r->hdr.dropped_records);
        p3d_time_json_rank(f, job, i); /* time fields (p3d_time_json.c) */
        fprintf(f, "}%s\n", i + 1 < job->n_ranks ? "," : "");
    }
    fputs("  ],\n", f);
}

static void p3d_json_match(FILE *f, const struct p3d_job *job)
{
    const struct p3d_match_res *m = job->match;

    if (!m) {
        fputs("  \"matching\": null,\n", f);
        return;
    }
    fprintf(f, "  \"matching\": {\"collectives\": %" PRIu64 ", \"p2p\": %"
            PRIu64 ", \"mismatch_count\": %" PRIu64 ", \"unmatched_p2p\": %"
            PRIu64 ", \"members_behind\": %" PRIu64 ", \"mismatches\": [",
            m->n_coll, m->n_p2p, m->n_mismatch, m->n_unmatched_p2p,
            m->n_short);
    for (int i = 0; i < m->n_kept; i++) {
        const struct p3d_mismatch *x = &m->mm[i];

        struct p3d_json_mm j = {x->comm, NULL, x->op, x->seq, x->field,
                                {x->rank_a, x->rank_b}, {x->va, x->vb}};
        fputs(i ? ", " : "", f);
        p3d_json_mm_write(f, &j, "rank_a", "value_a", "rank_b", "value_b");
    }
    fputs("]},\n", f);
}

/*
 * A mismatch value: "key": "bf16" (with "key_raw": 9) for the op kind,
 * datatype and reduction op, "key": 1024 for counts, roots and tallies.
 */
static void p3d_json_mm_value(FILE *f, const char *key, int field, int64_t v)
{
    char buf[32];

    if (p3d_mm_named(field))
        fprintf(f, "\"%s\": \"%s\", \"%s_raw\": %" PRId64, key,
                p3d_mm_value(field, v, buf, sizeof(buf)), key, v);
    else
        fprintf(f, "\"%s\": %" PRId64, key, v);
}

void p3d_json_mm_write(FILE *f, const struct p3d_json_mm *m,
                       const char *rank_a, const char *value_a,
                       const char *rank_b, const char *value_b)
{
    fprintf(f, "{\"comm\": \"0x%016" PRIx64 "\", ", m->comm);
    if (m->label)
        fprintf(f, "\"label\": \"%s\", ", m->label);
    fprintf(f, "\"op\": \"%s\", \"seq\": %" PRIu64 ", \"field\": \"%s\", "
            "\"%s\": %d, ", m->op >= 0 && m->op < P3D_OP_COUNT
            ? p3d_op_name[m->op] : "?", m->seq, p3d_mm_field_name[m->field],
            rank_a, m->rank[0]);
    p3d_json_mm_value(f, value_a, m->field, m->v[0]);
    fprintf(f, ", \"%s\": %d, ", rank_b, m->rank[1]);
    p3d_json_mm_value(f, value_b, m->field, m->v[1]);
    fputs("}", f);
}

/* "findings": what the text report and the HTML list, most severe
 * first: severity, group (null: the job), the figure with its unit, the
 * finding in words and the next step. */
static void p3d_json_findings(FILE *f, const struct p3d_job *job)
{
    const struct p3d_findings *fs = p3d_findings_of(job);

    fputs("  \"findings\": [", f);
    for (int i = 0; fs && i < fs->n; i++) {
        const struct p3d_finding *x = &fs->f[i];
        fprintf(f, "%s\n    {\"severity\": \"%s\", \"group\": ", i ? "," : "",
                p3d_sev_name[x->sev]);
        if (x->label >= 0 && x->label < P3D_LBL_COUNT)
            fprintf(f, "\"%s\"", p3d_label_name[x->label]);
        else
            fputs("null", f);
        fprintf(f, ", \"value\": %.6g, \"unit\": ", x->value);
        p3d_json_str(f, x->unit, strlen(x->unit));
        fputs(", \"what\": ", f);
        p3d_json_str(f, x->what, strlen(x->what));
        fputs(", \"next\": ", f);
        p3d_json_str(f, x->next, strlen(x->next));
        fputc('}', f);
    }
    fputs(fs && fs->n ? "\n  ]\n" : "]\n", f);
}

void p3d_json_write(FILE *f, const struct p3d_job *job)
{
    struct p3d_json_idx x;

    fputs("{\n  \"schema\": \"p3d-analyze/1\",\n", f);
    p3d_json_job(f, job);
    p3d_json_layout(f, job);
    fputs("  \"communicators\": [\n", f);
    p3d_json_index(job, &x);
    for (int i = 0; i < job->n_comms; i++)
        p3d_json_comm(f, job, &x, i);
    p3d_bucket_free(&x.of);
    P3D_FREE_ALL(x.rank, x.comm);
    fputs("  ],\n", f);
    p3d_json_ranks(f, job);
    p3d_json_match(f, job);
    p3d_time_json(f, job); /* steps, bubble, verdict, clock, wait */
    fputs("  \"hang\": ", f);
    p3d_hang_json(f, job);  /* issue 7 */
    fputs(",\n", f);
    p3d_json_findings(f, job);
    fputs("}\n", f);
}
