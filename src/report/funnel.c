/*
 * funnel.c - the fleet funnel's report (docs/api.md "GET
 * /api/v1/fleet/funnel", "The weekly report"): the data object of that
 * route, rendered as a subject, a plain-text and an HTML body for the
 * server's weekly e-mail. Every figure is read from the document the
 * route answers (query/funnel.c computed it), never worked out here, so
 * the mail and the API agree to the cent. Strings from the document are
 * escaped for a terminal and for HTML.
 */
#include "report/report.h"
#include "report/report_int.h"

#include "lib/err.h"

#include <stdio.h>
#include <string.h>

#define TOP_ROWS 10

static double num_or(const json_t *o, const char *k, bool *ok)
{
    double v = 0;
    *ok = gp_rp_num(o, k, &v);
    return v;
}

/* A cell's text, for both bodies. */
static void cell_money(char *out, size_t n, const json_t *o, const char *k)
{
    bool ok;
    double v = num_or(o, k, &ok);
    gp_rp_fmt_money(out, n, ok, v, "USD");
}

static void cell_num(char *out, size_t n, const json_t *o, const char *k)
{
    bool ok;
    double v = num_or(o, k, &ok);
    if (ok)
        snprintf(out, n, "%.2f", v);
    else
        snprintf(out, n, "n/a");
}

static void text_row(struct gp_buf *t, const char *const *cells, const size_t *cols, size_t n)
{
    gp_buf_puts(t, "  ");
    for (size_t i = 0; i < n; i++) {
        if (i + 1 < n) {
            gp_rp_text_cell(t, cells[i], cols[i]);
            gp_buf_puts(t, "  ");
        } else {
            gp_rp_text_put(t, cells[i], cols[i]); /* no padding at the end of a line */
            gp_buf_putc(t, '\n');
        }
    }
}

static void html_row(struct gp_buf *h, const char *tag, const char *const *cells, size_t n)
{
    gp_buf_puts(h, "<tr>");
    for (size_t i = 0; i < n; i++) {
        gp_buf_printf(h, "<%s>", tag);
        gp_rp_html_put(h, cells[i]);
        gp_buf_printf(h, "</%s>", tag);
    }
    gp_buf_puts(h, "</tr>\n");
}

static void section(struct gp_buf *t, struct gp_buf *h, const char *title)
{
    gp_buf_printf(t, "\n%s\n", title);
    gp_buf_puts(h, "<h3>");
    gp_rp_html_put(h, title);
    gp_buf_puts(h, "</h3>\n");
}

static void groups(struct gp_buf *t, struct gp_buf *h, const json_t *by, const char *key)
{
    const json_t *a = gp_rp_arr(by, key);
    char title[64];
    snprintf(title, sizeof title, "Idle cost by %s", key);
    section(t, h, title);
    if (!a || !json_array_size(a)) {
        gp_buf_printf(t, "  no allocated GPU time\n");
        gp_buf_puts(h, "<p>no allocated GPU time</p>\n");
        return;
    }
    static const size_t cols[] = {28, 12, 14, 12};
    const char *head[] = {key, "idle cost", "idle GPU-h", "cost"};
    text_row(t, head, cols, 4);
    gp_buf_puts(h, "<table>\n");
    html_row(h, "th", head, 4);
    for (size_t i = 0; i < json_array_size(a) && i < TOP_ROWS; i++) {
        const json_t *g = json_array_get(a, i);
        const char *name = gp_rp_str(g, key);
        char ic[48], ih[48], c[48];
        cell_money(ic, sizeof ic, g, "idle_cost");
        cell_num(ih, sizeof ih, g, "idle_gpu_hours");
        cell_money(c, sizeof c, g, "cost");
        const char *cells[] = {name ? name : "unknown", ic, ih, c};
        text_row(t, cells, cols, 4);
        html_row(h, "td", cells, 4);
    }
    if (json_array_size(a) > TOP_ROWS)
        gp_buf_printf(t, "  ... %zu more\n", json_array_size(a) - TOP_ROWS);
    gp_buf_puts(h, "</table>\n");
}

int gp_report_funnel(const json_t *d, const char *link, char *subject, size_t sublen,
                     struct gp_buf *t, struct gp_buf *h)
{
    bool sok, eok;
    double start = num_or(d, "start", &sok), end = num_or(d, "end", &eok);
    const json_t *gpus = gp_rp_obj(d, "gpus"), *hours = gp_rp_obj(d, "gpu_hours");
    const json_t *by = gp_rp_obj(d, "idle_cost_by"), *zombies = gp_rp_arr(d, "zombies");
    if (!sok || !eok || !gpus || !hours || !by || !zombies)
        return GP_EPARSE;
    char from[48], to[48], idle[48];
    gp_rp_fmt_utc(from, sizeof from, true, start);
    gp_rp_fmt_utc(to, sizeof to, true, end);
    cell_money(idle, sizeof idle, d, "idle_cost");
    snprintf(subject, sublen, "[gpulse] fleet funnel to %s: %s idle", to, idle);
    gp_buf_printf(t, "gpulse fleet funnel, %s to %s\n", from, to);
    gp_buf_puts(h, "<!doctype html><html><body>\n<h2>gpulse fleet funnel</h2>\n<p>");
    gp_rp_html_put(h, from);
    gp_buf_puts(h, " to ");
    gp_rp_html_put(h, to);
    gp_buf_puts(h, "</p>\n");

    section(t, h, "GPUs (average over the range) and GPU-hours");
    static const char *const stages[] = {"total", "allocated", "active", "effective"};
    static const size_t scols[] = {12, 12, 14};
    const char *shead[] = {"stage", "GPUs", "GPU-hours"};
    text_row(t, shead, scols, 3);
    gp_buf_puts(h, "<table>\n");
    html_row(h, "th", shead, 3);
    for (size_t i = 0; i < 4; i++) {
        char g[48], gh[48];
        cell_num(g, sizeof g, gpus, stages[i]);
        cell_num(gh, sizeof gh, hours, stages[i]);
        const char *cells[] = {stages[i], g, gh};
        text_row(t, cells, scols, 3);
        html_row(h, "td", cells, 3);
    }
    gp_buf_puts(h, "</table>\n");

    section(t, h, "Idle cost");
    static const char *const mk[][2] = {{"idle_cost", "idle cost"},
                                        {"idle_cost_allocated", "allocated but idle"},
                                        {"idle_cost_unallocated", "unallocated"},
                                        {"cost", "all GPU time"}};
    static const size_t mcols[] = {20, 14};
    gp_buf_puts(h, "<table>\n");
    for (size_t i = 0; i < 4; i++) {
        char v[48];
        cell_money(v, sizeof v, d, mk[i][0]);
        const char *cells[] = {mk[i][1], v};
        text_row(t, cells, mcols, 2);
        html_row(h, "td", cells, 2);
    }
    gp_buf_puts(h, "</table>\n");
    groups(t, h, by, "job");
    groups(t, h, by, "user");
    groups(t, h, by, "team");

    bool zok;
    double zmem = num_or(d, "zombie_memory_bytes", &zok);
    char zm[48], ztitle[96];
    gp_rp_fmt_bytes(zm, sizeof zm, zok, zmem);
    snprintf(ztitle, sizeof ztitle, "Zombie processes: %zu holding %s", json_array_size(zombies), zm);
    section(t, h, ztitle);
    if (json_array_size(zombies)) {
        static const size_t zcols[] = {20, 5, 9, 16, 20, 10};
        const char *zhead[] = {"node", "gpu", "pid", "comm", "job", "memory"};
        text_row(t, zhead, zcols, 6);
        gp_buf_puts(h, "<table>\n");
        html_row(h, "th", zhead, 6);
        for (size_t i = 0; i < json_array_size(zombies) && i < 2 * TOP_ROWS; i++) {
            const json_t *z = json_array_get(zombies, i);
            bool ok;
            double m = num_or(z, "memory_bytes", &ok);
            char mb[48];
            gp_rp_fmt_bytes(mb, sizeof mb, ok, m);
            const char *f[] = {gp_rp_str(z, "node"), gp_rp_str(z, "gpu"), gp_rp_str(z, "pid"),
                               gp_rp_str(z, "comm"), gp_rp_str(z, "job"), mb};
            for (size_t k = 0; k < 6; k++)
                f[k] = f[k] ? f[k] : "";
            text_row(t, f, zcols, 6);
            html_row(h, "td", f, 6);
        }
        gp_buf_puts(h, "</table>\n");
    }
    if (link && *link) {
        gp_buf_printf(t, "\nThe dashboard: ");
        gp_rp_text_put(t, link, 400);
        gp_buf_puts(t, "\n");
        gp_buf_puts(h, "<p><a href=\"");
        gp_rp_html_put(h, link);
        gp_buf_puts(h, "\">The dashboard's funnel</a></p>\n");
    }
    gp_buf_puts(h, "</body></html>\n");
    return t->err ? t->err : h->err;
}
