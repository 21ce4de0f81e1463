/*
 * p3d_util.c - messages, allocation that dies, string escaping.
 *
 * Messages follow git's CodingGuidelines (style.md H6.4): lowercase, no
 * final full stop, the subject in single quotes.  A mutex keeps lines from
 * several reader threads whole.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_util.h"

int p3d_n_errors;
int p3d_quiet;
static pthread_mutex_t p3d_msg_lock = PTHREAD_MUTEX_INITIALIZER;

static void p3d_vmsg(const char *kind, const char *fmt, va_list ap)
{
    pthread_mutex_lock(&p3d_msg_lock);
    fflush(stdout);
    fprintf(stderr, "%s: %s: ", P3D_PROG, kind);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    pthread_mutex_unlock(&p3d_msg_lock);
}

void p3d_die(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    p3d_vmsg("error", fmt, ap);
    va_end(ap);
    exit(P3D_EXIT_BAD);
}

int p3d_error(const char *fmt, ...)
{
    va_list ap;

    __atomic_add_fetch(&p3d_n_errors, 1, __ATOMIC_RELAXED);
    va_start(ap, fmt);
    p3d_vmsg("error", fmt, ap);
    va_end(ap);
    return -1;
}

void p3d_warning(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    p3d_vmsg("warning", fmt, ap);
    va_end(ap);
}

void p3d_note(const char *fmt, ...)
{
    va_list ap;

    if (p3d_quiet)
        return;
    va_start(ap, fmt);
    p3d_vmsg("note", fmt, ap);
    va_end(ap);
}

void *p3d_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (!p)
        p3d_die("out of memory (tried to allocate %zu bytes)", n);
    return p;
}

void *p3d_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);

    if (!p)
        p3d_die("out of memory (tried to allocate %zu x %zu bytes)", n,
                size);
    return p;
}

void *p3d_xrealloc(void *p, size_t n, size_t size)
{
    size_t total;

    if (__builtin_mul_overflow(n, size, &total))
        p3d_die("size_t overflow: %zu * %zu", n, size);
    p = realloc(p, total ? total : 1);
    if (!p)
        p3d_die("out of memory (tried to allocate %zu bytes)", total);
    return p;
}

char *p3d_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;

    return memcpy(p3d_xmalloc(n), s, n);
}

size_t p3d_grow(void **p, size_t cap, size_t need, size_t size)
{
    size_t ncap = cap ? cap : 16;

    if (need < cap)
        return cap;
    while (ncap <= need)
        ncap *= 2;
    *p = p3d_xrealloc(*p, ncap, size);
    memset((char *)*p + cap * size, 0, (ncap - cap) * size);
    return ncap;
}

void p3d_json_str(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c == '\r')
            fputs("\\r", f);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\u%04x", c);
        else if (c >= 0x80)
            fprintf(f, "\\u%04x", c); /* bytes as Latin-1: always valid */
        else
            fputc(c, f);
    }
    fputc('"', f);
}

void p3d_text_str(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c == 0)
            fputs("\\0", f);
        else if (c < 0x20 || c >= 0x7f)
            fprintf(f, "\\x%02x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

void p3d_fixed_str(char *dst, const char *src, size_t n)
{
    size_t len = strnlen(src, n);

    memcpy(dst, src, len);
    dst[len] = 0;
}
