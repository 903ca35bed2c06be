/*
 * mime_check.h - an independent reader of the messages that
 * src/notify/mime.c writes, for the unit tests and the fuzz target: it
 * finds header fields (unfolded), decodes RFC 2047 B words and
 * quoted-printable, splits the multipart body, and checks the
 * invariants every message must keep (CRLF line ends, line lengths,
 * 7-bit text, the boundary only where it delimits, valid UTF-8 after
 * decoding). Written from the RFCs, not from mime.c, so that the two
 * disagree when one of them is wrong.
 */
#ifndef GP_MIME_CHECK_H
#define GP_MIME_CHECK_H

#include "lib/buf.h"

#include <stdio.h>
#include <string.h>

static inline int mc_hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Whether s[0..n) is valid UTF-8 (no overlongs, no surrogates). */
static inline int mc_utf8_ok(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (len == 0 || i + len > n)
            return 0;
        unsigned cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        static const unsigned minv[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < minv[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += len;
    }
    return 1;
}

/* Decodes quoted-printable s[0..n) into out (CRLF kept); 0 when malformed. */
static inline int mc_qp_decode(const char *s, size_t n, struct gp_buf *out)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '=') {
            gp_buf_putc(out, s[i]);
            continue;
        }
        if (i + 2 < n && s[i + 1] == '\r' && s[i + 2] == '\n') {
            i += 2; /* soft break */
            continue;
        }
        if (i + 2 >= n || mc_hexval(s[i + 1]) < 0 || mc_hexval(s[i + 2]) < 0)
            return 0;
        gp_buf_putc(out, (char)(mc_hexval(s[i + 1]) * 16 + mc_hexval(s[i + 2])));
        i += 2;
    }
    return out->err == 0;
}

/* The unfolded value of header field name (in the header block) into out; 0 when absent. */
static inline int mc_header(const char *msg, const char *name, char *out, size_t outlen)
{
    const char *end = strstr(msg, "\r\n\r\n");
    size_t nl = strlen(name);
    for (const char *p = msg; p && end && p < end; p = strstr(p, "\r\n"), p = p ? p + 2 : NULL) {
        if (strncasecmp(p, name, nl) != 0 || p[nl] != ':')
            continue;
        size_t o = 0;
        const char *q = p + nl + 1;
        while (*q == ' ')
            q++;
        for (; q < end + 2; q++) {
            if (q[0] == '\r' && q[1] == '\n') {
                if (q[2] != ' ' && q[2] != '\t')
                    break;
                q += 1; /* unfold: drop the CRLF, keep the white space */
                continue;
            }
            if (o + 1 < outlen)
                out[o++] = *q;
        }
        out[o] = '\0';
        return 1;
    }
    return 0;
}

static inline int mc_b64val(int c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/*
 * Decodes an unstructured header value made of RFC 2047 words
 * (=?UTF-8?B?...?= or =?UTF-8?Q?...?=, white space between words
 * dropped) into out; 0 when a word is malformed or a word alone is not
 * valid UTF-8 (a split character).
 */
static inline int mc_decode_words(const char *v, char *out, size_t outlen)
{
    size_t o = 0;
    while (*v) {
        while (*v == ' ' || *v == '\t')
            v++;
        if (!*v)
            break;
        if (strncasecmp(v, "=?UTF-8?", 8) != 0)
            return 0;
        char enc = v[8];
        if ((enc != 'B' && enc != 'b' && enc != 'Q' && enc != 'q') || v[9] != '?')
            return 0;
        const char *t = v + 10, *e = strstr(t, "?=");
        if (!e || e - v > 75)
            return 0;
        size_t start = o;
        if (enc == 'B' || enc == 'b') {
            unsigned acc = 0;
            int bits = 0;
            for (; t < e && *t != '='; t++) {
                int x = mc_b64val(*t);
                if (x < 0)
                    return 0;
                acc = acc << 6 | (unsigned)x;
                bits += 6;
                if (bits >= 8) {
                    bits -= 8;
                    if (o + 1 >= outlen)
                        return 0;
                    out[o++] = (char)((acc >> bits) & 0xFF);
                }
            }
        } else {
            for (; t < e; t++) {
                char c = *t == '_' ? ' ' : *t;
                if (c == '=') {
                    if (mc_hexval(t[1]) < 0 || mc_hexval(t[2]) < 0)
                        return 0;
                    c = (char)(mc_hexval(t[1]) * 16 + mc_hexval(t[2]));
                    t += 2;
                }
                if (o + 1 >= outlen)
                    return 0;
                out[o++] = c;
            }
        }
        if (!mc_utf8_ok((const unsigned char *)out + start, o - start))
            return 0;
        v = e + 2;
    }
    out[o] = '\0';
    return 1;
}

/*
 * Checks a whole message; NULL when it keeps every invariant, else what
 * broke. On success, text and html (when not NULL) get the decoded
 * parts and boundary the boundary.
 */
static inline const char *mc_check(const char *msg, size_t len, struct gp_buf *text, struct gp_buf *html,
                                   char *boundary, size_t blen)
{
    if (strlen(msg) != len)
        return "a NUL in the message";
    size_t col = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)msg[i];
        if (c == '\r') {
            if (i + 1 >= len || msg[i + 1] != '\n')
                return "a bare CR";
            if (col > 76)
                return "a line longer than 76";
            col = 0;
            i++;
            continue;
        }
        if (c == '\n')
            return "a bare LF";
        if (c >= 0x80 || (c < 0x20 && c != '\t'))
            return "an 8-bit or control byte";
        col++;
    }
    if (col != 0)
        return "no CRLF at the end";
    const char *hend = strstr(msg, "\r\n\r\n");
    if (!hend)
        return "no end of header";
    char v[4096], b[128];
    static const char *const need[] = {"Date", "From", "To", "Subject", "Message-ID", "MIME-Version"};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!mc_header(msg, need[i], v, sizeof v))
            return "a header field is missing";
    if (!mc_header(msg, "Subject", v, sizeof v))
        return "no Subject";
    char subj[4096];
    if (!mc_decode_words(v, subj, sizeof subj))
        return "a malformed encoded word in Subject";
    if (!mc_header(msg, "Content-Type", v, sizeof v) || strncmp(v, "multipart/alternative;", 22) != 0)
        return "not multipart/alternative";
    const char *bp = strstr(v, "boundary=\"");
    if (!bp)
        return "no boundary";
    bp += 10;
    const char *bq = strchr(bp, '"');
    if (!bq || bq == bp || (size_t)(bq - bp) > 70)
        return "a bad boundary";
    snprintf(b, sizeof b, "%.*s", (int)(bq - bp), bp);
    if (boundary)
        snprintf(boundary, blen, "%s", b);
    char delim[160], close[160];
    snprintf(delim, sizeof delim, "\r\n--%s\r\n", b);
    snprintf(close, sizeof close, "\r\n--%s--\r\n", b);
    const char *p1 = strstr(hend + 2, delim);
    if (!p1)
        return "no first part";
    const char *p2 = strstr(p1 + 1, delim);
    if (!p2)
        return "no second part";
    const char *pe = strstr(p2 + 1, close);
    if (!pe || pe + strlen(close) != msg + len)
        return "no closing delimiter at the end";
    if (strstr(p2 + 1, delim))
        return "a third part";
    /* the boundary text anywhere else (inside the parts) */
    size_t count = 0;
    for (const char *q = strstr(msg, b); q; q = strstr(q + 1, b))
        count++;
    if (count != 4) /* Content-Type, two delimiters, the close */
        return "the boundary occurs inside a part";
    const char *parts[2][2] = {{p1 + strlen(delim), p2}, {p2 + strlen(delim), pe}};
    static const char *const types[] = {"text/plain; charset=UTF-8", "text/html; charset=UTF-8"};
    struct gp_buf *outs[2] = {text, html};
    for (int k = 0; k < 2; k++) {
        const char *ph = parts[k][0], *pb = strstr(ph, "\r\n\r\n");
        if (!pb || pb > parts[k][1])
            return "a part without a header";
        char hdr[512];
        snprintf(hdr, sizeof hdr, "%.*s", (int)(pb - ph + 2), ph);
        char want[160];
        snprintf(want, sizeof want, "Content-Type: %s\r\n", types[k]);
        if (!strstr(hdr, want) || !strstr(hdr, "Content-Transfer-Encoding: quoted-printable\r\n"))
            return "a part header is wrong";
        struct gp_buf dec;
        gp_buf_init(&dec, 8u << 20);
        pb += 4;
        if (!mc_qp_decode(pb, (size_t)(parts[k][1] - pb), &dec)) {
            gp_buf_free(&dec);
            return "malformed quoted-printable";
        }
        if (!mc_utf8_ok((const unsigned char *)(dec.data ? dec.data : ""), dec.len)) {
            gp_buf_free(&dec);
            return "a part is not valid UTF-8";
        }
        if (outs[k])
            gp_buf_append(outs[k], dec.data ? dec.data : "", dec.len);
        gp_buf_free(&dec);
    }
    return NULL;
}

#endif
