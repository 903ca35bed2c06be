/*
 * test_server_prom.c - Prometheus's routes of a whole gp_server (real
 * store, real HTTP, real engine): PromQL /api/v1/query and query_range
 * as GET and as form POST (Grafana's shapes: its health check, its panel
 * queries), the body-before-URL rule, their errors in Prometheus's shapes,
 * labels and label values narrowed by match[], start and end (GET and
 * POST), metadata, buildinfo, query_exemplars, and the /prometheus prefix
 * with Prometheus-shaped alerts.
 */
#include "server_testlib.h"

#include "server/metadata.h"

#include <snappy-c.h>

#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* One sample per series now-ish: name{label=value} = v at t. */
static void put(struct gp_server *s, const char *name, const char *label, const char *value, double v,
                int64_t t)
{
    struct gp_label l[2] = {{{"__name__", 8}, {name, strlen(name)}},
                               {{label, strlen(label)}, {value, strlen(value)}}};
    if (strcmp(label, "__name__") < 0) { /* labels sorted by name */
        struct gp_label x = l[0];
        l[0] = l[1];
        l[1] = x;
    }
    struct gp_sample smp = {v, t};
    struct gp_series se = {l, 2, &smp, 1};
    srv_write(s, &se, 1);
}

/* METHOD path with a token; a form body (NULL: none) as Grafana sends it. */
static struct reply *form_as(struct gp_server *s, const char *method, const char *path, const char *body,
                             const char *token)
{
    return srv_request_as(s, method, path, body, token, "application/x-www-form-urlencoded");
}

/* With the read token. */
static struct reply *form(struct gp_server *s, const char *method, const char *path, const char *body)
{
    return form_as(s, method, path, body, "r-tok");
}

/* srv_start_eval's server (tokens w-tok, r-tok) over the rules in yaml. */
static struct gp_server *start(const char *yaml)
{
    gp_test_write_file(gp_test_tmpdir(), "gpulse.yaml", yaml);
    return srv_start_eval();
}

static void expect(int line, struct reply *r, long status, const char *want)
{
    if (r->status != status || !strstr(r->body, want))
        gp_test_fail(__FILE__, line, "%ld %s (want %ld with \"%s\")", r->status, r->body, status, want);
}
#define EXPECT(r, status, want) expect(__LINE__, r, status, want)

static void test_query_get_and_post(void)
{
    struct gp_server *s = start("");
    int64_t t0 = (gp_wall_ms() / 1000) * 1000;
    put(s, "prom_probe", "gpu", "0", 42, t0 - 1000);
    char path[512], body[512];

    /* Grafana's "Save & test": POST query=1+1 with its time. */
    snprintf(body, sizeof body, "query=1%%2B1&time=%lld", (long long)(t0 / 1000));
    struct reply *r = form(s, "POST", "/api/v1/query", body);
    EXPECT(r, 200, "\"resultType\":\"scalar\"");
    EXPECT(r, 200, "\"2\"]");

    /* The same instant query by GET and by POST. */
    snprintf(path, sizeof path, "/api/v1/query?query=prom_probe&time=%lld", (long long)(t0 / 1000));
    r = form(s, "GET", path, NULL);
    EXPECT(r, 200, "\"resultType\":\"vector\"");
    EXPECT(r, 200, "\"__name__\":\"prom_probe\"");
    EXPECT(r, 200, "\"42\"]");
    static char got[sizeof r->body];
    snprintf(got, sizeof got, "%s", r->body);
    snprintf(body, sizeof body, "query=prom_probe&time=%lld", (long long)(t0 / 1000));
    r = form(s, "POST", "/api/v1/query", body);
    CHECK_STR(r->body, got);
    /* A form's fields come before the URL's; the URL's still count. */
    snprintf(path, sizeof path, "/api/v1/query?query=nothing_here&time=%lld", (long long)(t0 / 1000));
    r = form(s, "POST", path, "query=prom_probe");
    CHECK_STR(r->body, got);
    /* Without time: now. */
    r = form(s, "POST", "/api/v1/query", "query=prom_probe");
    EXPECT(r, 200, "\"42\"]");
    /* Under /prometheus, the same. */
    snprintf(path, sizeof path, "/prometheus/api/v1/query?query=prom_probe&time=%lld", (long long)(t0 / 1000));
    r = form(s, "GET", path, NULL);
    CHECK_STR(r->body, got);

    /* A panel query: form POST query_range (PromQL, not the match= form). */
    snprintf(body, sizeof body, "query=prom_probe&start=%lld&end=%lld&step=1",
             (long long)(t0 / 1000 - 1), (long long)(t0 / 1000));
    r = form(s, "POST", "/api/v1/query_range", body);
    EXPECT(r, 200, "\"resultType\":\"matrix\"");
    EXPECT(r, 200, "\"values\":[[");
    EXPECT(r, 200, "\"42\"]]");
    r = form(s, "POST", "/prometheus/api/v1/query_range", body);
    EXPECT(r, 200, "\"42\"]]");
    gp_server_stop(s);
}

static void test_query_errors(void)
{
    struct gp_server *s = start("");
    /* Parse errors: 400 bad_data with the position in the expression. */
    struct reply *r = form(s, "POST", "/api/v1/query", "query=sum(");
    EXPECT(r, 400, "\"errorType\":\"bad_data\"");
    EXPECT(r, 400, "\"error\":\"1:");
    r = form(s, "POST", "/api/v1/query", "query=");
    EXPECT(r, 400, "\"errorType\":\"bad_data\"");
    r = form(s, "GET", "/api/v1/query?query=1&time=tomorrow", NULL);
    EXPECT(r, 400, "invalid parameter 'time'");
    r = form(s, "GET", "/api/v1/query?query=1&timeout=soon", NULL);
    EXPECT(r, 400, "invalid parameter 'timeout'");
    r = form(s, "POST", "/api/v1/query_range", "query=1&start=1&end=2");
    EXPECT(r, 400, "missing parameter 'step'");
    r = form(s, "POST", "/api/v1/query_range", "query=1&end=2&step=1");
    EXPECT(r, 400, "missing parameter 'start'");
    r = form(s, "POST", "/api/v1/query_range", "query=1&start=1&end=2&step=0");
    EXPECT(r, 400, "invalid parameter 'step'");
    r = form(s, "POST", "/api/v1/query_range", "query=1&start=10&end=2&step=1");
    EXPECT(r, 400, "\"errorType\":\"bad_data\"");
    r = form(s, "POST", "/api/v1/query_range", "query=1&start=0&end=100000&step=1");
    EXPECT(r, 400, "11,000");
    /* agg and by belong to gpulse's match= form. */
    r = form(s, "GET", "/api/v1/query_range?query=up&start=1&end=2&step=1&agg=avg", NULL);
    EXPECT(r, 400, "parameter 'agg' belongs to the match= form");
    /* A form body that does not decode. */
    r = form(s, "POST", "/api/v1/query", "query=%zz");
    EXPECT(r, 400, "invalid form body: invalid URL escape");
    /* A JSON body labelled a form (curl -d's default) still reaches the
     * routes that read JSON: only Prometheus's routes judge forms. */
    r = form_as(s, "POST", "/api/v1/silences",
                "{\"matchers\":{\"kind\":\"gpu_hot\"},\"duration\":\"1h\",\"comment\":\"100% sure; really\"}",
                "w-tok");
    EXPECT(r, 200, "\"id\"");
    /* POST is for Prometheus's read routes only. */
    r = form(s, "POST", "/api/v1/gpus", "x=1");
    CHECK_INT(r->status, 405);
    r = form(s, "POST", "/api/v1/metadata", "x=1");
    CHECK_INT(r->status, 405);
    /* The read token guards POST as GET. */
    struct reply *u = srv_request(s, "GET", "/api/v1/query?query=1", NULL, NULL);
    CHECK_INT(u->status, 401);
    /* An overlong query through a form: the parser's clear 400, not a crash. */
    size_t n = 1 << 20;
    char *big = malloc(n + 16);
    memcpy(big, "query=", 6);
    for (size_t i = 0; i < n; i++)
        big[6 + i] = i % 2 ? '+' : '1';
    big[6 + n - 1] = '1';
    big[6 + n] = '\0';
    r = form(s, "POST", "/api/v1/query", big);
    EXPECT(r, 400, "\"errorType\":\"bad_data\"");
    free(big);
    gp_server_stop(s);
}

static void test_labels_narrowed(void)
{
    struct gp_server *s = start("");
    int64_t now = gp_wall_ms();
    put(s, "narrow_a", "alpha", "1", 1, now - 1000);
    put(s, "narrow_b", "beta", "2", 1, now - 1000);
    put(s, "narrow_old", "gamma", "3", 1, now - 2 * 3600 * 1000);
    struct reply *r = form(s, "GET", "/api/v1/labels", NULL);
    EXPECT(r, 200, "\"alpha\"");
    EXPECT(r, 200, "\"beta\"");
    EXPECT(r, 200, "\"gamma\"");
    r = form(s, "GET", "/api/v1/labels?match[]=narrow_a", NULL);
    CHECK_STR(r->body, "{\"status\":\"success\",\"data\":[\"__name__\",\"alpha\"]}");
    /* The union of selectors, by POST as Grafana sends it. */
    r = form(s, "POST", "/api/v1/labels", "match%5B%5D=narrow_a&match%5B%5D=%7B__name__%3D%22narrow_b%22%7D");
    CHECK_STR(r->body, "{\"status\":\"success\",\"data\":[\"__name__\",\"alpha\",\"beta\"]}");
    /* Repeated fields from the body and the URL both count. */
    r = form(s, "POST", "/api/v1/labels?match[]=narrow_b", "match[]=narrow_a");
    CHECK_STR(r->body, "{\"status\":\"success\",\"data\":[\"__name__\",\"alpha\",\"beta\"]}");
    /* start and end: the old series is outside the last hour. */
    char path[256];
    snprintf(path, sizeof path, "/api/v1/labels?start=%lld&end=%lld", (long long)(now / 1000 - 3600),
             (long long)(now / 1000 + 1));
    r = form(s, "GET", path, NULL);
    EXPECT(r, 200, "\"alpha\"");
    CHECK(!strstr(r->body, "\"gamma\""));
    snprintf(path, sizeof path, "/api/v1/labels?start=%lld", (long long)(now / 1000 - 3 * 3600));
    r = form(s, "GET", path, NULL);
    EXPECT(r, 200, "\"gamma\"");
    /* Label values, narrowed the same ways. */
    r = form(s, "GET", "/api/v1/label/__name__/values?match[]=%7Balpha%3D%221%22%7D", NULL);
    CHECK_STR(r->body, "{\"status\":\"success\",\"data\":[\"narrow_a\"]}");
    r = form(s, "GET", "/api/v1/label/alpha/values?match[]=narrow_b", NULL);
    CHECK_STR(r->body, "{\"status\":\"success\",\"data\":[]}");
    snprintf(path, sizeof path, "/prometheus/api/v1/label/__name__/values?start=%lld&end=%lld",
             (long long)(now / 1000 - 60), (long long)(now / 1000 + 1));
    r = form(s, "GET", path, NULL);
    EXPECT(r, 200, "\"narrow_a\",\"narrow_b\"");
    CHECK(!strstr(r->body, "narrow_old"));
    r = form(s, "POST", "/api/v1/label/gamma/values", "match[]=narrow_old");
    CHECK_STR(r->body, "{\"status\":\"success\",\"data\":[\"3\"]}");
    /* Errors. */
    r = form(s, "GET", "/api/v1/labels?match[]=%7B", NULL);
    EXPECT(r, 400, "invalid selector");
    r = form(s, "GET", "/api/v1/labels?start=10&end=5", NULL);
    EXPECT(r, 400, "end timestamp must not be before start time");
    r = form(s, "GET", "/api/v1/label/alpha/values?end=never", NULL);
    EXPECT(r, 400, "invalid parameter 'end'");
    /* Series by POST too. */
    r = form(s, "POST", "/api/v1/series", "match[]=narrow_a");
    EXPECT(r, 200, "{\"__name__\":\"narrow_a\",\"alpha\":\"1\"}");
    gp_server_stop(s);
}

static void test_metadata_buildinfo_exemplars(void)
{
    struct gp_server *s = start("");
    struct reply *r = form(s, "GET", "/api/v1/metadata", NULL);
    EXPECT(r, 200, "\"DCGM_FI_DEV_GPU_UTIL\":[{\"type\":\"gauge\",\"help\":\"GPU utilization (in %).\",\"unit\":\"\"}]");
    EXPECT(r, 200, "\"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION\":[{\"type\":\"counter\"");
    EXPECT(r, 200, "\"gpulse_host_memory_bytes\":[{\"type\":\"gauge\",\"help\":\"Host memory by kind, from /proc/meminfo.\",\"unit\":\"bytes\"}]");
    EXPECT(r, 200, "\"gpulse_host_cpu_seconds_total\":[{\"type\":\"counter\",\"help\":\"Host CPU time spent in each mode, summed over CPUs.\",\"unit\":\"seconds\"}]");
    /* Keys sorted, as Prometheus's JSON object. */
    CHECK(strstr(r->body, "\"DCGM_FI_DEV_GPU_UTIL\"") < strstr(r->body, "\"gpulse_host_cpus\""));
    r = form(s, "GET", "/api/v1/metadata?metric=DCGM_FI_DEV_GPU_TEMP", NULL);
    CHECK_STR(r->body, "{\"status\":\"success\",\"data\":{\"DCGM_FI_DEV_GPU_TEMP\":[{\"type\":\"gauge\","
                       "\"help\":\"GPU temperature (in C).\",\"unit\":\"\"}]}}\n");
    r = form(s, "GET", "/api/v1/metadata?metric=no_such_metric", NULL);
    CHECK_STR(r->body, "{\"status\":\"success\",\"data\":{}}\n");
    r = form(s, "GET", "/api/v1/metadata?limit=2", NULL);
    size_t keys = 0;
    for (const char *p = r->body; (p = strstr(p, "\":[")); p++)
        keys++;
    CHECK_INT((int)keys, 2);
    /* One entry per family: limit_per_metric (0 or more: no limit, as
     * Prometheus reads it) never shortens a list. */
    r = form(s, "GET", "/api/v1/metadata?metric=DCGM_FI_DEV_GPU_TEMP&limit_per_metric=0", NULL);
    EXPECT(r, 200, "{\"DCGM_FI_DEV_GPU_TEMP\":[{\"type\":\"gauge\"");
    r = form(s, "GET", "/api/v1/metadata?metric=DCGM_FI_DEV_GPU_TEMP&limit_per_metric=1", NULL);
    EXPECT(r, 200, "{\"DCGM_FI_DEV_GPU_TEMP\":[{\"type\":\"gauge\"");
    r = form(s, "GET", "/api/v1/metadata?limit=many", NULL);
    EXPECT(r, 400, "limit must be a number");
    r = form(s, "GET", "/api/v1/metadata?limit_per_metric=1.5", NULL);
    EXPECT(r, 400, "limit_per_metric must be a number");

    r = form(s, "GET", "/api/v1/status/buildinfo", NULL);
    EXPECT(r, 200, "{\"status\":\"success\",\"data\":{\"version\":\"2.42.0\",\"revision\":\"gpulse-" GP_VERSION "\"");
    EXPECT(r, 200, "\"gpulseVersion\":\"" GP_VERSION "\"");
    CHECK(!strstr(r->body, "features")); /* Grafana: Prometheus, not Mimir */
    r = form(s, "GET", "/prometheus/api/v1/status/buildinfo", NULL);
    EXPECT(r, 200, "\"version\":\"2.42.0\"");

    r = form(s, "POST", "/api/v1/query_exemplars", "query=up&start=1&end=2");
    CHECK_STR(r->body, "{\"status\":\"success\",\"data\":[]}\n");

    r = form(s, "POST", "/api/v1/format_query", "query=sum+by(Hostname)(rate(x%7Bgpu%3D%220%22%7D%5B5m%5D))");
    CHECK_STR(r->body, "{\"status\":\"success\",\"data\":\"sum by (Hostname) (rate(x{gpu=\\\"0\\\"}[5m]))\"}\n");
    r = form(s, "GET", "/prometheus/api/v1/format_query?query=sum(", NULL);
    EXPECT(r, 400, "\"errorType\":\"bad_data\"");
    gp_server_stop(s);
}

/* A WriteRequest of metadata entries only (as Prometheus sends them),
 * snappy-compressed, written in-process: the status, msg the reason. */
struct mdreq {
    uint8_t b[1 << 20];
    size_t n;
};

/* Appends a LEN field (key, then s) at b + *n. */
static void md_put(uint8_t *b, size_t *n, uint8_t key, const void *s, size_t len)
{
    b[(*n)++] = key;
    size_t v = len;
    while (v >= 0x80) {
        b[(*n)++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b[(*n)++] = (uint8_t)v;
    memcpy(b + *n, s, len);
    *n += len;
}

static void md_entry(struct mdreq *q, int type, const char *name, const char *help, const char *unit)
{
    uint8_t m[1024] = {0x08, (uint8_t)type};
    size_t n = 2;
    md_put(m, &n, 0x12, name, strlen(name));
    md_put(m, &n, 0x22, help, strlen(help));
    md_put(m, &n, 0x2a, unit, strlen(unit));
    md_put(q->b, &q->n, 0x1a, m, n);
}

static int md_write(struct gp_server *s, const struct mdreq *q, char *msg, size_t msglen)
{
    size_t clen = snappy_max_compressed_length(q->n);
    char *c = malloc(clen);
    CHECK(c != NULL);
    CHECK(snappy_compress((const char *)q->b, q->n, c, &clen) == SNAPPY_OK);
    int code = gp_server_write(s, (const uint8_t *)c, clen, msg, msglen);
    free(c);
    return code;
}

/* What remote write carried is answered beside gpulse's own families,
 * sorted with them, gpulse's definition winning on its own names; the
 * latest entry of a family wins; it survives a restart; malformed
 * metadata is a 400 that names it. */
static void test_metadata_remote_written(void)
{
    struct gp_server *s = start("");
    static struct mdreq q;
    char msg[256] = "";
    q.n = 0;
    md_entry(&q, 1, "app_requests", "Requests served.", "");
    md_entry(&q, 3, "app_latency_seconds", "Latency \"p\\q\" \xc3\xa9", "seconds");
    md_entry(&q, 2, "DCGM_FI_DEV_GPU_TEMP", "someone else's", "celsius");
    md_entry(&q, 5, "zz_last", "", "");
    CHECK_INT(md_write(s, &q, msg, sizeof msg), 204);
    struct reply *r = form(s, "GET", "/api/v1/metadata?metric=app_requests", NULL);
    CHECK_STR(r->body, "{\"status\":\"success\",\"data\":{\"app_requests\":[{\"type\":\"counter\","
                       "\"help\":\"Requests served.\",\"unit\":\"\"}]}}\n");
    r = form(s, "GET", "/api/v1/metadata", NULL);
    EXPECT(r, 200, "\"app_latency_seconds\":[{\"type\":\"histogram\",\"help\":\"Latency \\\"p\\\\q\\\" \xc3\xa9\",\"unit\":\"seconds\"}]");
    EXPECT(r, 200, "\"zz_last\":[{\"type\":\"summary\",\"help\":\"\",\"unit\":\"\"}]}}");
    EXPECT(r, 200, "\"DCGM_FI_DEV_GPU_TEMP\":[{\"type\":\"gauge\",\"help\":\"GPU temperature (in C).\",\"unit\":\"\"}]");
    CHECK(!strstr(r->body, "someone else's"));
    const char *dcgm = strstr(r->body, "\"DCGM_FI_DEV_GPU_UTIL\""), *app = strstr(r->body, "\"app_latency_seconds\""),
               *app2 = strstr(r->body, "\"app_requests\""), *own = strstr(r->body, "\"gpulse_host_cpus\"");
    CHECK(dcgm && app && app2 && own && dcgm < app && app < app2 && app2 < own);
    size_t keys = 0;
    for (const char *p = r->body; (p = strstr(p, "\":[{")); p++)
        keys++;
    r = form(s, "GET", "/api/v1/metadata?limit=100000", NULL);
    size_t keys2 = 0;
    for (const char *p = r->body; (p = strstr(p, "\":[{")); p++)
        keys2++;
    CHECK_INT((int)keys2, (int)keys);
    r = form(s, "GET", "/api/v1/metadata?metric=DCGM_FI_DEV_GPU_TEMP", NULL);
    CHECK_STR(r->body, "{\"status\":\"success\",\"data\":{\"DCGM_FI_DEV_GPU_TEMP\":[{\"type\":\"gauge\","
                       "\"help\":\"GPU temperature (in C).\",\"unit\":\"\"}]}}\n");
    /* The latest entry wins. */
    q.n = 0;
    md_entry(&q, 2, "app_requests", "Requests in flight.", "requests");
    CHECK_INT(md_write(s, &q, msg, sizeof msg), 204);
    r = form(s, "GET", "/api/v1/metadata?metric=app_requests", NULL);
    EXPECT(r, 200, "{\"app_requests\":[{\"type\":\"gauge\",\"help\":\"Requests in flight.\",\"unit\":\"requests\"}]}");
    /* Malformed: refused, named, nothing kept. */
    q.n = 0;
    md_entry(&q, 1, "fine_one", "", "");
    md_entry(&q, 1, "bad-name", "", "");
    CHECK_INT(md_write(s, &q, msg, sizeof msg), 400);
    CHECK_CONTAINS(msg, "invalid metric family name");
    r = form(s, "GET", "/api/v1/metadata?metric=fine_one", NULL);
    CHECK_STR(r->body, "{\"status\":\"success\",\"data\":{}}\n");
    /* A restart answers the same (state.db). */
    gp_server_stop(s);
    s = start("");
    r = form(s, "GET", "/api/v1/metadata?metric=app_requests", NULL);
    EXPECT(r, 200, "{\"app_requests\":[{\"type\":\"gauge\",\"help\":\"Requests in flight.\",\"unit\":\"requests\"}]}");
    r = form(s, "GET", "/api/v1/metadata?metric=app_latency_seconds", NULL);
    EXPECT(r, 200, "\"unit\":\"seconds\"");
    gp_server_stop(s);
}

/* At most GP_SRV_META_MAX_FAMILIES families: a new one past it is not
 * kept, the ones kept still update. */
static void test_metadata_limit(void)
{
    struct gp_server *s = start("");
    static struct mdreq q;
    char msg[256] = "", name[32];
    q.n = 0;
    for (int i = 0; i < GP_SRV_META_MAX_FAMILIES; i++) {
        snprintf(name, sizeof name, "fam_%05d", i);
        md_entry(&q, 2, name, "h", "");
    }
    CHECK_INT(md_write(s, &q, msg, sizeof msg), 204);
    q.n = 0;
    md_entry(&q, 2, "one_too_many", "h", "");
    md_entry(&q, 1, "fam_00007", "changed", "");
    CHECK_INT(md_write(s, &q, msg, sizeof msg), 204);
    struct reply *r = form(s, "GET", "/api/v1/metadata?metric=one_too_many", NULL);
    CHECK_STR(r->body, "{\"status\":\"success\",\"data\":{}}\n");
    r = form(s, "GET", "/api/v1/metadata?metric=fam_00007", NULL);
    EXPECT(r, 200, "{\"type\":\"counter\",\"help\":\"changed\"");
    r = form(s, "GET", "/api/v1/metadata?metric=fam_19999", NULL);
    EXPECT(r, 200, "{\"fam_19999\":[{\"type\":\"gauge\"");
    r = form(s, "GET", "/metrics", NULL);
    EXPECT(r, 200, "\ngpulse_server_metadata_families 20000\n");
    EXPECT(r, 200, "\ngpulse_server_metadata_dropped_total 1\n");
    gp_server_stop(s);
}

/* /api/v1/alerts stays gpulse's; /prometheus/api/v1/alerts is
 * Prometheus's shape of the same alerts; gpulse's own routes are not
 * under the prefix. */
static void test_prefix_and_alerts(void)
{
    struct gp_server *s = start(srv_hot_rule);
    struct reply *r = form(s, "GET", "/prometheus/api/v1/alerts", NULL);
    CHECK_STR(r->body, "{\"status\":\"success\",\"data\":{\"alerts\":[]}}");
    int fired = 0;
    for (int i = 0; i < 100 && !fired; i++) {
        srv_put_temp(s, 90, NULL);
        r = form(s, "GET", "/prometheus/api/v1/alerts", NULL);
        fired = strstr(r->body, "\"state\":\"firing\"") != NULL;
        if (!fired)
            usleep(100000);
    }
    CHECK(fired);
    EXPECT(r, 200, "{\"status\":\"success\",\"data\":{\"alerts\":[{\"labels\":{");
    EXPECT(r, 200, "\"alertname\":\"gpu_hot\"");
    EXPECT(r, 200, "\"severity\":\"critical\"");
    EXPECT(r, 200, "\"node\":\"n1\"");
    EXPECT(r, 200, "\"annotations\":{");
    EXPECT(r, 200, "\"activeAt\":\"20");
    EXPECT(r, 200, "\"value\":\"9e+01\"");
    r = form(s, "GET", "/api/v1/alerts", NULL);
    EXPECT(r, 200, "\"kind\":\"gpu_hot\"");
    CHECK(!strstr(r->body, "\"alertname\""));
    r = form(s, "GET", "/prometheus/api/v1/gpus", NULL);
    CHECK_INT(r->status, 404);
    r = form(s, "GET", "/prometheus/api/v1/alerts/x", NULL);
    CHECK_INT(r->status, 404);
    r = form(s, "GET", "/prometheus/metrics", NULL);
    CHECK_INT(r->status, 404);
    gp_server_stop(s);
}

/* The query_* settings reach the engine: a lookback of 1s leaves a 5 s
 * old sample out; a sample limit of 2 takes count() of one series but
 * refuses a range of three samples (422 execution, Prometheus's words). */
static void test_limits_from_settings(void)
{
    gp_test_write_file(gp_test_tmpdir(), "gpulse.yaml", "");
    struct gp_server_config c;
    srv_eval_config(&c);
    c.query_max_samples = 2;
    c.query_lookback_delta_ms = 1000;
    struct gp_server *s;
    char err[512];
    if (gp_server_start(&s, &c, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "start: %s", err);
    int64_t t0 = (gp_wall_ms() / 1000) * 1000;
    put(s, "lim_probe", "gpu", "0", 1, t0 - 5000);
    put(s, "lim_probe", "gpu", "1", 2, t0 - 500);
    put(s, "lim_probe", "gpu", "1", 3, t0 - 300);
    char path[256];
    snprintf(path, sizeof path, "/api/v1/query?query=count(lim_probe)&time=%lld", (long long)(t0 / 1000));
    struct reply *r = form(s, "GET", path, NULL);
    EXPECT(r, 200, "\"1\"]"); /* only gpu 1 within the 1 s lookback */
    snprintf(path, sizeof path, "/api/v1/query?query=lim_probe&time=%lld", (long long)(t0 / 1000 - 4));
    r = form(s, "GET", path, NULL);
    EXPECT(r, 200, "\"result\":[{");
    snprintf(path, sizeof path, "/api/v1/query?query=lim_probe%%5B1m%%5D&time=%lld", (long long)(t0 / 1000));
    r = form(s, "GET", path, NULL);
    EXPECT(r, 422, "\"errorType\":\"execution\"");
    EXPECT(r, 422, "query processing would load too many samples into memory");
    gp_server_stop(s);
}

/* A form's bytes come out of the in-flight budget (429 past it), and a
 * form over 2 MiB is refused (413) before it is read. */
static void test_form_budget(void)
{
    gp_test_write_file(gp_test_tmpdir(), "gpulse.yaml", "");
    struct gp_server_config c;
    srv_eval_config(&c);
    c.max_body = c.max_uncompressed = 1024;
    c.max_inflight_bytes = 4096;
    struct gp_server *s;
    char err[512];
    if (gp_server_start(&s, &c, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "start: %s", err);
    static char body[3 << 20];
    memcpy(body, "query=1", 7);
    memset(body + 7, ' ', 5000); /* spaces: the query is still 1 */
    body[5007] = '\0';
    struct reply *r = form(s, "POST", "/api/v1/query", body);
    CHECK_INT(r->status, 429);
    CHECK_CONTAINS(r->body, "too many requests in flight");
    body[2000] = '\0'; /* within the budget */
    r = form(s, "POST", "/api/v1/query", body);
    EXPECT(r, 200, "\"resultType\":\"scalar\"");
    gp_server_stop(s);

    s = start("");
    memset(body + 7, ' ', sizeof body - 8);
    body[sizeof body - 1] = '\0';
    r = form(s, "POST", "/api/v1/query", body);
    CHECK_INT(r->status, 413);
    gp_server_stop(s);
}

const struct gp_test gp_tests_server_prom[] = {
    {"form_budget", test_form_budget},
    {"limits_from_settings", test_limits_from_settings},
    {"query_get_and_post", test_query_get_and_post},
    {"query_errors", test_query_errors},
    {"labels_narrowed", test_labels_narrowed},
    {"metadata_buildinfo_exemplars", test_metadata_buildinfo_exemplars},
    {"metadata_remote_written", test_metadata_remote_written},
    {"metadata_limit", test_metadata_limit},
    {"prefix_and_alerts", test_prefix_and_alerts},
    {NULL, NULL},
};
