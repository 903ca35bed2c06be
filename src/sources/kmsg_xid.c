/* kmsg_xid.c - see kmsg_xid.h. */
#include "kmsg_xid.h"

#include "lib/err.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_XID 9999u

/* Reads a decimal number of at most 18 digits at *p (< end); -1 when none. */
static int64_t dec(const char **p, const char *end)
{
    int64_t v = 0;
    int n = 0;
    while (*p < end && **p >= '0' && **p <= '9' && n < 18) {
        v = v * 10 + (**p - '0');
        (*p)++;
        n++;
    }
    return n && !(*p < end && **p >= '0' && **p <= '9') ? v : -1;
}

/* Reads 1..maxd hex digits at *p; -1 when none or too many. */
static int64_t hexn(const char **p, const char *end, int maxd)
{
    int64_t v = 0;
    int n = 0;
    for (; *p < end; (*p)++, n++) {
        char c = **p;
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            break;
        if (n == maxd)
            return -1;
        v = v * 16 + d;
    }
    return n ? v : -1;
}

static bool lit(const char **p, const char *end, const char *s)
{
    size_t n = strlen(s);
    if ((size_t)(end - *p) < n || memcmp(*p, s, n))
        return false;
    *p += n;
    return true;
}

/* The record's time and message: kmsg's "PRI,SEQ,USEC,FLAGS;" or
 * dmesg's "[  SECS.MICROS] ". GP_EPARSE on a broken prefix. */
static int split_prefix(const char *rec, size_t len, int64_t *ts, const char **msg)
{
    const char *p = rec, *end = rec + len;
    *ts = -1;
    *msg = rec;
    if (p < end && *p >= '0' && *p <= '9') {
        if (dec(&p, end) < 0 || !lit(&p, end, ",") || dec(&p, end) < 0 || !lit(&p, end, ","))
            return GP_EPARSE;
        int64_t us = dec(&p, end);
        if (us < 0 || p >= end || (*p != ',' && *p != ';'))
            return GP_EPARSE;
        const char *semi = memchr(p, ';', (size_t)(end - p));
        if (!semi)
            return GP_EPARSE;
        *ts = us;
        *msg = semi + 1;
    } else if (p < end && *p == '[') {
        p++;
        while (p < end && *p == ' ')
            p++;
        int64_t s = dec(&p, end);
        if (s < 0 || s > INT64_MAX / 1000000 - 1 || !lit(&p, end, "."))
            return GP_EPARSE;
        const char *f = p;
        int64_t us = dec(&p, end);
        if (us < 0 || p - f != 6 || !lit(&p, end, "]"))
            return GP_EPARSE;
        *ts = s * 1000000 + us;
        *msg = p < end && *p == ' ' ? p + 1 : p;
    }
    return GP_OK;
}

int gp_kxid_parse(const char *rec, size_t len, struct gp_kxid *out)
{
    if (!len || rec[0] == ' ')
        return GP_ENOTFOUND; /* empty, or a kmsg continuation (" SUBSYSTEM=...") */
    const char *msg, *end = rec + len;
    int64_t ts;
    if (split_prefix(rec, len, &ts, &msg))
        return GP_EPARSE;
    static const char tag[] = "NVRM: Xid";
    const char *p = memmem(msg, (size_t)(end - msg), tag, sizeof tag - 1);
    if (!p)
        return GP_ENOTFOUND;
    p += sizeof tag - 1;
    /* " (PCI:0000:3b:00): 79, ..." ; older drivers leave out "PCI:" */
    if (!lit(&p, end, " ("))
        return GP_EPARSE;
    lit(&p, end, "PCI:");
    int64_t dom = hexn(&p, end, 8);
    if (dom < 0 || !lit(&p, end, ":"))
        return GP_EPARSE;
    int64_t bus = hexn(&p, end, 2);
    if (bus < 0 || !lit(&p, end, ":"))
        return GP_EPARSE;
    int64_t dev = hexn(&p, end, 2);
    if (dev < 0 || dev > 0x1f || !lit(&p, end, "): "))
        return GP_EPARSE;
    int64_t xid = dec(&p, end);
    if (xid <= 0 || xid > MAX_XID || (p < end && *p != ','))
        return GP_EPARSE;
    *out = (struct gp_kxid){.ts_us = ts, .domain = (unsigned)dom, .bus = (unsigned)bus,
                            .dev = (unsigned)dev, .xid = (unsigned)xid};
    return GP_OK;
}

bool gp_kxid_matches_bus(const struct gp_kxid *x, const char *bus)
{
    unsigned d, b, v, f;
    char tail;
    if (sscanf(bus, "%x:%x:%x.%x%c", &d, &b, &v, &f, &tail) != 4)
        return false;
    return d == x->domain && b == x->bus && v == x->dev;
}

static void one(const char *rec, size_t len, void (*cb)(void *, const struct gp_kxid *), void *ctx,
                unsigned *malformed)
{
    while (len && (rec[len - 1] == '\n' || rec[len - 1] == '\r'))
        len--;
    struct gp_kxid x;
    int rc = gp_kxid_parse(rec, len, &x);
    if (rc == GP_OK)
        cb(ctx, &x);
    else if (rc == GP_EPARSE)
        (*malformed)++;
}

int gp_kxid_scan_fd(int fd, bool kmsg, void (*cb)(void *ctx, const struct gp_kxid *x), void *ctx,
                    unsigned *malformed, char *err, size_t errlen)
{
    char buf[8192];
    if (kmsg) {
        /* one record per read; EPIPE: records were overwritten under us, go on */
        for (;;) {
            ssize_t n = read(fd, buf, sizeof buf);
            if (n > 0)
                one(buf, (size_t)n, cb, ctx, malformed);
            else if (n < 0 && errno == EPIPE)
                continue;
            else if (n < 0 && errno == EINTR)
                continue;
            else if (n == 0 || errno == EAGAIN)
                return GP_OK;
            else
                return gp_seterr(err, errlen, GP_EIO, "cannot read the kernel log: %s", strerror(errno));
        }
    }
    /* a text file: lines, a line longer than buf is cut at buf (its start
     * holds the prefix and the XID) and the rest skipped */
    size_t have = 0;
    bool skipping = false;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof buf - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return gp_seterr(err, errlen, GP_EIO, "cannot read the kernel log: %s", strerror(errno));
        have += (size_t)n;
        size_t start = 0;
        for (size_t i = 0; i < have; i++)
            if (buf[i] == '\n') {
                if (!skipping)
                    one(buf + start, i - start, cb, ctx, malformed);
                skipping = false;
                start = i + 1;
            }
        if (n == 0) {
            if (start < have && !skipping)
                one(buf + start, have - start, cb, ctx, malformed);
            return GP_OK;
        }
        if (start == 0 && have == sizeof buf) {
            if (!skipping)
                one(buf, have, cb, ctx, malformed);
            skipping = true;
            have = 0;
            continue;
        }
        memmove(buf, buf + start, have - start);
        have -= start;
    }
}
