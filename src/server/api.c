/*
 * api.c - the query routes: HTTP parameters in, query.h calls, JSON out.
 *
 * This file only reads parameters and maps errors; the evaluation and the
 * JSON (Prometheus's envelope) are query.h's. Parameter errors answer 400
 * {"status":"error","errorType":"bad_data","error":"..."} as Prometheus
 * does, so its clients show the message.
 *
 * Prometheus's routes take a form POST as well as GET (net/http.h reads
 * a form body's fields with the URL's) and answer under /prometheus too
 * (gp_srv_route_of).
 *
 *   /api/v1/series        match[]=SEL (repeated; match= too), start, end
 *   /api/v1/query_range   query=PROMQL, start, end, step, timeout
 *                         (prom_api.c); or gpulse's form: match=SEL (or
 *                         match[]= once), start, end, step,
 *                         agg=avg|min|max|sum|count, by=l1,l2,
 *                         rollups=auto|true|false
 *   /api/v1/labels, /api/v1/label/NAME/values   match[] (any), start, end
 *   /api/v1/query, /metadata, /status/buildinfo, /query_exemplars,
 *   /format_query (prom_api.c)
 *   /api/v1/nodes, /api/v1/gpus
 *   /api/v1/jobs, /api/v1/jobs/ID   (jobs_api.c)
 *   /api/v1/alerts[/ID], /api/v1/silences[/ID], /api/v1/rules   (alerts_api.c)
 *   /api/v1/notifications                        (notify_api.c)
 *   /api/v1/health/nodes[/NODE], POST .../NODE/healthy   (health_api.c)
 */
#include "server_int.h"

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "query/promql.h"
#include "query/query.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API_MAX_SELECTORS 64

static enum gp_srv_route route_of(const char *p)
{
    static const struct {
        const char *path;
        enum gp_srv_route r;
    } fixed[] = {
        {"/api/v1/write", GP_SRV_R_WRITE},   {"/api/v1/query_range", GP_SRV_R_QUERY_RANGE},
        {"/api/v1/series", GP_SRV_R_SERIES}, {"/api/v1/labels", GP_SRV_R_LABELS},
        {"/api/v1/nodes", GP_SRV_R_NODES},   {"/api/v1/gpus", GP_SRV_R_GPUS},
        {"/api/v1/health", GP_SRV_R_HEALTH}, {"/metrics", GP_SRV_R_METRICS},
        {"/api/v1/jobs", GP_SRV_R_JOBS},     {"/api/v1/recommendations", GP_SRV_R_RECOMMENDATIONS},
        {"/api/v1/audit", GP_SRV_R_AUDIT},   {"/api/v1/fleet", GP_SRV_R_FLEET},
        {"/api/v1/cost", GP_SRV_R_COST},     {"/api/v1/alerts", GP_SRV_R_ALERTS},
        {"/api/v1/silences", GP_SRV_R_SILENCES}, {"/api/v1/notifications", GP_SRV_R_NOTIFICATIONS},
        {"/api/v1/fleet/gpus", GP_SRV_R_FLEET_GPUS}, {"/api/v1/stream", GP_SRV_R_STREAM},
        {"/api/v1/fleet/funnel", GP_SRV_R_FLEET_FUNNEL},
        {"/api/v1/snapshot", GP_SRV_R_SNAPSHOT}, {"/api/v1/query", GP_SRV_R_QUERY},
        {"/api/v1/metadata", GP_SRV_R_METADATA}, {"/api/v1/status/buildinfo", GP_SRV_R_BUILDINFO},
        {"/api/v1/query_exemplars", GP_SRV_R_EXEMPLARS}, {"/api/v1/format_query", GP_SRV_R_FORMAT_QUERY},
        {"/api/v1/rules", GP_SRV_R_RULES}, {"/api/v1/health/preflight", GP_SRV_R_PREFLIGHT},
        {"/", GP_SRV_R_WEB},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (!strcmp(p, fixed[i].path))
            return fixed[i].r;
    static const char hnodes[] = "/api/v1/health/nodes/";
    if (!strcmp(p, "/api/v1/health/nodes"))
        return GP_SRV_R_HEALTH_NODES;
    if (!strncmp(p, hnodes, sizeof hnodes - 1) && p[sizeof hnodes - 1])
        return gp_srv_path_suffix(p, sizeof hnodes - 1, "/healthy") ? GP_SRV_R_HEALTH_MARK
                                                                    : GP_SRV_R_HEALTH_NODE;
    static const char jobs[] = "/api/v1/jobs/", alerts[] = "/api/v1/alerts/",
                      silences[] = "/api/v1/silences/", assets[] = "/assets/";
    size_t n = strlen(p);
    if (!strncmp(p, jobs, sizeof jobs - 1) && p[sizeof jobs - 1])
        return gp_srv_path_suffix(p, sizeof jobs - 1, "/report") ? GP_SRV_R_JOB_REPORT : GP_SRV_R_JOB;
    if (!strncmp(p, alerts, sizeof alerts - 1) && p[sizeof alerts - 1])
        return gp_srv_path_suffix(p, sizeof alerts - 1, "/ack") ? GP_SRV_R_ALERT_ACK : GP_SRV_R_ALERT;
    if (!strncmp(p, assets, sizeof assets - 1))
        return GP_SRV_R_WEB; /* no token: an unknown file is a 404 to anyone */
    if (!strncmp(p, silences, sizeof silences - 1) && p[sizeof silences - 1])
        return GP_SRV_R_SILENCE;
    static const char pre[] = "/api/v1/label/", post[] = "/values";
    if (!strncmp(p, pre, sizeof pre - 1) && n > sizeof pre - 1 + sizeof post - 1 &&
        !strcmp(p + n - (sizeof post - 1), post))
        return GP_SRV_R_LABEL_VALUES;
    return GP_SRV_R_OTHER;
}

/* Prometheus's routes: what answers under GP_SRV_PROM_PREFIX as well
 * (gpulse's own routes do not, so the prefix means "Prometheus's API"). */
static int prom_route(enum gp_srv_route r)
{
    switch (r) {
    case GP_SRV_R_WRITE:
    case GP_SRV_R_QUERY:
    case GP_SRV_R_QUERY_RANGE:
    case GP_SRV_R_SERIES:
    case GP_SRV_R_LABELS:
    case GP_SRV_R_LABEL_VALUES:
    case GP_SRV_R_METADATA:
    case GP_SRV_R_BUILDINFO:
    case GP_SRV_R_EXEMPLARS:
    case GP_SRV_R_FORMAT_QUERY:
        return 1;
    default:
        return 0;
    }
}

enum gp_srv_route gp_srv_route_of(const char *p)
{
    static const char pre[] = GP_SRV_PROM_PREFIX "/api/v1/";
    if (strncmp(p, pre, sizeof pre - 1))
        return route_of(p);
    const char *rest = p + sizeof GP_SRV_PROM_PREFIX - 1;
    if (!strcmp(rest, "/api/v1/alerts"))
        return GP_SRV_R_PROM_ALERTS;
    /* /api/v1/rules is Prometheus's too: whatever route serves it. */
    enum gp_srv_route r = route_of(rest);
    return prom_route(r) || (r != GP_SRV_R_OTHER && !strcmp(rest, "/api/v1/rules")) ? r : GP_SRV_R_OTHER;
}

const char *gp_srv_api_path(const struct gp_http_request *req)
{
    const char *p = gp_http_path(req);
    static const char pre[] = GP_SRV_PROM_PREFIX "/api/";
    return strncmp(p, pre, sizeof pre - 1) ? p : p + sizeof GP_SRV_PROM_PREFIX - 1;
}

int gp_srv_route_takes_form(enum gp_srv_route r)
{
    return r != GP_SRV_R_WRITE && r != GP_SRV_R_METADATA && r != GP_SRV_R_BUILDINFO && prom_route(r);
}

size_t gp_srv_path_suffix(const char *p, size_t prefix, const char *suffix)
{
    size_t n = strlen(p), sl = strlen(suffix);
    if (n <= prefix + sl || strcmp(p + n - sl, suffix))
        return 0;
    return n - sl - prefix;
}

int gp_srv_query_limit(const struct gp_http_request *req, struct gp_http_response *resp, size_t max,
                       size_t *out)
{
    const char *v = gp_http_query(req, "limit");
    if (!v)
        return 1;
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (!*v || *end || errno || n < 1 || (size_t)n > max) {
        gp_srv_bad(resp, 400, "bad_data", "invalid parameter 'limit': '%.40s' (a whole number from 1 to %zu)",
                   v, max);
        return 0;
    }
    *out = (size_t)n;
    return 1;
}

void gp_srv_bad(struct gp_http_response *resp, int status, const char *type, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (status == 500 && gp_storage_last_error()[0]) {
        /* The request failed because the remote storage did: say so. */
        status = gp_storage_last_error_status();
        type = "unavailable";
        snprintf(msg, sizeof msg, "remote storage: %s", gp_storage_last_error());
    }
    resp->status = status;
    resp->content_type = "application/json";
    gp_buf_reset(&resp->body);
    gp_query_error(&resp->body, type, msg);
}

/* Maps a query.h failure to an answer. */
static void query_failed(struct gp_http_response *resp, int rc, const char *err)
{
    /* The engine's own failures read as they do on query= (promql.h). */
    if (rc == GP_PROMQL_ETIMEOUT || rc == GP_ERANGE) {
        int status = 500;
        const char *type = gp_promql_error_type(rc, &status);
        gp_srv_bad(resp, status, type, "%s", err[0] ? err : gp_strerror(rc));
    } else if (rc == GP_EUSAGE || rc == GP_EPARSE || rc == GP_ETOOBIG)
        gp_srv_bad(resp, 400, "bad_data", "%s", err[0] ? err : gp_strerror(rc));
    else if (rc == GP_ENOMEM)
        gp_srv_bad(resp, 503, "unavailable", "out of memory: %s", err);
    else if (rc == GP_ENET)
        gp_srv_bad(resp, gp_storage_last_error_status(), "unavailable", "remote storage: %s",
                   gp_storage_last_error());
    else
        gp_srv_bad(resp, 500, "internal", "%s", err[0] ? err : gp_strerror(rc));
}

int gp_srv_time_param(const struct gp_http_request *req, struct gp_http_response *resp,
                      const char *name, int64_t def, int required, int64_t *out)
{
    const char *v = gp_http_query(req, name);
    if (!v || !*v) {
        if (required) {
            gp_srv_bad(resp, 400, "bad_data", "missing parameter '%s'", name);
            return 0;
        }
        *out = def;
        return 1;
    }
    char err[256];
    if (gp_parse_time_ms(v, out, err, sizeof err)) {
        gp_srv_bad(resp, 400, "bad_data", "invalid parameter '%s': %s", name, err);
        return 0;
    }
    return 1;
}

int gp_srv_step_param(const struct gp_http_request *req, struct gp_http_response *resp, int64_t *out)
{
    const char *v = gp_http_query(req, "step");
    char err[256];
    if (!v || !*v) {
        gp_srv_bad(resp, 400, "bad_data", "missing parameter 'step'");
        return 0;
    }
    if (gp_parse_step_ms(v, out, err, sizeof err)) {
        gp_srv_bad(resp, 400, "bad_data", "invalid parameter 'step': %s", err);
        return 0;
    }
    return 1;
}

/* Parsed selectors of one request. */
struct selectors {
    struct gp_matcher *m[API_MAX_SELECTORS];
    size_t nm[API_MAX_SELECTORS];
    size_t n;
};

static void selectors_free(struct selectors *s)
{
    for (size_t i = 0; i < s->n; i++)
        gp_matchers_free(s->m[i], s->nm[i]);
    s->n = 0;
}

/* Parses the values of match[] and match (and query when allow_query).
 * 0 and the answer filled on error or when none is given (unless
 * optional: then none is 1 with out->n 0). */
static int parse_selectors(const struct gp_http_request *req, struct gp_http_response *resp,
                           int allow_query, int optional, struct selectors *out)
{
    out->n = 0;
    const char *vals[API_MAX_SELECTORS];
    size_t n = 0;
    const char *names[] = {"match[]", "match", allow_query ? "query" : NULL};
    for (size_t k = 0; k < 3 && names[k]; k++) {
        size_t got = gp_http_query_all(req, names[k], vals + n, API_MAX_SELECTORS - n);
        if (got > API_MAX_SELECTORS - n) {
            gp_srv_bad(resp, 400, "bad_data", "too many selectors (at most %d)", API_MAX_SELECTORS);
            return 0;
        }
        n += got;
    }
    if (!n && optional)
        return 1;
    if (!n) {
        gp_srv_bad(resp, 400, "bad_data", "no match[] parameter provided");
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        char err[256];
        int rc = gp_selector_parse(vals[i], strlen(vals[i]), &out->m[out->n], &out->nm[out->n], err,
                                   sizeof err);
        if (rc) {
            selectors_free(out);
            gp_srv_bad(resp, 400, "bad_data", "invalid selector '%.200s': %s", vals[i], err);
            return 0;
        }
        out->n++;
    }
    return 1;
}

static int valid_label_name(const char *s)
{
    if (!*s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
        return 0;
    for (s++; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_'))
            return 0;
    return 1;
}

static void do_series(struct gp_storage *st, const struct gp_http_request *req,
                      struct gp_http_response *resp)
{
    struct selectors sel;
    int64_t start, end;
    if (!gp_srv_time_param(req, resp, "start", INT64_MIN, 0, &start) ||
        !gp_srv_time_param(req, resp, "end", INT64_MAX, 0, &end) || !parse_selectors(req, resp, 0, 0, &sel))
        return;
    const struct gp_matcher *m[API_MAX_SELECTORS];
    for (size_t i = 0; i < sel.n; i++)
        m[i] = sel.m[i];
    char err[256] = "";
    int rc = gp_query_series(st, m, sel.nm, sel.n, start, end, &resp->body, err, sizeof err);
    selectors_free(&sel);
    if (rc)
        query_failed(resp, rc, err);
}

/* gpulse's own form: a selector in match= (or match[]=), agg, by. */
static void do_match_range(struct gp_server *s, struct gp_storage *st,
                           const struct gp_http_request *req, struct gp_http_response *resp)
{
    struct gp_range_query q;
    memset(&q, 0, sizeof q);
    q.rollups = -1;
    /* The server's query_* settings hold for this form as for query=. */
    struct gp_promql_limits lim;
    gp_srv_promql_limits(s, &lim);
    q.lim = &lim;
    /* the embedded store's raw retention (a remote cluster keeps its own) */
    if (strcmp(s->cfg.storage, "remote"))
        q.raw_since_ms = gp_wall_ms() - s->cfg.retention_raw_ms;
    if (!gp_srv_time_param(req, resp, "start", 0, 1, &q.start_ms) ||
        !gp_srv_time_param(req, resp, "end", 0, 1, &q.end_ms) || !gp_srv_step_param(req, resp, &q.step_ms))
        return;
    char err[256] = "";
    const char *agg = gp_http_query(req, "agg");
    if (gp_parse_agg(agg, &q.agg)) {
        gp_srv_bad(resp, 400, "bad_data", "invalid parameter 'agg': '%.40s' (use avg, min, max, sum or count)",
            agg);
        return;
    }
    const char *roll = gp_http_query(req, "rollups");
    if (roll && *roll && strcmp(roll, "auto")) {
        if (!strcmp(roll, "true") || !strcmp(roll, "1"))
            q.rollups = 1;
        else if (!strcmp(roll, "false") || !strcmp(roll, "0"))
            q.rollups = 0;
        else {
            gp_srv_bad(resp, 400, "bad_data", "invalid parameter 'rollups': use auto, true or false");
            return;
        }
    }
    char bybuf[1024];
    const char *by = gp_http_query(req, "by");
    if (by && *by) {
        if (!q.agg) {
            gp_srv_bad(resp, 400, "bad_data", "'by' needs 'agg'");
            return;
        }
        if (strlen(by) >= sizeof bybuf) {
            gp_srv_bad(resp, 400, "bad_data", "parameter 'by' is too long");
            return;
        }
        strcpy(bybuf, by);
        for (char *save = NULL, *t = strtok_r(bybuf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            while (*t == ' ')
                t++;
            size_t tl = strlen(t);
            while (tl && t[tl - 1] == ' ')
                t[--tl] = '\0';
            if (!valid_label_name(t)) {
                gp_srv_bad(resp, 400, "bad_data", "invalid label name '%.100s' in 'by'", t);
                return;
            }
            if (q.nby >= GP_QUERY_MAX_BY) {
                gp_srv_bad(resp, 400, "bad_data", "at most %d labels in 'by'", GP_QUERY_MAX_BY);
                return;
            }
            q.by[q.nby++] = t;
        }
    }
    struct selectors sel;
    if (!parse_selectors(req, resp, 0, 0, &sel))
        return;
    if (sel.n != 1) {
        selectors_free(&sel);
        gp_srv_bad(resp, 400, "bad_data", "query_range takes one selector, got %zu", sel.n);
        return;
    }
    q.m = sel.m[0];
    q.nm = sel.nm[0];
    int rc = gp_query_range(st, &q, &resp->body, err, sizeof err);
    selectors_free(&sel);
    if (rc)
        query_failed(resp, rc, err);
}

/*
 * query_range has two forms (docs/api.md): query= is PromQL, evaluated as
 * Prometheus does; match= is gpulse's selector with agg/by (the
 * dashboard's, gpulse top's and the reports' form), kept as it was.
 */
static void do_query_range(struct gp_server *s, struct gp_storage *st,
                           const struct gp_http_request *req, struct gp_http_response *resp)
{
    const char *v;
    if (gp_http_query_all(req, "match", &v, 1) || gp_http_query_all(req, "match[]", &v, 1)) {
        do_match_range(s, st, req, resp);
        return;
    }
    static const char *const own[] = {"agg", "by", "rollups"};
    for (size_t i = 0; i < 3; i++)
        if (gp_http_query(req, own[i])) {
            gp_srv_bad(resp, 400, "bad_data",
                       "parameter '%s' belongs to the match= form; with query=, write PromQL "
                       "(e.g. avg by (gpu) (...))",
                       own[i]);
            return;
        }
    gp_srv_promql_range(s, st, req, resp);
}

/* /api/v1/labels and /api/v1/label/NAME/values: match[], start, end. */
static void do_label_list(struct gp_storage *st, const char *name, const struct gp_http_request *req,
                          struct gp_http_response *resp)
{
    struct selectors sel;
    int64_t start, end;
    if (!gp_srv_time_param(req, resp, "start", INT64_MIN, 0, &start) ||
        !gp_srv_time_param(req, resp, "end", INT64_MAX, 0, &end) ||
        !parse_selectors(req, resp, 0, 1, &sel))
        return;
    const struct gp_matcher *m[API_MAX_SELECTORS];
    for (size_t i = 0; i < sel.n; i++)
        m[i] = sel.m[i];
    char err[256] = "";
    int rc = gp_query_label_list(st, name, m, sel.nm, sel.n, start, end, &resp->body, err, sizeof err);
    selectors_free(&sel);
    if (rc)
        query_failed(resp, rc, err);
}

static void do_label_values(struct gp_storage *st, const struct gp_http_request *req,
                            struct gp_http_response *resp)
{
    const char *p = gp_srv_api_path(req) + strlen("/api/v1/label/");
    char name[256];
    size_t n = strlen(p) - strlen("/values");
    if (n >= sizeof name) {
        gp_srv_bad(resp, 400, "bad_data", "label name too long");
        return;
    }
    memcpy(name, p, n);
    name[n] = '\0';
    if (!valid_label_name(name)) {
        gp_srv_bad(resp, 400, "bad_data", "invalid label name '%.100s'", name);
        return;
    }
    do_label_list(st, name, req, resp);
}

void gp_srv_handle_api(struct gp_server *s, enum gp_srv_route route,
                       const struct gp_http_request *req, struct gp_http_response *resp)
{
    resp->content_type = "application/json";
    struct gp_storage *st = gp_srv_store(s);
    if (!st) {
        gp_srv_bad(resp, 503, "unavailable", "the store is starting (recovering its data)");
        gp_http_add_header(resp, "Retry-After", "5");
        return;
    }
    /* Only Prometheus's routes read forms: a JSON body that curl -d
     * labels as a form (silences, acks) is not judged as one. */
    if (gp_srv_route_takes_form(route) && gp_http_form_error(req)) {
        gp_srv_bad(resp, 400, "bad_data", "%s", gp_http_form_error(req));
        return;
    }
    char err[256] = "";
    int rc = GP_OK;
    switch (route) {
    case GP_SRV_R_SERIES:
        do_series(st, req, resp);
        break;
    case GP_SRV_R_QUERY_RANGE:
        do_query_range(s, st, req, resp);
        break;
    case GP_SRV_R_QUERY:
    case GP_SRV_R_METADATA:
    case GP_SRV_R_BUILDINFO:
    case GP_SRV_R_EXEMPLARS:
    case GP_SRV_R_FORMAT_QUERY:
        gp_srv_handle_prom(s, st, route, req, resp);
        break;
    case GP_SRV_R_LABEL_VALUES:
        do_label_values(st, req, resp);
        break;
    case GP_SRV_R_LABELS:
        do_label_list(st, NULL, req, resp);
        break;
    case GP_SRV_R_NODES:
        rc = gp_query_nodes(s->inventory, st, &resp->body, err, sizeof err);
        break;
    case GP_SRV_R_GPUS:
        rc = gp_query_gpus(s->inventory, st, &resp->body, err, sizeof err);
        break;
    case GP_SRV_R_JOBS:
    case GP_SRV_R_JOB:
        gp_srv_handle_jobs(s, st, route, req, resp);
        break;
    case GP_SRV_R_RECOMMENDATIONS:
    case GP_SRV_R_AUDIT:
        gp_srv_handle_insight(s, st, route, req, resp);
        break;
    case GP_SRV_R_FLEET:
    case GP_SRV_R_COST:
        gp_srv_handle_cost(s, st, route, req, resp);
        break;
    case GP_SRV_R_ALERTS:
    case GP_SRV_R_ALERT:
    case GP_SRV_R_SILENCES:
    case GP_SRV_R_SILENCE:
        gp_srv_handle_alerts(s, route, req, resp);
        break;
    case GP_SRV_R_NOTIFICATIONS:
        gp_srv_handle_notifications(s, req, resp);
        break;
    case GP_SRV_R_FLEET_GPUS:
        gp_srv_handle_fleet_gpus(s, st, req, resp);
        break;
    case GP_SRV_R_FLEET_FUNNEL:
        gp_srv_handle_funnel(s, st, req, resp);
        break;
    case GP_SRV_R_JOB_REPORT:
        gp_srv_handle_jobs(s, st, route, req, resp);
        break;
    case GP_SRV_R_HEALTH_NODES:
    case GP_SRV_R_HEALTH_NODE:
    case GP_SRV_R_HEALTH_MARK:
        gp_srv_handle_health(s, route, req, resp);
        break;
    case GP_SRV_R_ALERT_ACK:
    case GP_SRV_R_PROM_ALERTS:
    case GP_SRV_R_RULES:
        gp_srv_handle_alerts(s, route, req, resp);
        break;
    default:
        gp_srv_bad(resp, 404, "not_found", "no such route");
        return;
    }
    if (rc)
        query_failed(resp, rc, err);
}
