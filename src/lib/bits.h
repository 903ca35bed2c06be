/*
 * bits.h - a double's IEEE-754 bits and back, without aliasing tricks.
 *
 * Storage and wire formats keep values bit-exact (NaN payloads, the
 * Prometheus stale marker 0x7ff0000000000002, -0.0), so they move raw
 * bits, not doubles. Also the little-endian integer fields of gpulse's
 * on-disk records (segment framing, store files, the push buffer), and
 * the mixing step of the store's hashes.
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

static inline void gp_put_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void gp_put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void gp_put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t gp_get_le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

static inline uint32_t gp_get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t gp_get_le64(const uint8_t *p)
{
    return (uint64_t)gp_get_le32(p) | (uint64_t)gp_get_le32(p + 4) << 32;
}

/* A 64-bit finalizer (the well-known MurmurHash3 fmix64 constants): every
 * input bit affects every output bit. Hash tables mix their keys with it. */
static inline uint64_t gp_mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    h ^= h >> 33;
    return h;
}

#endif
