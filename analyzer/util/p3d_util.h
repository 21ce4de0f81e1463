/*
 * p3d_util.h - messages, allocation that dies, string escaping.
 *
 * Every analyzer module reports through these helpers so messages share
 * one shape (`p3d-analyze: error: ...`, git style) and allocation failures
 * end the program with a clear line instead of a NULL dereference.
 */
#ifndef P3D_UTIL_H
#define P3D_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define P3D_PROG "p3d-analyze"
#define P3D_EXIT_BAD 2

#define P3D_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* Print "p3d-analyze: error: ..." and exit with status 2. */
void p3d_die(const char *fmt, ...) P3D_PRINTF(1, 2) __attribute__((noreturn));
/* Print "p3d-analyze: error: ..."; returns -1. */
int p3d_error(const char *fmt, ...) P3D_PRINTF(1, 2);
void p3d_warning(const char *fmt, ...) P3D_PRINTF(1, 2);
void p3d_note(const char *fmt, ...) P3D_PRINTF(1, 2);

/* Number of p3d_error() calls so far (decides the exit status). */
extern int p3d_n_errors;
/* Set to silence notes (tests). */
extern int p3d_quiet;

/* p3d-analyze's allocator settings (at start): big buffers stay in one
 * heap, whose new memory may be backed by huge pages (p3d_util.c). */
void p3d_malloc_tune(void);
void *p3d_xmalloc(size_t n);
void *p3d_xcalloc(size_t n, size_t size);
void *p3d_xrealloc(void *p, size_t n, size_t size);
char *p3d_xstrdup(const char *s);
/* Grow *p (n elements of size) so index `need` fits; returns new cap. */
size_t p3d_grow(void **p, size_t cap, size_t need, size_t size);

/* Write s[0..n) as a JSON string literal (quotes included). */
void p3d_json_str(FILE *f, const char *s, size_t n);
/* Write s[0..n) for a text line: printable ASCII kept, \\ \" \n \t and
 * \xNN escapes otherwise, NULs as \0. */
void p3d_text_str(FILE *f, const char *s, size_t n);

/* strnlen bounded copy of a fixed NUL-padded header field. */
void p3d_fixed_str(char *dst, const char *src, size_t n);

/* "0-3,8,10-11", cut with "..." past max characters */
void p3d_fmt_ranks(char *buf, size_t n, const int *r, int count);

/*
 * Binary search: in [0, n) where before(ctx, i) holds for a first run of
 * indexes and fails for the rest, the end of that run.  Inline, so that a
 * predicate known at the call is inlined.
 */
static inline size_t p3d_partition(size_t n, const void *ctx,
                                   int (*before)(const void *ctx, size_t i))
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (before(ctx, mid))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

#endif /* P3D_UTIL_H */
