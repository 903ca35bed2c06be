/*
 * storage_embedded.c - the storage.h backend over the embedded store
 * (store/store.h): every operation is the store's own.
 */
#include "storage/storage_int.h"

#include "store/labels.h"

#include <stdint.h>
#include <string.h>

static struct gp_store *st_of(struct gp_storage *s) { return s->impl; }

static int e_append(struct gp_storage *s, const struct gp_batch *req,
                    struct gp_append_result *res, char *err, size_t errlen)
{
    return gp_store_append(st_of(s), req, res, err, errlen);
}

static int e_select(struct gp_storage *s, const struct gp_matcher *m, size_t nm, int64_t mint,
                    int64_t maxt, struct gp_store_selection *out)
{
    return gp_store_select(st_of(s), m, nm, mint, maxt, out);
}

static int e_select_each(struct gp_storage *s, const struct gp_matcher *m, size_t nm, int64_t mint,
                         int64_t maxt, gp_store_series_fn fn, void *arg)
{
    return gp_store_select_each(st_of(s), m, nm, mint, maxt, fn, arg);
}

static int e_read(struct gp_storage *s, uint32_t id, int64_t mint, int64_t maxt, struct gp_samples *out)
{
    return gp_store_read(st_of(s), id, mint, maxt, out);
}

static int e_read_rollups(struct gp_storage *s, uint32_t id, int64_t mint, int64_t maxt,
                          struct gp_rollups *out)
{
    return gp_store_read_rollups(st_of(s), id, mint, maxt, out);
}

static double e_newest_value(struct gp_storage *s, uint32_t id, int64_t last_ms, int64_t lookback_ms,
                             struct gp_samples *scratch)
{
    return gp_store_newest_value(st_of(s), id, last_ms, lookback_ms, scratch);
}

/* The label names (name NULL) or name's values of the series with
 * samples in [start, end]: the index has no times, the selection has
 * each series' span. */
static int labels_in_span(struct gp_storage *s, const char *name, const struct gp_matcher *m, size_t nm,
                          int64_t start, int64_t end, void (*fn)(void *arg, const char *v, size_t len),
                          void *arg)
{
    struct gp_store_selection sel;
    memset(&sel, 0, sizeof sel);
    int rc = gp_store_select(st_of(s), m, nm, start, end, &sel);
    for (size_t i = 0; i < sel.n && !rc; i++) {
        const struct gp_store_series *se = &sel.series[i];
        struct gp_str ln, lv;
        if (name) {
            if (gp_labels_get(se->labels, se->labels_len, name, &lv) && lv.len)
                fn(arg, lv.ptr, lv.len);
            continue;
        }
        struct gp_labels_iter it;
        gp_labels_iter_init(&it, se->labels, se->labels_len);
        while (gp_labels_next(&it, &ln, &lv) == 1)
            fn(arg, ln.ptr, ln.len);
    }
    gp_store_selection_free(&sel);
    return rc;
}

static int e_label_names(struct gp_storage *s, const struct gp_matcher *m, size_t nm, int64_t start,
                         int64_t end, void (*fn)(void *arg, const char *name, size_t len), void *arg)
{
    if (start != INT64_MIN || end != INT64_MAX)
        return labels_in_span(s, NULL, m, nm, start, end, fn, arg);
    return gp_store_label_names(st_of(s), m, nm, fn, arg);
}

static int e_label_values(struct gp_storage *s, const char *name, const struct gp_matcher *m,
                          size_t nm, int64_t start, int64_t end,
                          void (*fn)(void *arg, const char *value, size_t len), void *arg)
{
    if (start != INT64_MIN || end != INT64_MAX)
        return labels_in_span(s, name, m, nm, start, end, fn, arg);
    return gp_store_label_values(st_of(s), name, m, nm, fn, arg);
}

static void e_stats(struct gp_storage *s, struct gp_store_stats *st) { gp_store_stats(st_of(s), st); }

static void e_walk_metrics(struct gp_storage *s, struct gp_metric_sink *out)
{
    (void)s;
    (void)out; /* the server renders gpulse_store_* from the stats */
}

static void e_close(struct gp_storage *s)
{
    if (s->own)
        gp_store_close(st_of(s));
}

const struct gp_storage_ops gp_storage_embedded_ops = {
    .name = "embedded",
    .append = e_append,
    .select = e_select,
    .select_each = e_select_each,
    .read = e_read,
    .read_rollups = e_read_rollups,
    .newest_value = e_newest_value,
    .label_names = e_label_names,
    .label_values = e_label_values,
    .stats = e_stats,
    .walk_metrics = e_walk_metrics,
    .close = e_close,
};
