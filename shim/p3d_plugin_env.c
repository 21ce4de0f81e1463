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
 * Whether "auto" takes NCCL op times from the plugin.  RATIONALE: decided
 * by the H200 figures in README's timing section (issue 24).
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
