/*
 * bits.h - a double's IEEE-754 bits and back, without aliasing tricks.
 *
 * Storage and wire formats keep values bit-exact (NaN payloads, the
 * Prometheus stale marker 0x7ff0000000000002, -0.0), so they move raw
 * bits, not doubles.
 */
#ifndef GP_BITS_H
#define GP_BITS_H

#include <stdint.h>
#include <string.h>

static inline uint64_t gp_f64_bits(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

static inline double gp_bits_f64(uint64_t u)
{
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

#endif
