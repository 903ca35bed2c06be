/*
 * test_notify_email.c - the email message builder (src/notify/mime.c),
 * read back with the independent reader in tests/mime_check.h. The
 * sending side (libcurl, SMTP) is tested end to end in
 * tests/integration/test_notify_email.sh.
 */
#include "lib/buf.h"
#include "lib/err.h"
#include "mime_check.h"
#include "notify/mime.h"
#include "test.h"

#include <stdlib.h>

static const char *const TO2[] = {"oncall@example.com", "ml-team@example.com"};

static struct gp_notice_alert alert(const char *status, const char *kind, const char *summary)
{
    struct gp_notice_alert a = {
        .id = "fp1", .kind = kind, .severity = "critical", .status = status, .node = "n1", .gpu = "3",
        .job = "bert-1", .rank = "0", .summary = summary, .evidence = "free 1.2 GiB, falling 300 MiB/min",
        .runbook = "https://runbooks.example/oom", .value = 0.93, .starts_ms = 1709632800000,
        .ends_ms = 0,
    };
    return a;
}

static struct gp_notice notice(const struct gp_notice_alert *a, size_t n, const char *status)
{
    struct gp_notice nt = {
        .receiver = "oncall-mail", .group_key = "{job=\"bert-1\"}", .status = status,
        .group_labels = {{"job", "bert-1"}}, .alerts = a, .nalerts = n,
        .external_url = "http://gpulse.example:9402/",
    };
    return nt;
}

static struct gp_mime_opts opts(const char *tmpl)
{
    struct gp_mime_opts o = {
        .from = "gpulse@example.com", .to = TO2, .nto = 2, .subject_template = tmpl,
        .date_ms = 1709632800000, .msgid_token = "n-42", .msgid_host = "gpulse.host",
        .boundary_token = "abc123",
    };
    return o;
}

/* Builds, checks the invariants, returns the message (caller frees b, text, html). */
static void build_ok(const struct gp_notice *n, const struct gp_mime_opts *o, struct gp_buf *b,
                     struct gp_buf *text, struct gp_buf *html)
{
    char err[256] = "";
    gp_buf_init(b, GP_MIME_MAX_BYTES);
    gp_buf_init(text, 0);
    gp_buf_init(html, 0);
    int rc = gp_mime_build(n, o, b, err, sizeof err);
    if (rc != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "build: %s", err);
    const char *why = mc_check(b->data, b->len, text, html, NULL, 0);
    if (why)
        gp_test_fail(__FILE__, __LINE__, "invariant: %s", why);
}

static void free3(struct gp_buf *a, struct gp_buf *b, struct gp_buf *c)
{
    gp_buf_free(a);
    gp_buf_free(b);
    gp_buf_free(c);
}

static void test_headers(void)
{
    struct gp_notice_alert a[3] = {alert("firing", "oom_forecast", "OOM in 10 min"),
                                   alert("firing", "straggler", "rank 3 is slow"),
                                   alert("firing", "ecc", "ECC errors")};
    struct gp_notice n = notice(a, 3, "firing");
    struct gp_mime_opts o = opts(NULL);
    struct gp_buf b, t, h;
    build_ok(&n, &o, &b, &t, &h);
    char v[512];
    CHECK(mc_header(b.data, "Date", v, sizeof v));
    CHECK_STR(v, "Tue, 05 Mar 2024 10:00:00 +0000");
    CHECK(mc_header(b.data, "Message-ID", v, sizeof v));
    CHECK_STR(v, "<n-42@gpulse.host>");
    CHECK(mc_header(b.data, "From", v, sizeof v));
    CHECK_STR(v, "gpulse@example.com");
    CHECK(mc_header(b.data, "To", v, sizeof v));
    CHECK_STR(v, "oncall@example.com, ml-team@example.com");
    CHECK(mc_header(b.data, "MIME-Version", v, sizeof v));
    CHECK_STR(v, "1.0");
    CHECK(mc_header(b.data, "Content-Type", v, sizeof v));
    CHECK_STR(v, "multipart/alternative; boundary=\"=_gpulse_abc123\"");
    CHECK(mc_header(b.data, "Subject", v, sizeof v));
    char subj[512];
    CHECK(mc_decode_words(v, subj, sizeof subj));
    CHECK_STR(subj, "[gpulse] FIRING: 3 alerts for job bert-1");
    /* the header block is the first thing, Date first */
    CHECK(strncmp(b.data, "Date: ", 6) == 0);
    free3(&b, &t, &h);
}

static void test_subject_default_forms(void)
{
    char s[256];
    struct gp_notice_alert a[2] = {alert("resolved", "oom_forecast", "x"), alert("firing", "ecc", "y")};
    a[0].ends_ms = 1709633400000;
    struct gp_notice n = notice(a, 1, "resolved");
    gp_mime_subject(&n, NULL, s, sizeof s);
    CHECK_STR(s, "[gpulse] RESOLVED: 1 alert for job bert-1");
    n = notice(a, 2, "firing");
    gp_mime_subject(&n, "", s, sizeof s);
    CHECK_STR(s, "[gpulse] FIRING: 1 alert, 1 resolved for job bert-1");
    n.test = true;
    n.group_labels[0][0] = "node";
    n.group_labels[0][1] = "n1";
    n.group_labels[1][0] = "gpu";
    n.group_labels[1][1] = "3";
    gp_mime_subject(&n, NULL, s, sizeof s);
    CHECK_STR(s, "[gpulse] TEST FIRING: 1 alert, 1 resolved for node n1, gpu 3");
    gp_mime_subject(&n, "{status} x{count} {group} via {receiver} {other}", s, sizeof s);
    CHECK_STR(s, "FIRING x2 node n1, gpu 3 via oncall-mail {other}");
    /* a template cannot inject a header line */
    gp_mime_subject(&n, "a\r\nBcc: evil@example.com", s, sizeof s);
    CHECK(!strchr(s, '\r') && !strchr(s, '\n'));
}

static void test_subject_non_ascii_round_trips(void)
{
    /* long enough to fold several times; multi-byte characters at every offset */
    const char *tmpl = "[gpulse] Überlauf ✓ 日本語のジョブ bert-1 — мало памяти на GPU 3 🚀🚀🚀 "
                       "ééééééééééééééééééééééééééééééééééééééé fin";
    struct gp_notice_alert a[1] = {alert("firing", "oom", "s")};
    struct gp_notice n = notice(a, 1, "firing");
    struct gp_mime_opts o = opts(tmpl);
    struct gp_buf b, t, h;
    build_ok(&n, &o, &b, &t, &h);
    char v[2048], subj[1024];
    CHECK(mc_header(b.data, "Subject", v, sizeof v));
    CHECK(mc_decode_words(v, subj, sizeof subj)); /* also: no word splits a character */
    CHECK_STR(subj, tmpl);
    /* folded: several lines, each within 76 columns (mc_check), each an encoded word */
    const char *s = strstr(b.data, "Subject:");
    int lines = 1;
    for (const char *p = s; (p = strstr(p, "\r\n ")) && p < strstr(s, "\r\nMessage-ID"); p += 3)
        lines++;
    CHECK(lines >= 4);
    CHECK(strstr(s, "=?UTF-8?B?") == s + 9);
    free3(&b, &t, &h);
}

static void qp_round_trip(const char *in)
{
    struct gp_buf q, d, want;
    gp_buf_init(&q, 0);
    gp_buf_init(&d, 0);
    gp_buf_init(&want, 0);
    gp_mime_put_qp(&q, in, strlen(in));
    CHECK_INT(q.err, GP_OK);
    size_t col = 0;
    for (size_t i = 0; i < q.len; i++) {
        unsigned char c = (unsigned char)q.data[i];
        CHECK(c < 0x80);
        if (c == '\r') {
            CHECK(q.data[i + 1] == '\n');
            CHECK(col <= 76);
            if (col > 0) /* no white space before a line end */
                CHECK(q.data[i - 1] != ' ' && q.data[i - 1] != '\t');
            col = 0;
            i++;
        } else {
            CHECK(c != '\n');
            CHECK(!(col == 0 && c == '.'));
            col++;
        }
    }
    CHECK(col <= 76);
    CHECK(mc_qp_decode(q.data ? q.data : "", q.len, &d));
    for (const char *p = in; *p; p++) { /* the original with its line ends as CRLF */
        if (*p == '\r' && p[1] == '\n')
            continue;
        if (*p == '\n')
            gp_buf_putc(&want, '\r');
        gp_buf_putc(&want, *p);
    }
    CHECK_INT(d.len, want.len);
    CHECK(d.len == 0 || memcmp(d.data, want.data, d.len) == 0);
    gp_buf_free(&q);
    gp_buf_free(&d);
    gp_buf_free(&want);
}

static void test_quoted_printable(void)
{
    qp_round_trip("");
    qp_round_trip("plain");
    qp_round_trip("a=b==c trailing space \ntab\t\n.leading dot\n..two\nend  ");
    qp_round_trip("Grüße, 日本語, emoji 🚀, and a € sign\r\nCRLF line\n");
    char long_line[600];
    for (size_t i = 0; i < sizeof long_line - 1; i++)
        long_line[i] = "x= é.\t"[i % 6];
    long_line[sizeof long_line - 1] = '\0';
    qp_round_trip(long_line);
    /* exactly at the soft-break edge: 74, 75, 76, 77 characters and '=' at the end */
    for (int n = 70; n < 80; n++) {
        char s[90];
        memset(s, 'a', (size_t)n);
        s[n - 1] = '=';
        s[n] = '\0';
        qp_round_trip(s);
        s[n - 1] = ' ';
        qp_round_trip(s);
        s[n - 1] = '.';
        qp_round_trip(s);
    }
}

static void test_parts_carry_the_alerts(void)
{
    struct gp_notice_alert a[2] = {alert("firing", "oom_forecast", "OOM in 10 min on rank 0"),
                                   alert("resolved", "ecc", "ECC errors stopped")};
    a[1].ends_ms = 1709633400000;
    a[1].job = "bert 1/α";
    struct gp_notice n = notice(a, 2, "firing");
    struct gp_mime_opts o = opts(NULL);
    struct gp_buf b, t, h;
    build_ok(&n, &o, &b, &t, &h);
    CHECK_CONTAINS(t.data, "FIRING  critical  oom_forecast\r\n");
    CHECK_CONTAINS(t.data, "Summary:  OOM in 10 min on rank 0\r\n");
    CHECK_CONTAINS(t.data, "Labels:   job=bert-1 rank=0 node=n1 gpu=3\r\n");
    CHECK_CONTAINS(t.data, "Evidence: free 1.2 GiB, falling 300 MiB/min\r\n");
    CHECK_CONTAINS(t.data, "Runbook:  https://runbooks.example/oom\r\n");
    CHECK_CONTAINS(t.data, "Job:      http://gpulse.example:9402/jobs/bert-1\r\n");
    CHECK_CONTAINS(t.data, "Started:  2024-03-05 10:00:00 UTC\r\n");
    CHECK_CONTAINS(t.data, "RESOLVED  critical  ecc\r\n");
    CHECK_CONTAINS(t.data, "Resolved: 2024-03-05 10:10:00 UTC\r\n");
    CHECK_CONTAINS(t.data, "Job:      http://gpulse.example:9402/jobs/bert%201%2F%CE%B1\r\n");
    CHECK_CONTAINS(h.data, "<td>OOM in 10 min on rank 0</td>");
    CHECK_CONTAINS(h.data, "<a href=\"http://gpulse.example:9402/jobs/bert-1\">dashboard</a>");
    CHECK_CONTAINS(h.data, "<a href=\"https://runbooks.example/oom\">");
    CHECK_CONTAINS(h.data, "<th>Evidence</th>");
    /* with no external URL there are no links */
    n.external_url = "";
    struct gp_buf b2, t2, h2;
    build_ok(&n, &o, &b2, &t2, &h2);
    CHECK(!strstr(t2.data, "/jobs/"));
    CHECK(!strstr(h2.data, "dashboard"));
    free3(&b, &t, &h);
    free3(&b2, &t2, &h2);
}

static void test_boundary_not_in_parts(void)
{
    /* a summary that spells the boundary, and a derived boundary */
    struct gp_notice_alert a[1] = {alert("firing", "k", "--=_gpulse_abc123 and =_gpulse_ and --=_gpulse_abc123--")};
    struct gp_notice n = notice(a, 1, "firing");
    struct gp_mime_opts o = opts(NULL);
    struct gp_buf b, t, h;
    build_ok(&n, &o, &b, &t, &h); /* mc_check counts the boundary: 4 times, no more */
    CHECK_CONTAINS(t.data, "--=_gpulse_abc123 and");
    free3(&b, &t, &h);
    o.boundary_token = NULL;
    o.msgid_token = NULL;
    build_ok(&n, &o, &b, &t, &h);
    char v[256];
    CHECK(mc_header(b.data, "Message-ID", v, sizeof v));
    CHECK(strlen(v) > 20 && v[0] == '<' && strchr(v, '@'));
    free3(&b, &t, &h);
}

static void test_crlf_everywhere(void)
{
    struct gp_notice_alert a[1] = {alert("firing", "k", "line one\nline two\r\nline three\rfour")};
    a[0].evidence = "e1\n\ne2\n";
    struct gp_notice n = notice(a, 1, "firing");
    struct gp_mime_opts o = opts(NULL);
    struct gp_buf b, t, h;
    build_ok(&n, &o, &b, &t, &h); /* mc_check: no bare CR or LF anywhere */
    for (size_t i = 0; i < b.len; i++) {
        if (b.data[i] == '\n')
            CHECK(i > 0 && b.data[i - 1] == '\r');
        if (b.data[i] == '\r')
            CHECK(b.data[i + 1] == '\n');
    }
    CHECK_CONTAINS(t.data, "line one\r\n");
    CHECK_CONTAINS(h.data, "line one<br>");
    free3(&b, &t, &h);
}

static void test_hostile_strings_escaped(void)
{
    struct gp_notice_alert a[1] = {alert("firing", "<b>kind</b>", "<script>alert(1)</script> & \"q\" 'x'")};
    a[0].evidence = "<img src=x onerror=alert(1)>";
    a[0].runbook = "javascript:alert(1)";
    a[0].job = "j\"><script>";
    a[0].node = "bad\xff\xfe utf8 \xc3";
    struct gp_notice n = notice(a, 1, "firing");
    n.external_url = "http://x.example/\"><script>alert(2)</script>";
    n.receiver = "r\r\nBcc: evil@example.com";
    struct gp_mime_opts o = opts(NULL);
    struct gp_buf b, t, h;
    build_ok(&n, &o, &b, &t, &h); /* also: both parts valid UTF-8 */
    CHECK(!strstr(h.data, "<script"));
    CHECK(!strstr(h.data, "<img"));
    CHECK(!strstr(h.data, "<b>kind"));
    CHECK(!strstr(h.data, "href=\"javascript"));
    CHECK_CONTAINS(h.data, "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;q&quot; &#39;x&#39;");
    CHECK_CONTAINS(h.data, "&lt;img src=x onerror=alert(1)&gt;");
    CHECK_CONTAINS(h.data, "<td>javascript:alert(1)</td>"); /* text, not a link */
    CHECK_CONTAINS(t.data, "node=bad\xef\xbf\xbd\xef\xbf\xbd utf8 \xef\xbf\xbd");
    char v[256];
    CHECK(!mc_header(b.data, "Bcc", v, sizeof v));
    free3(&b, &t, &h);
}

static void test_storm_is_bounded(void)
{
    enum { N = 1000 };
    struct gp_notice_alert *a = calloc(N, sizeof *a);
    char big[2000];
    memset(big, 'S', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK(a != NULL);
    for (size_t i = 0; i < N; i++) {
        a[i] = alert(i % 4 == 0 ? "resolved" : "firing", "oom_forecast", big);
        a[i].evidence = big;
    }
    struct gp_notice n = notice(a, N, "firing");
    struct gp_mime_opts o = opts(NULL);
    struct gp_buf b, t, h;
    build_ok(&n, &o, &b, &t, &h);
    CHECK(b.len < 1u << 20);
    size_t listed = 0;
    for (const char *p = t.data; (p = strstr(p, "  oom_forecast\r\n")); p++)
        listed++;
    CHECK(listed >= 10 && listed <= GP_MIME_MAX_ALERTS);
    char want[128];
    snprintf(want, sizeof want, "... and %zu more alerts (", (size_t)N - listed);
    CHECK_CONTAINS(t.data, want);
    CHECK_CONTAINS(h.data, want);
    /* a field is cut, with a mark */
    CHECK_CONTAINS(t.data, "SSS\xe2\x80\xa6");
    char v[256], subj[256];
    CHECK(mc_header(b.data, "Subject", v, sizeof v) && mc_decode_words(v, subj, sizeof subj));
    CHECK_STR(subj, "[gpulse] FIRING: 750 alerts, 250 resolved for job bert-1");
    free3(&b, &t, &h);
    free(a);
}

static void test_bad_addresses_refused(void)
{
    struct gp_notice_alert a[1] = {alert("firing", "k", "s")};
    struct gp_notice n = notice(a, 1, "firing");
    static const char *const bad[] = {"", "no-at", "a@b\r\nBcc: x@y", "Name <a@b.c>", "a@b,c@d", "é@x.y",
                                      "a b@c.d"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct gp_mime_opts o = opts(NULL);
        const char *to[1] = {bad[i]};
        o.to = to;
        o.nto = 1;
        struct gp_buf b;
        gp_buf_init(&b, 0);
        char err[256];
        CHECK_INT(gp_mime_build(&n, &o, &b, err, sizeof err), GP_ECONFIG);
        CHECK_CONTAINS(err, "to address");
        o = opts(NULL);
        o.from = bad[i];
        CHECK_INT(gp_mime_build(&n, &o, &b, err, sizeof err), GP_ECONFIG);
        gp_buf_free(&b);
    }
    struct gp_mime_opts o = opts(NULL);
    o.nto = 0;
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_mime_build(&n, &o, &b, NULL, 0), GP_ECONFIG);
    gp_buf_free(&b);
}

const struct gp_test gp_tests_notify_email[] = {
    {"headers", test_headers},
    {"subject_default_forms", test_subject_default_forms},
    {"subject_non_ascii_round_trips", test_subject_non_ascii_round_trips},
    {"quoted_printable", test_quoted_printable},
    {"parts_carry_the_alerts", test_parts_carry_the_alerts},
    {"boundary_not_in_parts", test_boundary_not_in_parts},
    {"crlf_everywhere", test_crlf_everywhere},
    {"hostile_strings_escaped", test_hostile_strings_escaped},
    {"storm_is_bounded", test_storm_is_bounded},
    {"bad_addresses_refused", test_bad_addresses_refused},
    {0},
};
