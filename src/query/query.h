/*
 * query.h - the read side of the server's API: range queries, series,
 * labels and the node/GPU inventory, rendered as JSON in the envelope of
 * Prometheus's HTTP API ({"status":"success","data":...}) so existing
 * Prometheus clients can read the answers.
 *
 * Range evaluation (docs/api.md says it to users): for each series and
 * each step time t in start, start+step, ... <= end, the series' value is
 * the mean of its samples in (t - step, t]; when that window is empty, the
 * newest sample in (t - 5m, t] (Prometheus's lookback), and nothing when
 * that sample is the stale marker. With agg=min or agg=max the per-series
 * value is the window's min or max instead of its mean, so peaks survive
 * downsampling (what an OOM forecast needs). agg then combines the series
 * that share the `by` labels, as PromQL's `avg by (...)` does; without agg
 * every series is returned as it is. When step is a multiple of a minute
 * (and start is minute-aligned), or the range starts before the raw
 * retention (raw_since_ms below), windows are read from the 1-minute
 * rollups, which also reach past the raw retention.
 *
 * On raw samples this is a PromQL expression (gp_query_form_promql)
 * evaluated by the PromQL engine (promql.h), so the form agrees with
 * query=; on rollups, which the engine does not read, eval.c computes the
 * same meaning from the minutes (docs/api.md says how they differ).
 */
#ifndef GP_QUERY_QUERY_H
#define GP_QUERY_QUERY_H

#include "lib/buf.h"
#include "store/matcher.h"
#include "storage/storage.h"

#include <stddef.h>
#include <stdint.h>

enum gp_agg { GP_AGG_NONE, GP_AGG_AVG, GP_AGG_MIN, GP_AGG_MAX, GP_AGG_SUM, GP_AGG_COUNT };

#define GP_QUERY_MAX_BY 16
#define GP_QUERY_MAX_POINTS 11000 /* per series, as Prometheus caps a range query */
#define GP_QUERY_LOOKBACK_MS (5 * 60 * 1000)
/* Series one range query may select (added to the contract: a selector
 * that matches the whole store is refused, not evaluated for minutes). */
#define GP_QUERY_MAX_SERIES 100000

struct gp_promql_limits; /* query/promql.h */

struct gp_range_query {
    const struct gp_matcher *m;
    size_t nm;
    int64_t start_ms, end_ms, step_ms;
    enum gp_agg agg;
    const char *by[GP_QUERY_MAX_BY]; /* label names, NUL-terminated */
    size_t nby;
    int rollups; /* -1 automatic (above), 0 never, 1 always (step a multiple of 1m) */
    /* Oldest time raw samples are kept (the server's clock less
     * retention_raw; 0: unknown). Automatic rollups also serve a range
     * that starts before it, on the whole minutes that cover it (start
     * rounded down, step up to a multiple of 1m): raw samples are gone
     * there. An answer read from rollups says so in its data
     * ("resolution": "1m") with the grid it judged ("start", "end",
     * "step"); raw answers keep Prometheus's exact shape. */
    int64_t raw_since_ms;
    /* The server's PromQL limits (query_max_samples, query_timeout,
     * query_lookback_delta); NULL: the engine's defaults. The form's
     * windows are left-open whatever lim->prom3_windows says. */
    const struct gp_promql_limits *lim;
};

/* Parses a time: Unix seconds with an optional fraction ("1700000000.5")
 * or RFC 3339 ("2026-11-22T10:00:00Z", "...+01:00", fractional seconds).
 * GP_OK or GP_EPARSE with detail. */
int gp_parse_time_ms(const char *s, int64_t *ms, char *err, size_t errlen);

/* Parses a step or duration: "15s", "1m30s", "100ms", or seconds ("15",
 * "0.5"). Must be > 0. GP_OK or GP_EPARSE. */
int gp_parse_step_ms(const char *s, int64_t *ms, char *err, size_t errlen);

/* Parses "avg", "min", "max", "sum", "count" ("" or NULL: none). */
int gp_parse_agg(const char *s, enum gp_agg *agg);

/*
 * Evaluates q and appends the whole JSON answer to out:
 * {"status":"success","data":{"resultType":"matrix","result":[{"metric":{...},"values":[[t,"v"],...]}]}}
 * Times are Unix seconds (a JSON number, fraction when needed), values
 * strings as Prometheus writes them ("NaN", "+Inf", "-Inf"). Returns GP_OK,
 * GP_EUSAGE (bad range: end < start, too many points or series, by
 * without agg, rollups=1 with a step they cannot serve) with detail, or
 * GP_ENOMEM / GP_EIO / GP_ETOOBIG (the answer outgrew out's cap), and
 * where the engine evaluates, its GP_ERANGE (q->lim's samples cap) or
 * GP_PROMQL_ETIMEOUT (q->lim's timeout). On any
 * error out is left as it was on entry (these functions all do that), so
 * the caller can append gp_query_error to it.
 */
int gp_query_range(struct gp_storage *s, const struct gp_range_query *q, struct gp_buf *out, char *err,
                   size_t errlen);

/*
 * The PromQL that q's form means on raw samples, appended to out:
 *   with agg:    AGG by (BY) (F_over_time(SEL[STEP]) or SEL * 1)
 *   without agg: label_replace(avg_over_time(SEL[STEP]) or SEL * 1,
 *                              "__name__", "NAME", "", "")
 * with F min or max for agg=min/max, else avg; `or SEL * 1` is the
 * lookback fallback of an empty window (left out when step >= the
 * lookback, q->lim's or 5m: the window then holds the lookback). Without
 * agg, SEL must name one metric (one __name__="NAME" matcher): the window
 * function drops __name__ and label_replace puts it back, and
 * gp_query_range evaluates a selector of several metrics one name at a
 * time. Evaluated with left-open windows (--query.prom3-windows), it is
 * what gp_query_range answers on raw samples. GP_OK, GP_EUSAGE (no
 * selector, bad by, no agg and not one name) or out's error.
 */
int gp_query_form_promql(const struct gp_range_query *q, struct gp_buf *out);

/* {"status":"success","data":[{labels}, ...]}: series matching any of the
 * nsel selectors (each an array of matchers) with samples in [start, end]. */
int gp_query_series(struct gp_storage *s, const struct gp_matcher *const *sel, const size_t *nm,
                    size_t nsel, int64_t start_ms, int64_t end_ms, struct gp_buf *out, char *err,
                    size_t errlen);

/* {"status":"success","data":["name", ...]} */
int gp_query_labels(struct gp_storage *s, struct gp_buf *out, char *err, size_t errlen);
int gp_query_label_values(struct gp_storage *s, const char *name, struct gp_buf *out, char *err,
                          size_t errlen);

/*
 * Label names (name NULL) or the values of label name, of the series
 * that match any of the nsel selectors (none: every series) and, when
 * start or end is given (not INT64_MIN / INT64_MAX), have samples in
 * [start, end] -- Prometheus's /api/v1/labels and
 * /api/v1/label/NAME/values with match[], start and end. Sorted and
 * unique, in the envelope above. On the remote backend the time range is
 * not applied (the cluster's index answers for the selectors). GP_OK,
 * GP_EUSAGE (end before start), GP_ENOMEM, GP_ENET, GP_ETOOBIG.
 */
int gp_query_label_list(struct gp_storage *s, const char *name, const struct gp_matcher *const *sel,
                        const size_t *nm, size_t nsel, int64_t start_ms, int64_t end_ms,
                        struct gp_buf *out, char *err, size_t errlen);

/*
 * What the inventory keeps of the GPU series between requests
 * (inventory.c), for one storage over its life: NULL to the queries below
 * builds it for the one request. Thread-safe (requests take turns).
 */
struct gp_inventory;
int gp_inventory_new(struct gp_inventory **out); /* GP_OK or GP_ENOMEM */
void gp_inventory_free(struct gp_inventory *inv); /* accepts NULL */

/*
 * Inventory from the stored series (dcgm-exporter labels: Hostname or
 * hostname, gpu, UUID, modelName, DCGM_FI_DRIVER_VERSION; memory from
 * gpulse_gpu_memory_total_bytes or DCGM_FI_DEV_FB_USED + FB_FREE).
 * nodes: {"status":"success","data":[{"node":..,"gpus":N,"models":[..],
 *          "last_seen":t,"simulated":bool}, ...]}
 * gpus:  {"status":"success","data":[{"node":..,"gpu":"0","uuid":..,
 *          "model":..,"memory_bytes":N,"driver":..,"last_seen":t}, ...]}
 */
int gp_query_nodes(struct gp_inventory *inv, struct gp_storage *s, struct gp_buf *out, char *err,
                   size_t errlen);
int gp_query_gpus(struct gp_inventory *inv, struct gp_storage *s, struct gp_buf *out, char *err,
                  size_t errlen);

/*
 * Brings inv up to date with the GPU series of s now, so that the next
 * request reads no label set it has not met: the server calls it at
 * start-up and every few seconds after (gpus_api.c). It reads at most
 * slice (> 0) new label sets under one hold of the store's and inv's
 * locks, letting both go between slices. GP_OK, GP_EUSAGE, GP_ENOMEM,
 * or the store's error with detail.
 */
int gp_inventory_warm(struct gp_inventory *inv, struct gp_storage *s, uint32_t slice, char *err,
                      size_t errlen);

/* What inv holds: label sets parsed over its life, series and GPUs kept. */
struct gp_inventory_stats {
    uint64_t label_reads;
    uint32_t series, gpus;
};
void gp_inventory_stats(struct gp_inventory *inv, struct gp_inventory_stats *out);

/* One series of a GPU (gp_inventory_each_gpu); strings as the GPU's. */
struct gp_inv_series {
    uint32_t id;
    int kind; /* index of its name in the names asked for */
    int64_t last_ms;
    struct gp_str job, model, rank, uuid, reason; /* labels; "" absent */
};
/* A GPU: (Hostname or hostname, gpu, GPU_I_ID), "" when absent, and its
 * series, by kind, newest first (equal ones in id order). */
struct gp_inv_gpu {
    struct gp_str node, gpu, mig;
    const struct gp_inv_series *series;
    size_t n;
};
/* Called per GPU, then once with NULL; nonzero stops (and is returned).
 * Every string is valid until the call with NULL returns. */
typedef int (*gp_inventory_gpu_fn)(void *arg, const struct gp_inv_gpu *g);

/*
 * The fleet's tiles (/api/v1/fleet/gpus) from inv's cache: calls fn for
 * each GPU (in no set order) with its series named in names[0..nnames)
 * (at most 127) that have a sample in [t0, t1], as gp_storage_select
 * would select them; GPUs with none are left out. GP_OK, GP_ENOMEM, the
 * store's error with detail, or fn's.
 */
int gp_inventory_each_gpu(struct gp_inventory *inv, struct gp_storage *s, const char *const *names,
                          size_t nnames, int64_t t0, int64_t t1, gp_inventory_gpu_fn fn, void *arg,
                          char *err, size_t errlen);

/* m: __name__ =~ "names[0]|names[1]|..." (names are literal metric
 * names). GP_OK, GP_ENOMEM, or gp_matcher_init's error with detail. */
int gp_query_names_matcher(struct gp_matcher *m, const char *const *names, size_t n, char *err,
                           size_t errlen);

/* {"status":"error","errorType":type,"error":msg}, as Prometheus answers. */
void gp_query_error(struct gp_buf *out, const char *type, const char *msg);

#endif
