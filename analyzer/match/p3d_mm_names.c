/*
 * p3d_mm_names.c - a mismatch's values as text: the op kind, datatype and
 * reduction op by name ("bf16", "sum"), other fields as numbers, so every
 * report says what differs in NCCL's words (p3d_match.h, P3D_MM_*).
 */
#include <stdio.h>

#include "p3d_format.h"
#include "p3d_job.h"
#include "p3d_match.h"
#include "p3d_names.h"

int p3d_mm_named(int field)
{
    return field == P3D_MM_OP || field == P3D_MM_DTYPE ||
           field == P3D_MM_REDOP;
}

const char *p3d_mm_value(int field, int64_t v, char *buf, size_t n)
{
    switch (field) {
    case P3D_MM_OP:
        if (v >= 0 && v < P3D_OP_COUNT)
            return p3d_op_name[v];
        break;
    case P3D_MM_DTYPE:
        return p3d_dtype_name(v, buf, n);
    case P3D_MM_REDOP:
        return p3d_redop_name(v, buf, n);
    default:
        break;
    }
    snprintf(buf, n, "%lld", (long long)v);
    return buf;
}
