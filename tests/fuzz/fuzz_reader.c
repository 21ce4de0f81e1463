/*
 * fuzz_reader.c - fast libFuzzer harness over the analyzer's decoding of
 * one trace file held in memory: header checks, the chunk/record walk,
 * every record's decoding as `--dump` prints it, and the per-rank scan
 * (communicators, op statistics, GPU times) and the communicator join.
 * The cross-rank matcher (a large object per run) is left to
 * fuzz_analyze.c.
 * No file system work, so it runs orders of magnitude faster than
 * fuzz_analyze.c, which covers the whole job analysis.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_dump.h"
#include "p3d_job.h"
#include "p3d_reader.h"
#include "p3d_util.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *fz_null;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fz_null = fopen("/dev/null", "w");
    if (!fz_null)
        abort();
    p3d_quiet = 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct p3d_reader rd;
    struct p3d_rank r;
    struct p3d_job job;

    if (p3d_reader_open_mem(&rd, "fuzz.p3d", data, size) != 0)
        return 0;
    p3d_dump_reader(fz_null, &rd);
    memset(&r, 0, sizeof(r));
    r.rank = rd.hdr.rank;
    p3d_rank_scan_reader(&r, &rd);
    memset(&job, 0, sizeof(job));
    job.ranks = &r;
    job.n_ranks = 1;
    p3d_comm_join(&job);
    p3d_rank_free(&r);
    job.ranks = NULL;
    job.n_ranks = 0;
    p3d_job_free(&job);
    p3d_reader_close(&rd);
    return 0;
}
