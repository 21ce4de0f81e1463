/*
 * p3d_reader.h - validated reading of one trace file.
 *
 * A trace file is read a few chunks at a time into one buffer (pread; a
 * mapping costs a page fault per 4 KiB, several times the copy) and walked
 * chunk by chunk; every length
 * and offset is checked before a record is handed out, so the analysis
 * code above can trust a record's fixed fields.  Problems are written into
 * rd->msg (not printed) so callers running in threads can print them in a
 * stable order.
 */
#ifndef P3D_READER_H
#define P3D_READER_H

#include <stddef.h>
#include <stdint.h>

#include "p3d_format.h"

struct p3d_reader {
    const char *path;
    int fd;                   /* -1 when closed */
    uint8_t *buf;             /* file bytes [buf_off, buf_off + buf_len) */
    size_t buf_off;
    size_t buf_len;
    size_t buf_cap;
    size_t size;              /* file size */
    struct p3d_file_hdr hdr;  /* copy of the header */
    size_t chunk;             /* offset of the current chunk */
    size_t off;               /* offset of the next record */
    size_t chunk_end;         /* end of the current chunk (clipped) */
    uint64_t n_records;       /* records handed out (chunk headers too) */
    size_t bad_off;           /* offset of the problem in msg */
    int truncated;            /* the file ends inside a chunk */
    int corrupt;              /* walking stopped at bad data */
    int keep_unknown;         /* hand out unknown optional records */
    int borrowed;             /* buf is the caller's memory: the file */
    int mapped;               /* buf is our read-only mapping of it */
    char msg[512];            /* last problem, "" if none */
};

/* Largest world or communicator size believed (bounds allocations). */
#define P3D_MAX_RANKS (1 << 18)

/* Returned by p3d_reader_open for a zero-length file. */
#define P3D_READ_EMPTY 1

/*
 * Map `path` and validate its header.  Returns 0 on success,
 * P3D_READ_EMPTY for an empty file, -1 with rd->msg set otherwise.
 */
int p3d_reader_open(struct p3d_reader *rd, const char *path);

/*
 * Like p3d_reader_open, but the whole file is mapped, so every record
 * p3d_reader_next hands out stays valid until p3d_reader_close (the
 * streaming reader reuses one buffer).  For analyses that keep pointers
 * to records.
 */
int p3d_reader_open_mapped(struct p3d_reader *rd, const char *path);
/*
 * A mapped reader's pages leave the process's memory (madvise DONTNEED):
 * records stay valid, and a later access reads them back from the page
 * cache.  For a caller that keeps record pointers of many files but will
 * touch few of them again.  No effect on other readers.
 */
void p3d_reader_release(struct p3d_reader *rd);

/*
 * Like p3d_reader_open over `size` bytes at `buf` (kept by the caller
 * until p3d_reader_close); `name` is used in messages.  For fuzzing and
 * tests.
 */
int p3d_reader_open_mem(struct p3d_reader *rd, const char *name,
                        const void *buf, size_t size);

/*
 * Check a file header held in memory (size = file size).
 * Returns 0 or -1 with rd->msg set.
 */
int p3d_reader_check_hdr(struct p3d_reader *rd, const void *buf, size_t size);

/*
 * Hand out the next record.  Returns 1 with *rec set, 0 at the end of the
 * data (rd->truncated says whether the tail was cut), -1 when a record is
 * invalid (rd->msg names the offset; records before it were valid).
 * *rec stays valid until the next call (copy what you keep).
 */
int p3d_reader_next(struct p3d_reader *rd, const struct p3d_rec_hdr **rec);

/*
 * p3d_reader_next with the common case inline: an op or GPU-op record
 * inside the chunk being walked (what p3d_reader_next's own fast check
 * accepts; anything else goes to it).  For the per-record loops.
 */
static inline int p3d_reader_next_inl(struct p3d_reader *rd,
                                      const struct p3d_rec_hdr **rec)
{
    size_t off = rd->off;
    const struct p3d_rec_hdr *r;
    unsigned len;

    if (rd->corrupt || off == rd->chunk ||
        off + sizeof(*r) > rd->chunk_end)
        return p3d_reader_next(rd, rec);
    r = (const struct p3d_rec_hdr *)(rd->buf + (off - rd->buf_off));
    len = r->len;
    if (len % P3D_REC_ALIGN || off + len > rd->chunk_end ||
        !((r->tag == P3D_REC_OP && len >= sizeof(struct p3d_rec_op)) ||
          (r->tag == P3D_REC_GPU_OP &&
           len >= sizeof(struct p3d_rec_gpu_op))))
        return p3d_reader_next(rd, rec);
    rd->off = off + len;
    rd->n_records++;
    *rec = r;
    return 1;
}

/*
 * The one walk over a trace file's records, for every analysis and view:
 * each record from the current position on goes to on_rec(ctx, rd, rec),
 * in file order, validated as p3d_reader_next validates it.  Returns 0 at
 * the end, -1 at bad data (rd->msg says what; the records before it were
 * handed out).  Inline, so that a handler known at the call is inlined
 * into the loop.
 */
typedef void (*p3d_rec_fn)(void *ctx, const struct p3d_reader *rd,
                           const struct p3d_rec_hdr *rec);
static inline int p3d_reader_walk(struct p3d_reader *rd, p3d_rec_fn on_rec,
                                  void *ctx)
{
    const struct p3d_rec_hdr *r;
    int n;

    while ((n = p3d_reader_next_inl(rd, &r)) > 0)
        on_rec(ctx, rd, r);
    return n;
}

/* Offset of a record handed out by p3d_reader_next. */
size_t p3d_reader_offset(const struct p3d_reader *rd,
                         const struct p3d_rec_hdr *rec);

/* Walk from the first record again. */
void p3d_reader_rewind(struct p3d_reader *rd);

void p3d_reader_close(struct p3d_reader *rd);

/* Name of a known record tag, NULL if unknown. */
const char *p3d_rec_name(unsigned tag);
/* Smallest valid len of a known tag, 0 if unknown. */
size_t p3d_rec_min_len(unsigned tag);

/* Whether a string record is the shim's note that the process got
 * SIGTERM (the shim writes "SIGTERM received" from its handler). */
int p3d_rec_is_term_note(const struct p3d_rec_str *s);
/* The watchdog's note of its timeout (shim/p3d_watchdog.c, written when
 * it starts): 1 and *ns if s is that note (0 ns: reports are off). */
int p3d_rec_watchdog_timeout(const struct p3d_rec_str *s, uint64_t *ns);
/* When the SIGTERM came, from its note (the shim's since this session;
 * older notes carry no time): 1 and *t. */
int p3d_rec_term_time(const struct p3d_rec_str *s, uint64_t *t);
/* Its note at SIGTERM of ops it could not track (no in-flight slot). */
int p3d_rec_watchdog_untracked(const struct p3d_rec_str *s, uint64_t *n);
/* Whether s is the shim's note that NCCL's profiler plugin timed the
 * rank's NCCL ops. */
int p3d_rec_is_plugin_note(const struct p3d_rec_str *s);

#endif /* P3D_READER_H */
