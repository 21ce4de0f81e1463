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
 * p3d_discover in two steps, for p3d-analyze-mpi --local, where each
 * process walks its own folders and process 0 sorts the files all of
 * them found into jobs.  Walk `paths` (problems are printed; *ret -1 as
 * p3d_discover's return); the found files to bytes; add the files another
 * process found (owner: that process; -1: the bytes are damaged); sort
 * into jobs (frees f).  A file that several processes found (a folder
 * they share) counts once, as the lowest process's.
 */
struct p3d_found;
struct p3d_bytes;
struct p3d_bytes_in;
struct p3d_found *p3d_found_walk(char **paths, int n, int missing_ok,
                                 int *ret);
/* Files found (readable or not), and paths that do not exist (walked
 * with missing_ok: a node without the folder is not an error). */
int p3d_found_files(const struct p3d_found *f);
int p3d_found_missing(const struct p3d_found *f);
void p3d_found_pack(const struct p3d_found *f, struct p3d_bytes *b);
int p3d_found_add(struct p3d_found *f, struct p3d_bytes_in *in, int owner);
void p3d_found_jobs(struct p3d_found *f, struct p3d_jobset *set);
void p3d_found_free(struct p3d_found *f);

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
