/*
 * test_an_build.h - hand-built trace files of op and GPU-op records for
 * the analyzer's unit tests: one chunk after the header, records
 * appended, written to a file under /tmp.
 */
#ifndef TEST_AN_BUILD_H
#define TEST_AN_BUILD_H

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "test_file_util.h"

#define TAB_CHUNK 65536u
#define TAB_DATA 4096u

struct tab_file {
    uint8_t buf[TAB_DATA + TAB_CHUNK];
    size_t off;
    char path[96];
};

static inline void tab_init(struct tab_file *f, int rank, int world)
{
    struct p3d_file_hdr *h = (void *)f->buf;
    struct p3d_chunk_hdr *c = (void *)(f->buf + TAB_DATA);

    memset(f->buf, 0, sizeof(f->buf));
    tfu_hdr_init(f->buf, TAB_CHUNK, TAB_DATA);
    h->rank = rank;
    h->world_size = world;
    c->h.tag = P3D_REC_CHUNK;
    c->h.len = sizeof(*c);
    f->off = TAB_DATA + sizeof(*c);
}

static inline struct p3d_rec_op *tab_op(struct tab_file *f, uint64_t op_id,
                                        uint64_t comm, uint64_t seq, int op,
                                        uint64_t t_enter)
{
    struct p3d_rec_op *o = (void *)(f->buf + f->off);

    o->h.tag = P3D_REC_OP;
    o->h.len = sizeof(*o);
    o->op = (uint8_t)op;
    o->dtype = 7;
    o->op_id = op_id;
    o->comm_hash = comm;
    o->seq = seq;
    o->count = 256;
    o->bytes = 1024;
    o->t_enter = t_enter;
    o->t_exit = t_enter + 10;
    o->peer = -1;
    o->comm_rank = -1;
    f->off += sizeof(*o);
    return o;
}

static inline void tab_gpu(struct tab_file *f, uint64_t op_id, uint64_t s,
                           uint64_t e)
{
    struct p3d_rec_gpu_op *g = (void *)(f->buf + f->off);

    g->h.tag = P3D_REC_GPU_OP;
    g->h.len = sizeof(*g);
    g->op_id = op_id;
    g->gpu_start = s;
    g->gpu_end = e;
    f->off += sizeof(*g);
}

/* Write the file as /tmp/p3d-<name>-<pid>.p3d (f->path). */
static inline int tab_write(struct tab_file *f, const char *name)
{
    FILE *fp;
    size_t n = TAB_DATA + TAB_CHUNK;

    snprintf(f->path, sizeof(f->path), "/tmp/p3d-%s-%d.p3d", name,
             (int)getpid());
    fp = fopen(f->path, "wb");
    if (!fp)
        return -1;
    if (fwrite(f->buf, 1, n, fp) != n) {
        fclose(fp);
        return -1;
    }
    return fclose(fp);
}

#endif /* TEST_AN_BUILD_H */
