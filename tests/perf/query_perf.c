/*
 * query_perf.c - measures range queries end to end (select, read,
 * evaluate, JSON) on the benchmark shape: 512 GPU series (64
 * nodes x 8 GPUs) of 1 s samples over one hour (1.8 million samples), a
 * 1-hour range at 15 s step, for one series and for avg by (Hostname);
 * also at a 1-minute step (rollups) and without aggregation, and the
 * PromQL of bench/promql.sh through the engine. Each query is
 * timed twice: with the hour still in the in-memory head, and after
 * compaction into blocks and rollup files.
 *
 * Not part of the test suite (numbers, not checks). Build and run:
 *
 *   make build/rel/libgpulse.a
 *   cc -std=c11 -D_GNU_SOURCE -O2 -Isrc -pthread tests/perf/query_perf.c \
 *      build/rel/libgpulse.a $(pkg-config --libs sqlite3 snappy yaml-0.1 libcurl jansson) \
 *      -lm -o build/query-perf
 *   build/query-perf /path/to/scratch/dir
 *
 * Each line gives the best wall time and the best CPU time (every
 * thread) of its runs.
 *
 * QUERY_PERF_METRICS=12 stores 12 gauges per GPU (as bench/fleetgen
 * does) while querying the one.
 */
#include "lib/err.h"
#include "query/promql.h"
#include "query/query.h"
#include "storage/storage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NODES 64
#define GPUS 8
#define SECONDS 3600

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CPU time of the process (every thread): on a shared machine a steadier
 * figure than the wall clock. */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rng = 88172645463325252ULL;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* One hour of DCGM_FI_DEV_GPU_UTIL (and, with metric > 0, of other
 * gauges named DCGM_FI_DEV_GAUGE_<metric>) for every GPU, appended a
 * minute of all its series per request (as agents batch). */
static int fill(struct gp_storage *s, int64_t t0, int metric)
{
    enum { N = NODES * GPUS, PER = 60 };
    static char host[N][16], gpu[N][8], name[32];
    if (metric)
        snprintf(name, sizeof name, "DCGM_FI_DEV_GAUGE_%d", metric);
    else
        snprintf(name, sizeof name, "DCGM_FI_DEV_GPU_UTIL");
    struct gp_label *l = calloc(3 * N, sizeof *l);
    struct gp_series *ser = calloc(N, sizeof *ser);
    struct gp_sample *smp = calloc((size_t)N * PER, sizeof *smp);
    double *util = calloc(N, sizeof *util);
    if (!l || !ser || !smp || !util)
        return GP_ENOMEM;
    for (int i = 0; i < N; i++) {
        snprintf(host[i], sizeof host[i], "node-%02d", i / GPUS);
        snprintf(gpu[i], sizeof gpu[i], "%d", i % GPUS);
        l[3 * i] = (struct gp_label){{"Hostname", 8}, {host[i], strlen(host[i])}};
        l[3 * i + 1] = (struct gp_label){{"__name__", 8}, {name, strlen(name)}};
        l[3 * i + 2] = (struct gp_label){{"gpu", 3}, {gpu[i], strlen(gpu[i])}};
        util[i] = 50;
    }
    int rc = GP_OK;
    for (int m = 0; m < SECONDS / PER && !rc; m++) {
        for (int i = 0; i < N; i++) {
            for (int k = 0; k < PER; k++) {
                util[i] += (double)((int)(rnd() % 11) - 5);
                util[i] = util[i] < 0 ? 0 : util[i] > 100 ? 100 : util[i];
                smp[(size_t)i * PER + k] =
                    (struct gp_sample){util[i], t0 + ((int64_t)m * PER + k) * 1000};
            }
            ser[i] = (struct gp_series){&l[3 * i], 3, &smp[(size_t)i * PER], PER};
        }
        struct gp_batch req = {ser, N, 3 * N, (size_t)N * PER, NULL};
        struct gp_append_result res;
        char err[256];
        rc = gp_storage_append(s, &req, &res, err, sizeof err);
        if (!rc && res.accepted != (uint64_t)N * PER) {
            fprintf(stderr, "append: only %llu accepted\n", (unsigned long long)res.accepted);
            rc = GP_EINTERNAL;
        }
    }
    free(l);
    free(ser);
    free(smp);
    free(util);
    return rc;
}

/* Best of reps runs of one query; prints ms and the answer's size. */
static void bench(struct gp_storage *s, const char *what, const char *selector, int64_t start,
                  int64_t step, enum gp_agg agg, const char *by)
{
    struct gp_matcher *m = NULL;
    size_t nm = 0;
    char err[256];
    if (gp_selector_parse(selector, strlen(selector), &m, &nm, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", selector, err);
        exit(1);
    }
    struct gp_range_query q;
    memset(&q, 0, sizeof q);
    q.m = m;
    q.nm = nm;
    q.start_ms = start;
    q.end_ms = start + SECONDS * 1000;
    q.step_ms = step;
    q.agg = agg;
    q.rollups = -1;
    if (by) {
        q.by[0] = by;
        q.nby = 1;
    }
    struct gp_buf out;
    gp_buf_init(&out, 0);
    double best = 1e9, best_cpu = 1e9;
    for (int rep = 0; rep < 15; rep++) {
        gp_buf_reset(&out);
        double t0 = now_s(), c0 = cpu_s();
        if (gp_query_range(s, &q, &out, err, sizeof err)) {
            fprintf(stderr, "%s: %s\n", what, err);
            exit(1);
        }
        double dt = now_s() - t0, dc = cpu_s() - c0;
        if (dt < best)
            best = dt;
        if (dc < best_cpu)
            best_cpu = dc;
    }
    printf("  %-44s %8.3f ms  cpu %8.3f ms  (%zu bytes of JSON)\n", what, best * 1e3,
           best_cpu * 1e3, out.len);
    gp_buf_free(&out);
    gp_matchers_free(m, nm);
}

/* Best of reps runs of a PromQL range query (parse, evaluate, JSON). */
static void bench_promql(struct gp_storage *s, const char *what, const char *text, int64_t start,
                         int64_t step)
{
    struct gp_buf out;
    gp_buf_init(&out, 0);
    double best = 1e9, best_cpu = 1e9;
    char err[256];
    for (int rep = 0; rep < 15; rep++) {
        gp_buf_reset(&out);
        double t0 = now_s(), c0 = cpu_s();
        struct gp_pq_node *e = NULL;
        struct gp_promql_result res;
        if (gp_promql_parse(text, strlen(text), &e, err, sizeof err) ||
            gp_promql_range(s, e, start, start + SECONDS * 1000, step, NULL, &res, err, sizeof err)) {
            fprintf(stderr, "%s: %s\n", what, err);
            exit(1);
        }
        gp_promql_render(&res, &out);
        gp_promql_result_free(&res);
        gp_promql_free(e);
        double dt = now_s() - t0, dc = cpu_s() - c0;
        if (dt < best)
            best = dt;
        if (dc < best_cpu)
            best_cpu = dc;
    }
    printf("  %-44s %8.3f ms  cpu %8.3f ms  (%zu bytes of JSON)\n", what, best * 1e3,
           best_cpu * 1e3, out.len);
    gp_buf_free(&out);
}

static void run_all(struct gp_storage *s, int64_t t0)
{
    /* QUERY_PERF_AVG_S=N: only the PromQL avg query, for N seconds (to
     * profile it with perf record -p). */
    const char *only = getenv("QUERY_PERF_AVG_S");
    if (only) {
        double until = now_s() + atof(only);
        while (now_s() < until)
            bench_promql(s, "PromQL avg by (Hostname) (X), 1h at 15s",
                         "avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)", t0, 15000);
        return;
    }
    bench(s, "one series, 1h at 15s", "DCGM_FI_DEV_GPU_UTIL{Hostname=\"node-07\",gpu=\"3\"}", t0,
          15000, GP_AGG_NONE, NULL);
    bench(s, "avg by (Hostname), 512 series, 1h at 15s", "DCGM_FI_DEV_GPU_UTIL", t0, 15000,
          GP_AGG_AVG, "Hostname");
    bench(s, "max by (Hostname), 512 series, 1h at 15s", "DCGM_FI_DEV_GPU_UTIL", t0, 15000,
          GP_AGG_MAX, "Hostname");
    bench(s, "avg by (Hostname), 512 series, 1h at 1m", "DCGM_FI_DEV_GPU_UTIL", t0, 60000,
          GP_AGG_AVG, "Hostname");
    bench(s, "512 series, no agg, 1h at 15s", "DCGM_FI_DEV_GPU_UTIL", t0, 15000, GP_AGG_NONE, NULL);
    bench_promql(s, "PromQL avg by (Hostname) (X), 1h at 15s",
                 "avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)", t0, 15000);
    /* X is a gauge: a drop in every window, so rate scans each one */
    bench_promql(s, "PromQL sum by (H) (rate(gauge[5m])), 1h/15s",
                 "sum by (Hostname) (rate(DCGM_FI_DEV_GPU_UTIL[5m]))", t0, 15000);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s SCRATCH_DIR (created; must not hold a store)\n", argv[0]);
        return 2;
    }
    struct gp_store_options o;
    memset(&o, 0, sizeof o);
    o.dir = argv[1];
    o.no_sync = 1;
    o.no_background = 1;
    struct gp_storage *s;
    char err[256];
    if (gp_storage_open(&s, &(struct gp_storage_options){.store = o}, err, sizeof err)) {
        fprintf(stderr, "open: %s\n", err);
        return 1;
    }
    /* An hour that starts on a whole hour, 4 hours ago: old enough for
     * the default 2-hour blocks to compact it. */
    int64_t t0 = ((int64_t)time(NULL) / 3600 - 4) * 3600000;
    /* QUERY_PERF_METRICS=12: as many gauges per GPU as bench/fleetgen. */
    const char *env = getenv("QUERY_PERF_METRICS");
    int metrics = env ? atoi(env) : 1;
    metrics = metrics < 1 ? 1 : metrics > 64 ? 64 : metrics;
    double f0 = now_s();
    for (int k = 0; k < metrics; k++)
        if (fill(s, t0, k)) {
            fprintf(stderr, "fill failed\n");
            return 1;
        }
    printf("stored %d series x %d samples in %.2f s\n", NODES * GPUS * metrics, SECONDS,
           now_s() - f0);
    printf("head (in memory):\n");
    run_all(s, t0);
    gp_store_maintain(gp_storage_store(s), 1);
    struct gp_store_stats st;
    gp_storage_stats(s, &st);
    printf("compacted (%llu blocks):\n", (unsigned long long)st.blocks);
    run_all(s, t0);
    gp_storage_close(s);
    return 0;
}
