/*
 * shim_driver.c - test program of the shim's integration tests.  Opens a
 * "framework" library with dlopen(RTLD_LOCAL), as Python opens torch, so
 * the NCCL that library links lands in a local scope; then runs one of
 * its scenarios.  Usage: shim_driver LIB SCENARIO [ARGS...]
 *
 * It also checks the premise of the test: pncclAllReduce must not be
 * visible in the global scope (else the shim's RTLD_NEXT would find it
 * and the scan of loaded objects would go untested).
 */
#include <dlfcn.h>
#include <stdio.h>

typedef int (*shim_main_fn)(int argc, char **argv);

int main(int argc, char **argv)
{
    void *h;
    shim_main_fn fn;
    int rc;

    if (argc < 3) {
        fprintf(stderr, "usage: shim_driver LIB SCENARIO [ARGS...]\n");
        return 2;
    }
    h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "shim_driver: %s\n", dlerror());
        return 2;
    }
    if (dlsym(RTLD_DEFAULT, "pncclAllReduce") != NULL) {
        fprintf(stderr, "shim_driver: NCCL is in the global scope\n");
        return 3;
    }
    fn = (shim_main_fn)(void (*)(void))dlsym(h, "shim_drv_main");
    if (fn == NULL) {
        fprintf(stderr, "shim_driver: no shim_drv_main in %s\n", argv[1]);
        return 2;
    }
    rc = fn(argc - 2, argv + 2);
    fflush(stdout);
    return rc;
}
