/*
 * drvlib.h - what the test "framework" libraries (shim_drvlib.c,
 * rel_drvlib.c) share: NCCL and the CUDA runtime (the fakes), checks
 * that end the process with status 1 when a call's result is wrong, and
 * helpers every scenario needs (drvlib.c).
 */
#ifndef P3D_TEST_DRVLIB_H
#define P3D_TEST_DRVLIB_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <cuda_runtime_api.h>
#include <nccl.h>
#pragma GCC diagnostic pop

#define CHECK(x)                                                              \
    do {                                                                      \
        if (!(x)) {                                                           \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,            \
                    __LINE__, #x);                                            \
            exit(1);                                                          \
        }                                                                     \
    } while (0)
#define OK(x)                                                                 \
    do {                                                                      \
        ncclResult_t r_ = (x);                                                \
        if (r_ != ncclSuccess) {                                              \
            fprintf(stderr, "%s:%d: %s returned %d (%s)\n", __FILE__,         \
                    __LINE__, #x, (int)r_, ncclGetLastError(NULL));           \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

#pragma GCC visibility push(hidden)

/* A new 1-rank communicator. */
ncclComm_t drv_solo(void);

/*
 * The unique id `name` of a communicator: rank 0 makes it and publishes
 * it as the file DIR/NAME.id (DIR = $env_dir, else /tmp); other ranks
 * wait up to 20 s for it.
 */
ncclUniqueId drv_share_id(const char *env_dir, const char *name, int rank);

/* Waits for child p: its exit status, or 128 + the signal that killed it. */
int drv_wait_pid(pid_t p);

#pragma GCC visibility pop

#endif
