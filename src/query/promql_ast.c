/*
 * promql_ast.c - what belongs to the syntax tree itself (promql_ast.h):
 * the names of functions and aggregations, the function table (argument
 * types, counts and return types, as Prometheus 2.42's functions.go has
 * them) that the parser checks calls with and the evaluator reads, and
 * freeing a tree.
 */
#include "query/promql.h"
#include "query/promql_lex.h"

#include <stdlib.h>
#include <string.h>

/* ---- names and the function table ---------------------------------------- */

static const char *const func_names[] = {
#define GP_PQ_FUNC_NAME_(id, name) [GP_PQ_F_##id] = name,
    GP_PQ_FUNCS(GP_PQ_FUNC_NAME_)
#undef GP_PQ_FUNC_NAME_
};

static const char *const agg_names[] = {
#define GP_PQ_AGG_NAME_(id, name, param) [GP_PQ_A_##id] = name,
    GP_PQ_AGGS(GP_PQ_AGG_NAME_)
#undef GP_PQ_AGG_NAME_
};


const char *gp_pq_func_name(enum gp_pq_func f)
{
    return (unsigned)f < GP_PQ_F_COUNT_ ? func_names[f] : "unknown";
}

const char *gp_pq_agg_name(enum gp_pq_aggop op)
{
    return (unsigned)op < GP_PQ_A_COUNT_ ? agg_names[op] : "unknown";
}

#define V GP_PQ_T_VECTOR
#define M GP_PQ_T_MATRIX
#define S GP_PQ_T_SCALAR
#define STR GP_PQ_T_STRING
/* F1: one argument of type a; OPT: an optional instant vector (the date
 * functions default to vector(time())). */
#define F1(a) {{a}, 1, 1, 1, V}
#define OPT {{V}, 1, 0, 1, V}
static const struct gp_pq_func_info func_table[GP_PQ_F_COUNT_] = {
    [GP_PQ_F_ABS] = F1(V),
    [GP_PQ_F_ABSENT] = F1(V),
    [GP_PQ_F_ABSENT_OVER_TIME] = F1(M),
    [GP_PQ_F_ACOS] = F1(V),
    [GP_PQ_F_ACOSH] = F1(V),
    [GP_PQ_F_ASIN] = F1(V),
    [GP_PQ_F_ASINH] = F1(V),
    [GP_PQ_F_ATAN] = F1(V),
    [GP_PQ_F_ATANH] = F1(V),
    [GP_PQ_F_AVG_OVER_TIME] = F1(M),
    [GP_PQ_F_CEIL] = F1(V),
    [GP_PQ_F_CHANGES] = F1(M),
    [GP_PQ_F_CLAMP] = {{V, S, S}, 3, 3, 3, V},
    [GP_PQ_F_CLAMP_MAX] = {{V, S}, 2, 2, 2, V},
    [GP_PQ_F_CLAMP_MIN] = {{V, S}, 2, 2, 2, V},
    [GP_PQ_F_COS] = F1(V),
    [GP_PQ_F_COSH] = F1(V),
    [GP_PQ_F_COUNT_OVER_TIME] = F1(M),
    [GP_PQ_F_DAYS_IN_MONTH] = OPT,
    [GP_PQ_F_DAY_OF_MONTH] = OPT,
    [GP_PQ_F_DAY_OF_WEEK] = OPT,
    [GP_PQ_F_DAY_OF_YEAR] = OPT,
    [GP_PQ_F_DEG] = F1(V),
    [GP_PQ_F_DELTA] = F1(M),
    [GP_PQ_F_DERIV] = F1(M),
    [GP_PQ_F_EXP] = F1(V),
    [GP_PQ_F_FLOOR] = F1(V),
    [GP_PQ_F_HISTOGRAM_COUNT] = F1(V),
    [GP_PQ_F_HISTOGRAM_SUM] = F1(V),
    [GP_PQ_F_HISTOGRAM_FRACTION] = {{S, S, V}, 3, 3, 3, V},
    [GP_PQ_F_HISTOGRAM_QUANTILE] = {{S, V}, 2, 2, 2, V},
    [GP_PQ_F_HOLT_WINTERS] = {{M, S, S}, 3, 3, 3, V},
    [GP_PQ_F_HOUR] = OPT,
    [GP_PQ_F_IDELTA] = F1(M),
    [GP_PQ_F_INCREASE] = F1(M),
    [GP_PQ_F_IRATE] = F1(M),
    [GP_PQ_F_LABEL_REPLACE] = {{V, STR, STR, STR, STR}, 5, 5, 5, V},
    [GP_PQ_F_LABEL_JOIN] = {{V, STR, STR, STR}, 4, 3, -1, V},
    [GP_PQ_F_LAST_OVER_TIME] = F1(M),
    [GP_PQ_F_LN] = F1(V),
    [GP_PQ_F_LOG10] = F1(V),
    [GP_PQ_F_LOG2] = F1(V),
    [GP_PQ_F_MAX_OVER_TIME] = F1(M),
    [GP_PQ_F_MIN_OVER_TIME] = F1(M),
    [GP_PQ_F_MINUTE] = OPT,
    [GP_PQ_F_MONTH] = OPT,
    [GP_PQ_F_PI] = {{V}, 0, 0, 0, S},
    [GP_PQ_F_PREDICT_LINEAR] = {{M, S}, 2, 2, 2, V},
    [GP_PQ_F_PRESENT_OVER_TIME] = F1(M),
    [GP_PQ_F_QUANTILE_OVER_TIME] = {{S, M}, 2, 2, 2, V},
    [GP_PQ_F_RAD] = F1(V),
    [GP_PQ_F_RATE] = F1(M),
    [GP_PQ_F_RESETS] = F1(M),
    [GP_PQ_F_ROUND] = {{V, S}, 2, 1, 2, V},
    [GP_PQ_F_SCALAR] = {{V}, 1, 1, 1, S},
    [GP_PQ_F_SGN] = F1(V),
    [GP_PQ_F_SIN] = F1(V),
    [GP_PQ_F_SINH] = F1(V),
    [GP_PQ_F_SORT] = F1(V),
    [GP_PQ_F_SORT_DESC] = F1(V),
    [GP_PQ_F_SORT_BY_LABEL] = {{V, STR}, 2, 1, -1, V},
    [GP_PQ_F_SORT_BY_LABEL_DESC] = {{V, STR}, 2, 1, -1, V},
    [GP_PQ_F_SQRT] = F1(V),
    [GP_PQ_F_STDDEV_OVER_TIME] = F1(M),
    [GP_PQ_F_STDVAR_OVER_TIME] = F1(M),
    [GP_PQ_F_SUM_OVER_TIME] = F1(M),
    [GP_PQ_F_TAN] = F1(V),
    [GP_PQ_F_TANH] = F1(V),
    [GP_PQ_F_TIME] = {{V}, 0, 0, 0, S},
    [GP_PQ_F_TIMESTAMP] = F1(V),
    [GP_PQ_F_VECTOR] = {{S}, 1, 1, 1, V},
    [GP_PQ_F_YEAR] = OPT,
};
#undef F1
#undef OPT
#undef V
#undef M
#undef S
#undef STR

const struct gp_pq_func_info *gp_pq_func_info(enum gp_pq_func f)
{
    return (unsigned)f < GP_PQ_F_COUNT_ ? &func_table[f] : NULL;
}

int gp_pq_func_lookup(const char *name, size_t len)
{
    for (int f = 0; f < GP_PQ_F_COUNT_; f++)
        if (strlen(func_names[f]) == len && memcmp(func_names[f], name, len) == 0)
            return f;
    return -1;
}

/* ---- freeing -------------------------------------------------------------- */

void gp_pq_labels_free(struct gp_pq_labels *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->names[i]);
    free(l->names);
    l->names = NULL;
    l->n = 0;
}

void gp_promql_free(struct gp_pq_node *e)
{
    if (!e)
        return;
    switch (e->kind) {
    case GP_PQ_STRING:
        free(e->u.string.s);
        break;
    case GP_PQ_VECTOR_SEL:
    case GP_PQ_MATRIX_SEL:
        free(e->u.sel.name);
        gp_matchers_free(e->u.sel.m, e->u.sel.nm);
        break;
    case GP_PQ_SUBQUERY:
        gp_promql_free(e->u.sub.expr);
        break;
    case GP_PQ_CALL:
        for (size_t i = 0; i < e->u.call.nargs; i++)
            gp_promql_free(e->u.call.args[i]);
        free(e->u.call.args);
        break;
    case GP_PQ_AGG:
        gp_promql_free(e->u.agg.param);
        gp_promql_free(e->u.agg.expr);
        gp_pq_labels_free(&e->u.agg.grouping);
        break;
    case GP_PQ_BINARY:
        gp_promql_free(e->u.bin.lhs);
        gp_promql_free(e->u.bin.rhs);
        gp_pq_labels_free(&e->u.bin.matching);
        gp_pq_labels_free(&e->u.bin.include);
        break;
    case GP_PQ_UNARY:
        gp_promql_free(e->u.unary.expr);
        break;
    case GP_PQ_PAREN:
        gp_promql_free(e->u.paren);
        break;
    case GP_PQ_NUMBER:
        break;
    }
    free(e);
}

