/*
 * rules.c - custom threshold rules (rules.h): the `rules:` parser over
 * libyaml's document tree (each node knows its line, so errors name it),
 * its translation into PromQL, the comparisons, the summary templates,
 * and the evaluation of one rule through the query engine.
 */
#include "insight/rules.h"

#include "lib/buf.h"
#include "lib/err.h"
#include "lib/yamldoc.h"
#include "lib/json.h"
#include "query/promql_ast.h"
#include "store/labels.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

const char *const gp_rule_agg_names[GP_RAGG__COUNT] = {
#define GP_RAGG_NAME_(id, name) name,
    GP_RULE_AGGS(GP_RAGG_NAME_)
#undef GP_RAGG_NAME_
};

const char *const gp_rule_op_names[GP_ROP__COUNT] = {
#define GP_ROP_NAME_(id, name) name,
    GP_RULE_OPS(GP_ROP_NAME_)
#undef GP_ROP_NAME_
};

void gp_rules_free(struct gp_rules *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        gp_promql_free(r->r[i].ast);
        free(r->r[i].promql);
    }
    free(r->r);
    r->r = NULL;
    r->n = 0;
}

/* ---- parsing ---- */


static bool valid_name(const char *s)
{
    if (!*s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
        return false;
    for (s++; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_'))
            return false;
    return true;
}

/* A mapping of scalars to scalars (labels, annotations): calls fn per pair. */
static int map_pairs(yaml_document_t *d, const yaml_node_t *m, const char *what,
                     int (*fn)(void *ctx, const yaml_node_t *k, const yaml_node_t *v, char *err,
                               size_t errlen),
                     void *ctx, char *err, size_t errlen)
{
    if (m->type == YAML_SCALAR_NODE && !m->data.scalar.length)
        return GP_OK; /* empty */
    if (m->type != YAML_MAPPING_NODE)
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: '%s' must be a mapping", gp_yaml_line(m), what);
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        const yaml_node_t *k = yaml_document_get_node(d, p->key);
        const yaml_node_t *v = yaml_document_get_node(d, p->value);
        if (!k || !v || !gp_yaml_scalar(k))
            return gp_seterr(err, errlen, GP_ECONFIG, "line %u: '%s' keys must be plain names",
                             m ? gp_yaml_line(m) : 0, what);
        int rc = fn(ctx, k, v, err, errlen);
        if (rc)
            return rc;
    }
    return GP_OK;
}

static int label_pair(void *ctx, const yaml_node_t *k, const yaml_node_t *v, char *err, size_t errlen)
{
    struct gp_rule *r = ctx;
    const char *name = gp_yaml_scalar(k);
    if (!valid_name(name) || !strcmp(name, "__name__"))
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: invalid label name '%.64s'", gp_yaml_line(k),
                         name);
    if (r->nlabels >= GP_RULE_LABELS_MAX)
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: at most %d labels per rule", gp_yaml_line(k),
                         GP_RULE_LABELS_MAX);
    for (unsigned i = 0; i < r->nlabels; i++)
        if (!strcmp(r->label_names[i], name))
            return gp_seterr(err, errlen, GP_ECONFIG, "line %u: label '%s' given twice", gp_yaml_line(k),
                             name);
    if (strlen(name) >= sizeof r->label_names[0])
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: label name too long", gp_yaml_line(k));
    int rc = gp_yaml_text(v, name, r->label_values[r->nlabels], sizeof r->label_values[0], err, errlen);
    if (rc)
        return rc;
    snprintf(r->label_names[r->nlabels], sizeof r->label_names[0], "%s", name);
    r->nlabels++;
    return GP_OK;
}

static int annotation_pair(void *ctx, const yaml_node_t *k, const yaml_node_t *v, char *err,
                           size_t errlen)
{
    struct gp_rule *r = ctx;
    const char *name = gp_yaml_scalar(k);
    if (!strcmp(name, "summary"))
        return gp_yaml_text(v, "annotations.summary", r->summary, sizeof r->summary, err, errlen);
    if (!strcmp(name, "runbook"))
        return gp_yaml_text(v, "annotations.runbook", r->runbook, sizeof r->runbook, err, errlen);
    return gp_seterr(err, errlen, GP_ECONFIG,
                     "line %u: unknown annotation '%.64s' (use summary or runbook)", gp_yaml_line(k), name);
}

/* The PromQL functions of the aggs, in GP_RULE_AGGS order. */
static const char *const agg_funcs[GP_RAGG__COUNT] = {
    "avg_over_time", "min_over_time", "max_over_time", "last_over_time", "rate", "increase",
};

/*
 * r->promql and r->ast from r->expr: a plain selector becomes
 * FUNC(SEL[window]) (its offset and @ kept, written after the range as
 * PromQL has them); any other instant-vector expression stays as written,
 * and then agg and window (given says whether either was) are refused
 * rather than silently ignored.
 */
static int translate(struct gp_rule *r, bool given, char *err, size_t errlen)
{
    char detail[256];
    struct gp_pq_node *e = NULL;
    int rc = gp_promql_parse(r->expr, strlen(r->expr), &e, detail, sizeof detail);
    if (rc) {
        return gp_seterr(err, errlen, rc == GP_ENOMEM ? GP_ENOMEM : GP_ECONFIG,
                         "line %u: rule '%s': 'expr': %s", r->line, r->name, detail);
    }
    struct gp_buf b;
    gp_buf_init(&b, 0);
    if (e->kind == GP_PQ_VECTOR_SEL) {
        e->kind = GP_PQ_MATRIX_SEL;
        e->type = GP_PQ_T_MATRIX;
        e->u.sel.range_ms = r->window_ms;
        gp_buf_puts(&b, agg_funcs[r->agg]);
        gp_buf_putc(&b, '(');
        gp_promql_format(e, &b);
        gp_buf_putc(&b, ')');
    } else if (given) {
        gp_promql_free(e);
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "line %u: rule '%s': 'agg' and 'window' apply to a plain selector; "
                         "write the aggregation into 'expr' (e.g. max_over_time(x[5m]))",
                         r->line, r->name);
    } else if (e->type != GP_PQ_T_VECTOR) {
        gp_promql_free(e);
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "line %u: rule '%s': 'expr' must be an instant vector expression", r->line,
                         r->name);
    } else {
        r->agg = GP_RAGG__COUNT;
        gp_buf_puts(&b, r->expr);
    }
    gp_promql_free(e);
    if (b.err || !b.data) {
        gp_buf_free(&b);
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    }
    r->promql = b.data; /* the buffer's memory, NUL-terminated: now the rule's */
    rc = gp_promql_parse(r->promql, strlen(r->promql), &r->ast, detail, sizeof detail);
    if (rc)
        return gp_seterr(err, errlen, rc == GP_ENOMEM ? GP_ENOMEM : GP_ECONFIG,
                         "line %u: rule '%s': '%s': %s", r->line, r->name, r->promql, detail);
    return GP_OK;
}

/* Fills r from the mapping n. */
static int parse_rule(yaml_document_t *d, const yaml_node_t *n, struct gp_rule *r, char *err,
                      size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->line = gp_yaml_line(n);
    r->agg = GP_RAGG_LAST;
    r->window_ms = 5 * 60 * 1000;
    r->cooldown_ms = 10 * 60 * 1000;
    r->severity = GP_SEV_WARNING;
    r->op = GP_ROP__COUNT;
    bool have_threshold = false, have_agg = false, have_window = false;
    if (n->type != YAML_MAPPING_NODE)
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: a rule must be a mapping", r->line);
    int rc = GP_OK;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; !rc && p < n->data.mapping.pairs.top;
         p++) {
        const yaml_node_t *k = yaml_document_get_node(d, p->key);
        const yaml_node_t *v = yaml_document_get_node(d, p->value);
        const char *key = gp_yaml_scalar(k);
        if (!key || !v)
            return gp_seterr(err, errlen, GP_ECONFIG, "line %u: expected a key", r->line);
        unsigned ln = gp_yaml_line(k);
        char text[64];
        if (!strcmp(key, "name")) {
            rc = gp_yaml_text(v, "name", r->name, sizeof r->name, err, errlen);
            if (!rc && !valid_name(r->name))
                rc = gp_seterr(err, errlen, GP_ECONFIG,
                               "line %u: rule name '%s' must be letters, digits and '_', not "
                               "starting with a digit",
                               ln, r->name);
        } else if (!strcmp(key, "expr")) {
            rc = gp_yaml_text(v, "expr", r->expr, sizeof r->expr, err, errlen);
        } else if (!strcmp(key, "agg")) {
            have_agg = true;
            if (!(rc = gp_yaml_text(v, "agg", text, sizeof text, err, errlen))) {
                int i = 0;
                while (i < GP_RAGG__COUNT && strcmp(text, gp_rule_agg_names[i]))
                    i++;
                if (i == GP_RAGG__COUNT)
                    rc = gp_seterr(err, errlen, GP_ECONFIG,
                                   "line %u: unknown agg '%s' (use avg, min, max, last, rate or "
                                   "increase)",
                                   ln, text);
                r->agg = (enum gp_rule_agg)i;
            }
        } else if (!strcmp(key, "window")) {
            have_window = true;
            rc = gp_yaml_duration(v, "window", &r->window_ms, err, errlen);
            if (!rc && r->window_ms <= 0)
                rc = gp_seterr(err, errlen, GP_ECONFIG, "line %u: 'window' must be more than 0", ln);
        } else if (!strcmp(key, "for")) {
            rc = gp_yaml_duration(v, "for", &r->for_ms, err, errlen);
        } else if (!strcmp(key, "cooldown")) {
            rc = gp_yaml_duration(v, "cooldown", &r->cooldown_ms, err, errlen);
        } else if (!strcmp(key, "op")) {
            if (!(rc = gp_yaml_text(v, "op", text, sizeof text, err, errlen))) {
                int i = 0;
                while (i < GP_ROP__COUNT && strcmp(text, gp_rule_op_names[i]))
                    i++;
                if (i == GP_ROP__COUNT)
                    rc = gp_seterr(err, errlen, GP_ECONFIG,
                                   "line %u: unknown op '%s' (use >, >=, <, <=, == or !=)", ln, text);
                r->op = (enum gp_rule_op)i;
            }
        } else if (!strcmp(key, "threshold")) {
            if (!(rc = gp_yaml_text(v, "threshold", text, sizeof text, err, errlen))) {
                char *end;
                errno = 0;
                r->threshold = strtod(text, &end);
                if (end == text || *end || errno || !isfinite(r->threshold))
                    rc = gp_seterr(err, errlen, GP_ECONFIG,
                                   "line %u: 'threshold' must be a finite number, not '%s'", ln, text);
                have_threshold = true;
            }
        } else if (!strcmp(key, "severity")) {
            if (!(rc = gp_yaml_text(v, "severity", text, sizeof text, err, errlen)) &&
                gp_severity_parse(text, &r->severity))
                rc = gp_seterr(err, errlen, GP_ECONFIG,
                               "line %u: unknown severity '%s' (use info, warning or critical)", ln,
                               text);
        } else if (!strcmp(key, "labels")) {
            rc = map_pairs(d, v, "labels", label_pair, r, err, errlen);
        } else if (!strcmp(key, "annotations")) {
            rc = map_pairs(d, v, "annotations", annotation_pair, r, err, errlen);
        } else {
            rc = gp_seterr(err, errlen, GP_ECONFIG, "line %u: unknown rule key '%.64s'", ln, key);
        }
    }
    if (rc)
        return rc;
    if (!r->name[0])
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: the rule has no 'name'", r->line);
    for (int i = 0; i < GP_DET__COUNT; i++)
        if (!strcmp(gp_detectors[i].name, r->name))
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "line %u: rule '%s' has the name of a built-in detector", r->line,
                             r->name);
    if (!r->expr[0])
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: rule '%s' has no 'expr'", r->line, r->name);
    if (r->op == GP_ROP__COUNT)
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: rule '%s' has no 'op'", r->line, r->name);
    if (!have_threshold)
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: rule '%s' has no 'threshold'", r->line,
                         r->name);
    return translate(r, have_agg || have_window, err, errlen);
}

int gp_rules_parse_yaml(const char *yaml, size_t len, struct gp_rules *out, char *err,
                        size_t errlen)
{
    gp_rules_free(out);
    yaml_document_t d;
    const yaml_node_t *list;
    int rc = gp_yaml_section(yaml, len, "rules", &d, &list, err, errlen);
    if (rc)
        return rc;
    if (!list || (list->type == YAML_SCALAR_NODE && !list->data.scalar.length))
        goto done;
    if (list->type != YAML_SEQUENCE_NODE) {
        rc = gp_seterr(err, errlen, GP_ECONFIG, "line %u: 'rules' must be a list of rules",
                       gp_yaml_line(list));
        goto done;
    }
    size_t n = (size_t)(list->data.sequence.items.top - list->data.sequence.items.start);
    if (n > GP_RULES_MAX) {
        rc = gp_seterr(err, errlen, GP_ECONFIG, "line %u: at most %d rules", gp_yaml_line(list),
                       GP_RULES_MAX);
        goto done;
    }
    if (!n)
        goto done;
    out->r = calloc(n, sizeof *out->r);
    if (!out->r) {
        rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n && !rc; i++) {
        const yaml_node_t *item = yaml_document_get_node(&d, list->data.sequence.items.start[i]);
        struct gp_rule *r = &out->r[out->n];
        rc = parse_rule(&d, item, r, err, errlen);
        if (r->promql || r->ast)
            out->n++; /* owned from here, freed with the set */
        for (size_t k = 0; !rc && k + 1 < out->n; k++)
            if (!strcmp(out->r[k].name, r->name))
                rc = gp_seterr(err, errlen, GP_ECONFIG, "line %u: rule name '%s' is used twice",
                               r->line, r->name);
    }
done:
    yaml_document_delete(&d);
    return rc;
}

int gp_rules_load_file(const char *path, struct gp_rules *out, char *err, size_t errlen)
{
    char *b;
    size_t n;
    int rc = gp_yaml_read_file(path, &b, &n, err, errlen);
    if (rc)
        return rc;
    rc = gp_rules_parse_yaml(b, n, out, err, errlen);
    free(b);
    return rc;
}

/* ---- evaluation ---- */

/* Bytes of the labels a rule adds to its alerts (alerts.h keeps 1 KiB in
 * all; more is left out rather than cut mid-string). */
#define EXTRA_LABELS_MAX 768

bool gp_rule_compare(enum gp_rule_op op, double v, double thr)
{
    switch (op) {
    case GP_ROP_GT:
        return v > thr;
    case GP_ROP_GE:
        return v >= thr;
    case GP_ROP_LT:
        return v < thr;
    case GP_ROP_LE:
        return v <= thr;
    case GP_ROP_EQ:
        return v == thr;
    case GP_ROP_NE:
        return v != thr;
    case GP_ROP__COUNT:
        break;
    }
    return false;
}

/* Appends s to out[*n..len) (cut, NUL kept). */
static void put(char *out, size_t len, size_t *n, const char *s, size_t sl)
{
    if (*n + 1 >= len)
        return;
    size_t room = len - 1 - *n;
    if (sl > room)
        sl = room;
    memcpy(out + *n, s, sl);
    *n += sl;
    out[*n] = '\0';
}

static void format_value(double v, char *out, size_t len)
{
    if (isnan(v))
        snprintf(out, len, "NaN");
    else if (v == floor(v) && fabs(v) < 1e15)
        snprintf(out, len, "%.0f", v);
    else
        snprintf(out, len, "%.4g", v);
}

void gp_rule_template(const char *tmpl, double value, const uint8_t *labels, size_t labels_len,
                      char *out, size_t outlen)
{
    size_t n = 0;
    if (!outlen)
        return;
    out[0] = '\0';
    for (const char *p = tmpl; *p;) {
        const char *open = strstr(p, "{{");
        if (!open) {
            put(out, outlen, &n, p, strlen(p));
            break;
        }
        put(out, outlen, &n, p, (size_t)(open - p));
        const char *close = strstr(open + 2, "}}");
        if (!close) {
            put(out, outlen, &n, open, strlen(open));
            break;
        }
        const char *a = open + 2, *b = close;
        while (a < b && *a == ' ')
            a++;
        while (b > a && b[-1] == ' ')
            b--;
        size_t len = (size_t)(b - a);
        if (len == 6 && !memcmp(a, "$value", 6)) {
            char v[32];
            format_value(value, v, sizeof v);
            put(out, outlen, &n, v, strlen(v));
        } else if (len > 8 && !memcmp(a, "$labels.", 8) && len - 8 < 128) {
            char name[128];
            memcpy(name, a + 8, len - 8);
            name[len - 8] = '\0';
            struct gp_str val = {"", 0};
            if (labels)
                gp_labels_get(labels, labels_len, name, &val);
            put(out, outlen, &n, val.ptr, val.len);
        } else {
            put(out, outlen, &n, open, (size_t)(close + 2 - open));
        }
        p = close + 2;
    }
}

/* A label value as a C string into out (size len): "" when absent or too long. */
static void label_text(const uint8_t *blob, size_t blen, const char *name, char *out, size_t len)
{
    struct gp_str v;
    out[0] = '\0';
    if (gp_labels_get(blob, blen, name, &v) && v.len < len) {
        memcpy(out, v.ptr, v.len);
        out[v.len] = '\0';
    }
}

bool gp_rule_key_label(const char *name, size_t len)
{
    static const char *const k[] = {"__name__", "Hostname", "hostname", "gpu", "job", "rank", "pid"};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (strlen(k[i]) == len && !memcmp(k[i], name, len))
            return true;
    return false;
}

void gp_rule_obs_key(const uint8_t *labels, size_t len, struct gp_observation *o)
{
    o->key.det = GP_DET__COUNT;
    label_text(labels, len, "Hostname", o->key.node, sizeof o->key.node);
    if (!o->key.node[0])
        label_text(labels, len, "hostname", o->key.node, sizeof o->key.node);
    label_text(labels, len, "gpu", o->key.gpu, sizeof o->key.gpu);
    label_text(labels, len, "job", o->key.job, sizeof o->key.job);
    label_text(labels, len, "UUID", o->uuid, sizeof o->uuid);
    char num[32];
    label_text(labels, len, "rank", num, sizeof num);
    char *end;
    long x = strtol(num, &end, 10);
    o->key.rank = num[0] && !*end && x >= 0 && x <= INT32_MAX ? (int32_t)x : -1;
    label_text(labels, len, "pid", num, sizeof num);
    unsigned long pid = strtoul(num, &end, 10);
    o->key.pid = num[0] && !*end && pid <= UINT32_MAX ? (uint32_t)pid : 0;
}

/* The alert labels beyond the key: the series' other labels, then the
 * rule's (which win a name both have). */
static void extra_labels(const struct gp_rule *r, const uint8_t *blob, size_t blen, struct gp_buf *b)
{
    const char *sep = "";
    struct gp_labels_iter it;
    gp_labels_iter_init(&it, blob, blen);
    struct gp_str name, value;
    while (gp_labels_next(&it, &name, &value) == 1) {
        if (gp_rule_key_label(name.ptr, name.len))
            continue;
        bool ruled = false;
        for (unsigned i = 0; i < r->nlabels && !ruled; i++)
            ruled = strlen(r->label_names[i]) == name.len &&
                    !memcmp(r->label_names[i], name.ptr, name.len);
        if (ruled)
            continue;
        gp_buf_puts(b, sep);
        gp_json_str(b, name.ptr, name.len);
        gp_buf_putc(b, ':');
        gp_json_str(b, value.ptr, value.len);
        sep = ",";
    }
    for (unsigned i = 0; i < r->nlabels; i++) {
        gp_buf_puts(b, sep);
        gp_json_str(b, r->label_names[i], strlen(r->label_names[i]));
        gp_buf_putc(b, ':');
        gp_json_str(b, r->label_values[i], strlen(r->label_values[i]));
        sep = ",";
    }
}

int gp_rule_eval(struct gp_storage *st, const struct gp_rule *r, int64_t now_ms,
                 const struct gp_promql_limits *lim, gp_rule_emit emit, void *ctx, char *err,
                 size_t errlen)
{
    struct gp_promql_result res = {0};
    char detail[256];
    int rc = gp_promql_instant(st, r->ast, now_ms, lim, &res, detail, sizeof detail);
    if (rc) {
        gp_promql_result_free(&res);
        return gp_seterr(err, errlen, rc == GP_PROMQL_ETIMEOUT ? GP_EIO : rc, "rule '%s': %s",
                         r->name, detail);
    }
    struct gp_buf lab;
    gp_buf_init(&lab, EXTRA_LABELS_MAX);
    struct gp_observation *o = malloc(sizeof *o);
    if (!o) {
        gp_promql_result_free(&res);
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    }
    for (size_t i = 0; res.type == GP_PROMQL_VECTOR && i < res.n && !rc; i++) {
        const struct gp_promql_series *s = &res.series[i];
        double v = s->n ? s->v[0] : NAN;
        if (isnan(v))
            continue;
        memset(o, 0, sizeof *o);
        gp_rule_obs_key(s->labels, s->labels_len, o);
        o->value = v;
        o->bad = gp_rule_compare(r->op, v, r->threshold);
        char vtext[32], ttext[32];
        format_value(v, vtext, sizeof vtext);
        format_value(r->threshold, ttext, sizeof ttext);
        if (r->summary[0])
            gp_rule_template(r->summary, v, s->labels, s->labels_len, o->summary, sizeof o->summary);
        else
            snprintf(o->summary, sizeof o->summary, "%s: %s is %s (%s %s)", r->name, r->promql,
                     vtext, gp_rule_op_names[r->op], ttext);
        gp_buf_reset(&lab);
        gp_json_labels(&lab, s->labels, s->labels_len);
        /* cut at the buffer's end: the series' labels go last */
        if (snprintf(o->evidence, sizeof o->evidence, "%s = %s, threshold %s %s; series %s",
                     r->promql, vtext, gp_rule_op_names[r->op], ttext,
                     lab.data && !lab.err ? lab.data : "{}") < 0)
            o->evidence[0] = '\0';
        gp_buf_reset(&lab);
        extra_labels(r, s->labels, s->labels_len, &lab);
        struct gp_rule_obs ro = {
            .rule = r,
            .obs = o,
            .labels_json = lab.err || !lab.data ? "" : lab.data,
            .extra = gp_labels_hash(s->labels, s->labels_len),
        };
        rc = emit(ctx, &ro);
        if (rc)
            gp_seterr(err, errlen, rc, "rule '%s': %s", r->name, gp_strerror(rc));
    }
    free(o);
    gp_buf_free(&lab);
    gp_promql_result_free(&res);
    return rc;
}
