/*
 * p3d_json.h - `--json FILE|-`: the report as schema "p3d-analyze/1".
 */
#ifndef P3D_JSON_H
#define P3D_JSON_H

#include <stdint.h>
#include <stdio.h>

#include "p3d_job.h"

void p3d_json_write(FILE *f, const struct p3d_job *job);
/* One mismatch as a JSON object, under the key names a section uses
 * (matching: rank_a/value_a; hang: odd_rank/odd_value ...); label may be
 * NULL (no "label" key). */
struct p3d_json_mm {
    uint64_t comm;
    const char *label;
    int op;
    uint64_t seq;
    int field;
    int rank[2];
    int64_t v[2];
};
void p3d_json_mm_write(FILE *f, const struct p3d_json_mm *m,
                       const char *rank_a, const char *value_a,
                       const char *rank_b, const char *value_b);

/* The "hang" member (views/p3d_hang_out.c). */
void p3d_hang_json(FILE *f, const struct p3d_job *job);

/* The time analysis's members (views/p3d_time_json.c): steps, bubble,
 * verdict, clock, wait; and one rank's fields (",\"step_time_ms\": ..."
 * without braces). */
void p3d_time_json(FILE *f, const struct p3d_job *job);
void p3d_time_json_rank(FILE *f, const struct p3d_job *job, int i);

#endif /* P3D_JSON_H */
