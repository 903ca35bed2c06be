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
        struct gp_rw_request rq = rw_batch_request(&b);
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
    struct gp_history_options o = {JOB, CMD, 0.2, 0};
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
    size_t len = 0;
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
                          "totals.loss_min", "totals.cost_idle", "totals.cost_unused_compute"};
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

const struct gp_test gp_tests_jobmodel[] = {
    {"figures", test_figures},
    {"rank_scores", test_rank_scores},
    {"one_stream_two_paths", test_one_stream_two_paths},
    {0},
};
