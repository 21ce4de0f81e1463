/*
 * p3d_time_spill.c - pass 2 of the time analysis (p3d_pass.c) needs each
 * rank's ops again, on the aligned clock that pass 1 finds.  Decoding the
 * rank file a third time (after the scan and pass 1) cost about a third
 * of the analysis, and memory cannot hold every rank's ops (1,024 ranks
 * x 100k ops are 8 GB as struct p3d_top).  So pass 1 writes what pass 2
 * loads of a rank, right after loading it and before the clock is known,
 * to one unlinked temporary file per process, and pass 2 reads it back
 * and adds the host's clock shift, as p3d_time_load_rank would have.
 *
 * The encoding is exact (pass 2 gets bit for bit what decoding the rank
 * file gives, so the report does not change) and small: ops follow each
 * other in time on few communicators, so each field is a zigzag varint
 * of its difference to the op before or to a sibling field, and fields
 * that equal their usual value cost a flag bit.  About 15-20 bytes an op
 * against 80 in memory and ~130 in the trace (with its GPU records).
 *
 * The file is where $TMPDIR (else /tmp) is, and only when at least twice
 * its estimated size plus 1 GiB is free there; on tmpfs (memory) only up
 * to 512 MiB.  Anything that fails (no file, a short write, bytes that
 * do not read back) leaves that rank to be decoded from its trace file,
 * so nothing is lost.  P3D_SPILL=0 turns it off.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "p3d_time.h"
#include "p3d_time_spill.h"
#include "p3d_util.h"

#define P3D_SPILL_EST_BYTES 24u /* an op, for the room check */
#define P3D_SPILL_TMPFS_MAX (512ull << 20)
#define P3D_SPILL_SPARE (1ull << 30)
#define P3D_SPILL_END 0xa5 /* last byte of a rank's bytes */
#define P3D_TMPFS_MAGIC 0x01021994

_Static_assert(P3D_OP_COUNT <= 16, "an op kind takes 4 bits of a flag byte");

struct p3d_spill {
    int fd;
    uint64_t end;  /* bytes reserved so far (atomic) */
    int failed;    /* a write failed: no more ranks go in (atomic) */
};

static inline uint64_t p3d_zz(uint64_t a, uint64_t b)
{
    int64_t x = (int64_t)(a - b);

    return ((uint64_t)x << 1) ^ (uint64_t)(x >> 63);
}

static inline uint64_t p3d_unzz(uint64_t v)
{
    return (v >> 1) ^ (0 - (v & 1));
}

/* The few counts of a rank and its kernel windows are LEB128 varints. */
static inline char *p3d_put_var(char *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (char)(v | 0x80);
        v >>= 7;
    }
    *p++ = (char)v;
    return p;
}

struct p3d_sin {
    const unsigned char *p, *end;
    int bad;
};

static inline uint64_t p3d_get_var(struct p3d_sin *in)
{
    uint64_t v = 0;

    for (int sh = 0; sh < 64 && in->p < in->end; sh += 7) {
        unsigned c = *in->p++;
        v |= (uint64_t)(c & 0x7f) << sh;
        if (!(c & 0x80))
            return v;
    }
    in->bad = 1;
    return 0;
}

static inline uint8_t p3d_get_byte(struct p3d_sin *in)
{
    if (in->p >= in->end) {
        in->bad = 1;
        return 0;
    }
    return *in->p++;
}

/*
 * An op is a 5-byte head and then its ten fields, each in as few bytes as
 * it needs (0 when it is 0): the head holds the op kind (4 bits), whether
 * it has GPU times (1 bit) and each field's length (3 bits: 0-6 bytes, 7
 * for 8).  Fields are read with one unaligned 8-byte load and a mask, so
 * decoding has no loop per byte (a varint decoder was twice as slow as
 * decoding the rank file).  Each field is a zigzag difference to what it
 * usually equals, so that it is mostly 0-3 bytes:
 *   gcomm - previous op's, bytes - previous op's, peer + 1,
 *   h0 - previous op's, h1 - h0, h0 - hs, hg - h1, s - h0,
 *   e - s (GPU times) or e - hg (host times), seq - previous op's - 1.
 */
enum {
    P3D_SF_COMM, P3D_SF_BYTES, P3D_SF_PEER, P3D_SF_H0, P3D_SF_H1, P3D_SF_HS,
    P3D_SF_HG, P3D_SF_S, P3D_SF_E, P3D_SF_SEQ, P3D_SF_N
};
#define P3D_SPILL_HEAD 5
#define P3D_SPILL_SLACK 8 /* readable bytes past the end, for the loads */

static inline unsigned p3d_len_code(uint64_t v)
{
    unsigned n = v ? (unsigned)(64 - __builtin_clzll(v) + 7) / 8 : 0;

    return n > 6 ? 7 : n;
}

static inline uint64_t p3d_load8(const char *p)
{
    uint64_t v;

    memcpy(&v, p, sizeof(v)); /* little-endian hosts (x86-64, arm64) */
    return v;
}

static const uint64_t p3d_len_mask[8] = {
    0, 0xff, 0xffff, 0xffffff, 0xffffffffull, 0xffffffffffull,
    0xffffffffffffull, ~0ull};
static const unsigned char p3d_code_len[8] = {0, 1, 2, 3, 4, 5, 6, 8};

static char *p3d_put_op(char *p, const struct p3d_top *o,
                        const struct p3d_top *prev)
{
    uint64_t f[P3D_SF_N], head = (o->op & 0x0fu) | (o->has_gpu ? 0x10u : 0);
    char *q = p + P3D_SPILL_HEAD;

    f[P3D_SF_COMM] = p3d_zz((uint64_t)(int64_t)o->gcomm,
                            (uint64_t)(int64_t)prev->gcomm);
    f[P3D_SF_BYTES] = p3d_zz(o->bytes, prev->bytes);
    f[P3D_SF_PEER] = p3d_zz((uint64_t)(int64_t)o->peer, (uint64_t)-1);
    f[P3D_SF_H0] = p3d_zz((uint64_t)o->h0, (uint64_t)prev->h0);
    f[P3D_SF_H1] = p3d_zz((uint64_t)o->h1, (uint64_t)o->h0);
    f[P3D_SF_HS] = p3d_zz((uint64_t)o->h0, (uint64_t)o->hs);
    f[P3D_SF_HG] = p3d_zz((uint64_t)o->hg, (uint64_t)o->h1);
    f[P3D_SF_S] = p3d_zz((uint64_t)o->s, (uint64_t)o->h0);
    f[P3D_SF_E] = p3d_zz((uint64_t)o->e,
                         (uint64_t)(o->has_gpu ? o->s : o->hg));
    f[P3D_SF_SEQ] = p3d_zz(o->seq, prev->seq + 1);
    for (int k = 0; k < P3D_SF_N; k++) {
        unsigned c = p3d_len_code(f[k]);
        head |= (uint64_t)c << (5 + 3 * k);
        memcpy(q, &f[k], 8); /* the buffer has room for 8 */
        q += p3d_code_len[c];
    }
    memcpy(p, &head, P3D_SPILL_HEAD);
    return q;
}

static inline uint64_t p3d_take(const char **p, uint64_t head, int k)
{
    unsigned c = (unsigned)(head >> (5 + 3 * k)) & 7u;
    uint64_t v = p3d_load8(*p) & p3d_len_mask[c];

    *p += p3d_code_len[c];
    return v;
}

/* Ops from p, which has P3D_SPILL_SLACK readable bytes past end; NULL if
 * they run past end. */
static const char *p3d_get_ops(const char *p, const char *end,
                               struct p3d_top *o, size_t n)
{
    struct p3d_top zero = {0};
    const struct p3d_top *prev = &zero;

    for (size_t i = 0; i < n; i++, prev = &o[i - 1]) {
        uint64_t head;
        struct p3d_top *t = &o[i];
        if (end - p < P3D_SPILL_HEAD)
            return NULL;
        head = p3d_load8(p) & p3d_len_mask[P3D_SPILL_HEAD];
        p += P3D_SPILL_HEAD;
        t->op = (uint8_t)(head & 0x0f);
        t->has_gpu = (uint8_t)((head >> 4) & 1);
        t->gcomm = (int)(int64_t)((uint64_t)(int64_t)prev->gcomm +
                                  p3d_unzz(p3d_take(&p, head, P3D_SF_COMM)));
        t->bytes = prev->bytes + p3d_unzz(p3d_take(&p, head, P3D_SF_BYTES));
        t->peer = (int)(int64_t)(p3d_unzz(p3d_take(&p, head, P3D_SF_PEER)) -
                                 1);
        t->h0 = (int64_t)((uint64_t)prev->h0 +
                          p3d_unzz(p3d_take(&p, head, P3D_SF_H0)));
        t->h1 = (int64_t)((uint64_t)t->h0 +
                          p3d_unzz(p3d_take(&p, head, P3D_SF_H1)));
        t->hs = (int64_t)((uint64_t)t->h0 -
                          p3d_unzz(p3d_take(&p, head, P3D_SF_HS)));
        t->hg = (int64_t)((uint64_t)t->h1 +
                          p3d_unzz(p3d_take(&p, head, P3D_SF_HG)));
        t->s = (int64_t)((uint64_t)t->h0 +
                         p3d_unzz(p3d_take(&p, head, P3D_SF_S)));
        t->e = (int64_t)((uint64_t)(t->has_gpu ? t->s : t->hg) +
                         p3d_unzz(p3d_take(&p, head, P3D_SF_E)));
        t->seq = prev->seq + 1 + p3d_unzz(p3d_take(&p, head, P3D_SF_SEQ));
        if (p > end)
            return NULL;
    }
    return p;
}

/* Worst case: the head and ten 8-byte fields an op. */
#define P3D_SPILL_OP_MAX (P3D_SPILL_HEAD + 8u * P3D_SF_N)
#define P3D_SPILL_IV_MAX 20u
#define P3D_SPILL_HEAD_MAX 80u

void p3d_spill_encode(const struct p3d_tl *tl, struct p3d_bytes *b)
{
    struct p3d_top zero = {0};
    const struct p3d_top *prev = &zero;
    size_t need = b->n + P3D_SPILL_HEAD_MAX + tl->n_ops * P3D_SPILL_OP_MAX +
                  tl->kwin.n * P3D_SPILL_IV_MAX + P3D_SPILL_SLACK;
    char *p;
    int64_t last = 0;

    if (need > b->cap)
        b->cap = p3d_grow((void **)&b->p, b->cap, need, 1);
    p = b->p + b->n;
    p = p3d_put_var(p, tl->n_ops);
    p = p3d_put_var(p, tl->n_placed);
    p = p3d_put_var(p, p3d_zz((uint64_t)tl->kwin_on, 0));
    p = p3d_put_var(p, (uint64_t)tl->windowed);
    p = p3d_put_var(p, (uint64_t)tl->src);
    p = p3d_put_var(p, tl->kwin.n);
    for (size_t i = 0; i < tl->n_ops; i++) {
        p = p3d_put_op(p, &tl->ops[i], prev);
        prev = &tl->ops[i];
    }
    for (size_t i = 0; i < tl->kwin.n; i++) {
        p = p3d_put_var(p, p3d_zz((uint64_t)tl->kwin.v[i].s, (uint64_t)last));
        p = p3d_put_var(p, p3d_zz((uint64_t)tl->kwin.v[i].e,
                                  (uint64_t)tl->kwin.v[i].s));
        last = tl->kwin.v[i].e;
    }
    *p++ = (char)P3D_SPILL_END;
    b->n = (size_t)(p - b->p);
}

static int p3d_spill_decode_kwin(struct p3d_tl *tl, struct p3d_sin *in,
                                 size_t n)
{
    int64_t last = 0;

    if (n > (size_t)(in->end - in->p) / 2) /* two bytes each at least */
        return -1;
    if (n)
        tl->kwin.cap = p3d_grow((void **)&tl->kwin.v, tl->kwin.cap, n,
                                sizeof(*tl->kwin.v));
    for (size_t i = 0; i < n; i++) {
        struct p3d_iv *v = &tl->kwin.v[i];
        v->s = (int64_t)((uint64_t)last + p3d_unzz(p3d_get_var(in)));
        v->e = (int64_t)((uint64_t)v->s + p3d_unzz(p3d_get_var(in)));
        last = v->e;
    }
    tl->kwin.n = n;
    return 0;
}

int p3d_spill_decode(struct p3d_tl *tl, const char *p, size_t n)
{
    struct p3d_sin in = {(const unsigned char *)p,
                         (const unsigned char *)p + n, 0};
    const char *ops_end;
    size_t n_ops, n_kwin;

    n_ops = (size_t)p3d_get_var(&in);
    tl->n_placed = (size_t)p3d_get_var(&in);
    tl->kwin_on = (int64_t)p3d_unzz(p3d_get_var(&in));
    tl->windowed = (int)p3d_get_var(&in);
    tl->src = (int)p3d_get_var(&in);
    n_kwin = (size_t)p3d_get_var(&in);
    if (in.bad || n_ops > (size_t)(in.end - in.p) / P3D_SPILL_HEAD)
        return -1;
    if (n_ops)
        tl->cap_ops = p3d_grow((void **)&tl->ops, tl->cap_ops, n_ops,
                               sizeof(*tl->ops));
    ops_end = p3d_get_ops((const char *)in.p, (const char *)in.end, tl->ops,
                          n_ops);
    in.bad |= !ops_end;
    if (!in.bad)
        in.p = (const unsigned char *)ops_end;
    tl->n_ops = in.bad ? 0 : n_ops;
    if (in.bad || p3d_spill_decode_kwin(tl, &in, n_kwin) < 0 || in.bad)
        return -1;
    if (p3d_get_byte(&in) != P3D_SPILL_END || in.bad || in.p != in.end)
        return -1;
    return 0;
}

/* An unlinked file where $TMPDIR (else /tmp) is, or -1. */
static int p3d_spill_file(void)
{
    const char *tmp = getenv("TMPDIR");
    const char *dir = tmp && *tmp ? tmp : "/tmp";
    char path[4200];
    int fd;

#ifdef O_TMPFILE
    fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0)
        return fd;
#endif
    snprintf(path, sizeof(path), "%s/p3d-spill.XXXXXX", dir);
    fd = mkostemp(path, O_CLOEXEC);
    if (fd >= 0)
        unlink(path);
    return fd;
}

/* Is there room for about `want` bytes on fd's file system? */
static int p3d_spill_room(int fd, uint64_t want)
{
    struct statvfs v;
    struct statfs f;
    uint64_t avail;

    if (fstatvfs(fd, &v) != 0)
        return 0;
    avail = (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
    if (fstatfs(fd, &f) == 0 && (unsigned long)f.f_type == P3D_TMPFS_MAGIC &&
        want > P3D_SPILL_TMPFS_MAX)
        return 0; /* it would be held in memory */
    return avail / 2 > want && avail - 2 * want > P3D_SPILL_SPARE;
}

struct p3d_spill *p3d_spill_open(uint64_t n_ops)
{
    const char *env = getenv("P3D_SPILL");
    struct p3d_spill *sp;
    int fd;

    if ((env && !strcmp(env, "0")) || !n_ops)
        return NULL;
    fd = p3d_spill_file();
    if (fd < 0)
        return NULL;
    if (!p3d_spill_room(fd, n_ops * P3D_SPILL_EST_BYTES)) {
        close(fd);
        return NULL;
    }
    sp = p3d_xcalloc(1, sizeof(*sp));
    sp->fd = fd;
    return sp;
}

void p3d_spill_close(struct p3d_spill *sp)
{
    if (!sp)
        return;
    close(sp->fd);
    free(sp);
}

static int p3d_spill_pwrite(int fd, const char *p, size_t n, uint64_t off)
{
    while (n) {
        ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

static int p3d_spill_pread(int fd, char *p, size_t n, uint64_t off)
{
    while (n) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

void p3d_spill_put(struct p3d_spill *sp, struct p3d_tl *tl,
                   struct p3d_bytes *buf)
{
    uint64_t off;

    tl->spill_len = 0;
    if (!sp || __atomic_load_n(&sp->failed, __ATOMIC_RELAXED))
        return;
    buf->n = 0;
    p3d_spill_encode(tl, buf);
    off = __atomic_fetch_add(&sp->end, (uint64_t)buf->n, __ATOMIC_RELAXED);
    if (p3d_spill_pwrite(sp->fd, buf->p, buf->n, off) != 0) {
        __atomic_store_n(&sp->failed, 1, __ATOMIC_RELAXED);
        return; /* this rank and the rest are decoded again */
    }
    tl->spill_off = off;
    tl->spill_len = buf->n;
}

int p3d_spill_get(struct p3d_spill *sp, struct p3d_tl *tl,
                  struct p3d_tload *ld, int64_t d, struct p3d_bytes *buf)
{
    char *p;

    if (!sp || !tl->spill_len)
        return -1;
    p = p3d_bytes_room(buf, (size_t)tl->spill_len + P3D_SPILL_SLACK);
    if (p3d_spill_pread(sp->fd, p, (size_t)tl->spill_len, tl->spill_off))
        return -1;
    p3d_time_lend(tl, ld);
    if (p3d_spill_decode(tl, p, (size_t)tl->spill_len) != 0) {
        p3d_time_unload(tl, ld);
        return -1;
    }
    if (d)
        p3d_time_shift_ops(tl, d);
    return 0;
}
