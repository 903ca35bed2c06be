/*
 * promql_ast.h - the syntax tree of a PromQL expression (query-internal
 * contract between the parser, promql_parse.c, and the evaluator,
 * promql_eval.c).
 *
 * The language is Prometheus 2.42's for float samples (docs/api.md):
 *
 *   number literals    1, 1.5e3, 0x1f, Inf, NaN
 *   string literals    "a\n", 'b', `raw`
 *   vector selector    name{l="v", m=~"re"} [offset 5m] [@ 1700000000 | @ start() | @ end()]
 *   matrix selector    name{...}[5m] [offset ...] [@ ...]
 *   subquery           expr[1h:1m] or expr[1h:] [offset ...] [@ ...]
 *   function call      rate(x[5m]), clamp(x, 0, 1), time()
 *   aggregation        sum by (a, b) (x), topk(3, x) without (c)
 *   binary             a + on(l) group_left(m) b, a > bool 1, a and b
 *   unary              -a, +a
 *   parentheses        (a)
 *
 * Every node records its byte span in the query text (pos, end: offsets
 * counted from 0) so errors can say where, and its static result type,
 * which the parser checks as Prometheus does (a function's argument
 * types, "binary expression must contain only scalar and instant vector
 * types", ...).
 *
 * Ownership: a tree comes from gp_promql_parse (promql.h) and is freed
 * whole with gp_promql_free; every pointer in it is owned by its node.
 */
#ifndef GP_QUERY_PROMQL_AST_H
#define GP_QUERY_PROMQL_AST_H

#include "store/matcher.h"

#include <stddef.h>
#include <stdint.h>

/* Static types of expressions (Prometheus's ValueType). */
enum gp_pq_type { GP_PQ_T_SCALAR, GP_PQ_T_VECTOR, GP_PQ_T_MATRIX, GP_PQ_T_STRING };

enum gp_pq_kind {
    GP_PQ_NUMBER,
    GP_PQ_STRING,
    GP_PQ_VECTOR_SEL,
    GP_PQ_MATRIX_SEL,
    GP_PQ_SUBQUERY,
    GP_PQ_CALL,
    GP_PQ_AGG,
    GP_PQ_BINARY,
    GP_PQ_UNARY,
    GP_PQ_PAREN,
};

/* The `@` modifier of a selector or subquery. */
enum gp_pq_at { GP_PQ_AT_NONE, GP_PQ_AT_TIME, GP_PQ_AT_START, GP_PQ_AT_END };

/*
 * Functions: X(id, "name"). Argument and return types live in the
 * parser's table (promql_parse.c, gp_pq_func_info); this list is the
 * ids both sides agree on. 2.42 lacks sort_by_label and
 * sort_by_label_desc (added in 2.51); they are accepted here as in
 * Prometheus 3. histogram_count/sum/fraction apply to native histograms
 * only, so on float samples they return nothing, as in Prometheus.
 */
#define GP_PQ_FUNCS(X)                                                                            \
    X(ABS, "abs") X(ABSENT, "absent") X(ABSENT_OVER_TIME, "absent_over_time") X(ACOS, "acos")     \
    X(ACOSH, "acosh") X(ASIN, "asin") X(ASINH, "asinh") X(ATAN, "atan") X(ATANH, "atanh")         \
    X(AVG_OVER_TIME, "avg_over_time") X(CEIL, "ceil") X(CHANGES, "changes") X(CLAMP, "clamp")     \
    X(CLAMP_MAX, "clamp_max") X(CLAMP_MIN, "clamp_min") X(COS, "cos") X(COSH, "cosh")             \
    X(COUNT_OVER_TIME, "count_over_time") X(DAYS_IN_MONTH, "days_in_month")                       \
    X(DAY_OF_MONTH, "day_of_month") X(DAY_OF_WEEK, "day_of_week") X(DAY_OF_YEAR, "day_of_year")   \
    X(DEG, "deg") X(DELTA, "delta") X(DERIV, "deriv") X(EXP, "exp") X(FLOOR, "floor")             \
    X(HISTOGRAM_COUNT, "histogram_count") X(HISTOGRAM_SUM, "histogram_sum")                       \
    X(HISTOGRAM_FRACTION, "histogram_fraction") X(HISTOGRAM_QUANTILE, "histogram_quantile")       \
    X(HOLT_WINTERS, "holt_winters") X(HOUR, "hour") X(IDELTA, "idelta") X(INCREASE, "increase")   \
    X(IRATE, "irate") X(LABEL_REPLACE, "label_replace") X(LABEL_JOIN, "label_join")               \
    X(LAST_OVER_TIME, "last_over_time") X(LN, "ln") X(LOG10, "log10") X(LOG2, "log2")             \
    X(MAX_OVER_TIME, "max_over_time") X(MIN_OVER_TIME, "min_over_time") X(MINUTE, "minute")       \
    X(MONTH, "month") X(PI, "pi") X(PREDICT_LINEAR, "predict_linear")                             \
    X(PRESENT_OVER_TIME, "present_over_time") X(QUANTILE_OVER_TIME, "quantile_over_time")         \
    X(RAD, "rad") X(RATE, "rate") X(RESETS, "resets") X(ROUND, "round") X(SCALAR, "scalar")       \
    X(SGN, "sgn") X(SIN, "sin") X(SINH, "sinh") X(SORT, "sort") X(SORT_DESC, "sort_desc")         \
    X(SORT_BY_LABEL, "sort_by_label") X(SORT_BY_LABEL_DESC, "sort_by_label_desc")                 \
    X(SQRT, "sqrt") X(STDDEV_OVER_TIME, "stddev_over_time")                                       \
    X(STDVAR_OVER_TIME, "stdvar_over_time") X(SUM_OVER_TIME, "sum_over_time") X(TAN, "tan")       \
    X(TANH, "tanh") X(TIME, "time") X(TIMESTAMP, "timestamp") X(VECTOR, "vector")                 \
    X(YEAR, "year")

enum gp_pq_func {
#define GP_PQ_FUNC_ENUM_(id, name) GP_PQ_F_##id,
    GP_PQ_FUNCS(GP_PQ_FUNC_ENUM_)
#undef GP_PQ_FUNC_ENUM_
    GP_PQ_F_COUNT_
};

/* Aggregation operators: X(id, "name", takes_param). limitk and
 * limit_ratio are Prometheus 3's (absent from 2.42). */
#define GP_PQ_AGGS(X)                                                                             \
    X(SUM, "sum", 0) X(AVG, "avg", 0) X(MIN, "min", 0) X(MAX, "max", 0) X(COUNT, "count", 0)      \
    X(GROUP, "group", 0) X(STDDEV, "stddev", 0) X(STDVAR, "stdvar", 0)                            \
    X(COUNT_VALUES, "count_values", 1) X(TOPK, "topk", 1) X(BOTTOMK, "bottomk", 1)                \
    X(QUANTILE, "quantile", 1) X(LIMITK, "limitk", 1) X(LIMIT_RATIO, "limit_ratio", 1)

enum gp_pq_aggop {
#define GP_PQ_AGG_ENUM_(id, name, param) GP_PQ_A_##id,
    GP_PQ_AGGS(GP_PQ_AGG_ENUM_)
#undef GP_PQ_AGG_ENUM_
    GP_PQ_A_COUNT_
};

/* Binary operators, from the tightest binding to the loosest:
 *   ^ (right-associative) | * / % atan2 | + - | == != <= < >= > | and unless | or
 * Unary minus binds like * (so -2^2 is -4, as in Prometheus). */
enum gp_pq_binop {
    GP_PQ_OP_ADD, GP_PQ_OP_SUB, GP_PQ_OP_MUL, GP_PQ_OP_DIV, GP_PQ_OP_MOD, GP_PQ_OP_POW,
    GP_PQ_OP_ATAN2,
    GP_PQ_OP_EQL, GP_PQ_OP_NEQ, GP_PQ_OP_GTR, GP_PQ_OP_LSS, GP_PQ_OP_GTE, GP_PQ_OP_LTE,
    GP_PQ_OP_AND, GP_PQ_OP_OR, GP_PQ_OP_UNLESS,
};

/* Vector matching of a binary expression between two vectors. */
enum gp_pq_card { GP_PQ_CARD_ONE_TO_ONE, GP_PQ_CARD_MANY_TO_ONE, GP_PQ_CARD_ONE_TO_MANY,
                  GP_PQ_CARD_MANY_TO_MANY /* and, or, unless */ };

struct gp_pq_node;

/* A list of label names (by/without, on/ignoring, group_left(...)). */
struct gp_pq_labels {
    char **names; /* NUL-terminated, owned */
    size_t n;
};

struct gp_pq_sel {
    char *name;            /* metric name when written before the braces, else NULL */
    struct gp_matcher *m;  /* all matchers, the name as __name__="..." included */
    size_t nm;
    int64_t range_ms;      /* matrix selector's range; 0 for a vector selector */
    int64_t offset_ms;     /* 0 when none */
    enum gp_pq_at at;
    int64_t at_ms;         /* GP_PQ_AT_TIME */
};

struct gp_pq_subquery {
    struct gp_pq_node *expr;
    int64_t range_ms;
    int64_t step_ms;       /* 0: the default resolution (promql.h limits) */
    int64_t offset_ms;
    enum gp_pq_at at;
    int64_t at_ms;
};

struct gp_pq_call {
    enum gp_pq_func func;
    struct gp_pq_node **args;
    size_t nargs;
};

struct gp_pq_agg {
    enum gp_pq_aggop op;
    struct gp_pq_node *param; /* topk's k, quantile's phi, count_values' label; else NULL */
    struct gp_pq_node *expr;
    struct gp_pq_labels grouping;
    int without;              /* 1: `without (...)`, 0: `by (...)` or none */
};

struct gp_pq_binary {
    enum gp_pq_binop op;
    struct gp_pq_node *lhs, *rhs;
    int return_bool;           /* comparison with `bool` */
    /* Vector matching; meaningful only when both sides are vectors. */
    enum gp_pq_card card;
    int on;                    /* 1: on(...), 0: ignoring(...) or neither */
    struct gp_pq_labels matching;
    struct gp_pq_labels include; /* group_left(...)/group_right(...) labels */
};

struct gp_pq_unary {
    int negate;                /* 1 for -, 0 for + */
    struct gp_pq_node *expr;
};

struct gp_pq_node {
    enum gp_pq_kind kind;
    enum gp_pq_type type;      /* static result type */
    uint32_t pos, end;         /* byte span in the query text */
    union {
        double number;         /* GP_PQ_NUMBER */
        struct {
            char *s;
            size_t len;
        } string;              /* GP_PQ_STRING (escapes resolved) */
        struct gp_pq_sel sel;  /* GP_PQ_VECTOR_SEL, GP_PQ_MATRIX_SEL */
        struct gp_pq_subquery sub;
        struct gp_pq_call call;
        struct gp_pq_agg agg;
        struct gp_pq_binary bin;
        struct gp_pq_unary unary;
        struct gp_pq_node *paren; /* GP_PQ_PAREN */
    } u;
};

/* Names of functions and aggregations ("rate", "topk"). */
const char *gp_pq_func_name(enum gp_pq_func f);
const char *gp_pq_agg_name(enum gp_pq_aggop op);

/* A function's signature, as the parser checks calls (Prometheus's
 * functions.go): the types of its arguments in order (arguments past
 * nargs take the last one's type), how many it takes, what it returns. */
struct gp_pq_func_info {
    enum gp_pq_type args[5];
    unsigned nargs;      /* entries of args */
    unsigned min_args;
    int max_args;        /* -1: no limit (label_join, sort_by_label) */
    enum gp_pq_type ret;
};
const struct gp_pq_func_info *gp_pq_func_info(enum gp_pq_func f);
/* The function called name (case-sensitive, as Prometheus); -1 if none. */
int gp_pq_func_lookup(const char *name, size_t len);

#endif
