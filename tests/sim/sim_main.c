/*
 * sim_main.c - p3d-sim: a Megatron-style multi-process job on the CPU.
 *
 * Without P3DSIM_RANK in the environment this is the driver (launch the
 * ranks, enforce the timeout, write truth.json).  With it, this process is
 * one rank: it loads build/fakes/libp3dsim_rank.so with
 * dlopen(RTLD_LOCAL | RTLD_NOW), as Python loads torch, and runs it.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"

int sim_drive(const struct sim_cfg *c, char **argv);

static int sim_rank_process(const struct sim_cfg *c, int rank)
{
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 64);
    const char *scratch = getenv("P3DSIM_SCRATCH");
    sim_rank_main_fn fn;
    void *h;
    char *slash;

    if (n <= 0 || !scratch)
        return 2;
    path[n] = '\0';
    slash = strrchr(path, '/');
    snprintf(slash + 1, 64, "fakes/libp3dsim_rank.so");
    h = dlopen(path, RTLD_LOCAL | RTLD_NOW);
    if (!h) {
        fprintf(stderr, "p3d-sim: rank %d: %s\n", rank, dlerror());
        return 2;
    }
    fn = (sim_rank_main_fn)dlsym(h, SIM_RANK_MAIN);
    if (!fn)
        return 2;
    return fn(c, rank, scratch);
}

int main(int argc, char **argv)
{
    static struct sim_cfg c;
    const char *r = getenv("P3DSIM_RANK");
    int rc = sim_parse_args(&c, argc, argv);

    if (rc != 0)
        return rc > 0 ? 0 : 2;
    if (r)
        return sim_rank_process(&c, atoi(r));
    return sim_drive(&c, argv);
}
