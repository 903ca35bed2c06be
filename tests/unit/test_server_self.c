/*
 * test_server_self.c - the self-scrape (selfscrape.c) of a whole
 * gp_server: with a tiny self_scrape_interval its store holds its own
 * gpulse_server_* families and up, labelled job="gpulse-server" and
 * instance="127.0.0.1:PORT", answering PromQL (counters move between
 * scrapes, so rate() sees them); the `gpulse up` hook's families stay
 * out; what is stored equals /metrics (series, values, HELP and TYPE),
 * with Prometheus's scrape_* series; at 0s nothing is stored; the key's
 * range.
 */
#include "server_testlib.h"

#include "ingest/textparse.h"
#include "lib/metrics.h"

#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>

static struct gp_server *start_self(int64_t interval_ms)
{
    struct gp_server_config c;
    gp_server_config_defaults(&c);
    snprintf(c.listen, sizeof c.listen, "127.0.0.1:0");
    snprintf(c.data_dir, sizeof c.data_dir, "%s/data", gp_test_tmpdir());
    snprintf(c.log_level, sizeof c.log_level, "error");
    c.self_scrape_interval_ms = interval_ms;
    struct gp_server *s;
    char err[512];
    if (gp_server_start(&s, &c, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "start: %s", err);
    return s;
}

/* GET /api/v1/query?query=q (q escaped here). */
static struct reply *query(struct gp_server *s, const char *q)
{
    CURL *c = curl_easy_init();
    char *e = curl_easy_escape(c, q, 0);
    char path[900];
    snprintf(path, sizeof path, "/api/v1/query?query=%.*s", 800, e);
    curl_free(e);
    curl_easy_cleanup(c);
    struct reply *r = srv_request(s, "GET", path, NULL, NULL);
    CHECK_INT(r->status, 200);
    return r;
}

/* Waits up to 10 s for q to answer a series; 1 when it did. */
static int wait_for(struct gp_server *s, const char *q)
{
    for (int i = 0; i < 200; i++) {
        if (strstr(query(s, q)->body, "\"result\":[{"))
            return 1;
        usleep(50 * 1000);
    }
    return 0;
}

static int agent_hook(void *ctx, struct gp_buf *out)
{
    (void)ctx;
    gp_buf_puts(out, "# TYPE gpulse_agent_probe gauge\ngpulse_agent_probe 7\n");
    return GP_OK;
}

static void test_self_scrape_stores_own_families(void)
{
    struct gp_server *s = start_self(100);
    gp_server_set_metrics_hook(s, agent_hook, NULL);
    char sel[160], q[512];
    snprintf(sel, sizeof sel, "job=\"gpulse-server\",instance=\"127.0.0.1:%u\"", gp_server_port(s));

    snprintf(q, sizeof q, "gpulse_server_series{%s}", sel);
    CHECK(wait_for(s, q));
    snprintf(q, sizeof q, "up{%s}", sel);
    struct reply *r = query(s, q);
    CHECK_CONTAINS(r->body, "\"__name__\":\"up\"");
    CHECK_CONTAINS(r->body, ",\"1\"]}");
    /* The dashboards' three server panels answer, by instance. */
    snprintf(q, sizeof q, "sum by (instance) (gpulse_server_wal_bytes{%s})", sel);
    CHECK_CONTAINS(query(s, q)->body, "\"result\":[{\"metric\":{\"instance\":\"127.0.0.1:");
    /* Counters move from one scrape to the next (the scrapes counter itself). */
    snprintf(q, sizeof q, "rate(gpulse_server_self_scrapes_total{%s}[10s]) > 0", sel);
    CHECK(wait_for(s, q));
    /* Labelled families keep their own labels next to the target's. */
    snprintf(q, sizeof q, "gpulse_server_samples_rejected_total{%s,reason=\"too_old\"}", sel);
    CHECK_CONTAINS(query(s, q)->body, "\"result\":[{");
    /* Neither the hook's families nor anything without the target labels. */
    CHECK_CONTAINS(query(s, "gpulse_agent_probe")->body, "\"result\":[]");
    CHECK_CONTAINS(query(s, "gpulse_server_series{job!=\"gpulse-server\"}")->body, "\"result\":[]");
    /* /metrics still shows the hook's part, and the scrapes without failure. */
    r = srv_request(s, "GET", "/metrics", NULL, NULL);
    CHECK_CONTAINS(r->body, "gpulse_agent_probe 7\n");
    CHECK_CONTAINS(r->body, "gpulse_server_self_scrape_failures_total 0\n");
    CHECK(!strstr(r->body, "gpulse_server_self_scrapes_total 0\n"));
    gp_server_stop(s);
}

/* A series' key: name{a=b,c=d} of its labels sorted by name, the
 * target's job and instance left out. */
struct kv {
    const char *name, *value;
};

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const struct kv *)a)->name, ((const struct kv *)b)->name);
}

static char *series_key(struct kv *l, size_t n)
{
    qsort(l, n, sizeof *l, kv_cmp);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    for (size_t i = 0; i < n; i++)
        if (strcmp(l[i].name, "job") && strcmp(l[i].name, "instance"))
            gp_buf_printf(&b, "%s=%s,", l[i].name, l[i].value);
    gp_buf_putc(&b, '\0');
    return gp_buf_steal(&b, NULL);
}

struct keyed {
    char *key;
    double v;
};

static const struct keyed *find_key(const struct keyed *k, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(k[i].key, key))
            return &k[i];
    return NULL;
}

/* The stored self-series equal a scrape of /metrics at the same moment:
 * the same series (names and label sets), the same values where they do
 * not move, each family's HELP and TYPE in /api/v1/metadata, and
 * scrape_samples_scraped counting them. */
static void test_self_scrape_equals_metrics(void)
{
    struct gp_server *s = start_self(100);
    char sel[160], q[512];
    snprintf(sel, sizeof sel, "job=\"gpulse-server\",instance=\"127.0.0.1:%u\"", gp_server_port(s));
    /* Every request kind made below, once first: the series of their
     * counters exist before the scrapes compared. */
    srv_request(s, "GET", "/metrics", NULL, NULL);
    srv_request(s, "GET", "/api/v1/metadata?metric=up", NULL, NULL);
    snprintf(q, sizeof q, "scrape_samples_scraped{%s}", sel);
    CHECK(wait_for(s, q));
    usleep(350 * 1000); /* scrapes after those requests */

    char *text = strdup(srv_request(s, "GET", "/metrics", NULL, NULL)->body);
    snprintf(q, sizeof q, "{%s}", sel);
    json_t *j = json_loads(query(s, q)->body, 0, NULL);
    CHECK(j != NULL);

    /* /metrics: the server's own series (gpulse_build_info is not scraped). */
    struct gp_text_parser tp;
    memset(&tp, 0, sizeof tp);
    char err[256] = "";
    CHECK_INT(gp_text_parse(&tp, text, strlen(text), 0, err, sizeof err), GP_OK);
    struct keyed *want = calloc(tp.req.nseries, sizeof *want);
    size_t nwant = 0;
    for (size_t i = 0; i < tp.req.nseries; i++) {
        const struct gp_series *se = &tp.req.series[i];
        struct kv l[GP_RW_MAX_LABELS];
        char *own[GP_RW_MAX_LABELS * 2];
        size_t no = 0;
        for (size_t k = 0; k < se->nlabels; k++) {
            own[no] = strndup(se->labels[k].name.ptr, se->labels[k].name.len);
            own[no + 1] = strndup(se->labels[k].value.ptr, se->labels[k].value.len);
            l[k] = (struct kv){own[no], own[no + 1]};
            no += 2;
        }
        char *key = series_key(l, se->nlabels);
        for (size_t k = 0; k < no; k++)
            free(own[k]);
        if (!strncmp(key, "__name__=gpulse_build_info,", 27)) {
            free(key);
            continue;
        }
        want[nwant++] = (struct keyed){key, se->samples[0].value};
    }
    CHECK(nwant > 100);

    /* The store: the same series, and the scrape's own three. */
    json_t *res = json_object_get(json_object_get(j, "data"), "result");
    size_t ngot = json_array_size(res);
    struct keyed *got = calloc(ngot, sizeof *got);
    double scraped = -1;
    for (size_t i = 0; i < ngot; i++) {
        json_t *m = json_object_get(json_array_get(res, i), "metric");
        struct kv l[GP_RW_MAX_LABELS + 2];
        size_t n = 0;
        const char *name;
        json_t *v;
        json_object_foreach(m, name, v) l[n++] = (struct kv){name, json_string_value(v)};
        got[i].key = series_key(l, n);
        got[i].v = strtod(json_string_value(json_array_get(json_object_get(json_array_get(res, i), "value"), 1)),
                          NULL);
        if (!strcmp(got[i].key, "__name__=scrape_samples_scraped,"))
            scraped = got[i].v;
    }
    CHECK_DBL(scraped, (double)nwant, 0);
    for (size_t i = 0; i < nwant; i++)
        if (!find_key(got, ngot, want[i].key))
            gp_test_fail(__FILE__, __LINE__, "/metrics has %s, the store has not", want[i].key);
    for (size_t i = 0; i < ngot; i++)
        if (!find_key(want, nwant, got[i].key) && strcmp(got[i].key, "__name__=up,") &&
            strcmp(got[i].key, "__name__=scrape_samples_scraped,") &&
            strcmp(got[i].key, "__name__=scrape_duration_seconds,"))
            gp_test_fail(__FILE__, __LINE__, "the store has %s, /metrics has not", got[i].key);

    /* Values of the families that do not move while the test runs. */
    static const enum gp_metric still[] = {GP_M_SRV_INFLIGHT_LIMIT, GP_M_SRV_START, GP_M_SRV_STORE_DAMAGE,
                                           GP_M_SRV_REJECTED, GP_M_SRV_HTTP_FRAMING, GP_M_SRV_WRITE_DURATION};
    size_t compared = 0;
    for (size_t i = 0; i < nwant; i++)
        for (size_t m = 0; m < sizeof still / sizeof still[0]; m++) {
            char prefix[128];
            snprintf(prefix, sizeof prefix, "__name__=%s", gp_metric_name(still[m]));
            if (strncmp(want[i].key, prefix, strlen(prefix)))
                continue;
            const struct keyed *g = find_key(got, ngot, want[i].key);
            if (g->v != want[i].v)
                gp_test_fail(__FILE__, __LINE__, "%s: /metrics %.17g, the store %.17g", want[i].key, want[i].v,
                             g->v);
            compared++;
        }
    CHECK(compared >= 20);

    /* Each family's HELP and TYPE as /api/v1/metadata gives them. */
    size_t families = 0;
    for (const char *p = text; (p = strstr(p, "# TYPE ")); p++) {
        char name[128], type[32];
        if (sscanf(p, "# TYPE %127s %31s", name, type) != 2 || !strcmp(name, "gpulse_build_info"))
            continue;
        char help_line[200];
        snprintf(help_line, sizeof help_line, "# HELP %s ", name);
        const char *h = strstr(text, help_line);
        CHECK(h != NULL);
        h += strlen(help_line);
        char *help = strndup(h, strcspn(h, "\n"));
        snprintf(q, sizeof q, "/api/v1/metadata?metric=%s", name);
        json_t *md = json_loads(srv_request(s, "GET", q, NULL, NULL)->body, 0, NULL);
        json_t *e = json_array_get(json_object_get(json_object_get(md, "data"), name), 0);
        if (!e)
            gp_test_fail(__FILE__, __LINE__, "/api/v1/metadata lacks %s", name);
        CHECK_STR(json_string_value(json_object_get(e, "type")), type);
        CHECK_STR(json_string_value(json_object_get(e, "help")), help);
        free(help);
        json_decref(md);
        families++;
    }
    CHECK(families > 40);

    for (size_t i = 0; i < nwant; i++)
        free(want[i].key);
    for (size_t i = 0; i < ngot; i++)
        free(got[i].key);
    free(want);
    free(got);
    gp_text_parser_free(&tp);
    json_decref(j);
    free(text);
    gp_server_stop(s);
}

static void test_self_scrape_off(void)
{
    struct gp_server *s = start_self(0);
    usleep(400 * 1000);
    CHECK_CONTAINS(query(s, "{job=\"gpulse-server\"}")->body, "\"result\":[]");
    CHECK_CONTAINS(query(s, "up")->body, "\"result\":[]");
    CHECK_CONTAINS(srv_request(s, "GET", "/metrics", NULL, NULL)->body,
                   "gpulse_server_self_scrapes_total 0\n");
    gp_server_stop(s);
}

static void test_self_scrape_config(void)
{
    struct gp_server_config c;
    char err[256];
    gp_server_config_defaults(&c);
    CHECK_INT(c.self_scrape_interval_ms, 15000);
    c.self_scrape_interval_ms = 0;
    CHECK_INT(gp_server_config_validate(&c, err, sizeof err), GP_OK);
    c.self_scrape_interval_ms = 50;
    CHECK_INT(gp_server_config_validate(&c, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "self_scrape_interval must be 0s (off) or between 100ms and 1h");
    c.self_scrape_interval_ms = 2 * 3600 * 1000;
    CHECK_INT(gp_server_config_validate(&c, err, sizeof err), GP_ECONFIG);
    struct gp_cfg_section sec = gp_server_cfg_section(&c);
    const char *y = "server:\n  self_scrape_interval: 0s\n";
    CHECK_INT(gp_cfg_parse_yaml(&sec, 1, y, strlen(y), err, sizeof err), GP_OK);
    CHECK_INT(c.self_scrape_interval_ms, 0);
}

const struct gp_test gp_tests_server_self[] = {
    {"self_scrape_stores_own_families", test_self_scrape_stores_own_families},
    {"self_scrape_equals_metrics", test_self_scrape_equals_metrics},
    {"self_scrape_off", test_self_scrape_off},
    {"self_scrape_config", test_self_scrape_config},
    {NULL, NULL},
};
