/*
 * test_jobmodel.c - the job model (query/jobmodel.h): its arithmetic, and
 * one recorded step stream (steps, wait, samples, loss) fed through both
 * paths that build a job document, compared field by field:
 *   in process  the step protocol's records into gpulse run's history
 *               (run/history.h), as run_cmd.c's step observer does;
 *   server      the same records summed into the steps source's counters,
 *               sampled every 200 ms as the agent renders them (the last
 *               sample after the job's end, as the end record's tick is),
 *               appended to a store and read back by the job document
 *               (query/jobdoc.h), as GET /api/v1/jobs/ID does.
 */
#include "lib/err.h"
#include "query/jobdoc.h"
#include "query/jobmodel.h"
#include "run/history.h"
#include "sources/steps_proto.h"
#include "rw_batch.h"
#include "store_testlib.h"
#include "test.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define JOB "run-model-1"
#define CMD "python train.py --loader slow"

/* Straggler scores: relative to the fastest rank, individual to the
 * rank's own best; unknown for a rank without steps, which is left out
 * of "the fastest". */
static void test_rank_scores(void)
{
    struct gp_jobmodel_rank r[3];
    for (int i = 0; i < 3; i++)
        gp_jobmodel_rank_init(&r[i]);
    gp_jobmodel_rank_interval(&r[0], 10, 2);    /* 0.2 s */
    gp_jobmodel_rank_interval(&r[0], 10, 2);
    gp_jobmodel_rank_interval(&r[1], 10, 2);    /* 0.2 s, then 0.3 s */
    gp_jobmodel_rank_interval(&r[1], 10, 3);
    gp_jobmodel_rank_interval(&r[1], 0, 5);     /* no steps: ignored */
    gp_jobmodel_rank_interval(&r[2], NAN, 1);
    struct gp_jobmodel_rank_figures f;
    gp_jobmodel_rank_figures(r, 3, 0, &f);
    CHECK_DBL(f.step_mean, 0.2, 1e-12);
    CHECK_DBL(f.relative, 1, 1e-12);
    CHECK_DBL(f.individual, 1, 1e-12);
    gp_jobmodel_rank_figures(r, 3, 1, &f);
    CHECK_DBL(f.step_mean, 0.25, 1e-12);
    CHECK_DBL(f.step_best, 0.2, 1e-12);
    CHECK_DBL(f.relative, 0.8, 1e-12);
    CHECK_DBL(f.individual, 0.8, 1e-12);
    gp_jobmodel_rank_figures(r, 3, 2, &f);
    CHECK(isnan(f.step_mean) && isnan(f.step_best) && isnan(f.relative) && isnan(f.individual));
}

static void test_figures(void)
{
    struct gp_jobmodel_steps *m = malloc(sizeof *m);
    CHECK(m);
    gp_jobmodel_steps_init(m);
    struct gp_jobmodel_step_figures f;
    gp_jobmodel_step_figures(m, &f);
    CHECK(isnan(f.steps) && isnan(f.mean) && isnan(f.p50) && isnan(f.data_wait_ratio));
    CHECK(isnan(f.steps_per_second) && isnan(f.samples));
    /* 9 steps of 0.1 s and one of 1 s, 0.05 s of wait each, 8 samples */
    double t = 1000;
    for (int i = 0; i < 10; i++) {
        double s = i == 9 ? 1.0 : 0.1;
        t += s;
        gp_jobmodel_step(m, t, s, 0.05, 8, NAN);
    }
    gp_jobmodel_step_figures(m, &f);
    CHECK_DBL(f.steps, 10, 0);
    CHECK_DBL(f.mean, 0.19, 1e-12);
    CHECK_DBL(f.p50, 0.1, 1e-12);
    CHECK_DBL(f.p90, 0.1, 1e-12);
    CHECK_DBL(f.p99, 1.0, 1e-12);
    CHECK_DBL(f.max, 1.0, 0);
    CHECK_DBL(f.stepping_seconds, 1.9, 1e-9);
    CHECK_DBL(f.samples_per_second, 80 / 1.9, 1e-9);
    CHECK(isnan(f.tokens) && isnan(f.tokens_per_second));
    CHECK_DBL(f.data_wait_ratio, 0.5 / 1.9, 1e-12);
    /* An interval of 4 steps in 2 s weighs 4 steps of 0.5 s. */
    gp_jobmodel_interval(m, 4, 2.0);
    gp_jobmodel_step_figures(m, &f);
    CHECK_DBL(f.p90, 0.5, 1e-12);
    free(m);

    struct gp_jobmodel_gpus a;
    gp_jobmodel_gpus_init(&a);
    struct gp_jobmodel_gpu_figures g;
    gp_jobmodel_gpu_figures(&a, NULL, 0, false, NAN, &g);
    CHECK(isnan(g.gpu_seconds) && isnan(g.cost) && isnan(g.activity_p50) && isnan(g.price_per_gpu_hour));
    gp_jobmodel_gpu_figures(&a, NULL, 0, true, 2.5, &g); /* seen holding no GPU */
    CHECK(g.gpu_seconds == 0 && g.gpu_hours == 0 && g.cost == 0 && g.price_per_gpu_hour == 2.5);
    CHECK(isnan(g.activity_avg));
    /* two GPUs: one priced at 3.6/h, 100 s at 0.5; one unpriced, 100 s at 1 */
    struct gp_jobmodel_gpu two[2] = {{100, 50, 100, 1e9, 4e9, 3.6, NAN, NAN}, {100, 100, 100, 3e9, 4e9, NAN, NAN, NAN}};
    gp_jobmodel_busy(&two[0].idle_s, &two[0].unused_s, 0.5, 90);
    gp_jobmodel_busy(&two[0].idle_s, &two[0].unused_s, 0.01, 10); /* idle */
    gp_jobmodel_busy(&two[1].idle_s, &two[1].unused_s, 1.0, 100);
    CHECK_DBL(two[0].idle_s, 10, 0);
    CHECK_DBL(two[0].unused_s, 45 + 9.9, 1e-12);
    gp_jobmodel_activity(&a, 0.5, 100);
    gp_jobmodel_activity(&a, 1.0, 100);
    gp_jobmodel_gpu_figures(&a, two, 2, false, NAN, &g);
    CHECK_DBL(g.gpu_seconds, 200, 0);
    CHECK_DBL(g.activity_avg, 0.75, 1e-12);
    CHECK_DBL(g.activity_p50, 0.5, 1e-12);
    CHECK_DBL(g.activity_p90, 1.0, 1e-12);
    CHECK_DBL(g.peak_memory_bytes, 3e9, 0);
    CHECK_DBL(g.peak_memory_ratio, 0.75, 1e-12);
    CHECK_DBL(g.cost, 0.1, 1e-12);
    CHECK_DBL(g.price_per_gpu_hour, 3.6, 1e-12);
    CHECK_DBL(g.cost_idle, 10 * 0.001, 1e-12);           /* the priced GPU's 10 idle seconds */
    CHECK_DBL(g.cost_unused_compute, 54.9 * 0.001, 1e-12); /* the unpriced one is not counted */

    CHECK_INT(gp_jobmodel_rank(-1, 1), 0);
    CHECK_INT(gp_jobmodel_rank(-1, 2), -1);
    CHECK_INT(gp_jobmodel_rank(3, 4), 3);
    CHECK_INT(gp_jobmodel_world_size(-1, 1), 1);
    CHECK_INT(gp_jobmodel_world_size(-1, 2), -1);
}

/* ---- MFU ---- */

/* Model FLOPs utilization against a hand computation from the declared
 * FLOPs and the data-sheet peaks (H100 SXM: 989.4 dense bf16 TFLOP/s,
 * 1978.9 fp8). */
static void test_mfu_arithmetic(void)
{
    const char *h100[8];
    for (int i = 0; i < 8; i++)
        h100[i] = "NVIDIA H100 80GB HBM3"; /* the driver's name */
    /* a 7B model training in bf16 on 8 H100s at 120,000 tokens/s */
    struct gp_jobmodel_mfu_in in = {.flops_token = 6 * 7e9, .flops_sample = NAN, .precision = GP_PREC_BF16,
                                    .tokens_per_second = 120000, .samples_per_second = 30,
                                    .models = h100, .ngpus = 8, .activity = NAN, .tensor_active = NAN,
                                    .dram_active = NAN, .link_busy = NAN};
    struct gp_jobmodel_mfu m;
    gp_jobmodel_mfu(&in, &m);
    CHECK_DBL(m.achieved_flops_per_second, 5.04e15, 1);
    CHECK_DBL(m.peak_flops_per_second, 8 * 989.4e12, 1);
    CHECK_DBL(m.mfu, 5.04e15 / 7.9152e15, 1e-12); /* 0.6368 */
    CHECK_STR(m.per, "token");
    CHECK_STR(m.why, "");
    CHECK_STR(m.gap, "");
    /* the same job in fp8: half the MFU against twice the peak */
    in.precision = GP_PREC_FP8;
    gp_jobmodel_mfu(&in, &m);
    CHECK_DBL(m.mfu, 5.04e15 / (8 * 1978.9e12), 1e-12);
    /* per sample when only that was declared: 30 samples/s x 1.68e11 */
    in.precision = GP_PREC_BF16;
    in.flops_token = NAN;
    in.flops_sample = 1.68e11;
    gp_jobmodel_mfu(&in, &m);
    CHECK_STR(m.per, "sample");
    CHECK_DBL(m.mfu, 30 * 1.68e11 / 7.9152e15, 1e-12);
    /* a mixed job sums its GPUs' peaks: one H100 and one A100 (312) */
    const char *mixed[2] = {"H100", "NVIDIA A100-SXM4-80GB"};
    in.models = mixed;
    in.ngpus = 2;
    gp_jobmodel_mfu(&in, &m);
    CHECK_DBL(m.peak_flops_per_second, (989.4 + 312) * 1e12, 1);

    /* n/a, each with its reason */
    struct {
        double ft, fs, tps;
        int prec;
        const char *model;
        size_t ngpus;
        const char *why;
    } na[] = {
        {NAN, NAN, 100, GP_PREC_BF16, "H100", 1, "no model FLOPs declared (a model record: gpulse.model())"},
        {1e9, NAN, NAN, GP_PREC_BF16, "H100", 1, "the steps reported no tokens"},
        {1e9, NAN, 100, -1, "H100", 1, "no precision declared"},
        {1e9, NAN, 100, GP_PREC_BF16, "H100", 0, "the job held no GPU"},
        {1e9, NAN, 100, GP_PREC_BF16, "NVIDIA Quadro K600", 1,
         "GPU model 'NVIDIA Quadro K600' is not in the model table"},
        {1e9, NAN, 100, GP_PREC_BF16, "V100", 1, "the model table has no bf16 peak for the V100"},
        {1e9, NAN, 100, GP_PREC_FP8, "A100", 1, "the model table has no fp8 peak for the A100"},
    };
    for (size_t i = 0; i < sizeof na / sizeof na[0]; i++) {
        struct gp_jobmodel_mfu_in x = {.flops_token = na[i].ft, .flops_sample = na[i].fs,
                                       .precision = na[i].prec, .tokens_per_second = na[i].tps,
                                       .samples_per_second = NAN, .models = &na[i].model,
                                       .ngpus = na[i].ngpus, .activity = 0.9, .tensor_active = NAN,
                                       .dram_active = NAN, .link_busy = NAN};
        gp_jobmodel_mfu(&x, &m);
        CHECK(isnan(m.mfu));
        CHECK_STR(m.why, na[i].why);
        CHECK_STR(m.gap, ""); /* nothing to explain without an MFU */
    }
}

/* Activity high, MFU low: the gap explained by the hardware's figures. */
static void test_mfu_gap(void)
{
    const char *one = "H100";
    struct gp_jobmodel_mfu_in in = {.flops_token = 1e9, .flops_sample = NAN, .precision = GP_PREC_BF16,
                                    .tokens_per_second = 98940, /* 1e14 FLOP/s: MFU 0.101 */
                                    .samples_per_second = NAN, .models = &one, .ngpus = 1,
                                    .activity = 0.95, .tensor_active = NAN, .dram_active = NAN,
                                    .link_busy = NAN};
    struct gp_jobmodel_mfu m;
    gp_jobmodel_mfu(&in, &m);
    CHECK(strstr(m.gap, "GPU activity 95% but MFU 10.0%: ") == m.gap);
    CHECK(strstr(m.gap, "small kernels"));
    in.link_busy = 0.8;
    gp_jobmodel_mfu(&in, &m);
    CHECK(strstr(m.gap, "communication: the links are 80% busy"));
    in.link_busy = 0.1, in.dram_active = 0.7;
    gp_jobmodel_mfu(&in, &m);
    CHECK(strstr(m.gap, "memory-bound: DRAM is 70% busy"));
    in.dram_active = 0.1, in.tensor_active = 0.05;
    gp_jobmodel_mfu(&in, &m);
    CHECK(strstr(m.gap, "tensor cores busy only 5%"));
    /* no gap: activity low too, or MFU near it */
    in.activity = 0.15;
    gp_jobmodel_mfu(&in, &m);
    CHECK_STR(m.gap, "");
    in.activity = 0.9, in.tokens_per_second = 98940 * 5; /* MFU 0.505 */
    gp_jobmodel_mfu(&in, &m);
    CHECK_STR(m.gap, "");
}

/* The per-precision peaks of the model table (gpumodels.c's sources). */
static void test_peaks_by_precision(void)
{
    const struct gp_gpumodel *h = gp_gpumodel_find("NVIDIA H100 80GB HBM3");
    CHECK_DBL(gp_gpumodel_peak_tflops(h, GP_PREC_BF16), 989.4, 0);
    CHECK_DBL(gp_gpumodel_peak_tflops(h, GP_PREC_FP16), 989.4, 0);
    CHECK_DBL(gp_gpumodel_peak_tflops(h, GP_PREC_FP8), 1978.9, 0);
    CHECK_DBL(gp_gpumodel_peak_tflops(h, GP_PREC_TF32), 494.7, 0);
    CHECK_DBL(gp_gpumodel_peak_tflops(h, GP_PREC_FP32), 67, 0);
    CHECK_DBL(gp_gpumodel_peak_tflops(gp_gpumodel_find("MI300X"), GP_PREC_FP8), 2614.9, 0);
    CHECK_DBL(gp_gpumodel_peak_tflops(gp_gpumodel_find("V100"), GP_PREC_FP16), 125, 0);
    CHECK_DBL(gp_gpumodel_peak_tflops(gp_gpumodel_find("V100"), GP_PREC_BF16), 0, 0);
    CHECK_DBL(gp_gpumodel_peak_tflops(NULL, GP_PREC_BF16), 0, 0);
    /* every row: dense fp8 about 2x fp16, tf32 about half of it,
     * the ordering of every data sheet (a sparse figure would break it) */
    for (size_t i = 0; i < gp_gpumodel_count(); i++) {
        const struct gp_gpumodel *m = gp_gpumodel_at(i);
        double bf = gp_gpumodel_peak_tflops(m, GP_PREC_FP16), tf = gp_gpumodel_peak_tflops(m, GP_PREC_TF32),
               f8 = gp_gpumodel_peak_tflops(m, GP_PREC_FP8);
        if (!(tf <= bf * 0.51 + 1e-9 && f8 <= bf * 2.05 && gp_gpumodel_peak_tflops(m, GP_PREC_FP32) > 0))
            gp_test_fail(__FILE__, __LINE__, "%s: fp16 %g, tf32 %g, fp8 %g", m->short_name, bf, tf, f8);
    }
    enum gp_precision p;
    CHECK(gp_precision_parse("fp8", 3, &p) && p == GP_PREC_FP8);
    CHECK(!gp_precision_parse("fp8x", 4, &p) && !gp_precision_parse("FP8", 3, &p));
    CHECK_STR(gp_precision_name(GP_PREC_TF32), "tf32");
}

/* ---- one stream, two paths ---- */

/* The steps source's counters of one process, as its series carry them. */
struct counters {
    double steps, seconds, wait, samples, loss; /* loss: a gauge, the newest */
};

struct feed {
    struct gp_history *h;
    struct counters c;
};

static void on_record(void *ctx, const struct gp_steps_record *r)
{
    struct feed *f = ctx;
    if (r->kind == GP_STEPS_MODEL) /* as run_cmd.c's observer */
        gp_history_model(f->h, gp_steps_flops_per_token(r), 0, (int)r->precision);
    if (r->kind != GP_STEPS_STEP)
        return;
    struct gp_history_step s = {
        .t_end = r->t, .seconds = r->dur,
        .has_samples = r->has & GP_SK_SAMPLES, .samples = r->samples,
        .has_wait = r->has & GP_SK_WAIT, .wait_seconds = r->wait,
        .has_loss = r->has & GP_SK_LOSS, .loss = r->loss,
    };
    gp_history_step(f->h, &s);
    f->c.steps++;
    f->c.seconds += r->dur;
    f->c.wait += r->wait;
    f->c.samples += r->samples;
    f->c.loss = r->loss;
}

/* The recorded stream: 400 steps of a loop waiting 0.06 s for data and
 * computing 0.04 s. The first 300 report the whole step as dur; the last
 * 100 come from a client that timed only its compute (dur 0.04, wait
 * 0.06), which the protocol reads as all wait. */
#define NSTEPS 400
static int stream_line(int i, double *t, char *out, size_t len)
{
    *t += 0.1;
    return snprintf(out, len, "step seq=%d n=%d dur=%s wait=0.06 samples=8 loss=%.4f t=%.6f\n", i + 1,
                    i + 1, i < 300 ? "0.1" : "0.04", 2.0 - 0.001 * i, *t);
}

/* Appends the counters' samples (times in s) to st in batches. */
static void append(struct gp_storage *st, const double *t, struct counters *v, size_t n)
{
    static struct rw_batch b;
    const char *lab = "job=" JOB ";Hostname=n1;pid=4242";
    for (size_t k = 0; k < n; k += RW_BATCH_SAMPLES) {
        size_t m = n - k < RW_BATCH_SAMPLES ? n - k : RW_BATCH_SAMPLES;
        double x[5][RW_BATCH_SAMPLES], one[RW_BATCH_SAMPLES], zero[RW_BATCH_SAMPLES] = {0};
        for (size_t i = 0; i < m; i++) {
            x[0][i] = v[k + i].steps;
            x[1][i] = v[k + i].seconds;
            x[2][i] = v[k + i].wait;
            x[3][i] = v[k + i].samples;
            x[4][i] = v[k + i].loss;
            one[i] = 1;
        }
        memset(&b, 0, sizeof b);
        rw_batch_add(&b, "gpulse_job_steps_total", lab, t + k, x[0], m);
        rw_batch_add(&b, "gpulse_job_step_seconds_total", lab, t + k, x[1], m);
        rw_batch_add(&b, "gpulse_job_data_wait_seconds_total", lab, t + k, x[2], m);
        rw_batch_add(&b, "gpulse_job_samples_total", lab, t + k, x[3], m);
        rw_batch_add(&b, "gpulse_job_loss", lab, t + k, x[4], m);
        rw_batch_add(&b, "gpulse_job_info", "job=" JOB ";Hostname=n1;scheme=gpulse_run;command=" CMD,
                     t + k, one, m);
        rw_batch_add(&b, "gpulse_job_gpus", "job=" JOB ";Hostname=n1", t + k, zero, m); /* none held */
        double flops[RW_BATCH_SAMPLES];
        for (size_t i = 0; i < m; i++)
            flops[i] = 6e6; /* the model record below, as the agent renders it */
        rw_batch_add(&b, "gpulse_job_model_flops", "job=" JOB ";Hostname=n1;pid=4242;per=token;precision=fp16",
                     t + k, flops, m);
        struct gp_batch rq = rw_batch_request(&b);
        struct gp_append_result res;
        char err[256];
        CHECK_INT(gp_storage_append(st, &rq, &res, err, sizeof err), GP_OK);
    }
}

static json_t *at(json_t *o, const char *path)
{
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *save = NULL, *p = strtok_r(tmp, ".", &save); p && o; p = strtok_r(NULL, ".", &save))
        o = json_is_array(o) ? json_array_get(o, (size_t)atoi(p)) : json_object_get(o, p);
    return o;
}

/* Field `path` agrees in both documents: the same JSON kind, numbers
 * within rel (relative). */
static void same(json_t *a, json_t *b, const char *path, double rel)
{
    json_t *x = at(a, path), *y = at(b, path);
    if (!x || !y)
        gp_test_fail(__FILE__, __LINE__, "%s: missing in the %s document", path, x ? "server's" : "local");
    if (json_is_number(x) && json_is_number(y)) {
        double u = json_number_value(x), v = json_number_value(y);
        if (!(fabs(u - v) <= rel * fmax(fabs(u), fabs(v))))
            gp_test_fail(__FILE__, __LINE__, "%s: local %.9g, server %.9g", path, u, v);
        return;
    }
    if (!json_equal(x, y)) {
        char *s = json_dumps(x, JSON_ENCODE_ANY), *t = json_dumps(y, JSON_ENCODE_ANY);
        gp_test_fail(__FILE__, __LINE__, "%s: local %s, server %s", path, s, t);
    }
}

static void test_one_stream_two_paths(void)
{
    struct gp_history_options o = {JOB, CMD, 0.2, 0, 0};
    struct feed f;
    memset(&f, 0, sizeof f);
    f.h = gp_history_new(&o);
    CHECK(f.h);
    /* one tick of the job's process tree: one process, no rank said */
    struct gp_frame fr;
    gp_frame_init(&fr);
    snprintf(fr.hostname, sizeof fr.hostname, "n1");
    double t0 = (double)(time(NULL) / 10 * 10 - 1200); /* the store takes recent samples */
    fr.time_ms = (int64_t)t0 * 1000;
    struct gp_job *j = gp_frame_add_job(&fr);
    CHECK(j);
    snprintf(j->id.job, sizeof j->id.job, "%s", JOB);
    j->id.rank = j->id.local_rank = j->id.world_size = -1;
    j->nprocs = 1;
    gp_history_frame(f.h, &fr);
    gp_frame_free(&fr);

    /* The stream: each tick (every 200 ms) first takes the records that
     * arrived since the last one, then samples the counters. */
    double t = t0, tick = t0 + 0.2;
    static double ts[NSTEPS + 2];
    static struct counters cs[NSTEPS + 2];
    size_t ns = 0;
    char dgram[GP_STEPS_DGRAM_MAX];
    size_t len = (size_t)snprintf(dgram, sizeof dgram, "model params=1e6 precision=fp16\n");
    for (int i = 0; i <= NSTEPS; i++) {
        double te = t;
        char line[160] = "";
        if (i < NSTEPS)
            stream_line(i, &te, line, sizeof line);
        else
            tick = te + 0.1; /* the end record's tick, after the job's end */
        while (tick < te || (i == NSTEPS && len)) {
            unsigned bad = 0;
            gp_steps_parse(dgram, len, on_record, &f, &bad);
            CHECK_INT(bad, 0);
            len = 0;
            ts[ns] = tick;
            cs[ns++] = f.c;
            tick += 0.2;
        }
        len += (size_t)snprintf(dgram + len, sizeof dgram - len, "%s", line);
        t = te;
    }
    /* the job ended before the tick that sampled its last steps */
    double end = t + 0.05;
    CHECK(ts[ns - 1] > end && ts[ns - 2] < end);
    CHECK_DBL(f.c.steps, NSTEPS, 0);
    gp_history_finish(f.h, end, 0, NULL);
    json_t *local = gp_history_document(f.h);
    CHECK(local);

    struct gp_storage *st = sopen_tmp();
    append(st, ts, cs, ns);
    struct gp_jobdoc_rank rank = {.node = "n1", .rank = GP_JOBDOC_NONE, .local_rank = GP_JOBDOC_NONE,
                                  .world_size = GP_JOBDOC_NONE};
    struct gp_jobdoc_in in = {
        .id = JOB, .scheme = "gpulse_run", .state = "finished",
        .start_ms = (int64_t)(t0 * 1000), .end_ms = (int64_t)(end * 1000),
        .range_end_ms = (int64_t)(end * 1000), .exit_status = 0,
        .ranks = &rank, .nranks = 1,
    };
    struct gp_buf out;
    gp_buf_init(&out, 0);
    char err[256];
    CHECK_INT(gp_jobdoc_write(st, &in, &out, err, sizeof err), GP_OK);
    json_error_t je;
    json_t *server = json_loads(out.data, 0, &je);
    if (!server)
        gp_test_fail(__FILE__, __LINE__, "not JSON: %s", je.text);

    /* Who the job is. */
    const char *exact[] = {"id", "scheme", "command", "state", "exit_status", "signal", "world_size",
                           "ranks.0.rank", "ranks.0.local_rank", "ranks.0.node", "nodes"};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        same(local, server, exact[i], 0);
    /* The step stream's sums and what is defined from them alone. */
    const char *sums[] = {"totals.steps", "totals.samples", "totals.tokens", "totals.step_seconds.mean",
                          "totals.data_wait_ratio", "totals.gpu_seconds", "totals.gpu_hours",
                          "totals.activity_avg", "totals.activity_p50", "totals.peak_gpu_memory_bytes",
                          "totals.cost", "totals.price_per_gpu_hour", "totals.currency", "totals.loss_last",
                          "totals.loss_min", "totals.cost_idle", "totals.cost_unused_compute",
                          "totals.precision", "totals.model_flops_per_token", "totals.mfu",
                          "totals.mfu_reason", "ranks.0.mfu", "ranks.0.mfu_reason"};
    for (size_t i = 0; i < sizeof sums / sizeof sums[0]; i++)
        same(local, server, sums[i], 1e-9);
    /* 300 steps of 0.1 s and 100 of 0.04, the latter all wait. */
    CHECK_DBL(json_number_value(at(local, "totals.data_wait_ratio")), (300 * 0.06 + 100 * 0.04) / 34.0, 1e-9);
    /* The server sees the stream at its samples: the percentiles are
     * interval means, the span ends at a sample (1 % of 40 s is 2 ticks),
     * the first loss is the newest at the first sample. */
    const char *near[] = {"totals.step_seconds.p50", "totals.step_seconds.p90", "totals.step_seconds.p99",
                          "totals.step_seconds.max", "totals.stepping_seconds", "totals.steps_per_second",
                          "totals.samples_per_second", "totals.loss_first"};
    for (size_t i = 0; i < sizeof near / sizeof near[0]; i++)
        same(local, server, near[i], 0.01);

    json_decref(server);
    json_decref(local);
    gp_buf_free(&out);
    gp_storage_close(st);
    gp_history_free(f.h);
}

/* The server's job document computes MFU from the stored series: the
 * model record's gpulse_job_model_flops, the token counters, the GPUs'
 * modelName; here a 1.3B model on two ranks of one H100 each, rank 0 at
 * 4096 tokens/s and rank 1 (a straggler) at 2048. */
static void test_mfu_server_document(void)
{
    struct gp_storage *st = sopen_tmp();
    static struct rw_batch b;
    double t0 = (double)(time(NULL) / 10 * 10 - 600);
    for (int k = 0; k < 60; k += RW_BATCH_SAMPLES) {
        double t[RW_BATCH_SAMPLES], steps[RW_BATCH_SAMPLES], secs[RW_BATCH_SAMPLES], tok[2][RW_BATCH_SAMPLES],
            util[RW_BATCH_SAMPLES], flops[RW_BATCH_SAMPLES];
        size_t m = 0;
        for (int i = k; i < 60 && m < RW_BATCH_SAMPLES; i++, m++) {
            t[m] = t0 + i;
            steps[m] = i, secs[m] = i, util[m] = 97, flops[m] = 6 * 1.3e9;
            tok[0][m] = 4096.0 * i, tok[1][m] = 2048.0 * i;
        }
        memset(&b, 0, sizeof b);
        for (int r = 0; r < 2; r++) {
            char lab[96], gpu[128], fl[160];
            snprintf(lab, sizeof lab, "job=mfu-1;rank=%d;Hostname=n1;pid=%d", r, 7 + r);
            snprintf(fl, sizeof fl, "%s;per=token;precision=bf16", lab);
            snprintf(gpu, sizeof gpu, "job=mfu-1;rank=%d;Hostname=n1;gpu=%d;modelName=NVIDIA H100 80GB HBM3", r, r);
            rw_batch_add(&b, "gpulse_job_steps_total", lab, t, steps, m);
            rw_batch_add(&b, "gpulse_job_step_seconds_total", lab, t, secs, m);
            rw_batch_add(&b, "gpulse_job_tokens_total", lab, t, tok[r], m);
            rw_batch_add(&b, "gpulse_job_model_flops", fl, t, flops, m);
            rw_batch_add(&b, "DCGM_FI_DEV_GPU_UTIL", gpu, t, util, m);
        }
        struct gp_batch rq = rw_batch_request(&b);
        struct gp_append_result res;
        char err[256];
        CHECK_INT(gp_storage_append(st, &rq, &res, err, sizeof err), GP_OK);
    }
    struct gp_jobdoc_rank ranks[2] = {
        {.node = "n1", .rank = 0, .local_rank = 0, .world_size = 2},
        {.node = "n1", .rank = 1, .local_rank = 1, .world_size = 2},
    };
    struct gp_jobdoc_in in = {
        .id = "mfu-1", .scheme = "torchelastic", .state = "finished", .start_ms = (int64_t)(t0 * 1000),
        .end_ms = (int64_t)((t0 + 60) * 1000), .range_end_ms = (int64_t)((t0 + 60) * 1000),
        .exit_status = 0, .ranks = ranks, .nranks = 2,
    };
    struct gp_buf out;
    gp_buf_init(&out, 0);
    char err[256];
    CHECK_INT(gp_jobdoc_write(st, &in, &out, err, sizeof err), GP_OK);
    json_error_t je;
    json_t *doc = json_loads(out.data, 0, &je);
    if (!doc)
        gp_test_fail(__FILE__, __LINE__, "not JSON: %s", je.text);
    CHECK_DBL(json_number_value(at(doc, "totals.tokens_per_second")), 6144, 1e-9);
    CHECK_STR(json_string_value(at(doc, "totals.precision")), "bf16");
    CHECK_DBL(json_number_value(at(doc, "totals.model_flops_per_token")), 7.8e9, 0);
    CHECK_DBL(json_number_value(at(doc, "totals.peak_flops_per_second")), 2 * 989.4e12, 1);
    CHECK_DBL(json_number_value(at(doc, "totals.mfu")), 6 * 1.3e9 * 6144 / (2 * 989.4e12), 1e-9);
    CHECK(json_is_null(at(doc, "totals.mfu_reason")));
    /* each rank on its own GPU: the straggler has half the MFU */
    CHECK_DBL(json_number_value(at(doc, "ranks.0.mfu")), 6 * 1.3e9 * 4096 / 989.4e12, 1e-9);
    CHECK_DBL(json_number_value(at(doc, "ranks.1.mfu")), 6 * 1.3e9 * 2048 / 989.4e12, 1e-9);
    CHECK(json_is_null(at(doc, "ranks.1.mfu_reason")));
    /* 97 % active and 2.4 % MFU: the gap is explained */
    const char *gap = json_string_value(at(doc, "totals.mfu_gap"));
    CHECK(gap && strstr(gap, "GPU activity 97% but MFU 2.4%"));
    json_decref(doc);
    gp_buf_free(&out);
    gp_storage_close(st);
}

/* ---- goodput: one stream with phases, two paths; a restart ---- */

/* One process's counters as the agent samples them (phases by
 * enum gp_steps_phase). */
struct gcounters {
    double steps, seconds, wait, step, phase[3];
};

/* Appends samples of process pid's counters at times t (s). */
static void gappend(struct gp_storage *st, const char *pid, const double *t, const struct gcounters *c,
                    size_t n)
{
    static struct rw_batch b;
    char lab[128], plab[3][160];
    snprintf(lab, sizeof lab, "job=%s;Hostname=n1;pid=%s", JOB "-g", pid);
    for (int q = 0; q < 3; q++)
        snprintf(plab[q], sizeof plab[q], "%s;phase=%s", lab, gp_steps_phase_name((enum gp_steps_phase)q));
    for (size_t k = 0; k < n; k += RW_BATCH_SAMPLES) {
        size_t m = n - k < RW_BATCH_SAMPLES ? n - k : RW_BATCH_SAMPLES;
        double x[7][RW_BATCH_SAMPLES];
        for (size_t i = 0; i < m; i++) {
            const struct gcounters *v = &c[k + i];
            double row[7] = {v->steps, v->seconds, v->wait, v->step, v->phase[0], v->phase[1], v->phase[2]};
            for (int q = 0; q < 7; q++)
                x[q][i] = row[q];
        }
        memset(&b, 0, sizeof b);
        rw_batch_add(&b, "gpulse_job_steps_total", lab, t + k, x[0], m);
        rw_batch_add(&b, "gpulse_job_step_seconds_total", lab, t + k, x[1], m);
        rw_batch_add(&b, "gpulse_job_data_wait_seconds_total", lab, t + k, x[2], m);
        rw_batch_add(&b, "gpulse_job_step", lab, t + k, x[3], m);
        for (int q = 0; q < 3; q++)
            rw_batch_add(&b, "gpulse_job_phase_seconds_total", plab[q], t + k, x[4 + q], m);
        struct gp_batch rq = rw_batch_request(&b);
        struct gp_append_result res;
        char err[256];
        CHECK_INT(gp_storage_append(st, &rq, &res, err, sizeof err), GP_OK);
    }
}

/* One attempt's stream from t (s): start-up 2 s, a checkpoint load of 1 s
 * when resuming, steps first..last of 0.1 s (0.04 of it wait), an eval of
 * 0.5 s after every 100th step, 1 s of tail. Fed record by record to h
 * (pid 7) and sampled every 0.2 s into ts/cs; returns the attempt's end. */
static double gstream(struct gp_history *h, double t, int first, int last, double *ts,
                      struct gcounters *cs, size_t *ns)
{
    struct gcounters c = {0};
    double tick = t + 0.2;
    struct gev { double t, dur; int n; const char *phase; } ev[1200];
    size_t ne = 0;
    t += 2;
    if (first > 1) {
        t += 1;
        ev[ne++] = (struct gev){t, 1, 0, "checkpoint_load"};
    }
    for (int n = first; n <= last; n++) {
        t += 0.1;
        ev[ne++] = (struct gev){t, 0.1, n, NULL};
        if (n % 100 == 0) {
            t += 0.5;
            ev[ne++] = (struct gev){t, 0.5, 0, "eval"};
        }
    }
    double end = t + 1;
    for (size_t i = 0; i <= ne; i++) {
        double te = i < ne ? ev[i].t : end + 0.3; /* the last tick after the end */
        while (tick < te) {
            ts[*ns] = tick;
            cs[(*ns)++] = c;
            tick += 0.2;
        }
        if (i == ne)
            break;
        if (ev[i].phase) {
            gp_history_phase(h, 7, ev[i].phase, ev[i].t, ev[i].dur);
            c.phase[gp_steps_phase_of(ev[i].phase)] += ev[i].dur;
        } else {
            struct gp_history_step s = {.t_end = ev[i].t, .seconds = 0.1, .has_wait = true,
                                        .wait_seconds = 0.04, .pid = 7, .n = ev[i].n};
            gp_history_step(h, &s);
            c.steps++, c.seconds += 0.1, c.wait += 0.04, c.step = ev[i].n;
        }
    }
    return end;
}

static void test_goodput_two_paths(void)
{
    double t0 = (double)(time(NULL) / 10 * 10 - 1200);
    struct gp_history_options o = {JOB "-g", CMD, 0.2, 0, t0};
    struct gp_history *h = gp_history_new(&o);
    CHECK(h);
    static double ts[4000];
    static struct gcounters cs[4000];
    size_t ns = 0;
    double end = gstream(h, t0, 1, 300, ts, cs, &ns);
    gp_history_finish(h, end, 0, NULL);
    json_t *local = gp_history_document(h);
    struct gp_storage *st = sopen_tmp();
    gappend(st, "7", ts, cs, ns);
    struct gp_jobdoc_rank rank = {.node = "n1", .rank = GP_JOBDOC_NONE, .local_rank = GP_JOBDOC_NONE,
                                  .world_size = GP_JOBDOC_NONE};
    struct gp_jobdoc_in in = {
        .id = JOB "-g", .scheme = "gpulse_run", .state = "finished",
        .start_ms = (int64_t)(t0 * 1000), .end_ms = (int64_t)(end * 1000),
        .range_end_ms = (int64_t)(end * 1000), .exit_status = 0, .ranks = &rank, .nranks = 1,
    };
    struct gp_buf out;
    gp_buf_init(&out, 0);
    char err[256];
    CHECK_INT(gp_jobdoc_write(st, &in, &out, err, sizeof err), GP_OK);
    json_t *server = json_loads(out.data, 0, NULL);
    CHECK(server);
    /* by hand: 2 s start-up, 300 x 0.06 productive, 300 x 0.04 wait,
     * 3 evals of 0.5 s, 1 s of tail */
    CHECK_DBL(json_number_value(at(local, "goodput.wall_seconds")), 2 + 30 + 1.5 + 1, 1e-3);
    CHECK_DBL(json_number_value(at(local, "goodput.seconds.productive")), 18, 1e-6);
    CHECK_DBL(json_number_value(at(local, "goodput.seconds.evaluation")), 1.5, 1e-9);
    CHECK_DBL(json_number_value(at(local, "goodput.seconds.startup")), 2, 1e-3);
    CHECK_STR(json_string_value(at(local, "goodput.biggest_badput")), "data_wait");
    /* the server sees the same sums (its times are in ms); start-up and
     * idle to a sample */
    const char *sums[] = {"goodput.wall_seconds", "goodput.seconds.productive", "goodput.seconds.data_wait",
                          "goodput.seconds.evaluation", "goodput.seconds.checkpoint", "goodput.seconds.lost",
                          "goodput.attempts", "goodput.last_step", "goodput.biggest_badput"};
    for (size_t i = 0; i < sizeof sums / sizeof sums[0]; i++)
        same(local, server, sums[i], 1e-4);
    same(local, server, "goodput.ratio", 0.01);
    CHECK_DBL(json_number_value(at(server, "goodput.seconds.startup")), 2, 0.2);
    CHECK_DBL(json_number_value(at(server, "goodput.seconds.idle")), 1, 0.2);
    CHECK_INT(json_integer_value(at(server, "goodput.ranks.0.pid")), 7);
    json_decref(server);
    json_decref(local);
    gp_history_free(h);

    /* A restart under the same job: a second process (pid 8) 60 s later
     * loads the checkpoint of step 200 and runs 201..400: 201..300 were
     * done already, 100 x 0.1 s of lost work. */
    struct gp_history *h2 = gp_history_new(&o);
    size_t ns2 = 0;
    double end2 = gstream(h2, end + 60, 201, 400, ts, cs, &ns2);
    gappend(st, "8", ts, cs, ns2);
    gp_history_free(h2);
    in.end_ms = in.range_end_ms = (int64_t)(end2 * 1000);
    gp_buf_reset(&out);
    CHECK_INT(gp_jobdoc_write(st, &in, &out, err, sizeof err), GP_OK);
    server = json_loads(out.data, 0, NULL);
    CHECK(server);
    CHECK_INT(json_integer_value(at(server, "goodput.attempts")), 2);
    CHECK_DBL(json_number_value(at(server, "goodput.last_step")), 400, 0);
    CHECK_DBL(json_number_value(at(server, "goodput.seconds.lost")), 10, 0.05);
    CHECK_DBL(json_number_value(at(server, "goodput.seconds.checkpoint")), 1, 1e-6);
    CHECK_DBL(json_number_value(at(server, "goodput.seconds.productive")), 18 + 6, 0.05);
    /* the first process ends where the second starts; the gap between
     * them is no one's wall time */
    double wall = json_number_value(at(server, "goodput.wall_seconds"));
    CHECK(wall > 34.5 + 24 && wall < 34.5 + 24 + 61);
    json_decref(server);
    gp_buf_free(&out);
    gp_storage_close(st);
}

const struct gp_test gp_tests_jobmodel[] = {
    {"figures", test_figures},
    {"rank_scores", test_rank_scores},
    {"mfu_arithmetic", test_mfu_arithmetic},
    {"mfu_gap", test_mfu_gap},
    {"peaks_by_precision", test_peaks_by_precision},
    {"one_stream_two_paths", test_one_stream_two_paths},
    {"mfu_server_document", test_mfu_server_document},
    {"goodput_two_paths", test_goodput_two_paths},
    {0},
};
