/*
 * metric_sink.h - where an exposition goes: one walk of the data, two
 * outputs.
 *
 * The agent's /metrics text and its remote-write series come from the
 * same walk of a frame (agent/expo.c): the walk decides every family,
 * label set and value once and hands them to a sink. The text sink writes
 * Prometheus text 0.0.4 (HELP, TYPE, escaped label values); the push
 * sink (agent/expo_push.c) copies them into remote-write series without
 * ever formatting or parsing text, so what is pushed is what is scraped.
 *
 * Label values are plain C strings (not escaped); a sink escapes or
 * copies them as its format needs. A label set that many series share
 * (a GPU's) may carry its text form, built once with gp_metric_labels_text,
 * so the text sink copies it instead of escaping it on every line.
 */
#ifndef GP_METRIC_SINK_H
#define GP_METRIC_SINK_H

#include "lib/buf.h"
#include "lib/metrics.h"

#include <stddef.h>

struct gp_metric_label {
    const char *name;
    const char *value;
};

/* A label set: l[0..n), and optionally its text form (NULL: none). */
struct gp_metric_labels {
    const struct gp_metric_label *l;
    size_t n;
    const char *text; /* `a="b",c="d"`: gp_metric_labels_text of l */
};

struct gp_metric_sink {
    /* A family starts (every family once, before its samples). */
    void (*family)(struct gp_metric_sink *s, const char *name, const char *help, const char *type);
    /* One sample: the labels of set (NULL: none), then extra[0..nextra). */
    void (*sample)(struct gp_metric_sink *s, const char *name, const struct gp_metric_labels *set,
                   const struct gp_metric_label *extra, size_t nextra, double v);
    int err; /* the first error, sticky (GP_ENOMEM, GP_ETOOBIG) */
};

/* The text sink: appends to out. */
struct gp_metric_text_sink {
    struct gp_metric_sink base;
    struct gp_buf *out;
};
void gp_metric_text_sink_init(struct gp_metric_text_sink *t, struct gp_buf *out);

/* Starts family m of the table (its name, HELP and TYPE). */
void gp_metric_family(struct gp_metric_sink *s, enum gp_metric m);

/* One sample of family m with up to one extra label (name NULL: none). */
void gp_metric_sample(struct gp_metric_sink *s, enum gp_metric m, const struct gp_metric_labels *set,
                      const char *extra_name, const char *extra_value, double v);

/* Family m and its one unlabelled sample v. */
void gp_metric_one(struct gp_metric_sink *s, enum gp_metric m, double v);

/* Appends l[0..n) as text label pairs (`a="b",c="d"`, values escaped) to b. */
void gp_metric_labels_text(struct gp_buf *b, const struct gp_metric_label *l, size_t n);

#endif
