/*
 * test_rng.h - a seeded pseudo-random sequence for randomized unit
 * tests: splitmix64, the same numbers on every machine, so a failure
 * names a case that reproduces.
 */
#ifndef GP_TESTS_RNG_H
#define GP_TESTS_RNG_H

#include <stdint.h>

struct gp_test_rng {
    uint64_t state;
};

static inline uint64_t gp_test_rnd(struct gp_test_rng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform enough in [lo, hi] for tests. */
static inline int64_t gp_test_rnd_in(struct gp_test_rng *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(gp_test_rnd(r) % (uint64_t)(hi - lo + 1));
}

#endif
