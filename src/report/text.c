/*
 * text.c - the report for a terminal, and the JSON form.
 *
 * Text: a title line, then sections of "label  value" rows (values wrap
 * at 100 columns under their column), the per-GPU table, the time split
 * as bars, and the advice, numbered, failure first. Document strings go
 * through gp_rp_text_put/wrap, which replace control characters, so a
 * job id cannot move the cursor or change colors. Color (bold headings,
 * a red failure line) only when the caller asks.
 */
#include "report/report.h"
#include "report/report_int.h"

#include "lib/err.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIDTH 100
#define LABEL 16 /* "  " + label column */

static void heading(struct gp_buf *b, const char *title, const struct gp_report_opts *o)
{
    gp_buf_puts(b, "\n");
    if (o && o->color)
        gp_buf_printf(b, "\033[1m%s\033[0m\n", title);
    else
        gp_buf_printf(b, "%s\n", title);
}

static void kv(struct gp_buf *b, const char *label, const char *value)
{
    gp_buf_puts(b, "  ");
    gp_rp_text_cell(b, label, LABEL - 2);
    gp_rp_text_wrap(b, value, LABEL, LABEL, WIDTH);
}

static void section(struct gp_buf *b, const struct gp_rp_section *s, const struct gp_report_opts *o)
{
    heading(b, s->title, o);
    for (int i = 0; i < s->n; i++)
        kv(b, s->rows[i].label, s->rows[i].raw ? s->rows[i].raw : s->rows[i].v);
}

static void gpu_row(struct gp_buf *b, char cells[GP_RP_GPU_COLS][96])
{
    gp_buf_puts(b, "  ");
    for (int c = 0; c < GP_RP_GPU_COLS; c++) {
        if (c == GP_RP_GPU_COLS - 1) {
            gp_rp_text_put(b, cells[c], gp_rp_gpu_widths[c]);
        } else {
            gp_rp_text_cell(b, cells[c], gp_rp_gpu_widths[c]);
            gp_buf_putc(b, ' ');
        }
    }
    /* the last cell is not padded: no trailing blanks */
    while (b->len && b->data[b->len - 1] == ' ')
        b->data[--b->len] = '\0';
    gp_buf_putc(b, '\n');
}

static void gpu_table(struct gp_buf *b, const json_t *doc)
{
    const json_t *gpus = gp_rp_arr(doc, "gpus");
    if (!json_array_size(gpus)) {
        kv(b, "per GPU", gpus ? "no GPUs in this job" : GP_RP_NA);
        return;
    }
    char cells[GP_RP_GPU_COLS][96];
    gp_buf_puts(b, "\n");
    for (int c = 0; c < GP_RP_GPU_COLS; c++)
        snprintf(cells[c], sizeof cells[c], "%s", gp_rp_gpu_titles[c]);
    gpu_row(b, cells);
    for (size_t i = 0; i < json_array_size(gpus); i++) {
        gp_rp_gpu_cells(json_array_get(gpus, i), cells);
        gpu_row(b, cells);
    }
    if (json_array_size(gpus) > 1) {
        gp_rp_gpu_total_cells(doc, cells);
        gpu_row(b, cells);
    }
}

static void rank_row(struct gp_buf *b, char cells[GP_RP_RANK_COLS][96])
{
    gp_buf_puts(b, "  ");
    for (int c = 0; c < GP_RP_RANK_COLS; c++) {
        gp_rp_text_cell(b, cells[c], gp_rp_rank_widths[c]);
        gp_buf_putc(b, ' ');
    }
    while (b->len && b->data[b->len - 1] == ' ')
        b->data[--b->len] = '\0';
    gp_buf_putc(b, '\n');
}

/* Straggler scores and MFU per rank, for a job of several ranks. */
static void rank_table(struct gp_buf *b, const json_t *doc, const struct gp_report_opts *o)
{
    if (!gp_rp_ranks_shown(doc))
        return;
    heading(b, "Ranks (straggler scores: 1 is the fastest rank / the rank at its best)", o);
    char cells[GP_RP_RANK_COLS][96];
    for (int c = 0; c < GP_RP_RANK_COLS; c++)
        snprintf(cells[c], sizeof cells[c], "%s", gp_rp_rank_titles[c]);
    rank_row(b, cells);
    const json_t *ranks = gp_rp_arr(doc, "ranks");
    for (size_t i = 0; i < json_array_size(ranks); i++)
        if (gp_rp_rank_cells(json_array_get(ranks, i), cells))
            rank_row(b, cells);
}

static void bar(struct gp_buf *b, const char *label, bool ok, double share, const char *note)
{
    enum { BAR = 50 };
    char pct[32];
    gp_buf_puts(b, "  ");
    gp_rp_text_cell(b, label, LABEL - 2);
    if (!ok) {
        gp_buf_printf(b, "%s%s\n", GP_RP_NA, note ? note : "");
        return;
    }
    int fill = (int)lround(share * BAR);
    gp_buf_putc(b, '[');
    for (int i = 0; i < BAR; i++)
        gp_buf_putc(b, i < fill ? '#' : '.');
    gp_buf_printf(b, "] %6s%s\n", gp_rp_fmt_pct(pct, sizeof pct, true, share), note ? note : "");
}

static void time_split(struct gp_buf *b, const json_t *doc, const struct gp_report_opts *o)
{
    struct gp_rp_split s;
    gp_rp_split(doc, &s);
    heading(b, "Where the time went (share of wall time on the GPUs)", o);
    bar(b, "compute", s.have_compute, s.compute, NULL);
    if (s.have_compute)
        bar(b, "data wait", s.have_wait, s.wait, NULL);
    else
        bar(b, "data wait", s.have_wait, s.wait, " of step time");
    bar(b, "idle/other", s.have_compute, s.idle, NULL);
    if (!s.have_compute)
        kv(b, "", "no GPU activity was recorded: compute and idle are unknown");
}

/* One numbered entry: [tag] text, then its evidence; tag red when bad. */
static void item(struct gp_buf *b, size_t n, const char *tag, bool bad, const char *text, const char *ev,
                 const struct gp_report_opts *o)
{
    char num[32];
    int w = snprintf(num, sizeof num, "  %zu. ", n);
    gp_buf_puts(b, num);
    if (tag) {
        if (o && o->color && bad)
            gp_buf_puts(b, "\033[31m");
        gp_buf_putc(b, '[');
        w += (int)gp_rp_text_put(b, tag, 48) + 3;
        gp_buf_puts(b, "] ");
        if (o && o->color && bad)
            gp_buf_puts(b, "\033[0m");
    }
    gp_rp_text_wrap(b, text, (size_t)w, 7, WIDTH);
    if (ev) {
        gp_buf_puts(b, "       evidence: ");
        gp_rp_text_wrap(b, ev, 17, 17, WIDTH);
    }
}

static void advice(struct gp_buf *b, const json_t *doc, const struct gp_report_opts *o)
{
    const json_t *adv = gp_rp_arr(doc, "advice"), *alerts = gp_rp_arr(doc, "alerts");
    heading(b, "What to change", o);
    size_t n = 0;
    /* the job's active alerts first: never "nothing" while one fires */
    for (size_t i = 0; i < json_array_size(alerts); i++) {
        struct gp_rp_alert a;
        if (gp_rp_alert(json_array_get(alerts, i), &a))
            item(b, ++n, a.tag, a.firing, a.text, a.evidence, o);
    }
    if (!adv && !n) {
        kv(b, "", GP_RP_NA);
        return;
    }
    for (size_t i = 0; i < json_array_size(adv); i++) {
        const json_t *e = json_array_get(adv, i);
        const char *kind = gp_rp_str(e, "kind"), *text = gp_rp_str(e, "text"),
                   *ev = gp_rp_str(e, "evidence");
        if (!text)
            continue;
        bool bad = kind && (!strcmp(kind, "failed") || !strcmp(kind, "killed") || !strcmp(kind, "lost"));
        item(b, ++n, kind, bad, text, ev, o);
    }
    if (!n)
        kv(b, "", alerts ? "nothing: no rule found a problem in the numbers above, and no alert is active "
                           "on this job"
                         : "nothing: no rule found a problem in the numbers above (no server gave the "
                           "job's alerts)");
}

int gp_report_text(struct gp_buf *out, const json_t *doc, const struct gp_report_opts *o)
{
    if (!json_is_object(doc))
        return GP_EPARSE;
    struct gp_rp_model *m = malloc(sizeof *m);
    if (!m)
        return GP_ENOMEM;
    gp_rp_model_build(doc, m);
    const char *id = gp_rp_str(doc, "id");
    if (o && o->color)
        gp_buf_puts(out, "\033[1m");
    gp_buf_puts(out, "gpulse report: ");
    gp_rp_text_put(out, id ? id : GP_RP_NA, WIDTH - 15);
    if (o && o->color)
        gp_buf_puts(out, "\033[0m");
    gp_buf_putc(out, '\n');
    section(out, &m->sec[GP_RP_SEC_JOB], o);
    section(out, &m->sec[GP_RP_SEC_GPU], o);
    gpu_table(out, doc);
    section(out, &m->sec[GP_RP_SEC_STEPS], o);
    rank_table(out, doc, o);
    section(out, &m->sec[GP_RP_SEC_GOODPUT], o);
    section(out, &m->sec[GP_RP_SEC_HOST], o);
    time_split(out, doc, o);
    advice(out, doc, o);
    free(m);
    return out->err;
}

/* 15 significant digits: 0.47 stays 0.47 (17 would print 0.46999999999999997). */
int gp_report_json(struct gp_buf *out, const json_t *doc)
{
    if (!json_is_object(doc))
        return GP_EPARSE;
    char *s = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
    if (!s)
        return GP_ENOMEM;
    gp_buf_puts(out, s);
    gp_buf_putc(out, '\n');
    free(s);
    return out->err;
}
