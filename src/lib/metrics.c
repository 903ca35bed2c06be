/*
 * metrics.c - the rows of GP_METRICS as data, and the HELP/TYPE header
 * every exposition writer starts a family with.
 */
#include "lib/metrics.h"

const struct gp_metric_info gp_metrics[GP_M__COUNT] = {
#define GP_METRIC_ROW_(id, sec, name, type, labels, help) \
    [GP_M_##id] = {name, GP_MK_##type, GP_MS_##sec, labels, help},
    GP_METRICS(GP_METRIC_ROW_)
#undef GP_METRIC_ROW_
};

const char *const gp_metric_section_titles[GP_MS__COUNT] = {
#define GP_MSEC_TITLE_(id, title) [GP_MS_##id] = title,
    GP_METRIC_SECTIONS(GP_MSEC_TITLE_)
#undef GP_MSEC_TITLE_
};

const char *gp_metric_kind_name(enum gp_metric_kind k)
{
    return k == GP_MK_COUNTER ? "counter" : k == GP_MK_HISTOGRAM ? "histogram" : "gauge";
}

void gp_metric_head(struct gp_buf *b, enum gp_metric m)
{
    const struct gp_metric_info *i = &gp_metrics[m];
    gp_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", i->name, i->help, i->name, gp_metric_kind_name(i->kind));
}

void gp_metric_escape(struct gp_buf *out, const char *s)
{
    const char *run = s;
    for (; *s; s++) {
        const char *rep = NULL;
        if (*s == '\\')
            rep = "\\\\";
        else if (*s == '"')
            rep = "\\\"";
        else if (*s == '\n')
            rep = "\\n";
        if (rep) {
            gp_buf_append(out, run, (size_t)(s - run));
            gp_buf_puts(out, rep);
            run = s + 1;
        }
    }
    gp_buf_append(out, run, (size_t)(s - run));
}
