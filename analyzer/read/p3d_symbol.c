/*
 * p3d_symbol.c - ELF symbol lookup for recorded pcs (see p3d_symbol.h).
 * Every offset read from a file is checked against its size before use.
 */
#include <elf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "p3d_symbol.h"
#include "p3d_util.h"

#define P3D_SYM_FILES 64

struct p3d_sym {
    uint64_t value, size;
    const char *name;
};

struct p3d_symfile {
    char *path;
    int ok;                 /* readable ELF */
    const uint8_t *map;
    size_t len;
    uint64_t min_vaddr;
    struct p3d_sym *syms;
    size_t n;
    uint64_t mtime_ns;
};

static struct p3d_symfile p3d_sf[P3D_SYM_FILES];
static int p3d_sf_n;
static uint64_t p3d_sf_run_start;

void p3d_symbol_run_start(uint64_t realtime_ns)
{
    p3d_sf_run_start = realtime_ns;
}

static int p3d_sym_cmp(const void *a, const void *b)
{
    const struct p3d_sym *x = a, *y = b;

    return x->value < y->value ? -1 : x->value > y->value;
}

/* Collect the function symbols of section `sh` (a SYMTAB/DYNSYM). */
static void p3d_sym_table(struct p3d_symfile *f, const Elf64_Shdr *sh,
                          const Elf64_Shdr *strh)
{
    size_t cnt = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
    const Elf64_Sym *s = (const Elf64_Sym *)(f->map + sh->sh_offset);
    const char *str = (const char *)f->map + strh->sh_offset;

    if (sh->sh_entsize != sizeof(Elf64_Sym) ||
        sh->sh_offset + sh->sh_size > f->len ||
        strh->sh_offset + strh->sh_size > f->len || strh->sh_size == 0)
        return;
    f->syms = p3d_xcalloc(cnt + 1, sizeof(*f->syms));
    for (size_t i = 0; i < cnt; i++) {
        int t = ELF64_ST_TYPE(s[i].st_info);
        if ((t != STT_FUNC && t != STT_GNU_IFUNC) || s[i].st_value == 0 ||
            s[i].st_name >= strh->sh_size)
            continue;
        f->syms[f->n].value = s[i].st_value;
        f->syms[f->n].size = s[i].st_size;
        f->syms[f->n++].name = str + s[i].st_name;
    }
    if (str[strh->sh_size - 1] != '\0')
        f->n = 0;               /* unterminated string table: distrust */
    if (f->n)
        qsort(f->syms, f->n, sizeof(*f->syms), p3d_sym_cmp);
}

static void p3d_sym_parse(struct p3d_symfile *f)
{
    const Elf64_Ehdr *e = (const void *)f->map;
    const Elf64_Shdr *sh;
    int pick = -1;

    if (f->len < sizeof(*e) || memcmp(e->e_ident, ELFMAG, SELFMAG) ||
        e->e_ident[EI_CLASS] != ELFCLASS64 ||
        e->e_phoff + (uint64_t)e->e_phnum * sizeof(Elf64_Phdr) > f->len ||
        e->e_shoff + (uint64_t)e->e_shnum * sizeof(Elf64_Shdr) > f->len)
        return;
    f->min_vaddr = UINT64_MAX;
    for (int i = 0; i < e->e_phnum; i++) {
        const Elf64_Phdr *p = (const Elf64_Phdr *)(f->map + e->e_phoff) + i;
        if (p->p_type == PT_LOAD && p->p_vaddr < f->min_vaddr)
            f->min_vaddr = p->p_vaddr;
    }
    if (f->min_vaddr == UINT64_MAX)
        f->min_vaddr = 0;
    sh = (const void *)(f->map + e->e_shoff);
    for (int i = 0; i < e->e_shnum; i++)
        if (sh[i].sh_type == SHT_SYMTAB ||
            (sh[i].sh_type == SHT_DYNSYM && pick < 0))
            pick = i;
    if (pick >= 0 && sh[pick].sh_link < e->e_shnum)
        p3d_sym_table(f, &sh[pick], &sh[sh[pick].sh_link]);
    f->ok = 1;
}

static struct p3d_symfile *p3d_sym_file(const char *path)
{
    struct p3d_symfile *f;
    struct stat st;
    int fd;

    for (int i = 0; i < p3d_sf_n; i++)
        if (!strcmp(p3d_sf[i].path, path))
            return &p3d_sf[i];
    if (p3d_sf_n == P3D_SYM_FILES)
        return NULL;
    f = &p3d_sf[p3d_sf_n++];
    memset(f, 0, sizeof(*f));
    f->path = p3d_xstrdup(path);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return f;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        f->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull +
                      (uint64_t)st.st_mtim.tv_nsec;
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd,
                       0);
        if (m != MAP_FAILED) {
            f->map = m;
            f->len = (size_t)st.st_size;
            p3d_sym_parse(f);
        }
    }
    close(fd);
    return f;
}

static const struct p3d_sym *p3d_sym_find(const struct p3d_symfile *f,
                                          uint64_t va)
{
    size_t lo = P3D_COUNT_LE(f->syms, f->n, value, va);

    if (lo == 0)
        return NULL;
    if (f->syms[lo - 1].size && va >= f->syms[lo - 1].value +
                                      f->syms[lo - 1].size)
        return NULL;
    return &f->syms[lo - 1];
}

void p3d_symbol_pc(char *buf, size_t n, uint64_t pc,
                   const struct p3d_rec_module *const *mods, size_t n_mods)
{
    const struct p3d_rec_module *m = NULL;
    const struct p3d_symfile *f;
    const struct p3d_sym *s = NULL;
    const char *base, *stale = "";

    for (size_t i = 0; i < n_mods && m == NULL; i++)
        if (pc >= mods[i]->base && pc - mods[i]->base < mods[i]->size)
            m = mods[i];
    if (m == NULL) {
        snprintf(buf, n, "0x%" PRIx64 " [no module]", pc);
        return;
    }
    base = strrchr(m->path, '/') ? strrchr(m->path, '/') + 1 : m->path;
    f = p3d_sym_file(m->path);
    if (f == NULL || !f->ok) {
        snprintf(buf, n, "%s+0x%" PRIx64 " [not symbolized: %s not "
                 "readable here]", base, pc - m->base, m->path);
        return;
    }
    if (p3d_sf_run_start != 0 && f->mtime_ns > p3d_sf_run_start)
        stale = " [file modified after the run: may be wrong]";
    s = p3d_sym_find(f, f->min_vaddr + (pc - m->base) - 1);
    if (s == NULL)
        snprintf(buf, n, "%s+0x%" PRIx64 "%s", base, pc - m->base, stale);
    else
        snprintf(buf, n, "%s+0x%" PRIx64 " (%s)%s", s->name,
                 f->min_vaddr + (pc - m->base) - s->value, base, stale);
}

void p3d_symbol_free(void)
{
    for (int i = 0; i < p3d_sf_n; i++) {
        if (p3d_sf[i].map)
            munmap((void *)p3d_sf[i].map, p3d_sf[i].len);
        free(p3d_sf[i].path);
        free(p3d_sf[i].syms);
    }
    p3d_sf_n = 0;
}
