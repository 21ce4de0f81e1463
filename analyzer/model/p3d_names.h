/*
 * p3d_names.h - names of the NCCL enumerations a trace records as raw
 * numbers (ncclDataType_t, ncclRedOp_t), so every report and the JSON
 * say "bf16" and "sum", never "9" and "0".
 */
#ifndef P3D_NAMES_H
#define P3D_NAMES_H

#include <stddef.h>
#include <stdint.h>

/* "bf16", "f32", ... ; "type N" for a value NCCL 2.28 does not define. */
const char *p3d_dtype_name(int64_t dt, char *buf, size_t n);
/* Bytes per element of ncclDataType_t dt; 0 for a value NCCL 2.28 does
 * not define. */
int p3d_dtype_bytes(int64_t dt);
/* "sum", "max", ... ; "premulsum" (user-defined), "none" (no reduction). */
const char *p3d_redop_name(int64_t op, char *buf, size_t n);

#endif /* P3D_NAMES_H */
