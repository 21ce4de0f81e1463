/*
 * open_count.c - LD_PRELOAD library for test_hang_fastpath.sh: counts the
 * program's open() calls on trace files (*.p3d) and writes the count to
 * $P3D_OPEN_COUNT_FILE at exit.  How often the analyzer opens each rank
 * file is the only outside sign of whether it ran the hang scan.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

static atomic_int p3d_opens;

static void note(const char *path)
{
    size_t n = path ? strlen(path) : 0;

    if (n > 4 && strcmp(path + n - 4, ".p3d") == 0)
        atomic_fetch_add(&p3d_opens, 1);
}

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

#define OPEN_WRAPPER(name)                                                    \
    int name(const char *path, int flags, ...)                                \
    {                                                                         \
        static int (*real)(const char *, int, ...);                           \
        va_list ap;                                                           \
        mode_t mode;                                                          \
                                                                              \
        va_start(ap, flags);                                                  \
        mode = mode_arg(flags, ap);                                           \
        va_end(ap);                                                           \
        if (!real)                                                            \
            *(void **)&real = dlsym(RTLD_NEXT, #name);                        \
        note(path);                                                           \
        return real(path, flags, mode);                                       \
    }
OPEN_WRAPPER(open)
OPEN_WRAPPER(open64)

__attribute__((destructor)) static void report(void)
{
    const char *out = getenv("P3D_OPEN_COUNT_FILE");
    FILE *f = out ? fopen(out, "w") : NULL;

    if (f) {
        fprintf(f, "%d\n", atomic_load(&p3d_opens));
        fclose(f);
    }
}
