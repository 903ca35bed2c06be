/* buf.c - see buf.h. */
#include "buf.h"

#include "err.h"
#include "json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GP_BUF_DEFAULT_MAX ((size_t)64 << 20)

void gp_buf_init(struct gp_buf *b, size_t max)
{
    memset(b, 0, sizeof *b);
    b->max = max ? max : GP_BUF_DEFAULT_MAX;
}

void gp_buf_reset(struct gp_buf *b)
{
    b->len = 0;
    b->err = GP_OK;
    if (b->data)
        b->data[0] = '\0';
}

void gp_buf_free(struct gp_buf *b)
{
    if (!b)
        return;
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int gp_buf_reserve(struct gp_buf *b, size_t extra)
{
    if (b->err)
        return b->err;
    size_t max = b->max ? b->max : GP_BUF_DEFAULT_MAX;
    if (extra > max || b->len > max - extra)
        return b->err = GP_ETOOBIG;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return GP_OK;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    if (cap > max + 1)
        cap = max + 1;
    char *p = realloc(b->data, cap);
    if (!p)
        return b->err = GP_ENOMEM;
    b->data = p;
    b->cap = cap;
    return GP_OK;
}

void gp_buf_append(struct gp_buf *b, const void *p, size_t n)
{
    if (gp_buf_reserve(b, n))
        return;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void gp_buf_puts(struct gp_buf *b, const char *s) { gp_buf_append(b, s, strlen(s)); }

void gp_buf_putc(struct gp_buf *b, char c) { gp_buf_append(b, &c, 1); }

void gp_buf_vprintf(struct gp_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        b->err = b->err ? b->err : GP_EINTERNAL;
        return;
    }
    if ((size_t)n < sizeof small) {
        gp_buf_append(b, small, (size_t)n);
        return;
    }
    if (gp_buf_reserve(b, (size_t)n))
        return;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void gp_buf_printf(struct gp_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gp_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

void gp_buf_put_u64(struct gp_buf *b, unsigned long long v)
{
    char tmp[24];
    int i = (int)sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    gp_buf_append(b, tmp + i, sizeof tmp - (size_t)i);
}

void gp_buf_put_double(struct gp_buf *b, double v)
{
    if (isnan(v)) {
        gp_buf_append(b, "NaN", 3);
        return;
    }
    if (isinf(v)) {
        gp_buf_puts(b, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    /* Integers (the common case: bytes, MHz, counters) print exactly and fast. */
    if (v == (double)(long long)v && fabs(v) < 9.007199254740992e15) {
        long long iv = (long long)v;
        if (iv < 0) {
            gp_buf_putc(b, '-');
            gp_buf_put_u64(b, (unsigned long long)(-iv));
        } else {
            gp_buf_put_u64(b, (unsigned long long)iv);
        }
        return;
    }
    /* Decimals of a few digits (0.91, 612.5: most GPU readings) cost
     * snprintf + strtod a third of /api/v1/fleet/gpus at 4,096 GPUs; in
     * this range json.c's integer formatter writes the same text. */
    double a = fabs(v);
    if (a >= 1e-3 && a < 1e15) {
        char out[32];
        gp_buf_append(b, out, gp_json_format_double(v, out));
        return;
    }
    char tmp[32];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    gp_buf_puts(b, tmp);
}

char *gp_buf_steal(struct gp_buf *b, size_t *len)
{
    char *p = b->data;
    if (len)
        *len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}
