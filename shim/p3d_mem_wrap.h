/*
 * p3d_mem_wrap.h - glue between the allocation wrappers
 * (p3d_mem_cudart.c, p3d_mem_driver.c, p3d_mem_entry.c).
 */
#ifndef P3D_MEM_WRAP_H
#define P3D_MEM_WRAP_H

/*
 * Per-thread nesting guard of the allocation wrappers: returns 1 for the
 * outermost call (the one that counts), 0 for a nested one.
 */
int p3d_mem_wrap_enter(void);
void p3d_mem_wrap_leave(void);

/*
 * `symbol` was looked up through an entry-point getter and the real
 * function is `real` (ABI of `version`, 0 = the caller's default).  If it
 * is a memory function the shim counts, remember `real` and return the
 * shim's wrapper to hand out instead; else return NULL.
 */
void *p3d_mem_driver_redirect(const char *symbol, void *real, int version);

/* An allocation was counted: make sure the sampling thread runs. */
void p3d_gpu_mem_seen(void);

#endif /* P3D_MEM_WRAP_H */
