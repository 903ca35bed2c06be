/*
 * test_query.c - the query API over a real store: the exact envelope,
 * range answers against evaluating the samples written,
 * grouping with every aggregation, rollups against raw, limits and
 * errors (out left untouched), JSON validity for hostile labels (every
 * answer goes through jansson), series/labels/label values, and the
 * node/GPU inventory.
 */
#include "ingest/remote_write.h"
#include "lib/bits.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "query/eval.h"
#include "query/promql.h"
#include "query/query.h"
#include "store/matcher.h"
#include "storage/storage.h"
#include "test.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- helpers ---- */

static struct gp_storage *open_store_blocks(int64_t block_ms)
{
    struct gp_store_options o;
    memset(&o, 0, sizeof o);
    o.block_ms = block_ms;
    o.dir = gp_test_tmpdir();
    o.no_sync = 1;
    o.no_background = 1;
    struct gp_storage *s = NULL;
    char err[256] = "";
    int rc = gp_storage_open(&s, &(struct gp_storage_options){.store = o}, err, sizeof err);
    if (rc)
        gp_test_fail(__FILE__, __LINE__, "gp_store_open: %s", err);
    return s;
}

static struct gp_storage *open_store(void)
{
    return open_store_blocks(0);
}

/* A whole hour, two hours ago: inside the raw retention, minute-aligned. */
static int64_t base_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000;
    return (now / 3600000 - 2) * 3600000;
}

static int label_cmp(const void *a, const void *b)
{
    const struct gp_label *x = a, *y = b;
    size_t n = x->name.len < y->name.len ? x->name.len : y->name.len;
    int c = memcmp(x->name.ptr, y->name.ptr, n);
    return c ? c : (x->name.len > y->name.len) - (x->name.len < y->name.len);
}

/* Appends samples to the series named by "k=v" pairs (NULL-terminated
 * list, any order). Values may hold any bytes but no '\0'. */
static void put(struct gp_storage *s, const char *const *kv, const int64_t *t, const double *v,
                size_t n)
{
    struct gp_label l[32];
    size_t nl = 0;
    char copy[32][512];
    for (; kv[nl]; nl++) {
        snprintf(copy[nl], sizeof copy[nl], "%s", kv[nl]);
        char *eq = strchr(copy[nl], '=');
        CHECK(eq != NULL);
        *eq = '\0';
        l[nl].name = (struct gp_str){copy[nl], strlen(copy[nl])};
        l[nl].value = (struct gp_str){eq + 1, strlen(eq + 1)};
    }
    qsort(l, nl, sizeof l[0], label_cmp);
    struct gp_sample *smp = malloc((n ? n : 1) * sizeof *smp);
    for (size_t i = 0; i < n; i++)
        smp[i] = (struct gp_sample){v[i], t[i]};
    struct gp_series ser = {l, nl, smp, n};
    struct gp_batch req = {&ser, 1, nl, n, NULL};
    struct gp_append_result res;
    char err[256] = "";
    CHECK_INT(gp_storage_append(s, &req, &res, err, sizeof err), GP_OK);
    CHECK_INT(res.accepted, n);
    free(smp);
}

/* One sample a second over [t0, t0 + n s) with value f(i). */
static void put_seconds(struct gp_storage *s, const char *const *kv, int64_t t0, size_t n,
                        double (*f)(size_t i, size_t salt), size_t salt)
{
    int64_t *t = malloc(n * sizeof *t);
    double *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        t[i] = t0 + (int64_t)i * 1000;
        v[i] = f(i, salt);
    }
    put(s, kv, t, v, n);
    free(t);
    free(v);
}

static struct gp_matcher *sel(const char *text, size_t *n)
{
    struct gp_matcher *m = NULL;
    char err[256] = "";
    int rc = gp_selector_parse(text, strlen(text), &m, n, err, sizeof err);
    if (rc)
        gp_test_fail(__FILE__, __LINE__, "selector '%s': %s", text, err);
    return m;
}

/* Runs a range query; returns the parsed answer (caller decrefs) or NULL
 * with *rc and err set. */
static json_t *range(struct gp_storage *s, const char *selector, int64_t start, int64_t end,
                     int64_t step, enum gp_agg agg, const char *by_csv, int rollups, int *rc_out,
                     char *err, size_t errlen)
{
    size_t nm;
    struct gp_matcher *m = sel(selector, &nm);
    struct gp_range_query q;
    memset(&q, 0, sizeof q);
    q.m = m;
    q.nm = nm;
    q.start_ms = start;
    q.end_ms = end;
    q.step_ms = step;
    q.agg = agg;
    q.rollups = rollups;
    char bybuf[256] = "";
    if (by_csv) {
        snprintf(bybuf, sizeof bybuf, "%s", by_csv);
        for (char *save = NULL, *p = strtok_r(bybuf, ",", &save); p; p = strtok_r(NULL, ",", &save))
            q.by[q.nby++] = p;
    }
    struct gp_buf out;
    gp_buf_init(&out, 0);
    int rc = gp_query_range(s, &q, &out, err, errlen);
    gp_matchers_free(m, nm);
    if (rc_out)
        *rc_out = rc;
    json_t *j = NULL;
    if (rc == GP_OK) {
        json_error_t je;
        j = json_loadb(out.data, out.len, 0, &je);
        if (!j)
            gp_test_fail(__FILE__, __LINE__, "invalid JSON (%s): %.300s", je.text, out.data);
    } else {
        CHECK_INT(out.len, 0);
    }
    gp_buf_free(&out);
    return j;
}

static json_t *result_of(json_t *j)
{
    CHECK_STR(json_string_value(json_object_get(j, "status")), "success");
    json_t *d = json_object_get(j, "data");
    CHECK_STR(json_string_value(json_object_get(d, "resultType")), "matrix");
    json_t *r = json_object_get(d, "result");
    CHECK(json_is_array(r));
    return r;
}

/* A value string as the API writes it, back to a double. */
static double jvalue(json_t *pt)
{
    const char *s = json_string_value(json_array_get(pt, 1));
    CHECK(s != NULL);
    if (!strcmp(s, "NaN"))
        return NAN;
    if (!strcmp(s, "+Inf"))
        return INFINITY;
    if (!strcmp(s, "-Inf"))
        return -INFINITY;
    char *end;
    double v = strtod(s, &end);
    CHECK(*end == '\0');
    return v;
}

static int64_t jtime_ms(json_t *pt)
{
    return (int64_t)llround(json_number_value(json_array_get(pt, 0)) * 1000.0);
}

static double f_mix(size_t i, size_t salt)
{
    return (double)((i * 7919 + salt * 104729) % 1000) / 8.0;
}

static double f_salt(size_t i, size_t salt)
{
    (void)i;
    return (double)salt;
}

/* ---- range queries ---- */

static void test_range_exact_envelope(void)
{
    struct gp_storage *s = open_store();
    int64_t b = base_ms();
    const char *kv[] = {"__name__=m", "a=1", NULL};
    int64_t t[] = {b + 1000, b + 2000, b + 11000};
    double v[] = {1, 2, 0.1};
    put(s, kv, t, v, 3);
    size_t nm;
    struct gp_matcher *m = sel("m", &nm);
    struct gp_range_query q;
    memset(&q, 0, sizeof q);
    q.m = m;
    q.nm = nm;
    q.start_ms = b + 2000;
    q.end_ms = b + 12500;
    q.step_ms = 2500;
    q.rollups = -1;
    struct gp_buf out;
    gp_buf_init(&out, 0);
    char err[256] = "";
    CHECK_INT(gp_query_range(s, &q, &out, err, sizeof err), GP_OK);
    char want[512];
    long long bs = (long long)(b / 1000);
    /* 2 s: (-0.5, 2] = 1, 2; 4.5 .. 9.5: the lookback finds 2; 12 s: 11 s
     * (times with milliseconds written as Prometheus writes them) */
    snprintf(want, sizeof want,
             "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[{\"metric\":"
             "{\"__name__\":\"m\",\"a\":\"1\"},\"values\":[[%lld,\"1.5\"],[%lld.500,\"2\"],[%lld,"
             "\"2\"],[%lld.500,\"2\"],[%lld,\"0.1\"]]}]}}",
             bs + 2, bs + 4, bs + 7, bs + 9, bs + 12);
    CHECK_STR(out.data, want);
    /* Nothing matches: an empty result. */
    gp_buf_reset(&out);
    gp_matchers_free(m, nm);
    m = sel("nothing_here", &nm);
    q.m = m;
    q.nm = nm;
    CHECK_INT(gp_query_range(s, &q, &out, err, sizeof err), GP_OK);
    CHECK_STR(out.data, "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}");
    gp_matchers_free(m, nm);
    gp_buf_free(&out);
    gp_storage_close(s);
}

/* The store and the query plumbing against evaluating the samples we
 * wrote directly (eval.c itself is checked against brute force in
 * test_eval.c). */
static void test_range_matches_samples(void)
{
    struct gp_storage *s = open_store();
    int64_t b = base_ms() - 8 * 3600000;
    /* 12 series with ragged sampling: gaps, a stale marker, NaN. */
    enum { N = 900 };
    int64_t t[12][N];
    double v[12][N];
    size_t n[12];
    uint64_t x = 12345;
    for (int k = 0; k < 12; k++) {
        int64_t now = b + k * 37;
        n[k] = 0;
        for (int i = 0; i < N; i++) {
            x = x * 6364136223846793005u + 1442695040888963407u;
            now += (x >> 33) % 100 < 95 ? 1000 + (int64_t)((x >> 20) % 3000) : 400000;
            t[k][i] = now;
            uint64_t r = (x >> 40) % 100;
            v[k][i] = r < 2 ? gp_bits_f64(GP_STALE_NAN_BITS) : r < 3 ? NAN : (double)((x >> 24) % 5000) / 3.0;
            n[k]++;
        }
        char name[32], inst[32];
        snprintf(name, sizeof name, "__name__=gpu_util");
        snprintf(inst, sizeof inst, "gpu=%d", k);
        const char *kv[] = {name, inst, "Hostname=h", NULL};
        put(s, kv, t[k], v[k], n[k]);
    }
    int64_t steps[] = {1000, 15000, 60000, 420000};
    for (size_t si = 0; si < sizeof steps / sizeof steps[0]; si++) {
        int64_t start = b + 30000, end = b + 6 * 3600000;
        if ((end - start) / steps[si] > 11000)
            end = start + 11000 * steps[si];
        char err[256] = "";
        int rc;
        json_t *j = range(s, "gpu_util{Hostname=\"h\"}", start, end, steps[si], GP_AGG_NONE, NULL, 0,
                          &rc, err, sizeof err);
        CHECK(j != NULL);
        json_t *res = result_of(j);
        struct gp_eval_range r;
        CHECK_INT(gp_eval_range_init(&r, start, end, steps[si], NULL, 0), GP_OK);
        double *val = malloc(r.npoints * sizeof *val);
        uint8_t *has = malloc(r.npoints);
        size_t seen = 0;
        for (int k = 0; k < 12; k++) {
            gp_eval_raw(&r, GP_EVAL_MEAN, t[k], v[k], n[k], val, has);
            size_t want = 0;
            for (size_t p = 0; p < r.npoints; p++)
                want += has[p];
            if (!want)
                continue;
            /* Results are sorted by labels: gpu="10" sorts before gpu="2". */
            json_t *found = NULL;
            char gpu[16];
            snprintf(gpu, sizeof gpu, "%d", k % 100);
            for (size_t i = 0; i < json_array_size(res); i++) {
                json_t *mt = json_object_get(json_array_get(res, i), "metric");
                if (!strcmp(json_string_value(json_object_get(mt, "gpu")), gpu))
                    found = json_array_get(res, i);
            }
            CHECK(found != NULL);
            seen++;
            json_t *vals = json_object_get(found, "values");
            CHECK_INT(json_array_size(vals), want);
            size_t q = 0;
            for (size_t p = 0; p < r.npoints; p++) {
                if (!has[p])
                    continue;
                json_t *pt = json_array_get(vals, q++);
                CHECK_INT(jtime_ms(pt), start + (int64_t)p * steps[si]);
                double got = jvalue(pt);
                /* avg_over_time's running mean may differ from sum / count
                 * in the last bits, as in Prometheus */
                if (!(isnan(got) && isnan(val[p])) && !(fabs(got - val[p]) <= 1e-12 * fabs(val[p])))
                    gp_test_fail(__FILE__, __LINE__, "step %lld series %d point %zu: %.17g != %.17g",
                                 (long long)steps[si], k, p, got, val[p]);
            }
        }
        CHECK_INT(json_array_size(res), seen);
        /* Sorted by labels. */
        for (size_t i = 1; i < json_array_size(res); i++) {
            const char *a = json_string_value(
                json_object_get(json_object_get(json_array_get(res, i - 1), "metric"), "gpu"));
            const char *c = json_string_value(
                json_object_get(json_object_get(json_array_get(res, i), "metric"), "gpu"));
            CHECK(strcmp(a, c) < 0);
        }
        free(val);
        free(has);
        json_decref(j);
    }
    gp_storage_close(s);
}

/* Enough series and steps for several threads and several batches: the
 * answer must be the one a single pass gives. */
static void test_parallel_batches(void)
{
    struct gp_storage *s = open_store();
    int64_t b = base_ms() - 4 * 3600000;
    enum { HOSTS = 10, GPUS = 20, N = 1500 };
    static int64_t t[N];
    static double v[HOSTS * GPUS][N];
    uint64_t x = 99;
    for (int i = 0; i < N; i++)
        t[i] = b + (int64_t)i * 1000 + 250;
    for (int h = 0; h < HOSTS; h++)
        for (int g = 0; g < GPUS; g++) {
            double *vv = v[h * GPUS + g];
            for (int i = 0; i < N; i++) {
                x = x * 6364136223846793005u + 1442695040888963407u;
                vv[i] = (double)((x >> 33) % 10000) / 7.0;
            }
            char hn[32], gn[32];
            snprintf(hn, sizeof hn, "Hostname=h%d", h);
            snprintf(gn, sizeof gn, "gpu=%02d", g);
            const char *kv[] = {"__name__=par", hn, gn, NULL};
            put(s, kv, t, vv, N);
        }
    /* 11001 steps of 1 s: 200 grids of 11001 cells take two batches. */
    int64_t start = b - 600000, end = start + 11000 * 1000;
    struct gp_eval_range r;
    CHECK_INT(gp_eval_range_init(&r, start, end, 1000, NULL, 0), GP_OK);
    double *val = malloc(r.npoints * sizeof *val), *sum = malloc(r.npoints * sizeof *sum);
    uint8_t *has = malloc(r.npoints);
    char err[256] = "";
    json_t *j = range(s, "par", start, end, 1000, GP_AGG_NONE, NULL, 0, NULL, err, sizeof err);
    json_t *res = result_of(j);
    CHECK_INT(json_array_size(res), HOSTS * GPUS);
    for (int k = 0; k < HOSTS * GPUS; k++) {
        /* Sorted by labels: Hostname h0..h9, then gpu 00..19. */
        json_t *e = json_array_get(res, (size_t)k);
        char hn[16], gn[16];
        snprintf(hn, sizeof hn, "h%d", k / GPUS);
        snprintf(gn, sizeof gn, "%02d", k % GPUS);
        CHECK_STR(json_string_value(json_object_get(json_object_get(e, "metric"), "Hostname")), hn);
        CHECK_STR(json_string_value(json_object_get(json_object_get(e, "metric"), "gpu")), gn);
        gp_eval_raw(&r, GP_EVAL_MEAN, t, v[k], N, val, has);
        json_t *vals = json_object_get(e, "values");
        size_t q = 0;
        for (size_t p = 0; p < r.npoints; p++)
            if (has[p]) {
                json_t *pt = json_array_get(vals, q++);
                CHECK_INT(jtime_ms(pt), start + (int64_t)p * 1000);
                CHECK(jvalue(pt) == val[p]);
            }
        CHECK_INT(json_array_size(vals), q);
    }
    json_decref(j);
    /* avg by Hostname: the engine's avg (Prometheus's running mean, so
     * equal to the plain mean within rounding). */
    j = range(s, "par", start, end, 1000, GP_AGG_AVG, "Hostname", 0, NULL, err, sizeof err);
    res = result_of(j);
    CHECK_INT(json_array_size(res), HOSTS);
    for (int h = 0; h < HOSTS; h++) {
        for (size_t p = 0; p < r.npoints; p++)
            sum[p] = 0;
        size_t cnt = 0;
        for (int g = 0; g < GPUS; g++) {
            gp_eval_raw(&r, GP_EVAL_MEAN, t, v[h * GPUS + g], N, val, has);
            for (size_t p = 0; p < r.npoints; p++)
                if (has[p])
                    sum[p] += val[p];
        }
        json_t *vals = json_object_get(json_array_get(res, (size_t)h), "values");
        for (size_t p = 0; p < r.npoints; p++)
            if (has[p]) {
                json_t *pt = json_array_get(vals, cnt++);
                CHECK_INT(jtime_ms(pt), start + (int64_t)p * 1000);
                CHECK_DBL(jvalue(pt), sum[p] / GPUS, 1e-12 * fabs(sum[p] / GPUS));
            }
        CHECK_INT(json_array_size(vals), cnt);
    }
    json_decref(j);
    free(val);
    free(sum);
    free(has);
    gp_storage_close(s);
}

static void test_grouping_every_agg(void)
{
    struct gp_storage *s = open_store();
    int64_t b = base_ms();
    /* 3 hosts x 2 GPUs, constant values 1..6 (host h1: 1, 2; h2: 3, 4;
     * h3: 5, 6); gpu 1 of h3 also has a NaN-free different metric. */
    int val = 1;
    for (int h = 1; h <= 3; h++)
        for (int g = 0; g < 2; g++, val++) {
            char hn[32], gn[32];
            snprintf(hn, sizeof hn, "Hostname=h%d", h);
            snprintf(gn, sizeof gn, "gpu=%d", g);
            const char *kv[] = {"__name__=util", hn, gn, NULL};
            put_seconds(s, kv, b, 600, f_salt, (size_t)val);
        }
    /* A series without Hostname groups as {} under by=Hostname. */
    const char *nohost[] = {"__name__=util", "gpu=9", NULL};
    put_seconds(s, nohost, b, 600, f_salt, 100);
    static const struct {
        enum gp_agg agg;
        double h1, h2, h3, none;
    } cases[] = {
        {GP_AGG_AVG, 1.5, 3.5, 5.5, 100}, {GP_AGG_SUM, 3, 7, 11, 100}, {GP_AGG_MIN, 1, 3, 5, 100},
        {GP_AGG_MAX, 2, 4, 6, 100},       {GP_AGG_COUNT, 2, 2, 2, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char err[256] = "";
        json_t *j = range(s, "util", b + 60000, b + 300000, 60000, cases[c].agg, "Hostname", 0, NULL,
                          err, sizeof err);
        CHECK(j != NULL);
        json_t *res = result_of(j);
        CHECK_INT(json_array_size(res), 4);
        /* Sorted by result labels: {} first, then h1, h2, h3. */
        json_t *m0 = json_object_get(json_array_get(res, 0), "metric");
        CHECK_INT(json_object_size(m0), 0);
        const double want[4] = {cases[c].none, cases[c].h1, cases[c].h2, cases[c].h3};
        for (size_t i = 0; i < 4; i++) {
            json_t *e = json_array_get(res, i);
            json_t *mt = json_object_get(e, "metric");
            if (i) {
                char hn[8];
                snprintf(hn, sizeof hn, "h%zu", i);
                CHECK_INT(json_object_size(mt), 1);
                CHECK_STR(json_string_value(json_object_get(mt, "Hostname")), hn);
            }
            json_t *vals = json_object_get(e, "values");
            CHECK_INT(json_array_size(vals), 5);
            for (size_t p = 0; p < 5; p++)
                CHECK_DBL(jvalue(json_array_get(vals, p)), want[i], 0);
        }
        json_decref(j);
    }
    /* No by: one group, metric {}. by two labels, given twice: per series. */
    char err[256] = "";
    json_t *j = range(s, "util{Hostname=~\"h.*\"}", b + 60000, b + 60000, 60000, GP_AGG_SUM, NULL, 0,
                      NULL, err, sizeof err);
    json_t *res = result_of(j);
    CHECK_INT(json_array_size(res), 1);
    CHECK_INT(json_object_size(json_object_get(json_array_get(res, 0), "metric")), 0);
    CHECK_DBL(jvalue(json_array_get(json_object_get(json_array_get(res, 0), "values"), 0)), 21, 0);
    json_decref(j);
    j = range(s, "util", b + 60000, b + 60000, 60000, GP_AGG_MAX, "gpu,Hostname,gpu", 0, NULL, err,
              sizeof err);
    res = result_of(j);
    CHECK_INT(json_array_size(res), 7);
    json_t *m1 = json_object_get(json_array_get(res, 1), "metric");
    CHECK_INT(json_object_size(m1), 2);
    CHECK_STR(json_string_value(json_object_get(m1, "Hostname")), "h1");
    CHECK_STR(json_string_value(json_object_get(m1, "gpu")), "1");
    json_decref(j);
    gp_storage_close(s);
}

static void test_min_max_keep_peaks(void)
{
    struct gp_storage *s = open_store();
    int64_t b = base_ms();
    /* 1 s samples of 10 with one spike of 90 at 30 s. */
    int64_t t[60];
    double v[60];
    for (int i = 0; i < 60; i++) {
        t[i] = b + (i + 1) * 1000;
        v[i] = i == 29 ? 90 : 10;
    }
    const char *kv[] = {"__name__=fb_used", "gpu=0", NULL};
    put(s, kv, t, v, 60);
    char err[256];
    json_t *j = range(s, "fb_used", b + 60000, b + 60000, 60000, GP_AGG_MAX, NULL, 0, NULL, err,
                      sizeof err);
    CHECK_DBL(jvalue(json_array_get(json_object_get(json_array_get(result_of(j), 0), "values"), 0)), 90,
              0);
    json_decref(j);
    j = range(s, "fb_used", b + 60000, b + 60000, 60000, GP_AGG_AVG, NULL, 0, NULL, err, sizeof err);
    CHECK_DBL(jvalue(json_array_get(json_object_get(json_array_get(result_of(j), 0), "values"), 0)),
              11.333333333333334, 1e-12);
    json_decref(j);
    gp_storage_close(s);
}

static void test_rollups_equal_raw(void)
{
    /* 10-minute blocks, so compaction writes rollup files for most of the
     * hour and the newest minutes come from raw samples. */
    struct gp_storage *s = open_store_blocks(600000);
    int64_t b = base_ms();
    for (size_t k = 0; k < 4; k++) {
        char g[16];
        snprintf(g, sizeof g, "gpu=%zu", k);
        const char *kv[] = {"__name__=power", g, NULL};
        /* 0.5 s past each second: never on a minute boundary. */
        put_seconds(s, kv, b + 500, 3600, f_mix, k);
    }
    int64_t et[] = {b + 30000, b + 60000};
    double ev[] = {1, 3};
    const char *edge[] = {"__name__=edge", NULL};
    put(s, edge, et, ev, 2);
    gp_store_maintain(gp_storage_store(s), 1);
    struct gp_store_stats st;
    gp_storage_stats(s, &st);
    CHECK(st.blocks > 0);
    static const enum gp_agg aggs[] = {GP_AGG_NONE, GP_AGG_AVG, GP_AGG_MIN, GP_AGG_MAX, GP_AGG_SUM};
    for (size_t a = 0; a < sizeof aggs / sizeof aggs[0]; a++) {
        for (int64_t step = 60000; step <= 300000; step += 240000) {
            char err[256] = "";
            int64_t start = b + 120000, end = b + 3540000;
            json_t *raw = range(s, "power", start, end, step, aggs[a], NULL, 0, NULL, err, sizeof err);
            json_t *ru = range(s, "power", start, end, step, aggs[a], NULL, 1, NULL, err, sizeof err);
            json_t *rr = result_of(raw), *rx = result_of(ru);
            CHECK_INT(json_array_size(rr), json_array_size(rx));
            CHECK(json_array_size(rr) > 0);
            for (size_t i = 0; i < json_array_size(rr); i++) {
                json_t *va = json_object_get(json_array_get(rr, i), "values");
                json_t *vb = json_object_get(json_array_get(rx, i), "values");
                CHECK(json_equal(json_object_get(json_array_get(rr, i), "metric"),
                                 json_object_get(json_array_get(rx, i), "metric")));
                CHECK_INT(json_array_size(va), (end - start) / step + 1);
                CHECK_INT(json_array_size(va), json_array_size(vb));
                for (size_t p = 0; p < json_array_size(va); p++) {
                    CHECK_INT(jtime_ms(json_array_get(va, p)), jtime_ms(json_array_get(vb, p)));
                    CHECK_DBL(jvalue(json_array_get(va, p)), jvalue(json_array_get(vb, p)), 1e-9);
                }
            }
            json_decref(raw);
            json_decref(ru);
        }
    }
    /* Auto picks rollups only for minute steps on minute starts (seen on a
     * sample exactly on a minute boundary, which rollups count one step
     * later); forcing them otherwise is an error. */
    char err[256] = "";
    int rc;
    static const struct {
        int rollups;
        int64_t start, step;
        double want;
    } ecases[] = {{0, 60000, 60000, 2}, {1, 60000, 60000, 1}, {-1, 60000, 60000, 1},
                  {-1, 60000, 30000, 3}, {-1, 90000, 60000, 3}};
    for (size_t i = 0; i < sizeof ecases / sizeof ecases[0]; i++) {
        json_t *j = range(s, "edge", b + ecases[i].start, b + ecases[i].start, ecases[i].step,
                          GP_AGG_NONE, NULL, ecases[i].rollups, NULL, err, sizeof err);
        json_t *vals = json_object_get(json_array_get(result_of(j), 0), "values");
        CHECK_DBL(jvalue(json_array_get(vals, 0)), ecases[i].want, 0);
        json_decref(j);
    }
    CHECK(range(s, "power", b + 120000, b + 240000, 15000, GP_AGG_NONE, NULL, 1, &rc, err,
                sizeof err) == NULL);
    CHECK_INT(rc, GP_EUSAGE);
    CHECK_CONTAINS(err, "multiple of 1m");
    CHECK(range(s, "power", b + 120500, b + 240500, 60000, GP_AGG_NONE, NULL, 1, &rc, err,
                sizeof err) == NULL);
    CHECK_INT(rc, GP_EUSAGE);
    gp_storage_close(s);
}

/* The test store's clock, moved on to expire raw samples. */
static int64_t g_clock_ms;
static int64_t test_clock(void) { return g_clock_ms; }

/* A range that starts where raw samples have expired (retention_raw 1h,
 * the clock moved 3 h on) is read from the rollups that remain, on the
 * whole minutes that cover it, and the answer says so; its values are
 * the minutes' means computed here from the samples written. */
static void test_rollups_after_raw_expired(void)
{
    int64_t b = base_ms() - 6 * 3600000;
    g_clock_ms = b + 3600000;
    struct gp_store_options o;
    memset(&o, 0, sizeof o);
    o.block_ms = 600000;
    o.dir = gp_test_tmpdir();
    o.no_sync = 1;
    o.no_background = 1;
    o.retention_raw_ms = 3600000;
    o.clock_ms = test_clock;
    struct gp_storage *s = NULL;
    char err[256] = "";
    CHECK_INT(gp_storage_open(&s, &(struct gp_storage_options){.store = o}, err, sizeof err), GP_OK);
    const char *kv[] = {"__name__=power", "gpu=0", NULL};
    put_seconds(s, kv, b + 500, 3600, f_mix, 3);
    g_clock_ms = b + 4 * 3600000;
    gp_store_maintain(gp_storage_store(s), 1);
    gp_store_maintain(gp_storage_store(s), 1);
    /* the GPU still reports: its newest sample is now */
    int64_t tn = g_clock_ms - 1000;
    double vn = 1;
    put(s, kv, &tn, &vn, 1);
    int64_t raw_since = g_clock_ms - o.retention_raw_ms;
    size_t nm;
    struct gp_matcher *m = sel("power", &nm);
    struct gp_range_query q;
    memset(&q, 0, sizeof q);
    q.m = m;
    q.nm = nm;
    q.start_ms = b + 600500; /* not on a minute, a 15 s step: raw would be asked */
    q.end_ms = b + 1800000;
    q.step_ms = 15000;
    q.rollups = -1;
    struct gp_buf out;
    gp_buf_init(&out, 0);
    /* Raw samples are gone: without raw_since_ms nothing answers. */
    CHECK_INT(gp_query_range(s, &q, &out, err, sizeof err), GP_OK);
    CHECK_CONTAINS(out.data, "\"result\":[]");
    gp_buf_reset(&out);
    q.raw_since_ms = raw_since;
    CHECK_INT(gp_query_range(s, &q, &out, err, sizeof err), GP_OK);
    json_error_t je;
    json_t *j = json_loadb(out.data, out.len, 0, &je);
    CHECK(j != NULL);
    json_t *data = json_object_get(j, "data");
    CHECK_STR(json_string_value(json_object_get(data, "resolution")), "1m");
    CHECK_INT((int64_t)(json_number_value(json_object_get(data, "start")) * 1000), b + 600000);
    CHECK_INT((int64_t)(json_number_value(json_object_get(data, "end")) * 1000), b + 1800000);
    CHECK_INT((int64_t)(json_number_value(json_object_get(data, "step")) * 1000), 60000);
    json_t *vals = json_object_get(json_array_get(result_of(j), 0), "values");
    CHECK_INT(json_array_size(vals), 21);
    for (size_t k = 0; k < json_array_size(vals); k++) {
        /* minute [t - 60 s, t): samples i at b + 0.5 s + i s */
        int64_t t = b + 600000 + (int64_t)k * 60000;
        double sum = 0;
        size_t i0 = (size_t)((t - 60000 - b) / 1000);
        for (size_t i = i0; i < i0 + 60; i++)
            sum += f_mix(i, 3);
        CHECK_INT(jtime_ms(json_array_get(vals, k)), t);
        CHECK_DBL(jvalue(json_array_get(vals, k)), sum / 60, 1e-9);
    }
    json_decref(j);
    /* Inside the raw retention the same query stays on raw samples, in
     * Prometheus's exact shape. */
    gp_buf_reset(&out);
    q.raw_since_ms = b;
    CHECK_INT(gp_query_range(s, &q, &out, err, sizeof err), GP_OK);
    CHECK(strstr(out.data, "resolution") == NULL);
    gp_buf_free(&out);
    gp_matchers_free(m, nm);
    gp_storage_close(s);
}

static void test_special_values_and_staleness(void)
{
    struct gp_storage *s = open_store();
    int64_t b = base_ms();
    int64_t t[] = {b + 1000, b + 2000, b + 3000, b + 4000};
    double v[] = {NAN, INFINITY, -INFINITY, gp_bits_f64(GP_STALE_NAN_BITS)};
    const char *kv[] = {"__name__=odd", NULL};
    put(s, kv, t, v, 4);
    char err[256];
    /* step 1 s: NaN, +Inf, -Inf, then the marker ends the series. */
    json_t *j = range(s, "odd", b + 1000, b + 10000, 1000, GP_AGG_NONE, NULL, 0, NULL, err, sizeof err);
    json_t *vals = json_object_get(json_array_get(result_of(j), 0), "values");
    CHECK_INT(json_array_size(vals), 3);
    CHECK_STR(json_string_value(json_array_get(json_array_get(vals, 0), 1)), "NaN");
    CHECK_STR(json_string_value(json_array_get(json_array_get(vals, 1), 1)), "+Inf");
    CHECK_STR(json_string_value(json_array_get(json_array_get(vals, 2), 1)), "-Inf");
    json_decref(j);
    gp_storage_close(s);
}

static void test_limits_and_errors(void)
{
    struct gp_storage *s = open_store();
    int64_t b = base_ms();
    const char *kv[] = {"__name__=m", NULL};
    put_seconds(s, kv, b, 100, f_salt, 1);
    size_t nm;
    struct gp_matcher *m = sel("m", &nm);
    struct gp_range_query q;
    memset(&q, 0, sizeof q);
    q.m = m;
    q.nm = nm;
    q.rollups = -1;
    struct gp_buf out;
    gp_buf_init(&out, 0);
    gp_buf_puts(&out, "prefix");
    char err[256];
    struct {
        int64_t start, end, step;
        enum gp_agg agg;
        size_t nby;
        const char *msg;
    } bad[] = {
        {b, b + 11001, 1, GP_AGG_NONE, 0, "exceeded maximum resolution of 11,000 points"},
        {b + 1, b, 1000, GP_AGG_NONE, 0, "end timestamp must not be before start time"},
        {b, b + 1000, 0, GP_AGG_NONE, 0, "zero or negative query resolution step"},
        {b, b + 1000, -5, GP_AGG_NONE, 0, "zero or negative query resolution step"},
        {b, b + 1000, 1000, GP_AGG_NONE, 1, "by needs agg"},
        {INT64_MIN, 0, INT64_MAX, GP_AGG_NONE, 0, "out of range"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        q.start_ms = bad[i].start;
        q.end_ms = bad[i].end;
        q.step_ms = bad[i].step;
        q.agg = bad[i].agg;
        q.nby = bad[i].nby;
        q.by[0] = "Hostname";
        err[0] = '\0';
        CHECK_INT(gp_query_range(s, &q, &out, err, sizeof err), GP_EUSAGE);
        CHECK_CONTAINS(err, bad[i].msg);
        CHECK_STR(out.data, "prefix");
        CHECK_INT(out.err, 0);
    }
    q.nby = 0;
    q.agg = GP_AGG_AVG;
    q.by[0] = "";
    q.nby = 1;
    q.start_ms = b;
    q.end_ms = b + 1000;
    q.step_ms = 1000;
    CHECK_INT(gp_query_range(s, &q, &out, err, sizeof err), GP_EUSAGE);
    q.nby = 0;
    q.nm = 0;
    CHECK_INT(gp_query_range(s, &q, &out, err, sizeof err), GP_EUSAGE);
    q.nm = nm;
    /* An answer over the buffer's cap: refused whole, out untouched. */
    struct gp_buf small;
    gp_buf_init(&small, 64);
    gp_buf_puts(&small, "x");
    q.agg = GP_AGG_NONE;
    q.end_ms = b + 100000;
    CHECK_INT(gp_query_range(s, &q, &small, err, sizeof err), GP_ETOOBIG);
    CHECK_CONTAINS(err, "larger than 64 bytes");
    CHECK_STR(small.data, "x");
    CHECK_INT(small.err, 0);
    gp_buf_free(&small);
    /* The error envelope, with text that needs escaping. */
    gp_buf_reset(&out);
    gp_query_error(&out, "bad_data", "invalid \"step\"\n\x01");
    json_error_t je;
    json_t *j = json_loads(out.data, 0, &je);
    CHECK(j != NULL);
    CHECK_STR(json_string_value(json_object_get(j, "status")), "error");
    CHECK_STR(json_string_value(json_object_get(j, "errorType")), "bad_data");
    CHECK_STR(json_string_value(json_object_get(j, "error")), "invalid \"step\"\n\x01");
    CHECK_INT(json_object_size(j), 3);
    json_decref(j);
    gp_buf_free(&out);
    gp_matchers_free(m, nm);
    gp_storage_close(s);
}

static void test_series_cap(void)
{
    struct gp_storage *s = open_store();
    int64_t b = base_ms();
    /* GP_QUERY_MAX_SERIES + 1 series in one request. */
    size_t n = GP_QUERY_MAX_SERIES + 1;
    struct gp_series *ser = calloc(n, sizeof *ser);
    struct gp_label *l = calloc(2 * n, sizeof *l);
    struct gp_sample *smp = calloc(n, sizeof *smp);
    char *ids = calloc(n, 8);
    for (size_t i = 0; i < n; i++) {
        snprintf(ids + 8 * i, 8, "%zu", i);
        l[2 * i] = (struct gp_label){{"__name__", 8}, {"many", 4}};
        l[2 * i + 1] = (struct gp_label){{"i", 1}, {ids + 8 * i, strlen(ids + 8 * i)}};
        smp[i] = (struct gp_sample){1, b};
        ser[i] = (struct gp_series){&l[2 * i], 2, &smp[i], 1};
    }
    struct gp_batch req = {ser, n, 2 * n, n, NULL};
    struct gp_append_result res;
    char err[256] = "";
    CHECK_INT(gp_storage_append(s, &req, &res, err, sizeof err), GP_OK);
    CHECK_INT(res.accepted, n);
    int rc;
    CHECK(range(s, "many", b, b, 1000, GP_AGG_COUNT, NULL, 0, &rc, err, sizeof err) == NULL);
    CHECK_INT(rc, GP_EUSAGE);
    CHECK_CONTAINS(err, "more than the limit of 100000");
    json_t *j = range(s, "many{i=~\"1.*\"}", b, b, 1000, GP_AGG_COUNT, NULL, 0, &rc, err, sizeof err);
    CHECK(j != NULL);
    json_decref(j);
    free(ser);
    free(l);
    free(smp);
    free(ids);
    gp_storage_close(s);
}

/* ---- JSON validity for hostile labels ---- */

static void test_hostile_labels(void)
{
    struct gp_storage *s = open_store();
    int64_t b = base_ms();
    const char *vals[] = {
        "quote\" backslash\\ slash/",
        "ctl \x01\x02\x1f tab\t nl\n cr\r del\x7f",
        "utf8 caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
        "bad \xc3 \xff\xfe \xed\xa0\x80 \xc0\xaf",
        "</script><script>alert(1)</script>",
    };
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        char kv0[600];
        snprintf(kv0, sizeof kv0, "weird=%s", vals[i]);
        char idx[16];
        snprintf(idx, sizeof idx, "i=%zu", i);
        const char *kv[] = {"__name__=w", kv0, idx, NULL};
        put_seconds(s, kv, b, 10, f_salt, i);
    }
    char err[256];
    json_t *j = range(s, "w", b + 5000, b + 5000, 1000, GP_AGG_NONE, NULL, 0, NULL, err, sizeof err);
    json_t *res = result_of(j);
    CHECK_INT(json_array_size(res), 5);
    for (size_t i = 0; i < 5; i++) {
        json_t *mt = json_object_get(json_array_get(res, i), "metric");
        size_t k = (size_t)atoi(json_string_value(json_object_get(mt, "i")));
        const char *w = json_string_value(json_object_get(mt, "weird"));
        if (k == 3)
            CHECK_STR(w, "bad \xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
                         "\xef\xbf\xbd\xef\xbf\xbd");
        else
            CHECK_STR(w, vals[k]);
    }
    json_decref(j);
    /* Grouped by the hostile label: the result metric is escaped too. */
    j = range(s, "w", b + 5000, b + 5000, 1000, GP_AGG_COUNT, "weird", 0, NULL, err, sizeof err);
    CHECK_INT(json_array_size(result_of(j)), 5);
    json_decref(j);
    /* Series and label values go through the same writer. */
    struct gp_buf out;
    gp_buf_init(&out, 0);
    CHECK_INT(gp_query_label_values(s, "weird", &out, err, sizeof err), GP_OK);
    json_error_t je;
    j = json_loadb(out.data, out.len, 0, &je);
    CHECK(j != NULL);
    CHECK_INT(json_array_size(json_object_get(j, "data")), 5);
    json_decref(j);
    gp_buf_free(&out);
    gp_storage_close(s);
}

/* ---- series, labels, label values ---- */

static void test_series_labels_values(void)
{
    struct gp_storage *s = open_store();
    int64_t b = base_ms();
    const char *a[] = {"__name__=temp", "Hostname=n2", "gpu=0", NULL};
    const char *c[] = {"__name__=temp", "Hostname=n1", "gpu=1", NULL};
    const char *d[] = {"__name__=power", "Hostname=n1", "gpu=1", "extra=x", NULL};
    put_seconds(s, a, b, 10, f_salt, 1);
    put_seconds(s, c, b + 100000, 10, f_salt, 1);
    put_seconds(s, d, b, 10, f_salt, 1);
    size_t n1, n2;
    struct gp_matcher *m1 = sel("temp", &n1), *m2 = sel("{Hostname=\"n1\"}", &n2);
    const struct gp_matcher *sels[2] = {m1, m2};
    size_t nms[2] = {n1, n2};
    struct gp_buf out;
    gp_buf_init(&out, 0);
    char err[256] = "";
    CHECK_INT(gp_query_series(s, sels, nms, 2, INT64_MIN, INT64_MAX, &out, err, sizeof err), GP_OK);
    /* Union, each series once, sorted by labels (power < temp; n1 < n2). */
    CHECK_STR(out.data,
              "{\"status\":\"success\",\"data\":["
              "{\"Hostname\":\"n1\",\"__name__\":\"power\",\"extra\":\"x\",\"gpu\":\"1\"},"
              "{\"Hostname\":\"n1\",\"__name__\":\"temp\",\"gpu\":\"1\"},"
              "{\"Hostname\":\"n2\",\"__name__\":\"temp\",\"gpu\":\"0\"}]}");
    /* A time range leaves out series without samples in it. */
    gp_buf_reset(&out);
    CHECK_INT(gp_query_series(s, sels, nms, 1, b, b + 50000, &out, err, sizeof err), GP_OK);
    CHECK_STR(out.data, "{\"status\":\"success\",\"data\":[{\"Hostname\":\"n2\",\"__name__\":\"temp\",\"gpu\":\"0\"}]}");
    gp_buf_reset(&out);
    gp_buf_puts(&out, "keep");
    CHECK_INT(gp_query_series(s, sels, nms, 0, b, b, &out, err, sizeof err), GP_EUSAGE);
    CHECK_CONTAINS(err, "no match[] parameter provided");
    CHECK_INT(gp_query_series(s, sels, nms, 1, b + 1, b, &out, err, sizeof err), GP_EUSAGE);
    CHECK_STR(out.data, "keep");

    gp_buf_reset(&out);
    CHECK_INT(gp_query_labels(s, &out, err, sizeof err), GP_OK);
    CHECK_STR(out.data, "{\"status\":\"success\",\"data\":[\"Hostname\",\"__name__\",\"extra\",\"gpu\"]}");
    gp_buf_reset(&out);
    CHECK_INT(gp_query_label_values(s, "__name__", &out, err, sizeof err), GP_OK);
    CHECK_STR(out.data, "{\"status\":\"success\",\"data\":[\"power\",\"temp\"]}");
    gp_buf_reset(&out);
    CHECK_INT(gp_query_label_values(s, "nope", &out, err, sizeof err), GP_OK);
    CHECK_STR(out.data, "{\"status\":\"success\",\"data\":[]}");
    gp_buf_reset(&out);
    CHECK_INT(gp_query_label_values(s, "", &out, err, sizeof err), GP_EUSAGE);
    CHECK_INT(out.len, 0);
    gp_buf_free(&out);
    gp_matchers_free(m1, n1);
    gp_matchers_free(m2, n2);
    gp_storage_close(s);
}

/* ---- inventory ---- */

static json_t *inventory(struct gp_storage *s, int nodes)
{
    struct gp_buf out;
    gp_buf_init(&out, 0);
    char err[256] = "";
    int rc = nodes ? gp_query_nodes(NULL, s, &out, err, sizeof err) : gp_query_gpus(NULL, s, &out, err, sizeof err);
    if (rc)
        gp_test_fail(__FILE__, __LINE__, "inventory: %s", err);
    json_error_t je;
    json_t *j = json_loadb(out.data, out.len, 0, &je);
    if (!j)
        gp_test_fail(__FILE__, __LINE__, "invalid JSON (%s): %s", je.text, out.data);
    gp_buf_free(&out);
    CHECK_STR(json_string_value(json_object_get(j, "status")), "success");
    return j;
}

static void put_one(struct gp_storage *s, const char *const *kv, int64_t t, double v)
{
    put(s, kv, &t, &v, 1);
}

/* test_inventory's fleet: two nodes, both memory spellings, MIG. */
static void put_inventory_fleet(struct gp_storage *s, int64_t b)
{
    /* Node a (gpulse): GPUs 0, 1 and 10 (numeric order), memory from
     * gpulse_gpu_memory_total_bytes; gpu 0's driver was upgraded. */
    for (int g = 0; g < 3; g++) {
        int gi = g == 2 ? 10 : g;
        char gl[16], ul[32];
        snprintf(gl, sizeof gl, "gpu=%d", gi);
        snprintf(ul, sizeof ul, "UUID=GPU-a%d", gi);
        const char *util[] = {"__name__=DCGM_FI_DEV_GPU_UTIL", "Hostname=a", gl, ul,
                              "modelName=NVIDIA H100 80GB HBM3", "DCGM_FI_DRIVER_VERSION=550.1",
                              "vendor=nvidia", NULL};
        put_one(s, util, b + 1000, 50);
        const char *mem[] = {"__name__=gpulse_gpu_memory_total_bytes", "Hostname=a", gl, ul,
                             "modelName=NVIDIA H100 80GB HBM3", NULL};
        int64_t t[] = {b + 1000, b + 2000, b + 3000};
        double v[] = {85520809984.0, 85520809984.0, gp_bits_f64(GP_STALE_NAN_BITS)};
        put(s, mem, t, v, g == 0 ? 3 : 2);
    }
    const char *upgraded[] = {"__name__=DCGM_FI_DEV_GPU_TEMP", "Hostname=a", "gpu=0", "UUID=GPU-a0",
                              "modelName=NVIDIA H100 80GB HBM3", "DCGM_FI_DRIVER_VERSION=555.2",
                              "vendor=nvidia", NULL};
    put_one(s, upgraded, b + 9000, 40);
    /* Node b (dcgm-exporter, lowercase hostname): memory from FB_* MiB,
     * simulated, an A100 with a MIG instance and another model. */
    const char *used[] = {"__name__=DCGM_FI_DEV_FB_USED", "hostname=b", "gpu=0", "UUID=GPU-b0",
                          "modelName=NVIDIA A100-SXM4-40GB", "simulated=true", NULL};
    const char *fre[] = {"__name__=DCGM_FI_DEV_FB_FREE", "hostname=b", "gpu=0", "UUID=GPU-b0",
                         "modelName=NVIDIA A100-SXM4-40GB", "simulated=true", NULL};
    const char *res[] = {"__name__=DCGM_FI_DEV_FB_RESERVED", "hostname=b", "gpu=0", "UUID=GPU-b0",
                         "modelName=NVIDIA A100-SXM4-40GB", "simulated=true", NULL};
    put_one(s, used, b + 5000, 1000);
    put_one(s, fre, b + 5000, 39000);
    put_one(s, res, b + 4000, 536);
    const char *mig[] = {"__name__=DCGM_FI_DEV_FB_USED", "hostname=b", "gpu=0", "GPU_I_ID=1",
                         "GPU_I_PROFILE=1g.5gb", "UUID=MIG-b0-1", "modelName=NVIDIA A100-SXM4-40GB",
                         "simulated=true", NULL};
    put_one(s, mig, b + 6000, 10);
    const char *other[] = {"__name__=gpulse_gpu_lost", "hostname=b", "gpu=1", "UUID=GPU-b1",
                           "modelName=NVIDIA L4", NULL};
    put_one(s, other, b + 7000, 0);
    /* Not GPU series: ignored. */
    const char *host[] = {"__name__=gpulse_host_cpus", "Hostname=c", NULL};
    put_one(s, host, b + 8000, 64);
    const char *nogpu[] = {"__name__=DCGM_FI_DEV_GPU_UTIL", "Hostname=d", NULL};
    put_one(s, nogpu, b + 8000, 1);
}

static void test_inventory(void)
{
    struct gp_storage *s = open_store();
    int64_t b = base_ms();
    put_inventory_fleet(s, b);
    json_t *j = inventory(s, 0);
    json_t *d = json_object_get(j, "data");
    CHECK_INT(json_array_size(d), 6);
    static const struct {
        const char *node, *gpu, *uuid, *model, *driver;
        double mem;
        int64_t last;
        int sim;
    } want[] = {
        {"a", "0", "GPU-a0", "NVIDIA H100 80GB HBM3", "555.2", 85520809984.0, 9000, 0},
        {"a", "1", "GPU-a1", "NVIDIA H100 80GB HBM3", "550.1", 85520809984.0, 2000, 0},
        {"a", "10", "GPU-a10", "NVIDIA H100 80GB HBM3", "550.1", 85520809984.0, 2000, 0},
        {"b", "0", "GPU-b0", "NVIDIA A100-SXM4-40GB", NULL, (1000.0 + 39000 + 536) * 1048576, 5000, 1},
        {"b", "0", "MIG-b0-1", "NVIDIA A100-SXM4-40GB", NULL, -1, 6000, 1},
        {"b", "1", "GPU-b1", "NVIDIA L4", NULL, -1, 7000, 0},
    };
    for (size_t i = 0; i < 6; i++) {
        json_t *e = json_array_get(d, i);
        CHECK_STR(json_string_value(json_object_get(e, "node")), want[i].node);
        CHECK_STR(json_string_value(json_object_get(e, "gpu")), want[i].gpu);
        CHECK_STR(json_string_value(json_object_get(e, "uuid")), want[i].uuid);
        CHECK_STR(json_string_value(json_object_get(e, "model")), want[i].model);
        if (want[i].driver)
            CHECK_STR(json_string_value(json_object_get(e, "driver")), want[i].driver);
        else
            CHECK(json_is_null(json_object_get(e, "driver")));
        if (want[i].mem < 0)
            CHECK(json_is_null(json_object_get(e, "memory_bytes")));
        else
            CHECK_DBL((double)json_integer_value(json_object_get(e, "memory_bytes")), want[i].mem, 0);
        CHECK_INT(llround(json_number_value(json_object_get(e, "last_seen")) * 1000), b + want[i].last);
        CHECK(json_is_boolean(json_object_get(e, "simulated")));
        CHECK_INT(json_is_true(json_object_get(e, "simulated")), want[i].sim);
    }
    CHECK_STR(json_string_value(json_object_get(json_array_get(d, 0), "vendor")), "nvidia");
    CHECK(json_is_null(json_object_get(json_array_get(d, 3), "vendor")));
    CHECK(json_object_get(json_array_get(d, 3), "gpu_instance") == NULL);
    CHECK_STR(json_string_value(json_object_get(json_array_get(d, 4), "gpu_instance")), "1");
    CHECK_STR(json_string_value(json_object_get(json_array_get(d, 4), "profile")), "1g.5gb");
    json_decref(j);

    j = inventory(s, 1);
    d = json_object_get(j, "data");
    CHECK_INT(json_array_size(d), 2);
    json_t *na = json_array_get(d, 0), *nb = json_array_get(d, 1);
    CHECK_STR(json_string_value(json_object_get(na, "node")), "a");
    CHECK_INT(json_integer_value(json_object_get(na, "gpus")), 3);
    CHECK_INT(json_array_size(json_object_get(na, "models")), 1);
    CHECK_STR(json_string_value(json_array_get(json_object_get(na, "models"), 0)), "NVIDIA H100 80GB HBM3");
    CHECK_INT(llround(json_number_value(json_object_get(na, "last_seen")) * 1000), b + 9000);
    CHECK(json_is_false(json_object_get(na, "simulated")));
    CHECK_STR(json_string_value(json_object_get(nb, "node")), "b");
    CHECK_INT(json_integer_value(json_object_get(nb, "gpus")), 2); /* the MIG instance is GPU 0 */
    CHECK_INT(json_array_size(json_object_get(nb, "models")), 2);
    CHECK_STR(json_string_value(json_array_get(json_object_get(nb, "models"), 0)), "NVIDIA A100-SXM4-40GB");
    CHECK_STR(json_string_value(json_array_get(json_object_get(nb, "models"), 1)), "NVIDIA L4");
    CHECK(json_is_true(json_object_get(nb, "simulated")));
    CHECK_INT(json_object_size(nb), 5);
    json_decref(j);
    gp_storage_close(s);
}

/* The answer of inv (NULL: built for the request) as a string to free. */
static char *inventory_text(struct gp_inventory *inv, struct gp_storage *s, int nodes)
{
    struct gp_buf out;
    gp_buf_init(&out, 0);
    char err[256] = "";
    int rc = nodes ? gp_query_nodes(inv, s, &out, err, sizeof err)
                   : gp_query_gpus(inv, s, &out, err, sizeof err);
    if (rc)
        gp_test_fail(__FILE__, __LINE__, "inventory: %s", err);
    return out.data;
}

/* gp_inventory_each_gpu's GPUs, one line each (sorted: its order is not
 * set), each with its series in the order given. */
struct tiles_dump {
    char *line[64];
    size_t n;
    int ended;
};

static int dump_gpu(void *arg, const struct gp_inv_gpu *g)
{
    struct tiles_dump *d = arg;
    if (!g) {
        d->ended++;
        return GP_OK;
    }
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_buf_printf(&b, "%.*s/%.*s/%.*s:", (int)g->node.len, g->node.ptr, (int)g->gpu.len, g->gpu.ptr,
                  (int)g->mig.len, g->mig.ptr);
    for (size_t i = 0; i < g->n; i++) {
        const struct gp_inv_series *x = &g->series[i];
        gp_buf_printf(&b, " %d@%lld{%.*s,%.*s,%.*s,%.*s,%.*s}", x->kind, (long long)x->last_ms,
                      (int)x->job.len, x->job.ptr, (int)x->model.len, x->model.ptr, (int)x->rank.len,
                      x->rank.ptr, (int)x->uuid.len, x->uuid.ptr, (int)x->reason.len, x->reason.ptr);
    }
    CHECK(d->n < 64);
    d->line[d->n++] = b.data;
    return GP_OK;
}

static int line_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The tiles of inv (NULL: built for the call) in [t0, t1], as text to free. */
static char *tiles_text(struct gp_inventory *inv, struct gp_storage *s, int64_t t0, int64_t t1)
{
    static const char *const names[] = {"DCGM_FI_DEV_GPU_UTIL", "gpulse_gpu_memory_total_bytes",
                                        "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_FB_USED",
                                        "gpulse_gpu_lost", "gpulse_gpu_memory_total_bytes"};
    struct tiles_dump d = {.n = 0};
    char err[256] = "";
    if (gp_inventory_each_gpu(inv, s, names, 6, t0, t1, dump_gpu, &d, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "tiles: %s", err);
    CHECK_INT(d.ended, 1);
    qsort(d.line, d.n, sizeof *d.line, line_cmp);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    for (size_t i = 0; i < d.n; i++) {
        gp_buf_printf(&b, "%s\n", d.line[i]);
        free(d.line[i]);
    }
    gp_buf_puts(&b, "");
    return b.data;
}

/* The kept inventory answers as one built from scratch, both documents
 * and the fleet's tiles; returns the GPUs' answer (to free). */
static char *inventory_same(struct gp_inventory *inv, struct gp_storage *s)
{
    for (int64_t t0 = INT64_MIN; t0 != 1; t0 = t0 == INT64_MIN ? base_ms() + 5500 : 1) {
        char *kept = tiles_text(inv, s, t0, INT64_MAX), *fresh = tiles_text(NULL, s, t0, INT64_MAX);
        CHECK_STR(kept, fresh);
        free(kept);
        free(fresh);
    }
    for (int nodes = 1; nodes >= 0; nodes--) {
        char *kept = inventory_text(inv, s, nodes), *fresh = inventory_text(NULL, s, nodes);
        CHECK_STR(kept, fresh);
        free(fresh);
        if (!nodes)
            return kept;
        free(kept);
    }
    return NULL;
}

/* What a gp_inventory keeps between requests follows the store: new
 * series, GPUs and nodes, newer samples of known series (memory, last
 * seen, the newest series' identity), and another storage. */
static void test_inventory_kept(void)
{
    char err0[256];
    struct gp_inventory *inv;
    CHECK_INT(gp_inventory_new(&inv), GP_OK);
    struct gp_storage *s = open_store();
    int64_t b = base_ms();
    free(inventory_same(inv, s));
    put_inventory_fleet(s, b);
    char *a = inventory_same(inv, s);
    CHECK_CONTAINS(a, "\"node\":\"a\",\"gpu\":\"0\",\"uuid\":\"GPU-a0\",\"model\":\"NVIDIA H100 80GB "
                      "HBM3\",\"memory_bytes\":85520809984,\"driver\":\"555.2\"");
    free(a);
    /* A known series' newer sample: gpu 0's memory (its stale marker
     * ended it) and its last_seen. */
    const char *mem0[] = {"__name__=gpulse_gpu_memory_total_bytes", "Hostname=a", "gpu=0",
                          "UUID=GPU-a0", "modelName=NVIDIA H100 80GB HBM3", NULL};
    put_one(s, mem0, b + 20000, 40000000000.0);
    /* New series: gpu 1's driver upgrade, gpu 2 (between 1 and 10), a
     * node that sorts first, and a series without a gpu. */
    const char *up1[] = {"__name__=DCGM_FI_DEV_GPU_TEMP", "Hostname=a", "gpu=1", "UUID=GPU-a1",
                         "modelName=NVIDIA H100 80GB HBM3", "DCGM_FI_DRIVER_VERSION=560.9", NULL};
    put_one(s, up1, b + 21000, 41);
    const char *g2[] = {"__name__=gpulse_gpu_memory_total_bytes", "Hostname=a", "gpu=2",
                        "UUID=GPU-a2", "modelName=NVIDIA H200", NULL};
    put_one(s, g2, b + 22000, 150000000000.0);
    const char *first[] = {"__name__=DCGM_FI_DEV_GPU_UTIL", "Hostname=0first", "gpu=0",
                           "simulated=true", NULL};
    put_one(s, first, b + 23000, 5);
    const char *nogpu[] = {"__name__=DCGM_FI_DEV_GPU_UTIL", "Hostname=e", NULL};
    put_one(s, nogpu, b + 23000, 1);
    /* a gpu without a host: a tile, not in the inventory */
    const char *nohost[] = {"__name__=DCGM_FI_DEV_GPU_UTIL", "gpu=7", "job=j", "rank=2", NULL};
    put_one(s, nohost, b + 23000, 1);
    a = inventory_same(inv, s);
    CHECK(strstr(a, "\"node\":\"\"") == NULL);
    char *t = tiles_text(inv, s, INT64_MIN, INT64_MAX);
    CHECK_CONTAINS(t, "/7/: 0@");
    CHECK_CONTAINS(t, "{j,,2,,}");
    /* b/0: FB_USED (kind 3) only, gpulse_gpu_memory_total_bytes once
     * (kind 1, its first place); a/0: util, memory, temperature, by kind */
    CHECK_CONTAINS(t, "b/0/: 3@");
    char *a0 = strstr(t, "a/0/: 0@");
    CHECK(a0 && strstr(a0, " 1@") && strstr(a0, " 2@") && strstr(a0, " 1@") < strstr(a0, " 2@"));
    CHECK(strstr(t, "e//") == NULL && strstr(t, "d//") == NULL); /* no gpu label: not a tile */
    free(t);
    /* only series with a sample from b + 5500 on */
    t = tiles_text(inv, s, b + 5500, INT64_MAX);
    CHECK(strstr(t, "b/0/:") == NULL);
    CHECK_CONTAINS(t, "b/0/1: 3@");
    free(t);
    CHECK(strstr(a, "{\"node\":\"0first\",\"gpu\":\"0\"") == a + strlen("{\"status\":\"success\",\"data\":["));
    CHECK_CONTAINS(a, "\"gpu\":\"0\",\"uuid\":\"GPU-a0\",\"model\":\"NVIDIA H100 80GB HBM3\","
                      "\"memory_bytes\":40000000000");
    CHECK_CONTAINS(a, "\"uuid\":\"GPU-a1\",\"model\":\"NVIDIA H100 80GB HBM3\",\"memory_bytes\":"
                      "85520809984,\"driver\":\"560.9\"");
    char *g1 = strstr(a, "GPU-a1"), *g2at = strstr(a, "GPU-a2"), *g10 = strstr(a, "GPU-a10");
    CHECK(g1 && g2at && g10 && g1 < g2at && g2at < g10);
    free(a);
    struct gp_inventory_stats is;
    gp_inventory_stats(inv, &is);
    CHECK(is.label_reads >= is.series && is.series > 0 && is.gpus > 0);
    uint64_t reads = is.label_reads;
    free(inventory_same(inv, s)); /* met series: no label set read again */
    gp_inventory_stats(inv, &is);
    CHECK_INT(is.label_reads, reads);
    /* Warmed in slices of 2 label sets: every one of the 18 series read
     * once (nine slices, then a pass that finds none left), then
     * the answers read none and equal ones built from scratch. */
    struct gp_inventory *warm;
    CHECK_INT(gp_inventory_new(&warm), GP_OK);
    CHECK_INT(gp_inventory_warm(warm, s, 0, err0, sizeof err0), GP_EUSAGE);
    CHECK_INT(gp_inventory_warm(warm, s, 2, err0, sizeof err0), GP_OK);
    gp_inventory_stats(warm, &is);
    CHECK_INT(is.label_reads, 18);
    CHECK_INT(is.series, 18);
    free(inventory_same(warm, s));
    CHECK_INT(gp_inventory_warm(warm, s, 2, err0, sizeof err0), GP_OK);
    gp_inventory_stats(warm, &is);
    CHECK_INT(is.label_reads, 18);
    gp_inventory_free(warm);
    /* Another storage: nothing of the first one's series is kept. */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/other", gp_test_tmpdir());
    struct gp_store_options o = {.dir = dir, .no_sync = 1, .no_background = 1};
    struct gp_storage *s2 = NULL;
    char err[256] = "";
    CHECK_INT(gp_storage_open(&s2, &(struct gp_storage_options){.store = o}, err, sizeof err), GP_OK);
    put_one(s2, g2, b + 1000, 1.0);
    a = inventory_same(inv, s2);
    CHECK_CONTAINS(a, "[{\"node\":\"a\",\"gpu\":\"2\",\"uuid\":\"GPU-a2\"");
    CHECK(strstr(a, "GPU-a0") == NULL);
    free(a);
    gp_storage_close(s2);
    gp_storage_close(s);
    gp_inventory_free(inv);
}

static void test_inventory_empty(void)
{
    struct gp_storage *s = open_store();
    struct gp_buf out;
    gp_buf_init(&out, 0);
    char err[256];
    CHECK_INT(gp_query_gpus(NULL, s, &out, err, sizeof err), GP_OK);
    CHECK_STR(out.data, "{\"status\":\"success\",\"data\":[]}");
    gp_buf_reset(&out);
    CHECK_INT(gp_query_nodes(NULL, s, &out, err, sizeof err), GP_OK);
    CHECK_STR(out.data, "{\"status\":\"success\",\"data\":[]}");
    gp_buf_free(&out);
    gp_storage_close(s);
}

/* Series of the agg form's agreement test: every 10 s over 10 minutes,
 * with a gap, a NaN and a stale marker that ends one series for a while. */
#define AP_N 60
static size_t put_agree(struct gp_storage *s, const char *const *kv, int64_t b, int kind, int64_t *t,
                        double *v)
{
    size_t n = 0;
    for (int i = 0; i < AP_N; i++) {
        if (kind == 1 && i >= 6 && i < 40)
            continue; /* a gap longer than the lookback */
        t[n] = b + (int64_t)i * 10000 + (kind == 2 ? 3000 : 0);
        v[n] = kind == 1 && i == 45 ? NAN : 1.5 * i + 7 * kind + (i % 7) * 0.1;
        if (kind == 2 && i == 20)
            v[n] = gp_bits_f64(GP_STALE_NAN_BITS);
        n++;
    }
    put(s, kv, t, v, n);
    return n;
}

/* The agg form on raw samples is the PromQL gp_query_form_promql writes,
 * and that PromQL keeps the form's documented meaning: per series the
 * window's mean (min, max) over (t - step, t], else the lookback's newest
 * sample, combined per group (computed here from gp_eval_raw). */
static void test_agg_is_promql(void)
{
    struct gp_storage *s = open_store();
    int64_t b = base_ms();
    const char *k0[] = {"__name__=ag", "Hostname=a", "gpu=0", NULL};
    const char *k1[] = {"__name__=ag", "Hostname=a", "gpu=1", NULL};
    const char *k2[] = {"__name__=ag", "Hostname=b", "gpu=0", NULL};
    const char *k3[] = {"__name__=ag", "gpu=7", NULL};
    const char *const *keys[] = {k0, k1, k2, k3};
    const char *host[] = {"a", "a", "b", ""};
    /* each series' raw samples, kept for the documented meaning below */
    int64_t ts[4][AP_N];
    double vs[4][AP_N];
    size_t ns[4];
    for (int k = 0; k < 4; k++)
        ns[k] = put_agree(s, keys[k], b, k, ts[k], vs[k]);
    /* The translation, as docs/api.md shows it. */
    size_t nm;
    struct gp_matcher *m = sel("ag{gpu=~\"0|1\"}", &nm);
    struct gp_range_query q = {.m = m, .nm = nm, .start_ms = b, .end_ms = b + 1000, .step_ms = 15000,
                               .agg = GP_AGG_MAX, .by = {"Hostname"}, .nby = 1};
    struct gp_buf text;
    gp_buf_init(&text, 0);
    CHECK_INT(gp_query_form_promql(&q, &text), GP_OK);
    CHECK_STR(text.data, "max by (Hostname) (max_over_time(ag{gpu=~\"0|1\"}[15s]) or ag{gpu=~\"0|1\"} * 1)");
    gp_buf_reset(&text);
    q.agg = GP_AGG_COUNT;
    q.nby = 0;
    q.step_ms = 90000;
    CHECK_INT(gp_query_form_promql(&q, &text), GP_OK);
    CHECK_STR(text.data, "count (avg_over_time(ag{gpu=~\"0|1\"}[1m30s]) or ag{gpu=~\"0|1\"} * 1)");
    gp_buf_reset(&text);
    q.step_ms = 300000; /* the window holds the lookback: no fallback */
    CHECK_INT(gp_query_form_promql(&q, &text), GP_OK);
    CHECK_STR(text.data, "count (avg_over_time(ag{gpu=~\"0|1\"}[5m]))");
    gp_buf_free(&text);
    gp_matchers_free(m, nm);

    const enum gp_agg aggs[] = {GP_AGG_AVG, GP_AGG_MIN, GP_AGG_MAX, GP_AGG_SUM, GP_AGG_COUNT};
    const int64_t steps[] = {4000, 15000, 60000, 300000, 420000};
    int64_t start = b + 7000, end = b + 700000; /* past the data: the lookback's tail */
    for (size_t si = 0; si < 5; si++) {
        struct gp_eval_range r;
        char err[256];
        CHECK_INT(gp_eval_range_init(&r, start, end, steps[si], err, sizeof err), GP_OK);
        double *val = malloc(r.npoints * sizeof *val);
        uint8_t *has = malloc(r.npoints);
        for (size_t ai = 0; ai < 5; ai++) {
            enum gp_agg agg = aggs[ai];
            /* expected per group ("" a b): accumulate as PromQL's aggregations */
            double acc[3][200];
            unsigned cnt[3][200];
            memset(cnt, 0, sizeof cnt);
            CHECK(r.npoints <= 200);
            for (int k = 0; k < 4; k++) {
                int g = host[k][0] == 'a' ? 1 : host[k][0] == 'b' ? 2 : 0;
                gp_eval_raw(&r, gp_eval_mode_for(agg), ts[k], vs[k], ns[k], val, has);
                for (size_t p = 0; p < r.npoints; p++) {
                    if (!has[p])
                        continue;
                    double x = val[p];
                    if (!cnt[g][p])
                        acc[g][p] = x;
                    else if (agg == GP_AGG_MIN)
                        acc[g][p] = x < acc[g][p] || isnan(acc[g][p]) ? x : acc[g][p];
                    else if (agg == GP_AGG_MAX)
                        acc[g][p] = x > acc[g][p] || isnan(acc[g][p]) ? x : acc[g][p];
                    else
                        acc[g][p] += x;
                    cnt[g][p]++;
                }
            }
            int rc;
            json_t *j = range(s, "ag", start, end, steps[si], agg, "Hostname", 0, &rc, err, sizeof err);
            if (!j)
                gp_test_fail(__FILE__, __LINE__, "agg %d step %lld: %s", (int)agg,
                             (long long)steps[si], err);
            json_t *res = result_of(j);
            CHECK_INT(json_array_size(res), 3);
            for (size_t gi = 0; gi < json_array_size(res); gi++) {
                json_t *e = json_array_get(res, gi);
                const char *hn = json_string_value(json_object_get(json_object_get(e, "metric"), "Hostname"));
                int g = !hn ? 0 : hn[0] == 'a' ? 1 : 2;
                CHECK_INT((size_t)g, gi); /* sorted by labels: {} first */
                json_t *vals = json_object_get(e, "values");
                size_t c = 0;
                for (size_t p = 0; p < r.npoints; p++) {
                    if (!cnt[g][p])
                        continue;
                    double want = agg == GP_AGG_COUNT ? cnt[g][p]
                                  : agg == GP_AGG_AVG ? acc[g][p] / cnt[g][p]
                                                      : acc[g][p];
                    json_t *pt = json_array_get(vals, c++);
                    CHECK_INT(jtime_ms(pt), start + (int64_t)p * steps[si]);
                    double got = jvalue(pt);
                    if (isnan(want))
                        CHECK(isnan(got));
                    else
                        CHECK_DBL(got, want, 1e-12 * fabs(want));
                }
                CHECK_INT(json_array_size(vals), c);
            }
            json_decref(j);
        }
        free(val);
        free(has);
    }
    gp_storage_close(s);
}

/* The agg form runs under the server's limits (q.lim): its samples cap
 * and timeout refuse as on query=, and its lookback decides when the
 * window holds it (and the fallback is left out) and how far back an
 * empty window looks. */
static void test_agg_server_limits(void)
{
    struct gp_storage *s = open_store();
    int64_t b = base_ms();
    const char *k0[] = {"__name__=lim", "Hostname=a", "gpu=0", NULL};
    int64_t t[60];
    double v[60];
    for (int i = 0; i < 60; i++) {
        t[i] = b + i * 10000; /* every 10 s for 10 minutes */
        v[i] = i;
    }
    put(s, k0, t, v, 60);
    size_t nm;
    struct gp_matcher *m = sel("lim", &nm);
    struct gp_promql_limits lim = {.max_samples = 5};
    struct gp_range_query q = {.m = m, .nm = nm, .start_ms = b, .end_ms = b + 590000,
                               .step_ms = 60000, .agg = GP_AGG_AVG, .rollups = 0, .lim = &lim};
    struct gp_buf out;
    gp_buf_init(&out, 0);
    char err[256] = "";
    /* 6 samples a window: over a cap of 5 */
    CHECK_INT(gp_query_range(s, &q, &out, err, sizeof err), GP_ERANGE);
    CHECK(strstr(err, "too many samples") != NULL);
    CHECK_INT(out.len, 0);
    lim.max_samples = 0;
    CHECK_INT(gp_query_range(s, &q, &out, err, sizeof err), GP_OK);
    /* a 30 s lookback: a step of 30 s holds it, so no fallback is written */
    lim.lookback_ms = 30000;
    q.step_ms = 30000;
    gp_buf_reset(&out);
    CHECK_INT(gp_query_form_promql(&q, &out), GP_OK);
    CHECK_STR(out.data, "avg (avg_over_time(lim[30s]))");
    /* a 4 s step: 10 s samples leave empty windows, which the 30 s
     * lookback fills (and a 5 s one would not) */
    q.step_ms = 4000;
    q.end_ms = b + 40000;
    for (int lb = 0; lb < 2; lb++) {
        lim.lookback_ms = lb ? 5000 : 30000;
        gp_buf_reset(&out);
        CHECK_INT(gp_query_range(s, &q, &out, err, sizeof err), GP_OK);
        json_error_t je;
        json_t *j = json_loadb(out.data, out.len, 0, &je);
        CHECK(j != NULL);
        json_t *vals = json_object_get(json_array_get(result_of(j), 0), "values");
        /* steps 0, 4, ..., 40 s: the windows (t - 4s, t] of steps 0, 12,
         * 20, 32 and 40 hold a sample; of the other six a 5 s lookback
         * reaches one at 4 and 24 only */
        CHECK_INT(json_array_size(vals), lb ? 5 + 2 : 11);
        json_decref(j);
    }
    gp_buf_free(&out);
    gp_matchers_free(m, nm);
    gp_storage_close(s);
}

/* Without agg the form is PromQL too, one metric name at a time: each
 * series keeps its __name__ (label_replace puts back what the window
 * function drops), a selector over several metrics answers every one of
 * them in label order, and a name's series that collide without
 * __name__ are no error. */
static void test_no_agg_by_name(void)
{
    struct gp_storage *s = open_store();
    int64_t b = base_ms();
    const char *k[3][4] = {{"__name__=m_b", "gpu=0", NULL}, {"__name__=m_a", "gpu=0", NULL},
                           {"__name__=m_a", "gpu=1", NULL}};
    for (int i = 0; i < 3; i++) {
        int64_t t[] = {b + 1000, b + 2000};
        double v[] = {i, i + 1};
        put(s, k[i], t, v, 2);
    }
    size_t nm;
    struct gp_matcher *m = sel("m_a{gpu=~\"0|1\"}", &nm);
    struct gp_range_query q = {.m = m, .nm = nm, .start_ms = b, .end_ms = b + 4000, .step_ms = 2000};
    struct gp_buf text;
    gp_buf_init(&text, 0);
    CHECK_INT(gp_query_form_promql(&q, &text), GP_OK);
    CHECK_STR(text.data, "label_replace(avg_over_time(m_a{gpu=~\"0|1\"}[2s]) or m_a{gpu=~\"0|1\"} * 1, "
                         "\"__name__\", \"m_a\", \"\", \"\")");
    gp_matchers_free(m, nm);
    /* not one name: no single PromQL expression */
    m = sel("{__name__=~\"m_.*\"}", &nm);
    q.m = m;
    q.nm = nm;
    gp_buf_reset(&text);
    CHECK_INT(gp_query_form_promql(&q, &text), GP_EUSAGE);
    gp_buf_free(&text);
    gp_matchers_free(m, nm);

    char err[256] = "";
    int rc;
    json_t *j = range(s, "{__name__=~\"m_.*\",gpu!=\"9\"}", b, b + 4000, 2000, GP_AGG_NONE, NULL, 0, &rc,
                      err, sizeof err);
    if (!j)
        gp_test_fail(__FILE__, __LINE__, "%s", err);
    json_t *res = result_of(j);
    CHECK_INT(json_array_size(res), 3);
    const char *want[3][2] = {{"m_a", "0"}, {"m_a", "1"}, {"m_b", "0"}};
    const double first[3] = {1.5, 2.5, 0.5}; /* step b+2000: (b, b+2000] holds both samples */
    for (size_t i = 0; i < 3; i++) {
        json_t *e = json_array_get(res, i);
        json_t *mt = json_object_get(e, "metric");
        CHECK_STR(json_string_value(json_object_get(mt, "__name__")), want[i][0]);
        CHECK_STR(json_string_value(json_object_get(mt, "gpu")), want[i][1]);
        json_t *vals = json_object_get(e, "values");
        CHECK_INT(json_array_size(vals), 2); /* b + 2000, and b + 4000 from the lookback */
        CHECK_DBL(jvalue(json_array_get(vals, 0)), first[i], 0);
    }
    json_decref(j);
    gp_storage_close(s);
}

const struct gp_test gp_tests_query[] = {
    {"range_exact_envelope", test_range_exact_envelope},
    {"range_matches_samples", test_range_matches_samples},
    {"parallel_batches", test_parallel_batches},
    {"agg_is_promql", test_agg_is_promql},
    {"agg_server_limits", test_agg_server_limits},
    {"no_agg_by_name", test_no_agg_by_name},
    {"grouping_every_agg", test_grouping_every_agg},
    {"min_max_keep_peaks", test_min_max_keep_peaks},
    {"rollups_equal_raw", test_rollups_equal_raw},
    {"rollups_after_raw_expired", test_rollups_after_raw_expired},
    {"special_values_and_staleness", test_special_values_and_staleness},
    {"limits_and_errors", test_limits_and_errors},
    {"series_cap", test_series_cap},
    {"hostile_labels", test_hostile_labels},
    {"series_labels_values", test_series_labels_values},
    {"inventory", test_inventory},
    {"inventory_empty", test_inventory_empty},
    {"inventory_kept", test_inventory_kept},
    {0},
};
