/*
 * Fuzz target: PromQL evaluation (src/query/promql_eval.c, promql_select.c,
 * promql_call.c, promql_binop.c, promql_agg.c, promql_json.c). Any bytes
 * that parse are evaluated over a small store (made once, in a temporary
 * directory) with tight limits, as an instant query and, for scalar and
 * instant-vector expressions, as a range query. abort() when:
 *   - an error is not one the engine documents, or has no message;
 *   - an answer does not render, or renders to invalid JSON;
 *   - a range answer's series are not strictly sorted by labels, or a
 *     series' times are not strictly increasing steps of the grid;
 *   - the range answer at a step differs from the instant query there,
 *     beyond 1e-9 relative (queries with @ start()/end() excepted: those
 *     move with the range).
 * The corpus holds expressions of the differential test's corpus, whose
 * metric names the store's series carry.
 */
#include "lib/bits.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "lib/log.h"
#include "query/promql.h"
#include "query/promql_int.h"
#include "storage/storage.h"
#include "store/matcher.h"

#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define T0 1699999200000LL
#define STEP 15000LL
#define NPTS 80 /* 20 minutes */

static struct gp_storage *st;
static char dir[64];

static int64_t fz_clock(void)
{
    return T0 + 3600 * 1000LL;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
    (void)sb;
    (void)flag;
    (void)f;
    return remove(p);
}

static void teardown(void)
{
    gp_storage_close(st);
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* One series named by sel with value fn(i) at T0 + i * STEP. */
static void add(const char *sel, double (*fn)(int i, int k), int k)
{
    struct gp_matcher *m = NULL;
    size_t nm = 0;
    char err[256];
    if (gp_selector_parse(sel, strlen(sel), &m, &nm, err, sizeof err) != GP_OK)
        abort();
    struct gp_label l[8];
    for (size_t i = 0; i < nm; i++)
        l[i] = (struct gp_label){{m[i].name, strlen(m[i].name)}, {m[i].value, m[i].value_len}};
    for (size_t i = 1; i < nm; i++) /* insertion sort by name */
        for (size_t j = i; j > 0 && strcmp(l[j - 1].name.ptr, l[j].name.ptr) > 0; j--) {
            struct gp_label x = l[j];
            l[j] = l[j - 1];
            l[j - 1] = x;
        }
    struct gp_sample smp[NPTS];
    size_t n = 0;
    for (int i = 0; i < NPTS; i++) {
        double v = fn(i, k);
        if (v == -12345) /* no sample */
            continue;
        smp[n++] = (struct gp_sample){v, T0 + i * STEP};
    }
    struct gp_series ser = {l, nm, smp, n};
    struct gp_batch req = {&ser, 1, nm, n, NULL};
    struct gp_append_result res;
    if (gp_storage_append(st, &req, &res, err, sizeof err) != GP_OK)
        abort();
    gp_matchers_free(m, nm);
}

static double gauge(int i, int k)
{
    return (double)((i * 7 + k * 13) % 23) - 3.5;
}
static double counter(int i, int k)
{
    return i < 50 || k ? i * (k + 1.5) : (i - 50) * 2.0; /* k 0 resets at 50 */
}
static double stale(int i, int k)
{
    if (i == 30 + k * 10)
        return gp_bits_f64(GP_STALE_NAN_BITS);
    return i > 30 + k * 10 && i < 45 ? -12345 : i;
}
static double special(int i, int k)
{
    static const double v[] = {NAN, INFINITY, -INFINITY, 0};
    return i % 3 == 0 ? v[k] : i;
}
static double one(int i, int k)
{
    (void)i;
    (void)k;
    return 1;
}
static double bucket(int i, int k)
{
    return (double)(i * (k + 1));
}
static double lonely(int i, int k)
{
    (void)k;
    return i == 40 ? 42 : -12345;
}

static void setup(void)
{
    gp_log_min = GP_LOG_WARN; /* the store's open lines are not news here */
    snprintf(dir, sizeof dir, "/tmp/fuzz-promql-eval-XXXXXX");
    if (!mkdtemp(dir))
        abort();
    struct gp_store_options o;
    memset(&o, 0, sizeof o);
    o.dir = dir;
    o.no_sync = 1;
    o.no_background = 1;
    o.max_future_ms = -1;
    o.clock_ms = fz_clock;
    char err[256];
    if (gp_storage_open(&st, &(struct gp_storage_options){.store = o}, err, sizeof err) != GP_OK)
        abort();
    atexit(teardown);
    const char *inst[] = {"a", "b", "c"};
    char sel[160];
    for (int k = 0; k < 3; k++) {
        snprintf(sel, sizeof sel, "diff_gauge{job=\"node\",instance=\"%s\"}", inst[k]);
        add(sel, gauge, k);
        snprintf(sel, sizeof sel, "diff_requests_total{job=\"api\",instance=\"%s\",code=\"200\"}",
                 inst[k]);
        add(sel, counter, k);
        snprintf(sel, sizeof sel, "diff_info{instance=\"%s\",node=\"n%d\",role=\"r\"}", inst[k], k % 2);
        add(sel, one, k);
        snprintf(sel, sizeof sel, "diff_labels{src=\"%s-%d\",dst=\"x\",path=\"/api/v%d\"}", inst[k], k,
                 k);
        add(sel, one, k);
    }
    add("diff_stale{instance=\"a\"}", stale, 0);
    add("diff_stale{instance=\"b\"}", stale, 1);
    add("diff_special{kind=\"nan\"}", special, 0);
    add("diff_special{kind=\"inf\"}", special, 1);
    add("diff_special{kind=\"neginf\"}", special, 2);
    add("diff_special{kind=\"zero\"}", special, 3);
    add("diff_latency_seconds_bucket{instance=\"a\",le=\"0.1\"}", bucket, 0);
    add("diff_latency_seconds_bucket{instance=\"a\",le=\"1\"}", bucket, 1);
    add("diff_latency_seconds_bucket{instance=\"a\",le=\"+Inf\"}", bucket, 2);
    add("diff_dup_a{x=\"1\"}", gauge, 0);
    add("diff_dup_b{x=\"1\"}", gauge, 1);
    add("diff_lonely", lonely, 0);
}

static int known_error(int rc)
{
    return rc == GP_EINTERNAL || rc == GP_ERANGE || rc == GP_EUNSUPPORTED || rc == GP_ENOMEM ||
           rc == GP_PROMQL_ETIMEOUT || rc == GP_EUSAGE;
}

static void check_render(const struct gp_promql_result *r)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    if (gp_promql_render(r, &b) != GP_OK)
        abort();
    json_error_t je;
    json_t *j = json_loadb(b.data, b.len, 0, &je);
    if (!j)
        abort();
    json_decref(j);
    gp_buf_free(&b);
}

/* Equal within the differential test's 1e-9: the order an aggregation
 * meets its input in may differ in the last bits (sort() orders an
 * instant query's input, a range query's steps keep label order). */
static int same(double a, double b)
{
    return a == b || (isnan(a) && isnan(b)) || fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

/* The range answer at time t against the instant query at t. */
static void check_step(struct gp_pq_node *e, const struct gp_promql_result *r, int64_t t,
                       const struct gp_promql_limits *lim)
{
    struct gp_promql_result in;
    char err[512];
    if (gp_promql_instant(st, e, t, lim, &in, err, sizeof err) != GP_OK) {
        gp_promql_result_free(&in);
        return; /* the limits can bite one way only */
    }
    size_t found = 0;
    for (size_t i = 0; i < r->n; i++)
        for (size_t k = 0; k < r->series[i].n; k++) {
            if (r->series[i].t[k] != t)
                continue;
            found++;
            double want = r->series[i].v[k];
            if (in.type == GP_PROMQL_SCALAR) {
                if (!same(in.scalar, want))
                    abort();
                continue;
            }
            size_t j = 0;
            while (j < in.n && gp_pq_labels_cmp(in.series[j].labels, in.series[j].labels_len,
                                                r->series[i].labels, r->series[i].labels_len))
                j++;
            if (j == in.n || !same(in.series[j].v[0], want))
                abort();
        }
    if (found != (in.type == GP_PROMQL_SCALAR ? 1 : in.n))
        abort();
    gp_promql_result_free(&in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!st)
        setup();
    struct gp_pq_node *e = NULL;
    char err[512];
    if (gp_promql_parse((const char *)data, size, &e, err, sizeof err) != GP_OK)
        return 0;
    struct gp_promql_limits lim = {.max_samples = 200000, .timeout_ms = 5000};
    struct gp_promql_result r;
    err[0] = '\0';
    int rc = gp_promql_instant(st, e, T0 + 10 * 60000 + 7321, &lim, &r, err, sizeof err);
    if (getenv("FUZZ_PROMQL_EVAL_SHOW")) /* what each corpus entry answers */
        fprintf(stderr, "%.*s => rc %d, %zu series %s\n", (int)size, (const char *)data, rc, r.n,
                err);
    if (rc != GP_OK && (!known_error(rc) || !err[0]))
        abort();
    if (rc == GP_OK)
        check_render(&r);
    gp_promql_result_free(&r);
    if (e->type == GP_PQ_T_SCALAR || e->type == GP_PQ_T_VECTOR) {
        int64_t start = T0 - 120000, end = T0 + 22 * 60000, step = 60000;
        err[0] = '\0';
        rc = gp_promql_range(st, e, start, end, step, &lim, &r, err, sizeof err);
        if (rc != GP_OK && (!known_error(rc) || !err[0]))
            abort();
        if (rc == GP_OK) {
            check_render(&r);
            for (size_t i = 0; i < r.n; i++) {
                const struct gp_promql_series *s = r.series + i;
                if (!s->n || (i && gp_pq_labels_cmp(r.series[i - 1].labels, r.series[i - 1].labels_len,
                                                    s->labels, s->labels_len) >= 0))
                    abort();
                for (size_t k = 0; k < s->n; k++)
                    if ((s->t[k] - start) % step || s->t[k] > end || (k && s->t[k] <= s->t[k - 1]))
                        abort();
            }
            /* @ start()/end() mean other times in an instant query. */
            if (!memmem(data, size, "start(", 6) && !memmem(data, size, "end(", 4))
                for (int64_t t = start; t <= end; t += 7 * step)
                    check_step(e, &r, t, &lim);
        }
        gp_promql_result_free(&r);
    }
    gp_promql_free(e);
    return 0;
}
