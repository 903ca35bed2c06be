/*
 * crc32c.h - CRC-32C (Castagnoli), the checksum of every record gpulse
 * writes to disk (WAL, chunk segments, blocks, the push buffer).
 *
 * Castagnoli rather than zlib's CRC-32: better error detection on the
 * short records we write, and the polynomial SSE4.2 computes in hardware.
 * gp_crc32c(0, "123456789", 9) == 0xe3069283 (the standard check value).
 */
#ifndef GP_CRC32C_H
#define GP_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extends crc (0 to start) over n bytes of p. */
uint32_t gp_crc32c(uint32_t crc, const void *p, size_t n);

#endif
