/*
 * test_an_reader.c - trace file validation in the analyzer's reader:
 * header checks, record walking, every bad length/tag case, truncation.
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

#define CHUNK 1024u
#define DATA 4096u

static uint8_t buf[DATA + 4 * CHUNK];
static char path[64];

static void hdr_init(void)
{
    memset(buf, 0, sizeof(buf));
    tfu_hdr_init(buf, CHUNK, DATA);
}

/* Put a record at offset off; returns the offset after it. */
static size_t rec(size_t off, unsigned tag, unsigned len)
{
    struct p3d_rec_hdr *r = (void *)(buf + off);

    r->tag = (uint16_t)tag;
    r->len = (uint16_t)len;
    return off + len;
}

static size_t chunk(size_t off)
{
    return rec(off, P3D_REC_CHUNK, sizeof(struct p3d_chunk_hdr));
}

static void write_file(size_t n)
{
    FILE *f;

    snprintf(path, sizeof(path), "/tmp/p3d-test-reader-%d.p3d", getpid());
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, n, f), n);
    fclose(f);
}

/* Open path and count records until the end; returns next()'s last. */
static int walk(struct p3d_reader *rd, int *n)
{
    const struct p3d_rec_hdr *r;
    int ret;

    *n = 0;
    assert_int_equal(p3d_reader_open(rd, path), 0);
    while ((ret = p3d_reader_next(rd, &r)) > 0)
        (*n)++;
    return ret;
}

static void test_valid_two_chunks(void **state)
{
    struct p3d_reader rd;
    size_t off;
    int n;

    (void)state;
    hdr_init();
    off = chunk(DATA);
    off = rec(off, P3D_REC_OP, sizeof(struct p3d_rec_op));
    rec(off, P3D_REC_OP, sizeof(struct p3d_rec_op));
    off = chunk(DATA + CHUNK); /* tag 0 ended chunk 0 */
    rec(off, P3D_REC_GROUP, sizeof(struct p3d_rec_group));
    write_file(DATA + 2 * CHUNK);
    assert_int_equal(walk(&rd, &n), 0);
    assert_int_equal(n, 5); /* 2 chunk headers + 3 records */
    assert_int_equal(rd.truncated, 0);
    p3d_reader_close(&rd);
}

static void expect_open_fail(const char *needle)
{
    struct p3d_reader rd;

    write_file(DATA + CHUNK);
    assert_int_equal(p3d_reader_open(&rd, path), -1);
    if (!strstr(rd.msg, needle))
        fail_msg("message '%s' lacks '%s'", rd.msg, needle);
    assert_non_null(strstr(rd.msg, path));
}

static void test_bad_header(void **state)
{
    struct p3d_file_hdr *h = (void *)buf;

    (void)state;
    hdr_init();
    memcpy(h->magic, "P3DTRACF", 8);
    expect_open_fail("bad magic");
    hdr_init();
    h->major = P3D_FORMAT_MAJOR + 1;
    expect_open_fail("trace format version 2.0, this p3d-analyze reads "
                     "version 1.x");
    hdr_init();
    h->hdr_len = 100;
    expect_open_fail("bad header length 100");
    hdr_init();
    h->chunk_bytes = 1001;
    expect_open_fail("bad chunk size 1001");
    hdr_init();
    h->data_off = 4100;
    expect_open_fail("bad data offset 4100");
    hdr_init();
    write_file(100);
    {
        struct p3d_reader rd;
        assert_int_equal(p3d_reader_open(&rd, path), -1);
        assert_non_null(strstr(rd.msg, "too short"));
    }
}

static void test_newer_minor_accepted(void **state)
{
    struct p3d_reader rd;
    int n;

    (void)state;
    hdr_init();
    ((struct p3d_file_hdr *)buf)->minor = P3D_FORMAT_MINOR + 7;
    chunk(DATA);
    write_file(DATA + CHUNK);
    assert_int_equal(walk(&rd, &n), 0);
    assert_int_equal(n, 1);
    p3d_reader_close(&rd);
}

/* A bad record at offset DATA+16: next() fails naming that offset. */
static void expect_bad_rec(unsigned tag, unsigned len, const char *needle)
{
    struct p3d_reader rd;
    int n;

    hdr_init();
    rec(chunk(DATA), tag, len);
    write_file(DATA + CHUNK);
    assert_int_equal(walk(&rd, &n), -1);
    assert_int_equal(n, 1);
    if (!strstr(rd.msg, needle))
        fail_msg("message '%s' lacks '%s'", rd.msg, needle);
    assert_non_null(strstr(rd.msg, "at offset 4112"));
    assert_int_equal(rd.bad_off, DATA + 16);
    p3d_reader_close(&rd);
}

static void test_bad_records(void **state)
{
    (void)state;
    expect_bad_rec(P3D_REC_OP, 4, "bad record length 4");
    expect_bad_rec(P3D_REC_OP, 100, "bad record length 100");
    expect_bad_rec(P3D_REC_OP, 65528, "runs past the end of its chunk");
    expect_bad_rec(P3D_REC_OP, 88, "record 'op' too short (88 bytes, need 96)");
    expect_bad_rec(P3D_REC_GPU_OP, 24,
                   "record 'gpu_op' too short (24 bytes, need 32)");
    expect_bad_rec(P3D_REC_GPU_OP, 36, "bad record length 36");
    expect_bad_rec(0x0077, 16, "unknown required record tag 0x0077");
}

static void test_unknown_optional_skipped(void **state)
{
    struct p3d_reader rd;
    const struct p3d_rec_hdr *r;
    size_t off;

    (void)state;
    hdr_init();
    off = rec(chunk(DATA), 0x8077, 24);
    rec(off, P3D_REC_OP, sizeof(struct p3d_rec_op));
    write_file(DATA + CHUNK);
    assert_int_equal(p3d_reader_open(&rd, path), 0);
    assert_int_equal(p3d_reader_next(&rd, &r), 1);
    assert_int_equal(r->tag, P3D_REC_CHUNK);
    assert_int_equal(p3d_reader_next(&rd, &r), 1);
    assert_int_equal(r->tag, P3D_REC_OP);
    assert_int_equal(p3d_reader_next(&rd, &r), 0);
    p3d_reader_close(&rd);
}

static void test_truncated_tail(void **state)
{
    struct p3d_reader rd;
    size_t off;
    int n;

    (void)state;
    hdr_init();
    off = rec(chunk(DATA), P3D_REC_OP, sizeof(struct p3d_rec_op));
    rec(off, P3D_REC_OP, sizeof(struct p3d_rec_op));
    write_file(off + 40); /* the second op is cut */
    assert_int_equal(walk(&rd, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(rd.truncated, 1);
    p3d_reader_close(&rd);
}

static void test_chunk_without_header(void **state)
{
    struct p3d_reader rd;
    int n;

    (void)state;
    hdr_init();
    rec(DATA, P3D_REC_OP, sizeof(struct p3d_rec_op));
    write_file(DATA + CHUNK);
    assert_int_equal(walk(&rd, &n), -1);
    assert_non_null(strstr(rd.msg, "does not start with a chunk header"));
    p3d_reader_close(&rd);
}

static void test_empty_file(void **state)
{
    struct p3d_reader rd;

    (void)state;
    write_file(0);
    assert_int_equal(p3d_reader_open(&rd, path), P3D_READ_EMPTY);
    unlink(path);
}

/*
 * The mapped reader's records stay valid until close: the streaming
 * reader refills one buffer, so pointers into early chunks of a file
 * larger than that buffer would show later chunks' bytes.
 */
#define MANY 600 /* > P3D_READ_BYTES of 1 KiB chunks */
static uint8_t big[DATA + MANY * CHUNK];

static void test_mapped_records_stay_valid(void **state)
{
    const struct p3d_rec_op *kept[MANY];
    const struct p3d_rec_hdr *r;
    struct p3d_reader rd;
    FILE *f;
    int i, n = 0;

    (void)state;
    hdr_init();
    memcpy(big, buf, DATA);
    for (i = 0; i < MANY; i++) {
        uint8_t *c = big + DATA + (size_t)i * CHUNK;
        struct p3d_rec_op *o = (void *)(c + sizeof(struct p3d_chunk_hdr));

        ((struct p3d_rec_hdr *)c)->tag = P3D_REC_CHUNK;
        ((struct p3d_rec_hdr *)c)->len = sizeof(struct p3d_chunk_hdr);
        o->h.tag = P3D_REC_OP;
        o->h.len = sizeof(*o);
        o->op_id = 1000u + (unsigned)i;
    }
    snprintf(path, sizeof(path), "/tmp/p3d-test-reader-%d.p3d", getpid());
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(big, 1, sizeof(big), f), sizeof(big));
    fclose(f);
    assert_int_equal(p3d_reader_open_mapped(&rd, path), 0);
    while (p3d_reader_next(&rd, &r) > 0)
        if (r->tag == P3D_REC_OP && n < MANY)
            kept[n++] = (const void *)r;
    assert_int_equal(n, MANY);
    for (i = 0; i < MANY; i++)
        assert_int_equal(kept[i]->op_id, 1000u + (unsigned)i);
    p3d_reader_close(&rd);
    unlink(path);
}

/* A note record holding `text` (in a buffer of 128 bytes). */
static const struct p3d_rec_str *note_of(uint64_t *mem, const char *text)
{
    struct p3d_rec_str *s = (struct p3d_rec_str *)mem;
    size_t n = strlen(text);

    memset(mem, 0, 128);
    s->h.tag = P3D_REC_NOTE;
    s->h.len = (uint16_t)((sizeof(*s) + n + 7) & ~(size_t)7);
    s->n_bytes = (uint32_t)n;
    memcpy(s->text, text, n);
    return s;
}

/* The shim's watchdog notes (shim/p3d_watchdog.c) read back: its timeout,
 * the ops it could not track, the SIGTERM note with and without its
 * time; anything else is none of them. */
static void test_watchdog_notes(void **state)
{
    uint64_t mem[16], v = 7;

    (void)state;
    assert_true(p3d_rec_watchdog_timeout(
        note_of(mem, "watchdog: timeout_ns 1000000000"), &v));
    assert_int_equal(v, 1000000000ull);
    assert_true(p3d_rec_watchdog_untracked(
        note_of(mem, "watchdog: untracked_ops 3"), &v));
    assert_int_equal(v, 3);
    assert_true(p3d_rec_is_term_note(
        note_of(mem, "SIGTERM received at_ns 42")));
    assert_true(p3d_rec_term_time(note_of(mem, "SIGTERM received at_ns 42"),
                                  &v));
    assert_int_equal(v, 42);
    v = 7;
    assert_true(p3d_rec_is_term_note(note_of(mem, "SIGTERM received")));
    assert_false(p3d_rec_term_time(note_of(mem, "SIGTERM received"), &v));
    assert_false(p3d_rec_watchdog_timeout(
        note_of(mem, "watchdog: timeout_ns 12x"), &v));
    assert_false(p3d_rec_watchdog_timeout(
        note_of(mem, "watchdog: timeout_ns "), &v));
    assert_false(p3d_rec_watchdog_untracked(
        note_of(mem, "watchdog: timeout_ns 5"), &v));
    assert_int_equal(v, 7); /* untouched by the notes that did not parse */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_two_chunks),
        cmocka_unit_test(test_bad_header),
        cmocka_unit_test(test_newer_minor_accepted),
        cmocka_unit_test(test_bad_records),
        cmocka_unit_test(test_unknown_optional_skipped),
        cmocka_unit_test(test_truncated_tail),
        cmocka_unit_test(test_chunk_without_header),
        cmocka_unit_test(test_empty_file),
        cmocka_unit_test(test_mapped_records_stay_valid),
        cmocka_unit_test(test_watchdog_notes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
