/*
 * test_storage.c - the storage interface (storage/storage.h): the parser
 * of Prometheus HTTP API answers (promapi) on good and malformed input,
 * the embedded backend against the store it wraps, and the remote
 * backend against a fake cluster (the project's own HTTP server answering
 * canned Prometheus API JSON): selection, reads from the selection's
 * samples, labels, forwarding of writes, and the errors of a cluster
 * that is down or answers nonsense.
 */
#include "lib/clock.h"
#include "lib/err.h"
#include "net/http.h"
#include "server/config.h"
#include "storage/promapi.h"
#include "storage/storage.h"
#include "store/labels.h"
#include "store/matcher.h"
#include "store_testlib.h"
#include "test.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- promapi ---- */

/* The storage's /metrics families as text, into b. */
static void render_metrics(struct gp_storage *s, struct gp_buf *b)
{
    struct gp_metric_text_sink t;
    gp_metric_text_sink_init(&t, b);
    gp_storage_walk_metrics(s, &t.base);
}

static const char MATRIX[] =
    "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
    "{\"metric\":{\"gpu\":\"1\",\"__name__\":\"util\",\"empty\":\"\"},"
    "\"values\":[[1700000000,\"1\"],[1700000000.5,\"2.5\"],[1700000001.001,\"NaN\"],"
    "[1700000002,\"+Inf\"],[1700000003,\"-Inf\"]]},"
    "{\"metric\":{\"__name__\":\"util\",\"gpu\":\"0\"},\"values\":[]}]}}";

static int has_label(const struct gp_promapi_series *s, const char *name, const char *value)
{
    struct gp_str v;
    return gp_labels_get(s->labels, s->labels_len, name, &v) == 1 && v.len == strlen(value) &&
           !memcmp(v.ptr, value, v.len);
}

static void test_matrix_parses(void)
{
    struct gp_promapi_result r;
    char err[256] = "";
    CHECK_INT(gp_promapi_parse_matrix(MATRIX, strlen(MATRIX), &r, err, sizeof err), GP_OK);
    CHECK_INT((int)r.n, 2);
    CHECK_INT((int)r.nsamples, 5);
    CHECK(has_label(&r.s[0], "__name__", "util") && has_label(&r.s[0], "gpu", "1"));
    struct gp_str v;
    CHECK_INT(gp_labels_get(r.s[0].labels, r.s[0].labels_len, "empty", &v), 0); /* empty: absent */
    CHECK_INT(gp_labels_validate(r.s[0].labels, r.s[0].labels_len), GP_OK);
    CHECK_INT((int)r.s[0].n, 5);
    CHECK(r.s[0].t[0] == 1700000000000LL && r.s[0].t[1] == 1700000000500LL &&
          r.s[0].t[2] == 1700000001001LL);
    CHECK(r.s[0].v[0] == 1 && r.s[0].v[1] == 2.5 && isnan(r.s[0].v[2]));
    CHECK(isinf(r.s[0].v[3]) && r.s[0].v[3] > 0 && isinf(r.s[0].v[4]) && r.s[0].v[4] < 0);
    CHECK_INT((int)r.s[1].n, 0);
    gp_promapi_result_free(&r);
    gp_promapi_result_free(&r); /* twice: zeroed */
    /* an aggregate without `by` (a pushed-down read): one series, no labels */
    const char *agg = "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
                      "{\"metric\":{},\"values\":[[1700000060,\"4.5\"]]}]}}";
    CHECK_INT(gp_promapi_parse_matrix(agg, strlen(agg), &r, err, sizeof err), GP_OK);
    CHECK(r.n == 1 && r.s[0].labels == NULL && r.s[0].labels_len == 0 && r.s[0].n == 1);
    gp_promapi_result_free(&r);
    const char *two = "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
                      "{\"metric\":{},\"values\":[]},{\"metric\":{\"x\":\"\"},\"values\":[]}]}}";
    CHECK_INT(gp_promapi_parse_matrix(two, strlen(two), &r, err, sizeof err), GP_EPARSE); /* twice */
    gp_promapi_result_free(&r);
    /* two writers of one series into a VictoriaMetrics without deduplication:
     * one sample per time, the later kept; going back in time is still refused */
    const char *dup = "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
                      "{\"metric\":{\"a\":\"b\"},\"values\":[[1,\"1\"],[1,\"2\"],[2,\"3\"],[2,\"3\"],"
                      "[3,\"4\"]]}]}}";
    CHECK_INT(gp_promapi_parse_matrix(dup, strlen(dup), &r, err, sizeof err), GP_OK);
    CHECK(r.n == 1 && r.s[0].n == 3 && r.nsamples == 3);
    CHECK(r.s[0].t[0] == 1000 && r.s[0].t[1] == 2000 && r.s[0].t[2] == 3000);
    CHECK(r.s[0].v[0] == 2 && r.s[0].v[1] == 3 && r.s[0].v[2] == 4);
    gp_promapi_result_free(&r);
}

static void strs_cb(void *arg, const char *s, size_t n)
{
    struct gp_buf *b = arg;
    gp_buf_append(b, s, n);
    gp_buf_putc(b, ';');
}

static void test_series_and_strings(void)
{
    const char *series = "{\"status\":\"success\",\"data\":[{\"__name__\":\"a\",\"x\":\"1\"},"
                         "{\"__name__\":\"b\"}]}";
    struct gp_promapi_result r;
    char err[256];
    CHECK_INT(gp_promapi_parse_series(series, strlen(series), &r, err, sizeof err), GP_OK);
    CHECK_INT((int)r.n, 2);
    CHECK(has_label(&r.s[0], "x", "1") && has_label(&r.s[1], "__name__", "b"));
    gp_promapi_result_free(&r);
    const char *labels = "{\"status\":\"success\",\"data\":[\"__name__\",\"gpu\",\"é\"]}";
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_promapi_parse_strings(labels, strlen(labels), strs_cb, &b, err, sizeof err), GP_OK);
    CHECK_STR(b.data, "__name__;gpu;é;");
    gp_buf_free(&b);
}

static void test_error_answer(void)
{
    const char *e = "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"parse error at char 3\"}";
    struct gp_promapi_result r;
    char err[256] = "";
    CHECK_INT(gp_promapi_parse_matrix(e, strlen(e), &r, err, sizeof err), GP_ENET);
    CHECK_CONTAINS(err, "bad_data: parse error at char 3");
    gp_promapi_result_free(&r);
}

static void test_malformed_refused(void)
{
    static const char *const bad[] = {
        "",
        "null",
        "[]",
        "{\"status\":\"success\"}",
        "{\"data\":[]}",
        "{\"status\":1,\"data\":[]}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}",
        "{\"status\":\"success\",\"data\":{\"result\":[]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":{}}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[1]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":{\"a\":1},\"values\":[]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":{\"a\":\"b\"}}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":{\"a\":\"b\"},\"values\":[[1]]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":{\"a\":\"b\"},\"values\":[[\"1\",\"1\"]]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":{\"a\":\"b\"},\"values\":[[1,1]]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":{\"a\":\"b\"},\"values\":[[1,\"x\"]]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":{\"a\":\"b\"},\"values\":[[1,\"1e999\"]]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":{\"a\":\"b\"},\"values\":[[1,\"\"]]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":{\"a\":\"b\"},\"values\":[[1e300,\"1\"]]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":{\"a\":\"b\"},\"values\":[[2,\"1\"],[1,\"1\"]]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":{\"a\":\"b\"},\"values\":[]},{\"metric\":{\"a\":\"b\"},\"values\":[]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":{\"a\":\"b\",\"a\":\"c\"},\"values\":[]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":{\"\":\"b\"},\"values\":[]}]}}",
        "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct gp_promapi_result r;
        char err[256] = "";
        int rc = gp_promapi_parse_matrix(bad[i], strlen(bad[i]), &r, err, sizeof err);
        if (rc != GP_EPARSE)
            gp_test_fail(__FILE__, __LINE__, "case %zu: rc %d (%s)", i, rc, err);
        CHECK(err[0]);
        gp_promapi_result_free(&r);
    }
    static const char *const bad_strings[] = {
        "{\"status\":\"success\",\"data\":{}}",
        "{\"status\":\"success\",\"data\":[1]}",
        "{\"status\":\"success\",\"data\":[\"a\",null]}",
    };
    for (size_t i = 0; i < sizeof bad_strings / sizeof bad_strings[0]; i++) {
        struct gp_buf b;
        gp_buf_init(&b, 0);
        char err[256] = "";
        CHECK_INT(gp_promapi_parse_strings(bad_strings[i], strlen(bad_strings[i]), strs_cb, &b, err,
                                           sizeof err),
                  GP_EPARSE);
        CHECK_INT((int)b.len, 0); /* nothing reported from a bad list */
        gp_buf_free(&b);
    }
    struct gp_promapi_result r;
    char err[256];
    CHECK_INT(gp_promapi_parse_series("{\"status\":\"success\",\"data\":[\"x\"]}", 35, &r, err, sizeof err),
              GP_EPARSE);
    gp_promapi_result_free(&r);
}

/* ---- the embedded backend ---- */

/* gp_storage_select_each's visits, with the labels asked for. */
struct visits {
    struct gp_store_series v[16];
    uint8_t labels[16][512];
    size_t n, asked;
};

static int visit_cb(void *arg, const struct gp_store_series *se)
{
    struct visits *x = arg;
    if (!se->labels) {
        x->asked++;
        return 1;
    }
    CHECK(x->n < 16 && se->labels_len <= 512);
    memcpy(x->labels[x->n], se->labels, se->labels_len);
    x->v[x->n++] = *se;
    return 0;
}

/* select_each visits what select selects: ids, times and labels. */
static void check_each_is_select(struct gp_storage *s, const struct gp_matcher *m, size_t nm,
                                 int64_t mint, int64_t maxt)
{
    struct gp_store_selection sel;
    CHECK_INT(gp_storage_select(s, m, nm, mint, maxt, &sel), GP_OK);
    struct visits x = {.n = 0};
    CHECK_INT(gp_storage_select_each(s, m, nm, mint, maxt, visit_cb, &x), GP_OK);
    CHECK_INT((int)x.n, (int)sel.n);
    for (size_t i = 0; i < sel.n && i < x.n; i++) {
        CHECK_INT(x.v[i].id, sel.series[i].id);
        CHECK_INT(x.v[i].first_ms, sel.series[i].first_ms);
        CHECK_INT(x.v[i].last_ms, sel.series[i].last_ms);
        CHECK_INT((int)x.v[i].labels_len, (int)sel.series[i].labels_len);
        CHECK(!memcmp(x.labels[i], sel.series[i].labels, sel.series[i].labels_len));
    }
    gp_storage_selection_free(&sel);
}

static void test_embedded_same_as_store(void)
{
    struct gp_storage *s = sopen_tmp();
    CHECK_INT(gp_storage_kind(s), GP_STORAGE_EMBEDDED);
    CHECK(gp_storage_store(s) != NULL);
    int64_t t0 = tnow_ms() - 3600000;
    struct treq r;
    const double val[] = {0, 10, 20};
    treq_build(&r, 0, 3, 1, t0, 1000, val);
    struct gp_append_result res = sappend(s, &r);
    CHECK_INT((int)res.accepted, 3);
    treq_free(&r);
    struct gp_store_selection sel;
    CHECK_INT(gp_storage_select(s, NULL, 0, INT64_MIN, INT64_MAX, &sel), GP_OK);
    CHECK_INT((int)sel.n, 3);
    struct gp_samples x = {0};
    CHECK_INT(gp_storage_read(s, sel.series[2].id, INT64_MIN, INT64_MAX, &x), GP_OK);
    CHECK_INT((int)x.n, 1);
    CHECK(x.v[0] == 20.0 && x.t[0] == t0);
    CHECK(gp_storage_newest_value(s, sel.series[1].id, sel.series[1].last_ms, 60000, &x) == 10.0);
    gp_samples_free(&x);
    gp_storage_selection_free(&sel);
    check_each_is_select(s, NULL, 0, INT64_MIN, INT64_MAX);
    check_each_is_select(s, NULL, 0, t0 + 1, INT64_MAX); /* none */
    struct gp_store_stats st;
    gp_storage_stats(s, &st);
    CHECK_INT((int)st.series, 3);
    gp_storage_close(s);
}

/* ---- the remote backend against a fake cluster ---- */

struct fake {
    struct gp_http *http;
    atomic_int queries, writes, mode; /* mode 0 good, 1 HTTP 500, 2 nonsense, 3 error JSON */
    char last_query[2048];
    char last_auth[256], last_tenant[64];
    pthread_mutex_t mu;
};

static uint64_t fake_prepare(void *ctx, struct gp_http_request *req, struct gp_http_response *early)
{
    (void)ctx, (void)req, (void)early;
    return 1 << 20;
}

/* Mode 5: VictoriaMetrics with -search.maxUniqueTimeseries=2 holding
 * six series of one name, its Hostname values chosen to need every kind
 * of split (a shared prefix, punctuation, absent, a character outside
 * the refill's alphabet): a query or a name lookup touching more than 2
 * series is refused with its 422. */
static const char *const LIMITED_HOSTS[] = {"node-a1", "node-a2", "node-b1", "node.c", "", "~x"};
#define NLIMITED 6

static void fake_limited(const struct gp_http_request *req, const char *path,
                         struct gp_http_response *resp)
{
    const char *q = gp_http_query(req, !strcmp(path, "/api/v1/query") ? "query" : "match[]");
    int match[NLIMITED], n = 0;
    for (int i = 0; i < NLIMITED; i++)
        match[i] = 1;
    if (q) { /* "{...}" or "{...}[Nms]" */
        const char *end = strrchr(q, '[');
        struct gp_matcher *m = NULL;
        size_t nm = 0;
        char err[256];
        if (gp_selector_parse(q, end && end > strrchr(q, '}') ? (size_t)(end - q) : strlen(q), &m, &nm,
                              err, sizeof err)) {
            resp->status = 400;
            gp_buf_printf(&resp->body, "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"%s\"}",
                          "bad selector");
            return;
        }
        for (int i = 0; i < NLIMITED; i++)
            for (size_t j = 0; j < nm; j++) {
                const char *v = !strcmp(m[j].name, "__name__") ? "gpu_util"
                                : !strcmp(m[j].name, "Hostname") ? LIMITED_HOSTS[i]
                                                                 : "";
                match[i] &= gp_matcher_matches(&m[j], v, strlen(v));
            }
        gp_matchers_free(m, nm);
    }
    for (int i = 0; i < NLIMITED; i++)
        n += match[i];
    if (n > 2 && q) { /* without match[]: the name index alone, no series counted */
        resp->status = 422;
        gp_buf_puts(&resp->body, "{\"status\":\"error\",\"errorType\":\"422\",\"error\":\"the number "
                                 "of matching timeseries exceeds 2; either narrow down the search or "
                                 "increase -search.max* command-line flag values\"}");
        return;
    }
    if (strcmp(path, "/api/v1/query")) {
        gp_buf_puts(&resp->body, n ? "{\"status\":\"success\",\"data\":[\"gpu_util\"]}"
                                   : "{\"status\":\"success\",\"data\":[]}");
        return;
    }
    gp_buf_puts(&resp->body, "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[");
    const char *sep = "";
    for (int i = 0; i < NLIMITED; i++) {
        if (!match[i])
            continue;
        gp_buf_printf(&resp->body, "%s{\"metric\":{\"__name__\":\"gpu_util\"", sep);
        if (*LIMITED_HOSTS[i])
            gp_buf_printf(&resp->body, ",\"Hostname\":\"%s\"", LIMITED_HOSTS[i]);
        gp_buf_printf(&resp->body, "},\"values\":[[%.3f,\"%d\"]]}", (double)(gp_wall_ms() - 30000) / 1e3, i);
        sep = ",";
    }
    gp_buf_puts(&resp->body, "]}}");
}

static void fake_handle(void *ctx, const struct gp_http_request *req, struct gp_http_response *resp)
{
    struct fake *f = ctx;
    const char *path = gp_http_path(req);
    resp->content_type = "application/json";
    pthread_mutex_lock(&f->mu);
    const char *a = gp_http_header(req, "Authorization"), *t = gp_http_header(req, "X-Scope-OrgID");
    snprintf(f->last_auth, sizeof f->last_auth, "%s", a ? a : "");
    snprintf(f->last_tenant, sizeof f->last_tenant, "%s", t ? t : "");
    pthread_mutex_unlock(&f->mu);
    if (!strcmp(path, "/api/v1/write")) {
        atomic_fetch_add(&f->writes, 1);
        resp->status = 204;
        return;
    }
    atomic_fetch_add(&f->queries, 1);
    int mode = atomic_load(&f->mode);
    if (mode == 1) {
        resp->status = 500;
        gp_buf_puts(&resp->body, "internal trouble");
        return;
    }
    if (mode == 2) {
        gp_buf_puts(&resp->body, "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[1]}}");
        return;
    }
    if (mode == 3) {
        resp->status = 422;
        gp_buf_puts(&resp->body, "{\"status\":\"error\",\"errorType\":\"execution\",\"error\":\"too many samples\"}");
        return;
    }
    if (mode == 4) { /* a cluster holding one series of the last minute: a refill */
        int64_t now = gp_wall_ms();
        size_t n;
        const uint8_t *body = gp_http_body(req, &n);
        pthread_mutex_lock(&f->mu);
        snprintf(f->last_query, sizeof f->last_query, "%.*s", (int)n, body ? (const char *)body : "");
        pthread_mutex_unlock(&f->mu);
        if (!strcmp(path, "/api/v1/label/__name__/values"))
            gp_buf_puts(&resp->body, "{\"status\":\"success\",\"data\":[\"gpu_util\"]}");
        else
            gp_buf_printf(&resp->body,
                          "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
                          "{\"metric\":{\"__name__\":\"gpu_util\",\"gpu\":\"1\",\"node\":\"n0\"},"
                          "\"values\":[[%.3f,\"4\"],[%.3f,\"5\"]]}]}}",
                          (double)(now - 60000) / 1e3, (double)(now - 30000) / 1e3);
        return;
    }
    if (mode == 5) {
        fake_limited(req, path, resp);
        return;
    }
    if (mode == 6 && !strcmp(path, "/api/v1/query_range")) {
        /* Minutes (storage_rollups.c), some of them malformed: gpu 1's
         * minute 60 s whole, 120 s without min and max (no cut crossed),
         * 180 s without a count; gpu 0's count negative; gpu 9 not
         * selected; a figure nobody asked for. */
        size_t n;
        const uint8_t *body = gp_http_body(req, &n);
        pthread_mutex_lock(&f->mu);
        snprintf(f->last_query, sizeof f->last_query, "%.*s", (int)n, body ? (const char *)body : "");
        pthread_mutex_unlock(&f->mu);
#define RU(gpu, fig, vals) "{\"metric\":{\"gpu\":\"" gpu "\",\"gpulse_rollup\":\"" fig "\"},\"values\":[" vals "]}"
        gp_buf_puts(&resp->body, "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
                    RU("1", "sum", "[120,\"6\"],[180,\"0.3\"],[240,\"2\"]") ","
                    RU("1", "count", "[120,\"12\"],[180,\"6\"]") ","
                    RU("1", "min", "[120,\"0.01\"]") "," RU("1", "max", "[120,\"0.99\"]") ","
                    RU("1", "median", "[120,\"0.5\"]") ","
                    RU("0", "count", "[120,\"-3\"]") "," RU("0", "sum", "[120,\"1\"]") ","
                    RU("9", "count", "[120,\"5\"]") "]}}");
#undef RU
        return;
    }
    if (!strcmp(path, "/api/v1/query_range")) {
        size_t n;
        const uint8_t *body = gp_http_body(req, &n);
        pthread_mutex_lock(&f->mu);
        snprintf(f->last_query, sizeof f->last_query, "%.*s", (int)n, body ? (const char *)body : "");
        pthread_mutex_unlock(&f->mu);
        gp_buf_puts(&resp->body, "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\","
                                 "\"result\":[{\"metric\":{},\"values\":[[60,\"3\"]]}]}}");
    } else if (!strcmp(path, "/api/v1/query")) {
        size_t n;
        const uint8_t *body = gp_http_body(req, &n);
        pthread_mutex_lock(&f->mu);
        snprintf(f->last_query, sizeof f->last_query, "%.*s", (int)n, body ? (const char *)body : "");
        pthread_mutex_unlock(&f->mu);
        /* Samples at 1000, 2000, 3000 s, and one outside at 5000 s. */
        gp_buf_puts(&resp->body,
                    "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
                    "{\"metric\":{\"__name__\":\"util\",\"gpu\":\"1\"},"
                    "\"values\":[[1000,\"1\"],[2000,\"2\"],[3000,\"NaN\"],[5000,\"5\"]]},"
                    "{\"metric\":{\"__name__\":\"util\",\"gpu\":\"0\"},\"values\":[[2500,\"7\"]]}]}}");
    } else if (!strcmp(path, "/api/v1/series")) {
        gp_buf_puts(&resp->body, "{\"status\":\"success\",\"data\":[{\"__name__\":\"util\",\"gpu\":\"1\"},"
                                 "{\"__name__\":\"util\",\"gpu\":\"0\"},{\"__name__\":\"util\",\"gpu\":\"2\"}]}");
    } else if (!strcmp(path, "/api/v1/labels")) {
        size_t n;
        const uint8_t *body = gp_http_body(req, &n);
        pthread_mutex_lock(&f->mu);
        snprintf(f->last_query, sizeof f->last_query, "%.*s", (int)n, body ? (const char *)body : "");
        pthread_mutex_unlock(&f->mu);
        gp_buf_puts(&resp->body, "{\"status\":\"success\",\"data\":[\"gpu\",\"__name__\",\"gpu\"]}");
    } else if (!strcmp(path, "/api/v1/label/gpu/values")) {
        gp_buf_puts(&resp->body, "{\"status\":\"success\",\"data\":[\"1\",\"0\"]}");
    } else {
        resp->status = 404;
        gp_buf_puts(&resp->body, "{\"status\":\"error\",\"errorType\":\"not_found\",\"error\":\"no\"}");
    }
}

static void fake_start(struct fake *f)
{
    memset(f, 0, sizeof *f);
    pthread_mutex_init(&f->mu, NULL);
    struct gp_http_options o = {.listen = "127.0.0.1:0", .handler = fake_handle, .ctx = f,
                                .prepare = fake_prepare};
    char err[256];
    if (gp_http_start_opts(&f->http, &o, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "fake cluster: %s", err);
}

static const char *open_name; /* remote_server_name of the next remote_open_window */

static struct gp_storage *remote_open_window(unsigned port, const char *dir, const char *win)
{
    char wurl[128], qurl[128], tok[600];
    snprintf(wurl, sizeof wurl, "http://127.0.0.1:%u/api/v1/write", port);
    snprintf(qurl, sizeof qurl, "http://127.0.0.1:%u/", port);
    snprintf(tok, sizeof tok, "%s/token", gp_test_tmpdir());
    FILE *fp = fopen(tok, "w");
    fputs("s3cret\n", fp);
    fclose(fp);
    struct gp_storage_options o = {.kind = GP_STORAGE_REMOTE};
    o.remote.write_url = wurl;
    o.remote.query_url = qurl;
    o.remote.buffer_dir = dir;
    o.remote.query_timeout_ms = 2000;
    o.remote.write_timeout_ms = 2000;
    o.remote.bearer_token_file = tok;
    o.remote.headers[0] = "X-Scope-OrgID: team-a";
    o.remote.nheaders = 1;
    o.remote.window_dir = win;
    o.remote.window_ms = win ? 120000 : 0;
    o.remote.server_name = open_name;
    struct gp_storage *s = NULL;
    char err[256] = "";
    int rc = gp_storage_open(&s, &o, err, sizeof err);
    if (rc)
        gp_test_fail(__FILE__, __LINE__, "remote open: %s", err);
    return s;
}

static struct gp_storage *remote_open(unsigned port, const char *dir)
{
    return remote_open_window(port, dir, NULL);
}

static void names_cb(void *arg, const char *s, size_t n) { strs_cb(arg, s, n); }

static void test_remote_reads(void)
{
    struct fake f;
    fake_start(&f);
    struct gp_storage *s = remote_open(gp_http_port(f.http), NULL);
    CHECK_INT(gp_storage_kind(s), GP_STORAGE_REMOTE);
    CHECK(gp_storage_store(s) == NULL);
    struct gp_matcher m;
    char err[128];
    CHECK_INT(gp_matcher_init(&m, GP_MATCH_RE, "gpu", "0|1", err, sizeof err), GP_OK);
    struct gp_store_selection sel;
    CHECK_INT(gp_storage_select(s, &m, 1, 1500000, 4000000, &sel), GP_OK);
    /* the query asked: a range selector over the window, at its end */
    CHECK_CONTAINS(f.last_query, "query=%7Bgpu%3D~%220%7C1%22%2C__name__%3D~%22.%2B%22%7D%5B2500001ms%5D");
    CHECK_CONTAINS(f.last_query, "time=4000.000");
    CHECK_CONTAINS(f.last_auth, "Bearer s3cret");
    CHECK_STR(f.last_tenant, "team-a");
    CHECK_INT((int)sel.n, 2);
    CHECK(sel.series[0].id < sel.series[1].id);
    /* gpu 1 came first: id 1; samples outside [1500 s, 4000 s] dropped */
    const struct gp_store_series *g1 = &sel.series[0];
    CHECK(g1->first_ms == 2000000 && g1->last_ms == 3000000);
    int q = atomic_load(&f.queries);
    struct gp_samples x = {0};
    CHECK_INT(gp_storage_read(s, g1->id, 1500000, 4000000, &x), GP_OK);
    CHECK_INT((int)x.n, 2);
    CHECK(x.v[0] == 2 && isnan(x.v[1]));
    /* newest value skips the NaN; both answered from the selection */
    CHECK(gp_storage_newest_value(s, g1->id, g1->last_ms, 1000000, &x) == 2);
    CHECK_INT(atomic_load(&f.queries), q);
    struct gp_rollups ru = {0};
    gp_storage_selection_free(&sel);
    gp_samples_free(&x);
    gp_rollups_free(&ru);
    gp_matcher_free(&m);
    /* after the selection is gone, a read asks for the one series */
    x = (struct gp_samples){0};
    CHECK_INT(gp_storage_read(s, 1, 1500000, 4000000, &x), GP_OK);
    CHECK_INT(atomic_load(&f.queries), q + 1);
    CHECK_CONTAINS(f.last_query, "__name__%3D%22util%22%2Cgpu%3D%221%22");
    CHECK_INT((int)x.n, 2);
    gp_samples_free(&x);
    /* unknown ids have no samples, as in the store */
    CHECK_INT(gp_storage_read(s, 99, 0, 1, &x), GP_OK);
    CHECK_INT((int)x.n, 0);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_storage_label_names(s, NULL, 0, INT64_MIN, INT64_MAX, names_cb, &b), GP_OK);
    CHECK_STR(b.data, "__name__;gpu;"); /* sorted, unique */
    CHECK(strstr(f.last_query, "start") == NULL); /* unbounded: the cluster's own window */
    gp_buf_reset(&b);
    /* a span goes to the cluster as start and end */
    CHECK_INT(gp_storage_label_names(s, NULL, 0, 1000500, 2000000, names_cb, &b), GP_OK);
    CHECK_CONTAINS(f.last_query, "start=1000.500");
    CHECK_CONTAINS(f.last_query, "end=2000.000");
    gp_buf_reset(&b);
    CHECK_INT(gp_storage_label_values(s, "gpu", NULL, 0, INT64_MIN, INT64_MAX, names_cb, &b), GP_OK);
    CHECK_STR(b.data, "0;1;");
    gp_buf_free(&b);
    /* beyond a window: the cluster's selection, visited */
    CHECK_INT(gp_matcher_init(&m, GP_MATCH_RE, "gpu", "0|1", err, sizeof err), GP_OK);
    check_each_is_select(s, &m, 1, 1500000, 4000000);
    gp_matcher_free(&m);
    struct gp_store_stats st;
    gp_storage_stats(s, &st);
    CHECK_INT((int)st.series, 2);
    gp_storage_close(s);
    gp_http_stop(f.http);
}

/* The detectors' selection: samples since `since` only, every series of
 * the range named (one with nothing since has bounds for times). */
static void test_remote_select_since(void)
{
    struct fake f;
    fake_start(&f);
    struct gp_storage *s = remote_open(gp_http_port(f.http), NULL);
    struct gp_store_selection sel;
    CHECK_INT(gp_storage_select_since(s, NULL, 0, 1500000, 4000000, 2500000, &sel), GP_OK);
    CHECK_CONTAINS(f.last_query, "%5B1500001ms%5D"); /* [2500000, 4000000] */
    CHECK_INT((int)sel.n, 3);
    int seen = 0;
    for (size_t i = 0; i < sel.n; i++) {
        struct gp_str g;
        CHECK_INT(gp_labels_get(sel.series[i].labels, sel.series[i].labels_len, "gpu", &g), 1);
        struct gp_samples x = {0};
        int q = atomic_load(&f.queries);
        CHECK_INT(gp_storage_read(s, sel.series[i].id, 2500000, 4000000, &x), GP_OK);
        CHECK_INT(atomic_load(&f.queries), q); /* from the selection */
        if (g.ptr[0] == '2') {
            CHECK(sel.series[i].last_ms == 2499999 && x.n == 0);
            seen |= 1;
        } else if (g.ptr[0] == '0') {
            CHECK(sel.series[i].last_ms == 2500000 && x.n == 1 && x.v[0] == 7);
            seen |= 2;
        } else {
            CHECK(x.n == 1 && isnan(x.v[0]));
            seen |= 4;
        }
        gp_samples_free(&x);
    }
    CHECK_INT(seen, 7);
    gp_storage_selection_free(&sel);
    /* since before the range: a plain selection */
    CHECK_INT(gp_storage_select_since(s, NULL, 0, 1500000, 4000000, 0, &sel), GP_OK);
    CHECK_INT((int)sel.n, 2);
    gp_storage_selection_free(&sel);
    gp_storage_close(s);
    gp_http_stop(f.http);
}

/* A selection's minutes from the cluster (gp_storage_read_rollups_all):
 * one request per name, minutes matched to the selection's series by
 * labels, min and max only where asked, and what does not fit is left
 * out; an error leaves nothing. */
static void test_remote_rollups_all(void)
{
    struct fake f;
    fake_start(&f);
    struct gp_storage *s = remote_open(gp_http_port(f.http), NULL);
    struct gp_store_selection sel;
    CHECK_INT(gp_storage_select(s, NULL, 0, 1000000, 4000000, &sel), GP_OK);
    CHECK_INT((int)sel.n, 2); /* util{gpu="0"}, util{gpu="1"} */
    atomic_store(&f.mode, 6);
    struct gp_rollups ru[2];
    const double cut = 0.05;
    int q = atomic_load(&f.queries);
    CHECK_INT(gp_storage_read_rollups_all(s, &sel, 60000, 239999, &cut, 1, ru), GP_OK);
    CHECK_INT(atomic_load(&f.queries), q + 1);
    CHECK_CONTAINS(f.last_query, "count_over_time%28%7B__name__%3D%22util%22%7D%5B1m%5D%20offset%201ms%29");
    CHECK_CONTAINS(f.last_query, "%3C%200.050000000000000003%20and%20max_over_time"); /* < 0.05 and max */
    CHECK_CONTAINS(f.last_query, "start=120.000&end=240.000&step=60.000");
    for (size_t i = 0; i < 2; i++) {
        struct gp_str g;
        gp_labels_get(sel.series[i].labels, sel.series[i].labels_len, "gpu", &g);
        if (g.ptr[0] == '0') {
            CHECK_INT((int)ru[i].n, 0); /* a negative count: no minute */
            continue;
        }
        CHECK_INT((int)ru[i].n, 2); /* the minute without a count is left out */
        CHECK(ru[i].r[0].t == 60000 && ru[i].r[0].count == 12 && ru[i].r[0].sum == 6);
        CHECK(ru[i].r[0].min == 0.01 && ru[i].r[0].max == 0.99);
        CHECK(ru[i].r[1].t == 120000 && ru[i].r[1].count == 6);
        CHECK(ru[i].r[1].min == 0.3 / 6 && ru[i].r[1].max == 0.3 / 6 && ru[i].r[1].sum == 0.3); /* the mean */
    }
    gp_rollups_free(&ru[0]);
    gp_rollups_free(&ru[1]);
    /* no cut: counts and sums only */
    CHECK_INT(gp_storage_read_rollups_all(s, &sel, 60000, 239999, &cut, 0, ru), GP_OK);
    CHECK(!strstr(f.last_query, "min_over_time") && strstr(f.last_query, "sum_over_time"));
    gp_rollups_free(&ru[0]);
    gp_rollups_free(&ru[1]);
    atomic_store(&f.mode, 1);
    CHECK_INT(gp_storage_read_rollups_all(s, &sel, 60000, 239999, NULL, 0, ru), GP_ENET);
    CHECK(ru[0].n == 0 && ru[1].n == 0 && !ru[0].r && !ru[1].r);
    CHECK_CONTAINS(gp_storage_last_error(), "query_range: HTTP 500");
    /* A few known series in one request: = where they agree, =~ of
     * the escaped values where they differ. */
    atomic_store(&f.mode, 0);
    const struct gp_store_series *two[] = {&sel.series[0], &sel.series[1]};
    struct gp_store_selection like;
    CHECK_INT(gp_storage_select_like(s, two, 2, 1000000, 4000000, &like), GP_OK);
    CHECK_CONTAINS(f.last_query, "__name__%3D%22util%22");
    CHECK_CONTAINS(f.last_query, "gpu%3D~%220%7C1%22");
    CHECK_INT((int)like.n, 2);
    gp_storage_selection_free(&like);
    gp_storage_selection_free(&sel);
    gp_storage_close(s);
    gp_http_stop(f.http);
}

static void test_remote_errors(void)
{
    struct fake f;
    fake_start(&f);
    struct gp_storage *s = remote_open(gp_http_port(f.http), NULL);
    struct gp_store_selection sel;
    static const struct {
        int mode, status;
        const char *text;
    } cases[] = {{1, 503, "HTTP 500: internal trouble"},
                 {2, 502, "a matrix entry is not an object"},
                 {3, 502, "HTTP 422: execution: too many samples"}};
    for (size_t i = 0; i < 3; i++) {
        atomic_store(&f.mode, cases[i].mode);
        gp_storage_clear_error();
        CHECK_INT(gp_storage_select(s, NULL, 0, 0, 1000, &sel), GP_ENET);
        CHECK_INT((int)sel.n, 0);
        CHECK_CONTAINS(gp_storage_last_error(), cases[i].text);
        CHECK_INT(gp_storage_last_error_status(), cases[i].status);
    }
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_storage_label_names(s, NULL, 0, INT64_MIN, INT64_MAX, names_cb, &b), GP_ENET);
    gp_buf_free(&b);
    CHECK(isnan(gp_storage_newest_value(s, 1, 1000, 1000, &(struct gp_samples){0})));
    gp_storage_close(s);
    /* the cluster gone: no answer at all */
    unsigned port = gp_http_port(f.http);
    gp_http_stop(f.http);
    s = remote_open(port, NULL);
    gp_storage_clear_error();
    CHECK_INT(gp_storage_select(s, NULL, 0, 0, 1000, &sel), GP_ENET);
    CHECK_INT(gp_storage_last_error_status(), 503);
    CHECK_CONTAINS(gp_storage_last_error(), "/api/v1/query");
    gp_storage_close(s);
}

/* PromQL goes to the cluster as PromQL (a POST form of the client's
 * parameters); its answer, success or Prometheus error, comes back as
 * it is; anything else is the cluster failing. */
static void test_remote_promql(void)
{
    struct fake f;
    fake_start(&f);
    struct gp_storage *s = remote_open(gp_http_port(f.http), NULL);
    struct gp_buf out;
    gp_buf_init(&out, 0);
    int status = 0;
    struct gp_storage_promql q = {.query = "sum by (gpu) (rate(util[5m]))", .time_ms = 1700000000250,
                                  .timeout_ms = 1500};
    CHECK_INT(gp_storage_promql(s, &q, &out, &status), GP_OK);
    CHECK_INT(status, 200);
    CHECK_CONTAINS(out.data, "\"resultType\":\"matrix\"");
    pthread_mutex_lock(&f.mu);
    CHECK_STR(f.last_query, "query=sum%20by%20%28gpu%29%20%28rate%28util%5B5m%5D%29%29"
                            "&time=1700000000.250&timeout=1.500");
    CHECK_STR(f.last_auth, "Bearer s3cret");
    pthread_mutex_unlock(&f.mu);
    struct gp_storage_promql r = {.query = "1", .range = 1, .start_ms = -1500, .end_ms = 60000,
                                  .step_ms = 15000};
    gp_buf_reset(&out);
    CHECK_INT(gp_storage_promql(s, &r, &out, &status), GP_OK);
    CHECK_INT(status, 200);
    CHECK_CONTAINS(out.data, "[[60,\"3\"]]");
    pthread_mutex_lock(&f.mu);
    CHECK_STR(f.last_query, "query=1&start=-1.500&end=60.000&step=15.000");
    pthread_mutex_unlock(&f.mu);
    /* A pushed-down read (no window here: every range is the cluster's):
     * its grid exact, its matrix parsed, an aggregate's empty label set
     * taken. */
    CHECK_INT(gp_storage_pushdown(s, NULL, 0, 0), 1);
    struct gp_promapi_result pm;
    r.exact_grid = 1;
    CHECK_INT(gp_storage_promql_matrix(s, &r, &pm), GP_OK);
    CHECK(pm.n == 1 && pm.s[0].labels_len == 0 && pm.s[0].n == 1 && pm.s[0].t[0] == 60000 &&
          pm.s[0].v[0] == 3);
    gp_promapi_result_free(&pm);
    pthread_mutex_lock(&f.mu);
    CHECK_STR(f.last_query, "query=1&start=-1.500&end=60.000&step=15.000&nocache=1");
    pthread_mutex_unlock(&f.mu);
    r.exact_grid = 0;
    /* The cluster's own error is the client's answer. */
    atomic_store(&f.mode, 3);
    gp_buf_reset(&out);
    CHECK_INT(gp_storage_promql(s, &q, &out, &status), GP_OK);
    CHECK_INT(status, 422);
    CHECK_CONTAINS(out.data, "\"errorType\":\"execution\"");
    /* A failure that is not Prometheus's answer: GP_ENET, nothing relayed. */
    atomic_store(&f.mode, 1);
    gp_buf_reset(&out);
    gp_storage_clear_error();
    CHECK_INT(gp_storage_promql(s, &q, &out, &status), GP_ENET);
    CHECK_INT((int)out.len, 0);
    CHECK_CONTAINS(gp_storage_last_error(), "HTTP 500 without a Prometheus error");
    CHECK_INT(gp_storage_last_error_status(), 503);
    gp_buf_free(&out);
    gp_storage_close(s);
    gp_http_stop(f.http);
    /* The embedded store evaluates nothing itself: the caller does. */
    struct gp_storage *e = sopen_tmp();
    CHECK_INT(gp_storage_promql(e, &q, &out, &status), GP_EUNSUPPORTED);
    CHECK_INT(gp_storage_pushdown(e, NULL, 0, 0), 0);
    CHECK_INT(gp_storage_promql_matrix(e, &r, &pm), GP_EUNSUPPORTED);
    gp_storage_close(e);
}

static void test_remote_forwards_writes(void)
{
    struct fake f;
    fake_start(&f);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/buf", gp_test_tmpdir());
    struct gp_storage *s = remote_open(gp_http_port(f.http), dir);
    struct treq r;
    const double val[] = {1, 2};
    treq_build(&r, 0, 2, 1, 1700000000000LL, 1000, val);
    struct gp_append_result res = sappend(s, &r);
    treq_free(&r);
    CHECK_INT((int)res.accepted, 2);
    for (int i = 0; i < 200 && !atomic_load(&f.writes); i++)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    CHECK_INT(atomic_load(&f.writes), 1);
    CHECK_CONTAINS(f.last_auth, "Bearer s3cret");
    CHECK_STR(f.last_tenant, "team-a");
    struct gp_buf m;
    gp_buf_init(&m, 0);
    render_metrics(s, &m);
    CHECK_CONTAINS(m.data, "gpulse_storage_remote_samples_forwarded_total 2");
    CHECK_CONTAINS(m.data, "gpulse_push_samples_sent_total{target=\"http://127.0.0.1:");
    gp_buf_free(&m);
    gp_storage_close(s);
    gp_http_stop(f.http);
}

/* The local window (docs/storage.md "The local window"): refilled from
 * the cluster at open, fed by the writes that pass through, answering
 * reads within it without a request; reads before it ask the cluster. */
static void test_remote_window(void)
{
    struct fake f;
    fake_start(&f);
    atomic_store(&f.mode, 4);
    char win[600];
    snprintf(win, sizeof win, "%s/win", gp_test_tmpdir());
    int64_t now = gp_wall_ms();
    struct gp_storage *s = remote_open_window(gp_http_port(f.http), NULL, win);
    int q = atomic_load(&f.queries);
    CHECK_INT(q, 2); /* the names, then gpu_util's samples */
    CHECK_CONTAINS(f.last_query, "gpu_util");
    atomic_store(&f.mode, 1); /* from now on the cluster fails: what answers is the window */
    struct treq r;
    const double val[] = {6};
    treq_build(&r, 1, 1, 1, now - 5000, 1000, val);
    struct gp_append_result res = sappend(s, &r);
    treq_free(&r);
    CHECK_INT((int)res.accepted, 1);
    struct gp_matcher m;
    char err[128];
    CHECK_INT(gp_matcher_init(&m, GP_MATCH_EQ, "__name__", "gpu_util", err, sizeof err), GP_OK);
    struct gp_store_selection sel;
    CHECK_INT(gp_storage_select(s, &m, 1, now - 100000, now, &sel), GP_OK);
    CHECK_INT((int)sel.n, 1);
    struct gp_samples x = {0};
    CHECK_INT(gp_storage_read(s, sel.series[0].id, now - 100000, now, &x), GP_OK);
    CHECK_INT((int)x.n, 3); /* two refilled, one written */
    CHECK(x.v[0] == 4 && x.v[1] == 5 && x.v[2] == 6);
    CHECK(gp_storage_newest_value(s, sel.series[0].id, now, 60000, &x) == 6);
    gp_storage_selection_free(&sel);
    /* unbounded: remote_lookback (15 m) is more than the window holds */
    CHECK_INT(gp_storage_select(s, &m, 1, INT64_MIN, INT64_MAX, &sel), GP_ENET);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_storage_label_values(s, "gpu", &m, 1, now - 100000, now, names_cb, &b), GP_OK);
    CHECK_STR(b.data, "1;");
    CHECK_INT(atomic_load(&f.queries), q + 1); /* only the unbounded selection asked */
    /* before the window: the cluster */
    CHECK_INT(gp_storage_select(s, &m, 1, now - 3600000, now, &sel), GP_ENET);
    CHECK_INT(atomic_load(&f.queries), q + 2);
    gp_buf_reset(&b);
    render_metrics(s, &b);
    CHECK_CONTAINS(b.data, "gpulse_storage_remote_window_refilled_samples 2\n");
    CHECK_CONTAINS(b.data, "gpulse_storage_remote_window_reads_total 2\n");
    CHECK_CONTAINS(b.data, "gpulse_storage_remote_window_held_seconds 120\n");
    gp_buf_free(&b);
    q = atomic_load(&f.queries);
    check_each_is_select(s, &m, 1, now - 100000, now); /* the window's, the cluster failing */
    CHECK_INT(atomic_load(&f.queries), q);
    gp_samples_free(&x);
    gp_matcher_free(&m);
    gp_storage_close(s);
    /* A cluster that cannot be asked at open: the window holds from then on. */
    s = remote_open_window(gp_http_port(f.http), NULL, win);
    CHECK_INT(gp_storage_select(s, NULL, 0, now - 100000, gp_wall_ms(), &sel), GP_ENET);
    CHECK_INT(gp_storage_select(s, NULL, 0, gp_wall_ms(), gp_wall_ms() + 1000, &sel), GP_OK);
    CHECK_INT((int)sel.n, 0); /* wiped at open: nothing from before */
    gp_storage_selection_free(&sel);
    gp_storage_close(s);
    gp_http_stop(f.http);
}

/* A cluster that refuses queries touching more than 2 series (mode 5):
 * the refill asks for the names without match[], splits the name's
 * series by Hostname until every query is answered, and the window
 * holds all six series, each once. */
static void test_remote_window_split(void)
{
    struct fake f;
    fake_start(&f);
    atomic_store(&f.mode, 5);
    char win[600];
    snprintf(win, sizeof win, "%s/win-split", gp_test_tmpdir());
    int64_t now = gp_wall_ms();
    struct gp_storage *s = remote_open_window(gp_http_port(f.http), NULL, win);
    CHECK(atomic_load(&f.queries) > 6); /* more than the names and one query */
    atomic_store(&f.mode, 1); /* what answers now is the window */
    struct gp_buf b;
    gp_buf_init(&b, 0);
    render_metrics(s, &b);
    CHECK_CONTAINS(b.data, "gpulse_storage_remote_window_refilled_samples 6\n");
    CHECK_CONTAINS(b.data, "gpulse_storage_remote_window_held_seconds 120\n");
    struct gp_matcher m;
    char err[128];
    CHECK_INT(gp_matcher_init(&m, GP_MATCH_EQ, "__name__", "gpu_util", err, sizeof err), GP_OK);
    struct gp_store_selection sel;
    CHECK_INT(gp_storage_select(s, &m, 1, now - 100000, now, &sel), GP_OK);
    CHECK_INT((int)sel.n, NLIMITED);
    gp_storage_selection_free(&sel);
    gp_buf_reset(&b);
    CHECK_INT(gp_storage_label_values(s, "Hostname", &m, 1, now - 100000, now, names_cb, &b), GP_OK);
    CHECK_STR(b.data, "~x;node-a1;node-a2;node-b1;node.c;"); /* the window's order */
    gp_matcher_free(&m);
    gp_buf_free(&b);
    gp_storage_close(s);
    gp_http_stop(f.http);
}

/* Several servers on one cluster (docs/storage.md): the refill asks for
 * this server's own part, what passes through carries gpulse_server, and
 * a read that names `job` goes to the cluster though the window holds
 * its range (another server's ranks are only there). */
static void test_remote_server_name(void)
{
    struct fake f;
    fake_start(&f);
    atomic_store(&f.mode, 4);
    char win[600];
    snprintf(win, sizeof win, "%s/win-named", gp_test_tmpdir());
    int64_t now = gp_wall_ms();
    open_name = "a";
    struct gp_storage *s = remote_open_window(gp_http_port(f.http), NULL, win);
    open_name = NULL;
    CHECK_STR(gp_storage_server_name(s), "a");
    CHECK_CONTAINS(f.last_query, "gpulse_server%3D%22a%22"); /* the refill: {...,gpulse_server="a"} */
    atomic_store(&f.mode, 1); /* the cluster fails from now on */
    struct treq r;
    const double val[] = {6};
    treq_build(&r, 1, 1, 1, now - 5000, 1000, val);
    struct gp_append_result res = sappend(s, &r);
    treq_free(&r);
    CHECK_INT((int)res.accepted, 1);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_storage_label_values(s, "gpulse_server", NULL, 0, now - 100000, now, names_cb, &b), GP_OK);
    CHECK_STR(b.data, "a;"); /* the write, labelled in the window (the refilled series came unlabelled) */
    int q = atomic_load(&f.queries);
    struct gp_matcher m;
    char err[128];
    struct gp_store_selection sel;
    CHECK_INT(gp_matcher_init(&m, GP_MATCH_EQ, "__name__", "gpu_util", err, sizeof err), GP_OK);
    CHECK_INT(gp_storage_select(s, &m, 1, now - 100000, now, &sel), GP_OK);
    CHECK_INT((int)sel.n, 2); /* the fake's refilled series has no gpulse_server: another series */
    gp_storage_selection_free(&sel);
    gp_matcher_free(&m);
    CHECK_INT(atomic_load(&f.queries), q); /* the window answered */
    CHECK_INT(gp_matcher_init(&m, GP_MATCH_EQ, "job", "span-1", err, sizeof err), GP_OK);
    CHECK_INT(gp_storage_select(s, &m, 1, now - 100000, now, &sel), GP_ENET);
    CHECK_INT(atomic_load(&f.queries), q + 1); /* job-scoped: the cluster */
    gp_buf_reset(&b);
    CHECK_INT(gp_storage_label_values(s, "rank", &m, 1, now - 100000, now, names_cb, &b), GP_ENET);
    CHECK_INT(atomic_load(&f.queries), q + 2);
    gp_matcher_free(&m);
    gp_buf_free(&b);
    gp_storage_close(s);
    /* without a name, a storage answers NULL, as the embedded kind does */
    s = remote_open_window(gp_http_port(f.http), NULL, NULL);
    CHECK(gp_storage_server_name(s) == NULL);
    gp_storage_close(s);
    gp_http_stop(f.http);
}

/* Basic auth from a password file, on reads and writes alike. */
static void test_remote_basic_auth(void)
{
    struct fake f;
    fake_start(&f);
    char wurl[128], qurl[128], pw[600];
    snprintf(wurl, sizeof wurl, "http://127.0.0.1:%u/api/v1/write", gp_http_port(f.http));
    snprintf(qurl, sizeof qurl, "http://127.0.0.1:%u", gp_http_port(f.http));
    snprintf(pw, sizeof pw, "%s/pw", gp_test_tmpdir());
    FILE *fp = fopen(pw, "w");
    fputs("p\n", fp);
    fclose(fp);
    struct gp_storage_options o = {.kind = GP_STORAGE_REMOTE};
    o.remote.write_url = wurl;
    o.remote.query_url = qurl;
    o.remote.basic_user = "u";
    o.remote.basic_password_file = pw;
    struct gp_storage *s = NULL;
    char err[256] = "";
    CHECK_INT(gp_storage_open(&s, &o, err, sizeof err), GP_OK);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_storage_label_names(s, NULL, 0, INT64_MIN, INT64_MAX, names_cb, &b), GP_OK);
    gp_buf_free(&b);
    CHECK_STR(f.last_auth, "Basic dTpw"); /* base64("u:p") */
    gp_storage_close(s);
    /* a password file that is missing: a config error naming the key */
    o.remote.basic_password_file = "/nonexistent/pw";
    CHECK_INT(gp_storage_open(&s, &o, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "remote_basic_password_file");
    gp_http_stop(f.http);
}

static void test_rollups_of(void)
{
    int64_t t[] = {0, 30000, 60000, 119999, 180000};
    double v[] = {1, 3, 5, NAN, 2};
    struct gp_samples x = {.t = t, .v = v, .n = 5, .cap = 5};
    struct gp_rollups r = {0};
    CHECK_INT(gp_storage_rollups_of(&x, 10000, 70000, &r), GP_OK);
    CHECK_INT((int)r.n, 2);
    CHECK(r.r[0].t == 0 && r.r[0].min == 1 && r.r[0].max == 3 && r.r[0].sum == 4 && r.r[0].count == 2);
    CHECK(r.r[1].t == 60000 && r.r[1].count == 2 && isnan(r.r[1].sum) && r.r[1].max == 5);
    gp_rollups_free(&r);
}

static void test_config_checks(void)
{
    struct gp_server_config *c = malloc(sizeof *c);
    char err[512];
    gp_server_config_defaults(c);
    CHECK_STR(c->storage, "embedded");
    CHECK_INT(gp_server_config_validate(c, err, sizeof err), GP_OK);
    snprintf(c->storage, sizeof c->storage, "cloud");
    CHECK_INT(gp_server_config_validate(c, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "storage must be embedded or remote");
    snprintf(c->storage, sizeof c->storage, "remote");
    CHECK_INT(gp_server_config_validate(c, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "storage: remote needs remote_write_url");
    snprintf(c->remote_write_url, sizeof c->remote_write_url, "http://vm:8428/api/v1/write");
    CHECK_INT(gp_server_config_validate(c, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "needs remote_query_url");
    snprintf(c->remote_query_url, sizeof c->remote_query_url, "vm:8428");
    CHECK_INT(gp_server_config_validate(c, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "remote_query_url must be an http:// or https:// URL");
    snprintf(c->remote_query_url, sizeof c->remote_query_url, "http://vm:8428");
    CHECK_INT(gp_server_config_validate(c, err, sizeof err), GP_OK);
    c->remote_headers.n = 1;
    snprintf(c->remote_headers.v[0], sizeof c->remote_headers.v[0], "X Scope: a");
    CHECK_INT(gp_server_config_validate(c, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "invalid header name");
    snprintf(c->remote_headers.v[0], sizeof c->remote_headers.v[0], "X-Scope-OrgID: a");
    snprintf(c->remote_basic_user, sizeof c->remote_basic_user, "u");
    CHECK_INT(gp_server_config_validate(c, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "go together");
    c->remote_basic_user[0] = '\0';
    snprintf(c->remote_server_name, sizeof c->remote_server_name, "rack 1");
    CHECK_INT(gp_server_config_validate(c, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "remote_server_name 'rack 1' may hold only");
    snprintf(c->remote_server_name, sizeof c->remote_server_name, "rack-1.pool_a:2");
    CHECK_INT(gp_server_config_validate(c, err, sizeof err), GP_OK);
    free(c);
}

const struct gp_test gp_tests_promapi[] = {
    {"matrix_parses", test_matrix_parses},
    {"series_and_strings", test_series_and_strings},
    {"error_answer", test_error_answer},
    {"malformed_refused", test_malformed_refused},
    {0},
};

const struct gp_test gp_tests_storage[] = {
    {"embedded_same_as_store", test_embedded_same_as_store},
    {"remote_reads", test_remote_reads},
    {"remote_select_since", test_remote_select_since},
    {"remote_rollups_all", test_remote_rollups_all},
    {"remote_errors", test_remote_errors},
    {"remote_promql", test_remote_promql},
    {"remote_forwards_writes", test_remote_forwards_writes},
    {"remote_basic_auth", test_remote_basic_auth},
    {"remote_window", test_remote_window},
    {"remote_window_split", test_remote_window_split},
    {"remote_server_name", test_remote_server_name},
    {"rollups_of", test_rollups_of},
    {"config_checks", test_config_checks},
    {0},
};
