/*
 * varint.h - LEB128 varints and zigzag, as protobuf writes them.
 *
 * The byte-oriented formats of the store (WAL records, label blobs) share
 * these few static-inline helpers. A reader never trusts its input: it
 * stops at the end of the buffer, and rejects a varint longer than ten
 * bytes or one whose tenth byte carries bits beyond 64.
 * (remote_write.c keeps its own reader because it reports byte offsets in
 * its error messages; chunk.c writes varints into a bit stream.)
 */
#ifndef GP_VARINT_H
#define GP_VARINT_H

#include "lib/buf.h"
#include "lib/err.h"

#include <stddef.h>
#include <stdint.h>

#define GP_UVARINT_MAX 10 /* bytes of the largest 64-bit varint */

static inline size_t gp_uvarint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Writes v at p (room for gp_uvarint_size(v) bytes); returns the end. */
static inline uint8_t *gp_uvarint_put(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Appends v to a buffer (b->err latches a failure, as gp_buf_append does). */
static inline void gp_buf_put_uvarint(struct gp_buf *b, uint64_t v)
{
    uint8_t tmp[GP_UVARINT_MAX];
    gp_buf_append(b, tmp, (size_t)(gp_uvarint_put(tmp, v) - tmp));
}

/* Reads a varint from [*p, end) into *v and advances *p past it.
 * GP_OK, or GP_EPARSE (truncated, too long, overflow; *p unchanged). */
static inline int gp_uvarint_get(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    const uint8_t *s = *p;
    uint64_t x = 0;
    for (int i = 0; i < GP_UVARINT_MAX; i++) {
        if (s >= end)
            return GP_EPARSE;
        uint8_t b = *s++;
        if (i == GP_UVARINT_MAX - 1 && b > 1)
            return GP_EPARSE; /* continuation on byte 10, or bits past 64 */
        x |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = x;
            *p = s;
            return GP_OK;
        }
    }
    return GP_EPARSE; /* not reached: byte 10 either ends or is rejected */
}

/* Zigzag in unsigned arithmetic: no signed overflow for INT64_MIN. */
static inline uint64_t gp_zigzag(uint64_t v) { return (v << 1) ^ (0 - (v >> 63)); }
static inline uint64_t gp_unzigzag(uint64_t u) { return (u >> 1) ^ (0 - (u & 1)); }

/* uint64 <-> int64 by two's complement, without implementation-defined casts. */
static inline int64_t gp_u64_to_i64(uint64_t u)
{
    return u <= (uint64_t)INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}

#endif
