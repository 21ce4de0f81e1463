/*
 * test_hang_reported.c - which ops a trace that lost records still has
 * pending on its watchdog's word (p3d_hang_report_pending in
 * p3d_hang.c): a report names the oldest op in flight at its time, so a
 * later report of an op entered after it shows it done; reports of inits
 * in flight at SIGTERM, or any report when the in-flight table could not
 * track every op, show nothing of other ops.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "p3d_hang_int.h"

#define S 1000000000ull

static struct p3d_rec_hang report(uint64_t op_id, uint8_t op, uint64_t t,
                                  uint64_t pending)
{
    struct p3d_rec_hang r;

    memset(&r, 0, sizeof(r));
    r.h.tag = P3D_REC_HANG;
    r.h.len = sizeof(r);
    r.op_id = op_id;
    r.op = op;
    r.t = t;
    r.pending_ns = pending;
    r.n_pending = 1;
    return r;
}

static void test_later_report_supersedes(void **state)
{
    /* op 10 entered at 0.9 s, reported at 2 s; op 20 entered at 3.9 s,
     * reported at 5 s as the oldest in flight: op 10 was done by then */
    struct p3d_rec_hang a = report(10, P3D_OP_REDUCESCATTER, 2 * S, S + S / 10);
    struct p3d_rec_hang b = report(20, P3D_OP_SEND, 5 * S, S + S / 10);
    struct p3d_hrank h;

    (void)state;
    memset(&h, 0, sizeof(h));
    h.hang[h.n_hang++] = &a;
    h.hang[h.n_hang++] = &b;
    assert_false(p3d_hang_report_pending(&h, 10));
    assert_true(p3d_hang_report_pending(&h, 20));
    assert_false(p3d_hang_report_pending(&h, 30)); /* never reported */
    /* the table lost track of some op: the later report proves nothing */
    h.wd_untracked = 1;
    assert_true(p3d_hang_report_pending(&h, 10));
    h.wd_untracked = 0;
    /* an init reported at SIGTERM is not the oldest op in flight */
    b.op = P3D_HANG_OP_INIT;
    assert_true(p3d_hang_report_pending(&h, 10));
    /* a later report of an op entered before op 10 (it was not the
     * oldest then either: no evidence op 10 completed) */
    b = report(20, P3D_OP_SEND, 5 * S, 4 * S + S / 2);
    assert_true(p3d_hang_report_pending(&h, 10));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_later_report_supersedes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
