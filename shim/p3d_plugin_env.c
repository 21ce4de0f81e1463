/*
 * p3d_plugin_env.c - point NCCL at libp3dtrace.so as its profiler plugin
 * before NCCL reads its environment (issue 24).
 *
 * NCCL dlopens the library named by NCCL_PROFILER_PLUGIN at its first
 * communicator init.  A constructor of the preloaded shim runs before the
 * program's main, so setting it there (overwrite = 0: a user's value
 * wins) is early enough for every init.  The value is our own file
 * (dladdr of a function here, made absolute), so NCCL's dlopen finds the
 * copy already loaded.  Children inherit it, as they inherit LD_PRELOAD.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "p3d_env.h"
#include "p3d_plugin.h"

/*
 * Whether "auto" takes NCCL op times from the plugin, and on which NCCL
 * versions it would.  RATIONALE (README, "NCCL op times from NCCL's
 * profiler plugin"; issue 24): on the H200 with NCCL 2.28.9 every median
 * measured put the plugin at or below CUDA events in cost (host CPU per
 * call 18.9 against 25.8 us; a GPU-bound loop +0.44% against +1.37%),
 * and collectives' times were within 0.32-0.65% of nccl-tests' own; but
 * nccl-tests' sendrecv read 20-99% below nccl-tests' time with the
 * plugin (the events path: within 1.2%); why is not settled (likely a
 * Send/Recv task's kernel channels cover only the kernel's part of a
 * transfer NCCL's proxy carries over the network).  So "auto" keeps CUDA
 * events.  Were it switched on, only 2.28 was measured: 2.27 (v4) can
 * lose eager ops' times after a CUDA-graph replay, 2.29+ send no
 * profiler event for broadcasts, and users measured a 4-13% regression
 * of the plugin path on 2.31.2 (NVIDIA nccl issue 2355).
 */
#define P3D_PLUGIN_AUTO 0

static char plugin_self[PATH_MAX];
static const char *plugin_user;   /* the user's value, if another library */

int p3d_plugin_auto_default(void)
{
    return P3D_PLUGIN_AUTO;
}

/* Parsed quietly: p3d_gpu_mode_parse warns about bad values later. */
static int plugin_mode_wants(const char *mode)
{
    if (mode == NULL || *mode == '\0' || strcmp(mode, "auto") == 0)
        return P3D_PLUGIN_AUTO;
    return strcmp(mode, "plugin") == 0;
}

int p3d_plugin_env_wanted(void)
{
    const char *off = getenv(P3D_ENV_DISABLE);

    if (off != NULL && strcmp(off, "1") == 0)
        return 0;
    return plugin_mode_wants(getenv(P3D_ENV_GPU_TIMING));
}

const char *p3d_plugin_env_other(void)
{
    return plugin_user;
}

/*
 * Whether the plugin asks NCCL for its proxy events (ProxyOp, ProxyStep:
 * where each network transfer stands, for the hang report;
 * p3d_plugin_proxy.c).  RATIONALE for off by default: NCCL then calls the
 * plugin three or four times per step of every network transfer, on its
 * proxy thread, which at InfiniBand rates moves a step every few us per
 * channel; measured only over sockets on one H200 (+0.05% per small
 * all-reduce, README), not at those rates, and the issue asks for no
 * cost that was not measured.  P3D_PLUGIN_PROXY=1 turns them on.
 */
#define P3D_PLUGIN_PROXY_ON 0

int p3d_plugin_env_proxy(void)
{
    const char *v = getenv(P3D_ENV_PLUGIN_PROXY);

    if (v == NULL || *v == '\0')
        return P3D_PLUGIN_PROXY_ON;
    return strcmp(v, "0") != 0;
}

/* Our own file, absolute (NCCL may dlopen after a chdir). */
static int plugin_self_path(void)
{
    Dl_info info;

    if (dladdr((void *)plugin_self_path, &info) == 0 ||
        info.dli_fname == NULL || info.dli_fname[0] == '\0')
        return -1;
    if (realpath(info.dli_fname, plugin_self) == NULL) {
        size_t n = strlen(info.dli_fname);

        if (n >= sizeof(plugin_self))
            return -1;
        memcpy(plugin_self, info.dli_fname, n + 1);
    }
    return 0;
}

/*
 * Whether this library's NCCL wrappers are the ones the process calls:
 * NCCL can also dlopen us as its plugin in a process we were not
 * preloaded into (a child that dropped LD_PRELOAD but kept
 * NCCL_PROFILER_PLUGIN); there no op is ours to time.
 */
int p3d_plugin_env_interposes(void)
{
    Dl_info mine, found;
    void *fn = dlsym(RTLD_DEFAULT, "ncclGroupStart");

    return fn != NULL &&
           dladdr((void *)p3d_plugin_env_interposes, &mine) != 0 &&
           dladdr(fn, &found) != 0 && mine.dli_fbase == found.dli_fbase;
}

/* Whether the user's value names this very library. */
static int plugin_is_self(const char *value)
{
    char real[PATH_MAX];

    if (strcmp(value, plugin_self) == 0)
        return 1;
    return realpath(value, real) != NULL && strcmp(real, plugin_self) == 0;
}

__attribute__((constructor)) static void p3d_plugin_env_setup(void)
{
    const char *cur = getenv(P3D_ENV_NCCL_PROFILER_PLUGIN);

    if (!p3d_plugin_env_wanted() || plugin_self_path() != 0)
        return;
    if (cur != NULL && *cur != '\0') {
        if (!plugin_is_self(cur))
            plugin_user = cur;
        return;
    }
    setenv(P3D_ENV_NCCL_PROFILER_PLUGIN, plugin_self, 0);
}
