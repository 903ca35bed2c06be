/*
 * procfs_parse.c - bounded, strict parsers of /proc text files.
 *
 * Parts: a tiny cursor (struct cur) over [p, end) with number readers
 * that check overflow and what follows the digits; the host-file parsers
 * (stat, meminfo, pressure, loadavg); the per-process parsers (stat,
 * status, io). "Key: value" files share one line splitter.
 *
 * Why hand-written and not sscanf/strtoull: the buffers are not
 * NUL-terminated (they are the reused read buffers of the source), sscanf
 * silently accepts garbage and overflow, and this code runs for every
 * process on every tick, so it should be cheap too.
 */
#include "procfs_parse.h"

#include "lib/err.h"

#include <string.h>

struct cur {
    const char *p, *end;
};

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_blank(char c) { return c == ' ' || c == '\t'; }

/* A number must end at a blank, a newline or the end of the buffer. */
static bool at_delim(const struct cur *c)
{
    return c->p == c->end || is_blank(*c->p) || *c->p == '\n';
}

static void skip_blanks(struct cur *c)
{
    while (c->p < c->end && is_blank(*c->p))
        c->p++;
}

/* Consumes one expected character. */
static bool eat(struct cur *c, char ch)
{
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* Consumes an expected prefix. */
static bool eat_str(struct cur *c, const char *s)
{
    size_t n = strlen(s);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, s, n) != 0)
        return false;
    c->p += n;
    return true;
}

/* Reads digits into *v; false on no digits or on overflow. The caller
 * checks what follows. */
static bool digits_u64(struct cur *c, uint64_t *v)
{
    const char *start = c->p;
    uint64_t x = 0;
    while (c->p < c->end && is_digit(*c->p)) {
        unsigned d = (unsigned)(*c->p - '0');
        if (x > (UINT64_MAX - d) / 10)
            return false;
        x = x * 10 + d;
        c->p++;
    }
    *v = x;
    return c->p > start;
}

/* An unsigned decimal ending at a delimiter. */
static bool get_u64(struct cur *c, uint64_t *v) { return digits_u64(c, v) && at_delim(c); }

static bool get_u32(struct cur *c, uint32_t *v)
{
    uint64_t x;
    if (!get_u64(c, &x) || x > UINT32_MAX)
        return false;
    *v = (uint32_t)x;
    return true;
}

/* A signed decimal whose value is not needed: validated and skipped. */
static bool skip_int(struct cur *c)
{
    uint64_t ignored;
    eat(c, '-');
    return get_u64(c, &ignored);
}

/* A non-negative decimal fraction "12.34" (as loadavg and PSI averages
 * print them); fraction digits beyond the ninth are checked but dropped. */
static bool get_decimal(struct cur *c, double *v)
{
    uint64_t ip;
    if (!digits_u64(c, &ip))
        return false;
    double x = (double)ip;
    if (eat(c, '.')) {
        double scale = 0.1;
        const char *start = c->p;
        for (int n = 0; c->p < c->end && is_digit(*c->p); n++, c->p++)
            if (n < 9) {
                x += (*c->p - '0') * scale;
                scale /= 10;
            }
        if (c->p == start)
            return false;
    }
    *v = x;
    return at_delim(c);
}

/* End of the current line (or of the buffer). */
static bool at_eol(const struct cur *c) { return c->p == c->end || *c->p == '\n'; }

/* Moves past the next newline, or to the end. */
static void next_line(struct cur *c)
{
    const char *nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
    c->p = nl ? nl + 1 : c->end;
}

/* Kernel text files never hold a NUL byte: one is garbage. */
static bool has_nul(const char *buf, size_t len) { return memchr(buf, '\0', len) != NULL; }

/*
 * Splits the line at c into "key:" and the value after the colon and
 * blanks. On return c is at the value; *line_end (out) is where the line
 * ends. False when the line has no colon or an empty key.
 */
static bool kv_line(struct cur *c, const char **key, size_t *keylen, const char **line_end)
{
    const char *nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
    *line_end = nl ? nl : c->end;
    const char *colon = memchr(c->p, ':', (size_t)(*line_end - c->p));
    if (!colon || colon == c->p)
        return false;
    *key = c->p;
    *keylen = (size_t)(colon - c->p);
    c->p = colon + 1;
    skip_blanks(c);
    return true;
}

static bool key_is(const char *key, size_t keylen, const char *name)
{
    return strlen(name) == keylen && memcmp(key, name, keylen) == 0;
}

/* A line's value that is one unsigned number, and nothing after it but
 * blanks and, when unit is not NULL, that unit. */
static bool kv_u64(struct cur *c, const char *line_end, const char *unit, uint64_t *v)
{
    struct cur l = {c->p, line_end};
    if (!get_u64(&l, v))
        return false;
    skip_blanks(&l);
    if (unit && !eat_str(&l, unit))
        return false;
    skip_blanks(&l);
    return l.p == l.end;
}

/* ---- host files ---- */

int gp_procfs_parse_stat(const char *buf, size_t len, long ticks, struct gp_host *h,
                         uint64_t *btime)
{
    if (ticks <= 0 || has_nul(buf, len))
        return GP_EPARSE;
    struct cur c = {buf, buf + len};
    /* The aggregate line comes first: "cpu  user nice system idle ..." */
    if (!eat_str(&c, "cpu") || c.p == c.end || !is_blank(*c.p))
        return GP_EPARSE;
    for (int m = 0; m < GP_CPU__COUNT; m++) {
        uint64_t v;
        skip_blanks(&c);
        if (!get_u64(&c, &v))
            return GP_EPARSE;
        h->cpu_seconds[m] = (double)v / (double)ticks;
    }
    /* guest and guest_nice may follow: already counted in user and nice */
    while (!at_eol(&c)) {
        skip_blanks(&c);
        if (!at_eol(&c) && !skip_int(&c))
            return GP_EPARSE;
    }
    next_line(&c);

    unsigned ncpus = 0;
    bool have_btime = false;
    while (c.p < c.end) {
        if (eat_str(&c, "cpu") && c.p < c.end && is_digit(*c.p)) {
            ncpus++;
        } else if (eat_str(&c, "btime")) {
            skip_blanks(&c);
            if (!get_u64(&c, btime))
                return GP_EPARSE;
            skip_blanks(&c);
            if (!at_eol(&c))
                return GP_EPARSE;
            have_btime = true;
        }
        next_line(&c);
    }
    if (ncpus == 0 || !have_btime)
        return GP_EPARSE;
    h->ncpus = ncpus;
    h->cpu_valid = true;
    return GP_OK;
}

static const char *const mem_keys[GP_MEM__COUNT] = {
#define GP_MEM_KEY_(id, label, key) [GP_MEM_##id] = key,
    GP_MEM_KINDS(GP_MEM_KEY_)
#undef GP_MEM_KEY_
};

int gp_procfs_parse_meminfo(const char *buf, size_t len, struct gp_host *h)
{
    if (has_nul(buf, len))
        return GP_EPARSE;
    struct cur c = {buf, buf + len};
    uint32_t valid = 0;
    while (c.p < c.end) {
        const char *key, *eol;
        size_t keylen;
        if (!kv_line(&c, &key, &keylen, &eol))
            return GP_EPARSE;
        for (int k = 0; k < GP_MEM__COUNT; k++) {
            if (!key_is(key, keylen, mem_keys[k]))
                continue;
            bool count = k == GP_MEM_HUGEPAGES_TOTAL; /* a number of pages, not kB */
            uint64_t v;
            if (!kv_u64(&c, eol, count ? NULL : "kB", &v))
                return GP_EPARSE;
            if (!count) {
                if (v > UINT64_MAX / 1024)
                    return GP_EPARSE;
                v *= 1024;
            }
            h->mem_bytes[k] = v;
            valid |= 1u << k;
            break;
        }
        c.p = eol;
        next_line(&c);
    }
    if (!(valid & (1u << GP_MEM_TOTAL)))
        return GP_EPARSE;
    h->mem_valid = valid;
    return GP_OK;
}

int gp_procfs_parse_pressure(const char *buf, size_t len, enum gp_psi_resource res,
                             struct gp_host *h)
{
    if ((unsigned)res >= GP_PSI__COUNT || has_nul(buf, len))
        return GP_EPARSE;
    struct cur c = {buf, buf + len};
    uint8_t valid = 0;
    double secs[GP_PSI_KIND__COUNT] = {0};
    while (c.p < c.end) {
        int kind;
        if (eat_str(&c, "some"))
            kind = GP_PSI_SOME;
        else if (eat_str(&c, "full"))
            kind = GP_PSI_FULL;
        else
            return GP_EPARSE;
        if (valid & (1u << kind))
            return GP_EPARSE; /* the same line twice */
        bool have_total = false;
        /* blank-separated name=value pairs: avg10=0.00 ... total=N */
        while (!at_eol(&c)) {
            if (!is_blank(*c.p))
                return GP_EPARSE;
            skip_blanks(&c);
            if (at_eol(&c))
                break;
            if (eat_str(&c, "total=")) {
                uint64_t us;
                if (!get_u64(&c, &us))
                    return GP_EPARSE;
                secs[kind] = (double)us / 1e6;
                have_total = true;
            } else {
                const char *name = c.p;
                while (c.p < c.end && (*c.p >= 'a' && *c.p <= 'z'))
                    c.p++;
                if (c.p == name)
                    return GP_EPARSE;
                while (c.p < c.end && is_digit(*c.p))
                    c.p++;
                double avg;
                if (!eat(&c, '=') || !get_decimal(&c, &avg))
                    return GP_EPARSE;
            }
        }
        if (!have_total)
            return GP_EPARSE;
        valid |= (uint8_t)(1u << kind);
        next_line(&c);
    }
    if (!(valid & (1u << GP_PSI_SOME)))
        return GP_EPARSE;
    for (int k = 0; k < GP_PSI_KIND__COUNT; k++)
        h->psi_seconds[res][k] = secs[k];
    h->psi_valid[res] = valid;
    return GP_OK;
}

int gp_procfs_parse_loadavg(const char *buf, size_t len, struct gp_host *h)
{
    if (has_nul(buf, len))
        return GP_EPARSE;
    struct cur c = {buf, buf + len};
    double load[3];
    for (int i = 0; i < 3; i++) {
        if (!get_decimal(&c, &load[i]) || !eat(&c, ' '))
            return GP_EPARSE;
    }
    uint64_t running, total, lastpid;
    if (!digits_u64(&c, &running) || !eat(&c, '/') || !get_u64(&c, &total) || !eat(&c, ' ') ||
        !get_u64(&c, &lastpid))
        return GP_EPARSE;
    eat(&c, '\n');
    if (c.p != c.end)
        return GP_EPARSE;
    memcpy(h->load, load, sizeof load);
    h->load_valid = true;
    return GP_OK;
}

/* ---- per-process files ---- */

int gp_procfs_parse_pid_stat(const char *buf, size_t len, struct gp_procfs_pid_stat *out)
{
    if (has_nul(buf, len))
        return GP_EPARSE;
    struct cur c = {buf, buf + len};
    if (!get_u32(&c, &out->pid) || !eat(&c, ' ') || !eat(&c, '('))
        return GP_EPARSE;
    /* comm is anything the task set with prctl(): end at the LAST ')' */
    const char *close = memrchr(c.p, ')', (size_t)(c.end - c.p));
    if (!close)
        return GP_EPARSE;
    size_t n = (size_t)(close - c.p);
    if (n >= sizeof out->comm)
        n = sizeof out->comm - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)c.p[i];
        out->comm[i] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
    }
    out->comm[n] = '\0';
    c.p = close + 1;

    /* field 3: state, one letter */
    if (!eat(&c, ' ') || c.p == c.end || !((*c.p >= 'A' && *c.p <= 'Z') ||
                                           (*c.p >= 'a' && *c.p <= 'z')))
        return GP_EPARSE;
    out->state = *c.p++;

    /* fields 4..24, single-space separated integers */
    for (int field = 4; field <= 24; field++) {
        if (!eat(&c, ' '))
            return GP_EPARSE;
        bool ok;
        switch (field) {
        case 4: ok = get_u32(&c, &out->ppid); break;
        case 5: ok = get_u32(&c, &out->pgrp); break;
        case 14: ok = get_u64(&c, &out->utime); break;
        case 15: ok = get_u64(&c, &out->stime); break;
        case 20: ok = get_u32(&c, &out->num_threads); break;
        case 22: ok = get_u64(&c, &out->starttime); break;
        case 23: ok = get_u64(&c, &out->vsize); break;
        case 24: ok = get_u64(&c, &out->rss_pages); break;
        default: ok = skip_int(&c); break;
        }
        if (!ok)
            return GP_EPARSE;
    }
    return GP_OK;
}

int gp_procfs_parse_pid_status(const char *buf, size_t len, struct gp_procfs_pid_status *out)
{
    if (has_nul(buf, len))
        return GP_EPARSE;
    struct cur c = {buf, buf + len};
    bool have_uid = false, have_threads = false;
    out->nspid_valid = false;
    while (c.p < c.end) {
        const char *key, *eol;
        size_t keylen;
        if (!kv_line(&c, &key, &keylen, &eol))
            return GP_EPARSE;
        struct cur v = {c.p, eol};
        if (key_is(key, keylen, "Uid")) {
            /* real, effective, saved, filesystem: the first is the owner */
            if (!get_u32(&v, &out->uid))
                return GP_EPARSE;
            have_uid = true;
        } else if (key_is(key, keylen, "Threads")) {
            if (!get_u32(&v, &out->threads))
                return GP_EPARSE;
            skip_blanks(&v);
            if (v.p != v.end)
                return GP_EPARSE;
            have_threads = true;
        } else if (key_is(key, keylen, "NSpid")) {
            /* outermost first; the last one is the pid inside the container */
            do {
                if (!get_u32(&v, &out->nspid))
                    return GP_EPARSE;
                skip_blanks(&v);
            } while (v.p != v.end);
            out->nspid_valid = true;
        }
        c.p = eol;
        next_line(&c);
    }
    return have_uid && have_threads ? GP_OK : GP_EPARSE;
}

int gp_procfs_parse_pid_io(const char *buf, size_t len, uint64_t *read_bytes,
                           uint64_t *write_bytes)
{
    if (has_nul(buf, len))
        return GP_EPARSE;
    struct cur c = {buf, buf + len};
    bool have_r = false, have_w = false;
    while (c.p < c.end) {
        const char *key, *eol;
        size_t keylen;
        if (!kv_line(&c, &key, &keylen, &eol))
            return GP_EPARSE;
        if (key_is(key, keylen, "read_bytes")) {
            if (!kv_u64(&c, eol, NULL, read_bytes))
                return GP_EPARSE;
            have_r = true;
        } else if (key_is(key, keylen, "write_bytes")) {
            if (!kv_u64(&c, eol, NULL, write_bytes))
                return GP_EPARSE;
            have_w = true;
        }
        c.p = eol;
        next_line(&c);
    }
    return have_r && have_w ? GP_OK : GP_EPARSE;
}

int gp_procfs_parse_children(const char *buf, size_t len, uint32_t *out, size_t max, size_t *n)
{
    size_t i = 0, count = 0;
    *n = 0;
    while (i < len) {
        if (buf[i] == ' ' || (buf[i] == '\n' && i + 1 == len)) {
            i++;
            continue;
        }
        uint64_t v = 0;
        size_t start = i;
        while (i < len && buf[i] >= '0' && buf[i] <= '9') {
            v = v * 10 + (uint64_t)(buf[i++] - '0');
            if (v > UINT32_MAX)
                return GP_EPARSE;
        }
        if (i == start || v == 0 || (i < len && buf[i] != ' ' && buf[i] != '\n'))
            return GP_EPARSE;
        if (count == max)
            return GP_ETOOBIG;
        out[count++] = (uint32_t)v;
    }
    *n = count;
    return GP_OK;
}
