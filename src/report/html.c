/*
 * html.c - the report as one self-contained HTML file.
 *
 * Inline CSS (light and dark by prefers-color-scheme, print rules), no
 * script, no external resource. The same sections as the text (from the
 * same model), then SVG line charts drawn here: GPU activity and GPU
 * memory per GPU (with each GPU's capacity dashed), step time, the loss
 * the clients sent, host CPU cores and host RSS. The markup is also well-formed XML (every element
 * closed, no named entities but XML's), so an XML parser reads it.
 *
 * Charts: x is seconds since the job's start (ticks as m:ss, or h:mm past
 * an hour), y starts at 0 with 1-2-5 ticks (ratios as %, bytes in GiB or
 * MiB, seconds as ms or s). A line of more than GP_RP_MAX_POINTS points
 * is cut into GP_RP_MAX_POINTS/2 buckets and each bucket keeps its lowest
 * and highest point, in time order, so spikes survive. A null value or
 * time breaks the line. A chart with no points says "no data".
 * Presentation attributes (not only CSS) carry the colors, so an SVG cut
 * out of the page renders the same.
 */
#include "report/report.h"
#include "report/report_int.h"

#include "lib/err.h"
#include "lib/plural.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GP_RP_MAX_POINTS 1000
#define MAX_LINES 16

static const char *const palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1",
                                      "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#7f7f7f"};
#define NPAL (sizeof palette / sizeof palette[0])

enum yfmt { Y_RATIO, Y_BYTES, Y_SECONDS, Y_CORES, Y_PLAIN };

struct line {
    char name[96];
    const json_t *t, *v; /* arrays (NULL or short: fewer points) */
    bool hline;          /* a horizontal line at hval instead */
    double hval;
    int color;
    bool dashed;
};

struct chart {
    const char *title;
    enum yfmt y;
    int n;
    struct line l[2 * MAX_LINES];
    size_t not_drawn; /* GPUs beyond MAX_LINES */
};

struct pt {
    double t, v;
    bool brk; /* the line is broken before this point */
};

/* A finite number at a[i]. */
static bool at(const json_t *a, size_t i, double *v)
{
    const json_t *x = json_array_get(a, i);
    if (!json_is_number(x))
        return false;
    *v = json_number_value(x);
    return isfinite(*v);
}

/*
 * The points to draw of one line, at most GP_RP_MAX_POINTS: all of them,
 * or per bucket the lowest and the highest. out has GP_RP_MAX_POINTS.
 */
static size_t points(const json_t *t, const json_t *v, struct pt *out)
{
    size_t n = json_array_size(t) < json_array_size(v) ? json_array_size(t) : json_array_size(v), k = 0;
    bool brk = false;
    if (n <= GP_RP_MAX_POINTS) {
        for (size_t i = 0; i < n; i++) {
            double x, y;
            if (!at(t, i, &x) || !at(v, i, &y)) {
                brk = true;
                continue;
            }
            out[k++] = (struct pt){x, y, brk};
            brk = false;
        }
        return k;
    }
    const size_t nb = GP_RP_MAX_POINTS / 2;
    for (size_t b = 0; b < nb; b++) {
        size_t lo = n * b / nb, hi = n * (b + 1) / nb, imin = SIZE_MAX, imax = SIZE_MAX;
        double vmin = 0, vmax = 0, x, y;
        bool gap = false;
        for (size_t i = lo; i < hi; i++) {
            if (!at(t, i, &x) || !at(v, i, &y)) {
                gap = true;
                continue;
            }
            if (imin == SIZE_MAX || y < vmin)
                imin = i, vmin = y;
            if (imax == SIZE_MAX || y > vmax)
                imax = i, vmax = y;
        }
        if (imin == SIZE_MAX) {
            brk = true;
            continue;
        }
        size_t first = imin < imax ? imin : imax, second = imin < imax ? imax : imin;
        at(t, first, &x);
        at(v, first, &y);
        out[k++] = (struct pt){x, y, brk};
        if (second != first) {
            at(t, second, &x);
            at(v, second, &y);
            out[k++] = (struct pt){x, y, false};
        }
        brk = gap;
    }
    return k;
}

static double nice_step(double range, int target)
{
    double raw = range / target, mag = pow(10, floor(log10(raw))), norm = raw / mag;
    return (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
}

static void fmt_time_tick(char *out, size_t n, double t, bool hours)
{
    if (fabs(t) >= 1e9) {
        snprintf(out, n, "%.3g", t);
        return;
    }
    long long s = llround(fabs(t));
    const char *sign = t < 0 && s ? "-" : "";
    if (hours)
        snprintf(out, n, "%s%lld:%02lld", sign, s / 3600, s / 60 % 60);
    else
        snprintf(out, n, "%s%lld:%02lld", sign, s / 60, s % 60);
}

static void fmt_y_tick(char *out, size_t n, enum yfmt y, double v, double unit, const char *uname)
{
    switch (y) {
    case Y_RATIO: snprintf(out, n, "%.0f%%", v * 100); break;
    case Y_BYTES: snprintf(out, n, "%.4g %s", v / unit, uname); break;
    case Y_SECONDS:
        if (v != 0 && fabs(v) < 1)
            snprintf(out, n, "%.4g ms", v * 1e3);
        else
            snprintf(out, n, "%.4g s", v);
        break;
    case Y_CORES:
    case Y_PLAIN: snprintf(out, n, "%.4g", v); break;
    }
}

enum { W = 760, PL = 70, PR = 16, PB = 34, PH = 190, LEGW = 185 };

static void draw_chart(struct gp_buf *b, const struct chart *c)
{
    struct pt *pts[2 * MAX_LINES] = {0};
    size_t np[2 * MAX_LINES] = {0}, total = 0;
    double tmin = INFINITY, tmax = -INFINITY, vmin = 0, vmax = -INFINITY;
    for (int i = 0; i < c->n; i++) {
        const struct line *l = &c->l[i];
        if (l->hline) {
            if (l->hval > vmax)
                vmax = l->hval;
            continue;
        }
        pts[i] = malloc(GP_RP_MAX_POINTS * sizeof *pts[i]);
        if (!pts[i]) {
            b->err = b->err ? b->err : GP_ENOMEM;
            goto out;
        }
        np[i] = points(l->t, l->v, pts[i]);
        total += np[i];
        for (size_t k = 0; k < np[i]; k++) {
            tmin = fmin(tmin, pts[i][k].t);
            tmax = fmax(tmax, pts[i][k].t);
            vmin = fmin(vmin, pts[i][k].v);
            vmax = fmax(vmax, pts[i][k].v);
        }
    }
    gp_buf_puts(b, "<figure>\n<figcaption>");
    gp_rp_html_put(b, c->title);
    gp_buf_puts(b, "</figcaption>\n");
    if (!total) {
        gp_buf_puts(b, "<p class=\"nodata\">no data</p>\n</figure>\n");
        goto out;
    }
    /* axes ranges; a range that is empty or overflows gets a sane width */
    if (!(tmax - tmin > 0) || !isfinite(tmax - tmin)) {
        tmin -= 1;
        tmax += 1;
        if (!isfinite(tmax - tmin))
            tmin = -1, tmax = 1;
    }
    double unit = 1;
    const char *uname = "";
    if (c->y == Y_RATIO) {
        vmin = fmin(vmin, 0);
        vmax = fmax(vmax, 1);
    }
    if (c->y == Y_BYTES) {
        unit = vmax >= 1073741824.0 ? 1073741824.0 : 1048576.0;
        uname = unit > 1048576.0 ? "GiB" : "MiB";
    }
    if (!(vmax > vmin))
        vmax = vmin + (c->y == Y_BYTES ? unit : 1);
    if (!isfinite(vmax - vmin))
        vmin = -1e300, vmax = 1e300;
    double ystep = nice_step((vmax - vmin) / unit, 5) * unit;
    if (c->y == Y_RATIO && vmin == 0 && vmax == 1)
        ystep = 0.25;
    double y0 = floor(vmin / ystep) * ystep, y1 = ceil(vmax / ystep) * ystep;
    if (!(y1 > y0) || !isfinite(y1 - y0) || (y1 - y0) / ystep > 20)
        y0 = vmin, y1 = vmax, ystep = (vmax - vmin) / 4;

    int legend_rows = (c->n + 3) / 4, top = 10 + legend_rows * 18 + 6;
    int h = top + PH + PB, pw = W - PL - PR;
    gp_buf_printf(b,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" width=\"%d\" "
                  "height=\"%d\" font-family=\"sans-serif\" font-size=\"11\" role=\"img\" "
                  "aria-label=\"",
                  W, h, W, h);
    gp_rp_html_put(b, c->title);
    gp_buf_puts(b, "\">\n");
    /* legend */
    for (int i = 0; i < c->n; i++) {
        int lx = PL + (i % 4) * LEGW, ly = 10 + (i / 4) * 18;
        gp_buf_printf(b,
                      "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2.5\"%s/>"
                      "<text x=\"%d\" y=\"%d\" fill=\"#888\">",
                      lx, ly + 6, lx + 18, ly + 6, palette[c->l[i].color % NPAL],
                      c->l[i].dashed ? " stroke-dasharray=\"5 3\"" : "", lx + 23, ly + 10);
        char name[sizeof c->l[i].name];
        snprintf(name, sizeof name, "%s", c->l[i].name);
        if (gp_rp_cols(c->l[i].name) > 26) /* a code point cut in two prints as U+FFFD */
            snprintf(name, sizeof name, "%.*s...", 22, c->l[i].name);
        gp_rp_html_put(b, name);
        gp_buf_puts(b, "</text>\n");
    }
#define X(t) (PL + ((t) - tmin) / (tmax - tmin) * pw)
#define Y(v) (top + PH - (fmin(fmax((v), y0), y1) - y0) / (y1 - y0) * PH)
    /* y grid and ticks */
    char lab[64];
    for (int k = 0; k <= 20; k++) {
        double v = y0 + k * ystep;
        if (v > y1 + ystep * 1e-9)
            break;
        fmt_y_tick(lab, sizeof lab, c->y, v, unit, uname);
        gp_buf_printf(b,
                      "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#888\" "
                      "stroke-opacity=\"0.25\"/><text x=\"%d\" y=\"%.1f\" fill=\"#888\" "
                      "text-anchor=\"end\">%s</text>\n",
                      PL, Y(v), PL + pw, Y(v), PL - 6, Y(v) + 4, lab);
    }
    /* x ticks: seconds since start */
    static const double tsteps[] = {1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200,
                                    10800, 21600, 43200, 86400, 172800, 604800};
    double range = tmax - tmin, xstep = 0;
    for (size_t i = 0; i < sizeof tsteps / sizeof tsteps[0] && !xstep; i++)
        if (range / tsteps[i] <= 8)
            xstep = tsteps[i];
    if (!xstep)
        xstep = nice_step(range, 6);
    bool hours = fmax(fabs(tmax), fabs(tmin)) >= 3600;
    double x0 = ceil(tmin / xstep) * xstep;
    for (int k = 0; k <= 20; k++) {
        double t = x0 + k * xstep;
        if (t > tmax + xstep * 1e-9)
            break;
        fmt_time_tick(lab, sizeof lab, t, hours);
        gp_buf_printf(b,
                      "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#888\" "
                      "stroke-opacity=\"0.5\"/><text x=\"%.1f\" y=\"%d\" fill=\"#888\" "
                      "text-anchor=\"middle\">%s</text>\n",
                      X(t), top + PH, X(t), top + PH + 5, X(t), top + PH + 18, lab);
    }
    gp_buf_printf(b,
                  "<text x=\"%d\" y=\"%d\" fill=\"#888\" text-anchor=\"end\">time since start (%s)</text>\n"
                  "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\" "
                  "stroke-opacity=\"0.5\"/>\n",
                  PL + pw, top + PH + 31, hours ? "h:mm" : "m:ss", PL, top, pw, PH);
    /* the lines: horizontal (capacity) first, the data over them */
    for (int i = 0; i < c->n; i++) {
        const struct line *l = &c->l[i];
        if (!l->hline)
            continue;
        gp_buf_printf(b,
                      "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" "
                      "stroke-width=\"1.5\" stroke-dasharray=\"5 3\"/>\n",
                      PL, Y(l->hval), PL + pw, Y(l->hval), palette[l->color % NPAL]);
    }
    for (int i = 0; i < c->n; i++) {
        if (!np[i])
            continue;
        const char *col = palette[c->l[i].color % NPAL];
        gp_buf_printf(b, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" stroke-linejoin=\"round\" d=\"",
                      col);
        for (size_t k = 0; k < np[i]; k++)
            gp_buf_printf(b, "%s%.1f %.1f", k == 0 || pts[i][k].brk ? (k ? " M" : "M") : " L",
                          X(pts[i][k].t), Y(pts[i][k].v));
        gp_buf_puts(b, "\"/>\n");
        for (size_t k = 0; k < np[i]; k++) /* lone points: a dot, a path would not show them */
            if ((k == 0 || pts[i][k].brk) && (k + 1 == np[i] || pts[i][k + 1].brk))
                gp_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n",
                              X(pts[i][k].t), Y(pts[i][k].v), col);
    }
#undef X
#undef Y
    gp_buf_puts(b, "</svg>\n");
    if (c->not_drawn)
        gp_buf_printf(b, "<p class=\"note\">%zu more %s not drawn</p>\n", c->not_drawn,
                      gp_plural((double)c->not_drawn, "GPU", "GPUs"));
    gp_buf_puts(b, "</figure>\n");
out:
    for (int i = 0; i < c->n; i++)
        free(pts[i]);
}

/* The job's GPU entry for a series' uuid, or NULL. */
static const json_t *gpu_by_uuid(const json_t *doc, const char *uuid)
{
    const json_t *gpus = gp_rp_arr(doc, "gpus");
    for (size_t i = 0; uuid && i < json_array_size(gpus); i++) {
        const char *u = gp_rp_str(json_array_get(gpus, i), "uuid");
        if (u && !strcmp(u, uuid))
            return json_array_get(gpus, i);
    }
    return NULL;
}

static void gpu_name(const json_t *doc, const json_t *s, size_t i, char *out, size_t n)
{
    const char *uuid = gp_rp_str(s, "uuid");
    const json_t *g = gpu_by_uuid(doc, uuid);
    const char *node = gp_rp_str(g, "node"), *id = gp_rp_str(g, "gpu");
    if (node && id)
        snprintf(out, n, "%s GPU %s", node, id);
    else if (uuid)
        snprintf(out, n, "%s", uuid);
    else
        snprintf(out, n, "GPU %zu", i);
}

static void gpu_chart(struct gp_buf *b, const json_t *doc, const char *title, const char *key,
                      enum yfmt y)
{
    struct chart c;
    memset(&c, 0, sizeof c);
    c.title = title;
    c.y = y;
    const json_t *sg = gp_rp_arr(gp_rp_obj(doc, "series"), "gpus");
    size_t n = json_array_size(sg);
    for (size_t i = 0; i < n; i++) {
        if (i >= MAX_LINES) {
            c.not_drawn = n - MAX_LINES;
            break;
        }
        const json_t *s = json_array_get(sg, i);
        struct line *l = &c.l[c.n++];
        gpu_name(doc, s, i, l->name, sizeof l->name);
        l->t = gp_rp_arr(s, "t");
        l->v = gp_rp_arr(s, key);
        l->color = (int)i; /* a GPU without data stays in the legend */
    }
    if (y == Y_BYTES) { /* each GPU's capacity dashed in its color; one grey line when all equal */
        int nl = c.n, ncap = 0;
        double caps[MAX_LINES];
        bool same = true;
        for (int i = 0; i < nl; i++) {
            const json_t *g = gpu_by_uuid(doc, gp_rp_str(json_array_get(sg, (size_t)i), "uuid"));
            if (!gp_rp_num(g, "memory_total_bytes", &caps[i]))
                caps[i] = NAN;
            else
                ncap++;
            if (!(caps[i] == caps[0]))
                same = false;
        }
        for (int i = 0; i < nl && ncap; i++) {
            if (isnan(caps[i]) || (same && i > 0))
                continue;
            struct line *l = &c.l[c.n++];
            char name[sizeof l->name];
            snprintf(name, sizeof name, "%s", c.l[i].name);
            if (same && nl > 1)
                snprintf(l->name, sizeof l->name, "capacity (each GPU)");
            else
                snprintf(l->name, sizeof l->name, "capacity %.80s", name);
            l->hline = true;
            l->hval = caps[i];
            l->color = same && nl > 1 ? (int)NPAL - 1 : i;
            l->dashed = true;
        }
    }
    draw_chart(b, &c);
}

static void series_chart(struct gp_buf *b, const json_t *doc, const char *title, const char *group,
                         const char *key, const char *name, enum yfmt y)
{
    struct chart c;
    memset(&c, 0, sizeof c);
    c.title = title;
    c.y = y;
    c.n = 1;
    const json_t *s = gp_rp_obj(gp_rp_obj(doc, "series"), group);
    snprintf(c.l[0].name, sizeof c.l[0].name, "%s", name);
    c.l[0].t = gp_rp_arr(s, "t");
    c.l[0].v = gp_rp_arr(s, key);
    draw_chart(b, &c);
}

static const char css[] =
    ":root{color-scheme:light dark;--fg:#1f2328;--bg:#fff;--mut:#656d76;--line:#d0d7de;"
    "--card:#f6f8fa;--bad:#cf222e;--bar1:#4e79a7;--bar2:#f28e2b;--bar3:#bab0ac}\n"
    "@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--mut:#8d96a0;"
    "--line:#30363d;--card:#161b22;--bad:#ff7b72}}\n"
    "body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,"
    "'Segoe UI',sans-serif}\n"
    "main{max-width:980px;margin:0 auto;padding:12px 20px 40px}\n"
    "h1{font-size:20px;margin:8px 0 4px;overflow-wrap:anywhere}h2{font-size:16px;margin:22px 0 6px;"
    "border-bottom:1px solid var(--line);padding-bottom:3px}\n"
    "table{border-collapse:collapse}th,td{text-align:left;padding:2px 12px 2px 0;vertical-align:top}\n"
    "table.kv th{color:var(--mut);font-weight:normal;width:130px}\n"
    "table.kv td{overflow-wrap:anywhere}\n"
    "table.grid th{color:var(--mut);font-weight:600;font-size:12px;border-bottom:1px solid var(--line)}\n"
    "table.grid td.n,table.grid th.n{text-align:right}\n"
    "code{font:13px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere}\n"
    ".split{display:flex;height:18px;border-radius:3px;overflow:hidden;background:var(--card);"
    "max-width:600px;margin:4px 0}\n"
    ".split div{height:100%}.c{background:var(--bar1)}.w{background:var(--bar2)}.i{background:var(--bar3)}\n"
    ".key{display:inline-block;width:10px;height:10px;margin-right:5px;border-radius:2px}\n"
    "ol.advice li{margin:6px 0}.kind{font-weight:600}.kind.bad{color:var(--bad)}\n"
    ".ev{color:var(--mut);font-size:12px}\n"
    "figure{margin:14px 0;padding:8px;background:var(--card);border-radius:6px}\n"
    "figcaption{font-weight:600;margin-bottom:4px}svg{width:100%;height:auto;display:block}\n"
    ".nodata,.note{color:var(--mut);font-style:italic;margin:6px 0}\n"
    "footer{color:var(--mut);font-size:12px;margin-top:28px}\n"
    "@media print{:root{--fg:#000;--bg:#fff;--mut:#444;--card:#fff;--line:#999}"
    "main{max-width:none;padding:0}figure,section{break-inside:avoid}"
    "*{-webkit-print-color-adjust:exact;print-color-adjust:exact}}\n";

static void kv_table(struct gp_buf *b, const struct gp_rp_section *s)
{
    gp_buf_puts(b, "<table class=\"kv\">\n");
    for (int i = 0; i < s->n; i++) {
        const struct gp_rp_row *r = &s->rows[i];
        gp_buf_puts(b, "<tr><th>");
        gp_rp_html_put(b, r->label);
        gp_buf_puts(b, r->raw ? "</th><td><code>" : "</th><td>");
        gp_rp_html_put(b, r->raw ? r->raw : r->v);
        gp_buf_puts(b, r->raw ? "</code></td></tr>\n" : "</td></tr>\n");
    }
    gp_buf_puts(b, "</table>\n");
}

static void section(struct gp_buf *b, const struct gp_rp_section *s)
{
    gp_buf_puts(b, "<section>\n<h2>");
    gp_rp_html_put(b, s->title);
    gp_buf_puts(b, "</h2>\n");
    kv_table(b, s);
}

static void gpu_tr(struct gp_buf *b, char cells[GP_RP_GPU_COLS][96], const char *tag)
{
    gp_buf_puts(b, "<tr>");
    for (int c = 0; c < GP_RP_GPU_COLS; c++) {
        bool num = c >= 3 && c <= 6;
        gp_buf_printf(b, "<%s%s>", tag, num ? " class=\"n\"" : "");
        gp_rp_html_put(b, cells[c]);
        gp_buf_printf(b, "</%s>", tag);
    }
    gp_buf_puts(b, "</tr>\n");
}

static void gpu_table(struct gp_buf *b, const json_t *doc)
{
    const json_t *gpus = gp_rp_arr(doc, "gpus");
    if (!json_array_size(gpus)) {
        gp_buf_printf(b, "<p class=\"note\">%s</p>\n", gpus ? "no GPUs in this job" : "GPUs: n/a");
        return;
    }
    char cells[GP_RP_GPU_COLS][96];
    for (int c = 0; c < GP_RP_GPU_COLS; c++)
        snprintf(cells[c], sizeof cells[c], "%s", gp_rp_gpu_titles[c]);
    gp_buf_puts(b, "<table class=\"grid\">\n");
    gpu_tr(b, cells, "th");
    for (size_t i = 0; i < json_array_size(gpus); i++) {
        gp_rp_gpu_cells(json_array_get(gpus, i), cells);
        gpu_tr(b, cells, "td");
    }
    if (json_array_size(gpus) > 1) {
        gp_rp_gpu_total_cells(doc, cells);
        gpu_tr(b, cells, "td");
    }
    gp_buf_puts(b, "</table>\n");
}

static void rank_tr(struct gp_buf *b, char cells[GP_RP_RANK_COLS][96], const char *tag)
{
    gp_buf_puts(b, "<tr>");
    for (int c = 0; c < GP_RP_RANK_COLS; c++) {
        gp_buf_printf(b, "<%s%s>", tag, c >= 2 ? " class=\"n\"" : "");
        gp_rp_html_put(b, cells[c]);
        gp_buf_printf(b, "</%s>", tag);
    }
    gp_buf_puts(b, "</tr>\n");
}

/* Straggler scores and MFU per rank, for a job of several ranks. */
static void rank_table(struct gp_buf *b, const json_t *doc)
{
    if (!gp_rp_ranks_shown(doc))
        return;
    gp_buf_puts(b, "<h3>Ranks</h3>\n<p class=\"note\">Straggler scores: relative is the fastest "
                   "rank's mean step over this rank's, individual the rank's best over its mean (1: "
                   "as fast as it ever was).</p>\n<table class=\"grid\">\n");
    char cells[GP_RP_RANK_COLS][96];
    for (int c = 0; c < GP_RP_RANK_COLS; c++)
        snprintf(cells[c], sizeof cells[c], "%s", gp_rp_rank_titles[c]);
    rank_tr(b, cells, "th");
    const json_t *ranks = gp_rp_arr(doc, "ranks");
    for (size_t i = 0; i < json_array_size(ranks); i++)
        if (gp_rp_rank_cells(json_array_get(ranks, i), cells))
            rank_tr(b, cells, "td");
    gp_buf_puts(b, "</table>\n");
}

static void time_split(struct gp_buf *b, const json_t *doc)
{
    struct gp_rp_split s;
    char p1[32], p2[32], p3[32];
    gp_rp_split(doc, &s);
    gp_buf_puts(b, "<section>\n<h2>Where the time went</h2>\n");
    if (s.have_compute)
        gp_buf_printf(b,
                      "<div class=\"split\"><div class=\"c\" style=\"width:%.2f%%\"></div>"
                      "<div class=\"w\" style=\"width:%.2f%%\"></div><div class=\"i\" "
                      "style=\"width:%.2f%%\"></div></div>\n",
                      s.compute * 100, s.wait * 100, s.idle * 100);
    gp_buf_printf(b,
                  "<table class=\"kv\">\n<tr><th><span class=\"key c\"></span>compute</th><td>%s</td></tr>\n"
                  "<tr><th><span class=\"key w\"></span>data wait</th><td>%s%s</td></tr>\n"
                  "<tr><th><span class=\"key i\"></span>idle/other</th><td>%s</td></tr>\n</table>\n",
                  gp_rp_fmt_pct(p1, sizeof p1, s.have_compute, s.compute),
                  gp_rp_fmt_pct(p2, sizeof p2, s.have_wait, s.wait),
                  s.have_compute || !s.have_wait ? "" : " of step time",
                  gp_rp_fmt_pct(p3, sizeof p3, s.have_compute, s.idle));
    gp_buf_puts(b, s.have_compute ? "<p class=\"note\">Shares of wall time on the GPUs: compute is the "
                                    "GPU activity, data wait the steps' wait for input, the rest "
                                    "idle.</p>\n"
                                  : "<p class=\"note\">No GPU activity was recorded: compute and idle "
                                    "are unknown.</p>\n");
    gp_buf_puts(b, "</section>\n");
}

/* One list entry: the tag (marked bad in red), the text, the evidence. */
static void item(struct gp_buf *b, const char *tag, bool bad, const char *text, const char *ev)
{
    gp_buf_puts(b, "<li>");
    if (tag) {
        gp_buf_printf(b, "<span class=\"kind%s\">", bad ? " bad" : "");
        gp_rp_html_put(b, tag);
        gp_buf_puts(b, "</span> ");
    }
    gp_rp_html_put(b, text);
    if (ev) {
        gp_buf_puts(b, "<div class=\"ev\">evidence: ");
        gp_rp_html_put(b, ev);
        gp_buf_puts(b, "</div>");
    }
    gp_buf_puts(b, "</li>\n");
}

static void advice(struct gp_buf *b, const json_t *doc)
{
    const json_t *adv = gp_rp_arr(doc, "advice"), *alerts = gp_rp_arr(doc, "alerts");
    gp_buf_puts(b, "<section>\n<h2>What to change</h2>\n");
    size_t n = 0;
    /* the job's active alerts first: never "nothing" while one fires */
    for (size_t i = 0; i < json_array_size(alerts); i++) {
        struct gp_rp_alert a;
        if (!gp_rp_alert(json_array_get(alerts, i), &a))
            continue;
        if (!n++)
            gp_buf_puts(b, "<ol class=\"advice\">\n");
        item(b, a.tag, a.firing, a.text, a.evidence);
    }
    for (size_t i = 0; i < json_array_size(adv); i++) {
        const json_t *e = json_array_get(adv, i);
        const char *kind = gp_rp_str(e, "kind"), *text = gp_rp_str(e, "text"),
                   *ev = gp_rp_str(e, "evidence");
        if (!text)
            continue;
        if (!n++)
            gp_buf_puts(b, "<ol class=\"advice\">\n");
        bool bad = kind && (!strcmp(kind, "failed") || !strcmp(kind, "killed") || !strcmp(kind, "lost"));
        item(b, kind, bad, text, ev);
    }
    if (n)
        gp_buf_puts(b, "</ol>\n");
    else
        gp_buf_printf(b, "<p class=\"note\">%s</p>\n",
                      !adv      ? "Advice: n/a"
                      : alerts ? "Nothing: no rule found a problem in these numbers, and no alert is "
                                 "active on this job."
                               : "Nothing: no rule found a problem in these numbers (no server gave "
                                 "the job's alerts).");
    gp_buf_puts(b, "</section>\n");
}

int gp_report_html(struct gp_buf *b, const json_t *doc)
{
    if (!json_is_object(doc))
        return GP_EPARSE;
    struct gp_rp_model *m = malloc(sizeof *m);
    if (!m)
        return GP_ENOMEM;
    gp_rp_model_build(doc, m);
    const char *id = gp_rp_str(doc, "id");
    gp_buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
                   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n"
                   "<title>gpulse report: ");
    gp_rp_html_put(b, id ? id : GP_RP_NA);
    gp_buf_printf(b, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<main>\n<h1>gpulse report: <code>",
                  css);
    gp_rp_html_put(b, id ? id : GP_RP_NA);
    gp_buf_puts(b, "</code></h1>\n");
    section(b, &m->sec[GP_RP_SEC_JOB]);
    gp_buf_puts(b, "</section>\n");
    section(b, &m->sec[GP_RP_SEC_GPU]);
    gpu_table(b, doc);
    gp_buf_puts(b, "</section>\n");
    section(b, &m->sec[GP_RP_SEC_STEPS]);
    rank_table(b, doc);
    gp_buf_puts(b, "</section>\n");
    section(b, &m->sec[GP_RP_SEC_GOODPUT]);
    gp_buf_puts(b, "</section>\n");
    section(b, &m->sec[GP_RP_SEC_HOST]);
    gp_buf_puts(b, "</section>\n");
    time_split(b, doc);
    advice(b, doc);
    gp_buf_puts(b, "<section>\n<h2>Over time</h2>\n");
    gpu_chart(b, doc, "GPU activity", "activity", Y_RATIO);
    gpu_chart(b, doc, "GPU memory", "memory_bytes", Y_BYTES);
    series_chart(b, doc, "Step time", "steps", "seconds", "step time", Y_SECONDS);
    series_chart(b, doc, "Loss (as the clients sent it)", "steps", "loss", "loss", Y_PLAIN);
    series_chart(b, doc, "Host CPU (cores busy)", "host", "cpu_cores", "CPU cores", Y_CORES);
    series_chart(b, doc, "Host memory (RSS of the job)", "host", "rss_bytes", "RSS", Y_BYTES);
    gp_buf_printf(b, "</section>\n<footer>gpulse %s</footer>\n</main>\n</body>\n</html>\n", GP_VERSION);
    free(m);
    return b->err;
}
