/*
 * fuzz_analyze.c - libFuzzer harness over everything p3d-analyze does with
 * the bytes of trace files: header checks, record walking and decoding
 * (--dump), discovery, the per-rank scan, the cross-rank join, layout,
 * labels, matching, time analysis, the text report and the JSON.
 *
 * One input is one job: it is cut before every "P3DTRACE" magic found at
 * a multiple of 8 (at most P3D_FUZZ_RANKS pieces), each piece becomes
 * rank-NNNNN.p3d in a private temporary folder, and the folder is analysed
 * as `p3d-analyze DIR` would.  Seeds are compact real traces (small
 * data_off and chunk_bytes) made by tests/fuzz/mkseeds.py.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "p3d_analyse.h"
#include "p3d_discover.h"
#include "p3d_dump.h"
#include "p3d_json.h"
#include "p3d_report.h"
#include "p3d_util.h"

#define P3D_FUZZ_RANKS 8

static char fz_dir[256];
static FILE *fz_null;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *tmp = getenv("P3D_FUZZ_TMP");

    (void)argc;
    (void)argv;
    if (!tmp)
        tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(fz_dir, sizeof(fz_dir), "%s/p3dfuzz.XXXXXX", tmp);
    if (!mkdtemp(fz_dir))
        abort();
    fz_null = fopen("/dev/null", "w");
    if (!fz_null)
        abort();
    p3d_quiet = 1;
    return 0;
}

static void fz_path(char *buf, size_t n, int i)
{
    snprintf(buf, n, "%s/rank-%05d.p3d", fz_dir, i);
}

/* Cut the input into files; returns how many were written. */
static int fz_write_files(const uint8_t *data, size_t size)
{
    size_t cut[P3D_FUZZ_RANKS + 1];
    int n = 1;

    cut[0] = 0;
    for (size_t o = 8; o + 8 <= size && n < P3D_FUZZ_RANKS; o += 8)
        if (!memcmp(data + o, P3D_MAGIC, P3D_MAGIC_LEN))
            cut[n++] = o;
    cut[n] = size;
    for (int i = 0; i < n; i++) {
        char path[300];
        int fd;

        fz_path(path, sizeof(path), i);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || write(fd, data + cut[i], cut[i + 1] - cut[i]) < 0)
            abort();
        close(fd);
    }
    return n;
}

/* The command line's pipeline (p3d_analyse.h), hang analysis included,
 * without progress. */
static void fz_analyse(struct p3d_job *job)
{
    struct p3d_analyse_opts o = {1, 1, NULL, 0};

    p3d_analyse_job(job, &o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[300], *dirs[1] = {fz_dir};
    struct p3d_jobset set;
    int n = fz_write_files(data, size);

    for (int i = 0; i < n; i++) {
        fz_path(path, sizeof(path), i);
        p3d_dump_file(fz_null, path);
    }
    memset(&set, 0, sizeof(set));
    p3d_discover(dirs, 1, &set);
    for (int i = 0; i < set.n; i++) {
        fz_analyse(&set.jobs[i]);
        p3d_report_text(fz_null, &set.jobs[i], P3D_DETAIL_ALL);
        p3d_json_write(fz_null, &set.jobs[i]);
        p3d_analysed_free(&set.jobs[i]);
    }
    free(set.jobs);
    for (int i = 0; i < n; i++) {
        fz_path(path, sizeof(path), i);
        unlink(path);
    }
    return 0;
}
