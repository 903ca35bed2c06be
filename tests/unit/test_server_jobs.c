/*
 * test_server_jobs.c - the jobs registry (server/jobs.h), its state.db,
 * the job document (query/jobdoc.h) and the two routes, over a store
 * filled with synthetic gpulse_job_* and DCGM series: a finished
 * two-rank job on two GPUs with steps, a killed job, a lost job, a
 * running job and one whose id holds characters a URL must escape.
 * Expected totals are worked out by hand in the comments.
 */
#include "ingest/remote_write.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "query/jobdoc.h"
#include "server/jobs.h"
#include "server/server.h"
#include "server/server_int.h"
#include "rw_batch.h"
#include "store_testlib.h"
#include "test.h"

#include <curl/curl.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>

#define ODD "odd job/x?y%z"

static const char *data_dir(void)
{
    static char dir[600];
    snprintf(dir, sizeof dir, "%s/data", gp_test_tmpdir());
    return dir;
}

/* Base time: whole 10 s, 20 minutes ago. */
static double T;

/*
 * The fleet. train-1: ranks 0 and 1 on n1, samples every 10 s at
 * T + 10i, i = 0..10, ended T + 100 with exit 0.
 *   gpu 0 SM active i/10; gpu 1 GPU_UTIL 80 (0.8)
 *   gpu 0 FB_USED 1000 MiB (2000 at i = 5), FB_FREE 3000 MiB;
 *   gpu 1 memory used 1e9 B of 4e9
 *   cpu rank 0: 5(i+1) (born with the job); rank 1: from T - 10, 100 then
 *     105 + 5i for i < 5, reset to 3 + 5(i - 5) from i = 5
 *   rss rank 0 1e9 (3e9 at i = 3), rank 1 2e9
 *   steps pid 100: 10(i+1), seconds 5(i+1), data wait (i+1), samples 320(i+1)
 *   steps pid 101: 20(i+1), seconds 4(i+1) for i < 10, 58 at i = 10
 * killed-1: exit 137 at T + 210. lost-1: seen T - 20 .. T. run-1 and ODD:
 * seen until now.
 */
static void fill(struct gp_storage *st, int64_t now_ms)
{
    static struct rw_batch b;
    memset(&b, 0, sizeof b);
    double t[11], one[11], v[11];
    for (int i = 0; i < 11; i++)
        t[i] = T + 10 * i, one[i] = 1;
    const char *r0 = "job=train-1;rank=0;Hostname=n1", *r1 = "job=train-1;rank=1;Hostname=n1";
    rw_batch_add(&b, "gpulse_job_info", "job=train-1;rank=0;Hostname=n1;scheme=slurm;local_rank=0;world_size=2", t, one, 11);
    rw_batch_add(&b, "gpulse_job_info", "job=train-1;rank=1;Hostname=n1;scheme=slurm;local_rank=1;world_size=2", t, one, 11);
    for (int i = 0; i < 11; i++)
        v[i] = T;
    rw_batch_add(&b, "gpulse_job_start_time_seconds", r0, t, v, 11);
    rw_batch_add(&b, "gpulse_job_start_time_seconds", r1, t, v, 11);
    double tend[1] = {T + 100}, zero[1] = {0};
    rw_batch_add(&b, "gpulse_job_end_time_seconds", r0, tend, tend, 1);
    rw_batch_add(&b, "gpulse_job_exit_status", r0, tend, zero, 1);
    for (int i = 0; i < 11; i++)
        v[i] = i / 10.0;
    rw_batch_add(&b, "DCGM_FI_PROF_SM_ACTIVE", "job=train-1;rank=0;Hostname=n1;gpu=0;UUID=GPU-a;modelName=H100", t, v, 11);
    for (int i = 0; i < 11; i++)
        v[i] = i == 5 ? 2000 : 1000;
    rw_batch_add(&b, "DCGM_FI_DEV_FB_USED", "job=train-1;rank=0;Hostname=n1;gpu=0;UUID=GPU-a", t, v, 11);
    for (int i = 0; i < 11; i++)
        v[i] = 3000;
    rw_batch_add(&b, "DCGM_FI_DEV_FB_FREE", "job=train-1;rank=0;Hostname=n1;gpu=0;UUID=GPU-a", t, v, 11);
    for (int i = 0; i < 11; i++)
        v[i] = 80;
    rw_batch_add(&b, "DCGM_FI_DEV_GPU_UTIL", "job=train-1;rank=1;Hostname=n1;gpu=1;UUID=GPU-b", t, v, 11);
    for (int i = 0; i < 11; i++)
        v[i] = 1e9;
    rw_batch_add(&b, "gpulse_gpu_memory_used_bytes", "job=train-1;rank=1;Hostname=n1;gpu=1;UUID=GPU-b", t, v, 11);
    for (int i = 0; i < 11; i++)
        v[i] = 4e9;
    rw_batch_add(&b, "gpulse_gpu_memory_total_bytes", "job=train-1;rank=1;Hostname=n1;gpu=1;UUID=GPU-b", t, v, 11);
    for (int i = 0; i < 11; i++)
        v[i] = 5 * (i + 1);
    rw_batch_add(&b, "gpulse_job_cpu_seconds_total", r0, t, v, 11);
    double tc[12], vc[12];
    tc[0] = T - 10, vc[0] = 100;
    for (int i = 0; i < 11; i++)
        tc[i + 1] = t[i], vc[i + 1] = i < 5 ? 105 + 5 * i : 3 + 5 * (i - 5);
    rw_batch_add(&b, "gpulse_job_cpu_seconds_total", r1, tc, vc, 12);
    for (int i = 0; i < 11; i++)
        v[i] = i == 3 ? 3e9 : 1e9;
    rw_batch_add(&b, "gpulse_job_resident_memory_bytes", r0, t, v, 11);
    for (int i = 0; i < 11; i++)
        v[i] = 2e9;
    rw_batch_add(&b, "gpulse_job_resident_memory_bytes", r1, t, v, 11);
    const char *p0 = "job=train-1;rank=0;Hostname=n1;pid=100", *p1 = "job=train-1;rank=1;Hostname=n1;pid=101";
    for (int i = 0; i < 11; i++)
        v[i] = 10 * (i + 1);
    rw_batch_add(&b, "gpulse_job_steps_total", p0, t, v, 11);
    for (int i = 0; i < 11; i++)
        v[i] = 5 * (i + 1);
    rw_batch_add(&b, "gpulse_job_step_seconds_total", p0, t, v, 11);
    for (int i = 0; i < 11; i++)
        v[i] = i + 1;
    rw_batch_add(&b, "gpulse_job_data_wait_seconds_total", p0, t, v, 11);
    for (int i = 0; i < 11; i++)
        v[i] = 320 * (i + 1);
    rw_batch_add(&b, "gpulse_job_samples_total", p0, t, v, 11);
    for (int i = 0; i < 11; i++)
        v[i] = 20 * (i + 1);
    rw_batch_add(&b, "gpulse_job_steps_total", p1, t, v, 11);
    for (int i = 0; i < 11; i++)
        v[i] = i < 10 ? 4 * (i + 1) : 58;
    rw_batch_add(&b, "gpulse_job_step_seconds_total", p1, t, v, 11);
    /* the loss the clients sent: pid 100 from 3 down to 1 over the job,
     * pid 101 from its second sample to its tenth, with a dip to 0.5 */
    for (int i = 0; i < 11; i++)
        v[i] = 3 - 0.2 * i;
    rw_batch_add(&b, "gpulse_job_loss", p0, t, v, 11);
    for (int i = 1; i < 10; i++)
        v[i] = i == 5 ? 0.5 : 2.5 - 0.1 * i;
    rw_batch_add(&b, "gpulse_job_loss", p1, t + 1, v + 1, 9);

    double tk[2] = {T + 200, T + 210}, e137[1] = {137}, tk1[1] = {T + 210};
    rw_batch_add(&b, "gpulse_job_info", "job=killed-1;rank=0;Hostname=n1", tk, one, 2);
    rw_batch_add(&b, "gpulse_job_exit_status", "job=killed-1;rank=0;Hostname=n1", tk1, e137, 1);
    double tl[3] = {T - 20, T - 10, T};
    rw_batch_add(&b, "gpulse_job_info", "job=lost-1;Hostname=n3", tl, one, 3);
    double now = (double)(now_ms / 1000), tr[2] = {now - 10, now};
    rw_batch_add(&b, "gpulse_job_info", "job=run-1;rank=0;Hostname=n2;scheme=gpulse_run", tr, one, 2);
    rw_batch_add(&b, "gpulse_job_info", "job=" ODD ";rank=0;Hostname=n2", tr, one, 2);
    struct gp_batch rq = rw_batch_request(&b);
    struct gp_append_result res;
    char err[256];
    CHECK_INT(gp_storage_append(st, &rq, &res, err, sizeof err), GP_OK);
    CHECK_INT(res.accepted, rq.nsamples_total);
}

static int64_t now_ms(void)
{
    int64_t n = gp_wall_ms();
    T = (double)((n / 1000 - 1200) / 10 * 10);
    return n;
}

static void get(struct gp_jobs *j, const char *id, int64_t now, struct gp_jobs_entry *out)
{
    CHECK_INT(gp_jobs_get(j, id, now, out), GP_OK);
}

static void check_registry(struct gp_jobs *j, int64_t now)
{
    struct gp_jobs_entry x;
    get(j, "train-1", now, &x);
    CHECK_STR(gp_job_state_name(x.state), "finished");
    CHECK_STR(x.scheme, "slurm");
    CHECK_INT(x.start_ms, (int64_t)T * 1000);
    CHECK_INT(x.end_ms, (int64_t)(T + 100) * 1000);
    CHECK_INT(x.exit_status, 0);
    CHECK_INT(x.first_ms, (int64_t)T * 1000);
    CHECK_INT(x.last_ms, (int64_t)(T + 100) * 1000);
    CHECK_INT(x.nranks, 2);
    CHECK_INT(x.ranks[0].rank, 0);
    CHECK_INT(x.ranks[1].rank, 1);
    CHECK_INT(x.ranks[1].local_rank, 1);
    CHECK_INT(x.ranks[1].world_size, 2);
    CHECK_STR(x.ranks[1].node, "n1");
    CHECK_INT(x.ngpus, 2);
    CHECK_STR(x.gpus[1].gpu, "1");
    gp_job_free(&x);
    get(j, "killed-1", now, &x);
    CHECK_STR(gp_job_state_name(x.state), "killed");
    CHECK_INT(x.exit_status, 137);
    CHECK_INT(x.end_ms, GP_JOBS_NONE);
    gp_job_free(&x);
    get(j, "lost-1", now, &x);
    CHECK_STR(gp_job_state_name(x.state), "lost");
    CHECK_INT(x.ranks[0].rank, GP_JOBS_NONE);
    CHECK_STR(x.ranks[0].node, "n3");
    CHECK_STR(x.scheme, "");
    gp_job_free(&x);
    get(j, "run-1", now, &x);
    CHECK_STR(gp_job_state_name(x.state), "running");
    gp_job_free(&x);
    get(j, ODD, now, &x);
    CHECK_STR(gp_job_state_name(x.state), "running");
    gp_job_free(&x);
    CHECK_INT(gp_jobs_get(j, "nope", now, &x), GP_ENOTFOUND);
}

/* The state column of job id in state.db ("" when absent). */
static void db_state(const char *id, char *out, size_t len)
{
    char path[700];
    snprintf(path, sizeof path, "%s/state.db", data_dir());
    sqlite3 *db;
    CHECK_INT(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    CHECK_INT(sqlite3_prepare_v2(db, "SELECT state FROM jobs WHERE id=?", -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    out[0] = '\0';
    if (sqlite3_step(st) == SQLITE_ROW)
        snprintf(out, len, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void test_registry(void)
{
    int64_t now = now_ms();
    struct gp_storage *st = sopen_tmp();
    fill(st, now);
    struct gp_jobs *j;
    char err[256];
    CHECK_INT(gp_jobs_open(&j, data_dir(), 5000, err, sizeof err), GP_OK);
    CHECK_INT(gp_jobs_scan(j, st, now, 0, err, sizeof err), GP_OK);
    check_registry(j, now);
    struct gp_jobs_stats s1, s2;
    gp_jobs_stats(j, &s1);
    CHECK_INT(s1.jobs, 5);
    CHECK_INT(s1.rows_written, 5);
    /* Re-scans change nothing and write nothing: incremental and full. */
    CHECK_INT(gp_jobs_scan(j, st, now + 1000, 0, err, sizeof err), GP_OK);
    CHECK_INT(gp_jobs_scan(j, st, now + 2000, 1, err, sizeof err), GP_OK);
    gp_jobs_stats(j, &s2);
    CHECK_INT(s2.rows_written, 5);
    CHECK_INT(s2.scans, 3);
    check_registry(j, now);
    char state[32];
    db_state("run-1", state, sizeof state);
    CHECK_STR(state, "running");
    db_state(ODD, state, sizeof state);
    CHECK_STR(state, "running");
    /* Five minutes without a sample: running -> lost, in memory and on disk. */
    int64_t later = now + gp_job_lost_after_ms(5000) + 1000;
    CHECK_INT(gp_jobs_scan(j, st, later, 0, err, sizeof err), GP_OK);
    struct gp_jobs_entry x;
    get(j, "run-1", later, &x);
    CHECK_STR(gp_job_state_name(x.state), "lost");
    gp_job_free(&x);
    db_state("run-1", state, sizeof state);
    CHECK_STR(state, "lost");
    gp_jobs_stats(j, &s2);
    CHECK_INT(s2.rows_written, 7); /* run-1 and ODD only */
    gp_jobs_close(j);

    /* A restart loads everything from state.db before any scan. */
    CHECK_INT(gp_jobs_open(&j, data_dir(), 5000, err, sizeof err), GP_OK);
    gp_jobs_stats(j, &s1);
    CHECK_INT(s1.scans, 0);
    CHECK_INT(s1.jobs, 5);
    check_registry(j, now);
    /* And the incremental scan after it finds nothing new to write. */
    CHECK_INT(gp_jobs_scan(j, st, later + 1000, 0, err, sizeof err), GP_OK);
    gp_jobs_stats(j, &s1);
    CHECK_INT(s1.rows_written, 0);
    gp_jobs_close(j);
    gp_storage_close(st);
}

static void test_state_rules(void)
{
    struct gp_jobs_entry j;
    memset(&j, 0, sizeof j);
    j.start_ms = j.end_ms = j.exit_status = GP_JOBS_NONE;
    j.last_ms = 1000000;
    CHECK_INT(gp_job_state_at(&j, 1000000 + 300000, 5000), GP_JOBS_RUNNING);
    CHECK_INT(gp_job_state_at(&j, 1000000 + 300001, 5000), GP_JOBS_LOST);
    CHECK_INT(gp_job_lost_after_ms(600000), 1800000); /* 3 intervals when longer */
    j.end_ms = 2000000;
    CHECK_INT(gp_job_state_at(&j, 9e9, 5000), GP_JOBS_FINISHED);
    j.exit_status = 1;
    CHECK_INT(gp_job_state_at(&j, 0, 5000), GP_JOBS_FAILED);
    j.exit_status = 127;
    CHECK_INT(gp_job_state_at(&j, 0, 5000), GP_JOBS_FAILED);
    j.exit_status = 128 + 15;
    CHECK_INT(gp_job_state_at(&j, 0, 5000), GP_JOBS_KILLED);
    enum gp_job_state s;
    CHECK_INT(gp_job_state_parse("killed", 6, &s), GP_OK);
    CHECK_INT(s, GP_JOBS_KILLED);
    CHECK_INT(gp_job_state_parse("kill", 4, &s), GP_EPARSE);
}

static double num_at(json_t *o, const char *path)
{
    char tmp[128];
    snprintf(tmp, sizeof tmp, "%s", path);
    json_t *x = o;
    for (char *save = NULL, *p = strtok_r(tmp, ".", &save); p && x; p = strtok_r(NULL, ".", &save))
        x = json_object_get(x, p);
    if (!x || json_is_null(x))
        return NAN;
    return json_number_value(x);
}

static void test_totals(void)
{
    int64_t now = now_ms();
    struct gp_storage *st = sopen_tmp();
    fill(st, now);
    struct gp_jobdoc_rank ranks[2] = {{"n1", 0, 0, 2}, {"n1", 1, 1, 2}};
    struct gp_jobdoc_in in = {
        .id = "train-1", .scheme = "slurm", .state = "finished",
        .start_ms = (int64_t)T * 1000, .end_ms = (int64_t)(T + 100) * 1000,
        .range_end_ms = (int64_t)(T + 100) * 1000, .exit_status = 0,
        .ranks = ranks, .nranks = 2, .price_per_gpu_hour = 2.0, .series = 1,
    };
    struct gp_buf out;
    gp_buf_init(&out, 0);
    char err[256];
    CHECK_INT(gp_jobdoc_write(st, &in, &out, err, sizeof err), GP_OK);
    json_error_t je;
    json_t *d = json_loads(out.data, 0, &je);
    if (!d)
        gp_test_fail(__FILE__, __LINE__, "not JSON: %s: %.300s", je.text, out.data);
    json_t *t = json_object_get(d, "totals");
    /* 2 GPUs x 11 samples x 10 s. */
    CHECK_DBL(num_at(t, "gpu_seconds"), 220, 1e-9);
    CHECK_DBL(num_at(t, "gpu_hours"), 220 / 3600.0, 1e-12);
    /* 0, .1, ..., 1 and eleven .8: mean (5.5 + 8.8) / 22; nearest ranks
     * 11, 20 and 22 of 22 sorted: .8, .8, 1. */
    CHECK_DBL(num_at(t, "activity_avg"), 14.3 / 22, 1e-12);
    CHECK_DBL(num_at(t, "activity_p50"), 0.8, 1e-12);
    CHECK_DBL(num_at(t, "activity_p90"), 0.8, 1e-12);
    CHECK_DBL(num_at(t, "activity_p99"), 1.0, 1e-12);
    CHECK_DBL(num_at(t, "peak_gpu_memory_bytes"), 2000.0 * 1048576, 0);
    CHECK_DBL(num_at(t, "peak_gpu_memory_ratio"), 0.5, 1e-12);
    /* rank 0: 55 (born with the job); rank 1: 20 + 3 after the reset + 25. */
    CHECK_DBL(num_at(t, "host_cpu_seconds"), 103, 1e-9);
    CHECK_DBL(num_at(t, "host_cpu_avg_cores"), 1.03, 1e-12);
    CHECK_DBL(num_at(t, "host_rss_peak_bytes"), 5e9, 0);
    CHECK_DBL(num_at(t, "steps"), 330, 1e-9);
    /* over the stepping span: from 5 s (pid 100's step seconds in its first
     * sample) before the first sample to the last, 105 s */
    CHECK_DBL(num_at(t, "stepping_seconds"), 105, 1e-9);
    CHECK_DBL(num_at(t, "steps_per_second"), 330 / 105.0, 1e-12);
    CHECK_DBL(num_at(t, "samples"), 3520, 1e-9);
    CHECK_DBL(num_at(t, "samples_per_second"), 3520 / 105.0, 1e-12);
    CHECK(json_is_null(json_object_get(t, "tokens")));
    CHECK(json_is_null(json_object_get(t, "tokens_per_second")));
    /* Intervals: eleven of 10 steps at .5 (pid 100), ten of 20 at .2 and
     * one of 20 at .9 (pid 101). Each step weighs one (query/jobmodel.h):
     * 200 at .2, 110 at .5, 20 at .9; ranks 165, 297 and 327 of 330. */
    CHECK_DBL(num_at(t, "step_seconds.mean"), 113.0 / 330, 1e-12);
    CHECK_DBL(num_at(t, "step_seconds.p50"), 0.2, 1e-12);
    CHECK_DBL(num_at(t, "step_seconds.p90"), 0.5, 1e-12);
    CHECK_DBL(num_at(t, "step_seconds.p99"), 0.9, 1e-12);
    CHECK_DBL(num_at(t, "step_seconds.max"), 0.9, 1e-12);
    CHECK_DBL(num_at(t, "data_wait_ratio"), 11.0 / 113, 1e-12);
    CHECK_DBL(num_at(t, "loss_first"), 3, 1e-12); /* the earliest sample of either */
    CHECK_DBL(num_at(t, "loss_last"), 1, 1e-12);  /* the newest */
    CHECK_DBL(num_at(t, "loss_min"), 0.5, 1e-12);
    CHECK_DBL(num_at(t, "price_per_gpu_hour"), 2, 0);
    CHECK_DBL(num_at(t, "cost"), 220 / 3600.0 * 2, 1e-12);
    /* Idle: gpu 0's first sample (activity 0), 10 s. Unused compute: gpu 0
     * sum(1 - i/10) = 5.5 samples, gpu 1 11 x 0.2 = 2.2, x 10 s each. */
    CHECK_DBL(num_at(t, "cost_idle"), 10 / 3600.0 * 2, 1e-12);
    CHECK_DBL(num_at(t, "cost_unused_compute"), 77 / 3600.0 * 2, 1e-12);
    CHECK_DBL(num_at(t, "cost_per_hour"), 4, 1e-12);
    CHECK(json_is_null(json_object_get(t, "projected_cost_total"))); /* ended; no target */
    CHECK(json_is_null(json_object_get(t, "budget")));
    CHECK_STR(json_string_value(json_object_get(t, "currency")), "USD");
    CHECK_DBL(num_at(d, "wall_seconds"), 100, 0);
    CHECK(json_is_null(json_object_get(d, "signal")));
    json_t *g = json_object_get(d, "gpus");
    CHECK_INT(json_array_size(g), 2);
    CHECK_STR(json_string_value(json_object_get(json_array_get(g, 0), "activity_source")), "sm_active");
    CHECK_STR(json_string_value(json_object_get(json_array_get(g, 1), "activity_source")), "gpu_util");
    CHECK_STR(json_string_value(json_object_get(json_array_get(g, 0), "uuid")), "GPU-a");
    CHECK_STR(json_string_value(json_object_get(json_array_get(g, 0), "model")), "H100");
    CHECK_DBL(num_at(json_array_get(g, 0), "memory_total_bytes"), 4000.0 * 1048576, 0);
    CHECK_DBL(num_at(json_array_get(g, 1), "peak_memory_ratio"), 0.25, 1e-12);
    CHECK_DBL(num_at(json_array_get(g, 0), "activity_avg"), 0.5, 1e-12);
    json_t *ser = json_object_get(d, "series");
    json_t *sg = json_array_get(json_object_get(ser, "gpus"), 1);
    size_t np = json_array_size(json_object_get(sg, "t"));
    CHECK(np >= 2 && np <= GP_JOBDOC_MAX_POINTS);
    CHECK_INT(json_array_size(json_object_get(sg, "activity")), np);
    CHECK_DBL(json_number_value(json_array_get(json_object_get(sg, "activity"), np - 1)), 0.8, 1e-12);
    /* the loss curve: the mean of the reporters with a sample in a window */
    json_t *steps = json_object_get(ser, "steps"), *lt = json_object_get(steps, "t"),
           *lv = json_object_get(steps, "loss");
    CHECK_INT(json_array_size(lv), json_array_size(lt));
    int seen = 0;
    for (size_t k = 0; k < json_array_size(lt); k++) {
        double at = json_number_value(json_array_get(lt, k));
        const json_t *x = json_array_get(lv, k);
        /* 0 and 5 (its sample at 0 still current): pid 100 alone, pid 101
         * has none yet; 10: both; 100: pid 100's 1 and pid 101's last, 1.6 */
        double want = at == 0 || at == 5 ? 3 : at == 10 ? (2.8 + 2.4) / 2 : at == 100 ? (1 + 1.6) / 2 : NAN;
        if (isfinite(want)) {
            seen++;
            CHECK_DBL(json_number_value(x), want, 1e-12);
        }
    }
    CHECK_INT(seen, 4);
    /* Straggler scores: rank 0 steps at 0.5 s throughout, rank 1 at 0.2 s
     * but 0.9 s over its last interval (58 s / 220 steps in all). */
    json_t *jr = json_object_get(d, "ranks");
    CHECK_INT((int)json_array_size(jr), 2);
    json_t *r0 = json_array_get(jr, 0), *r1 = json_array_get(jr, 1);
    CHECK_DBL(num_at(r0, "step_seconds_mean"), 0.5, 1e-12);
    CHECK_DBL(num_at(r0, "step_seconds_best"), 0.5, 1e-12);
    CHECK_DBL(num_at(r0, "straggler_relative"), (58.0 / 220) / 0.5, 1e-12);
    CHECK_DBL(num_at(r0, "straggler_individual"), 1, 1e-12);
    CHECK_DBL(num_at(r1, "step_seconds_mean"), 58.0 / 220, 1e-12);
    CHECK_DBL(num_at(r1, "step_seconds_best"), 0.2, 1e-12);
    CHECK_DBL(num_at(r1, "straggler_relative"), 1, 1e-12);
    CHECK_DBL(num_at(r1, "straggler_individual"), 0.2 / (58.0 / 220), 1e-12);
    json_decref(d);

    /* No price, no counters: nulls, never 0. */
    gp_buf_reset(&out);
    in.id = "killed-1";
    in.price_per_gpu_hour = 0;
    in.series = 0;
    CHECK_INT(gp_jobdoc_write(st, &in, &out, err, sizeof err), GP_OK);
    d = json_loads(out.data, 0, &je);
    CHECK(d);
    t = json_object_get(d, "totals");
    const char *nulls[] = {"gpu_seconds", "gpu_hours", "activity_avg", "peak_gpu_memory_bytes",
                           "host_cpu_seconds", "steps", "step_seconds", "data_wait_ratio",
                           "loss_first", "loss_last", "loss_min", "price_per_gpu_hour", "cost",
                           "currency"};
    for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++)
        if (!json_is_null(json_object_get(t, nulls[i])))
            gp_test_fail(__FILE__, __LINE__, "totals.%s is not null", nulls[i]);
    CHECK(!json_object_get(d, "series"));
    json_decref(d);
    gp_buf_free(&out);
    gp_storage_close(st);
}

/* ---- the routes ---- */

struct reply {
    long status;
    char body[1 << 17];
    size_t len;
};

static size_t on_data(char *p, size_t sz, size_t n, void *arg)
{
    struct reply *r = arg;
    size_t k = sz * n, room = sizeof r->body - 1 - r->len;
    memcpy(r->body + r->len, p, k < room ? k : room);
    r->len += k < room ? k : room;
    r->body[r->len] = '\0';
    return k;
}

static struct reply *http_get(struct gp_server *s, const char *path)
{
    static struct reply r;
    memset(&r, 0, sizeof r);
    char url[1024];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", gp_server_port(s), path);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    CHECK_INT(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    curl_easy_cleanup(c);
    return &r;
}

static void expect(struct gp_server *s, const char *path, long status, const char *type, const char *msg)
{
    struct reply *r = http_get(s, path);
    if (r->status != status || !strstr(r->body, type) || !strstr(r->body, msg))
        gp_test_fail(__FILE__, __LINE__, "%s: %ld %.300s (want %ld %s \"%s\")", path, r->status,
                     r->body, status, type, msg);
}

/* The ids of a list answer, in order, comma-separated. */
static void ids_of(const char *body, char *out, size_t len)
{
    json_error_t je;
    json_t *d = json_loads(body, 0, &je);
    CHECK(d);
    json_t *a = json_object_get(d, "data");
    out[0] = '\0';
    for (size_t i = 0; i < json_array_size(a); i++) {
        size_t n = strlen(out);
        snprintf(out + n, len - n, "%s%s", i ? "," : "",
                 json_string_value(json_object_get(json_array_get(a, i), "id")));
    }
    json_decref(d);
}

static void test_routes(void)
{
    int64_t now = now_ms();
    struct gp_server_config c;
    gp_server_config_defaults(&c);
    snprintf(c.listen, sizeof c.listen, "127.0.0.1:0");
    snprintf(c.data_dir, sizeof c.data_dir, "%s", data_dir());
    snprintf(c.log_level, sizeof c.log_level, "error");
    snprintf(c.gpu_hour_price, sizeof c.gpu_hour_price, "9");   /* unknown models only */
    snprintf(c.gpu_prices, sizeof c.gpu_prices, "h100 = 2.5"); /* over the table's default */
    snprintf(c.job_budget, sizeof c.job_budget, "0.5");
    c.jobs_scan_interval_ms = 100;
    c.remediation.n = 1;
    snprintf(c.remediation.v[0], sizeof c.remediation.v[0],
             "gpu_hardware_errors=scontrol update nodename={node} state=drain");
    struct gp_server *s;
    char err[512];
    CHECK_INT(gp_server_start(&s, &c, err, sizeof err), GP_OK);
    fill(gp_srv_store(s), now);
    char ids[1024];
    /* The scanner runs while fill() writes: a series whose old samples
     * land after a scan has passed them waits for a full rescan (every
     * 60 scans, 6 s here), so wait for the whole list, up to 15 s. */
    for (int i = 0; i < 300; i++) {
        const char *body = http_get(s, "/api/v1/jobs")->body;
        ids_of(body, ids, sizeof ids);
        if (!strcmp(ids, ODD ",run-1,killed-1,train-1,lost-1") &&
            strstr(body, "{\"id\":\"train-1\",\"scheme\":\"slurm\",\"state\":\"finished\"") &&
            strstr(body, "\"exit_status\":137"))
            break;
        struct timespec ts = {0, 50 * 1000000};
        nanosleep(&ts, NULL);
    }
    /* Newest first: run-1 and ODD start at now - 10 (ties by id). */
    CHECK_STR(ids, ODD ",run-1,killed-1,train-1,lost-1");
    struct reply *r = http_get(s, "/api/v1/jobs");
    CHECK_CONTAINS(r->body, "{\"id\":\"train-1\",\"scheme\":\"slurm\",\"state\":\"finished\",\"start\":");
    CHECK_CONTAINS(r->body, "\"exit_status\":0,");
    CHECK_CONTAINS(r->body, "\"nodes\":[\"n1\"],\"ranks\":2,\"gpus\":2}");
    ids_of(http_get(s, "/api/v1/jobs?state=running")->body, ids, sizeof ids);
    CHECK_STR(ids, ODD ",run-1");
    ids_of(http_get(s, "/api/v1/jobs?state=lost")->body, ids, sizeof ids);
    CHECK_STR(ids, "lost-1");
    ids_of(http_get(s, "/api/v1/jobs?node=n1")->body, ids, sizeof ids);
    CHECK_STR(ids, "killed-1,train-1");
    ids_of(http_get(s, "/api/v1/jobs?limit=2")->body, ids, sizeof ids);
    CHECK_STR(ids, ODD ",run-1");
    ids_of(http_get(s, "/api/v1/jobs?limit=1000&node=n3")->body, ids, sizeof ids);
    CHECK_STR(ids, "lost-1");
    char path[256];
    snprintf(path, sizeof path, "/api/v1/jobs?since=%lld", (long long)T + 150);
    ids_of(http_get(s, path)->body, ids, sizeof ids);
    CHECK_STR(ids, ODD ",run-1,killed-1");

    r = http_get(s, "/api/v1/jobs/odd%20job%2Fx%3Fy%25z");
    CHECK_INT(r->status, 200);
    CHECK_CONTAINS(r->body, "{\"status\":\"success\",\"data\":{\"id\":\"odd job/x?y%z\"");
    r = http_get(s, "/api/v1/jobs/train-1");
    CHECK_INT(r->status, 200);
    /* 110 GPU-seconds of the H100 (gpu 0) at 2.5 USD per GPU-hour
     * (gpu_prices) and 110 of gpu 1, whose model is not known, at the
     * gpu_hour_price fallback of 9: 0.35138... USD, 11.5 USD per hour now,
     * the average price 5.75; idle: gpu 0's first sample, 10 s at 2.5. */
    CHECK_CONTAINS(r->body, "\"cost\":0.3513888888888889,\"cost_idle\":0.006944444444444445,");
    CHECK_CONTAINS(r->body, "\"cost_per_hour\":11.5,\"target_steps\":null,");
    CHECK_CONTAINS(r->body, "\"budget\":0.5,\"budget_ratio\":0.7027777777777778,\"currency\":\"USD\"");
    /* The budget detector's cost is the document's, without the document. */
    double cost = 0;
    CHECK_INT(gp_srv_job_cost(s, gp_srv_store(s), "train-1", &cost, err, sizeof err), GP_OK);
    CHECK_DBL(cost, 0.3513888888888889, 1e-15);
    CHECK_INT(gp_srv_job_cost(s, gp_srv_store(s), "killed-1", &cost, err, sizeof err), GP_OK);
    CHECK(isnan(cost)); /* no GPU: unknown, not 0 */
    CHECK_INT(gp_srv_job_cost(s, gp_srv_store(s), "no-such-job", &cost, err, sizeof err), GP_ENOTFOUND);
    CHECK(!strstr(r->body, "\"series\""));
    r = http_get(s, "/api/v1/jobs/killed-1?series=1");
    CHECK_INT(r->status, 200);
    CHECK_CONTAINS(r->body, "\"exit_status\":137,\"signal\":9");
    CHECK_CONTAINS(r->body, "\"series\":{\"gpus\":[]");

    expect(s, "/api/v1/jobs/no-such-job", 404, "\"errorType\":\"not_found\"", "no job 'no-such-job'");
    expect(s, "/api/v1/jobs?limit=0", 400, "bad_data", "invalid parameter 'limit'");
    expect(s, "/api/v1/jobs?limit=1001", 400, "bad_data", "invalid parameter 'limit'");
    expect(s, "/api/v1/jobs?limit=ten", 400, "bad_data", "invalid parameter 'limit'");
    expect(s, "/api/v1/jobs?limit=", 400, "bad_data", "invalid parameter 'limit'");
    expect(s, "/api/v1/jobs?state=done", 400, "bad_data", "invalid parameter 'state'");
    expect(s, "/api/v1/jobs?since=soon", 400, "bad_data", "invalid parameter 'since'");
    expect(s, "/api/v1/jobs/train-1?series=maybe", 400, "bad_data", "invalid parameter 'series'");
    expect(s, "/api/v1/cost?by=gpu", 400, "bad_data", "invalid parameter 'by'");
    expect(s, "/api/v1/cost?start=yesterday", 400, "bad_data", "invalid parameter 'start'");
    expect(s, "/api/v1/cost?end=x", 400, "bad_data", "invalid parameter 'end'");
    expect(s, "/api/v1/cost?start=2000&end=1000", 400, "bad_data", "'end' is before 'start'");
    expect(s, "/api/v1/cost?start=0&end=1000000000", 400, "bad_data", "longer than 31 days");
    /* Cost by job over the fleet's range: train-1 as in its document. */
    snprintf(path, sizeof path, "/api/v1/cost?by=job&start=%lld&end=%lld", (long long)T - 100,
             (long long)T + 300);
    r = http_get(s, path);
    CHECK_INT(r->status, 200);
    CHECK_CONTAINS(r->body, "{\"job\":\"train-1\",\"gpus\":2,\"gpu_hours\":0.06111111111111111,"
                            "\"cost\":0.3513888888888889,");
    snprintf(path, sizeof path, "/api/v1/cost?by=node&start=%lld&end=%lld", (long long)T - 100,
             (long long)T + 300);
    r = http_get(s, path);
    CHECK_INT(r->status, 200);
    CHECK_CONTAINS(r->body, "\"by\":\"node\"");
    CHECK_CONTAINS(r->body, "{\"node\":\"n1\",");
    r = http_get(s, "/api/v1/fleet");
    CHECK_INT(r->status, 200);
    CHECK_CONTAINS(r->body, "{\"status\":\"success\",\"data\":{\"overall\":{\"gpus\":");

    /* recommendations: every recent job newest first, or one */
    r = http_get(s, "/api/v1/recommendations");
    CHECK_INT(r->status, 200);
    {
        json_t *d = json_loads(r->body, 0, NULL);
        json_t *a = json_object_get(d, "data");
        CHECK_INT(json_array_size(a), 5);
        CHECK_STR(json_string_value(json_object_get(json_array_get(a, 2), "job")), "killed-1");
        CHECK(json_is_array(json_object_get(json_array_get(a, 0), "recommendations")));
        json_decref(d);
    }
    r = http_get(s, "/api/v1/recommendations?job=train-1");
    CHECK_INT(r->status, 200);
    CHECK_CONTAINS(r->body, "{\"status\":\"success\",\"data\":[{\"job\":\"train-1\",\"state\":\"finished\","
                            "\"recommendations\":[");
    r = http_get(s, "/api/v1/recommendations?limit=2");
    CHECK_INT(r->status, 200);
    CHECK_CONTAINS(r->body, "\"job\":\"run-1\"");
    CHECK(!strstr(r->body, "killed-1"));
    expect(s, "/api/v1/recommendations?job=nope", 404, "not_found", "no job 'nope'");
    expect(s, "/api/v1/recommendations?limit=101", 400, "bad_data", "invalid parameter 'limit'");
    expect(s, "/api/v1/recommendations?state=done", 400, "bad_data", "invalid parameter 'state'");

    /* audit: rows as the remediation worker writes them (test_remediate
     * drives the worker; alert_event.h cannot be included next to jobs.h) */
    {
        char dbp[1024];
        snprintf(dbp, sizeof dbp, "%s/state.db", data_dir());
        sqlite3 *db;
        CHECK_INT(sqlite3_open(dbp, &db), SQLITE_OK);
        CHECK_INT(sqlite3_exec(db,
                               "INSERT INTO audit(at_ms, alert_id, kind, severity, node, decision, command,"
                               " detail) VALUES(1000, 'abc', 'gpu_hardware_errors', 'critical', 'n1',"
                               " 'dry_run', '[\"scontrol\",\"update\",\"nodename=n1\",\"state=drain\"]',"
                               " 'remediation_dry_run is on: nothing was run')",
                               NULL, NULL, NULL),
                  SQLITE_OK);
        sqlite3_close(db);
    }
    r = http_get(s, "/api/v1/audit?kind=gpu_hardware_errors&decision=dry_run");
    CHECK_INT(r->status, 200);
    CHECK_CONTAINS(r->body, "\"decision\":\"dry_run\",\"command\":[\"scontrol\",\"update\",\"nodename=n1\","
                            "\"state=drain\"]");
    r = http_get(s, "/api/v1/audit?node=n2");
    CHECK_STR(r->body, "{\"status\":\"success\",\"data\":[]}\n");
    expect(s, "/api/v1/audit?decision=maybe", 400, "bad_data", "invalid parameter 'decision'");
    expect(s, "/api/v1/audit?limit=0", 400, "bad_data", "invalid parameter 'limit'");
    expect(s, "/api/v1/audit?since=soon", 400, "bad_data", "invalid parameter 'since'");

    struct gp_buf m;
    gp_buf_init(&m, 0);
    CHECK_INT(gp_server_render_metrics(s, &m), GP_OK);
    CHECK_CONTAINS(m.data, "gpulse_server_http_requests_total{handler=\"job\",code=\"404\"} 1\n");
    CHECK_CONTAINS(m.data, "gpulse_server_http_requests_total{handler=\"audit\",code=\"200\"} 2\n");
    gp_buf_free(&m);
    gp_server_stop(s);
}

/* Scan cost with thousands of jobs: printed, and bounded loosely so a
 * pathological slowdown (a sample read per info series) fails. */
static void test_scan_cost(void)
{
    enum { JOBS = 5000 };
    struct gp_storage *st = sopen_tmp();
    int64_t now = gp_wall_ms();
    struct gp_series *se = calloc(2 * JOBS, sizeof *se);
    struct gp_label *l = calloc(2 * JOBS * 4, sizeof *l);
    struct gp_sample *smp = calloc(2 * JOBS, sizeof *smp);
    char (*id)[16] = calloc(JOBS, sizeof *id);
    CHECK(se && l && smp && id);
    for (size_t i = 0; i < JOBS; i++) {
        snprintf(id[i], sizeof id[i], "job-%05zu", i);
        for (size_t k = 0; k < 2; k++) {
            size_t x = 2 * i + k;
            struct gp_label *ll = &l[x * 4];
            const char *name = k ? "gpulse_job_start_time_seconds" : "gpulse_job_info";
            ll[0] = (struct gp_label){{"Hostname", 8}, {"node-1", 6}};
            ll[1] = (struct gp_label){{"__name__", 8}, {name, strlen(name)}};
            ll[2] = (struct gp_label){{"job", 3}, {id[i], strlen(id[i])}};
            ll[3] = (struct gp_label){{"rank", 4}, {"0", 1}};
            smp[x] = (struct gp_sample){k ? (double)(now / 1000 - 60) : 1, now};
            se[x] = (struct gp_series){ll, 4, &smp[x], 1};
        }
    }
    struct gp_batch rq = {se, 2 * JOBS, 2 * JOBS * 4, 2 * JOBS, NULL};
    struct gp_append_result res;
    char err[256];
    CHECK_INT(gp_storage_append(st, &rq, &res, err, sizeof err), GP_OK);
    struct gp_jobs *j;
    CHECK_INT(gp_jobs_open(&j, data_dir(), 5000, err, sizeof err), GP_OK);
    struct gp_jobs_stats s;
    CHECK_INT(gp_jobs_scan(j, st, now, 0, err, sizeof err), GP_OK);
    gp_jobs_stats(j, &s);
    CHECK_INT(s.jobs, JOBS);
    double first = (double)s.last_scan_ns / 1e6;
    CHECK_INT(gp_jobs_scan(j, st, now + 5000, 0, err, sizeof err), GP_OK);
    gp_jobs_stats(j, &s);
    double again = (double)s.last_scan_ns / 1e6;
    CHECK_INT(gp_jobs_scan(j, st, now + 10000, 1, err, sizeof err), GP_OK);
    gp_jobs_stats(j, &s);
    double full = (double)s.last_scan_ns / 1e6;
    fprintf(stderr, "    scan of %d jobs (%d series): first %.1f ms (all new, %llu rows written), "
                    "steady %.1f ms, full unchanged %.1f ms\n",
            JOBS, 2 * JOBS, first, (unsigned long long)s.rows_written, again, full);
    CHECK(again < 5000 && full < 5000);
    gp_jobs_close(j);
    gp_storage_close(st);
    free(se);
    free(l);
    free(smp);
    free(id);
}

const struct gp_test gp_tests_server_jobs[] = {
    {"registry", test_registry},
    {"state_rules", test_state_rules},
    {"totals", test_totals},
    {"routes", test_routes},
    {"scan_cost", test_scan_cost},
    {0},
};
