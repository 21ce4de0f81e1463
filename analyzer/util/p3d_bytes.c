/*
 * p3d_bytes.c - the byte buffer that p3d-analyze-mpi's messages are
 * written into and read from (p3d_bytes.h).
 */
#include <stdlib.h>
#include <string.h>

#include "p3d_bytes.h"
#include "p3d_util.h"

void p3d_bytes_put(struct p3d_bytes *b, const void *v, size_t n)
{
    if (!n)
        return;
    b->cap = p3d_grow((void **)&b->p, b->cap, b->n + n - 1, 1);
    memcpy(b->p + b->n, v, n);
    b->n += n;
}

void p3d_bytes_put_arr(struct p3d_bytes *b, const void *v, size_t n)
{
    uint64_t len = v ? n : 0;

    p3d_bytes_put(b, &len, sizeof(len));
    p3d_bytes_put(b, v, (size_t)len);
}

char *p3d_bytes_room(struct p3d_bytes *b, size_t n)
{
    if (n > b->cap) {
        free(b->p);
        b->p = p3d_xmalloc(n);
        b->cap = n;
    }
    b->n = n;
    return b->p;
}

void p3d_bytes_free(struct p3d_bytes *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

void p3d_bytes_get(struct p3d_bytes_in *r, void *v, size_t n)
{
    if (r->bad || n > r->n - r->off) {
        r->bad = 1;
        memset(v, 0, n);
        return;
    }
    memcpy(v, r->p + r->off, n);
    r->off += n;
}

const void *p3d_bytes_view_arr(struct p3d_bytes_in *r, size_t *n)
{
    uint64_t len = 0;
    const void *v;

    p3d_bytes_get(r, &len, sizeof(len));
    *n = 0;
    if (!len || r->bad || len > r->n - r->off) {
        r->bad |= len != 0;
        return NULL;
    }
    v = r->p + r->off;
    r->off += (size_t)len;
    *n = (size_t)len;
    return v;
}

void *p3d_bytes_get_arr(struct p3d_bytes_in *r, size_t *n)
{
    const void *v = p3d_bytes_view_arr(r, n);
    void *c;

    if (!v)
        return NULL;
    c = p3d_xmalloc(*n);
    memcpy(c, v, *n);
    return c;
}

void p3d_bytes_put_sums(struct p3d_bytes *b, const uint64_t *v, size_t n)
{
    uint64_t k = 0;
    size_t at = b->n;

    p3d_bytes_put(b, &k, sizeof(k)); /* the count, set below */
    for (size_t i = 0; i < n; i++)
        if (v[i]) {
            uint64_t e[2] = {i, v[i]};
            p3d_bytes_put(b, e, sizeof(e));
            k++;
        }
    memcpy(b->p + at, &k, sizeof(k));
}

void p3d_bytes_add_sums(struct p3d_bytes_in *r, uint64_t *v, size_t n)
{
    uint64_t k = 0, e[2];

    p3d_bytes_get(r, &k, sizeof(k));
    for (uint64_t i = 0; i < k && !r->bad; i++) {
        p3d_bytes_get(r, e, sizeof(e));
        if (r->bad || e[0] >= n) {
            r->bad = 1;
            return;
        }
        v[e[0]] += e[1];
    }
}

struct p3d_piece_head {
    int32_t kind, num;
    uint64_t len; /* bytes after the head, before the padding */
};

void p3d_bytes_put_piece(struct p3d_bytes *b, int kind, int num,
                         const void *v, size_t n)
{
    struct p3d_piece_head h = {kind, num, n};
    static const char pad[8];

    p3d_bytes_put(b, &h, sizeof(h));
    p3d_bytes_put(b, v, n);
    p3d_bytes_put(b, pad, (8 - n % 8) % 8);
}

int p3d_bytes_next_piece(const struct p3d_bytes *b, size_t *off,
                         struct p3d_piece *pc)
{
    struct p3d_piece_head h;
    size_t at = *off, pad;

    if (at == b->n)
        return 0;
    if (b->n - at < sizeof(h))
        return -1;
    memcpy(&h, b->p + at, sizeof(h));
    at += sizeof(h);
    pad = (8 - h.len % 8) % 8;
    if (h.len > b->n - at || pad > b->n - at - h.len)
        return -1;
    *pc = (struct p3d_piece){h.kind, h.num, b->p + at, (size_t)h.len};
    *off = at + (size_t)h.len + pad;
    return 1;
}
