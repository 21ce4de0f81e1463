/*
 * sim_driver.h - state of one simulated run, shared by the driver and the
 * ground-truth writer.
 */
#ifndef P3D_SIM_DRIVER_H
#define P3D_SIM_DRIVER_H

#include <limits.h>
#include <sys/types.h>

#include "sim.h"

struct sim_run {
    char scratch[PATH_MAX];
    char jobdir[PATH_MAX + 80];
    int port;
    pid_t pid[SIM_MAX_RANKS];
    int reaped[SIM_MAX_RANKS];
    int status[SIM_MAX_RANKS];
    int alive;
    double fail_at;
    int term_sent;
    int timed_out;
    int hung_stop;               /* ended by --stop-when-hung */
    int quiet_samples;           /* consecutive samples with no progress */
    uint64_t issued[SIM_MAX_RANKS]; /* at the last sample */
    double wall_s;
};

int sim_write_truth(const struct sim_cfg *c, const struct sim_run *run);
/* Rank r's ops issued so far and whether it stopped (hang/kill): 0, or -1
 * when it left no truth yet. */
int sim_truth_progress(const struct sim_run *run, int r, uint64_t *issued,
                       int *stopped);

#endif /* P3D_SIM_DRIVER_H */
