/*
 * p3d_resolve.c - find the real NCCL/CUDA functions behind our wrappers.
 *
 * dlsym(RTLD_NEXT) alone is not enough: PyTorch loads libnccl.so.2 in a
 * local scope, where RTLD_NEXT returns NULL (and calling NULL kills the
 * rank).  So, in order (style.md H3.2):
 *   1. dlsym(RTLD_NEXT, name);
 *   2. every loaded object (dl_iterate_phdr), reopened with
 *      dlopen(path, RTLD_NOLOAD | RTLD_LAZY), dlsym name then alt
 *      (NCCL's strong pnccl aliases);
 * skipping any hit inside libp3dtrace.so itself.  Failure is reported
 * once per symbol and returned as NULL; callers return an error code.
 *
 * Resolved pointers are cached in slots.  A program may dlclose the
 * library that held NCCL (and NCCL with it) and load it again elsewhere:
 * the shim's dlclose notices that an object was unloaded and empties
 * every slot, so the next call resolves again instead of jumping into
 * unmapped memory.
 */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "p3d_shim.h"

#define P3D_SCAN_MAX 1024
#define P3D_SLOTS_MAX 512

static void **p3d_slots[P3D_SLOTS_MAX]; /* every slot ever filled */
static int p3d_n_slots;
static unsigned long long p3d_unloads; /* dlpi_subs last seen */

struct p3d_scan {
    const char *names[P3D_SCAN_MAX];
    int n;
};

/* 1 if `p` lies in the object that holds this function (the shim). */
static int p3d_resolve_is_self(void *p)
{
    Dl_info self, hit;

    if (dladdr((void *)p3d_resolve_is_self, &self) == 0 ||
        dladdr(p, &hit) == 0)
        return 0;
    return self.dli_fbase == hit.dli_fbase;
}

static int p3d_resolve_collect(struct dl_phdr_info *info, size_t size,
                               void *arg)
{
    struct p3d_scan *s = arg;

    (void)size;
    if (info->dlpi_name != NULL && info->dlpi_name[0] != '\0' &&
        s->n < P3D_SCAN_MAX)
        s->names[s->n++] = info->dlpi_name;
    return 0;
}

static int p3d_real_dlclose(void *h)
{
    static int (*real)(void *);
    int (*fn)(void *) = __atomic_load_n(&real, __ATOMIC_ACQUIRE);

    if (fn == NULL) {
        fn = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
        __atomic_store_n(&real, fn, __ATOMIC_RELEASE);
    }
    return fn != NULL ? fn(h) : -1;
}

static int p3d_read_unloads(struct dl_phdr_info *info, size_t size,
                            void *arg)
{
    (void)size;
    *(unsigned long long *)arg = info->dlpi_subs;
    return 1; /* the first object tells */
}

/* Remember a filled slot (once) so a dlclose can empty it. */
static void p3d_slot_note(void **slot)
{
    int n = __atomic_load_n(&p3d_n_slots, __ATOMIC_ACQUIRE), i;

    for (i = 0; i < n && i < P3D_SLOTS_MAX; i++)
        if (__atomic_load_n(&p3d_slots[i], __ATOMIC_ACQUIRE) == slot)
            return;
    i = __atomic_fetch_add(&p3d_n_slots, 1, __ATOMIC_ACQ_REL);
    if (i < P3D_SLOTS_MAX)
        __atomic_store_n(&p3d_slots[i], slot, __ATOMIC_RELEASE);
}

/* dlclose of the application: if an object went away, forget pointers. */
P3D_EXPORT int dlclose(void *handle)
{
    unsigned long long subs = 0;
    int rc = p3d_real_dlclose(handle), n, i;

    dl_iterate_phdr(p3d_read_unloads, &subs);
    if (subs == __atomic_load_n(&p3d_unloads, __ATOMIC_RELAXED))
        return rc;
    __atomic_store_n(&p3d_unloads, subs, __ATOMIC_RELAXED);
    n = __atomic_load_n(&p3d_n_slots, __ATOMIC_ACQUIRE);
    for (i = 0; i < n && i < P3D_SLOTS_MAX; i++) {
        void **slot = __atomic_load_n(&p3d_slots[i], __ATOMIC_ACQUIRE);
        if (slot != NULL)
            __atomic_store_n(slot, NULL, __ATOMIC_RELEASE);
    }
    return rc;
}

static void *p3d_resolve_in(const char *path, const char *name,
                            const char *alt)
{
    void *h = dlopen(path, RTLD_NOLOAD | RTLD_LAZY);
    void *p;

    if (h == NULL)
        return NULL;
    p = dlsym(h, name);
    if ((p == NULL || p3d_resolve_is_self(p)) && alt != NULL)
        p = dlsym(h, alt);
    if (p != NULL && p3d_resolve_is_self(p))
        p = NULL;
    p3d_real_dlclose(h);
    return p;
}

void *p3d_resolve(const char *name, const char *alt)
{
    struct p3d_scan scan;
    void *p;
    int i;

    p = dlsym(RTLD_NEXT, name);
    if (p != NULL && !p3d_resolve_is_self(p))
        return p;
    /*
     * Collect names first: dlopen inside the dl_iterate_phdr callback
     * would run under the loader's lock.
     */
    scan.n = 0;
    dl_iterate_phdr(p3d_resolve_collect, &scan);
    for (i = 0; i < scan.n; i++) {
        p = p3d_resolve_in(scan.names[i], name, alt);
        if (p != NULL)
            return p;
    }
    return NULL;
}

void *p3d_resolve_slow(void **slot, const char *name, const char *alt)
{
    void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

    if (p != NULL && p != P3D_RESOLVE_FAILED)
        return p;
    if (p == P3D_RESOLVE_FAILED)
        return NULL;
    p = p3d_resolve(name, alt);
    if (p == NULL) {
        p3d_warn_once(name, "cannot find the real '%s' in this process; "
                            "the call returns an error", name);
        __atomic_store_n(slot, P3D_RESOLVE_FAILED, __ATOMIC_RELEASE);
        return NULL;
    }
    __atomic_store_n(slot, p, __ATOMIC_RELEASE);
    p3d_slot_note(slot);
    return p;
}
