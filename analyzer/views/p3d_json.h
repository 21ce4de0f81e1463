/*
 * p3d_json.h - `--json FILE|-`: the report as schema "p3d-analyze/1".
 */
#ifndef P3D_JSON_H
#define P3D_JSON_H

#include <stdint.h>
#include <stdio.h>

#include "p3d_job.h"

void p3d_json_write(FILE *f, const struct p3d_job *job);
/* "key": value of mismatch field `field` (a name for enumerations, with
 * its number as "key_raw"). */
void p3d_json_mm_value(FILE *f, const char *key, int field, int64_t v);

/* The "hang" member (views/p3d_hang_out.c). */
void p3d_hang_json(FILE *f, const struct p3d_job *job);

#endif /* P3D_JSON_H */
