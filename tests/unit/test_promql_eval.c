/*
 * test_promql_eval.c - the PromQL evaluator over a real store, with
 * trees built by hand: selectors and their lookback and staleness
 * edges, offset and @, range selectors and subqueries, aggregations,
 * binary operators and vector matching (and their errors), the
 * structural functions, limits, range-versus-instant consistency, and
 * the JSON Prometheus writes. Expected answers are Prometheus 2.42's
 * for the same data.
 */
#include "promql_testlib.h"
#include "store/labels.h"

#include <math.h>
#include <time.h>

/* The data set:
 *   req{job="api",inst="0"}  0, 10, ..., 90   every minute from T0
 *   req{job="api",inst="1"}  0, 20, ..., 180
 *   req{job="db",inst="0"}   5 (constant)
 *   mem{job="api",inst="0"} 100, mem{job="api",inst="1"} 200 (T0 .. +9m)
 *   info{job="api",ver="v1"} 1, info{job="db",ver="v2"} 1 (T0 .. +9m)
 *   st{job="x"}  1 @T0, 2 @+1m, stale @+2m, 4 @+5m
 */
static struct gp_storage *fill(void)
{
    struct gp_storage *s = pt_open();
    pt_line(s, "req{job=\"api\",inst=\"0\"}", T0, MIN, 10, 0, 10);
    pt_line(s, "req{job=\"api\",inst=\"1\"}", T0, MIN, 10, 0, 20);
    pt_line(s, "req{job=\"db\",inst=\"0\"}", T0, MIN, 10, 5, 0);
    pt_line(s, "mem{job=\"api\",inst=\"0\"}", T0, MIN, 10, 100, 0);
    pt_line(s, "mem{job=\"api\",inst=\"1\"}", T0, MIN, 10, 200, 0);
    pt_line(s, "info{job=\"api\",ver=\"v1\"}", T0, MIN, 10, 1, 0);
    pt_line(s, "info{job=\"db\",ver=\"v2\"}", T0, MIN, 10, 1, 0);
    int64_t t[] = {T0, T0 + MIN, T0 + 2 * MIN, T0 + 5 * MIN};
    double v[] = {1, 2, STALE, 4};
    pt_add(s, "st{job=\"x\"}", 4, t, v);
    return s;
}

#define API0 "{__name__=\"req\", inst=\"0\", job=\"api\"}"
#define API1 "{__name__=\"req\", inst=\"1\", job=\"api\"}"
#define DB0 "{__name__=\"req\", inst=\"0\", job=\"db\"}"

static void test_selector_lookback(void)
{
    struct gp_storage *s = fill();
    CHECK_STR(pt_inst(s, V("req{job=\"api\"}"), T0 + 3 * MIN), API0 " 30; " API1 " 60");
    /* Between samples: the newest at or before t. */
    CHECK_STR(pt_inst(s, V("req{inst=\"1\"}"), T0 + 3 * MIN + 59999), API1 " 60");
    /* Before the first sample: nothing. */
    CHECK_STR(pt_inst(s, V("req"), T0 - 1), "");
    /* Lookback 5m, both ends included in 2.42: last sample +9m, seen at +14m. */
    CHECK_STR(pt_inst(s, V("req{job=\"db\"}"), T0 + 14 * MIN), DB0 " 5");
    CHECK_STR(pt_inst(s, V("req{job=\"db\"}"), T0 + 14 * MIN + 1), "");
    /* Prometheus 3 windows are left-open. */
    struct gp_promql_limits lim = {.prom3_windows = 1};
    CHECK_STR(pt_inst_lim(s, V("req{job=\"db\"}"), T0 + 14 * MIN, &lim), "");
    /* A shorter lookback. */
    lim = (struct gp_promql_limits){.lookback_ms = 30000};
    CHECK_STR(pt_inst_lim(s, V("req{job=\"db\"}"), T0 + 9 * MIN + 30001, &lim), "");
    CHECK_STR(pt_inst_lim(s, V("req{job=\"db\"}"), T0 + 9 * MIN + 30000, &lim), DB0 " 5");
    gp_storage_close(s);
}

static void test_staleness(void)
{
    struct gp_storage *s = fill();
    CHECK_STR(pt_inst(s, V("st"), T0 + MIN + 30000), "{__name__=\"st\", job=\"x\"} 2");
    /* The stale marker ends the series at once, not 5m later. */
    CHECK_STR(pt_inst(s, V("st"), T0 + 2 * MIN), "");
    CHECK_STR(pt_inst(s, V("st"), T0 + 4 * MIN), "");
    CHECK_STR(pt_inst(s, V("st"), T0 + 5 * MIN), "{__name__=\"st\", job=\"x\"} 4");
    /* Range vectors drop the marker. */
    CHECK_STR(pt_inst(s, M("st", 5 * MIN), T0 + 5 * MIN),
              "{__name__=\"st\", job=\"x\"} 1@0 2@60 4@300");
    /* A range query: the marker hides the steps until the next sample. */
    CHECK_STR(pt_range(s, V("st"), T0, T0 + 6 * MIN, MIN),
              "{__name__=\"st\", job=\"x\"} 1@0 2@60 4@300 4@360");
    gp_storage_close(s);
}

static void test_offset_and_at(void)
{
    struct gp_storage *s = fill();
    CHECK_STR(pt_inst(s, OFFSET(V("req{job=\"api\",inst=\"0\"}"), 2 * MIN), T0 + 5 * MIN),
              API0 " 30");
    /* Negative offset looks ahead. */
    CHECK_STR(pt_inst(s, OFFSET(V("req{job=\"api\",inst=\"0\"}"), -2 * MIN), T0 + 5 * MIN),
              API0 " 70");
    CHECK_STR(pt_inst(s, AT(V("req{job=\"api\",inst=\"0\"}"), GP_PQ_AT_TIME, T0 + MIN), T0 + 8 * MIN),
              API0 " 10");
    /* @ with offset: the offset counts from the @ time. */
    CHECK_STR(pt_inst(s, OFFSET(AT(V("req{job=\"api\",inst=\"0\"}"), GP_PQ_AT_TIME, T0 + 4 * MIN), MIN),
                      T0 + 9 * MIN),
              API0 " 30");
    /* @ start() / end() in a range query: the same value at every step. */
    CHECK_STR(pt_range(s, AT(V("req{job=\"api\",inst=\"0\"}"), GP_PQ_AT_START, 0), T0 + MIN,
                       T0 + 3 * MIN, MIN),
              API0 " 10@60 10@120 10@180");
    CHECK_STR(pt_range(s, AT(V("req{job=\"api\",inst=\"0\"}"), GP_PQ_AT_END, 0), T0 + MIN,
                       T0 + 3 * MIN, MIN),
              API0 " 30@60 30@120 30@180");
    /* Range selectors move the same way. */
    CHECK_STR(pt_inst(s, OFFSET(M("req{job=\"api\",inst=\"0\"}", 2 * MIN), MIN), T0 + 5 * MIN),
              API0 " 20@120 30@180 40@240");
    gp_storage_close(s);
}

static void test_range_selector_bounds(void)
{
    struct gp_storage *s = fill();
    /* [t - 2m, t]: both ends included in 2.42. */
    CHECK_STR(pt_inst(s, M("req{job=\"api\",inst=\"0\"}", 2 * MIN), T0 + 4 * MIN),
              API0 " 20@120 30@180 40@240");
    struct gp_promql_limits lim = {.prom3_windows = 1};
    CHECK_STR(pt_inst_lim(s, M("req{job=\"api\",inst=\"0\"}", 2 * MIN), T0 + 4 * MIN, &lim),
              API0 " 30@180 40@240");
    CHECK_STR(pt_inst(s, M("nothing", MIN), T0), "");
    /* A range vector in a range query is refused, with Prometheus's words. */
    CHECK_STR(pt_range(s, M("req", MIN), T0, T0 + MIN, MIN),
              "error: invalid expression type \"range vector\" for range query, must be Scalar or "
              "instant Vector");
    gp_storage_close(s);
}

static void test_range_functions(void)
{
    struct gp_storage *s = fill();
    /* Range functions drop __name__, last_over_time keeps it. */
    CHECK_STR(pt_inst(s, F(GP_PQ_F_COUNT_OVER_TIME, 1, M("req{job=\"api\"}", 2 * MIN)), T0 + 4 * MIN),
              "{inst=\"0\", job=\"api\"} 3; {inst=\"1\", job=\"api\"} 3");
    CHECK_STR(pt_inst(s, F(GP_PQ_F_LAST_OVER_TIME, 1, M("req{inst=\"1\"}", 2 * MIN)), T0 + 4 * MIN),
              API1 " 80");
    /* An empty window gives no sample. */
    CHECK_STR(pt_inst(s, F(GP_PQ_F_SUM_OVER_TIME, 1, M("req", MIN)), T0 - 2 * MIN), "");
    /* The same over a range: window by window. */
    CHECK_STR(pt_range(s, F(GP_PQ_F_SUM_OVER_TIME, 1, M("req{inst=\"1\"}", MIN)), T0, T0 + 3 * MIN, MIN),
              "{inst=\"1\", job=\"api\"} 0@0 20@60 60@120 100@180");
    /* Two series that differ only in their name collide once it is dropped. */
    CHECK_STR(pt_inst(s, F(GP_PQ_F_SUM_OVER_TIME, 1, M("{inst=\"1\",__name__=~\"req|mem\"}", MIN)),
                      T0 + MIN),
              "error: vector cannot contain metrics with the same labelset");
    gp_storage_close(s);
}

static void test_subqueries(void)
{
    struct gp_storage *s = fill();
    /* [5m:2m] at +5m: steps at the multiples of 2m in [0m, 5m] after T0
     * (T0 is hour-aligned): +0, +2m, +4m. */
    CHECK_STR(pt_inst(s, SUB(V("req{inst=\"1\"}"), 5 * MIN, 2 * MIN), T0 + 5 * MIN),
              API1 " 0@0 40@120 80@240");
    /* Default resolution: limits.subquery_step_ms (1m). */
    CHECK_STR(pt_inst(s, F(GP_PQ_F_COUNT_OVER_TIME, 1, SUB(V("req{inst=\"1\"}"), 3 * MIN, 0)),
                      T0 + 5 * MIN),
              "{inst=\"1\", job=\"api\"} 4");
    /* Offset on the subquery. */
    CHECK_STR(pt_inst(s, OFFSET(SUB(V("req{inst=\"1\"}"), 2 * MIN, MIN), 3 * MIN), T0 + 5 * MIN),
              API1 " 0@0 20@60 40@120");
    /* Nested: a subquery of a function of a subquery. */
    CHECK_STR(pt_inst(s, F(GP_PQ_F_SUM_OVER_TIME, 1,
                           SUB(F(GP_PQ_F_COUNT_OVER_TIME, 1, SUB(V("req{inst=\"1\"}"), 2 * MIN, MIN)),
                               2 * MIN, MIN)),
                      T0 + 4 * MIN),
              "{inst=\"1\", job=\"api\"} 9");
    /* In a range query, each step's window of the one inner evaluation. */
    CHECK_STR(pt_range(s, F(GP_PQ_F_SUM_OVER_TIME, 1, SUB(V("req{inst=\"1\"}"), MIN, MIN)), T0 + MIN,
                       T0 + 3 * MIN, MIN),
              "{inst=\"1\", job=\"api\"} 20@60 60@120 100@180");
    gp_storage_close(s);
}

static void test_aggregations(void)
{
    struct gp_storage *s = fill();
    int64_t t = T0 + 3 * MIN; /* api0 30, api1 60, db0 5 */
    CHECK_STR(pt_inst(s, A(GP_PQ_A_SUM, V("req"), NULL, 0, NULL), t), "{} 95");
    CHECK_STR(pt_inst(s, A(GP_PQ_A_SUM, V("req"), NULL, 0, "job"), t),
              "{job=\"api\"} 90; {job=\"db\"} 5");
    CHECK_STR(pt_inst(s, A(GP_PQ_A_MAX, V("req"), NULL, 1, "inst"), t),
              "{job=\"api\"} 60; {job=\"db\"} 5");
    CHECK_STR(pt_inst(s, A(GP_PQ_A_MIN, V("req"), NULL, 0, "inst"), t),
              "{inst=\"0\"} 5; {inst=\"1\"} 60");
    CHECK_STR(pt_inst(s, A(GP_PQ_A_COUNT, V("req"), NULL, 0, "job"), t),
              "{job=\"api\"} 2; {job=\"db\"} 1");
    CHECK_STR(pt_inst(s, A(GP_PQ_A_GROUP, V("req"), NULL, 0, "job"), t),
              "{job=\"api\"} 1; {job=\"db\"} 1");
    CHECK_STR(pt_inst(s, A(GP_PQ_A_AVG, V("req"), NULL, 0, "job"), t),
              "{job=\"api\"} 45; {job=\"db\"} 5");
    /* by (__name__) keeps the name. */
    CHECK_STR(pt_inst(s, A(GP_PQ_A_SUM, V("req"), NULL, 0, "__name__"), t), "{__name__=\"req\"} 95");
    /* topk: the series themselves, highest first; groups as they appear. */
    CHECK_STR(pt_inst(s, A(GP_PQ_A_TOPK, V("req"), N(2), 0, NULL), t), API1 " 60; " API0 " 30");
    CHECK_STR(pt_inst(s, A(GP_PQ_A_BOTTOMK, V("req"), N(1), 0, "job"), t),
              API0 " 30; " DB0 " 5");
    CHECK_STR(pt_inst(s, A(GP_PQ_A_TOPK, V("req"), N(0), 0, NULL), t), "");
    CHECK_STR(pt_inst(s, A(GP_PQ_A_TOPK, V("nothing"), N(NAN), 0, NULL), t),
              "error: Scalar value NaN overflows int64");
    CHECK_STR(pt_inst(s, A(GP_PQ_A_BOTTOMK, V("req"), N(-1e19), 0, NULL), t),
              "error: Scalar value -1e+19 overflows int64");
    CHECK_STR(pt_inst(s, A(GP_PQ_A_COUNT_VALUES, V("mem"), S("v"), 0, NULL), t),
              "{v=\"100\"} 1; {v=\"200\"} 1");
    CHECK_STR(pt_inst(s, A(GP_PQ_A_COUNT_VALUES, V("info"), S("v"), 0, "job"), t),
              "{job=\"api\", v=\"1\"} 1; {job=\"db\", v=\"1\"} 1");
    CHECK_STR(pt_inst(s, A(GP_PQ_A_COUNT_VALUES, V("info"), S("1bad"), 0, NULL), t),
              "error: invalid label name \"1bad\"");
    CHECK_STR(pt_inst(s, A(GP_PQ_A_QUANTILE, V("req"), N(0.5), 0, NULL), t), "{} 30");
    /* limitk: the first k of each group in label order. */
    CHECK_STR(pt_inst(s, A(GP_PQ_A_LIMITK, V("req"), N(1), 0, "job"), t), API0 " 30; " DB0 " 5");
    /* A range query of an aggregation: one group's value per step. */
    CHECK_STR(pt_range(s, A(GP_PQ_A_SUM, V("req"), NULL, 0, "job"), T0, T0 + 2 * MIN, MIN),
              "{job=\"api\"} 0@0 30@60 60@120; {job=\"db\"} 5@0 5@60 5@120");
    gp_storage_close(s);
}

static void test_binary_scalar(void)
{
    struct gp_storage *s = fill();
    int64_t t = T0 + 3 * MIN;
    CHECK_STR(pt_inst(s, B(GP_PQ_OP_POW, N(2), N(10)), t), "s 1024");
    CHECK_STR(pt_inst(s, BOOL(B(GP_PQ_OP_GTR, N(2), N(1))), t), "s 1");
    /* Arithmetic drops the name; a filtering comparison keeps it. */
    CHECK_STR(pt_inst(s, B(GP_PQ_OP_MUL, V("req{job=\"api\"}"), N(2)), t),
              "{inst=\"0\", job=\"api\"} 60; {inst=\"1\", job=\"api\"} 120");
    CHECK_STR(pt_inst(s, B(GP_PQ_OP_GTR, V("req"), N(10)), t), API0 " 30; " API1 " 60");
    /* scalar < vector keeps the vector's value. */
    CHECK_STR(pt_inst(s, B(GP_PQ_OP_LSS, N(40), V("req")), t), API1 " 60");
    CHECK_STR(pt_inst(s, BOOL(B(GP_PQ_OP_GTR, V("req{job=\"api\"}"), N(40))), t),
              "{inst=\"0\", job=\"api\"} 0; {inst=\"1\", job=\"api\"} 1");
    CHECK_STR(pt_inst(s, B(GP_PQ_OP_SUB, N(100), V("req{inst=\"1\"}")), t), "{inst=\"1\", job=\"api\"} 40");
    CHECK_STR(pt_inst(s, NEG(V("req{inst=\"1\"}")), t), "{inst=\"1\", job=\"api\"} -60");
    CHECK_STR(pt_inst(s, B(GP_PQ_OP_MOD, V("req{inst=\"1\"}"), N(7)), t), "{inst=\"1\", job=\"api\"} 4");
    /* Dropping the name can make two series one. */
    CHECK_STR(pt_inst(s, B(GP_PQ_OP_ADD, V("{inst=\"1\",__name__=~\"req|mem\"}"), N(1)), t),
              "error: vector cannot contain metrics with the same labelset");
    gp_storage_close(s);
}

static void test_vector_matching(void)
{
    struct gp_storage *s = fill();
    int64_t t = T0 + 3 * MIN;
    /* One-to-one on all labels but the name. */
    CHECK_STR(pt_inst(s, B(GP_PQ_OP_ADD, V("req"), V("mem")), t),
              "{inst=\"0\", job=\"api\"} 130; {inst=\"1\", job=\"api\"} 260");
    /* on(): only the listed labels stay. */
    CHECK_STR(pt_inst(s, MATCH(B(GP_PQ_OP_DIV, V("req{job=\"api\"}"), V("mem")), 1, "inst",
                               GP_PQ_CARD_ONE_TO_ONE, NULL),
                      t),
              "{inst=\"0\"} 0.3; {inst=\"1\"} 0.3");
    /* Many-to-one must be explicit. */
    CHECK_STR(pt_inst(s, MATCH(B(GP_PQ_OP_MUL, V("req"), V("info")), 1, "job",
                               GP_PQ_CARD_ONE_TO_ONE, NULL),
                      t),
              "error: multiple matches for labels: many-to-one matching must be explicit "
              "(group_left/group_right)");
    /* group_left(ver): the label comes from the one side. */
    CHECK_STR(pt_inst(s, MATCH(B(GP_PQ_OP_MUL, V("req"), V("info")), 1, "job",
                               GP_PQ_CARD_MANY_TO_ONE, "ver"),
                      t),
              "{inst=\"0\", job=\"api\", ver=\"v1\"} 30; {inst=\"0\", job=\"db\", ver=\"v2\"} 5; "
              "{inst=\"1\", job=\"api\", ver=\"v1\"} 60");
    /* group_right: the many side is the right one. */
    CHECK_STR(pt_inst(s, MATCH(B(GP_PQ_OP_SUB, V("info"), V("req")), 1, "job",
                               GP_PQ_CARD_ONE_TO_MANY, NULL),
                      t),
              "{inst=\"0\", job=\"api\"} -29; {inst=\"0\", job=\"db\"} -4; {inst=\"1\", job=\"api\"} -59");
    /* Duplicates on the one side. */
    CHECK_STR(pt_inst(s, MATCH(B(GP_PQ_OP_MUL, V("info"), V("req")), 1, "job",
                               GP_PQ_CARD_MANY_TO_ONE, NULL),
                      t),
              "error: found duplicate series for the match group {job=\"api\"} on the right "
              "hand-side of the operation: [" API1 ", " API0 "];many-to-many matching not "
              "allowed: matching labels must be unique on one side");
    /* ignoring(inst) with group_left: many api series to one... duplicates again. */
    CHECK_STR(pt_inst(s, MATCH(B(GP_PQ_OP_GTR, V("req"), V("mem")), 0, "inst",
                               GP_PQ_CARD_ONE_TO_ONE, NULL),
                      t),
              "error: found duplicate series for the match group {job=\"api\"} on the right "
              "hand-side of the operation: [{__name__=\"mem\", inst=\"1\", job=\"api\"}, "
              "{__name__=\"mem\", inst=\"0\", job=\"api\"}];many-to-many matching not allowed: "
              "matching labels must be unique on one side");
    /* Comparison filters and keeps the left side's name; bool drops it. */
    CHECK_STR(pt_inst(s, B(GP_PQ_OP_LSS, V("req"), V("mem")), t), API0 " 30; " API1 " 60");
    CHECK_STR(pt_inst(s, BOOL(B(GP_PQ_OP_GTR, V("req"), V("mem"))), t),
              "{inst=\"0\", job=\"api\"} 0; {inst=\"1\", job=\"api\"} 0");
    /* An empty side matches nothing and raises nothing. */
    CHECK_STR(pt_inst(s, MATCH(B(GP_PQ_OP_MUL, V("nothing"), V("req")), 1, "job",
                               GP_PQ_CARD_ONE_TO_ONE, NULL),
                      t),
              "");
    gp_storage_close(s);
}

static void test_set_operators(void)
{
    struct gp_storage *s = fill();
    int64_t t = T0 + 3 * MIN;
    CHECK_STR(pt_inst(s, B(GP_PQ_OP_AND, V("req"), V("mem")), t), API0 " 30; " API1 " 60");
    CHECK_STR(pt_inst(s, B(GP_PQ_OP_UNLESS, V("req"), V("mem")), t), DB0 " 5");
    CHECK_STR(pt_inst(s, MATCH(B(GP_PQ_OP_AND, V("req"), V("info{job=\"db\"}")), 1, "job",
                               GP_PQ_CARD_MANY_TO_MANY, NULL),
                      t),
              DB0 " 5");
    CHECK_STR(pt_inst(s, B(GP_PQ_OP_OR, V("mem"), V("req")), t),
              "{__name__=\"mem\", inst=\"0\", job=\"api\"} 100; {__name__=\"mem\", inst=\"1\", "
              "job=\"api\"} 200; " DB0 " 5");
    /* Across steps: "or" fills the steps where the left side is absent. */
    CHECK_STR(pt_range(s, B(GP_PQ_OP_OR, V("st"), F(GP_PQ_F_VECTOR, 1, N(-1))), T0, T0 + 3 * MIN, MIN),
              "{} -1@0 -1@60 -1@120 -1@180; {__name__=\"st\", job=\"x\"} 1@0 2@60");
    gp_storage_close(s);
}

static void test_structural_functions(void)
{
    struct gp_storage *s = fill();
    int64_t t = T0 + 3 * MIN;
    CHECK_STR(pt_inst(s, F(GP_PQ_F_LABEL_REPLACE, 5, V("req{job=\"db\"}"), S("dst"), S("x-$1-${2}$$"),
                           S("job"), S("(d)(b)")),
                      t),
              "{__name__=\"req\", dst=\"x-d-b$\", inst=\"0\", job=\"db\"} 5");
    /* No match: unchanged; empty result deletes the label. */
    CHECK_STR(pt_inst(s, F(GP_PQ_F_LABEL_REPLACE, 5, V("req{job=\"db\"}"), S("job"), S(""), S("job"),
                           S("d.*")),
                      t),
              "{__name__=\"req\", inst=\"0\"} 5");
    CHECK_STR(pt_inst(s, F(GP_PQ_F_LABEL_REPLACE, 5, V("req{job=\"db\"}"), S("job"), S("z"), S("job"),
                           S("api")),
                      t),
              DB0 " 5");
    /* RE2's \\w \\d \\s classes, outside and inside brackets. */
    CHECK_STR(pt_inst(s, F(GP_PQ_F_LABEL_REPLACE, 5, V("req{job=\"db\"}"), S("dst"), S("$2$1"),
                           S("__name__"), S("(\\w)[\\d\\s]*(\\W?\\D)q")),
                      t),
              "{__name__=\"req\", dst=\"er\", inst=\"0\", job=\"db\"} 5");
    /* Flags, non-capturing and named groups: $1 and $name count RE2's
     * groups, not the POSIX translation's. */
    CHECK_STR(pt_inst(s, F(GP_PQ_F_LABEL_REPLACE, 5, V("req{job=\"db\"}"), S("dst"),
                           S("$1-$n-${n}"), S("job"), S("(?i)(?:D)(?P<n>B)")),
                      t),
              "{__name__=\"req\", dst=\"b-b-b\", inst=\"0\", job=\"db\"} 5");
    /* A repeated name: the first group of that name that took part. */
    CHECK_STR(pt_inst(s, F(GP_PQ_F_LABEL_REPLACE, 5, V("req{job=\"db\"}"), S("dst"), S("$n"),
                           S("job"), S("(?P<n>x)|d(?P<n>b)")),
                      t),
              "{__name__=\"req\", dst=\"b\", inst=\"0\", job=\"db\"} 5");
    CHECK_CONTAINS(pt_inst(s, F(GP_PQ_F_LABEL_REPLACE, 5, V("req"), S("d"), S(""), S("job"),
                                S("\\bx")),
                           t),
                   "error: invalid regular expression in label_replace(): word boundaries");
    /* A lazy quantifier could make a group capture other text than RE2's. */
    CHECK_CONTAINS(pt_inst(s, F(GP_PQ_F_LABEL_REPLACE, 5, V("req"), S("d"), S("$1"), S("job"),
                                S("(.*?)b")),
                           t),
                   "lazy quantifiers ('*?', '+?') with capture groups are not supported");
    CHECK_STR(pt_inst(s, F(GP_PQ_F_LABEL_REPLACE, 5, V("req{job=\"db\"}"), S("dst"), S("x"),
                           S("job"), S("d.*?")),
                      t),
              "{__name__=\"req\", dst=\"x\", inst=\"0\", job=\"db\"} 5");
    CHECK_STR(pt_inst(s, F(GP_PQ_F_LABEL_REPLACE, 5, V("req"), S("0x"), S(""), S("job"), S(".*")), t),
              "error: invalid destination label name in label_replace(): 0x");
    CHECK_STR(pt_inst(s, F(GP_PQ_F_LABEL_JOIN, 5, V("req{job=\"db\"}"), S("j"), S("/"), S("job"),
                           S("inst")),
                      t),
              "{__name__=\"req\", inst=\"0\", j=\"db/0\", job=\"db\"} 5");
    /* absent: labels from the equality matchers. */
    CHECK_STR(pt_inst(s, F(GP_PQ_F_ABSENT, 1, V("nope{job=\"a\",x=~\"y\",z=\"1\",z=\"2\"}")), t),
              "{job=\"a\"} 1");
    CHECK_STR(pt_inst(s, F(GP_PQ_F_ABSENT, 1, V("nope{x=\"\",x=\"a\",y!=\"b\",y=\"c\"}")), t), "{x=\"a\"} 1");
    CHECK_STR(pt_inst(s, F(GP_PQ_F_ABSENT, 1, V("req")), t), "");
    CHECK_STR(pt_range(s, F(GP_PQ_F_ABSENT, 1, V("st")), T0, T0 + 5 * MIN, MIN),
              "{} 1@120 1@180 1@240");
    CHECK_STR(pt_inst(s, F(GP_PQ_F_ABSENT_OVER_TIME, 1, M("st{job=\"x\"}", MIN)), T0 + 4 * MIN),
              "{job=\"x\"} 1");
    CHECK_STR(pt_inst(s, F(GP_PQ_F_ABSENT_OVER_TIME, 1, M("st{job=\"x\"}", 3 * MIN)), T0 + 4 * MIN),
              "");
    CHECK_STR(pt_inst(s, F(GP_PQ_F_SCALAR, 1, V("req{inst=\"1\"}")), t), "s 60");
    CHECK_STR(pt_inst(s, F(GP_PQ_F_SCALAR, 1, V("req")), t), "s NaN");
    CHECK_STR(pt_inst(s, F(GP_PQ_F_TIME, 0), T0 + 1500), "s 1699999201.5");
    CHECK_STR(pt_inst(s, F(GP_PQ_F_VECTOR, 1, N(3)), t), "{} 3");
    /* timestamp of a selector: the sample's time, not the step's. */
    CHECK_STR(pt_inst(s, F(GP_PQ_F_TIMESTAMP, 1, V("req{inst=\"1\"}")), T0 + 3 * MIN + 5000),
              "{inst=\"1\", job=\"api\"} 1699999380");
    CHECK_STR(pt_inst(s, F(GP_PQ_F_SORT_DESC, 1, V("req")), t), API1 " 60; " API0 " 30; " DB0 " 5");
    CHECK_STR(pt_inst(s, F(GP_PQ_F_SORT, 1, V("req")), t), DB0 " 5; " API0 " 30; " API1 " 60");
    CHECK_STR(pt_inst(s, F(GP_PQ_F_SORT_BY_LABEL_DESC, 2, V("req"), S("inst")), t),
              API1 " 60; " DB0 " 5; " API0 " 30");
    /* sort_by_label: values in natural order (node-2 before node-10). */
    struct gp_storage *n = pt_open_in("nat");
    const char *nodes[] = {"node-10", "node-2", "node-1b", "node-02a", "node-"};
    char sel[64];
    for (int i = 0; i < 5; i++) {
        snprintf(sel, sizeof sel, "up{n=\"%s\"}", nodes[i]);
        pt_line(n, sel, T0, MIN, 1, i, 0);
    }
    CHECK_STR(pt_inst(n, F(GP_PQ_F_SORT_BY_LABEL, 2, V("up"), S("n")), T0),
              "{__name__=\"up\", n=\"node-\"} 4; {__name__=\"up\", n=\"node-1b\"} 2; "
              "{__name__=\"up\", n=\"node-2\"} 1; {__name__=\"up\", n=\"node-02a\"} 3; "
              "{__name__=\"up\", n=\"node-10\"} 0");
    gp_storage_close(n);
    /* Date functions default to vector(time()). */
    CHECK_STR(pt_inst(s, F(GP_PQ_F_HOUR, 0), T0), "{} 22");
    CHECK_STR(pt_inst(s, F(GP_PQ_F_ABS, 1, NEG(V("req{inst=\"1\"}"))), t),
              "{inst=\"1\", job=\"api\"} 60");
    gp_storage_close(s);
}

static void test_limits(void)
{
    struct gp_storage *s = fill();
    struct gp_promql_limits lim = {.max_samples = 5};
    CHECK_STR(pt_inst_lim(s, V("req"), T0, &lim), API0 " 0; " DB0 " 5; " API1 " 0");
    CHECK_STR(pt_inst_lim(s, M("req", 5 * MIN), T0 + 5 * MIN, &lim),
              "error: query processing would load too many samples into memory in query "
              "execution");
    struct gp_promql_result r;
    char err[256];
    struct gp_pq_node *e = V("req");
    lim.max_samples = 7;
    CHECK_INT(gp_promql_range(s, e, T0, T0 + 2 * MIN, MIN, &lim, &r, err, sizeof err), GP_ERANGE);
    gp_promql_result_free(&r);
    lim.max_samples = 9;
    CHECK_INT(gp_promql_range(s, e, T0, T0 + 2 * MIN, MIN, &lim, &r, err, sizeof err), GP_OK);
    CHECK(r.samples_peak == 9);
    gp_promql_result_free(&r);
    gp_promql_free(e);
    /* Memory: a series takes a slot per step of the query even where it
     * has no point, so slots are held to the limit too (3 series x 6010
     * steps here, 30 points). */
    lim.max_samples = 10000;
    char *whole = strdup(pt_range(s, V("req"), T0 - 100 * 3600 * 1000LL, T0 + 10 * MIN, MIN));
    CHECK_STR(whole, pt_range(s, V("req"), T0, T0 + 10 * MIN, MIN));
    CHECK_CONTAINS(whole, API0 " 0@0 10@60");
    free(whole);
    e = V("req");
    CHECK_INT(gp_promql_range(s, e, T0 - 100 * 3600 * 1000LL, T0 + 10 * MIN, MIN, &lim, &r, err,
                              sizeof err),
              GP_ERANGE);
    gp_promql_result_free(&r);
    gp_promql_free(e);
    /* A subquery's grid beyond the limit is refused before it is built. */
    CHECK_STR(pt_inst_lim(s, F(GP_PQ_F_COUNT_OVER_TIME, 1, SUB(V("req"), 365 * 24 * 3600 * 1000LL, 1)),
                          T0, &lim),
              "error: query processing would load too many samples into memory in query "
              "execution");
    /* Timeout: a deadline already passed. */
    lim = (struct gp_promql_limits){.timeout_ms = 1};
    e = A(GP_PQ_A_SUM, F(GP_PQ_F_SUM_OVER_TIME, 1, SUB(V("req"), 3600 * 1000, 1000)), NULL, 0, NULL);
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, NULL);
    int rc = gp_promql_range(s, e, T0, T0 + 3600 * 1000, 1000, &lim, &r, err, sizeof err);
    CHECK_INT(rc, GP_PROMQL_ETIMEOUT);
    CHECK_STR(err, "query timed out in expression evaluation");
    gp_promql_result_free(&r);
    gp_promql_free(e);
    /* Range checks. */
    e = V("req");
    CHECK_INT(gp_promql_range(s, e, T0, T0 - 1, MIN, NULL, &r, err, sizeof err), GP_EUSAGE);
    CHECK_INT(gp_promql_range(s, e, T0, T0, 0, NULL, &r, err, sizeof err), GP_EUSAGE);
    CHECK_INT(gp_promql_range(s, e, T0, T0 + 11001 * 1000LL, 1000, NULL, &r, err, sizeof err),
              GP_EUSAGE);
    gp_promql_free(e);
    gp_storage_close(s);
}

/* A range query equals the instant queries at each of its steps. */
static void check_consistent(struct gp_storage *s, struct gp_pq_node *e, int64_t start,
                             int64_t end, int64_t step)
{
    struct gp_promql_result r;
    char err[256] = "";
    int rc = gp_promql_range(s, e, start, end, step, NULL, &r, err, sizeof err);
    if (rc != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "range: %s", err);
    for (int64_t t = start; t <= end; t += step) {
        struct gp_promql_result in;
        CHECK_INT(gp_promql_instant(s, e, t, NULL, &in, err, sizeof err), GP_OK);
        size_t found = 0;
        for (size_t i = 0; i < r.n; i++)
            for (size_t k = 0; k < r.series[i].n; k++) {
                if (r.series[i].t[k] != t)
                    continue;
                found++;
                int hit = 0;
                if (in.type == GP_PROMQL_SCALAR) {
                    double a = in.scalar, b = r.series[i].v[k];
                    CHECK(a == b || (isnan(a) && isnan(b)));
                    hit = 1;
                }
                for (size_t j = 0; j < in.n; j++)
                    if (!gp_pq_labels_cmp(in.series[j].labels, in.series[j].labels_len,
                                          r.series[i].labels, r.series[i].labels_len)) {
                        hit = 1;
                        double a = in.series[j].v[0], b = r.series[i].v[k];
                        CHECK(a == b || (isnan(a) && isnan(b)));
                    }
                if (!hit)
                    gp_test_fail(__FILE__, __LINE__, "step %lld: range %s, instant %s",
                                 (long long)(t - T0) / 1000, pt_str(&r), pt_str(&in));
            }
        if (in.type == GP_PROMQL_SCALAR)
            CHECK(found == 1);
        else
            CHECK_INT(found, in.n);
        gp_promql_result_free(&in);
    }
    gp_promql_result_free(&r);
    gp_promql_free(e);
}

static void test_range_matches_instant(void)
{
    struct gp_storage *s = fill();
    int64_t a = T0 - 2 * MIN, b = T0 + 16 * MIN, st = 37000;
    check_consistent(s, V("st"), a, b, st);
    check_consistent(s, F(GP_PQ_F_SUM_OVER_TIME, 1, M("req", 150000)), a, b, st);
    check_consistent(s, F(GP_PQ_F_COUNT_OVER_TIME, 1, SUB(V("req{job=\"api\"}"), 4 * MIN, 50000)), a, b, st);
    check_consistent(s, A(GP_PQ_A_AVG, V("req"), NULL, 0, "inst"), a, b, st);
    check_consistent(s, MATCH(B(GP_PQ_OP_MUL, V("req"), V("info")), 1, "job", GP_PQ_CARD_MANY_TO_ONE, "ver"),
                     a, b, st);
    check_consistent(s, B(GP_PQ_OP_OR, V("st"), V("mem")), a, b, st);
    check_consistent(s, F(GP_PQ_F_ABSENT_OVER_TIME, 1, M("st", MIN)), a, b, st);
    check_consistent(s, B(GP_PQ_OP_ADD, F(GP_PQ_F_TIME, 0), F(GP_PQ_F_SCALAR, 1, V("st"))), a, b, st);
    check_consistent(s, OFFSET(V("req{job=\"db\"}"), 3 * MIN), a, b, st);
    /* A counter that resets: a range query's rate knows which windows
     * hold no reset (and skips the scan), the instant query scans. */
    double cv[] = {0, 10, 20, 5, 15, 30, 2, 4, 8, 16};
    int64_t ct[10];
    for (int i = 0; i < 10; i++)
        ct[i] = T0 + i * MIN;
    pt_add(s, "ctr", 10, ct, cv);
    check_consistent(s, F(GP_PQ_F_RATE, 1, M("ctr", 150000)), a, b, st);
    check_consistent(s, F(GP_PQ_F_RATE, 1, M("req", 150000)), a, b, st); /* never drops */
    check_consistent(s, F(GP_PQ_F_INCREASE, 1, M("ctr", 4 * MIN)), a, b, 30000);
    /* A gauge given to rate: drops in most windows, some at a window's
     * first sample, NaN among them (never a drop). */
    double gv[10] = {9, 3, 7, 7, 2, NAN, 1, 8, 0.5, 6};
    pt_add(s, "gauge", 10, ct, gv);
    check_consistent(s, F(GP_PQ_F_RATE, 1, M("gauge", 150000)), a, b, st);
    check_consistent(s, F(GP_PQ_F_INCREASE, 1, M("gauge", 4 * MIN)), a, b, 30000);
    check_consistent(s, F(GP_PQ_F_RATE, 1, M("gauge", MIN)), a, b, 20000);
    /* Uneven spacing: a range query's selector guesses that a step moves
     * as many samples as the one before (an instant query searches), so
     * runs of 1 s, gaps of minutes and bursts of ms break the guess both
     * ways. */
    enum { NI = 200 };
    int64_t it[NI];
    double iv[NI];
    int64_t x = T0;
    for (int i = 0; i < NI; i++) {
        x += i % 50 == 49 ? 3 * MIN + 17 : i % 7 == 3 ? 9 : i < 100 ? 1000 : 4300;
        it[i] = x;
        iv[i] = i;
    }
    pt_add(s, "uneven", NI, it, iv);
    for (int64_t step = 1000; step <= 61000; step += 15000)
        check_consistent(s, V("uneven"), T0 - MIN, x + MIN, step);
    check_consistent(s, A(GP_PQ_A_AVG, V("uneven"), NULL, 0, NULL), T0 + 999, x + 6 * MIN, 4321);
    gp_storage_close(s);
}

/* ---- rendering ---- */

static const char *render(struct gp_promql_result *r)
{
    static char out[4096];
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_promql_render(r, &b), GP_OK);
    snprintf(out, sizeof out, "%s", b.data);
    gp_buf_free(&b);
    return out;
}

static void test_render_numbers(void)
{
    char buf[400];
    struct {
        double v;
        const char *want;
    } cases[] = {
        {1, "1"}, {-0.0, "-0"}, {0.1, "0.1"}, {1.25, "1.25"}, {1e21, "1e+21"},
        {1e20, "100000000000000000000"}, {123456789012345678.0, "123456789012345680"},
        {1e-6, "0.000001"}, {1e-7, "1e-07"}, {-2.5e-9, "-2.5e-09"}, {1.5e300, "1.5e+300"},
        {0.3, "0.3"}, {1.0 / 3, "0.3333333333333333"}, {NAN, "NaN"}, {INFINITY, "+Inf"},
        {-INFINITY, "-Inf"}, {5e-324, "5e-324"}, {1.7976931348623157e308, "1.7976931348623157e+308"},
        /* Lopsided rounding intervals: the shortest digits are the
         * rounded-up ones (the differential test found these). */
        {5.282945311356653e+269, "5.282945311356653e+269"},
        {6.156563468186638e+113, "6.156563468186638e+113"},
        {-5.316911983139664e+36, "-5.316911983139664e+36"}, {9.999999999999999e22, "1e+23"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        gp_pq_fmt_float(cases[i].v, 1, buf, sizeof buf);
        CHECK_STR(buf, cases[i].want);
    }
    /* count_values' form never uses an exponent. */
    gp_pq_fmt_float(1e21, 0, buf, sizeof buf);
    CHECK_STR(buf, "1000000000000000000000");
    gp_pq_fmt_float(1e-7, 0, buf, sizeof buf);
    CHECK_STR(buf, "0.0000001");
}

static void test_render_json(void)
{
    struct gp_storage *s = fill();
    struct gp_promql_result r;
    char err[256];
    struct gp_pq_node *e = V("req{inst=\"1\"}");
    CHECK_INT(gp_promql_instant(s, e, T0 + 3 * MIN + 500, NULL, &r, err, sizeof err), GP_OK);
    CHECK_STR(render(&r), "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":"
                          "[{\"metric\":{\"__name__\":\"req\",\"inst\":\"1\",\"job\":\"api\"},"
                          "\"value\":[1699999380.500,\"60\"]}]}}");
    gp_promql_result_free(&r);
    CHECK_INT(gp_promql_range(s, e, T0 + 1, T0 + MIN + 1, MIN, NULL, &r, err, sizeof err), GP_OK);
    CHECK_STR(render(&r), "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":"
                          "[{\"metric\":{\"__name__\":\"req\",\"inst\":\"1\",\"job\":\"api\"},"
                          "\"values\":[[1699999200.001,\"0\"],[1699999260.001,\"20\"]]}]}}");
    gp_promql_result_free(&r);
    gp_promql_free(e);
    e = B(GP_PQ_OP_DIV, N(1), N(0));
    CHECK_INT(gp_promql_instant(s, e, T0 + 10, NULL, &r, err, sizeof err), GP_OK);
    CHECK_STR(render(&r), "{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\",\"result\":"
                          "[1699999200.010,\"+Inf\"]}}");
    gp_promql_result_free(&r);
    gp_promql_free(e);
    e = S("a\"b");
    CHECK_INT(gp_promql_instant(s, e, T0, NULL, &r, err, sizeof err), GP_OK);
    free(r.warnings);
    r.warnings = strdup("w1\nw2");
    CHECK_STR(render(&r), "{\"status\":\"success\",\"data\":{\"resultType\":\"string\",\"result\":"
                          "[1699999200,\"a\\\"b\"]},\"warnings\":[\"w1\",\"w2\"]}");
    gp_promql_result_free(&r);
    gp_promql_free(e);
    gp_storage_close(s);
}

/* A matrix's series share the steps' time texts (formatted once per
 * point index): a series with gaps, or with other times at the same
 * index, must still get its own. Values of each formatting path. */
static void test_render_matrix_times(void)
{
    int64_t t1[] = {1000, 16000, 31000, 46000};
    int64_t t2[] = {16000, 31000, 46000};          /* a step later at each index */
    int64_t t3[] = {1000, 16500, 31000, -2000001}; /* a fraction; a negative time */
    int64_t t4[] = {1000, 16000, 31000, 46000, 61000};
    double v1[] = {1, 99.125, -0.00390625, 1e21};
    double v2[] = {1e-7, NAN, -INFINITY};
    double v3[] = {0.1, 123456.789, -0.0, 5e-324};
    double v4[] = {2, 3, 4, 5, 6};
    struct gp_promql_series ser[] = {
        {NULL, 0, t1, v1, 4}, {NULL, 0, t2, v2, 3}, {NULL, 0, t3, v3, 4}, {NULL, 0, t4, v4, 5}};
    struct gp_promql_result r = {.type = GP_PROMQL_MATRIX, .series = ser, .n = 4};
    CHECK_STR(render(&r),
              "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":["
              "{\"metric\":{},\"values\":[[1,\"1\"],[16,\"99.125\"],[31,\"-0.00390625\"],[46,\"1e+21\"]]},"
              "{\"metric\":{},\"values\":[[16,\"1e-07\"],[31,\"NaN\"],[46,\"-Inf\"]]},"
              "{\"metric\":{},\"values\":[[1,\"0.1\"],[16.500,\"123456.789\"],[31,\"-0\"],"
              "[-2000.001,\"5e-324\"]]},"
              "{\"metric\":{},\"values\":[[1,\"2\"],[16,\"3\"],[31,\"4\"],[46,\"5\"],[61,\"6\"]]}]}}");
    /* A buffer's cap holds as before: an answer of exactly its size fits,
     * one byte more does not. */
    size_t len = strlen(render(&r));
    struct gp_buf b;
    gp_buf_init(&b, len);
    CHECK_INT(gp_promql_render(&r, &b), GP_OK);
    CHECK_INT(b.len, len);
    gp_buf_free(&b);
    gp_buf_init(&b, len - 1);
    CHECK_INT(gp_promql_render(&r, &b), GP_ETOOBIG);
    gp_buf_free(&b);
}

static void test_error_types(void)
{
    int st = 0;
    CHECK_STR(gp_promql_error_type(GP_EPARSE, &st), "bad_data");
    CHECK_INT(st, 400);
    CHECK_STR(gp_promql_error_type(GP_EUSAGE, &st), "bad_data");
    CHECK_STR(gp_promql_error_type(GP_ETOOBIG, &st), "bad_data");
    CHECK_STR(gp_promql_error_type(GP_ERANGE, &st), "execution");
    CHECK_INT(st, 422);
    CHECK_STR(gp_promql_error_type(GP_PQ_EEXEC, &st), "execution");
    CHECK_STR(gp_promql_error_type(GP_PROMQL_ETIMEOUT, &st), "timeout");
    CHECK_INT(st, 503);
    gp_storage_clear_error();
    CHECK_STR(gp_promql_error_type(GP_ENET, &st), "unavailable");
}

/* Enough series that selectors read on two threads: the answers are
 * the same as one thread's, in label order, and limits still hold. */
static void test_many_series(void)
{
    struct gp_storage *s = pt_open();
    char sel[64];
    for (int k = 0; k < 100; k++) {
        snprintf(sel, sizeof sel, "many{k=\"%03d\"}", k);
        pt_line(s, sel, T0, 15000, 40, k, 1); /* k, k+1, ... every 15 s */
    }
    int64_t t = T0 + 5 * MIN; /* sample 20: k + 20 */
    CHECK_STR(pt_inst(s, A(GP_PQ_A_SUM, V("many"), NULL, 0, NULL), t), "{} 6950");
    CHECK_STR(pt_inst(s, A(GP_PQ_A_SUM, F(GP_PQ_F_COUNT_OVER_TIME, 1, M("many", MIN)), NULL, 0, NULL), t),
              "{} 500");
    const char *r = pt_inst(s, V("many"), t);
    CHECK(strncmp(r, "{__name__=\"many\", k=\"000\"} 20; {__name__=\"many\", k=\"001\"} 21;", 56) == 0);
    CHECK_CONTAINS(r, "{__name__=\"many\", k=\"099\"} 119");
    struct gp_promql_result res;
    char err[256];
    struct gp_pq_node *e = F(GP_PQ_F_SUM_OVER_TIME, 1, M("many", MIN));
    CHECK_INT(gp_promql_range(s, e, T0, T0 + 9 * MIN, 30000, NULL, &res, err, sizeof err), GP_OK);
    CHECK_INT(res.n, 100);
    /* k = 99 at +9m: samples 32..36 of 99, 100, ... in [+8m, +9m]. */
    CHECK_INT(res.series[99].n, 19);
    CHECK_DBL(res.series[99].v[18], 5 * 99 + 32 + 33 + 34 + 35 + 36, 0);
    gp_promql_result_free(&res);
    struct gp_promql_limits lim = {.max_samples = 150};
    CHECK_INT(gp_promql_range(s, e, T0, T0 + 9 * MIN, 30000, &lim, &res, err, sizeof err), GP_ERANGE);
    gp_promql_result_free(&res);
    gp_promql_free(e);
    lim.max_samples = 50; /* 100 series at one step */
    CHECK_STR(pt_inst_lim(s, V("many"), t, &lim),
              "error: query processing would load too many samples into memory in query "
              "execution");
    /* An odd count read in pairs (avg_over_time), one thread from each
     * end: every series computed once, in its place. */
    for (int k = 0; k < 71; k++) {
        snprintf(sel, sizeof sel, "odd{k=\"%03d\"}", k);
        pt_line(s, sel, T0, 15000, 40, 7 * k, 1);
    }
    e = F(GP_PQ_F_AVG_OVER_TIME, 1, M("odd", MIN));
    CHECK_INT(gp_promql_instant(s, e, t, NULL, &res, err, sizeof err), GP_OK);
    CHECK_INT(res.n, 71);
    for (size_t k = 0; k < res.n; k++) /* samples 16..20 in [t - 1m, t] */
        CHECK_DBL(res.series[k].v[0], 7.0 * (double)k + 18, 0);
    gp_promql_result_free(&res);
    CHECK_STR(pt_inst(s, A(GP_PQ_A_COUNT, V("odd"), NULL, 0, NULL), t), "{} 71");
    gp_promql_free(e);
    gp_storage_close(s);
}

/* Parsed expressions end to end (the parser is pq-parse's): the cases
 * the hand-built trees above do not reach. */
static const char *pq(struct gp_storage *s, const char *q, int64_t t)
{
    struct gp_pq_node *e = NULL;
    char err[256];
    if (gp_promql_parse(q, strlen(q), &e, err, sizeof err) != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "parse %s: %s", q, err);
    return pt_inst(s, e, t);
}

static void test_parsed_queries(void)
{
    struct gp_storage *s = fill();
    int64_t t = T0 + 3 * MIN; /* api0 30, api1 60, db0 5 */
    CHECK_STR(pq(s, "stdvar(req)", t), "{} 505.5555555555556");
    CHECK_STR(pq(s, "stddev by (job) (req)", t), "{job=\"api\"} 15; {job=\"db\"} 0");
    CHECK_STR(pq(s, "quantile(0.25, req)", t), "{} 17.5");
    CHECK_STR(pq(s, "quantile(2, req)", t), "{} +Inf");
    /* count_values writes values as Go's 'f' format: no exponent. */
    CHECK_STR(pq(s, "count_values(\"v\", req{inst=\"1\"} * 1e21)", t),
              "{v=\"60000000000000000000000\"} 1");
    CHECK_STR(pq(s, "count_values(\"v\", req{inst=\"1\"} / 1e9)", t), "{v=\"0.00000006\"} 1");
    CHECK_STR(pq(s, "count_values without (inst) (\"v\", req)", t),
              "{job=\"api\", v=\"30\"} 1; {job=\"api\", v=\"60\"} 1; {job=\"db\", v=\"5\"} 1");
    /* $name has no group to name in POSIX: it expands to nothing. */
    CHECK_STR(pq(s, "label_replace(req{job=\"db\"}, \"d\", \"<$name>\", \"job\", \"(.*)\")", t),
              "{__name__=\"req\", d=\"<>\", inst=\"0\", job=\"db\"} 5");
    CHECK_STR(pq(s, "holt_winters(req[5m], 2, 0.5)", t),
              "error: invalid smoothing factor. Expected: 0 < sf < 1, got: 2.000000");
    CHECK_STR(pq(s, "clamp(req{job=\"db\"}, 10, 1)", t), "");
    CHECK_STR(pq(s, "clamp(req{job=\"db\"}, 1, 3)", t), "{inst=\"0\", job=\"db\"} 3");
    CHECK_STR(pq(s, "req{job=\"db\"} atan2 0", t), DB0 " 1.5707963267948966");
    CHECK_STR(pq(s, "sum(req @ end() offset 1m)", t), "{} 65");
    CHECK_STR(pq(s, "max_over_time(sum(req)[3m:1m] @ start())", t), "{} 95");
    /* Repeated subexpressions are evaluated once per grid: the copy a
     * subquery's grid made is not served to the outer grid. */
    CHECK_STR(pq(s, "sum(req) + sum(req)", t), "{} 190");
    CHECK_STR(pq(s, "max_over_time(sum(req)[3m:1m]) + sum(req)", t), "{} 190");
    CHECK_STR(pq(s, "sum(req) - min_over_time(sum(req)[3m:1m])", t), "{} 90");
    /* histogram_quantile over classic buckets, grouped without le. */
    struct gp_storage *h = pt_open_in("hist");
    pt_line(h, "lat_bucket{le=\"0.1\"}", T0, MIN, 3, 1, 0);
    pt_line(h, "lat_bucket{le=\"1\"}", T0, MIN, 3, 3, 0);
    pt_line(h, "lat_bucket{le=\"+Inf\"}", T0, MIN, 3, 4, 0);
    pt_line(h, "lat_bucket{le=\"x\"}", T0, MIN, 3, 100, 0); /* not a bound: ignored */
    CHECK_STR(pq(h, "histogram_quantile(0.5, lat_bucket)", T0), "{} 0.55");
    CHECK_STR(pq(h, "histogram_quantile(0.99, lat_bucket)", T0), "{} 1");
    gp_storage_close(h);
    gp_storage_close(s);
}

/* The answer of query text q as JSON (or "error: ..."), in full. */
static void pq_json(struct gp_storage *s, const char *q, int64_t start, int64_t end, int64_t step,
                    const struct gp_promql_limits *lim, struct gp_buf *out)
{
    struct gp_pq_node *e = NULL;
    char err[256] = "";
    if (gp_promql_parse(q, strlen(q), &e, err, sizeof err) != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "parse %s: %s", q, err);
    struct gp_promql_result r;
    int rc = step ? gp_promql_range(s, e, start, end, step, lim, &r, err, sizeof err)
                  : gp_promql_instant(s, e, start, lim, &r, err, sizeof err);
    gp_buf_reset(out);
    if (rc != GP_OK)
        gp_buf_printf(out, "error: %s", err);
    else
        CHECK_INT(gp_promql_render(&r, out), GP_OK);
    gp_promql_result_free(&r);
    gp_promql_free(e);
}

/* A range function's selector and an instant selector of the same series
 * in one query are read once (promql_cse.c's twins): the answers equal
 * those of the same query whose instant selector is written differently
 * (X{k!="zz"}: no twin), on one thread and on two, with stale
 * markers, gaps, offsets, ranges shorter and longer than the lookback,
 * both window rules, and limits that fail. */
static void test_selector_twins(void)
{
    struct gp_storage *s = pt_open();
    char sel[64];
    for (int k = 0; k < 40; k++) { /* 40 series: read on two threads */
        int64_t t[60];
        double v[60];
        size_t n = 0;
        for (int i = 0; i < 60; i++) {
            if (k % 3 == 1 && i >= 20 && i < 35)
                continue; /* a gap longer than the lookback */
            t[n] = T0 + i * 15000 + (k % 5) * 1000;
            v[n++] = k % 4 == 2 && i == 30 ? STALE : (double)((k * 7 + i * 13) % 50);
        }
        snprintf(sel, sizeof sel, "tw{k=\"%02d\"}", k);
        pt_add(s, sel, n, t, v);
    }
    pt_line(s, "tw1{k=\"x\"}", T0, MIN, 10, 1, 1); /* one series: one thread */
    static const char *const pairs[][2] = {
        {"avg by (k) (avg_over_time(tw[15s]) or tw * 1)",
         "avg by (k) (avg_over_time(tw[15s]) or tw{k!=\"zz\"} * 1)"},
        {"max_over_time(tw[10m]) - tw", "max_over_time(tw[10m]) - tw{k!=\"zz\"}"},
        {"tw offset 1m / rate(tw[2m] offset 1m)",
         "tw{k!=\"zz\"} offset 1m / rate(tw[2m] offset 1m)"},
        {"rate(tw[2m] offset 1m) / tw offset 1m",
         "rate(tw[2m] offset 1m) / tw{k!=\"zz\"} offset 1m"},
        {"count_over_time(tw[1m] @ 600) + tw @ 600",
         "count_over_time(tw[1m] @ 600) + tw{k!=\"zz\"} @ 600"},
        {"absent_over_time(tw1[30s]) or tw1", "absent_over_time(tw1[30s]) or tw1{k!=\"zz\"}"},
        {"sum_over_time(tw1[1m]) or tw1 or tw1 * 2",
         "sum_over_time(tw1[1m]) or tw1{k!=\"zz\"} or tw1{k!=\"zz\"} * 2"},
        {"max_over_time(tw[5m:1m]) + tw", "max_over_time(tw[5m:1m]) + tw{k!=\"zz\"}"},
        {"timestamp(tw) - last_over_time(tw[1m]) or tw",
         "timestamp(tw) - last_over_time(tw[1m]) or tw{k!=\"zz\"}"},
    };
    struct gp_promql_limits lims[] = {
        {0},
        {.prom3_windows = 1},
        {.lookback_ms = 20000},
        {.max_samples = 2000}, /* the instant selector's cells do not fit */
        {.max_samples = 50},
    };
    struct gp_buf a, b;
    gp_buf_init(&a, 0);
    gp_buf_init(&b, 0);
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++)
        for (size_t l = 0; l < sizeof lims / sizeof lims[0]; l++)
            for (int inst = 0; inst < 2; inst++) {
                int64_t st = inst ? 0 : 15000, end = inst ? T0 + 7 * MIN : T0 + 20 * MIN;
                pq_json(s, pairs[p][0], inst ? end : T0 - MIN, end, st, &lims[l], &a);
                pq_json(s, pairs[p][1], inst ? end : T0 - MIN, end, st, &lims[l], &b);
                if (a.len != b.len || memcmp(a.data, b.data, a.len) != 0)
                    gp_test_fail(__FILE__, __LINE__, "%s (limits %zu, %s): %.300s\nwithout twin: %.300s",
                                 pairs[p][0], l, inst ? "instant" : "range", a.data, b.data);
            }
    /* avg_over_time takes two series at once (instant) or two steps at
     * once (range): each series alone, and each step alone, agree. */
    for (int64_t at = T0 + MIN; at <= T0 + 16 * MIN; at += 4 * MIN + 7000) {
        char q[64];
        pq_json(s, "avg_over_time(tw[2m])", at, at, 0, NULL, &a);
        CHECK_CONTAINS(a.data, "\"k\":\"38\"");
        for (int k = 0; k < 40; k++) {
            snprintf(q, sizeof q, "avg_over_time(tw{k=\"%02d\"}[2m])", k);
            pq_json(s, q, at, at, 0, NULL, &b);
            const char *one = strstr(b.data, "{\"metric\"");
            if (!one)
                continue; /* nothing in this window */
            size_t len = strlen(one) - 3; /* without "]}}" */
            if (!memmem(a.data, a.len, one, len))
                gp_test_fail(__FILE__, __LINE__, "k=%d at %lld: %.200s not in %.300s", k,
                             (long long)(at - T0), one, a.data);
        }
    }
    check_consistent(s, F(GP_PQ_F_AVG_OVER_TIME, 1, M("tw", 2 * MIN)), T0 - MIN, T0 + 16 * MIN, 15000);
    check_consistent(s, F(GP_PQ_F_AVG_OVER_TIME, 1, M("tw", 50000)), T0, T0 + 16 * MIN, 41000);
    /* The answers are not empty (the pairs compare something). */
    pq_json(s, pairs[0][0], T0 - MIN, T0 + 20 * MIN, 15000, NULL, &a);
    CHECK(a.len > 10000);
    CHECK_CONTAINS(a.data, "\"k\":\"39\"");
    gp_buf_free(&a);
    gp_buf_free(&b);
    gp_storage_close(s);
}

/* The damage warning's record: chunks, span and series add up; the
 * series named is the one whose labels sort first, whichever read or
 * thread saw it first; a long name is cut with "...". */
static void test_damage_names_series(void)
{
    struct gp_buf b1, b2, b3;
    gp_buf_init(&b1, 0);
    gp_buf_init(&b2, 0);
    gp_buf_init(&b3, 0);
    struct gp_label lb[2] = {{{"__name__", 8}, {"x", 1}}, {{"gpu", 3}, {"1", 1}}};
    struct gp_label la[2] = {{{"__name__", 8}, {"x", 1}}, {{"gpu", 3}, {"0", 1}}};
    char longv[400];
    memset(longv, 'v', sizeof longv);
    struct gp_label ll[2] = {{{"__name__", 8}, {"a", 1}}, {{"k", 1}, {longv, sizeof longv}}};
    CHECK_INT(gp_labels_encode(lb, 2, &b1), GP_OK);
    CHECK_INT(gp_labels_encode(la, 2, &b2), GP_OK);
    CHECK_INT(gp_labels_encode(ll, 2, &b3), GP_OK);
    struct gp_store_series sb = {1, (const uint8_t *)b1.data, b1.len, 0, 0};
    struct gp_store_series sa = {2, (const uint8_t *)b2.data, b2.len, 0, 0};
    struct gp_store_series sl = {3, (const uint8_t *)b3.data, b3.len, 0, 0};
    struct gp_samples none = {0}, d1 = {0}, d2 = {0};
    d1.damaged = 2, d1.damaged_from = 100, d1.damaged_to = 500;
    d2.damaged = 1, d2.damaged_from = 50, d2.damaged_to = 300;
    struct gp_pq_damage one = {0}, two = {0};
    gp_pq_damage_note(&one, &sa, &none); /* no damage: nothing noted */
    CHECK_INT(one.chunks, 0);
    gp_pq_damage_note(&one, &sb, &d1);
    CHECK_STR(one.first, "{__name__=\"x\", gpu=\"1\"}");
    gp_pq_damage_note(&two, &sa, &d2);
    gp_pq_damage_merge(&one, &two);
    CHECK_INT(one.chunks, 3);
    CHECK_INT(one.series, 2);
    CHECK_INT(one.from, 50);
    CHECK_INT(one.to, 500);
    CHECK_STR(one.first, "{__name__=\"x\", gpu=\"0\"}");
    struct gp_pq_damage three = {0};
    gp_pq_damage_note(&three, &sl, &d1);
    CHECK_INT((int)strlen(three.first), (int)sizeof three.first - 1);
    CHECK(!strcmp(three.first + sizeof three.first - 4, "..."));
    gp_pq_damage_merge(&one, &three);
    CHECK(!strncmp(one.first, "{__name__=\"a\"", 13));
    CHECK_INT(one.series, 3);
    gp_buf_free(&b1);
    gp_buf_free(&b2);
    gp_buf_free(&b3);
}

const struct gp_test gp_tests_promql_eval[] = {
    {"damage_names_series", test_damage_names_series},
    {"selector_lookback", test_selector_lookback},
    {"staleness", test_staleness},
    {"offset_and_at", test_offset_and_at},
    {"range_selector_bounds", test_range_selector_bounds},
    {"range_functions", test_range_functions},
    {"subqueries", test_subqueries},
    {"aggregations", test_aggregations},
    {"binary_scalar", test_binary_scalar},
    {"vector_matching", test_vector_matching},
    {"set_operators", test_set_operators},
    {"structural_functions", test_structural_functions},
    {"limits", test_limits},
    {"many_series", test_many_series},
    {"parsed_queries", test_parsed_queries},
    {"selector_twins", test_selector_twins},
    {"range_matches_instant", test_range_matches_instant},
    {"render_numbers", test_render_numbers},
    {"render_json", test_render_json},
    {"render_matrix_times", test_render_matrix_times},
    {"error_types", test_error_types},
    {0},
};
