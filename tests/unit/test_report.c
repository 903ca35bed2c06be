/*
 * test_report.c - the job report: text, JSON and HTML renderings of the
 * fixture documents (tests/data/jobs/), the advice rules (each where it
 * fires and where it stays silent), the number formats and escaping.
 */
#include "lib/buf.h"
#include "lib/err.h"
#include "report/report.h"
#include "report/report_int.h"
#include "test.h"

#include <jansson.h>
#include <stdlib.h>

static json_t *load(const char *name)
{
    char rel[128];
    snprintf(rel, sizeof rel, "jobs/%s.json", name);
    json_error_t je;
    json_t *d = json_load_file(gp_test_data(rel), 0, &je);
    if (!d)
        gp_test_fail(__FILE__, __LINE__, "%s: %s (line %d)", rel, je.text, je.line);
    return d;
}

static json_t *parse(const char *text)
{
    json_error_t je;
    json_t *d = json_loads(text, 0, &je);
    if (!d)
        gp_test_fail(__FILE__, __LINE__, "bad test JSON: %s", je.text);
    return d;
}

/* Advises, renders as text; the caller frees. */
static char *text_of(json_t *doc, bool color)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    struct gp_report_opts o = {color};
    CHECK_INT(gp_report_advise(doc), GP_OK);
    CHECK_INT(gp_report_text(&b, doc, &o), GP_OK);
    return gp_buf_steal(&b, NULL);
}

static char *html_of(json_t *doc)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_report_advise(doc), GP_OK);
    CHECK_INT(gp_report_html(&b, doc), GP_OK);
    return gp_buf_steal(&b, NULL);
}

/* Every line at most 100 columns, no control character but newline. */
static void check_terminal_safe(const char *t)
{
    size_t cols = 0;
    for (const char *p = t; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '\n') {
            cols = 0;
            continue;
        }
        CHECK(c >= 0x20 && c != 0x7f);
        CHECK(!(c == 0xc2 && (unsigned char)p[1] >= 0x80 && (unsigned char)p[1] <= 0x9f));
        if ((c & 0xc0) != 0x80)
            cols++;
        if (cols > 100)
            gp_test_fail(__FILE__, __LINE__, "line wider than 100 columns near \"%.40s\"", p - 40);
    }
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* The kinds in doc's advice, comma-separated, into out. */
static const char *kinds(const json_t *doc, char *out, size_t n)
{
    const json_t *adv = json_object_get(doc, "advice");
    size_t k = 0;
    out[0] = '\0';
    for (size_t i = 0; i < json_array_size(adv) && k < n; i++) {
        const json_t *kind = json_object_get(json_array_get(adv, i), "kind");
        k += (size_t)snprintf(out + k, n - k, "%s%s", i ? "," : "",
                              json_is_string(kind) ? json_string_value(kind) : "?");
    }
    return out;
}

/* --- text ---------------------------------------------------------------- */

static void test_text_full(void)
{
    json_t *d = load("full");
    char *t = text_of(d, false);
    CHECK(!strncmp(t, "gpulse report: run-20261123T101500-4242\n", 40));
    CHECK_CONTAINS(t, "\n  command       python train.py --epochs 3 --batch-size 32\n");
    CHECK_CONTAINS(t, "\n  state         finished, exit status 0\n");
    CHECK_CONTAINS(t, "\n  started       2025-11-23 10:15:00 UTC\n");
    CHECK_CONTAINS(t, "\n  wall time     0:50:00\n");
    CHECK_CONTAINS(t, "\n  nodes         1 (node1)\n");
    CHECK_CONTAINS(t, "\n  ranks         2\n  GPUs          2\n  GPU-hours     1.67\n");
    CHECK_CONTAINS(t, "\n  cost          $4.17 at $2.50 per GPU-hour\n");
    CHECK_CONTAINS(t, "\n  peak memory   74.1 GiB (93.0% of capacity)\n");
    CHECK_CONTAINS(t, "\n  activity      avg 78.0%, p50 79.0%, p90 86.0%, p99 90.0% (time-weighted, "
                      "source sm_active)\n");
    CHECK_CONTAINS(t, "\n  NODE           GPU   MODEL                      PEAK MEM   CAPACITY   PEAK %  "
                      "ACTIVITY  SOURCE\n"
                      "  node1          0     NVIDIA H100 80GB HBM3      74.1 GiB   79.6 GiB   93.0%   "
                      "78.0%     sm_active\n"
                      "  node1          1     NVIDIA H100 80GB HBM3      35.9 GiB   79.6 GiB   45.0%   "
                      "78.0%     sm_active\n"
                      "  all            2                                74.1 GiB   79.6 GiB   93.0%   "
                      "78.0%     sm_active\n");
    CHECK_CONTAINS(t, "\n  steps         12,000\n");
    CHECK_CONTAINS(t, "\n  step time     mean 300 ms, p50 290 ms, p90 330 ms, p99 410 ms, max 900 ms\n");
    CHECK_CONTAINS(t, "\n  throughput    128.0 samples/s, n/a tokens/s, 4.00 steps/s\n");
    CHECK_CONTAINS(t, "\n  data wait     4.0% of step time\n");
    CHECK_CONTAINS(t, "\n  loss          first 2.5, last 0.3404, lowest 0.3404\n");
    CHECK_CONTAINS(t, "\n  CPU           1.50 cores on average (4,500 CPU-seconds)\n");
    CHECK_CONTAINS(t, "\n  RSS peak      7.45 GiB\n");
    CHECK_CONTAINS(t, "\n  compute       [#######################################...........]  78.0%\n"
                      "  data wait     [##................................................]   4.0%\n"
                      "  idle/other    [#########.........................................]  18.0%\n");
    CHECK_CONTAINS(t, "\nWhat to change\n  1. [memory_high] GPU memory peaked at 93% of capacity");
    CHECK_CONTAINS(t, "evidence: peak_memory_ratio > 0.90 on 1 GPU: node1/0 0.930\n");
    CHECK(!strstr(t, "2. ")); /* one rule fires on this job */
    CHECK(!strstr(t, "\033"));
    check_terminal_safe(t);
    free(t);
    json_decref(d);
}

/* A job of several ranks: a row per rank with its straggler scores and
 * MFU (n/a where the document has none); one rank: no table. */
static void test_rank_table(void)
{
    json_t *d = load("full");
    json_t *r1 = json_array_get(json_object_get(d, "ranks"), 1);
    json_object_set_new(r1, "step_seconds_mean", json_real(0.4));
    json_object_set_new(r1, "step_seconds_best", json_real(0.3));
    json_object_set_new(r1, "straggler_relative", json_real(0.75));
    json_object_set_new(r1, "straggler_individual", json_real(0.75));
    json_object_set_new(r1, "mfu", json_real(0.3125));
    json_array_append_new(json_object_get(d, "ranks"), parse("{\"rank\": null, \"node\": \"node1\"}"));
    char *t = text_of(d, false);
    CHECK_CONTAINS(t, "\n  RANK   NODE           STEP MEAN  STEP BEST  RELATIVE  INDIVIDUAL  MFU\n"
                      "  0      node1          n/a        n/a        n/a       n/a         n/a\n"
                      "  1      node1          400 ms     300 ms     0.75      0.75        31.2%\n\n");
    check_terminal_safe(t);
    char *h = html_of(d);
    CHECK_CONTAINS(h, "<tr><td>1</td><td>node1</td><td class=\"n\">400 ms</td><td class=\"n\">300 ms</td>"
                      "<td class=\"n\">0.75</td><td class=\"n\">0.75</td><td class=\"n\">31.2%</td></tr>");
    CHECK_INT(count(h, "<tr><td>"), 2 + 3); /* the ranks (the launcher is none), the GPUs and "all" */
    free(t);
    free(h);
    json_array_remove(json_object_get(d, "ranks"), 2);
    json_array_remove(json_object_get(d, "ranks"), 1);
    t = text_of(d, false);
    h = html_of(d);
    CHECK(!strstr(t, "RELATIVE"));
    CHECK(!strstr(h, "RELATIVE"));
    free(t);
    free(h);
    json_decref(d);
}

static void test_text_nulls_are_na(void)
{
    json_t *d = load("nulls");
    char *t = text_of(d, false);
    static const char *const lines[] = {
        "\n  id            job-nulls\n",
        "\n  command       n/a\n",
        "\n  scheme        n/a\n",
        "\n  state         running, exit status n/a\n",
        "\n  started       n/a\n",
        "\n  ended         n/a\n",
        "\n  wall time     n/a\n",
        "\n  nodes         n/a\n",
        "\n  ranks         n/a\n",
        "\n  GPUs          1\n",
        "\n  GPU-hours     n/a\n",
        "\n  cost          n/a (no price per GPU-hour configured)\n",
        "\n  peak memory   n/a (n/a of capacity)\n",
        "\n  activity      avg n/a, p50 n/a, p90 n/a, p99 n/a (time-weighted, source n/a)\n",
        "\n  n/a            n/a   n/a                        n/a        n/a        n/a     n/a       n/a\n",
        "\n  steps         n/a\n",
        "\n  step time     mean n/a, p50 n/a, p90 n/a, p99 n/a, max n/a\n",
        "\n  loss          n/a (no step reported a loss)\n",
        "\n  throughput    n/a samples/s, n/a tokens/s, n/a steps/s\n",
        "\n  processed     n/a samples, n/a tokens\n",
        "\n  data wait     n/a of step time\n",
        "\n  CPU           n/a cores on average (n/a CPU-seconds)\n",
        "\n  RSS peak      n/a\n",
        "\n  compute       n/a\n",
        "\n  idle/other    n/a\n",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        CHECK_CONTAINS(t, lines[i]);
    /* unknown is never shown as zero */
    CHECK(!strstr(t, "0 B"));
    CHECK(!strstr(t, "0.0%"));
    CHECK(!strstr(t, "0:00:00"));
    CHECK(!strstr(t, "$0"));
    CHECK(!strstr(t, " 0 "));
    CHECK_CONTAINS(t, "nothing: no rule found a problem");
    check_terminal_safe(t);
    free(t);
    json_decref(d);
}

static void test_text_cpu_only(void)
{
    json_t *d = load("cpu_only");
    char *t = text_of(d, false);
    CHECK_CONTAINS(t, "\n  GPUs          0\n");
    CHECK_CONTAINS(t, "\n  per GPU       no GPUs in this job\n");
    CHECK(!strstr(t, "NODE "));
    CHECK_CONTAINS(t, "\n  step time     mean 1.50 s, p50 1.40 s, p90 2.10 s, p99 2.90 s, max 3.20 s\n");
    CHECK_CONTAINS(t, "\n  CPU           12.00 cores on average (7,200 CPU-seconds)\n");
    CHECK_CONTAINS(t, "\n  RSS peak      3.00 GiB\n");
    CHECK_CONTAINS(t, "\n  compute       n/a\n  data wait     [##################..............."
                      ".................]  35.0% of step time\n  idle/other    n/a\n");
    CHECK_CONTAINS(t, "\n  1. [data_wait] Steps spent 35% of their time waiting for data");
    CHECK_CONTAINS(t, "evidence: data_wait_ratio 0.35 > 0.20\n");
    check_terminal_safe(t);
    free(t);
    json_decref(d);
}

static void test_text_failed_job(void)
{
    json_t *d = load("failed");
    char *t = text_of(d, false);
    CHECK_CONTAINS(t, "\n  state         killed, signal 9 (SIGKILL), exit status 137\n");
    CHECK_CONTAINS(t, "\n  cost          0.45 EUR at 1.80 EUR per GPU-hour\n");
    CHECK_CONTAINS(t, "\n  throughput    26.7 samples/s, 13,653 tokens/s, 3.33 steps/s\n");
    /* the failure first, the server's own entry kept, then the rules */
    CHECK_CONTAINS(t, "\nWhat to change\n  1. [killed] The job was killed by signal 9 (SIGKILL):");
    CHECK_CONTAINS(t, "evidence: state=killed exit_status=137 signal=9\n  2. [custom] A note the server "
                      "added.\n       evidence: kept as it was\n  3. [memory_high]");
    CHECK_CONTAINS(t, "\n  4. [low_activity]");
    char k[128];
    CHECK_STR(kinds(d, k, sizeof k), "killed,custom,memory_high,low_activity");
    check_terminal_safe(t);
    free(t);
    json_decref(d);
}

static void test_text_hostile_strings(void)
{
    json_t *d = load("hostile");
    char *t = text_of(d, false);
    check_terminal_safe(t); /* the ESC, BEL and CSI of the document are gone */
    CHECK_CONTAINS(t, "echo \xc3\xbc\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e ?[31mred?[0m?2J");
    CHECK_CONTAINS(t, "\n  state         finished?, exit status 0\n");
    free(t);
    json_decref(d);
}

static void test_text_color_only_when_asked(void)
{
    json_t *d = load("failed");
    char *t = text_of(d, true);
    CHECK_CONTAINS(t, "\033[1mJob\033[0m\n");
    CHECK_CONTAINS(t, "\033[31m[killed] \033[0m");
    free(t);
    json_decref(d);
}

static void test_text_not_an_object(void)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    json_t *a = json_array();
    CHECK_INT(gp_report_text(&b, a, NULL), GP_EPARSE);
    CHECK_INT(gp_report_html(&b, a), GP_EPARSE);
    CHECK_INT(gp_report_json(&b, a), GP_EPARSE);
    CHECK_INT(gp_report_advise(a), GP_EPARSE);
    CHECK_INT(b.len, 0);
    json_decref(a);
    gp_buf_free(&b);
}

/* --- JSON ---------------------------------------------------------------- */

static void test_json_is_the_document_with_advice(void)
{
    json_t *d = load("cpu_only");
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_report_advise(d), GP_OK);
    CHECK_INT(gp_report_json(&b, d), GP_OK);
    CHECK(b.len > 2 && b.data[b.len - 1] == '\n');
    CHECK_CONTAINS(b.data, "\n  \"id\": \"pg-4242@laptop\",\n"); /* pretty, in document order */
    CHECK_CONTAINS(b.data, "\"data_wait_ratio\": 0.35,");
    json_error_t je;
    json_t *back = json_loadb(b.data, b.len, 0, &je);
    CHECK(back != NULL);
    CHECK(json_equal(back, d));
    CHECK_INT(json_array_size(json_object_get(back, "advice")), 1);
    json_decref(back);
    gp_buf_free(&b);
    json_decref(d);
}

/* --- HTML ---------------------------------------------------------------- */

static void test_html_full(void)
{
    json_t *d = load("full");
    char *h = html_of(d);
    CHECK(!strncmp(h, "<!DOCTYPE html>\n<html lang=\"en\">", 31));
    CHECK_CONTAINS(h, "<title>gpulse report: run-20261123T101500-4242</title>");
    CHECK_CONTAINS(h, "prefers-color-scheme:dark");
    CHECK_CONTAINS(h, "@media print");
    CHECK(!strstr(h, "<script"));
    CHECK_INT(count(h, "http"), count(h, "http://www.w3.org/2000/svg\"")); /* no fetches */
    CHECK(!strstr(h, "url("));
    CHECK(!strstr(h, "src="));
    CHECK_INT(count(h, "<svg "), 6);
    CHECK_INT(count(h, "no data"), 0);
    CHECK_CONTAINS(h, "<figcaption>GPU activity</figcaption>");
    CHECK_CONTAINS(h, "<figcaption>Loss (as the clients sent it)</figcaption>");
    CHECK_CONTAINS(h, "<tr><th>loss</th><td>first 2.5, last 0.3404, lowest 0.3404</td></tr>");
    CHECK_CONTAINS(h, ">node1 GPU 0</text>");
    CHECK_CONTAINS(h, ">capacity (each GPU)</text>");
    CHECK_CONTAINS(h, ">10:00</text>"); /* time ticks as m:ss */
    CHECK_CONTAINS(h, ">80 GiB</text>");
    CHECK_CONTAINS(h, ">100%</text>");
    CHECK_CONTAINS(h, ">800 ms</text>");
    CHECK_CONTAINS(h, "<tr><th>wall time</th><td>0:50:00</td></tr>");
    CHECK_CONTAINS(h, "<td>node1</td><td>1</td><td>NVIDIA H100 80GB HBM3</td><td class=\"n\">35.9 GiB</td>");
    CHECK_CONTAINS(h, "<span class=\"kind\">memory_high</span>");
    CHECK_CONTAINS(h, "<div class=\"c\" style=\"width:78.00%\"></div>");
    /* each GPU line: 1500 samples drawn as at most 1000 points */
    const char *p = strstr(h, "<path ");
    CHECK(p);
    const char *e = strstr(p, "\"/>");
    size_t pts = 0;
    for (const char *q = p; q < e; q++)
        pts += *q == 'L' || *q == 'M';
    CHECK(pts > 500 && pts <= 1000);
    free(h);
    json_decref(d);
}

static void test_html_no_data_notes(void)
{
    json_t *d = load("nulls");
    char *h = html_of(d);
    CHECK_INT(count(h, "<svg "), 0);
    CHECK_INT(count(h, "<p class=\"nodata\">no data</p>"), 6);
    CHECK_CONTAINS(h, "<tr><th>command</th><td>n/a</td></tr>");
    free(h);
    json_decref(d);
    d = load("cpu_only");
    h = html_of(d);
    CHECK_INT(count(h, "<svg "), 3); /* steps, CPU, RSS; no GPU charts, no loss */
    CHECK_INT(count(h, "no data"), 3);
    CHECK_CONTAINS(h, "no GPUs in this job");
    free(h);
    json_decref(d);
    d = load("failed"); /* an empty step series, a missing host series */
    h = html_of(d);
    CHECK_INT(count(h, "<svg "), 2);
    CHECK_INT(count(h, "no data"), 4);
    free(h);
    json_decref(d);
}

static void test_html_escapes_hostile_strings(void)
{
    json_t *d = load("hostile");
    char *h = html_of(d);
    CHECK(!strstr(h, "<script"));
    CHECK(!strstr(h, "<img"));
    CHECK(!strstr(h, "<b>"));
    CHECK(!strstr(h, "</svg>\"")); /* the command's </svg> is text */
    CHECK_CONTAINS(h, "<title>gpulse report: &lt;script&gt;alert(&#39;id&#39;)&lt;/script&gt;&quot;&amp;&#39;"
                      "</title>");
    CHECK_CONTAINS(h, "&lt;/li&gt;&lt;/ol&gt;&lt;script&gt;alert(2)&lt;/script&gt;");
    CHECK_CONTAINS(h, "&lt;img src=x onerror=alert(1)&gt;");
    CHECK_CONTAINS(h, "\xc3\xbc\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"); /* non-ASCII kept */
    CHECK_CONTAINS(h, "\xef\xbf\xbd[31mred");                          /* ESC replaced */
    CHECK(!strchr(h, '\033'));
    CHECK(!strchr(h, '\a'));
    CHECK_CONTAINS(h, "&lt;/style&gt;");
    CHECK(!strstr(h, "</style>\n</main>"));
    CHECK_INT(count(h, "</style>"), 1);
    free(h);
    json_decref(d);
}

/* A 5000-point line with one spike: drawn as at most 1000 points, spike kept. */
static void test_html_downsampling_keeps_spikes(void)
{
    json_t *t = json_array(), *v = json_array();
    for (int i = 0; i < 5000; i++) {
        json_array_append_new(t, json_real(i));
        json_array_append_new(v, json_real(i == 3217 ? 2.0 : 0.25 + (i % 7) * 0.01));
    }
    json_t *d = json_pack("{s:s, s:{s:{s:o, s:o}}}", "id", "ds", "series", "steps", "t", t, "seconds", v);
    char *h = html_of(d);
    const char *p = strstr(h, "<path ");
    CHECK(p);
    const char *e = strstr(p, "\"/>");
    size_t pts = 0;
    for (const char *q = p; q < e; q++)
        pts += *q == 'L' || *q == 'M';
    CHECK_INT(pts, 1000);
    /* y axis 0..2 s: the spike reaches the plot's top (y = 34.0: one legend row) */
    char *d_attr = strndup(p, (size_t)(e - p));
    CHECK_CONTAINS(d_attr, " 34.0");
    CHECK_CONTAINS(h, ">2 s</text>");
    free(d_attr);
    free(h);
    json_decref(d);
}

/* --- advice rules ---------------------------------------------------------- */

/* Advises a document made of the given JSON and returns the kinds. */
static const char *advise(const char *json, char *out, size_t n)
{
    json_t *d = parse(json);
    CHECK_INT(gp_report_advise(d), GP_OK);
    kinds(d, out, n);
    json_decref(d);
    return out;
}

/* The job's active alerts come first under "What to change": never
 * "nothing" while one fires; [] says none is active; no `alerts` says no
 * server gave them. Their strings are the server's: escaped. */
static void test_advice_lists_alerts(void)
{
    static const char *const doc =
        "{\"id\": \"j\", \"totals\": {\"data_wait_ratio\": 0.05}, \"alerts\": ["
        "{\"kind\": \"gpu_hardware_errors\", \"severity\": \"critical\", \"state\": \"firing\","
        " \"summary\": \"GPU 3 of n1: 2 uncorrectable ECC errors\", \"evidence\": \"DBE 2 > 0\"},"
        "{\"kind\": \"x\\u001b[31m\", \"state\": \"pending\", \"summary\": \"<b>hot</b>\"},"
        "\"not an alert\", {\"summary\": \"no kind\"}]}";
    json_t *d = parse(doc);
    char *t = text_of(d, false);
    CHECK_CONTAINS(t, "\nWhat to change\n"
                      "  1. [alert gpu_hardware_errors, critical, firing] GPU 3 of n1: 2 uncorrectable ECC errors\n"
                      "       evidence: DBE 2 > 0\n"
                      "  2. [alert x?[31m, n/a, pending] <b>hot</b>\n");
    CHECK(!strstr(t, "3. "));
    CHECK(!strstr(t, "nothing"));
    check_terminal_safe(t);
    free(t);
    char *h = html_of(d);
    CHECK_CONTAINS(h, "<li><span class=\"kind bad\">alert gpu_hardware_errors, critical, firing</span> GPU 3 of "
                      "n1: 2 uncorrectable ECC errors<div class=\"ev\">evidence: DBE 2 &gt; 0</div></li>");
    CHECK_CONTAINS(h, "<span class=\"kind\">alert x\xef\xbf\xbd[31m, n/a, pending</span> &lt;b&gt;hot&lt;/b&gt;");
    CHECK(!strstr(h, "Nothing"));
    free(h);
    json_decref(d);

    /* with advice: the alerts first, then the rules' entries; without
     * either, what is known about alerts: none active, or not given */
    static const struct {
        const char *doc, *text, *html;
    } cases[] = {
        {"{\"totals\": {\"data_wait_ratio\": 0.35}, \"alerts\": [{\"kind\": \"k\", \"state\": \"firing\"}]}",
         "  1. [alert k, n/a, firing] k\n  2. [data_wait] ", "<span class=\"kind bad\">alert k, n/a, firing</span> k"},
        {"{\"totals\": {\"data_wait_ratio\": 0.05}, \"alerts\": []}",
         "nothing: no rule found a problem in the numbers above, and no alert is active on\n"
         "                this job\n",
         "Nothing: no rule found a problem in these numbers, and no alert is active on this job."},
        {"{\"totals\": {\"data_wait_ratio\": 0.05}}",
         "nothing: no rule found a problem in the numbers above (no server gave the job's\n"
         "                alerts)\n",
         "Nothing: no rule found a problem in these numbers (no server gave the job's alerts)."},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        d = parse(cases[i].doc);
        t = text_of(d, false);
        h = html_of(d);
        CHECK_CONTAINS(t, cases[i].text);
        CHECK_CONTAINS(h, cases[i].html);
        free(t);
        free(h);
        json_decref(d);
    }
}

static void test_advice_data_wait(void)
{
    char k[256];
    CHECK_STR(advise("{\"totals\": {\"data_wait_ratio\": 0.35}}", k, sizeof k), "data_wait");
    CHECK_STR(advise("{\"totals\": {\"data_wait_ratio\": 0.2}}", k, sizeof k), "");
    CHECK_STR(advise("{\"totals\": {\"data_wait_ratio\": null}}", k, sizeof k), "");
    CHECK_STR(advise("{\"totals\": {\"data_wait_ratio\": \"0.9\"}}", k, sizeof k), "");
}

static void test_advice_low_activity(void)
{
    char k[256];
    CHECK_STR(advise("{\"totals\": {\"activity_avg\": 0.3, \"steps\": 100, \"data_wait_ratio\": 0.05}}", k,
                     sizeof k),
              "low_activity");
    /* no steps, a high data wait (its own rule), busy GPUs, unknown wait: silent */
    CHECK_STR(advise("{\"totals\": {\"activity_avg\": 0.3, \"steps\": 0, \"data_wait_ratio\": 0.05}}", k,
                     sizeof k),
              "");
    CHECK_STR(advise("{\"totals\": {\"activity_avg\": 0.3, \"steps\": 100, \"data_wait_ratio\": 0.35}}", k,
                     sizeof k),
              "data_wait");
    CHECK_STR(advise("{\"totals\": {\"activity_avg\": 0.5, \"steps\": 100, \"data_wait_ratio\": 0.05}}", k,
                     sizeof k),
              "");
    CHECK_STR(advise("{\"totals\": {\"activity_avg\": 0.3, \"steps\": 100, \"data_wait_ratio\": null}}", k,
                     sizeof k),
              "");
}

static void test_advice_memory_low(void)
{
    char k[256];
    CHECK_STR(advise("{\"gpus\": [{\"peak_memory_ratio\": 0.1}, {\"peak_memory_ratio\": 0.29}]}", k, sizeof k),
              "memory_low");
    /* from bytes when the ratio is missing */
    CHECK_STR(advise("{\"gpus\": [{\"peak_memory_bytes\": 1e9, \"memory_total_bytes\": 8e10}]}", k, sizeof k),
              "memory_low");
    CHECK_STR(advise("{\"gpus\": [{\"peak_memory_ratio\": 0.1}, {\"peak_memory_ratio\": 0.5}]}", k, sizeof k),
              "");
    CHECK_STR(advise("{\"gpus\": [{\"peak_memory_ratio\": 0.1}, {\"peak_memory_ratio\": null}]}", k,
                     sizeof k),
              "");
    CHECK_STR(advise("{\"gpus\": []}", k, sizeof k), "");
    CHECK_STR(advise("{\"gpus\": null}", k, sizeof k), "");
}

static void test_advice_memory_high(void)
{
    char k[256];
    CHECK_STR(advise("{\"gpus\": [{\"peak_memory_ratio\": 0.5}, {\"node\": \"n\", \"gpu\": \"1\", "
                     "\"peak_memory_ratio\": 0.95}]}",
                     k, sizeof k),
              "memory_high");
    CHECK_STR(advise("{\"gpus\": [{\"peak_memory_ratio\": 0.9}, {\"peak_memory_ratio\": 0.5}]}", k, sizeof k),
              "");
    json_t *d = parse("{\"gpus\": [{\"node\": \"n\", \"gpu\": \"1\", \"peak_memory_ratio\": 0.95}]}");
    CHECK_INT(gp_report_advise(d), GP_OK);
    const json_t *e = json_array_get(json_object_get(d, "advice"), 0);
    CHECK_STR(json_string_value(json_object_get(e, "evidence")), "peak_memory_ratio > 0.90 on 1 GPU: n/1 0.950");
    CHECK_CONTAINS(json_string_value(json_object_get(e, "text")), "95% of capacity");
    CHECK_CONTAINS(json_string_value(json_object_get(e, "text")), "activation checkpointing");
    json_decref(d);
}

static void test_advice_failure_first(void)
{
    char k[256];
    CHECK_STR(advise("{\"state\": \"failed\", \"exit_status\": 1, \"totals\": {\"data_wait_ratio\": 0.5},"
                     " \"advice\": [{\"kind\": \"x\", \"text\": \"t\"}]}",
                     k, sizeof k),
              "failed,x,data_wait");
    CHECK_STR(advise("{\"state\": \"killed\", \"signal\": \"SIGTERM\"}", k, sizeof k), "killed");
    CHECK_STR(advise("{\"state\": \"lost\"}", k, sizeof k), "lost");
    CHECK_STR(advise("{\"state\": \"finished\", \"exit_status\": 0}", k, sizeof k), "");
    CHECK_STR(advise("{\"state\": \"running\"}", k, sizeof k), "");
    json_t *d = parse("{\"state\": \"failed\", \"exit_status\": 3}");
    CHECK_INT(gp_report_advise(d), GP_OK);
    const json_t *e = json_array_get(json_object_get(d, "advice"), 0);
    CHECK_STR(json_string_value(json_object_get(e, "evidence")), "state=failed exit_status=3 signal=null");
    CHECK_CONTAINS(json_string_value(json_object_get(e, "text")), "The job failed (exit status 3)");
    json_decref(d);
}

static void test_advice_keeps_entries_and_is_idempotent(void)
{
    json_t *d = parse("{\"state\": \"failed\", \"totals\": {\"data_wait_ratio\": 0.5}, \"advice\": "
                      "[{\"kind\": \"data_wait\", \"text\": \"the server's\", \"evidence\": \"e\"}]}");
    CHECK_INT(gp_report_advise(d), GP_OK);
    CHECK_INT(gp_report_advise(d), GP_OK);
    char k[128];
    CHECK_STR(kinds(d, k, sizeof k), "failed,data_wait");
    const json_t *e = json_array_get(json_object_get(d, "advice"), 1);
    CHECK_STR(json_string_value(json_object_get(e, "text")), "the server's");
    json_decref(d);
    /* advice that is not an array becomes one */
    CHECK_STR(advise("{\"advice\": {\"kind\": 1}}", k, sizeof k), "");
}

/* --- formats and escaping ------------------------------------------------- */

static void test_formats(void)
{
    char o[64];
    CHECK_STR(gp_rp_fmt_bytes(o, sizeof o, true, 85520809984.0), "79.6 GiB");
    CHECK_STR(gp_rp_fmt_bytes(o, sizeof o, true, 3221225472.0), "3.00 GiB");
    CHECK_STR(gp_rp_fmt_bytes(o, sizeof o, true, 512), "512 B");
    CHECK_STR(gp_rp_fmt_bytes(o, sizeof o, true, 0), "0 B");
    CHECK_STR(gp_rp_fmt_bytes(o, sizeof o, false, 5), "n/a");
    CHECK_STR(gp_rp_fmt_hms(o, sizeof o, true, 3723.4), "1:02:03");
    CHECK_STR(gp_rp_fmt_hms(o, sizeof o, true, 0), "0:00:00");
    CHECK_STR(gp_rp_fmt_hms(o, sizeof o, true, 1e300), "1e+300 s");
    CHECK_STR(gp_rp_fmt_hms(o, sizeof o, false, 1), "n/a");
    CHECK_STR(gp_rp_fmt_short(o, sizeof o, true, 0.0834), "83 ms");
    CHECK_STR(gp_rp_fmt_short(o, sizeof o, true, 0.00125), "1.25 ms");
    CHECK_STR(gp_rp_fmt_short(o, sizeof o, true, 0.000042), "42 us");
    CHECK_STR(gp_rp_fmt_short(o, sizeof o, true, 2.5), "2.50 s");
    CHECK_STR(gp_rp_fmt_short(o, sizeof o, true, 125), "0:02:05");
    CHECK_STR(gp_rp_fmt_count(o, sizeof o, true, 1234567), "1,234,567");
    CHECK_STR(gp_rp_fmt_count(o, sizeof o, true, -1000), "-1,000");
    CHECK_STR(gp_rp_fmt_count(o, sizeof o, true, 999), "999");
    CHECK_STR(gp_rp_fmt_count(o, sizeof o, true, 1e30), "1e+30");
    CHECK_STR(gp_rp_fmt_pct(o, sizeof o, true, 0.4712), "47.1%");
    CHECK_STR(gp_rp_fmt_money(o, sizeof o, true, 4.166, "USD"), "$4.17");
    CHECK_STR(gp_rp_fmt_money(o, sizeof o, true, 4.166, NULL), "$4.17");
    CHECK_STR(gp_rp_fmt_money(o, sizeof o, true, 4.166, "EUR"), "4.17 EUR");
    CHECK_STR(gp_rp_fmt_rate(o, sizeof o, true, 13653.3), "13,653");
    CHECK_STR(gp_rp_fmt_rate(o, sizeof o, true, 3.333), "3.33");
    CHECK_STR(gp_rp_fmt_utc(o, sizeof o, true, 0), "1970-01-01 00:00:00 UTC");
    CHECK_STR(gp_rp_fmt_utc(o, sizeof o, true, -1), "n/a");
    json_t *s = json_integer(15);
    CHECK_STR(gp_rp_fmt_signal(o, sizeof o, s), "signal 15 (SIGTERM)");
    json_decref(s);
    s = json_integer(40);
    CHECK_STR(gp_rp_fmt_signal(o, sizeof o, s), "signal 40");
    json_decref(s);
    CHECK_STR(gp_rp_fmt_signal(o, sizeof o, NULL), "n/a");
}

static void test_escaping(void)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_rp_html_put(&b, "<a href=\"x\">'&'</a>\x1b\xff\xc3\xa9");
    CHECK_STR(b.data, "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;\xef\xbf\xbd\xef\xbf\xbd\xc3\xa9");
    gp_buf_reset(&b);
    CHECK_INT(gp_rp_text_put(&b, "a\x1b[2Jb\xc2\x9b\xc3\xa9", 100), 8);
    CHECK_STR(b.data, "a?[2Jb?\xc3\xa9");
    gp_buf_reset(&b);
    CHECK_INT(gp_rp_text_put(&b, "abcdefghij", 6), 6);
    CHECK_STR(b.data, "abc...");
    gp_buf_reset(&b);
    gp_rp_text_cell(&b, "\xc3\xa9t\xc3\xa9", 5);
    CHECK_STR(b.data, "\xc3\xa9t\xc3\xa9  ");
    gp_buf_reset(&b);
    gp_rp_text_wrap(&b, "one two three four", 0, 2, 9);
    CHECK_STR(b.data, "one two\n  three\n  four\n");
    gp_buf_reset(&b);
    gp_rp_text_wrap(&b, "abcdefghijkl", 4, 4, 8); /* a word wider than the line is cut */
    CHECK_STR(b.data, "abcd\n    efgh\n    ijkl\n");
    CHECK_INT(gp_rp_cols("\xe6\x97\xa5\xe6\x9c\xac"), 2);
    gp_buf_free(&b);
}

/* docs/jobs.md names every advice kind with its threshold. */
static void test_docs_name_every_rule(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/../../docs/jobs.md", GP_TEST_DATA_DIR);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    static char text[1 << 17];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    char row[160];
    static const struct {
        const char *kind, *op;
        double v;
    } rules[] = {{"memory_high", ">", GP_REPORT_MEMORY_HIGH},
                 {"data_wait", "`data_wait_ratio` >", GP_REPORT_DATA_WAIT_HIGH},
                 {"low_activity", "`activity_avg` <", GP_REPORT_ACTIVITY_LOW},
                 {"memory_low", "<", GP_REPORT_MEMORY_LOW}};
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        snprintf(row, sizeof row, "| `%s` |", rules[i].kind);
        const char *r = strstr(text, row);
        if (!r)
            gp_test_fail(__FILE__, __LINE__, "docs/jobs.md has no row for %s", rules[i].kind);
        snprintf(row, sizeof row, "%s %g", rules[i].op, rules[i].v);
        const char *eol = strchr(r, '\n');
        const char *at = strstr(r, row);
        if (!at || (eol && at > eol))
            gp_test_fail(__FILE__, __LINE__, "docs/jobs.md: %s row lacks \"%s\"", rules[i].kind, row);
    }
    CHECK_CONTAINS(text, "| `failed`, `killed`, `lost` |");
}

const struct gp_test gp_tests_report[] = {
    {"text_full", test_text_full},
    {"text_nulls_are_na", test_text_nulls_are_na},
    {"text_cpu_only", test_text_cpu_only},
    {"text_failed_job", test_text_failed_job},
    {"text_hostile_strings", test_text_hostile_strings},
    {"text_color_only_when_asked", test_text_color_only_when_asked},
    {"text_not_an_object", test_text_not_an_object},
    {"json_is_the_document_with_advice", test_json_is_the_document_with_advice},
    {"html_full", test_html_full},
    {"html_no_data_notes", test_html_no_data_notes},
    {"html_escapes_hostile_strings", test_html_escapes_hostile_strings},
    {"html_downsampling_keeps_spikes", test_html_downsampling_keeps_spikes},
    {"advice_data_wait", test_advice_data_wait},
    {"advice_lists_alerts", test_advice_lists_alerts},
    {"advice_low_activity", test_advice_low_activity},
    {"advice_memory_low", test_advice_memory_low},
    {"advice_memory_high", test_advice_memory_high},
    {"advice_failure_first", test_advice_failure_first},
    {"advice_keeps_entries_and_is_idempotent", test_advice_keeps_entries_and_is_idempotent},
    {"formats", test_formats},
    {"rank_table", test_rank_table},
    {"escaping", test_escaping},
    {"docs_name_every_rule", test_docs_name_every_rule},
    {0},
};
