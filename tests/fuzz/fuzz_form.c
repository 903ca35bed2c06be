/*
 * Fuzz target: form bodies (src/net/form.c) as POST /api/v1/query and
 * the other Prometheus routes receive them. Any bytes go to
 * gp_form_parse. When they decode, every field is re-encoded (each byte
 * outside [A-Za-z0-9] as %XX, spaces as '+') and decoded again, which
 * must give the same fields in the same order; gp_form_get must find
 * each key's first value. A refusal must leave the form empty with a
 * reason. abort() on any disagreement.
 */
#include "lib/buf.h"
#include "lib/err.h"
#include "net/form.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void encode(struct gp_buf *b, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
            gp_buf_putc(b, (char)c);
        else if (c == ' ')
            gp_buf_putc(b, '+');
        else
            gp_buf_printf(b, "%%%02X", c);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gp_form f;
    char err[160] = "";
    int rc = gp_form_parse((const char *)data, size, &f, err, sizeof err);
    if (rc != GP_OK) {
        if (f.n || f.key || f.value || f.text || !err[0])
            abort();
        gp_form_free(&f);
        return 0;
    }
    if (f.n > GP_FORM_MAX_FIELDS)
        abort();
    struct gp_buf b;
    gp_buf_init(&b, 0);
    for (size_t i = 0; i < f.n; i++) {
        if (gp_form_get(&f, f.key[i]) != f.value[i]) {
            /* an earlier field with the same key must be the one found */
            size_t j = 0;
            while (j < i && strcmp(f.key[j], f.key[i]))
                j++;
            if (j == i || gp_form_get(&f, f.key[i]) != f.value[j])
                abort();
        }
        if (i)
            gp_buf_putc(&b, '&');
        encode(&b, f.key[i]);
        gp_buf_putc(&b, '=');
        encode(&b, f.value[i]);
    }
    struct gp_form g;
    if (b.err || gp_form_parse(b.data ? b.data : "", b.len, &g, err, sizeof err) != GP_OK)
        abort();
    /* An empty key with an empty value encodes as "=", which is a field;
     * every field of f is non-empty as text, so counts agree. */
    if (g.n != f.n)
        abort();
    for (size_t i = 0; i < f.n; i++)
        if (strcmp(f.key[i], g.key[i]) || strcmp(f.value[i], g.value[i]))
            abort();
    gp_form_free(&g);
    gp_buf_free(&b);
    gp_form_free(&f);
    return 0;
}
