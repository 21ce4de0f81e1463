/*
 * p3d_strbuf.c - the growing string of p3d_strbuf.h.  One vsnprintf
 * measures, a second writes when the first did not fit, so each append
 * costs one format in the usual case.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_strbuf.h"

static void p3d_sb_room(struct p3d_sb *sb, size_t more)
{
    size_t need = sb->len + more + 1, cap = sb->cap ? sb->cap : 64;

    if (need <= sb->cap)
        return;
    while (cap < need)
        cap *= 2;
    sb->buf = p3d_xrealloc(sb->buf, cap, 1);
    sb->cap = cap;
}

void p3d_sb_addf(struct p3d_sb *sb, const char *fmt, ...)
{
    va_list ap;
    int n;

    p3d_sb_room(sb, 0);
    va_start(ap, fmt);
    n = vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
    va_end(ap);
    if (n < 0) { /* an encoding error: nothing added */
        sb->buf[sb->len] = 0;
        return;
    }
    if ((size_t)n >= sb->cap - sb->len) {
        p3d_sb_room(sb, (size_t)n);
        va_start(ap, fmt);
        vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
        va_end(ap);
    }
    sb->len += (size_t)n;
}

void p3d_sb_add(struct p3d_sb *sb, const char *s)
{
    size_t n = strlen(s);

    p3d_sb_room(sb, n);
    memcpy(sb->buf + sb->len, s, n + 1);
    sb->len += n;
}

const char *p3d_sb_str(const struct p3d_sb *sb)
{
    return sb->buf ? sb->buf : "";
}

void p3d_sb_reset(struct p3d_sb *sb)
{
    sb->len = 0;
    if (sb->buf)
        sb->buf[0] = 0;
}

void p3d_sb_free(struct p3d_sb *sb)
{
    free(sb->buf);
    *sb = (struct p3d_sb)P3D_SB_INIT;
}
