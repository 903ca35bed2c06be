/*
 * promapi.c - see promapi.h. jansson reads the document (duplicate keys
 * refused); each answer's shape is then walked and checked by hand.
 */
#include "storage/promapi.h"

#include "lib/buf.h"
#include "lib/err.h"
#include "store/labels.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LABELS 256
#define MAX_T_MS 9007199254740992.0 /* 2^53 */

void gp_promapi_result_free(struct gp_promapi_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->s[i].labels);
        free(r->s[i].t);
        free(r->s[i].v);
    }
    free(r->s);
    memset(r, 0, sizeof *r);
}

/* Loads the document and returns its "data" (borrowed from *root), or
 * NULL with rc set. */
static json_t *load(const char *body, size_t len, json_t **root, int *rc, char *err, size_t errlen)
{
    json_error_t je;
    *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!*root) {
        *rc = gp_seterr(err, errlen, GP_EPARSE, "not JSON: %s (line %d)", je.text, je.line);
        return NULL;
    }
    if (!json_is_object(*root)) {
        *rc = gp_seterr(err, errlen, GP_EPARSE, "not a Prometheus API answer: not an object");
        return NULL;
    }
    const char *status = json_string_value(json_object_get(*root, "status"));
    if (!status) {
        *rc = gp_seterr(err, errlen, GP_EPARSE, "not a Prometheus API answer: no \"status\"");
        return NULL;
    }
    if (strcmp(status, "success")) {
        const char *type = json_string_value(json_object_get(*root, "errorType"));
        const char *msg = json_string_value(json_object_get(*root, "error"));
        *rc = gp_seterr(err, errlen, GP_ENET, "%s: %.300s", type ? type : status,
                        msg ? msg : "(no message)");
        return NULL;
    }
    json_t *data = json_object_get(*root, "data");
    if (!data) {
        *rc = gp_seterr(err, errlen, GP_EPARSE, "not a Prometheus API answer: no \"data\"");
        return NULL;
    }
    return data;
}

static int cmp_label(const void *a, const void *b)
{
    const struct gp_label *x = a, *y = b;
    size_t n = x->name.len < y->name.len ? x->name.len : y->name.len;
    int c = memcmp(x->name.ptr, y->name.ptr, n);
    return c ? c : (x->name.len > y->name.len) - (x->name.len < y->name.len);
}

/* A label object to canonical bytes in s; an empty one (an aggregate's
 * result without `by`) only when allow_empty, as NULL. */
static int labels_of(json_t *obj, struct gp_promapi_series *s, int allow_empty, char *err,
                     size_t errlen)
{
    if (!json_is_object(obj))
        return gp_seterr(err, errlen, GP_EPARSE, "a label set is not an object");
    if (json_object_size(obj) > MAX_LABELS)
        return gp_seterr(err, errlen, GP_ETOOBIG, "a label set has over %d labels", MAX_LABELS);
    struct gp_label l[MAX_LABELS];
    size_t n = 0;
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v)
    {
        if (!json_is_string(v))
            return gp_seterr(err, errlen, GP_EPARSE, "label '%.64s' is not a string", k);
        if (!*k)
            return gp_seterr(err, errlen, GP_EPARSE, "a label has an empty name");
        if (!json_string_length(v))
            continue; /* empty means absent */
        l[n].name = (struct gp_str){k, strlen(k)};
        l[n].value = (struct gp_str){json_string_value(v), json_string_length(v)};
        n++;
    }
    if (!n && allow_empty)
        return GP_OK;
    if (!n)
        return gp_seterr(err, errlen, GP_EPARSE, "a series has no labels");
    qsort(l, n, sizeof l[0], cmp_label);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    int rc = gp_labels_encode(l, n, &b);
    if (rc) {
        gp_buf_free(&b);
        return gp_seterr(err, errlen, rc == GP_ENOMEM ? GP_ENOMEM : GP_EPARSE,
                         "a label set cannot be encoded: %s", gp_strerror(rc));
    }
    s->labels = (uint8_t *)b.data;
    s->labels_len = b.len;
    return GP_OK;
}

/* A sample value: decimal text, NaN, +Inf or -Inf (Prometheus's forms). */
static int value_of(json_t *j, double *out)
{
    const char *s = json_string_value(j);
    if (!s || !*s || json_string_length(j) > 64)
        return 0;
    if (!strcmp(s, "NaN")) {
        *out = NAN;
        return 1;
    }
    if (!strcmp(s, "+Inf") || !strcmp(s, "Inf")) {
        *out = INFINITY;
        return 1;
    }
    if (!strcmp(s, "-Inf")) {
        *out = -INFINITY;
        return 1;
    }
    for (const char *p = s; *p; p++)
        if (!strchr("0123456789+-.eE", *p))
            return 0;
    char *end;
    *out = strtod(s, &end);
    return *end == '\0' && isfinite(*out);
}

static int samples_of(json_t *vals, struct gp_promapi_series *s, size_t *total, char *err,
                      size_t errlen)
{
    if (!json_is_array(vals))
        return gp_seterr(err, errlen, GP_EPARSE, "\"values\" is not an array");
    size_t n = json_array_size(vals);
    if (*total + n > GP_PROMAPI_MAX_SAMPLES)
        return gp_seterr(err, errlen, GP_ETOOBIG, "over %d samples in one answer",
                         GP_PROMAPI_MAX_SAMPLES);
    *total += n;
    if (!n)
        return GP_OK;
    s->t = malloc(n * sizeof *s->t);
    s->v = malloc(n * sizeof *s->v);
    if (!s->t || !s->v)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *pt = json_array_get(vals, i);
        if (!json_is_array(pt) || json_array_size(pt) != 2)
            return gp_seterr(err, errlen, GP_EPARSE, "a sample is not [time, \"value\"]");
        json_t *jt = json_array_get(pt, 0);
        if (!json_is_number(jt))
            return gp_seterr(err, errlen, GP_EPARSE, "a sample's time is not a number");
        double ms = json_number_value(jt) * 1000.0;
        if (!isfinite(ms) || fabs(ms) >= MAX_T_MS)
            return gp_seterr(err, errlen, GP_EPARSE, "a sample's time is out of range");
        int64_t t = (int64_t)llround(ms);
        if (s->n && t < s->t[s->n - 1])
            return gp_seterr(err, errlen, GP_EPARSE, "a series' samples are not in increasing time");
        /* Two samples at one time: VictoriaMetrics without deduplication
         * keeps both when two writers (an HA pair of servers) send the same
         * series. Keep the later one; refusing the answer would send every
         * read of the window to the cluster. */
        size_t at = s->n && t == s->t[s->n - 1] ? s->n - 1 : s->n;
        if (!value_of(json_array_get(pt, 1), &s->v[at]))
            return gp_seterr(err, errlen, GP_EPARSE, "a sample's value is not a number in a string");
        s->t[at] = t;
        s->n = at + 1;
    }
    *total -= n - s->n; /* the samples kept */
    return GP_OK;
}

static int cmp_labels_ptr(const void *a, const void *b)
{
    const struct gp_promapi_series *x = *(const struct gp_promapi_series *const *)a;
    const struct gp_promapi_series *y = *(const struct gp_promapi_series *const *)b;
    return gp_labels_cmp(x->labels, x->labels_len, y->labels, y->labels_len);
}

/* Walks an array of series: matrix entries (with_values) or label sets. */
static int series_list(json_t *arr, int with_values, struct gp_promapi_result *out, char *err,
                       size_t errlen)
{
    if (!json_is_array(arr))
        return gp_seterr(err, errlen, GP_EPARSE, "the result is not an array");
    size_t n = json_array_size(arr);
    if (n > GP_PROMAPI_MAX_SERIES)
        return gp_seterr(err, errlen, GP_ETOOBIG, "over %d series in one answer",
                         GP_PROMAPI_MAX_SERIES);
    if (n && !(out->s = calloc(n, sizeof *out->s)))
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(arr, i);
        struct gp_promapi_series *s = &out->s[out->n++];
        int rc;
        if (with_values) {
            if (!json_is_object(e))
                return gp_seterr(err, errlen, GP_EPARSE, "a matrix entry is not an object");
            rc = labels_of(json_object_get(e, "metric"), s, 1, err, errlen);
            if (!rc)
                rc = samples_of(json_object_get(e, "values"), s, &out->nsamples, err, errlen);
        } else {
            rc = labels_of(e, s, 0, err, errlen);
        }
        if (rc)
            return rc;
    }
    /* The same series twice would read as one series with mixed samples:
     * sorted by labels, no two neighbours may be equal. */
    if (out->n < 2)
        return GP_OK;
    const struct gp_promapi_series **p = malloc(out->n * sizeof *p);
    if (!p)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    for (size_t i = 0; i < out->n; i++)
        p[i] = &out->s[i];
    qsort(p, out->n, sizeof *p, cmp_labels_ptr);
    int dup = 0;
    for (size_t i = 1; i < out->n && !dup; i++)
        dup = !cmp_labels_ptr(&p[i - 1], &p[i]);
    free(p);
    return dup ? gp_seterr(err, errlen, GP_EPARSE, "the same series is given twice") : GP_OK;
}

int gp_promapi_parse_matrix(const char *body, size_t len, struct gp_promapi_result *out, char *err,
                            size_t errlen)
{
    memset(out, 0, sizeof *out);
    json_t *root;
    int rc = GP_OK;
    json_t *data = load(body, len, &root, &rc, err, errlen);
    if (data) {
        const char *type = json_string_value(json_object_get(data, "resultType"));
        if (!json_is_object(data) || !type)
            rc = gp_seterr(err, errlen, GP_EPARSE, "\"data\" has no \"resultType\"");
        else if (strcmp(type, "matrix"))
            rc = gp_seterr(err, errlen, GP_EPARSE, "expected a matrix, got a %.20s", type);
        else
            rc = series_list(json_object_get(data, "result"), 1, out, err, errlen);
    }
    json_decref(root);
    return rc;
}

int gp_promapi_parse_series(const char *body, size_t len, struct gp_promapi_result *out, char *err,
                            size_t errlen)
{
    memset(out, 0, sizeof *out);
    json_t *root;
    int rc = GP_OK;
    json_t *data = load(body, len, &root, &rc, err, errlen);
    if (data)
        rc = series_list(data, 0, out, err, errlen);
    json_decref(root);
    return rc;
}

int gp_promapi_parse_strings(const char *body, size_t len,
                             void (*fn)(void *arg, const char *s, size_t n), void *arg, char *err,
                             size_t errlen)
{
    json_t *root;
    int rc = GP_OK;
    json_t *data = load(body, len, &root, &rc, err, errlen);
    if (data && !json_is_array(data))
        rc = gp_seterr(err, errlen, GP_EPARSE, "\"data\" is not a list of strings");
    for (size_t i = 0; data && !rc && i < json_array_size(data); i++)
        if (!json_is_string(json_array_get(data, i)))
            rc = gp_seterr(err, errlen, GP_EPARSE, "\"data\" holds a non-string");
    for (size_t i = 0; data && !rc && i < json_array_size(data); i++) {
        json_t *s = json_array_get(data, i);
        fn(arg, json_string_value(s), json_string_length(s));
    }
    json_decref(root);
    return rc;
}
