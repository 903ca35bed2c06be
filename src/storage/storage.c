/*
 * storage.c - see storage.h: opening a backend and dispatching through
 * its table of operations.
 */
#include "storage/storage_int.h"

#include "lib/err.h"
#include "store/labels.h"
#include "store/store_fmt.h"

#include <stdlib.h>
#include <string.h>

int gp_storage_open(struct gp_storage **out, const struct gp_storage_options *o, char *err,
                    size_t errlen)
{
    *out = NULL;
    struct gp_storage *s = calloc(1, sizeof *s);
    if (!s)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    s->kind = o->kind;
    int rc;
    if (o->kind == GP_STORAGE_REMOTE) {
        s->ops = &gp_storage_remote_ops;
        rc = gp_storage_remote_open(s, &o->remote, err, errlen);
    } else {
        struct gp_store *st = NULL;
        s->ops = &gp_storage_embedded_ops;
        s->own = 1;
        rc = gp_store_open(&st, &o->store, err, errlen);
        s->impl = st;
    }
    if (rc) {
        free(s);
        return rc;
    }
    *out = s;
    return GP_OK;
}

int gp_storage_wrap(struct gp_storage **out, struct gp_store *st, int own)
{
    struct gp_storage *s = calloc(1, sizeof *s);
    *out = s;
    if (!s)
        return GP_ENOMEM;
    s->ops = &gp_storage_embedded_ops;
    s->kind = GP_STORAGE_EMBEDDED;
    s->impl = st;
    s->own = own;
    return GP_OK;
}

void gp_storage_close(struct gp_storage *s)
{
    if (!s)
        return;
    s->ops->close(s);
    free(s);
}

enum gp_storage_kind gp_storage_kind(const struct gp_storage *s) { return s->kind; }

struct gp_store *gp_storage_store(struct gp_storage *s)
{
    return s && s->kind == GP_STORAGE_EMBEDDED ? s->impl : NULL;
}

int gp_storage_append(struct gp_storage *s, const struct gp_batch *req,
                      struct gp_append_result *res, char *err, size_t errlen)
{
    return s->ops->append(s, req, res, err, errlen);
}

int gp_storage_select(struct gp_storage *s, const struct gp_matcher *m, size_t nm, int64_t mint,
                      int64_t maxt, struct gp_store_selection *out)
{
    return s->ops->select(s, m, nm, mint, maxt, out);
}

int gp_storage_select_since(struct gp_storage *s, const struct gp_matcher *m, size_t nm,
                            int64_t mint, int64_t maxt, int64_t since, struct gp_store_selection *out)
{
    if (!s->ops->select_since)
        return s->ops->select(s, m, nm, mint, maxt, out);
    return s->ops->select_since(s, m, nm, mint, maxt, since, out);
}

int gp_storage_each_of_select(struct gp_storage *s, const struct gp_matcher *m, size_t nm,
                              int64_t mint, int64_t maxt,
                              gp_store_series_fn fn, void *arg)
{
    struct gp_store_selection sel = {0};
    int rc = s->ops->select(s, m, nm, mint, maxt, &sel);
    for (size_t i = 0; !rc && i < sel.n; i++)
        fn(arg, &sel.series[i]); /* with its labels: asks for nothing */
    gp_storage_selection_free(&sel);
    return rc;
}

int gp_storage_select_each(struct gp_storage *s, const struct gp_matcher *m, size_t nm, int64_t mint,
                           int64_t maxt, gp_store_series_fn fn, void *arg)
{
    if (!s->ops->select_each)
        return gp_storage_each_of_select(s, m, nm, mint, maxt, fn, arg);
    return s->ops->select_each(s, m, nm, mint, maxt, fn, arg);
}

void gp_storage_selection_free(struct gp_store_selection *sel)
{
    if (!sel)
        return;
    if (gp_storage_is_remote_selection(sel))
        gp_storage_remote_selection_free(sel);
    else
        gp_store_selection_free(sel);
}

int gp_storage_read(struct gp_storage *s, uint32_t id, int64_t mint, int64_t maxt,
                    struct gp_samples *out)
{
    return s->ops->read(s, id, mint, maxt, out);
}

int gp_storage_read_rollups(struct gp_storage *s, uint32_t id, int64_t mint, int64_t maxt,
                            struct gp_rollups *out)
{
    return s->ops->read_rollups(s, id, mint, maxt, out);
}

double gp_storage_newest_value(struct gp_storage *s, uint32_t id, int64_t last_ms,
                               int64_t lookback_ms, struct gp_samples *scratch)
{
    return s->ops->newest_value(s, id, last_ms, lookback_ms, scratch);
}

int gp_storage_label_names(struct gp_storage *s, const struct gp_matcher *m, size_t nm,
                           int64_t start_ms, int64_t end_ms,
                           void (*fn)(void *arg, const char *name, size_t len), void *arg)
{
    return s->ops->label_names(s, m, nm, start_ms, end_ms, fn, arg);
}

int gp_storage_label_values(struct gp_storage *s, const char *name, const struct gp_matcher *m,
                            size_t nm, int64_t start_ms, int64_t end_ms,
                            void (*fn)(void *arg, const char *value, size_t len), void *arg)
{
    return s->ops->label_values(s, name, m, nm, start_ms, end_ms, fn, arg);
}

int gp_storage_promql(struct gp_storage *s, const struct gp_storage_promql *q, struct gp_buf *out,
                      int *status)
{
    *status = 0;
    return s->ops->promql ? s->ops->promql(s, q, out, status) : GP_EUNSUPPORTED;
}

int gp_storage_pushdown(struct gp_storage *s, const struct gp_matcher *m, size_t nm, int64_t mint)
{
    return s->ops->pushdown ? s->ops->pushdown(s, m, nm, mint) : 0;
}

void gp_storage_stats(struct gp_storage *s, struct gp_store_stats *st)
{
    memset(st, 0, sizeof *st);
    s->ops->stats(s, st);
}

int gp_storage_write_paused(struct gp_storage *s, char *why, size_t whylen)
{
    struct gp_store *st = s ? gp_storage_store(s) : NULL;
    return st ? gp_store_write_paused(st, why, whylen) : 0;
}

int gp_storage_send_metadata(struct gp_storage *s, const struct gp_family_meta *m, size_t n, char *err,
                             size_t errlen)
{
    return s && s->ops->send_metadata ? s->ops->send_metadata(s, m, n, err, errlen) : GP_OK;
}

void gp_storage_walk_metrics(struct gp_storage *s, struct gp_metric_sink *out)
{
    if (s)
        s->ops->walk_metrics(s, out);
}

void gp_storage_rollup_span(int64_t mint, int64_t maxt, int64_t *from, int64_t *to)
{
    *from = gp_st_floor(mint, 60000);
    *to = gp_st_floor(maxt, 60000);
    *to = *to > INT64_MAX - 59999 ? INT64_MAX : *to + 59999;
}

int gp_storage_rollups_of(const struct gp_samples *x, int64_t mint, int64_t maxt,
                          struct gp_rollups *out)
{
    if (mint > maxt)
        return GP_OK;
    int64_t from, to;
    gp_storage_rollup_span(mint, maxt, &from, &to);
    struct gp_rollup r = {.count = 0};
    for (size_t i = 0; i < x->n; i++) {
        if (x->t[i] < from || x->t[i] > to)
            continue;
        int64_t m = gp_st_floor(x->t[i], 60000);
        if (r.count && r.t != m) {
            if (gp_st_rollups_push(out, &r) != GP_OK)
                return GP_ENOMEM;
            r.count = 0;
        }
        r.t = m;
        gp_st_rollup_fold(&r, x->v[i]);
    }
    if (r.count && gp_st_rollups_push(out, &r) != GP_OK)
        return GP_ENOMEM;
    return GP_OK;
}

/* Appends v as a regular expression matching exactly v. */
static void re_literal(struct gp_buf *b, const char *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (v[i] && strchr("\\.+*?()|[]{}^$", v[i]))
            gp_buf_putc(b, '\\');
        gp_buf_putc(b, v[i]);
    }
}

static int cmp_str(const void *a, const void *b)
{
    const struct gp_str *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n ? memcmp(x->ptr, y->ptr, n) : 0;
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

int gp_storage_select_like(struct gp_storage *s, const struct gp_store_series *const *x, size_t n,
                           int64_t mint, int64_t maxt, struct gp_store_selection *out)
{
    memset(out, 0, sizeof *out);
    if (!n)
        return GP_OK;
    struct gp_matcher m[GP_SELECT_LIKE_LABELS];
    size_t nm = 0;
    struct gp_str *vals = malloc(n * sizeof *vals);
    struct gp_buf name, re;
    gp_buf_init(&name, 0);
    gp_buf_init(&re, 0);
    int rc = vals ? GP_OK : GP_ENOMEM;
    struct gp_labels_iter it;
    struct gp_str ln, lv;
    gp_labels_iter_init(&it, x[0]->labels, x[0]->labels_len);
    while (!rc && nm < GP_SELECT_LIKE_LABELS && gp_labels_next(&it, &ln, &lv) == 1) {
        name.len = 0;
        gp_buf_append(&name, ln.ptr, ln.len);
        gp_buf_putc(&name, '\0');
        if (name.err) {
            rc = GP_ENOMEM;
            break;
        }
        size_t k = 0;
        for (size_t i = 0; i < n && gp_labels_get(x[i]->labels, x[i]->labels_len, name.data, &vals[k]) == 1; i++)
            k++;
        if (k < n)
            continue; /* not every series has it: no matcher */
        qsort(vals, k, sizeof *vals, cmp_str);
        size_t u = 1;
        for (size_t i = 1; i < k; i++)
            if (cmp_str(&vals[i], &vals[u - 1]))
                vals[u++] = vals[i];
        re.len = 0;
        for (size_t i = 0; i < u; i++) {
            if (i)
                gp_buf_putc(&re, '|');
            re_literal(&re, vals[i].ptr, vals[i].len);
        }
        gp_buf_putc(&re, '\0');
        if (re.err) {
            rc = GP_ENOMEM;
            break;
        }
        if (re.len > GP_SELECT_LIKE_RE_MAX)
            continue; /* too many values: a wider selection */
        char err[64];
        if (u == 1) {
            re.len = 0;
            gp_buf_append(&re, vals[0].ptr, vals[0].len);
            gp_buf_putc(&re, '\0');
        }
        rc = re.err ? GP_ENOMEM
                    : gp_matcher_init(&m[nm], u == 1 ? GP_MATCH_EQ : GP_MATCH_RE, name.data, re.data,
                                      err, sizeof err);
        if (!rc)
            nm++;
    }
    if (!rc)
        rc = gp_storage_select(s, m, nm, mint, maxt, out);
    for (size_t i = 0; i < nm; i++)
        gp_matcher_free(&m[i]);
    free(vals);
    gp_buf_free(&name);
    gp_buf_free(&re);
    return rc;
}
