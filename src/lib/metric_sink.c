/*
 * metric_sink.c - the text sink and the helpers every walk uses (see
 * metric_sink.h). The text written is byte for byte what the exposition
 * writers wrote before they shared one walk: HELP and TYPE lines, then
 * name{labels} value, integers without a decimal point.
 */
#include "lib/metric_sink.h"

#include "lib/err.h"

static void text_family(struct gp_metric_sink *s, const char *name, const char *help, const char *type)
{
    struct gp_buf *b = ((struct gp_metric_text_sink *)s)->out;
    gp_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
    if (b->err && !s->err)
        s->err = b->err;
}

static void text_sample(struct gp_metric_sink *s, const char *name, const struct gp_metric_labels *set,
                        const struct gp_metric_label *extra, size_t nextra, double v)
{
    struct gp_buf *b = ((struct gp_metric_text_sink *)s)->out;
    size_t nset = set ? set->n : 0;
    gp_buf_puts(b, name);
    if (nset || nextra) {
        gp_buf_putc(b, '{');
        if (set && set->text)
            gp_buf_puts(b, set->text);
        else if (nset)
            gp_metric_labels_text(b, set->l, nset);
        if (nextra) {
            if (nset)
                gp_buf_putc(b, ',');
            gp_metric_labels_text(b, extra, nextra);
        }
        gp_buf_putc(b, '}');
    }
    gp_buf_putc(b, ' ');
    gp_buf_put_double(b, v);
    gp_buf_putc(b, '\n');
    if (b->err && !s->err)
        s->err = b->err;
}

void gp_metric_text_sink_init(struct gp_metric_text_sink *t, struct gp_buf *out)
{
    t->base.family = text_family;
    t->base.sample = text_sample;
    t->base.err = GP_OK;
    t->out = out;
}

void gp_metric_family(struct gp_metric_sink *s, enum gp_metric m)
{
    const struct gp_metric_info *i = &gp_metrics[m];
    s->family(s, i->name, i->help, gp_metric_kind_name(i->kind));
}

void gp_metric_sample(struct gp_metric_sink *s, enum gp_metric m, const struct gp_metric_labels *set,
                      const char *extra_name, const char *extra_value, double v)
{
    struct gp_metric_label e = {extra_name, extra_value};
    s->sample(s, gp_metric_name(m), set, extra_name ? &e : NULL, extra_name ? 1 : 0, v);
}

void gp_metric_one(struct gp_metric_sink *s, enum gp_metric m, double v)
{
    gp_metric_family(s, m);
    s->sample(s, gp_metric_name(m), NULL, NULL, 0, v);
}

void gp_metric_labels_text(struct gp_buf *b, const struct gp_metric_label *l, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (i)
            gp_buf_putc(b, ',');
        gp_buf_puts(b, l[i].name);
        gp_buf_puts(b, "=\"");
        gp_metric_escape(b, l[i].value);
        gp_buf_putc(b, '"');
    }
}
