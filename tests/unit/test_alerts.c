/*
 * test_alerts.c - the alert state machine (insight/alerts.h) on a fake
 * clock: pending -> firing after `for`, clear_for before resolving,
 * cool-down, de-duplication, holds, restart reload (no second firing),
 * silences (matching, validation, expiry, deletion, persistence), the
 * rows in state.db and the JSON answers.
 */
#include "insight/alerts.h"
#include "ingest/remote_write.h"
#include "lib/buf.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "server/server.h"
#include "server_testlib.h"
#include "test.h"

#include <curl/curl.h>
#include <jansson.h>
#include <unistd.h>
#include <sqlite3.h>
#include <stdlib.h>

#define MIN 60000LL
#define T0 1700000000000LL

struct rec {
    struct gp_alert_event ev[64];
    char id[64][17];
    char kind[64][64];
    int n;
};

static void listener(void *ctx, const struct gp_alert_event *ev)
{
    struct rec *r = ctx;
    CHECK(r->n < 64);
    r->ev[r->n] = *ev;
    snprintf(r->id[r->n], 17, "%s", ev->id);
    snprintf(r->kind[r->n], 64, "%s", ev->kind);
    /* borrowed for the call only: not kept */
    r->ev[r->n].key = NULL;
    r->ev[r->n].id = r->ev[r->n].kind = r->ev[r->n].summary = r->ev[r->n].evidence = NULL;
    r->ev[r->n].runbook = NULL;
    r->n++;
}

static struct gp_alerts *open_alerts(int64_t now, struct rec *r)
{
    struct gp_alerts *a;
    char err[256];
    if (gp_alerts_open(&a, gp_test_tmpdir(), now, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "open: %s", err);
    if (r)
        CHECK_INT(gp_alerts_add_listener(a, listener, r), GP_OK);
    return a;
}

static struct gp_alert_params params(int64_t for_ms)
{
    return (struct gp_alert_params){.kind = "memory_near_exhaustion", .severity = GP_SEV_WARNING,
                                    .for_ms = for_ms, .clear_for_ms = MIN, .cooldown_ms = 10 * MIN,
                                    .runbook = "lower the batch size"};
}

static struct gp_observation obs(const char *node, const char *job, uint32_t pid, bool bad, double v)
{
    struct gp_observation o;
    memset(&o, 0, sizeof o);
    o.key.det = GP_DET_MEMORY_HIGH;
    snprintf(o.key.node, sizeof o.key.node, "%s", node);
    snprintf(o.key.gpu, sizeof o.key.gpu, "0");
    snprintf(o.key.job, sizeof o.key.job, "%s", job);
    o.key.rank = 3;
    o.key.pid = pid;
    o.bad = bad;
    o.value = v;
    snprintf(o.summary, sizeof o.summary, "memory at %.0f%%", v * 100);
    snprintf(o.evidence, sizeof o.evidence, "used/total = %.2f", v);
    return o;
}

/* One tick at now with the given observations (n of them). */
static void tick(struct gp_alerts *a, int64_t now, const struct gp_alert_params *p,
                 const struct gp_observation *o, size_t n)
{
    gp_alerts_begin(a, now);
    for (size_t i = 0; i < n; i++)
        CHECK_INT(gp_alerts_observe(a, p, &o[i]), GP_OK);
    char err[256];
    if (gp_alerts_end(a, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "end: %s", err);
}

static int count_rows(const char *sql)
{
    char path[700];
    snprintf(path, sizeof path, "%s/state.db", gp_test_tmpdir());
    sqlite3 *db;
    CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    CHECK_INT(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    CHECK_INT(sqlite3_step(st), SQLITE_ROW);
    int n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

static json_t *list(struct gp_alerts *a, int state, const char *kind, const char *job)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    struct gp_alerts_filter f = {.state = state, .kind = kind, .job = job, .since_ms = INT64_MIN,
                                 .limit = 100};
    CHECK_INT(gp_alerts_list_json(a, &f, &b), GP_OK);
    json_error_t je;
    json_t *j = json_loads(b.data, 0, &je);
    if (!j)
        gp_test_fail(__FILE__, __LINE__, "not JSON: %s: %s", je.text, b.data);
    gp_buf_free(&b);
    json_t *d = json_incref(json_object_get(j, "data"));
    json_decref(j);
    CHECK(json_is_array(d));
    return d;
}

static void test_lifecycle(void)
{
    struct rec r = {0};
    struct gp_alerts *a = open_alerts(T0, &r);
    struct gp_alert_params p = params(2 * MIN);
    struct gp_observation bad = obs("n1", "bert-1", 4242, true, 0.97);
    struct gp_observation ok = obs("n1", "bert-1", 4242, false, 0.5);
    tick(a, T0, &p, &bad, 1);
    CHECK_INT(r.n, 1);
    CHECK_INT(r.ev[0].from, GP_ALERT_RESOLVED); /* from nothing */
    CHECK_INT(r.ev[0].to, GP_ALERT_PENDING);
    CHECK(gp_alerts_active(a, p.kind, &bad.key, 0));
    tick(a, T0 + MIN, &p, &bad, 1);
    CHECK_INT(r.n, 1); /* still pending: for is 2m */
    tick(a, T0 + 2 * MIN, &p, &bad, 1);
    CHECK_INT(r.n, 2);
    CHECK_INT(r.ev[1].from, GP_ALERT_PENDING);
    CHECK_INT(r.ev[1].to, GP_ALERT_FIRING);
    CHECK_INT(r.ev[1].at_ms, T0 + 2 * MIN);
    CHECK_STR(r.id[0], r.id[1]);
    /* Clear for less than clear_for, then bad again: stays firing. */
    tick(a, T0 + 3 * MIN, &p, &ok, 1);
    tick(a, T0 + 3 * MIN + 30000, &p, &bad, 1);
    tick(a, T0 + 4 * MIN, &p, &ok, 1);
    CHECK_INT(r.n, 2);
    /* Not observed at all counts as clear: resolved a minute after. */
    tick(a, T0 + 5 * MIN, &p, NULL, 0);
    CHECK_INT(r.n, 3);
    CHECK_INT(r.ev[2].to, GP_ALERT_RESOLVED);
    CHECK(!gp_alerts_active(a, p.kind, &bad.key, 0));
    /* Cool-down: bad again within 10m of resolving does not fire. */
    tick(a, T0 + 6 * MIN, &p, &bad, 1);
    CHECK_INT(r.n, 3);
    struct gp_alerts_stats st;
    gp_alerts_stats(a, &st);
    CHECK_INT(st.suppressed_cooldown, 1);
    /* After it, a new instance with the same id. */
    tick(a, T0 + 16 * MIN, &p, &bad, 1);
    CHECK_INT(r.n, 4);
    CHECK_INT(r.ev[3].to, GP_ALERT_PENDING);
    CHECK_STR(r.id[3], r.id[0]);
    CHECK_INT(count_rows("SELECT count(*) FROM alerts"), 2);
    CHECK_INT(count_rows("SELECT count(*) FROM alert_transitions"), 4);
    CHECK_INT(count_rows("SELECT count(*) FROM alerts WHERE state='resolved' AND firing_since IS NOT NULL"), 1);
    /* The JSON of the history. */
    json_t *all = list(a, -2, NULL, NULL);
    CHECK_INT(json_array_size(all), 2);
    json_t *newest = json_array_get(all, 0), *old = json_array_get(all, 1);
    CHECK_STR(json_string_value(json_object_get(newest, "state")), "pending");
    CHECK_STR(json_string_value(json_object_get(old, "state")), "resolved");
    CHECK_STR(json_string_value(json_object_get(old, "group")), "job:bert-1");
    json_t *lab = json_object_get(old, "labels");
    CHECK_STR(json_string_value(json_object_get(lab, "node")), "n1");
    CHECK_STR(json_string_value(json_object_get(lab, "rank")), "3");
    CHECK_STR(json_string_value(json_object_get(lab, "pid")), "4242");
    CHECK_DBL(json_number_value(json_object_get(old, "firing_since")), (T0 + 2 * MIN) / 1e3, 1e-9);
    CHECK_DBL(json_number_value(json_object_get(old, "resolved")), (T0 + 5 * MIN) / 1e3, 1e-9);
    CHECK_STR(json_string_value(json_object_get(old, "runbook")), "lower the batch size");
    json_decref(all);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_alerts_get_json(a, r.id[0], &b), GP_OK);
    json_t *one = json_loads(b.data, 0, NULL);
    CHECK(one);
    json_t *tr = json_object_get(json_object_get(one, "data"), "transitions");
    CHECK_INT(json_array_size(tr), 4);
    CHECK(json_is_null(json_object_get(json_array_get(tr, 0), "from")));
    CHECK_STR(json_string_value(json_object_get(json_array_get(tr, 1), "to")), "firing");
    CHECK_STR(json_string_value(json_object_get(json_array_get(tr, 2), "to")), "resolved");
    json_decref(one);
    gp_buf_reset(&b);
    CHECK_INT(gp_alerts_get_json(a, "0000000000000000", &b), GP_ENOTFOUND);
    gp_buf_free(&b);
    gp_alerts_close(a);
}

static void test_pending_drops_and_for_zero(void)
{
    struct rec r = {0};
    struct gp_alerts *a = open_alerts(T0, &r);
    struct gp_alert_params p = params(2 * MIN);
    struct gp_observation bad = obs("n1", "", 0, true, 0.97), ok = obs("n1", "", 0, false, 0.5);
    tick(a, T0, &p, &bad, 1);
    tick(a, T0 + MIN, &p, &ok, 1); /* pending and clear: resolved at once, no cool-down */
    CHECK_INT(r.n, 2);
    CHECK_INT(r.ev[1].from, GP_ALERT_PENDING);
    CHECK_INT(r.ev[1].to, GP_ALERT_RESOLVED);
    tick(a, T0 + 2 * MIN, &p, &bad, 1);
    CHECK_INT(r.n, 3);
    CHECK_INT(r.ev[2].to, GP_ALERT_PENDING);
    /* for 0: pending and firing in the same tick. */
    struct gp_alert_params p0 = params(0);
    p0.kind = "gpu_hardware_errors";
    p0.clear_for_ms = 0;
    tick(a, T0 + 3 * MIN, &p0, &bad, 1);
    CHECK_INT(r.n, 6);
    CHECK_INT(r.ev[3].to, GP_ALERT_PENDING);
    CHECK_INT(r.ev[4].to, GP_ALERT_FIRING);
    CHECK_STR(r.kind[4], "gpu_hardware_errors");
    CHECK_INT(r.ev[5].to, GP_ALERT_RESOLVED); /* the first key: pending, not observed */
    CHECK_STR(r.kind[5], "memory_near_exhaustion");
    /* clear_for 0: resolved at the first clear tick. */
    tick(a, T0 + 4 * MIN, &p0, &ok, 1);
    CHECK_INT(r.n, 7);
    CHECK_INT(r.ev[6].to, GP_ALERT_RESOLVED);
    json_t *j = list(a, -1, NULL, NULL);
    CHECK_INT(json_array_size(j), 0);
    json_decref(j);
    j = list(a, GP_ALERT_RESOLVED, "gpu_hardware_errors", NULL);
    CHECK_INT(json_array_size(j), 1);
    CHECK_STR(json_string_value(json_object_get(json_array_get(j, 0), "group")), "node:n1");
    json_decref(j);
    gp_alerts_close(a);
}

static void test_dedupe_and_keys(void)
{
    struct rec r = {0};
    struct gp_alerts *a = open_alerts(T0, &r);
    struct gp_alert_params p = params(0);
    struct gp_observation o[4] = {obs("n1", "j", 1, true, 0.97), obs("n1", "j", 1, true, 0.98),
                                  obs("n1", "j", 2, true, 0.99), obs("n1", "j", 1, false, 0.1)};
    tick(a, T0, &p, o, 4);
    CHECK_INT(r.n, 4); /* two keys, each pending + firing */
    CHECK(strcmp(r.id[0], r.id[2]) != 0);
    json_t *j = list(a, GP_ALERT_FIRING, NULL, "j");
    CHECK_INT(json_array_size(j), 2);
    json_decref(j);
    /* The fingerprint: 16 hex digits, a function of the key only. */
    char f1[17], f2[17], f3[17];
    gp_alert_fingerprint("memory_near_exhaustion", &o[0].key, 0, f1);
    gp_alert_fingerprint("memory_near_exhaustion", &o[1].key, 0, f2);
    gp_alert_fingerprint("memory_near_exhaustion", &o[0].key, 7, f3);
    CHECK_STR(f1, f2);
    CHECK(strcmp(f1, f3) != 0);
    CHECK_INT(strlen(f1), 16);
    CHECK_STR(f1, r.id[0]);
    /* Fixed for these inputs on every machine and release (ids in URLs,
     * silences and state.db outlive a binary). */
    struct gp_obs_key k = {.det = GP_DET__COUNT, .node = "n1", .gpu = "0", .job = "j", .rank = 3, .pid = 1};
    gp_alert_fingerprint("k", &k, 0, f1);
    CHECK_STR(f1, "ffaf7669b818e22f");
    gp_alerts_close(a);
}

static void test_restart_reload(void)
{
    struct rec r = {0};
    struct gp_alerts *a = open_alerts(T0, &r);
    struct gp_alert_params p = params(MIN);
    struct gp_observation bad = obs("n1", "bert-1", 7, true, 0.97);
    struct gp_observation bad2 = obs("n2", "bert-2", 8, true, 0.96);
    tick(a, T0, &p, (struct gp_observation[]){bad, bad2}, 2);
    tick(a, T0 + MIN, &p, &bad, 1); /* bad fires; bad2 pending -> resolved */
    tick(a, T0 + 2 * MIN, &p, &bad, 1);
    CHECK_INT(r.n, 4);
    gp_alerts_close(a);
    /* Reopened: the firing alert is back and does not fire again. */
    struct rec r2 = {0};
    a = open_alerts(T0 + 3 * MIN, &r2);
    CHECK(gp_alerts_active(a, p.kind, &bad.key, 0));
    CHECK(!gp_alerts_active(a, p.kind, &bad2.key, 0));
    tick(a, T0 + 3 * MIN, &p, &bad, 1);
    CHECK_INT(r2.n, 0);
    json_t *j = list(a, GP_ALERT_FIRING, NULL, NULL);
    CHECK_INT(json_array_size(j), 1);
    CHECK_DBL(json_number_value(json_object_get(json_array_get(j, 0), "firing_since")),
              (T0 + MIN) / 1e3, 1e-9);
    json_decref(j);
    /* Resolve it, restart within the cool-down: still cooling. */
    tick(a, T0 + 4 * MIN, &p, NULL, 0);
    tick(a, T0 + 5 * MIN, &p, NULL, 0);
    CHECK_INT(r2.n, 1);
    CHECK_INT(r2.ev[0].to, GP_ALERT_RESOLVED);
    gp_alerts_close(a);
    struct rec r3 = {0};
    a = open_alerts(T0 + 6 * MIN, &r3);
    tick(a, T0 + 6 * MIN, &p, &bad, 1);
    CHECK_INT(r3.n, 0);
    tick(a, T0 + 16 * MIN, &p, &bad, 1);
    CHECK_INT(r3.n, 1);
    CHECK_INT(count_rows("SELECT count(*) FROM alerts WHERE state='firing'"), 0);
    CHECK_INT(count_rows("SELECT count(*) FROM alerts"), 3);
    gp_alerts_close(a);
}

static void test_hold(void)
{
    struct rec r = {0};
    struct gp_alerts *a = open_alerts(T0, &r);
    struct gp_alert_params p = params(0);
    struct gp_observation bad = obs("n1", "", 0, true, 0.97);
    tick(a, T0, &p, &bad, 1);
    for (int i = 1; i <= 3; i++) {
        gp_alerts_begin(a, T0 + i * MIN);
        gp_alerts_hold(a, p.kind);
        CHECK_INT(gp_alerts_end(a, NULL, 0), GP_OK);
    }
    CHECK_INT(r.n, 2);
    CHECK(gp_alerts_active(a, p.kind, &bad.key, 0));
    gp_alerts_close(a);
}

static void test_silences(void)
{
    struct rec r = {0};
    struct gp_alerts *a = open_alerts(T0, &r);
    char err[256];
    struct gp_silence s;
    memset(&s, 0, sizeof s);
    s.ends_ms = T0 + 60 * MIN;
    CHECK_INT(gp_alerts_silence_add(a, &s, T0, err, sizeof err), GP_EUSAGE); /* no matcher */
    CHECK_CONTAINS(err, "at least one matcher");
    snprintf(s.severity, sizeof s.severity, "loud");
    CHECK_INT(gp_alerts_silence_add(a, &s, T0, err, sizeof err), GP_EUSAGE);
    CHECK_CONTAINS(err, "severity");
    s.severity[0] = '\0';
    snprintf(s.job, sizeof s.job, "bert-1");
    s.ends_ms = T0 - 1;
    CHECK_INT(gp_alerts_silence_add(a, &s, T0, err, sizeof err), GP_EUSAGE);
    CHECK_CONTAINS(err, "future");
    s.ends_ms = T0 + 30 * MIN;
    snprintf(s.comment, sizeof s.comment, "maintenance");
    CHECK_INT(gp_alerts_silence_add(a, &s, T0, err, sizeof err), GP_OK);
    CHECK_INT(strlen(s.id), 16);
    struct gp_alert_params p = params(0);
    p.clear_for_ms = 0;
    struct gp_observation b1 = obs("n1", "bert-1", 1, true, 0.97), b2 = obs("n1", "bert-2", 1, true, 0.97);
    tick(a, T0, &p, (struct gp_observation[]){b1, b2}, 2);
    CHECK_INT(r.n, 4);
    int silenced = 0;
    for (int i = 0; i < 4; i++)
        silenced += r.ev[i].silenced;
    CHECK_INT(silenced, 2); /* bert-1's two transitions, not bert-2's */
    CHECK(gp_alerts_silenced(a, p.kind, &b1.key, GP_SEV_WARNING, T0));
    CHECK(!gp_alerts_silenced(a, p.kind, &b1.key, GP_SEV_WARNING, T0 + 30 * MIN)); /* expired */
    json_t *j = list(a, GP_ALERT_FIRING, NULL, "bert-1");
    CHECK(json_is_true(json_object_get(json_array_get(j, 0), "silenced")));
    json_decref(j);
    /* Persisted: a reopened engine still silences. */
    gp_alerts_close(a);
    a = open_alerts(T0 + MIN, &r);
    CHECK(gp_alerts_silenced(a, p.kind, &b1.key, GP_SEV_WARNING, T0 + MIN));
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_alerts_silences_json(a, T0 + MIN, false, &b), GP_OK);
    CHECK_CONTAINS(b.data, s.id);
    CHECK_CONTAINS(b.data, "\"matchers\":{\"job\":\"bert-1\"}");
    CHECK_CONTAINS(b.data, "\"active\":true");
    /* Deleted: no longer silences, listed only with all. */
    CHECK_INT(gp_alerts_silence_delete(a, s.id, T0 + 2 * MIN), GP_OK);
    CHECK_INT(gp_alerts_silence_delete(a, s.id, T0 + 2 * MIN), GP_ENOTFOUND);
    CHECK(!gp_alerts_silenced(a, p.kind, &b1.key, GP_SEV_WARNING, T0 + 2 * MIN));
    j = list(a, GP_ALERT_FIRING, NULL, "bert-1");
    CHECK(json_is_false(json_object_get(json_array_get(j, 0), "silenced")));
    json_decref(j);
    gp_buf_reset(&b);
    CHECK_INT(gp_alerts_silences_json(a, T0 + 3 * MIN, false, &b), GP_OK);
    CHECK(!strstr(b.data, s.id));
    gp_buf_reset(&b);
    CHECK_INT(gp_alerts_silences_json(a, T0 + 3 * MIN, true, &b), GP_OK);
    CHECK_CONTAINS(b.data, s.id);
    gp_buf_free(&b);
    /* Severity and node matchers. */
    struct gp_silence s2;
    memset(&s2, 0, sizeof s2);
    snprintf(s2.severity, sizeof s2.severity, "critical");
    snprintf(s2.node, sizeof s2.node, "n1");
    s2.ends_ms = T0 + 60 * MIN;
    CHECK_INT(gp_alerts_silence_add(a, &s2, T0 + 3 * MIN, err, sizeof err), GP_OK);
    CHECK(gp_alerts_silenced(a, "x", &b1.key, GP_SEV_CRITICAL, T0 + 4 * MIN));
    CHECK(!gp_alerts_silenced(a, "x", &b1.key, GP_SEV_WARNING, T0 + 4 * MIN));
    gp_alerts_close(a);
}

/* A database that refuses the writes: a clean GP_EIO, counted; the state
 * in memory moves on and the listeners still hear of it. */
static void test_db_failure(void)
{
    struct rec r = {0};
    struct gp_alerts *a = open_alerts(T0, &r);
    char path[700];
    snprintf(path, sizeof path, "%s/state.db", gp_test_tmpdir());
    sqlite3 *db;
    CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
    CHECK_INT(sqlite3_exec(db, "DROP TABLE alert_transitions", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    struct gp_alert_params p = params(0);
    struct gp_observation bad = obs("n1", "", 0, true, 0.97);
    gp_alerts_begin(a, T0);
    CHECK_INT(gp_alerts_observe(a, &p, &bad), GP_OK);
    char err[256] = "";
    CHECK_INT(gp_alerts_end(a, err, sizeof err), GP_EIO);
    CHECK_CONTAINS(err, "writing 2 alert transitions");
    CHECK_CONTAINS(err, "alert_transitions");
    struct gp_alerts_stats st;
    gp_alerts_stats(a, &st);
    CHECK_INT(st.db_errors, 1);
    CHECK_INT(st.firing, 1);
    CHECK_INT(r.n, 2);
    /* Nothing half-written: the alert row went with the rollback. */
    CHECK_INT(count_rows("SELECT count(*) FROM alerts"), 0);
    gp_alerts_close(a);
}

/* A database of a newer schema is refused, not written to. */
static void test_newer_schema(void)
{
    char path[700];
    snprintf(path, sizeof path, "%s/state.db", gp_test_tmpdir());
    sqlite3 *db;
    CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
    CHECK_INT(sqlite3_exec(db, "PRAGMA user_version=99", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    struct gp_alerts *a;
    char err[256];
    CHECK_INT(gp_alerts_open(&a, gp_test_tmpdir(), T0, err, sizeof err), GP_EUNSUPPORTED);
    CHECK_CONTAINS(err, "newer");
}

/* ---- the routes, through a whole server ---- */

/* Waits (up to 10 s, writing v every 100 ms) until GET path holds want. */
static void wait_for(struct gp_server *s, const char *path, const char *want, double v)
{
    for (int i = 0; i < 100; i++) {
        srv_put_temp(s, v, NULL);
        struct reply *r = srv_request(s, "GET", path, NULL, "r-tok");
        if (r->status == 200 && strstr(r->body, want))
            return;
        usleep(100000);
    }
    gp_test_fail(__FILE__, __LINE__, "%s never held %s: %s", path, want,
                 srv_request(s, "GET", path, NULL, "r-tok")->body);
}

static void test_api_routes(void)
{
    gp_test_write_file(gp_test_tmpdir(), "gpulse.yaml",
                       "rules:\n"
                       "  - name: gpu_hot\n"
                       "    expr: DCGM_FI_DEV_GPU_TEMP\n"
                       "    agg: last\n"
                       "    window: 5s\n"
                       "    op: '>'\n"
                       "    threshold: 85\n"
                       "    for: 300ms\n"
                       "    severity: critical\n"
                       "    annotations:\n"
                       "      summary: 'GPU {{ $labels.gpu }} at {{ $value }} C'\n");
    struct gp_server *s = srv_start_eval();
    wait_for(s, "/api/v1/alerts?state=firing", "\"state\":\"firing\"", 90);
    struct reply *r =
        srv_request(s, "GET", "/api/v1/alerts?kind=gpu_hot&severity=critical&node=n1", NULL, "r-tok");
    CHECK_INT(r->status, 200);
    json_t *j = json_loads(r->body, 0, NULL);
    CHECK(j);
    json_t *al = json_array_get(json_object_get(j, "data"), 0);
    CHECK_STR(json_string_value(json_object_get(al, "summary")), "GPU 0 at 90 C");
    CHECK_STR(json_string_value(json_object_get(al, "group")), "node:n1");
    char id[17];
    snprintf(id, sizeof id, "%s", json_string_value(json_object_get(al, "id")));
    json_decref(j);
    char path[128];
    snprintf(path, sizeof path, "/api/v1/alerts/%s", id);
    r = srv_request(s, "GET", path, NULL, "r-tok");
    CHECK_INT(r->status, 200);
    CHECK_CONTAINS(r->body, "\"transitions\":[{\"from\":null,\"to\":\"pending\"");
    CHECK_CONTAINS(r->body, "{\"from\":\"pending\",\"to\":\"firing\"");
    CHECK_INT(srv_request(s, "GET", "/api/v1/alerts/0123456789abcdef", NULL, "r-tok")->status, 404);
    CHECK_INT(srv_request(s, "GET", "/api/v1/alerts/zz", NULL, "r-tok")->status, 404);
    CHECK_INT(srv_request(s, "GET", "/api/v1/alerts?state=sleeping", NULL, "r-tok")->status, 400);
    CHECK_INT(srv_request(s, "GET", "/api/v1/alerts?limit=0", NULL, "r-tok")->status, 400);
    CHECK_INT(srv_request(s, "GET", "/api/v1/alerts?severity=loud", NULL, "r-tok")->status, 400);
    CHECK_INT(srv_request(s, "GET", "/api/v1/alerts", NULL, NULL)->status, 401);
    CHECK_INT(srv_request(s, "POST", "/api/v1/alerts", "{}", "w-tok")->status, 405);
    /* Silences: the write token, a validated body. */
    const char *sil = "{\"matchers\":{\"kind\":\"gpu_hot\",\"node\":\"n1\"},\"duration\":\"2h\","
                      "\"comment\":\"fans being replaced\"}";
    CHECK_INT(srv_request(s, "POST", "/api/v1/silences", sil, "r-tok")->status, 401);
    const struct {
        const char *body, *msg;
    } bad[] = {
        {"nope", "not JSON"},
        {"[]", "must be a JSON object"},
        {"{\"matchers\":{},\"duration\":\"1h\"}", "at least one matcher"},
        {"{\"matchers\":{\"pod\":\"x\"},\"duration\":\"1h\"}", "unknown matcher 'pod'"},
        {"{\"matchers\":{\"job\":\"x\"}}", "give 'duration' or 'ends_at'"},
        {"{\"matchers\":{\"job\":\"x\"},\"duration\":\"soon\"}", "'duration' must be a duration"},
        {"{\"matchers\":{\"job\":\"x\"},\"ends_at\":1000}", "must end in the future"},
        {"{\"matchers\":{\"job\":3},\"duration\":\"1h\"}", "'job' must be a string"},
        {"{\"matchers\":{\"job\":\"x\"},\"duration\":\"1h\",\"x\":1}", "unknown field 'x'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = srv_request(s, "POST", "/api/v1/silences", bad[i].body, "w-tok");
        if (r->status != 400 || !strstr(r->body, "bad_data") || !strstr(r->body, bad[i].msg))
            gp_test_fail(__FILE__, __LINE__, "%s: %ld %s", bad[i].body, r->status, r->body);
    }
    r = srv_request(s, "POST", "/api/v1/silences", sil, "w-tok");
    CHECK_INT(r->status, 200);
    j = json_loads(r->body, 0, NULL);
    char sid[17];
    snprintf(sid, sizeof sid, "%s", json_string_value(json_object_get(json_object_get(j, "data"), "id")));
    json_decref(j);
    CHECK_INT(strlen(sid), 16);
    wait_for(s, "/api/v1/alerts?state=firing", "\"silenced\":true", 91);
    r = srv_request(s, "GET", "/api/v1/silences", NULL, "r-tok");
    CHECK_CONTAINS(r->body, sid);
    CHECK_CONTAINS(r->body, "fans being replaced");
    snprintf(path, sizeof path, "/api/v1/silences/%s", sid);
    CHECK_INT(srv_request(s, "DELETE", path, NULL, "r-tok")->status, 401);
    CHECK_INT(srv_request(s, "GET", path, NULL, "r-tok")->status, 405);
    CHECK_INT(srv_request(s, "DELETE", path, NULL, "w-tok")->status, 200);
    CHECK_INT(srv_request(s, "DELETE", path, NULL, "w-tok")->status, 404);
    r = srv_request(s, "GET", "/api/v1/silences", NULL, "r-tok");
    CHECK(!strstr(r->body, sid));
    r = srv_request(s, "GET", "/api/v1/silences?state=all", NULL, "r-tok");
    CHECK_CONTAINS(r->body, sid);
    /* Cool and resolved (clear_for 0). */
    wait_for(s, "/api/v1/alerts?state=resolved", id, 20);
    r = srv_request(s, "GET", "/metrics", NULL, "r-tok");
    CHECK_CONTAINS(r->body, "gpulse_server_eval_ticks_total ");
    CHECK_CONTAINS(r->body, "gpulse_server_alert_transitions_total 3");
    gp_server_stop(s);
    /* A bad rule stops the start with its line. */
    gp_test_write_file(gp_test_tmpdir(), "gpulse.yaml", "rules:\n  - name: x\n    expr: up\n    op: '>'\n");
    struct gp_server_config c;
    char err[512];
    srv_eval_config(&c);
    CHECK_INT(gp_server_start(&s, &c, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "line 2: rule 'x' has no 'threshold'");
}

const struct gp_test gp_tests_alerts[] = {
    {"api_routes", test_api_routes},
    {"lifecycle", test_lifecycle},
    {"pending_drops_and_for_zero", test_pending_drops_and_for_zero},
    {"dedupe_and_keys", test_dedupe_and_keys},
    {"restart_reload", test_restart_reload},
    {"hold", test_hold},
    {"silences", test_silences},
    {"newer_schema", test_newer_schema},
    {"db_failure", test_db_failure},
    {0},
};
