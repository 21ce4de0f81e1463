/*
 * test_hang_proxy.c - the shim's "proxy: " notes in the hang analysis
 * (analyzer/hang/p3d_hang_proxy.c): only those notes are kept, the latest
 * 16 of a rank; a note's comm rank becomes the global rank of the
 * communicator the job joined, with its group name; a note of an unknown
 * communicator, or one that does not parse, is given as written.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_hang_int.h"
#include "p3d_job.h"
#include "p3d_layout.h"
#include "p3d_map.h"

static struct p3d_rec_str *made[64]; /* every note, freed at teardown */
static int n_made;

static struct p3d_rec_str *note(const char *text)
{
    size_t n = strlen(text), len = (sizeof(struct p3d_rec_str) + n + 7) & ~7u;
    struct p3d_rec_str *s = calloc(1, len);

    s->h.len = (uint32_t)len;
    s->h.tag = P3D_REC_NOTE;
    s->n_bytes = (uint32_t)n;
    memcpy(s->text, text, n);
    made[n_made++] = s;
    return s;
}

/* A job of 8 ranks with one 2-rank PP communicator 0x30bd: comm rank 0
 * is rank 1, comm rank 1 rank 5. */
struct fixture {
    struct p3d_job job;
    struct p3d_gcomm comm;
    int slot[2];
    struct p3d_hang_res res;
    struct p3d_hjob hj;
    struct p3d_hrank hr[8];
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    f->slot[0] = 1;
    f->slot[1] = 5;
    f->comm.hash = 0x30bdull;
    f->comm.size = 2;
    f->comm.slot = f->slot;
    f->comm.label = P3D_LBL_PP;
    f->job.world_size = 8;
    f->job.comms = &f->comm;
    f->job.n_comms = 1;
    p3d_map_put(&f->job.comm_idx, f->comm.hash, 0);
    f->hj.hr = f->hr;
    f->hj.world = 8;
    f->res.priv = &f->hj;
    f->job.hang = &f->res;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    while (n_made > 0)
        free(made[--n_made]);
    p3d_map_free(&f->job.comm_idx);
    free(f);
    return 0;
}

static void test_global_rank(void **state)
{
    struct fixture *f = *state;
    char out[4][P3D_HANG_PROXY_LEN];

    p3d_hang_proxy_note(&f->hr[1], note("proxy: comm 0x00000000000030bd send "
                                        "to comm rank 1, channel 0: 0 of 1 "
                                        "steps done, step 0 waits for the "
                                        "receiver's buffer for 1.2 s (op_id "
                                        "28)"));
    p3d_hang_proxy_note(&f->hr[1], note("gpu timing: not a proxy note"));
    assert_int_equal(p3d_hang_proxy_lines(&f->job, 1, out, 4), 1);
    assert_string_equal(out[0], "send to rank 5 (comm rank 1 of PP "
                                "0x00000000000030bd), channel 0: 0 of 1 "
                                "steps done, step 0 waits for the "
                                "receiver's buffer for 1.2 s (op_id 28)");
    assert_int_equal(p3d_hang_proxy_lines(&f->job, 2, out, 4), 0);
    assert_int_equal(p3d_hang_proxy_lines(&f->job, 99, out, 4), 0);
}

static void test_unknown_comm_as_written(void **state)
{
    struct fixture *f = *state;
    char out[2][P3D_HANG_PROXY_LEN];

    p3d_hang_proxy_note(&f->hr[0], note("proxy: comm 0x0000000000000999 "
                                        "receive from comm rank 3, channel "
                                        "1: 2 of 12 steps done, x"));
    p3d_hang_proxy_note(&f->hr[0], note("proxy: some newer wording"));
    assert_int_equal(p3d_hang_proxy_lines(&f->job, 0, out, 2), 2);
    assert_string_equal(out[0], "comm 0x0000000000000999 receive from comm "
                                "rank 3, channel 1: 2 of 12 steps done, x");
    assert_string_equal(out[1], "some newer wording");
}

static void test_latest_sixteen(void **state)
{
    struct fixture *f = *state;
    char out[32][P3D_HANG_PROXY_LEN], text[80];

    for (int k = 0; k < 20; k++) {
        snprintf(text, sizeof(text), "proxy: transfer %d", k);
        p3d_hang_proxy_note(&f->hr[3], note(text));
    }
    /* the 4 oldest were dropped */
    assert_int_equal(p3d_hang_proxy_lines(&f->job, 3, out, 32), 16);
    assert_string_equal(out[0], "transfer 4");
    assert_string_equal(out[15], "transfer 19");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_global_rank, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_comm_as_written, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_latest_sixteen, setup,
                                        teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
