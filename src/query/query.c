/*
 * query.c - range queries, series, label names and values (query.h):
 * select from the store, evaluate (eval.c), write the JSON answer
 * (json.c) in the envelope of Prometheus's HTTP API.
 *
 * A range query streams: series are read one at a time into one reused
 * sample (or rollup) buffer and evaluated onto one reused grid, so memory
 * is the largest single series plus the answer, however many series
 * match. Series are visited in the order of the answer: without agg by
 * their labels (Prometheus sorts a matrix that way); with agg grouped by
 * the result labels (the `by` labels a series has, as a canonical label
 * blob) and ordered by them, so a group's series are adjacent and one
 * group's accumulator at a time suffices.
 *
 * Every function leaves out as it found it when it fails, so the HTTP
 * layer appends gp_query_error to the same buffer.
 */
#include "query/query.h"

#include "lib/err.h"
#include "query/eval.h"
#include "query/json.h"
#include "store/labels.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- shared helpers (inventory.c has its own small ones) ---- */

struct mark {
    size_t len;
    int err;
};

static struct mark mark_of(const struct gp_buf *b)
{
    return (struct mark){b->len, b->err};
}

/* Undoes a partial answer. */
static void rewind_to(struct gp_buf *b, struct mark m)
{
    b->len = m.len;
    b->err = m.err;
    if (b->data)
        b->data[b->len] = '\0';
}

/* GP_OK, or out's latched failure with a message. */
static int out_status(const struct gp_buf *out, char *err, size_t errlen)
{
    if (!out->err)
        return GP_OK;
    if (out->err == GP_ETOOBIG)
        return gp_seterr(err, errlen, GP_ETOOBIG,
                         "the answer is larger than %zu bytes: narrow the selector or the time "
                         "range, or raise the step",
                         out->max);
    return gp_seterr(err, errlen, out->err, "writing the answer: %s", gp_strerror(out->err));
}

static int str_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    if (c)
        return c;
    return an < bn ? -1 : an > bn;
}

/* Prometheus's labels.Compare on canonical blobs: pairwise by name, then
 * value; a set that runs out first sorts first. */
static int labels_cmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
    struct gp_labels_iter ia, ib;
    gp_labels_iter_init(&ia, a, al);
    gp_labels_iter_init(&ib, b, bl);
    for (;;) {
        struct gp_rw_str an, av, bn, bv;
        int ra = gp_labels_next(&ia, &an, &av) == 1;
        int rb = gp_labels_next(&ib, &bn, &bv) == 1;
        if (!ra || !rb)
            return ra - rb;
        int c = str_cmp(an.ptr, an.len, bn.ptr, bn.len);
        if (!c)
            c = str_cmp(av.ptr, av.len, bv.ptr, bv.len);
        if (c)
            return c;
    }
}

/* A series with the blob it is ordered by (its labels, or its group's). */
struct item {
    const struct gp_store_series *s;
    const uint8_t *key;
    size_t key_len;
};

static int item_cmp(const void *pa, const void *pb)
{
    const struct item *a = pa, *b = pb;
    int c = labels_cmp(a->key, a->key_len, b->key, b->key_len);
    if (c)
        return c;
    return a->s->id < b->s->id ? -1 : a->s->id > b->s->id;
}

static int same_key(const struct item *a, const struct item *b)
{
    return a->key_len == b->key_len && (!a->key_len || memcmp(a->key, b->key, a->key_len) == 0);
}

/* ---- range queries ---- */

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* q's by labels sorted (canonical order) and unique into by; returns the
 * count or GP_EUSAGE. */
static int sorted_by(const struct gp_range_query *q, const char **by, char *err, size_t errlen)
{
    if (q->nby > GP_QUERY_MAX_BY)
        return gp_seterr(err, errlen, GP_EUSAGE, "by: more than %d labels", GP_QUERY_MAX_BY);
    size_t n = 0;
    for (size_t i = 0; i < q->nby; i++) {
        if (!q->by[i] || !q->by[i][0])
            return gp_seterr(err, errlen, GP_EUSAGE, "by: empty label name");
        if (strlen(q->by[i]) > GP_RW_MAX_LABEL_LEN)
            return gp_seterr(err, errlen, GP_EUSAGE, "by: label name longer than %d bytes",
                             GP_RW_MAX_LABEL_LEN);
        by[n++] = q->by[i];
    }
    qsort(by, n, sizeof *by, name_cmp);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || strcmp(by[u - 1], by[i]) != 0)
            by[u++] = by[i];
    return (int)u;
}

/* Builds the items of a selection: keys are the series' own labels, or
 * (nby >= 0 with agg) the canonical blob of its `by` labels, stored in
 * keys. Sorted. GP_OK or GP_ENOMEM. */
static int make_items(const struct gp_store_selection *sel, int grouped, const char *const *by,
                      size_t nby, struct gp_buf *keys, struct item *items)
{
    size_t *off = NULL;
    if (grouped) {
        off = malloc((sel->n ? sel->n : 1) * sizeof *off);
        if (!off)
            return GP_ENOMEM;
    }
    for (size_t i = 0; i < sel->n; i++) {
        const struct gp_store_series *s = &sel->series[i];
        items[i].s = s;
        items[i].key = s->labels;
        items[i].key_len = s->labels_len;
        if (!grouped)
            continue;
        struct gp_rw_label l[GP_QUERY_MAX_BY];
        size_t nl = 0;
        for (size_t b = 0; b < nby; b++) {
            struct gp_rw_str v;
            if (gp_labels_get(s->labels, s->labels_len, by[b], &v) == 1 && v.len) {
                l[nl].name.ptr = by[b];
                l[nl].name.len = strlen(by[b]);
                l[nl].value = v;
                nl++;
            }
        }
        off[i] = keys->len;
        gp_labels_encode(l, nl, keys);
        items[i].key_len = keys->len - off[i];
    }
    if (grouped) {
        if (keys->err) {
            free(off);
            return GP_ENOMEM;
        }
        /* keys has stopped moving: point into it (all keys are empty
         * when no series has a `by` label, and then keys has no memory). */
        static const uint8_t none[1];
        for (size_t i = 0; i < sel->n; i++)
            items[i].key = keys->data ? (const uint8_t *)keys->data + off[i] : none;
        free(off);
    }
    qsort(items, sel->n, sizeof *items, item_cmp);
    return GP_OK;
}

/* Whether q runs on rollups: GP_OK with *use set, or GP_EUSAGE. */
static int choose_rollups(const struct gp_range_query *q, int *use, char *err, size_t errlen)
{
    int aligned = q->step_ms % 60000 == 0 && q->start_ms % 60000 == 0;
    if (q->rollups == 1 && !aligned)
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "rollups need a step that is a multiple of 1m and a start on a whole "
                         "minute");
    *use = q->rollups == 1 || (q->rollups < 0 && aligned);
    return GP_OK;
}

static void put_series_values(struct gp_buf *out, const struct gp_eval_range *r, const double *val,
                              const uint8_t *has)
{
    int first = 1;
    int64_t t = r->start_ms;
    for (size_t k = 0; k < r->npoints; k++, t += r->step_ms)
        if (has[k]) {
            gp_json_point(out, first, t, val[k]);
            first = 0;
        }
}

int gp_query_range(struct gp_store *s, const struct gp_range_query *q, struct gp_buf *out, char *err,
                   size_t errlen)
{
    struct mark m = mark_of(out);
    struct gp_eval_range r;
    int rc = gp_eval_range_init(&r, q->start_ms, q->end_ms, q->step_ms, err, errlen);
    if (rc)
        return rc;
    if (q->start_ms < INT64_MIN / 4 || q->end_ms > INT64_MAX / 4)
        return gp_seterr(err, errlen, GP_EUSAGE, "start or end out of range");
    if (!q->m || q->nm == 0)
        return gp_seterr(err, errlen, GP_EUSAGE, "a range query needs a series selector (match)");
    if (q->agg == GP_AGG_NONE && q->nby)
        return gp_seterr(err, errlen, GP_EUSAGE, "by needs agg (avg, min, max, sum or count)");
    const char *by[GP_QUERY_MAX_BY];
    int nby = sorted_by(q, by, err, errlen);
    if (nby < 0)
        return nby;
    int use_rollups;
    rc = choose_rollups(q, &use_rollups, err, errlen);
    if (rc)
        return rc;

    /* What the first step can see: its window or its lookback. */
    int64_t reach = q->step_ms > GP_QUERY_LOOKBACK_MS ? q->step_ms : GP_QUERY_LOOKBACK_MS;
    int64_t mint = use_rollups ? q->start_ms - reach : q->start_ms - reach + 1;
    int64_t maxt = use_rollups ? q->end_ms - 1 : q->end_ms;

    struct gp_store_selection sel = {0};
    struct item *items = NULL;
    struct gp_buf keys;
    gp_buf_init(&keys, (size_t)1 << 30);
    double *val = NULL;
    uint8_t *has = NULL;
    struct gp_samples smp = {0};
    struct gp_rollups ru = {0};
    struct gp_eval_groups g = {0};
    enum gp_eval_mode mode = gp_eval_mode_for(q->agg);

    rc = gp_store_select(s, q->m, q->nm, mint, maxt, &sel);
    if (rc) {
        gp_seterr(err, errlen, rc, "selecting series: %s", gp_strerror(rc));
        goto done;
    }
    if (sel.n > GP_QUERY_MAX_SERIES) {
        rc = gp_seterr(err, errlen, GP_EUSAGE,
                       "the selector matches %zu series, more than the limit of %d: narrow it",
                       sel.n, GP_QUERY_MAX_SERIES);
        goto done;
    }
    items = malloc((sel.n ? sel.n : 1) * sizeof *items);
    val = malloc(r.npoints * sizeof *val);
    has = malloc(r.npoints);
    if (!items || !val || !has) {
        rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        goto done;
    }
    int grouped = q->agg != GP_AGG_NONE;
    rc = make_items(&sel, grouped, by, (size_t)nby, &keys, items);
    if (!rc && grouped)
        rc = gp_eval_groups_init(&g, q->agg, 1, r.npoints);
    if (rc) {
        gp_seterr(err, errlen, rc, "out of memory");
        goto done;
    }

    gp_buf_puts(out, "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[");
    int first_series = 1;
    for (size_t i = 0; i < sel.n && !out->err; i++) {
        const struct gp_store_series *ss = items[i].s;
        size_t found;
        if (use_rollups) {
            ru.n = 0;
            rc = gp_store_read_rollups(s, ss->id, mint, maxt, &ru);
            found = gp_eval_rollups(&r, mode, ru.r, ru.n, val, has);
        } else {
            smp.n = 0;
            rc = gp_store_read(s, ss->id, mint, maxt, &smp);
            found = gp_eval_raw(&r, mode, smp.t, smp.v, smp.n, val, has);
        }
        /* A damaged chunk (GP_EPARSE) is logged by the store, which still
         * returns the rest of the range: answer with that. */
        if (rc && rc != GP_EPARSE) {
            gp_seterr(err, errlen, rc, "reading series %u: %s", (unsigned)ss->id, gp_strerror(rc));
            goto done;
        }
        rc = GP_OK;
        if (!grouped) {
            if (!found)
                continue;
            gp_buf_puts(out, first_series ? "{\"metric\":" : ",{\"metric\":");
            first_series = 0;
            if (gp_json_labels(out, ss->labels, ss->labels_len)) {
                rc = gp_seterr(err, errlen, GP_EIO, "series %u: malformed labels",
                               (unsigned)ss->id);
                goto done;
            }
            gp_buf_puts(out, ",\"values\":[");
            put_series_values(out, &r, val, has);
            gp_buf_puts(out, "]}");
            continue;
        }
        if (found)
            gp_eval_groups_add(&g, 0, val, has);
        if (i + 1 < sel.n && same_key(&items[i], &items[i + 1]))
            continue;
        /* The group is complete: write it if any step has a value. */
        int first = 1;
        int64_t t = r.start_ms;
        for (size_t k = 0; k < r.npoints; k++, t += r.step_ms) {
            double v;
            if (!gp_eval_groups_get(&g, 0, k, &v))
                continue;
            if (first) {
                gp_buf_puts(out, first_series ? "{\"metric\":" : ",{\"metric\":");
                first_series = 0;
                gp_json_labels(out, items[i].key, items[i].key_len);
                gp_buf_puts(out, ",\"values\":[");
            }
            gp_json_point(out, first, t, v);
            first = 0;
        }
        if (!first)
            gp_buf_puts(out, "]}");
        gp_eval_groups_clear(&g, 0);
    }
    gp_buf_puts(out, "]}}");
    rc = out_status(out, err, errlen);

done:
    if (rc)
        rewind_to(out, m);
    gp_eval_groups_free(&g);
    gp_samples_free(&smp);
    gp_rollups_free(&ru);
    free(val);
    free(has);
    free(items);
    gp_buf_free(&keys);
    gp_store_selection_free(&sel);
    return rc;
}

/* ---- series ---- */

int gp_query_series(struct gp_store *s, const struct gp_matcher *const *sel, const size_t *nm,
                    size_t nsel, int64_t start_ms, int64_t end_ms, struct gp_buf *out, char *err,
                    size_t errlen)
{
    if (nsel == 0)
        return gp_seterr(err, errlen, GP_EUSAGE, "no match[] parameter provided");
    if (end_ms < start_ms)
        return gp_seterr(err, errlen, GP_EUSAGE, "end timestamp must not be before start time");
    struct mark m = mark_of(out);
    struct gp_store_selection *sels = calloc(nsel, sizeof *sels);
    struct item *items = NULL;
    int rc = GP_OK;
    if (!sels)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    size_t total = 0;
    for (size_t i = 0; i < nsel; i++) {
        if (!sel[i] || nm[i] == 0) {
            rc = gp_seterr(err, errlen, GP_EUSAGE, "match[] %zu: empty selector", i + 1);
            goto done;
        }
        rc = gp_store_select(s, sel[i], nm[i], start_ms, end_ms, &sels[i]);
        if (rc) {
            gp_seterr(err, errlen, rc, "selecting series: %s", gp_strerror(rc));
            goto done;
        }
        total += sels[i].n;
    }
    items = malloc((total ? total : 1) * sizeof *items);
    if (!items) {
        rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        goto done;
    }
    size_t n = 0;
    for (size_t i = 0; i < nsel; i++)
        for (size_t j = 0; j < sels[i].n; j++) {
            items[n].s = &sels[i].series[j];
            items[n].key = sels[i].series[j].labels;
            items[n].key_len = sels[i].series[j].labels_len;
            n++;
        }
    /* By labels, ties by id: a series matched by two selectors is adjacent
     * to itself and written once. */
    qsort(items, n, sizeof *items, item_cmp);
    gp_buf_puts(out, "{\"status\":\"success\",\"data\":[");
    for (size_t i = 0; i < n && !out->err; i++) {
        if (i && items[i].s->id == items[i - 1].s->id)
            continue;
        if (i)
            gp_buf_putc(out, ',');
        if (gp_json_labels(out, items[i].key, items[i].key_len)) {
            rc = gp_seterr(err, errlen, GP_EIO, "series %u: malformed labels",
                           (unsigned)items[i].s->id);
            goto done;
        }
    }
    gp_buf_puts(out, "]}");
    rc = out_status(out, err, errlen);
done:
    if (rc)
        rewind_to(out, m);
    free(items);
    for (size_t i = 0; i < nsel; i++)
        gp_store_selection_free(&sels[i]);
    free(sels);
    return rc;
}

/* ---- label names and values ---- */

struct list_writer {
    struct gp_buf *out;
    int first;
};

static void write_item(void *arg, const char *p, size_t len)
{
    struct list_writer *w = arg;
    if (!w->first)
        gp_buf_putc(w->out, ',');
    w->first = 0;
    gp_json_str(w->out, p, len);
}

static int write_list(struct gp_store *s, const char *name, struct gp_buf *out, char *err,
                      size_t errlen)
{
    struct mark m = mark_of(out);
    struct list_writer w = {out, 1};
    gp_buf_puts(out, "{\"status\":\"success\",\"data\":[");
    int rc = name ? gp_store_label_values(s, name, NULL, 0, write_item, &w)
                  : gp_store_label_names(s, NULL, 0, write_item, &w);
    if (rc) {
        gp_seterr(err, errlen, rc, "listing labels: %s", gp_strerror(rc));
    } else {
        gp_buf_puts(out, "]}");
        rc = out_status(out, err, errlen);
    }
    if (rc)
        rewind_to(out, m);
    return rc;
}

int gp_query_labels(struct gp_store *s, struct gp_buf *out, char *err, size_t errlen)
{
    return write_list(s, NULL, out, err, errlen);
}

int gp_query_label_values(struct gp_store *s, const char *name, struct gp_buf *out, char *err,
                          size_t errlen)
{
    if (!name || !*name)
        return gp_seterr(err, errlen, GP_EUSAGE, "invalid label name: empty");
    if (strlen(name) > GP_RW_MAX_LABEL_LEN)
        return gp_seterr(err, errlen, GP_EUSAGE, "invalid label name: longer than %d bytes",
                         GP_RW_MAX_LABEL_LEN);
    return write_list(s, name, out, err, errlen);
}

void gp_query_error(struct gp_buf *out, const char *type, const char *msg)
{
    gp_buf_puts(out, "{\"status\":\"error\",\"errorType\":");
    type = type ? type : "internal";
    msg = msg ? msg : "";
    gp_json_str(out, type, strlen(type));
    gp_buf_puts(out, ",\"error\":");
    gp_json_str(out, msg, strlen(msg));
    gp_buf_putc(out, '}');
}
