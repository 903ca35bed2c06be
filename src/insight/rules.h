/*
 * rules.h - custom threshold rules: the `rules:` list of the server's
 * YAML config, and their evaluation over the store.
 *
 *   rules:
 *     - name: gpu_hot                      # the alert kind; [A-Za-z_][A-Za-z0-9_]*
 *       expr: DCGM_FI_DEV_GPU_TEMP{modelName=~"NVIDIA H100.*"}
 *       agg: max                           # avg|min|max|last|rate|increase (last)
 *       window: 5m                         # (5m); both only for a plain selector
 *       op: ">"                            # > >= < <= == !=
 *       threshold: 85
 *       for: 2m                            # (0s)
 *       cooldown: 10m                      # after resolving (10m)
 *       severity: warning                  # info|warning|critical (warning)
 *       labels: {team: ml}
 *       annotations:
 *         summary: "GPU {{ $labels.gpu }} of {{ $labels.Hostname }} at {{ $value }} °C"
 *         runbook: "Check the fans."
 *
 * lib/cfg.c skips top-level sections it has no table for, so this file
 * reads the same YAML again with libyaml's document API and takes only
 * `rules:`. Every error names its line.
 *
 * Evaluation: each rule is the PromQL expression it means, evaluated
 * by the server's query engine (query/promql.h) at the tick's time with
 * the server's query settings, so a rule's value is what the instant
 * query /api/v1/query?query=<that expression> answers (and what Grafana
 * shows). A plain selector in `expr` takes agg over window:
 *   avg  avg_over_time(EXPR[W])    min  min_over_time(EXPR[W])
 *   max  max_over_time(EXPR[W])    last last_over_time(EXPR[W])
 *   rate rate(EXPR[W])             increase increase(EXPR[W])
 * (rate and increase extrapolate to the window's ends as Prometheus
 * does, and need two samples; a range [W] holds [t - W, t], or
 * (t - W, t] with query_prom3_windows). Any other instant-vector
 * expression in `expr` (sum by (Hostname) (...), a / b, ...) is
 * evaluated as written, and then agg and window must be left out.
 * Each series of the answer whose value is a number is one observation
 * (value op threshold), keyed by its node (Hostname, else hostname),
 * gpu, job, rank and pid labels plus a hash of all its labels (so
 * series that differ only in other labels are separate alerts).
 * docs/config.md shows the Prometheus rule-file rule each one equals.
 */
#ifndef GP_INSIGHT_RULES_H
#define GP_INSIGHT_RULES_H

#include "insight/detect.h"
#include "query/promql.h"
#include "storage/storage.h"

#include <stddef.h>
#include <stdint.h>

#define GP_RULES_MAX 256
#define GP_RULE_NAME_LEN 64
#define GP_RULE_LABELS_MAX 16

#define GP_RULE_AGGS(X) X(AVG, "avg") X(MIN, "min") X(MAX, "max") X(LAST, "last") \
    X(RATE, "rate") X(INCREASE, "increase")
/* GP_RAGG__COUNT: no agg, expr is evaluated as written. */
enum gp_rule_agg {
#define GP_RAGG_ENUM_(id, name) GP_RAGG_##id,
    GP_RULE_AGGS(GP_RAGG_ENUM_)
#undef GP_RAGG_ENUM_
    GP_RAGG__COUNT
};

#define GP_RULE_OPS(X) X(GT, ">") X(GE, ">=") X(LT, "<") X(LE, "<=") X(EQ, "==") X(NE, "!=")
enum gp_rule_op {
#define GP_ROP_ENUM_(id, name) GP_ROP_##id,
    GP_RULE_OPS(GP_ROP_ENUM_)
#undef GP_ROP_ENUM_
    GP_ROP__COUNT
};

extern const char *const gp_rule_agg_names[GP_RAGG__COUNT];
extern const char *const gp_rule_op_names[GP_ROP__COUNT];

struct gp_rule {
    char name[GP_RULE_NAME_LEN];
    char expr[1024];
    char *promql;              /* owned: what is evaluated (expr, or agg over window of it) */
    struct gp_pq_node *ast;    /* owned: promql parsed */
    enum gp_rule_agg agg;
    int64_t window_ms, for_ms, cooldown_ms;
    enum gp_rule_op op;
    double threshold;
    enum gp_severity severity;
    char label_names[GP_RULE_LABELS_MAX][64];
    char label_values[GP_RULE_LABELS_MAX][256];
    unsigned nlabels;
    char summary[512];         /* template; "" for the default */
    char runbook[512];
    unsigned line;             /* where it was written */
};

struct gp_rules {
    struct gp_rule *r;
    size_t n;
};

/*
 * Parses the `rules:` list of a whole config document (other top-level
 * keys are ignored; no `rules:` gives none). *out is replaced (caller
 * frees with gp_rules_free, also after an error). GP_OK, GP_EPARSE (bad
 * YAML) or GP_ECONFIG (a bad rule), with "line N: ..." detail.
 */
int gp_rules_parse_yaml(const char *yaml, size_t len, struct gp_rules *out, char *err,
                        size_t errlen);
/* Reads (at most 1 MiB) and parses a file. Same returns. */
int gp_rules_load_file(const char *path, struct gp_rules *out, char *err, size_t errlen);
void gp_rules_free(struct gp_rules *r); /* accepts a zeroed set */

/* value op threshold. */
bool gp_rule_compare(enum gp_rule_op op, double value, double threshold);

/* What one series of a rule gives the alert engine (borrowed for the call). */
struct gp_rule_obs {
    const struct gp_rule *rule;
    const struct gp_observation *obs;
    const char *labels_json;   /* members for the alert's labels (alerts.h) */
    uint64_t extra;            /* hash of the series' labels */
};
typedef int (*gp_rule_emit)(void *ctx, const struct gp_rule_obs *ro);

/*
 * Evaluates rule r at now_ms over st (lim: the server's query settings;
 * NULL: the engine's defaults), calling emit for every series with a
 * value. GP_OK, the first error of emit, or the engine's error (GP_ENOMEM,
 * GP_EIO, GP_ERANGE, ...; a timeout is GP_EIO), with detail.
 */
int gp_rule_eval(struct gp_storage *st, const struct gp_rule *r, int64_t now_ms,
                 const struct gp_promql_limits *lim, gp_rule_emit emit, void *ctx, char *err,
                 size_t errlen);

/* The alert key of a series' labels (shared with Prometheus rule files,
 * promrules.h): det GP_DET__COUNT, node from Hostname (else hostname),
 * gpu, job, rank (-1 when absent or not a number), pid (0) and the UUID
 * into o (the rest of o untouched). */
void gp_rule_obs_key(const uint8_t *labels, size_t len, struct gp_observation *o);
/* Whether a label is part of that key (or __name__): the alert's labels
 * object leaves it out. */
bool gp_rule_key_label(const char *name, size_t len);

/*
 * Expands {{ $value }} and {{ $labels.NAME }} in tmpl into out (always
 * NUL-terminated, cut at outlen). labels is a canonical blob (labels.h)
 * or NULL. Anything else between braces is copied as written.
 */
void gp_rule_template(const char *tmpl, double value, const uint8_t *labels, size_t labels_len,
                      char *out, size_t outlen);

#endif
