/*
 * test_notify_router.c - the router (notify/router.h) on a fake clock,
 * with the real outbox and a test channel table that records every
 * notice it is handed: group_wait batching, group_interval,
 * repeat_interval, firing once and resolution once, silenced and pending
 * transitions, continue, the node fallback of group_by, Alertmanager's
 * re-sends, a restart on the same state.db, a storm of 1,000 alerts; then
 * GET /api/v1/notifications and the outbox's /metrics through a server.
 */
#include "ingest/remote_write.h"
#include "insight/alert_event.h"
#include "lib/buf.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "notify/config.h"
#include "notify/outbox.h"
#include "notify/router.h"
#include "server/server.h"
#include "server_testlib.h"
#include "test.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define T0 1700000000000LL
#define SEC 1000LL
#define MIN 60000LL

/* What the test channel was handed. */
struct got {
    char receiver[32], status[16], group_key[256], glabel[32], gvalue[64];
    int nalerts, nfiring, nresolved;
    char first_id[32], first_status[16];
    int64_t first_ends;
};
static struct {
    struct got n[64];
    int count;     /* notices */
    long alerts;   /* alerts in them, all notices */
} rec;

static int rec_send(const struct gp_receiver *r, const struct gp_notice *n, struct gp_send_outcome *o)
{
    (void)r;
    CHECK(n->id && strlen(n->id) == GP_OUTBOX_ID_LEN - 1); /* the outbox's stable id reaches the channel */
    rec.alerts += (long)n->nalerts;
    if (rec.count < 64) {
        struct got *g = &rec.n[rec.count];
        memset(g, 0, sizeof *g);
        snprintf(g->receiver, sizeof g->receiver, "%s", n->receiver);
        snprintf(g->status, sizeof g->status, "%s", n->status);
        snprintf(g->group_key, sizeof g->group_key, "%s", n->group_key);
        if (n->group_labels[0][0]) {
            snprintf(g->glabel, sizeof g->glabel, "%s", n->group_labels[0][0]);
            snprintf(g->gvalue, sizeof g->gvalue, "%s", n->group_labels[0][1]);
        }
        g->nalerts = (int)n->nalerts;
        for (size_t i = 0; i < n->nalerts; i++) {
            g->nfiring += !strcmp(n->alerts[i].status, "firing");
            g->nresolved += !strcmp(n->alerts[i].status, "resolved");
        }
        if (n->nalerts) {
            snprintf(g->first_id, sizeof g->first_id, "%s", n->alerts[0].id);
            snprintf(g->first_status, sizeof g->first_status, "%s", n->alerts[0].status);
            g->first_ends = n->alerts[0].ends_ms;
        }
    }
    rec.count++;
    o->result = GP_SEND_OK;
    o->status = 200;
    return GP_OK;
}

static const struct gp_channel_ops hook_ops = {GP_RT_WEBHOOK, rec_send};
static const struct gp_channel_ops slack_ops = {GP_RT_SLACK, rec_send};
static const struct gp_channel_ops am_ops = {GP_RT_ALERTMANAGER, rec_send};
static const struct gp_channel_ops *const channels[GP_RT__COUNT] = {
    [GP_RT_WEBHOOK] = &hook_ops, [GP_RT_SLACK] = &slack_ops, [GP_RT_ALERTMANAGER] = &am_ops};

static int64_t fake_now;
static int64_t clock_fn(void *ctx)
{
    (void)ctx;
    return fake_now;
}

struct env {
    struct gp_notify_config cfg;
    struct gp_outbox *ob;
    struct gp_router *rt;
    char dir[512];
};

static const char *RECEIVERS = "notify:\n  receivers:\n"
                               "    - {name: hook, type: webhook, url: 'http://127.0.0.1:1/h'}\n"
                               "    - {name: chat, type: slack, url: 'http://127.0.0.1:1/s'}\n"
                               "    - {name: am, type: alertmanager, url: 'http://127.0.0.1:1'}\n"
                               "  routes:\n";

static void env_open(struct env *e, const char *dir, const char *routes)
{
    char y[4096];
    snprintf(y, sizeof y, "%s%s", RECEIVERS, routes);
    snprintf(e->dir, sizeof e->dir, "%s", dir);
    gp_notify_config_init(&e->cfg);
    char err[256];
    if (gp_notify_config_parse(y, strlen(y), &e->cfg, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "config: %s", err);
    struct gp_outbox_options oo = {.dir = dir, .cfg = &e->cfg, .channels = channels,
                                   .now_ms = clock_fn, .seed = 7};
    CHECK_INT(gp_outbox_open(&e->ob, &oo, err, sizeof err), GP_OK);
    struct gp_router_options ro = {.dir = dir, .cfg = &e->cfg, .outbox = e->ob, .now_ms = clock_fn};
    if (gp_router_open(&e->rt, &ro, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "router: %s", err);
}

static void env_close(struct env *e)
{
    gp_router_close(e->rt);
    gp_outbox_close(e->ob);
    gp_notify_config_free(&e->cfg);
}

/* Runs the router and the outbox at t; returns the notices sent. */
static int at(struct env *e, int64_t t)
{
    fake_now = t;
    int before = rec.count;
    CHECK_INT(gp_router_run(e->rt, t, NULL), GP_OK);
    CHECK_INT(gp_outbox_run_due(e->ob, t, NULL), GP_OK);
    return rec.count - before;
}

static void event(struct env *e, const char *id, const char *job, const char *node,
                  enum gp_severity sev, enum gp_alert_state from, enum gp_alert_state to,
                  bool silenced, int64_t t)
{
    struct gp_obs_key k;
    memset(&k, 0, sizeof k);
    snprintf(k.node, sizeof k.node, "%s", node);
    snprintf(k.gpu, sizeof k.gpu, "0");
    snprintf(k.job, sizeof k.job, "%s", job);
    k.rank = -1;
    struct gp_alert_event ev = {.id = id, .kind = "gpu_hot", .severity = sev, .from = from, .to = to,
                                .key = &k, .summary = "hot", .evidence = "90 C", .runbook = "cool it",
                                .value = 90, .at_ms = t, .silenced = silenced};
    gp_router_listener(e->rt, &ev);
}

static void fire(struct env *e, const char *id, const char *job, int64_t t)
{
    event(e, id, job, "n1", GP_SEV_CRITICAL, GP_ALERT_PENDING, GP_ALERT_FIRING, false, t);
}

static void resolve(struct env *e, const char *id, const char *job, int64_t t)
{
    event(e, id, job, "n1", GP_SEV_CRITICAL, GP_ALERT_FIRING, GP_ALERT_RESOLVED, false, t);
}

static void reset(void)
{
    memset(&rec, 0, sizeof rec);
}

static const char *HOOK_ROUTE = "    - {receiver: hook, group_by: [job], group_wait: 30s,"
                                " group_interval: 5m, repeat_interval: 4h}\n";

static void test_group_wait_batches(void)
{
    reset();
    struct env e;
    env_open(&e, gp_test_tmpdir(), HOOK_ROUTE);
    fire(&e, "a1", "j", T0);
    CHECK_INT(at(&e, T0), 0);
    fire(&e, "a2", "j", T0 + 10 * SEC);
    fire(&e, "b1", "k", T0 + 10 * SEC);
    CHECK_INT(at(&e, T0 + 29 * SEC), 0);
    CHECK_INT(at(&e, T0 + 30 * SEC), 1); /* j: both alerts in one notice */
    CHECK_STR(rec.n[0].glabel, "job");
    CHECK_STR(rec.n[0].gvalue, "j");
    CHECK_INT(rec.n[0].nfiring, 2);
    CHECK_STR(rec.n[0].status, "firing");
    CHECK_STR(rec.n[0].receiver, "hook");
    CHECK_INT(at(&e, T0 + 39 * SEC), 0);
    CHECK_INT(at(&e, T0 + 40 * SEC), 1); /* k waited its own group_wait */
    CHECK_STR(rec.n[1].gvalue, "k");
    CHECK_INT(rec.n[1].nalerts, 1);
    struct gp_router_stats s;
    gp_router_stats(e.rt, &s);
    CHECK_INT(s.groups, 2);
    CHECK_INT(s.notices, 2);
    env_close(&e);
}

static void test_group_interval_and_once(void)
{
    reset();
    struct env e;
    env_open(&e, gp_test_tmpdir(), HOOK_ROUTE);
    fire(&e, "a1", "j", T0);
    CHECK_INT(at(&e, T0 + 30 * SEC), 1);
    int64_t t1 = T0 + 30 * SEC;
    fire(&e, "a2", "j", t1 + SEC);
    CHECK_INT(at(&e, t1 + 5 * MIN - 1), 0); /* at most every group_interval */
    CHECK_INT(at(&e, t1 + 5 * MIN), 1);
    CHECK_INT(rec.n[1].nalerts, 1); /* only the news: a1's firing went out once */
    CHECK_STR(rec.n[1].first_id, "a2");
    resolve(&e, "a1", "j", t1 + 6 * MIN);
    CHECK_INT(at(&e, t1 + 6 * MIN), 0);
    CHECK_INT(at(&e, t1 + 10 * MIN), 1);
    CHECK_STR(rec.n[2].first_id, "a1");
    CHECK_STR(rec.n[2].first_status, "resolved");
    CHECK_STR(rec.n[2].status, "resolved");
    CHECK_INT(rec.n[2].first_ends, t1 + 6 * MIN);
    /* a second resolution of the same alert is not news */
    resolve(&e, "a1", "j", t1 + 11 * MIN);
    CHECK_INT(at(&e, t1 + 20 * MIN), 0);
    env_close(&e);
}

static void test_repeat_then_resolve_drops(void)
{
    reset();
    struct env e;
    env_open(&e, gp_test_tmpdir(), HOOK_ROUTE);
    fire(&e, "a1", "j", T0);
    CHECK_INT(at(&e, T0 + 30 * SEC), 1);
    int64_t t1 = T0 + 30 * SEC;
    for (int64_t t = t1 + MIN; t < t1 + 4 * 60 * MIN; t += 30 * MIN)
        CHECK_INT(at(&e, t), 0);
    CHECK_INT(at(&e, t1 + 4 * 60 * MIN), 1); /* unchanged firing group, repeated */
    CHECK_STR(rec.n[1].first_id, "a1");
    CHECK_STR(rec.n[1].status, "firing");
    resolve(&e, "a1", "j", t1 + 5 * 60 * MIN);
    CHECK_INT(at(&e, t1 + 5 * 60 * MIN), 1);
    CHECK_STR(rec.n[2].status, "resolved");
    struct gp_router_stats s;
    gp_router_stats(e.rt, &s);
    CHECK_INT(s.groups, 0); /* all resolved and notified: dropped */
    CHECK_INT(at(&e, t1 + 100 * 60 * MIN), 0);
    env_close(&e);
}

static void test_silenced_and_pending(void)
{
    reset();
    struct env e;
    env_open(&e, gp_test_tmpdir(), HOOK_ROUTE);
    event(&e, "s1", "j", "n1", GP_SEV_CRITICAL, GP_ALERT_PENDING, GP_ALERT_FIRING, true, T0);
    event(&e, "p1", "j", "n1", GP_SEV_CRITICAL, GP_ALERT_RESOLVED, GP_ALERT_PENDING, false, T0);
    event(&e, "s1", "j", "n1", GP_SEV_CRITICAL, GP_ALERT_FIRING, GP_ALERT_RESOLVED, true, T0 + SEC);
    CHECK_INT(at(&e, T0 + 10 * MIN), 0);
    struct gp_router_stats s;
    gp_router_stats(e.rt, &s);
    CHECK_INT(s.groups, 0);
    fire(&e, "f1", "j", T0 + 10 * MIN); /* the same route still notifies the others */
    CHECK_INT(at(&e, T0 + 11 * MIN), 1);
    env_close(&e);
}

static void test_continue_and_first_match(void)
{
    reset();
    struct env e;
    env_open(&e, gp_test_tmpdir(),
             "    - {receiver: hook, match: {severity: critical}, group_wait: 1s, continue: true}\n"
             "    - {receiver: chat, match: {severity: critical}, group_wait: 1s}\n"
             "    - {receiver: hook, group_wait: 1s}\n");
    fire(&e, "c1", "j", T0); /* critical: hook (continue), then chat, which stops */
    event(&e, "w1", "j", "n1", GP_SEV_WARNING, GP_ALERT_PENDING, GP_ALERT_FIRING, false, T0);
    CHECK_INT(at(&e, T0 + SEC), 3);
    int hook_c = 0, chat_c = 0, hook_w = 0;
    for (int i = 0; i < 3; i++) {
        hook_c += !strcmp(rec.n[i].receiver, "hook") && !strcmp(rec.n[i].first_id, "c1");
        chat_c += !strcmp(rec.n[i].receiver, "chat") && !strcmp(rec.n[i].first_id, "c1");
        hook_w += !strcmp(rec.n[i].receiver, "hook") && !strcmp(rec.n[i].first_id, "w1");
        CHECK_INT(rec.n[i].nalerts, 1);
    }
    CHECK_INT(hook_c, 1);
    CHECK_INT(chat_c, 1);
    CHECK_INT(hook_w, 1); /* the third route: its own group, key names the route */
    env_close(&e);
}

static void test_group_by_node_fallback(void)
{
    reset();
    struct env e;
    env_open(&e, gp_test_tmpdir(), "    - {receiver: hook, group_wait: 1s}\n"); /* default: [job] */
    event(&e, "x1", "", "n1", GP_SEV_WARNING, GP_ALERT_PENDING, GP_ALERT_FIRING, false, T0);
    event(&e, "x2", "", "n2", GP_SEV_WARNING, GP_ALERT_PENDING, GP_ALERT_FIRING, false, T0);
    event(&e, "x3", "", "n1", GP_SEV_WARNING, GP_ALERT_PENDING, GP_ALERT_FIRING, false, T0);
    CHECK_INT(at(&e, T0 + SEC), 2);
    for (int i = 0; i < 2; i++) {
        CHECK_STR(rec.n[i].glabel, "node");
        CHECK_CONTAINS(rec.n[i].group_key, "node=\"");
        CHECK_INT(rec.n[i].nalerts, !strcmp(rec.n[i].gvalue, "n1") ? 2 : 1);
    }
    env_close(&e);
}

static void test_alertmanager_resends(void)
{
    reset();
    struct env e;
    env_open(&e, gp_test_tmpdir(), "    - {receiver: am, group_interval: 2s}\n");
    fire(&e, "a1", "j", T0);
    CHECK_INT(at(&e, T0), 1); /* no group_wait: Alertmanager groups itself */
    CHECK_INT(at(&e, T0 + SEC), 0);
    CHECK_INT(at(&e, T0 + 2 * SEC), 1); /* re-sent so it does not time out */
    CHECK_INT(at(&e, T0 + 4 * SEC), 1);
    CHECK_STR(rec.n[2].first_status, "firing");
    CHECK_INT(rec.n[2].first_ends, 0);
    fire(&e, "a2", "j", T0 + 5 * SEC);
    resolve(&e, "a1", "j", T0 + 5 * SEC);
    CHECK_INT(at(&e, T0 + 5 * SEC), 1);
    CHECK_INT(rec.n[3].nfiring, 1);
    CHECK_INT(rec.n[3].nresolved, 1);
    CHECK_INT(at(&e, T0 + 7 * SEC), 1);
    CHECK_INT(rec.n[4].nalerts, 1); /* the resolution went once; a2 still re-sent */
    CHECK_STR(rec.n[4].first_id, "a2");
    resolve(&e, "a2", "j", T0 + 8 * SEC);
    CHECK_INT(at(&e, T0 + 8 * SEC), 1);
    CHECK_STR(rec.n[5].first_status, "resolved");
    CHECK_INT(rec.n[5].first_ends, T0 + 8 * SEC);
    CHECK_INT(at(&e, T0 + 60 * SEC), 0);
    env_close(&e);
}

static void test_restart_resumes(void)
{
    reset();
    const char *dir = gp_test_tmpdir();
    struct env e;
    env_open(&e, dir, HOOK_ROUTE);
    fire(&e, "a1", "j", T0);
    CHECK_INT(at(&e, T0 + 30 * SEC), 1);
    fire(&e, "a2", "j", T0 + MIN); /* queued and saved, not yet due */
    fake_now = T0 + MIN;
    env_close(&e);
    env_open(&e, dir, HOOK_ROUTE);
    struct gp_router_stats s;
    gp_router_stats(e.rt, &s);
    CHECK_INT(s.groups, 1);
    CHECK_INT(s.alerts, 2);
    CHECK_INT(at(&e, T0 + 2 * MIN), 0);
    CHECK_INT(at(&e, T0 + 30 * SEC + 5 * MIN), 1); /* a2 not forgotten; a1 not repeated */
    CHECK_INT(rec.n[1].nalerts, 1);
    CHECK_STR(rec.n[1].first_id, "a2");
    env_close(&e);
    /* an emitted notice and its group state are one: after a restart the
     * unchanged group waits for repeat_interval */
    env_open(&e, dir, HOOK_ROUTE);
    CHECK_INT(at(&e, T0 + 60 * MIN), 0);
    resolve(&e, "a1", "j", T0 + 61 * MIN);
    resolve(&e, "a2", "j", T0 + 61 * MIN);
    CHECK_INT(at(&e, T0 + 61 * MIN), 1);
    CHECK_INT(rec.n[2].nresolved, 2);
    env_close(&e);
    env_open(&e, dir, HOOK_ROUTE);
    gp_router_stats(e.rt, &s);
    CHECK_INT(s.groups, 0);
    CHECK_INT(at(&e, T0 + 10 * 60 * MIN), 0);
    env_close(&e);
    /* a route that now names another receiver: its groups are dropped */
    env_open(&e, dir, HOOK_ROUTE);
    fire(&e, "a3", "j", T0 + 11 * 60 * MIN);
    CHECK_INT(at(&e, T0 + 11 * 60 * MIN), 0);
    env_close(&e);
    env_open(&e, dir, "    - {receiver: chat}\n");
    gp_router_stats(e.rt, &s);
    CHECK_INT(s.groups, 0);
    env_close(&e);
}

static void test_storm(void)
{
    reset();
    struct env e;
    env_open(&e, gp_test_tmpdir(), HOOK_ROUTE);
    char id[32];
    int64_t t = T0;
    for (int i = 0; i < 1000; i++, t += 60) { /* 1,000 alerts in a minute, one job */
        snprintf(id, sizeof id, "s%04d", i);
        fire(&e, id, "storm", t);
        if (i % 50 == 0)
            at(&e, t);
    }
    for (; t < T0 + 10 * MIN; t += SEC)
        at(&e, t);
    CHECK(rec.count >= 1 && rec.count <= 3);
    CHECK_INT(rec.alerts, 1000);
    env_close(&e);
}

/* ---- through a server ---- */

static void test_server_route_and_metrics(void)
{
    const char *cfgtext = "rules:\n"
                          "  - {name: gpu_hot, expr: DCGM_FI_DEV_GPU_TEMP, agg: last, window: 5s,"
                          " op: '>', threshold: 85, for: 300ms, severity: critical}\n"
                          "notify:\n"
                          "  retry_max_backoff: 1s\n"
                          "  receivers:\n"
                          "    - {name: hooks, type: webhook, url: 'http://127.0.0.1:1/SECRETPATH9'}\n"
                          "  routes:\n"
                          "    - {receiver: hooks, group_wait: 100ms}\n";
    gp_test_write_file(gp_test_tmpdir(), "gpulse.yaml", cfgtext);
    struct gp_server *s = srv_start_eval();
    struct reply *r = NULL;
    for (int i = 0; i < 100; i++) { /* the far end refuses: the notice stays queued */
        srv_put_temp(s, 90, "bert");
        r = srv_request(s, "GET", "/api/v1/notifications?state=queued&receiver=hooks", NULL, "r-tok");
        if (r->status == 200 && strstr(r->body, "\"receiver\":\"hooks\""))
            break;
        usleep(100000);
    }
    CHECK_INT(r->status, 200);
    CHECK_CONTAINS(r->body, "\"receiver\":\"hooks\"");
    CHECK_CONTAINS(r->body, "job=\\\"bert\\\"");
    CHECK(!strstr(r->body, "SECRETPATH9"));
    r = srv_request(s, "GET", "/api/v1/notifications?state=done", NULL, "r-tok");
    CHECK_INT(r->status, 200);
    CHECK_CONTAINS(r->body, "\"data\":[]");
    r = srv_request(s, "GET", "/api/v1/notifications?receiver=nobody", NULL, "r-tok");
    CHECK_CONTAINS(r->body, "\"data\":[]");
    CHECK_INT(srv_request(s, "GET", "/api/v1/notifications?state=lost", NULL, "r-tok")->status, 400);
    CHECK_INT(srv_request(s, "GET", "/api/v1/notifications?limit=0", NULL, "r-tok")->status, 400);
    CHECK_INT(srv_request(s, "GET", "/api/v1/notifications", NULL, NULL)->status, 401);
    r = srv_request(s, "GET", "/metrics", NULL, "r-tok");
    CHECK_CONTAINS(r->body, "gpulse_server_notifications_queued 1\n");
    CHECK_CONTAINS(r->body, "gpulse_server_notifications_dead 0\n");
    CHECK_CONTAINS(r->body, "gpulse_server_notifications_total{receiver=\"hooks\",result=\"retry\"}");
    CHECK_CONTAINS(r->body, "handler=\"notifications\"");
    CHECK_CONTAINS(r->body, "gpulse_server_notify_notices_total 1\n");
    CHECK_CONTAINS(r->body, "gpulse_server_notify_groups 1\n");
    CHECK_CONTAINS(r->body, "gpulse_server_notify_events_dropped_total 0\n");
    CHECK(!strstr(r->body, "SECRETPATH9"));
    gp_server_stop(s);
    /* A bad notify: section stops the start with its line. */
    gp_test_write_file(gp_test_tmpdir(), "gpulse.yaml",
                       "notify:\n  receivers:\n    - {name: x, type: pager}\n");
    struct gp_server_config c;
    char err[512];
    srv_eval_config(&c);
    CHECK_INT(gp_server_start(&s, &c, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "notify: line 3");
}

/* Another connection holds state.db's write lock, so the router's
 * transaction cannot begin: the log names that ("database is locked"),
 * not the ROLLBACK that followed ("cannot rollback - no transaction is
 * active", as a full disk at shutdown was logged, issue 15). The events
 * are applied once the lock is gone. Takes SQLite's 5 s busy wait. */
static void test_db_failure_logged_as_itself(void)
{
    reset();
    struct env e;
    env_open(&e, gp_test_tmpdir(), HOOK_ROUTE);
    char path[700], logpath[700];
    snprintf(path, sizeof path, "%s/state.db", e.dir);
    snprintf(logpath, sizeof logpath, "%s/log.txt", e.dir);
    sqlite3 *other;
    CHECK_INT(sqlite3_open(path, &other), SQLITE_OK);
    CHECK_INT(sqlite3_exec(other, "BEGIN EXCLUSIVE;", NULL, NULL, NULL), SQLITE_OK);
    fire(&e, "a1", "j", T0);
    int fd = open(logpath, O_RDWR | O_CREAT | O_TRUNC, 0600), saved = dup(2);
    CHECK(fd >= 0 && saved >= 0);
    enum gp_log_level min = gp_log_min;
    gp_log_min = GP_LOG_INFO;
    dup2(fd, 2);
    int rc = gp_router_run(e.rt, T0, NULL);
    dup2(saved, 2);
    gp_log_min = min;
    close(saved);
    char logged[4096];
    ssize_t n = pread(fd, logged, sizeof logged - 1, 0);
    logged[n > 0 ? n : 0] = '\0';
    close(fd);
    CHECK(rc != GP_OK);
    CHECK_CONTAINS(logged, "cannot save the router's groups");
    CHECK_CONTAINS(logged, "database is locked");
    CHECK(!strstr(logged, "cannot rollback"));
    sqlite3_exec(other, "ROLLBACK;", NULL, NULL, NULL);
    sqlite3_close(other);
    env_close(&e);
}

const struct gp_test gp_tests_notify_router[] = {
    {"group_wait_batches", test_group_wait_batches},
    {"group_interval_and_once", test_group_interval_and_once},
    {"repeat_then_resolve_drops", test_repeat_then_resolve_drops},
    {"silenced_and_pending", test_silenced_and_pending},
    {"continue_and_first_match", test_continue_and_first_match},
    {"group_by_node_fallback", test_group_by_node_fallback},
    {"alertmanager_resends", test_alertmanager_resends},
    {"restart_resumes", test_restart_resumes},
    {"storm", test_storm},
    {"server_route_and_metrics", test_server_route_and_metrics},
    {"db_failure_logged_as_itself", test_db_failure_logged_as_itself},
    {0},
};
