/*
 * rank_eager.c - every group's communicator at start (--eager-groups), as
 * PyTorch creates them when init_process_group gets device_id: the
 * default group's communicator at once (eager_connect_single_device), and
 * each new_group() an ncclCommSplit of it that every rank of the world
 * calls, those outside the group with NCCL_SPLIT_NOCOLOR
 * (torch/distributed/distributed_c10d.py _new_process_group_helper;
 * ProcessGroupNCCL.cpp initNCCLComm, NCCLComm::split).  Megatron-LM calls
 * new_group for each of its groups in initialize_model_parallel's order;
 * FILE gives that order and the members, one "NAME r0 r1 .." a line
 * (tests/layout/matrix.py writes it from tests/data/layout, which came
 * from Megatron's own code).  An op uses the communicator of its group's
 * Megatron name; the other communicators carry nothing, as in a real job.
 * A group whose members differ from the simulator's RankGenerator fails
 * the rank: the simulator must lay ranks out as Megatron does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rank.h"

/* The simulated group Megatron calls desc, or -1 (created, unused; the
 * expert TP group too unless folded: it is then TP's ranks, and the
 * simulator issues nothing on it). */
static int rank_eager_grp(const struct sim_cfg *c, const char *desc)
{
    for (int g = SG_DP_CP; g < SG_COUNT; g++)
        if (!strcmp(desc, sim_grp_megatron(g)))
            return g == SG_ETP && !sim_etp_folded(c) ? -1 : g;
    return -1;
}

static int rank_eager_cmp(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* Parse "NAME r0 r1 ..": members into mem, ascending as torch's new_group
 * sorts them (a comm rank is the position there), count returned. */
static int rank_eager_line(char *line, char **desc, int *mem)
{
    char *save = NULL, *tok = strtok_r(line, " \t\n", &save);
    int n = 0;

    if (!tok)
        return -1;
    *desc = tok;
    while ((tok = strtok_r(NULL, " \t\n", &save)) && n < SIM_MAX_RANKS)
        mem[n++] = atoi(tok);
    qsort(mem, (size_t)n, sizeof(*mem), rank_eager_cmp);
    return n;
}

/* Rank's position in mem (ascending), or -1. */
static int rank_eager_pos(const int *mem, int n, int rank)
{
    for (int i = 0; i < n; i++)
        if (mem[i] == rank)
            return i;
    return -1;
}

/* The group of this line: split it off WORLD and keep it if it is ours. */
static int rank_eager_split(struct rank_ctx *x, ncclComm_t world,
                            const char *desc, const int *mem, int n,
                            int color)
{
    int me = rank_eager_pos(mem, n, x->rank), g = rank_eager_grp(x->cfg, desc);
    int sim[SIM_MAX_RANKS], ns;
    ncclComm_t c = NULL;

    if (ncclCommSplit(world, me >= 0 ? color : NCCL_SPLIT_NOCOLOR, x->rank,
                      &c, NULL) != ncclSuccess)
        return -1;
    if (me < 0)
        return 0;
    if (g < 0 || x->comm[g]) {
        if (x->n_extra < RANK_MAX_EXTRA)
            x->extra[x->n_extra++] = c;
        return 0;
    }
    ns = sim_members(x->cfg, g, x->rank, sim);
    if (ns != n || memcmp(sim, mem, sizeof(*mem) * (size_t)n) != 0) {
        fprintf(stderr, "p3d-sim: rank %d: %s is %d ranks from %d in the "
                        "groups file, the simulator's layout gives %d from "
                        "%d\n", x->rank, desc, n, mem[0], ns, sim[0]);
        return -1;
    }
    return rank_comm_keep(x, g, c, me) ? 0 : -1;
}

int rank_eager_init(struct rank_ctx *x)
{
    FILE *f = fopen(x->cfg->eager_groups, "re");
    static char line[16 * SIM_MAX_RANKS];
    static int mem[SIM_MAX_RANKS];
    ncclComm_t world = rank_comm(x, SG_WORLD);
    int color = 0, bad = !world;
    char *desc;

    if (!f) {
        perror(x->cfg->eager_groups);
        return -1;
    }
    while (!bad && fgets(line, sizeof(line), f)) {
        int n = rank_eager_line(line, &desc, mem);

        if (n > 0)
            bad = rank_eager_split(x, world, desc, mem, n, color++) != 0;
    }
    fclose(f);
    return bad ? -1 : 0;
}

void rank_eager_destroy(struct rank_ctx *x)
{
    for (int i = 0; i < x->n_extra; i++)
        ncclCommDestroy(x->extra[i]);
    x->n_extra = 0;
}
