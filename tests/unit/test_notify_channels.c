/*
 * test_notify_channels.c - the HTTP channels' renderings (Slack, webhook
 * payload v4, Alertmanager v2 postable alerts) checked field by field on
 * a two-alert notice (one firing, one resolved), with hostile strings,
 * Slack's limits and cuts on UTF-8 boundaries; and the HTTP helper's
 * classification and redaction. No network: the sends are exercised by
 * tests/integration/test_notify_channels.sh.
 */
#include "test.h"

#include "notify/channel.h"
#include "notify/http_post.h"
#include "notify/notify.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* 2024-05-01T12:00:00.250Z and 12:10:00.000Z */
#define T0 1714564800250LL
#define T1 1714565400000LL

static struct gp_notice_alert two[2] = {
    {.id = "a1b2c3d4e5f60718", .kind = "oom_forecast", .severity = "critical", .status = "firing",
     .node = "node-1", .gpu = "0", .job = "bert-1", .rank = "3",
     .summary = "GPU 0 will run out of memory in 10 minutes", .evidence = "used 74.1 GiB of 80, +1.2 GiB/min",
     .runbook = "https://runbooks.example/oom", .value = 600, .starts_ms = T0, .ends_ms = 0},
    {.id = "ffee000011112222", .kind = "straggler", .severity = "warning", .status = "resolved",
     .node = "node-2", .gpu = "", .job = "bert-1", .rank = "", .summary = "rank 7 is 30% slower",
     .evidence = "", .runbook = "", .value = 1.3, .starts_ms = T0, .ends_ms = T1},
};

static struct gp_notice notice(const struct gp_notice_alert *a, size_t n)
{
    struct gp_notice no = {
        .id = "n-42", .receiver = "hooks", .group_key = "{job=\"bert-1\"}", .status = "firing",
        .group_labels = {{"job", "bert-1"}, {NULL, NULL}}, .alerts = a, .nalerts = n,
        .external_url = "http://gpulse.example:9402/", .test = false,
    };
    return no;
}

static json_t *load(char *text)
{
    CHECK(text != NULL);
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    if (!j)
        gp_test_fail(__FILE__, __LINE__, "not JSON: %s: %.200s", e.text, text);
    free(text);
    return j;
}

static const char *sget(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static void check_keys(const json_t *o, const char *const *keys, size_t n)
{
    CHECK_INT(json_object_size(o), n);
    for (size_t i = 0; i < n; i++)
        if (!json_object_get(o, keys[i]))
            gp_test_fail(__FILE__, __LINE__, "missing key \"%s\"", keys[i]);
}

static void test_webhook_two_alerts(void)
{
    struct gp_notice n = notice(two, 2);
    json_t *j = load(gp_webhook_render(&n));
    const char *top[] = {"receiver", "status", "alerts", "groupLabels", "commonLabels", "commonAnnotations",
                         "externalURL", "version", "groupKey", "truncatedAlerts"};
    check_keys(j, top, 10);
    CHECK_STR(sget(j, "version"), "4");
    CHECK_STR(sget(j, "receiver"), "hooks");
    CHECK_STR(sget(j, "status"), "firing");
    CHECK_STR(sget(j, "groupKey"), "{job=\"bert-1\"}");
    CHECK_STR(sget(j, "externalURL"), "http://gpulse.example:9402/");
    CHECK_INT(json_integer_value(json_object_get(j, "truncatedAlerts")), 0);
    CHECK(json_is_integer(json_object_get(j, "truncatedAlerts")));
    const json_t *gl = json_object_get(j, "groupLabels");
    CHECK_INT(json_object_size(gl), 1);
    CHECK_STR(sget(gl, "job"), "bert-1");
    const json_t *cl = json_object_get(j, "commonLabels");
    CHECK_INT(json_object_size(cl), 1); /* only job is the same in both */
    CHECK_STR(sget(cl, "job"), "bert-1");
    CHECK_INT(json_object_size(json_object_get(j, "commonAnnotations")), 0);
    const json_t *as = json_object_get(j, "alerts");
    CHECK_INT(json_array_size(as), 2);
    const json_t *a = json_array_get(as, 0);
    const char *ak[] = {"status", "labels", "annotations", "startsAt", "endsAt", "generatorURL", "fingerprint"};
    check_keys(a, ak, 7);
    CHECK_STR(sget(a, "status"), "firing");
    CHECK_STR(sget(a, "startsAt"), "2024-05-01T12:00:00.250Z");
    CHECK_STR(sget(a, "endsAt"), "0001-01-01T00:00:00Z");
    CHECK_STR(sget(a, "generatorURL"), "http://gpulse.example:9402/api/v1/alerts/a1b2c3d4e5f60718");
    CHECK_STR(sget(a, "fingerprint"), "a1b2c3d4e5f60718");
    const json_t *l = json_object_get(a, "labels");
    CHECK_INT(json_object_size(l), 6);
    CHECK_STR(sget(l, "alertname"), "oom_forecast");
    CHECK_STR(sget(l, "severity"), "critical");
    CHECK_STR(sget(l, "job"), "bert-1");
    CHECK_STR(sget(l, "rank"), "3");
    CHECK_STR(sget(l, "node"), "node-1");
    CHECK_STR(sget(l, "gpu"), "0");
    const json_t *an = json_object_get(a, "annotations");
    CHECK_INT(json_object_size(an), 3);
    CHECK_STR(sget(an, "summary"), "GPU 0 will run out of memory in 10 minutes");
    CHECK_STR(sget(an, "description"), "used 74.1 GiB of 80, +1.2 GiB/min");
    CHECK_STR(sget(an, "runbook_url"), "https://runbooks.example/oom");
    const json_t *b = json_array_get(as, 1);
    CHECK_STR(sget(b, "status"), "resolved");
    CHECK_STR(sget(b, "endsAt"), "2024-05-01T12:10:00.000Z");
    l = json_object_get(b, "labels");
    CHECK_INT(json_object_size(l), 4); /* no rank, no gpu: only non-empty labels */
    CHECK(!json_object_get(l, "gpu") && !json_object_get(l, "rank"));
    an = json_object_get(b, "annotations");
    CHECK_INT(json_object_size(an), 1);
    json_decref(j);
}

static void test_webhook_truncates(void)
{
    size_t n = GP_WEBHOOK_MAX_ALERTS + 7;
    struct gp_notice_alert *a = calloc(n, sizeof *a);
    CHECK(a);
    for (size_t i = 0; i < n; i++)
        a[i] = two[0];
    struct gp_notice no = notice(a, n);
    no.external_url = "";
    json_t *j = load(gp_webhook_render(&no));
    CHECK_INT(json_array_size(json_object_get(j, "alerts")), GP_WEBHOOK_MAX_ALERTS);
    CHECK_INT(json_integer_value(json_object_get(j, "truncatedAlerts")), 7);
    CHECK_STR(sget(json_array_get(json_object_get(j, "alerts"), 0), "generatorURL"), "");
    CHECK_INT(json_object_size(json_object_get(j, "commonLabels")), 6);
    CHECK_INT(json_object_size(json_object_get(j, "commonAnnotations")), 3);
    json_decref(j);
    free(a);
}

static void test_alertmanager_two_alerts(void)
{
    struct gp_notice n = notice(two, 2);
    json_t *j = load(gp_alertmanager_render(&n));
    CHECK(json_is_array(j));
    CHECK_INT(json_array_size(j), 2);
    const json_t *a = json_array_get(j, 0);
    const char *fk[] = {"labels", "annotations", "startsAt", "generatorURL"}; /* no endsAt while firing */
    check_keys(a, fk, 4);
    CHECK_STR(sget(a, "startsAt"), "2024-05-01T12:00:00.250Z");
    CHECK_STR(sget(a, "generatorURL"), "http://gpulse.example:9402/api/v1/alerts/a1b2c3d4e5f60718");
    CHECK_STR(sget(json_object_get(a, "labels"), "alertname"), "oom_forecast");
    CHECK_INT(json_object_size(json_object_get(a, "labels")), 6);
    CHECK_STR(sget(json_object_get(a, "annotations"), "runbook_url"), "https://runbooks.example/oom");
    const json_t *b = json_array_get(j, 1);
    const char *rk[] = {"labels", "annotations", "startsAt", "endsAt", "generatorURL"};
    check_keys(b, rk, 5);
    CHECK_STR(sget(b, "endsAt"), "2024-05-01T12:10:00.000Z");
    CHECK_STR(sget(json_object_get(b, "labels"), "alertname"), "straggler");
    CHECK_STR(sget(json_object_get(b, "labels"), "severity"), "warning");
    json_decref(j);
    /* No external URL: no generatorURL (Alertmanager validates it as a URI). */
    n.external_url = "";
    j = load(gp_alertmanager_render(&n));
    CHECK(!json_object_get(json_array_get(j, 0), "generatorURL"));
    json_decref(j);
}

static const json_t *block_of(const json_t *blocks, size_t i, const char *type)
{
    const json_t *b = json_array_get(blocks, i);
    CHECK(b != NULL);
    CHECK_STR(sget(b, "type"), type);
    return b;
}

static void test_slack_two_alerts(void)
{
    struct gp_notice n = notice(two, 2);
    json_t *j = load(gp_slack_render(&n, ""));
    CHECK_INT(json_object_size(j), 2);
    CHECK_STR(sget(j, "text"), "[FIRING] 2 alerts (1 firing, 1 resolved)\n"
                               "- GPU 0 will run out of memory in 10 minutes\n- rank 7 is 30% slower");
    const json_t *bl = json_object_get(j, "blocks");
    /* header, section + context per alert */
    CHECK_INT(json_array_size(bl), 5);
    const json_t *h = json_object_get(block_of(bl, 0, "header"), "text");
    CHECK_STR(sget(h, "type"), "plain_text");
    CHECK_STR(sget(h, "text"), "[FIRING] 1 firing, 1 resolved: job=bert-1");
    const json_t *s = json_object_get(block_of(bl, 1, "section"), "text");
    CHECK_STR(sget(s, "type"), "mrkdwn");
    CHECK_STR(sget(s, "text"), "*[FIRING] oom_forecast*\nGPU 0 will run out of memory in 10 minutes\n"
                               "*Runbook:* https://runbooks.example/oom\n"
                               "<http://gpulse.example:9402/jobs/bert-1|Open job bert-1>");
    const json_t *ctx = json_object_get(block_of(bl, 2, "context"), "elements");
    CHECK_INT(json_array_size(ctx), 2);
    CHECK_STR(sget(json_array_get(ctx, 0), "type"), "mrkdwn");
    CHECK_STR(sget(json_array_get(ctx, 0), "text"),
              "job: *bert-1* · rank: *3* · node: *node-1* · GPU: *0* · severity: *critical*");
    CHECK_STR(sget(json_array_get(ctx, 1), "text"), "used 74.1 GiB of 80, +1.2 GiB/min");
    s = json_object_get(block_of(bl, 3, "section"), "text");
    CHECK_STR(sget(s, "text"), "*[RESOLVED] straggler*\nrank 7 is 30% slower\n"
                               "<http://gpulse.example:9402/jobs/bert-1|Open job bert-1>");
    ctx = json_object_get(block_of(bl, 4, "context"), "elements");
    CHECK_INT(json_array_size(ctx), 1);
    CHECK_STR(sget(json_array_get(ctx, 0), "text"), "job: *bert-1* · node: *node-2* · severity: *warning*");
    json_decref(j);
    /* A test message says so; without external_url there is no link. */
    n.test = true;
    n.external_url = "";
    j = load(gp_slack_render(&n, ""));
    bl = json_object_get(j, "blocks");
    CHECK_STR(sget(json_object_get(json_array_get(bl, 0), "text"), "text"),
              "[TEST] [FIRING] 1 firing, 1 resolved: job=bert-1");
    CHECK(!strstr(sget(json_object_get(json_array_get(bl, 1), "text"), "text"), "Open job"));
    json_decref(j);
}

static void test_slack_many_alerts(void)
{
    struct gp_notice_alert a[25];
    for (size_t i = 0; i < 25; i++)
        a[i] = two[i % 2];
    struct gp_notice n = notice(a, 25);
    json_t *j = load(gp_slack_render(&n, ""));
    const json_t *bl = json_object_get(j, "blocks");
    CHECK_INT(json_array_size(bl), 1 + 2 * GP_SLACK_MAX_ALERTS + 1);
    CHECK(json_array_size(bl) <= 50);
    const json_t *last = block_of(bl, json_array_size(bl) - 1, "section");
    CHECK_STR(sget(json_object_get(last, "text"), "text"), "_and 5 more_");
    json_decref(j);
}

static char hostile_summary[10 * 1024 + 64];

static void test_hostile_strings(void)
{
    /* quotes, backslashes, newlines, tabs, markup, non-ASCII, an invalid byte, 10 kB */
    const char *seed = "\"q\" \\ \n\t<b>&amp; \xc3\xa9\xe2\x82\xac\xf0\x9f\x94\xa5 \xff end ";
    size_t k = 0, sl = strlen(seed);
    while (k + sl < 10 * 1024) {
        memcpy(hostile_summary + k, seed, sl);
        k += sl;
    }
    hostile_summary[k] = '\0';
    struct gp_notice_alert a = two[0];
    a.summary = hostile_summary;
    a.kind = "k\"ind<\n>";
    a.job = "job \"x\"/|>&";
    a.evidence = "line1\nline2 <@U123> \x01";
    struct gp_notice n = notice(&a, 1);
    n.group_key = "{job=\"a\\\"b\"}";
    /* The webhook and Alertmanager carry the text exactly, but for the invalid byte. */
    json_t *j = load(gp_webhook_render(&n));
    const char *s = sget(json_object_get(json_array_get(json_object_get(j, "alerts"), 0), "annotations"),
                         "summary");
    CHECK(s != NULL);
    CHECK(strstr(s, "\"q\" \\ \n\t<b>&amp; \xc3\xa9\xe2\x82\xac\xf0\x9f\x94\xa5 \xef\xbf\xbd end") != NULL);
    CHECK(!strchr(s, '\xff'));
    CHECK_STR(sget(json_object_get(json_array_get(json_object_get(j, "alerts"), 0), "labels"), "alertname"),
              "k\"ind<\n>");
    CHECK_STR(sget(j, "groupKey"), "{job=\"a\\\"b\"}");
    json_decref(j);
    j = load(gp_alertmanager_render(&n));
    CHECK_STR(sget(json_object_get(json_array_get(j, 0), "labels"), "job"), "job \"x\"/|>&");
    CHECK_STR(sget(json_object_get(json_array_get(j, 0), "annotations"), "description"),
              "line1\nline2 <@U123> \x01");
    json_decref(j);
    /* Slack: mrkdwn escaped, within limits, cut cleanly. */
    j = load(gp_slack_render(&n, ""));
    const json_t *bl = json_object_get(j, "blocks");
    const char *sec = sget(json_object_get(json_array_get(bl, 1), "text"), "text");
    CHECK(sec && strlen(sec) <= GP_SLACK_SECTION_MAX);
    CHECK_CONTAINS(sec, "*[FIRING] k\"ind&lt;\n&gt;*\n\"q\" \\ \n\t&lt;b&gt;&amp;amp; ");
    CHECK(!strchr(sec, '<')); /* escaped, and cut before the link */
    CHECK(strlen(sec) >= 3 && strcmp(sec + strlen(sec) - 3, "\xe2\x80\xa6") == 0);
    const char *ev = sget(json_array_get(json_object_get(json_array_get(bl, 2), "elements"), 1), "text");
    CHECK_STR(ev, "line1\nline2 &lt;@U123&gt; \x01");
    const char *text = sget(j, "text");
    CHECK(text && strlen(text) <= GP_SLACK_TEXT_MAX);
    json_decref(j);
}

/* Checks that s is valid UTF-8 by decoding it. */
static void check_utf8(const char *s)
{
    while (*s) {
        uint32_t cp;
        size_t n = gp_chan_utf8_next(s, &cp);
        CHECK(!(cp == 0xfffd && n == 1));
        s += n;
    }
}

static void test_slack_cuts_on_utf8_boundaries(void)
{
    static char sum[8192];
    const char *units[] = {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x94\xa5", "&"};
    for (size_t u = 0; u < 4; u++)
        for (size_t pad = 0; pad < 4; pad++) {
            size_t k = 0, ul = strlen(units[u]);
            for (size_t i = 0; i < pad; i++)
                sum[k++] = 'x';
            while (k + ul < 4000) {
                memcpy(sum + k, units[u], ul);
                k += ul;
            }
            sum[k] = '\0';
            struct gp_notice_alert a = two[1];
            a.summary = sum;
            struct gp_notice n = notice(&a, 1);
            n.group_labels[0][1] = sum; /* the header cut too */
            json_t *j = load(gp_slack_render(&n, ""));
            const json_t *bl = json_object_get(j, "blocks");
            const char *h = sget(json_object_get(json_array_get(bl, 0), "text"), "text");
            const char *sec = sget(json_object_get(json_array_get(bl, 1), "text"), "text");
            const char *txt = sget(j, "text");
            CHECK(h && sec && txt);
            CHECK(strlen(h) <= GP_SLACK_HEADER_MAX && strlen(h) > GP_SLACK_HEADER_MAX - 8);
            CHECK(strlen(sec) <= GP_SLACK_SECTION_MAX && strlen(sec) > GP_SLACK_SECTION_MAX - 8);
            CHECK(strlen(txt) <= GP_SLACK_TEXT_MAX);
            check_utf8(h);
            check_utf8(sec);
            check_utf8(txt);
            CHECK(strcmp(sec + strlen(sec) - 3, "\xe2\x80\xa6") == 0);
            CHECK(strcmp(h + strlen(h) - 3, "\xe2\x80\xa6") == 0);
            if (u == 3) { /* never half an escape before the ellipsis */
                const char *e = sec + strlen(sec) - 3;
                CHECK(e - sec >= 5 && strncmp(e - 5, "&amp;", 5) == 0);
            }
            json_decref(j);
        }
}

static void test_rfc3339_and_links(void)
{
    char t[40], l[256];
    gp_chan_rfc3339(0, t, sizeof t);
    CHECK_STR(t, "1970-01-01T00:00:00.000Z");
    gp_chan_rfc3339(T0, t, sizeof t);
    CHECK_STR(t, "2024-05-01T12:00:00.250Z");
    gp_chan_link("http://h:1//", "/jobs/", "a b/c", l, sizeof l);
    CHECK_STR(l, "http://h:1/jobs/a%20b%2Fc");
    gp_chan_link("", "/jobs/", "x", l, sizeof l);
    CHECK_STR(l, "");
    gp_chan_link("http://h", "/jobs/", "", l, sizeof l);
    CHECK_STR(l, "");
    gp_chan_link("http://a-rather-long-host.example", "/jobs/", "x", l, 16);
    CHECK_STR(l, "");
}

static void test_http_classify_and_redact(void)
{
    CHECK_INT(gp_http_post_classify(200), GP_SEND_OK);
    CHECK_INT(gp_http_post_classify(204), GP_SEND_OK);
    CHECK_INT(gp_http_post_classify(429), GP_SEND_RETRY);
    CHECK_INT(gp_http_post_classify(500), GP_SEND_RETRY);
    CHECK_INT(gp_http_post_classify(503), GP_SEND_RETRY);
    CHECK_INT(gp_http_post_classify(400), GP_SEND_FAIL);
    CHECK_INT(gp_http_post_classify(404), GP_SEND_FAIL);
    CHECK_INT(gp_http_post_classify(301), GP_SEND_FAIL);
    const char *sec[] = {"https://hooks.slack.com/services/T0/B0/XYZ", "/services/T0/B0/XYZ", NULL, ""};
    char out[128];
    gp_http_post_redact("posting https://hooks.slack.com/services/T0/B0/XYZ failed; path /services/T0/B0/XYZ",
                        sec, 4, out, sizeof out);
    CHECK_STR(out, "posting [redacted] failed; path [redacted]");
    gp_http_post_redact("abcdef", sec, 4, out, 4);
    CHECK_STR(out, "abc");
}

static void test_http_detail_has_no_secret(void)
{
    /* A refused connection: libcurl's text names the host, never the path or the token. */
    struct gp_http_post p = {.url = "http://127.0.0.1:1/services/T000/B000/SECRETTOKEN?k=QUERYSECRET",
                             .bearer = "BEARERSECRET", .notice_id = "n1", .body = "{}", .len = 2,
                             .timeout_ms = 2000};
    struct gp_send_outcome o;
    CHECK_INT(gp_http_post_send(&p, &o), 0);
    CHECK_INT(o.result, GP_SEND_RETRY);
    CHECK_INT(o.status, 0);
    CHECK(o.detail[0] != '\0');
    CHECK(!strstr(o.detail, "SECRETTOKEN") && !strstr(o.detail, "QUERYSECRET") && !strstr(o.detail, "BEARERSECRET"));
    /* A malformed URL is permanent, and its text is redacted too. */
    p.url = "htp://SECRETTOKEN";
    CHECK_INT(gp_http_post_send(&p, &o), 0);
    CHECK_INT(o.result, GP_SEND_FAIL);
    CHECK(!strstr(o.detail, "SECRETTOKEN"));
}

static void test_channel_table(void)
{
    CHECK(gp_channel_of(GP_RT_SLACK) == &gp_channel_slack);
    CHECK(gp_channel_of(GP_RT_WEBHOOK) == &gp_channel_webhook);
    CHECK(gp_channel_of(GP_RT_ALERTMANAGER) == &gp_channel_alertmanager);
    CHECK_INT(gp_channel_slack.type, GP_RT_SLACK);
    CHECK_INT(gp_channel_webhook.type, GP_RT_WEBHOOK);
    CHECK_INT(gp_channel_alertmanager.type, GP_RT_ALERTMANAGER);
    CHECK_STR(gp_receiver_type_names[GP_RT_SLACK], "slack");
    CHECK_STR(gp_receiver_type_names[GP_RT_EMAIL], "email");
    CHECK_STR(gp_receiver_type_names[GP_RT_WEBHOOK], "webhook");
    CHECK_STR(gp_receiver_type_names[GP_RT_ALERTMANAGER], "alertmanager");
}

/* A receiver's title template: the Slack header and the first line of
 * the plain-text fallback, with the placeholders filled in. */
static void test_slack_title_template(void)
{
    struct gp_notice n = notice(two, 2);
    json_t *j = load(gp_slack_render(&n, "{status}: {count} alerts <{receiver}>"));
    const json_t *h = block_of(json_object_get(j, "blocks"), 0, "header");
    CHECK_STR(sget(json_object_get(h, "text"), "text"), "FIRING: 2 alerts <hooks>");
    const char *text = sget(j, "text");
    if (strncmp(text, "FIRING: 2 alerts &lt;hooks&gt;\n- ", 33))
        gp_test_fail(__FILE__, __LINE__, "fallback text begins '%.60s'", text);
    json_decref(j);
}

const struct gp_test gp_tests_notify_channels[] = {
    {"slack_title_template", test_slack_title_template},
    {"webhook_two_alerts", test_webhook_two_alerts},
    {"webhook_truncates", test_webhook_truncates},
    {"alertmanager_two_alerts", test_alertmanager_two_alerts},
    {"slack_two_alerts", test_slack_two_alerts},
    {"slack_many_alerts", test_slack_many_alerts},
    {"hostile_strings", test_hostile_strings},
    {"slack_cuts_on_utf8_boundaries", test_slack_cuts_on_utf8_boundaries},
    {"rfc3339_and_links", test_rfc3339_and_links},
    {"http_classify_and_redact", test_http_classify_and_redact},
    {"http_detail_has_no_secret", test_http_detail_has_no_secret},
    {"channel_table", test_channel_table},
    {0},
};
