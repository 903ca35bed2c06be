/*
 * buf.h - growable byte buffer with a hard cap (curl's dynbuf idea).
 *
 * Appends never fail loudly: the first failure (out of memory, or the cap
 * reached) is latched in `err` and later appends are no-ops, so a writer
 * can emit a whole document and check once at the end. The memory is
 * kept across gp_buf_reset(), so a buffer reused every tick stops
 * allocating once it has grown to its working size.
 */
#ifndef GP_BUF_H
#define GP_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct gp_buf {
    char *data;  /* NUL-terminated when len > 0 */
    size_t len;
    size_t cap;
    size_t max;  /* hard cap on len; 0 means 64 MiB */
    int err;     /* GP_OK, or the first GP_ENOMEM / GP_ETOOBIG */
};

void gp_buf_init(struct gp_buf *b, size_t max);
void gp_buf_reset(struct gp_buf *b); /* len = 0, err = 0, memory kept */
void gp_buf_free(struct gp_buf *b);  /* accepts a zeroed buffer */
int gp_buf_reserve(struct gp_buf *b, size_t extra);
void gp_buf_append(struct gp_buf *b, const void *p, size_t n);
void gp_buf_puts(struct gp_buf *b, const char *s);
void gp_buf_putc(struct gp_buf *b, char c);
void gp_buf_printf(struct gp_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gp_buf_vprintf(struct gp_buf *b, const char *fmt, va_list ap);
/* Shortest text that reads back as the same double ("NaN", "+Inf", "-Inf" too). */
void gp_buf_put_double(struct gp_buf *b, double v);
void gp_buf_put_u64(struct gp_buf *b, unsigned long long v);

/* Transfers ownership of the data to the caller (who frees it); b is emptied. */
char *gp_buf_steal(struct gp_buf *b, size_t *len);

#endif
