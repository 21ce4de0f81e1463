/*
 * p3d_bytes.h - a growable byte buffer and a reader over one: what a
 * rank's scan or loaded timeline becomes to travel between the processes
 * of p3d-analyze-mpi (model/p3d_dist.h).  Both ends run the same build,
 * so values go as they lie in memory.
 */
#ifndef P3D_BYTES_H
#define P3D_BYTES_H

#include <stddef.h>
#include <stdint.h>

struct p3d_bytes {
    char *p;
    size_t n, cap;
};

void p3d_bytes_put(struct p3d_bytes *b, const void *v, size_t n);
/* n, then n bytes (a NULL v with n 0 is fine). */
void p3d_bytes_put_arr(struct p3d_bytes *b, const void *v, size_t n);
/* Empty b, then n bytes of room, not cleared (a message is received into
 * them); b's memory is kept from one message to the next. */
char *p3d_bytes_room(struct p3d_bytes *b, size_t n);
void p3d_bytes_free(struct p3d_bytes *b);

struct p3d_bytes_in {
    const char *p;
    size_t n, off;
    int bad; /* read past the end: the message is not what was sent */
};

void p3d_bytes_get(struct p3d_bytes_in *r, void *v, size_t n);
/* The array put by p3d_bytes_put_arr, allocated (NULL when empty);
 * *n its size in bytes. */
void *p3d_bytes_get_arr(struct p3d_bytes_in *r, size_t *n);
/* The same array where it lies in the message (NULL when empty), not
 * copied: valid while the message is. */
const void *p3d_bytes_view_arr(struct p3d_bytes_in *r, size_t *n);

/*
 * Sums that travel to process 0, which adds them to its own: the
 * non-zero values of v[0..n) with their indexes (integers, so the sum
 * does not depend on the order it is made in).  An index past n marks r
 * bad.
 */
void p3d_bytes_put_sums(struct p3d_bytes *b, const uint64_t *v, size_t n);
void p3d_bytes_add_sums(struct p3d_bytes_in *r, uint64_t *v, size_t n);

/*
 * A shuffle's round to one process is a run of pieces: a kind, a number
 * (a rank file, a timeline) and n bytes, padded to 8 so that the next
 * piece, and what it holds, stays aligned.
 */
struct p3d_piece {
    int kind, num;
    const char *p;
    size_t n;
};
void p3d_bytes_put_piece(struct p3d_bytes *b, int kind, int num,
                         const void *v, size_t n);
/* The piece of b at *off into pc, *off moved past it: 1; 0 at b's end;
 * -1 if what is there is not a whole piece. */
int p3d_bytes_next_piece(const struct p3d_bytes *b, size_t *off,
                         struct p3d_piece *pc);

#endif /* P3D_BYTES_H */
