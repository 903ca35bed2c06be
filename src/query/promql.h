/*
 * promql.h - PromQL: parse an expression, evaluate it over the storage at
 * one time (instant query) or on a grid of steps (range query), and
 * render the answer as Prometheus's HTTP API does.
 *
 * This is the server's one query engine (DESIGN.md "Interfaces"): the
 * /api/v1/query and /api/v1/query_range routes, the API's agg/by form,
 * the dashboard, custom rules and Prometheus rule files all evaluate
 * through it, so every screen agrees with what Grafana shows.
 *
 * Semantics are Prometheus 2.42's (docs/api.md, and the differential
 * test tests/integration/test_promql_diff.sh holds us to them):
 *   - an instant vector holds each series' newest sample at or before t
 *     and no older than t - lookback (both ends included in 2.42;
 *     left-open with limits.prom3_windows); a stale marker ends it;
 *   - a range vector [r] holds the samples in [t - r, t] (2.42;
 *     (t - r, t] with prom3_windows), stale markers dropped;
 *   - a subquery expr[r:s] evaluates expr at the multiples of s in that
 *     window (absolute alignment, as Prometheus does);
 *   - offset and @ move the evaluation time of the selector or subquery
 *     they follow; @ start() / @ end() are the query's start and end;
 *   - range query steps are start + k*step for start + k*step <= end;
 *   - __name__ is dropped by functions and operators that change a
 *     value's meaning, as Prometheus does.
 *
 * Limits (struct gp_promql_limits): the total samples a query holds in
 * memory at once (Prometheus's --query.max-samples), a wall-clock
 * timeout, the parser's caps on query length and nesting depth.
 *
 * Errors: every function returns GP_OK or a code, with a message in err
 * as Prometheus words it. The API maps them (gp_promql_error_type):
 *   GP_EPARSE        bad_data 400  "1:5: parse error: unexpected ..." (line:col of the query)
 *   GP_EUSAGE        bad_data 400  (a bad range, step or parameter)
 *   GP_ERANGE        execution 422 "query processing would load too many samples into memory in query execution"
 *   GP_EIO           execution 422 (the store failed a read), GP_ENET 503/502 (remote)
 *   GP_EUNSUPPORTED  execution 422 (native histograms and other refused features)
 *   GP_ENOMEM        execution 422
 *   GP_ETOOBIG       bad_data 400 (query longer or deeper than the parser's caps)
 *   GP_EINTERNAL     execution 422 (evaluation errors: "multiple matches for labels: ...",
 *                    "vector cannot contain metrics with the same labelset", a bad
 *                    label_replace regex, ...)
 *   GP_PROMQL_ETIMEOUT timeout 503 (limits.timeout_ms passed)
 */
#ifndef GP_QUERY_PROMQL_H
#define GP_QUERY_PROMQL_H

#include "lib/buf.h"
#include "query/promql_ast.h"
#include "storage/storage.h"

#include <stddef.h>
#include <stdint.h>

/* Returned by evaluation when limits.timeout_ms passed ("query timed
 * out in <phase>"): the API answers 503 errorType "timeout". It is a
 * value of its own (not in lib/err.h) because only the query engine
 * times out. */
#define GP_PROMQL_ETIMEOUT (-100)

/* Parser caps: longer queries are GP_ETOOBIG, deeper nesting GP_ETOOBIG. */
#define GP_PROMQL_MAX_QUERY_LEN (256 * 1024)
#define GP_PROMQL_MAX_DEPTH 200

struct gp_promql_limits {
    int64_t lookback_ms;     /* 0: 5 m */
    size_t max_samples;      /* 0: 50,000,000 (Prometheus's default) */
    int64_t timeout_ms;      /* 0: 2 m */
    int64_t subquery_step_ms;/* default subquery resolution; 0: 1 m */
    int prom3_windows;       /* 1: Prometheus 3's left-open range and lookback windows */
};

/*
 * Parses query (len bytes; need not be NUL-terminated) into a new tree.
 * GP_OK with *out set (free with gp_promql_free), GP_EPARSE with the
 * position and Prometheus's wording in err ("1:10: parse error:
 * unexpected right parenthesis ')'"), GP_ETOOBIG, GP_ENOMEM.
 */
int gp_promql_parse(const char *query, size_t len, struct gp_pq_node **out, char *err,
                    size_t errlen);
void gp_promql_free(struct gp_pq_node *e); /* accepts NULL */

/* Writes e back as PromQL text (canonical spacing, as Prometheus's
 * String() does); for rules' display and error messages. */
void gp_promql_format(const struct gp_pq_node *e, struct gp_buf *out);

/* Result of an evaluation. */
enum gp_promql_vtype { GP_PROMQL_SCALAR, GP_PROMQL_VECTOR, GP_PROMQL_MATRIX, GP_PROMQL_STRING };

struct gp_promql_series {
    uint8_t *labels;         /* canonical label blob (store/labels.h); NULL/0 for no labels */
    size_t labels_len;
    int64_t *t;              /* ascending */
    double *v;
    size_t n;                /* vector: 1; matrix: the points */
};

struct gp_promql_result {
    enum gp_promql_vtype type;
    struct gp_promql_series *series; /* vector and matrix */
    size_t n;
    int64_t t;               /* scalar and string: the evaluation time */
    double scalar;
    char *string;            /* NUL-terminated, owned */
    char *warnings;          /* NULL or "\n"-separated warnings (damaged chunks, ...) */
    size_t samples_peak;     /* most samples held at once: for stats and benches */
};

/*
 * Instant query at t_ms. The result type follows e's static type
 * (matrix for a range selector or subquery). lim NULL: defaults.
 * GP_OK or an error above; out must be freed with
 * gp_promql_result_free after either.
 */
int gp_promql_instant(struct gp_storage *s, const struct gp_pq_node *e, int64_t t_ms,
                      const struct gp_promql_limits *lim, struct gp_promql_result *out, char *err,
                      size_t errlen);

/*
 * Range query: e evaluated at start, start + step, ... <= end. e must
 * be of scalar or instant vector type (else GP_EUSAGE "invalid
 * expression type \"range vector\" for range query, must be Scalar or
 * instant Vector"). The result is a matrix (a scalar becomes one series
 * without labels), series sorted by labels as Prometheus sorts them.
 * GP_EUSAGE also when end < start, step <= 0, or more than 11,000
 * points per series.
 */
int gp_promql_range(struct gp_storage *s, const struct gp_pq_node *e, int64_t start_ms,
                    int64_t end_ms, int64_t step_ms, const struct gp_promql_limits *lim,
                    struct gp_promql_result *out, char *err, size_t errlen);

void gp_promql_result_free(struct gp_promql_result *r); /* accepts zeroed */

/*
 * Appends Prometheus's JSON answer for r:
 *   {"status":"success","data":{"resultType":"vector","result":[
 *       {"metric":{"l":"v"},"value":[1700000000.5,"1.25"]}]}}
 * matrix: "values":[[t,"v"],...]; scalar/string: "result":[t,"v"].
 * Times in Unix seconds with up to 3 decimals, values as Prometheus
 * formats them ("NaN", "+Inf", "-Inf", shortest round-trip text), and a
 * "warnings" array when r has warnings. GP_OK or out's error.
 */
int gp_promql_render(const struct gp_promql_result *r, struct gp_buf *out);

/* The Prometheus errorType and HTTP status for an error code:
 * "bad_data" 400, "execution" 422, "timeout" 503, "unavailable" 503. */
const char *gp_promql_error_type(int rc, int *http_status);

#endif
