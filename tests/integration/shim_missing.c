/*
 * shim_missing.c - a "framework" library that calls NCCL without any
 * NCCL loaded in the process: the preloaded shim's wrappers are the only
 * definitions.  They must return an error (ncclSystemError), warn once
 * per symbol, and never call through a NULL pointer.
 */
#include <stdio.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

__attribute__((visibility("default"))) int shim_drv_main(int argc,
                                                         char **argv)
{
    ncclUniqueId id = {{0}};
    ncclComm_t c = NULL;
    float x = 1, y = 0;
    int i, bad = 0;

    (void)argc;
    (void)argv;
    for (i = 0; i < 3; i++) {
        bad += ncclCommInitRank(&c, 1, id, 0) != ncclSystemError;
        bad += ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, c, NULL) !=
               ncclSystemError;
        bad += ncclGroupStart() != ncclSystemError;
    }
    printf("missing_ok %d\n", bad == 0);
    return bad == 0 ? 0 : 1;
}
