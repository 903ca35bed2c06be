/*
 * promapi.h - the parser of Prometheus HTTP API answers (JSON), as
 * Prometheus, VictoriaMetrics, Mimir and Thanos give them:
 *
 *   {"status":"success","data":{"resultType":"matrix","result":[
 *       {"metric":{"__name__":"x","gpu":"0"},"values":[[1700000000.5,"1.25"],...]}]}}
 *                                        /api/v1/query_range, /api/v1/query of m[d]
 *   {"status":"success","data":[{"__name__":"x","gpu":"0"},...]}      /api/v1/series
 *   {"status":"success","data":["gpu","__name__",...]}                /api/v1/labels,
 *                                                                     /api/v1/label/N/values
 *   {"status":"error","errorType":"bad_data","error":"..."}           any of them
 *
 * All of it comes from outside: every shape is checked, nothing is
 * trusted (label sets are sorted and made canonical here, empty values
 * dropped as Prometheus does, duplicate names refused; times must be
 * finite and within +-2^53 ms; values are decimal text, NaN or +-Inf).
 * Fuzzed by tests/fuzz/fuzz_promapi.c.
 */
#ifndef GP_STORAGE_PROMAPI_H
#define GP_STORAGE_PROMAPI_H

#include <stddef.h>
#include <stdint.h>

/* One series of an answer: canonical labels (store/labels.h) and, for a
 * matrix, its samples in the order given (checked increasing). */
struct gp_promapi_series {
    uint8_t *labels;
    size_t labels_len;
    int64_t *t;
    double *v;
    size_t n;
};

struct gp_promapi_result {
    struct gp_promapi_series *s;
    size_t n;
    size_t nsamples; /* over all series */
};

/* Caps: more is GP_ETOOBIG. */
#define GP_PROMAPI_MAX_SERIES 1000000
#define GP_PROMAPI_MAX_SAMPLES 50000000

/*
 * Parses a matrix answer (query_range, or an instant query of a range
 * selector). A series may have no labels (an aggregate without `by`):
 * labels NULL, labels_len 0. GP_OK with *out filled (caller frees with
 * gp_promapi_result_free, also after an error), GP_EPARSE (not such an
 * answer: detail in err), GP_ETOOBIG, GP_ENOMEM, or GP_ENET when the
 * answer is a well-formed error ("bad_data: ..." in err).
 */
int gp_promapi_parse_matrix(const char *body, size_t len, struct gp_promapi_result *out, char *err,
                            size_t errlen);

/* Parses a /api/v1/series answer: label sets only (n of each series is 0).
 * Same returns. */
int gp_promapi_parse_series(const char *body, size_t len, struct gp_promapi_result *out, char *err,
                            size_t errlen);

/* Parses a list of strings (/api/v1/labels, /api/v1/label/N/values),
 * calling fn for each in the order given. Same returns. */
int gp_promapi_parse_strings(const char *body, size_t len,
                             void (*fn)(void *arg, const char *s, size_t n), void *arg, char *err,
                             size_t errlen);

void gp_promapi_result_free(struct gp_promapi_result *r); /* accepts NULL and zeroed */

#endif
