/*
 * p3d_commhash.c - NCCL's commHash (see p3d_commhash.h).  The hash
 * depends on how input is split into eat calls, so the split child eats
 * its three fields separately, exactly as NCCL does.
 */
#include <string.h>

#include "p3d_commhash.h"

#define P3D_UNIQUE_ID_BYTES 128

static void p3d_commhash_eat(uint64_t acc[2], const void *bytes, size_t size)
{
    const char *ptr = bytes;

    acc[0] ^= size;
    while (size != 0) {
        size_t n = size < sizeof(uint64_t) ? size : sizeof(uint64_t);
        uint64_t x = 0;

        acc[0] += acc[1];
        acc[1] ^= acc[0];
        acc[0] ^= acc[0] >> 31;
        acc[0] *= 0x9de62bbc8cef3ce3ull;
        acc[1] ^= acc[1] >> 32;
        acc[1] *= 0x485cd6311b599e79ull;
        memcpy(&x, ptr, n);
        ptr += n;
        size -= n;
        acc[0] += x;
    }
}

static uint64_t p3d_commhash_digest(const uint64_t acc[2])
{
    uint64_t h = acc[0];

    h ^= h >> 31;
    h *= 0xbac3bd562846de6bull;
    h += acc[1];
    h ^= h >> 32;
    h *= 0x995a187a14e7b445ull;
    return h;
}

uint64_t p3d_commhash_bytes(const void *bytes, size_t size)
{
    uint64_t acc[2] = {1, 1};

    p3d_commhash_eat(acc, bytes, size);
    return p3d_commhash_digest(acc);
}

uint64_t p3d_commhash_root(const void *unique_id)
{
    return p3d_commhash_bytes(unique_id, P3D_UNIQUE_ID_BYTES);
}

uint64_t p3d_commhash_split(uint64_t parent, int split_count, int color)
{
    uint64_t acc[2] = {1, 1};

    p3d_commhash_eat(acc, &parent, sizeof(parent));
    p3d_commhash_eat(acc, &split_count, sizeof(split_count));
    p3d_commhash_eat(acc, &color, sizeof(color));
    return p3d_commhash_digest(acc);
}
