/*
 * test_server_api.c - a whole gp_server (real store, real HTTP) on a free
 * port: the in-process write path that `gpulse up` uses (204, 400 with
 * the reasons, 413, 429 when the in-flight budget is spent), the query
 * routes' parameter errors in Prometheus's error envelope, methods,
 * unknown routes, health, and the self metrics after some traffic.
 */
#include "ingest/remote_write.h"
#include "lib/err.h"
#include "server/server.h"
#include "server/server_int.h"
#include "test.h"

#include <curl/curl.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static struct gp_server *start(void)
{
    struct gp_server_config c;
    gp_server_config_defaults(&c);
    snprintf(c.listen, sizeof c.listen, "127.0.0.1:0");
    snprintf(c.data_dir, sizeof c.data_dir, "%s/data", gp_test_tmpdir());
    snprintf(c.log_level, sizeof c.log_level, "error");
    struct gp_server *s;
    char err[512];
    if (gp_server_start(&s, &c, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "start: %s", err);
    return s;
}

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* One series {__name__=name, gpu=gpu} with samples at t[i] = v[i]; out is
 * the snappy body. */
static void body_of(struct gp_buf *out, const char *name, const char *gpu, const int64_t *t,
                    const double *v, size_t n)
{
    struct gp_label l[2] = {{{"__name__", 8}, {name, strlen(name)}}, {{"gpu", 3}, {gpu, strlen(gpu)}}};
    struct gp_sample smp[8];
    for (size_t i = 0; i < n; i++)
        smp[i] = (struct gp_sample){v[i], t[i]};
    struct gp_series se = {l, 2, smp, n};
    struct gp_batch rq = {&se, 1, 2, n, NULL};
    struct gp_buf scratch;
    gp_buf_init(&scratch, 0);
    CHECK_INT(gp_rw_encode(&rq, out, &scratch), GP_OK);
    gp_buf_free(&scratch);
}

/* `gpulse up`'s batches: no snappy, no protobuf, the same answers,
 * limits and counters as the write. */
static void test_in_process_append(void)
{
    struct gp_server *s = start();
    char msg[512];
    int64_t t0 = now_ms();
    struct gp_label l[2] = {{{"__name__", 8}, {"unit_probe", 10}}, {{"gpu", 3}, {"0", 1}}};
    struct gp_sample smp[3] = {{1, t0}, {2, t0 + 1000}, {3, t0 + 2000}};
    struct gp_series se = {l, 2, smp, 3};
    struct gp_batch rq = {&se, 1, 2, 3, NULL};
    CHECK_INT(gp_server_append(s, &rq, msg, sizeof msg), 204);
    CHECK_STR(msg, "");
    CHECK_INT(gp_server_append(s, &rq, msg, sizeof msg), 204); /* duplicates */
    /* An older sample and a conflicting one: 400 with both reasons. */
    struct gp_sample bad[2] = {{9, t0 - 5000}, {4, t0 + 2000}};
    se.samples = bad;
    se.nsamples = rq.nsamples_total = 2;
    CHECK_INT(gp_server_append(s, &rq, msg, sizeof msg), 400);
    CHECK_CONTAINS(msg, "rejected 2 of 2 samples");
    CHECK_CONTAINS(msg, "1 out of order");
    /* Not in canonical form, or a value the protocol refuses: 400 as a body's decode gives. */
    se.samples = smp;
    se.nsamples = 1;
    struct gp_label unsorted[2] = {l[1], l[0]};
    se.labels = unsorted;
    CHECK_INT(gp_server_append(s, &rq, msg, sizeof msg), 400);
    CHECK_CONTAINS(msg, "labels not sorted by name");
    struct gp_label badutf[2] = {l[0], {{"gpu", 3}, {"\xff", 1}}};
    se.labels = badutf;
    CHECK_INT(gp_server_append(s, &rq, msg, sizeof msg), 400);
    CHECK_CONTAINS(msg, "UTF-8");
    struct gp_label empty[2] = {l[0], {{"gpu", 3}, {"", 0}}};
    se.labels = empty;
    CHECK_INT(gp_server_append(s, &rq, msg, sizeof msg), 400);
    CHECK_CONTAINS(msg, "empty label value");
    /* Over max_uncompressed as remote write, and the in-flight budget spent. */
    se.labels = l;
    uint64_t max = s->cfg.max_uncompressed;
    s->cfg.max_uncompressed = 10;
    CHECK_INT(gp_server_append(s, &rq, msg, sizeof msg), 413);
    CHECK_CONTAINS(msg, "over the limit of 10 bytes");
    s->cfg.max_uncompressed = max;
    uint64_t all = s->cfg.max_inflight_bytes;
    CHECK(gp_srv_reserve(s, all));
    CHECK_INT(gp_server_append(s, &rq, msg, sizeof msg), 429);
    gp_srv_release(s, all);
    struct gp_buf m;
    gp_buf_init(&m, 0);
    CHECK_INT(gp_server_render_metrics(s, &m), GP_OK);
    CHECK_CONTAINS(m.data, "\ngpulse_server_samples_ingested_total 3\n");
    CHECK_CONTAINS(m.data, "\ngpulse_server_samples_duplicate_total 3\n");
    CHECK_CONTAINS(m.data, "gpulse_server_samples_rejected_total{reason=\"out_of_order\"} 1\n");
    CHECK_CONTAINS(m.data, "gpulse_server_write_requests_refused_total{reason=\"malformed\"} 3\n");
    CHECK_CONTAINS(m.data, "gpulse_server_write_requests_refused_total{reason=\"too_large\"} 1\n");
    CHECK_CONTAINS(m.data, "gpulse_server_write_requests_refused_total{reason=\"overloaded\"} 1\n");
    CHECK_CONTAINS(m.data, "gpulse_server_http_requests_total{handler=\"write\",code=\"204\"} 2\n");
    CHECK_CONTAINS(m.data, "gpulse_server_inflight_bytes 0\n");
    gp_buf_free(&m);
    gp_server_stop(s);
}

static void test_in_process_write(void)
{
    struct gp_server *s = start();
    struct gp_buf b;
    gp_buf_init(&b, 0);
    char msg[512];
    int64_t t0 = now_ms();
    int64_t t[3] = {t0, t0 + 1000, t0 + 2000};
    double v[3] = {1, 2, 3};
    body_of(&b, "unit_probe", "0", t, v, 3);
    CHECK_INT(gp_server_write(s, (const uint8_t *)b.data, b.len, msg, sizeof msg), 204);
    CHECK_STR(msg, "");
    /* The same batch again: duplicates, dropped silently. */
    CHECK_INT(gp_server_write(s, (const uint8_t *)b.data, b.len, msg, sizeof msg), 204);
    /* An older sample and a conflicting one: 400 with both reasons. */
    int64_t t2[2] = {t0 - 5000, t0 + 2000};
    double v2[2] = {9, 4};
    gp_buf_reset(&b);
    body_of(&b, "unit_probe", "0", t2, v2, 2);
    CHECK_INT(gp_server_write(s, (const uint8_t *)b.data, b.len, msg, sizeof msg), 400);
    CHECK_CONTAINS(msg, "rejected 2 of 2 samples");
    CHECK_CONTAINS(msg, "1 out of order");
    CHECK_CONTAINS(msg, "1 duplicate timestamp with a different value");
    /* Malformed, and absurdly large once decompressed. */
    CHECK_INT(gp_server_write(s, (const uint8_t *)"garbage", 7, msg, sizeof msg), 400);
    CHECK_CONTAINS(msg, "snappy");
    CHECK_INT(gp_server_write(s, (const uint8_t *)"\xff\xff\xff\xff\x0f\x00", 6, msg, sizeof msg), 413);
    CHECK_CONTAINS(msg, "decompressed body of 4294967295 bytes");
    CHECK_INT(gp_server_write(s, NULL, 0, msg, sizeof msg), 400);
    /* The in-flight budget spent: 429, and taken again once given back. */
    uint64_t all = s->cfg.max_inflight_bytes;
    CHECK(gp_srv_reserve(s, all));
    gp_buf_reset(&b);
    body_of(&b, "unit_probe", "1", t, v, 1);
    CHECK_INT(gp_server_write(s, (const uint8_t *)b.data, b.len, msg, sizeof msg), 429);
    gp_srv_release(s, all);
    CHECK_INT(gp_server_write(s, (const uint8_t *)b.data, b.len, msg, sizeof msg), 204);
    /* What the counters say. */
    struct gp_buf m;
    gp_buf_init(&m, 0);
    CHECK_INT(gp_server_render_metrics(s, &m), GP_OK);
    CHECK_CONTAINS(m.data, "\ngpulse_server_samples_ingested_total 4\n");
    CHECK_CONTAINS(m.data, "\ngpulse_server_samples_duplicate_total 3\n");
    CHECK_CONTAINS(m.data, "gpulse_server_samples_rejected_total{reason=\"out_of_order\"} 1\n");
    CHECK_CONTAINS(m.data, "gpulse_server_samples_rejected_total{reason=\"duplicate_timestamp\"} 1\n");
    CHECK_CONTAINS(m.data, "gpulse_server_write_requests_refused_total{reason=\"overloaded\"} 1\n");
    CHECK_CONTAINS(m.data, "gpulse_server_write_requests_refused_total{reason=\"too_large\"} 1\n");
    CHECK_CONTAINS(m.data, "gpulse_server_http_requests_total{handler=\"write\",code=\"204\"} 3\n");
    CHECK_CONTAINS(m.data, "gpulse_server_series 2\n");
    CHECK_CONTAINS(m.data, "gpulse_server_write_duration_seconds_count 8\n");
    CHECK_CONTAINS(m.data, "gpulse_build_info{version=");
    CHECK_CONTAINS(m.data, "gpulse_server_inflight_bytes 0\n");
    gp_buf_free(&m);
    gp_buf_free(&b);
    gp_server_stop(s);
}

struct reply {
    long status;
    char body[1 << 16];
    size_t len;
    char allow[64];
};

static size_t on_data(char *p, size_t sz, size_t n, void *arg)
{
    struct reply *r = arg;
    size_t k = sz * n, room = sizeof r->body - 1 - r->len;
    memcpy(r->body + r->len, p, k < room ? k : room);
    r->len += k < room ? k : room;
    r->body[r->len] = '\0';
    return k;
}

static size_t on_header(char *p, size_t sz, size_t n, void *arg)
{
    struct reply *r = arg;
    if (!strncasecmp(p, "Allow: ", 7)) {
        snprintf(r->allow, sizeof r->allow, "%.*s", (int)(sz * n - 7), p + 7);
        r->allow[strcspn(r->allow, "\r\n")] = '\0';
    }
    return sz * n;
}

static struct reply get(struct gp_server *s, const char *path, const char *method)
{
    struct reply r;
    memset(&r, 0, sizeof r);
    char url[2048];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", gp_server_port(s), path);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    if (method)
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    CHECK_INT(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    curl_easy_cleanup(c);
    return r;
}

static void expect_bad(struct gp_server *s, const char *path, const char *msg)
{
    struct reply r = get(s, path, NULL);
    if (r.status != 400 || !strstr(r.body, "\"errorType\":\"bad_data\"") || !strstr(r.body, msg))
        gp_test_fail(__FILE__, __LINE__, "%s: %ld %s (want 400 bad_data with \"%s\")", path, r.status,
                     r.body, msg);
}

static void test_api_parameters(void)
{
    struct gp_server *s = start();
    struct gp_buf b;
    gp_buf_init(&b, 0);
    char msg[256];
    int64_t t0 = (now_ms() / 1000) * 1000;
    int64_t t[3] = {t0 - 2000, t0 - 1000, t0};
    double v[3] = {10, 20, 30};
    body_of(&b, "api_probe", "0", t, v, 3);
    CHECK_INT(gp_server_write(s, (const uint8_t *)b.data, b.len, msg, sizeof msg), 204);
    gp_buf_free(&b);

    char path[512];
    snprintf(path, sizeof path, "/api/v1/query_range?match=api_probe&start=%lld&end=%lld&step=1s",
             (long long)(t0 / 1000 - 2), (long long)(t0 / 1000));
    struct reply r = get(s, path, NULL);
    CHECK_INT(r.status, 200);
    CHECK_CONTAINS(r.body, "\"resultType\":\"matrix\"");
    CHECK_CONTAINS(r.body, "\"30\"");
    /* query= is PromQL: a plain selector's instant values at the steps. */
    snprintf(path, sizeof path, "/api/v1/query_range?query=api_probe%%7Bgpu%%3D%%220%%22%%7D&start=%lld&end=%lld&step=1",
             (long long)(t0 / 1000 - 2), (long long)(t0 / 1000));
    r = get(s, path, NULL);
    CHECK_INT(r.status, 200);
    CHECK_CONTAINS(r.body, "\"20\"");
    r = get(s, "/api/v1/series?match[]=api_probe", NULL);
    CHECK_INT(r.status, 200);
    CHECK_CONTAINS(r.body, "\"__name__\":\"api_probe\"");
    r = get(s, "/api/v1/label/gpu/values", NULL);
    CHECK_INT(r.status, 200);
    CHECK_CONTAINS(r.body, "\"0\"");
    r = get(s, "/api/v1/labels", NULL);
    CHECK_CONTAINS(r.body, "\"gpu\"");
    r = get(s, "/api/v1/health", NULL);
    CHECK_INT(r.status, 200);
    CHECK_CONTAINS(r.body, "\"status\":\"ok\"");
    r = get(s, "/api/v1/nodes", NULL);
    CHECK_INT(r.status, 200);
    r = get(s, "/api/v1/gpus", NULL);
    CHECK_INT(r.status, 200);

    expect_bad(s, "/api/v1/query_range?match=api_probe&end=1&step=1", "missing parameter 'start'");
    expect_bad(s, "/api/v1/query_range?match=api_probe&start=1&end=2", "missing parameter 'step'");
    expect_bad(s, "/api/v1/query_range?match=api_probe&start=yesterday&end=2&step=1",
               "invalid parameter 'start'");
    expect_bad(s, "/api/v1/query_range?match=api_probe&start=1&end=2&step=-5", "invalid parameter 'step'");
    expect_bad(s, "/api/v1/query_range?match=api_probe&start=1&end=2&step=1&agg=median",
               "invalid parameter 'agg'");
    expect_bad(s, "/api/v1/query_range?match=api_probe&start=1&end=2&step=1&by=gpu", "'by' needs 'agg'");
    expect_bad(s, "/api/v1/query_range?match=api_probe&start=1&end=2&step=1&agg=avg&by=g-pu",
               "invalid label name");
    expect_bad(s, "/api/v1/query_range?match=api_probe&start=1&end=2&step=1&rollups=maybe", "rollups");
    expect_bad(s, "/api/v1/query_range?start=1&end=2&step=1", "missing parameter 'query' (PromQL) or 'match'");
    expect_bad(s, "/api/v1/query_range?match=a&match=b&start=1&end=2&step=1", "one selector");
    expect_bad(s, "/api/v1/query_range?match=%7Bx%3D~%22.*%22%7D&start=1&end=2&step=1",
               "invalid selector");
    expect_bad(s, "/api/v1/query_range?match=api_probe&start=2&end=1&step=1", "");
    expect_bad(s, "/api/v1/series", "no match[] parameter");
    expect_bad(s, "/api/v1/series?match[]=up%7B", "invalid selector");
    expect_bad(s, "/api/v1/series?match[]=up&start=soon", "invalid parameter 'start'");
    expect_bad(s, "/api/v1/label/no-such/values", "invalid label name");

    r = get(s, "/api/v1/nope", NULL);
    CHECK_INT(r.status, 404);
    CHECK_CONTAINS(r.body, "not_found");
    r = get(s, "/elsewhere", NULL);
    CHECK_INT(r.status, 404);
    r = get(s, "/api/v1/series?match[]=up", "DELETE");
    CHECK_INT(r.status, 405);
    CHECK_STR(r.allow, "GET, HEAD, POST");
    r = get(s, "/api/v1/nodes", "POST");
    CHECK_INT(r.status, 405);
    CHECK_STR(r.allow, "GET, HEAD");
    r = get(s, "/api/v1/write", NULL);
    CHECK_INT(r.status, 405);
    CHECK_STR(r.allow, "POST");
    r = get(s, "/api", NULL);
    CHECK_CONTAINS(r.body, "/api/v1/query_range");

    struct gp_buf m;
    gp_buf_init(&m, 0);
    CHECK_INT(gp_server_render_metrics(s, &m), GP_OK);
    CHECK_CONTAINS(m.data, "gpulse_server_http_requests_total{handler=\"query_range\",code=\"400\"} 12\n");
    CHECK_CONTAINS(m.data, "gpulse_server_http_requests_total{handler=\"write\",code=\"405\"} 1\n");
    CHECK_CONTAINS(m.data, "gpulse_server_query_duration_seconds_count{handler=\"query_range\"} 14\n");
    CHECK_CONTAINS(m.data, "gpulse_server_query_duration_seconds_bucket{handler=\"series\",le=\"+Inf\"} 4\n");
    gp_buf_free(&m);
    gp_server_stop(s);
}

static int hook(void *ctx, struct gp_buf *out)
{
    (void)ctx;
    gp_buf_puts(out, "# HELP other_metric x\n# TYPE other_metric gauge\nother_metric 1\n");
    return GP_OK;
}

static void test_metrics_hook(void)
{
    struct gp_server *s = start();
    gp_server_set_metrics_hook(s, hook, NULL);
    struct reply r = get(s, "/metrics", NULL);
    CHECK_INT(r.status, 200);
    const char *own = strstr(r.body, "gpulse_server_samples_ingested_total");
    const char *other = strstr(r.body, "other_metric 1");
    CHECK(own && other && own < other);
    CHECK(!strstr(r.body, "gpulse_build_info")); /* the hook's to give */
    gp_server_set_metrics_hook(s, NULL, NULL);
    r = get(s, "/metrics", NULL);
    CHECK(!strstr(r.body, "other_metric"));
    CHECK_CONTAINS(r.body, "gpulse_build_info{version=");
    gp_server_stop(s);
}

static void test_start_errors(void)
{
    struct gp_server_config c;
    gp_server_config_defaults(&c);
    snprintf(c.listen, sizeof c.listen, "127.0.0.1:0");
    snprintf(c.data_dir, sizeof c.data_dir, "%s/d", gp_test_tmpdir());
    snprintf(c.write_token_file, sizeof c.write_token_file, "%s/missing", gp_test_tmpdir());
    struct gp_server *s;
    char err[512];
    CHECK_INT(gp_server_start(&s, &c, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "write_token_file");
    c.write_token_file[0] = '\0';
    snprintf(c.tls_cert, sizeof c.tls_cert, "%s/nocert.pem", gp_test_tmpdir());
    snprintf(c.tls_key, sizeof c.tls_key, "%s/nokey.pem", gp_test_tmpdir());
    CHECK_INT(gp_server_start(&s, &c, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "cannot read tls_cert");
    c.tls_cert[0] = c.tls_key[0] = '\0';
    gp_test_write_file(gp_test_tmpdir(), "file", "x");
    snprintf(c.data_dir, sizeof c.data_dir, "%s/file", gp_test_tmpdir());
    CHECK(gp_server_start(&s, &c, err, sizeof err) != GP_OK);
    CHECK(err[0] != '\0');
}

const struct gp_test gp_tests_server_api[] = {
    {"in_process_write", test_in_process_write},
    {"in_process_append", test_in_process_append},
    {"api_parameters", test_api_parameters},
    {"metrics_hook", test_metrics_hook},
    {"start_errors", test_start_errors},
    {0},
};
