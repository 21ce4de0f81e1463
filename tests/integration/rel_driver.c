/*
 * rel_driver.c - test program of the reliability (fault injection) tests.
 * Opens librel_drv.so (which links the fake libnccl.so.2) with
 * dlopen(RTLD_LOCAL), as Python opens torch, and runs one of its
 * scenarios: rel_driver LIB SCENARIO [ARGS...].
 *
 * One scenario lives here because it needs NCCL to come and go:
 *   reload N   load LIB, N all-reduces, unload it (and with it libnccl),
 *              make the old address range of libnccl unusable, load it
 *              again (now elsewhere) and run N all-reduces again.  A
 *              shim that kept pointers into the old libnccl crashes.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef int (*rel_main_fn)(int argc, char **argv);

static int rel_call(const char *lib, int argc, char **argv, void **hp)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    rel_main_fn fn;

    if (h == NULL) {
        fprintf(stderr, "rel_driver: %s\n", dlerror());
        exit(2);
    }
    fn = (rel_main_fn)(void (*)(void))dlsym(h, "rel_drv_main");
    if (fn == NULL) {
        fprintf(stderr, "rel_driver: no rel_drv_main in %s\n", lib);
        exit(2);
    }
    *hp = h;
    return fn(argc, argv);
}

/* Address range [lo, hi) of the loaded file whose path ends in name. */
static int rel_range(const char *name, uintptr_t *lo, uintptr_t *hi)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    size_t n = strlen(name);

    *lo = UINTPTR_MAX;
    *hi = 0;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        unsigned long a, b;
        size_t l = strcspn(line, "\n");
        line[l] = '\0';
        if (l < n || strcmp(line + l - n, name) != 0 ||
            sscanf(line, "%lx-%lx", &a, &b) != 2)
            continue;
        if (a < *lo)
            *lo = a;
        if (b > *hi)
            *hi = b;
    }
    if (f != NULL)
        fclose(f);
    return *hi > *lo ? 0 : -1;
}

/*
 * Make the freed range [lo, hi) unusable, page by page: a page something
 * else mapped meanwhile (a thread's stack, the shim's next trace window:
 * the kernel reuses freed addresses) is left as it is, since a stale call
 * into it would not run NCCL's code either.
 */
static int rel_poison(uintptr_t lo, uintptr_t hi)
{
    long pg = sysconf(_SC_PAGESIZE);

    for (uintptr_t a = lo; a < hi; a += (uintptr_t)pg)
        if (mmap((void *)a, (size_t)pg, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
                 0) == MAP_FAILED && errno != EEXIST)
            return -1;
    return 0;
}

static int rel_reload(const char *lib, char *n)
{
    char *args[] = {"loop", n, NULL};
    uintptr_t lo, hi, lo2, hi2;
    void *h;
    int rc = rel_call(lib, 2, args, &h);

    if (rc != 0 || rel_range("/libnccl.so.2", &lo, &hi) != 0)
        return rc ? rc : 3;
    dlclose(h);
    if (rel_range("/libnccl.so.2", &lo2, &hi2) == 0) {
        printf("libnccl stayed loaded\n");
        return 4;
    }
    if (rel_poison(lo, hi) != 0)
        return 5;
    rc = rel_call(lib, 2, args, &h);
    if (rc == 0 && rel_range("/libnccl.so.2", &lo2, &hi2) == 0 && lo2 != lo)
        printf("reloaded elsewhere\n");
    return rc;
}

int main(int argc, char **argv)
{
    void *h;

    if (argc < 3) {
        fprintf(stderr, "usage: rel_driver LIB SCENARIO [ARGS...]\n");
        return 2;
    }
    if (strcmp(argv[2], "reload") == 0 && argc > 3)
        return rel_reload(argv[1], argv[3]);
    return rel_call(argv[1], argc - 2, argv + 2, &h);
}
