/*
 * test_an_match_split.c - matching split by communicator, as
 * p3d-analyze-mpi's processes split it (p3d_dist_comm_owner): each part's
 * matcher sees the ops of its communicators only, and folding the parts
 * (p3d_matcher_finish_part, p3d_match_fold) gives what one matcher fed
 * every op gives, counts and kept mismatches alike, for 1-5 parts and
 * more mismatches than are kept (P3D_MM_KEEP), in either fold order.
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_folds_to_whole),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
