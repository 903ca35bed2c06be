/*
 * varint.h - unsigned LEB128 varints and zigzag, as protobuf writes them.
 *
 * Byte-aligned formats (label blobs, WAL records) share these; the
 * remote-write codec keeps its own reader because its errors name byte
 * offsets, and the Gorilla chunk writes varints into a bit stream.
 * A uvarint takes 1..GP_UVARINT_MAX bytes, low 7 bits first.
 */
#ifndef GP_VARINT_H
#define GP_VARINT_H

#include <stddef.h>
#include <stdint.h>

#define GP_UVARINT_MAX 10

/* Writes v at p (room for GP_UVARINT_MAX bytes); returns the bytes written. */
static inline size_t gp_uvarint_put(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

/* Reads a uvarint from [p, end) into *v; returns the bytes consumed, or 0
 * when it is truncated, longer than 10 bytes or overflows 64 bits. */
static inline size_t gp_uvarint_get(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
    uint64_t x = 0;
    for (size_t i = 0; i < GP_UVARINT_MAX && p + i < end; i++) {
        uint8_t b = p[i];
        if (i == GP_UVARINT_MAX - 1 && b > 1)
            return 0;
        x |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = x;
            return i + 1;
        }
    }
    return 0;
}

static inline uint64_t gp_zigzag_enc(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t gp_zigzag_dec(uint64_t u)
{
    return (int64_t)((u >> 1) ^ (0 - (u & 1)));
}

#endif
