/*
 * test_promql_parse.c - the PromQL parser (src/query/promql_parse.c,
 * promql_lex.c, promql_format.c):
 *  - a corpus of valid expressions with their canonical text and type,
 *    and of malformed ones with their error's line:col and words, as a real
 *    Prometheus 2.42 answered them (its /api/v1/format_query and
 *    /api/v1/query; test_promql_parse_oracle.sh re-asks it for the whole
 *    corpus, tests/data/promql/parse_corpus.txt); every canonical text
 *    parses back to itself;
 *  - the trees: precedence and associativity, vector matching, modifiers,
 *    numbers, strings, matchers built as the store's;
 *  - the checks' words, the function table, and the caps (length, depth:
 *    10,000 '(' and long operator chains fail fast without recursion).
 */
#include "lib/buf.h"
#include "lib/err.h"
#include "query/promql.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

struct valid_case {
    const char *q;
    enum gp_pq_type type;
    const char *text;
};

struct invalid_case {
    const char *q;
    int line, col;
    const char *msg; /* Prometheus's words; NULL where they differ on purpose */
};

/* Generated from Prometheus 2.42's answers for the corpus. */
/* valid: 356, invalid: 199 */
static const struct valid_case valid_cases[] = {
    {"1", GP_PQ_T_SCALAR, "1"},
    {"1.5", GP_PQ_T_SCALAR, "1.5"},
    {".5", GP_PQ_T_SCALAR, "0.5"},
    {"1.", GP_PQ_T_SCALAR, "1"},
    {"1e3", GP_PQ_T_SCALAR, "1000"},
    {"1E-3", GP_PQ_T_SCALAR, "0.001"},
    {"1e+3", GP_PQ_T_SCALAR, "1000"},
    {"0x1f", GP_PQ_T_SCALAR, "31"},
    {"0X1F", GP_PQ_T_SCALAR, "31"},
    {"0xdeadBEEF", GP_PQ_T_SCALAR, "3.735928559e+09"},
    {"017", GP_PQ_T_SCALAR, "15"},
    {"08", GP_PQ_T_SCALAR, "8"},
    {"09.5", GP_PQ_T_SCALAR, "9.5"},
    {"00", GP_PQ_T_SCALAR, "0"},
    {"0", GP_PQ_T_SCALAR, "0"},
    {"1e6", GP_PQ_T_SCALAR, "1e+06"},
    {"123456", GP_PQ_T_SCALAR, "123456"},
    {"1234567", GP_PQ_T_SCALAR, "1.234567e+06"},
    {"0.0001", GP_PQ_T_SCALAR, "0.0001"},
    {"0.00001", GP_PQ_T_SCALAR, "1e-05"},
    {"1e21", GP_PQ_T_SCALAR, "1e+21"},
    {"1e-7", GP_PQ_T_SCALAR, "1e-07"},
    {"12345678901234567890", GP_PQ_T_SCALAR, "1.2345678901234567e+19"},
    {"Inf", GP_PQ_T_SCALAR, "+Inf"},
    {"inf", GP_PQ_T_SCALAR, "+Inf"},
    {"+Inf", GP_PQ_T_SCALAR, "+Inf"},
    {"-Inf", GP_PQ_T_SCALAR, "-Inf"},
    {"NaN", GP_PQ_T_SCALAR, "NaN"},
    {"nan", GP_PQ_T_SCALAR, "NaN"},
    {"-NaN", GP_PQ_T_SCALAR, "NaN"},
    {"-1", GP_PQ_T_SCALAR, "-1"},
    {"+1", GP_PQ_T_SCALAR, "1"},
    {"- 1", GP_PQ_T_SCALAR, "-1"},
    {"--1", GP_PQ_T_SCALAR, "1"},
    {"-(1)", GP_PQ_T_SCALAR, "-(1)"},
    {"\"a\"", GP_PQ_T_STRING, "\"a\""},
    {"'a'", GP_PQ_T_STRING, "\"a\""},
    {"`a\\n`", GP_PQ_T_STRING, "\"a\\\\n\""},
    {"\"a\\nb\"", GP_PQ_T_STRING, "\"a\\nb\""},
    {"\"\\\"quoted\\\"\"", GP_PQ_T_STRING, "\"\\\"quoted\\\"\""},
    {"'it\\'s'", GP_PQ_T_STRING, "\"it's\""},
    {"\"\\x41\\101\\u00e9\\U0001F600\"", GP_PQ_T_STRING, "\"AA\xc3\xa9""\xf0\x9f\x98\x80""\""},
    {"\"tab\\tand\\\\backslash\"", GP_PQ_T_STRING, "\"tab\\tand\\\\backslash\""},
    {"\"\xc3\xa9""\"", GP_PQ_T_STRING, "\"\xc3\xa9""\""},
    {"x", GP_PQ_T_VECTOR, "x"},
    {"x_total", GP_PQ_T_VECTOR, "x_total"},
    {"job:rate5m:sum", GP_PQ_T_VECTOR, "job:rate5m:sum"},
    {":colon", GP_PQ_T_VECTOR, ":colon"},
    {"x{}", GP_PQ_T_VECTOR, "x"},
    {"x{a=\"b\"}", GP_PQ_T_VECTOR, "x{a=\"b\"}"},
    {"x{a=\"b\",}", GP_PQ_T_VECTOR, "x{a=\"b\"}"},
    {"x{ a = \"b\" , c != 'd' }", GP_PQ_T_VECTOR, "x{a=\"b\",c!=\"d\"}"},
    {"x{a=~\"b.*\", c!~\"d|e\"}", GP_PQ_T_VECTOR, "x{a=~\"b.*\",c!~\"d|e\"}"},
    {"{a=\"b\"}", GP_PQ_T_VECTOR, "{a=\"b\"}"},
    {"{__name__=\"x\"}", GP_PQ_T_VECTOR, "{__name__=\"x\"}"},
    {"{__name__=~\"x|y\"}", GP_PQ_T_VECTOR, "{__name__=~\"x|y\"}"},
    {"{__name__=\"x\", a=\"b\"}", GP_PQ_T_VECTOR, "{__name__=\"x\",a=\"b\"}"},
    {"x{b=\"2\",a=\"1\"}", GP_PQ_T_VECTOR, "x{a=\"1\",b=\"2\"}"},
    {"x{a=\"1\",a=\"2\"}", GP_PQ_T_VECTOR, "x{a=\"1\",a=\"2\"}"},
    {"x{a=`raw\\n`}", GP_PQ_T_VECTOR, "x{a=\"raw\\\\n\"}"},
    {"{a!=\"\"}", GP_PQ_T_VECTOR, "{a!=\"\"}"},
    {"sum", GP_PQ_T_VECTOR, "sum"},
    {"sum{a=\"b\"}", GP_PQ_T_VECTOR, "sum{a=\"b\"}"},
    {"by", GP_PQ_T_VECTOR, "by"},
    {"offset", GP_PQ_T_VECTOR, "offset"},
    {"without", GP_PQ_T_VECTOR, "without"},
    {"start", GP_PQ_T_VECTOR, "start"},
    {"end", GP_PQ_T_VECTOR, "end"},
    {"and", GP_PQ_T_VECTOR, "and"},
    {"x:y:z", GP_PQ_T_VECTOR, "x:y:z"},
    {"x[5m]", GP_PQ_T_MATRIX, "x[5m]"},
    {"x[5m ]", GP_PQ_T_MATRIX, "x[5m]"},
    {"x[ 5m]", GP_PQ_T_MATRIX, "x[5m]"},
    {"x[1h30m]", GP_PQ_T_MATRIX, "x[1h30m]"},
    {"x[90s]", GP_PQ_T_MATRIX, "x[1m30s]"},
    {"x[7d]", GP_PQ_T_MATRIX, "x[1w]"},
    {"x[14d]", GP_PQ_T_MATRIX, "x[2w]"},
    {"x[365d]", GP_PQ_T_MATRIX, "x[1y]"},
    {"x[1y]", GP_PQ_T_MATRIX, "x[1y]"},
    {"x[1w2d]", GP_PQ_T_MATRIX, "x[9d]"},
    {"x[100ms]", GP_PQ_T_MATRIX, "x[100ms]"},
    {"x[1s500ms]", GP_PQ_T_MATRIX, "x[1s500ms]"},
    {"x[5m:]", GP_PQ_T_MATRIX, "x[5m:]"},
    {"x[5m:1m]", GP_PQ_T_MATRIX, "x[5m:1m]"},
    {"x[1h:5m]", GP_PQ_T_MATRIX, "x[1h:5m]"},
    {"rate(x[5m])[30m:1m]", GP_PQ_T_MATRIX, "rate(x[5m])[30m:1m]"},
    {"max_over_time(rate(x[5m])[1h:])", GP_PQ_T_VECTOR, "max_over_time(rate(x[5m])[1h:])"},
    {"sum(x)[5m:1m]", GP_PQ_T_MATRIX, "sum(x)[5m:1m]"},
    {"x[5m a]", GP_PQ_T_MATRIX, "x[5m:]"},
    {"x offset 5m", GP_PQ_T_VECTOR, "x offset 5m"},
    {"x offset -5m", GP_PQ_T_VECTOR, "x offset -5m"},
    {"x offset 1h30m", GP_PQ_T_VECTOR, "x offset 1h30m"},
    {"x[5m] offset 1h", GP_PQ_T_MATRIX, "x[5m] offset 1h"},
    {"x[5m:1m] offset 1h", GP_PQ_T_MATRIX, "x[5m:1m] offset 1h"},
    {"x offset 5m @ 100", GP_PQ_T_VECTOR, "x @ 100.000 offset 5m"},
    {"x @ 100 offset 5m", GP_PQ_T_VECTOR, "x @ 100.000 offset 5m"},
    {"x @ 100", GP_PQ_T_VECTOR, "x @ 100.000"},
    {"x @ 1.5", GP_PQ_T_VECTOR, "x @ 1.500"},
    {"x @ -100", GP_PQ_T_VECTOR, "x @ -100.000"},
    {"x @ +100", GP_PQ_T_VECTOR, "x @ 100.000"},
    {"x @ 1e3", GP_PQ_T_VECTOR, "x @ 1000.000"},
    {"x @ start()", GP_PQ_T_VECTOR, "x @ start()"},
    {"x @ end()", GP_PQ_T_VECTOR, "x @ end()"},
    {"x[5m] @ end()", GP_PQ_T_MATRIX, "x[5m] @ end()"},
    {"x[5m:] @ start() offset 1m", GP_PQ_T_MATRIX, "x[5m:] @ start() offset 1m"},
    {"x @ start() [5m]", GP_PQ_T_MATRIX, "x[5m] @ start()"},
    {"x OFFSET 5m", GP_PQ_T_VECTOR, "x offset 5m"},
    {"rate(x[5m])", GP_PQ_T_VECTOR, "rate(x[5m])"},
    {"irate(x[5m])", GP_PQ_T_VECTOR, "irate(x[5m])"},
    {"increase(x[1h])", GP_PQ_T_VECTOR, "increase(x[1h])"},
    {"delta(x[5m])", GP_PQ_T_VECTOR, "delta(x[5m])"},
    {"idelta(x[5m])", GP_PQ_T_VECTOR, "idelta(x[5m])"},
    {"deriv(x[5m])", GP_PQ_T_VECTOR, "deriv(x[5m])"},
    {"predict_linear(x[1h], 3600)", GP_PQ_T_VECTOR, "predict_linear(x[1h], 3600)"},
    {"changes(x[5m])", GP_PQ_T_VECTOR, "changes(x[5m])"},
    {"resets(x[5m])", GP_PQ_T_VECTOR, "resets(x[5m])"},
    {"holt_winters(x[5m], 0.5, 0.5)", GP_PQ_T_VECTOR, "holt_winters(x[5m], 0.5, 0.5)"},
    {"avg_over_time(x[5m])", GP_PQ_T_VECTOR, "avg_over_time(x[5m])"},
    {"min_over_time(x[5m])", GP_PQ_T_VECTOR, "min_over_time(x[5m])"},
    {"max_over_time(x[5m])", GP_PQ_T_VECTOR, "max_over_time(x[5m])"},
    {"sum_over_time(x[5m])", GP_PQ_T_VECTOR, "sum_over_time(x[5m])"},
    {"count_over_time(x[5m])", GP_PQ_T_VECTOR, "count_over_time(x[5m])"},
    {"quantile_over_time(0.9, x[5m])", GP_PQ_T_VECTOR, "quantile_over_time(0.9, x[5m])"},
    {"stddev_over_time(x[5m])", GP_PQ_T_VECTOR, "stddev_over_time(x[5m])"},
    {"stdvar_over_time(x[5m])", GP_PQ_T_VECTOR, "stdvar_over_time(x[5m])"},
    {"last_over_time(x[5m])", GP_PQ_T_VECTOR, "last_over_time(x[5m])"},
    {"present_over_time(x[5m])", GP_PQ_T_VECTOR, "present_over_time(x[5m])"},
    {"absent_over_time(x[5m])", GP_PQ_T_VECTOR, "absent_over_time(x[5m])"},
    {"absent(x)", GP_PQ_T_VECTOR, "absent(x)"},
    {"abs(x)", GP_PQ_T_VECTOR, "abs(x)"},
    {"ceil(x)", GP_PQ_T_VECTOR, "ceil(x)"},
    {"floor(x)", GP_PQ_T_VECTOR, "floor(x)"},
    {"round(x)", GP_PQ_T_VECTOR, "round(x)"},
    {"round(x, 5)", GP_PQ_T_VECTOR, "round(x, 5)"},
    {"clamp(x, 0, 1)", GP_PQ_T_VECTOR, "clamp(x, 0, 1)"},
    {"clamp_min(x, 0)", GP_PQ_T_VECTOR, "clamp_min(x, 0)"},
    {"clamp_max(x, 1)", GP_PQ_T_VECTOR, "clamp_max(x, 1)"},
    {"sqrt(x)", GP_PQ_T_VECTOR, "sqrt(x)"},
    {"exp(x)", GP_PQ_T_VECTOR, "exp(x)"},
    {"ln(x)", GP_PQ_T_VECTOR, "ln(x)"},
    {"log2(x)", GP_PQ_T_VECTOR, "log2(x)"},
    {"log10(x)", GP_PQ_T_VECTOR, "log10(x)"},
    {"sgn(x)", GP_PQ_T_VECTOR, "sgn(x)"},
    {"sin(x) + cos(x) + tan(x)", GP_PQ_T_VECTOR, "sin(x) + cos(x) + tan(x)"},
    {"asin(x) + acos(x) + atan(x)", GP_PQ_T_VECTOR, "asin(x) + acos(x) + atan(x)"},
    {"sinh(x) + cosh(x) + tanh(x)", GP_PQ_T_VECTOR, "sinh(x) + cosh(x) + tanh(x)"},
    {"asinh(x) + acosh(x) + atanh(x)", GP_PQ_T_VECTOR, "asinh(x) + acosh(x) + atanh(x)"},
    {"deg(x) + rad(x)", GP_PQ_T_VECTOR, "deg(x) + rad(x)"},
    {"pi()", GP_PQ_T_SCALAR, "pi()"},
    {"time()", GP_PQ_T_SCALAR, "time()"},
    {"timestamp(x)", GP_PQ_T_VECTOR, "timestamp(x)"},
    {"vector(1)", GP_PQ_T_VECTOR, "vector(1)"},
    {"scalar(x)", GP_PQ_T_SCALAR, "scalar(x)"},
    {"sort(x)", GP_PQ_T_VECTOR, "sort(x)"},
    {"sort_desc(x)", GP_PQ_T_VECTOR, "sort_desc(x)"},
    {"label_replace(x, \"dst\", \"$1\", \"src\", \"(.*)\")", GP_PQ_T_VECTOR, "label_replace(x, \"dst\", \"$1\", \"src\", \"(.*)\")"},
    {"label_join(x, \"dst\", \",\", \"a\", \"b\", \"c\")", GP_PQ_T_VECTOR, "label_join(x, \"dst\", \",\", \"a\", \"b\", \"c\")"},
    {"label_join(x, \"dst\", \",\")", GP_PQ_T_VECTOR, "label_join(x, \"dst\", \",\")"},
    {"day_of_week()", GP_PQ_T_VECTOR, "day_of_week()"},
    {"day_of_week(x)", GP_PQ_T_VECTOR, "day_of_week(x)"},
    {"day_of_month()", GP_PQ_T_VECTOR, "day_of_month()"},
    {"day_of_year(x)", GP_PQ_T_VECTOR, "day_of_year(x)"},
    {"days_in_month()", GP_PQ_T_VECTOR, "days_in_month()"},
    {"hour(x)", GP_PQ_T_VECTOR, "hour(x)"},
    {"minute()", GP_PQ_T_VECTOR, "minute()"},
    {"month(timestamp(x))", GP_PQ_T_VECTOR, "month(timestamp(x))"},
    {"year()", GP_PQ_T_VECTOR, "year()"},
    {"histogram_quantile(0.9, rate(x_bucket[5m]))", GP_PQ_T_VECTOR, "histogram_quantile(0.9, rate(x_bucket[5m]))"},
    {"histogram_quantile(0.9, sum by (le) (rate(x_bucket[5m])))", GP_PQ_T_VECTOR, "histogram_quantile(0.9, sum by (le) (rate(x_bucket[5m])))"},
    {"histogram_count(x)", GP_PQ_T_VECTOR, "histogram_count(x)"},
    {"histogram_sum(x)", GP_PQ_T_VECTOR, "histogram_sum(x)"},
    {"histogram_fraction(0, 1, x)", GP_PQ_T_VECTOR, "histogram_fraction(0, 1, x)"},
    {"rate(x[5m:1m])", GP_PQ_T_VECTOR, "rate(x[5m:1m])"},
    {"rate((x[5m]))", GP_PQ_T_VECTOR, "rate((x[5m]))"},
    {"sum(x)", GP_PQ_T_VECTOR, "sum(x)"},
    {"sum by (a) (x)", GP_PQ_T_VECTOR, "sum by (a) (x)"},
    {"sum by (a, b) (x)", GP_PQ_T_VECTOR, "sum by (a, b) (x)"},
    {"sum by (a,) (x)", GP_PQ_T_VECTOR, "sum by (a) (x)"},
    {"sum by () (x)", GP_PQ_T_VECTOR, "sum(x)"},
    {"sum without (a) (x)", GP_PQ_T_VECTOR, "sum without (a) (x)"},
    {"sum without () (x)", GP_PQ_T_VECTOR, "sum without () (x)"},
    {"sum(x) by (a)", GP_PQ_T_VECTOR, "sum by (a) (x)"},
    {"sum(x) without (a)", GP_PQ_T_VECTOR, "sum without (a) (x)"},
    {"avg(x)", GP_PQ_T_VECTOR, "avg(x)"},
    {"min(x)", GP_PQ_T_VECTOR, "min(x)"},
    {"max(x)", GP_PQ_T_VECTOR, "max(x)"},
    {"count(x)", GP_PQ_T_VECTOR, "count(x)"},
    {"group(x)", GP_PQ_T_VECTOR, "group(x)"},
    {"stddev(x)", GP_PQ_T_VECTOR, "stddev(x)"},
    {"stdvar(x)", GP_PQ_T_VECTOR, "stdvar(x)"},
    {"topk(3, x)", GP_PQ_T_VECTOR, "topk(3, x)"},
    {"bottomk(3, x)", GP_PQ_T_VECTOR, "bottomk(3, x)"},
    {"topk by (a) (3, x)", GP_PQ_T_VECTOR, "topk by (a) (3, x)"},
    {"topk(3, x) by (a)", GP_PQ_T_VECTOR, "topk by (a) (3, x)"},
    {"quantile(0.9, x)", GP_PQ_T_VECTOR, "quantile(0.9, x)"},
    {"count_values(\"value\", x)", GP_PQ_T_VECTOR, "count_values(\"value\", x)"},
    {"count_values by (a) (\"value\", x)", GP_PQ_T_VECTOR, "count_values by (a) (\"value\", x)"},
    {"SUM(x)", GP_PQ_T_VECTOR, "sum(x)"},
    {"Sum By (a) (x)", GP_PQ_T_VECTOR, "sum by (a) (x)"},
    {"sum by (sum) (x)", GP_PQ_T_VECTOR, "sum by (sum) (x)"},
    {"sum by (by, on, offset, bool, group_left, start, end, and, atan2) (x)", GP_PQ_T_VECTOR, "sum by (by, on, offset, bool, group_left, start, end, and, atan2) (x)"},
    {"1 + 2", GP_PQ_T_SCALAR, "1 + 2"},
    {"1 - 2", GP_PQ_T_SCALAR, "1 - 2"},
    {"2 * 3", GP_PQ_T_SCALAR, "2 * 3"},
    {"6 / 2", GP_PQ_T_SCALAR, "6 / 2"},
    {"5 % 3", GP_PQ_T_SCALAR, "5 % 3"},
    {"2 ^ 3", GP_PQ_T_SCALAR, "2 ^ 3"},
    {"2 ^ 3 ^ 2", GP_PQ_T_SCALAR, "2 ^ 3 ^ 2"},
    {"(2 ^ 3) ^ 2", GP_PQ_T_SCALAR, "(2 ^ 3) ^ 2"},
    {"-2 ^ 2", GP_PQ_T_SCALAR, "-2 ^ 2"},
    {"2 ^ -1", GP_PQ_T_SCALAR, "2 ^ -1"},
    {"1 + 2 * 3", GP_PQ_T_SCALAR, "1 + 2 * 3"},
    {"(1 + 2) * 3", GP_PQ_T_SCALAR, "(1 + 2) * 3"},
    {"1 - 2 - 3", GP_PQ_T_SCALAR, "1 - 2 - 3"},
    {"1 - (2 - 3)", GP_PQ_T_SCALAR, "1 - (2 - 3)"},
    {"1 + -2", GP_PQ_T_SCALAR, "1 + -2"},
    {"1 - -2", GP_PQ_T_SCALAR, "1 - -2"},
    {"x + 1", GP_PQ_T_VECTOR, "x + 1"},
    {"1 + x", GP_PQ_T_VECTOR, "1 + x"},
    {"x + y", GP_PQ_T_VECTOR, "x + y"},
    {"x - y * z", GP_PQ_T_VECTOR, "x - y * z"},
    {"x * y + z", GP_PQ_T_VECTOR, "x * y + z"},
    {"x / y % z", GP_PQ_T_VECTOR, "x / y % z"},
    {"x atan2 y", GP_PQ_T_VECTOR, "x atan2 y"},
    {"1 atan2 2", GP_PQ_T_SCALAR, "1 atan2 2"},
    {"x ATAN2 y", GP_PQ_T_VECTOR, "x atan2 y"},
    {"x == 1", GP_PQ_T_VECTOR, "x == 1"},
    {"x != 1", GP_PQ_T_VECTOR, "x != 1"},
    {"x > 1", GP_PQ_T_VECTOR, "x > 1"},
    {"x < 1", GP_PQ_T_VECTOR, "x < 1"},
    {"x >= 1", GP_PQ_T_VECTOR, "x >= 1"},
    {"x <= 1", GP_PQ_T_VECTOR, "x <= 1"},
    {"x == bool 1", GP_PQ_T_VECTOR, "x == bool 1"},
    {"x > bool y", GP_PQ_T_VECTOR, "x > bool y"},
    {"1 == bool 1", GP_PQ_T_SCALAR, "1 == bool 1"},
    {"1 > bool 2", GP_PQ_T_SCALAR, "1 > bool 2"},
    {"x and y", GP_PQ_T_VECTOR, "x and y"},
    {"x or y", GP_PQ_T_VECTOR, "x or y"},
    {"x unless y", GP_PQ_T_VECTOR, "x unless y"},
    {"x AND y", GP_PQ_T_VECTOR, "x and y"},
    {"x and y or z", GP_PQ_T_VECTOR, "x and y or z"},
    {"x or y and z", GP_PQ_T_VECTOR, "x or y and z"},
    {"x or y unless z", GP_PQ_T_VECTOR, "x or y unless z"},
    {"x > 1 and y < 2", GP_PQ_T_VECTOR, "x > 1 and y < 2"},
    {"x + y > 2 or z", GP_PQ_T_VECTOR, "x + y > 2 or z"},
    {"x + on (a) y", GP_PQ_T_VECTOR, "x + on (a) y"},
    {"x + on (a, b) y", GP_PQ_T_VECTOR, "x + on (a, b) y"},
    {"x + ignoring (a) y", GP_PQ_T_VECTOR, "x + ignoring (a) y"},
    {"x + on () y", GP_PQ_T_VECTOR, "x + on () y"},
    {"x + ignoring () y", GP_PQ_T_VECTOR, "x + y"},
    {"x + on (a) group_left y", GP_PQ_T_VECTOR, "x + on (a) group_left () y"},
    {"x + on (a) group_left (b) y", GP_PQ_T_VECTOR, "x + on (a) group_left (b) y"},
    {"x + on (a) group_right (b, c) y", GP_PQ_T_VECTOR, "x + on (a) group_right (b, c) y"},
    {"x + ignoring (a) group_left (b) y", GP_PQ_T_VECTOR, "x + ignoring (a) group_left (b) y"},
    {"x * on(a) group_left() y", GP_PQ_T_VECTOR, "x * on (a) group_left () y"},
    {"x > bool on (a) y", GP_PQ_T_VECTOR, "x > bool on (a) y"},
    {"x == bool ignoring (a) group_left (b) y", GP_PQ_T_VECTOR, "x == bool ignoring (a) group_left (b) y"},
    {"x and on (a) y", GP_PQ_T_VECTOR, "x and on (a) y"},
    {"x or ignoring (a) y", GP_PQ_T_VECTOR, "x or ignoring (a) y"},
    {"x unless on () y", GP_PQ_T_VECTOR, "x unless on () y"},
    {"x + ignoring (a) group_left (a) y", GP_PQ_T_VECTOR, "x + ignoring (a) group_left (a) y"},
    {"1 + ignoring () 2", GP_PQ_T_SCALAR, "1 + 2"},
    {"+ x", GP_PQ_T_VECTOR, "+x"},
    {"x + + y", GP_PQ_T_VECTOR, "x + +y"},
    {"x ++ y", GP_PQ_T_VECTOR, "x + +y"},
    {"-x", GP_PQ_T_VECTOR, "-x"},
    {"+x", GP_PQ_T_VECTOR, "+x"},
    {"-(x)", GP_PQ_T_VECTOR, "-(x)"},
    {"-(-x)", GP_PQ_T_VECTOR, "-(-x)"},
    {"- - x", GP_PQ_T_VECTOR, "--x"},
    {"-x + y", GP_PQ_T_VECTOR, "-x + y"},
    {"-x * y", GP_PQ_T_VECTOR, "-x * y"},
    {"-x ^ 2", GP_PQ_T_VECTOR, "-x ^ 2"},
    {"-sum(x)", GP_PQ_T_VECTOR, "-sum(x)"},
    {"-rate(x[5m])", GP_PQ_T_VECTOR, "-rate(x[5m])"},
    {"-x offset 5m", GP_PQ_T_VECTOR, "-x offset 5m"},
    {"(x)", GP_PQ_T_VECTOR, "(x)"},
    {"((x))", GP_PQ_T_VECTOR, "((x))"},
    {"(((1 + 2)))", GP_PQ_T_SCALAR, "(((1 + 2)))"},
    {"(x + y) * z", GP_PQ_T_VECTOR, "(x + y) * z"},
    {"x * (y + z)", GP_PQ_T_VECTOR, "x * (y + z)"},
    {"(1)", GP_PQ_T_SCALAR, "(1)"},
    {"  x  ", GP_PQ_T_VECTOR, "x"},
    {"x # a comment", GP_PQ_T_VECTOR, "x"},
    {"sum(x) # trailing", GP_PQ_T_VECTOR, "sum(x)"},
    {"x\t+\ty", GP_PQ_T_VECTOR, "x + y"},
    {"histogram_quantile(0.99, sum by (le, job) (rate(request_duration_seconds_bucket[5m])))", GP_PQ_T_VECTOR, "histogram_quantile(0.99, sum by (le, job) (rate(request_duration_seconds_bucket[5m])))"},
    {"avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)", GP_PQ_T_VECTOR, "avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)"},
    {"sum by (Hostname) (rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[5m]))", GP_PQ_T_VECTOR, "sum by (Hostname) (rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[5m]))"},
    {"max_over_time(DCGM_FI_DEV_GPU_TEMP[10m]) > 85", GP_PQ_T_VECTOR, "max_over_time(DCGM_FI_DEV_GPU_TEMP[10m]) > 85"},
    {"avg_over_time(DCGM_FI_DEV_GPU_UTIL[30m]) < 10 and DCGM_FI_DEV_FB_USED > 0", GP_PQ_T_VECTOR, "avg_over_time(DCGM_FI_DEV_GPU_UTIL[30m]) < 10 and DCGM_FI_DEV_FB_USED > 0"},
    {"(DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)) * 100", GP_PQ_T_VECTOR, "(DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)) * 100"},
    {"increase(DCGM_FI_DEV_XID_ERRORS[1h]) > 0", GP_PQ_T_VECTOR, "increase(DCGM_FI_DEV_XID_ERRORS[1h]) > 0"},
    {"count by (Hostname) (DCGM_FI_DEV_GPU_UTIL) != 8", GP_PQ_T_VECTOR, "count by (Hostname) (DCGM_FI_DEV_GPU_UTIL) != 8"},
    {"topk(5, sum by (pod) (rate(container_cpu_usage_seconds_total[5m])))", GP_PQ_T_VECTOR, "topk(5, sum by (pod) (rate(container_cpu_usage_seconds_total[5m])))"},
    {"absent(up{job=\"gpulse\"} == 1)", GP_PQ_T_VECTOR, "absent(up{job=\"gpulse\"} == 1)"},
    {"label_replace(up, \"host\", \"$1\", \"instance\", \"([^:]+):.*\")", GP_PQ_T_VECTOR, "label_replace(up, \"host\", \"$1\", \"instance\", \"([^:]+):.*\")"},
    {"sum(rate(x[5m])) by (a) / on (a) group_left sum(rate(y[5m])) by (a)", GP_PQ_T_VECTOR, "sum by (a) (rate(x[5m])) / on (a) group_left () sum by (a) (rate(y[5m]))"},
    {"max by (instance) (node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes)", GP_PQ_T_VECTOR, "max by (instance) (node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes)"},
    {"predict_linear(node_filesystem_free_bytes[6h], 4 * 3600) < 0", GP_PQ_T_VECTOR, "predict_linear(node_filesystem_free_bytes[6h], 4 * 3600) < 0"},
    {"1 - avg without (cpu, mode) (rate(node_cpu_seconds_total{mode=\"idle\"}[5m]))", GP_PQ_T_VECTOR, "1 - avg without (cpu, mode) (rate(node_cpu_seconds_total{mode=\"idle\"}[5m]))"},
    {"sum by (a) (x) * on (a) group_right (b) sum by (a, b) (y)", GP_PQ_T_VECTOR, "sum by (a) (x) * on (a) group_right (b) sum by (a, b) (y)"},
    {"rate(x[5m] @ end())", GP_PQ_T_VECTOR, "rate(x[5m] @ end())"},
    {"min_over_time(rate(x[1m])[10m:30s] offset 5m)", GP_PQ_T_VECTOR, "min_over_time(rate(x[1m])[10m:30s] offset 5m)"},
    {"quantile_over_time(0.5, x[1h:5m] @ 1700000000)", GP_PQ_T_VECTOR, "quantile_over_time(0.5, x[1h:5m] @ 1700000000.000)"},
    {"x @ 1700000000.123", GP_PQ_T_VECTOR, "x @ 1700000000.123"},
    {"vector(time()) - timestamp(x)", GP_PQ_T_VECTOR, "vector(time()) - timestamp(x)"},
    {"sum(x) + sum(y) * 2 - count(z) / 3 % 4 ^ 5", GP_PQ_T_VECTOR, "sum(x) + sum(y) * 2 - count(z) / 3 % 4 ^ 5"},
    {"x > bool 1 == bool 0", GP_PQ_T_VECTOR, "x > bool 1 == bool 0"},
    {"x[52w]", GP_PQ_T_MATRIX, "x[52w]"},
    {"x[2y]", GP_PQ_T_MATRIX, "x[2y]"},
    {"x[1y1d]", GP_PQ_T_MATRIX, "x[366d]"},
    {"1e-400", GP_PQ_T_SCALAR, "0"},
    {"0x7fffffffffffffff", GP_PQ_T_SCALAR, "9.223372036854776e+18"},
    {"99999999999999999999", GP_PQ_T_SCALAR, "1e+20"},
    {"x[5m:1m] @ 100 offset 5m", GP_PQ_T_MATRIX, "x[5m:1m] @ 100.000 offset 5m"},
    {"x{a=\"b\"}[5m] offset 5m @ 10", GP_PQ_T_MATRIX, "x{a=\"b\"}[5m] @ 10.000 offset 5m"},
    {"sum without(a)(x)", GP_PQ_T_VECTOR, "sum without (a) (x)"},
    {"count_values without () (\"v\", x)", GP_PQ_T_VECTOR, "count_values without () (\"v\", x)"},
    {"x offset - 5m", GP_PQ_T_VECTOR, "x offset -5m"},
    {"x @ - 5", GP_PQ_T_VECTOR, "x @ -5.000"},
    {"x{a=\"\xc3\xa9""\"}", GP_PQ_T_VECTOR, "x{a=\"\xc3\xa9""\"}"},
    {"1 + 2 + 3 + 4", GP_PQ_T_SCALAR, "1 + 2 + 3 + 4"},
    {"1 / 0", GP_PQ_T_SCALAR, "1 / 0"},
    {"0 / 0", GP_PQ_T_SCALAR, "0 / 0"},
    {"-1 ^ 2", GP_PQ_T_SCALAR, "-1 ^ 2"},
    {"2 ^ - 3 ^ 2", GP_PQ_T_SCALAR, "2 ^ -3 ^ 2"},
    {"x % on(a) y", GP_PQ_T_VECTOR, "x % on (a) y"},
    {"sum(x) == bool on(a) sum(y)", GP_PQ_T_VECTOR, "sum(x) == bool on (a) sum(y)"},
    {"x - - - y", GP_PQ_T_VECTOR, "x - --y"},
    {"x ^ -y ^ z", GP_PQ_T_VECTOR, "x ^ -y ^ z"},
    {"((((((((((x))))))))))", GP_PQ_T_VECTOR, "((((((((((x))))))))))"},
    {"sum(sum(sum(sum(x))))", GP_PQ_T_VECTOR, "sum(sum(sum(sum(x))))"},
    {"abs(abs(abs(abs(x))))", GP_PQ_T_VECTOR, "abs(abs(abs(abs(x))))"},
    {"rate(x[5m] offset 1m @ 2)", GP_PQ_T_VECTOR, "rate(x[5m] @ 2.000 offset 1m)"},
    {"topk(3, x) / ignoring(a) group_left bottomk(2, y)", GP_PQ_T_VECTOR, "topk(3, x) / ignoring (a) group_left () bottomk(2, y)"},
    {"count(x) BY (a)", GP_PQ_T_VECTOR, "count by (a) (x)"},
    {"sum(x) WITHOUT (a)", GP_PQ_T_VECTOR, "sum without (a) (x)"},
    {"x > BOOL 1", GP_PQ_T_VECTOR, "x > bool 1"},
    {"x and ON(a) y", GP_PQ_T_VECTOR, "x and on (a) y"},
    {"x + IGNORING(a) GROUP_LEFT(b) y", GP_PQ_T_VECTOR, "x + ignoring (a) group_left (b) y"},
    {"x @ START()", GP_PQ_T_VECTOR, "x @ start()"},
    {"x @ END()", GP_PQ_T_VECTOR, "x @ end()"},
    {"x @ Start()", GP_PQ_T_VECTOR, "x @ start()"},
    {"x OFFSET -5m", GP_PQ_T_VECTOR, "x offset -5m"},
    {"x{a=~\"x{2}\"}", GP_PQ_T_VECTOR, "x{a=~\"x{2}\"}"},
    {"x{a=~\"[a-z]+\"}", GP_PQ_T_VECTOR, "x{a=~\"[a-z]+\"}"},
    {"time() + time()", GP_PQ_T_SCALAR, "time() + time()"},
    {"time() > bool 0", GP_PQ_T_SCALAR, "time() > bool 0"},
    {"vector(1) and vector(2)", GP_PQ_T_VECTOR, "vector(1) and vector(2)"},
    {"scalar(x) * 2", GP_PQ_T_SCALAR, "scalar(x) * 2"},
    {"-time()", GP_PQ_T_SCALAR, "-time()"},
    {"-vector(1)", GP_PQ_T_VECTOR, "-vector(1)"},
    {"-pi()", GP_PQ_T_SCALAR, "-pi()"},
    {"x[ 5m :1m ]", GP_PQ_T_MATRIX, "x[5m:1m]"},
    {"x[5m :]", GP_PQ_T_MATRIX, "x[5m:]"},
};
static const struct invalid_case invalid_cases[] = {
    {"1e", 1, 1, "error parsing number: strconv.ParseFloat: parsing \"1e\": invalid syntax"},
    {"0x", 1, 1, "error parsing number: strconv.ParseFloat: parsing \"0x\": invalid syntax"},
    {"1.2.3", 1, 4, "unexpected number \".3\""},
    {"1x", 1, 1, "bad number or duration syntax: \"1\""},
    {"5m", 1, 1, "unexpected duration \"5m\""},
    {"1_000", 1, 1, "bad number or duration syntax: \"1\""},
    {"0b101", 1, 1, "bad number or duration syntax: \"0\""},
    {"\"\\q\"", 1, 1, "unknown escape sequence U+0071 'q'"},
    {"'\\\"'", 1, 1, "unknown escape sequence U+0022 '\"'"},
    {"\"\\'\"", 1, 1, "unknown escape sequence U+0027 '''"},
    {"\"unterminated", 1, 1, "unterminated quoted string"},
    {"'unterminated", 1, 1, "unterminated quoted string"},
    {"`unterminated", 1, 1, "unterminated raw string"},
    {"\"\\x4\"", 1, 1, "illegal character U+0022 '\"' in escape sequence"},
    {"\"\\ud800\"", 1, 1, "escape sequence is an invalid Unicode code point"},
    {"\"\\400\"", 1, 1, "escape sequence is an invalid Unicode code point"},
    {"\"a\" + 1", 1, 1, "binary expression must contain only scalar and instant vector types"},
    {"{a=\"\"}", 1, 1, "vector selector must contain at least one non-empty matcher"},
    {"{a=~\".*\"}", 1, 1, "vector selector must contain at least one non-empty matcher"},
    {"{a!~\".+\"}", 1, 1, "vector selector must contain at least one non-empty matcher"},
    {"{}", 1, 1, "vector selector must contain at least one non-empty matcher"},
    {"x{__name__=\"y\"}", 1, 1, "metric name must not be set twice: \"x\" or \"y\""},
    {"x{a}", 1, 4, "unexpected \"}\" in label matching, expected label matching operator"},
    {"x{a=}", 1, 5, "unexpected \"}\" in label matching, expected string"},
    {"x{a=\"b\" c=\"d\"}", 1, 9, "unexpected identifier \"c\" in label matching, expected \",\" or \"}\""},
    {"x{\"a\"=\"b\"}", 1, 3, "unexpected string \"\\\"a\\\"\" in label matching, expected identifier or \"}\""},
    {"x{a=b}", 1, 5, "unexpected identifier \"b\" in label matching, expected string"},
    {"x{0a=\"b\"}", 1, 3, "unexpected character inside braces: '0'"},
    {"x{a:b=\"c\"}", 1, 4, "unexpected character inside braces: ':'"},
    {"x{a=~\"(\"}", 1, 3, NULL},
    {"x{a=\"b\"", 1, 8, "unexpected end of input inside braces"},
    {"x{{a=\"b\"}}", 1, 3, NULL},
    {"x}", 1, 2, "unexpected character: '}'"},
    {"on", 1, 1, "unexpected <on>"},
    {"bool", 1, 1, "unexpected <bool>"},
    {"ignoring", 1, 1, "unexpected <ignoring>"},
    {"group_left", 1, 1, "unexpected <group_left>"},
    {"atan2", 1, 1, "unexpected <op:atan2>"},
    {"x[0s]", 1, 3, "duration must be greater than 0"},
    {"x[5]", 1, 3, "missing unit character in duration"},
    {"x[5m][10m:1m]", 1, 1, "subquery is only allowed on instant vector, got matrix instead"},
    {"(x)[5m]", 1, 4, "ranges only allowed for vector selectors"},
    {"sum(x)[5m]", 1, 7, "ranges only allowed for vector selectors"},
    {"x[5m:1m][1h:5m]", 1, 1, "subquery is only allowed on instant vector, got matrix instead"},
    {"1[5m:1m]", 1, 1, "subquery is only allowed on instant vector, got scalar instead"},
    {"x[5m", 1, 5, "unclosed left bracket"},
    {"x[]", 1, 3, "missing unit character in duration"},
    {"x[5m:1m:1m]", 1, 8, "unexpected colon ':'"},
    {"x[1m30]", 1, 3, "bad duration syntax: \"1m30\""},
    {"x[1.5m]", 1, 3, "not a valid duration string: \"1.5m\""},
    {"x[5mm]", 1, 3, "bad duration syntax: \"5mm\""},
    {"x[1h1h]", 1, 3, "not a valid duration string: \"1h1h\""},
    {"x[30m1h]", 1, 3, "not a valid duration string: \"30m1h\""},
    {"x[5m:0s]", 1, 6, "duration must be greater than 0"},
    {"x offset 5m[5m]", 1, 12, "no offset modifiers allowed before range"},
    {"x @ 100 [5m]", 1, 9, "no @ modifiers allowed before range"},
    {"x offset 5m offset 1m", 1, 1, "offset may not be set multiple times"},
    {"x @ 1 @ 2", 1, 1, "@ <timestamp> may not be set multiple times"},
    {"x @ start() @ 1", 1, 1, "@ <timestamp> may not be set multiple times"},
    {"sum(x) offset 5m", 1, 1, "offset modifier must be preceded by an instant vector selector or range vector selector or a subquery"},
    {"(x) offset 5m", 1, 1, "offset modifier must be preceded by an instant vector selector or range vector selector or a subquery"},
    {"1 offset 5m", 1, 1, "offset modifier must be preceded by an instant vector selector or range vector selector or a subquery"},
    {"sum(x) @ 100", 1, 1, "@ modifier must be preceded by an instant vector selector or range vector selector or a subquery"},
    {"x offset", 1, 9, "unexpected end of input in offset, expected duration"},
    {"x offset 0s", 1, 10, "duration must be greater than 0"},
    {"x offset 5", 1, 10, "unexpected number \"5\" in offset, expected duration"},
    {"x @", 1, 4, "unexpected end of input in @, expected timestamp"},
    {"x @ start", 1, 10, "unexpected end of input in @, expected timestamp"},
    {"x @ now()", 1, 5, "unexpected identifier \"now\" in @, expected timestamp"},
    {"x @ Inf", 1, 1, "timestamp out of bounds for @ modifier: +Inf"},
    {"x @ NaN", 1, 1, "timestamp out of bounds for @ modifier: NaN"},
    {"rate(x)", 1, 6, "expected type range vector in call to function \"rate\", got instant vector"},
    {"rate(x[5m], 1)", 1, 1, "expected 1 argument(s) in call to \"rate\", got 2"},
    {"rate()", 1, 1, "expected 1 argument(s) in call to \"rate\", got 0"},
    {"abs(x[5m])", 1, 5, "expected type instant vector in call to function \"abs\", got range vector"},
    {"abs(x, 1)", 1, 1, "expected 1 argument(s) in call to \"abs\", got 2"},
    {"round(x, 1, 2)", 1, 1, "expected at most 2 argument(s) in call to \"round\", got 3"},
    {"clamp(x, 0)", 1, 1, "expected 3 argument(s) in call to \"clamp\", got 2"},
    {"vector(x)", 1, 8, "expected type scalar in call to function \"vector\", got instant vector"},
    {"vector(\"a\")", 1, 8, "expected type scalar in call to function \"vector\", got string"},
    {"scalar(1)", 1, 8, "expected type instant vector in call to function \"scalar\", got scalar"},
    {"time(1)", 1, 1, "expected 0 argument(s) in call to \"time\", got 1"},
    {"pi(1)", 1, 1, "expected 0 argument(s) in call to \"pi\", got 1"},
    {"label_replace(x, \"dst\", \"$1\", \"src\")", 1, 1, "expected 5 argument(s) in call to \"label_replace\", got 4"},
    {"label_replace(x, dst, \"$1\", \"src\", \"(.*)\")", 1, 18, "expected type string in call to function \"label_replace\", got instant vector"},
    {"label_join(x, \"dst\")", 1, 1, "expected at least 3 argument(s) in call to \"label_join\", got 2"},
    {"day_of_week(x, x)", 1, 1, "expected at most 1 argument(s) in call to \"day_of_week\", got 2"},
    {"histogram_quantile(x, x)", 1, 20, "expected type scalar in call to function \"histogram_quantile\", got instant vector"},
    {"predict_linear(x[5m], \"a\")", 1, 23, "expected type scalar in call to function \"predict_linear\", got string"},
    {"quantile_over_time(x[5m], 0.5)", 1, 20, "expected type scalar in call to function \"quantile_over_time\", got range vector"},
    {"foo(x)", 1, 1, "unknown function with name \"foo\""},
    {"Rate(x[5m])", 1, 1, "unknown function with name \"Rate\""},
    {"RATE(x[5m])", 1, 1, "unknown function with name \"RATE\""},
    {"rate(x[5m],)", 1, 11, "trailing commas not allowed in function call args"},
    {"rate(,x[5m])", 1, 6, "unexpected \",\""},
    {"rate(x[5m]", 1, 11, "unclosed left parenthesis"},
    {"sum by (a:b) (x)", 1, 9, "unexpected metric identifier \"a:b\" in grouping opts, expected label"},
    {"sum by (nan) (x)", 1, 9, "unexpected number \"nan\" in grouping opts, expected label"},
    {"sum by (1) (x)", 1, 9, "unexpected number \"1\" in grouping opts, expected label"},
    {"sum by (a) by (b) (x)", 1, 12, "unexpected <by> in aggregation"},
    {"sum by a (x)", 1, 8, "unexpected identifier \"a\" in grouping opts, expected \"(\""},
    {"sum by (a (x)", 1, 11, "unexpected \"(\" in grouping opts, expected \",\" or \")\""},
    {"sum()", 1, 1, "no arguments for aggregate expression provided"},
    {"sum(x, y)", 1, 1, "wrong number of arguments for aggregate expression provided, expected 1, got 2"},
    {"topk(x)", 1, 1, "wrong number of arguments for aggregate expression provided, expected 2, got 1"},
    {"topk(3)", 1, 1, "wrong number of arguments for aggregate expression provided, expected 2, got 1"},
    {"topk(\"a\", x)", 1, 6, "expected type scalar in aggregation parameter, got string"},
    {"quantile(x, x)", 1, 10, "expected type scalar in aggregation parameter, got instant vector"},
    {"count_values(1, x)", 1, 14, "expected type string in aggregation parameter, got scalar"},
    {"sum(x[5m])", 1, 5, "expected type instant vector in aggregation expression, got range vector"},
    {"sum(1)", 1, 5, "expected type instant vector in aggregation expression, got scalar"},
    {"sum(\"a\")", 1, 5, "expected type instant vector in aggregation expression, got string"},
    {"sum(x) by (a) by (b)", 1, 15, "unexpected <by>"},
    {"sum by (a) (x) by (b)", 1, 16, "unexpected <by>"},
    {"1 > 2", 1, 3, "comparisons between scalars must use BOOL modifier"},
    {"1 == 2", 1, 3, "comparisons between scalars must use BOOL modifier"},
    {"x + on (a) group_left (a) y", 1, 3, "label \"a\" must not occur in ON and GROUP clause at once"},
    {"x and on (a) group_left y", 1, 1, "no grouping allowed for \"and\" operation"},
    {"x or on (a) group_right (b) y", 1, 1, "no grouping allowed for \"or\" operation"},
    {"1 and 2", 1, 1, "set operator \"and\" not allowed in binary scalar expression"},
    {"x and 1", 1, 1, "set operator \"and\" not allowed in binary scalar expression"},
    {"1 or x", 1, 1, "set operator \"or\" not allowed in binary scalar expression"},
    {"1 + on (a) 2", 1, 1, "vector matching only allowed between instant vectors"},
    {"1 + on (a) x", 1, 1, "vector matching only allowed between instant vectors"},
    {"x + on (a) 1", 1, 1, "vector matching only allowed between instant vectors"},
    {"x + bool y", 1, 3, "bool modifier can only be used on comparison operators"},
    {"x + bool 1", 1, 3, "bool modifier can only be used on comparison operators"},
    {"x and bool y", 1, 3, "bool modifier can only be used on comparison operators"},
    {"x[5m] + 1", 1, 1, "binary expression must contain only scalar and instant vector types"},
    {"1 + x[5m]", 1, 5, "binary expression must contain only scalar and instant vector types"},
    {"\"a\" + 1", 1, 1, "binary expression must contain only scalar and instant vector types"},
    {"x + \"a\"", 1, 5, "binary expression must contain only scalar and instant vector types"},
    {"x + group_left y", 1, 5, "unexpected <group_left>"},
    {"x + on (a) group_left (b)", 1, 26, "unexpected end of input"},
    {"x +", 1, 4, "unexpected end of input"},
    {"x == == y", 1, 6, "unexpected <op:==>"},
    {"x = 1", 1, 3, "unexpected \"=\""},
    {"x =~ y", 1, 3, "unexpected character after '=': '~'"},
    {"x !~ y", 1, 3, "unexpected character after '!': '~'"},
    {"x ! y", 1, 3, "unexpected character after '!': ' '"},
    {"x & y", 1, 3, "unexpected character: '&'"},
    {"x | y", 1, 3, "unexpected character: '|'"},
    {"x $ y", 1, 3, "unexpected character: '$'"},
    {"x ; y", 1, 3, "unexpected character: ';'"},
    {"x y", 1, 3, "unexpected identifier \"y\""},
    {"1 2", 1, 3, "unexpected number \"2\""},
    {"-x[5m]", 1, 1, "unary expression only allowed on expressions of type scalar or instant vector, got \"range vector\""},
    {"-\"a\"", 1, 1, "unary expression only allowed on expressions of type scalar or instant vector, got \"string\""},
    {"()", 1, 2, "unexpected \")\""},
    {"(x", 1, 3, "unclosed left parenthesis"},
    {"x)", 1, 3, "unexpected right parenthesis ')'"},
    {"((x)", 1, 5, "unclosed left parenthesis"},
    {"(x))", 1, 5, "unexpected right parenthesis ')'"},
    {"x (y)", 1, 1, "unknown function with name \"x\""},
    {"x[1d1y]", 1, 3, "bad duration syntax: \"1d1\""},
    {"x @ 1e20", 1, 1, "timestamp out of bounds for @ modifier: 100000000000000000000.000000"},
    {"x @ -1e20", 1, 1, "timestamp out of bounds for @ modifier: -100000000000000000000.000000"},
    {"1e400", 1, 1, "error parsing number: strconv.ParseFloat: parsing \"1e400\": value out of range"},
    {"-1e400", 1, 2, "error parsing number: strconv.ParseFloat: parsing \"1e400\": value out of range"},
    {"0x8000000000000000", 1, 1, "error parsing number: strconv.ParseFloat: parsing \"0x8000000000000000\": invalid syntax"},
    {"sum(x) by", 1, 10, "unexpected end of input in grouping opts, expected \"(\""},
    {"sum by", 1, 7, "unexpected end of input in grouping opts, expected \"(\""},
    {"sum by (", 1, 9, "unclosed left parenthesis"},
    {"sum(x) by (a", 1, 13, "unclosed left parenthesis"},
    {"x + on", 1, 7, "unexpected end of input in grouping opts, expected \"(\""},
    {"x + on(", 1, 8, "unclosed left parenthesis"},
    {"x + on(a) group_left(", 1, 22, "unclosed left parenthesis"},
    {"rate(x[5m]) by (a)", 1, 13, "unexpected <by>"},
    {"x offset -", 1, 11, "unexpected end of input in offset, expected duration"},
    {"x @ -", 1, 6, "unexpected end of input in @, expected timestamp"},
    {"x[5m:1m", 1, 8, "unclosed left bracket"},
    {"{", 1, 2, "unexpected end of input inside braces"},
    {"}", 1, 1, "unexpected character: '}'"},
    {"x{a=\"b\"}}", 1, 9, "unexpected character: '}'"},
    {"x{a=\"b\"}{c=\"d\"}", 1, 9, "unexpected \"{\""},
    {"x[5m] offset 5m offset 5m", 1, 1, "offset may not be set multiple times"},
    {"x offset 1m @ 1 offset 2m", 1, 1, "offset may not be set multiple times"},
    {"x offset 1H", 1, 10, "bad number or duration syntax: \"1\""},
    {"x[5M]", 1, 3, "bad duration syntax: \"5\""},
    {"1.5e3m", 1, 1, "unexpected duration \"1.5e3m\""},
    {"label_replace(x, \"a\", \"b\", \"c\", \"d\", \"e\")", 1, 1, "expected 5 argument(s) in call to \"label_replace\", got 6"},
    {"deg ( x + ( x ) or sum ( x , y )", 1, 33, "unclosed left parenthesis"},
    {"sum(x, y", 1, 9, "unclosed left parenthesis"},
    {"sumby(by,on,offset,bool,group_left,start,endabsand,atan2)(x)", 1, 9, "trailing commas not allowed in function call args"},
    {"rate(x[5m], , 1)", 1, 11, "trailing commas not allowed in function call args"},
    {"rate(x[5m], ])", 1, 13, "unexpected right bracket ']'"},
    {"sum by (without) (x)", 1, 9, "unexpected <without> in grouping opts, expected label"},
    {"sum by (a, without) (x)", 1, 12, "unexpected <without> in grouping opts, expected label"},
    {"x[[5m]]", 1, 3, "missing unit character in duration"},
    {"x[ [5m]]", 1, 4, "missing unit character in duration"},
    {"x[5m[", 1, 5, "unexpected left bracket '['"},
    {"x]", 1, 2, "unexpected right bracket ']'"},
    {"x ] 1", 1, 3, "unexpected right bracket ']'"},
    {"x[]", 1, 3, "missing unit character in duration"},
    {"x[ ]", 1, 4, "missing unit character in duration"},
    {"x[5]", 1, 3, "missing unit character in duration"},
    {"x[a]", 1, 3, "bad duration syntax: \"\""},
    {"x[5m:a]", 1, 6, "unexpected colon 'a'"},
    {"x[5m:5]", 1, 6, "unexpected number \"5\" in subquery selector, expected duration or \"]\""},
};

static struct gp_pq_node *parse_ok_at(int line, const char *q)
{
    struct gp_pq_node *e = NULL;
    char err[512] = "";
    int rc = gp_promql_parse(q, strlen(q), &e, err, sizeof err);
    if (rc != GP_OK || !e)
        gp_test_fail(__FILE__, line, "parse %s: %d %s", q, rc, err);
    return e;
}
#define parse_ok(q) parse_ok_at(__LINE__, q)

/* Parses q expecting rc and an error containing want; returns nothing. */
static void parse_bad_at(int line, const char *q, size_t len, int want_rc, const char *want)
{
    struct gp_pq_node *e = (struct gp_pq_node *)1;
    char err[512] = "";
    int rc = gp_promql_parse(q, len, &e, err, sizeof err);
    if (rc != want_rc || e != NULL || !strstr(err, want))
        gp_test_fail(__FILE__, line, "parse %.80s: rc %d (want %d), err '%s' (want '%s')", q, rc,
                     want_rc, err, want);
}
#define parse_bad(q, want) parse_bad_at(__LINE__, q, strlen(q), GP_EPARSE, want)

/* e's canonical text (caller frees). */
static char *text_of(const struct gp_pq_node *e)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_promql_format(e, &b);
    CHECK(b.err == GP_OK);
    size_t n;
    char *s = gp_buf_steal(&b, &n);
    return s ? s : strdup("");
}

static void test_valid_corpus(void)
{
    CHECK(sizeof valid_cases / sizeof valid_cases[0] >= 150);
    for (size_t i = 0; i < sizeof valid_cases / sizeof valid_cases[0]; i++) {
        const struct valid_case *c = &valid_cases[i];
        struct gp_pq_node *e = parse_ok(c->q);
        char *t = text_of(e);
        if (strcmp(t, c->text) != 0 || e->type != c->type)
            gp_test_fail(__FILE__, __LINE__, "%s: text '%s' type %d, want '%s' type %d", c->q, t,
                         (int)e->type, c->text, (int)c->type);
        /* The canonical text is a fixed point. */
        struct gp_pq_node *again = parse_ok(t);
        char *t2 = text_of(again);
        if (strcmp(t, t2) != 0 || again->type != e->type)
            gp_test_fail(__FILE__, __LINE__, "%s: '%s' formats back as '%s'", c->q, t, t2);
        free(t);
        free(t2);
        gp_promql_free(e);
        gp_promql_free(again);
    }
}

static void test_invalid_corpus(void)
{
    CHECK(sizeof invalid_cases / sizeof invalid_cases[0] >= 80);
    for (size_t i = 0; i < sizeof invalid_cases / sizeof invalid_cases[0]; i++) {
        const struct invalid_case *c = &invalid_cases[i];
        char want[32];
        snprintf(want, sizeof want, "%d:%d: parse error: ", c->line, c->col);
        struct gp_pq_node *e = (struct gp_pq_node *)1;
        char err[512] = "";
        int rc = gp_promql_parse(c->q, strlen(c->q), &e, err, sizeof err);
        if (rc != GP_EPARSE || e != NULL || strncmp(err, want, strlen(want)) != 0 ||
            (c->msg && strcmp(err + strlen(want), c->msg) != 0))
            gp_test_fail(__FILE__, __LINE__, "%s: rc %d err '%s', want '%s%s'", c->q, rc, err,
                         want, c->msg ? c->msg : "...");
    }
}

static void test_precedence(void)
{
    /* 1 + 2 * 3: + at the top, * on the right. */
    struct gp_pq_node *e = parse_ok("1 + 2 * 3");
    CHECK_INT(e->kind, GP_PQ_BINARY);
    CHECK_INT(e->u.bin.op, GP_PQ_OP_ADD);
    CHECK_INT(e->u.bin.rhs->u.bin.op, GP_PQ_OP_MUL);
    gp_promql_free(e);
    /* 1 - 2 - 3 is (1 - 2) - 3; 2 ^ 3 ^ 2 is 2 ^ (3 ^ 2). */
    e = parse_ok("1 - 2 - 3");
    CHECK_INT(e->u.bin.lhs->kind, GP_PQ_BINARY);
    CHECK_INT(e->u.bin.rhs->kind, GP_PQ_NUMBER);
    gp_promql_free(e);
    e = parse_ok("2 ^ 3 ^ 2");
    CHECK_INT(e->u.bin.lhs->kind, GP_PQ_NUMBER);
    CHECK_INT(e->u.bin.rhs->u.bin.op, GP_PQ_OP_POW);
    gp_promql_free(e);
    /* -2 ^ 2 is -(2 ^ 2); -x * y is (-x) * y. */
    e = parse_ok("-2 ^ 2");
    CHECK_INT(e->kind, GP_PQ_UNARY);
    CHECK(e->u.unary.negate);
    CHECK_INT(e->u.unary.expr->u.bin.op, GP_PQ_OP_POW);
    gp_promql_free(e);
    e = parse_ok("-x * y");
    CHECK_INT(e->u.bin.op, GP_PQ_OP_MUL);
    CHECK_INT(e->u.bin.lhs->kind, GP_PQ_UNARY);
    gp_promql_free(e);
    /* or binds loosest, then and/unless, comparisons, + -, * / % atan2. */
    e = parse_ok("a or b and c > d + e * f atan2 g ^ h");
    CHECK_INT(e->u.bin.op, GP_PQ_OP_OR);
    struct gp_pq_node *r = e->u.bin.rhs;
    CHECK_INT(r->u.bin.op, GP_PQ_OP_AND);
    r = r->u.bin.rhs;
    CHECK_INT(r->u.bin.op, GP_PQ_OP_GTR);
    r = r->u.bin.rhs;
    CHECK_INT(r->u.bin.op, GP_PQ_OP_ADD);
    r = r->u.bin.rhs;
    CHECK_INT(r->u.bin.op, GP_PQ_OP_ATAN2);
    CHECK_INT(r->u.bin.lhs->u.bin.op, GP_PQ_OP_MUL);
    CHECK_INT(r->u.bin.rhs->u.bin.op, GP_PQ_OP_POW);
    gp_promql_free(e);
    /* Postfix modifiers bind tightest: a + b offset 5m offsets b only. */
    e = parse_ok("a + b offset 5m");
    CHECK_INT(e->u.bin.lhs->u.sel.offset_ms, 0);
    CHECK_INT(e->u.bin.rhs->u.sel.offset_ms, 300000);
    gp_promql_free(e);
    /* -1 is a number, folded as Prometheus folds it; -(1) is not. */
    e = parse_ok("-1");
    CHECK_INT(e->kind, GP_PQ_NUMBER);
    CHECK_DBL(e->u.number, -1, 0);
    CHECK_INT(e->pos, 0);
    gp_promql_free(e);
    e = parse_ok("-(1)");
    CHECK_INT(e->kind, GP_PQ_UNARY);
    CHECK_INT(e->u.unary.expr->kind, GP_PQ_PAREN);
    gp_promql_free(e);
}

static void test_vector_matching(void)
{
    struct gp_pq_node *e = parse_ok("a * on (x, y) group_left (z) b");
    const struct gp_pq_binary *b = &e->u.bin;
    CHECK(b->on);
    CHECK_INT(b->card, GP_PQ_CARD_MANY_TO_ONE);
    CHECK_INT(b->matching.n, 2);
    CHECK(!strcmp(b->matching.names[0], "x") && !strcmp(b->matching.names[1], "y"));
    CHECK_INT(b->include.n, 1);
    CHECK(!strcmp(b->include.names[0], "z"));
    gp_promql_free(e);
    e = parse_ok("a / ignoring (x) group_right b");
    CHECK(!e->u.bin.on);
    CHECK_INT(e->u.bin.card, GP_PQ_CARD_ONE_TO_MANY);
    CHECK_INT(e->u.bin.include.n, 0);
    gp_promql_free(e);
    /* Set operators are many-to-many. */
    e = parse_ok("a and on (x) b");
    CHECK_INT(e->u.bin.card, GP_PQ_CARD_MANY_TO_MANY);
    gp_promql_free(e);
    e = parse_ok("a > bool b");
    CHECK(e->u.bin.return_bool);
    CHECK_INT(e->u.bin.card, GP_PQ_CARD_ONE_TO_ONE);
    CHECK_INT(e->type, GP_PQ_T_VECTOR);
    gp_promql_free(e);
    /* Matching is dropped where a side is a scalar, as Prometheus does. */
    e = parse_ok("a + on () 1");
    CHECK(!e->u.bin.on);
    CHECK_INT(e->u.bin.matching.n, 0);
    gp_promql_free(e);
    e = parse_ok("1 > bool 2");
    CHECK_INT(e->type, GP_PQ_T_SCALAR);
    gp_promql_free(e);
}

static void test_modifiers(void)
{
    struct gp_pq_node *e = parse_ok("x{a=\"b\"}[1h30m] offset -5m @ 1700000000.5");
    CHECK_INT(e->kind, GP_PQ_MATRIX_SEL);
    CHECK_INT(e->u.sel.range_ms, 5400000);
    CHECK_INT(e->u.sel.offset_ms, -300000);
    CHECK_INT(e->u.sel.at, GP_PQ_AT_TIME);
    CHECK_INT(e->u.sel.at_ms, 1700000000500LL);
    gp_promql_free(e);
    e = parse_ok("rate(x[5m])[1h:1m] @ end() offset 1d");
    CHECK_INT(e->kind, GP_PQ_SUBQUERY);
    CHECK_INT(e->u.sub.range_ms, 3600000);
    CHECK_INT(e->u.sub.step_ms, 60000);
    CHECK_INT(e->u.sub.at, GP_PQ_AT_END);
    CHECK_INT(e->u.sub.offset_ms, 86400000);
    CHECK_INT(e->u.sub.expr->kind, GP_PQ_CALL);
    gp_promql_free(e);
    e = parse_ok("x[5m:]");
    CHECK_INT(e->u.sub.step_ms, 0);
    CHECK_INT(e->u.sub.expr->kind, GP_PQ_VECTOR_SEL);
    gp_promql_free(e);
    e = parse_ok("x @ start()");
    CHECK_INT(e->u.sel.at, GP_PQ_AT_START);
    gp_promql_free(e);
    /* @ rounds to the millisecond. */
    e = parse_ok("x @ -1.0005");
    CHECK_INT(e->u.sel.at_ms, -1001);
    gp_promql_free(e);
}

static void test_aggregations(void)
{
    struct gp_pq_node *e = parse_ok("topk by (a, b) (3, x)");
    CHECK_INT(e->kind, GP_PQ_AGG);
    CHECK_INT(e->u.agg.op, GP_PQ_A_TOPK);
    CHECK_INT(e->u.agg.param->kind, GP_PQ_NUMBER);
    CHECK_DBL(e->u.agg.param->u.number, 3, 0);
    CHECK_INT(e->u.agg.grouping.n, 2);
    CHECK(!e->u.agg.without);
    gp_promql_free(e);
    e = parse_ok("count_values(\"v\", x) without (c)");
    CHECK_INT(e->u.agg.op, GP_PQ_A_COUNT_VALUES);
    CHECK_INT(e->u.agg.param->kind, GP_PQ_STRING);
    CHECK(e->u.agg.without);
    gp_promql_free(e);
    e = parse_ok("SUM(x)");
    CHECK_INT(e->u.agg.op, GP_PQ_A_SUM);
    CHECK(e->u.agg.param == NULL);
    gp_promql_free(e);
    /* Prometheus 3's limitk and limit_ratio (documented). */
    e = parse_ok("limitk(2, x)");
    CHECK_INT(e->u.agg.op, GP_PQ_A_LIMITK);
    gp_promql_free(e);
    parse_bad("limit_ratio(\"a\", x)", "expected type scalar in aggregation parameter");
    /* An aggregation's name alone is a metric name. */
    e = parse_ok("sum");
    CHECK_INT(e->kind, GP_PQ_VECTOR_SEL);
    CHECK(!strcmp(e->u.sel.name, "sum"));
    gp_promql_free(e);
    for (int a = 0; a < GP_PQ_A_COUNT_; a++)
        CHECK(strcmp(gp_pq_agg_name((enum gp_pq_aggop)a), "unknown") != 0);
}

static void test_numbers_and_strings(void)
{
    static const struct {
        const char *q;
        double v;
    } nums[] = {{"0x1f", 31}, {"017", 15}, {"08", 8}, {"1e3", 1000}, {".5", 0.5},
                {"1.", 1},    {"-Inf", -INFINITY}, {"inf", INFINITY}, {"1e-400", 0}};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        struct gp_pq_node *e = parse_ok(nums[i].q);
        CHECK_INT(e->kind, GP_PQ_NUMBER);
        CHECK(e->u.number == nums[i].v);
        gp_promql_free(e);
    }
    struct gp_pq_node *e = parse_ok("NaN");
    CHECK(isnan(e->u.number));
    gp_promql_free(e);
    e = parse_ok("\"a\\tb\\x41\\101\\u00e9\\\"\"");
    CHECK_INT(e->kind, GP_PQ_STRING);
    CHECK_INT(e->u.string.len, 8);
    CHECK(!memcmp(e->u.string.s, "a\tbAA\xc3\xa9\"", 8));
    gp_promql_free(e);
    e = parse_ok("`a\\n`");
    CHECK(!strcmp(e->u.string.s, "a\\n"));
    gp_promql_free(e);
    e = parse_ok("'it\\'s'");
    CHECK(!strcmp(e->u.string.s, "it's"));
    gp_promql_free(e);
    parse_bad("\"\\'\"", "unknown escape sequence");
    parse_bad("\"\xff\"", "invalid UTF-8");
    parse_bad("\"\\ud800\"", "invalid Unicode code point");
    parse_bad("1e400", "error parsing number");
}

static void test_matchers(void)
{
    struct gp_pq_node *e = parse_ok("x{a=~\"b|c\", d!=\"\", e!~\"f.*\"}");
    const struct gp_pq_sel *s = &e->u.sel;
    CHECK(!strcmp(s->name, "x"));
    CHECK_INT(s->nm, 4);
    /* The name's matcher comes last, as in Prometheus. */
    CHECK(!strcmp(s->m[3].name, "__name__") && !strcmp(s->m[3].value, "x"));
    CHECK_INT(s->m[0].op, GP_MATCH_RE);
    /* Regexes are anchored, as the store's are. */
    CHECK(gp_matcher_matches(&s->m[0], "b", 1));
    CHECK(!gp_matcher_matches(&s->m[0], "bb", 2));
    CHECK(!gp_matcher_matches(&s->m[1], "", 0));
    CHECK(!gp_matcher_matches(&s->m[2], "fx", 2));
    gp_promql_free(e);
    e = parse_ok("{__name__=~\"x|y\"}");
    CHECK(e->u.sel.name == NULL);
    CHECK_INT(e->u.sel.nm, 1);
    gp_promql_free(e);
    parse_bad("{a=~\".*\"}", "vector selector must contain at least one non-empty matcher");
    parse_bad("x{__name__=\"y\"}", "metric name must not be set twice");
    /* RE2 that POSIX cannot say is refused by the store's matchers, with
     * the reason; the rest is translated. */
    parse_bad("x{a=~\"\\\\b+\"}", "1:3: parse error: invalid regex");
    e = parse_ok("x{a=~\"(?i)\\\\d+\"}");
    CHECK(gp_matcher_matches(&e->u.sel.m[0], "12", 2));
    gp_promql_free(e);
}

static void test_error_words(void)
{
    parse_bad("x + bool y", "1:3: parse error: bool modifier can only be used on comparison operators");
    parse_bad("1 + on (a) x", "vector matching only allowed between instant vectors");
    parse_bad("x and on (a) group_left y", "no grouping allowed for \"and\" operation");
    parse_bad("1 and x", "set operator \"and\" not allowed in binary scalar expression");
    parse_bad("1 < 2", "comparisons between scalars must use BOOL modifier");
    parse_bad("x[5m] + 1", "binary expression must contain only scalar and instant vector types");
    parse_bad("rate(x)", "expected type range vector in call to function \"rate\", got instant vector");
    parse_bad("round(x, 1, 2)", "expected at most 2 argument(s) in call to \"round\", got 3");
    parse_bad("label_join(x)", "expected at least 3 argument(s) in call to \"label_join\", got 1");
    parse_bad("abs()", "expected 1 argument(s) in call to \"abs\", got 0");
    parse_bad("nosuch(x)", "1:1: parse error: unknown function with name \"nosuch\"");
    parse_bad("sum(x) offset 5m", "offset modifier must be preceded by an instant vector selector");
    parse_bad("(x)[5m]", "1:4: parse error: ranges only allowed for vector selectors");
    parse_bad("x offset 5m[5m]", "no offset modifiers allowed before range");
    parse_bad("x[5m][1h:1m]", "subquery is only allowed on instant vector, got matrix instead");
    parse_bad("-x[5m]", "unary expression only allowed on expressions of type scalar or instant vector");
    parse_bad("x @ 1 @ 2", "@ <timestamp> may not be set multiple times");
    parse_bad("x[0s]", "1:3: parse error: duration must be greater than 0");
    parse_bad("sum()", "no arguments for aggregate expression provided");
    parse_bad("topk(x)", "wrong number of arguments for aggregate expression provided, expected 2, got 1");
    parse_bad("rate(x[5m],)", "trailing commas not allowed in function call args");
    parse_bad("sum(x", "1:6: parse error: unclosed left parenthesis");
    parse_bad("x)", "1:3: parse error: unexpected right parenthesis ')'");
    parse_bad("x{a=\"b\"", "unexpected end of input inside braces");
    parse_bad("x[5m", "unclosed left bracket");
    parse_bad("x y", "1:3: parse error: unexpected identifier \"y\"");
    parse_bad("x{{a=\"b\"}}", "native histogram literals are not supported");
    /* Lines count from 1, columns in bytes from 1 on each line. */
    parse_bad("sum(\n  x\n) +\n\n   )", "5:5: parse error: unexpected right parenthesis");
    parse_bad("x +\n  foo(1)", "2:3: parse error: unknown function");
    /* Nothing to parse. */
    parse_bad("", "1:1: parse error: no expression found in input");
    parse_bad("  # only a comment\n", "1:1: parse error: no expression found in input");
    /* Bytes past len are not read. */
    struct gp_pq_node *e = NULL;
    char err[128];
    CHECK_INT(gp_promql_parse("x + y)))", 5, &e, err, sizeof err), GP_OK);
    CHECK_INT(e->kind, GP_PQ_BINARY);
    gp_promql_free(e);
    parse_bad_at(__LINE__, "sum(x)", 5, GP_EPARSE, "1:6: parse error: unclosed left parenthesis");
}

/* Each function, called with its fewest arguments of the right types,
 * parses to its return type; the table and the names agree. */
static void test_function_table(void)
{
    static const char *const arg_text[] = {[GP_PQ_T_SCALAR] = "1", [GP_PQ_T_VECTOR] = "x",
                                           [GP_PQ_T_MATRIX] = "x[5m]", [GP_PQ_T_STRING] = "\"a\""};
    for (int f = 0; f < GP_PQ_F_COUNT_; f++) {
        const char *name = gp_pq_func_name((enum gp_pq_func)f);
        const struct gp_pq_func_info *fi = gp_pq_func_info((enum gp_pq_func)f);
        CHECK(fi != NULL);
        CHECK_INT(gp_pq_func_lookup(name, strlen(name)), f);
        CHECK(fi->min_args <= fi->nargs && (fi->max_args < 0 || fi->max_args >= (int)fi->min_args));
        char q[256];
        int n = snprintf(q, sizeof q, "%s(", name);
        for (unsigned i = 0; i < fi->min_args; i++)
            n += snprintf(q + n, sizeof q - (size_t)n, "%s%s", i ? ", " : "", arg_text[fi->args[i]]);
        snprintf(q + n, sizeof q - (size_t)n, ")");
        struct gp_pq_node *e = parse_ok(q);
        CHECK_INT(e->kind, GP_PQ_CALL);
        CHECK_INT(e->u.call.func, f);
        if (e->type != fi->ret)
            gp_test_fail(__FILE__, __LINE__, "%s: type %d, want %d", q, (int)e->type, (int)fi->ret);
        gp_promql_free(e);
    }
    CHECK_INT(gp_pq_func_lookup("Rate", 4), -1);
    CHECK(gp_pq_func_info((enum gp_pq_func)GP_PQ_F_COUNT_) == NULL);
}

static char *repeat(const char *head, const char *unit, size_t n, const char *tail)
{
    size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail);
    char *s = malloc(hl + ul * n + tl + 1);
    CHECK(s != NULL);
    memcpy(s, head, hl);
    for (size_t i = 0; i < n; i++)
        memcpy(s + hl + i * ul, unit, ul);
    memcpy(s + hl + ul * n, tail, tl + 1);
    return s;
}

static void test_depth_caps(void)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* 10,000 nested parentheses: refused at the cap, not a stack overflow. */
    char *q = repeat("", "(", 10000, "x");
    parse_bad_at(__LINE__, q, strlen(q), GP_ETOOBIG, "nested deeper than 200");
    free(q);
    q = repeat("", "(", 10000, "");
    parse_bad_at(__LINE__, q, strlen(q), GP_ETOOBIG, "nested deeper than 200");
    free(q);
    /* Long left-leaning chains are deep trees too. */
    q = repeat("1", " + 1", 50000, "");
    parse_bad_at(__LINE__, q, strlen(q), GP_ETOOBIG, "nested deeper than 200");
    free(q);
    q = repeat("", "-", 10000, "x");
    parse_bad_at(__LINE__, q, strlen(q), GP_ETOOBIG, "nested deeper than 200");
    free(q);
    q = repeat("", "abs(", 5000, "x");
    parse_bad_at(__LINE__, q, strlen(q), GP_ETOOBIG, "nested deeper than 200");
    free(q);
    q = repeat("x", "[1h:1m]", 1000, "");
    parse_bad_at(__LINE__, q, strlen(q), GP_ETOOBIG, "nested deeper than 200");
    free(q);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 2000);
    /* Within the cap nesting is fine, and formats back. */
    q = repeat("", "(", 150, "x");
    char *close = repeat(q, ")", 150, "");
    struct gp_pq_node *e = parse_ok(close);
    char *t = text_of(e);
    CHECK(!strcmp(t, close));
    free(t);
    gp_promql_free(e);
    free(q);
    free(close);
    q = repeat("1", " + 1", 150, "");
    e = parse_ok(q);
    gp_promql_free(e);
    free(q);
}

static void test_length_cap(void)
{
    /* A 1 MB query is refused before it is read. */
    size_t n = 1 << 20;
    char *q = malloc(n);
    CHECK(q != NULL);
    memset(q, ' ', n);
    q[0] = 'x';
    parse_bad_at(__LINE__, q, n, GP_ETOOBIG, "longer than");
    /* At the cap it is read. */
    struct gp_pq_node *e = NULL;
    char err[128];
    CHECK_INT(gp_promql_parse(q, GP_PROMQL_MAX_QUERY_LEN, &e, err, sizeof err), GP_OK);
    CHECK_INT(e->kind, GP_PQ_VECTOR_SEL);
    gp_promql_free(e);
    free(q);
    gp_promql_free(NULL);
}

/* Regexes cost up to the store's cap each to compile: their number is bounded. */
static void test_matcher_caps(void)
{
    char *q = repeat("x{", "a=~\"x{1000}\",", 64, "}");
    parse_bad_at(__LINE__, q, strlen(q), GP_ETOOBIG, "has more than 64 matchers");
    free(q);
    q = repeat("{", "a=\"b\",", 64, "}");
    struct gp_pq_node *e = parse_ok(q);
    CHECK_INT(e->u.sel.nm, 64);
    gp_promql_free(e);
    free(q);
    /* 256 regexes over a whole query, balanced so the tree stays shallow. */
    struct gp_buf b;
    gp_buf_init(&b, 0);
    for (int g = 0; g < 16; g++) {
        gp_buf_puts(&b, g ? " or (" : "(");
        for (int i = 0; i < 16; i++)
            gp_buf_puts(&b, i ? " or x{a=~\"x{1000}\"}" : "x{a=~\"x{1000}\"}");
        gp_buf_putc(&b, ')');
    }
    e = parse_ok(b.data);
    gp_promql_free(e);
    gp_buf_puts(&b, " or y{a=~\"b\"}");
    parse_bad_at(__LINE__, b.data, b.len, GP_ETOOBIG, "more than 256 regular expression matchers");
    gp_buf_free(&b);
}

const struct gp_test gp_tests_promql_parse[] = {
    {"matcher_caps", test_matcher_caps},
    {"valid_corpus", test_valid_corpus},
    {"invalid_corpus", test_invalid_corpus},
    {"precedence", test_precedence},
    {"vector_matching", test_vector_matching},
    {"modifiers", test_modifiers},
    {"aggregations", test_aggregations},
    {"numbers_and_strings", test_numbers_and_strings},
    {"matchers", test_matchers},
    {"error_words", test_error_words},
    {"function_table", test_function_table},
    {"depth_caps", test_depth_caps},
    {"length_cap", test_length_cap},
    {0},
};
