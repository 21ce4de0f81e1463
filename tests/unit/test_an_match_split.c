/*
 * test_an_match_split.c - matching split by communicator, as
 * p3d-analyze-mpi's processes split it (p3d_dist_comm_owner): each part's
 * matcher sees the ops of its communicators only, and folding the parts
 * (p3d_matcher_finish_part, p3d_match_fold) gives what one matcher fed
 * every op gives, counts and kept mismatches alike, for 1-5 parts and
 * more mismatches than are kept (P3D_MM_KEEP), in either fold order.
 * Then one communicator dealt by blocks of seq (p3d_dist_seq_owner, as
 * the MPI scan deals it), with a member whose gaps pass P3D_RUNS_MAX and
 * a damaged seq: each part's matcher sees only its blocks, and the
 * verdict on each op (p3d_match_take) is made where the rank is read, which
 * also sends every part the member's last run (p3d_matcher_last_run).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_dist.h"
#include "p3d_match.h"
#include "p3d_util.h"
#include "test_match_util.h"

#define N_COMMS 12
#define N_RANKS 4
#define N_SEQ 40

/* Op k of a rank on comm c: every 7th instance of a comm has its rank
 * (c + k) % N_RANKS disagree on the count, so mismatches number well
 * past P3D_MM_KEEP and spread over every communicator; sends/recvs on
 * comm 0 pair ranks 0 and 1, one send left without its receive. */
static int ops_of(int rank, struct p3d_rec_op *v)
{
    int n = 0;

    for (int s = 0; s < N_SEQ; s++)
        for (int c = 0; c < N_COMMS; c++) {
            struct p3d_rec_op o = match_coll_op(c, N_COMMS);
            o.seq = (uint64_t)s;
            if (s % 7 == 3 && (c + s) % N_RANKS == rank)
                o.count = 101;
            v[n++] = o;
        }
    for (int s = 0; s < 5 && rank < 2; s++) {
        struct p3d_rec_op o = match_coll_op(0, N_COMMS);
        o.op = rank == 0 ? P3D_OP_SEND : P3D_OP_RECV;
        o.peer = 1 - rank;
        o.seq = (uint64_t)s;
        o.count = 64;
        if (rank == 1 && s == 4)
            continue; /* the last send is never received */
        v[n++] = o;
    }
    return n;
}

/* Feed the ops whose communicator part `part` of `parts` owns (every op
 * with parts 0) into a new matcher. */
static struct p3d_matcher *fed(int part, int parts)
{
    static struct p3d_rec_op v[N_SEQ * N_COMMS + 8];
    struct p3d_dist d = {0, parts, 32767, NULL, NULL, NULL, NULL};
    struct p3d_matcher *m = p3d_matcher_new();

    for (int r = 0; r < N_RANKS; r++) {
        int n = ops_of(r, v);
        for (int i = 0; i < n; i++)
            if (!parts || p3d_dist_comm_owner(&d, v[i].comm_hash) == part)
                p3d_matcher_op(m, r, r, &v[i]);
    }
    return m;
}

static void test_split_folds_to_whole(void **state)
{
    struct p3d_match_res whole = match_finish(fed(0, 0));
    struct p3d_job job;

    (void)state;
    memset(&job, 0, sizeof(job));
    assert_true(whole.n_mismatch > P3D_MM_KEEP);
    assert_int_equal(whole.n_kept, P3D_MM_KEEP);
    assert_int_equal(whole.n_unmatched_p2p, 1);
    for (int parts = 1; parts <= 5; parts++)
        for (int backwards = 0; backwards < 2; backwards++) {
            struct p3d_match_res *res = p3d_xcalloc(1, sizeof(*res));
            int used = 0;
            for (int k = 0; k < parts; k++) {
                int p = backwards ? parts - 1 - k : k;
                struct p3d_match_res part;
                p3d_matcher_finish_part(fed(p, parts), &job, &part);
                used += part.n_coll > 0;
                p3d_match_fold(res, &part);
            }
            p3d_match_close(res, &job);
            assert_true(parts < 3 || used >= 2); /* the split is real */
            assert_same_match_res(&whole, job.match);
            free(job.match);
            job.match = NULL;
        }
}

#define GAP_SEQS 10002 /* ranks 0 and 1 take every seq; rank 2 even ones */
#define GAP_LATE 9000  /* rank 2's run 4501: past P3D_RUNS_MAX */
#define GAP_LAST 10000 /* rank 2's last run: remembered */

/* A rank's ops on the one communicator, in v; returns how many. */
static int gap_ops_of(int rank, struct p3d_rec_op *v)
{
    int n = 0;

    for (int s = 0; s < GAP_SEQS; s++) {
        struct p3d_rec_op o = match_coll_op(0, 1);
        if (rank == 2 && s % 2)
            continue;
        o.seq = (uint64_t)s;
        if ((s == 10 && rank == 2) || (s == GAP_LATE && rank >= 1) ||
            (s == GAP_LAST && rank == 2))
            o.count = 101 + (uint64_t)rank;
        v[n++] = o;
        if (rank == 1 && s == 20) { /* damaged: never believed */
            v[n] = o;
            v[n++].seq = 1u << 20;
        }
    }
    return n;
}

/* The ops of every rank, dealt to `parts` matchers by blocks of `block`
 * seqs with the verdict marked where the rank is read (parts 0: one
 * matcher that takes them itself); folded into one result. */
static struct p3d_match_res gap_fed(int parts, uint64_t block)
{
    static struct p3d_rec_op v[GAP_SEQS + 8];
    struct p3d_dist d = {0, parts, 32767, NULL, NULL, NULL, NULL};
    struct p3d_matcher *m[8];
    struct p3d_match_res *res = p3d_xcalloc(1, sizeof(*res)), out;
    struct p3d_job job;
    int k = parts ? parts : 1;

    d.seq_block = block;
    for (int p = 0; p < k; p++) {
        m[p] = p3d_matcher_new();
        if (parts)
            p3d_matcher_split(m[p], parts, block);
    }
    for (int r = 0; r < 3; r++) {
        struct p3d_take t = {0};
        int n = gap_ops_of(r, v);
        for (int i = 0; i < n; i++) {
            struct p3d_rec_op o = v[i];
            int to = 0;
            if (parts) {
                enum p3d_take_how how = p3d_match_take(&t, &o);
                if (how == P3D_TAKE_NOT)
                    continue;
                if (how == P3D_TAKE_UNNOTED)
                    o.flags |= P3D_MATCH_UNNOTED;
                to = p3d_dist_seq_owner(
                    &d, p3d_dist_comm_owner(&d, o.comm_hash), o.seq);
            }
            p3d_matcher_op(m[to], r, r, &o);
        }
        for (int p = 0; parts && t.n_runs > P3D_RUNS_MAX && p < parts; p++)
            p3d_matcher_last_run(m[p], r, v[0].comm_hash, t.lo, t.hi);
    }
    memset(&job, 0, sizeof(job));
    for (int p = 0; p < k; p++) {
        struct p3d_match_res part;
        p3d_matcher_finish_part(m[p], &job, &part);
        p3d_match_fold(res, &part);
    }
    p3d_match_close(res, &job);
    out = *res;
    free(res);
    return out;
}

static void test_seq_split_with_gaps(void **state)
{
    struct p3d_match_res whole = gap_fed(0, 1);

    (void)state;
    /* seq 10: rank 2 against rank 0; GAP_LATE: rank 1 against rank 0
     * only (rank 2 is past its runs there, so not found a member);
     * GAP_LAST: rank 2 again (its last run is remembered) */
    assert_int_equal(whole.n_coll, GAP_SEQS);
    assert_int_equal(whole.n_mismatch, 3);
    assert_int_equal(whole.mm[0].seq, 10);
    assert_int_equal(whole.mm[0].rank_b, 2);
    assert_int_equal(whole.mm[1].seq, GAP_LATE);
    assert_int_equal(whole.mm[1].rank_b, 1);
    assert_int_equal(whole.mm[2].seq, GAP_LAST);
    assert_int_equal(whole.mm[2].rank_b, 2);
    for (int parts = 1; parts <= 4; parts++)
        for (uint64_t block = 1; block <= 300; block += 299) {
            struct p3d_match_res part = gap_fed(parts, block);
            assert_same_match_res(&whole, &part);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_folds_to_whole),
        cmocka_unit_test(test_seq_split_with_gaps),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
