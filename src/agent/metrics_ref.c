/*
 * metrics_ref.c - the metric reference of docs/metrics.md as Markdown,
 * from the tables the exposition itself is written from: one table for
 * the dcgm-exporter GPU readings (GP_GPU_FIELDS), then one per section of
 * GP_METRICS, each row the family's name, type, labels and HELP text.
 */
#include "agent/metrics_ref.h"

#include "lib/err.h"
#include "lib/metrics.h"
#include "sources/frame.h"

#include <string.h>

/* Appends s with Markdown table cell separators escaped. */
static void cell(struct gp_buf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            gp_buf_putc(b, '\\');
        gp_buf_putc(b, *s);
    }
}

/* The labels column: "@gpu" and friends spelled out, names in code. */
static void labels(struct gp_buf *b, const char *spec)
{
    int first = 1;
    while (*spec) {
        size_t n = strcspn(spec, " ");
        if (n) {
            if (!first)
                gp_buf_puts(b, ", ");
            first = 0;
            if (n == 4 && !strncmp(spec, "@gpu", n))
                gp_buf_puts(b, "GPU labels, `job`, `rank`");
            else if (n == 8 && !strncmp(spec, "@gpubase", n))
                gp_buf_puts(b, "GPU labels");
            else if (n == 4 && !strncmp(spec, "@job", n))
                gp_buf_puts(b, "`job`, `rank`");
            else if (n == 5 && !strncmp(spec, "@host", n))
                gp_buf_puts(b, "`Hostname`");
            else
                gp_buf_printf(b, "`%.*s`", (int)n, spec);
        }
        spec += n;
        while (*spec == ' ')
            spec++;
    }
}

int gp_metrics_reference(struct gp_buf *out)
{
    gp_buf_puts(out, "### GPU readings\n\n"
                     "dcgm-exporter's names and units for `DCGM_*`. "
                     "Labels: GPU labels, `job`, `rank`.\n\n"
                     "| name | type | help |\n|---|---|---|\n");
    for (int i = 0; i < GPF__COUNT; i++) {
        gp_buf_printf(out, "| `%s` | %s | ", gp_gpu_fields[i].name,
                      gp_gpu_fields[i].type == GP_COUNTER ? "counter" : "gauge");
        cell(out, gp_gpu_fields[i].help);
        gp_buf_puts(out, " |\n");
    }
    for (int s = 0; s < GP_MS__COUNT; s++) {
        gp_buf_printf(out, "\n### %s\n\n| name | type | labels | help |\n|---|---|---|---|\n",
                      gp_metric_section_titles[s]);
        for (int m = 0; m < GP_M__COUNT; m++) {
            const struct gp_metric_info *i = &gp_metrics[m];
            if ((int)i->section != s)
                continue;
            gp_buf_printf(out, "| `%s` | %s | ", i->name, gp_metric_kind_name(i->kind));
            labels(out, i->labels);
            gp_buf_puts(out, " | ");
            cell(out, i->help);
            gp_buf_puts(out, " |\n");
        }
    }
    return out->err;
}
