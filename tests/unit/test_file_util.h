/*
 * test_file_util.h - the file header of a hand-built trace for the
 * reader's unit tests: one rank of a world of one, closed cleanly, chunks
 * of `chunk` bytes from `data_off` on.
 */
#ifndef TEST_FILE_UTIL_H
#define TEST_FILE_UTIL_H

#include <string.h>

#include "p3d_format.h"

static inline void tfu_hdr_init(void *file, uint32_t chunk, uint32_t data_off)
{
    struct p3d_file_hdr *h = file;

    memcpy(h->magic, P3D_MAGIC, P3D_MAGIC_LEN);
    h->major = P3D_FORMAT_MAJOR;
    h->minor = P3D_FORMAT_MINOR;
    h->hdr_len = P3D_FILE_HDR_BYTES;
    h->flags = P3D_F_CLOSED;
    h->chunk_bytes = chunk;
    h->data_off = data_off;
    h->rank = 0;
    h->world_size = 1;
}

#endif /* TEST_FILE_UTIL_H */
