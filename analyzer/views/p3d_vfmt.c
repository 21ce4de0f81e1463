/*
 * p3d_vfmt.c - what every view writes the same way (p3d_vfmt.h): byte
 * counts, a matcher entry in words, a stage's bubble as sums.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "p3d_job.h"
#include "p3d_match.h"
#include "p3d_time.h"
#include "p3d_util.h"
#include "p3d_vfmt.h"

void p3d_fmt_bytes(char *buf, size_t n, double b)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;

    while (b >= 1024 && u < 4) {
        b /= 1024;
        u++;
    }
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
}

const char *p3d_mm_other_text(const struct p3d_mismatch *x,
                              const char *lab, char *buf, size_t n)
{
    if (x->field == P3D_MM_ISSUED) {
        snprintf(buf, n, "comm 0x%016" PRIx64 " (%s): rank %d issued %"
                 PRId64 " collectives, rank %d issued %" PRId64, x->comm,
                 lab, x->rank_b, x->vb, x->rank_a, x->va);
        return "incomplete";
    }
    snprintf(buf, n, "comm 0x%016" PRIx64 " (%s) %d -> %d: %" PRId64
             " sends never received, %" PRId64 " receives never sent",
             x->comm, lab, x->rank_a, x->rank_b, x->va, x->vb);
    return "unmatched";
}

void p3d_fmt_stage(char *buf, size_t n, const struct p3d_tstage *g)
{
    double rest = g->rest_frac;

    snprintf(buf, n, "stage %d: bubble %.1f%% = warm-up/cool-down %.1f%% + "
             "steady %.1f%%; = waiting for the sender %.1f%% + transfer "
             "%.1f%% %c %s %.1f%%; compute %.1f%%", g->stage,
             100 * g->bubble_frac, 100 * g->fill_frac, 100 * g->steady_frac,
             100 * g->late_frac, 100 * g->transfer_frac,
             rest >= 0 ? '+' : '-', rest >= 0
             ? "the rest (sends waiting for their receiver, net of receive "
               "time compute hid)"
             : "receive time that compute hid",
             100 * (rest >= 0 ? rest : -rest), 100 * g->busy_frac);
}

int p3d_fmt_lost_ranks(char *buf, size_t n, const struct p3d_job *job,
                       uint64_t *lost)
{
    int *r = p3d_xcalloc((size_t)job->n_ranks + 1, sizeof(int)), k = 0;
    uint64_t sum = 0;

    for (int i = 0; i < job->n_ranks; i++)
        if (p3d_lost_records(&job->ranks[i])) {
            r[k++] = job->ranks[i].rank;
            sum += job->ranks[i].hdr.dropped_records;
        }
    p3d_fmt_ranks(buf, n, r, k);
    free(r);
    if (lost)
        *lost = sum;
    return k;
}
