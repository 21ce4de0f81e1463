/*
 * p3d_names.c - names of ncclDataType_t and ncclRedOp_t values
 * (p3d_names.h).
 *
 * The numbers are NCCL's own enums (nccl.h of NCCL 2.28.9: ncclInt8 = 0
 * ... ncclFloat8e5m2 = 11; ncclSum = 0 ... ncclAvg = 4, values from
 * ncclNumOps = 5 up made by ncclRedOpCreatePreMulSum); the shim records
 * them raw (include/p3d_format.h, P3D_REC_OP), with P3D_REDOP_NONE and
 * P3D_REDOP_CUSTOM of its own.
 */
#include <stdio.h>

#include "p3d_format.h"
#include "p3d_job.h"
#include "p3d_names.h"

static const char *const p3d_dtypes[] = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64",
    "f16", "f32", "f64", "bf16", "f8e4m3", "f8e5m2",
};

static const char *const p3d_redops[] = {"sum", "prod", "max", "min", "avg"};

/* Bytes per element, in the same order (the shim's table, p3d_nccl.c). */
static const int p3d_dtype_size[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

#define P3D_NELEM(a) ((int64_t)(sizeof(a) / sizeof((a)[0])))

const char *p3d_dtype_name(int64_t dt, char *buf, size_t n)
{
    if (dt >= 0 && dt < P3D_NELEM(p3d_dtypes))
        return p3d_dtypes[dt];
    snprintf(buf, n, "type %lld", (long long)dt);
    return buf;
}

int p3d_dtype_bytes(int64_t dt)
{
    return dt >= 0 && dt < P3D_NELEM(p3d_dtype_size) ? p3d_dtype_size[dt] : 0;
}

const char *p3d_redop_name(int64_t op, char *buf, size_t n)
{
    if (op >= 0 && op < P3D_NELEM(p3d_redops))
        return p3d_redops[op];
    if (op == P3D_REDOP_NONE)
        return "none";
    if (op == P3D_REDOP_CUSTOM || op >= P3D_NELEM(p3d_redops))
        return "premulsum";
    snprintf(buf, n, "redop %lld", (long long)op);
    return buf;
}
