/*
 * p3d_env.h - names of every environment variable p3dtrace reads.
 *
 * One list, so the README, the shim and the tests agree on spelling.
 */
#ifndef P3D_ENV_H
#define P3D_ENV_H

#define P3D_ENV_TRACE_DIR "P3D_TRACE_DIR"       /* default "traces" */
#define P3D_ENV_DISABLE "P3D_DISABLE"           /* "1": pass through */
#define P3D_ENV_RANK "P3D_RANK"                 /* global rank override */
#define P3D_ENV_WORLD_SIZE "P3D_WORLD_SIZE"     /* world size override */
#define P3D_ENV_JOB_ID "P3D_JOB_ID"             /* job sub-folder override */
/* auto|plugin|cupti|events|off */
#define P3D_ENV_GPU_TIMING "P3D_GPU_TIMING"
/* NCCL's own variable: the profiler plugin NCCL loads (issue 24) */
#define P3D_ENV_NCCL_PROFILER_PLUGIN "NCCL_PROFILER_PLUGIN"
/* 1/0 (default 0): NCCL's proxy (network transfer) events for hangs */
#define P3D_ENV_PLUGIN_PROXY "P3D_PLUGIN_PROXY"
#define P3D_ENV_HANG_TIMEOUT "P3D_HANG_TIMEOUT" /* seconds */
#define P3D_ENV_STACKS "P3D_STACKS"             /* 0/1 */
#define P3D_ENV_MAX_MB "P3D_MAX_MB"             /* trace file size cap */
#define P3D_ENV_CUPTI_DRIVER "P3D_CUPTI_DRIVER" /* 0|launch|all */
#define P3D_ENV_GPU_WINDOW "P3D_GPU_WINDOW"     /* FIRST:ON:EVERY s|all|off */

#define P3D_DEFAULT_TRACE_DIR "traces"

#endif /* P3D_ENV_H */
