/* test_notify_config.c - the notify: section (notify/config.h), redaction
 * (gp_notify_redact) and notices as JSON (notify/notice.h). */
#include "test.h"

#include "lib/err.h"
#include "notify/config.h"
#include "notify/notice.h"

#include <stdio.h>
#include <stdlib.h>

static int parse(const char *y, struct gp_notify_config *c, char *err, size_t errlen)
{
    gp_notify_config_init(c);
    return gp_notify_config_parse(y, strlen(y), c, err, errlen);
}

static void test_full_example(void)
{
    char dir[512], y[4096], err[512];
    snprintf(dir, sizeof dir, "%s", gp_test_tmpdir());
    gp_test_write_file(dir, "slack.url", "https://hooks.slack.com/services/T0/B0/s3cr3tpath\n");
    gp_test_write_file(dir, "smtp.pass", "pa ss/wörd\r\n");
    setenv("GP_TEST_AM_TOKEN", "tok-123", 1);
    snprintf(y, sizeof y,
             "listen: :9402\n"
             "notify:\n"
             "  external_url: http://gpulse.example:9402\n"
             "  retry_max_backoff: 2m\n"
             "  receivers:\n"
             "    - name: team-slack\n"
             "      type: slack\n"
             "      url_file: %s/slack.url\n"
             "      title: \"{status} on {group}\"\n"
             "    - name: oncall-mail\n"
             "      type: email\n"
             "      smtp: smtp://mail.example:587\n"
             "      username: gpulse\n"
             "      password_file: %s/smtp.pass\n"
             "      from: gpulse@example.com\n"
             "      to: [oncall@example.com, ml@example.com]\n"
             "    - name: am\n"
             "      type: alertmanager\n"
             "      url: http://127.0.0.1:9093\n"
             "      bearer_token_env: GP_TEST_AM_TOKEN\n"
             "  routes:\n"
             "    - receiver: oncall-mail\n"
             "      match: {severity: critical, job: bert}\n"
             "      group_by: [node, gpu]\n"
             "      group_wait: 10s\n"
             "      continue: true\n"
             "    - receiver: team-slack\n",
             dir, dir);
    struct gp_notify_config c;
    CHECK_INT(parse(y, &c, err, sizeof err), GP_OK);
    CHECK(c.present);
    CHECK_INT(c.nrecv, 3);
    CHECK_STR(c.recv[0].url, "https://hooks.slack.com/services/T0/B0/s3cr3tpath");
    CHECK_STR(c.recv[0].subject_template, "{status} on {group}");
    CHECK_STR(c.recv[1].password, "pa ss/wörd");
    CHECK_STR(c.recv[1].smtp_tls, "starttls");
    CHECK_INT(c.recv[1].nto, 2);
    CHECK_STR(c.recv[2].bearer_token, "tok-123");
    CHECK_INT(c.retry_max_backoff_ms, 120000);
    CHECK_INT(c.retry_max_age_ms, 24LL * 3600 * 1000);
    CHECK_INT(c.nroutes, 2);
    CHECK_INT(c.routes[0].recv, 1);
    CHECK(c.routes[0].has_match[GP_NL_SEVERITY] && !c.routes[0].has_match[GP_NL_KIND]);
    CHECK_STR(c.routes[0].match[GP_NL_JOB], "bert");
    CHECK_INT(c.routes[0].ngroup_by, 2);
    CHECK_INT(c.routes[0].group_by[1], GP_NL_GPU);
    CHECK_INT(c.routes[0].group_wait_ms, 10000);
    CHECK(c.routes[0].cont);
    CHECK_INT(c.routes[1].ngroup_by, 1);
    CHECK_INT(c.routes[1].group_by[0], GP_NL_JOB);
    CHECK_INT(c.routes[1].group_interval_ms, 300000);
    CHECK_INT(c.routes[1].repeat_interval_ms, 4 * 3600000LL);

    /* every secret, as written and URL-encoded, is redacted */
    char out[512];
    gp_notify_redact(c.recv, c.nrecv,
                     "post https://hooks.slack.com/services/T0/B0/s3cr3tpath failed; auth pa ss/wörd;"
                     " q=https%3A%2F%2Fhooks.slack.com%2Fservices%2FT0%2FB0%2Fs3cr3tpath pa%20ss%2fw%c3%b6rd"
                     " Bearer tok-123",
                     out, sizeof out);
    CHECK(!strstr(out, "s3cr3t") && !strstr(out, "tok-123") && !strstr(out, "ss/w") &&
          !strstr(out, "ss%2f"));
    CHECK_STR(out, "post [redacted] failed; auth [redacted]; q=[redacted] [redacted] Bearer [redacted]");
    /* bounded: a tiny buffer is NUL-terminated and never half a marker */
    gp_notify_redact(c.recv, c.nrecv, "x tok-123", out, 6);
    CHECK_STR(out, "x ");
    gp_notify_config_free(&c);
    unsetenv("GP_TEST_AM_TOKEN");
}

static void test_absent_section(void)
{
    struct gp_notify_config c;
    char err[256];
    CHECK_INT(parse("listen: :1\nrules: []\n", &c, err, sizeof err), GP_OK);
    CHECK(!c.present && c.nrecv == 0 && c.nroutes == 0);
    gp_notify_config_free(&c);
}

static void expect_error(const char *y, const char *needle, const char *secret)
{
    struct gp_notify_config c;
    char err[512] = "";
    int rc = parse(y, &c, err, sizeof err);
    if (rc == GP_OK)
        gp_test_fail(__FILE__, __LINE__, "accepted: %s", y);
    if (!strstr(err, needle))
        gp_test_fail(__FILE__, __LINE__, "error \"%s\" lacks \"%s\"", err, needle);
    if (secret && strstr(err, secret))
        gp_test_fail(__FILE__, __LINE__, "error \"%s\" shows the secret", err);
    CHECK(c.recv == NULL && c.nrecv == 0);
}

static void test_malformed(void)
{
    setenv("GP_TEST_SET", "https://x.example/abc", 1);
    unsetenv("GP_TEST_UNSET");
    const char *R = "notify:\n  receivers:\n";
    char y[1024];
#define BAD(body, needle, secret)                      \
    do {                                               \
        snprintf(y, sizeof y, "%s%s", R, body);        \
        expect_error(y, needle, secret);               \
    } while (0)
    expect_error("notify: [1, 2]\n", "line 1: 'notify' must be a mapping", NULL);
    expect_error("notify:\n  bogus: 1\n", "line 2: unknown key 'notify.bogus'", NULL);
    expect_error("notify:\n  retry_max_age: soon\n", "line 2: 'retry_max_age'", NULL);
    expect_error("notify: {receivers: [\n", "line", NULL);
    BAD("    - name: a\n      type: pager\n      url: http://x\n", "line 4: 'type': 'pager'", NULL);
    BAD("    - name: a\n      type: slack\n", "needs 'url', 'url_file' or 'url_env'", NULL);
    BAD("    - name: a\n      type: webhook\n      url: http://x\n      title: '{status}'\n",
        "'title' is for slack and email", NULL);
    BAD("    - name: a\n      type: slack\n      url: ftp://sekrit\n",
        "must start with http:// or https://", "sekrit");
    BAD("    - name: a\n      type: slack\n      url: http://sekrit\n      url_env: GP_TEST_SET\n",
        "give exactly one of 'url', 'url_file' and 'url_env'", "sekrit");
    BAD("    - name: a\n      type: webhook\n      url_env: GP_TEST_UNSET\n",
        "line 5: 'url_env': the environment variable 'GP_TEST_UNSET' is not set", NULL);
    BAD("    - name: a\n      type: webhook\n      url_file: /nonexistent/u\n",
        "line 5: 'url_file': cannot open '/nonexistent/u'", NULL);
    BAD("    - name: a\n      type: slack\n      url: http://x\n      colour: red\n",
        "line 6: unknown receiver key 'colour'", NULL);
    BAD("    - name: a\n      type: email\n      smtp: smtp://m:25\n      from: a@b\n",
        "email receiver 'a' needs 'smtp', 'from' and 'to'", NULL);
    BAD("    - name: a\n      type: email\n      smtp: smtp://m:25\n      from: a@b\n      to: c@d\n"
        "      tls: sometimes\n",
        "'tls': 'sometimes'", NULL);
    BAD("    - name: a\n      type: email\n      smtp: smtps://m:465\n      tls: starttls\n"
        "      from: a@b\n      to: c@d\n",
        "use smtps:// with tls: implicit", NULL);
    BAD("    - name: a\n      type: email\n      smtp: smtp://m:25\n      from: a@b\n      to: c@d\n"
        "      password: hunter2\n",
        "a password needs a 'username'", "hunter2");
    BAD("    - name: a\n      type: slack\n      url: http://x\n    - name: a\n      type: slack\n"
        "      url: http://y\n",
        "receiver name 'a' is used twice", NULL);
    BAD("    - type: slack\n      url: http://x\n", "needs a 'name'", NULL);
    BAD("    - name: a\n      type: slack\n      url: http://x\n  routes:\n    - receiver: b\n",
        "line 7: route: no receiver named 'b'", NULL);
    BAD("    - name: a\n      type: slack\n      url: http://x\n  routes:\n    - receiver: a\n"
        "      match: {colour: red}\n",
        "line 8: 'match': 'colour' is not", NULL);
    BAD("    - name: a\n      type: slack\n      url: http://x\n  routes:\n    - receiver: a\n"
        "      group_by: [job, job]\n",
        "'group_by': 'job' is given twice", NULL);
    BAD("    - name: a\n      type: slack\n      url: http://x\n  routes:\n    - receiver: a\n"
        "      group_wait: -1s\n",
        "'group_wait'", NULL);
    BAD("    - name: a\n      type: slack\n      url: http://x\n  routes:\n    - receiver: a\n"
        "      continue: maybe\n",
        "'continue' must be true or false", NULL);
    BAD("    - name: a\n      type: slack\n      url: http://x\n  routes:\n    - match: {job: x}\n",
        "a route needs a 'receiver'", NULL);
#undef BAD
    unsetenv("GP_TEST_SET");
}

static void test_secret_file_rules(void)
{
    char dir[512], y[1024], err[512];
    snprintf(dir, sizeof dir, "%s", gp_test_tmpdir());
    gp_test_write_file(dir, "empty", "\n");
    gp_test_write_file(dir, "two", "http://a/1\nhttp://a/2\n");
    struct gp_notify_config c;
    snprintf(y, sizeof y, "notify:\n  receivers:\n    - {name: a, type: slack, url_file: %s/empty}\n", dir);
    CHECK(parse(y, &c, err, sizeof err) == GP_ECONFIG);
    CHECK_CONTAINS(err, "is empty");
    snprintf(y, sizeof y, "notify:\n  receivers:\n    - {name: a, type: slack, url_file: %s/two}\n", dir);
    CHECK(parse(y, &c, err, sizeof err) == GP_ECONFIG);
    CHECK_CONTAINS(err, "must hold one line");
    CHECK(!strstr(err, "http://a/1"));
}

static void test_notice_round_trip(void)
{
    struct gp_notice_alert al[2] = {
        {.id = "00aa", .kind = "oom_risk", .severity = "critical", .status = "firing", .node = "n1",
         .gpu = "0", .job = "bert", .rank = "3", .summary = "OOM in \"10\" min", .evidence = "e\n",
         .runbook = "r", .value = 0.5, .starts_ms = 1000, .ends_ms = 0},
        {.id = "00bb", .kind = "k", .severity = "info", .status = "resolved", .node = "", .gpu = "",
         .job = "", .rank = "", .summary = "", .evidence = "", .runbook = "", .value = NAN,
         .starts_ms = 5, .ends_ms = 9},
    };
    struct gp_notice n = {.receiver = "r", .group_key = "{job=\"bert\"}", .status = "firing",
                          .group_labels = {{"job", "bert"}}, .alerts = al, .nalerts = 2,
                          .external_url = "http://x", .test = true};
    char *j;
    CHECK_INT(gp_notice_to_json(&n, &j), GP_OK);
    struct gp_notice_doc d;
    char err[256];
    CHECK_INT(gp_notice_from_json(j, strlen(j), &d, err, sizeof err), GP_OK);
    CHECK_STR(d.n.group_key, "{job=\"bert\"}");
    CHECK_STR(d.n.group_labels[0][1], "bert");
    CHECK(d.n.group_labels[1][0] == NULL);
    CHECK(d.n.test);
    CHECK_INT(d.n.nalerts, 2);
    CHECK_STR(d.n.alerts[0].summary, "OOM in \"10\" min");
    CHECK_DBL(d.n.alerts[0].value, 0.5, 0);
    CHECK(isnan(d.n.alerts[1].value));
    CHECK_INT(d.n.alerts[1].ends_ms, 9);
    char *j2;
    CHECK_INT(gp_notice_to_json(&d.n, &j2), GP_OK);
    CHECK_STR(j2, j);
    free(j);
    free(j2);
    gp_notice_doc_free(&d);
    const char *bad[] = {"[]", "{\"alerts\":{}}", "{\"receiver\":1}", "{\"alerts\":[1]}",
                         "{\"alerts\":[{\"value\":\"x\"}]}", "{\"group_labels\":[[\"a\"]]}", "{"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(gp_notice_from_json(bad[i], strlen(bad[i]), &d, err, sizeof err) == GP_EPARSE);
        gp_notice_doc_free(&d);
    }
    CHECK_INT(gp_notice_from_json("{}", 2, &d, err, sizeof err), GP_OK);
    CHECK_STR(d.n.receiver, "");
    gp_notice_doc_free(&d);
}

const struct gp_test gp_tests_notify_config[] = {
    {"full_example", test_full_example},
    {"absent_section", test_absent_section},
    {"malformed", test_malformed},
    {"secret_file_rules", test_secret_file_rules},
    {"notice_round_trip", test_notice_round_trip},
    {0},
};
