/*
 * p3d_stack.c - capture and interning of call-site stacks, and the
 * P3D_REC_MODULE records that make them symbolizable (see p3d_stack.h).
 */

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <unwind.h>

#include "p3d_env.h"
#include "p3d_stack.h"
#include "p3d_shim.h"

#define P3D_STACK_PROBE 32
#define P3D_MODULES_MAX 1024

typedef int (*p3d_unw_bt_fn)(void **, int);
typedef _Unwind_Reason_Code (*p3d_ubt_fn)(_Unwind_Trace_Fn, void *);
typedef uintptr_t (*p3d_getip_fn)(struct _Unwind_Context *);

struct p3d_stack_slot {
    uint64_t hash;          /* 0 = free */
    uint32_t ready;         /* pcs below are valid */
    uint32_t n;
    uint64_t pc[P3D_STACK_FRAMES];
};

static pthread_once_t p3d_stack_once = PTHREAD_ONCE_INIT;
int p3d_stack_ready;  /* set (release) once p3d_stack_init ran */
int p3d_stack_on;
static p3d_unw_bt_fn p3d_unw_bt;
static p3d_ubt_fn p3d_ubt;
static p3d_getip_fn p3d_getip;
static struct p3d_stack_slot p3d_stacks[P3D_STACK_SLOTS];
static pthread_mutex_t p3d_mod_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t p3d_mod_seen[P3D_MODULES_MAX];
static int p3d_mod_n;
static uint64_t p3d_self_lo, p3d_self_hi; /* the shim's own mapping */

/* The address range of the object holding this code (dl_iterate_phdr). */
static int p3d_self_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    uint64_t lo = UINT64_MAX, hi = 0, me = (uint64_t)(uintptr_t)arg;

    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD)
            continue;
        if (info->dlpi_addr + p->p_vaddr < lo)
            lo = info->dlpi_addr + p->p_vaddr;
        if (info->dlpi_addr + p->p_vaddr + p->p_memsz > hi)
            hi = info->dlpi_addr + p->p_vaddr + p->p_memsz;
    }
    if (me < lo || me >= hi)
        return 0;
    p3d_self_lo = lo;
    p3d_self_hi = hi;
    return 1;
}

/*
 * A forked child takes no stacks: a thread of the parent may have been
 * inside the unwinder at fork(), holding a lock of libunwind's (or
 * libgcc's) that nothing releases in the child; its first walk would then
 * block forever (caught with gdb in test_rel_forkmid under ASan).
 */
static void p3d_stack_fork_child(void)
{
    p3d_stack_on = 0;
}

static void p3d_stack_init(void)
{
    const char *e = getenv(P3D_ENV_STACKS);
    int want = -1;
    void *h;

    if (e != NULL && *e != '\0' && p3d_env_parse_int(e, &want) != 0)
        want = -2;
    if (want == -2 || want > 1 || (want < 0 && e != NULL && *e != '\0')) {
        p3d_warn_once("stacks_env", "%s=%s not understood (0 or 1); "
                      "using the default", P3D_ENV_STACKS, e);
        want = -1;
    }
    if (want == 0)
        return;
    h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (h != NULL)
        p3d_unw_bt = (p3d_unw_bt_fn)dlsym(h, "unw_backtrace");
    if (p3d_unw_bt == NULL && want == 1) {
        h = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_LOCAL);
        if (h != NULL) {
            p3d_ubt = (p3d_ubt_fn)dlsym(h, "_Unwind_Backtrace");
            p3d_getip = (p3d_getip_fn)dlsym(h, "_Unwind_GetIP");
        }
    }
    p3d_stack_on = p3d_unw_bt != NULL || (p3d_ubt && p3d_getip);
    if (p3d_stack_on) {
        dl_iterate_phdr(p3d_self_cb, (void *)(uintptr_t)p3d_stack_walk);
        pthread_atfork(NULL, NULL, p3d_stack_fork_child);
    }
    if (!p3d_stack_on && want == 1)
        p3d_warn_once("stacks_none", "%s=1 but neither libunwind.so.8 nor "
                      "libgcc_s.so.1 can be loaded: no call-site stacks",
                      P3D_ENV_STACKS);
}

int p3d_stack_enabled(void)
{
    if (P3D_UNLIKELY(!__atomic_load_n(&p3d_stack_ready, __ATOMIC_ACQUIRE))) {
        pthread_once(&p3d_stack_once, p3d_stack_init);
        __atomic_store_n(&p3d_stack_ready, 1, __ATOMIC_RELEASE);
    }
    return p3d_stack_on;
}

struct p3d_ubt_state {
    void **pc;
    int n, max;
};

static _Unwind_Reason_Code p3d_ubt_step(struct _Unwind_Context *c, void *a)
{
    struct p3d_ubt_state *s = a;

    if (s->n >= s->max)
        return _URC_END_OF_STACK;
    s->pc[s->n++] = (void *)p3d_getip(c);
    return _URC_NO_REASON;
}

static uint64_t p3d_stack_hash(const uint64_t *pc, int n)
{
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)n;

    for (int i = 0; i < n; i++) {
        h ^= pc[i];
        h *= 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h != 0 ? h : 1;
}

static void p3d_stack_record(uint32_t id, const uint64_t *pc, int n)
{
    struct p3d_rec_stack *r =
        p3d_rec_reserve(P3D_REC_STACK, sizeof(*r) + 8 * (size_t)n);

    if (r == NULL)
        return;
    r->stack_id = id;
    r->n_frames = (uint32_t)n;
    memcpy(r->pc, pc, 8 * (size_t)n);
    p3d_rec_commit(r);
}

uint32_t p3d_stack_intern(const uint64_t *pc, int n)
{
    uint64_t h = p3d_stack_hash(pc, n);
    uint32_t i = (uint32_t)(h % P3D_STACK_SLOTS);

    for (int k = 0; k < P3D_STACK_PROBE; k++) {
        struct p3d_stack_slot *s = &p3d_stacks[(i + k) % P3D_STACK_SLOTS];
        uint64_t cur = __atomic_load_n(&s->hash, __ATOMIC_ACQUIRE);
        uint32_t id = (i + k) % P3D_STACK_SLOTS + 1;

        if (cur == h)
            return id;
        if (cur != 0)
            continue;
        if (!__atomic_compare_exchange_n(&s->hash, &cur, h, 0,
                                         __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            if (cur == h)
                return id;
            continue;
        }
        s->n = (uint32_t)n;
        memcpy(s->pc, pc, 8 * (size_t)n);
        __atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
        p3d_stack_modules();
        p3d_stack_record(id, pc, n);
        return id;
    }
    p3d_warn_once("stacks_full", "more than %d distinct call sites (or "
                  "too many collisions): later ones get no stack id",
                  P3D_STACK_SLOTS);
    return 0;
}

uint32_t p3d_stack_walk(int skip)
{
    void *raw[P3D_STACK_FRAMES + 8];

    uint64_t pc[P3D_STACK_FRAMES];
    int n, m = 0;

    if (!p3d_stack_enabled())
        return 0;
    if (skip > 4)
        skip = 4;
    if (p3d_unw_bt != NULL) {
        n = p3d_unw_bt(raw, P3D_STACK_FRAMES + skip);
    } else {
        struct p3d_ubt_state st = {raw, 0, P3D_STACK_FRAMES + skip};
        p3d_ubt(p3d_ubt_step, &st);
        n = st.n;
    }
    while (skip < n && skip < 4 &&      /* the shim's own frames */
           (uint64_t)(uintptr_t)raw[skip] >= p3d_self_lo &&
           (uint64_t)(uintptr_t)raw[skip] < p3d_self_hi)
        skip++;
    for (int i = skip; i < n && m < P3D_STACK_FRAMES; i++)
        pc[m++] = (uint64_t)(uintptr_t)raw[i];
    if (m == 0)
        return 0;
    return p3d_stack_intern(pc, m);
}

int p3d_stack_get(uint32_t id, uint64_t *pc, int max)
{
    const struct p3d_stack_slot *s;
    int n;

    if (id == 0 || id > P3D_STACK_SLOTS)
        return 0;
    s = &p3d_stacks[id - 1];
    if (!__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE))
        return 0;
    n = (int)s->n < max ? (int)s->n : max;
    memcpy(pc, s->pc, 8 * (size_t)n);
    return n;
}

/* Write one P3D_REC_MODULE. */
static void p3d_module_record(const char *path, uint64_t base, uint64_t size)
{
    size_t n = strnlen(path, 4000);
    struct p3d_rec_module *r =
        p3d_rec_reserve(P3D_REC_MODULE, sizeof(*r) + n + 1);

    if (r == NULL)
        return;
    r->base = base;
    r->size = size;
    memcpy(r->path, path, n);
    p3d_rec_commit(r);
}

static int p3d_module_seen(uint64_t base)
{
    for (int i = 0; i < p3d_mod_n; i++)
        if (p3d_mod_seen[i] == base)
            return 1;
    if (p3d_mod_n < P3D_MODULES_MAX)
        p3d_mod_seen[p3d_mod_n++] = base;
    return 0;
}

static int p3d_module_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    char exe[1024];
    const char *path = info->dlpi_name;

    (void)size;
    (void)arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD)
            continue;
        if (p->p_vaddr < lo)
            lo = p->p_vaddr;
        if (p->p_vaddr + p->p_memsz > hi)
            hi = p->p_vaddr + p->p_memsz;
    }
    if (hi <= lo || p3d_module_seen(info->dlpi_addr + lo))
        return 0;
    if (path == NULL || path[0] == '\0') {
        ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        exe[k > 0 ? k : 0] = '\0';
        path = exe;
    }
    p3d_module_record(path, info->dlpi_addr + lo, hi - lo);
    return 0;
}

void p3d_stack_modules(void)
{
    pthread_mutex_lock(&p3d_mod_lock);
    dl_iterate_phdr(p3d_module_cb, NULL);
    pthread_mutex_unlock(&p3d_mod_lock);
}

void p3d_stack_reset(void)
{
    memset(p3d_stacks, 0, sizeof(p3d_stacks));
    p3d_mod_n = 0;
}
