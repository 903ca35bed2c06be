/*
 * hex.h - one hexadecimal digit's value, for the decoders of escapes
 * (%XX in forms, \xXX and \uXXXX in PromQL strings).
 */
#ifndef GP_HEX_H
#define GP_HEX_H

/* 0-15, or -1 when c is not a hex digit (either case). */
static inline int gp_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

#endif
