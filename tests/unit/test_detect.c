/*
 * test_detect.c - the built-in detectors (detect_*.c): for each, a view
 * built by hand where it must fire and one where it must stay silent,
 * hysteresis through the engine's `active` answer, and the detector
 * table's defaults.
 *
 * The baseline is a healthy compute-bound job on H100s (SM activity
 * ~0.9, tensor pipes busy, 60 of 80 GiB, cool, full clocks, no errors,
 * steady steps); each scenario changes the few series it is about, so
 * every other detector's silence on the baseline is checked too
 * (test_healthy_job_is_silent).
 */
#include "insight/detect.h"
#include "insight/view.h"

#include "lib/duration.h"
#include "lib/err.h"
#include "query/goodput.h"
#include "test.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#define NPTS 40
#define STEP_MS 15000
#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)

/* What the detectors emitted in one run. */
static struct gp_observation obs[512];
static unsigned nobs;
static bool all_active;  /* the engine's answer to active() */
static bool fail_emit;

static int emit_cb(void *ctx, const struct gp_observation *o)
{
    (void)ctx;
    if (fail_emit)
        return GP_ENOMEM;
    CHECK(nobs < sizeof obs / sizeof obs[0]);
    obs[nobs++] = *o;
    return GP_OK;
}

static bool active_cb(void *ctx, const struct gp_obs_key *k)
{
    (void)ctx;
    (void)k;
    return all_active;
}

/* Runs detector d with its default settings; returns its result. */
static int run(enum gp_detector d, const struct gp_view *v)
{
    struct gp_detector_cfg cfg[GP_DET__COUNT];
    gp_detector_cfg_defaults(cfg);
    struct gp_detect_ctx c = {v, &cfg[d], active_cb, NULL, emit_cb, NULL};
    nobs = 0;
    return gp_detect_fns[d](&c);
}

/* The observation about GPU gpu of node (or NULL). */
static const struct gp_observation *about_gpu(const char *node, const char *gpu)
{
    for (unsigned i = 0; i < nobs; i++)
        if (!strcmp(obs[i].key.node, node) && !strcmp(obs[i].key.gpu, gpu))
            return &obs[i];
    return NULL;
}

static const struct gp_observation *about_rank(const char *job, int rank)
{
    for (unsigned i = 0; i < nobs; i++)
        if (!strcmp(obs[i].key.job, job) && obs[i].key.rank == rank)
            return &obs[i];
    return NULL;
}

static unsigned nbad(void)
{
    unsigned n = 0;
    for (unsigned i = 0; i < nobs; i++)
        n += obs[i].bad;
    return n;
}

/* Deterministic noise in [-1, 1]. */
static double noise(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return ((*s >> 8) & 0xffff) / 32767.5 - 1.0;
}

static void fill(struct gp_view *v, struct gp_view_gpu *g, enum gp_vgm m, double x)
{
    double *s = gp_view_gpu_series(v, g, m);
    for (unsigned k = 0; k < v->npoints; k++)
        s[k] = x;
}

static void fillp(struct gp_view *v, struct gp_view_proc *p, enum gp_vpm m, double x)
{
    double *s = gp_view_proc_series(v, p, m);
    for (unsigned k = 0; k < v->npoints; k++)
        s[k] = x;
}

/* A healthy busy H100 of job (rank) on node. Pointer valid until the next add. */
static struct gp_view_gpu *add_gpu(struct gp_view *v, const char *node, const char *gpu,
                                   const char *job, int rank)
{
    struct gp_view_gpu *g = gp_view_add_gpu(v);
    CHECK(g);
    snprintf(g->node, sizeof g->node, "%s", node);
    snprintf(g->gpu, sizeof g->gpu, "%s", gpu);
    snprintf(g->uuid, sizeof g->uuid, "GPU-%s-%s", node, gpu);
    snprintf(g->model, sizeof g->model, "NVIDIA H100 80GB HBM3");
    snprintf(g->job, sizeof g->job, "%s", job ? job : "");
    g->rank = rank;
    g->spec = gp_gpumodel_find("H100");
    CHECK(g->spec);
    unsigned seed = (unsigned)rank * 7u + 3u;
    double *sm = gp_view_gpu_series(v, g, GP_VGM_SM_ACTIVE);
    for (unsigned k = 0; k < v->npoints; k++)
        sm[k] = 0.9 + 0.02 * noise(&seed);
    fill(v, g, GP_VGM_UTIL, 1.0);
    fill(v, g, GP_VGM_SM_OCC, 0.4);
    fill(v, g, GP_VGM_TENSOR, 0.45);
    fill(v, g, GP_VGM_DRAM, 0.3);
    fill(v, g, GP_VGM_MEM_USED, 60 * GIB);
    fill(v, g, GP_VGM_MEM_TOTAL, 80 * GIB);
    fill(v, g, GP_VGM_POWER, 600);
    fill(v, g, GP_VGM_POWER_LIMIT, 700);
    fill(v, g, GP_VGM_TEMP, 65);
    fill(v, g, GP_VGM_SM_CLOCK, 1980e6);
    fill(v, g, GP_VGM_SM_CLOCK_MAX, 1980e6);
    fill(v, g, GP_VGM_PCIE_RX, 2e9);
    fill(v, g, GP_VGM_PCIE_TX, 1e9);
    fill(v, g, GP_VGM_THROTTLE_THERMAL, 0);
    fill(v, g, GP_VGM_THROTTLE_POWER, 0);
    fill(v, g, GP_VGM_ECC_DBE, 0);
    fill(v, g, GP_VGM_XID_TOTAL, 0);
    fill(v, g, GP_VGM_XID_LAST, 0);
    fill(v, g, GP_VGM_RETIRED_PENDING, 0);
    fill(v, g, GP_VGM_REMAP_UNC, 0);
    fill(v, g, GP_VGM_REMAP_FAILURE, 0);
    fill(v, g, GP_VGM_PCIE_REPLAY, 12);
    fill(v, g, GP_VGM_REMAP_PENDING, 0);
    fill(v, g, GP_VGM_LOST, 0);
    fill(v, g, GP_VGM_PCIE_GEN, 5);
    fill(v, g, GP_VGM_PCIE_GEN_MAX, 5);
    fill(v, g, GP_VGM_PCIE_WIDTH, 16);
    fill(v, g, GP_VGM_PCIE_WIDTH_MAX, 16);
    return g;
}

/* A step reporter stepping steadily at step_s seconds a step (10 per
 * point at 0.3 s with slight jitter), data wait 3 %, allocator 20 of
 * 22 GiB. */
static struct gp_view_proc *add_proc(struct gp_view *v, const char *node, const char *job,
                                     int rank, double step_s)
{
    struct gp_view_proc *p = gp_view_add_proc(v);
    CHECK(p);
    snprintf(p->node, sizeof p->node, "%s", node);
    snprintf(p->job, sizeof p->job, "%s", job);
    p->rank = rank;
    p->pid = 4000u + (unsigned)rank;
    double *st = gp_view_proc_series(v, p, GP_VPM_STEPS);
    double *ss = gp_view_proc_series(v, p, GP_VPM_STEP_SECONDS);
    double *dw = gp_view_proc_series(v, p, GP_VPM_DATA_WAIT);
    double per_point = (double)STEP_MS / 1000 / step_s;
    unsigned seed = (unsigned)rank + 11u;
    double steps = 1000, secs = 300;
    for (unsigned k = 0; k < v->npoints; k++) {
        double n = floor(per_point + 0.3 * noise(&seed) + 0.5);
        steps += n;
        secs += n * step_s;
        st[k] = steps;
        ss[k] = secs;
        dw[k] = 0.03 * secs;
    }
    fillp(v, p, GP_VPM_SAMPLES, 0);
    fillp(v, p, GP_VPM_ALLOCATED, 20 * GIB);
    fillp(v, p, GP_VPM_RESERVED, 22 * GIB);
    return p;
}

static void new_view(struct gp_view *v)
{
    CHECK_INT(gp_view_init(v, NPTS, 1764000000000LL, STEP_MS), GP_OK);
}

/* A healthy 4-GPU job on n1 with a step reporter per rank. */
static void healthy_job(struct gp_view *v)
{
    new_view(v);
    char gpu[16];
    for (int r = 0; r < 4; r++) {
        snprintf(gpu, sizeof gpu, "%d", r);
        add_gpu(v, "n1", gpu, "bert-1", r);
        add_proc(v, "n1", "bert-1", r, 0.3);
    }
    CHECK_INT(gp_view_index_jobs(v), GP_OK);
}

static void test_table_defaults(void)
{
    struct gp_detector_cfg cfg[GP_DET__COUNT];
    gp_detector_cfg_defaults(cfg);
    for (int d = 0; d < GP_DET__COUNT; d++) {
        int64_t ms = -1;
        char err[64];
        CHECK_INT(gp_parse_duration_ms(gp_detectors[d].for_, &ms, err, sizeof err), GP_OK);
        CHECK_INT(cfg[d].for_ms, ms);
        CHECK(cfg[d].enabled);
        CHECK(gp_detect_fns[d] != NULL);
        CHECK(gp_detectors[d].name && gp_detectors[d].runbook[0]);
        /* the clear level is on the healthy side of the threshold */
        bool below = d == GP_DET_OOM_PREDICTED || d == GP_DET_IDLE_ALLOCATED ||
                     d == GP_DET_NO_TENSOR_CORES || d == GP_DET_LOW_GOODPUT;
        CHECK(below ? cfg[d].clear >= cfg[d].threshold : cfg[d].clear <= cfg[d].threshold);
    }
    CHECK_INT(cfg[GP_DET_HW_ERRORS].for_ms, 0);
    CHECK_INT(cfg[GP_DET_BUDGET].for_ms, 0);
    CHECK_INT(cfg[GP_DET_MEMORY_HIGH].for_ms, 120000);
}

static void test_healthy_job_is_silent(void)
{
    struct gp_view v;
    healthy_job(&v);
    for (int d = 0; d < GP_DET__COUNT; d++) {
        CHECK_INT(run((enum gp_detector)d, &v), GP_OK);
        if (nbad())
            gp_test_fail(__FILE__, __LINE__, "%s fired on a healthy job: %s",
                         gp_detectors[d].name, obs[0].summary);
        for (unsigned i = 0; i < nobs; i++)
            CHECK(!obs[i].summary[0]); /* neither bad nor active: no text */
    }
    /* each GPU-scope detector that can judge a GPM H100 judged all four */
    CHECK_INT(run(GP_DET_MEMORY_HIGH, &v), GP_OK);
    CHECK_INT(nobs, 4);
    CHECK_INT(run(GP_DET_NO_TENSOR_CORES, &v), GP_OK);
    CHECK_INT(nobs, 4);
    CHECK_INT(run(GP_DET_STRAGGLER, &v), GP_OK);
    CHECK_INT(nobs, 4);
    gp_view_free(&v);
}

static void test_memory_high(void)
{
    struct gp_view v;
    healthy_job(&v);
    fill(&v, &v.gpus[2], GP_VGM_MEM_USED, 77 * GIB);
    CHECK_INT(run(GP_DET_MEMORY_HIGH, &v), GP_OK);
    const struct gp_observation *o = about_gpu("n1", "2");
    CHECK(o && o->bad);
    CHECK_DBL(o->value, 77.0 / 80, 1e-9);
    CHECK_STR(o->key.job, "bert-1");
    CHECK_INT(o->key.rank, 2);
    CHECK_STR(o->uuid, "GPU-n1-2");
    CHECK_CONTAINS(o->summary, "GPU 2 on n1 (job bert-1 rank 2) uses 77.0 of 80.0 GiB");
    CHECK_CONTAINS(o->evidence, "threshold 0.95");
    CHECK_INT(nbad(), 1);
    /* the size from the model table when the GPU does not report it */
    fill(&v, &v.gpus[2], GP_VGM_MEM_TOTAL, NAN);
    CHECK_INT(run(GP_DET_MEMORY_HIGH, &v), GP_OK);
    o = about_gpu("n1", "2");
    CHECK(o && o->bad);
    CHECK_DBL(o->value, 77 * GIB / (double)gp_gpumodel_find("H100")->memory_bytes, 1e-9);
    gp_view_free(&v);
}

/* Between clear and threshold: bad only while the alert is active. */
static void test_hysteresis(void)
{
    struct gp_view v;
    healthy_job(&v);
    fill(&v, &v.gpus[0], GP_VGM_MEM_USED, 0.92 * 80 * GIB);
    all_active = false;
    CHECK_INT(run(GP_DET_MEMORY_HIGH, &v), GP_OK);
    CHECK(!about_gpu("n1", "0")->bad);
    CHECK(!about_gpu("n1", "0")->summary[0]);
    all_active = true;
    CHECK_INT(run(GP_DET_MEMORY_HIGH, &v), GP_OK);
    CHECK(about_gpu("n1", "0")->bad);
    CHECK(!about_gpu("n1", "1")->bad); /* 0.75: under clear too */
    CHECK(about_gpu("n1", "1")->summary[0]); /* active: text for the engine */
    /* a below-direction detector: 12 minutes to OOM is between 10 and 15 */
    fill(&v, &v.gpus[0], GP_VGM_MEM_USED, NAN);
    double *u = gp_view_gpu_series(&v, &v.gpus[0], GP_VGM_MEM_USED);
    for (unsigned k = 0; k < NPTS; k++) /* +1 GiB/min, 12 GiB left at the end */
        u[k] = 68 * GIB - (NPTS - 1 - k) * 0.25 * GIB;
    all_active = false;
    CHECK_INT(run(GP_DET_OOM_PREDICTED, &v), GP_OK);
    CHECK_DBL(about_gpu("n1", "0")->value, 720, 1);
    CHECK(!about_gpu("n1", "0")->bad);
    all_active = true;
    CHECK_INT(run(GP_DET_OOM_PREDICTED, &v), GP_OK);
    CHECK(about_gpu("n1", "0")->bad);
    all_active = false;
    gp_view_free(&v);
}

/* Memory used of a simulated leak at absolute time t (s): flat at 30 GiB
 * until 600 s, then +1 GiB/min with +-0.15 GiB of noise; 80 GiB total is
 * reached at 600 + 50 * 60 s. */
static double leak_at(double t, unsigned *seed)
{
    double base = t < 600 ? 30 * GIB : 30 * GIB + (t - 600) / 60 * GIB;
    return base + 0.15 * GIB * noise(seed);
}

static void test_oom_predicted_in_time(void)
{
    const double hit = 600 + 50 * 60;
    double first_bad = -1;
    char summary[256] = "";
    /* walk the window forward one point at a time */
    for (double now = 600; now < hit && first_bad < 0; now += STEP_MS / 1000.0) {
        struct gp_view v;
        CHECK_INT(gp_view_init(&v, NPTS, (int64_t)(now * 1000), STEP_MS), GP_OK);
        struct gp_view_gpu *g = add_gpu(&v, "n1", "3", "bert-1", 3);
        double *u = gp_view_gpu_series(&v, g, GP_VGM_MEM_USED);
        for (unsigned k = 0; k < NPTS; k++) {
            double t = (double)gp_view_time(&v, k) / 1000;
            unsigned seed = (unsigned)(t * 7);
            u[k] = t < 0 ? NAN : leak_at(t, &seed);
        }
        CHECK_INT(gp_view_index_jobs(&v), GP_OK);
        CHECK_INT(run(GP_DET_OOM_PREDICTED, &v), GP_OK);
        CHECK_INT(nobs, 1);
        if (obs[0].bad) {
            first_bad = now;
            snprintf(summary, sizeof summary, "%s", obs[0].summary);
            /* the prediction is near the truth */
            CHECK(fabs(obs[0].value - (hit - now)) < 90);
        }
        /* and the memory detector has not fired yet when it does */
        CHECK_INT(run(GP_DET_MEMORY_HIGH, &v), GP_OK);
        CHECK(!obs[0].bad || first_bad > 0);
        gp_view_free(&v);
    }
    CHECK(first_bad > 0);
    CHECK(hit - first_bad >= 5 * 60);
    CHECK(hit - first_bad <= 11 * 60); /* threshold 600 s: not wildly early */
    CHECK_CONTAINS(summary, "GPU 3 on n1 (job bert-1 rank 3) will run out of memory in ~");
    CHECK_CONTAINS(summary, "GiB/min over the last 9m45s");
}

/* A GPU that reported for about a minute, its memory rising fast (model
 * load, first batches): no prediction from so short a fit; once the
 * same growth spans 5 minutes it is predicted, the span in the text. */
static void test_oom_short_span(void)
{
    struct gp_view v;
    healthy_job(&v);
    struct gp_view_gpu *g = &v.gpus[2];
    double *u = gp_view_gpu_series(&v, g, GP_VGM_MEM_USED);
    unsigned from = NPTS - 5; /* 5 points over 1 minute */
    for (unsigned k = 0; k < NPTS; k++)
        u[k] = k < from ? NAN : 60 * GIB + (k - from) * 0.75 * GIB; /* 3 GiB/min: 340 s left */
    CHECK_INT(run(GP_DET_OOM_PREDICTED, &v), GP_OK);
    const struct gp_observation *o = about_gpu("n1", "2");
    CHECK(o && !o->bad);
    CHECK_DBL(o->value, 7 * 86400, 0);
    all_active = true; /* the texts */
    CHECK_INT(run(GP_DET_OOM_PREDICTED, &v), GP_OK);
    o = about_gpu("n1", "2");
    CHECK_CONTAINS(o->summary, "too short a history to predict (60 s of the 300 s");
    CHECK_CONTAINS(o->evidence, "5 points spanning 60 s (a prediction needs 300 s)");
    all_active = false;
    /* the same rate over 5 minutes (21 points) */
    from = NPTS - 21;
    for (unsigned k = 0; k < NPTS; k++)
        u[k] = k < from ? NAN : 45 * GIB + (k - from) * 0.75 * GIB;
    CHECK_INT(run(GP_DET_OOM_PREDICTED, &v), GP_OK);
    o = about_gpu("n1", "2");
    CHECK(o && o->bad);
    CHECK(fabs(o->value - 400) < 5); /* 80 - 60 GiB at 3 GiB/min */
    CHECK_CONTAINS(o->evidence, "21 points spanning 300 s");
    gp_view_free(&v);
}

static void test_oom_silent(void)
{
    struct gp_view v;
    healthy_job(&v);
    unsigned seed = 5;
    /* noisy flat memory near but under the threshold */
    double *u0 = gp_view_gpu_series(&v, &v.gpus[0], GP_VGM_MEM_USED);
    for (unsigned k = 0; k < NPTS; k++)
        u0[k] = 0.93 * 80 * GIB + 0.8 * GIB * noise(&seed);
    /* memory that grows once, then plateaus */
    double *u1 = gp_view_gpu_series(&v, &v.gpus[1], GP_VGM_MEM_USED);
    double *u2 = gp_view_gpu_series(&v, &v.gpus[2], GP_VGM_MEM_USED);
    for (unsigned k = 0; k < NPTS; k++) {
        u1[k] = (k < 10 ? 20 : 70) * GIB + 0.05 * GIB * noise(&seed);
        u2[k] = (k < 20 ? 10 * GIB + k * 3 * GIB : 70 * GIB) + 0.05 * GIB * noise(&seed);
    }
    CHECK_INT(run(GP_DET_OOM_PREDICTED, &v), GP_OK);
    CHECK_INT(nobs, 4);
    CHECK_INT(nbad(), 0);
    CHECK_DBL(about_gpu("n1", "1")->value, 7 * 86400, 0);
    CHECK_INT(run(GP_DET_MEMORY_HIGH, &v), GP_OK);
    CHECK_INT(nbad(), 0);
    gp_view_free(&v);
}

/* The shape that fired on a fleet gpulse was not tuned on: a rank that
 * started 5.5 minutes ago, memory rising 3 minutes at a steady step
 * rate, then flat for 2.5 minutes with +-10 MiB of allocator noise. */
static void test_memory_leak_plateau(void)
{
    struct gp_view v;
    healthy_job(&v);
    double *a1 = gp_view_proc_series(&v, &v.procs[1], GP_VPM_ALLOCATED);
    double *s1 = gp_view_proc_series(&v, &v.procs[1], GP_VPM_STEPS);
    unsigned seed = 21, k0 = NPTS - 23; /* 22 intervals: 12 rising, 10 flat */
    for (unsigned k = 0; k < NPTS; k++) {
        if (k < k0) {
            a1[k] = s1[k] = NAN;
            continue;
        }
        unsigned up = k - k0 < 12 ? k - k0 : 12;
        a1[k] = 20 * GIB + up * 80 * MIB + 10 * MIB * noise(&seed);
    }
    CHECK_INT(run(GP_DET_MEMORY_LEAK, &v), GP_OK);
    const struct gp_observation *o = about_rank("bert-1", 1);
    CHECK(o && !o->bad);
    CHECK(o->value > 0.04); /* it grew past the threshold, and then stopped */
    /* the same rank while it still grew (the newest point at the 12th
     * rising interval) is a leak */
    for (unsigned k = k0; k < NPTS; k++)
        a1[k] = 20 * GIB + (k - k0) * 80 * MIB + 10 * MIB * noise(&seed);
    CHECK_INT(run(GP_DET_MEMORY_LEAK, &v), GP_OK);
    o = about_rank("bert-1", 1);
    CHECK(o && o->bad);
    CHECK_CONTAINS(o->evidence, "newest 7 points");
    gp_view_free(&v);
}

/* A stepwise leak with partial frees and allocator noise: memory jumps
 * 500 MiB every 6th point and frees 150 MiB between, so it rises on
 * about half the intervals only (noise included). Still a leak. */
static void test_memory_leak_stepwise(void)
{
    struct gp_view v;
    healthy_job(&v);
    double *a1 = gp_view_proc_series(&v, &v.procs[1], GP_VPM_ALLOCATED);
    unsigned seed = 33;
    double level = 20 * GIB;
    for (unsigned k = 0; k < NPTS; k++) {
        if (k && k % 6 == 0)
            level += 500 * MIB;
        else if (k % 6 == 3)
            level -= 150 * MIB;
        a1[k] = level + 10 * MIB * noise(&seed);
    }
    CHECK_INT(run(GP_DET_MEMORY_LEAK, &v), GP_OK);
    const struct gp_observation *o = about_rank("bert-1", 1);
    CHECK(o && o->bad);
    CHECK_CONTAINS(o->summary, "rank 1 of bert-1 on n1 (pid 4001) grows");
    CHECK_CONTAINS(o->evidence, "with R^2 0.9");
    CHECK_INT(nbad(), 1);
    gp_view_free(&v);
}

static void test_memory_leak(void)
{
    struct gp_view v;
    healthy_job(&v);
    /* rank 1 grows 2 MiB a step (with allocator noise); rank 2 grows once */
    double *a1 = gp_view_proc_series(&v, &v.procs[1], GP_VPM_ALLOCATED);
    const double *s1 = gp_view_proc_at(&v, &v.procs[1], GP_VPM_STEPS);
    double *a2 = gp_view_proc_series(&v, &v.procs[2], GP_VPM_ALLOCATED);
    unsigned seed = 9;
    for (unsigned k = 0; k < NPTS; k++) {
        a1[k] = 20 * GIB + (s1[k] - s1[0]) * 2 * MIB + 30 * MIB * noise(&seed);
        a2[k] = k < 20 ? 12 * GIB : 19 * GIB;
    }
    CHECK_INT(run(GP_DET_MEMORY_LEAK, &v), GP_OK);
    CHECK_INT(nobs, 4);
    const struct gp_observation *o = about_rank("bert-1", 1);
    CHECK(o && o->bad);
    CHECK_INT(o->key.pid, 4001);
    CHECK(o->value > 0.15 && o->value < 0.25);
    CHECK_CONTAINS(o->summary, "rank 1 of bert-1 on n1 (pid 4001) grows 2.0 MiB a step at a steady "
                               "3.33 steps/s");
    o = about_rank("bert-1", 2);
    CHECK(o && !o->bad);
    CHECK(o->value > 0.5); /* it grew a lot, but once */
    CHECK_INT(nbad(), 1);

    /* without allocator series: device memory of the rank's GPU */
    fillp(&v, &v.procs[3], GP_VPM_ALLOCATED, NAN);
    double *u3 = gp_view_gpu_series(&v, &v.gpus[3], GP_VGM_MEM_USED);
    const double *s3 = gp_view_proc_at(&v, &v.procs[3], GP_VPM_STEPS);
    for (unsigned k = 0; k < NPTS; k++)
        u3[k] = 30 * GIB + (s3[k] - s3[0]) * 10 * MIB;
    CHECK_INT(run(GP_DET_MEMORY_LEAK, &v), GP_OK);
    o = about_rank("bert-1", 3);
    CHECK(o && o->bad);
    CHECK_CONTAINS(o->evidence, "device memory used");

    /* a leak at an unsteady step rate (stalls) is not judged a leak */
    double *st = gp_view_proc_series(&v, &v.procs[1], GP_VPM_STEPS);
    for (unsigned k = 10; k < NPTS; k += 3)
        for (unsigned m = k; m < NPTS; m++)
            st[m] -= 25;
    CHECK_INT(run(GP_DET_MEMORY_LEAK, &v), GP_OK);
    CHECK(!about_rank("bert-1", 1)->bad);
    gp_view_free(&v);
}

static void test_fragmentation(void)
{
    struct gp_view v;
    healthy_job(&v);
    fillp(&v, &v.procs[0], GP_VPM_ALLOCATED, 10 * GIB);
    fillp(&v, &v.procs[0], GP_VPM_RESERVED, 18 * GIB);
    /* a large ratio of a small process costs nothing */
    fillp(&v, &v.procs[1], GP_VPM_ALLOCATED, 100 * MIB);
    fillp(&v, &v.procs[1], GP_VPM_RESERVED, 400 * MIB);
    CHECK_INT(run(GP_DET_FRAGMENTATION, &v), GP_OK);
    CHECK_INT(nobs, 4);
    const struct gp_observation *o = about_rank("bert-1", 0);
    CHECK(o && o->bad);
    CHECK_DBL(o->value, 0.8, 1e-9);
    CHECK_CONTAINS(o->summary, "reserves 18.0 GiB but uses 10.0 GiB (80 % more");
    CHECK(!about_rank("bert-1", 1)->bad);
    CHECK_DBL(about_rank("bert-1", 1)->value, 3, 1e-9);
    CHECK_DBL(about_rank("bert-1", 2)->value, 0.1, 1e-9);
    CHECK_INT(nbad(), 1);
    gp_view_free(&v);
}

static void test_saturated(void)
{
    struct gp_view v;
    healthy_job(&v);
    fill(&v, &v.gpus[1], GP_VGM_SM_ACTIVE, 0.98);
    CHECK_INT(run(GP_DET_SATURATED, &v), GP_OK);
    CHECK(about_gpu("n1", "1")->bad);
    CHECK_CONTAINS(about_gpu("n1", "1")->summary, "is fully busy: SM activity 98 %");
    CHECK_INT(nbad(), 1);
    /* without GPM only coarse utilization (100 % whenever a kernel runs):
     * not judged */
    fill(&v, &v.gpus[2], GP_VGM_SM_ACTIVE, NAN);
    CHECK_INT(run(GP_DET_SATURATED, &v), GP_OK);
    CHECK_INT(nobs, 3);
    CHECK(!about_gpu("n1", "2"));
    gp_view_free(&v);
}

static void test_idle_allocated(void)
{
    struct gp_view v;
    healthy_job(&v);
    fill(&v, &v.gpus[0], GP_VGM_SM_ACTIVE, 0.01);
    fill(&v, &v.gpus[0], GP_VGM_UTIL, 0);
    fill(&v, &v.gpus[0], GP_VGM_MEM_USED, 30 * GIB);
    /* idle but holding almost nothing */
    fill(&v, &v.gpus[1], GP_VGM_SM_ACTIVE, 0);
    fill(&v, &v.gpus[1], GP_VGM_MEM_USED, 0.5 * GIB);
    /* a quiet phase with real bursts: low mean, not idle */
    fill(&v, &v.gpus[2], GP_VGM_SM_ACTIVE, 0);
    gp_view_gpu_series(&v, &v.gpus[2], GP_VGM_SM_ACTIVE)[20] = 0.9;
    /* idle with no job: not this detector's business */
    struct gp_view_gpu *free_gpu = add_gpu(&v, "n2", "0", NULL, -1);
    fill(&v, free_gpu, GP_VGM_SM_ACTIVE, 0);
    CHECK_INT(gp_view_index_jobs(&v), GP_OK);
    CHECK_INT(run(GP_DET_IDLE_ALLOCATED, &v), GP_OK);
    CHECK_INT(nobs, 4);
    const struct gp_observation *o = about_gpu("n1", "0");
    CHECK(o && o->bad);
    CHECK_CONTAINS(o->summary, "GPU 0 on n1 (job bert-1 rank 0) holds 30.0 GiB but runs nothing");
    CHECK(!about_gpu("n1", "1")->bad);
    CHECK(!about_gpu("n1", "2")->bad);
    CHECK(!about_gpu("n1", "3")->bad);
    CHECK(!about_gpu("n2", "0"));
    gp_view_free(&v);
}

static void test_data_starved(void)
{
    struct gp_view v;
    healthy_job(&v);
    /* rank 0: 60 % of step time waiting for data */
    double *dw = gp_view_proc_series(&v, &v.procs[0], GP_VPM_DATA_WAIT);
    const double *ss = gp_view_proc_at(&v, &v.procs[0], GP_VPM_STEP_SECONDS);
    for (unsigned k = 0; k < NPTS; k++)
        dw[k] = 0.6 * ss[k];
    /* GPU 1 (no data-wait series): a sawtooth of bursts and idle stretches */
    fillp(&v, &v.procs[1], GP_VPM_DATA_WAIT, NAN);
    double *a1 = gp_view_gpu_series(&v, &v.gpus[1], GP_VGM_SM_ACTIVE);
    for (unsigned k = 0; k < NPTS; k++)
        a1[k] = k % 4 == 0 ? 0.9 : 0.04;
    /* GPU 2 (no data-wait series): compute-bound with short dips between batches */
    fillp(&v, &v.procs[2], GP_VPM_DATA_WAIT, NAN);
    double *a2 = gp_view_gpu_series(&v, &v.gpus[2], GP_VGM_SM_ACTIVE);
    for (unsigned k = 0; k < NPTS; k++)
        a2[k] = k % 8 == 0 ? 0.15 : 0.93;
    /* GPU 3 (no data-wait series): low activity, PCIe RX while idle */
    fillp(&v, &v.procs[3], GP_VPM_DATA_WAIT, NAN);
    double *a3 = gp_view_gpu_series(&v, &v.gpus[3], GP_VGM_SM_ACTIVE);
    double *r3 = gp_view_gpu_series(&v, &v.gpus[3], GP_VGM_PCIE_RX);
    for (unsigned k = 0; k < NPTS; k++) {
        a3[k] = k % 3 == 0 ? 0.45 : 0.1;
        r3[k] = k % 3 == 0 ? 0.2e9 : 3e9;
    }
    CHECK_INT(run(GP_DET_DATA_STARVED, &v), GP_OK);
    CHECK_INT(nobs, 4);
    const struct gp_observation *o = about_gpu("n1", "0");
    CHECK(o && o->bad);
    CHECK_DBL(o->value, 0.6, 1e-6);
    CHECK_CONTAINS(o->summary, "waits for input data 60 % of its step time");
    o = about_gpu("n1", "1");
    CHECK(o && o->bad);
    CHECK_DBL(o->value, 1 - (10 * 0.9 + 30 * 0.04) / 40, 1e-9);
    CHECK_CONTAINS(o->summary, "idle on 75 % of points between bursts");
    o = about_gpu("n1", "2");
    CHECK(o && !o->bad);
    CHECK_DBL(o->value, 0, 0);
    o = about_gpu("n1", "3");
    CHECK(o && o->bad);
    CHECK_CONTAINS(o->evidence, "PCIe RX 3000.0 MB/s idle");
    /* a plain idle GPU is idle, not starved */
    fill(&v, &v.gpus[1], GP_VGM_SM_ACTIVE, 0.0);
    CHECK_INT(run(GP_DET_DATA_STARVED, &v), GP_OK);
    CHECK(!about_gpu("n1", "1")->bad);
    gp_view_free(&v);
}

static void test_no_tensor_cores(void)
{
    struct gp_view v;
    healthy_job(&v);
    fill(&v, &v.gpus[0], GP_VGM_TENSOR, 0.001);
    /* a GPU without GPM: no tensor reading, not judged */
    fill(&v, &v.gpus[1], GP_VGM_TENSOR, NAN);
    fill(&v, &v.gpus[1], GP_VGM_SM_ACTIVE, NAN);
    fill(&v, &v.gpus[1], GP_VGM_DRAM, NAN);
    /* idle: nothing to judge either */
    fill(&v, &v.gpus[2], GP_VGM_TENSOR, 0);
    fill(&v, &v.gpus[2], GP_VGM_SM_ACTIVE, 0.02);
    CHECK_INT(run(GP_DET_NO_TENSOR_CORES, &v), GP_OK);
    CHECK_INT(nobs, 2);
    const struct gp_observation *o = about_gpu("n1", "0");
    CHECK(o && o->bad);
    CHECK_CONTAINS(o->summary, "(H100) is busy (90 %) but its tensor cores are at 0.1 %");
    CHECK(!about_gpu("n1", "1"));
    CHECK(!about_gpu("n1", "2"));
    CHECK(!about_gpu("n1", "3")->bad);
    gp_view_free(&v);
}

static void test_memory_bound(void)
{
    struct gp_view v;
    healthy_job(&v);
    fill(&v, &v.gpus[0], GP_VGM_DRAM, 0.8);
    fill(&v, &v.gpus[0], GP_VGM_SM_ACTIVE, 0.3);
    fill(&v, &v.gpus[1], GP_VGM_DRAM, 0.8); /* SMs busy too: not bound */
    CHECK_INT(run(GP_DET_MEMORY_BOUND, &v), GP_OK);
    CHECK_INT(nobs, 4);
    CHECK(about_gpu("n1", "0")->bad);
    CHECK_CONTAINS(about_gpu("n1", "0")->summary, "DRAM 80 % busy while SMs are 30 % active");
    CHECK(!about_gpu("n1", "1")->bad);
    CHECK_INT(nbad(), 1);
    gp_view_free(&v);
}

static void test_throttled(void)
{
    struct gp_view v;
    healthy_job(&v);
    double *th = gp_view_gpu_series(&v, &v.gpus[0], GP_VGM_THROTTLE_THERMAL);
    double *te = gp_view_gpu_series(&v, &v.gpus[0], GP_VGM_TEMP);
    for (unsigned k = 0; k < NPTS; k++) {
        th[k] = k % 5 < 3; /* 60 % */
        te[k] = k % 5 < 3 ? 86 : 80;
    }
    fill(&v, &v.gpus[1], GP_VGM_SM_CLOCK, 1400e6); /* busy under 80 % of max */
    fill(&v, &v.gpus[2], GP_VGM_SM_CLOCK, 1800e6); /* a little under: fine */
    /* one hot sample does not make a throttled card */
    gp_view_gpu_series(&v, &v.gpus[3], GP_VGM_TEMP)[7] = 90;
    CHECK_INT(run(GP_DET_THROTTLED, &v), GP_OK);
    CHECK_INT(nobs, 4);
    const struct gp_observation *o = about_gpu("n1", "0");
    CHECK(o && o->bad);
    CHECK_DBL(o->value, 0.6, 1e-9);
    CHECK_CONTAINS(o->summary, "throttled on 60 % of points over the last 9m45s (40 points 15s "
                               "apart), mostly thermal");
    o = about_gpu("n1", "1");
    CHECK(o && o->bad);
    CHECK_CONTAINS(o->summary, "SM clock 1400 of 1980 MHz while busy): drain the node and inspect the "
                               "hardware");
    CHECK_CONTAINS(o->runbook, "Drain the node and inspect the hardware (clocks held down). ");
    CHECK(!about_gpu("n1", "2")->bad);
    CHECK(!about_gpu("n1", "3")->bad);
    gp_view_free(&v);
}

/* The agent exports gpulse_gpu_xid_errors_total{xid} only once the XID
 * happened: the counter first appears at 1. */
static void test_xid_first_appearance(void)
{
    struct gp_view v;
    healthy_job(&v);
    for (int i = 0; i < 4; i++)
        fill(&v, &v.gpus[i], GP_VGM_XID_LAST, NAN); /* the agent reports no last-XID code */
    double *xt = gp_view_gpu_series(&v, &v.gpus[1], GP_VGM_XID_TOTAL);
    for (unsigned k = 0; k < NPTS; k++)
        xt[k] = k < 30 ? NAN : 1;
    /* GPU 2: the counter was there from the window's first point (an XID
     * before the window, or a server with no older data): not counted */
    fill(&v, &v.gpus[2], GP_VGM_XID_TOTAL, 1);
    /* GPU 3: the counter appears with the GPU's first readings (a new
     * store): it cannot tell when the XID was, so not counted */
    double *x3 = gp_view_gpu_series(&v, &v.gpus[3], GP_VGM_XID_TOTAL);
    for (int r = 0; r < GP_VGM__COUNT; r++)
        for (unsigned k = 0; k < 30; k++)
            gp_view_gpu_series(&v, &v.gpus[3], r)[k] = NAN;
    for (unsigned k = 30; k < NPTS; k++)
        x3[k] = 1;
    fill(&v, &v.gpus[0], GP_VGM_XID_TOTAL, NAN);
    CHECK_INT(run(GP_DET_HW_ERRORS, &v), GP_OK);
    const struct gp_observation *o = about_gpu("n1", "1");
    CHECK(o && o->bad);
    CHECK_DBL(o->value, 1, 0);
    /* no last-XID code: the catalog's "a hardware XID" row */
    CHECK_CONTAINS(o->summary, "GPU 1 on n1 (job bert-1 rank 1): 1 XID error: reset the GPU");
    CHECK_CONTAINS(o->evidence, "hardware XIDs +1 (");
    CHECK(!about_gpu("n1", "2")->bad);
    CHECK(!about_gpu("n1", "3")->bad);
    CHECK(!about_gpu("n1", "0")->bad);
    /* a second XID later adds to the first */
    for (unsigned k = 35; k < NPTS; k++)
        xt[k] = 3;
    CHECK_INT(run(GP_DET_HW_ERRORS, &v), GP_OK);
    CHECK_DBL(about_gpu("n1", "1")->value, 3, 0);
    /* once the appearance leaves the window (the counter at the first
     * point), nothing is new: the alert ends, after a server restart too */
    fill(&v, &v.gpus[1], GP_VGM_XID_TOTAL, 3);
    CHECK_INT(run(GP_DET_HW_ERRORS, &v), GP_OK);
    CHECK(!about_gpu("n1", "1")->bad);
    gp_view_free(&v);
}

static void test_hw_errors(void)
{
    struct gp_view v;
    healthy_job(&v);
    double *dbe = gp_view_gpu_series(&v, &v.gpus[0], GP_VGM_ECC_DBE);
    double *xt = gp_view_gpu_series(&v, &v.gpus[1], GP_VGM_XID_TOTAL);
    double *xl = gp_view_gpu_series(&v, &v.gpus[1], GP_VGM_XID_LAST);
    for (unsigned k = 30; k < NPTS; k++) {
        dbe[k] = 2;
        xt[k] = 1;
        xl[k] = 79;
    }
    fill(&v, &v.gpus[2], GP_VGM_RETIRED_PENDING, 1);
    /* the healthy GPU 3: reset since its last errors (volatile count 0), an
     * application's XID 13 long ago */
    fill(&v, &v.gpus[3], GP_VGM_ECC_DBE, 0);
    fill(&v, &v.gpus[3], GP_VGM_XID_LAST, 13);
    CHECK_INT(run(GP_DET_HW_ERRORS, &v), GP_OK);
    CHECK_INT(nobs, 4);
    const struct gp_observation *o = about_gpu("n1", "0");
    CHECK(o && o->bad);
    CHECK_DBL(o->value, 1, 0);
    CHECK_CONTAINS(o->summary, "GPU 0 on n1 (job bert-1 rank 0): 2 uncorrectable ECC errors since the last reset");
    CHECK_CONTAINS(o->summary, ": reset the GPU");
    o = about_gpu("n1", "1");
    CHECK(o && o->bad);
    CHECK_CONTAINS(o->summary, "XID 79 GPU has fallen off the bus (1 XID error): reboot the node");
    CHECK_CONTAINS(o->runbook, "Reboot the node (XID 79, GPU has fallen off the bus). ");
    o = about_gpu("n1", "2");
    CHECK(o && o->bad);
    CHECK_CONTAINS(o->summary, "1 page pending retirement");
    CHECK(!about_gpu("n1", "3")->bad);
    /* without an XID counter, changes of the last XID: an application's
     * own XID 13 or 31 is no hardware error, XID 48 is */
    fill(&v, &v.gpus[1], GP_VGM_XID_TOTAL, NAN);
    fill(&v, &v.gpus[3], GP_VGM_XID_LAST, 0);
    for (unsigned k = 10; k < NPTS; k++)
        gp_view_gpu_series(&v, &v.gpus[3], GP_VGM_XID_LAST)[k] = k < 25 ? 13 : 31;
    for (unsigned k = 0; k < NPTS; k++)
        xl[k] = k < 30 ? 0 : 48;
    CHECK_INT(run(GP_DET_HW_ERRORS, &v), GP_OK);
    CHECK(!about_gpu("n1", "3")->bad);
    o = about_gpu("n1", "1");
    CHECK(o && o->bad);
    CHECK_CONTAINS(o->summary, "XID 48");
    /* the errors long before the window, no reset since: still bad */
    fill(&v, &v.gpus[0], GP_VGM_ECC_DBE, 2);
    CHECK_INT(run(GP_DET_HW_ERRORS, &v), GP_OK);
    CHECK(about_gpu("n1", "0")->bad);
    /* the GPU reset (what draining is for) zeroes the volatile count: clear */
    fill(&v, &v.gpus[0], GP_VGM_ECC_DBE, 5);
    for (unsigned k = 20; k < NPTS; k++)
        dbe[k] = 0;
    CHECK_INT(run(GP_DET_HW_ERRORS, &v), GP_OK);
    CHECK(!about_gpu("n1", "0")->bad);
    gp_view_free(&v);
}

/* Each fault class says its own action (the fault catalog, faults.h):
 * GPU 0 an XID 64 (drain and inspect), 1 an XID 13 (the application's:
 * no hardware error), 2 a row remap pending (reset the GPU), 3 fallen
 * off the bus (reboot); then a remap failure outranks a pending remap,
 * and rows already remapped are no fault by themselves. */
static void test_hw_actions(void)
{
    struct gp_view v;
    healthy_job(&v);
    double *x0 = gp_view_gpu_series(&v, &v.gpus[0], GP_VGM_XID_TOTAL);
    double *l0 = gp_view_gpu_series(&v, &v.gpus[0], GP_VGM_XID_LAST);
    double *l1 = gp_view_gpu_series(&v, &v.gpus[1], GP_VGM_XID_LAST);
    for (unsigned k = 30; k < NPTS; k++) {
        x0[k] = 1;
        l0[k] = 64;
        l1[k] = 13;
    }
    fill(&v, &v.gpus[2], GP_VGM_REMAP_PENDING, 1);
    fill(&v, &v.gpus[3], GP_VGM_LOST, 1);
    CHECK_INT(run(GP_DET_HW_ERRORS, &v), GP_OK);
    const struct gp_observation *o = about_gpu("n1", "0");
    CHECK(o && o->bad);
    CHECK_CONTAINS(o->summary, "XID 64 row remap or page retirement failure (1 XID error): drain the "
                               "node and inspect the hardware");
    CHECK_CONTAINS(o->runbook, "Drain the node and inspect the hardware (XID 64, ");
    CHECK_CONTAINS(o->runbook, "replace the card");
    CHECK(!about_gpu("n1", "1")->bad);
    o = about_gpu("n1", "2");
    CHECK(o && o->bad);
    CHECK_CONTAINS(o->summary, "GPU 2 on n1 (job bert-1 rank 2): a row remap pending: reset the GPU");
    CHECK_CONTAINS(o->runbook, "Reset the GPU (a row remap pending). ");
    o = about_gpu("n1", "3");
    CHECK(o && o->bad);
    CHECK_CONTAINS(o->summary, "fallen off the bus: reboot the node");
    CHECK_CONTAINS(o->runbook, "Reboot the node (the GPU fell off the bus). ");
    fill(&v, &v.gpus[2], GP_VGM_REMAP_FAILURE, 1);
    fill(&v, &v.gpus[3], GP_VGM_LOST, 0);
    fill(&v, &v.gpus[3], GP_VGM_REMAP_UNC, 4);
    CHECK_INT(run(GP_DET_HW_ERRORS, &v), GP_OK);
    o = about_gpu("n1", "2");
    CHECK_CONTAINS(o->summary, "a row remap pending, a row remap failure: drain the node and inspect the "
                               "hardware");
    CHECK(!about_gpu("n1", "3")->bad);
    gp_view_free(&v);
}

/* A link trained narrower than its maximum is degraded at any load; a
 * lower generation only while busy (an idle link saves power). */
static void test_pcie_degraded(void)
{
    struct gp_view v;
    healthy_job(&v);
    fill(&v, &v.gpus[0], GP_VGM_PCIE_WIDTH, 8);
    fill(&v, &v.gpus[1], GP_VGM_PCIE_GEN, 3);
    /* GPU 2: gen 1 of 5 but idle */
    fill(&v, &v.gpus[2], GP_VGM_PCIE_GEN, 1);
    fill(&v, &v.gpus[2], GP_VGM_SM_ACTIVE, 0.01);
    fill(&v, &v.gpus[2], GP_VGM_UTIL, 0.01);
    CHECK_INT(run(GP_DET_PCIE_DEGRADED, &v), GP_OK);
    CHECK_INT(nobs, 4);
    const struct gp_observation *o = about_gpu("n1", "0");
    CHECK(o && o->bad);
    CHECK_DBL(o->value, 1, 0);
    CHECK_CONTAINS(o->summary, "GPU 0 on n1 (job bert-1 rank 0): PCIe link below its maximum on 100 % of "
                               "points over ");
    CHECK_CONTAINS(o->summary, "(x8 of x16, gen 5 of 5): drain the node and inspect the hardware");
    CHECK_CONTAINS(o->runbook, "Drain the node and inspect the hardware (the PCIe link below its maximum). ");
    o = about_gpu("n1", "1");
    CHECK(o && o->bad);
    CHECK_CONTAINS(o->summary, "(x16 of x16, gen 3 of 5)");
    CHECK(!about_gpu("n1", "2")->bad);
    CHECK(!about_gpu("n1", "3")->bad);
    /* a card that reports no link (a MIG instance, an old driver): not judged */
    fill(&v, &v.gpus[3], GP_VGM_PCIE_WIDTH, NAN);
    CHECK_INT(run(GP_DET_PCIE_DEGRADED, &v), GP_OK);
    CHECK(!about_gpu("n1", "3"));
    gp_view_free(&v);
}

static void test_straggler(void)
{
    struct gp_view v;
    new_view(&v);
    char gpu[16];
    for (int r = 0; r < 8; r++) {
        snprintf(gpu, sizeof gpu, "%d", r);
        add_gpu(&v, r < 4 ? "n1" : "n2", gpu, "llama-7", r);
        add_proc(&v, r < 4 ? "n1" : "n2", "llama-7", r, r == 5 ? 0.42 : 0.30 + 0.002 * (r % 3));
    }
    /* the cause on rank 5's GPU: power capping */
    fill(&v, &v.gpus[5], GP_VGM_THROTTLE_POWER, 1);
    /* a 2-rank job with one slower rank: too few peers to judge */
    add_gpu(&v, "n3", "0", "tiny", 0);
    add_gpu(&v, "n3", "1", "tiny", 1);
    add_proc(&v, "n3", "tiny", 0, 0.3);
    add_proc(&v, "n3", "tiny", 1, 0.6);
    CHECK_INT(gp_view_index_jobs(&v), GP_OK);
    CHECK_INT(run(GP_DET_STRAGGLER, &v), GP_OK);
    CHECK_INT(nobs, 8);
    CHECK(!about_rank("tiny", 0) && !about_rank("tiny", 1));
    const struct gp_observation *o = about_rank("llama-7", 5);
    CHECK(o && o->bad);
    CHECK(o->value > 10);
    CHECK_STR(o->key.node, "n2");
    CHECK_STR(o->key.gpu, "5");
    CHECK_INT(o->key.pid, 4005);
    CHECK_CONTAINS(o->summary, "rank 5 of llama-7 on n2 (pid 4005) GPU 5 is a straggler: 0.42");
    CHECK_CONTAINS(o->summary, "likely cause: thermal or power throttling on 100 % of points");
    CHECK_INT(nbad(), 1);
    /* ... explained by a power limit set under its peers' (nvidia-smi -pl) */
    for (int r = 0; r < 8; r++)
        fill(&v, &v.gpus[r], GP_VGM_POWER_LIMIT, r == 5 ? 420 : 700);
    CHECK_INT(run(GP_DET_STRAGGLER, &v), GP_OK);
    CHECK_CONTAINS(about_rank("llama-7", 5)->summary,
                   "likely cause: GPU 5 is held at a 420 W power limit vs 700 W on its peers (power "
                   "capping on 100 % of points): restore its limit (nvidia-smi -pl)");
    fill(&v, &v.gpus[5], GP_VGM_THROTTLE_POWER, NAN); /* no clock-event reasons (AMD): not said */
    CHECK_INT(run(GP_DET_STRAGGLER, &v), GP_OK);
    CHECK_CONTAINS(about_rank("llama-7", 5)->summary,
                   "likely cause: GPU 5 is held at a 420 W power limit vs 700 W on its peers: restore");
    fill(&v, &v.gpus[5], GP_VGM_THROTTLE_POWER, 1);
    fill(&v, &v.gpus[5], GP_VGM_POWER_LIMIT, 690); /* within 5 %: not the cause */
    CHECK_INT(run(GP_DET_STRAGGLER, &v), GP_OK);
    CHECK_CONTAINS(about_rank("llama-7", 5)->summary, "likely cause: thermal or power throttling");

    /* the cause can be a lower clock than the peers', or PCIe replays */
    fill(&v, &v.gpus[5], GP_VGM_THROTTLE_POWER, 0);
    fill(&v, &v.gpus[5], GP_VGM_SM_CLOCK, 1700e6);
    CHECK_INT(run(GP_DET_STRAGGLER, &v), GP_OK);
    CHECK_CONTAINS(about_rank("llama-7", 5)->summary, "runs its SMs at 1700 MHz vs 1980 MHz");
    fill(&v, &v.gpus[5], GP_VGM_SM_CLOCK, 1980e6);
    double *rp = gp_view_gpu_series(&v, &v.gpus[5], GP_VGM_PCIE_REPLAY);
    for (unsigned k = 0; k < NPTS; k++)
        rp[k] = 100 + 10 * k;
    CHECK_INT(run(GP_DET_STRAGGLER, &v), GP_OK);
    CHECK_CONTAINS(about_rank("llama-7", 5)->summary, "PCIe replays on GPU 5 rose by 390");
    gp_view_free(&v);

    /* identical ranks (MAD 0) with 1 % of jitter on one: not an outlier */
    new_view(&v);
    for (int r = 0; r < 4; r++) {
        snprintf(gpu, sizeof gpu, "%d", r);
        add_gpu(&v, "n1", gpu, "same", r);
        add_proc(&v, "n1", "same", r, r == 2 ? 0.303 : 0.3);
    }
    CHECK_INT(gp_view_index_jobs(&v), GP_OK);
    CHECK_INT(run(GP_DET_STRAGGLER, &v), GP_OK);
    CHECK_INT(nobs, 4);
    CHECK_INT(nbad(), 0);
    gp_view_free(&v);

    /* no step reporters: a GPU whose activity is far below its peers' */
    new_view(&v);
    for (int r = 0; r < 4; r++) {
        snprintf(gpu, sizeof gpu, "%d", r);
        add_gpu(&v, "n1", gpu, "nosteps", r);
    }
    fill(&v, &v.gpus[2], GP_VGM_SM_ACTIVE, 0.3);
    CHECK_INT(gp_view_index_jobs(&v), GP_OK);
    CHECK_INT(run(GP_DET_STRAGGLER, &v), GP_OK);
    CHECK_INT(nobs, 4);
    o = about_gpu("n1", "2");
    CHECK(o && o->bad);
    CHECK_CONTAINS(o->summary, "GPU 2 on n1 (job nosteps rank 2) lags its job: activity 30 %");
    CHECK_INT(nbad(), 1);
    gp_view_free(&v);
}

static void test_budget(void)
{
    struct gp_view v;
    healthy_job(&v);
    struct gp_view_gpu *g = add_gpu(&v, "n2", "0", "cheap", 0);
    (void)g;
    add_gpu(&v, "n2", "1", "nobudget", 0);
    CHECK_INT(gp_view_index_jobs(&v), GP_OK);
    for (unsigned i = 0; i < v.njobs; i++) {
        if (!strcmp(v.jobs[i].job, "bert-1")) {
            v.jobs[i].budget = 100;
            v.jobs[i].cost = 120;
        } else if (!strcmp(v.jobs[i].job, "cheap")) {
            v.jobs[i].budget = 100;
            v.jobs[i].cost = 50;
        } else {
            v.jobs[i].cost = 999;
        }
    }
    CHECK_INT(run(GP_DET_BUDGET, &v), GP_OK);
    CHECK_INT(nobs, 2);
    CHECK(about_rank("bert-1", -1)->bad);
    CHECK_DBL(about_rank("bert-1", -1)->value, 1.2, 1e-9);
    CHECK_CONTAINS(about_rank("bert-1", -1)->summary,
                   "job bert-1 has cost $120.00 of its $100.00 budget (120 %) on 4 GPUs");
    CHECK(!about_rank("cheap", -1)->bad);
    /* one GPU, no step reporter: the words agree with the counts */
    all_active = true;
    CHECK_INT(run(GP_DET_BUDGET, &v), GP_OK);
    all_active = false;
    CHECK_STR(about_rank("cheap", -1)->summary, "job cheap has cost $50.00 of its $100.00 budget (50 %) on 1 GPU");
    CHECK_CONTAINS(about_rank("cheap", -1)->evidence, "; 1 GPU, 0 step reporters in the window");
    gp_view_free(&v);
}

/* low_goodput: a job whose goodput is under the threshold fires and
 * names its biggest badput; one above, one with too little time to judge
 * and one without goodput are quiet (or not judged). */
static void test_low_goodput(void)
{
    struct gp_view v;
    healthy_job(&v);
    add_gpu(&v, "n2", "0", "good", 0);
    add_gpu(&v, "n2", "1", "young", 0);
    add_gpu(&v, "n2", "2", "silent", 0);
    CHECK_INT(gp_view_index_jobs(&v), GP_OK);
    for (unsigned i = 0; i < v.njobs; i++) {
        struct gp_view_job *j = &v.jobs[i];
        CHECK(isnan(j->goodput_ratio) && j->badput == -1); /* unknown until the server fills it */
        if (!strcmp(j->job, "bert-1"))
            j->goodput_ratio = 0.31, j->goodput_wall_s = 3600, j->badput = GP_GOODPUT_CHECKPOINT,
            j->badput_s = 1620;
        else if (!strcmp(j->job, "good"))
            j->goodput_ratio = 0.8, j->goodput_wall_s = 3600, j->badput = GP_GOODPUT_IDLE, j->badput_s = 300;
        else if (!strcmp(j->job, "young"))
            j->goodput_ratio = 0.05, j->goodput_wall_s = 120, j->badput = GP_GOODPUT_STARTUP,
            j->badput_s = 110;
    }
    CHECK_INT(run(GP_DET_LOW_GOODPUT, &v), GP_OK);
    CHECK_INT(nobs, 2); /* young: too little time; silent: no goodput */
    const struct gp_observation *o = about_rank("bert-1", -1);
    CHECK(o && o->bad);
    CHECK_DBL(o->value, 0.31, 1e-12);
    CHECK_STR(o->summary, "job bert-1 trained the model 31 % of its time; the biggest badput is checkpoint (45 %)");
    CHECK_CONTAINS(o->evidence, "goodput 0.310 over 3600 rank-seconds; checkpoint 1620.0 s; threshold 0.50");
    CHECK(!about_rank("good", -1)->bad);
    CHECK_INT(nbad(), 1);
    gp_view_free(&v);
}

/* Blanks points [0, k) of every series of g (p): no readings yet. */
static void young_gpu(struct gp_view *v, struct gp_view_gpu *g, unsigned k)
{
    for (int m = 0; m < GP_VGM__COUNT; m++)
        for (unsigned i = 0; i < k; i++)
            gp_view_gpu_series(v, g, (enum gp_vgm)m)[i] = NAN;
}

static void young_proc(struct gp_view *v, struct gp_view_proc *p, unsigned k)
{
    for (int m = 0; m < GP_VPM__COUNT; m++)
        for (unsigned i = 0; i < k; i++)
            gp_view_proc_series(v, p, (enum gp_vpm)m)[i] = NAN;
}

/* A server younger than its window (9m45s, 40 points): the texts state
 * the span and points the detector judged, not the configured window. */
static void test_young_window(void)
{
    struct gp_view v;
    healthy_job(&v);
    /* GPU 2 and rank 0 reported for the last 1m30s only: 7 points */
    young_gpu(&v, &v.gpus[2], NPTS - 7);
    young_proc(&v, &v.procs[0], NPTS - 7);
    fill(&v, &v.gpus[2], GP_VGM_MEM_USED, 77 * GIB);
    young_gpu(&v, &v.gpus[2], NPTS - 7);
    fill(&v, &v.gpus[3], GP_VGM_MEM_USED, 77 * GIB);
    CHECK_INT(run(GP_DET_MEMORY_HIGH, &v), GP_OK);
    const struct gp_observation *o = about_gpu("n1", "2");
    CHECK(o && o->bad);
    CHECK_CONTAINS(o->evidence, "over the last 1m30s (7 points 15s apart): min 77.00");
    /* its neighbour has the whole window */
    CHECK_CONTAINS(about_gpu("n1", "3")->evidence, "over the last 9m45s (40 points 15s apart)");

    /* a process's text states the process's span */
    fillp(&v, &v.procs[0], GP_VPM_ALLOCATED, 10 * GIB);
    fillp(&v, &v.procs[0], GP_VPM_RESERVED, 18 * GIB);
    young_proc(&v, &v.procs[0], NPTS - 7);
    CHECK_INT(run(GP_DET_FRAGMENTATION, &v), GP_OK);
    o = about_rank("bert-1", 0);
    CHECK(o && o->bad);
    CHECK_CONTAINS(o->evidence, "at the newest point of the last 1m30s (7 points 15s apart)");

    /* gaps: the points that hold readings, on the grid they lie on */
    for (unsigned k = 0; k < NPTS - 10; k += 2)
        for (int m = 0; m < GP_VGM__COUNT; m++)
            gp_view_gpu_series(&v, &v.gpus[3], (enum gp_vgm)m)[k] = NAN;
    CHECK_INT(run(GP_DET_MEMORY_HIGH, &v), GP_OK);
    CHECK_CONTAINS(about_gpu("n1", "3")->evidence, "over the last 9m30s (25 points on a 15s grid)");

    /* one point: singular, no span */
    young_gpu(&v, &v.gpus[2], NPTS - 1);
    CHECK_INT(run(GP_DET_MEMORY_HIGH, &v), GP_OK);
    CHECK_CONTAINS(about_gpu("n1", "2")->evidence, "over the newest point (1 point): min 77.00");
    gp_view_free(&v);
}

/* The view's span text directly: what it says for each shape. */
static void test_span_text(void)
{
    struct gp_view v;
    new_view(&v);
    struct gp_view_gpu *g = gp_view_add_gpu(&v);
    CHECK(g);
    char t[96];
    struct gp_view_span s = gp_view_gpu_span(&v, g, 0);
    CHECK_INT(s.n, 0);
    CHECK_INT(s.first, NPTS);
    gp_view_span_text(&v, s, t, sizeof t);
    CHECK_STR(t, "no points");
    double *x = gp_view_gpu_series(&v, g, GP_VGM_TEMP);
    x[NPTS - 2] = x[NPTS - 1] = 60;
    s = gp_view_gpu_span(&v, g, 0);
    CHECK_INT(s.first, NPTS - 2);
    CHECK_INT(s.n, 2);
    gp_view_span_text(&v, s, t, sizeof t);
    CHECK_STR(t, "the last 15s (2 points 15s apart)");
    x[NPTS - 2] = NAN;
    x[NPTS - 3] = 60; /* one reading, then a missing point */
    gp_view_span_text(&v, gp_view_gpu_span(&v, g, 0), t, sizeof t);
    CHECK_STR(t, "the last 30s (2 points on a 15s grid)");
    /* from: only the points the detector looked at */
    gp_view_span_text(&v, gp_view_gpu_span(&v, g, NPTS - 1), t, sizeof t);
    CHECK_STR(t, "the newest point (1 point)");
    gp_view_free(&v);
}

/* Every detector passes the engine's out-of-memory answer back. */
static void test_emit_failure(void)
{
    struct gp_view v;
    healthy_job(&v);
    v.jobs[0].budget = 10;
    v.jobs[0].cost = 1;
    v.jobs[0].goodput_ratio = 0.9;
    v.jobs[0].goodput_wall_s = 600;
    fail_emit = true;
    for (int d = 0; d < GP_DET__COUNT; d++)
        if (run((enum gp_detector)d, &v) != GP_ENOMEM)
            gp_test_fail(__FILE__, __LINE__, "%s ignored a failed emit", gp_detectors[d].name);
    fail_emit = false;
    gp_view_free(&v);
}

/* docs/insight.md's detector table names every detector with its
 * defaults as the code has them. */
static void test_docs_table(void)
{
    const char *doc = strstr(gp_test_repo_text("docs/insight.md"), "## Detectors");
    CHECK(doc);
    for (int d = 0; d < GP_DET__COUNT; d++) {
        const struct gp_detector_info *i = &gp_detectors[d];
        char row[128];
        snprintf(row, sizeof row, "| `%s` | ", i->name);
        const char *r = strstr(doc, row);
        if (!r)
            gp_test_fail(__FILE__, __LINE__, "docs/insight.md has no row for %s", i->name);
        /* cells: name, scope, severity, judges, threshold, clear, for */
        char line[1024], *cell[8] = {0};
        snprintf(line, sizeof line, "%.*s", (int)strcspn(r + 1, "\n"), r + 1);
        int n = 0;
        for (char *save = NULL, *t = strtok_r(line, "|", &save); t && n < 8; t = strtok_r(NULL, "|", &save)) {
            while (*t == ' ')
                t++;
            t[strcspn(t, " ")] = n == 3 ? t[strcspn(t, " ")] : '\0';
            cell[n++] = t;
        }
        CHECK_INT(n, 7);
        CHECK_STR(cell[2], gp_severity_names[i->severity]);
        CHECK_DBL(strtod(cell[4], NULL), i->threshold, 1e-12);
        CHECK_DBL(strtod(cell[5], NULL), i->clear, 1e-12);
        CHECK_STR(cell[6], i->for_);
    }
}

const struct gp_test gp_tests_detect[] = {
    {"docs_table", test_docs_table},
    {"table_defaults", test_table_defaults},
    {"healthy_job_is_silent", test_healthy_job_is_silent},
    {"memory_high", test_memory_high},
    {"hysteresis", test_hysteresis},
    {"oom_predicted_in_time", test_oom_predicted_in_time},
    {"oom_silent", test_oom_silent},
    {"memory_leak", test_memory_leak},
    {"memory_leak_plateau", test_memory_leak_plateau},
    {"memory_leak_stepwise", test_memory_leak_stepwise},
    {"oom_short_span", test_oom_short_span},
    {"fragmentation", test_fragmentation},
    {"saturated", test_saturated},
    {"idle_allocated", test_idle_allocated},
    {"data_starved", test_data_starved},
    {"no_tensor_cores", test_no_tensor_cores},
    {"memory_bound", test_memory_bound},
    {"throttled", test_throttled},
    {"hw_errors", test_hw_errors},
    {"xid_first_appearance", test_xid_first_appearance},
    {"straggler", test_straggler},
    {"budget", test_budget},
    {"low_goodput", test_low_goodput},
    {"hw_actions", test_hw_actions},
    {"pcie_degraded", test_pcie_degraded},
    {"young_window", test_young_window},
    {"span_text", test_span_text},
    {"emit_failure", test_emit_failure},
    {0},
};
