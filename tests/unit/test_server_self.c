/*
 * test_server_self.c - the self-scrape (selfscrape.c) of a whole
 * gp_server: with a tiny self_scrape_interval its store holds its own
 * gpulse_server_* families and up, labelled job="gpulse-server" and
 * instance="127.0.0.1:PORT", answering PromQL (counters move between
 * scrapes, so rate() sees them); the `gpulse up` hook's families stay
 * out; at 0s nothing is stored; the key's range.
 */
#include "server_testlib.h"

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
    {"self_scrape_off", test_self_scrape_off},
    {"self_scrape_config", test_self_scrape_config},
    {NULL, NULL},
};
