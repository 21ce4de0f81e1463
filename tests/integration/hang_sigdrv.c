/*
 * hang_sigdrv.c - a one-rank NCCL program for test_hang_signals.sh: it
 * makes a communicator, runs an all-reduce and sends itself SIGTERM.
 * "chain": the program installed its own SIGTERM handler before its
 * first NCCL call (it must still run: prints "app-handler", exits 3);
 * "default": no handler (the process must die of SIGTERM, after the shim
 * finalized the trace).
 */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

static void app_term(int sig)
{
    static const char msg[] = "app-handler\n";

    (void)sig;
    if (write(1, msg, sizeof(msg) - 1) < 0)
        _exit(4);
    _exit(3);
}

int main(int argc, char **argv)
{
    ncclUniqueId id;
    ncclComm_t c;
    float x[4] = {1, 2, 3, 4};

    if (argc > 1 && !strcmp(argv[1], "chain"))
        signal(SIGTERM, app_term);
    if (ncclGetUniqueId(&id) != ncclSuccess ||
        ncclCommInitRank(&c, 1, id, 0) != ncclSuccess ||
        ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, c, NULL) != ncclSuccess)
        return 2;
    raise(SIGTERM);
    sleep(5);
    return 0;
}
