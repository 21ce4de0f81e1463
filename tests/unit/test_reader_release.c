/*
 * test_reader_release.c - p3d_reader_release drops a mapped reader's
 * pages from the process, and the records it handed out stay valid (they
 * read back from the page cache), so a caller keeping record pointers of
 * many files can shed their memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "p3d_reader.h"
#include "test_file_util.h"

#define CHUNK 4096u
#define DATA 4096u
#define NCHUNK 64u
#define PER_CHUNK ((CHUNK - sizeof(struct p3d_chunk_hdr)) / \
                   sizeof(struct p3d_rec_op))

static uint8_t buf[DATA + NCHUNK * CHUNK];
static char path[64];

/* A closed one-rank file of NCHUNK chunks of OP records, op_id = index. */
static void make_file(void)
{
    uint64_t id = 0;
    FILE *f;

    memset(buf, 0, sizeof(buf));
    tfu_hdr_init(buf, CHUNK, DATA);
    for (unsigned c = 0; c < NCHUNK; c++) {
        uint8_t *p = buf + DATA + c * CHUNK;
        struct p3d_chunk_hdr *ch = (void *)p;
        ch->h.tag = P3D_REC_CHUNK;
        ch->h.len = sizeof(*ch);
        ch->index = c;
        p += sizeof(*ch);
        for (unsigned k = 0; k < PER_CHUNK; k++) {
            struct p3d_rec_op *o = (void *)p;
            p += sizeof(*o);
            o->h.tag = P3D_REC_OP;
            o->h.len = sizeof(*o);
            o->op_id = id++;
        }
    }
    snprintf(path, sizeof(path), "/tmp/p3d-test-release-%d.p3d", getpid());
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, sizeof(buf), f), sizeof(buf));
    fclose(f);
}

/* Resident kB of the mapping that holds addr (/proc/self/smaps), -1 if
 * not found: per mapping, so nothing else the process does moves it. */
static long mapping_rss_kb(const void *addr)
{
    char line[256];
    long rss = -1;
    int in = 0;
    FILE *f = fopen("/proc/self/smaps", "r");

    if (!f)
        return -1;
    while (rss < 0 && fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
            in = (unsigned long)addr >= lo && (unsigned long)addr < hi;
        else if (in && sscanf(line, "Rss: %ld kB", &rss) != 1)
            rss = -1;
    }
    fclose(f);
    return rss;
}

static void check_release(int mapped)
{
    static const struct p3d_rec_op *ops[NCHUNK * PER_CHUNK];
    const struct p3d_rec_hdr *r;
    struct p3d_reader rd;
    size_t n = 0;
    long before, after;

    make_file();
    assert_int_equal(mapped ? p3d_reader_open_mapped(&rd, path)
                            : p3d_reader_open(&rd, path), 0);
    while (p3d_reader_next(&rd, &r) > 0 && n < NCHUNK * PER_CHUNK)
        if (r->tag == P3D_REC_OP)
            ops[n++] = (const void *)r;
    assert_int_equal(n, NCHUNK * PER_CHUNK);
    before = mapped ? mapping_rss_kb(rd.buf) : 0;
    p3d_reader_release(&rd);
    after = mapped ? mapping_rss_kb(rd.buf) : 0;
    if (mapped) { /* the file's pages were in, and left the process */
        assert_true(before >= (long)(NCHUNK * CHUNK / 1024) / 2);
        assert_int_equal(after, 0);
    }
    if (mapped) /* every pointer still reads its record */
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(ops[i]->op_id, i);
            assert_int_equal(ops[i]->h.tag, P3D_REC_OP);
        }
    else /* a buffered reader keeps its last buffer: the last record */
        assert_int_equal(ops[n - 1]->op_id, n - 1);
    p3d_reader_close(&rd);
    unlink(path);
}

static void test_mapped_records_survive(void **state)
{
    (void)state;
    check_release(1);
}

static void test_buffered_reader_untouched(void **state)
{
    (void)state;
    check_release(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mapped_records_survive),
        cmocka_unit_test(test_buffered_reader_untouched),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
