/*
 * test_rules.c - custom threshold rules (insight/rules.h): a full rule
 * and its defaults, every malformed rule named with its line, the
 * translation of each agg into PromQL (and expressions taken as
 * written), the comparisons, the summary templates, and the evaluation
 * of rules over a store filled with synthetic series: a rule's value is
 * the PromQL engine's instant answer for its expression.
 */
#include "insight/rules.h"
#include "ingest/remote_write.h"
#include "store/labels.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "store_testlib.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>

static const char good[] =
    "server:\n"
    "  listen: 127.0.0.1:9402\n"
    "agent:\n"
    "  interval: 1s\n"
    "rules:\n"
    "  - name: gpu_hot\n"
    "    expr: DCGM_FI_DEV_GPU_TEMP{modelName=~\"NVIDIA H100.*\"}\n"
    "    agg: max\n"
    "    window: 2m\n"
    "    op: \">=\"\n"
    "    threshold: 85.5\n"
    "    for: 1m\n"
    "    cooldown: 5m\n"
    "    severity: critical\n"
    "    labels:\n"
    "      team: ml\n"
    "    annotations:\n"
    "      summary: \"GPU {{ $labels.gpu }} of {{$labels.Hostname}} at {{ $value }} C\"\n"
    "      runbook: check the fans\n"
    "  - name: low_util\n"
    "    expr: DCGM_FI_DEV_GPU_UTIL\n"
    "    op: <\n"
    "    threshold: 10\n";

static void test_parse(void)
{
    struct gp_rules rs = {0};
    char err[256] = "";
    if (gp_rules_parse_yaml(good, strlen(good), &rs, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "parse: %s", err);
    CHECK_INT(rs.n, 2);
    const struct gp_rule *r = &rs.r[0];
    CHECK_STR(r->name, "gpu_hot");
    CHECK_INT(r->agg, GP_RAGG_MAX);
    CHECK_INT(r->window_ms, 120000);
    CHECK_INT(r->op, GP_ROP_GE);
    CHECK_DBL(r->threshold, 85.5, 0);
    CHECK_INT(r->for_ms, 60000);
    CHECK_INT(r->cooldown_ms, 300000);
    CHECK_INT(r->severity, GP_SEV_CRITICAL);
    CHECK_INT(r->nlabels, 1);
    CHECK_STR(r->label_names[0], "team");
    CHECK_STR(r->label_values[0], "ml");
    CHECK_STR(r->runbook, "check the fans");
    CHECK_STR(r->promql, "max_over_time(DCGM_FI_DEV_GPU_TEMP{modelName=~\"NVIDIA H100.*\"}[2m])");
    CHECK(r->ast != NULL);
    CHECK_INT(r->line, 6);
    r = &rs.r[1]; /* defaults */
    CHECK_INT(r->agg, GP_RAGG_LAST);
    CHECK_INT(r->window_ms, 300000);
    CHECK_INT(r->for_ms, 0);
    CHECK_INT(r->severity, GP_SEV_WARNING);
    CHECK_INT(r->op, GP_ROP_LT);
    CHECK_STR(r->promql, "last_over_time(DCGM_FI_DEV_GPU_UTIL[5m])");
    gp_rules_free(&rs);
    /* No rules section, or an empty one: none. */
    CHECK_INT(gp_rules_parse_yaml("server:\n  listen: x\n", 20, &rs, err, sizeof err), GP_OK);
    CHECK_INT(rs.n, 0);
    CHECK_INT(gp_rules_parse_yaml("rules:\n", 7, &rs, err, sizeof err), GP_OK);
    CHECK_INT(rs.n, 0);
    CHECK_INT(gp_rules_parse_yaml("", 0, &rs, err, sizeof err), GP_OK);
    CHECK_INT(rs.n, 0);
}

/* The PromQL a rule with expr and these extra keys evaluates. */
static void expect_promql(const char *expr, const char *extra, const char *want)
{
    char yaml[1024];
    snprintf(yaml, sizeof yaml, "rules:\n  - name: r\n    expr: '%s'\n    op: '>'\n    threshold: 1\n%s",
             expr, extra);
    struct gp_rules rs = {0};
    char err[256] = "";
    if (gp_rules_parse_yaml(yaml, strlen(yaml), &rs, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "%s: %s", expr, err);
    else if (strcmp(rs.r[0].promql, want))
        gp_test_fail(__FILE__, __LINE__, "%s %s: got '%s', want '%s'", expr, extra, rs.r[0].promql, want);
    gp_rules_free(&rs);
}

static void test_translate(void)
{
    expect_promql("up", "    agg: avg\n    window: 90s\n", "avg_over_time(up[1m30s])");
    expect_promql("up", "    agg: min\n", "min_over_time(up[5m])");
    expect_promql("up", "    agg: max\n", "max_over_time(up[5m])");
    expect_promql("up", "", "last_over_time(up[5m])");
    expect_promql("up", "    window: 10s\n", "last_over_time(up[10s])");
    expect_promql("x_total{a=\"b\"}", "    agg: rate\n    window: 1m\n", "rate(x_total{a=\"b\"}[1m])");
    expect_promql("x_total", "    agg: increase\n    window: 1h\n", "increase(x_total[1h])");
    /* offset and @ follow the range, where PromQL writes them */
    expect_promql("up offset 1m", "    agg: max\n    window: 30s\n", "max_over_time(up[30s] offset 1m)");
    expect_promql("up @ 100", "    agg: max\n    window: 30s\n", "max_over_time(up[30s] @ 100.000)");
    /* any other instant-vector expression is evaluated as written */
    expect_promql("max by (Hostname) (rate(x_total[5m]))", "",
                  "max by (Hostname) (rate(x_total[5m]))");
    expect_promql("a / on(gpu) b", "", "a / on(gpu) b");
}

static void expect_error(const char *yaml, int code, const char *msg)
{
    struct gp_rules rs = {0};
    char err[256] = "";
    int rc = gp_rules_parse_yaml(yaml, strlen(yaml), &rs, err, sizeof err);
    gp_rules_free(&rs);
    if (rc != code || !strstr(err, msg))
        gp_test_fail(__FILE__, __LINE__, "%s: got %d '%s', want %d with '%s'", yaml, rc, err, code, msg);
}

#define R1 "rules:\n  - name: r\n    expr: up\n    op: '>'\n    threshold: 1\n"

static void test_malformed(void)
{
    expect_error("rules: [\n", GP_EPARSE, "line ");
    expect_error("rules: 5\n", GP_ECONFIG, "line 1: 'rules' must be a list");
    expect_error("rules:\n  - 5\n", GP_ECONFIG, "line 2: a rule must be a mapping");
    expect_error("rules:\n  - expr: up\n    op: '>'\n    threshold: 1\n", GP_ECONFIG, "line 2: the rule has no 'name'");
    expect_error("rules:\n  - name: r\n    op: '>'\n    threshold: 1\n", GP_ECONFIG, "no 'expr'");
    expect_error("rules:\n  - name: r\n    expr: up\n    threshold: 1\n", GP_ECONFIG, "no 'op'");
    expect_error("rules:\n  - name: r\n    expr: up\n    op: '>'\n", GP_ECONFIG, "no 'threshold'");
    expect_error(R1 "    agg: median\n", GP_ECONFIG, "line 6: unknown agg 'median'");
    expect_error(R1 "    op2: x\n", GP_ECONFIG, "line 6: unknown rule key 'op2'");
    expect_error(R1 "    window: 5 minutes\n", GP_ECONFIG, "line 6: 'window'");
    expect_error(R1 "    window: 0s\n", GP_ECONFIG, "'window' must be more than 0");
    expect_error(R1 "    for: soon\n", GP_ECONFIG, "line 6: 'for'");
    expect_error(R1 "    severity: loud\n", GP_ECONFIG, "unknown severity 'loud'");
    expect_error(R1 "    labels: [a]\n", GP_ECONFIG, "line 6: 'labels' must be a mapping");
    expect_error(R1 "    labels:\n      9x: a\n", GP_ECONFIG, "line 7: invalid label name '9x'");
    expect_error(R1 "    labels:\n      a: [1]\n", GP_ECONFIG, "'a' must be a single value");
    expect_error(R1 "    annotations:\n      note: a\n", GP_ECONFIG, "line 7: unknown annotation 'note'");
    expect_error("rules:\n  - name: r\n    expr: up\n    op: '=>'\n    threshold: 1\n", GP_ECONFIG,
                 "line 4: unknown op '=>'");
    expect_error("rules:\n  - name: r\n    expr: up\n    op: '>'\n    threshold: hot\n", GP_ECONFIG,
                 "line 5: 'threshold' must be a finite number");
    expect_error("rules:\n  - name: r\n    expr: up{a=\n    op: '>'\n    threshold: 1\n", GP_ECONFIG,
                 "line 2: rule 'r': 'expr': 1:6: parse error");
    expect_error(R1 "    expr2: x\n", GP_ECONFIG, "unknown rule key 'expr2'");
    expect_error("rules:\n  - name: r\n    expr: sum(up)\n    agg: max\n    op: '>'\n    threshold: 1\n",
                 GP_ECONFIG, "line 2: rule 'r': 'agg' and 'window' apply to a plain selector");
    expect_error("rules:\n  - name: r\n    expr: rate(up[1m])\n    window: 1m\n    op: '>'\n    threshold: 1\n",
                 GP_ECONFIG, "'agg' and 'window' apply to a plain selector");
    expect_error("rules:\n  - name: r\n    expr: up[5m]\n    op: '>'\n    threshold: 1\n", GP_ECONFIG,
                 "line 2: rule 'r': 'expr' must be an instant vector expression");
    expect_error("rules:\n  - name: r\n    expr: scalar(up)\n    op: '>'\n    threshold: 1\n", GP_ECONFIG,
                 "must be an instant vector expression");
    expect_error("rules:\n  - name: 'bad name'\n", GP_ECONFIG, "line 2: rule name 'bad name'");
    expect_error("rules:\n  - name: straggler\n    expr: up\n    op: '>'\n    threshold: 1\n", GP_ECONFIG,
                 "name of a built-in detector");
    expect_error(R1 "  - name: r\n    expr: up\n    op: '<'\n    threshold: 1\n", GP_ECONFIG,
                 "line 6: rule name 'r' is used twice");
}

static void test_compare(void)
{
    CHECK(gp_rule_compare(GP_ROP_GT, 2, 1) && !gp_rule_compare(GP_ROP_GT, 1, 1));
    CHECK(gp_rule_compare(GP_ROP_GE, 1, 1) && gp_rule_compare(GP_ROP_LE, 1, 1));
    CHECK(gp_rule_compare(GP_ROP_LT, 0, 1) && gp_rule_compare(GP_ROP_EQ, 1, 1));
    CHECK(gp_rule_compare(GP_ROP_NE, 0, 1) && !gp_rule_compare(GP_ROP_NE, 1, 1));
}

static void test_template(void)
{
    struct gp_label l[2] = {{{"Hostname", 8}, {"n1", 2}}, {{"gpu", 3}, {"7", 1}}};
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_labels_encode(l, 2, &b), GP_OK);
    char out[128];
    gp_rule_template("GPU {{ $labels.gpu }} of {{$labels.Hostname}} at {{ $value }} C {{ x }} {{ "
                     "$labels.none }}|",
                     91.25, (const uint8_t *)b.data, b.len, out, sizeof out);
    CHECK_STR(out, "GPU 7 of n1 at 91.25 C {{ x }} |");
    gp_rule_template("{{ $value }} and {{ unclosed", 3, NULL, 0, out, sizeof out);
    CHECK_STR(out, "3 and {{ unclosed");
    gp_rule_template("0123456789{{ $value }}", 123456, NULL, 0, out, 12);
    CHECK_STR(out, "01234567891");
    gp_buf_free(&b);
}

/* ---- over a store ---- */

/* Appends 5 samples v, 10 s apart and ending at end, to the series of
 * the nl labels l (canonical order). */
static void put5(struct gp_storage *st, struct gp_label *l, size_t nl, const double *v, int64_t end)
{
    struct gp_sample s[5];
    for (int i = 0; i < 5; i++)
        s[i] = (struct gp_sample){v[i], end - (4 - i) * 10000};
    struct gp_series se = {l, nl, s, 5};
    struct gp_batch rq = {&se, 1, nl, 5, NULL};
    struct gp_append_result res;
    char err[256];
    CHECK_INT(gp_storage_append(st, &rq, &res, err, sizeof err), GP_OK);
    CHECK_INT(res.accepted, 5);
}

/* temp{Hostname=n1,gpu=g,modelName=m} with 5 samples, 10 s apart, ending at end. */
static void put_temp(struct gp_storage *st, const char *gpu, const char *model, const double *v,
                     int64_t end)
{
    struct gp_label l[5] = {{{"Hostname", 8}, {"n1", 2}},
                               {{"__name__", 8}, {"DCGM_FI_DEV_GPU_TEMP", 20}},
                               {{"gpu", 3}, {gpu, strlen(gpu)}},
                               {{"job", 3}, {"train", 5}},
                               {{"modelName", 9}, {model, strlen(model)}}};
    /* canonical order: Hostname < __name__ < gpu < job < modelName (byte order) */
    put5(st, l, 5, v, end);
}

struct got {
    int n;
    struct gp_observation o[8];
    char labels[8][512];
    uint64_t extra[8];
};

static int collect(void *ctx, const struct gp_rule_obs *ro)
{
    struct got *g = ctx;
    CHECK(g->n < 8);
    g->o[g->n] = *ro->obs;
    snprintf(g->labels[g->n], sizeof g->labels[0], "%s", ro->labels_json);
    g->extra[g->n] = ro->extra;
    g->n++;
    return GP_OK;
}

static int refuse(void *ctx, const struct gp_rule_obs *ro)
{
    (void)ctx;
    (void)ro;
    return GP_ENOMEM;
}

/* A counter{Hostname=n1,gpu=9} 10, 20, reset to 5, 15, 25, 10 s apart, ending at end. */
static void put_counter(struct gp_storage *st, int64_t end)
{
    struct gp_label l[3] = {{{"Hostname", 8}, {"n1", 2}},
                               {{"__name__", 8}, {"energy_total", 12}},
                               {{"gpu", 3}, {"9", 1}}};
    put5(st, l, 3, (double[]){10, 20, 5, 15, 25}, end);
}

static const char more[] = "rules:\n"
                           "  - name: hot_any\n"
                           "    expr: DCGM_FI_DEV_GPU_TEMP{gpu=\"2\"}\n"
                           "    window: 1m\n"
                           "    op: <\n"
                           "    threshold: 10\n"
                           "  - name: energy\n"
                           "    expr: energy_total\n"
                           "    agg: increase\n"
                           "    window: 1m\n"
                           "    op: '>'\n"
                           "    threshold: 30\n"
                           "  - name: energy_rate\n"
                           "    expr: energy_total\n"
                           "    agg: rate\n"
                           "    window: 1m\n"
                           "    op: '>'\n"
                           "    threshold: 1\n"
                           "  - name: node_hot\n"
                           "    expr: max by (Hostname) (DCGM_FI_DEV_GPU_TEMP)\n"
                           "    op: '>'\n"
                           "    threshold: 90\n"
                           "  - name: short\n"
                           "    expr: DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"}\n"
                           "    agg: max\n"
                           "    window: 15s\n"
                           "    op: '>'\n"
                           "    threshold: 90\n"
                           "  - name: avg_all\n"
                           "    expr: DCGM_FI_DEV_GPU_TEMP\n"
                           "    agg: avg\n"
                           "    window: 1m\n"
                           "    op: '>'\n"
                           "    threshold: 90\n"
                           "  - name: min_all\n"
                           "    expr: DCGM_FI_DEV_GPU_TEMP\n"
                           "    agg: min\n"
                           "    window: 1m\n"
                           "    op: '>'\n"
                           "    threshold: 90\n";

/* Every series' value of rule r at t equals the engine's instant answer
 * for r's PromQL (the agreement with /api/v1/query), and there is at
 * least one. */
static void check_agrees(struct gp_storage *st, const struct gp_rule *r, int64_t t)
{
    struct got g = {0};
    char err[256];
    CHECK_INT(gp_rule_eval(st, r, t, NULL, collect, &g, err, sizeof err), GP_OK);
    struct gp_pq_node *e = NULL;
    CHECK_INT(gp_promql_parse(r->promql, strlen(r->promql), &e, err, sizeof err), GP_OK);
    struct gp_promql_result res = {0};
    CHECK_INT(gp_promql_instant(st, e, t, NULL, &res, err, sizeof err), GP_OK);
    CHECK_INT(res.type, GP_PROMQL_VECTOR);
    CHECK(g.n > 0);
    CHECK_INT((size_t)g.n, res.n);
    for (size_t i = 0; i < res.n && (int)i < g.n; i++) {
        CHECK_INT(g.extra[i], gp_labels_hash(res.series[i].labels, res.series[i].labels_len));
        CHECK_DBL(g.o[i].value, res.series[i].v[0], 0);
    }
    gp_promql_result_free(&res);
    gp_promql_free(e);
}

static void test_eval(void)
{
    struct gp_storage *st = sopen_tmp();
    int64_t end = gp_wall_ms() / 1000 * 1000 - 3600000; /* within the raw retention */
    put_temp(st, "0", "NVIDIA H100 80GB HBM3", (double[]){80, 84, 86, 83, 82}, end);
    put_temp(st, "1", "NVIDIA H100 80GB HBM3", (double[]){70, 71, 72, 73, 74}, end);
    put_temp(st, "2", "NVIDIA A100-SXM4-80GB", (double[]){95, 95, 95, 95, 95}, end);
    put_counter(st, end);
    struct gp_rules rs = {0}, rm = {0};
    char err[256];
    if (gp_rules_parse_yaml(good, strlen(good), &rs, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "%s", err);
    if (gp_rules_parse_yaml(more, strlen(more), &rm, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "%s", err);
    struct got g = {0};
    CHECK_INT(gp_rule_eval(st, &rs.r[0], end, NULL, collect, &g, err, sizeof err), GP_OK);
    CHECK_INT(g.n, 2); /* the A100 is not selected */
    int hot = strcmp(g.o[0].key.gpu, "0") ? 1 : 0;
    CHECK_STR(g.o[hot].key.gpu, "0");
    CHECK(g.o[hot].bad);
    CHECK_DBL(g.o[hot].value, 86, 0);
    CHECK(!g.o[1 - hot].bad);
    CHECK_DBL(g.o[1 - hot].value, 74, 0);
    CHECK_STR(g.o[hot].key.node, "n1");
    CHECK_STR(g.o[hot].key.job, "train");
    CHECK_INT(g.o[hot].key.rank, -1);
    CHECK_INT(g.o[hot].key.det, GP_DET__COUNT);
    CHECK_STR(g.o[hot].summary, "GPU 0 of n1 at 86 C");
    /* the evidence is the PromQL to paste into Grafana, and its value */
    CHECK_CONTAINS(g.o[hot].evidence, "max_over_time(DCGM_FI_DEV_GPU_TEMP{modelName=~\"NVIDIA "
                                      "H100.*\"}[2m]) = 86, threshold >= 85.5; series {");
    CHECK_STR(g.labels[hot], "\"modelName\":\"NVIDIA H100 80GB HBM3\",\"team\":\"ml\"");
    CHECK(g.extra[0] != g.extra[1]);
    /* A window that holds only the last two samples. */
    memset(&g, 0, sizeof g);
    CHECK_INT(gp_rule_eval(st, &rm.r[4], end, NULL, collect, &g, err, sizeof err), GP_OK);
    CHECK_INT(g.n, 1);
    CHECK_DBL(g.o[0].value, 83, 0);
    CHECK(!g.o[0].bad);
    /* Later than the samples: nothing to judge. */
    memset(&g, 0, sizeof g);
    CHECK_INT(gp_rule_eval(st, &rs.r[0], end + 3600000, NULL, collect, &g, err, sizeof err), GP_OK);
    CHECK_INT(g.n, 0);
    /* Prometheus's increase over 1m of 10, 20, 5, 15, 25 (40 s of samples):
     * 35 counted, extrapolated by half a sample interval at the start
     * (the first sample is 20 s into the window): 35 * 45 / 40. */
    memset(&g, 0, sizeof g);
    CHECK_INT(gp_rule_eval(st, &rm.r[1], end, NULL, collect, &g, err, sizeof err), GP_OK);
    CHECK_INT(g.n, 1);
    CHECK_DBL(g.o[0].value, 39.375, 1e-12);
    CHECK(g.o[0].bad);
    CHECK_STR(g.o[0].key.gpu, "9");
    memset(&g, 0, sizeof g);
    CHECK_INT(gp_rule_eval(st, &rm.r[2], end, NULL, collect, &g, err, sizeof err), GP_OK);
    CHECK_DBL(g.o[0].value, 39.375 / 60, 1e-12);
    /* An aggregation as expr: one alert per node. */
    memset(&g, 0, sizeof g);
    CHECK_INT(gp_rule_eval(st, &rm.r[3], end, NULL, collect, &g, err, sizeof err), GP_OK);
    CHECK_INT(g.n, 1);
    CHECK_DBL(g.o[0].value, 95, 0);
    CHECK_STR(g.o[0].key.node, "n1");
    CHECK_STR(g.o[0].key.gpu, "");
    CHECK(g.o[0].bad);
    /* Every rule agrees with the instant query of its expression, at the
     * newest sample and between samples. */
    for (size_t i = 0; i < rm.n; i++) {
        check_agrees(st, &rm.r[i], end);
        check_agrees(st, &rm.r[i], end - 15500);
    }
    check_agrees(st, &rs.r[0], end - 5000);
    /* The default summary, and an emit failure passed up. */
    memset(&g, 0, sizeof g);
    CHECK_INT(gp_rule_eval(st, &rm.r[0], end, NULL, collect, &g, err, sizeof err), GP_OK);
    CHECK_INT(g.n, 1);
    CHECK_STR(g.o[0].summary,
              "hot_any: last_over_time(DCGM_FI_DEV_GPU_TEMP{gpu=\"2\"}[1m]) is 95 (< 10)");
    CHECK_INT(gp_rule_eval(st, &rm.r[0], end, NULL, refuse, NULL, err, sizeof err), GP_ENOMEM);
    CHECK_CONTAINS(err, "hot_any");
    /* An engine error names the rule. */
    struct gp_promql_limits tiny = {.max_samples = 1};
    CHECK_INT(gp_rule_eval(st, &rm.r[5], end, &tiny, collect, &g, err, sizeof err), GP_ERANGE);
    CHECK_CONTAINS(err, "rule 'avg_all': query processing would load too many samples");
    gp_rules_free(&rs);
    gp_rules_free(&rm);
    gp_storage_close(st);
}

/* The example config's rules and the docs' example parse. */
static void test_examples_parse(void)
{
    struct gp_rules rs = {0};
    char err[256] = "";
    const char *ex = gp_test_repo_text("gpulse.example.yaml");
    if (gp_rules_parse_yaml(ex, strlen(ex), &rs, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "gpulse.example.yaml: %s", err);
    CHECK_INT(rs.n, 1);
    const char *doc = strstr(gp_test_repo_text("docs/config.md"), "```yaml\nrules:");
    CHECK(doc != NULL);
    doc += strlen("```yaml\n");
    const char *end = strstr(doc, "```");
    CHECK(end != NULL);
    if (gp_rules_parse_yaml(doc, (size_t)(end - doc), &rs, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "docs/config.md: %s", err);
    CHECK_INT(rs.n, 1);
    CHECK_STR(rs.r[0].name, "gpu_hot");
    gp_rules_free(&rs);
}

const struct gp_test gp_tests_rules[] = {
    {"examples_parse", test_examples_parse},
    {"parse", test_parse},
    {"malformed", test_malformed},
    {"translate", test_translate},
    {"compare", test_compare},
    {"template", test_template},
    {"eval", test_eval},
    {0},
};
