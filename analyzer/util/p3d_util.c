/*
 * p3d_util.c - messages, allocation that dies, string escaping.
 *
 * Heap memory may be backed by transparent huge pages (THP in "madvise"
 * mode, the common default): the analysis grows about a GiB of arrays,
 * and faulting that in 4 KiB at a time cost more CPU than the kernel's
 * copies of the traces (a trap per page, slow in a virtual machine).
 * After p3d_malloc_tune, every allocation here advises what the heap has
 * grown by since the last one (glibc's sbrk(0) is a read of a variable),
 * before the caller touches it; blocks big enough to be mapped on their
 * own are advised one by one.
 *
 * Messages follow git's CodingGuidelines (style.md H6.4): lowercase, no
 * final full stop, the subject in single quotes.  A mutex keeps lines from
 * several reader threads whole.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "p3d_util.h"

#define P3D_HUGE_PAGE ((uintptr_t)2 << 20) /* x86-64, arm64 with 4K pages */
#define P3D_HUGE_MIN ((size_t)1 << 20)     /* smaller blocks: none */

int p3d_n_errors;
int p3d_quiet;
static pthread_mutex_t p3d_msg_lock = PTHREAD_MUTEX_INITIALIZER;

void (*p3d_msg_to)(void *ctx, const char *kind, const char *text);
void *p3d_msg_to_ctx;

static void p3d_vmsg(const char *kind, const char *fmt, va_list ap)
{
    if (p3d_msg_to) {
        char text[2048];
        vsnprintf(text, sizeof(text), fmt, ap);
        pthread_mutex_lock(&p3d_msg_lock);
        p3d_msg_to(p3d_msg_to_ctx, kind, text);
        pthread_mutex_unlock(&p3d_msg_lock);
        return;
    }
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

/* The whole huge pages inside a block of n bytes at p may be huge pages
 * (only pages not touched yet become ones). */
static void p3d_huge(void *p, size_t n)
{
    uintptr_t a = ((uintptr_t)p + P3D_HUGE_PAGE - 1) & ~(P3D_HUGE_PAGE - 1);
    uintptr_t e = ((uintptr_t)p + n) & ~(P3D_HUGE_PAGE - 1);

    if (n >= P3D_HUGE_MIN && e > a)
        madvise((void *)a, e - a, MADV_HUGEPAGE);
}

static uintptr_t p3d_heap_done; /* the heap is advised up to here; 0 off */
static uintptr_t p3d_page;
static pthread_mutex_t p3d_heap_lock = PTHREAD_MUTEX_INITIALIZER;

/* The end of the heap's mapping: the break, page aligned. */
static uintptr_t p3d_heap_end(void)
{
    return ((uintptr_t)sbrk(0) + p3d_page - 1) & ~(p3d_page - 1);
}

/*
 * Buffers of a few MB (a rank's ops, a group's instances) are allocated
 * and freed rank after rank.  glibc maps each one afresh by default
 * (faulting in and zeroing every page again, which costs more than the
 * analysis of the rank on a VM) and only learns a higher threshold from
 * the first such free; keep them in the heap instead, and keep freed
 * memory for the next rank.  One arena: every thread allocates from the
 * heap whose growth is advised (the analysis does not allocate per
 * record, so threads seldom meet in malloc).
 */
void p3d_malloc_tune(void)
{
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    mallopt(M_TOP_PAD, 16 << 20);
    mallopt(M_ARENA_MAX, 1);
    p3d_page = (uintptr_t)sysconf(_SC_PAGESIZE);
    __atomic_store_n(&p3d_heap_done, p3d_heap_end(), __ATOMIC_RELAXED);
}

/* Advise what the heap grew by since the last call (the allocator moved
 * the break); after a trim, from where it was trimmed to. */
static void p3d_heap_grown(void)
{
    uintptr_t done = __atomic_load_n(&p3d_heap_done, __ATOMIC_RELAXED), end;

    if (!done || p3d_heap_end() == done)
        return;
    pthread_mutex_lock(&p3d_heap_lock);
    end = p3d_heap_end();
    done = p3d_heap_done;
    if (done && end > done &&
        madvise((void *)done, end - done, MADV_HUGEPAGE) != 0 &&
        errno == EINVAL)
        end = 0; /* no THP in this kernel: stop trying */
    if (done)
        __atomic_store_n(&p3d_heap_done, end, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&p3d_heap_lock);
}

void *p3d_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (!p)
        p3d_die("out of memory (tried to allocate %zu bytes)", n);
    p3d_heap_grown();
    p3d_huge(p, n);
    return p;
}

void *p3d_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);

    if (!p)
        p3d_die("out of memory (tried to allocate %zu x %zu bytes)", n,
                size);
    p3d_heap_grown();
    if (n && size && n <= SIZE_MAX / size)
        p3d_huge(p, n * size);
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
    p3d_heap_grown();
    p3d_huge(p, total);
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

void p3d_free_n(void *const *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(p[i]);
}

/*
 * s[0..n) in double quotes with '"', '\\' and control bytes escaped: as a
 * JSON string (json: \uXXXX, bytes >= 0x80 as Latin-1, always valid), or
 * as C-like text for --dump (\0, \xXX).
 */
static void p3d_quoted(FILE *f, const char *s, size_t n, int json)
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
        else if (c == '\r' && json)
            fputs("\\r", f);
        else if (c == 0 && !json)
            fputs("\\0", f);
        else if (c < 0x20 || c >= 0x7f)
            fprintf(f, json ? "\\u%04x" : "\\x%02x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

void p3d_json_str(FILE *f, const char *s, size_t n)
{
    p3d_quoted(f, s, n, 1);
}

void p3d_text_str(FILE *f, const char *s, size_t n)
{
    p3d_quoted(f, s, n, 0);
}

void p3d_fixed_str(char *dst, const char *src, size_t n)
{
    size_t len = strnlen(src, n);

    memcpy(dst, src, len);
    dst[len] = 0;
}

void p3d_fmt_ranks(char *buf, size_t n, const int *r, int count)
{
    size_t len = 0;

    buf[0] = 0;
    for (int i = 0; i < count && len + 24 < n; i++) {
        int j = i;
        while (j + 1 < count && r[j + 1] == r[j] + 1)
            j++;
        if (j > i + 1)
            len += (size_t)snprintf(buf + len, n - len, "%s%d-%d",
                                    len ? "," : "", r[i], r[j]);
        else
            len += (size_t)snprintf(buf + len, n - len, "%s%d", len ? "," : "",
                                    r[i]), j = i;
        i = j;
        if (len + 24 >= n && i + 1 < count)
            snprintf(buf + len, n - len, ",...");
    }
}
