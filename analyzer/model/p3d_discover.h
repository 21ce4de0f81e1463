/*
 * p3d_discover.h - find the trace files under the given paths and sort
 * them into jobs (one job per run, even when runs share a folder).
 */
#ifndef P3D_DISCOVER_H
#define P3D_DISCOVER_H

#include "p3d_job.h"

struct p3d_jobset {
    struct p3d_job *jobs; /* oldest first */
    int n;
};

/*
 * Walk `paths` (trace files, job folders, folders of job folders), read
 * every header and group the files into jobs.  Problems are printed;
 * returns -1 if a path given on the command line cannot be read.
 */
int p3d_discover(char **paths, int n, struct p3d_jobset *set);

/*
 * Say that set holds several jobs and which is analysed: the newest
 * (a warning naming it, and --all), or with all every one (a note).
 * dir: the --compare folder the set came from (NULL for the plain run).
 */
void p3d_discover_say(const struct p3d_jobset *set, int all,
                      const char *dir);

/* Seconds between two files' starts that make them separate runs. */
#define P3D_RUN_GAP_S 600

#endif /* P3D_DISCOVER_H */
