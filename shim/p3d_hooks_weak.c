/*
 * p3d_hooks_weak.c - do-nothing weak definitions of every hook of
 * p3d_hooks.h, so the shim links and records host-side NCCL calls when
 * no optional feature (GPU timing, watchdog) provides strong ones.
 */
#include "p3d_hooks.h"

int p3d_hook_ops_idle;

__attribute__((weak)) void p3d_hook_op_before(const struct p3d_op_ctx *op)
{
    (void)op;
}

__attribute__((weak)) void p3d_hook_op_entered(const struct p3d_op_ctx *op,
                                               uint64_t t_enter)
{
    (void)op;
    (void)t_enter;
}

__attribute__((weak)) uint8_t p3d_hook_op_flags(const struct p3d_op_ctx *op)
{
    (void)op;
    return 0;
}

__attribute__((weak)) void p3d_hook_op_after(const struct p3d_op_ctx *op,
                                             int ret)
{
    (void)op;
    (void)ret;
}

__attribute__((weak)) void p3d_hook_group_end_before(uint32_t group_id)
{
    (void)group_id;
}

__attribute__((weak)) void p3d_hook_group_end_after(uint32_t group_id,
                                                    int ret)
{
    (void)group_id;
    (void)ret;
}

__attribute__((weak)) void p3d_hook_comm_end(uint64_t comm_hash, int how)
{
    (void)comm_hash;
    (void)how;
}

__attribute__((weak)) void p3d_hook_fini(void)
{
}

__attribute__((weak)) size_t p3d_hook_hang_detail(char *buf, size_t cap)
{
    (void)buf;
    (void)cap;
    return 0;
}
