/* test_notify_outbox.c - the persisted outbox (notify/outbox.h) with a
 * test channel that answers what each test scripts. */
#include "test.h"

#include "lib/buf.h"
#include "lib/err.h"
#include "notify/config.h"
#include "notify/outbox.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static struct {
    enum gp_send_result result[32]; /* per call; past the script: OK */
    int64_t retry_after;
    int calls;
    int sleep_ms;
    char last_id[64];
    int in_send;
} ch;

static int test_send(const struct gp_receiver *r, const struct gp_notice *n, struct gp_send_outcome *o)
{
    __atomic_store_n(&ch.in_send, 1, __ATOMIC_SEQ_CST);
    if (ch.sleep_ms)
        usleep((useconds_t)ch.sleep_ms * 1000);
    int i = ch.calls++;
    o->result = i < 32 ? ch.result[i] : GP_SEND_OK;
    o->status = o->result == GP_SEND_OK ? 200 : o->result == GP_SEND_RETRY ? 503 : 404;
    o->retry_after_ms = o->result == GP_SEND_RETRY ? ch.retry_after : 0;
    snprintf(o->detail, sizeof o->detail, "far end said %d to %.200s", o->status, r->url);
    snprintf(ch.last_id, sizeof ch.last_id, "%s", n->alerts[0].id);
    __atomic_store_n(&ch.in_send, 0, __ATOMIC_SEQ_CST);
    return GP_OK;
}

static const struct gp_channel_ops test_ops = {GP_RT_WEBHOOK, test_send};
static const struct gp_channel_ops *const channels[GP_RT__COUNT] = {[GP_RT_WEBHOOK] = &test_ops};

static int64_t fake_now;
static int64_t clock_fn(void *ctx)
{
    (void)ctx;
    return fake_now;
}

static struct gp_notify_config cfg;

static struct gp_outbox *open_ob(const char *dir)
{
    gp_notify_config_init(&cfg);
    const char *y = "notify:\n  retry_max_backoff: 8s\n  retry_max_age: 1m\n  receivers:\n"
                    "    - {name: hook, type: webhook, url: 'http://127.0.0.1:1/secret-path'}\n"
                    "    - {name: s, type: slack, url: 'http://127.0.0.1:1/other'}\n";
    char err[256];
    CHECK_INT(gp_notify_config_parse(y, strlen(y), &cfg, err, sizeof err), GP_OK);
    struct gp_outbox_options o = {.dir = dir, .cfg = &cfg, .channels = channels, .now_ms = clock_fn,
                                  .seed = 42};
    struct gp_outbox *ob;
    CHECK_INT(gp_outbox_open(&ob, &o, err, sizeof err), GP_OK);
    return ob;
}

static void enqueue(struct gp_outbox *ob, const char *recv, const char *alert_id)
{
    struct gp_notice_alert a = {.id = alert_id, .kind = "k", .severity = "warning", .status = "firing",
                                .node = "n", .gpu = "0", .job = "j", .rank = "", .summary = "s",
                                .evidence = "", .runbook = "", .starts_ms = 1};
    struct gp_notice n = {.receiver = recv, .group_key = "{job=\"j\"}", .status = "firing",
                          .alerts = &a, .nalerts = 1, .external_url = ""};
    char id[GP_OUTBOX_ID_LEN];
    CHECK_INT(gp_outbox_enqueue(ob, &n, id), GP_OK);
    CHECK_INT(strlen(id), 32);
}

static void list(struct gp_outbox *ob, const char *state, struct gp_buf *b)
{
    gp_buf_init(b, 0);
    CHECK_INT(gp_outbox_list_json(ob, state, NULL, 100, b), GP_OK);
}

static void test_done(void)
{
    fake_now = 1000000;
    struct gp_outbox *ob = open_ob(gp_test_tmpdir());
    enqueue(ob, "hook", "a1");
    size_t sent;
    CHECK_INT(gp_outbox_run_due(ob, fake_now, &sent), GP_OK);
    CHECK_INT(sent, 1);
    CHECK_INT(ch.calls, 1);
    CHECK_INT(gp_outbox_run_due(ob, fake_now + 100000, &sent), GP_OK);
    CHECK_INT(sent, 0); /* done once, never again */
    struct gp_buf b;
    list(ob, "done", &b);
    CHECK_CONTAINS(b.data, "\"state\":\"done\"");
    CHECK_CONTAINS(b.data, "far end said 200 to [redacted]");
    CHECK(!strstr(b.data, "secret-path"));
    gp_buf_free(&b);
    gp_buf_init(&b, 0);
    struct gp_metric_text_sink t;
    gp_metric_text_sink_init(&t, &b);
    gp_outbox_walk_metrics(ob, &t.base);
    CHECK_CONTAINS(b.data, "gpulse_server_notifications_total{receiver=\"hook\",result=\"done\"} 1\n");
    CHECK_CONTAINS(b.data, "gpulse_server_notifications_queued 0\n");
    gp_buf_free(&b);
    gp_outbox_close(ob);
    gp_notify_config_free(&cfg);
}

/* The next_attempt of the only row, in ms since the fake epoch. */
static int64_t next_attempt(struct gp_outbox *ob)
{
    struct gp_buf b;
    list(ob, "queued", &b);
    const char *p = b.data ? strstr(b.data, "\"next_attempt\":") : NULL;
    CHECK(p);
    double t = atof(p + strlen("\"next_attempt\":"));
    gp_buf_free(&b);
    return (int64_t)(t * 1000 + 0.5);
}

static void test_retry_backoff_and_retry_after(void)
{
    fake_now = 1000000;
    struct gp_outbox *ob = open_ob(gp_test_tmpdir());
    for (int i = 0; i < 6; i++)
        ch.result[i] = GP_SEND_RETRY;
    enqueue(ob, "hook", "a1");
    size_t sent;
    int64_t caps[] = {1000, 2000, 4000, 8000, 8000}; /* doubling up to retry_max_backoff 8s */
    for (int i = 0; i < 5; i++) {
        CHECK_INT(gp_outbox_run_due(ob, fake_now, &sent), GP_OK);
        CHECK_INT(sent, 1);
        int64_t d = next_attempt(ob) - fake_now;
        CHECK(d >= 100 && d <= caps[i]);
        CHECK_INT(gp_outbox_run_due(ob, fake_now + d - 1, &sent), GP_OK);
        CHECK_INT(sent, 0); /* not before it is due */
        fake_now += d;
    }
    ch.retry_after = 30000; /* Retry-After beats the back-off */
    CHECK_INT(gp_outbox_run_due(ob, fake_now, &sent), GP_OK);
    CHECK_INT(next_attempt(ob) - fake_now, 30000);
    fake_now += 30000;
    CHECK_INT(gp_outbox_run_due(ob, fake_now, &sent), GP_OK);
    CHECK_INT(ch.calls, 7);
    struct gp_buf b;
    list(ob, "done", &b);
    CHECK_CONTAINS(b.data, "\"attempts\":7");
    gp_buf_free(&b);
    gp_outbox_close(ob);
    gp_notify_config_free(&cfg);
}

static void test_dead(void)
{
    fake_now = 1000000;
    struct gp_outbox *ob = open_ob(gp_test_tmpdir());
    ch.result[0] = GP_SEND_FAIL; /* permanent: dead at once */
    for (int i = 1; i < 32; i++)
        ch.result[i] = GP_SEND_RETRY;
    enqueue(ob, "hook", "a1");
    size_t sent;
    gp_outbox_run_due(ob, fake_now, &sent);
    struct gp_buf b;
    list(ob, "dead", &b);
    CHECK_CONTAINS(b.data, "\"last_status\":404");
    gp_buf_free(&b);
    /* past retry_max_age (1m): dead */
    enqueue(ob, "hook", "a2");
    int rounds = 0;
    for (; rounds < 30; rounds++) {
        gp_outbox_run_due(ob, fake_now, &sent);
        if (!sent)
            fake_now += 1000;
        struct gp_outbox_stats s;
        gp_outbox_stats(ob, &s);
        if (s.dead == 2)
            break;
        fake_now += 8000;
    }
    struct gp_outbox_stats s;
    gp_outbox_stats(ob, &s);
    CHECK_INT(s.dead, 2);
    CHECK_INT(s.queued, 0);
    CHECK(fake_now - 1000000 <= 60000 + 8000 * 2);
    gp_buf_init(&b, 0);
    struct gp_metric_text_sink t;
    gp_metric_text_sink_init(&t, &b);
    gp_outbox_walk_metrics(ob, &t.base);
    CHECK_CONTAINS(b.data, "gpulse_server_notifications_dead 2\n");
    gp_buf_free(&b);
    gp_outbox_close(ob);
    gp_notify_config_free(&cfg);
}

static void test_restart_resumes_once(void)
{
    fake_now = 1000000;
    const char *dir = gp_test_tmpdir();
    struct gp_outbox *ob = open_ob(dir);
    enqueue(ob, "hook", "a1");
    enqueue(ob, "hook", "a2");
    enqueue(ob, "s", "a3"); /* no slack channel in this table: stays queued */
    gp_outbox_close(ob);
    gp_notify_config_free(&cfg);
    ob = open_ob(dir);
    size_t sent;
    gp_outbox_run_due(ob, fake_now, &sent);
    CHECK_INT(ch.calls, 2);
    gp_outbox_close(ob);
    gp_notify_config_free(&cfg);
    ob = open_ob(dir);
    gp_outbox_run_due(ob, fake_now + 3600000, &sent);
    CHECK_INT(ch.calls, 2); /* no duplicate after a second restart */
    struct gp_outbox_stats s;
    gp_outbox_stats(ob, &s);
    CHECK_INT(s.done, 2);
    CHECK_INT(s.queued, 1);
    struct gp_buf b;
    list(ob, "queued", &b);
    CHECK_CONTAINS(b.data, "no channel for slack receivers");
    gp_buf_free(&b);
    gp_outbox_close(ob);
    gp_notify_config_free(&cfg);
}

static void test_stop_waits_for_send(void)
{
    fake_now = 1000000;
    struct gp_outbox *ob = open_ob(gp_test_tmpdir());
    ch.sleep_ms = 300;
    CHECK_INT(gp_outbox_start(ob), GP_OK);
    enqueue(ob, "hook", "a1");
    for (int i = 0; i < 200 && !__atomic_load_n(&ch.in_send, __ATOMIC_SEQ_CST); i++)
        usleep(5000);
    CHECK(__atomic_load_n(&ch.in_send, __ATOMIC_SEQ_CST));
    gp_outbox_close(ob); /* returns after the send finished and was written */
    CHECK_INT(ch.in_send, 0);
    CHECK_INT(ch.calls, 1);
    gp_notify_config_free(&cfg);
    ch.sleep_ms = 0;
    ob = open_ob(gp_test_tmpdir());
    struct gp_outbox_stats s;
    gp_outbox_stats(ob, &s);
    CHECK_INT(s.done, 1);
    CHECK_INT(s.queued, 0);
    gp_outbox_close(ob);
    gp_notify_config_free(&cfg);
}

const struct gp_test gp_tests_notify_outbox[] = {
    {"done", test_done},
    {"retry_backoff_and_retry_after", test_retry_backoff_and_retry_after},
    {"dead", test_dead},
    {"restart_resumes_once", test_restart_resumes_once},
    {"stop_waits_for_send", test_stop_waits_for_send},
    {0},
};
