/*
 * mmap_probe.c - why does writing trace records into a mapped file cost
 * what it costs?  Writes 96-byte records (header stored last, release
 * order, as the shim does) into memory obtained several ways and prints
 * ns per record and page faults per record for each:
 *
 *   mmap_probe DIR [MIB]
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define WIN (4u << 20)
#define REC 96

enum { ANON_REUSE, ANON_FRESH, FILE_POP, FILE_NOPOP, FILE_POPW,
       FILE_POPW_DROP, NMODES };
static const char *names[NMODES] = {
    "anon, one window reused", "anon, fresh window each time",
    "file, fallocate+MAP_POPULATE (old shim)", "file, fallocate, no populate",
    "file, fallocate+MADV_POPULATE_WRITE",
    "file, POPULATE_WRITE + write-back/drop old windows",
};

static double now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static long minflt(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

static uint64_t fill(char *p, size_t len, uint64_t k)
{
    size_t off;

    for (off = 0; off + REC <= len; off += REC, k++) {
        uint64_t *q = (uint64_t *)(p + off);
        int i;

        for (i = 1; i < REC / 8; i++)
            q[i] = k + i;
        __atomic_store_n((uint32_t *)q, 5u | (REC << 16), __ATOMIC_RELEASE);
    }
    return k;
}

static char *get_window(int mode, int fd, unsigned w, char *reuse)
{
    off_t off = (off_t)w * WIN;
    char *p;

    if (mode == ANON_REUSE)
        return reuse;
    if (mode == ANON_FRESH)
        return mmap(NULL, WIN, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (posix_fallocate(fd, off, WIN) != 0)
        return MAP_FAILED;
    p = mmap(NULL, WIN, PROT_READ | PROT_WRITE,
             MAP_SHARED | (mode == FILE_POP ? MAP_POPULATE : 0), fd, off);
    if (p != MAP_FAILED && (mode == FILE_POPW || mode == FILE_POPW_DROP))
        madvise(p, WIN, MADV_POPULATE_WRITE);
    return p;
}

static void put_window(int mode, int fd, unsigned w, char *p)
{
    if (mode == ANON_REUSE)
        return;
    munmap(p, WIN);
    if (mode == FILE_POPW_DROP && w >= 1) {
        sync_file_range(fd, (off_t)(w - 1) * WIN, WIN,
                        SYNC_FILE_RANGE_WRITE);
        if (w >= 2)
            posix_fadvise(fd, (off_t)(w - 2) * WIN, WIN,
                          POSIX_FADV_DONTNEED);
    }
}

static void run(int mode, const char *dir, unsigned nwin)
{
    char path[4096];
    char *reuse = NULL;
    int fd = -1;
    unsigned w;
    uint64_t k = 0;
    long f0;
    double t0, t;

    snprintf(path, sizeof(path), "%s/mmap_probe.%d", dir, (int)getpid());
    if (mode >= FILE_POP) {
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd < 0) {
            perror(path);
            exit(2);
        }
    } else if (mode == ANON_REUSE) {
        reuse = mmap(NULL, WIN, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    }
    f0 = minflt();
    t0 = now_ns();
    for (w = 0; w < nwin; w++) {
        char *p = get_window(mode, fd, w, reuse);

        if (p == MAP_FAILED) {
            perror("window");
            exit(2);
        }
        k = fill(p, WIN, k);
        put_window(mode, fd, w, p);
    }
    t = now_ns() - t0;
    printf("%-52s %7.1f ns/record %6.3f faults/record\n", names[mode],
           t / k, (double)(minflt() - f0) / k);
    if (fd >= 0) {
        close(fd);
        unlink(path);
    }
}

int main(int argc, char **argv)
{
    unsigned mib = argc > 2 ? (unsigned)atoi(argv[2]) : 256;
    int mode;

    if (argc < 2) {
        fprintf(stderr, "usage: mmap_probe DIR [MIB]\n");
        return 2;
    }
    for (mode = 0; mode < NMODES; mode++)
        run(mode, argv[1], mib / 4);
    return 0;
}
