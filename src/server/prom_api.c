/*
 * prom_api.c - Prometheus's own HTTP API routes, so Grafana, vmalert and
 * other Prometheus clients use the server as a data source (docs/api.md
 * "Prometheus API"):
 *
 *   /api/v1/query           query=PROMQL, time (default now), timeout
 *   /api/v1/query_range     query=PROMQL, start, end, step, timeout
 *                           (api.c sends the match= form elsewhere)
 *   /api/v1/metadata        metric=, limit=, limit_per_metric=
 *   /api/v1/status/buildinfo
 *   /api/v1/query_exemplars (gpulse keeps no exemplars: always empty)
 *   /api/v1/format_query    query=: the expression in canonical text
 *
 * GET and form POST read the same (net/http.h); the routes answer under
 * /prometheus as well (api.c). This file reads parameters and maps
 * errors; the evaluation and its JSON are query/promql.h's. With
 * storage: remote the query goes to the cluster as PromQL and its answer
 * comes back as it is (gp_storage_promql): the cluster computes it.
 *
 * Limits come from the server's settings (query_* keys, config.h); a
 * request's timeout= may shorten the configured timeout, never lengthen
 * it, as in Prometheus.
 */
#include "server_int.h"

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/metrics.h"
#include "lib/json.h"
#include "query/promql.h"
#include "query/query.h"
#include "server/metadata.h"
#include "sources/frame.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The Prometheus release whose semantics gpulse follows (promql.h), as
 * buildinfo's "version": clients gate features on it. */
#define PROM_COMPAT_VERSION "2.42.0"

void gp_srv_promql_limits(const struct gp_server *s, struct gp_promql_limits *l)
{
    memset(l, 0, sizeof *l);
    l->lookback_ms = s->cfg.query_lookback_delta_ms;
    l->max_samples = (size_t)s->cfg.query_max_samples;
    l->timeout_ms = s->cfg.query_timeout_ms;
    l->subquery_step_ms = s->cfg.query_subquery_step_ms;
    l->prom3_windows = s->cfg.query_prom3_windows;
}

/* timeout=DURATION: 1 with *ms (0 when absent), or 0 with a 400 answered. */
static int timeout_param(const struct gp_http_request *req, struct gp_http_response *resp, int64_t *ms)
{
    const char *v = gp_http_query(req, "timeout");
    *ms = 0;
    if (!v || !*v)
        return 1;
    char err[160];
    if (gp_parse_step_ms(v, ms, err, sizeof err)) {
        gp_srv_bad(resp, 400, "bad_data", "invalid parameter 'timeout': %s", err);
        return 0;
    }
    return 1;
}

/* Answers a failed parse or evaluation in Prometheus's error shape. */
static void promql_failed(struct gp_http_response *resp, int rc, const char *err)
{
    int status = 500;
    const char *type = gp_promql_error_type(rc, &status);
    if (rc == GP_ENET && gp_storage_last_error()[0])
        gp_srv_bad(resp, gp_storage_last_error_status(), "unavailable", "remote storage: %s",
                   gp_storage_last_error());
    else
        gp_srv_bad(resp, status, type, "%s", err[0] ? err : gp_strerror(rc));
}

/* storage: remote -- the cluster evaluates q; its answer is relayed.
 * 1 when answered so (or failed), 0 when the storage evaluates nothing
 * itself (embedded: the caller evaluates). */
static int forwarded(struct gp_storage *st, const struct gp_storage_promql *q,
                     struct gp_http_response *resp)
{
    int status = 0;
    int rc = gp_storage_promql(st, q, &resp->body, &status);
    if (rc == GP_EUNSUPPORTED)
        return 0;
    if (rc == GP_ENET)
        gp_srv_bad(resp, gp_storage_last_error_status(), "unavailable", "remote storage: %s",
                   gp_storage_last_error());
    else if (rc)
        gp_srv_bad(resp, 503, "unavailable", "out of memory relaying the cluster's answer");
    else
        resp->status = status;
    return 1;
}

/* Answers q: the cluster's answer with storage: remote, else the
 * engine's over st under the server's limits. */
static void evaluate(struct gp_server *s, struct gp_storage *st, const struct gp_storage_promql *q,
                     struct gp_http_response *resp)
{
    if (forwarded(st, q, resp))
        return;
    struct gp_promql_limits lim;
    gp_srv_promql_limits(s, &lim);
    if (q->timeout_ms && q->timeout_ms < lim.timeout_ms)
        lim.timeout_ms = q->timeout_ms;
    char err[512] = "";
    struct gp_pq_node *e = NULL;
    struct gp_promql_result res;
    memset(&res, 0, sizeof res);
    int rc = gp_promql_parse(q->query, strlen(q->query), &e, err, sizeof err);
    if (!rc)
        rc = q->range ? gp_promql_range(st, e, q->start_ms, q->end_ms, q->step_ms, &lim, &res, err,
                                         sizeof err)
                      : gp_promql_instant(st, e, q->time_ms, &lim, &res, err, sizeof err);
    if (!rc)
        rc = gp_promql_render(&res, &resp->body);
    if (rc)
        promql_failed(resp, rc, err);
    gp_promql_result_free(&res);
    gp_promql_free(e);
}

static void do_query(struct gp_server *s, struct gp_storage *st, const struct gp_http_request *req,
                     struct gp_http_response *resp)
{
    const char *query = gp_http_query(req, "query");
    int64_t t, timeout;
    if (!gp_srv_time_param(req, resp, "time", gp_wall_ms(), 0, &t) || !timeout_param(req, resp, &timeout))
        return;
    struct gp_storage_promql q = {.query = query ? query : "", .time_ms = t, .timeout_ms = timeout};
    evaluate(s, st, &q, resp);
}

void gp_srv_promql_range(struct gp_server *s, struct gp_storage *st, const struct gp_http_request *req,
                         struct gp_http_response *resp)
{
    const char *query = gp_http_query(req, "query");
    if (!query) {
        gp_srv_bad(resp, 400, "bad_data",
                   "missing parameter 'query' (PromQL) or 'match' (a selector, gpulse's form)");
        return;
    }
    int64_t start, end, step, timeout;
    if (!gp_srv_time_param(req, resp, "start", 0, 1, &start) ||
        !gp_srv_time_param(req, resp, "end", 0, 1, &end) || !gp_srv_step_param(req, resp, &step) ||
        !timeout_param(req, resp, &timeout))
        return;
    struct gp_storage_promql q = {.query = query, .range = 1, .start_ms = start, .end_ms = end,
                                  .step_ms = step, .timeout_ms = timeout};
    evaluate(s, st, &q, resp);
}

/* ---- metadata ---- */

struct family {
    const char *name, *type, *help;
};

static int family_cmp(const void *a, const void *b)
{
    return strcmp(((const struct family *)a)->name, ((const struct family *)b)->name);
}

/* Both tables, sorted by name once (Prometheus's answer is a JSON
 * object, its keys sorted). */
static struct family families[GPF__COUNT + GP_M__COUNT];
static size_t nfamilies;
static pthread_once_t families_once = PTHREAD_ONCE_INIT;

static void families_build(void)
{
    size_t n = 0;
    for (size_t i = 0; i < GPF__COUNT; i++)
        if (gp_gpu_fields[i].name)
            families[n++] = (struct family){gp_gpu_fields[i].name,
                                            gp_gpu_fields[i].type == GP_COUNTER ? "counter" : "gauge",
                                            gp_gpu_fields[i].help ? gp_gpu_fields[i].help : ""};
    for (size_t i = 0; i < GP_M__COUNT; i++)
        families[n++] = (struct family){gp_metrics[i].name, gp_metric_kind_name(gp_metrics[i].kind),
                                        gp_metrics[i].help};
    qsort(families, n, sizeof *families, family_cmp);
    nfamilies = n;
}

/* OpenMetrics' unit: the base unit the name ends with (before _total),
 * as gpulse names its families; "" for names without one (dcgm's). */
static void unit_of(const char *name, char *out, size_t len)
{
    static const char *const units[] = {"bytes", "seconds", "ratio", "watts", "joules", "celsius",
                                        "hertz", "volts", "amperes"};
    size_t n = strlen(name);
    if (n > 6 && !strcmp(name + n - 6, "_total"))
        n -= 6;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        size_t ul = strlen(units[i]);
        if (n > ul + 1 && name[n - ul - 1] == '_' && !strncmp(name + n - ul, units[i], ul)) {
            snprintf(out, len, "%s", units[i]);
            return;
        }
    }
}

/* An integer parameter (negative: no limit), as Prometheus reads limit. */
static int int_param(const struct gp_http_request *req, struct gp_http_response *resp, const char *name,
                     long long *out)
{
    const char *v = gp_http_query(req, name);
    *out = -1;
    if (!v || !*v)
        return 1;
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (*end || errno) {
        gp_srv_bad(resp, 400, "bad_data", "%s must be a number", name);
        return 0;
    }
    *out = n;
    return 1;
}

/* A walk of every family /api/v1/metadata lists: gpulse's own
 * (families[], sorted) merged by name into the remote-written ones
 * (metadata.h's walk, sorted too). */
struct meta_merge {
    const char *metric; /* NULL: every family */
    size_t next;        /* the next of families[] to merge in */
    gp_srv_meta_fn fn;
    void *arg;
};

/* Hands on gpulse's families that sort before name (NULL: all the rest). */
static void merge_own_before(struct meta_merge *g, const char *name)
{
    for (; g->next < nfamilies && (!name || strcmp(families[g->next].name, name) < 0); g->next++) {
        const struct family *f = &families[g->next];
        if ((g->metric && strcmp(g->metric, f->name)) ||
            (g->next && !strcmp(f->name, families[g->next - 1].name)))
            continue;
        char unit[16];
        unit_of(f->name, unit, sizeof unit);
        g->fn(g->arg, f->name, f->type, f->help, unit);
    }
}

/* A remote-written family: after gpulse's that sort before it, unless
 * gpulse defines the name itself (its own definition is the answer). */
static void merge_remote(void *arg, const char *name, const char *type, const char *help,
                         const char *unit)
{
    struct meta_merge *g = arg;
    merge_own_before(g, name);
    if (g->next < nfamilies && !strcmp(families[g->next].name, name))
        return;
    g->fn(g->arg, name, type, help, unit);
}

void gp_srv_metadata_walk(struct gp_server *s, const char *metric, gp_srv_meta_fn fn, void *arg)
{
    pthread_once(&families_once, families_build);
    struct meta_merge g = {metric && *metric ? metric : NULL, 0, fn, arg};
    if (gp_srv_store(s)) /* the table is set before the store is published */
        gp_srv_meta_walk(s->meta, g.metric, merge_remote, &g);
    merge_own_before(&g, NULL);
}

/* One answer of /api/v1/metadata being written. */
struct meta_out {
    struct gp_buf *body;
    long long limit; /* families at most; negative: no limit */
    long long shown;
};

static void meta_emit(void *arg, const char *name, const char *type, const char *help, const char *unit)
{
    struct meta_out *o = arg;
    if (o->limit >= 0 && o->shown >= o->limit)
        return;
    gp_buf_puts(o->body, o->shown++ ? "," : "");
    gp_json_str(o->body, name, strlen(name));
    gp_buf_printf(o->body, ":[{\"type\":\"%s\",\"help\":", type);
    gp_json_str(o->body, help, strlen(help));
    gp_buf_puts(o->body, ",\"unit\":");
    gp_json_str(o->body, unit, strlen(unit));
    gp_buf_puts(o->body, "}]");
}

/*
 * TYPE, HELP and unit of the families gpulse writes (lib/metrics.h's
 * gpulse_* table and the GPU readings' dcgm-exporter names,
 * sources/frame.h) and of those remote write carried (metadata.h: the
 * latest entry per family), as Prometheus answers from what it scraped.
 * Where both name a family, gpulse's definition is the answer. Each
 * family has one entry, so limit_per_metric (read as Prometheus 2.43+
 * reads it; 2.42 ignores it) never shortens a list.
 */
static void do_metadata(struct gp_server *s, const struct gp_http_request *req,
                        struct gp_http_response *resp)
{
    long long limit, per_metric;
    if (!int_param(req, resp, "limit", &limit) || !int_param(req, resp, "limit_per_metric", &per_metric))
        return;
    struct meta_out o = {&resp->body, limit, 0};
    gp_buf_puts(&resp->body, "{\"status\":\"success\",\"data\":{");
    gp_srv_metadata_walk(s, gp_http_query(req, "metric"), meta_emit, &o);
    gp_buf_puts(&resp->body, "}}\n");
}

/* Prometheus's shape with gpulse's own version beside: "version" is the
 * Prometheus release whose PromQL gpulse answers as, which Grafana reads
 * to choose features; no "features" member, so Grafana takes it for
 * Prometheus (not Mimir). */
static void do_buildinfo(struct gp_http_response *resp)
{
    gp_buf_puts(&resp->body, "{\"status\":\"success\",\"data\":{\"version\":\"" PROM_COMPAT_VERSION
                             "\",\"revision\":\"gpulse-" GP_VERSION "\",\"branch\":\"\","
                             "\"buildUser\":\"gpulse\",\"buildDate\":\"\",\"goVersion\":\"\","
                             "\"gpulseVersion\":\"" GP_VERSION "\"}}\n");
}

/* Grafana's "Format query" button: the canonical text, or the parse error. */
static void do_format_query(const struct gp_http_request *req, struct gp_http_response *resp)
{
    const char *query = gp_http_query(req, "query");
    char err[512] = "";
    struct gp_pq_node *e = NULL;
    int rc = gp_promql_parse(query ? query : "", query ? strlen(query) : 0, &e, err, sizeof err);
    if (rc) {
        promql_failed(resp, rc, err);
        return;
    }
    struct gp_buf text;
    gp_buf_init(&text, 0);
    gp_promql_format(e, &text);
    gp_promql_free(e);
    gp_buf_puts(&resp->body, "{\"status\":\"success\",\"data\":");
    gp_json_str(&resp->body, text.data ? text.data : "", text.len);
    gp_buf_puts(&resp->body, "}\n");
    if (text.err)
        gp_srv_bad(resp, 503, "unavailable", "out of memory formatting the query");
    gp_buf_free(&text);
}

void gp_srv_handle_prom(struct gp_server *s, struct gp_storage *st, enum gp_srv_route route,
                        const struct gp_http_request *req, struct gp_http_response *resp)
{
    switch (route) {
    case GP_SRV_R_QUERY:
        do_query(s, st, req, resp);
        break;
    case GP_SRV_R_METADATA:
        do_metadata(s, req, resp);
        break;
    case GP_SRV_R_BUILDINFO:
        do_buildinfo(resp);
        break;
    case GP_SRV_R_FORMAT_QUERY:
        do_format_query(req, resp);
        break;
    case GP_SRV_R_EXEMPLARS: /* no exemplars are stored: none to give */
        gp_buf_puts(&resp->body, "{\"status\":\"success\",\"data\":[]}\n");
        break;
    default:
        gp_srv_bad(resp, 404, "not_found", "no such route");
    }
}
