/*
 * fmt.c - the report's typed reads of the document, number formatting
 * and escaping (see report_int.h). Every double that is turned into an
 * integer is range-checked first: the document may hold any number.
 */
#include "report/report_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

bool gp_rp_num(const json_t *o, const char *key, double *v)
{
    const json_t *x = json_is_object(o) ? json_object_get(o, key) : NULL;
    if (!json_is_number(x))
        return false;
    double d = json_number_value(x);
    if (!isfinite(d))
        return false;
    *v = d;
    return true;
}

const char *gp_rp_str(const json_t *o, const char *key)
{
    const json_t *x = json_is_object(o) ? json_object_get(o, key) : NULL;
    return json_is_string(x) ? json_string_value(x) : NULL;
}

const json_t *gp_rp_obj(const json_t *o, const char *key)
{
    const json_t *x = json_is_object(o) ? json_object_get(o, key) : NULL;
    return json_is_object(x) ? x : NULL;
}

const json_t *gp_rp_arr(const json_t *o, const char *key)
{
    const json_t *x = json_is_object(o) ? json_object_get(o, key) : NULL;
    return json_is_array(x) ? x : NULL;
}

bool gp_rp_gpu_peak_ratio(const json_t *gpu, double *r)
{
    double peak, total;
    if (gp_rp_num(gpu, "peak_memory_ratio", r))
        return true;
    if (gp_rp_num(gpu, "peak_memory_bytes", &peak) && gp_rp_num(gpu, "memory_total_bytes", &total) &&
        total > 0) {
        *r = peak / total;
        return true;
    }
    return false;
}

static char *na(char *out, size_t n)
{
    snprintf(out, n, GP_RP_NA);
    return out;
}

char *gp_rp_fmt_bytes(char *out, size_t n, bool ok, double v)
{
    if (!ok)
        return na(out, n);
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double a = fabs(v);
    int u = 0;
    while (a >= 1024 && u < 6) {
        a /= 1024;
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(out, n, "%.0f B", v);
    else
        snprintf(out, n, a < 10 ? "%.2f %s" : "%.1f %s", v, units[u]);
    return out;
}

char *gp_rp_fmt_pct(char *out, size_t n, bool ok, double ratio)
{
    if (!ok)
        return na(out, n);
    snprintf(out, n, fabs(ratio) < 1e12 ? "%.1f%%" : "%.3g%%", ratio * 100);
    return out;
}

char *gp_rp_fmt_hms(char *out, size_t n, bool ok, double seconds)
{
    if (!ok)
        return na(out, n);
    if (fabs(seconds) >= 1e12) { /* beyond any clock: show the number */
        snprintf(out, n, "%.3g s", seconds);
        return out;
    }
    long long s = llround(fabs(seconds));
    snprintf(out, n, "%s%lld:%02lld:%02lld", seconds < 0 ? "-" : "", s / 3600, s / 60 % 60, s % 60);
    return out;
}

char *gp_rp_fmt_short(char *out, size_t n, bool ok, double seconds)
{
    if (!ok)
        return na(out, n);
    double a = fabs(seconds);
    if (a == 0)
        snprintf(out, n, "0 s");
    else if (a < 1e-3)
        snprintf(out, n, "%.0f us", seconds * 1e6);
    else if (a < 0.01)
        snprintf(out, n, "%.2f ms", seconds * 1e3);
    else if (a < 1)
        snprintf(out, n, "%.0f ms", seconds * 1e3);
    else if (a < 60)
        snprintf(out, n, "%.2f s", seconds);
    else
        gp_rp_fmt_hms(out, n, true, seconds);
    return out;
}

char *gp_rp_fmt_count(char *out, size_t n, bool ok, double v)
{
    if (!ok)
        return na(out, n);
    if (fabs(v) >= 1e15 || v != floor(v)) {
        snprintf(out, n, fabs(v) >= 1e15 ? "%.4g" : "%.1f", v);
        return out;
    }
    char digits[32];
    snprintf(digits, sizeof digits, "%lld", (long long)fabs(v));
    size_t len = strlen(digits), k = 0;
    char tmp[48];
    if (v < 0)
        tmp[k++] = '-';
    for (size_t i = 0; i < len; i++) {
        if (i && (len - i) % 3 == 0)
            tmp[k++] = ',';
        tmp[k++] = digits[i];
    }
    tmp[k] = '\0';
    snprintf(out, n, "%s", tmp);
    return out;
}

char *gp_rp_fmt_sig(char *out, size_t n, bool ok, double v)
{
    if (!ok)
        return na(out, n);
    snprintf(out, n, "%.4g", v);
    return out;
}

char *gp_rp_fmt_rate(char *out, size_t n, bool ok, double v)
{
    if (!ok)
        return na(out, n);
    double a = fabs(v);
    if (a >= 1e15)
        snprintf(out, n, "%.4g", v);
    else if (a >= 10000)
        gp_rp_fmt_count(out, n, true, round(v));
    else
        snprintf(out, n, a >= 10 ? "%.1f" : "%.2f", v);
    return out;
}

char *gp_rp_fmt_money(char *out, size_t n, bool ok, double v, const char *currency)
{
    if (!ok)
        return na(out, n);
    const char *fmt = fabs(v) >= 1e15 ? "%.4g" : "%.2f";
    char num[64];
    snprintf(num, sizeof num, fmt, v);
    if (!currency || !strcmp(currency, "USD"))
        snprintf(out, n, "%s$%s", num[0] == '-' ? "-" : "", num[0] == '-' ? num + 1 : num);
    else
        snprintf(out, n, "%s %s", num, currency);
    return out;
}

char *gp_rp_fmt_utc(char *out, size_t n, bool ok, double epoch)
{
    struct tm tm;
    if (!ok || epoch < 0 || epoch > 253402300799.0) /* year 9999 */
        return na(out, n);
    time_t t = (time_t)epoch;
    if (!gmtime_r(&t, &tm))
        return na(out, n);
    strftime(out, n, "%Y-%m-%d %H:%M:%S UTC", &tm);
    return out;
}

char *gp_rp_fmt_signal(char *out, size_t n, const json_t *sig)
{
    static const char *const names[] = {NULL,     "SIGHUP",  "SIGINT",  "SIGQUIT", "SIGILL",
                                        "SIGTRAP", "SIGABRT", "SIGBUS",  "SIGFPE",  "SIGKILL",
                                        "SIGUSR1", "SIGSEGV", "SIGUSR2", "SIGPIPE", "SIGALRM",
                                        "SIGTERM"};
    if (json_is_string(sig)) {
        snprintf(out, n, "signal %s", json_string_value(sig));
    } else if (json_is_number(sig) && isfinite(json_number_value(sig))) {
        double d = json_number_value(sig);
        if (d >= 1 && d < (double)(sizeof names / sizeof names[0]) && d == floor(d))
            snprintf(out, n, "signal %d (%s)", (int)d, names[(int)d]);
        else
            snprintf(out, n, "signal %.15g", d);
    } else {
        return na(out, n);
    }
    return out;
}

/* --- escaping ----------------------------------------------------------- */

/*
 * Decodes one UTF-8 code point at s (NUL-terminated); *len gets its
 * bytes (at least 1). Returns the code point, or -1 for a broken or
 * overlong sequence or a surrogate.
 */
static long utf8_next(const unsigned char *s, size_t *len)
{
    unsigned c = s[0];
    *len = 1;
    if (c < 0x80)
        return c;
    int need;
    long cp, min;
    if ((c & 0xe0) == 0xc0)
        need = 1, cp = c & 0x1f, min = 0x80;
    else if ((c & 0xf0) == 0xe0)
        need = 2, cp = c & 0x0f, min = 0x800;
    else if ((c & 0xf8) == 0xf0)
        need = 3, cp = c & 0x07, min = 0x10000;
    else
        return -1;
    for (int i = 1; i <= need; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return -1;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    *len = (size_t)need + 1;
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return -1;
    return cp;
}

static bool is_control(long cp)
{
    return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

size_t gp_rp_cols(const char *s)
{
    size_t cols = 0, len;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p += len) {
        utf8_next(p, &len);
        cols++;
    }
    return cols;
}

size_t gp_rp_text_put(struct gp_buf *b, const char *s, size_t maxcols)
{
    if (!s)
        s = "";
    size_t total = gp_rp_cols(s), cols = 0, len;
    size_t limit = total <= maxcols ? total : (maxcols > 3 ? maxcols - 3 : 0);
    for (const unsigned char *p = (const unsigned char *)s; *p && cols < limit; p += len, cols++) {
        long cp = utf8_next(p, &len);
        if (cp < 0 || is_control(cp))
            gp_buf_putc(b, '?');
        else
            gp_buf_append(b, p, len);
    }
    if (total > maxcols) {
        size_t dots = maxcols < 3 ? maxcols : 3;
        gp_buf_append(b, "...", dots);
        cols += dots;
    }
    return cols;
}

void gp_rp_text_cell(struct gp_buf *b, const char *s, size_t cols)
{
    size_t w = gp_rp_text_put(b, s, cols);
    for (; w < cols; w++)
        gp_buf_putc(b, ' ');
}

void gp_rp_text_wrap(struct gp_buf *b, const char *s, size_t col, size_t indent, size_t width)
{
    if (!s)
        s = "";
    const unsigned char *p = (const unsigned char *)s;
    bool first_word = true;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            p++;
        if (!*p)
            break;
        /* one word: up to the next blank */
        const unsigned char *w = p;
        size_t wcols = 0, len;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            utf8_next(p, &len);
            p += len;
            wcols++;
        }
        size_t need = wcols + (first_word ? 0 : 1);
        if (!first_word && col + need > width) {
            gp_buf_putc(b, '\n');
            for (size_t i = 0; i < indent; i++)
                gp_buf_putc(b, ' ');
            col = indent;
        } else if (!first_word) {
            gp_buf_putc(b, ' ');
            col++;
        }
        first_word = false;
        /* write the word, breaking it where it is wider than the line */
        for (const unsigned char *q = w; q < p; q += len) {
            long cp = utf8_next(q, &len);
            if (col >= width) {
                gp_buf_putc(b, '\n');
                for (size_t i = 0; i < indent; i++)
                    gp_buf_putc(b, ' ');
                col = indent;
            }
            if (cp < 0 || is_control(cp))
                gp_buf_putc(b, '?');
            else
                gp_buf_append(b, q, len);
            col++;
        }
    }
    gp_buf_putc(b, '\n');
}

void gp_rp_html_put(struct gp_buf *b, const char *s)
{
    size_t len;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p += len) {
        long cp = utf8_next(p, &len);
        if (cp < 0 || (is_control(cp) && cp != '\t' && cp != '\n') || cp == 0xfffe || cp == 0xffff) {
            gp_buf_puts(b, "\xef\xbf\xbd"); /* U+FFFD */
            continue;
        }
        switch (cp) {
        case '&': gp_buf_puts(b, "&amp;"); break;
        case '<': gp_buf_puts(b, "&lt;"); break;
        case '>': gp_buf_puts(b, "&gt;"); break;
        case '"': gp_buf_puts(b, "&quot;"); break;
        case '\'': gp_buf_puts(b, "&#39;"); break;
        default: gp_buf_append(b, p, len);
        }
    }
}
