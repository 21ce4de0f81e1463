/*
 * p3d_reader.c - validated reading of one trace file.
 *
 * The file is read with pread, P3D_READ_CHUNKS chunks at a time, into one
 * buffer per reader that is reused (no per-record allocation).  A mapping
 * would save the copy but costs a page fault per 4 KiB page, which is
 * several times the copy (bench/: 4x the CPU on the test VM).
 * Validation follows the format header: magic, major version (newer major
 * refused, newer minor accepted), sane hdr_len/chunk_bytes/data_off, then
 * per record: len >= 8, a multiple of 8, inside the chunk and the file,
 * known tags at least their struct size, unknown optional tags skipped,
 * unknown required tags refused.  A chunk ends at a zero tag.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "p3d_reader.h"
#include "p3d_util.h"

#define P3D_READ_BYTES (256u << 10) /* one read: whole chunks, >= 1 chunk */

#define P3D_CORRUPT(rd, off, ...)                                             \
    p3d_corrupt((rd), (off), __LINE__, __VA_ARGS__)

static int p3d_corrupt(struct p3d_reader *rd, size_t off, int line,
                       const char *fmt, ...) P3D_PRINTF(4, 5);

static int p3d_corrupt(struct p3d_reader *rd, size_t off, int line,
                       const char *fmt, ...)
{
    char why[320];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    snprintf(rd->msg, sizeof(rd->msg), "'%s': %s at offset %zu (reader.c:%d)",
             rd->path, why, off, line);
    rd->bad_off = off;
    return -1;
}

static int p3d_hdr_fail(struct p3d_reader *rd, const char *fmt, ...)
    P3D_PRINTF(2, 3);

static int p3d_hdr_fail(struct p3d_reader *rd, const char *fmt, ...)
{
    char why[320];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    snprintf(rd->msg, sizeof(rd->msg), "'%s': %s", rd->path, why);
    return -1;
}

const char *p3d_rec_name(unsigned tag)
{
    switch (tag) {
#define P3D_X_NAME(name, value, type, text) case value: return text;
    P3D_RECORDS(P3D_X_NAME)
#undef P3D_X_NAME
    }
    return NULL;
}

size_t p3d_rec_min_len(unsigned tag)
{
    switch (tag) {
#define P3D_X_MIN(name, value, type, text) \
    case value: return sizeof(struct type);
    P3D_RECORDS(P3D_X_MIN)
#undef P3D_X_MIN
    }
    return 0;
}

static int p3d_check_geometry(struct p3d_reader *rd, size_t size)
{
    const struct p3d_file_hdr *h = &rd->hdr;

    if (h->hdr_len < P3D_FILE_HDR_BYTES)
        return p3d_hdr_fail(rd, "bad header length %u (want >= %u)",
                            h->hdr_len, P3D_FILE_HDR_BYTES);
    if (h->chunk_bytes < 64 || h->chunk_bytes % P3D_REC_ALIGN ||
        h->chunk_bytes > (1u << 30))
        return p3d_hdr_fail(rd, "bad chunk size %u", h->chunk_bytes);
    if (h->data_off < h->hdr_len || h->data_off % P3D_REC_ALIGN)
        return p3d_hdr_fail(rd, "bad data offset %u", h->data_off);
    if (h->rank < -1 || h->rank >= P3D_MAX_RANKS)
        return p3d_hdr_fail(rd, "bad rank %d in the header", h->rank);
    if (h->world_size < -1 || h->world_size > P3D_MAX_RANKS)
        return p3d_hdr_fail(rd, "bad world size %d in the header",
                            h->world_size);
    if (h->data_off > size && size > P3D_FILE_HDR_BYTES)
        return p3d_hdr_fail(rd, "data offset %u past the end of the file "
                            "(%zu bytes)", h->data_off, size);
    return 0;
}

int p3d_reader_check_hdr(struct p3d_reader *rd, const void *buf, size_t size)
{
    if (size < P3D_FILE_HDR_BYTES)
        return p3d_hdr_fail(rd, "file too short for a trace header "
                            "(%zu bytes, need %d)", size, P3D_FILE_HDR_BYTES);
    memcpy(&rd->hdr, buf, sizeof(rd->hdr));
    if (memcmp(rd->hdr.magic, P3D_MAGIC, P3D_MAGIC_LEN))
        return p3d_hdr_fail(rd, "bad magic (not a p3dtrace file)");
    if (rd->hdr.major != P3D_FORMAT_MAJOR)
        return p3d_hdr_fail(rd, "trace format version %u.%u, this "
                            "p3d-analyze reads version %u.x (up to %u.%u)",
                            rd->hdr.major, rd->hdr.minor, P3D_FORMAT_MAJOR,
                            P3D_FORMAT_MAJOR, P3D_FORMAT_MINOR);
    return p3d_check_geometry(rd, size);
}

/* Make file bytes [off, end) readable in rd->buf.  0, or -1 on error. */
static int p3d_fill(struct p3d_reader *rd, size_t off, size_t end)
{
    size_t want = end - off, got = 0, chunk = rd->hdr.chunk_bytes;

    if (rd->borrowed) /* the whole file is in buf */
        return end <= rd->size ? 0 : -1;

    if (off >= rd->buf_off && end <= rd->buf_off + rd->buf_len)
        return 0;
    if (want < P3D_READ_BYTES && chunk)
        want = (P3D_READ_BYTES / chunk > 0 ? P3D_READ_BYTES / chunk : 1) *
               (size_t)chunk;
    if (want < end - off)
        want = end - off;
    if (off + want > rd->size)
        want = rd->size - off;
    if (want > rd->buf_cap) {
        free(rd->buf);
        rd->buf = p3d_xmalloc(want);
        rd->buf_cap = want;
    }
    rd->buf_off = off;
    rd->buf_len = 0;
    while (got < want) {
        ssize_t n = pread(rd->fd, rd->buf + got, want - got,
                          (off_t)(off + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    rd->buf_len = got;
    return off + got >= end ? 0 : -1;
}

/* Pointer to file offset `off` (inside the filled range). */
static const uint8_t *p3d_at(const struct p3d_reader *rd, size_t off)
{
    return rd->buf + (off - rd->buf_off);
}

int p3d_reader_open(struct p3d_reader *rd, const char *path)
{
    struct stat st;
    int fd;

    memset(rd, 0, sizeof(*rd));
    rd->fd = -1;
    rd->path = path;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return p3d_hdr_fail(rd, "cannot open: %s", strerror(errno));
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return p3d_hdr_fail(rd, "not a regular file");
    }
    rd->size = (size_t)st.st_size;
    if (rd->size == 0) {
        close(fd);
        snprintf(rd->msg, sizeof(rd->msg), "'%s': empty file", path);
        return P3D_READ_EMPTY;
    }
    rd->fd = fd;
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    p3d_fill(rd, 0, rd->size < P3D_FILE_HDR_BYTES ? rd->size
                                                  : P3D_FILE_HDR_BYTES);
    if (rd->buf_len < (rd->size < P3D_FILE_HDR_BYTES ? rd->size
                                                     : P3D_FILE_HDR_BYTES)) {
        p3d_reader_close(rd);
        return p3d_hdr_fail(rd, "cannot read: %s", strerror(errno));
    }
    if (p3d_reader_check_hdr(rd, rd->buf, rd->size) < 0) {
        p3d_reader_close(rd);
        return -1;
    }
    p3d_reader_rewind(rd);
    return 0;
}

int p3d_reader_open_mem(struct p3d_reader *rd, const char *name,
                        const void *buf, size_t size)
{
    memset(rd, 0, sizeof(*rd));
    rd->fd = -1;
    rd->path = name;
    if (size == 0) {
        snprintf(rd->msg, sizeof(rd->msg), "'%s': empty file", name);
        return P3D_READ_EMPTY;
    }
    rd->borrowed = 1;
    rd->buf = (uint8_t *)buf;
    rd->buf_len = rd->buf_cap = rd->size = size;
    if (p3d_reader_check_hdr(rd, rd->buf, rd->size) < 0) {
        p3d_reader_close(rd);
        return -1;
    }
    p3d_reader_rewind(rd);
    return 0;
}

int p3d_reader_open_mapped(struct p3d_reader *rd, const char *path)
{
    int ret = p3d_reader_open(rd, path);
    void *map;

    if (ret != 0)
        return ret;
    map = mmap(NULL, rd->size, PROT_READ, MAP_PRIVATE, rd->fd, 0);
    if (map == MAP_FAILED) {
        p3d_reader_close(rd);
        return p3d_hdr_fail(rd, "cannot map: %s", strerror(errno));
    }
    p3d_reader_close(rd);
    ret = p3d_reader_open_mem(rd, path, map, rd->size);
    if (ret != 0) {
        munmap(map, rd->size);
        return ret;
    }
    rd->mapped = 1;
    return 0;
}

void p3d_reader_release(struct p3d_reader *rd)
{
    if (rd->mapped && rd->buf)
        madvise(rd->buf, rd->size, MADV_DONTNEED);
}

void p3d_reader_rewind(struct p3d_reader *rd)
{
    rd->chunk = rd->hdr.data_off;
    rd->off = rd->chunk;
    rd->chunk_end = 0; /* no chunk entered yet */
    rd->n_records = 0;
    rd->truncated = 0;
    rd->corrupt = 0;
}

void p3d_reader_close(struct p3d_reader *rd)
{
    if (rd->fd >= 0)
        close(rd->fd);
    rd->fd = -1;
    if (rd->mapped)
        munmap(rd->buf, rd->size);
    else if (!rd->borrowed)
        free(rd->buf);
    rd->mapped = 0;
    rd->buf = NULL;
    rd->buf_cap = rd->buf_len = 0;
}

size_t p3d_reader_offset(const struct p3d_reader *rd,
                         const struct p3d_rec_hdr *rec)
{
    return rd->buf_off + (size_t)((const uint8_t *)rec - rd->buf);
}

/* Enter the chunk at rd->chunk.  Returns 1 entered, 0 no more chunks. */
static int p3d_enter_chunk(struct p3d_reader *rd)
{
    size_t nominal = rd->chunk + rd->hdr.chunk_bytes;

    if (rd->chunk + sizeof(struct p3d_rec_hdr) > rd->size) {
        if (rd->chunk < rd->size)
            rd->truncated = 1;
        return 0;
    }
    rd->chunk_end = nominal <= rd->size ? nominal : rd->size;
    if (nominal > rd->size)
        rd->truncated = 1;
    if (p3d_fill(rd, rd->chunk, rd->chunk_end) != 0) {
        rd->chunk_end = rd->chunk; /* unreadable: treat as cut here */
        rd->truncated = 1;
        return 0;
    }
    rd->off = rd->chunk;
    return 1;
}

static void p3d_next_chunk(struct p3d_reader *rd)
{
    rd->chunk += rd->hdr.chunk_bytes;
    rd->chunk_end = 0;
}

/* Validate the record at rd->off.  1 ok, 0 end of chunk, -1 bad. */
static int p3d_check_rec(struct p3d_reader *rd, const struct p3d_rec_hdr *r)
{
    size_t off = rd->off, min;
    unsigned tag = r->tag, len = r->len;

    if (off == rd->chunk && tag != P3D_REC_CHUNK)
        return P3D_CORRUPT(rd, off, "chunk does not start with a chunk "
                           "header (tag 0x%04x)", tag);
    if (len < 8 || len % P3D_REC_ALIGN)
        return P3D_CORRUPT(rd, off, "bad record length %u (tag 0x%04x)",
                           len, tag);
    if (off + len > rd->chunk + rd->hdr.chunk_bytes)
        return P3D_CORRUPT(rd, off, "record length %u (tag 0x%04x) runs "
                           "past the end of its chunk", len, tag);
    if (off + len > rd->size) {
        rd->truncated = 1;
        return 0;
    }
    min = p3d_rec_min_len(tag);
    if (min == 0 && !(tag & P3D_TAG_OPTIONAL))
        return P3D_CORRUPT(rd, off, "unknown required record tag 0x%04x",
                           tag);
    if (len < min)
        return P3D_CORRUPT(rd, off, "record '%s' too short (%u bytes, "
                           "need %zu)", p3d_rec_name(tag), len, min);
    return 1;
}

/* The records of nearly every op (an op and its GPU times) inside the
 * current chunk, not its first: valid without p3d_check_rec's walk. */
static int p3d_rec_common(const struct p3d_reader *rd,
                          const struct p3d_rec_hdr *r)
{
    unsigned len = r->len;

    if (len % P3D_REC_ALIGN || rd->off == rd->chunk ||
        rd->off + len > rd->chunk_end)
        return 0;
    return (r->tag == P3D_REC_OP && len >= sizeof(struct p3d_rec_op)) ||
           (r->tag == P3D_REC_GPU_OP &&
            len >= sizeof(struct p3d_rec_gpu_op));
}

int p3d_reader_next(struct p3d_reader *rd, const struct p3d_rec_hdr **rec)
{
    for (;;) {
        const struct p3d_rec_hdr *r;
        int ok;

        if (rd->corrupt)
            return -1;
        if (!rd->chunk_end && !p3d_enter_chunk(rd))
            return 0;
        if (rd->off + sizeof(*r) > rd->chunk_end ||
            ((const struct p3d_rec_hdr *)p3d_at(rd, rd->off))->tag == 0) {
            if (rd->chunk_end < rd->chunk + rd->hdr.chunk_bytes &&
                rd->off + sizeof(*r) > rd->chunk_end)
                rd->truncated = 1;
            p3d_next_chunk(rd);
            continue;
        }
        r = (const struct p3d_rec_hdr *)p3d_at(rd, rd->off);
        if (p3d_rec_common(rd, r)) {
            rd->off += r->len;
            rd->n_records++;
            *rec = r;
            return 1;
        }
        ok = p3d_check_rec(rd, r);
        if (ok < 0) {
            rd->corrupt = 1;
            return -1;
        }
        if (ok == 0) {
            p3d_next_chunk(rd);
            continue;
        }
        rd->off += r->len;
        rd->n_records++;
        if (!p3d_rec_min_len(r->tag) && !rd->keep_unknown)
            continue; /* unknown optional record: skip */
        *rec = r;
        return 1;
    }
}

/* Whether note s starts with text (a literal of n - 1 characters). */
static int p3d_note_starts(const struct p3d_rec_str *s, const char *text,
                           size_t n)
{
    return s->h.len >= sizeof(*s) + n - 1 && s->n_bytes >= n - 1 &&
           !memcmp(s->text, text, n - 1);
}

int p3d_rec_is_term_note(const struct p3d_rec_str *s)
{
    static const char term[] = "SIGTERM received";

    return p3d_note_starts(s, term, sizeof(term));
}

/* The number after note s's prefix `text` (n - 1 characters). */
static int p3d_note_number(const struct p3d_rec_str *s, const char *text,
                           size_t n_text, uint64_t *v)
{
    char num[24];
    size_t n;

    if (!p3d_note_starts(s, text, n_text))
        return 0;
    n = s->n_bytes - (n_text - 1);
    if (n == 0 || n >= sizeof(num) ||
        s->h.len < sizeof(*s) + s->n_bytes)
        return 0;
    memcpy(num, s->text + n_text - 1, n);
    num[n] = 0;
    if (strspn(num, "0123456789") != n)
        return 0;
    *v = strtoull(num, NULL, 10);
    return 1;
}

int p3d_rec_watchdog_timeout(const struct p3d_rec_str *s, uint64_t *ns)
{
    static const char wd[] = "watchdog: timeout_ns ";

    return p3d_note_number(s, wd, sizeof(wd), ns);
}

int p3d_rec_term_time(const struct p3d_rec_str *s, uint64_t *t)
{
    static const char at[] = "SIGTERM received at_ns ";

    return p3d_note_number(s, at, sizeof(at), t);
}

int p3d_rec_watchdog_untracked(const struct p3d_rec_str *s, uint64_t *n)
{
    static const char wd[] = "watchdog: untracked_ops ";

    return p3d_note_number(s, wd, sizeof(wd), n);
}

/* The shim's note when P3D_GPU_TIMING=plugin took NCCL's profiler plugin
 * (shim/p3d_gpu_hooks.c, p3d_gpu_ops_source). */
int p3d_rec_is_plugin_note(const struct p3d_rec_str *s)
{
    static const char plugin[] =
        "gpu timing: NCCL ops timed by the NCCL profiler plugin";

    return p3d_note_starts(s, plugin, sizeof(plugin));
}
