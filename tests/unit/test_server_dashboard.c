/*
 * test_server_dashboard.c - the routes the dashboard adds to the server
 * (docs/dashboard.md), through a whole server over real HTTP: the
 * embedded files (types, gzip, ETag and 304, the headers, no token),
 * content negotiation's parsers on malformed headers, GET
 * /api/v1/fleet/gpus (readings, units, nulls, order, filters, alert
 * badges), the SSE stream (framing, ids, live values, alert events,
 * bounded queues that count their drops, ending on stop), POST
 * /api/v1/alerts/ID/ack (auth, bodies, idempotence, a restart, a
 * version-4 state.db migrated) and
 * GET /api/v1/jobs/ID/report.
 */
#include "ingest/remote_write.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "net/http.h"
#include "query/query.h"
#include "server/server.h"
#include "server/server_int.h"
#include "server/web_assets.h"
#include "state/state.h"
#include "rw_batch.h"
#include "server_testlib.h"
#include "test.h"

#include <curl/curl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- HTTP with headers ---- */

struct full {
    long status;
    char hdrs[8192];
    size_t hlen;
    char body[1 << 17];
    size_t len;
};

static size_t on_hdr(char *p, size_t sz, size_t n, void *arg)
{
    struct full *r = arg;
    size_t k = sz * n, room = sizeof r->hdrs - 1 - r->hlen;
    memcpy(r->hdrs + r->hlen, p, k < room ? k : room);
    r->hlen += k < room ? k : room;
    r->hdrs[r->hlen] = '\0';
    return k;
}

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
    struct full *r = arg;
    size_t k = sz * n, room = sizeof r->body - 1 - r->len;
    memcpy(r->body + r->len, p, k < room ? k : room);
    r->len += k < room ? k : room;
    r->body[r->len] = '\0';
    return k;
}

/* GET path with one extra request header (NULL: none); decode: let curl
 * ask for gzip and decode it. The reply is static. */
static struct full *get_full(struct gp_server *s, const char *path, const char *header, int decode)
{
    static struct full r;
    memset(&r, 0, sizeof r);
    char url[512];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", gp_server_port(s), path);
    CURL *c = curl_easy_init();
    struct curl_slist *h = header ? curl_slist_append(NULL, header) : NULL;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_hdr);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    if (decode)
        curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "gzip");
    CHECK_INT(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    return &r;
}

/* The value of response header name (case as sent), "" when absent. */
static const char *hdr(const struct full *r, const char *name)
{
    static char v[512];
    v[0] = '\0';
    char want[128];
    snprintf(want, sizeof want, "\n%s: ", name);
    const char *p = strcasestr(r->hdrs, want);
    if (p) {
        p += strlen(want);
        size_t n = strcspn(p, "\r\n");
        snprintf(v, sizeof v, "%.*s", (int)(n < sizeof v - 1 ? n : sizeof v - 1), p);
    }
    return v;
}

/* A server of srv_eval_config's settings over the config file text. */
static struct gp_server *start_with(const char *yaml)
{
    gp_test_write_file(gp_test_tmpdir(), "gpulse.yaml", yaml);
    return srv_start_eval();
}


/* ---- negotiation ---- */

static void test_negotiation(void)
{
    const struct {
        const char *h;
        int gzip;
    } ae[] = {
        {NULL, 0}, {"", 0}, {"gzip", 1}, {"GZip", 1}, {"gzip;q=0", 0}, {"gzip; q=0.000", 0},
        {"deflate, gzip;q=0.5", 1}, {"*", 1}, {"*;q=0", 0}, {"gzip;q=0, *", 0}, {"identity", 0},
        {"x-gzip", 0}, {"gzip;q=1.5", 0}, {"gzip;q=abc", 0}, {"gzip;q=", 0}, {",,, gzip ,", 1},
        {"gzip;level=1;q=0.001", 1}, {"br;q=1, *;q=0.1", 1}, {"gzip x", 0}, {";;;", 0},
        {"gzip;q=0.5;q=0", 0}, {"gzip\t;\tq=1", 1},
    };
    for (size_t i = 0; i < sizeof ae / sizeof ae[0]; i++)
        if (gp_http_accepts(ae[i].h, "gzip") != ae[i].gzip)
            gp_test_fail(__FILE__, __LINE__, "Accept-Encoding '%s': want %d", ae[i].h ? ae[i].h : "NULL",
                         ae[i].gzip);
    const char *tag = "\"0123456789abcdef\"";
    const struct {
        const char *h;
        int match;
    } inm[] = {
        {NULL, 0}, {"", 0}, {"\"0123456789abcdef\"", 1}, {"W/\"0123456789abcdef\"", 1},
        {"\"x\", \"0123456789abcdef\"", 1}, {"*", 1}, {" * ", 1}, {"\"0123456789abcde\"", 0},
        {"0123456789abcdef", 0}, {"W/", 0}, {",,,", 0}, {"\"0123456789abcdef\" junk", 0},
        {"w/\"0123456789abcdef\"", 0}, {"\"0123456789abcdef\"\t,", 1},
    };
    for (size_t i = 0; i < sizeof inm / sizeof inm[0]; i++)
        if (gp_http_etag_match(inm[i].h, tag) != inm[i].match)
            gp_test_fail(__FILE__, __LINE__, "If-None-Match '%s': want %d", inm[i].h ? inm[i].h : "NULL",
                         inm[i].match);
}

/* ---- the embedded files ---- */

static const struct gp_web_asset *asset(const char *name)
{
    for (size_t i = 0; i < gp_web_nassets; i++)
        if (!strcmp(gp_web_assets[i].name, name))
            return &gp_web_assets[i];
    gp_test_fail(__FILE__, __LINE__, "no embedded file '%s'", name);
}

static void test_web_assets(void)
{
    struct gp_server *s = start_with("");
    /* Every file the page needs is embedded, uPlot included. */
    const char *names[] = {"index.html", "app.js", "app.css", "uPlot.iife.min.js", "uPlot.min.css"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const struct gp_web_asset *a = asset(names[i]);
        char path[128];
        snprintf(path, sizeof path, i ? "/assets/%s" : "/", names[i]);
        /* plain, no token although the server has tokens */
        struct full *r = get_full(s, path, NULL, 0);
        CHECK_INT(r->status, 200);
        CHECK_INT(r->len, a->len);
        CHECK(!memcmp(r->body, a->data, a->len));
        CHECK_STR(hdr(r, "Content-Type"), a->content_type);
        CHECK_STR(hdr(r, "ETag"), a->etag);
        CHECK_STR(hdr(r, "Cache-Control"), "no-cache");
        CHECK_STR(hdr(r, "X-Content-Type-Options"), "nosniff");
        CHECK_CONTAINS(hdr(r, "Content-Security-Policy"), "default-src 'self'");
        CHECK_STR(hdr(r, "Content-Encoding"), "");
        /* gzip: the build's bytes, and they decode to the file */
        r = get_full(s, path, "Accept-Encoding: br, gzip;q=0.8", 0);
        CHECK_STR(hdr(r, "Content-Encoding"), "gzip");
        CHECK_INT(r->len, a->gzlen);
        CHECK(!memcmp(r->body, a->gz, a->gzlen));
        r = get_full(s, path, NULL, 1);
        CHECK_INT(r->len, a->len);
        CHECK(!memcmp(r->body, a->data, a->len));
        /* refused gzip */
        r = get_full(s, path, "Accept-Encoding: gzip;q=0", 0);
        CHECK_STR(hdr(r, "Content-Encoding"), "");
        CHECK_INT(r->len, a->len);
        /* revalidation */
        char inm[128];
        snprintf(inm, sizeof inm, "If-None-Match: \"other\", W/%s", a->etag);
        r = get_full(s, path, inm, 0);
        CHECK_INT(r->status, 304);
        CHECK_INT(r->len, 0);
        CHECK_STR(hdr(r, "ETag"), a->etag);
        r = get_full(s, path, "If-None-Match: \"0000000000000000\"", 0);
        CHECK_INT(r->status, 200);
    }
    CHECK_CONTAINS(asset("uPlot.iife.min.js")->content_type, "text/javascript");
    CHECK_CONTAINS(asset("uPlot.min.css")->content_type, "text/css");
    /* The page runs under the CSP: no inline script. */
    struct full *r = get_full(s, "/", NULL, 0);
    for (const char *p = strstr(r->body, "<script"); p; p = strstr(p + 1, "<script"))
        if (!memmem(p, strcspn(p, ">"), "src=", 4))
            gp_test_fail(__FILE__, __LINE__, "index.html has an inline script: %.60s", p);
    const char *missing[] = {"/assets/nope.js", "/assets/", "/assets/a/app.js", "/assets/index.html/",
                             "/assets/%2e%2e%2fapi"};
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
        r = get_full(s, missing[i], NULL, 0);
        if (r->status != 404)
            gp_test_fail(__FILE__, __LINE__, "%s: %ld", missing[i], r->status);
    }
    CHECK_INT(srv_request(s, "POST", "/", "{}", "w-tok")->status, 405);
    CHECK_INT(srv_request(s, "DELETE", "/assets/app.js", NULL, NULL)->status, 405);
    /* The route list moved to /api, no token either. */
    struct reply *l = srv_request(s, "GET", "/api", NULL, NULL);
    CHECK_INT(l->status, 200);
    CHECK_CONTAINS(l->body, "/api/v1/fleet/gpus");
    CHECK_CONTAINS(l->body, "/api/v1/stream");
    l = srv_request(s, "GET", "/metrics", NULL, "r-tok");
    CHECK_CONTAINS(l->body, "gpulse_server_http_requests_total{handler=\"web\",code=\"304\"} 5\n");
    gp_server_stop(s);
}

/* ---- series for the fleet ---- */

/* Adds name{labels} ("k=v;k=v") = v now. */
static void add(struct rw_batch *b, const char *name, const char *labels, double v)
{
    double t = (double)gp_wall_ms() / 1000;
    rw_batch_add(b, name, labels, &t, &v, 1);
}

#define H100 "modelName=NVIDIA H100 80GB HBM3"
#define G0 "Hostname=n1;gpu=0;UUID=GPU-aaa;job=j1;rank=3;" H100

/* n1: gpu 0 reports everything (DCGM's MiB), 1 only a temperature and a
 * throttle, 2 and 10 a temperature (A100s); n2 gpu 0 gpulse's bytes. */
static void write_fleet(struct gp_server *s, double temp0)
{
    static struct rw_batch b;
    memset(&b, 0, sizeof b);
    add(&b, "DCGM_FI_DEV_GPU_UTIL", G0, 98);
    add(&b, "DCGM_FI_PROF_SM_ACTIVE", G0, 0.91);
    add(&b, "DCGM_FI_PROF_SM_OCCUPANCY", G0, 0.44);
    add(&b, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", G0, 0.61);
    add(&b, "DCGM_FI_DEV_FB_USED", G0, 1000);
    add(&b, "DCGM_FI_DEV_FB_FREE", G0, 3000);
    add(&b, "DCGM_FI_DEV_FB_RESERVED", G0, 96);
    add(&b, "DCGM_FI_DEV_GPU_TEMP", G0, temp0);
    add(&b, "DCGM_FI_DEV_POWER_USAGE", G0, 612.5);
    add(&b, "gpulse_gpu_power_limit_watts", G0, 700);
    add(&b, "DCGM_FI_DEV_SM_CLOCK", G0, 1980);
    add(&b, "gpulse_gpu_clock_event_reasons", G0 ";reason=gpu_idle", 1);
    add(&b, "gpulse_gpu_clock_event_reasons", G0 ";reason=sw_power_cap", 0);
    add(&b, "DCGM_FI_DEV_GPU_TEMP", "Hostname=n1;gpu=1;" H100, 50);
    add(&b, "gpulse_gpu_clock_event_reasons", "Hostname=n1;gpu=1;reason=hw_slowdown;" H100, 1);
    add(&b, "DCGM_FI_DEV_GPU_TEMP", "Hostname=n1;gpu=10;modelName=NVIDIA A100-SXM4-80GB", 40);
    add(&b, "DCGM_FI_DEV_GPU_TEMP", "Hostname=n1;gpu=2;modelName=NVIDIA A100-SXM4-80GB", 41);
    add(&b, "gpulse_gpu_memory_used_bytes", "Hostname=n2;gpu=0;job=j2", 5e9);
    add(&b, "gpulse_gpu_memory_total_bytes", "Hostname=n2;gpu=0;job=j2", 8e9);
    add(&b, "DCGM_FI_DEV_FB_USED", "Hostname=n2;gpu=0;job=j2", 1);
    add(&b, "DCGM_FI_DEV_FB_FREE", "Hostname=n2;gpu=0;job=j2", 1);
    add(&b, "DCGM_FI_DEV_GPU_TEMP", "job=nogpu;Hostname=n3", 30); /* no gpu label: not a GPU */
    srv_write(s, b.s, b.n);
}

static json_t *gpus_of(struct gp_server *s, const char *query)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/fleet/gpus%s", query);
    struct reply *r = srv_request(s, "GET", path, NULL, "r-tok");
    if (r->status != 200)
        gp_test_fail(__FILE__, __LINE__, "%s: %ld %s", path, r->status, r->body);
    json_t *j = json_loads(r->body, 0, NULL);
    CHECK(j);
    json_t *g = json_incref(json_object_get(json_object_get(j, "data"), "gpus"));
    CHECK(json_is_number(json_object_get(json_object_get(j, "data"), "time")));
    json_decref(j);
    CHECK(json_is_array(g));
    return g;
}

static double num(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_number(v))
        gp_test_fail(__FILE__, __LINE__, "'%s' is not a number", k);
    return json_number_value(v);
}

static const char *str(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : "(not a string)";
}

static void test_fleet_gpus(void)
{
    struct gp_server *s = start_with(srv_hot_rule);
    write_fleet(s, 60);
    json_t *g = gpus_of(s, "");
    CHECK_INT(json_array_size(g), 5);
    const char *order[][2] = {{"n1", "0"}, {"n1", "1"}, {"n1", "2"}, {"n1", "10"}, {"n2", "0"}};
    for (size_t i = 0; i < 5; i++) {
        CHECK_STR(str(json_array_get(g, i), "node"), order[i][0]);
        CHECK_STR(str(json_array_get(g, i), "gpu"), order[i][1]);
    }
    json_t *a = json_array_get(g, 0);
    CHECK_STR(str(a, "uuid"), "GPU-aaa");
    CHECK_STR(str(a, "model"), "NVIDIA H100 80GB HBM3");
    CHECK_STR(str(a, "job"), "j1");
    CHECK_STR(str(a, "rank"), "3");
    CHECK_DBL(num(a, "util"), 0.98, 1e-9);
    CHECK_DBL(num(a, "sm_active"), 0.91, 1e-9);
    CHECK_DBL(num(a, "sm_occupancy"), 0.44, 1e-9);
    CHECK_DBL(num(a, "tensor_active"), 0.61, 1e-9);
    CHECK_DBL(num(a, "mem_used_bytes"), 1000.0 * 1048576, 0.5);
    CHECK_DBL(num(a, "mem_total_bytes"), 4096.0 * 1048576, 0.5);
    CHECK_DBL(num(a, "temp_c"), 60, 0);
    CHECK_DBL(num(a, "power_w"), 612.5, 1e-9);
    CHECK_DBL(num(a, "power_limit_w"), 700, 0);
    CHECK_DBL(num(a, "sm_clock_mhz"), 1980, 0);
    CHECK(json_is_false(json_object_get(a, "throttled"))); /* idle is not throttling */
    CHECK_DBL(num(a, "last_seen") * 1000, (double)gp_wall_ms(), 10000);
    CHECK(json_is_null(json_object_get(a, "mig")));
    json_t *b = json_array_get(g, 1);
    CHECK(json_is_true(json_object_get(b, "throttled")));
    const char *nulls[] = {"util", "sm_active", "sm_occupancy", "tensor_active", "mem_used_bytes",
                           "mem_total_bytes", "power_w", "power_limit_w", "sm_clock_mhz", "uuid",
                           "job", "rank"};
    for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++)
        if (!json_is_null(json_object_get(b, nulls[i])))
            gp_test_fail(__FILE__, __LINE__, "n1/1 '%s' is not null", nulls[i]);
    CHECK(json_is_null(json_object_get(json_array_get(g, 2), "throttled"))); /* no reasons series */
    json_t *e = json_array_get(g, 4);
    CHECK_DBL(num(e, "mem_used_bytes"), 5e9, 0.5); /* bytes win over MiB */
    CHECK_DBL(num(e, "mem_total_bytes"), 8e9, 0.5);
    CHECK(json_is_null(json_object_get(e, "model")));
    json_t *al = json_object_get(a, "alerts");
    CHECK_DBL(num(al, "firing"), 0, 0);
    CHECK(json_is_null(json_object_get(al, "severity")));
    json_decref(g);
    /* filters, exact */
    const struct {
        const char *q;
        size_t n;
    } f[] = {{"?node=n2", 1}, {"?node=n", 0}, {"?job=j1", 1}, {"?model=NVIDIA%20A100-SXM4-80GB", 2},
             {"?model=NVIDIA%20H100%2080GB%20HBM3&node=n1", 2}, {"?job=nope", 0}, {"?node=", 5}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        g = gpus_of(s, f[i].q);
        if (json_array_size(g) != f[i].n)
            gp_test_fail(__FILE__, __LINE__, "%s: %zu GPUs, want %zu", f[i].q, json_array_size(g), f[i].n);
        json_decref(g);
    }
    /* The badge: n1/0 runs hot, its alert fires. */
    for (int i = 0; i < 100; i++) {
        write_fleet(s, 90);
        g = gpus_of(s, "?node=n1");
        al = json_object_get(json_array_get(g, 0), "alerts");
        int fired = num(al, "firing") == 1;
        json_decref(g);
        if (fired)
            break;
        usleep(100000);
    }
    g = gpus_of(s, "?node=n1");
    al = json_object_get(json_array_get(g, 0), "alerts");
    CHECK_DBL(num(al, "firing"), 1, 0);
    CHECK_DBL(num(al, "pending"), 0, 0);
    CHECK_STR(str(al, "severity"), "critical");
    CHECK_DBL(num(json_object_get(json_array_get(g, 1), "alerts"), "firing"), 0, 0);
    json_decref(g);
    CHECK_INT(srv_request(s, "GET", "/api/v1/fleet/gpus", NULL, NULL)->status, 401);
    CHECK_INT(srv_request(s, "GET", "/api/v1/fleet/gpus", NULL, "w-tok")->status, 401);
    CHECK_INT(srv_request(s, "POST", "/api/v1/fleet/gpus", "{}", "w-tok")->status, 405);
    gp_server_stop(s);
}

/* ---- the fleet's hosts ---- */

/* Adds name{labels} with samples v[0..n) dt_s apart, the last now. */
static void add_run(struct rw_batch *b, const char *name, const char *labels, const double *v,
                    size_t n, double dt_s)
{
    double t[RW_BATCH_SAMPLES], now = (double)gp_wall_ms() / 1000;
    for (size_t i = 0; i < n; i++)
        t[i] = now - dt_s * (double)(n - 1 - i);
    rw_batch_add(b, name, labels, t, v, n);
}

static json_t *host_of(json_t *hosts, const char *node)
{
    for (size_t i = 0; i < json_array_size(hosts); i++) {
        json_t *h = json_array_get(hosts, i), *n = json_object_get(h, "node");
        if (node ? json_is_string(n) && !strcmp(json_string_value(n), node) : json_is_null(n))
            return h;
    }
    gp_test_fail(__FILE__, __LINE__, "no host %s", node ? node : "null");
    return NULL;
}

/* GET /api/v1/fleet's hosts: each node's CPU, memory, pressure and load
 * from its gpulse_host_* series, named by Hostname, hostname, instance or
 * nothing; counters as rates (resets counted from zero), the newest of
 * two series of one figure, nulls where a figure is missing. */
/* The inventory's label reads so far (gp_inventory_stats). */
static uint64_t label_reads(struct gp_server *s)
{
    struct gp_inventory_stats st;
    gp_inventory_stats(s->inventory, &st);
    return st.label_reads;
}

/* Waits up to ms for the inventory to have read at least want label sets. */
static uint64_t reads_reach(struct gp_server *s, uint64_t want, int ms)
{
    uint64_t n = label_reads(s);
    for (int i = 0; i < ms / 20 && n < want; i++) {
        usleep(20000);
        n = label_reads(s);
    }
    return n;
}

/* The inventory is built in the background: after a restart before any
 * request, and for series that arrive later within a pass of the
 * thread; the requests that follow read no label set. */
static void test_inventory_warm(void)
{
    struct gp_server *s = start_with("");
    write_fleet(s, 60);
    gp_server_stop(s);
    s = start_with("");
    /* write_fleet's 22 series, all named like GPU series */
    uint64_t n = reads_reach(s, 22, 3000);
    if (n != 22)
        gp_test_fail(__FILE__, __LINE__, "after the start the inventory read %llu label sets, want 22",
                     (unsigned long long)n);
    json_t *g = gpus_of(s, "");
    CHECK_INT(json_array_size(g), 5);
    json_decref(g);
    CHECK_INT(srv_request(s, "GET", "/api/v1/gpus", NULL, "r-tok")->status, 200);
    CHECK_INT(label_reads(s), 22);
    /* a new GPU: read by the thread, not by the request */
    static struct rw_batch b;
    memset(&b, 0, sizeof b);
    add(&b, "DCGM_FI_DEV_GPU_TEMP", "Hostname=n9;gpu=0;" H100, 33);
    srv_write(s, b.s, b.n);
    n = reads_reach(s, 23, 8000);
    CHECK_INT(n, 23);
    g = gpus_of(s, "?node=n9");
    CHECK_INT(json_array_size(g), 1);
    json_decref(g);
    CHECK_INT(label_reads(s), 23);
    gp_server_stop(s);
}

static void test_fleet_hosts(void)
{
    struct gp_server *s = start_with("");
    static struct rw_batch b;
    memset(&b, 0, sizeof b);
    const char *cpu = "gpulse_host_cpu_seconds_total", *psi = "gpulse_host_pressure_stall_seconds_total";
    /* h1: 20 CPU-seconds in 10 s, 6 of them busy */
    add_run(&b, cpu, "Hostname=h1;mode=user", (double[]){100, 103, 106}, 3, 5);
    add_run(&b, cpu, "Hostname=h1;mode=system", (double[]){50, 50, 50}, 3, 5);
    add_run(&b, cpu, "Hostname=h1;mode=idle", (double[]){200, 206, 212}, 3, 5);
    add_run(&b, cpu, "Hostname=h1;mode=iowait", (double[]){10, 11, 12}, 3, 5);
    /* an older series of h1's user time (relabelled since): not read */
    double old_t[] = {(double)gp_wall_ms() / 1000 - 60, (double)gp_wall_ms() / 1000 - 30};
    rw_batch_add(&b, cpu, "Hostname=h1;mode=user;rack=a", old_t, (double[]){0, 1e6}, 2);
    add_run(&b, "gpulse_host_cpus", "Hostname=h1", (double[]){2}, 1, 5);
    add_run(&b, "gpulse_host_memory_bytes", "Hostname=h1;kind=total", (double[]){16e9}, 1, 5);
    add_run(&b, "gpulse_host_memory_bytes", "Hostname=h1;kind=available", (double[]){12e9}, 1, 5);
    add_run(&b, "gpulse_host_memory_bytes", "Hostname=h1;kind=free", (double[]){1e9}, 1, 5);
    add_run(&b, psi, "Hostname=h1;resource=cpu;kind=some", (double[]){1, 1.5}, 2, 10);
    add_run(&b, psi, "Hostname=h1;resource=cpu;kind=full", (double[]){0, 10}, 2, 10);
    add_run(&b, psi, "Hostname=h1;resource=memory;kind=some", (double[]){3, 3}, 2, 10);
    add_run(&b, psi, "Hostname=h1;resource=io;kind=some", (double[]){5, 6}, 2, 10);
    add_run(&b, "gpulse_host_load_average", "Hostname=h1;window=1m", (double[]){0.7}, 1, 5);
    add_run(&b, "gpulse_host_load_average", "Hostname=h1;window=5m", (double[]){0.5}, 1, 5);
    /* n2 (hostname): one sample of a counter is no rate */
    add_run(&b, cpu, "hostname=n2;mode=idle", (double[]){7}, 1, 5);
    add_run(&b, cpu, "hostname=n2;mode=user", (double[]){7}, 1, 5);
    add_run(&b, "gpulse_host_cpus", "hostname=n2", (double[]){64}, 1, 5);
    /* r: both counters reset in the middle */
    add_run(&b, cpu, "Hostname=r;mode=user", (double[]){50, 1, 2}, 3, 5);
    add_run(&b, cpu, "Hostname=r;mode=idle", (double[]){100, 2, 4}, 3, 5);
    add_run(&b, "gpulse_host_load_average", "instance=10.0.0.3:9401;window=1m", (double[]){3}, 1, 5);
    add_run(&b, "gpulse_host_cpus", "", (double[]){4}, 1, 5); /* an agent without a node label */
    add_run(&b, "gpulse_host_cpus", "Hostname=gpunode;gpu=0", (double[]){8}, 1, 5); /* not a host series */
    srv_write(s, b.s, b.n);

    struct reply *r = srv_request(s, "GET", "/api/v1/fleet", NULL, "r-tok");
    CHECK_INT(r->status, 200);
    json_t *j = json_loads(r->body, 0, NULL);
    CHECK(j);
    json_t *hosts = json_object_get(json_object_get(j, "data"), "hosts");
    CHECK_INT(json_array_size(hosts), 5);
    const char *order[] = {NULL, "10.0.0.3:9401", "h1", "n2", "r"};
    for (size_t i = 0; i < 5; i++)
        CHECK(host_of(hosts, order[i]) == json_array_get(hosts, i));
    json_t *h = host_of(hosts, "h1");
    CHECK_DBL(num(h, "cpus"), 2, 0);
    CHECK_DBL(num(h, "cpu_busy"), 0.3, 1e-9);
    CHECK_DBL(num(h, "memory_used_bytes"), 4e9, 0.5);
    CHECK_DBL(num(h, "memory_total_bytes"), 16e9, 0.5);
    CHECK_DBL(num(h, "cpu_pressure"), 0.05, 1e-9);
    CHECK_DBL(num(h, "memory_pressure"), 0, 0);
    CHECK_DBL(num(h, "io_pressure"), 0.1, 1e-9);
    CHECK_DBL(num(h, "load1"), 0.7, 1e-9);
    CHECK_DBL(num(h, "last_seen") * 1000, (double)gp_wall_ms(), 10000);
    h = host_of(hosts, "n2");
    CHECK_DBL(num(h, "cpus"), 64, 0);
    const char *nulls[] = {"cpu_busy", "memory_used_bytes", "memory_total_bytes", "cpu_pressure",
                           "memory_pressure", "io_pressure", "load1"};
    for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++)
        if (!json_is_null(json_object_get(h, nulls[i])))
            gp_test_fail(__FILE__, __LINE__, "n2 '%s' is not null", nulls[i]);
    CHECK_DBL(num(host_of(hosts, "r"), "cpu_busy"), 2.0 / 6, 1e-9);
    CHECK_DBL(num(host_of(hosts, "10.0.0.3:9401"), "load1"), 3, 0);
    CHECK_DBL(num(host_of(hosts, NULL), "cpus"), 4, 0);
    CHECK_INT(json_object_size(json_object_get(json_object_get(j, "data"), "overall")) > 0, 1);
    json_decref(j);
    gp_server_stop(s);
}

/* ---- the stream ---- */

struct reader {
    struct gp_server *s;
    char query[256];
    long timeout_ms;
    int pause;               /* stop reading at once (a stalled client) */
    volatile int release;    /* a stalled reader gives up */
    char *text;              /* what was read, NUL-terminated */
    size_t len, cap;
    int rc;
    long status;
    int paused;
};

static size_t reader_data(char *p, size_t sz, size_t n, void *arg)
{
    struct reader *r = arg;
    if (r->pause && !r->release && !r->paused) {
        r->paused = 1;
        return CURL_WRITEFUNC_PAUSE;
    }
    size_t k = sz * n;
    if (r->len + k + 1 > r->cap) {
        size_t nc = (r->len + k + 1) * 2;
        char *t = realloc(r->text, nc);
        if (!t)
            return 0;
        r->text = t;
        r->cap = nc;
    }
    memcpy(r->text + r->len, p, k);
    r->len += k;
    r->text[r->len] = '\0';
    return k;
}

/* A small receive buffer, fixed (no autotuning): a stalled reader's
 * socket fills fast and stays full. */
static int small_rcvbuf(void *arg, curl_socket_t fd, curlsocktype purpose)
{
    (void)arg, (void)purpose;
    int n = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &n, sizeof n);
    return CURL_SOCKOPT_OK;
}

/* A stalled reader gives up once released. */
static int reader_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a, (void)b, (void)c, (void)d;
    const struct reader *r = arg;
    return r->release;
}

/* Reads GET /api/v1/stream?query for timeout_ms (a thread). */
static void *reader_main(void *arg)
{
    struct reader *r = arg;
    char url[512];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/api/v1/stream%s", gp_server_port(r->s), r->query);
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Authorization: Bearer r-tok");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, reader_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, r->timeout_ms);
    curl_easy_setopt(c, CURLOPT_BUFFERSIZE, 1024L);
    if (r->pause) {
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, reader_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, r);
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_SOCKOPTFUNCTION, small_rcvbuf);
    }
    r->rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    return NULL;
}

/* One parsed event. */
struct event {
    long id;
    char name[16];
    json_t *data;
};

/* Parses the stream's text: retry first, then events (comments skipped).
 * Returns how many events went into ev (at most max); fails the test on
 * a malformed frame. */
static size_t parse_events(const char *text, struct event *ev, size_t max)
{
    CHECK(!strncmp(text, "retry: 2000\n\n", 13));
    size_t n = 0;
    const char *p = text + 13;
    while (*p) {
        const char *end = strstr(p, "\n\n");
        if (!end)
            break; /* cut off by the reader's timeout */
        if (*p == ':') {
            CHECK(!strncmp(p, ": keepalive", 11));
            p = end + 2;
            continue;
        }
        CHECK(n < max);
        struct event *e = &ev[n++];
        char data[1 << 17];
        size_t dl = 0;
        memset(e, 0, sizeof *e);
        for (const char *l = p; l < end;) {
            const char *nl = memchr(l, '\n', (size_t)(end - l));
            size_t ll = nl ? (size_t)(nl - l) : (size_t)(end - l);
            if (!strncmp(l, "id: ", 4))
                e->id = strtol(l + 4, NULL, 10);
            else if (!strncmp(l, "event: ", 7))
                snprintf(e->name, sizeof e->name, "%.*s", (int)(ll - 7), l + 7);
            else if (!strncmp(l, "data: ", 6) && dl + ll < sizeof data) {
                memcpy(data + dl, l + 6, ll - 6);
                dl += ll - 6;
            } else
                gp_test_fail(__FILE__, __LINE__, "bad line: %.*s", (int)ll, l);
            l += ll + 1;
        }
        e->data = json_loadb(data, dl, 0, NULL);
        if (!e->data)
            gp_test_fail(__FILE__, __LINE__, "event %ld (%s): data is not JSON", e->id, e->name);
        p = end + 2;
    }
    return n;
}

static void free_events(struct event *ev, size_t n)
{
    for (size_t i = 0; i < n; i++)
        json_decref(ev[i].data);
}

static uint64_t metric(struct gp_server *s, const char *name)
{
    const char *body = srv_request(s, "GET", "/metrics", NULL, "r-tok")->body;
    char want[128];
    snprintf(want, sizeof want, "\n%s ", name);
    const char *p = strstr(body, want);
    if (!p)
        gp_test_fail(__FILE__, __LINE__, "no metric %s", name);
    return strtoull(p + strlen(want), NULL, 10);
}

static struct event evs[256];

static void test_stream(void)
{
    struct gp_server *s = start_with(srv_hot_rule);
    write_fleet(s, 60);
    /* refusals */
    CHECK_INT(srv_request(s, "GET", "/api/v1/stream", NULL, NULL)->status, 401);
    char longnode[400];
    snprintf(longnode, sizeof longnode, "?node=%0300d", 0);
    const struct {
        const char *q, *msg;
    } bad[] = {{"?interval=100ms", "'interval'"}, {"?interval=2m", "'interval'"},
               {"?interval=soon", "'interval'"}, {"?interval=-1s", "'interval'"},
               {longnode, "'node': longer than 255 bytes"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "/api/v1/stream%s", bad[i].q);
        struct reply *r = srv_request(s, "GET", path, NULL, "r-tok");
        if (r->status != 400 || !strstr(r->body, bad[i].msg))
            gp_test_fail(__FILE__, __LINE__, "%s: %ld %s", bad[i].q, r->status, r->body);
    }
    CHECK_INT(metric(s, "gpulse_server_streams_opened_total"), 0);
    /* 3 s of events every 250 ms for n1, while its GPU 0 heats up and its alert fires. */
    static struct reader rd;
    memset(&rd, 0, sizeof rd);
    rd.s = s;
    snprintf(rd.query, sizeof rd.query, "?interval=250ms&node=n1");
    rd.timeout_ms = 3000;
    pthread_t t;
    CHECK_INT(pthread_create(&t, NULL, reader_main, &rd), 0);
    for (int i = 0; i < 20; i++) {
        write_fleet(s, i < 8 ? 60 + i : 90);
        if (i == 4)
            CHECK_INT(metric(s, "gpulse_server_streams_open"), 1);
        usleep(100000);
    }
    pthread_join(t, NULL);
    CHECK_INT(rd.rc, CURLE_OPERATION_TIMEDOUT);
    CHECK_INT(rd.status, 200);
    CHECK(rd.text);
    size_t n = parse_events(rd.text, evs, 256);
    free(rd.text);
    size_t nfleet = 0, ngpus = 0, nalert = 0;
    double temps[64];
    size_t nt = 0;
    for (size_t i = 0; i < n; i++) {
        if (evs[i].id != (long)i + 1)
            gp_test_fail(__FILE__, __LINE__, "event %zu has id %ld", i, evs[i].id);
        if (!strcmp(evs[i].name, "fleet")) {
            nfleet++;
            CHECK(json_is_object(json_object_get(evs[i].data, "overall")));
        } else if (!strcmp(evs[i].name, "gpus")) {
            json_t *g = json_object_get(evs[i].data, "gpus");
            CHECK_INT(json_array_size(g), 4); /* n1 only */
            if (nt < 64)
                temps[nt++] = num(json_array_get(g, 0), "temp_c");
            ngpus++;
        } else if (!strcmp(evs[i].name, "alert")) {
            CHECK_STR(str(evs[i].data, "kind"), "gpu_hot");
            CHECK_INT(strlen(str(evs[i].data, "id")), 16);
            CHECK(json_is_null(json_object_get(evs[i].data, "acknowledged")));
            nalert++;
        } else {
            gp_test_fail(__FILE__, __LINE__, "unknown event '%s'", evs[i].name);
        }
    }
    free_events(evs, n);
    /* about 12 ticks in 3 s; a slow ASan machine may lose a few */
    if (nfleet < 6 || ngpus < 6 || nfleet > 14 || ngpus > 14)
        gp_test_fail(__FILE__, __LINE__, "%zu fleet and %zu gpus events in 3 s at 250 ms", nfleet, ngpus);
    CHECK(nalert >= 2); /* pending, then firing */
    int changed = 0;
    for (size_t i = 1; i < nt; i++)
        changed |= temps[i] != temps[0];
    CHECK(changed);
    /* The stream of the gone client is closed and counted. */
    for (int i = 0; i < 50 && metric(s, "gpulse_server_streams_open"); i++)
        usleep(100000);
    CHECK_INT(metric(s, "gpulse_server_streams_open"), 0);
    CHECK(metric(s, "gpulse_server_stream_events_total") >= n);
    /* Stopping the server ends an open stream at once. */
    memset(&rd, 0, sizeof rd);
    rd.s = s;
    rd.timeout_ms = 20000;
    CHECK_INT(pthread_create(&t, NULL, reader_main, &rd), 0);
    for (int i = 0; i < 50 && !metric(s, "gpulse_server_streams_open"); i++)
        usleep(100000);
    CHECK_INT(metric(s, "gpulse_server_streams_open"), 1);
    int64_t t0 = gp_mono_ms();
    gp_server_stop(s);
    pthread_join(t, NULL);
    int64_t took = gp_mono_ms() - t0;
    if (took > 3000)
        gp_test_fail(__FILE__, __LINE__, "stopping with an open stream took %lld ms", (long long)took);
    CHECK_INT(rd.rc, CURLE_OK); /* the chunked answer ended cleanly */
    CHECK_CONTAINS(rd.text, "event: gpus");
    free(rd.text);
}

/* The id of the firing gpu_hot alert of n1/0 (written hot until it fires). */
static void firing_id(struct gp_server *s, char id[17])
{
    for (int i = 0; i < 100; i++) {
        srv_put_temp(s, 90, NULL);
        struct reply *r = srv_request(s, "GET", "/api/v1/alerts?state=firing", NULL, "r-tok");
        const char *p = strstr(r->body, "{\"id\":\"");
        if (r->status == 200 && p) {
            snprintf(id, 17, "%s", p + 7);
            return;
        }
        usleep(100000);
    }
    gp_test_fail(__FILE__, __LINE__, "the alert never fired");
}

/* A stalled client loses alert events past its queue, and they count. */
static void test_stream_drops(void)
{
    struct gp_server *s = start_with(srv_hot_rule);
    static struct rw_batch b;
    memset(&b, 0, sizeof b);
    char labels[64];
    for (int i = 0; i < 300; i++) { /* large gpus events fill the socket fast */
        snprintf(labels, sizeof labels, "Hostname=big;gpu=%d;" H100, i);
        add(&b, "DCGM_FI_DEV_GPU_TEMP", labels, 40);
    }
    srv_write(s, b.s, b.n);
    char id[17];
    firing_id(s, id);
    static struct reader rd;
    memset(&rd, 0, sizeof rd);
    rd.s = s;
    snprintf(rd.query, sizeof rd.query, "?interval=250ms");
    rd.timeout_ms = 60000;
    rd.pause = 1;
    pthread_t t;
    CHECK_INT(pthread_create(&t, NULL, reader_main, &rd), 0);
    /* Wait until the server stops producing: the socket is full. */
    uint64_t last = 0;
    int still = 0;
    for (int i = 0; i < 150 && still < 3; i++) {
        usleep(200000);
        uint64_t ev = metric(s, "gpulse_server_stream_events_total");
        still = ev == last && ev > 0 ? still + 1 : 0;
        last = ev;
    }
    if (still < 3)
        gp_test_fail(__FILE__, __LINE__, "the stalled stream never filled its socket");
    CHECK_INT(metric(s, "gpulse_server_stream_events_dropped_total"), 0);
    char path[64];
    snprintf(path, sizeof path, "/api/v1/alerts/%s/ack", id);
    /* Each ack is an alert event; the queue holds 64. The stalled socket
     * may take a few bytes now and then (the producer then drains the
     * queue and fills the socket again), so some of the 300 must drop,
     * not all: the queue took some (less a transition or two of the
     * alert queued before). */
    for (int i = 0; i < 300; i++)
        CHECK_INT(srv_request(s, "POST", path, NULL, "w-tok")->status, 200);
    uint64_t dropped = metric(s, "gpulse_server_stream_events_dropped_total");
    if (dropped < 1 || dropped > 300 - 64 + 8)
        gp_test_fail(__FILE__, __LINE__, "%llu of 300 alert events dropped", (unsigned long long)dropped);
    rd.release = 1;
    gp_server_stop(s);
    pthread_join(t, NULL);
    free(rd.text);
}

/* ---- acknowledging ---- */

static void test_ack(void)
{
    struct gp_server *s = start_with(srv_hot_rule);
    char id[17], path[128], one[128];
    firing_id(s, id);
    snprintf(path, sizeof path, "/api/v1/alerts/%s/ack", id);
    snprintf(one, sizeof one, "/api/v1/alerts/%s", id);
    CHECK_CONTAINS(srv_request(s, "GET", one, NULL, "r-tok")->body, "\"acknowledged\":null");
    /* auth and method */
    CHECK_INT(srv_request(s, "POST", path, "{}", NULL)->status, 401);
    CHECK_INT(srv_request(s, "POST", path, "{}", "r-tok")->status, 401);
    CHECK_INT(srv_request(s, "GET", path, NULL, "r-tok")->status, 405);
    /* unknown and malformed ids */
    CHECK_INT(srv_request(s, "POST", "/api/v1/alerts/0123456789abcdef/ack", NULL, "w-tok")->status, 404);
    CHECK_INT(srv_request(s, "POST", "/api/v1/alerts/zz/ack", NULL, "w-tok")->status, 404);
    CHECK_INT(srv_request(s, "POST", "/api/v1/alerts/0123456789ABCDEF/ack", NULL, "w-tok")->status, 404);
    CHECK_INT(srv_request(s, "POST", "/api/v1/alerts//ack", NULL, "w-tok")->status, 405); /* id "/ack" */
    /* malformed bodies */
    const struct {
        const char *body, *msg;
    } bad[] = {
        {"nope", "not JSON"},
        {"[]", "must be a JSON object"},
        {"\"alice\"", "not JSON"},
        {"{\"by\":3}", "'by' must be a string"},
        {"{\"comment\":[]}", "'comment' must be a string"},
        {"{\"by\":\"a\",\"why\":\"x\"}", "unknown field 'why'"},
        {"{\"by\":\"a\",\"by\":\"b\"}", "not JSON"},
        {"{\"by\":\"a\"", "not JSON"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct reply *r = srv_request(s, "POST", path, bad[i].body, "w-tok");
        if (r->status != 400 || !strstr(r->body, "bad_data") || !strstr(r->body, bad[i].msg))
            gp_test_fail(__FILE__, __LINE__, "%s: %ld %s", bad[i].body, r->status, r->body);
    }
    char longby[400];
    snprintf(longby, sizeof longby, "{\"by\":\"%0300d\"}", 0);
    CHECK_INT(srv_request(s, "POST", path, longby, "w-tok")->status, 400);
    /* acknowledged, answered as GET /alerts/ID */
    int64_t before = gp_wall_ms();
    struct reply *r = srv_request(s, "POST", path, "{\"by\":\"alice\",\"comment\":\"looking into it\"}", "w-tok");
    CHECK_INT(r->status, 200);
    json_t *j = json_loads(r->body, 0, NULL);
    CHECK(j);
    json_t *ack = json_object_get(json_object_get(j, "data"), "acknowledged");
    CHECK_STR(str(ack, "by"), "alice");
    CHECK_STR(str(ack, "comment"), "looking into it");
    CHECK_DBL(num(ack, "at") * 1000, (double)before, 5000);
    CHECK_STR(str(json_object_get(j, "data"), "state"), "firing"); /* nothing else changes */
    json_decref(j);
    CHECK_CONTAINS(srv_request(s, "GET", "/api/v1/alerts", NULL, "r-tok")->body,
                   "\"acknowledged\":{\"by\":\"alice\"");
    /* idempotent: a second ack replaces who and why, and is a transition too */
    CHECK_INT(srv_request(s, "POST", path, "{\"by\":\"bob\"}", "w-tok")->status, 200);
    r = srv_request(s, "POST", path, "  \n", "w-tok"); /* no body: anonymous */
    CHECK_INT(r->status, 200);
    CHECK_INT(srv_request(s, "POST", path, "{\"by\":\"carol\",\"comment\":\"on it\"}", "w-tok")->status, 200);
    r = srv_request(s, "GET", one, NULL, "r-tok");
    CHECK_CONTAINS(r->body, "\"acknowledged\":{\"by\":\"carol\"");
    CHECK_CONTAINS(r->body, "\"comment\":\"on it\"");
    size_t acks = 0;
    for (const char *p = strstr(r->body, "{\"from\":\"firing\",\"to\":\"acknowledged\""); p;
         p = strstr(p + 1, "{\"from\":\"firing\",\"to\":\"acknowledged\""))
        acks++;
    CHECK_INT(acks, 4);
    gp_server_stop(s);
    /* ... and it survives a restart */
    s = srv_start_eval();
    r = srv_request(s, "GET", one, NULL, "r-tok");
    CHECK_INT(r->status, 200);
    CHECK_CONTAINS(r->body, "\"acknowledged\":{\"by\":\"carol\"");
    CHECK_CONTAINS(r->body, "\"to\":\"acknowledged\"");
    gp_server_stop(s);
}

/* A state.db of version 4 (before acks) is migrated: its alerts read
 * "acknowledged": null and can be acknowledged. */
static void test_ack_migration(void)
{
    struct gp_server *s = start_with(srv_hot_rule);
    char id[17], path[128];
    firing_id(s, id);
    gp_server_stop(s);
    char db_path[1024];
    snprintf(db_path, sizeof db_path, "%s/data/state.db", gp_test_tmpdir());
    sqlite3 *db;
    CHECK_INT(sqlite3_open(db_path, &db), SQLITE_OK);
    CHECK_INT(sqlite3_exec(db,
                           "ALTER TABLE alerts DROP COLUMN ack_by; ALTER TABLE alerts DROP COLUMN ack_at;"
                           "ALTER TABLE alerts DROP COLUMN ack_comment;"
                           /* and what later migrations added (7: audit's action, reason) */
                           "ALTER TABLE audit DROP COLUMN action; ALTER TABLE audit DROP COLUMN reason;"
                           "PRAGMA user_version=4;",
                           NULL, NULL, NULL),
              SQLITE_OK);
    sqlite3_close(db);
    s = srv_start_eval();
    snprintf(path, sizeof path, "/api/v1/alerts/%s", id);
    struct reply *r = srv_request(s, "GET", path, NULL, "r-tok");
    CHECK_INT(r->status, 200);
    CHECK_CONTAINS(r->body, "\"acknowledged\":null");
    snprintf(path, sizeof path, "/api/v1/alerts/%s/ack", id);
    r = srv_request(s, "POST", path, "{\"by\":\"dora\"}", "w-tok");
    CHECK_INT(r->status, 200);
    CHECK_CONTAINS(r->body, "\"acknowledged\":{\"by\":\"dora\"");
    gp_server_stop(s);
    CHECK_INT(sqlite3_open(db_path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    CHECK_INT(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
    CHECK_INT(sqlite3_step(st), SQLITE_ROW);
    CHECK_INT(sqlite3_column_int(st, 0), GP_STATE_VERSION);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void test_ack_body_parser(void)
{
    char by[8], comment[16], err[128];
    CHECK(gp_srv_parse_ack((const uint8_t *)"", 0, by, sizeof by, comment, sizeof comment, err, sizeof err));
    CHECK_STR(by, "");
    CHECK(gp_srv_parse_ack((const uint8_t *)"{}", 2, by, sizeof by, comment, sizeof comment, err, sizeof err));
    const char *ok = "{\"by\":\"ann\",\"comment\":null}";
    CHECK(gp_srv_parse_ack((const uint8_t *)ok, strlen(ok), by, sizeof by, comment, sizeof comment, err,
                           sizeof err));
    CHECK_STR(by, "ann");
    CHECK_STR(comment, "");
    const char *big = "{\"by\":\"12345678\"}"; /* one byte over by's room */
    CHECK(!gp_srv_parse_ack((const uint8_t *)big, strlen(big), by, sizeof by, comment, sizeof comment,
                            err, sizeof err));
    CHECK_CONTAINS(err, "longer than 7 bytes");
    const char nul[] = "{\"by\":\"a\"}\0junk";
    CHECK(!gp_srv_parse_ack((const uint8_t *)nul, sizeof nul - 1, by, sizeof by, comment,
                            sizeof comment, err, sizeof err));
}

/* ---- the job report ---- */

static void test_job_report(void)
{
    gp_test_write_file(gp_test_tmpdir(), "gpulse.yaml", "");
    struct gp_server_config c;
    srv_eval_config(&c);
    c.jobs_scan_interval_ms = 100;
    struct gp_server *s;
    char err[512];
    CHECK_INT(gp_server_start(&s, &c, err, sizeof err), GP_OK);
    struct reply *r = NULL;
    for (int i = 0; i < 100; i++) {
        static struct rw_batch b;
        memset(&b, 0, sizeof b);
        add(&b, "gpulse_job_info", "job=rep-1;rank=0;Hostname=n1;scheme=slurm", 1);
        add(&b, "DCGM_FI_PROF_SM_ACTIVE", "job=rep-1;rank=0;Hostname=n1;gpu=0;" H100, 0.2);
        srv_write(s, b.s, b.n);
        r = srv_request(s, "GET", "/api/v1/jobs/rep-1/report?format=text", NULL, "r-tok");
        if (r->status == 200)
            break;
        usleep(100000);
    }
    CHECK_INT(r->status, 200);
    CHECK_CONTAINS(r->body, "rep-1");
    struct full *f = get_full(s, "/api/v1/jobs/rep-1/report", "Authorization: Bearer r-tok", 0);
    CHECK_INT(f->status, 200);
    CHECK_CONTAINS(hdr(f, "Content-Type"), "text/html");
    CHECK_CONTAINS(f->body, "<html");
    CHECK_CONTAINS(f->body, "rep-1");
    r = srv_request(s, "GET", "/api/v1/jobs/rep-1/report?format=json", NULL, "r-tok");
    CHECK_INT(r->status, 200);
    json_t *j = json_loads(r->body, 0, NULL);
    CHECK(j);
    CHECK_STR(str(j, "id"), "rep-1");
    CHECK(json_is_array(json_object_get(j, "advice")));
    json_decref(j);
    r = srv_request(s, "GET", "/api/v1/jobs/rep-1/report?format=pdf", NULL, "r-tok");
    CHECK_INT(r->status, 400);
    CHECK_CONTAINS(r->body, "'format'");
    CHECK_INT(srv_request(s, "GET", "/api/v1/jobs/nope/report", NULL, "r-tok")->status, 404);
    CHECK_INT(srv_request(s, "GET", "/api/v1/jobs/rep-1/report", NULL, NULL)->status, 401);
    /* the job document itself is still its own route */
    CHECK_CONTAINS(srv_request(s, "GET", "/api/v1/jobs/rep-1", NULL, "r-tok")->body, "\"id\":\"rep-1\"");
    gp_server_stop(s);
}

/* The dashboard's route table (docs/dashboard.md) agrees with api.md's,
 * the server's routing and its /api list; its metrics are documented. */
static void test_docs_agree(void)
{
    char dash[1 << 16];
    snprintf(dash, sizeof dash, "%s",
             strstr(gp_test_repo_text("docs/dashboard.md"), "## Routes the dashboard adds"));
    const char *api = gp_test_repo_text("docs/api.md");
    struct gp_server *s = start_with("");
    static struct reply list;
    list = *srv_request(s, "GET", "/api", NULL, NULL);
    const char *index = list.body;
    int rows = 0;
    for (const char *p = strstr(dash, "\n| GET |"), *q = strstr(dash, "\n| POST |");
         p || q;) {
        const char *row = !q || (p && p < q) ? p : q;
        char method[8], path[128];
        CHECK(sscanf(row, "\n| %7s | `%127[^`]`", method, path) == 2);
        char line[200];
        snprintf(line, sizeof line, "| %s | `%s` |", method, path);
        if (!strstr(gp_test_repo_text("docs/api.md"), line))
            gp_test_fail(__FILE__, __LINE__, "docs/api.md lacks %s", line);
        char real[160] = "";
        for (const char *c = path; *c;) { /* placeholders to real values */
            if (!strncmp(c, "ID", 2))
                strcat(real, "0123456789abcdef"), c += 2;
            else if (!strncmp(c, "NAME", 4))
                strcat(real, "app.js"), c += 4;
            else
                strncat(real, c++, 1);
        }
        if (strcmp(path, "/api") && gp_srv_route_of(real) == GP_SRV_R_OTHER)
            gp_test_fail(__FILE__, __LINE__, "%s is not routed", real);
        if (!strncmp(path, "/api/v1/", 8) && !strstr(index, path))
            gp_test_fail(__FILE__, __LINE__, "GET /api does not list %s", path);
        rows++;
        if (row == p)
            p = strstr(p + 1, "\n| GET |");
        else
            q = strstr(q + 1, "\n| POST |");
    }
    CHECK_INT(rows, 7);
    const char *m = srv_request(s, "GET", "/metrics", NULL, "r-tok")->body;
    for (const char *p = strstr(m, "# TYPE gpulse_server_stream"); p; p = strstr(p + 1, "# TYPE gpulse_server_stream")) {
        char fam[96];
        CHECK(sscanf(p, "# TYPE %95s", fam) == 1);
        if (!strstr(api, fam))
            gp_test_fail(__FILE__, __LINE__, "docs/api.md does not name %s", fam);
    }
    gp_server_stop(s);
}

const struct gp_test gp_tests_server_dashboard[] = {
    {"docs_agree", test_docs_agree},
    {"negotiation", test_negotiation},
    {"web_assets", test_web_assets},
    {"fleet_gpus", test_fleet_gpus},
    {"fleet_hosts", test_fleet_hosts},
    {"inventory_warm", test_inventory_warm},
    {"stream", test_stream},
    {"stream_drops", test_stream_drops},
    {"ack", test_ack},
    {"ack_migration", test_ack_migration},
    {"ack_body_parser", test_ack_body_parser},
    {"job_report", test_job_report},
    {0},
};
