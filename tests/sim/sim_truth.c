/*
 * sim_truth.c - writes truth.json, the simulated job's ground truth.
 *
 * Every rank kept a MAP_SHARED binary record of what it did (struct
 * sim_truth); after the job ended, however it ended, the driver reads them
 * and writes one JSON file next to the traces.  The schema is documented
 * in tests/sim/README.md ("p3d-sim-truth/1").
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim.h"
#include "sim_driver.h"

/* Canonical labels, most specific first; mask of axes, or special. */
#define SIM_LBL_EMB 0x100u
#define SIM_LBL_EP 0x200u
#define SIM_LBL_EPDP 0x400u
#define SIM_LBL_ETP 0x800u
#define SIM_LBL_ALL 0x1fu
static const struct { const char *name; unsigned mask; } sim_labels[] = {
    { "TP", 1u << SA_TP }, { "CP", 1u << SA_CP }, { "EP", SIM_LBL_EP },
    { "DP", 1u << SA_DP },
    { "PP", 1u << SA_PP }, { "DP-CP", (1u << SA_DP) | (1u << SA_CP) },
    { "TP-CP", (1u << SA_TP) | (1u << SA_CP) },
    { "MP", (1u << SA_TP) | (1u << SA_PP) },
    { "TP-DP-CP", (1u << SA_TP) | (1u << SA_DP) | (1u << SA_CP) },
    { "EXPERT-DP", SIM_LBL_EPDP }, { "EMB", SIM_LBL_EMB },
    { "WORLD", SIM_LBL_ALL }, { "EXPERT-TP", SIM_LBL_ETP },
};
#define SIM_N_LABELS (sizeof(sim_labels) / sizeof(sim_labels[0]))

static struct sim_truth *sim_truth_read(const struct sim_run *run, int r)
{
    char path[PATH_MAX + 32];
    struct sim_truth *t = NULL;
    struct stat st;
    int fd;

    snprintf(path, sizeof(path), "%s/truth/rank-%05d.bin", run->scratch, r);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    /* A rank creates its file empty, then sizes it (rank_truth_map):
     * mapping it in between and reading would be a SIGBUS (seen under
     * load in CI), so a file not yet full size reads as not there yet. */
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(*t)) {
        close(fd);
        return NULL;
    }
    t = mmap(NULL, sizeof(*t), PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (t == MAP_FAILED)
        return NULL;
    if (t->magic != SIM_TRUTH_MAGIC) { /* sized, not yet filled in */
        munmap(t, sizeof(*t));
        return NULL;
    }
    return t;
}

int sim_truth_progress(const struct sim_run *run, int r, uint64_t *issued,
                       int *stopped)
{
    struct sim_truth *t = sim_truth_read(run, r);

    if (!t)
        return -1;
    *issued = __atomic_load_n(&t->issued_total, __ATOMIC_RELAXED);
    *stopped = __atomic_load_n(&t->stopped, __ATOMIC_RELAXED);
    munmap(t, sizeof(*t));
    return 0;
}

/* Members of rank's group under a label's axis mask. */
static int sim_label_members(const struct sim_cfg *c, unsigned mask,
                             int rank, int *out)
{
    struct sim_cfg tmp;
    int n = 0, co[SA_COUNT];

    if (mask == SIM_LBL_EMB)
        return sim_members(c, SG_EMB, rank, out);
    if (mask == SIM_LBL_EP || mask == SIM_LBL_EPDP)
        return c->ep > 1 ? sim_members(c, mask == SIM_LBL_EP ? SG_EP : SG_EPDP,
                                       rank, out)
                         : 0;
    if (mask == SIM_LBL_ETP) /* a group of its own only when folded */
        return sim_etp_folded(c) ? sim_members(c, SG_ETP, rank, out) : 0;
    if (mask == SIM_LBL_ALL)
        return sim_members(c, SG_WORLD, rank, out);
    sim_coords(c, rank, co);
    tmp = *c;
    for (int r = 0; r < c->world; r++) {
        int cr[SA_COUNT], same = 1;

        sim_coords(&tmp, r, cr);
        for (int a = 0; a < SA_COUNT; a++)
            if (!(mask & (1u << a)) && cr[a] != co[a])
                same = 0;
        if (same)
            out[n++] = r;
    }
    return n;
}

static void sim_json_ints(FILE *f, const int *v, int n)
{
    fputc('[', f);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%d", i ? "," : "", v[i]);
    fputc(']', f);
}

static void sim_json_labels(FILE *f, const struct sim_cfg *c, const int *mem,
                            int n)
{
    static int other[SIM_MAX_RANKS];
    const char *hit[SIM_N_LABELS];
    int k = 0;

    for (size_t l = 0; l < SIM_N_LABELS; l++) {
        int m = sim_label_members(c, sim_labels[l].mask, mem[0], other);

        if (m == n && memcmp(other, mem, (size_t)n * sizeof(int)) == 0)
            hit[k++] = sim_labels[l].name;
    }
    fprintf(f, "\"label\":\"%s\",\"labels\":[", k ? hit[0] : "OTHER");
    for (int i = 0; i < k; i++)
        fprintf(f, "%s\"%s\"", i ? "," : "", hit[i]);
    fputc(']', f);
}

static const char *sim_grp_label(int g)
{
    static const char *l[SG_COUNT] = { "WORLD", "DP-CP", "CP", "MP", "TP",
                                       "PP", "EMB", "WORLD", "EP",
                                       "EXPERT-DP", "DP-SHARD",
                                       "DP-REPLICATE", "EXPERT-TP" };

    return l[g];
}

/* Every group instance some rank created a communicator for. */
static void sim_json_groups(FILE *f, const struct sim_cfg *c,
                            struct sim_truth **t)
{
    static int mem[SIM_MAX_RANKS];
    int first = 1;

    fprintf(f, "\"groups\":[");
    for (int g = 0; g < SG_COUNT; g++) {
        for (int r = 0; r < c->world; r++) {
            int n = sim_members(c, g, r, mem), any = 0;

            if (mem[0] != r)
                continue;
            for (int i = 0; i < n; i++)
                any |= t[mem[i]] && t[mem[i]]->created[g];
            if (!any)
                continue;
            fprintf(f, "%s\n  {\"id\":\"%s-%d\",\"group\":\"%s\","
                       "\"megatron\":\"%s\",\"role\":\"%s\",\"size\":%d,"
                       "\"members\":",
                    first ? "" : ",", sim_grp_short(g), mem[0],
                    sim_grp_short(g), sim_grp_megatron(g), sim_grp_label(g),
                    n);
            sim_json_ints(f, mem, n);
            fputc(',', f);
            sim_json_labels(f, c, mem, n);
            fputc('}', f);
            first = 0;
        }
    }
    fprintf(f, "],\n");
}

static void sim_json_ops(FILE *f, const struct sim_truth *t, int g)
{
    int first = 1;

    fprintf(f, "\"ops\":{");
    for (int k = 0; k < SK_COUNT; k++) {
        if (!t->ops[g][k])
            continue;
        fprintf(f, "%s\"%s\":{\"count\":%llu,\"bytes\":%llu}",
                first ? "" : ",", sim_kind_name(k),
                (unsigned long long)t->ops[g][k],
                (unsigned long long)t->bytes[g][k]);
        first = 0;
    }
    fprintf(f, "},\"in_flight\":{");
    first = 1;
    for (int k = 0; k < SK_COUNT; k++) {
        if (!t->inflight[g][k])
            continue;
        fprintf(f, "%s\"%s\":%llu", first ? "" : ",", sim_kind_name(k),
                (unsigned long long)t->inflight[g][k]);
        first = 0;
    }
    fputc('}', f);
}

static void sim_json_comms(FILE *f, const struct sim_cfg *c,
                           const struct sim_truth *t)
{
    static int mem[SIM_MAX_RANKS];
    int first = 1;

    fprintf(f, "\"comms\":{");
    for (int g = 0; g < SG_COUNT; g++) {
        if (!t->created[g] && !t->issued[g])
            continue;
        sim_members(c, g, t->rank, mem);
        fprintf(f, "%s\n    \"%s-%d\":{\"group\":\"%s\",\"comm_rank\":%d,"
                   "\"created_index\":%d,\"issued\":%llu,",
                first ? "" : ",", sim_grp_short(g), mem[0], sim_grp_short(g),
                t->created[g] ? t->comm_rank[g] : -1, t->created[g] - 1,
                (unsigned long long)t->issued[g]);
        sim_json_ops(f, t, g);
        fputc('}', f);
        first = 0;
    }
    fprintf(f, "},\n");
}

/*
 * Step k runs from the entry of its first NCCL call into fake NCCL to the
 * entry of step k+1's (the shim's iteration boundaries are those calls'
 * records, taken just before); the last step ends where the rank's
 * schedule ended.  host_start/host_end are where the rank's schedule
 * started and ended each step.
 */
static void sim_step_bounds(const struct sim_truth *t, int i, uint64_t *a,
                            uint64_t *z)
{
    const struct sim_step *s = &t->steps[i];

    *a = s->first_op ? s->first_op : s->start;
    *z = s->end;
    if (i + 1 < t->n_steps && t->steps[i + 1].first_op)
        *z = t->steps[i + 1].first_op;
}

static void sim_json_steps(FILE *f, const struct sim_truth *t)
{
    fprintf(f, "   \"steps\":[");
    for (int i = 0; i < t->n_steps; i++) {
        const struct sim_step *s = &t->steps[i];
        uint64_t a, z, len, idle;

        sim_step_bounds(t, i, &a, &z);
        len = z > a ? z - a : 0;
        idle = len > s->busy_ns ? len - s->busy_ns : 0;
        fprintf(f, "%s\n    {\"iter\":%d,\"start\":%llu,\"end\":%llu,"
                   "\"host_start\":%llu,\"host_end\":%llu,"
                   "\"busy_ns\":%llu,\"pp_wait_ns\":%llu,\"idle_ns\":%llu}",
                i ? "," : "", i, (unsigned long long)a,
                (unsigned long long)z, (unsigned long long)s->start,
                (unsigned long long)s->end, (unsigned long long)s->busy_ns,
                (unsigned long long)s->pp_wait_ns, (unsigned long long)idle);
    }
    fprintf(f, "],\n");
}

static void sim_json_busy(FILE *f, const struct sim_truth *t)
{
    static const char *kinds[] = { "fwd", "bwd", "opt", "hang" };
    uint64_t n = t->n_busy < SIM_MAX_BUSY ? t->n_busy : SIM_MAX_BUSY;

    fprintf(f, "   \"busy\":[");
    for (uint64_t i = 0; i < n; i++) {
        const struct sim_busy *b = &t->busy[i];

        fprintf(f, "%s[%llu,%llu,\"%s\",%u,%u]", i ? "," : "",
                (unsigned long long)b->start, (unsigned long long)b->end,
                kinds[b->kind & 3], b->mb, b->iter);
    }
    fprintf(f, "]");
}

static void sim_json_exit(FILE *f, int st)
{
    if (WIFSIGNALED(st))
        fprintf(f, "\"exit\":{\"signal\":%d},", WTERMSIG(st));
    else
        fprintf(f, "\"exit\":{\"code\":%d},", WEXITSTATUS(st));
}

static void sim_json_stopped(FILE *f, const struct sim_truth *t)
{
    if (t->stopped == 1)
        fprintf(f, "\"stopped\":{\"kind\":\"hang\",\"group\":\"%s\","
                   "\"t\":%llu,\"issued_on_group\":%llu},",
                sim_grp_short(t->stop_grp), (unsigned long long)t->stop_t,
                (unsigned long long)t->issued[t->stop_grp]);
    else if (t->stopped == 2)
        fprintf(f, "\"stopped\":{\"kind\":\"kill\",\"t\":%llu,"
                   "\"issued_total\":%llu},",
                (unsigned long long)t->stop_t,
                (unsigned long long)t->issued_total);
    else
        fprintf(f, "\"stopped\":null,");
}

static void sim_json_rank(FILE *f, const struct sim_cfg *c,
                          const struct sim_run *run, int r,
                          const struct sim_truth *t)
{
    int co[SA_COUNT], h = sim_host_of(c, r);

    sim_coords(c, r, co);
    fprintf(f, "%s\n  {\"rank\":%d,\"pid\":%d,\"host\":", r ? "," : "", r,
            (int)run->pid[r]);
    if (c->hosts > 1)
        fprintf(f, "\"simhost-%d\",", h);
    else
        fprintf(f, "null,");
    fprintf(f, "\"host_index\":%d,\"clock_offset_ns\":%lld,\"coords\":{", h,
            sim_host_offset(c, h));
    for (int a = 0; a < SA_COUNT; a++)
        fprintf(f, "%s\"%s\":%d", a ? "," : "", sim_axis_name(a), co[a]);
    fprintf(f, "},\"stage\":%d,", co[SA_PP]);
    sim_json_exit(f, run->status[r]);
    if (!t) {
        fprintf(f, "\"truth\":false}");
        return;
    }
    fprintf(f, "\"truth\":true,\"finished\":%s,", t->finished ? "true"
                                                              : "false");
    sim_json_stopped(f, t);
    fprintf(f, "\"mismatch_op\":");
    if (t->mismatch_op)
        fprintf(f, "%llu,", (unsigned long long)t->mismatch_op);
    else
        fprintf(f, "null,");
    fprintf(f, "\"issued_total\":%llu,", (unsigned long long)t->issued_total);
    sim_json_comms(f, c, t);
    sim_json_steps(f, t);
    sim_json_busy(f, t);
    fputc('}', f);
}

static void sim_json_header(FILE *f, const struct sim_cfg *c,
                            const struct sim_run *run)
{
    int p = c->size[SA_PP];

    fprintf(f, "{\"schema\":\"p3d-sim-truth/1\",\"job_id\":\"%s\","
               "\"trace_dir\":\"%s\",\"world_size\":%d,\n",
            c->job_id, run->jobdir, c->world);
    fprintf(f, "\"layout\":{\"tp\":%d,\"pp\":%d,\"dp\":%d,\"cp\":%d,"
               "\"ep\":%d,\"order\":\"",
            c->size[SA_TP], p, c->size[SA_DP], c->size[SA_CP], c->ep);
    for (int i = 0; i < SA_COUNT; i++)
        fprintf(f, "%s%s", i ? "-" : "", sim_axis_name(c->order[i]));
    fprintf(f, "\",\"order_arg\":\"%s\"},\n", c->order_str);
    fprintf(f, "\"schedule\":{\"name\":\"%s\",\"micro_batches\":%d,"
               "\"vpp\":%d,\"iterations\":%d,\"layers_per_stage\":%d,"
               "\"sequence_parallel\":%s,\"distributed_optimizer\":%s,"
               "\"buckets\":%d,\"opt_ms\":%g,\"async_streams\":%s,"
               "\"bubble_theory_frac\":%.6f,"
               "\"fwd_ms\":[",
            p == 1 ? "no_pipelining" : "1f1b", c->m, c->vpp, c->iters,
            c->layers, c->sp ? "true" : "false",
            c->dist_opt ? "true" : "false", c->buckets, c->opt_ms,
            c->async ? "true" : "false",
            (double)(p - 1) / (double)(c->m + p - 1) / c->vpp);
    for (int s = 0; s < p; s++)
        fprintf(f, "%s%g", s ? "," : "", c->fwd_ms[s]);
    fprintf(f, "],\"bwd_ms\":[");
    for (int s = 0; s < p; s++)
        fprintf(f, "%s%g", s ? "," : "", c->bwd_ms[s]);
    fprintf(f, "]},\n\"message_bytes\":{\"tp\":%llu,\"pp\":%llu,"
               "\"cp\":%llu,\"dp\":%llu,\"emb\":%llu},\n",
            (unsigned long long)c->tp_bytes, (unsigned long long)c->pp_bytes,
            (unsigned long long)c->cp_bytes, (unsigned long long)c->dp_bytes,
            (unsigned long long)c->emb_bytes);
}

static const char *sim_mm_name(const struct sim_mm *m)
{
    static const char *const n[] = { "count", "redop", "dtype", "kind" };

    return m->rank < 0 ? "none" : n[m->what];
}

static void sim_json_fault3(FILE *f, const char *name, int rank, int g,
                            long n, const struct sim_cfg *c)
{
    static int mem[SIM_MAX_RANKS];

    if (rank < 0) {
        fprintf(f, "\"%s\":null,", name);
        return;
    }
    sim_members(c, g, rank, mem);
    fprintf(f, "\"%s\":{\"rank\":%d,\"group\":\"%s\",\"group_id\":\"%s-%d\","
               "\"n\":%ld},",
            name, rank, sim_grp_short(g), sim_grp_short(g), mem[0], n);
}

static void sim_json_faults(FILE *f, const struct sim_cfg *c,
                            const struct sim_run *run)
{
    fprintf(f, "\"faults\":{");
    if (c->straggler_rank >= 0)
        fprintf(f, "\"straggler\":{\"rank\":%d,\"pct\":%g},",
                c->straggler_rank, c->straggler_pct);
    else
        fprintf(f, "\"straggler\":null,");
    sim_json_fault3(f, "hang", c->hang_rank, c->hang_grp, c->hang_n, c);
    sim_json_fault3(f, "mismatch", c->mm[0].rank, c->mm[0].grp, c->mm[0].n,
                    c);
    sim_json_fault3(f, "mismatch2", c->mm[1].rank, c->mm[1].grp,
                    c->mm[1].n, c);
    fprintf(f, "\"mismatch_kind\":\"%s\",", sim_mm_name(&c->mm[0]));
    if (c->kill_rank >= 0)
        fprintf(f, "\"kill\":{\"rank\":%d,\"n\":%ld},", c->kill_rank,
                c->kill_n);
    else
        fprintf(f, "\"kill\":null,");
    fprintf(f, "\"skew\":[");
    for (int i = 0; i < c->n_skew; i++)
        fprintf(f, "%s{\"rank\":%d,\"host_index\":%d,\"ns\":%lld}",
                i ? "," : "", c->skew[i].rank,
                sim_host_of(c, c->skew[i].rank), c->skew[i].ns);
    fprintf(f, "]},\n\"outcome\":{\"timed_out\":%s,\"stopped_when_hung\":%s,"
               "\"terminated_after_failure\":%s,\"wall_s\":%.3f},\n",
            run->timed_out ? "true" : "false",
            run->hung_stop ? "true" : "false",
            run->fail_at > 0 ? "true" : "false", run->wall_s);
}

/* Per stage and iteration: mean PP wait (bubble) and step length. */
static void sim_json_stages(FILE *f, const struct sim_cfg *c,
                            struct sim_truth **t)
{
    fprintf(f, "\"stages\":[");
    for (int s = 0; s < c->size[SA_PP]; s++) {
        fprintf(f, "%s\n  {\"stage\":%d,\"ranks\":[", s ? "," : "", s);
        for (int r = 0, k = 0; r < c->world; r++)
            if (sim_stage(c, r) == s)
                fprintf(f, "%s%d", k++ ? "," : "", r);
        fprintf(f, "],\"per_iter\":[");
        for (int i = 0; i < c->iters; i++) {
            double wait = 0, len = 0;
            int n = 0;

            for (int r = 0; r < c->world; r++) {
                if (sim_stage(c, r) != s || !t[r] || t[r]->n_steps <= i)
                    continue;
                uint64_t a, z;

                sim_step_bounds(t[r], i, &a, &z);
                wait += (double)t[r]->steps[i].pp_wait_ns;
                len += (double)(z - a);
                n++;
            }
            if (n == 0)
                break;
            fprintf(f, "%s{\"iter\":%d,\"bubble_ns\":%.0f,\"step_ns\":%.0f,"
                       "\"bubble_frac\":%.6f}",
                    i ? "," : "", i, wait / n, len / n,
                    len > 0 ? wait / len : 0.0);
        }
        fprintf(f, "]}");
    }
    fprintf(f, "],\n");
}

int sim_write_truth(const struct sim_cfg *c, const struct sim_run *run)
{
    static struct sim_truth *t[SIM_MAX_RANKS];
    char path[PATH_MAX + 128], tmp[PATH_MAX + 140];
    FILE *f;

    snprintf(path, sizeof(path), "%s/truth.json", run->jobdir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "w");
    if (!f)
        return -1;
    for (int r = 0; r < c->world; r++)
        t[r] = sim_truth_read(run, r);
    sim_json_header(f, c, run);
    sim_json_faults(f, c, run);
    sim_json_groups(f, c, t);
    sim_json_stages(f, c, t);
    fprintf(f, "\"ranks\":[");
    for (int r = 0; r < c->world; r++)
        sim_json_rank(f, c, run, r, t[r]);
    fprintf(f, "]}\n");
    for (int r = 0; r < c->world; r++)
        if (t[r])
            munmap(t[r], sizeof(*t[r]));
    if (fclose(f) != 0)
        return -1;
    return rename(tmp, path);
}
