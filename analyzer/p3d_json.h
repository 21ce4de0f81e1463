/*
 * p3d_json.h - `--json FILE|-`: the report as schema "p3d-analyze/1".
 */
#ifndef P3D_JSON_H
#define P3D_JSON_H

#include <stdio.h>

#include "p3d_job.h"

void p3d_json_write(FILE *f, const struct p3d_job *job);

#endif /* P3D_JSON_H */
