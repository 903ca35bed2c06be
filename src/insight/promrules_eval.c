/*
 * promrules_eval.c - evaluation of Prometheus rule groups (promrules.h):
 * the rounds, recording rules written back through the storage's append
 * path, the alerting rules' state (Prometheus 2.42's rules/alerting.go:
 * pending, firing, keep_firing_for, limit), ALERTS and ALERTS_FOR_STATE,
 * stale markers for series a rule stops writing, the observations handed
 * to the alert engine, and /api/v1/rules.
 *
 * Label sets are canonical blobs (store/labels.h) built from the
 * result's labels plus the rule's: one sort and one encode per sample.
 * A rule's output of a round is kept (its blobs) so the next round can
 * mark what disappeared stale, as Prometheus's seriesInPreviousEval.
 * One mutex guards the state: the engine's thread evaluates, the API's
 * threads read.
 */
#include "insight/promrules.h"

#include "insight/promtmpl.h"
#include "insight/rules.h"
#include "lib/bits.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "lib/json.h"
#include "lib/metrics.h"
#include "store/labels.h"
#include "store/matcher.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Prometheus keeps a resolved alert this long (for Alertmanager). */
#define RESOLVED_RETENTION_MS (15 * 60 * 1000)
/* Prometheus's defaults of --rules.alert.for-grace-period and
 * --rules.alert.for-outage-tolerance: how a restart restores `for`. */
#define FOR_GRACE_MS (10 * 60 * 1000)
#define OUTAGE_TOLERANCE_MS (60 * 60 * 1000)

enum astate { A_INACTIVE, A_PENDING, A_FIRING };
static const char *const astate_names[] = {"inactive", "pending", "firing"};

struct alert {
    uint64_t h;
    uint8_t *labels;           /* alertname and the rest, no __name__ */
    size_t len;
    char **ann;                /* expanded, parallel to the rule's ann_names */
    double value;
    int64_t active_at, fired_at, resolved_at, keep_since; /* 0: not set */
    enum astate state;
    bool seen;                 /* returned this round */
};

/* One output series of a round: a blob in the arena and its value. */
struct outs {
    struct gp_buf arena;
    struct out {
        uint64_t h;
        size_t off, len;
        double v;
    } *e;
    size_t n, cap;
};

struct rstate {
    const struct gp_promrule *r;
    struct alert *a;
    size_t na, capa;
    struct outs prev;          /* written last round */
    int health;                /* 0 unknown, 1 ok, 2 err */
    char last_error[512];
    int64_t last_ms;
    double eval_s;
    bool restored;             /* alerting: past the first round (ALERTS written from then) */
};

struct gstate {
    const struct gp_promrule_group *g;
    struct rstate *rs;
    int64_t interval_ms, last_ms;
    double eval_s;
    uint64_t evals, failures;  /* rule evaluations, for /metrics */
};

struct gp_promrules_run {
    struct gp_promrules rules;
    struct gp_promrules_options o;
    struct gstate *gs;
    size_t ng;
    pthread_mutex_t mu;
};

/* ---- label sets ---- */

struct lset {
    struct gp_label *l;
    size_t n, cap;
};

static int lset_put(struct lset *s, const char *name, size_t nl, const char *value, size_t vl)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->l[i].name.len == nl && !memcmp(s->l[i].name.ptr, name, nl)) {
            if (!vl) { /* an empty value removes the label, as Prometheus's builder */
                s->l[i] = s->l[--s->n];
                return GP_OK;
            }
            s->l[i].value = (struct gp_str){value, vl};
            return GP_OK;
        }
    if (!vl)
        return GP_OK;
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 32;
        struct gp_label *n = realloc(s->l, nc * sizeof *n);
        if (!n)
            return GP_ENOMEM;
        s->l = n;
        s->cap = nc;
    }
    s->l[s->n++] = (struct gp_label){{name, nl}, {value, vl}};
    return GP_OK;
}

static int cmp_label(const void *a, const void *b)
{
    const struct gp_label *x = a, *y = b;
    size_t n = x->name.len < y->name.len ? x->name.len : y->name.len;
    int c = memcmp(x->name.ptr, y->name.ptr, n);
    return c ? c : (x->name.len > y->name.len) - (x->name.len < y->name.len);
}

/* Starts s from a blob (its __name__ left out when drop_name). */
static int lset_from(struct lset *s, const uint8_t *blob, size_t len, bool drop_name)
{
    s->n = 0;
    struct gp_labels_iter it;
    gp_labels_iter_init(&it, blob, len);
    struct gp_str name, value;
    while (blob && gp_labels_next(&it, &name, &value) == 1) {
        if (drop_name && name.len == 8 && !memcmp(name.ptr, "__name__", 8))
            continue;
        int rc = lset_put(s, name.ptr, name.len, value.ptr, value.len);
        if (rc)
            return rc;
    }
    return GP_OK;
}

/* Appends s's canonical blob to out; its offset and length. */
static int lset_encode(struct lset *s, struct gp_buf *out, size_t *off, size_t *len)
{
    if (s->n)
        qsort(s->l, s->n, sizeof *s->l, cmp_label);
    *off = out->len;
    int rc = gp_labels_encode(s->l, s->n, out);
    if (rc || out->err)
        return rc ? rc : GP_ENOMEM;
    *len = out->len - *off;
    return GP_OK;
}

/* ---- outputs ---- */

static void outs_free(struct outs *o)
{
    gp_buf_free(&o->arena);
    free(o->e);
    memset(o, 0, sizeof *o);
}

static int outs_add(struct outs *o, size_t off, size_t len, double v)
{
    if (o->n == o->cap) {
        size_t nc = o->cap ? o->cap * 2 : 64;
        struct out *n = realloc(o->e, nc * sizeof *n);
        if (!n)
            return GP_ENOMEM;
        o->e = n;
        o->cap = nc;
    }
    o->e[o->n++] = (struct out){gp_labels_hash((const uint8_t *)o->arena.data + off, len), off, len, v};
    return GP_OK;
}

static int cmp_out(const void *a, const void *b)
{
    const struct out *x = a, *y = b;
    return (x->h > y->h) - (x->h < y->h);
}

static bool out_eq(const struct outs *a, const struct out *x, const struct outs *b, const struct out *y)
{
    return x->h == y->h && x->len == y->len &&
           !memcmp(a->arena.data + x->off, b->arena.data + y->off, x->len);
}

/* Sorts o by hash; true when two entries hold the same labels. */
static bool outs_sort_dup(struct outs *o)
{
    if (o->n)
        qsort(o->e, o->n, sizeof *o->e, cmp_out);
    for (size_t i = 1; i < o->n; i++)
        for (size_t k = i; k > 0 && o->e[k - 1].h == o->e[i].h; k--)
            if (out_eq(o, &o->e[k - 1], o, &o->e[i]))
                return true;
    return false;
}

static bool outs_has(const struct outs *o, const struct outs *from, const struct out *x)
{
    size_t lo = 0, hi = o->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (o->e[mid].h < x->h)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < o->n && o->e[lo].h == x->h; lo++)
        if (out_eq(o, &o->e[lo], from, x))
            return true;
    return false;
}

/* Appends cur's samples at ts and stale markers for prev's series not
 * in cur (both sorted by hash). GP_OK or the storage's error. */
static int write_outs(struct gp_storage *st, const struct outs *cur, const struct outs *prev,
                      int64_t ts, char *err, size_t errlen)
{
    size_t n = cur->n;
    for (size_t i = 0; i < prev->n; i++)
        n += !outs_has(cur, prev, &prev->e[i]);
    if (!n)
        return GP_OK;
    struct gp_series *se = calloc(n, sizeof *se);
    struct gp_sample *sm = calloc(n, sizeof *sm);
    struct lset ls = {0};
    struct gp_label *lab = NULL;
    size_t nlab = 0, caplab = 0;
    int rc = se && sm ? GP_OK : GP_ENOMEM;
    size_t k = 0;
    /* first the labels of every series into one array, then point at it */
    size_t *first = calloc(n + 1, sizeof *first);
    if (!first)
        rc = GP_ENOMEM;
    for (size_t pass = 0; !rc && pass < 2; pass++) {
        const struct outs *o = pass ? prev : cur;
        for (size_t i = 0; !rc && i < o->n; i++) {
            if (pass && outs_has(cur, prev, &o->e[i]))
                continue;
            if ((rc = lset_from(&ls, (const uint8_t *)o->arena.data + o->e[i].off, o->e[i].len, false)))
                break;
            if (nlab + ls.n > caplab) {
                size_t nc = (nlab + ls.n) * 2;
                struct gp_label *nl = realloc(lab, nc * sizeof *nl);
                if (!nl) {
                    rc = GP_ENOMEM;
                    break;
                }
                lab = nl;
                caplab = nc;
            }
            memcpy(lab + nlab, ls.l, ls.n * sizeof *ls.l);
            first[k] = nlab;
            nlab += ls.n;
            sm[k] = (struct gp_sample){pass ? gp_bits_f64(GP_STALE_NAN_BITS) : o->e[i].v, ts};
            k++;
        }
    }
    if (!rc) {
        first[k] = nlab;
        for (size_t i = 0; i < k; i++)
            se[i] = (struct gp_series){lab + first[i], first[i + 1] - first[i], &sm[i], 1};
        struct gp_batch rq = {se, k, nlab, k, NULL};
        struct gp_append_result res;
        memset(&res, 0, sizeof res);
        char detail[256];
        rc = gp_storage_append(st, &rq, &res, detail, sizeof detail);
        if (rc)
            gp_seterr(err, errlen, rc, "writing the rule's series: %s", detail);
        else if (res.series_limit)
            rc = gp_seterr(err, errlen, GP_ERANGE, "writing the rule's series: %llu over max_series",
                           (unsigned long long)res.series_limit);
    } else {
        gp_seterr(err, errlen, rc, "out of memory");
    }
    free(first);
    free(lab);
    free(ls.l);
    free(se);
    free(sm);
    return rc;
}

/* ---- setup ---- */

static void alert_free(struct alert *a, size_t nann)
{
    free(a->labels);
    for (size_t i = 0; a->ann && i < nann; i++)
        free(a->ann[i]);
    free(a->ann);
}

void gp_promrules_run_free(struct gp_promrules_run *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->ng; i++) {
        for (size_t k = 0; r->gs[i].rs && k < r->gs[i].g->n; k++) {
            struct rstate *rs = &r->gs[i].rs[k];
            for (size_t j = 0; j < rs->na; j++)
                alert_free(&rs->a[j], rs->r->nann);
            free(rs->a);
            outs_free(&rs->prev);
        }
        free(r->gs[i].rs);
    }
    free(r->gs);
    gp_promrules_free(&r->rules);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

int gp_promrules_run_new(struct gp_promrules_run **out, struct gp_promrules *rules,
                         const struct gp_promrules_options *o, char *err, size_t errlen)
{
    *out = NULL;
    struct gp_promrules_run *r = calloc(1, sizeof *r);
    if (!r)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    pthread_mutex_init(&r->mu, NULL);
    r->o = *o;
    if (rules) {
        r->rules = *rules;
        memset(rules, 0, sizeof *rules);
    }
    r->gs = calloc(r->rules.n ? r->rules.n : 1, sizeof *r->gs);
    if (!r->gs) {
        gp_promrules_run_free(r);
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    }
    r->ng = r->rules.n;
    for (size_t i = 0; i < r->ng; i++) {
        struct gstate *g = &r->gs[i];
        g->g = &r->rules.g[i];
        g->interval_ms = g->g->interval_ms ? g->g->interval_ms
                         : o->default_interval_ms ? o->default_interval_ms : 60000;
        g->rs = calloc(g->g->n ? g->g->n : 1, sizeof *g->rs);
        if (!g->rs) {
            gp_promrules_run_free(r);
            return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        }
        for (size_t k = 0; k < g->g->n; k++) {
            g->rs[k].r = &g->g->rules[k];
            gp_buf_init(&g->rs[k].prev.arena, 0);
        }
    }
    *out = r;
    return GP_OK;
}

/* ---- reload ---- */

static const char *ann_of(const struct gp_promrule *r, const struct alert *a, const char *name);

/* Prometheus 2.42's key of a rule within its group (nameAndLabels): kind,
 * name and labels; the expression may change and keep the state. */
static bool same_rule(const struct gp_promrule *a, const struct gp_promrule *b)
{
    if (a->alert != b->alert || strcmp(a->name, b->name) || a->nlabels != b->nlabels)
        return false;
    for (size_t i = 0; i < a->nlabels; i++)
        if (strcmp(a->label_names[i], b->label_names[i]) || strcmp(a->label_values[i], b->label_values[i]))
            return false;
    return true;
}

/* The expanded annotations of an alert moved to a rule whose annotation
 * names may differ: kept by name, "" for a new one until the next round
 * expands it. GP_OK or GP_ENOMEM (the alert is then left as it was). */
static int remap_ann(struct alert *a, const struct gp_promrule *from, const struct gp_promrule *to)
{
    char **ann = calloc(to->nann ? to->nann : 1, sizeof *ann);
    if (!ann)
        return GP_ENOMEM;
    for (size_t k = 0; k < to->nann; k++) {
        const char *old = ann_of(from, a, to->ann_names[k]);
        if (!(ann[k] = strdup(old ? old : ""))) {
            for (size_t j = 0; j < k; j++)
                free(ann[j]);
            free(ann);
            return GP_ENOMEM;
        }
    }
    for (size_t k = 0; a->ann && k < from->nann; k++)
        free(a->ann[k]);
    free(a->ann);
    a->ann = ann;
    return GP_OK;
}

/* Moves an old rule's state into its successor (new holds no state yet). */
static int carry_rule(struct rstate *to, struct rstate *from)
{
    for (size_t j = 0; j < from->na; j++)
        if (remap_ann(&from->a[j], from->r, to->r))
            return GP_ENOMEM;
    const struct gp_promrule *r = to->r;
    struct outs fresh = to->prev;
    *to = *from;
    to->r = r;
    from->a = NULL;
    from->na = from->capa = 0;
    from->prev = fresh; /* an empty arena, freed with the old run */
    return GP_OK;
}

int gp_promrules_run_reload(struct gp_promrules_run *r, struct gp_promrules *rules, char *err,
                            size_t errlen)
{
    struct gp_promrules_run *n;
    int rc = gp_promrules_run_new(&n, rules, &r->o, err, errlen);
    if (rc)
        return rc;
    pthread_mutex_lock(&r->mu);
    /* Groups match by file and name, rules within them by kind, name and
     * labels, in order, as 2.42's Group.CopyState does. */
    for (size_t i = 0; i < n->ng && !rc; i++) {
        struct gstate *g = &n->gs[i];
        struct gstate *old = NULL;
        for (size_t j = 0; j < r->ng && !old; j++)
            if (!strcmp(r->gs[j].g->name, g->g->name) && !strcmp(r->gs[j].g->file, g->g->file))
                old = &r->gs[j];
        if (!old)
            continue;
        g->last_ms = old->last_ms;
        g->eval_s = old->eval_s;
        g->evals = old->evals;
        g->failures = old->failures;
        bool *taken = calloc(old->g->n ? old->g->n : 1, sizeof *taken);
        if (!taken) {
            rc = GP_ENOMEM;
            break;
        }
        for (size_t k = 0; k < g->g->n && !rc; k++)
            for (size_t j = 0; j < old->g->n; j++)
                if (!taken[j] && same_rule(g->rs[k].r, old->rs[j].r)) {
                    taken[j] = true;
                    rc = carry_rule(&g->rs[k], &old->rs[j]);
                    break;
                }
        free(taken);
    }
    /* What a rule that is gone wrote last ends now, as 2.42's staleSeries. */
    struct outs none = {0};
    gp_buf_init(&none.arena, 0);
    int64_t now = gp_wall_ms();
    char detail[256];
    for (size_t j = 0; j < r->ng && !rc; j++)
        for (size_t k = 0; k < r->gs[j].g->n; k++)
            if (r->gs[j].rs[k].prev.n &&
                write_outs(r->o.store, &none, &r->gs[j].rs[k].prev, now, detail, sizeof detail))
                gp_log(GP_LOG_WARN, "promrules", "stale markers of a removed rule not written",
                       "rule=\"%s\" error=\"%s\"", r->gs[j].rs[k].r->name, detail);
    outs_free(&none);
    if (rc) {
        pthread_mutex_unlock(&r->mu);
        gp_promrules_run_free(n);
        return gp_seterr(err, errlen, rc, "out of memory");
    }
    /* swap: r keeps its address (the engine and the API hold it) */
    struct gp_promrules rs = r->rules;
    struct gstate *gs = r->gs;
    size_t ng = r->ng;
    r->rules = n->rules;
    r->gs = n->gs;
    r->ng = n->ng;
    n->rules = rs;
    n->gs = gs;
    n->ng = ng;
    pthread_mutex_unlock(&r->mu);
    gp_promrules_run_free(n);
    return GP_OK;
}

size_t gp_promrules_count(const struct gp_promrules_run *r)
{
    size_t n = 0;
    for (size_t i = 0; r && i < r->ng; i++)
        n += r->gs[i].g->n;
    return n;
}

/* ---- one rule ---- */

/* The samples of an evaluation: a vector's, or a scalar as one sample
 * without labels. GP_OK or GP_EUSAGE. */
static int samples_of(const struct gp_promql_result *res, struct gp_promql_series *one, const struct gp_promql_series **s,
                      size_t *n, char *err, size_t errlen)
{
    if (res->type == GP_PROMQL_VECTOR) {
        *s = res->series;
        *n = res->n;
        return GP_OK;
    }
    if (res->type == GP_PROMQL_SCALAR) {
        memset(one, 0, sizeof *one);
        one->v = (double *)&res->scalar;
        one->t = (int64_t *)&res->t;
        one->n = 1;
        *s = one;
        *n = 1;
        return GP_OK;
    }
    return gp_seterr(err, errlen, GP_EUSAGE, "rule result is not a vector or scalar");
}

static int eval_recording(struct gp_promrules_run *run, struct gstate *g, struct rstate *rs,
                          const struct gp_promql_series *s, size_t n, int64_t ts, char *err,
                          size_t errlen)
{
    const struct gp_promrule *r = rs->r;
    int rc = GP_OK;
    struct outs cur = {0};
    gp_buf_init(&cur.arena, 0);
    struct lset ls = {0};
    for (size_t i = 0; !rc && i < n; i++) {
        if (s[i].n < 1)
            continue;
        rc = lset_from(&ls, s[i].labels, s[i].labels_len, true);
        if (!rc)
            rc = lset_put(&ls, "__name__", 8, r->name, strlen(r->name));
        for (size_t k = 0; !rc && k < r->nlabels; k++)
            rc = lset_put(&ls, r->label_names[k], strlen(r->label_names[k]), r->label_values[k],
                          strlen(r->label_values[k]));
        size_t off, len;
        if (!rc && !(rc = lset_encode(&ls, &cur.arena, &off, &len)))
            rc = outs_add(&cur, off, len, s[i].v[0]);
    }
    free(ls.l);
    if (rc) {
        outs_free(&cur);
        return gp_seterr(err, errlen, rc, "out of memory");
    }
    if (outs_sort_dup(&cur)) {
        outs_free(&cur);
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "vector contains metrics with the same labelset after applying rule labels");
    }
    if (g->g->limit > 0 && cur.n > (size_t)g->g->limit) { /* after the duplicates, as 2.42 */
        size_t got = cur.n;
        outs_free(&cur);
        return gp_seterr(err, errlen, GP_ERANGE, "exceeded limit of %lld with %zu series",
                         (long long)g->g->limit, got);
    }
    rc = write_outs(run->o.store, &cur, &rs->prev, ts, err, errlen);
    outs_free(&rs->prev);
    rs->prev = cur; /* what was tried: a failed write is not retried as stale */
    return rc;
}

/* Expands a template; a failure reads as Prometheus writes it. */
static char *expand(const char *tmpl, const struct gp_ptmpl_data *d, const char *alert)
{
    struct gp_buf b;
    gp_buf_init(&b, 64 * 1024);
    char detail[256];
    if (gp_ptmpl_expand(tmpl, d, &b, detail, sizeof detail)) {
        gp_buf_reset(&b);
        gp_buf_printf(&b, "<error expanding template: template: __alert_%s: %s>", alert, detail);
    }
    gp_buf_putc(&b, '\0');
    if (b.err) {
        gp_buf_free(&b);
        return strdup("");
    }
    size_t len;
    return gp_buf_steal(&b, &len);
}

static int cmp_alert(const void *a, const void *b)
{
    const struct alert *x = a, *y = b;
    return (x->h > y->h) - (x->h < y->h);
}

/* The alert with these labels among the first n of rs->a (sorted by hash
 * at the end of each round), or NULL. */
static struct alert *find_alert(struct rstate *rs, size_t n, uint64_t h, const uint8_t *blob, size_t len)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (rs->a[mid].h < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < n && rs->a[lo].h == h; lo++)
        if (rs->a[lo].len == len && !memcmp(rs->a[lo].labels, blob, len))
            return &rs->a[lo];
    return NULL;
}

/* Whether two entries of o hold the same labels (o's order kept). */
static int has_dup(const struct outs *o, bool *dup)
{
    *dup = false;
    if (o->n < 2)
        return GP_OK;
    struct outs copy = *o; /* shares the arena: not freed here */
    if (!(copy.e = malloc(o->n * sizeof *copy.e)))
        return GP_ENOMEM;
    memcpy(copy.e, o->e, o->n * sizeof *copy.e);
    *dup = outs_sort_dup(&copy);
    free(copy.e);
    return GP_OK;
}

static int eval_alerting(struct gp_promrules_run *run, struct gstate *g, struct rstate *rs,
                          const struct gp_promql_series *s, size_t n, int64_t ts, char *err,
                          size_t errlen)
{
    const struct gp_promrule *r = rs->r;
    int rc = GP_OK;
    struct outs cur = {0};
    gp_buf_init(&cur.arena, 0);
    struct lset ls = {0};
    char **lv = calloc(r->nlabels + 1, sizeof *lv);
    char ***anns = calloc(n + 1, sizeof *anns);
    if (!lv || !anns)
        rc = GP_ENOMEM;
    for (size_t i = 0; !rc && i < n; i++) {
        if (s[i].n < 1)
            continue;
        struct gp_ptmpl_data d = {s[i].labels, s[i].labels_len, s[i].v[0]};
        rc = lset_from(&ls, s[i].labels, s[i].labels_len, true);
        for (size_t k = 0; !rc && k < r->nlabels; k++) {
            free(lv[k]);
            if (!(lv[k] = expand(r->label_values[k], &d, r->name)))
                rc = GP_ENOMEM;
            else
                rc = lset_put(&ls, r->label_names[k], strlen(r->label_names[k]), lv[k], strlen(lv[k]));
        }
        if (!rc)
            rc = lset_put(&ls, "alertname", 9, r->name, strlen(r->name));
        size_t off, len;
        if (!rc && !(rc = lset_encode(&ls, &cur.arena, &off, &len)))
            rc = outs_add(&cur, off, len, s[i].v[0]);
        if (!rc && r->nann && !(anns[cur.n - 1] = calloc(r->nann, sizeof **anns)))
            rc = GP_ENOMEM;
        for (size_t k = 0; !rc && k < r->nann; k++)
            if (!(anns[cur.n - 1][k] = expand(r->ann_values[k], &d, r->name)))
                rc = GP_ENOMEM;
    }
    for (size_t k = 0; lv && k < r->nlabels; k++)
        free(lv[k]);
    free(lv);
    free(ls.l);
    memset(&ls, 0, sizeof ls); /* used again for ALERTS below */
    /* duplicates, on a copy: cur's order is the annotations' */
    bool dup = false;
    if (!rc && !(rc = has_dup(&cur, &dup)) && dup)
        rc = gp_seterr(err, errlen, GP_EUSAGE,
                       "vector contains metrics with the same labelset after applying alert labels");
    for (size_t i = 0; i < rs->na; i++)
        rs->a[i].seen = false;
    size_t known = rs->na; /* sorted; new alerts go after them */
    for (size_t i = 0; !rc && i < cur.n; i++) {
        const uint8_t *blob = (const uint8_t *)cur.arena.data + cur.e[i].off;
        struct alert *a = find_alert(rs, known, cur.e[i].h, blob, cur.e[i].len);
        if (a && a->state != A_INACTIVE) {
            a->value = cur.e[i].v;
        } else {
            if (!a) {
                if (rs->na == rs->capa) {
                    size_t nc = rs->capa ? rs->capa * 2 : 16;
                    struct alert *na = realloc(rs->a, nc * sizeof *na);
                    if (!na) {
                        rc = GP_ENOMEM;
                        break;
                    }
                    rs->a = na;
                    rs->capa = nc;
                }
                a = &rs->a[rs->na];
                memset(a, 0, sizeof *a);
                if (!(a->labels = malloc(cur.e[i].len))) {
                    rc = GP_ENOMEM;
                    break;
                }
                rs->na++;
                memcpy(a->labels, blob, cur.e[i].len);
                a->len = cur.e[i].len;
                a->h = cur.e[i].h;
            }
            a->state = A_PENDING;
            a->active_at = ts;
            a->fired_at = a->resolved_at = a->keep_since = 0;
            a->value = cur.e[i].v;
        }
        a->seen = true;
        for (size_t k = 0; a->ann && k < r->nann; k++)
            free(a->ann[k]);
        free(a->ann);
        a->ann = anns[i];
        anns[i] = NULL;
    }
    for (size_t i = 0; anns && i < n; i++) {
        for (size_t k = 0; anns[i] && k < r->nann; k++)
            free(anns[i][k]);
        free(anns[i]);
    }
    free(anns);
    outs_free(&cur);
    if (rc)
        return err[0] && rc != GP_ENOMEM ? rc : gp_seterr(err, errlen, rc, "out of memory");
    /* the alerts not returned this round, and pending -> firing */
    size_t active = 0;
    for (size_t i = 0; i < rs->na;) {
        struct alert *a = &rs->a[i];
        if (!a->seen) {
            bool keep = false;
            if (a->state == A_FIRING && r->keep_firing_for_ms > 0) {
                if (!a->keep_since)
                    a->keep_since = ts;
                keep = ts - a->keep_since < r->keep_firing_for_ms;
            }
            bool drop = a->state == A_PENDING ||
                        (a->resolved_at && ts - a->resolved_at > RESOLVED_RETENTION_MS);
            if (a->state != A_INACTIVE && !keep) {
                a->state = A_INACTIVE;
                a->resolved_at = ts;
            }
            if (drop) {
                alert_free(a, r->nann);
                rs->a[i] = rs->a[--rs->na];
                continue;
            }
            if (!keep) {
                i++;
                continue;
            }
        } else {
            a->keep_since = 0;
        }
        active++;
        if (a->state == A_PENDING && ts - a->active_at >= r->for_ms) {
            a->state = A_FIRING;
            a->fired_at = ts;
        }
        i++;
    }
    if (rs->na > 1)
        qsort(rs->a, rs->na, sizeof *rs->a, cmp_alert);
    if (g->g->limit > 0 && active > (size_t)g->g->limit) {
        for (size_t i = 0; i < rs->na; i++)
            alert_free(&rs->a[i], r->nann);
        rs->na = 0;
        return gp_seterr(err, errlen, GP_ERANGE, "exceeded limit of %lld with %zu alerts",
                         (long long)g->g->limit, active);
    }
    /* ALERTS and ALERTS_FOR_STATE of the pending and firing alerts; none
     * in the first round, as Prometheus (its `for` state is restored
     * after it, restore_for_state) */
    struct outs w = {0};
    gp_buf_init(&w.arena, 0);
    for (size_t i = 0; !rc && rs->restored && i < rs->na; i++) {
        const struct alert *a = &rs->a[i];
        if (a->state == A_INACTIVE)
            continue;
        for (int k = 0; !rc && k < 2; k++) {
            rc = lset_from(&ls, a->labels, a->len, false);
            if (!rc)
                rc = lset_put(&ls, "__name__", 8, k ? "ALERTS_FOR_STATE" : "ALERTS", k ? 16 : 6);
            if (!rc && !k)
                rc = lset_put(&ls, "alertstate", 10, astate_names[a->state],
                              strlen(astate_names[a->state]));
            size_t off, len;
            if (!rc && !(rc = lset_encode(&ls, &w.arena, &off, &len)))
                rc = outs_add(&w, off, len, k ? (double)(a->active_at / 1000) : 1);
        }
    }
    free(ls.l);
    if (rc) {
        outs_free(&w);
        return gp_seterr(err, errlen, rc, "out of memory");
    }
    outs_sort_dup(&w);
    rc = write_outs(run->o.store, &w, &rs->prev, ts, err, errlen);
    outs_free(&rs->prev);
    rs->prev = w;
    return rc;
}

/*
 * Prometheus's RestoreForState after a rule's first round at ts: an
 * alert whose `for` is at least the grace period takes its start back
 * from the ALERTS_FOR_STATE series it wrote before a restart (newest
 * sample within the outage tolerance): kept when it had fired, moved to
 * fire a grace period from now at the soonest, else moved later by the
 * time the server was down.
 */
static void restore_for_state(struct gp_promrules_run *run, struct rstate *rs, int64_t ts)
{
    const struct gp_promrule *r = rs->r;
    if (r->for_ms < FOR_GRACE_MS || !rs->na)
        return;
    struct gp_matcher m[2];
    char err[128];
    if (gp_matcher_init(&m[0], GP_MATCH_EQ, "__name__", "ALERTS_FOR_STATE", err, sizeof err))
        return;
    if (gp_matcher_init(&m[1], GP_MATCH_EQ, "alertname", r->name, err, sizeof err)) {
        gp_matcher_free(&m[0]);
        return;
    }
    struct gp_store_selection sel;
    int rc = gp_storage_select(run->o.store, m, 2, ts - OUTAGE_TOLERANCE_MS, ts, &sel);
    gp_matcher_free(&m[0]);
    gp_matcher_free(&m[1]);
    if (rc)
        return; /* nothing restored: they wait their whole `for`, as after a failed read there */
    struct gp_buf want;
    gp_buf_init(&want, 0);
    struct lset ls = {0};
    struct gp_samples smp = {0};
    for (size_t i = 0; i < rs->na; i++) {
        struct alert *a = &rs->a[i];
        size_t off, len;
        gp_buf_reset(&want);
        if (a->state == A_INACTIVE || lset_from(&ls, a->labels, a->len, false) ||
            lset_put(&ls, "__name__", 8, "ALERTS_FOR_STATE", 16) || lset_encode(&ls, &want, &off, &len))
            continue;
        for (size_t k = 0; k < sel.n; k++) {
            if (sel.series[k].labels_len != len || memcmp(sel.series[k].labels, want.data, len))
                continue;
            smp.n = 0;
            if (gp_storage_read(run->o.store, sel.series[k].id, ts - OUTAGE_TOLERANCE_MS, ts, &smp))
                break;
            size_t j = smp.n;
            while (j > 0 && isnan(smp.v[j - 1]))
                j--;
            if (!j)
                break;
            int64_t down = smp.t[j - 1] / 1000 * 1000, at = (int64_t)smp.v[j - 1] * 1000;
            int64_t remaining = r->for_ms - (down - at);
            if (remaining > 0 && remaining < FOR_GRACE_MS)
                at = ts + FOR_GRACE_MS - r->for_ms;
            else if (remaining > 0)
                at += ts - down;
            a->active_at = at;
            break;
        }
    }
    gp_samples_free(&smp);
    free(ls.l);
    gp_buf_free(&want);
    gp_storage_selection_free(&sel);
}

/* The severity of an alert's labels. */
static enum gp_severity severity_of(const uint8_t *labels, size_t len)
{
    struct gp_str v;
    char s[16];
    enum gp_severity sev = GP_SEV_WARNING;
    if (gp_labels_get(labels, len, "severity", &v) == 1 && v.len < sizeof s) {
        memcpy(s, v.ptr, v.len);
        s[v.len] = '\0';
        if (!strcmp(s, "page"))
            return GP_SEV_CRITICAL;
        gp_severity_parse(s, &sev);
    }
    return sev;
}

static const char *ann_of(const struct gp_promrule *r, const struct alert *a, const char *name)
{
    for (size_t i = 0; a->ann && i < r->nann; i++)
        if (!strcmp(r->ann_names[i], name))
            return a->ann[i];
    return NULL;
}

/* Hands a rule's pending and firing alerts to the alert engine. */
static int observe(struct rstate *rs, struct gp_alerts *alerts)
{
    const struct gp_promrule *r = rs->r;
    struct gp_observation *o = malloc(sizeof *o);
    struct gp_buf lab;
    gp_buf_init(&lab, GP_ALERT_LABELS_LEN - 1);
    if (!o)
        return GP_ENOMEM;
    int rc = GP_OK;
    for (size_t i = 0; !rc && i < rs->na; i++) {
        const struct alert *a = &rs->a[i];
        if (a->state == A_INACTIVE)
            continue;
        memset(o, 0, sizeof *o);
        gp_rule_obs_key(a->labels, a->len, o);
        o->bad = true;
        o->value = a->value;
        const char *sum = ann_of(r, a, "summary"), *desc = ann_of(r, a, "description");
        char v[40];
        gp_go_float(a->value, 'v', v, sizeof v);
        snprintf(o->summary, sizeof o->summary, "%s", sum ? sum : r->name);
        if (desc)
            snprintf(o->evidence, sizeof o->evidence, "%s", desc);
        else
            snprintf(o->evidence, sizeof o->evidence, "%s = %s", r->expr, v);
        const char *runbook = ann_of(r, a, "runbook_url");
        if (!runbook)
            runbook = ann_of(r, a, "runbook");
        /* the alert's labels beyond the key, alertname (the kind) aside;
         * whole labels only: one that does not fit is left out */
        gp_buf_reset(&lab);
        struct gp_labels_iter it;
        gp_labels_iter_init(&it, a->labels, a->len);
        struct gp_str name, value;
        while (gp_labels_next(&it, &name, &value) == 1) {
            if (gp_rule_key_label(name.ptr, name.len) || (name.len == 9 && !memcmp(name.ptr, "alertname", 9)))
                continue;
            size_t mark = lab.len;
            if (lab.len)
                gp_buf_putc(&lab, ',');
            gp_json_str(&lab, name.ptr, name.len);
            gp_buf_putc(&lab, ':');
            gp_json_str(&lab, value.ptr, value.len);
            if (lab.err) {
                lab.len = mark;
                lab.err = 0;
            }
        }
        gp_buf_putc(&lab, '\0');
        struct gp_alert_params p = {
            .kind = r->name,
            .severity = severity_of(a->labels, a->len),
            .for_ms = r->for_ms,
            .clear_for_ms = 0,
            .cooldown_ms = 0,
            .runbook = runbook,
            .labels_json = lab.data && !lab.err ? lab.data : "",
            .extra = a->h,
        };
        rc = gp_alerts_observe(alerts, &p, o);
        if (rc == GP_ETOOBIG)
            rc = GP_OK; /* a full table is counted there */
    }
    gp_buf_free(&lab);
    free(o);
    return rc;
}

static void hold_group(const struct gstate *g, struct gp_alerts *alerts)
{
    for (size_t k = 0; alerts && k < g->g->n; k++)
        if (g->g->rules[k].alert)
            gp_alerts_hold(alerts, g->g->rules[k].name);
}

int gp_promrules_tick(struct gp_promrules_run *r, struct gp_alerts *alerts, int64_t now_ms,
                      unsigned *failed, char *err, size_t errlen)
{
    unsigned nfail = 0;
    int first = GP_OK;
    if (failed)
        *failed = 0;
    if (!r)
        return GP_OK;
    pthread_mutex_lock(&r->mu);
    int64_t slack = r->o.tick_ms > 0 ? r->o.tick_ms / 2 : 0;
    for (size_t i = 0; i < r->ng; i++) {
        struct gstate *g = &r->gs[i];
        if (g->last_ms && now_ms < g->last_ms + g->interval_ms - slack) {
            hold_group(g, alerts);
            continue;
        }
        int64_t g0 = gp_mono_ns();
        for (size_t k = 0; k < g->g->n; k++) {
            struct rstate *rs = &g->rs[k];
            int64_t t0 = gp_mono_ns();
            struct gp_promql_result res;
            memset(&res, 0, sizeof res);
            char detail[512] = "";
            int rc = gp_promql_instant(r->o.store, rs->r->ast, now_ms, &r->o.limits, &res, detail,
                                       sizeof detail);
            struct gp_promql_series one;
            const struct gp_promql_series *smp = NULL;
            size_t n = 0;
            if (!rc)
                rc = samples_of(&res, &one, &smp, &n, detail, sizeof detail);
            if (!rc)
                rc = rs->r->alert ? eval_alerting(r, g, rs, smp, n, now_ms, detail, sizeof detail)
                                  : eval_recording(r, g, rs, smp, n, now_ms, detail, sizeof detail);
            if (rs->r->alert && !rs->restored) {
                if (!rc)
                    restore_for_state(r, rs, now_ms);
                rs->restored = true;
            }
            gp_promql_result_free(&res);
            if (!rc && rs->r->alert && alerts)
                rc = observe(rs, alerts);
            if (rc) {
                nfail++;
                if (rs->r->alert && alerts)
                    gp_alerts_hold(alerts, rs->r->name);
                rs->health = 2;
                snprintf(rs->last_error, sizeof rs->last_error, "%s", detail[0] ? detail : gp_strerror(rc));
                if (!first)
                    first = gp_seterr(err, errlen, rc, "rule group \"%s\", rule \"%s\": %s", g->g->name,
                                      rs->r->name, rs->last_error);
                gp_log(GP_LOG_WARN, "promrules", "rule evaluation failed",
                       "group=\"%s\" rule=\"%s\" error=\"%s\"", g->g->name, rs->r->name, rs->last_error);
            } else {
                rs->health = 1;
                rs->last_error[0] = '\0';
            }
            rs->last_ms = now_ms;
            rs->eval_s = (double)(gp_mono_ns() - t0) / 1e9;
            g->evals++;
            g->failures += rc != GP_OK;
        }
        g->last_ms = now_ms;
        g->eval_s = (double)(gp_mono_ns() - g0) / 1e9;
    }
    pthread_mutex_unlock(&r->mu);
    if (failed)
        *failed = nfail;
    return first;
}

/* ---- /api/v1/rules ---- */

/* A time as Go's time.Time marshals to JSON (RFC 3339, UTC, trailing
 * zeros of the fraction cut); 0 is Go's zero time. */
static void put_time(struct gp_buf *b, int64_t ms)
{
    if (!ms) {
        gp_buf_puts(b, "\"0001-01-01T00:00:00Z\"");
        return;
    }
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    char s[40];
    strftime(s, sizeof s, "%Y-%m-%dT%H:%M:%S", &tm);
    int frac = (int)(ms % 1000);
    if (frac) {
        char f[8];
        snprintf(f, sizeof f, ".%03d", frac);
        size_t n = strlen(f);
        while (f[n - 1] == '0')
            f[--n] = '\0';
        gp_buf_printf(b, "\"%s%sZ\"", s, f);
    } else {
        gp_buf_printf(b, "\"%sZ\"", s);
    }
}

static void put_map(struct gp_buf *b, char *const *names, char *const *values, size_t n)
{
    gp_buf_putc(b, '{');
    for (size_t i = 0; i < n; i++) {
        if (i)
            gp_buf_putc(b, ',');
        gp_json_str(b, names[i], strlen(names[i]));
        gp_buf_putc(b, ':');
        gp_json_str(b, values[i], strlen(values[i]));
    }
    gp_buf_putc(b, '}');
}

static void put_common(struct gp_buf *b, const struct rstate *rs)
{
    static const char *const health[] = {"unknown", "ok", "err"};
    gp_buf_printf(b, ",\"health\":\"%s\"", health[rs->health]);
    if (rs->last_error[0]) {
        gp_buf_puts(b, ",\"lastError\":");
        gp_json_str(b, rs->last_error, strlen(rs->last_error));
    }
    gp_buf_printf(b, ",\"evaluationTime\":%.9f,\"lastEvaluation\":", rs->eval_s);
    put_time(b, rs->last_ms);
}

static void put_rule(struct gp_buf *b, const struct rstate *rs)
{
    const struct gp_promrule *r = rs->r;
    gp_buf_putc(b, '{');
    if (r->alert) {
        enum astate st = A_INACTIVE;
        for (size_t i = 0; i < rs->na; i++)
            if (rs->a[i].state > st)
                st = rs->a[i].state;
        gp_buf_printf(b, "\"state\":\"%s\",", astate_names[st]);
    }
    gp_buf_puts(b, "\"name\":");
    gp_json_str(b, r->name, strlen(r->name));
    gp_buf_puts(b, ",\"query\":");
    struct gp_buf q;
    gp_buf_init(&q, 0);
    gp_promql_format(r->ast, &q);
    if (q.data && !q.err)
        gp_json_str(b, q.data, q.len);
    else
        gp_json_str(b, r->expr, strlen(r->expr));
    gp_buf_free(&q);
    if (r->alert) {
        gp_buf_printf(b, ",\"duration\":%.3f,\"keepFiringFor\":%.3f", (double)r->for_ms / 1e3,
                      (double)r->keep_firing_for_ms / 1e3);
    }
    if (r->alert || r->nlabels) {
        gp_buf_puts(b, ",\"labels\":");
        put_map(b, r->label_names, r->label_values, r->nlabels);
    }
    if (r->alert) {
        gp_buf_puts(b, ",\"annotations\":");
        put_map(b, r->ann_names, r->ann_values, r->nann);
        gp_buf_puts(b, ",\"alerts\":[");
        int n = 0;
        for (size_t i = 0; i < rs->na; i++) {
            const struct alert *a = &rs->a[i];
            if (a->state == A_INACTIVE)
                continue;
            gp_buf_puts(b, n++ ? ",{\"labels\":" : "{\"labels\":");
            gp_json_labels(b, a->labels, a->len);
            gp_buf_puts(b, ",\"annotations\":{");
            for (size_t k = 0; a->ann && k < r->nann; k++) {
                if (k)
                    gp_buf_putc(b, ',');
                gp_json_str(b, r->ann_names[k], strlen(r->ann_names[k]));
                gp_buf_putc(b, ':');
                gp_json_str(b, a->ann[k], strlen(a->ann[k]));
            }
            gp_buf_printf(b, "},\"state\":\"%s\",\"activeAt\":", astate_names[a->state]);
            put_time(b, a->active_at);
            if (a->keep_since) {
                gp_buf_puts(b, ",\"keepFiringSince\":");
                put_time(b, a->keep_since);
            }
            char v[40];
            gp_go_float(a->value, 'e', v, sizeof v);
            gp_buf_printf(b, ",\"value\":\"%s\"}", v);
        }
        gp_buf_putc(b, ']');
    }
    put_common(b, rs);
    gp_buf_printf(b, ",\"type\":\"%s\"}", r->alert ? "alerting" : "recording");
}

int gp_promrules_json(struct gp_promrules_run *r, int type, struct gp_buf *out)
{
    gp_buf_puts(out, "{\"status\":\"success\",\"data\":{\"groups\":[");
    if (r)
        pthread_mutex_lock(&r->mu);
    for (size_t i = 0; r && i < r->ng; i++) {
        const struct gstate *g = &r->gs[i];
        if (i)
            gp_buf_putc(out, ',');
        gp_buf_puts(out, "{\"name\":");
        gp_json_str(out, g->g->name, strlen(g->g->name));
        gp_buf_puts(out, ",\"file\":");
        gp_json_str(out, g->g->file, strlen(g->g->file));
        gp_buf_puts(out, ",\"rules\":[");
        int n = 0;
        for (size_t k = 0; k < g->g->n; k++) {
            if ((type == 'a' && !g->rs[k].r->alert) || (type == 'r' && g->rs[k].r->alert))
                continue;
            if (n++)
                gp_buf_putc(out, ',');
            put_rule(out, &g->rs[k]);
        }
        gp_buf_printf(out, "],\"interval\":%g,\"limit\":%lld,\"evaluationTime\":%.9f,\"lastEvaluation\":",
                      (double)g->interval_ms / 1e3, (long long)g->g->limit, g->eval_s);
        put_time(out, g->last_ms);
        gp_buf_putc(out, '}');
    }
    if (r)
        pthread_mutex_unlock(&r->mu);
    gp_buf_puts(out, "]}}\n");
    return out->err ? out->err : GP_OK;
}

/* ---- /metrics ---- */

/* One family with a value per group, labelled as Prometheus's
 * rule_group ("FILE;GROUP"). */
static void group_family(struct gp_metric_sink *k, struct gp_buf *label, const struct gp_promrules_run *r,
                         enum gp_metric m, double (*value)(const struct gstate *))
{
    gp_metric_family(k, m);
    for (size_t i = 0; i < r->ng; i++) {
        const struct gstate *g = &r->gs[i];
        gp_buf_reset(label);
        gp_buf_printf(label, "%s;%s", g->g->file, g->g->name);
        if (label->err) {
            k->err = k->err ? k->err : label->err;
            return;
        }
        gp_metric_sample(k, m, NULL, "rule_group", label->data, value(g));
    }
}

static double g_rules(const struct gstate *g) { return (double)g->g->n; }
static double g_interval(const struct gstate *g) { return (double)g->interval_ms / 1e3; }
static double g_last(const struct gstate *g) { return (double)g->last_ms / 1e3; }
static double g_duration(const struct gstate *g) { return g->eval_s; }
static double g_evals(const struct gstate *g) { return (double)g->evals; }
static double g_failures(const struct gstate *g) { return (double)g->failures; }

void gp_promrules_walk_metrics(struct gp_promrules_run *r, struct gp_metric_sink *b)
{
    if (!r)
        return;
    struct gp_buf label; /* "FILE;GROUP" */
    gp_buf_init(&label, 0);
    pthread_mutex_lock(&r->mu);
    group_family(b, &label, r, GP_M_RULE_GROUP_RULES, g_rules);
    group_family(b, &label, r, GP_M_RULE_GROUP_INTERVAL, g_interval);
    group_family(b, &label, r, GP_M_RULE_GROUP_LAST_EVAL, g_last);
    group_family(b, &label, r, GP_M_RULE_GROUP_LAST_DURATION, g_duration);
    group_family(b, &label, r, GP_M_RULE_EVALS, g_evals);
    group_family(b, &label, r, GP_M_RULE_EVAL_FAILURES, g_failures);
    pthread_mutex_unlock(&r->mu);
    gp_buf_free(&label);
}
