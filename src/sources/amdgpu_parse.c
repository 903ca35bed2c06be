/*
 * amdgpu_parse.c - parsers for amdgpu sysfs values and DRM fdinfo.
 *
 * Parts: small scanners over (pointer, end) ranges that never read past
 * the end and never need a terminating NUL; the integer attribute parser;
 * the hwmon label parser; the PCI address parser; the fdinfo document
 * parser, which walks lines, splits "key:value", and dispatches on the
 * handful of keys gpulse uses.
 *
 * Why strict: these values become metrics. "12abc" or an overflowing
 * number is rejected rather than read as a prefix, and the source then
 * reports that field as unsupported for the tick and counts an error.
 *
 * fdinfo formats (kernel Documentation/gpu/drm-usage-stats.rst and
 * amdgpu_fdinfo.c): since Linux 5.19 "drm-driver:\tamdgpu",
 * "drm-pdev:\t0000:03:00.0", "drm-client-id:\t7", "drm-memory-vram:\t123 KiB"
 * (later also "drm-resident-vram"), "drm-engine-gfx:\t123 ns". Linux
 * 5.14-5.18 printed "pdev:", "pasid:" (one per open file, used here as
 * the client id) and "vram mem:\tN kB" without a drm-driver line; a
 * document with pdev and pasid but no drm-driver is that amdgpu layout.
 * The old per-engine percentages ("gfx0:\t12.34%") have no defined window
 * and are ignored.
 */
#include "amdgpu_parse.h"

#include "lib/err.h"

#include <string.h>

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static void skip_blanks(const char **p, const char *end)
{
    while (*p < end && is_blank(**p))
        (*p)++;
}

static void trim_end(const char *p, const char **end)
{
    while (*end > p && is_blank((*end)[-1]))
        (*end)--;
}

/* Decimal digits into *out; at least one digit, no overflow. */
static int scan_u64(const char **p, const char *end, uint64_t *out)
{
    const char *s = *p;
    uint64_t v = 0;
    while (s < end && *s >= '0' && *s <= '9') {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return GP_EPARSE;
        v = v * 10 + d;
        s++;
    }
    if (s == *p)
        return GP_EPARSE;
    *p = s;
    *out = v;
    return GP_OK;
}

/* Hex digits (1..maxdigits) into *out. */
static int scan_hex(const char **p, const char *end, unsigned maxdigits, unsigned *out)
{
    const char *s = *p;
    unsigned v = 0, n = 0;
    while (s < end && n < maxdigits) {
        char c = *s;
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            break;
        v = v * 16 + d;
        s++;
        n++;
    }
    if (n == 0)
        return GP_EPARSE;
    *p = s;
    *out = v;
    return GP_OK;
}

static bool has_nul(const char *buf, size_t len) { return len && memchr(buf, '\0', len) != NULL; }

int gp_amdgpu_parse_int(const char *buf, size_t len, int64_t *out)
{
    if (!buf || has_nul(buf, len))
        return GP_EPARSE;
    const char *p = buf, *end = buf + len;
    skip_blanks(&p, end);
    trim_end(p, &end);
    bool neg = false;
    if (p < end && *p == '-') {
        neg = true;
        p++;
    }
    uint64_t v;
    if (scan_u64(&p, end, &v) != GP_OK || p != end)
        return GP_EPARSE;
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1)
            return GP_EPARSE;
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX)
            return GP_EPARSE;
        *out = (int64_t)v;
    }
    return GP_OK;
}

int gp_amdgpu_parse_hex_id(const char *buf, size_t len, unsigned *out)
{
    if (!buf || has_nul(buf, len))
        return GP_EPARSE;
    const char *p = buf, *end = buf + len;
    skip_blanks(&p, end);
    trim_end(p, &end);
    if (end - p >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        p += 2;
    unsigned v;
    if (scan_hex(&p, end, 4, &v) || p != end)
        return GP_EPARSE;
    *out = v;
    return GP_OK;
}

static bool range_eq(const char *p, const char *end, const char *lit)
{
    size_t n = strlen(lit);
    return (size_t)(end - p) == n && memcmp(p, lit, n) == 0;
}

int gp_amdgpu_parse_hwmon_label(const char *buf, size_t len, enum gp_amdgpu_temp_kind *out)
{
    if (!buf)
        return GP_EPARSE;
    const char *p = buf, *end = buf + len;
    skip_blanks(&p, end);
    trim_end(p, &end);
    if (p == end || end - p > 63)
        return GP_EPARSE;
    for (const char *s = p; s < end; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
            return GP_EPARSE;
    if (range_eq(p, end, "edge"))
        *out = GP_AMDGPU_TEMP_EDGE;
    else if (range_eq(p, end, "junction"))
        *out = GP_AMDGPU_TEMP_JUNCTION;
    else if (range_eq(p, end, "mem"))
        *out = GP_AMDGPU_TEMP_MEM;
    else
        *out = GP_AMDGPU_TEMP_OTHER;
    return GP_OK;
}

int gp_amdgpu_parse_pci(const char *buf, size_t len, struct gp_amdgpu_pci *out)
{
    if (!buf || has_nul(buf, len))
        return GP_EPARSE;
    const char *p = buf, *end = buf + len;
    skip_blanks(&p, end);
    trim_end(p, &end);
    /* Count the colons to know whether the domain is there. */
    unsigned colons = 0;
    for (const char *s = p; s < end; s++)
        colons += *s == ':';
    struct gp_amdgpu_pci a = {0};
    if (colons == 2) {
        if (scan_hex(&p, end, 8, &a.domain) || p >= end || *p++ != ':')
            return GP_EPARSE;
    } else if (colons != 1) {
        return GP_EPARSE;
    }
    if (scan_hex(&p, end, 2, &a.bus) || p >= end || *p++ != ':')
        return GP_EPARSE;
    if (scan_hex(&p, end, 2, &a.dev) || p >= end || *p++ != '.')
        return GP_EPARSE;
    if (scan_hex(&p, end, 1, &a.fn) || p != end)
        return GP_EPARSE;
    if (a.dev > 0x1f || a.fn > 7)
        return GP_EPARSE;
    *out = a;
    return GP_OK;
}

/* "<uint> [unit]" with unit one of "", B, KiB, kB, KB, MiB, GiB -> bytes. */
static int parse_size(const char *p, const char *end, uint64_t *out)
{
    uint64_t v;
    if (scan_u64(&p, end, &v))
        return GP_EPARSE;
    skip_blanks(&p, end);
    uint64_t mul;
    if (p == end || range_eq(p, end, "B"))
        mul = 1;
    else if (range_eq(p, end, "KiB") || range_eq(p, end, "kB") || range_eq(p, end, "KB"))
        mul = 1024;
    else if (range_eq(p, end, "MiB"))
        mul = 1024ull * 1024;
    else if (range_eq(p, end, "GiB"))
        mul = 1024ull * 1024 * 1024;
    else
        return GP_EPARSE;
    if (v > UINT64_MAX / mul)
        return GP_EPARSE;
    *out = v * mul;
    return GP_OK;
}

/* "<uint> [ns]" -> nanoseconds. */
static int parse_ns(const char *p, const char *end, uint64_t *out)
{
    if (scan_u64(&p, end, out))
        return GP_EPARSE;
    skip_blanks(&p, end);
    return p == end || range_eq(p, end, "ns") ? GP_OK : GP_EPARSE;
}

static int parse_plain_u64(const char *p, const char *end, uint64_t *out)
{
    return scan_u64(&p, end, out) || p != end ? GP_EPARSE : GP_OK;
}

int gp_amdgpu_parse_fdinfo(const char *buf, size_t len, struct gp_amdgpu_fdinfo *out)
{
    if (!buf || has_nul(buf, len))
        return GP_EPARSE;
    memset(out, 0, sizeof *out);
    bool has_driver = false, driver_amdgpu = false, has_pasid = false, has_resident = false;
    uint64_t pasid = 0;
    const char *line = buf, *end = buf + len;
    while (line < end) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        if (!eol)
            eol = end;
        const char *colon = memchr(line, ':', (size_t)(eol - line));
        if (colon) {
            const char *k = line, *kend = colon;
            trim_end(k, &kend);
            const char *v = colon + 1, *vend = eol;
            skip_blanks(&v, vend);
            trim_end(v, &vend);
            int rc = GP_OK;
            uint64_t n;
            if (range_eq(k, kend, "drm-driver")) {
                has_driver = true;
                driver_amdgpu = range_eq(v, vend, "amdgpu");
            } else if (range_eq(k, kend, "drm-pdev") || range_eq(k, kend, "pdev")) {
                rc = gp_amdgpu_parse_pci(v, (size_t)(vend - v), &out->pdev);
                out->has_pdev = rc == GP_OK;
            } else if (range_eq(k, kend, "drm-client-id")) {
                rc = parse_plain_u64(v, vend, &out->client_id);
                out->has_client_id = rc == GP_OK;
            } else if (range_eq(k, kend, "pasid")) {
                rc = parse_plain_u64(v, vend, &pasid);
                has_pasid = rc == GP_OK;
            } else if (range_eq(k, kend, "drm-resident-vram")) {
                rc = parse_size(v, vend, &out->vram_bytes);
                out->has_vram = has_resident = rc == GP_OK;
            } else if (range_eq(k, kend, "drm-memory-vram") || range_eq(k, kend, "vram mem")) {
                /* Deprecated aliases of drm-resident-vram: it wins when both appear. */
                rc = parse_size(v, vend, &n);
                if (rc == GP_OK && !has_resident) {
                    out->vram_bytes = n;
                    out->has_vram = true;
                }
            } else if (range_eq(k, kend, "drm-engine-gfx")) {
                rc = parse_ns(v, vend, &out->gfx_ns);
                out->has_gfx = rc == GP_OK;
            } else if (range_eq(k, kend, "drm-engine-compute")) {
                rc = parse_ns(v, vend, &out->compute_ns);
                out->has_compute = rc == GP_OK;
            }
            if (rc != GP_OK)
                return GP_EPARSE;
        }
        if (eol == end)
            break;
        line = eol + 1;
    }
    if (!out->has_client_id && has_pasid) {
        out->client_id = pasid;
        out->has_client_id = true;
    }
    out->amdgpu = has_driver ? driver_amdgpu : (out->has_pdev && has_pasid);
    return GP_OK;
}
