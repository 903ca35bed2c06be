/*
 * test_detect_hang.c - job_hang (detect_hang.c): a job of ranks that
 * step every 2 s on a 5 s grid, then stop at chosen points; the job
 * fires only when every live rank is past its own allowance, names the
 * rank that stopped first and what the GPUs do, and leaves finished,
 * forgotten and still-stepping ranks alone. Its settings come through
 * detector_overrides like every detector's.
 */
#include "insight/detect.h"
#include "insight/engine.h"
#include "insight/view.h"

#include "lib/err.h"
#include "test.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define NPTS 40
#define GRID_MS 5000
#define STEP_S 2.0
#define NEVER NPTS /* a stop point past the window: steps to the end */

static struct gp_observation seen[16];
static unsigned nseen;

static int emit_cb(void *ctx, const struct gp_observation *o)
{
    (void)ctx;
    CHECK(nseen < sizeof seen / sizeof seen[0]);
    seen[nseen++] = *o;
    return GP_OK;
}

/* Runs job_hang with cfg (NULL: defaults); returns its result. */
static int run_hang(const struct gp_view *v, const struct gp_detector_cfg *cfg)
{
    struct gp_detector_cfg def[GP_DET__COUNT];
    gp_detector_cfg_defaults(def);
    struct gp_detect_ctx c = {v, cfg ? cfg : &def[GP_DET_HANG], NULL, NULL, emit_cb, NULL};
    nseen = 0;
    return gp_detect_fns[GP_DET_HANG](&c);
}

/*
 * n ranks of job "llm" on node n1, rank r stepping every STEP_S until
 * point stop[r] (its count is flat from there on), each with a GPU whose
 * activity is 0.9 while stepping and `after` once stopped.
 */
static void hang_view(struct gp_view *v, unsigned n, const unsigned *stop, double after)
{
    CHECK_INT(gp_view_init(v, NPTS, 1764000000000LL, GRID_MS), GP_OK);
    for (unsigned r = 0; r < n; r++) {
        struct gp_view_gpu *g = gp_view_add_gpu(v);
        CHECK(g);
        snprintf(g->node, sizeof g->node, "n1");
        snprintf(g->gpu, sizeof g->gpu, "%u", r);
        snprintf(g->job, sizeof g->job, "llm");
        g->rank = (int32_t)r;
        double *sm = gp_view_gpu_series(v, g, GP_VGM_SM_ACTIVE);
        for (unsigned k = 0; k < NPTS; k++)
            sm[k] = k < stop[r] ? 0.9 : after;
        struct gp_view_proc *p = gp_view_add_proc(v);
        CHECK(p);
        snprintf(p->node, sizeof p->node, "n1");
        snprintf(p->job, sizeof p->job, "llm");
        p->rank = (int32_t)r;
        p->pid = 100 + r;
        double *st = gp_view_proc_series(v, p, GP_VPM_STEPS);
        double *ss = gp_view_proc_series(v, p, GP_VPM_STEP_SECONDS);
        double *last = gp_view_proc_series(v, p, GP_VPM_LAST_STEP);
        double per_point = GRID_MS / 1000.0 / STEP_S, steps = 500;
        for (unsigned k = 0; k < NPTS; k++) {
            if (k < stop[r])
                steps += per_point;
            st[k] = floor(steps);
            ss[k] = floor(steps) * STEP_S;
            last[k] = floor(steps) - 1; /* a client that numbers from 0 */
        }
    }
    CHECK_INT(gp_view_index_jobs(v), GP_OK);
}

/* Every rank stops; rank 3 two grid steps before the others. With 2 s
 * steps the allowance is the 2m floor (10 x 2 s is less); the others
 * stalled 29 points x 5 s = 2m25s. */
static void test_fires_naming_first(void)
{
    struct gp_view v;
    unsigned stop[4] = {11, 11, 11, 9};
    hang_view(&v, 4, stop, 1.0);
    CHECK_INT(run_hang(&v, NULL), GP_OK);
    CHECK_INT(nseen, 1);
    CHECK(seen[0].bad);
    CHECK_STR(seen[0].key.job, "llm");
    CHECK_DBL(seen[0].value, 145.0 / 120.0, 1e-9);
    CHECK_CONTAINS(seen[0].summary, "job llm hangs: no step on 4 live ranks for 2m35s");
    /* rank 3 stepped 9 points x 2.5 steps: 522 steps, the last numbered 521 */
    CHECK_CONTAINS(seen[0].summary, "stopped first: rank 3 (last step 521)");
    CHECK(!strstr(seen[0].summary, "rank 0"));
    CHECK_CONTAINS(seen[0].summary, "every GPU is spinning at full use: waiting in a collective");
    CHECK_CONTAINS(seen[0].evidence, "rank 0 on n1: last step 526, no step for 2m25s, allowance 2m "
                                     "(10 x 2.000 s a step); GPU spinning at 100 %");
    CHECK_CONTAINS(seen[0].evidence, "rank 3 on n1: last step 521, no step for 2m35s");
    gp_view_free(&v);
}

/* NCCL spinning on a GPU with profiling metrics: SM activity 18 % (a few
 * SMs poll), utilization 100 %: spinning, not "at 18 %". The rank stuck
 * on the host reads 0 on both. */
static void test_spinning_by_utilization(void)
{
    struct gp_view v;
    unsigned stop[4] = {11, 11, 11, 11};
    hang_view(&v, 4, stop, 0.18);
    for (unsigned r = 0; r < 4; r++) {
        double *sm = gp_view_gpu_series(&v, &v.gpus[r], GP_VGM_SM_ACTIVE);
        double *ut = gp_view_gpu_series(&v, &v.gpus[r], GP_VGM_UTIL);
        for (unsigned k = 0; k < NPTS; k++) {
            if (r == 1 && k >= 11)
                sm[k] = 0;
            ut[k] = k < 11 ? 0.98 : r == 1 ? 0 : 1.0;
        }
    }
    CHECK_INT(run_hang(&v, NULL), GP_OK);
    CHECK_INT(nseen, 1);
    CHECK(seen[0].bad);
    CHECK_CONTAINS(seen[0].summary, "3 of 4 GPUs spinning at full use, 1 idle");
    CHECK_CONTAINS(seen[0].evidence, "rank 0 on n1: last step 526, no step for 2m25s, allowance 2m (10 x "
                                     "2.000 s a step); GPU spinning at 100 % (waiting in a collective)");
    CHECK_CONTAINS(seen[0].evidence, "rank 1 on n1: last step 526, no step for 2m25s, allowance 2m (10 x "
                                     "2.000 s a step); GPU idle (0 %)");
    gp_view_free(&v);
}

/* With Flight Recorder dumps read by the agent, the rank missing from
 * the collective the others wait in is named first. */
static void test_flight_recorder_names_missing(void)
{
    struct gp_view v;
    unsigned stop[4] = {11, 11, 11, 11};
    hang_view(&v, 4, stop, 1.0);
    for (unsigned r = 0; r < 4; r++) {
        double *x = gp_view_proc_series(&v, &v.procs[r], r == 2 ? GP_VPM_FR_MISSING : GP_VPM_FR_WAITING);
        x[NPTS - 1] = 57;
    }
    CHECK_INT(run_hang(&v, NULL), GP_OK);
    CHECK_INT(nseen, 1);
    CHECK(seen[0].bad);
    CHECK_CONTAINS(seen[0].summary, "(1.2 x their allowance); Flight Recorder: rank 2 never entered "
                                    "collective 57, where 3 ranks wait; all 4 ranks stopped within 5s");
    CHECK_CONTAINS(seen[0].evidence, "rank 2 on n1: last step 526, no step for 2m25s, allowance 2m (10 x "
                                     "2.000 s a step); GPU spinning at 100 % (waiting in a collective); "
                                     "never entered collective 57");
    CHECK_CONTAINS(seen[0].evidence, "rank 0 on n1: last step 526, no step for 2m25s, allowance 2m (10 x "
                                     "2.000 s a step); GPU spinning at 100 % (waiting in a collective); "
                                     "waits in collective 57");
    gp_view_free(&v);
}

/* The same stop 100 s ago is under the 2m allowance: judged, not bad. */
static void test_silent_under_allowance(void)
{
    struct gp_view v;
    unsigned stop[4] = {20, 20, 20, 20};
    hang_view(&v, 4, stop, 1.0);
    CHECK_INT(run_hang(&v, NULL), GP_OK);
    CHECK_INT(nseen, 1);
    CHECK(!seen[0].bad);
    CHECK_DBL(seen[0].value, 100.0 / 120.0, 1e-9);
    CHECK_STR(seen[0].summary, "");
    gp_view_free(&v);
}

/* One rank still steps: the others' stall is not the job's hang. */
static void test_one_rank_stepping(void)
{
    struct gp_view v;
    unsigned stop[4] = {5, 5, 5, NEVER};
    hang_view(&v, 4, stop, 1.0);
    CHECK_INT(run_hang(&v, NULL), GP_OK);
    CHECK_INT(nseen, 1);
    CHECK(!seen[0].bad);
    CHECK_DBL(seen[0].value, 0, 1e-9);
    gp_view_free(&v);
}

/* The allowance follows the rank's own pace: with a multiple of 100,
 * 2 s steps allow 200 s and a 2m25s stall is not a hang; with a floor
 * of 10 s and a multiple of 3, 6 s of silence would do. Idle GPUs are
 * named as such. */
static void test_own_pace_and_idle(void)
{
    struct gp_view v;
    unsigned stop[2] = {11, 11};
    hang_view(&v, 2, stop, 0.0);
    struct gp_detector_cfg cfg[GP_DET__COUNT];
    char err[256];
    CHECK_INT(gp_engine_detector_config("", "job_hang.step_multiple=100", cfg, err, sizeof err), GP_OK);
    CHECK_INT(run_hang(&v, &cfg[GP_DET_HANG]), GP_OK);
    CHECK_INT(nseen, 1);
    CHECK(!seen[0].bad);
    CHECK_DBL(seen[0].value, 145.0 / 200.0, 1e-9);
    CHECK_INT(gp_engine_detector_config("", "job_hang.step_multiple=3, job_hang.min_stall=10s", cfg,
                                        err, sizeof err),
              GP_OK);
    CHECK_INT(run_hang(&v, &cfg[GP_DET_HANG]), GP_OK);
    CHECK(seen[0].bad);
    CHECK_DBL(seen[0].value, 145.0 / 10.0, 1e-9);
    CHECK_CONTAINS(seen[0].summary, "all 2 ranks stopped within 5s of each other");
    CHECK_CONTAINS(seen[0].summary, "every GPU is idle: stuck on the host");
    CHECK_CONTAINS(seen[0].evidence, "allowance 10s (3 x 2.000 s a step); GPU idle (0 %)");
    gp_view_free(&v);
}

/* A rank that checkpoints gets checkpoint_multiple x its longest
 * checkpoint (90 s here: 3m), and a checkpoint reported after its last
 * step restarts its stall. */
static void test_checkpoint_allowance(void)
{
    struct gp_view v;
    unsigned stop[2] = {11, 11};
    hang_view(&v, 2, stop, 0.0);
    for (unsigned r = 0; r < 2; r++) {
        double *ck = gp_view_proc_series(&v, &v.procs[r], GP_VPM_CHECKPOINT);
        for (unsigned k = 0; k < NPTS; k++)
            ck[k] = k < 5 ? 10 : 100;
    }
    CHECK_INT(run_hang(&v, NULL), GP_OK);
    CHECK_INT(nseen, 1);
    CHECK(!seen[0].bad);
    CHECK_DBL(seen[0].value, 145.0 / 180.0, 1e-9);
    struct gp_detector_cfg cfg[GP_DET__COUNT];
    char err[256];
    CHECK_INT(gp_engine_detector_config("", "job_hang.checkpoint_multiple=1", cfg, err, sizeof err), GP_OK);
    CHECK_INT(run_hang(&v, &cfg[GP_DET_HANG]), GP_OK);
    CHECK(seen[0].bad);
    CHECK_DBL(seen[0].value, 145.0 / 120.0, 1e-9);
    CHECK_CONTAINS(seen[0].evidence, "GPU idle (0 %); longest checkpoint 90 s");
    /* a checkpoint of 20 s reported at point 30, after the last step */
    for (unsigned r = 0; r < 2; r++) {
        double *ck = gp_view_proc_series(&v, &v.procs[r], GP_VPM_CHECKPOINT);
        for (unsigned k = 0; k < NPTS; k++)
            ck[k] = k < 30 ? 0 : 20;
    }
    CHECK_INT(run_hang(&v, NULL), GP_OK);
    CHECK(!seen[0].bad);
    CHECK_DBL(seen[0].value, 45.0 / 120.0, 1e-9);
    gp_view_free(&v);
}

/* Ranks that said `end`, or that left the newest point, are not judged:
 * a finished or crashed job is not hung. */
static void test_ended_and_gone(void)
{
    struct gp_view v;
    unsigned stop[2] = {3, 3};
    hang_view(&v, 2, stop, 0.0);
    double *end = gp_view_proc_series(&v, &v.procs[0], GP_VPM_END);
    end[NPTS - 1] = 1764000000;
    double *st = gp_view_proc_series(&v, &v.procs[1], GP_VPM_STEPS);
    st[NPTS - 1] = NAN;
    CHECK_INT(run_hang(&v, NULL), GP_OK);
    CHECK_INT(nseen, 0);
    /* rank 1 back at the newest point: judged alone, and hung */
    st[NPTS - 1] = st[NPTS - 2];
    CHECK_INT(run_hang(&v, NULL), GP_OK);
    CHECK_INT(nseen, 1);
    CHECK(seen[0].bad);
    CHECK_CONTAINS(seen[0].summary, "no step on 1 live rank for 3m");
    gp_view_free(&v);
}

/* Before its first step a rank has first_step (15m by default). */
static void test_first_step(void)
{
    struct gp_view v;
    unsigned stop[2] = {0, 0};
    hang_view(&v, 2, stop, 0.0);
    for (unsigned r = 0; r < 2; r++) {
        double *st = gp_view_proc_series(&v, &v.procs[r], GP_VPM_STEPS);
        double *ss = gp_view_proc_series(&v, &v.procs[r], GP_VPM_STEP_SECONDS);
        double *last = gp_view_proc_series(&v, &v.procs[r], GP_VPM_LAST_STEP);
        for (unsigned k = 0; k < NPTS; k++) {
            st[k] = ss[k] = 0;
            last[k] = NAN;
        }
    }
    CHECK_INT(run_hang(&v, NULL), GP_OK);
    CHECK_INT(nseen, 1);
    CHECK(!seen[0].bad);
    CHECK_DBL(seen[0].value, 195.0 / 900.0, 1e-9);
    struct gp_detector_cfg cfg[GP_DET__COUNT];
    char err[256];
    CHECK_INT(gp_engine_detector_config("", "job_hang.first_step=3m", cfg, err, sizeof err), GP_OK);
    CHECK_INT(run_hang(&v, &cfg[GP_DET_HANG]), GP_OK);
    CHECK(seen[0].bad);
    CHECK_CONTAINS(seen[0].evidence, "rank 0 on n1: no step yet, no step for 3m15s, allowance 3m;");
    gp_view_free(&v);
}

/* job_hang's fields are checked and belong to it alone. */
static void test_config_errors(void)
{
    struct gp_detector_cfg cfg[GP_DET__COUNT];
    char err[256];
    static const struct {
        const char *in, *want;
    } bad[] = {
        {"job_hang.step_multiple=0", "'step_multiple' must be a number above 0, not '0'"},
        {"job_hang.step_multiple=x", "'step_multiple' must be a number above 0, not 'x'"},
        {"job_hang.min_stall=soon", "'min_stall'"},
        {"job_hang.first_step=-1m", "'first_step'"},
        {"straggler.first_step=1m", "straggler: 'first_step' belongs to job_hang only"},
        {"job_hang.checkpoint_multiple=-2", "'checkpoint_multiple' must be a number above 0, not '-2'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_INT(gp_engine_detector_config("", bad[i].in, cfg, err, sizeof err), GP_ECONFIG);
        CHECK_CONTAINS(err, bad[i].want);
    }
    CHECK_INT(gp_engine_detector_config("", "job_hang.first_step=20m", cfg, err, sizeof err), GP_OK);
    CHECK_INT((int)cfg[GP_DET_HANG].first_step_ms, 20 * 60 * 1000);
    CHECK_INT((int)cfg[GP_DET_HANG].min_stall_ms, GP_HANG_MIN_STALL_MS);
    CHECK_DBL(cfg[GP_DET_HANG].step_multiple, GP_HANG_STEP_MULTIPLE, 0);
}

const struct gp_test gp_tests_detect_hang[] = {
    {"fires_naming_first", test_fires_naming_first},
    {"flight_recorder_names_missing", test_flight_recorder_names_missing},
    {"spinning_by_utilization", test_spinning_by_utilization},
    {"silent_under_allowance", test_silent_under_allowance},
    {"one_rank_stepping", test_one_rank_stepping},
    {"own_pace_and_idle", test_own_pace_and_idle},
    {"checkpoint_allowance", test_checkpoint_allowance},
    {"ended_and_gone", test_ended_and_gone},
    {"first_step", test_first_step},
    {"config_errors", test_config_errors},
    {0},
};
