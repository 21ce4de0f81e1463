/*
 * test_shim_util.h - a minimal trace reader for the shim's unit tests:
 * loads a whole .p3d file and walks its chunks and records, checking the
 * layout invariants of p3d_format.h on the way.
 */
#ifndef TEST_SHIM_UTIL_H
#define TEST_SHIM_UTIL_H

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "p3d_format.h"

struct tsu_trace {
    char *buf;
    size_t size;
    const struct p3d_file_hdr *hdr;
};

typedef void (*tsu_rec_fn)(const struct p3d_rec_hdr *rec,
                           const struct p3d_chunk_hdr *chunk, void *arg);

/* Load `path`; returns 0 on success with a valid magic and header. */
static inline int tsu_load(struct tsu_trace *t, const char *path)
{
    struct stat st;
    int fd = open(path, O_RDONLY);
    ssize_t n;

    memset(t, 0, sizeof(*t));
    if (fd < 0 || fstat(fd, &st) != 0)
        return -1;
    t->size = (size_t)st.st_size;
    t->buf = malloc(t->size + 1);
    n = read(fd, t->buf, t->size);
    close(fd);
    if (n != (ssize_t)t->size || t->size < P3D_FILE_HDR_BYTES)
        return -1;
    t->hdr = (const struct p3d_file_hdr *)t->buf;
    return memcmp(t->hdr->magic, P3D_MAGIC, P3D_MAGIC_LEN) == 0 ? 0 : -1;
}

static inline void tsu_free(struct tsu_trace *t)
{
    free(t->buf);
    memset(t, 0, sizeof(*t));
}

/*
 * Call fn for every record (chunk headers excluded).  Returns the number
 * of records, or -1 if a record straddles its chunk or has a bad len.
 */
static inline long tsu_walk(const struct tsu_trace *t, tsu_rec_fn fn,
                            void *arg)
{
    size_t cb = t->hdr->chunk_bytes, off;
    long n = 0;

    for (off = t->hdr->data_off; off + cb <= t->size; off += cb) {
        const struct p3d_chunk_hdr *ch =
            (const struct p3d_chunk_hdr *)(t->buf + off);
        size_t pos = sizeof(*ch);

        if (ch->h.tag == 0)
            continue;
        if (ch->h.tag != P3D_REC_CHUNK || ch->h.len != sizeof(*ch))
            return -1;
        while (pos + sizeof(struct p3d_rec_hdr) <= cb) {
            const struct p3d_rec_hdr *r =
                (const struct p3d_rec_hdr *)(t->buf + off + pos);
            if (r->tag == 0)
                break;
            if (r->len < 8 || r->len % 8 != 0 || pos + r->len > cb)
                return -1;
            if (fn != NULL)
                fn(r, ch, arg);
            n++;
            pos += r->len;
        }
    }
    return n;
}

#endif /* TEST_SHIM_UTIL_H */
