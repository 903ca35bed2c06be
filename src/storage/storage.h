/*
 * storage.h - the one storage interface of `gpulse server`.
 *
 * DESIGN.md "Storage": the server keeps its samples either in the embedded
 * store (store/store.h) or, when one machine is outgrown, in a
 * Prometheus-compatible cluster (VictoriaMetrics, Mimir, Thanos,
 * Prometheus itself) that it writes to by remote write and reads back
 * through the Prometheus HTTP API. Everything above this header (the API,
 * the detectors, the rules, the jobs scanner, the dashboard, the reports)
 * talks to a `struct gp_storage` and cannot tell the two apart.
 *
 * Parts:
 *   storage.c           the handle, its small table of operations (nvtop's
 *                       vendor table: one struct of function pointers per
 *                       backend) and the functions that dispatch through it
 *   storage_embedded.c  the backend over store/store.h (gp_store_*)
 *   storage_remote.c    the backend over HTTP: writes go through the
 *                       remote-write sender the agent uses (ingest/push.h: the same
 *                       queue and disk buffer), reads through promapi.h
 *   promapi.c           the parser of Prometheus HTTP API answers
 *   storage_window.c    the remote backend's local window: the recent
 *                       writes in an embedded store, answering recent reads
 *   storage_refill.c    the window's refill from the cluster at start
 *   storage_rollups.c   a selection's 1-minute rollups at once, computed by
 *                       the cluster where they would move raw samples
 *
 * Series ids: the embedded store names series by its own ids; the remote
 * backend hands out ids of its own, stable for the life of the process,
 * from a registry of the label sets it has seen. Callers keep ids only
 * between a select and the reads that follow it, so both kinds serve.
 *
 * Types: selections, samples, rollups and stats are the store's own types
 * (store/store.h), so code above reads them as before.
 */
#ifndef GP_STORAGE_STORAGE_H
#define GP_STORAGE_STORAGE_H

#include "lib/buf.h"
#include "ingest/remote_write.h"
#include "lib/metric_sink.h"
#include "store/store.h"

#include <stddef.h>
#include <stdint.h>

enum gp_storage_kind { GP_STORAGE_EMBEDDED, GP_STORAGE_REMOTE };

#define GP_STORAGE_MAX_HEADERS 8

/* Remote backend settings (DESIGN.md "Outgrowing one machine"). */
struct gp_storage_remote_options {
    const char *write_url;   /* remote-write endpoint, e.g. http://vm:8428/api/v1/write */
    const char *query_url;   /* Prometheus HTTP API root, e.g. http://vm:8428 (…/api/v1/ appended) */
    const char *buffer_dir;  /* disk buffer of the write queue; NULL or "": memory */
    uint64_t buffer_max;     /* bytes of disk buffer; 0: 1 GiB */
    int64_t write_timeout_ms;/* one remote-write request; 0: 30 s */
    int64_t query_timeout_ms;/* one query; 0: 30 s */
    int64_t lookback_ms;     /* how far back unbounded selections look; 0: 15 min */
    const char *bearer_token_file; /* NULL or "": none */
    const char *basic_user;        /* NULL or "": none */
    const char *basic_password_file;
    const char *headers[GP_STORAGE_MAX_HEADERS]; /* "Name: value", sent with every request */
    size_t nheaders;
    size_t max_series;       /* ids handed out at most; 0: 10 million */
    /* The recent window kept locally (docs/storage.md "The local window"):
     * writes that pass through are stored in an embedded store under
     * window_dir too, reads from window_ms ago on are answered from it.
     * 0 or no window_dir: none, every read asks the cluster. */
    int64_t window_ms;
    const char *window_dir;
    /* Several servers on one cluster (docs/storage.md): this one's name,
     * added as gpulse_server=NAME to every series it forwards (and keeps
     * in its window); the window then answers only this server's own
     * part, and job-scoped reads (a matcher on `job`) go to the cluster,
     * where every server's ranks are. NULL or "": the only server. */
    const char *server_name;
};

struct gp_storage_options {
    enum gp_storage_kind kind;
    struct gp_store_options store;          /* GP_STORAGE_EMBEDDED */
    struct gp_storage_remote_options remote; /* GP_STORAGE_REMOTE */
};

struct gp_storage;

/* Opens the storage of o->kind. Same returns as gp_store_open, and for
 * remote: GP_ECONFIG (a URL, token file or header that cannot be used).
 * The remote backend does not contact the cluster at open: an outage at
 * start delays writes (buffered) and fails queries (GP_ENET) until it
 * ends. Caller closes. */
int gp_storage_open(struct gp_storage **out, const struct gp_storage_options *o, char *err,
                    size_t errlen);

/* Wraps an open embedded store (tests, tools); own: close it with the
 * storage. GP_OK or GP_ENOMEM. */
int gp_storage_wrap(struct gp_storage **out, struct gp_store *st, int own);

/* Closes (the remote backend first gives its queue a few seconds to
 * drain; the disk buffer keeps the rest). Accepts NULL. */
void gp_storage_close(struct gp_storage *s);

enum gp_storage_kind gp_storage_kind(const struct gp_storage *s);

/* This server's name among several on one cluster (remote_server_name),
 * or NULL: embedded, or the only server. */
const char *gp_storage_server_name(struct gp_storage *s);

/* The embedded store behind s, or NULL for remote (maintenance and
 * compaction exist only there). */
struct gp_store *gp_storage_store(struct gp_storage *s);

/* As gp_store_append. Remote: the request is encoded once more and queued
 * for the cluster (durable in the disk buffer when one is configured);
 * every sample counts as accepted, the cluster judges order later. */
int gp_storage_append(struct gp_storage *s, const struct gp_batch *req,
                      struct gp_append_result *res, char *err, size_t errlen);

/* As gp_store_select, plus GP_ENET when the cluster cannot be asked or
 * answers an error (gp_storage_last_error says what). Remote: an
 * unbounded mint looks back lookback_ms from now; first_ms/last_ms are
 * those of the samples in the window fetched. Free with
 * gp_storage_selection_free (either kind). */
int gp_storage_select(struct gp_storage *s, const struct gp_matcher *m, size_t nm, int64_t mint,
                      int64_t maxt, struct gp_store_selection *out);
void gp_storage_selection_free(struct gp_store_selection *sel);

/* As gp_storage_select, visiting each series (gp_store_select_each):
 * without a copy of the labels where the backend reads a local store
 * (embedded, the remote window); elsewhere fn sees the labels at once.
 * fn must not call the storage. */
int gp_storage_select_each(struct gp_storage *s, const struct gp_matcher *m, size_t nm, int64_t mint,
                           int64_t maxt, gp_store_series_fn fn, void *arg);

/*
 * As gp_storage_select, for a caller that will read only samples at or
 * after since (and newest values among them): the detectors, whose
 * ticks re-read only the newest part of their window. Remote: only
 * those samples are moved, plus the names of the series the range
 * holds; for a series with no sample since, last_ms is since - 1 and
 * first_ms mint (bounds, not sample times). since <= mint: as select.
 */
int gp_storage_select_since(struct gp_storage *s, const struct gp_matcher *m, size_t nm,
                            int64_t mint, int64_t maxt, int64_t since, struct gp_store_selection *out);

/* As gp_store_read / gp_store_read_rollups / gp_store_newest_value, plus
 * GP_ENET for remote (reads covered by a live selection's window are
 * answered from what it fetched, without a request). */
int gp_storage_read(struct gp_storage *s, uint32_t id, int64_t mint, int64_t maxt,
                    struct gp_samples *out);
int gp_storage_read_rollups(struct gp_storage *s, uint32_t id, int64_t mint, int64_t maxt,
                            struct gp_rollups *out);
double gp_storage_newest_value(struct gp_storage *s, uint32_t id, int64_t last_ms,
                               int64_t lookback_ms, struct gp_samples *scratch);

/*
 * The 1-minute rollups of every series of sel for the minutes that
 * overlap [mint, maxt], into out[0..sel->n) (parallel to sel->series;
 * the caller frees each). What gp_storage_read_rollups gives each, but
 * where the reads would move raw samples from the cluster
 * (gp_storage_pushdown) the cluster computes the minutes: one PromQL
 * request per metric name (storage_rollups.c), a few numbers a minute
 * instead of every sample. With cuts (ncuts > 0) a minute's min and max
 * may be its mean (sum / count) where its samples straddle no cut (none
 * has min < cut <= max): for a caller that needs only on which side of
 * each cut a minute's samples lie and their sum, the cluster then sends
 * them only for the minutes that straddle one; cuts with ncuts 0: never
 * (a caller that needs counts and sums). A damaged chunk counts as read. GP_OK, GP_ENOMEM, GP_ENET (out then empty).
 */
int gp_storage_read_rollups_all(struct gp_storage *s, const struct gp_store_selection *sel,
                                int64_t mint, int64_t maxt, const double *cuts, size_t ncuts,
                                struct gp_rollups *out);

/*
 * Selects (as gp_storage_select) the series like x[0..n): matchers of
 * every label all of them carry, `=` where they agree, `=~` of the values
 * where they differ (left out past GP_SELECT_LIKE_RE_MAX bytes): those
 * series and perhaps a few more (the caller matches by labels). What a
 * caller uses to read a handful of known series in one request rather
 * than one each. n 0: an empty selection.
 */
#define GP_SELECT_LIKE_LABELS 32
#define GP_SELECT_LIKE_RE_MAX 8192
int gp_storage_select_like(struct gp_storage *s, const struct gp_store_series *const *x, size_t n,
                           int64_t mint, int64_t maxt, struct gp_store_selection *out);

/* As gp_store_label_names / gp_store_label_values, plus GP_ENET, over
 * the series with samples in [start_ms, end_ms] (INT64_MIN and INT64_MAX:
 * every series the index holds); fn may hear a string more than once. */
int gp_storage_label_names(struct gp_storage *s, const struct gp_matcher *m, size_t nm,
                           int64_t start_ms, int64_t end_ms,
                           void (*fn)(void *arg, const char *name, size_t len), void *arg);
int gp_storage_label_values(struct gp_storage *s, const char *name, const struct gp_matcher *m,
                            size_t nm, int64_t start_ms, int64_t end_ms,
                            void (*fn)(void *arg, const char *value, size_t len), void *arg);

/* A PromQL query for a backend that evaluates PromQL itself. */
struct gp_storage_promql {
    const char *query;     /* the expression, as the client sent it */
    int range;             /* 0: instant at time_ms; 1: range start..end by step */
    int64_t time_ms, start_ms, end_ms, step_ms;
    int64_t timeout_ms;    /* 0: the backend's own query timeout */
    int exact_grid;        /* 1: the steps at start + k*step exactly (VictoriaMetrics
                            * aligns them to its cache otherwise: nocache=1) */
};

/*
 * Remote: sends q to the cluster as PromQL (POST /api/v1/query or
 * /api/v1/query_range), so the cluster computes it (DESIGN.md "never raw
 * samples where an aggregate will do"). The cluster's answer body goes
 * to out (appended) and its HTTP status to *status: GP_OK when it
 * answered in Prometheus's JSON, success or error (400 bad_data, 422
 * execution, 503 timeout are relayed as they are); GP_ENET when it could
 * not be asked or answered something else (gp_storage_last_error says
 * what); GP_ENOMEM. Embedded: GP_EUNSUPPORTED, the caller evaluates
 * (query/promql.h).
 */
int gp_storage_promql(struct gp_storage *s, const struct gp_storage_promql *q, struct gp_buf *out,
                      int *status);

/*
 * Pushing an aggregate down (docs/storage.md "Old reads: aggregates, not
 * raw samples"): 1 when the reads of the series m chooses from mint on
 * would move raw samples from the cluster (remote mode, and the local
 * window does not hold them, or they are job-scoped), so a caller that
 * wants an aggregate of them per step asks the cluster for it as PromQL
 * with gp_storage_promql_matrix instead. 0: embedded, or held here.
 */
int gp_storage_pushdown(struct gp_storage *s, const struct gp_matcher *m, size_t nm, int64_t mint);

/* A range PromQL query (q->range 1) the cluster evaluates, its matrix
 * parsed into out (free with gp_promapi_result_free, also after an
 * error). GP_ENET when the cluster cannot be asked or answers an error
 * (gp_storage_last_error: its Prometheus error), GP_ENOMEM, GP_ETOOBIG;
 * GP_EUNSUPPORTED for embedded. */
struct gp_promapi_result;
int gp_storage_promql_matrix(struct gp_storage *s, const struct gp_storage_promql *q,
                             struct gp_promapi_result *out);

/* As gp_store_stats; remote fills series (ids handed out) and
 * samples_appended (samples queued for the cluster). */
void gp_storage_stats(struct gp_storage *s, struct gp_store_stats *st);

/* As gp_store_write_paused; remote: 0 (its queue buffers on disk). */
int gp_storage_write_paused(struct gp_storage *s, char *why, size_t whylen);

/* Entries of one metadata request to the cluster: Prometheus's
 * metadata_config.max_samples_per_send default. */
#define GP_STORAGE_META_PER_REQUEST 500

/*
 * Hands the families' metadata (TYPE, HELP, unit) to the cluster, as
 * Prometheus's remote write does every metadata send_interval: remote:
 * requests of metadata alone (GP_STORAGE_META_PER_REQUEST entries each)
 * through the write queue, behind the samples already queued; embedded:
 * nothing (the server answers /api/v1/metadata itself). Returns GP_OK,
 * or GP_EUSAGE / GP_ETOOBIG / GP_ENOMEM from the encoder, with detail
 * in err (the entries before the failing request were queued).
 */
int gp_storage_send_metadata(struct gp_storage *s, const struct gp_family_meta *m, size_t n, char *err,
                             size_t errlen);

/* Walks the backend's own /metrics families into out (remote:
 * gpulse_storage_remote_* and the write queue's gpulse_push_*; embedded:
 * nothing). */
void gp_storage_walk_metrics(struct gp_storage *s, struct gp_metric_sink *out);

/* The detail of this thread's last GP_ENET from s ("" when none):
 * "GET http://vm:8428/api/v1/query: connection refused". */
const char *gp_storage_last_error(void);

/* Forgets this thread's last error (at the start of each API request). */
void gp_storage_clear_error(void);

/* The HTTP status that fits this thread's last GP_ENET: 503 when the
 * cluster did not answer, 502 when it answered an error or nonsense. */
int gp_storage_last_error_status(void);

/* The store's rollup of raw samples (t ascending) for minutes overlapping
 * [mint, maxt], appended to out: what both backends give for minutes
 * without stored rollups. GP_OK or GP_ENOMEM. */
int gp_storage_rollups_of(const struct gp_samples *x, int64_t mint, int64_t maxt,
                          struct gp_rollups *out);

/* The whole minutes that overlap [mint, maxt]: the raw samples a rollup
 * of that range is made from. */
void gp_storage_rollup_span(int64_t mint, int64_t maxt, int64_t *from, int64_t *to);

#endif
