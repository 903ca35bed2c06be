/* utf8.c - see utf8.h. */
#include "lib/utf8.h"

size_t gp_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    uint32_t c = s[0], min;
    size_t k;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf)
        k = 2, c &= 0x1f, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        k = 3, c &= 0x0f, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        k = 4, c &= 0x07, min = 0x10000;
    else
        return 0;
    if (n < k)
        return 0;
    for (size_t j = 1; j < k; j++) {
        if ((s[j] & 0xc0) != 0x80)
            return 0;
        c = (c << 6) | (s[j] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return k;
}

size_t gp_utf8_encode(uint32_t cp, char *o)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}
