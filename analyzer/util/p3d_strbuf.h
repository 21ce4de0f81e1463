/*
 * p3d_strbuf.h - a growing string, after git's strbuf: text built from
 * pieces (a rank list, a finding's sentence, a path list) is appended
 * with printf-style calls that can neither overflow nor cut the text,
 * instead of snprintf chains into fixed char arrays.
 *
 *   struct p3d_sb sb = P3D_SB_INIT;
 *   p3d_sb_addf(&sb, "%s%d", sb.len ? ", " : "", rank);
 *   puts(p3d_sb_str(&sb));
 *   p3d_sb_free(&sb);
 *
 * Allocation failure ends the program (p3d_xrealloc), as everywhere in
 * the analyzer.
 */
#ifndef P3D_STRBUF_H
#define P3D_STRBUF_H

#include <stddef.h>

#include "p3d_util.h"

struct p3d_sb {
    char *buf;  /* NUL-terminated once anything was added; NULL before */
    size_t len; /* bytes before the NUL */
    size_t cap; /* bytes allocated */
};
#define P3D_SB_INIT {NULL, 0, 0}

void p3d_sb_addf(struct p3d_sb *sb, const char *fmt, ...) P3D_PRINTF(2, 3);
void p3d_sb_add(struct p3d_sb *sb, const char *s);
/* The text so far ("" when nothing was added). */
const char *p3d_sb_str(const struct p3d_sb *sb);
/* Empty it, keeping the allocation. */
void p3d_sb_reset(struct p3d_sb *sb);
void p3d_sb_free(struct p3d_sb *sb);

#endif /* P3D_STRBUF_H */
