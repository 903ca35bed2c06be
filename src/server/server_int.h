/*
 * server_int.h - what the server's files share: the struct, the routes,
 * the counters. Not for other modules (they use server.h).
 *
 * Counters are plain uint64_t updated with relaxed atomics: /metrics
 * reads them without a lock, and a request never waits for a scrape.
 */
#ifndef GP_SERVER_INT_H
#define GP_SERVER_INT_H

#include "insight/alert_event.h"
#include "query/cost.h"
#include "net/http.h"
#include "insight/remediate.h"
#include "server/jobs.h"
#include "server/metadata.h"
#include "server/server.h"
#include "storage/storage.h"
#include "lib/metric_sink.h"
#include "lib/periodic.h"

#include <pthread.h>
#include <stdint.h>

/* Pointers only: server/jobs.h and the insight headers each define a
 * struct gp_job (the registry's and the frame's), so no file includes
 * both; files include what they use. */
struct gp_jobs;
struct gp_alerts;
struct gp_engine;
struct gp_rules;
struct gp_promrules;
struct gp_promrules_run;
struct gp_srv_notify;
struct gp_srv_streams;
struct gp_srv_self;
struct gp_srv_mfwd;

enum gp_srv_state { GP_SRV_STARTING, GP_SRV_READY };

/* Routes, in the order /metrics names them (handler="..."). */
#define GP_SRV_ROUTES(X)                        \
    X(WRITE, "write")                           \
    X(QUERY_RANGE, "query_range")               \
    X(SERIES, "series")                         \
    X(LABELS, "labels")                         \
    X(LABEL_VALUES, "label_values")             \
    X(NODES, "nodes")                           \
    X(GPUS, "gpus")                             \
    X(JOBS, "jobs")                             \
    X(JOB, "job")                               \
    X(RECOMMENDATIONS, "recommendations")       \
    X(AUDIT, "audit")                           \
    X(FLEET, "fleet")                           \
    X(COST, "cost")                             \
    X(ALERTS, "alerts")                         \
    X(ALERT, "alert")                           \
    X(SILENCES, "silences")                     \
    X(SILENCE, "silence")                       \
    X(NOTIFICATIONS, "notifications")           \
    X(HEALTH, "health")                         \
    X(PREFLIGHT, "preflight")                   \
    X(METRICS, "metrics")                       \
    X(FLEET_GPUS, "fleet_gpus")                 \
    X(FLEET_FUNNEL, "fleet_funnel")             \
    X(STREAM, "stream")                         \
    X(ALERT_ACK, "alert_ack")                   \
    X(JOB_REPORT, "job_report")                 \
    X(SNAPSHOT, "snapshot")                     \
    X(QUERY, "query")                           \
    X(METADATA, "metadata")                     \
    X(BUILDINFO, "buildinfo")                   \
    X(EXEMPLARS, "query_exemplars")             \
    X(FORMAT_QUERY, "format_query")             \
    X(PROM_ALERTS, "prom_alerts")               \
    X(RULES, "rules")                           \
    X(HEALTH_NODES, "health_nodes")             \
    X(HEALTH_NODE, "health_node")               \
    X(HEALTH_MARK, "health_mark_healthy")       \
    X(WEB, "web")                               \
    X(OTHER, "other")

enum gp_srv_route {
#define GP_SRV_ROUTE_ENUM_(id, name) GP_SRV_R_##id,
    GP_SRV_ROUTES(GP_SRV_ROUTE_ENUM_)
#undef GP_SRV_ROUTE_ENUM_
    GP_SRV_R_COUNT
};

/* Why samples were not stored, as /metrics labels them. */
#define GP_SRV_REJECTS(X)       \
    X(OUT_OF_ORDER, "out_of_order") \
    X(CONFLICT, "duplicate_timestamp") \
    X(TOO_OLD, "too_old")      \
    X(SERIES_LIMIT, "series_limit") \
    X(TOO_FAR_IN_FUTURE, "too_far_in_future")

enum gp_srv_reject {
#define GP_SRV_REJ_ENUM_(id, name) GP_SRV_REJ_##id,
    GP_SRV_REJECTS(GP_SRV_REJ_ENUM_)
#undef GP_SRV_REJ_ENUM_
    GP_SRV_REJ_COUNT
};

/* Why whole write requests were refused before the store saw them. */
#define GP_SRV_REFUSALS(X)                \
    X(MALFORMED, "malformed")             \
    X(TOO_LARGE, "too_large")             \
    X(UNSUPPORTED, "unsupported_format")  \
    X(OVERLOADED, "overloaded")           \
    X(UNAVAILABLE, "unavailable")         \
    X(UNAUTHORIZED, "unauthorized")

enum gp_srv_refusal {
#define GP_SRV_REF_ENUM_(id, name) GP_SRV_REF_##id,
    GP_SRV_REFUSALS(GP_SRV_REF_ENUM_)
#undef GP_SRV_REF_ENUM_
    GP_SRV_REF_COUNT
};

#define GP_SRV_HIST_BUCKETS 14
extern const double gp_srv_hist_bounds[GP_SRV_HIST_BUCKETS]; /* seconds, ascending */

struct gp_srv_hist {
    uint64_t bucket[GP_SRV_HIST_BUCKETS]; /* not cumulative: observation counts per bucket */
    uint64_t count;
    uint64_t sum_ns;
};

/* The last preflight result of each node (preflight.c). */
struct gp_srv_preflight_node {
    char node[256];
    int64_t received_ms;
    char *doc; /* the JSON object as sent, compact */
};
struct gp_srv_preflight {
    pthread_mutex_t mu;
    unsigned n, cap;
    struct gp_srv_preflight_node *v;
    struct sqlite3 *db; /* state.db's preflight table; NULL: memory only */
};
void gp_srv_preflight_init(struct gp_srv_preflight *p);
/* Opens state.db in dir and reads the results kept there back. GP_OK,
 * GP_EIO or GP_ENOMEM, with detail. */
int gp_srv_preflight_load(struct gp_srv_preflight *p, const char *dir, char *err, size_t errlen);
void gp_srv_preflight_free(struct gp_srv_preflight *p);

struct gp_server {
    struct gp_server_config cfg;
    char write_token[GP_SERVER_TOKEN_LEN];
    char read_token[GP_SERVER_TOKEN_LEN];
    struct gp_http *http;
    struct gp_storage *store; /* set (release) once open; read with acquire */
    int state;              /* enum gp_srv_state, atomic */
    int64_t start_ms;       /* wall clock, for /metrics and health */

    uint64_t inflight;      /* bytes held by write requests being received or decoded */

    /* counters */
    uint64_t samples_ingested, samples_duplicate, series_created;
    uint64_t rejected[GP_SRV_REJ_COUNT];
    uint64_t refused[GP_SRV_REF_COUNT];
    uint64_t self_scrapes, self_scrape_failures;
    uint64_t rule_reloads[2];  /* rule_files reloads: [0] succeeded, [1] failed */
    int rules_reload_failed;   /* the last reload failed (atomic) */
    uint64_t requests[GP_SRV_R_COUNT][600]; /* by status code; [0] cut off without an answer */
    struct gp_srv_hist route_hist[GP_SRV_R_COUNT];

    struct gp_jobs *jobs;   /* the jobs registry; set with the store */
    struct gp_srv_preflight preflight; /* gpulse check's results by node */
    struct gp_srv_meta *meta; /* remote write's metric metadata (metadata.h); set with the store */
    struct gp_inventory *inventory; /* /api/v1/gpus and /nodes' cache (query.h); set with the store */
    struct gp_periodic inventory_warm; /* keeps it warm (gpus_api.c) */
    int inventory_warm_failed;         /* its last pass failed (logged once) */
    double gpu_hour_price;  /* USD, 0 when not configured */
    struct gp_rem *rem;     /* remediation hooks and their audit log; set with the store */
    struct gp_prices prices; /* per model (query/cost.h); read-only once open */
    double job_budget;      /* USD per job, 0 none */

    struct gp_rules *rules;   /* the config file's rules */
    struct gp_promrules *promrules_def; /* rule_files, loaded (taken by the run at start) */
    struct gp_promrules_run *promrules; /* their evaluation; set with the alerts */
    struct gp_alerts *alerts; /* set with the store */
    struct gp_health *health; /* GPU and node health states (insight/health.h); with the alerts */
    struct gp_engine *engine;
    struct cost_ctx *costs;   /* the budget detector's job costs (alerts_api.c) */
    struct gp_srv_notify *notify; /* config, outbox and router (notify_api.c) */
    struct gp_srv_streams *streams; /* the open SSE streams (stream.c) */
    struct gp_srv_self *self;       /* the self-scrape (selfscrape.c); NULL when off */
    struct gp_srv_mfwd *mfwd;       /* metadata to the cluster (meta_forward.c); NULL when embedded */
    struct gp_srv_freport *freport; /* the weekly funnel e-mail (funnel_report.c); NULL when off */

    pthread_mutex_t hook_mu;
    gp_server_metrics_hook hook;
    void *hook_ctx;
    gp_server_metrics_hook snapshot_hook; /* under hook_mu too */
    void *snapshot_ctx;
};

/* Per request, attached in prepare and freed in complete. */
struct gp_srv_req {
    enum gp_srv_route route;
    uint64_t reserved; /* bytes of s->inflight this request holds */
    int64_t t0_ns;
};

struct gp_storage *gp_srv_store(struct gp_server *s); /* NULL until open */
void gp_srv_count(uint64_t *c, uint64_t n);
uint64_t gp_srv_get(const uint64_t *c);
void gp_srv_observe(struct gp_srv_hist *h, int64_t ns);

/* Takes n bytes of the in-flight budget: 1, or 0 when that would pass it. */
int gp_srv_reserve(struct gp_server *s, uint64_t n);
void gp_srv_release(struct gp_server *s, uint64_t n);

/* write.c: the handler of POST /api/v1/write (body already read). */
void gp_srv_handle_write(struct gp_server *s, const struct gp_http_request *req,
                         struct gp_http_response *resp);

/* api.c: the GET routes; route is already chosen by the path. */
void gp_srv_handle_api(struct gp_server *s, enum gp_srv_route route,
                       const struct gp_http_request *req, struct gp_http_response *resp);
/* Answers an API error in Prometheus's envelope (replacing the body). */
/* The query parameter limit=N (1..max) into *out when present, else *out
 * is left alone: 1, or 0 when it answered 400 bad_data. */
int gp_srv_query_limit(const struct gp_http_request *req, struct gp_http_response *resp, size_t max,
                       size_t *out);
void gp_srv_bad(struct gp_http_response *resp, int status, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* jobs_api.c: GET /api/v1/jobs and /api/v1/jobs/ID over an open store. */
void gp_srv_handle_jobs(struct gp_server *s, struct gp_storage *st, enum gp_srv_route route,
                        const struct gp_http_request *req, struct gp_http_response *resp);

/* The bare job document of job `id` (NUL-terminated) appended to out
 * (jobs_api.c). GP_OK, GP_ENOTFOUND, GP_ENOMEM, GP_EIO or GP_ETOOBIG,
 * with detail. */
int gp_srv_job_doc(struct gp_server *s, struct gp_storage *st, const char *id, int series,
                   struct gp_buf *out, char *err, size_t errlen);

/* The document's totals.cost of job `id`, without writing the document
 * (the job model's, query/jobdoc.h); NaN when unknown. Errors as above. */
int gp_srv_job_cost(struct gp_server *s, struct gp_storage *st, const char *id, double *cost,
                    char *err, size_t errlen);

/* Its cost and goodput (the job detectors' inputs) the same way. */
struct gp_jobdoc_figures;
int gp_srv_job_figures(struct gp_server *s, struct gp_storage *st, const char *id,
                       struct gp_jobdoc_figures *fig, char *err, size_t errlen);

/* insight_api.c: GET /api/v1/recommendations and /api/v1/audit. */
void gp_srv_handle_insight(struct gp_server *s, struct gp_storage *st, enum gp_srv_route route,
                           const struct gp_http_request *req, struct gp_http_response *resp);
/* cost_api.c: GET /api/v1/fleet and /api/v1/cost over an open store. */
void gp_srv_handle_cost(struct gp_server *s, struct gp_storage *st, enum gp_srv_route route,
                        const struct gp_http_request *req, struct gp_http_response *resp);
/* The range routes' start=/end= (RFC 3339 or epoch seconds; end defaults
 * to now, start to end - 1d; at most 31 days): 1, or 0 after answering
 * 400. The GPUs' activity series in a range (SM activity, else
 * utilization), sorted by GPU and job (gp_srv_gpu_series; since as
 * gp_srv_gpu_series_since, INT64_MIN: every sample), and one
 * series' samples in it: NaNs dropped, utilization as a fraction, *n
 * left, *step their median gap (ms; 0 with one sample). */
struct gp_srv_cand;
int gp_srv_range(const struct gp_http_request *req, struct gp_http_response *resp, int64_t *start,
                 int64_t *end);
int gp_srv_activity_series(struct gp_storage *st, int64_t start, int64_t end, int64_t since,
                           struct gp_store_selection *sel, struct gp_srv_cand **c, size_t *n,
                           char *err, size_t errlen);
int gp_srv_activity_samples(struct gp_storage *st, const struct gp_srv_cand *c, int64_t start,
                            int64_t end, struct gp_samples *smp, int64_t *step, size_t *n);
/* What a value of activity series c is divided by to be a fraction. */
double gp_srv_activity_unit(const struct gp_srv_cand *c);
/* funnel_report.c: the weekly funnel e-mail's thread (after the store
 * opens; stopped before it closes), its schedule "DAY HH:MM" (0 = Monday,
 * minutes after midnight UTC) and the newest slot at or before now_ms. */
int gp_srv_funnel_report_start(struct gp_server *s, char *err, size_t errlen);
void gp_srv_funnel_report_stop(struct gp_server *s);
int gp_srv_funnel_schedule(const char *s, int *dow, int *minute, char *err, size_t errlen);
int64_t gp_srv_funnel_slot(int dow, int minute, int64_t now_ms);
/* notify_api.c: the configured receiver named name[0..len) (NULL: none)
 * and notify's external_url ("" none). */
struct gp_receiver;
const struct gp_receiver *gp_srv_notify_receiver(struct gp_server *s, const char *name, size_t len);
const char *gp_srv_notify_external_url(struct gp_server *s);
/* funnel_api.c: GET /api/v1/fleet/funnel over an open store, and its data
 * object (no envelope) over [start, end] appended to out, read from raw
 * samples (resolution GP_SRV_FUNNEL_RAW), 1-minute rollups (_ROLLUP) or
 * as the range's length and the raw retention choose (_AUTO). */
enum { GP_SRV_FUNNEL_AUTO, GP_SRV_FUNNEL_RAW, GP_SRV_FUNNEL_ROLLUP };
int gp_srv_funnel_data(struct gp_server *s, struct gp_storage *st, int64_t start, int64_t end,
                       int resolution, struct gp_buf *out, char *err, size_t errlen);
void gp_srv_handle_funnel(struct gp_server *s, struct gp_storage *st,
                          const struct gp_http_request *req, struct gp_http_response *resp);
/* alerts_api.c: the config file's rules (before anything starts), the
 * alerts and the engine over st (after the store opens), their end
 * (before the store closes; accepts a server without them), their
 * /metrics families, and the routes /api/v1/alerts[/ID] and
 * /api/v1/silences[/ID], and /api/v1/rules (the rule files' groups). */
int gp_srv_rules_load(struct gp_server *s, char *err, size_t errlen);
/* Reads rule_files again into the running rules (gp_promrules_run_reload);
 * on error the old rules stay. */
int gp_srv_rules_reload(struct gp_server *s, char *err, size_t errlen);
int gp_srv_alerts_start(struct gp_server *s, struct gp_storage *st, char *err, size_t errlen);
void gp_srv_alerts_stop(struct gp_server *s);
void gp_srv_walk_alert_metrics(struct gp_server *s, struct gp_metric_sink *out);
void gp_srv_handle_alerts(struct gp_server *s, enum gp_srv_route route,
                          const struct gp_http_request *req, struct gp_http_response *resp);
/* The body of POST /api/v1/alerts/ID/ack: empty, or a JSON object with
 * optional string members by and comment (copied, "" when absent). 1, or
 * 0 with the reason in err. */
int gp_srv_parse_ack(const uint8_t *body, size_t len, char *by, size_t bylen, char *comment,
                     size_t commentlen, char *err, size_t errlen);

/* health_api.c: GET /api/v1/health/nodes[/NODE] and POST
 * /api/v1/health/nodes/NODE/healthy over s->health (insight/health.h). */
void gp_srv_handle_health(struct gp_server *s, enum gp_srv_route route,
                          const struct gp_http_request *req, struct gp_http_response *resp);

/* notify_api.c: the config file's notify: section (with the rules,
 * before anything starts: GP_ECONFIG names the line), the outbox and the
 * router over state.db (*fn, *ctx: the listener alerts_api.c registers
 * before the engine starts), their end (router, then outbox; before the
 * store closes; accepts a server without them), the outbox's /metrics
 * families and GET /api/v1/notifications. */
int gp_srv_notify_load(struct gp_server *s, char *err, size_t errlen);
int gp_srv_notify_open(struct gp_server *s, gp_alert_listener *fn, void **ctx, char *err,
                       size_t errlen);
void gp_srv_notify_stop(struct gp_server *s);
void gp_srv_walk_notify_metrics(struct gp_server *s, struct gp_metric_sink *out);
void gp_srv_handle_notifications(struct gp_server *s, const struct gp_http_request *req,
                                 struct gp_http_response *resp);

/* The dashboard's routes (docs/dashboard.md). web.c: GET / and
 * /assets/NAME. gpus_api.c: GET /api/v1/fleet/gpus over an open store.
 * stream.c: the SSE streams' hub (made before the alerts start: its
 * listener; told to close before the HTTP server stops), GET
 * /api/v1/stream, and an alert's event for every stream (id: its
 * fingerprint; also after an ack). alerts_api.c: POST
 * /api/v1/alerts/ID/ack. jobs_api.c: GET /api/v1/jobs/ID/report. */
void gp_srv_handle_web(const struct gp_http_request *req, struct gp_http_response *resp);
/* The data objects of GET /api/v1/fleet (cost_api.c) and
 * /api/v1/fleet/gpus (gpus_api.c), no envelope, appended to out; the
 * stream sends them too. GP_OK, GP_ENOMEM or the store's error, with
 * detail; out's own error is the caller's to check. */
struct gp_srv_gpu_filter {
    const char *node, *job, *model; /* exact; NULL: any */
};
void gp_srv_gpu_filter_parse(const struct gp_http_request *req, struct gp_srv_gpu_filter *f);
int gp_srv_fleet_data(struct gp_server *s, struct gp_storage *st, struct gp_buf *out, char *err,
                      size_t errlen);
int gp_srv_fleet_gpus_data(struct gp_server *s, struct gp_storage *st,
                           const struct gp_srv_gpu_filter *f, struct gp_buf *out, char *err,
                           size_t errlen);
void gp_srv_handle_fleet_gpus(struct gp_server *s, struct gp_storage *st,
                              const struct gp_http_request *req, struct gp_http_response *resp);
/* gpus_api.c: the thread that keeps the inventory's cache up with the
 * store (at once, then every few seconds; after the store is published;
 * stop before it closes; accepts none). GP_OK or GP_ENOMEM. */
int gp_srv_inventory_warm_start(struct gp_server *s);
void gp_srv_inventory_warm_stop(struct gp_server *s);
/* `,"name":v` (null when v is not finite), for the fleet documents (gpus_api.c). */
void gp_srv_put_num(struct gp_buf *b, const char *name, double v);
/* hosts.c: the fleet's `hosts` array (each node's host figures now, seen
 * within 5 minutes of now) appended to out. GP_OK, GP_ENOMEM or the
 * store's error, with detail. */
int gp_srv_hosts_json(struct gp_storage *st, int64_t now, struct gp_buf *out, char *err,
                      size_t errlen);
int gp_srv_stream_open(struct gp_server *s);
void gp_srv_stream_close(struct gp_server *s);
void gp_srv_stream_free(struct gp_server *s);
void gp_srv_handle_stream(struct gp_server *s, const struct gp_http_request *req,
                          struct gp_http_response *resp);
void gp_srv_stream_alert(struct gp_server *s, const char *id);
void gp_srv_stream_on_alert(void *ctx, const struct gp_alert_event *ev); /* ctx: the server */
void gp_srv_walk_stream_metrics(struct gp_server *s, struct gp_metric_sink *out);

/* Route of a path ("/api/v1/label/x/values" -> LABEL_VALUES), or OTHER.
 * Prometheus's routes answer under GP_SRV_PROM_PREFIX too (Grafana's
 * data source URL http://host:9402/prometheus), where /api/v1/alerts is
 * PROM_ALERTS, Prometheus's shape, not gpulse's. */
#define GP_SRV_PROM_PREFIX "/prometheus"
enum gp_srv_route gp_srv_route_of(const char *path);
/* The request's path without GP_SRV_PROM_PREFIX ("/api/v1/..."). */
const char *gp_srv_api_path(const struct gp_http_request *req);
/* 1 when the route takes a form POST as well as GET (Prometheus's). */
int gp_srv_route_takes_form(enum gp_srv_route r);

/* GET / POST /api/v1/health/preflight (preflight.c). */
void gp_srv_handle_preflight(struct gp_server *s, const struct gp_http_request *req, struct gp_http_response *resp);

/* prom_api.c: Prometheus's own routes -- PromQL /api/v1/query and
 * /api/v1/query_range (query=; forwarded to the cluster in storage:
 * remote), /api/v1/metadata, /api/v1/status/buildinfo,
 * /api/v1/query_exemplars. (/prometheus/api/v1/alerts: alerts_api.c.) */
void gp_srv_handle_prom(struct gp_server *s, struct gp_storage *st, enum gp_srv_route route,
                        const struct gp_http_request *req, struct gp_http_response *resp);
/* The query_* settings as the engine's limits (prom_api.c); the rule
 * files' evaluation takes the same (alerts_api.c). */
struct gp_promql_limits;
void gp_srv_promql_limits(const struct gp_server *s, struct gp_promql_limits *l);
/* The query_range of PromQL (query=), for api.c's dispatch. */
void gp_srv_promql_range(struct gp_server *s, struct gp_storage *st, const struct gp_http_request *req,
                         struct gp_http_response *resp);
/* api.c: a time parameter (Unix seconds or RFC 3339): 1 with *out
 * (def when absent and not required), or 0 with a 400 answered. */
int gp_srv_time_param(const struct gp_http_request *req, struct gp_http_response *resp,
                      const char *name, int64_t def, int required, int64_t *out);
/* api.c: the required step parameter (a duration or seconds, > 0): 1
 * with *out, or 0 with a 400 answered. */
int gp_srv_step_param(const struct gp_http_request *req, struct gp_http_response *resp, int64_t *out);
/* When p (its first `prefix` bytes a route's prefix) ends with suffix
 * with something between: the length of that middle part; else 0. */
size_t gp_srv_path_suffix(const char *p, size_t prefix, const char *suffix);

/* selfmetrics.c: /metrics whole as text, or the server's own families
 * only (without the hook's, nor gpulse_build_info) walked into a sink:
 * the text of /metrics and the self-scrape's series come from this one
 * walk. */
int gp_srv_render_metrics(struct gp_server *s, struct gp_buf *out);
void gp_srv_walk_own_metrics(struct gp_server *s, struct gp_metric_sink *out);

/* prom_api.c: every family /api/v1/metadata lists (metric non-empty:
 * that one), in name order: gpulse's own, and those remote write
 * carried that gpulse does not define; fn as gp_srv_meta_walk's (it runs
 * under the table's lock). */
void gp_srv_metadata_walk(struct gp_server *s, const char *metric, gp_srv_meta_fn fn, void *arg);

/* meta_forward.c: with storage: remote, the families' metadata sent on
 * to the cluster (started after the store is published; stop before the
 * store closes; accepts none). GP_OK or GP_ENOMEM. */
int gp_srv_meta_forward_start(struct gp_server *s);
void gp_srv_meta_forward_stop(struct gp_server *s);

/* selfscrape.c: the self-scrape's thread, when self_scrape_interval is
 * not 0 (after the store is published; instance: "HOST:PORT"), and its
 * end (before the HTTP server and the store stop; accepts none). GP_OK
 * or GP_ENOMEM. */
#define GP_SRV_INSTANCE_LEN 300
int gp_srv_self_start(struct gp_server *s, const char *instance);
void gp_srv_self_stop(struct gp_server *s);

#endif
