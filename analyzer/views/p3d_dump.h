/*
 * p3d_dump.h - `p3d-analyze --dump FILE`: every record as one text line.
 */
#ifndef P3D_DUMP_H
#define P3D_DUMP_H

#include <stdio.h>

#include "p3d_reader.h"

/* Dump `path` to f.  Returns 0, or -1 after printing an error. */
int p3d_dump_file(FILE *f, const char *path);
/* Dump what an open reader holds (from its first record). */
int p3d_dump_reader(FILE *f, struct p3d_reader *rd);

#endif /* P3D_DUMP_H */
