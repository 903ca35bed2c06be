/*
 * mime.c - see mime.h.
 *
 * The builder renders the two bodies as plain UTF-8 text into scratch
 * buffers first (text and HTML), then writes the header and the two
 * quoted-printable parts into the caller's buffer. Untrusted strings go
 * through one cleaner (valid UTF-8, bounded, control characters out)
 * before they reach either body, and through the HTML escaper before
 * the HTML one. The bodies have a byte budget: alerts are listed until
 * GP_MIME_MAX_ALERTS or the budget is reached, the rest are counted in
 * one line, so a storm of alerts gives a message of bounded size.
 */
#include "notify/mime.h"

#include "lib/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define LINE_MAX_QP 76
#define PART_BUDGET (128u << 10) /* raw bytes of a body before the rest is summarised */
#define CLEAN_MAX (GP_MIME_FIELD_MAX * 3 + 8)

static const char HEX[] = "0123456789ABCDEF";

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;
        if (c == 0xED)
            hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

/*
 * Copies at most maxin bytes of s (NUL-terminated; NULL reads as "") into
 * out as valid UTF-8: bad bytes become U+FFFD, control characters a
 * space (a newline is kept when keep_nl, "\r\n" and "\r" read as one),
 * and "..." (U+2026) marks a cut. Never splits a character at outlen.
 * Returns the length written (out is NUL-terminated).
 */
static size_t clean_text(const char *s, size_t maxin, char *out, size_t outlen, int keep_nl)
{
    static const char repl[] = "\xEF\xBF\xBD", ell[] = "\xE2\x80\xA6";
    size_t o = 0, i = 0, n = s ? strnlen(s, maxin + 1) : 0;
    int cut = n > maxin;
    if (cut)
        n = maxin;
    if (outlen == 0)
        return 0;
    const unsigned char *u = (const unsigned char *)s;
    while (i < n) {
        const char *piece;
        char one[2] = {0, 0};
        size_t len = utf8_len(u + i, n - i), adv = len;
        if (len == 0) {
            piece = repl;
            len = 3;
            adv = 1;
        } else if (len == 1 && (u[i] < 0x20 || u[i] == 0x7F)) {
            one[0] = ' ';
            if (keep_nl && (u[i] == '\n' || u[i] == '\r')) {
                one[0] = '\n';
                if (u[i] == '\r' && i + 1 < n && u[i + 1] == '\n')
                    adv = 2;
            }
            piece = one;
        } else
            piece = s + i;
        if (o + len + 1 > outlen) {
            cut = 1;
            break;
        }
        memcpy(out + o, piece, len);
        o += len;
        i += adv;
    }
    if (cut) {
        while (o > 0 && o + sizeof ell > outlen) { /* room for the mark: drop whole characters */
            o--;
            while (o > 0 && ((unsigned char)out[o] & 0xC0) == 0x80)
                o--;
        }
        if (o + sizeof ell <= outlen) {
            memcpy(out + o, ell, 3);
            o += 3;
        }
    }
    out[o] = '\0';
    return o;
}

/* Appends s HTML-escaped, newlines as <br>. */
static void put_html(struct gp_buf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': gp_buf_puts(b, "&amp;"); break;
        case '<': gp_buf_puts(b, "&lt;"); break;
        case '>': gp_buf_puts(b, "&gt;"); break;
        case '"': gp_buf_puts(b, "&quot;"); break;
        case '\'': gp_buf_puts(b, "&#39;"); break;
        case '\n': gp_buf_puts(b, "<br>\n"); break;
        default: gp_buf_putc(b, *s);
        }
    }
}

/* Appends s with its newlines indented (continuation lines of a field). */
static void put_text_field(struct gp_buf *b, const char *s)
{
    for (; *s; s++) {
        gp_buf_putc(b, *s);
        if (*s == '\n')
            gp_buf_puts(b, "            ");
    }
}

static int is_http_url(const char *s)
{
    return strncasecmp(s, "http://", 7) == 0 || strncasecmp(s, "https://", 8) == 0;
}

/* The job's dashboard link into out ("" when there is none). */
static void job_link(const char *ext, const char *job, char *out, size_t outlen)
{
    out[0] = '\0';
    if (!ext || !*ext || !job || !*job || !is_http_url(ext))
        return;
    char base[CLEAN_MAX];
    size_t bl = clean_text(ext, GP_MIME_FIELD_MAX, base, sizeof base, 0);
    while (bl > 0 && base[bl - 1] == '/')
        base[--bl] = '\0';
    size_t o = (size_t)snprintf(out, outlen, "%s/jobs/", base);
    if (o >= outlen) {
        out[0] = '\0';
        return;
    }
    for (const unsigned char *p = (const unsigned char *)job; *p && p - (const unsigned char *)job <
                                                                       GP_MIME_FIELD_MAX; p++) {
        if (o + 4 > outlen)
            break;
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '_' || *p == '.' || *p == '~')
            out[o++] = (char)*p;
        else {
            out[o++] = '%';
            out[o++] = HEX[*p >> 4];
            out[o++] = HEX[*p & 15];
        }
    }
    out[o] = '\0';
}

/* "2024-03-05 10:00:00 UTC" into out, or "" when ms is not a plausible time. */
static void fmt_time(int64_t ms, char *out, size_t outlen)
{
    out[0] = '\0';
    if (ms <= 0 || ms >= INT64_C(253402300800000)) /* year 10000 */
        return;
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (!gmtime_r(&t, &tm))
        return;
    snprintf(out, outlen, "%04d-%02d-%02d %02d:%02d:%02d UTC", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static int is_resolved(const char *status) { return status && strcmp(status, "resolved") == 0; }

/* "job bert-1, node n1" from the group labels into out. */
static void group_text(const struct gp_notice *n, char *out, size_t outlen)
{
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < 8 && n->group_labels[i][0] && o + 1 < outlen; i++) {
        const char *v = n->group_labels[i][1] ? n->group_labels[i][1] : "";
        int w = snprintf(out + o, outlen - o, "%s%s %s", i ? ", " : "", n->group_labels[i][0], v);
        if (w < 0)
            break;
        o += (size_t)w;
        if (o >= outlen)
            o = outlen - 1;
    }
}

void gp_mime_subject(const struct gp_notice *n, const char *tmpl, char *out, size_t outlen)
{
    char raw[2048], group[1024];
    size_t nfiring = 0, nres = 0;
    for (size_t i = 0; i < n->nalerts; i++)
        is_resolved(n->alerts[i].status) ? nres++ : nfiring++;
    int resolved = is_resolved(n->status);
    const char *status = resolved ? "RESOLVED" : "FIRING";
    group_text(n, group, sizeof group);
    if (tmpl && *tmpl) {
        size_t o = 0;
        raw[0] = '\0';
        for (const char *p = tmpl; *p && o + 1 < sizeof raw;) {
            char val[1100];
            const char *rep = NULL;
            size_t skip = 0;
            if (strncmp(p, "{status}", 8) == 0)
                rep = status, skip = 8;
            else if (strncmp(p, "{count}", 7) == 0) {
                snprintf(val, sizeof val, "%zu", n->nalerts);
                rep = val, skip = 7;
            } else if (strncmp(p, "{group}", 7) == 0)
                rep = group, skip = 7;
            else if (strncmp(p, "{receiver}", 10) == 0)
                rep = n->receiver ? n->receiver : "", skip = 10;
            if (rep) {
                int w = snprintf(raw + o, sizeof raw - o, "%s", rep);
                o = w < 0 ? o : o + (size_t)w;
                if (o >= sizeof raw)
                    o = sizeof raw - 1;
                p += skip;
            } else {
                raw[o++] = *p++;
                raw[o] = '\0';
            }
        }
    } else {
        size_t count = resolved ? nres : nfiring;
        char extra[64] = "";
        if (!resolved && nres > 0)
            snprintf(extra, sizeof extra, ", %zu resolved", nres);
        snprintf(raw, sizeof raw, "[gpulse] %s%s: %zu alert%s%s%s%s", n->test ? "TEST " : "", status,
                 count, count == 1 ? "" : "s", extra, *group ? " for " : "", group);
    }
    clean_text(raw, sizeof raw, out, outlen, 0);
}

static void put_b64(struct gp_buf *b, const unsigned char *p, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)p[i + 1] << 8;
        if (i + 2 < n)
            v |= p[i + 2];
        gp_buf_putc(b, tab[(v >> 18) & 63]);
        gp_buf_putc(b, tab[(v >> 12) & 63]);
        gp_buf_putc(b, i + 1 < n ? tab[(v >> 6) & 63] : '=');
        gp_buf_putc(b, i + 2 < n ? tab[v & 63] : '=');
    }
}

void gp_mime_put_subject(struct gp_buf *out, const char *text)
{
    /* "Subject: " (9) + "=?UTF-8?B?" (10) + 52 base64 + "?=" (2) = 73 */
    enum { WORD_BYTES = 39 };
    const unsigned char *u = (const unsigned char *)text;
    size_t n = strlen(text), i = 0;
    gp_buf_puts(out, "Subject:");
    while (i < n) {
        size_t take = 0;
        while (i + take < n) {
            size_t l = utf8_len(u + i + take, n - i - take);
            if (l == 0)
                l = 1;
            if (take + l > WORD_BYTES)
                break;
            take += l;
        }
        if (take == 0)
            take = 1;
        gp_buf_puts(out, i ? "\r\n =?UTF-8?B?" : " =?UTF-8?B?");
        put_b64(out, u + i, take);
        gp_buf_puts(out, "?=");
        i += take;
    }
    gp_buf_puts(out, "\r\n");
}

void gp_mime_put_qp(struct gp_buf *out, const char *s, size_t n)
{
    size_t col = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n' || (c == '\r' && i + 1 < n && s[i + 1] == '\n')) {
            if (c == '\r')
                i++;
            gp_buf_puts(out, "\r\n");
            col = 0;
            continue;
        }
        int at_eol = i + 1 == n || s[i + 1] == '\n' || (s[i + 1] == '\r' && i + 2 < n && s[i + 2] == '\n');
        for (int pass = 0; pass < 2; pass++) {
            int literal = (c >= 33 && c <= 126 && c != '=' && !(c == '.' && col == 0)) ||
                          ((c == ' ' || c == '\t') && !at_eol);
            size_t len = literal ? 1 : 3;
            if (col + len > LINE_MAX_QP - 1 && pass == 0) {
                gp_buf_puts(out, "=\r\n");
                col = 0;
                continue; /* re-judge at column 0 (a leading '.') */
            }
            if (literal)
                gp_buf_putc(out, (char)c);
            else {
                char e[3] = {'=', HEX[c >> 4], HEX[c & 15]};
                gp_buf_append(out, e, 3);
            }
            col += len;
            break;
        }
    }
}

int gp_mime_addr_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n < 3 || n > 254)
        return 0;
    const char *at = strchr(s, '@');
    if (!at || at == s || !at[1] || strchr(at + 1, '@'))
        return 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p <= 0x20 || *p >= 0x7F || strchr("<>,;:\"()[]\\", *p))
            return 0;
    return 1;
}

/* Copies the characters of s fit for a Message-ID or boundary (at most max). */
static void token_chars(const char *s, const char *allowed_punct, size_t max, char *out)
{
    size_t o = 0;
    for (; s && *s && o < max; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            (c && strchr(allowed_punct, c)))
            out[o++] = (char)c;
    }
    out[o] = '\0';
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *u = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ u[i]) * UINT64_C(0x100000001b3);
    return h;
}

struct alert_fields {
    char status[16], severity[CLEAN_MAX], kind[CLEAN_MAX], summary[CLEAN_MAX], labels[CLEAN_MAX * 2];
    char value[40], started[40], ended[40], evidence[CLEAN_MAX], runbook[CLEAN_MAX];
    char link[CLEAN_MAX * 3 + GP_MIME_FIELD_MAX];
};

static void alert_fields(const struct gp_notice *n, const struct gp_notice_alert *a, struct alert_fields *f)
{
    snprintf(f->status, sizeof f->status, "%s", is_resolved(a->status) ? "RESOLVED" : "FIRING");
    clean_text(a->severity, GP_MIME_FIELD_MAX, f->severity, sizeof f->severity, 0);
    clean_text(a->kind, GP_MIME_FIELD_MAX, f->kind, sizeof f->kind, 0);
    clean_text(a->summary, GP_MIME_FIELD_MAX, f->summary, sizeof f->summary, 1);
    clean_text(a->evidence, GP_MIME_FIELD_MAX, f->evidence, sizeof f->evidence, 1);
    clean_text(a->runbook, GP_MIME_FIELD_MAX, f->runbook, sizeof f->runbook, 0);
    const char *names[] = {"job", "rank", "node", "gpu"};
    const char *vals[] = {a->job, a->rank, a->node, a->gpu};
    size_t o = 0;
    f->labels[0] = '\0';
    for (int i = 0; i < 4; i++) {
        if (!vals[i] || !*vals[i])
            continue;
        char v[CLEAN_MAX];
        clean_text(vals[i], GP_MIME_FIELD_MAX / 2, v, sizeof v, 0);
        int w = snprintf(f->labels + o, sizeof f->labels - o, "%s%s=%s", o ? " " : "", names[i], v);
        if (w > 0 && o + (size_t)w < sizeof f->labels)
            o += (size_t)w;
    }
    struct gp_buf vb;
    gp_buf_init(&vb, sizeof f->value - 1);
    gp_buf_put_double(&vb, a->value);
    snprintf(f->value, sizeof f->value, "%s", vb.err == GP_OK && vb.len ? vb.data : "?");
    gp_buf_free(&vb);
    fmt_time(a->starts_ms, f->started, sizeof f->started);
    fmt_time(is_resolved(a->status) ? a->ends_ms : 0, f->ended, sizeof f->ended);
    job_link(n->external_url, a->job, f->link, sizeof f->link);
}

static void text_row(struct gp_buf *t, const char *name, const char *val)
{
    if (!*val)
        return;
    gp_buf_printf(t, "  %-9s ", name);
    put_text_field(t, val);
    gp_buf_putc(t, '\n');
}

static void html_cell(struct gp_buf *h, const char *val)
{
    gp_buf_puts(h, "<td>");
    put_html(h, val);
    gp_buf_puts(h, "</td>");
}

static void html_link_cell(struct gp_buf *h, const char *url, const char *label)
{
    gp_buf_puts(h, "<td>");
    if (*url && is_http_url(url)) {
        gp_buf_puts(h, "<a href=\"");
        put_html(h, url);
        gp_buf_puts(h, "\">");
        put_html(h, *label ? label : url);
        gp_buf_puts(h, "</a>");
    } else
        put_html(h, url);
    gp_buf_puts(h, "</td>");
}

/* Renders both bodies (raw UTF-8, "\n" line ends). */
static void render_bodies(const struct gp_notice *n, const char *subject, struct gp_buf *t,
                          struct gp_buf *h)
{
    char receiver[CLEAN_MAX], group[1024], ext[CLEAN_MAX];
    clean_text(n->receiver, GP_MIME_FIELD_MAX, receiver, sizeof receiver, 0);
    group_text(n, group, sizeof group);
    char gclean[CLEAN_MAX];
    clean_text(group, GP_MIME_FIELD_MAX, gclean, sizeof gclean, 0);
    clean_text(n->external_url, GP_MIME_FIELD_MAX, ext, sizeof ext, 0);

    gp_buf_printf(t, "%s\n\n", subject);
    gp_buf_puts(h, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>");
    put_html(h, subject);
    gp_buf_puts(h, "</title></head>\n<body style=\"font-family:sans-serif\">\n<h2>");
    put_html(h, subject);
    gp_buf_puts(h, "</h2>\n");
    if (n->test) {
        static const char note[] = "This is a test notification sent by `gpulse notify test`.";
        gp_buf_printf(t, "%s\n\n", note);
        gp_buf_puts(h, "<p><b>");
        put_html(h, note);
        gp_buf_puts(h, "</b></p>\n");
    }
    gp_buf_puts(h, "<p>");
    if (*gclean) {
        gp_buf_printf(t, "Group: %s\n", gclean);
        gp_buf_puts(h, "Group: ");
        put_html(h, gclean);
        gp_buf_puts(h, "<br>\n");
    }
    gp_buf_printf(t, "Receiver: %s\n\n", receiver);
    gp_buf_puts(h, "Receiver: ");
    put_html(h, receiver);
    gp_buf_puts(h, "</p>\n<table border=\"1\" cellpadding=\"4\" cellspacing=\"0\" "
                   "style=\"border-collapse:collapse\">\n<tr><th>Status</th><th>Severity</th>"
                   "<th>Alert</th><th>Summary</th><th>Labels</th><th>Value</th><th>Started</th>"
                   "<th>Resolved</th><th>Evidence</th><th>Runbook</th><th>Job</th></tr>\n");

    struct alert_fields *f = malloc(sizeof *f); /* ~20 KiB: kept off the stack */
    if (!f) {
        t->err = GP_ENOMEM;
        return;
    }
    size_t listed = 0;
    for (; listed < n->nalerts && listed < GP_MIME_MAX_ALERTS; listed++) {
        if (t->len > PART_BUDGET || h->len > PART_BUDGET)
            break;
        alert_fields(n, &n->alerts[listed], f);
        gp_buf_printf(t, "%s  %s  %s\n", f->status, *f->severity ? f->severity : "-",
                      *f->kind ? f->kind : "-");
        text_row(t, "Summary:", f->summary);
        text_row(t, "Labels:", f->labels);
        text_row(t, "Value:", f->value);
        text_row(t, "Started:", f->started);
        text_row(t, "Resolved:", f->ended);
        text_row(t, "Evidence:", f->evidence);
        text_row(t, "Runbook:", f->runbook);
        text_row(t, "Job:", f->link);
        gp_buf_putc(t, '\n');

        gp_buf_puts(h, "<tr>");
        html_cell(h, f->status);
        html_cell(h, f->severity);
        html_cell(h, f->kind);
        html_cell(h, f->summary);
        html_cell(h, f->labels);
        html_cell(h, f->value);
        html_cell(h, f->started);
        html_cell(h, f->ended);
        html_cell(h, f->evidence);
        html_link_cell(h, f->runbook, "");
        html_link_cell(h, f->link, "dashboard");
        gp_buf_puts(h, "</tr>\n");
    }
    free(f);
    gp_buf_puts(h, "</table>\n");
    if (listed < n->nalerts) {
        size_t rest = n->nalerts - listed, rf = 0;
        for (size_t i = listed; i < n->nalerts; i++)
            rf += !is_resolved(n->alerts[i].status);
        char line[160];
        snprintf(line, sizeof line, "... and %zu more alert%s (%zu firing, %zu resolved) not listed here.",
                 rest, rest == 1 ? "" : "s", rf, rest - rf);
        gp_buf_printf(t, "%s\n\n", line);
        gp_buf_puts(h, "<p>");
        put_html(h, line);
        gp_buf_puts(h, "</p>\n");
    }
    if (*ext && is_http_url(ext)) {
        gp_buf_printf(t, "Dashboard: %s\n", ext);
        gp_buf_puts(h, "<p><a href=\"");
        put_html(h, ext);
        gp_buf_puts(h, "\">Dashboard</a></p>\n");
    }
    gp_buf_puts(t, "-- \ngpulse\n");
    gp_buf_puts(h, "<p style=\"color:#888\">gpulse</p>\n</body></html>\n");
}

static void put_date(struct gp_buf *b, int64_t ms)
{
    static const char *const days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char *const mons[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    if (ms < 0 || ms >= INT64_C(253402300800000))
        ms = 0;
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (!gmtime_r(&t, &tm))
        memset(&tm, 0, sizeof tm);
    gp_buf_printf(b, "Date: %s, %02d %s %04d %02d:%02d:%02d +0000\r\n", days[tm.tm_wday % 7], tm.tm_mday,
                  mons[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

int gp_mime_build(const struct gp_notice *n, const struct gp_mime_opts *o, struct gp_buf *out,
                  char *err, size_t errlen)
{
    char subject[GP_MIME_SUBJECT_MAX];
    gp_mime_subject(n, o->subject_template, subject, sizeof subject);
    struct gp_buf text, html;
    gp_buf_init(&text, GP_MIME_MAX_BYTES);
    gp_buf_init(&html, GP_MIME_MAX_BYTES);
    render_bodies(n, subject, &text, &html);
    int rc = text.err ? text.err : html.err;
    if (rc != GP_OK)
        gp_seterr(err, errlen, rc, "email body: %s", gp_strerror(rc));
    else
        rc = gp_mime_build_parts(subject, text.data ? text.data : "", text.len,
                                 html.data ? html.data : "", html.len, o, out, err, errlen);
    gp_buf_free(&text);
    gp_buf_free(&html);
    return rc;
}

int gp_mime_build_parts(const char *subject, const char *text, size_t tlen, const char *html,
                        size_t hlen, const struct gp_mime_opts *o, struct gp_buf *out, char *err,
                        size_t errlen)
{
    if (!gp_mime_addr_ok(o->from))
        return gp_seterr(err, errlen, GP_ECONFIG, "email from address '%.64s' is not a plain address",
                         o->from ? o->from : "");
    if (o->nto == 0)
        return gp_seterr(err, errlen, GP_ECONFIG, "email has no recipient");
    for (size_t i = 0; i < o->nto; i++)
        if (!gp_mime_addr_ok(o->to[i]))
            return gp_seterr(err, errlen, GP_ECONFIG, "email to address '%.64s' is not a plain address",
                             o->to[i] ? o->to[i] : "");

    struct gp_buf qt, qh;
    gp_buf_init(&qt, GP_MIME_MAX_BYTES);
    gp_buf_init(&qh, GP_MIME_MAX_BYTES);
    gp_mime_put_qp(&qt, text, tlen);
    gp_mime_put_qp(&qh, html, hlen);
    int rc = qt.err ? qt.err : qh.err;
    if (rc != GP_OK) {
        gp_seterr(err, errlen, rc, "email body: %s", gp_strerror(rc));
        goto out;
    }
    char tok[48], host[32], btok[40], boundary[64];
    token_chars(o->msgid_token, "-_.", 36, tok); /* "Message-ID: <36@25>" = 76 */
    token_chars(o->msgid_host, "-.", 25, host);
    if (!*host)
        snprintf(host, sizeof host, "gpulse.localhost");
    token_chars(o->boundary_token, "", 32, btok);
    if (!*btok || !*tok) {
        uint64_t hsh = fnv1a(UINT64_C(0xcbf29ce484222325), &o->date_ms, sizeof o->date_ms);
        hsh = fnv1a(hsh, qt.data, qt.len);
        hsh = fnv1a(hsh, qh.data, qh.len);
        if (!*btok)
            snprintf(btok, sizeof btok, "%016llx", (unsigned long long)hsh);
        if (!*tok)
            snprintf(tok, sizeof tok, "%016llx", (unsigned long long)(hsh * UINT64_C(0x9E3779B97F4A7C15)));
    }
    snprintf(boundary, sizeof boundary, "=_gpulse_%s", btok);
    if (strstr(qt.data ? qt.data : "", boundary) || strstr(qh.data ? qh.data : "", boundary)) {
        rc = gp_seterr(err, errlen, GP_EINTERNAL, "email boundary occurs in a part");
        goto out;
    }

    put_date(out, o->date_ms);
    gp_buf_printf(out, "From: %s\r\n", o->from);
    size_t col = 3;
    gp_buf_puts(out, "To:");
    for (size_t i = 0; i < o->nto; i++) {
        size_t l = strlen(o->to[i]);
        if (i > 0) {
            gp_buf_putc(out, ',');
            col++;
        }
        if (i > 0 && col + 1 + l > 75) { /* room for the next comma */
            gp_buf_puts(out, "\r\n");
            col = 0;
        }
        gp_buf_putc(out, ' ');
        gp_buf_puts(out, o->to[i]);
        col += 1 + l;
    }
    gp_buf_puts(out, "\r\n");
    gp_mime_put_subject(out, subject);
    gp_buf_printf(out, "Message-ID: <%s@%s>\r\n", tok, host);
    gp_buf_puts(out, "MIME-Version: 1.0\r\n");
    gp_buf_puts(out, "Auto-Submitted: auto-generated\r\n");
    gp_buf_printf(out, "Content-Type: multipart/alternative;\r\n boundary=\"%s\"\r\n\r\n", boundary);
    gp_buf_puts(out, "This is a multi-part message in MIME format.\r\n");
    static const char part_hdr[] = "Content-Transfer-Encoding: quoted-printable\r\n\r\n";
    gp_buf_printf(out, "\r\n--%s\r\nContent-Type: text/plain; charset=UTF-8\r\n%s", boundary, part_hdr);
    gp_buf_append(out, qt.data ? qt.data : "", qt.len);
    gp_buf_printf(out, "\r\n--%s\r\nContent-Type: text/html; charset=UTF-8\r\n%s", boundary, part_hdr);
    gp_buf_append(out, qh.data ? qh.data : "", qh.len);
    gp_buf_printf(out, "\r\n--%s--\r\n", boundary);
    rc = out->err;
    if (rc != GP_OK)
        gp_seterr(err, errlen, rc, "email message: %s", gp_strerror(rc));
out:
    gp_buf_free(&qt);
    gp_buf_free(&qh);
    return rc;
}
