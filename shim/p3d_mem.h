/*
 * p3d_mem.h - per-device memory accounting behind the allocation wrappers
 * (p3d_mem_cudart.c, p3d_mem_driver.c).
 *
 * "Framework" device bytes (P3D_MEM_DEVICE) are defined so that their peak
 * equals torch.cuda.max_memory_reserved() for PyTorch's three allocator
 * settings:
 *   default caching allocator  live cudaMalloc (+ cuMemAlloc) bytes, i.e.
 *                              the sum of its segments;
 *   expandable_segments:True   bytes mapped with cuMemMap from handles made
 *                              by cuMemCreate in this process (PyTorch's
 *                              reserved = mapped physical memory);
 *   backend:cudaMallocAsync    the reserved memory of the memory pools that
 *                              served cudaMallocAsync/FromPoolAsync
 *                              (cudaMemPoolAttrReservedMem{Current,High},
 *                              sampled every 10 ms by the background thread:
 *                              PyTorch reports exactly that); where pool
 *                              attributes cannot be read, the live bytes of
 *                              those calls.
 * Peak = max over time of the sum; with pools, sum of the live synchronous
 * bytes and the pool high-water mark (exact when a process uses one
 * allocator backend, an upper bound otherwise).
 * Host pinned (cudaMallocHost/cudaHostAlloc) and managed memory are
 * counted apart; P3D_MEM_DEVICE_USED is cudaMemGetInfo's used memory.
 *
 * The pointer table is lock-free (open addressing, linear probing, bounded
 * probe length); an allocation that finds no slot is not counted and
 * counted as overflow (warned once).
 */
#ifndef P3D_MEM_H
#define P3D_MEM_H

#include <stdint.h>

#include "p3d_format.h"

#define P3D_MEM_DEVS 16               /* devices tracked (others: last) */
#define P3D_MEM_TABLE_BITS 18         /* 262144 live allocations */
#define P3D_MEM_PROBE 64              /* longest probe sequence */
#define P3D_MEM_EMIT_NS 1000000u      /* at most one peak record / 1 ms */
#define P3D_MEM_EMIT_BYTES (1u << 20) /* ... unless it grew by 1 MiB */
/* Device-used sampling (cudaMemGetInfo): see p3d_mem_used_due. */
#define P3D_MEM_USED_BUSY_NS 100000000ull   /* 100 ms after allocations */
#define P3D_MEM_USED_IDLE_NS 1000000000ull  /* 1 s otherwise */

/* What a table entry counts towards. */
enum p3d_mem_class {
    P3D_MC_DEVICE = 0,   /* cudaMalloc, cuMemAlloc, cuMemMap */
    P3D_MC_HOST,         /* cudaMallocHost, cudaHostAlloc */
    P3D_MC_MANAGED,      /* cudaMallocManaged */
    P3D_MC_ASYNC,        /* cudaMallocAsync, cudaMallocFromPoolAsync */
    P3D_MC_HANDLE,       /* cuMemCreate handle: remembered, not counted */
    P3D_MC_COUNT
};

#define P3D_MEM_HANDLE_TAG 0x8000000000000000ull /* key of a VMM handle */

/* Remember `key` (a pointer or tagged handle) and count its bytes. */
int p3d_mem_track(uint64_t key, uint64_t bytes, int cls, int dev);
/*
 * Forget `key`; returns its bytes and sets *cls and *dev, or returns 0 if it
 * was not tracked (allocation made before the shim or table overflow).
 */
uint64_t p3d_mem_untrack(uint64_t key, int *cls, int *dev);
/* Look up without removing; 1 if found. */
int p3d_mem_lookup(uint64_t key, uint64_t *bytes, int *cls, int *dev);

/* The background thread's samples. */
void p3d_mem_pool_sample(int dev, uint64_t reserved, uint64_t high);
void p3d_mem_used_sample(int dev, uint64_t used);
/* Whether the sampler thread should read device-used memory at `now`;
 * a yes starts the next interval. */
int p3d_mem_used_due(uint64_t now);
/* Devices that saw allocations (bit i = device i). */
uint32_t p3d_mem_devices(void);
/* Devices whose allocations came from memory pools. */
uint32_t p3d_mem_pool_devices(void);
/* Note an async allocation on `dev` (pool in use). */
void p3d_mem_pool_note(int dev);

/* Current and peak bytes of a P3D_MEM_* kind on a device. */
uint64_t p3d_mem_current(int kind, int dev);
uint64_t p3d_mem_peak(int kind, int dev);
/* Peak per kind summed over devices (for the summary record). */
void p3d_mem_peaks(uint64_t peak[P3D_MEM_KIND_COUNT]);
/* Write a P3D_REC_MEM for every kind/device with a non-zero peak. */
void p3d_mem_emit_final(void);
/* Allocations not counted because the table was full. */
uint64_t p3d_mem_overflow(void);
/* Forget everything (unit tests). */
void p3d_mem_reset(void);

#endif /* P3D_MEM_H */
