/*
 * server.c - the server role: start and stop, routing, auth and limits
 * per route before a body is read, the health route, and `gpulse server`.
 *
 * Per request: prepare (http.h) picks the route from the path, checks the
 * method and the bearer token, and for writes takes the body's bytes from
 * the in-flight budget (429 when it is spent) and sets the body limit;
 * the handler dispatches to write.c, api.c or selfmetrics.c and times
 * it; complete counts the answer by route and code and gives the bytes
 * back. Nothing is read from a client that is not allowed to send it.
 */
#include "server_int.h"

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "lib/json.h"
#include "query/query.h"
#include "server/auth.h"
#include "lib/token.h"
#include "server/jobs.h"
#include "server/metadata.h"
#include "state/state.h"
#include "storage/storage.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define GP_SRV_SILENCE_BODY_MAX (64 * 1024)
/* A form POST to Prometheus's routes: room for a query over the
 * parser's cap (query/promql.h), so an overlong one gets its 400 from
 * the parser rather than a 413. */
#define GP_SRV_FORM_BODY_MAX (2u << 20)

struct gp_storage *gp_srv_store(struct gp_server *s)
{
    return __atomic_load_n(&s->store, __ATOMIC_ACQUIRE);
}

void gp_srv_count(uint64_t *c, uint64_t n)
{
    if (n)
        __atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

uint64_t gp_srv_get(const uint64_t *c) { return __atomic_load_n(c, __ATOMIC_RELAXED); }

int gp_srv_reserve(struct gp_server *s, uint64_t n)
{
    uint64_t cur = __atomic_load_n(&s->inflight, __ATOMIC_RELAXED);
    do {
        if (n > s->cfg.max_inflight_bytes || cur > s->cfg.max_inflight_bytes - n)
            return 0;
    } while (!__atomic_compare_exchange_n(&s->inflight, &cur, cur + n, 1, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    return 1;
}

void gp_srv_release(struct gp_server *s, uint64_t n)
{
    if (n)
        __atomic_fetch_sub(&s->inflight, n, __ATOMIC_RELAXED);
}

/* ---- routes ---- */

static void health(struct gp_server *s, struct gp_http_response *resp)
{
    struct gp_storage *st = gp_srv_store(s);
    char why[160];
    int paused = gp_storage_write_paused(st, why, sizeof why);
    char state_damage[256];
    int damaged = gp_state_damaged(s->cfg.data_dir, state_damage, sizeof state_damage);
    /* Damage that the server runs on through is "degraded", still 200:
     * it ingests and answers, and a balancer must not take it away. */
    const char *what = paused ? "writes_paused" : !st ? "starting" : damaged ? "degraded" : "ok";
    resp->content_type = "application/json";
    resp->status = paused || !st ? 503 : 200;
    gp_buf_printf(&resp->body,
                  "{\"status\":\"success\",\"data\":{\"status\":\"%s\",\"version\":\"%s\","
                  "\"uptime_seconds\":%.3f",
                  what, GP_VERSION, (double)(gp_wall_ms() - s->start_ms) / 1e3);
    if (paused) {
        gp_buf_puts(&resp->body, ",\"write_error\":");
        gp_json_str(&resp->body, why, strlen(why));
    }
    if (st) {
        struct gp_store_stats x;
        memset(&x, 0, sizeof x);
        gp_storage_stats(st, &x);
        gp_buf_printf(&resp->body, ",\"series\":%llu,\"samples_appended\":%llu",
                      (unsigned long long)x.series, (unsigned long long)x.samples_appended);
        /* What the store's last start found damaged and worked around
         * (docs/storage.md): it serves on, so the status stays ok. */
        if (x.damage || x.series_lost) {
            gp_buf_puts(&resp->body, ",\"store_damage\":[");
            int n = 0;
            for (int i = 0; i < GP_STORE_DMG_COUNT; i++)
                if (x.damage >> i & 1)
                    gp_buf_printf(&resp->body, "%s\"%s\"", n++ ? "," : "",
                                  gp_store_damage_name(1u << i));
            gp_buf_printf(&resp->body, "],\"series_lost\":%llu", (unsigned long long)x.series_lost);
        }
    }
    if (damaged) {
        gp_buf_puts(&resp->body, ",\"damage\":[{\"file\":\"state.db\",\"detail\":");
        gp_json_str(&resp->body, state_damage, strlen(state_damage));
        gp_buf_puts(&resp->body, ",\"effect\":\"jobs, alerts, silences, notifications and the audit "
                                 "log run on an empty in-memory state, not kept across restarts\","
                                 "\"repair\":\"stop the server, then gpulse repair --data DIR\"}]");
    }
    gp_buf_puts(&resp->body, "}}\n");
    if (resp->status == 503)
        gp_http_add_header(resp, "Retry-After", "5");
}

static const char index_text[] =
    "gpulse server\n\n"
    "GET  /                             the web dashboard\n"
    "GET  /assets/NAME                  the dashboard's embedded files\n"
    "POST /api/v1/write                 Prometheus remote write 1.0 (snappy + protobuf)\n"
    "GET, POST /api/v1/query            query=PROMQL[&time=][&timeout=]\n"
    "GET, POST /api/v1/query_range      query=PROMQL&start=&end=&step=[&timeout=]\n"
    "GET  /api/v1/query_range           match=SELECTOR&start=&end=&step=[&agg=&by=] (gpulse's form)\n"
    "GET, POST /api/v1/series           match[]=SELECTOR...[&start=&end=]\n"
    "GET, POST /api/v1/labels           [match[]=SELECTOR...][&start=&end=]\n"
    "GET, POST /api/v1/label/NAME/values [match[]=SELECTOR...][&start=&end=]\n"
    "GET  /api/v1/metadata              [metric=][&limit=]\n"
    "GET  /api/v1/status/buildinfo\n"
    "GET, POST /api/v1/query_exemplars  (no exemplars are kept: an empty answer)\n"
    "GET, POST /api/v1/format_query     query=PROMQL: its canonical text\n"
    "ANY  /prometheus/api/v1/...        Prometheus's routes again, for Grafana; alerts in Prometheus's shape\n"
    "GET  /api/v1/nodes, /api/v1/gpus   inventory\n"
    "GET  /api/v1/jobs, /api/v1/jobs/ID training jobs and their documents\n"
    "GET  /api/v1/recommendations       what to change, per job (job=) or for recent jobs\n"
    "GET  /api/v1/audit                 remediation decisions and outcomes\n"
    "GET  /api/v1/fleet, /api/v1/cost  the fleet's use and spend now; cost by job or node\n"
    "GET  /api/v1/fleet/gpus            every GPU now: readings, job, alert badge\n"
    "GET  /api/v1/fleet/funnel          total, allocated, active, effective GPUs; idle cost; zombies\n"
    "GET  /api/v1/stream                Server-Sent Events: fleet, gpus, alert\n"
    "POST /api/v1/alerts/ID/ack         acknowledge an alert\n"
    "GET  /api/v1/health/nodes, /api/v1/health/nodes/ID node and GPU health states, reasons, actions\n"
    "POST /api/v1/health/nodes/ID/healthy mark a repaired node healthy (write token)\n"
    "GET  /api/v1/jobs/ID/report        the job's report (format=html|json|text)\n"
    "GET  /api/v1/alerts, /api/v1/alerts/ID alerts (active and history) and their transitions\n"
    "GET, POST /api/v1/silences; DELETE /api/v1/silences/ID\n"
    "GET  /api/v1/notifications         the notification outbox (queued, done, dead)\n"
    "GET  /api/v1/rules                 the rule files' groups, rules and alerts (type=alert|record)\n"
    "GET  /api/v1/health\n"
    "GET  /api/v1/health/preflight      each node's last gpulse check result (POST: write token)\n"
    "GET  /api/v1/snapshot              gpulse up: its agent's latest frame (gpulse top --agent)\n"
    "GET  /metrics                      the server's own metrics\n";

static void handle(void *ctx, const struct gp_http_request *req, struct gp_http_response *resp)
{
    struct gp_server *s = ctx;
    struct gp_srv_req *sr = gp_http_user(req);
    enum gp_srv_route route = sr ? sr->route : GP_SRV_R_OTHER;
    int64_t t0 = gp_mono_ns();
    gp_storage_clear_error(); /* what failed in earlier requests of this thread */
    switch (route) {
    case GP_SRV_R_WRITE:
        gp_srv_handle_write(s, req, resp);
        break;
    case GP_SRV_R_HEALTH:
        health(s, resp);
        break;
    case GP_SRV_R_METRICS: {
        resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
        int rc = gp_srv_render_metrics(s, &resp->body);
        if (rc)
            gp_http_error(resp, 500, gp_strerror(rc));
        break;
    }
    case GP_SRV_R_SNAPSHOT: {
        pthread_mutex_lock(&s->hook_mu);
        int rc = s->snapshot_hook ? s->snapshot_hook(s->snapshot_ctx, &resp->body) : GP_ENOTFOUND;
        pthread_mutex_unlock(&s->hook_mu);
        resp->content_type = "application/json";
        if (rc == GP_ENOTFOUND) {
            resp->status = 404;
            gp_query_error(&resp->body, "not_found",
                           "no agent runs in this server: ask the node's gpulse agent, or gpulse up");
        } else if (rc) {
            gp_http_error(resp, 500, gp_strerror(rc));
        }
        break;
    }
    case GP_SRV_R_PREFLIGHT:
        gp_srv_handle_preflight(s, req, resp);
        break;
    case GP_SRV_R_WEB:
        gp_srv_handle_web(req, resp);
        break;
    case GP_SRV_R_STREAM:
        gp_srv_handle_stream(s, req, resp);
        break;
    case GP_SRV_R_OTHER:
        if (!strcmp(gp_http_path(req), "/api"))
            gp_buf_puts(&resp->body, index_text);
        else if (!strncmp(gp_http_path(req), "/api/", 5))
            gp_srv_handle_api(s, route, req, resp);
        else
            gp_http_error(resp, 404, "not found");
        break;
    default:
        gp_srv_handle_api(s, route, req, resp);
        break;
    }
    if (route != GP_SRV_R_OTHER && route != GP_SRV_R_HEALTH && route != GP_SRV_R_METRICS &&
        route != GP_SRV_R_WEB && route != GP_SRV_R_STREAM)
        gp_srv_observe(&s->route_hist[route], gp_mono_ns() - t0);
}

/* The bytes a body will take: its Content-Length, or limit when it has
 * none (chunked) or a larger one (refused at the limit anyway). */
static uint64_t body_want(const struct gp_http_request *req, uint64_t limit)
{
    const char *cl = gp_http_header(req, "Content-Length");
    if (cl) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(cl, &end, 10);
        if (end != cl && !*end && !errno && n < limit)
            return n;
    }
    return limit;
}

static uint64_t prepare(void *ctx, struct gp_http_request *req, struct gp_http_response *early)
{
    struct gp_server *s = ctx;
    struct gp_srv_req *sr = calloc(1, sizeof *sr);
    if (!sr) {
        gp_http_error(early, 503, "out of memory");
        gp_http_add_header(early, "Retry-After", "5");
        return 0;
    }
    sr->route = gp_srv_route_of(gp_http_path(req));
    sr->t0_ns = gp_mono_ns();
    gp_http_set_user(req, sr);
    const char *m = gp_http_method(req);
    int is_write = sr->route == GP_SRV_R_WRITE;
    int get = !strcmp(m, "GET") || !strcmp(m, "HEAD");
    /* Silencing changes state: POST /silences and DELETE /silences/ID
     * take the write token, as remote write does (docs/api.md). */
    int silence_post = sr->route == GP_SRV_R_SILENCES && !strcmp(m, "POST");
    int silence_delete = sr->route == GP_SRV_R_SILENCE && !strcmp(m, "DELETE");
    /* So does acknowledging an alert (docs/dashboard.md), and marking
     * a repaired node healthy (docs/health.md). */
    int ack = sr->route == GP_SRV_R_ALERT_ACK || sr->route == GP_SRV_R_HEALTH_MARK;
    /* So does a node's preflight result (gpulse check --push). */
    int preflight_post = sr->route == GP_SRV_R_PREFLIGHT && !strcmp(m, "POST");
    int changes = is_write || silence_post || silence_delete || ack || preflight_post;
    /* Prometheus's read routes take a form POST too (Grafana's default). */
    int form_post = gp_srv_route_takes_form(sr->route) && !strcmp(m, "POST");
    if (sr->route == GP_SRV_R_SILENCE ? !silence_delete
        : is_write || ack              ? strcmp(m, "POST") != 0
                                       : !get && !silence_post && !form_post && !preflight_post) {
        gp_http_error(early, 405, "method not allowed");
        early->allow = is_write || ack                    ? "POST"
                       : sr->route == GP_SRV_R_SILENCES || sr->route == GP_SRV_R_PREFLIGHT ? "GET, HEAD, POST"
                       : sr->route == GP_SRV_R_SILENCE  ? "DELETE"
                       : gp_srv_route_takes_form(sr->route) ? "GET, HEAD, POST"
                                                         : "GET, HEAD";
        return 0;
    }
    /* The page and the route list hold no data: no token. */
    const char *token = changes                             ? s->write_token
                        : sr->route == GP_SRV_R_HEALTH      ? ""
                        : sr->route == GP_SRV_R_WEB         ? ""
                        : !strcmp(gp_http_path(req), "/api") ? ""
                                                            : s->read_token;
    if (token[0] && !gp_auth_bearer_ok(gp_http_header(req, "Authorization"), token)) {
        if (is_write)
            gp_srv_count(&s->refused[GP_SRV_REF_UNAUTHORIZED], 1);
        const char *why = gp_http_header(req, "Authorization") ? "invalid bearer token"
                                                               : "a bearer token is required";
        if (is_write) {
            early->status = 401;
            gp_buf_printf(&early->body, "%s\n", why);
        } else { /* the API's error envelope, as its other errors */
            early->status = 401;
            early->content_type = "application/json";
            gp_query_error(&early->body, "unauthorized", why);
        }
        gp_http_add_header(early, "WWW-Authenticate", "Bearer realm=\"gpulse\"%s",
                           gp_http_header(req, "Authorization") ? ", error=\"invalid_token\"" : "");
        return 0;
    }
    if (silence_post || ack || preflight_post)
        return GP_SRV_SILENCE_BODY_MAX;
    if (form_post) {
        /* Its bytes come out of the write budget (its Content-Length, or
         * the whole limit when chunked): many large forms at once cannot
         * take more memory than writes may. */
        uint64_t want = body_want(req, GP_SRV_FORM_BODY_MAX);
        if (!gp_srv_reserve(s, want)) {
            early->status = 429;
            early->content_type = "application/json";
            gp_query_error(&early->body, "unavailable", "too many requests in flight; retry later");
            gp_http_add_header(early, "Retry-After", "1");
            return 0;
        }
        sr->reserved = want;
        return GP_SRV_FORM_BODY_MAX;
    }
    if (!is_write)
        return 0;
    char why[160];
    int paused = gp_storage_write_paused(gp_srv_store(s), why, sizeof why);
    if (!gp_srv_store(s) || paused) {
        gp_srv_count(&s->refused[GP_SRV_REF_UNAVAILABLE], 1);
        early->status = 503;
        if (paused) /* the store resumes by itself (store.h): a short Retry-After */
            gp_buf_printf(&early->body, "the store's writes are paused (%s); retry later\n", why);
        else
            gp_buf_puts(&early->body, "the store is starting (recovering its data)\n");
        gp_http_add_header(early, "Retry-After", "5");
        return 0;
    }
    /* The body's bytes come out of the in-flight budget before it is read. */
    uint64_t want = body_want(req, s->cfg.max_body);
    if (!gp_srv_reserve(s, want)) {
        gp_srv_count(&s->refused[GP_SRV_REF_OVERLOADED], 1);
        early->status = 429;
        gp_buf_puts(&early->body, "too many write requests in flight; retry later\n");
        gp_http_add_header(early, "Retry-After", "1");
        return 0;
    }
    sr->reserved = want;
    return s->cfg.max_body;
}

static void complete(void *ctx, struct gp_http_request *req, int status)
{
    struct gp_server *s = ctx;
    struct gp_srv_req *sr = gp_http_user(req);
    enum gp_srv_route route = sr ? sr->route : GP_SRV_R_OTHER;
    if (status == 413 && route == GP_SRV_R_WRITE)
        gp_srv_count(&s->refused[GP_SRV_REF_TOO_LARGE], 1);
    gp_srv_count(&s->requests[route][status >= 0 && status < 600 ? status : 0], 1);
    if (sr) {
        gp_srv_release(s, sr->reserved);
        free(sr);
    }
}

/* ---- start and stop ---- */

/* Reads a whole PEM file (at most 1 MiB) into *out (caller frees). */
static int read_pem(const char *path, const char *what, char **out, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return gp_seterr(err, errlen, GP_ECONFIG, "cannot read %s '%s': %s", what, path, strerror(errno));
    enum { MAX = 1 << 20 };
    char *b = malloc(MAX + 1);
    if (!b) {
        fclose(f);
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    }
    size_t n = fread(b, 1, MAX + 1, f);
    fclose(f);
    if (n > MAX) {
        free(b);
        return gp_seterr(err, errlen, GP_ECONFIG, "%s '%s' is larger than 1 MiB", what, path);
    }
    b[n] = '\0';
    *out = b;
    return GP_OK;
}

void gp_server_set_metrics_hook(struct gp_server *s, gp_server_metrics_hook fn, void *ctx)
{
    pthread_mutex_lock(&s->hook_mu);
    s->hook = fn;
    s->hook_ctx = ctx;
    pthread_mutex_unlock(&s->hook_mu);
}

int gp_server_render_metrics(struct gp_server *s, struct gp_buf *out)
{
    return gp_srv_render_metrics(s, out);
}

void gp_server_set_snapshot_hook(struct gp_server *s, gp_server_metrics_hook fn, void *ctx)
{
    pthread_mutex_lock(&s->hook_mu);
    s->snapshot_hook = fn;
    s->snapshot_ctx = ctx;
    pthread_mutex_unlock(&s->hook_mu);
}

unsigned gp_server_port(const struct gp_server *s) { return s->http ? gp_http_port(s->http) : 0; }

/*
 * The start-up line a newcomer looks for: the dashboard's URL with the
 * port really bound (--listen :0 picks one) and the scheme TLS implies.
 * A wildcard address is no place to browse to: the host's name is, and
 * loopback from this machine.
 */
static void log_dashboard_url(const struct gp_server *s, const char *bind)
{
    char host[128], name[256];
    unsigned port;
    if (gp_parse_listen(bind, host, sizeof host, &port, NULL, 0))
        return;
    const char *scheme = s->cfg.tls_cert[0] ? "https" : "http";
    port = gp_http_port(s->http);
    int v6 = strchr(host, ':') != NULL;
    if (host[0] && strcmp(host, "0.0.0.0") && strcmp(host, "::")) {
        gp_log(GP_LOG_INFO, "server", "dashboard ready: open the url in a browser", "url=%s://%s%s%s:%u/",
               scheme, v6 ? "[" : "", host, v6 ? "]" : "", port);
        return;
    }
    if (gethostname(name, sizeof name - 1) || !name[0])
        snprintf(name, sizeof name, "%s", v6 ? "[::1]" : "127.0.0.1");
    name[sizeof name - 1] = '\0';
    gp_log(GP_LOG_INFO, "server", "dashboard ready: open the url in a browser",
           "url=%s://%s:%u/ local=%s://%s:%u/", scheme, name, port, scheme, v6 ? "[::1]" : "127.0.0.1",
           port);
}

/*
 * The self-scrape's instance label: the listen address as a scraper
 * would name it, HOST:PORT; a wildcard address names no host, so the
 * host's name stands in (two servers writing one cluster stay apart).
 */
static void self_instance(const struct gp_server *s, const char *bind, char *out, size_t len)
{
    char host[128], name[256];
    unsigned port;
    if (gp_parse_listen(bind, host, sizeof host, &port, NULL, 0))
        host[0] = '\0';
    port = gp_http_port(s->http);
    if (!host[0] || !strcmp(host, "0.0.0.0") || !strcmp(host, "::")) {
        if (gethostname(name, sizeof name - 1) || !name[0])
            snprintf(name, sizeof name, "localhost");
        name[sizeof name - 1] = '\0';
        snprintf(out, len, "%s:%u", name, port);
        return;
    }
    int v6 = strchr(host, ':') != NULL;
    snprintf(out, len, "%s%s%s:%u", v6 ? "[" : "", host, v6 ? "]" : "", port);
}

int gp_server_start(struct gp_server **out, const struct gp_server_config *c, char *err,
                    size_t errlen)
{
    int rc = gp_server_config_validate(c, err, errlen);
    if (rc)
        return rc;
    struct gp_server *s = calloc(1, sizeof *s);
    if (!s)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    s->cfg = *c;
    s->start_ms = gp_wall_ms();
    pthread_mutex_init(&s->hook_mu, NULL);
    gp_srv_preflight_init(&s->preflight);
    char *cert = NULL, *key = NULL;
    if ((rc = gp_srv_stream_open(s))) {
        gp_seterr(err, errlen, rc, "out of memory");
        goto fail;
    }
    if ((rc = gp_token_load(c->write_token, c->write_token_file, "write_token", s->write_token,
                                 sizeof s->write_token, err, errlen)) ||
        (rc = gp_token_load(c->read_token, c->read_token_file, "read_token", s->read_token,
                                 sizeof s->read_token, err, errlen)))
        goto fail;
    if (c->tls_cert[0] && ((rc = read_pem(c->tls_cert, "tls_cert", &cert, err, errlen)) ||
                           (rc = read_pem(c->tls_key, "tls_key", &key, err, errlen))))
        goto fail;

    if ((rc = gp_srv_rules_load(s, err, errlen)) || (rc = gp_srv_notify_load(s, err, errlen)))
        goto fail;
    char bind[160], why[128];
    int fell_back;
    if ((rc = gp_auth_bind_address(c->listen, s->write_token[0] != 0, s->read_token[0] != 0, bind,
                                   sizeof bind, &fell_back, why, sizeof why))) {
        gp_seterr(err, errlen, rc, "%s", why);
        goto fail;
    }
    if (fell_back)
        gp_log(GP_LOG_WARN, "server",
               "serving on loopback only, not on the configured address: a token is missing",
               "configured=%s listen=%s reason=\"%s (set write_token and read_token to serve other hosts)\"",
               c->listen, bind, why);
    struct gp_http_options ho = {
        .listen = bind,
        .handler = handle,
        .ctx = s,
        .prepare = prepare,
        .complete = complete,
        .threads = 0,
        .max_connections = (unsigned)c->max_connections,
        .max_per_address = (unsigned)c->max_connections_per_address,
        .idle_timeout_s = 30,
        .body_timeout_ms = (uint64_t)c->read_timeout_ms,
        .tls_cert_pem = cert,
        .tls_key_pem = key,
    };
    rc = gp_http_start_opts(&s->http, &ho, err, errlen);
    free(cert);
    free(key);
    cert = key = NULL;
    if (rc)
        goto fail;
    char host[128];
    unsigned port;
    gp_parse_listen(bind, host, sizeof host, &port, NULL, 0);
    int v6 = strchr(host, ':') != NULL;
    gp_log(GP_LOG_INFO, "server", "listening",
           "listen=%s%s%s:%u tls=%s write_auth=%s read_auth=%s data=%s", v6 ? "[" : "", host,
           v6 ? "]" : "", gp_http_port(s->http), c->tls_cert[0] ? "on" : "off",
           s->write_token[0] ? "bearer" : "none", s->read_token[0] ? "bearer" : "none", c->data_dir);

    struct gp_storage_options so = {
        .kind = strcmp(c->storage, "remote") ? GP_STORAGE_EMBEDDED : GP_STORAGE_REMOTE,
        .store =
            {
                .dir = c->data_dir,
                .retention_raw_ms = c->retention_raw_ms,
                .retention_rollup_ms = c->retention_rollup_ms,
                .checkpoint_interval_ms = c->checkpoint_interval_ms,
                .max_series = (size_t)c->max_series,
                .max_future_ms = c->max_future_ms ? c->max_future_ms : -1, /* 0s: no bound */
            },
    };
    char rbuf[GP_SERVER_PATH_LEN + 32], wbuf[GP_SERVER_PATH_LEN + 32];
    if (so.kind == GP_STORAGE_REMOTE) {
        /* state.db and the write queue's disk buffer still live under data_dir */
        if (mkdir(c->data_dir, 0755) && errno != EEXIST) {
            rc = gp_seterr(err, errlen, GP_EIO, "cannot create data directory '%s': %s", c->data_dir,
                           strerror(errno));
            goto fail;
        }
        snprintf(rbuf, sizeof rbuf, "%s/remote-buffer", c->data_dir);
        struct gp_storage_remote_options *ro = &so.remote;
        ro->write_url = c->remote_write_url;
        ro->query_url = c->remote_query_url;
        ro->buffer_dir = rbuf;
        ro->buffer_max = c->remote_buffer_max;
        ro->write_timeout_ms = c->remote_write_timeout_ms;
        ro->query_timeout_ms = c->remote_timeout_ms;
        ro->lookback_ms = c->remote_lookback_ms;
        /* The window covers the longest recent read: the detectors' and
         * the inventory's (docs/storage.md "The local window"). */
        ro->window_ms = c->remote_window_ms;
        if (ro->window_ms > 0 && ro->window_ms < c->remote_lookback_ms)
            ro->window_ms = c->remote_lookback_ms;
        if (ro->window_ms > 0 && ro->window_ms < c->eval_window_ms + c->eval_step_ms)
            ro->window_ms = c->eval_window_ms + c->eval_step_ms;
        snprintf(wbuf, sizeof wbuf, "%s/remote-window", c->data_dir);
        ro->window_dir = wbuf;
        ro->server_name = c->remote_server_name;
        ro->bearer_token_file = c->remote_bearer_token_file;
        ro->basic_user = c->remote_basic_user;
        ro->basic_password_file = c->remote_basic_password_file;
        ro->max_series = (size_t)c->max_series;
        for (unsigned i = 0; i < c->remote_headers.n && i < GP_STORAGE_MAX_HEADERS; i++)
            ro->headers[ro->nheaders++] = c->remote_headers.v[i];
    }
    struct gp_storage *st;
    rc = gp_storage_open(&st, &so, err, errlen);
    if (rc)
        goto fail;
    struct gp_store_stats x;
    memset(&x, 0, sizeof x);
    gp_storage_stats(st, &x);
    if (so.kind == GP_STORAGE_REMOTE)
        gp_log(GP_LOG_INFO, "server", "remote storage open", "data=%s", c->data_dir);
    else
        gp_log(GP_LOG_INFO, "server", "store open",
               "data=%s series=%llu replayed_samples=%llu recovery_s=%.3f", c->data_dir,
               (unsigned long long)x.series, (unsigned long long)x.replayed_samples, x.replay_seconds);
    /* The jobs registry before the store is published: handlers that see
     * the store see the registry too. */
    s->gpu_hour_price = gp_server_config_price(c);
    s->job_budget = gp_server_config_budget(c);
    if ((rc = gp_server_config_prices(c, &s->prices, err, errlen))) {
        gp_storage_close(st);
        goto fail;
    }
    if ((rc = gp_srv_meta_open(&s->meta, c->data_dir, err, errlen)) ||
        (rc = gp_srv_preflight_load(&s->preflight, c->data_dir, err, errlen)) ||
        (rc = gp_inventory_new(&s->inventory) ? gp_seterr(err, errlen, GP_ENOMEM,
                                                          "cannot allocate the inventory")
                                              : GP_OK)) {
        gp_storage_close(st);
        goto fail;
    }
    if ((rc = gp_jobs_open(&s->jobs, c->data_dir, c->jobs_scan_interval_ms, err, errlen)) ||
        (rc = gp_jobs_start(s->jobs, st))) {
        if (rc == GP_ENOMEM)
            gp_seterr(err, errlen, rc, "cannot start the jobs scanner");
        gp_jobs_close(s->jobs);
        s->jobs = NULL;
        gp_storage_close(st);
        goto fail;
    }
    struct gp_rem_rule rules[GP_CFG_LIST_MAX];
    struct gp_rem_opts ro = {.rules = rules,
                             .dry_run = c->remediation_dry_run,
                             .max_per_hour = (unsigned)c->remediation_max_per_hour,
                             .max_per_kind_per_hour = (unsigned)c->remediation_max_per_kind_per_hour,
                             .timeout_ms = c->remediation_timeout_ms,
                             .path_root = c->remediation_path_root,
                             .scontrol = c->remediation_scontrol,
                             .k8s = {c->remediation_kubernetes_api, c->remediation_kubernetes_token_file,
                                     c->remediation_kubernetes_ca_file, c->remediation_kubernetes_taint},
                             .breaker_max_nodes = (unsigned)c->remediation_breaker_max_nodes,
                             .breaker_max_percent = (double)c->remediation_breaker_max_percent,
                             .undo_on_healthy = c->remediation_undo_on_healthy};
    if ((rc = gp_server_config_remediation(c, rules, &ro.nrules, err, errlen)) ||
        (rc = gp_rem_open(&s->rem, c->data_dir, &ro, err, errlen))) {
        gp_jobs_close(s->jobs);
        s->jobs = NULL;
        gp_storage_close(st);
        goto fail;
    }
    gp_log(GP_LOG_INFO, "server", "remediation ready", "commands=%zu dry_run=%s", ro.nrules,
           c->remediation_dry_run ? "true" : "false");
    struct gp_jobs_stats js;
    gp_jobs_stats(s->jobs, &js);
    gp_log(GP_LOG_INFO, "server", "jobs registry open", "jobs=%llu scan_interval_ms=%lld",
           (unsigned long long)js.jobs, (long long)c->jobs_scan_interval_ms);
    if ((rc = gp_srv_alerts_start(s, st, err, errlen))) {
        gp_srv_alerts_stop(s);
        gp_jobs_close(s->jobs);
        s->jobs = NULL;
        gp_storage_close(st);
        goto fail;
    }
    __atomic_store_n(&s->store, st, __ATOMIC_RELEASE);
    __atomic_store_n(&s->state, GP_SRV_READY, __ATOMIC_RELEASE);
    char inst[GP_SRV_INSTANCE_LEN];
    self_instance(s, bind, inst, sizeof inst);
    if ((rc = gp_srv_self_start(s, inst))) {
        gp_seterr(err, errlen, rc, "cannot start the self-scrape thread");
        goto fail;
    }
    if ((rc = gp_srv_inventory_warm_start(s))) {
        gp_seterr(err, errlen, rc, "cannot start the inventory thread");
        goto fail;
    }
    if ((rc = gp_srv_funnel_report_start(s, err, errlen)))
        goto fail;
    if ((rc = gp_srv_meta_forward_start(s))) {
        gp_seterr(err, errlen, rc, "cannot start the metadata forwarding thread");
        goto fail;
    }
    log_dashboard_url(s, bind);
    *out = s;
    return GP_OK;
fail:
    free(cert);
    free(key);
    gp_server_stop(s);
    return rc;
}

void gp_server_stop(struct gp_server *s)
{
    if (!s)
        return;
    gp_srv_self_stop(s); /* it renders from the HTTP server and appends to the store */
    gp_srv_funnel_report_stop(s); /* it reads the store */
    gp_srv_inventory_warm_stop(s); /* it reads the store */
    gp_srv_meta_forward_stop(s);  /* it writes to the store */
    gp_srv_stream_close(s); /* open streams end, or stopping would wait for them */
    gp_http_stop(s->http); /* waits for running handlers */
    s->http = NULL;
    struct gp_storage *st = gp_srv_store(s);
    if (st)
        __atomic_store_n(&s->store, NULL, __ATOMIC_RELEASE);
    gp_srv_alerts_stop(s); /* the engine reads the store: first */
    gp_srv_stream_free(s); /* after the alerts: their listener */
    gp_jobs_close(s->jobs); /* its scanner reads the store: stop it first */
    s->jobs = NULL;
    gp_rem_close(s->rem); /* finishes what was queued */
    s->rem = NULL;
    gp_srv_meta_close(s->meta); /* after the HTTP server: writes put into it */
    s->meta = NULL;
    gp_inventory_free(s->inventory); /* after the HTTP server: its routes read it */
    s->inventory = NULL;
    if (st)
        gp_storage_close(st);
    pthread_mutex_destroy(&s->hook_mu);
    gp_srv_preflight_free(&s->preflight);
    free(s);
}

/* ---- `gpulse server` ---- */

int gp_server_wait(struct gp_server *s, const sigset_t *set)
{
    int sig;
    while (sigwait(set, &sig) == 0 && sig == SIGHUP) {
        gp_log(GP_LOG_INFO, "server", "reloading", "signal=%d", sig);
        gp_server_reload(s);
    }
    return sig;
}

/* Blocks SIGINT/SIGTERM/SIGHUP for every thread started after this
 * (gp_server_wait takes them). */
static void block_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int gp_server_main(int argc, char **argv)
{
    struct gp_server_config cfg;
    gp_server_config_defaults(&cfg);
    struct gp_cfg_section sec = gp_server_cfg_section(&cfg);
    char err[768];
    bool help;
    if (gp_cfg_from_args(&sec, 1, "server", argc, argv, cfg.config_file, sizeof cfg.config_file, &help,
                         err, sizeof err)) {
        fprintf(stderr, "gpulse server: %s\n", err);
        return 2;
    }
    if (help) {
        gp_server_config_usage(stdout);
        return 0;
    }
    if (gp_server_config_validate(&cfg, err, sizeof err)) {
        fprintf(stderr, "gpulse server: %s\n", err);
        return 2;
    }
    gp_log_parse_level(cfg.log_level, &gp_log_min);
    sigset_t set;
    block_signals(&set);
    struct gp_server *s;
    int rc = gp_server_start(&s, &cfg, err, sizeof err);
    if (rc) {
        fprintf(stderr, "gpulse server: %s\n", err);
        return rc == GP_ECONFIG || rc == GP_EUSAGE ? 2 : 1;
    }
    int sig = gp_server_wait(s, &set);
    gp_log(GP_LOG_INFO, "server", "shutting down", "signal=%d", sig);
    gp_server_stop(s);
    gp_log(GP_LOG_INFO, "server", "stopped", "%s", "");
    return 0;
}
