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
/* When set, messages go here instead of stderr (kind: "error", "warning"
 * or "note"; p3d_error still counts): a process of p3d-analyze-mpi that
 * hands its messages to process 0, which prints them. */
extern void (*p3d_msg_to)(void *ctx, const char *kind, const char *text);
extern void *p3d_msg_to_ctx;

/* p3d-analyze's allocator settings (at start): big buffers stay in one
 * heap, whose new memory may be backed by huge pages (p3d_util.c). */
void p3d_malloc_tune(void);
void *p3d_xmalloc(size_t n);
void *p3d_xcalloc(size_t n, size_t size);
void *p3d_xrealloc(void *p, size_t n, size_t size);
char *p3d_xstrdup(const char *s);
/* Grow *p (n elements of size) so index `need` fits; returns new cap. */
size_t p3d_grow(void **p, size_t cap, size_t need, size_t size);
/* free() each of n pointers; P3D_FREE_ALL(a, b, ...) for a result's
 * buffers in one line. */
void p3d_free_n(void *const *p, size_t n);
#define P3D_FREE_ALL(...)                                                     \
    p3d_free_n((void *const[]){__VA_ARGS__},                                  \
               sizeof((void *const[]){__VA_ARGS__}) / sizeof(void *))

/* -1, 0 or 1 as x is below, equal to or above y: comparators chain them
 * with ?: (first difference decides). */
#define P3D_CMP(x, y) ((x) < (y) ? -1 : (x) > (y))

/* Write s[0..n) as a JSON string literal (quotes included). */
void p3d_json_str(FILE *f, const char *s, size_t n);
/* Write s[0..n) for a text line: printable ASCII kept, \\ \" \n \t and
 * \xNN escapes otherwise, NULs as \0. */
void p3d_text_str(FILE *f, const char *s, size_t n);

/* strnlen bounded copy of a fixed NUL-padded header field. */
void p3d_fixed_str(char *dst, const char *src, size_t n);

/* "0-3,8,10,11": runs of 3 or more as a range, cut with ",..." when
 * the buffer is nearly full */
void p3d_fmt_ranks(char *buf, size_t n, const int *r, int count);

/*
 * Binary search: in a[0..n) sorted by `field`, the number of leading
 * elements whose field is <= v (the index of the first above v).  A
 * macro, so the comparison is typed and inlined at each use.
 */
#define P3D_COUNT_LE(a, n, field, v)                                          \
    ({                                                                        \
        size_t lo_ = 0, hi_ = (n);                                            \
        while (lo_ < hi_) {                                                   \
            size_t mid_ = lo_ + (hi_ - lo_) / 2;                              \
            if ((a)[mid_].field <= (v))                                       \
                lo_ = mid_ + 1;                                               \
            else                                                              \
                hi_ = mid_;                                                   \
        }                                                                     \
        lo_;                                                                  \
    })

#endif /* P3D_UTIL_H */
