/*
 * inventory.c - /api/v1/nodes and /api/v1/gpus (query.h): the fleet as
 * the stored GPU series describe it.
 *
 * There is no separate inventory table: every agent already sends its
 * GPUs' identity as labels on each GPU series (dcgm-exporter's labels,
 * docs/metrics.md), so the inventory is derived from the series registry
 * and stays right for any Prometheus-compatible sender too.
 *
 *   1. Select the GPU series: __name__ =~ "DCGM_FI_.*|gpulse_gpu_.*".
 *   2. One row per series keyed by (node, gpu, MIG instance); node is the
 *      Hostname label, or hostname (dcgm-exporter's newer spelling).
 *      Series without a node or gpu label are not about a GPU: skipped.
 *   3. Sort the rows; each run of equal keys is one GPU. Its identity
 *      labels (UUID, modelName, DCGM_FI_DRIVER_VERSION, vendor) come
 *      from its newest series carrying them, so a driver upgrade shows
 *      the new version; last_seen is the newest sample of any series.
 *      Memory is the newest value of gpulse_gpu_memory_total_bytes, else
 *      (dcgm-exporter) FB_USED + FB_FREE (+ FB_RESERVED where sent), MiB.
 *   4. Nodes are runs of equal node over the GPUs.
 */
#include "query/query.h"

#include "lib/err.h"
#include "lib/json.h"
#include "store/labels.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* How far back from a series' newest sample to look for its newest
 * number (the newest sample may be a stale marker). */
#define VALUE_LOOKBACK_MS GP_QUERY_LOOKBACK_MS

/* One GPU series and the labels the inventory reads of it, taken in one
 * walk over its label set (a lookup per name cost most of the time at a
 * thousand GPUs). */
struct row {
    struct gp_str node, gpu, mig;
    struct gp_str name, uuid, model, driver, vendor, profile, simulated;
    const struct gp_store_series *s;
    uint32_t grp; /* the GPU's ordinal, once grouped */
};

static int str_cmp(struct gp_str a, struct gp_str b)
{
    int c = memcmp(a.ptr, b.ptr, a.len < b.len ? a.len : b.len);
    if (c)
        return c;
    return a.len < b.len ? -1 : a.len > b.len;
}

static int all_digits(struct gp_str s)
{
    if (!s.len)
        return 0;
    for (size_t i = 0; i < s.len; i++)
        if (s.ptr[i] < '0' || s.ptr[i] > '9')
            return 0;
    return 1;
}

/* GPU indexes in numeric order ("2" before "10"), other text bytewise. */
static int index_cmp(struct gp_str a, struct gp_str b)
{
    if (all_digits(a) && all_digits(b)) {
        while (a.len > 1 && a.ptr[0] == '0')
            a.ptr++, a.len--;
        while (b.len > 1 && b.ptr[0] == '0')
            b.ptr++, b.len--;
        if (a.len != b.len)
            return a.len < b.len ? -1 : 1;
    }
    return str_cmp(a, b);
}

static int row_cmp(const void *pa, const void *pb)
{
    const struct row *a = pa, *b = pb;
    int c = str_cmp(a->node, b->node);
    if (!c)
        c = index_cmp(a->gpu, b->gpu);
    if (!c)
        c = index_cmp(a->mig, b->mig);
    return c;
}

static int same_gpu(const struct row *a, const struct row *b)
{
    return !str_cmp(a->node, b->node) && !str_cmp(a->gpu, b->gpu) && !str_cmp(a->mig, b->mig);
}

/* One GPU: identity strings (views into the selection) and readings. */
struct gpu {
    struct gp_str node, gpu, mig, profile, uuid, model, driver, vendor;
    int64_t uuid_t, model_t, driver_t, vendor_t, profile_t; /* last_ms of their source series */
    int64_t last_seen;
    int simulated;
    double memory; /* bytes; NaN unknown */
};

/* Takes v, a label of s, into *dst when s is newer than its last source. */
static void take_label(const struct gp_store_series *s, struct gp_str v, struct gp_str *dst,
                       int64_t *dst_t)
{
    if (v.len && s->last_ms >= *dst_t) {
        *dst = v;
        *dst_t = s->last_ms;
    }
}


/* The newest number of series s; NaN when none (the inventory is best
 * effort per reading). */
static double newest(struct gp_storage *st, const struct gp_store_series *s, struct gp_samples *smp)
{
    return gp_storage_newest_value(st, s->id, s->last_ms, VALUE_LOOKBACK_MS, smp);
}

static int str_is(struct gp_str v, const char *s)
{
    return v.len == strlen(s) && memcmp(v.ptr, s, v.len) == 0;
}

/* Fills g from the rows [a, b) of one GPU. */
static void build_gpu(struct gp_storage *st, const struct row *a, const struct row *b, struct gpu *g,
                      struct gp_samples *smp)
{
    memset(g, 0, sizeof *g);
    g->node = a->node;
    g->gpu = a->gpu;
    g->mig = a->mig;
    g->uuid_t = g->model_t = g->driver_t = g->vendor_t = g->profile_t = INT64_MIN;
    g->last_seen = INT64_MIN;
    g->memory = NAN;
    const struct gp_store_series *total = NULL, *fb[3] = {NULL, NULL, NULL};
    static const char *const fb_names[3] = {"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE",
                                            "DCGM_FI_DEV_FB_RESERVED"};
    for (const struct row *r = a; r < b; r++) {
        const struct gp_store_series *s = r->s;
        take_label(s, r->uuid, &g->uuid, &g->uuid_t);
        take_label(s, r->model, &g->model, &g->model_t);
        take_label(s, r->driver, &g->driver, &g->driver_t);
        take_label(s, r->vendor, &g->vendor, &g->vendor_t);
        take_label(s, r->profile, &g->profile, &g->profile_t);
        if (s->last_ms > g->last_seen)
            g->last_seen = s->last_ms;
        if (str_is(r->simulated, "true"))
            g->simulated = 1;
        if (r->name.len < 19 || (memcmp(r->name.ptr, "DCGM_FI_DEV_FB_", 15) &&
                                 memcmp(r->name.ptr, "gpulse_gpu_memory_", 18)))
            continue; /* not a memory family: most series */
        if (str_is(r->name, "gpulse_gpu_memory_total_bytes")) {
            if (!total || s->last_ms > total->last_ms)
                total = s;
        }
        for (int k = 0; k < 3; k++)
            if (str_is(r->name, fb_names[k]) && (!fb[k] || s->last_ms > fb[k]->last_ms))
                fb[k] = s;
    }
    if (total)
        g->memory = newest(st, total, smp);
    if (isnan(g->memory) && fb[0] && fb[1]) {
        double used = newest(st, fb[0], smp), avail = newest(st, fb[1], smp);
        double reserved = fb[2] ? newest(st, fb[2], smp) : 0;
        if (isnan(reserved))
            reserved = 0;
        g->memory = (used + avail + reserved) * 1048576.0;
    }
    /* A memory size is a byte count: anything else is not reported. */
    if (!(g->memory >= 0 && g->memory < 9.2e18))
        g->memory = NAN;
}

static uint64_t key_hash(const struct row *x)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a over node, gpu, mig */
    const struct gp_str *k[3] = {&x->node, &x->gpu, &x->mig};
    for (int i = 0; i < 3; i++) {
        for (size_t j = 0; j < k[i]->len; j++)
            h = (h ^ (unsigned char)k[i]->ptr[j]) * 1099511628211ULL;
        h = (h ^ 0xff) * 1099511628211ULL;
    }
    return h;
}

struct grp {
    const struct row *first;
    uint32_t id;
};

static int grp_cmp(const void *a, const void *b)
{
    return row_cmp(((const struct grp *)a)->first, ((const struct grp *)b)->first);
}

/*
 * Orders *rows by GPU, each GPU's rows together in their selection order:
 * rows are grouped by a hash of their key and only the groups (one per
 * GPU) are sorted, not every series (a sort of 70,000 rows was most of
 * /api/v1/gpus at a thousand GPUs). GP_OK or GP_ENOMEM.
 */
static int group_rows(struct row **rows, size_t n)
{
    struct row *r = *rows;
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    uint32_t *slot = calloc(cap, sizeof *slot), *gid = malloc((n ? n : 1) * sizeof *gid);
    uint32_t *at = NULL;
    struct grp *g = malloc((n ? n : 1) * sizeof *g);
    struct row *out = malloc((n ? n : 1) * sizeof *out);
    int rc = slot && gid && g && out ? GP_OK : GP_ENOMEM;
    size_t ng = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        size_t k = key_hash(&r[i]) & (cap - 1);
        while (slot[k] && !same_gpu(g[slot[k] - 1].first, &r[i]))
            k = (k + 1) & (cap - 1);
        if (!slot[k]) {
            g[ng] = (struct grp){&r[i], (uint32_t)ng};
            slot[k] = (uint32_t)++ng;
        }
        gid[i] = slot[k] - 1;
    }
    if (!rc && !(at = calloc(ng + 1, sizeof *at)))
        rc = GP_ENOMEM;
    if (!rc) {
        qsort(g, ng, sizeof *g, grp_cmp);
        /* at[id]: where group id starts in the output */
        for (size_t i = 0; i < n; i++)
            at[gid[i] + 1]++;
        uint32_t *cnt = slot; /* reused: counts by rank */
        memset(cnt, 0, (ng + 1) * sizeof *cnt);
        for (size_t j = 0; j < ng; j++)
            cnt[j + 1] = cnt[j] + at[g[j].id + 1];
        for (size_t j = 0; j < ng; j++)
            at[g[j].id] = cnt[j];
        for (size_t i = 0; i < n; i++) {
            out[at[gid[i]]] = r[i];
            out[at[gid[i]]++].grp = gid[i];
        }
        free(r);
        *rows = out;
        out = NULL;
    }
    free(slot);
    free(gid);
    free(g);
    free(at);
    free(out);
    return rc;
}

/* Selects and sorts the GPU rows. Caller frees *rows and the selection. */
static int gpu_rows(struct gp_storage *st, struct gp_store_selection *sel, struct row **rows,
                    size_t *nrows, char *err, size_t errlen)
{
    struct gp_matcher m;
    *rows = NULL;
    *nrows = 0;
    int rc = gp_matcher_init(&m, GP_MATCH_RE, "__name__", "DCGM_FI_.*|gpulse_gpu_.*", err, errlen);
    if (rc)
        return rc;
    rc = gp_storage_select(st, &m, 1, INT64_MIN, INT64_MAX, sel);
    gp_matcher_free(&m);
    if (rc)
        return gp_seterr(err, errlen, rc, "selecting GPU series: %s", gp_strerror(rc));
    struct row *r = malloc((sel->n ? sel->n : 1) * sizeof *r);
    if (!r)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < sel->n; i++) {
        const struct gp_store_series *s = &sel->series[i];
        struct row x = {.s = s};
        struct gp_str host = {NULL, 0}, ln, lv;
#define W(n, d) {n, sizeof n - 1, d}
        const struct {
            const char *name;
            size_t len;
            struct gp_str *dst;
        } want[] = {W("Hostname", &x.node),    W("hostname", &host),     W("gpu", &x.gpu),
                    W("GPU_I_ID", &x.mig),     W("__name__", &x.name),   W("UUID", &x.uuid),
                    W("modelName", &x.model),  W("DCGM_FI_DRIVER_VERSION", &x.driver),
                    W("vendor", &x.vendor),    W("GPU_I_PROFILE", &x.profile),
                    W("simulated", &x.simulated)};
#undef W
        struct gp_labels_iter it;
        gp_labels_iter_init(&it, s->labels, s->labels_len);
        while (gp_labels_next(&it, &ln, &lv) == 1)
            for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
                if (ln.len == want[k].len && !memcmp(ln.ptr, want[k].name, ln.len)) {
                    *want[k].dst = lv;
                    break;
                }
        if (!x.node.ptr)
            x.node = host;
        if (!x.node.ptr || !x.gpu.ptr)
            continue;
        if (!x.mig.ptr)
            x.mig = (struct gp_str){"", 0};
        r[n++] = x;
    }
    int grc = group_rows(&r, n);
    if (grc) {
        free(r);
        return gp_seterr(err, errlen, grc, "out of memory");
    }
    *rows = r;
    *nrows = n;
    return GP_OK;
}

static void put_str_or_null(struct gp_buf *out, struct gp_str v)
{
    if (v.len)
        gp_json_str(out, v.ptr, v.len);
    else
        gp_buf_puts(out, "null");
}

static void put_gpu(struct gp_buf *out, const struct gpu *g)
{
    gp_buf_puts(out, "{\"node\":");
    gp_json_str(out, g->node.ptr, g->node.len);
    gp_buf_puts(out, ",\"gpu\":");
    gp_json_str(out, g->gpu.ptr, g->gpu.len);
    if (g->mig.len) {
        gp_buf_puts(out, ",\"gpu_instance\":");
        gp_json_str(out, g->mig.ptr, g->mig.len);
        gp_buf_puts(out, ",\"profile\":");
        put_str_or_null(out, g->profile);
    }
    gp_buf_puts(out, ",\"uuid\":");
    put_str_or_null(out, g->uuid);
    gp_buf_puts(out, ",\"model\":");
    put_str_or_null(out, g->model);
    gp_buf_puts(out, ",\"memory_bytes\":");
    if (isnan(g->memory))
        gp_buf_puts(out, "null");
    else
        gp_buf_put_u64(out, (unsigned long long)llround(g->memory));
    gp_buf_puts(out, ",\"driver\":");
    put_str_or_null(out, g->driver);
    gp_buf_puts(out, ",\"vendor\":");
    put_str_or_null(out, g->vendor);
    gp_buf_puts(out, ",\"last_seen\":");
    gp_json_time(out, g->last_seen);
    gp_buf_puts(out, g->simulated ? ",\"simulated\":true}" : ",\"simulated\":false}");
}

static int view_cmp(const void *a, const void *b)
{
    return str_cmp(*(const struct gp_str *)a, *(const struct gp_str *)b);
}

/* Writes one node from its GPUs [a, b); models is scratch for b - a. */
static void put_node(struct gp_buf *out, const struct gpu *a, const struct gpu *b,
                     struct gp_str *models)
{
    size_t ngpus = 0, nm = 0;
    int64_t last = INT64_MIN;
    int simulated = 0;
    for (const struct gpu *g = a; g < b; g++) {
        /* MIG instances of one GPU are adjacent: count the GPU once. */
        if (g == a || str_cmp(g->gpu, g[-1].gpu))
            ngpus++;
        if (g->model.len)
            models[nm++] = g->model;
        if (g->last_seen > last)
            last = g->last_seen;
        simulated |= g->simulated;
    }
    qsort(models, nm, sizeof *models, view_cmp);
    gp_buf_puts(out, "{\"node\":");
    gp_json_str(out, a->node.ptr, a->node.len);
    gp_buf_puts(out, ",\"gpus\":");
    gp_buf_put_u64(out, ngpus);
    gp_buf_puts(out, ",\"models\":[");
    for (size_t i = 0; i < nm; i++) {
        if (i && !str_cmp(models[i], models[i - 1]))
            continue;
        if (i)
            gp_buf_putc(out, ',');
        gp_json_str(out, models[i].ptr, models[i].len);
    }
    gp_buf_puts(out, "],\"last_seen\":");
    gp_json_time(out, last);
    gp_buf_puts(out, simulated ? ",\"simulated\":true}" : ",\"simulated\":false}");
}

/* Both answers: the GPUs built once, then written as GPUs or as nodes. */
static int inventory(struct gp_storage *st, int nodes, struct gp_buf *out, char *err, size_t errlen)
{
    size_t mark_len = out->len;
    int mark_err = out->err;
    struct gp_store_selection sel = {0};
    struct gp_samples smp = {0};
    struct row *rows = NULL;
    struct gpu *gpus = NULL;
    struct gp_str *models = NULL;
    size_t nrows, ngpus = 0;
    int rc = gpu_rows(st, &sel, &rows, &nrows, err, errlen);
    if (rc)
        goto done;
    gpus = malloc((nrows ? nrows : 1) * sizeof *gpus);
    models = malloc((nrows ? nrows : 1) * sizeof *models);
    if (!gpus || !models) {
        rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < nrows;) {
        size_t j = i + 1;
        while (j < nrows && rows[j].grp == rows[i].grp)
            j++;
        build_gpu(st, &rows[i], &rows[j], &gpus[ngpus++], &smp);
        i = j;
    }
    gp_buf_puts(out, "{\"status\":\"success\",\"data\":[");
    for (size_t i = 0; i < ngpus;) {
        size_t j = i + 1;
        if (nodes) {
            while (j < ngpus && !str_cmp(gpus[j].node, gpus[i].node))
                j++;
            if (i)
                gp_buf_putc(out, ',');
            put_node(out, &gpus[i], &gpus[j], models);
        } else {
            if (i)
                gp_buf_putc(out, ',');
            put_gpu(out, &gpus[i]);
        }
        i = j;
    }
    gp_buf_puts(out, "]}");
    if (out->err)
        rc = gp_seterr(err, errlen, out->err, "writing the inventory: %s", gp_strerror(out->err));
done:
    if (rc) {
        out->len = mark_len;
        out->err = mark_err;
        if (out->data)
            out->data[out->len] = '\0';
    }
    free(models);
    free(gpus);
    free(rows);
    gp_samples_free(&smp);
    gp_storage_selection_free(&sel);
    return rc;
}

int gp_query_nodes(struct gp_storage *s, struct gp_buf *out, char *err, size_t errlen)
{
    return inventory(s, 1, out, err, errlen);
}

int gp_query_gpus(struct gp_storage *s, struct gp_buf *out, char *err, size_t errlen)
{
    return inventory(s, 0, out, err, errlen);
}
