/*
 * test_rand.h - the pseudo-random numbers of the tests that try many
 * generated cases (test_hang_edges, test_hang_twin): a seeded linear
 * congruential generator, the same sequence on every machine, unlike
 * rand().
 */
#ifndef TEST_RAND_H
#define TEST_RAND_H

static unsigned seed;

/* A number in [0, n). */
static inline unsigned rnd(unsigned n)
{
    seed = seed * 1103515245u + 12345u;
    return (seed >> 16) % n;
}

#endif /* TEST_RAND_H */
