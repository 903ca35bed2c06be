/*
 * form.c - application/x-www-form-urlencoded decoding (form.h).
 *
 * One pass over the input into one buffer: decoding only shrinks, so
 * text has room for every key and value with their NUL terminators, and
 * the field arrays are sized by the count of '&' separators first.
 */
#include "net/form.h"

#include "lib/err.h"
#include "lib/hex.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void gp_form_free(struct gp_form *f)
{
    if (!f)
        return;
    free(f->key);
    free(f->value);
    free(f->text);
    memset(f, 0, sizeof *f);
}

/* Decodes s[from, to) into *w (NUL-terminated); GP_OK or GP_EPARSE. */
static int decode(const char *s, size_t from, size_t to, char **w, char *err, size_t errlen)
{
    char *o = *w;
    for (size_t i = from; i < to; i++) {
        char c = s[i];
        if (c == '+') {
            c = ' ';
        } else if (c == '%') {
            if (i + 2 >= to || gp_hex_digit(s[i + 1]) < 0 || gp_hex_digit(s[i + 2]) < 0) {
                size_t k = to - i < 3 ? to - i : 3;
                return gp_seterr(err, errlen, GP_EPARSE, "invalid URL escape \"%.*s\" at byte %zu",
                                 (int)k, s + i, i);
            }
            c = (char)(gp_hex_digit(s[i + 1]) << 4 | gp_hex_digit(s[i + 2]));
            i += 2;
        }
        if (c == '\0')
            return gp_seterr(err, errlen, GP_EPARSE, "a NUL byte at byte %zu", i);
        *o++ = c;
    }
    *o++ = '\0';
    *w = o;
    return GP_OK;
}

int gp_form_parse(const char *s, size_t len, struct gp_form *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    size_t fields = 1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ';')
            return gp_seterr(err, errlen, GP_EPARSE, "invalid semicolon separator at byte %zu", i);
        fields += s[i] == '&';
    }
    if (fields > GP_FORM_MAX_FIELDS + 1)
        return gp_seterr(err, errlen, GP_ETOOBIG, "more than %d form fields", GP_FORM_MAX_FIELDS);
    out->key = malloc(fields * sizeof *out->key);
    out->value = malloc(fields * sizeof *out->value);
    out->text = malloc(len + 2 * fields);
    if (!out->key || !out->value || !out->text) {
        gp_form_free(out);
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory decoding a form");
    }
    char *w = out->text;
    for (size_t i = 0; i <= len;) {
        size_t end = i;
        while (end < len && s[end] != '&')
            end++;
        if (end > i) {
            size_t eq = i;
            while (eq < end && s[eq] != '=')
                eq++;
            if (out->n == GP_FORM_MAX_FIELDS) {
                gp_form_free(out);
                return gp_seterr(err, errlen, GP_ETOOBIG, "more than %d form fields",
                                 GP_FORM_MAX_FIELDS);
            }
            out->key[out->n] = w;
            int rc = decode(s, i, eq, &w, err, errlen);
            out->value[out->n] = w;
            if (!rc)
                rc = decode(s, eq < end ? eq + 1 : end, end, &w, err, errlen);
            if (rc) {
                gp_form_free(out);
                return rc;
            }
            out->n++;
        }
        i = end + 1;
    }
    return GP_OK;
}

const char *gp_form_get(const struct gp_form *f, const char *key)
{
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->key[i], key))
            return f->value[i];
    return NULL;
}

size_t gp_form_get_all(const struct gp_form *f, const char *key, const char **vals, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->key[i], key)) {
            if (n < max)
                vals[n] = f->value[i];
            n++;
        }
    return n;
}

int gp_form_content_type(const char *ct)
{
    static const char want[] = "application/x-www-form-urlencoded";
    if (!ct)
        return 0;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    if (strncasecmp(ct, want, sizeof want - 1))
        return 0;
    ct += sizeof want - 1;
    while (*ct == ' ' || *ct == '\t')
        ct++;
    return !*ct || *ct == ';';
}
