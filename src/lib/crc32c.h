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

/*
 * The two implementations gp_crc32c chooses between, exposed so the
 * tests can check one against the other: slicing-by-8 in portable C, and
 * SSE4.2's crc32 instruction (gp_crc32c_hw falls back to the software
 * one where the CPU lacks it; gp_crc32c_hw_available says which).
 */
uint32_t gp_crc32c_sw(uint32_t crc, const void *p, size_t n);
uint32_t gp_crc32c_hw(uint32_t crc, const void *p, size_t n);
int gp_crc32c_hw_available(void);

#endif
