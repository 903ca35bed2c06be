/*
 * Fuzz target: the kernel log's XID lines (src/sources/kmsg_xid.c).
 *
 * The input is one record, copied into a buffer of exactly its size so
 * ASan catches any read past len; then the same bytes as a file of lines
 * through gp_kxid_scan_fd. A parsed XID must be in range (code 1-9999,
 * device 0-0x1f, bus 0-0xff) with a time of -1 or more.
 */
#include "lib/err.h"
#include "sources/kmsg_xid.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct gp_kxid *x)
{
    if (x->xid < 1 || x->xid > 9999 || x->dev > 0x1f || x->bus > 0xff || x->ts_us < -1)
        abort();
}

static void cb(void *ctx, const struct gp_kxid *x)
{
    (*(unsigned *)ctx)++;
    check(x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    struct gp_kxid x;
    int rc = gp_kxid_parse(buf, size, &x);
    if (rc != GP_OK && rc != GP_ENOTFOUND && rc != GP_EPARSE)
        abort();
    if (rc == GP_OK)
        check(&x);
    free(buf);
    int p[2];
    if (size > 60000 || pipe(p))
        return 0;
    if (write(p[1], data, size) != (ssize_t)size)
        abort();
    close(p[1]);
    unsigned n = 0, malformed = 0;
    char err[128];
    if (gp_kxid_scan_fd(p[0], false, cb, &n, &malformed, err, sizeof err) != GP_OK)
        abort();
    close(p[0]);
    return 0;
}
