/*
 * promrules.c - the loader of Prometheus rule files (promrules.h): the
 * YAML tree walked with libyaml's document API (each node knows its
 * line), the checks promtool applies, and the rule_files globs.
 */
#include "insight/promrules.h"

#include "insight/detect.h"
#include "insight/promtmpl.h"
#include "ingest/remote_write.h"
#include "lib/duration.h"
#include "lib/err.h"
#include "lib/yamldoc.h"

#include <errno.h>
#include <glob.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

static void rule_free(struct gp_promrule *r)
{
    free(r->name);
    free(r->expr);
    gp_promql_free(r->ast);
    for (size_t i = 0; i < r->nlabels; i++) {
        free(r->label_names[i]);
        free(r->label_values[i]);
    }
    for (size_t i = 0; i < r->nann; i++) {
        free(r->ann_names[i]);
        free(r->ann_values[i]);
    }
    free(r->label_names);
    free(r->label_values);
    free(r->ann_names);
    free(r->ann_values);
    memset(r, 0, sizeof *r);
}

static void group_free(struct gp_promrule_group *g)
{
    for (size_t i = 0; i < g->n; i++)
        rule_free(&g->rules[i]);
    free(g->rules);
    free(g->name);
    free(g->file);
    memset(g, 0, sizeof *g);
}

void gp_promrules_free(struct gp_promrules *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        group_free(&r->g[i]);
    free(r->g);
    r->g = NULL;
    r->n = 0;
}

int gp_promrules_has_alert(const struct gp_promrules *r, const char *name)
{
    for (size_t i = 0; r && i < r->n; i++)
        for (size_t k = 0; k < r->g[i].n; k++)
            if (r->g[i].rules[k].alert && !strcmp(r->g[i].rules[k].name, name))
                return 1;
    return 0;
}

/* ---- checks ---- */

/* Label names and values as remote write takes them (the same rules as
 * Prometheus's: [a-zA-Z_][a-zA-Z0-9_]*, UTF-8 values). */
static bool label_name_ok(const char *s) { return gp_rw_label_valid(s, strlen(s), "x", 1); }

static bool utf8_ok(const char *s) { return gp_rw_label_valid("x", 1, s, strlen(s)); }

/* A metric name: a label name that may also hold ':'. */
static bool metric_name_ok(const char *s)
{
    char *t = strdup(s);
    if (!t)
        return false;
    for (char *p = t; *p; p++)
        if (*p == ':')
            *p = '_';
    bool ok = label_name_ok(t);
    free(t);
    return ok;
}

/* ---- parsing ---- */

struct pctx {
    yaml_document_t *d;
    const char *file;
    char *err;
    size_t errlen;
    const char *group;   /* for rule errors */
    size_t rule_no;
    const char *rule_name;
};

static int perr(struct pctx *c, const yaml_node_t *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int perr(struct pctx *c, const yaml_node_t *at, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->group && c->rule_no)
        return gp_seterr(c->err, c->errlen, GP_ECONFIG, "%s:%u: group \"%s\", rule %zu, \"%s\": %s",
                         c->file, gp_yaml_line(at), c->group, c->rule_no,
                         c->rule_name ? c->rule_name : "", msg);
    return gp_seterr(c->err, c->errlen, GP_ECONFIG, "%s:%u: %s", c->file, gp_yaml_line(at), msg);
}

static int oom(struct pctx *c) { return gp_seterr(c->err, c->errlen, GP_ENOMEM, "out of memory"); }

/* A scalar's text, or an error naming the field. */
static int scalar(struct pctx *c, const yaml_node_t *v, const char *what, const char **out)
{
    *out = gp_yaml_scalar(v);
    if (!*out)
        return perr(c, v, "'%s' must be a single value", what);
    return GP_OK;
}

static int duration(struct pctx *c, const yaml_node_t *v, const char *what, int64_t *out)
{
    const char *s;
    int rc = scalar(c, v, what, &s);
    if (rc)
        return rc;
    char detail[128];
    if (gp_parse_duration_ms(s, out, detail, sizeof detail) || *out < 0)
        return perr(c, v, "'%s': not a valid duration string: \"%.64s\"", what, s);
    return GP_OK;
}

static int cmp_pair(const void *a, const void *b)
{
    return strcmp(((char *const *)a)[0], ((char *const *)b)[0]);
}

/* A mapping of strings (labels, annotations) into names/values, sorted. */
static int string_map(struct pctx *c, const yaml_node_t *m, const char *what, char ***names,
                      char ***values, size_t *n)
{
    if (m->type == YAML_SCALAR_NODE && !m->data.scalar.length)
        return GP_OK; /* `labels:` with nothing */
    if (m->type != YAML_MAPPING_NODE)
        return perr(c, m, "'%s' must be a mapping of names to strings", what);
    size_t cnt = (size_t)(m->data.mapping.pairs.top - m->data.mapping.pairs.start);
    if (!cnt)
        return GP_OK;
    char **pairs = calloc(cnt * 2, sizeof *pairs);
    if (!pairs)
        return oom(c);
    int rc = GP_OK;
    size_t k = 0;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; !rc && p < m->data.mapping.pairs.top; p++) {
        const yaml_node_t *kn = yaml_document_get_node(c->d, p->key);
        const yaml_node_t *vn = yaml_document_get_node(c->d, p->value);
        const char *key = gp_yaml_scalar(kn), *val = gp_yaml_scalar(vn);
        if (!key || !val) {
            rc = perr(c, kn ? kn : m, "'%s' must be a mapping of names to strings", what);
            break;
        }
        for (size_t i = 0; i < k && !rc; i++)
            if (!strcmp(pairs[2 * i], key))
                rc = perr(c, kn, "%s \"%s\" is given twice", what, key);
        if (rc)
            break;
        pairs[2 * k] = strdup(key);
        pairs[2 * k + 1] = strdup(val);
        k++;
        if (!pairs[2 * k - 2] || !pairs[2 * k - 1])
            rc = oom(c);
    }
    if (!rc) {
        qsort(pairs, k, 2 * sizeof *pairs, cmp_pair);
        *names = calloc(k, sizeof **names);
        *values = calloc(k, sizeof **values);
        if (!*names || !*values)
            rc = oom(c);
    }
    if (rc) {
        for (size_t i = 0; i < 2 * k; i++)
            free(pairs[i]);
        free(pairs);
        return rc;
    }
    for (size_t i = 0; i < k; i++) {
        (*names)[i] = pairs[2 * i];
        (*values)[i] = pairs[2 * i + 1];
    }
    *n = k;
    free(pairs);
    return GP_OK;
}

/* The values of a mapping's keys: slots[i] for names[i] (NULL when
 * absent); a key not in names, or given twice, is an error naming the
 * Go type Prometheus's decoder would name (type). */
static int fields(struct pctx *c, const yaml_node_t *n, const char *what, const char *type,
                  const char *const *names, const yaml_node_t **slots, size_t nn)
{
    if (n->type != YAML_MAPPING_NODE)
        return perr(c, n, "a %s must be a mapping", what);
    for (size_t i = 0; i < nn; i++)
        slots[i] = NULL;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        const yaml_node_t *k = yaml_document_get_node(c->d, p->key);
        const yaml_node_t *v = yaml_document_get_node(c->d, p->value);
        const char *key = gp_yaml_scalar(k);
        if (!key || !v)
            return perr(c, n, "a %s's keys must be plain names", what);
        size_t i = 0;
        while (i < nn && strcmp(key, names[i]))
            i++;
        if (i == nn)
            return perr(c, k, "field %.64s not found in type %s", key, type);
        if (slots[i])
            return perr(c, k, "field %s given twice", key);
        slots[i] = v;
    }
    return GP_OK;
}

static int parse_rule(struct pctx *c, const yaml_node_t *n, struct gp_promrule *r)
{
    r->line = gp_yaml_line(n);
    static const char *const names[] = {"record", "alert", "expr", "for", "keep_firing_for",
                                        "labels", "annotations"};
    const yaml_node_t *f[7];
    int rc = fields(c, n, "rule", "rulefmt.RuleNode", names, f, 7);
    if (rc)
        return rc;
    const yaml_node_t *record = f[0], *alert = f[1], *expr = f[2], *forn = f[3], *keep = f[4];
    const yaml_node_t *labels = f[5], *ann = f[6];
    const char *rec_s = NULL, *alert_s = NULL, *expr_s = NULL;
    if ((record && (rc = scalar(c, record, "record", &rec_s))) ||
        (alert && (rc = scalar(c, alert, "alert", &alert_s))) ||
        (expr && (rc = scalar(c, expr, "expr", &expr_s))))
        return rc;
    if (rec_s && !*rec_s)
        rec_s = NULL;
    if (alert_s && !*alert_s)
        alert_s = NULL;
    c->rule_name = rec_s ? rec_s : alert_s;
    if (rec_s && alert_s)
        return perr(c, record, "only one of 'record' and 'alert' must be set");
    if (!rec_s && !alert_s)
        return perr(c, n, "one of 'record' or 'alert' must be set");
    r->alert = alert_s != NULL;
    if (!expr_s || !*expr_s)
        return perr(c, expr ? expr : n, "field 'expr' must be set in rule");
    if ((forn && (rc = duration(c, forn, "for", &r->for_ms))) ||
        (keep && (rc = duration(c, keep, "keep_firing_for", &r->keep_firing_for_ms))))
        return rc;
    r->name = strdup(c->rule_name);
    r->expr = strdup(expr_s);
    if (!r->name || !r->expr)
        return oom(c);
    char detail[512];
    rc = gp_promql_parse(expr_s, strlen(expr_s), &r->ast, detail, sizeof detail);
    if (rc == GP_ENOMEM)
        return oom(c);
    if (rc)
        return perr(c, expr, "could not parse expression: %s", detail);
    if (r->ast->type != GP_PQ_T_VECTOR && r->ast->type != GP_PQ_T_SCALAR)
        return perr(c, expr, "invalid rule expression: it must give an instant vector or a scalar");
    if (!r->alert) {
        if (ann && !(ann->type == YAML_SCALAR_NODE && !ann->data.scalar.length))
            return perr(c, record, "invalid field 'annotations' in recording rule");
        if (r->for_ms)
            return perr(c, record, "invalid field 'for' in recording rule");
        if (r->keep_firing_for_ms)
            return perr(c, record, "invalid field 'keep_firing_for' in recording rule");
        if (!metric_name_ok(r->name))
            return perr(c, record, "invalid recording rule name: %s", r->name);
    } else {
        if (!label_name_ok(r->name))
            return perr(c, alert, "invalid alert name: %s", r->name);
        if (strlen(r->name) >= GP_ALERT_KIND_LEN)
            return perr(c, alert, "alert name longer than %d bytes", GP_ALERT_KIND_LEN - 1);
        for (int i = 0; i < GP_DET__COUNT; i++)
            if (!strcmp(gp_detectors[i].name, r->name))
                return perr(c, alert, "alert name \"%s\" is a built-in detector's", r->name);
    }
    if (labels && (rc = string_map(c, labels, "label", &r->label_names, &r->label_values, &r->nlabels)))
        return rc;
    if (ann && (rc = string_map(c, ann, "annotation", &r->ann_names, &r->ann_values, &r->nann)))
        return rc;
    for (size_t i = 0; i < r->nlabels; i++) {
        if (!label_name_ok(r->label_names[i]) || !strcmp(r->label_names[i], "__name__"))
            return perr(c, labels, "invalid label name: %s", r->label_names[i]);
        if (!utf8_ok(r->label_values[i]))
            return perr(c, labels, "invalid label value: %s", r->label_values[i]);
    }
    for (size_t i = 0; i < r->nann; i++)
        if (!label_name_ok(r->ann_names[i]))
            return perr(c, ann, "invalid annotation name: %s", r->ann_names[i]);
    /* templates: alerting rules only, as promtool */
    for (size_t i = 0; r->alert && i < r->nlabels + r->nann; i++) {
        bool lab = i < r->nlabels;
        const char *name = lab ? r->label_names[i] : r->ann_names[i - r->nlabels];
        const char *text = lab ? r->label_values[i] : r->ann_values[i - r->nlabels];
        if ((rc = gp_ptmpl_check(text, detail, sizeof detail)) == GP_ENOMEM)
            return oom(c);
        if (rc)
            return perr(c, lab ? labels : ann, "%s \"%s\": template: __alert_%s: %s",
                        lab ? "label" : "annotation", name, r->name, detail);
    }
    return GP_OK;
}

static int parse_group(struct pctx *c, const yaml_node_t *n, struct gp_promrule_group *g)
{
    g->line = gp_yaml_line(n);
    static const char *const names[] = {"name", "interval", "limit", "rules"};
    const yaml_node_t *f[4];
    int rc = fields(c, n, "group", "rulefmt.RuleGroup", names, f, 4);
    if (rc)
        return rc;
    const yaml_node_t *name = f[0], *interval = f[1], *limit = f[2], *rules = f[3];
    const char *name_s = "";
    if (name && (rc = scalar(c, name, "name", &name_s)))
        return rc;
    if (!*name_s)
        return perr(c, n, "Groupname must not be empty");
    if (!(g->name = strdup(name_s)) || !(g->file = strdup(c->file)))
        return oom(c);
    if (interval && (rc = duration(c, interval, "interval", &g->interval_ms)))
        return rc;
    if (interval && !g->interval_ms)
        return perr(c, interval, "'interval' must be more than 0");
    if (limit) {
        const char *s;
        if ((rc = scalar(c, limit, "limit", &s)))
            return rc;
        char *end;
        errno = 0;
        long long x = strtoll(s, &end, 10);
        if (end == s || *end || errno || x < 0)
            return perr(c, limit, "'limit' must be a whole number, 0 or more, not \"%.32s\"", s);
        g->limit = x;
    }
    if (!rules || (rules->type == YAML_SCALAR_NODE && !rules->data.scalar.length))
        return GP_OK;
    if (rules->type != YAML_SEQUENCE_NODE)
        return perr(c, rules, "'rules' must be a list");
    size_t cnt = (size_t)(rules->data.sequence.items.top - rules->data.sequence.items.start);
    if (cnt > GP_PROMRULES_MAX_RULES)
        return perr(c, rules, "more than %d rules", GP_PROMRULES_MAX_RULES);
    if (!cnt)
        return GP_OK;
    if (!(g->rules = calloc(cnt, sizeof *g->rules)))
        return oom(c);
    c->group = g->name;
    for (size_t i = 0; i < cnt; i++) {
        const yaml_node_t *it = yaml_document_get_node(c->d, rules->data.sequence.items.start[i]);
        c->rule_no = i + 1;
        c->rule_name = NULL;
        g->n++; /* owned from here: freed with the group */
        if (!it)
            return perr(c, rules, "a rule is empty");
        if ((rc = parse_rule(c, it, &g->rules[i])))
            return rc;
    }
    c->group = NULL;
    c->rule_no = 0;
    return GP_OK;
}

static size_t count_rules(const struct gp_promrules *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += r->g[i].n;
    return n;
}

int gp_promrules_parse(const char *yaml, size_t len, const char *file, struct gp_promrules *out,
                       char *err, size_t errlen)
{
    yaml_document_t d;
    const yaml_node_t *groups;
    char detail[256];
    int rc = gp_yaml_section(yaml, len, "groups", &d, &groups, detail, sizeof detail);
    if (rc)
        return gp_seterr(err, errlen, rc, "%s: %s", file, detail);
    struct pctx c = {&d, file, err, errlen, NULL, 0, NULL};
    const yaml_node_t *root = yaml_document_get_root_node(&d);
    struct gp_promrule_group *g = NULL;
    size_t ng = 0;
    if (root && !(root->type == YAML_SCALAR_NODE && !root->data.scalar.length)) {
        if (root->type != YAML_MAPPING_NODE) {
            rc = perr(&c, root, "a rule file must be a mapping with 'groups'");
            goto done;
        }
        for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
            const char *key = gp_yaml_scalar(yaml_document_get_node(&d, p->key));
            if (!key || strcmp(key, "groups")) {
                rc = perr(&c, yaml_document_get_node(&d, p->key),
                          "field %.64s not found in type rulefmt.RuleGroups", key ? key : "?");
                goto done;
            }
        }
    }
    if (!groups || (groups->type == YAML_SCALAR_NODE && !groups->data.scalar.length))
        goto done;
    if (groups->type != YAML_SEQUENCE_NODE) {
        rc = perr(&c, groups, "'groups' must be a list");
        goto done;
    }
    size_t cnt = (size_t)(groups->data.sequence.items.top - groups->data.sequence.items.start);
    if (!cnt)
        goto done;
    if (!(g = calloc(cnt, sizeof *g))) {
        rc = oom(&c);
        goto done;
    }
    size_t total = count_rules(out);
    for (size_t i = 0; i < cnt && !rc; i++) {
        const yaml_node_t *it = yaml_document_get_node(&d, groups->data.sequence.items.start[i]);
        ng++;
        if (!it) {
            rc = perr(&c, groups, "a group is empty");
            break;
        }
        rc = parse_group(&c, it, &g[i]);
        for (size_t k = 0; !rc && k < i; k++)
            if (!strcmp(g[k].name, g[i].name))
                rc = perr(&c, it, "groupname: \"%s\" is repeated in the same file", g[i].name);
        total += g[i].n;
        if (!rc && total > GP_PROMRULES_MAX_RULES)
            rc = perr(&c, it, "more than %d rules in all rule files", GP_PROMRULES_MAX_RULES);
    }
    if (!rc) {
        struct gp_promrule_group *ng2 = realloc(out->g, (out->n + cnt) * sizeof *ng2);
        if (!ng2) {
            rc = oom(&c);
        } else {
            memcpy(ng2 + out->n, g, cnt * sizeof *g);
            out->g = ng2;
            out->n += cnt;
            ng = 0; /* moved */
        }
    }
done:
    for (size_t i = 0; i < ng; i++)
        group_free(&g[i]);
    free(g);
    yaml_document_delete(&d);
    return rc;
}

static int load_file(const char *path, struct gp_promrules *out, char *err, size_t errlen)
{
    char *b;
    size_t n;
    char detail[512];
    int rc = gp_yaml_read_file(path, &b, &n, detail, sizeof detail);
    if (rc)
        return gp_seterr(err, errlen, rc, "rule file %s", detail + (strncmp(detail, "config ", 7) ? 0 : 7));
    rc = gp_promrules_parse(b, n, path, out, err, errlen);
    free(b);
    return rc;
}

int gp_promrules_load(const char *const *patterns, size_t n, const char *base_dir,
                      struct gp_promrules *out, char *err, size_t errlen)
{
    size_t files = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        const char *p = patterns[i];
        if (p[0] != '/' && base_dir && base_dir[0])
            snprintf(path, sizeof path, "%s/%s", base_dir, p);
        else
            snprintf(path, sizeof path, "%s", p);
        if (!strpbrk(p, "*?[")) {
            if (++files > GP_PROMRULES_MAX_FILES)
                return gp_seterr(err, errlen, GP_ECONFIG, "rule_files: more than %d files",
                                 GP_PROMRULES_MAX_FILES);
            int rc = load_file(path, out, err, errlen);
            if (rc)
                return rc;
            continue;
        }
        glob_t gl;
        int grc = glob(path, 0, NULL, &gl);
        if (grc == GLOB_NOMATCH)
            continue;
        if (grc) {
            globfree(&gl);
            return gp_seterr(err, errlen, grc == GLOB_NOSPACE ? GP_ENOMEM : GP_ECONFIG,
                             "rule_files: cannot expand '%s'", p);
        }
        int rc = GP_OK;
        for (size_t k = 0; k < gl.gl_pathc && !rc; k++) {
            if (++files > GP_PROMRULES_MAX_FILES)
                rc = gp_seterr(err, errlen, GP_ECONFIG, "rule_files: more than %d files",
                               GP_PROMRULES_MAX_FILES);
            else
                rc = load_file(gl.gl_pathv[k], out, err, errlen);
        }
        globfree(&gl);
        if (rc)
            return rc;
    }
    return GP_OK;
}
