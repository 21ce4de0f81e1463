/*
 * rank_main.c - entry point of libp3dsim_rank.so, the simulated "torch".
 *
 * The driver's rank process dlopens this library RTLD_LOCAL, as Python
 * loads torch, so NCCL (a dependency of this library) is outside the
 * global scope and the shim must find it by scanning loaded objects.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rank.h"

static struct sim_truth *rank_truth_map(const char *scratch, int rank)
{
    char path[PATH_MAX];
    struct sim_truth *t;
    int fd;

    snprintf(path, sizeof(path), "%s/truth/rank-%05d.bin", scratch, rank);
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, sizeof(*t)) != 0) {
        perror(path);
        return NULL;
    }
    t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (t == MAP_FAILED)
        return NULL;
    t->rank = rank;
    t->pid = (int32_t)getpid();
    t->stop_grp = -1;
    t->magic = SIM_TRUTH_MAGIC;
    return t;
}

static size_t rank_buf_bytes(const struct sim_cfg *c)
{
    uint64_t m = c->tp_bytes;

    m = c->pp_bytes > m ? c->pp_bytes : m;
    m = c->cp_bytes > m ? c->cp_bytes : m;
    m = c->dp_bytes > m ? c->dp_bytes : m;
    m = c->emb_bytes > m ? c->emb_bytes : m;
    if ((c->framework == SIM_FW_DDP || c->framework == SIM_FW_FSDP ||
         c->framework == SIM_FW_DEEPSPEED) && rank_torch_buf_bytes(c) > m)
        m = rank_torch_buf_bytes(c);
    return (size_t)m + 65536;
}

static int rank_setup(struct rank_ctx *x)
{
    int local = 0;
    const char *s = getenv("LOCAL_RANK");

    if (s)
        local = atoi(s);
    sim_coords(x->cfg, x->rank, x->coord);
    x->stage = x->coord[SA_PP];
    x->pp = x->cfg->size[SA_PP];
    if (cudaSetDevice(local) != cudaSuccess ||
        cudaStreamCreateWithFlags(&x->stream, cudaStreamNonBlocking) !=
            cudaSuccess)
        return -1;
    x->buf_bytes = rank_buf_bytes(x->cfg);
    if (cudaMalloc((void **)&x->sbuf, x->buf_bytes) != cudaSuccess ||
        cudaMalloc((void **)&x->rbuf, x->buf_bytes) != cudaSuccess)
        return -1;
    memset(x->sbuf, 1, x->buf_bytes);
    return 0;
}

__attribute__((visibility("default")))
int p3dsim_rank_main(const struct sim_cfg *c, int rank, const char *scratch)
{
    struct rank_ctx x = { .cfg = c, .rank = rank, .scratch = scratch };

    x.t = rank_truth_map(scratch, rank);
    if (!x.t || rank_setup(&x) != 0) {
        fprintf(stderr, "p3d-sim: rank %d: setup failed\n", rank);
        return 1;
    }
    rank_observe(&x);
    if (c->eager_groups[0] && rank_eager_init(&x) != 0) {
        fprintf(stderr, "p3d-sim: rank %d: eager groups failed\n", rank);
        return 1;
    }
    if (c->framework == SIM_FW_DDP || c->framework == SIM_FW_FSDP ||
        c->framework == SIM_FW_DEEPSPEED) {
        for (x.iter = 0; x.iter < c->iters; x.iter++)
            rank_torch_iteration(&x);
        rank_destroy_comms(&x);
        x.t->finished = 1;
        return 0;
    }
    /* Megatron: WORLD barrier, then the MIN of the start times
     * (torchtitan issues neither). */
    if (c->framework == SIM_FW_MEGATRON) {
        rank_one(&x, SG_WORLD, SK_ALLREDUCE, 1, ncclFloat32, ncclSum, -1);
        rank_one(&x, SG_WORLD, SK_ALLREDUCE, 1, ncclFloat64, ncclMin, -1);
    }
    for (x.iter = 0; x.iter < c->iters; x.iter++)
        rank_iteration(&x);
    rank_destroy_comms(&x);
    if (x.ev_pre)
        cudaEventDestroy(x.ev_pre);
    cudaFree(x.sbuf);
    cudaFree(x.rbuf);
    cudaStreamDestroy(x.stream);
    x.t->finished = 1;
    return 0;
}
