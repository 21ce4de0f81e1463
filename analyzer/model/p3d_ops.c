/*
 * p3d_ops.c - the op table (p3d_ops.h), generated from P3D_OPS.
 */
#include "p3d_ops.h"

const char *const p3d_op_name[P3D_OP_COUNT] = {
#define P3D_X_OPNAME(name, text, traits) text,
    P3D_OPS(P3D_X_OPNAME)
#undef P3D_X_OPNAME
};

static const unsigned p3d_op_trait[P3D_OP_COUNT] = {
#define P3D_X_OPTRAITS(name, text, traits) traits,
    P3D_OPS(P3D_X_OPTRAITS)
#undef P3D_X_OPTRAITS
};

unsigned p3d_op_traits(int op)
{
    return op >= 0 && op < P3D_OP_COUNT ? p3d_op_trait[op] : 0;
}

int p3d_op_rooted(int op)
{
    return (p3d_op_traits(op) & P3D_OPK_ROOTED) != 0;
}

int p3d_op_to_self(const struct p3d_rec_op *o)
{
    return P3D_OP_IS_P2P(o->op) && o->comm_rank >= 0 &&
           o->peer == o->comm_rank;
}
