/*
 * test_shim_writer.c - the trace writer on its own: records round-trip
 * through the mapped file, chunk boundaries, many threads, drops, the
 * close-time header and trim, lazy creation, name clashes, symlinks and
 * unwritable directories.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "p3d_shim.h"
#include "test_shim_util.h"

#define NTHREADS 8
#define PER_THREAD 20000

static char tmpdir[256];

/* Point the writer at a fresh job folder; nothing is created yet. */
static void use_job(const char *job, int rank)
{
    struct p3d_cfg *cfg = p3d_core_cfg();

    p3d_writer_reset(0);
    snprintf(cfg->dir, sizeof(cfg->dir), "%s", tmpdir);
    snprintf(cfg->job_id, sizeof(cfg->job_id), "%s", job);
    cfg->rank = rank;
    cfg->world_size = 4;
    cfg->disabled = 0;
    cfg->max_bytes = 0;
}

static void job_file(char *buf, size_t n, const char *job, const char *name)
{
    snprintf(buf, n, "%s/%s/%s", tmpdir, job, name);
}

static int group_setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/p3d-test-writer-XXXXXX");
    return mkdtemp(tmpdir) != NULL ? 0 : -1;
}

static int group_teardown(void **state)
{
    char cmd[300];

    (void)state;
    p3d_writer_reset(0);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* A MARK record carrying `value`, committed. */
static int put_mark(uint64_t value)
{
    struct p3d_rec_mark *m = p3d_rec_reserve(P3D_REC_MARK, sizeof(*m) + 8);

    if (m == NULL)
        return -1;
    m->t = p3d_now();
    m->value = value;
    memcpy(m->name, "step", 5);
    p3d_rec_commit(m);
    return 0;
}

struct marks {
    long n;
    uint64_t next[NTHREADS + 1];  /* per-thread expected value */
    int bad;
    long cmdline, env, summary;
};

static void count_marks(const struct p3d_rec_hdr *r,
                        const struct p3d_chunk_hdr *ch, void *arg)
{
    struct marks *m = arg;

    (void)ch;
    if (r->tag == P3D_REC_CMDLINE)
        m->cmdline++;
    if (r->tag == P3D_REC_ENV)
        m->env++;
    if (r->tag == P3D_REC_SUMMARY)
        m->summary++;
    if (r->tag != P3D_REC_MARK)
        return;
    {
        const struct p3d_rec_mark *mk = (const struct p3d_rec_mark *)r;
        unsigned th = (unsigned)(mk->value >> 32);
        uint64_t i = mk->value & 0xffffffffu;

        if (th > NTHREADS || i != m->next[th])
            m->bad++;
        else
            m->next[th]++;
        if (strcmp(mk->name, "step") != 0)
            m->bad++;
        m->n++;
    }
}

static void test_shim_writer_lazy_and_roundtrip(void **state)
{
    char path[600];
    struct tsu_trace t;
    struct marks m = {0};
    struct stat st;
    int i;

    (void)state;
    use_job("rt", 3);
    job_file(path, sizeof(path), "rt", "rank-00003.p3d");
    assert_int_not_equal(stat(path, &st), 0); /* nothing before a record */
    for (i = 0; i < 100; i++)
        assert_int_equal(put_mark(i), 0);
    assert_int_equal(stat(path, &st), 0);
    /* readable while still open, as after kill -9 */
    assert_int_equal(tsu_load(&t, path), 0);
    assert_int_equal(tsu_walk(&t, count_marks, &m), 102);
    assert_int_equal(m.n, 100);
    assert_int_equal(m.bad, 0);
    assert_int_equal(m.cmdline, 1);
    assert_int_equal(m.env, 1);
    assert_int_equal(t.hdr->rank, 3);
    assert_int_equal(t.hdr->world_size, 4);
    assert_int_equal(t.hdr->major, P3D_FORMAT_MAJOR);
    assert_int_equal(t.hdr->chunk_bytes, P3D_CHUNK_BYTES);
    assert_int_equal(t.hdr->data_off, P3D_DATA_OFFSET);
    assert_int_equal(t.hdr->pid, (uint64_t)getpid());
    assert_string_equal(t.hdr->job_id, "rt");
    assert_true(t.hdr->start_realtime_ns > 1600000000ull * 1000000000ull);
    assert_true(t.hdr->start_mono_ns > 0);
    assert_int_equal(t.hdr->flags & P3D_F_CLOSED, 0);
    tsu_free(&t);
}

static void test_shim_writer_close_header_and_trim(void **state)
{
    char path[600];
    struct tsu_trace t;
    struct marks m = {0};
    int i;

    (void)state;
    use_job("close", 0);
    for (i = 0; i < 10; i++)
        assert_int_equal(put_mark(i), 0);
    p3d_writer_close();
    assert_null(p3d_rec_reserve(P3D_REC_MARK, 32)); /* after close */
    job_file(path, sizeof(path), "close", "rank-00000.p3d");
    assert_int_equal(tsu_load(&t, path), 0);
    assert_true(t.hdr->flags & P3D_F_CLOSED);
    assert_true(t.hdr->end_mono_ns >= t.hdr->start_mono_ns);
    /* cmdline + env + 10 marks + summary */
    assert_int_equal(t.hdr->n_records, 13);
    assert_int_equal(tsu_walk(&t, count_marks, &m), 13);
    assert_int_equal(m.summary, 1);
    /* the zero tail was trimmed to the one chunk used */
    assert_int_equal(t.size, P3D_DATA_OFFSET + P3D_CHUNK_BYTES);
    tsu_free(&t);
}

static void test_shim_writer_chunk_boundaries(void **state)
{
    char path[600];
    struct tsu_trace t;
    struct marks m = {0};
    int i, n = 20000; /* 32-byte marks: ~10 chunks */

    (void)state;
    use_job("chunks", 1);
    for (i = 0; i < n; i++)
        assert_int_equal(put_mark(i), 0);
    job_file(path, sizeof(path), "chunks", "rank-00001.p3d");
    assert_int_equal(tsu_load(&t, path), 0);
    assert_int_equal(tsu_walk(&t, count_marks, &m), n + 2);
    assert_int_equal(m.n, n);
    assert_int_equal(m.bad, 0);
    tsu_free(&t);
}

static void *writer_thread(void *arg)
{
    uint64_t th = (uint64_t)(uintptr_t)arg;
    int i;

    for (i = 0; i < PER_THREAD; i++) {
        if (put_mark(th << 32 | (uint64_t)i) != 0)
            return (void *)1;
    }
    return NULL;
}

static void test_shim_writer_many_threads(void **state)
{
    pthread_t th[NTHREADS];
    char path[600];
    struct tsu_trace t;
    struct marks m = {0};
    void *ret;
    int i;

    (void)state;
    use_job("threads", 2);
    assert_int_equal(put_mark(0), 0); /* main thread is thread 0 */
    for (i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, writer_thread,
                       (void *)(uintptr_t)(i + 1));
    for (i = 0; i < NTHREADS; i++) {
        pthread_join(th[i], &ret);
        assert_null(ret);
    }
    job_file(path, sizeof(path), "threads", "rank-00002.p3d");
    assert_int_equal(tsu_load(&t, path), 0);
    tsu_walk(&t, count_marks, &m);
    assert_int_equal(m.n, 1 + NTHREADS * PER_THREAD);
    assert_int_equal(m.bad, 0);
    for (i = 1; i <= NTHREADS; i++)
        assert_int_equal(m.next[i], PER_THREAD);
    assert_int_equal(p3d_writer_dropped(), 0);
    tsu_free(&t);
}

static void test_shim_writer_drops_counted(void **state)
{
    char path[600];
    struct tsu_trace t;
    int i, ok = 0;

    (void)state;
    use_job("drops", 5);
    assert_int_equal(put_mark(0), 0);
    assert_null(p3d_rec_reserve(P3D_REC_NOTE, P3D_CHUNK_BYTES)); /* too big */
    assert_int_equal(p3d_writer_dropped(), 1);
    /* a 1 MiB cap holds 16 chunks; the rest is dropped and counted */
    use_job("cap", 5);
    p3d_core_cfg()->max_bytes = 1u << 20;
    for (i = 0; i < 100000; i++)
        ok += put_mark(i) == 0;
    assert_true(ok > 16 * 1000 && ok < 16 * 2100);
    /* + the warning's own P3D_REC_NOTE, which found no room either */
    assert_true(p3d_writer_dropped() >= (uint64_t)(100000 - ok));
    job_file(path, sizeof(path), "cap", "rank-00005.p3d");
    assert_int_equal(tsu_load(&t, path), 0);
    assert_true(t.hdr->flags & P3D_F_DROPPED);
    /* space is reserved up to the cap, never beyond it */
    assert_int_equal(t.size, P3D_DATA_OFFSET + (1u << 20));
    assert_int_equal(t.hdr->dropped_records, p3d_writer_dropped());
    tsu_free(&t);
}

/* A thread with last words (the watchdog's part): `n` marks of value
 * LAST_MARK + i, and how many found room. */
#define LAST_MARK 0x7700000000ull
struct last_words {
    int n, ok;
};

static void *last_words_thread(void *arg)
{
    struct last_words *w = arg;

    p3d_writer_last_words();
    for (int i = 0; i < w->n; i++)
        w->ok += put_mark(LAST_MARK + (uint64_t)i) == 0;
    return NULL;
}

static void count_last(const struct p3d_rec_hdr *r,
                       const struct p3d_chunk_hdr *ch, void *arg)
{
    (void)ch;
    if (r->tag == P3D_REC_MARK &&
        ((const struct p3d_rec_mark *)r)->value >= LAST_MARK)
        (*(long *)arg)++;
}

/*
 * A full file keeps its last chunk for the thread with last words: the
 * application's records are dropped, the watchdog's still land (hang
 * reports and the SIGTERM note come last), and the file stays within
 * its cap.  Past that chunk, its records are dropped too.
 */
static void test_shim_writer_spare_for_last_words(void **state)
{
    char path[600];
    struct tsu_trace t;
    struct last_words w = {3000, 0}, more = {10, 0};
    pthread_t th;
    long last = 0;
    int i, ok = 0;

    (void)state;
    use_job("spare", 2);
    p3d_core_cfg()->max_bytes = 1u << 20; /* 16 chunks, 1 of them spare */
    for (i = 0; i < 100000; i++)
        ok += put_mark(i) == 0;
    assert_true(ok > 15 * 1000 && ok < 15 * 2100);
    assert_int_equal(put_mark(1), -1);
    assert_int_equal(pthread_create(&th, NULL, last_words_thread, &w), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_true(w.ok > 1000 && w.ok < 3000); /* one chunk, no more */
    assert_int_equal(put_mark(2), -1); /* the spare is not the app's */
    assert_int_equal(pthread_create(&th, NULL, last_words_thread, &more), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(more.ok, 0); /* and there is one */
    p3d_writer_close();
    job_file(path, sizeof(path), "spare", "rank-00002.p3d");
    assert_int_equal(tsu_load(&t, path), 0);
    assert_true(t.hdr->flags & P3D_F_DROPPED);
    assert_int_equal(t.size, P3D_DATA_OFFSET + (1u << 20));
    tsu_walk(&t, count_last, &last);
    assert_int_equal(last, w.ok);
    tsu_free(&t);
}

static void test_shim_writer_name_clash_and_pid(void **state)
{
    char path[600];
    struct stat st;

    (void)state;
    use_job("clash", 7);
    assert_int_equal(put_mark(1), 0);
    use_job("clash", 7); /* a second run into the same folder */
    assert_int_equal(put_mark(2), 0);
    snprintf(path, sizeof(path), "%s/clash/rank-00007.%ld.p3d", tmpdir,
             (long)getpid());
    assert_int_equal(stat(path, &st), 0);
    use_job("norank", -1);
    assert_int_equal(put_mark(3), 0);
    snprintf(path, sizeof(path), "%s/norank/pid-%ld.p3d", tmpdir,
             (long)getpid());
    assert_int_equal(stat(path, &st), 0);
}

static void test_shim_writer_never_follows_symlink(void **state)
{
    char dir[600], link[700], target[600];
    struct stat st;

    (void)state;
    use_job("sym", 9);
    snprintf(dir, sizeof(dir), "%s/sym", tmpdir);
    mkdir(dir, 0777);
    snprintf(target, sizeof(target), "%s/victim", tmpdir);
    snprintf(link, sizeof(link), "%s/rank-00009.p3d", dir);
    assert_int_equal(symlink(target, link), 0);
    assert_int_equal(put_mark(1), 0); /* goes to rank-00009.<pid>.p3d */
    assert_int_not_equal(stat(target, &st), 0);
    snprintf(link, sizeof(link), "%s/rank-00009.%ld.p3d", dir,
             (long)getpid());
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISREG(st.st_mode));
}

static void test_shim_writer_unwritable_dir(void **state)
{
    char dir[600];
    int fd;

    (void)state;
    /* a regular file where a directory should be: fails even for root */
    snprintf(dir, sizeof(dir), "%s/plainfile", tmpdir);
    fd = open(dir, O_CREAT | O_WRONLY, 0644);
    assert_true(fd >= 0);
    close(fd);
    use_job("job", 0);
    snprintf(p3d_core_cfg()->dir, sizeof(p3d_core_cfg()->dir), "%s", dir);
    assert_null(p3d_rec_reserve(P3D_REC_MARK, 32));
    assert_null(p3d_rec_reserve(P3D_REC_MARK, 32)); /* stays off */
    assert_int_equal(p3d_writer_is_open(), 0);
}

static void test_shim_writer_disabled_writes_nothing(void **state)
{
    char path[600];
    struct stat st;

    (void)state;
    use_job("off", 0);
    p3d_core_cfg()->disabled = 1;
    assert_null(p3d_rec_reserve(P3D_REC_MARK, 32));
    snprintf(path, sizeof(path), "%s/off", tmpdir);
    assert_int_not_equal(stat(path, &st), 0);
    p3d_core_cfg()->disabled = 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shim_writer_lazy_and_roundtrip),
        cmocka_unit_test(test_shim_writer_close_header_and_trim),
        cmocka_unit_test(test_shim_writer_chunk_boundaries),
        cmocka_unit_test(test_shim_writer_many_threads),
        cmocka_unit_test(test_shim_writer_drops_counted),
        cmocka_unit_test(test_shim_writer_spare_for_last_words),
        cmocka_unit_test(test_shim_writer_name_clash_and_pid),
        cmocka_unit_test(test_shim_writer_never_follows_symlink),
        cmocka_unit_test(test_shim_writer_unwritable_dir),
        cmocka_unit_test(test_shim_writer_disabled_writes_nothing),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
