/*
 * store_perf.c - measures the embedded store: ingest samples/s for
 * 1,000-series x 1-sample and 100-series x 100-sample requests (with and
 * without fsync), bytes per sample on disk after compaction on GPU-like
 * gauges at a 1 s interval, and raw read speed.
 *
 * Not part of the test suite (numbers, not checks). Build and run:
 *
 *   make build/rel/libgpulse.a
 *   cc -std=c11 -D_GNU_SOURCE -O2 -Isrc -pthread tests/perf/store_perf.c \
 *      build/rel/libgpulse.a $(pkg-config --libs sqlite3 snappy) -lm -o build/store-perf
 *   build/store-perf /path/to/scratch/dir
 *
 * The data: per GPU, utilization % (integer, a random walk with bursts),
 * temperature °C (integer, drifting with load), power W (NVML's milliwatts
 * as W: three decimals, following load with noise), SM clock MHz (steps)
 * and framebuffer used MiB (steps) - the DCGM gauges that dominate a
 * GPU fleet's samples.
 */
#include "lib/err.h"
#include "store/store.h"

#include <dirent.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
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
static double urand(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

#define NMETRIC 5
static const char *const metric_names[NMETRIC] = {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP",
                                                  "DCGM_FI_DEV_POWER_USAGE",
                                                  "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_FB_USED"};

struct gpu {
    double util, temp, mem;
    int clock;
};

/* Advances one GPU by a second and writes its five gauges into v. */
static void gpu_step(struct gpu *g, double *v)
{
    if (urand() < 0.01)
        g->util = urand() < 0.5 ? 0 : 60 + 40 * urand(); /* job starts/ends */
    g->util += (urand() - 0.5) * 8;
    if (g->util < 0)
        g->util = 0;
    if (g->util > 100)
        g->util = 100;
    double target = 35 + g->util * 0.45;
    g->temp += (target - g->temp) * 0.02 + (urand() - 0.5) * 0.3;
    if (urand() < 0.005)
        g->clock = g->util > 10 ? 1980 - 15 * (int)(urand() * 10) : 345;
    if (urand() < 0.003)
        g->mem = floor(urand() * 80000);
    v[0] = floor(g->util);
    v[1] = floor(g->temp);
    v[2] = floor((70 + g->util * 6.3 + (urand() - 0.5) * 20) * 1000) / 1000; /* W, 3 decimals */
    v[3] = g->clock;
    v[4] = g->mem;
}

/* A request of nseries series (names metric k % 5, gpu k / 5), per samples each. */
struct req {
    struct gp_batch r;
    struct gp_series *s;
    struct gp_label *l;
    struct gp_sample *smp;
    char *str;
};

static void req_init(struct req *q, size_t nseries, size_t per, size_t first)
{
    q->s = calloc(nseries, sizeof *q->s);
    q->l = calloc(nseries * 4, sizeof *q->l);
    q->smp = calloc(nseries * per, sizeof *q->smp);
    q->str = calloc(nseries, 64);
    for (size_t i = 0; i < nseries; i++) {
        size_t k = first + i;
        char *s = q->str + i * 64;
        int a = snprintf(s, 16, "%zu", (k / NMETRIC) % 8);
        int b = snprintf(s + 16, 48, "node-%04zu", k / NMETRIC / 8);
        const char *m = metric_names[k % NMETRIC];
        struct gp_label *l = q->l + i * 4;
        l[0] = (struct gp_label){{"__name__", 8}, {m, strlen(m)}};
        l[1] = (struct gp_label){{"gpu", 3}, {s, (size_t)a}};
        l[2] = (struct gp_label){{"instance", 8}, {s + 16, (size_t)b}};
        l[3] = (struct gp_label){{"job", 3}, {"dcgm", 4}};
        q->s[i] = (struct gp_series){l, 4, q->smp + i * per, per};
    }
    q->r = (struct gp_batch){q->s, nseries, nseries * 4, nseries * per, NULL};
}

static void req_free(struct req *q)
{
    free(q->s);
    free(q->l);
    free(q->smp);
    free(q->str);
}

static void rmrf(const char *path)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", path);
}

static uint64_t du(const char *dir, const char *sub)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    DIR *d = opendir(path);
    uint64_t total = 0;
    if (!d)
        return 0;
    for (struct dirent *de; (de = readdir(d));) {
        char f[2048];
        struct stat st;
        snprintf(f, sizeof f, "%s/%s", path, de->d_name);
        if (de->d_name[0] != '.' && stat(f, &st) == 0)
            total += (uint64_t)st.st_size;
    }
    closedir(d);
    return total;
}

static struct gp_store *open_store(const char *dir, int no_sync)
{
    struct gp_store_options o = {.dir = dir, .no_sync = no_sync, .no_background = 1};
    struct gp_store *s;
    char err[512];
    if (gp_store_open(&s, &o, err, sizeof err) != GP_OK) {
        fprintf(stderr, "open: %s\n", err);
        exit(1);
    }
    return s;
}

/* Ingest: nreq requests of nseries x per samples; returns samples/s. */
static double ingest(const char *dir, size_t nseries, size_t per, size_t nreq, int no_sync)
{
    rmrf(dir);
    struct gp_store *s = open_store(dir, no_sync);
    struct req q;
    req_init(&q, nseries, per, 0);
    struct gpu *g = calloc(nseries / NMETRIC + 1, sizeof *g);
    int64_t t = (int64_t)time(NULL) * 1000 - (int64_t)(nreq * per) * 1000;
    double vals[NMETRIC], busy = 0;
    uint64_t total = 0;
    for (size_t r = 0; r < nreq; r++) {
        for (size_t j = 0; j < per; j++, t += 1000)
            for (size_t i = 0; i < nseries; i += NMETRIC) {
                gpu_step(&g[i / NMETRIC], vals);
                for (size_t m = 0; m < NMETRIC && i + m < nseries; m++)
                    q.smp[(i + m) * per + j] = (struct gp_sample){vals[m], t};
            }
        struct gp_append_result res;
        char err[256];
        double a = now_s();
        if (gp_store_append(s, &q.r, &res, err, sizeof err) != GP_OK) {
            fprintf(stderr, "append: %s\n", err);
            exit(1);
        }
        busy += now_s() - a;
        total += res.accepted;
    }
    gp_store_close(s);
    req_free(&q);
    free(g);
    return (double)total / busy;
}

/* Several appender threads at once, each with its own 1,000 series. */
struct thr {
    struct gp_store *s;
    size_t first, nreq;
    uint64_t accepted;
};

static void *thr_main(void *arg)
{
    struct thr *t = arg;
    struct req q;
    req_init(&q, 1000, 1, t->first);
    int64_t ts = (int64_t)time(NULL) * 1000 - (int64_t)t->nreq * 1000;
    for (size_t r = 0; r < t->nreq; r++, ts += 1000) {
        for (size_t i = 0; i < 1000; i++)
            q.smp[i] = (struct gp_sample){(double)((i + r) % 100), ts};
        struct gp_append_result res;
        char err[256];
        if (gp_store_append(t->s, &q.r, &res, err, sizeof err) != GP_OK)
            exit(1);
        t->accepted += res.accepted;
    }
    req_free(&q);
    return NULL;
}

static double ingest_threads(const char *dir, int nthreads, size_t nreq, int no_sync)
{
    rmrf(dir);
    struct gp_store *s = open_store(dir, no_sync);
    struct thr t[16];
    pthread_t th[16];
    double a = now_s();
    for (int i = 0; i < nthreads; i++) {
        t[i] = (struct thr){s, (size_t)i * 1000, nreq, 0};
        pthread_create(&th[i], NULL, thr_main, &t[i]);
    }
    uint64_t total = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(th[i], NULL);
        total += t[i].accepted;
    }
    double el = now_s() - a;
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    printf("  (%llu fdatasyncs for %d x %zu requests)\n", (unsigned long long)st.wal_syncs,
           nthreads, nreq);
    gp_store_close(s);
    return (double)total / el;
}

/* A checkpoint of many series with open heads: its total time. */
static void checkpoint_cost(const char *dir, size_t nseries)
{
    rmrf(dir);
    struct gp_store *s = open_store(dir, 1);
    struct req q;
    req_init(&q, nseries, 30, 0);
    int64_t t = (int64_t)time(NULL) * 1000;
    t -= t % (2 * 3600 * 1000);
    for (size_t i = 0; i < nseries * 30; i++)
        q.smp[i] = (struct gp_sample){(double)(i % 97), t + (int64_t)(i % 30) * 1000};
    struct gp_append_result res;
    char err[256];
    gp_store_append(s, &q.r, &res, err, sizeof err);
    double a = now_s();
    gp_store_maintain(s, 1);
    printf("checkpoint of %zu series with open heads: %.0f ms\n", nseries, (now_s() - a) * 1000);
    gp_store_close(s);
    req_free(&q);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
        return 2;
    }
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/store-perf", argv[1]);

    printf("ingest, one thread, samples/s (time inside gp_store_append):\n");
    printf("  1000 series x 1 sample,    no fsync: %10.0f\n", ingest(dir, 1000, 1, 3000, 1));
    printf("  100 series x 100 samples,  no fsync: %10.0f\n", ingest(dir, 100, 100, 300, 1));
    printf("  1000 series x 1 sample,    fsync:    %10.0f\n", ingest(dir, 1000, 1, 300, 0));
    printf("  100 series x 100 samples,  fsync:    %10.0f\n", ingest(dir, 100, 100, 100, 0));
    printf("ingest, 8 threads of 1000 series x 1 sample, fsync (group commit), samples/s:\n");
    printf("  %10.0f\n", ingest_threads(dir, 8, 200, 0));
    checkpoint_cost(dir, 100000);

    /* Bytes per sample: 512 GPU series (about 100 GPUs x 5 gauges),
     * 4 hours at 1 s, then compaction of the complete 2-hour windows. */
    rmrf(dir);
    struct gp_store *s = open_store(dir, 1);
    size_t nseries = 512, hours = 4;
    struct req q;
    req_init(&q, nseries, 60, 0);
    struct gpu *g = calloc(nseries / NMETRIC + 1, sizeof *g);
    int64_t end = (int64_t)time(NULL) * 1000;
    end -= end % (2 * 3600 * 1000);
    int64_t t = end - (int64_t)hours * 3600 * 1000;
    double vals[NMETRIC];
    for (size_t r = 0; r < hours * 60; r++) {
        for (size_t j = 0; j < 60; j++, t += 1000)
            for (size_t i = 0; i < nseries; i += NMETRIC) {
                gpu_step(&g[i / NMETRIC], vals);
                for (size_t m = 0; m < NMETRIC && i + m < nseries; m++)
                    q.smp[(i + m) * 60 + j] = (struct gp_sample){vals[m], t};
            }
        struct gp_append_result res;
        char err[256];
        if (gp_store_append(s, &q.r, &res, err, sizeof err) != GP_OK || res.accepted != nseries * 60) {
            fprintf(stderr, "append: %s\n", err);
            return 1;
        }
    }
    gp_store_maintain(s, 1);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    uint64_t samples = (uint64_t)nseries * hours * 3600;
    uint64_t blocks = du(dir, "blocks"), rollups = du(dir, "rollups");
    printf("compaction: %llu blocks, %llu samples\n", (unsigned long long)st.blocks,
           (unsigned long long)samples);
    printf("  bytes/sample, blocks (chunks + index):  %.3f\n", (double)blocks / (double)samples);
    printf("  bytes/sample, with 1-minute rollups:    %.3f\n",
           (double)(blocks + rollups) / (double)samples);

    /* Read speed: every series, the whole range, from blocks. */
    struct gp_store_selection sl;
    gp_store_select(s, NULL, 0, INT64_MIN, INT64_MAX, &sl);
    double a = now_s();
    uint64_t got = 0;
    struct gp_samples x = {0};
    for (int rep = 0; rep < 3; rep++)
        for (size_t i = 0; i < sl.n; i++) {
            x.n = 0;
            gp_store_read(s, sl.series[i].id, INT64_MIN, INT64_MAX, &x);
            got += x.n;
        }
    double el = now_s() - a;
    printf("read: %.0f samples/s decoded (%llu samples)\n", (double)got / el,
           (unsigned long long)got);
    a = now_s();
    struct gp_rollups ru = {0};
    uint64_t minutes = 0;
    for (size_t i = 0; i < sl.n; i++) {
        ru.n = 0;
        gp_store_read_rollups(s, sl.series[i].id, INT64_MIN / 2, INT64_MAX / 2, &ru);
        minutes += ru.n;
    }
    el = now_s() - a;
    printf("read rollups: %.0f minutes/s (%llu minutes)\n", (double)minutes / el,
           (unsigned long long)minutes);
    gp_samples_free(&x);
    gp_rollups_free(&ru);
    gp_store_selection_free(&sl);
    gp_store_close(s);
    req_free(&q);
    free(g);
    rmrf(dir);
    return 0;
}
