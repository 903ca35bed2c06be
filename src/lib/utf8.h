/*
 * utf8.h - UTF-8 decoding and encoding as Go's unicode/utf8 does them
 * (overlong forms, surrogates and code points past U+10FFFF are invalid),
 * for the parsers of PromQL and selectors, which follow Go's rules.
 */
#ifndef GP_LIB_UTF8_H
#define GP_LIB_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length (1 to 4) of the valid sequence at s (n > 0 bytes left) with its
 * code point in *cp, or 0 when it is not valid UTF-8. */
size_t gp_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

/* Writes cp (at most U+10FFFF) to out (4 bytes of room); returns the length. */
size_t gp_utf8_encode(uint32_t cp, char *out);

#endif
