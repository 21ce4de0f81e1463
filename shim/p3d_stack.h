/*
 * p3d_stack.h - call-site stacks of NCCL ops, captured when an op is
 * enqueued and interned: each distinct stack is written once as a
 * P3D_REC_STACK with a small id that op and hang records refer to, and
 * the loaded objects are written as P3D_REC_MODULE records so the
 * analyzer can symbolize the return addresses offline.
 *
 * Capture uses libunwind's unw_backtrace (libunwind.so.8, opened with
 * dlopen: the shim does not need it at run time).  Measured on this
 * project's CI machine: ~0.55-0.65 us per capture of 16 frames, against
 * ~10-20 us for libgcc's _Unwind_Backtrace and glibc's backtrace().  So
 * P3D_STACKS defaults to on when libunwind is present and to off when
 * it is not; P3D_STACKS=1 then uses _Unwind_Backtrace anyway.
 *
 * Thread safety: p3d_stack_capture is lock-free on the hot path (the
 * intern table is an open-addressing array of hashes claimed by CAS); the
 * first capture of a new stack writes records and walks the loaded
 * objects (dl_iterate_phdr, which takes the loader's lock).
 */
#ifndef P3D_STACK_H
#define P3D_STACK_H

#include <stdint.h>

#define P3D_STACK_FRAMES 16
#define P3D_STACK_SLOTS 4096

/*
 * Capture the caller's stack (skipping `skip` innermost frames), intern
 * it and return its id (>= 1), or 0 when stacks are off or the table is
 * full.  Inline: with stacks off (known once the first call decided) an
 * NCCL call pays two loads, not a call.
 */
uint32_t p3d_stack_walk(int skip);
extern int p3d_stack_ready;  /* set (release) once p3d_stack_init ran */
extern int p3d_stack_on;

static inline uint32_t p3d_stack_capture(int skip)
{
    if (__atomic_load_n(&p3d_stack_ready, __ATOMIC_ACQUIRE) && !p3d_stack_on)
        return 0;
    return p3d_stack_walk(skip);
}

/* Intern an already captured pc array (tests); returns its id or 0. */
uint32_t p3d_stack_intern(const uint64_t *pc, int n);

/* 1 if stacks are being captured (P3D_STACKS and an unwinder). */
int p3d_stack_enabled(void);

/* pcs of an interned id (for the live hang report); returns n. */
int p3d_stack_get(uint32_t id, uint64_t *pc, int max);

/* Write P3D_REC_MODULE records for objects loaded since the last call. */
void p3d_stack_modules(void);

/* Forget everything (tests, fork child). */
void p3d_stack_reset(void);

#endif /* P3D_STACK_H */
