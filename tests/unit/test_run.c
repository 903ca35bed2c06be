/* test_run.c - gpulse run's parts: the gated child and the job history. */
#include "run/child.h"
#include "run/history.h"
#include "run/run_config.h"

#include "lib/err.h"
#include "lib/gpumodels.h"
#include "test.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static sigset_t empty_mask(void)
{
    sigset_t m;
    sigemptyset(&m);
    return m;
}

/* Waits (up to 10 s) for the child to end. */
static int reap(struct gp_child *c, struct rusage *ru)
{
    int status = -1;
    for (int i = 0; i < 1000; i++) {
        int got = gp_child_reap(c, &status, ru);
        CHECK(got >= 0);
        if (got == 1)
            return status;
        usleep(10000);
    }
    gp_test_fail(__FILE__, __LINE__, "child did not end");
}

static void test_child_exit_codes(void)
{
    sigset_t m = empty_mask();
    char err[256];
    const char *codes[] = {"0", "1", "3"};
    for (int i = 0; i < 3; i++) {
        char script[64];
        snprintf(script, sizeof script, "exit %s", codes[i]);
        char *argv[] = {"sh", "-c", script, NULL};
        char *env[] = {NULL};
        struct gp_child c;
        CHECK_INT(gp_child_spawn(&c, argv, env, &m, err, sizeof err), GP_OK);
        int e;
        CHECK_INT(gp_child_release(&c, &e), GP_OK);
        struct rusage ru;
        int st = reap(&c, &ru);
        CHECK_INT(gp_child_exit_code(st), atoi(codes[i]));
    }
    /* a signal death reads as 128 + signal */
    char *argv[] = {"sh", "-c", "kill -TERM $$", NULL};
    char *env[] = {NULL};
    struct gp_child c;
    CHECK_INT(gp_child_spawn(&c, argv, env, &m, err, sizeof err), GP_OK);
    int e;
    CHECK_INT(gp_child_release(&c, &e), GP_OK);
    struct rusage ru;
    int st = reap(&c, &ru);
    CHECK(WIFSIGNALED(st));
    CHECK_INT(gp_child_exit_code(st), 128 + SIGTERM);
}

static void test_child_gate_and_env(void)
{
    sigset_t m = empty_mask();
    char err[256], flag[600], script[800];
    snprintf(flag, sizeof flag, "%s/ran", gp_test_tmpdir());
    snprintf(script, sizeof script, "test \"$GPULSE_RUN_ID\" = job-1 && test \"$HOME\" = /nowhere && touch %s",
             flag);
    char *argv[] = {"sh", "-c", script, NULL};
    char *env[] = {"GPULSE_RUN_ID=job-1", "HOME=/nowhere", NULL};
    struct gp_child c;
    CHECK_INT(gp_child_spawn(&c, argv, env, &m, err, sizeof err), GP_OK);
    usleep(200000);
    struct stat sb;
    CHECK(stat(flag, &sb) != 0); /* held at the gate */
    int e;
    CHECK_INT(gp_child_release(&c, &e), GP_OK);
    struct rusage ru;
    CHECK_INT(gp_child_exit_code(reap(&c, &ru)), 0);
    CHECK(stat(flag, &sb) == 0);
}

static void test_child_not_found(void)
{
    sigset_t m = empty_mask();
    char err[256];
    char *argv[] = {"gpulse-no-such-command-here", NULL};
    char *env[] = {NULL};
    struct gp_child c;
    CHECK_INT(gp_child_spawn(&c, argv, env, &m, err, sizeof err), GP_OK);
    int e;
    CHECK_INT(gp_child_release(&c, &e), GP_ENOTFOUND);
    CHECK_INT(e, ENOENT);
    CHECK(c.pid <= 0); /* reaped */

    /* a file that is not executable: 126's case */
    char path[600];
    snprintf(path, sizeof path, "%s/script", gp_test_tmpdir());
    gp_test_write_file(gp_test_tmpdir(), "script", "#!/bin/sh\nexit 0\n");
    char *argv2[] = {path, NULL};
    CHECK_INT(gp_child_spawn(&c, argv2, env, &m, err, sizeof err), GP_OK);
    CHECK_INT(gp_child_release(&c, &e), GP_EIO);
    CHECK_INT(e, EACCES);
}

static void test_child_abort_at_gate(void)
{
    sigset_t m = empty_mask();
    char err[256];
    char *argv[] = {"sleep", "30", NULL};
    char *env[] = {NULL};
    struct gp_child c;
    CHECK_INT(gp_child_spawn(&c, argv, env, &m, err, sizeof err), GP_OK);
    pid_t pid = c.pid;
    gp_child_abort(&c);
    CHECK(c.pid <= 0);
    CHECK(kill(pid, 0) != 0); /* gone and reaped */
}

/* ---- history ---- */

static const char JOB[] = "run-test-1";

/* A frame at t_ms with two GPUs: GPU 0 held by the job (pid 100, 4 GiB),
 * GPU 1 by another process; one job entry. */
static void make_frame(struct gp_frame *f, int64_t t_ms, double act0, double mem0, double cpu_s,
                       double rss)
{
    gp_frame_reset(f);
    f->time_ms = t_ms;
    snprintf(f->hostname, sizeof f->hostname, "node1");
    struct gp_gpu *g = gp_frame_add_gpu(f);
    g->index = 0;
    snprintf(g->uuid, sizeof g->uuid, "GPU-0");
    snprintf(g->model, sizeof g->model, "NVIDIA H100 80GB HBM3");
    gp_gpu_set(g, GPF_PROF_SM_ACTIVE, act0);
    gp_gpu_set(g, GPF_PROF_TENSOR, act0 / 2);
    gp_gpu_set(g, GPF_PROF_PCIE_RX, 63e9 * 0.25); /* a quarter of PCIe 5 x16 */
    gp_gpu_set(g, GPF_PROF_PCIE_TX, 1e9);
    gp_gpu_set(g, GPF_GPU_UTIL, 100);
    gp_gpu_set(g, GPF_MEMORY_TOTAL, 80.0 * 1073741824.0);
    struct gp_gpu_proc *gp = gp_gpu_add_proc(g);
    gp->pid = 100;
    gp->mem_valid = true;
    gp->mem_bytes = (uint64_t)mem0;
    g = gp_frame_add_gpu(f);
    g->index = 1;
    snprintf(g->uuid, sizeof g->uuid, "GPU-1");
    gp_gpu_set(g, GPF_GPU_UTIL, 100);
    gp = gp_gpu_add_proc(g);
    gp->pid = 200;
    struct gp_proc *p = gp_frame_add_proc(f);
    p->pid = 100;
    snprintf(p->jid.job, sizeof p->jid.job, "%s", JOB);
    p = gp_frame_add_proc(f);
    p->pid = 200;
    snprintf(p->jid.job, sizeof p->jid.job, "other");
    struct gp_job *j = gp_frame_add_job(f);
    snprintf(j->id.job, sizeof j->id.job, "%s", JOB);
    j->id.rank = 0;
    j->id.local_rank = 0;
    j->id.world_size = 1;
    j->nprocs = 3;
    j->cpu_seconds = cpu_s;
    j->rss_bytes = (uint64_t)rss;
}

static double dget(json_t *o, const char *path)
{
    json_t *v = o;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *tok = strtok(buf, "."); tok && v; tok = strtok(NULL, "."))
        v = json_object_get(v, tok);
    if (!v || !json_is_number(v))
        gp_test_fail(__FILE__, __LINE__, "%s is not a number", path);
    return json_number_value(v);
}

static bool is_null(json_t *o, const char *path)
{
    json_t *v = o;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *tok = strtok(buf, "."); tok && v; tok = strtok(NULL, "."))
        v = json_object_get(v, tok);
    return v && json_is_null(v);
}

static void test_history_totals(void)
{
    struct gp_history_options o = {JOB, "python train.py", 1.0, 2.0, 0};
    struct gp_history *h = gp_history_new(&o);
    CHECK(h);
    struct gp_frame f;
    gp_frame_init(&f);
    int64_t t0 = 1700000000000;
    /* 10 ticks 1 s apart: activity 0.5 then 1.0, memory up to 8 GiB, CPU 2 cores */
    for (int i = 0; i < 10; i++) {
        make_frame(&f, t0 + i * 1000, i < 5 ? 0.5 : 1.0, (double)(i + 1) * 0.8 * 1073741824.0,
                   2.0 * i, 1e9 + i * 1e8);
        gp_history_frame(h, &f);
    }
    /* 100 steps of 0.11 s, 0.01 s of it data wait, 32 samples each */
    double t = 1700000000.0;
    for (int i = 0; i < 100; i++) {
        t += 0.11;
        struct gp_history_step s = {.t_end = t, .seconds = 0.11, .has_samples = true, .samples = 32,
                                    .has_wait = true, .wait_seconds = 0.01};
        gp_history_step(h, &s);
    }
    struct rusage ru = {0};
    ru.ru_utime.tv_sec = 30;   /* more than sampled: the kernel's count wins */
    ru.ru_maxrss = 4 * 1024 * 1024; /* 4 GiB in KiB */
    gp_history_finish(h, 1700000010.0, 0, &ru);
    json_t *d = gp_history_document(h);
    CHECK(d);
    CHECK_STR(json_string_value(json_object_get(d, "state")), "finished");
    CHECK_INT(dget(d, "exit_status"), 0);
    CHECK(is_null(d, "signal"));
    CHECK_DBL(dget(d, "totals.gpu_seconds"), 10.0, 1e-9); /* GPU 1 is not ours */
    CHECK_INT(json_array_size(json_object_get(d, "gpus")), 1);
    CHECK_DBL(dget(d, "totals.activity_avg"), 0.75, 1e-9);
    CHECK_DBL(dget(d, "totals.activity_p50"), 0.5, 1e-9);
    CHECK_DBL(dget(d, "totals.activity_p90"), 1.0, 1e-9);
    CHECK_DBL(dget(d, "totals.tensor_active_avg"), 0.375, 1e-9);
    CHECK_DBL(dget(d, "totals.link_busy_avg"), 0.25, 1e-9);
    CHECK(is_null(d, "totals.sm_occupancy_avg")); /* not reported: unknown, not 0 */
    CHECK(is_null(d, "totals.dram_active_avg"));
    CHECK_DBL(dget(d, "totals.peak_gpu_memory_bytes"), 8.0 * 1073741824.0, 1);
    CHECK_DBL(dget(d, "totals.peak_gpu_memory_ratio"), 0.1, 1e-9);
    CHECK_DBL(dget(d, "totals.host_cpu_seconds"), 30.0, 1e-9);
    CHECK_DBL(dget(d, "totals.host_rss_peak_bytes"), 4.0 * 1073741824.0, 1);
    CHECK_INT(dget(d, "totals.steps"), 100);
    CHECK_DBL(dget(d, "totals.samples"), 3200, 1e-9);
    CHECK_DBL(dget(d, "totals.step_seconds.mean"), 0.11, 1e-12);
    CHECK_DBL(dget(d, "totals.step_seconds.p50"), 0.11, 0.11 * 0.01);
    CHECK_DBL(dget(d, "totals.step_seconds.max"), 0.11, 1e-12);
    /* 100 steps of 0.11 s of wall time each, waits included */
    CHECK_DBL(dget(d, "totals.samples_per_second"), 3200 / 11.0, 1e-3); /* epoch-second doubles */
    CHECK_DBL(dget(d, "totals.data_wait_ratio"), 0.01 / 0.11, 1e-9);
    CHECK(is_null(d, "totals.tokens"));
    CHECK(is_null(d, "totals.tokens_per_second"));
    CHECK_DBL(dget(d, "totals.cost"), 10.0 / 3600 * 2.0, 1e-12);
    /* the job model's idle cost: never below 0.05; unused: 5 ticks at 0.5 */
    CHECK_DBL(dget(d, "totals.cost_idle"), 0, 0);
    CHECK_DBL(dget(d, "totals.cost_unused_compute"), 2.5 / 3600 * 2.0, 1e-12);
    CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(d, "gpus"), 0),
                                                "activity_source")),
              "sm_active");
    json_t *ranks = json_object_get(d, "ranks");
    CHECK_INT(json_array_size(ranks), 1);
    CHECK_INT(dget(json_array_get(ranks, 0), "processes"), 3);
    json_t *series = json_object_get(json_object_get(d, "series"), "host");
    CHECK_INT(json_array_size(json_object_get(series, "t")), 10);
    json_decref(d);
    gp_frame_free(&f);
    gp_history_free(h);
}

/* Two ranks (pids 100 and 101, each on its own H100): a frame at t_ms. */
static void make_rank_frame(struct gp_frame *f, int64_t t_ms)
{
    gp_frame_reset(f);
    f->time_ms = t_ms;
    snprintf(f->hostname, sizeof f->hostname, "node1");
    for (int r = 0; r < 2; r++) {
        struct gp_gpu *g = gp_frame_add_gpu(f);
        g->index = (unsigned)r;
        snprintf(g->uuid, sizeof g->uuid, "GPU-%d", r);
        snprintf(g->model, sizeof g->model, "NVIDIA H100 80GB HBM3");
        gp_gpu_set(g, GPF_GPU_UTIL, 90);
        gp_gpu_add_proc(g)->pid = 100 + (uint32_t)r;
        struct gp_proc *p = gp_frame_add_proc(f);
        p->pid = 100 + (uint32_t)r;
        snprintf(p->jid.job, sizeof p->jid.job, "%s", JOB);
        p->jid.rank = p->jid.local_rank = r;
        p->jid.world_size = 2;
        struct gp_job *j = gp_frame_add_job(f);
        j->id = p->jid;
        j->nprocs = 1;
    }
    gp_frame_sort_procs(f);
}

/* Each rank's straggler scores and MFU (docs/jobs.md) from its own step
 * records: rank 0 steps 0.1 s for 10 s; rank 1 as fast for 5 s, then 0.2 s
 * a step. Scores by hand: rank 1's mean 10/75 s, its best 0.1 s: relative
 * and individual 0.75. MFU: a rank's tokens x 1e9 FLOPs over the job's
 * 10 s stepping span over one H100's 989.4 TFLOP/s at bf16. */
static void test_history_rank_figures(void)
{
    double t0 = 1700000000.0;
    struct gp_history_options o = {JOB, "torchrun train.py", 1.0, 2.0, t0};
    struct gp_history *h = gp_history_new(&o);
    CHECK(h);
    gp_history_model(h, 1e9, 0, GP_PREC_BF16);
    struct gp_frame f;
    gp_frame_init(&f);
    double next[2] = {t0, t0};
    for (int sec = 0; sec < 10; sec++) {
        make_rank_frame(&f, (int64_t)((t0 + sec) * 1000));
        gp_history_frame(h, &f);
        for (int r = 0; r < 2; r++) {
            double dur = r == 1 && sec >= 5 ? 0.2 : 0.1;
            while (next[r] + dur <= t0 + sec + 1 + 1e-9) {
                next[r] += dur;
                struct gp_history_step s = {.t_end = next[r], .seconds = dur, .has_tokens = true,
                                            .tokens = 1000, .pid = 100 + (uint32_t)r, .n = -1};
                gp_history_step(h, &s);
            }
        }
    }
    make_rank_frame(&f, (int64_t)((t0 + 10) * 1000));
    gp_history_frame(h, &f);
    gp_history_finish(h, t0 + 10, 0, NULL);
    json_t *d = gp_history_document(h);
    CHECK(d);
    json_t *ranks = json_object_get(d, "ranks");
    CHECK_INT(json_array_size(ranks), 2);
    json_t *r0 = json_array_get(ranks, 0), *r1 = json_array_get(ranks, 1);
    CHECK_INT(dget(r0, "rank"), 0);
    CHECK_INT(dget(r1, "rank"), 1);
    CHECK_DBL(dget(r0, "step_seconds_mean"), 0.1, 1e-9);
    CHECK_DBL(dget(r0, "straggler_relative"), 1.0, 1e-9);
    CHECK_DBL(dget(r0, "straggler_individual"), 1.0, 1e-9);
    CHECK_DBL(dget(r1, "step_seconds_mean"), 10.0 / 75, 1e-9);
    CHECK_DBL(dget(r1, "step_seconds_best"), 0.1, 1e-9);
    CHECK_DBL(dget(r1, "straggler_relative"), 0.75, 1e-9);
    CHECK_DBL(dget(r1, "straggler_individual"), 0.75, 1e-9);
    CHECK_DBL(dget(r0, "mfu"), 100 * 1000 / 10.0 * 1e9 / 989.4e12, 1e-8); /* epoch-second doubles */
    CHECK_DBL(dget(r1, "mfu"), 75 * 1000 / 10.0 * 1e9 / 989.4e12, 1e-8); /* epoch-second doubles */
    CHECK(is_null(r0, "mfu_reason"));
    /* the job's MFU is over both GPUs: the ranks' mean */
    CHECK_DBL(dget(d, "totals.mfu"), 175 * 1000 / 10.0 * 1e9 / (2 * 989.4e12), 1e-8);
    json_decref(d);
    gp_frame_free(&f);
    gp_history_free(h);
}

static void test_history_empty_is_null(void)
{
    struct gp_history_options o = {JOB, "true", 1.0, 0, 0};
    struct gp_history *h = gp_history_new(&o);
    CHECK(h);
    gp_history_finish(h, 1.0, 9, NULL); /* SIGKILL */
    json_t *d = gp_history_document(h);
    CHECK_STR(json_string_value(json_object_get(d, "state")), "killed");
    CHECK_INT(dget(d, "exit_status"), 128 + 9);
    CHECK_INT(dget(d, "signal"), 9);
    const char *nulls[] = {"totals.activity_avg", "totals.peak_gpu_memory_bytes", "totals.host_cpu_seconds",
                           "totals.host_rss_peak_bytes", "totals.step_seconds", "totals.samples_per_second",
                           "totals.data_wait_ratio", "totals.price_per_gpu_hour"};
    for (size_t i = 0; i < sizeof nulls / sizeof nulls[0]; i++)
        if (!is_null(d, nulls[i]))
            gp_test_fail(__FILE__, __LINE__, "%s is not null", nulls[i]);
    CHECK_INT(dget(d, "totals.steps"), 0);
    /* no GPU seen: unknown, as the server's document says (query/jobmodel.h) */
    CHECK(is_null(d, "totals.gpu_hours"));
    CHECK(is_null(d, "totals.cost"));
    json_decref(d);
    gp_history_free(h);
}

/* Far more ticks than points: the curves stay bounded, memory keeps its
 * peak, activity its mean. */
static void test_history_downsamples(void)
{
    struct gp_history_options o = {JOB, "x", 1.0, 0, 0};
    struct gp_history *h = gp_history_new(&o);
    struct gp_frame f;
    gp_frame_init(&f);
    int n = 5000;
    for (int i = 0; i < n; i++) {
        double mem = i == 3333 ? 50e9 : 1e9;
        make_frame(&f, 1700000000000 + (int64_t)i * 1000, (i % 2) ? 1.0 : 0.0, mem, i, 1e9);
        gp_history_frame(h, &f);
    }
    json_t *d = gp_history_document(h);
    json_t *g = json_array_get(json_object_get(json_object_get(d, "series"), "gpus"), 0);
    json_t *mem = json_object_get(g, "memory_bytes"), *act = json_object_get(g, "activity");
    CHECK(json_array_size(mem) <= GP_HISTORY_POINTS);
    CHECK(json_array_size(mem) >= GP_HISTORY_POINTS / 2);
    double peak = 0;
    for (size_t i = 0; i < json_array_size(mem); i++)
        peak = fmax(peak, json_number_value(json_array_get(mem, i)));
    CHECK_DBL(peak, 50e9, 1);
    for (size_t i = 0; i + 1 < json_array_size(act); i++) /* full points mix both ticks */
        CHECK_DBL(json_number_value(json_array_get(act, i)), 0.5, 1e-9);
    CHECK_DBL(dget(d, "totals.gpu_seconds"), n, 1e-6);
    /* no price given: the H100 at the model table's default */
    double p = gp_gpumodel_find("H100")->price_usd_hour;
    CHECK(p > 0);
    CHECK_DBL(dget(d, "totals.price_per_gpu_hour"), p, 1e-9);
    CHECK_DBL(dget(d, "totals.cost"), n / 3600.0 * p, 1e-9);
    json_decref(d);
    gp_frame_free(&f);
    gp_history_free(h);
}

static void test_history_status_line(void)
{
    struct gp_history_options o = {JOB, "x", 1.0, 0, 0};
    struct gp_history *h = gp_history_new(&o);
    struct gp_frame f;
    gp_frame_init(&f);
    make_frame(&f, 1700000000000, 0.87, 41.0 * 1073741824.0, 1, 6.0 * 1073741824.0);
    gp_history_frame(h, &f);
    struct gp_history_step s = {.t_end = 1700000000.0, .seconds = 0.1};
    gp_history_step(h, &s);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_history_status(h, &b, (double)time(NULL) + 65);
    CHECK_CONTAINS(b.data, "[gpulse] run-test-1 0:01:0");
    CHECK_CONTAINS(b.data, "step 1 (");
    CHECK_CONTAINS(b.data, "GPU 87%");
    CHECK_CONTAINS(b.data, "GPU mem 41.0/80.0 GiB");
    CHECK_CONTAINS(b.data, "RSS 6.00 GiB");
    gp_buf_free(&b);
    gp_frame_free(&f);
    gp_history_free(h);
}

/* docs/config.md and gpulse.example.yaml name every run key, and the
 * example's run: and agent: sections make a valid run configuration. */
static void test_docs_name_every_key(void)
{
    static const char *const keys[] = {
#define GP_DOC_KEY_(field, yaml, flag, type, def, help) yaml,
        GP_RUN_KEYS(GP_DOC_KEY_)
#undef GP_DOC_KEY_
    };
    const char *sec = strstr(gp_test_repo_text("docs/config.md"), "## Run");
    CHECK(sec);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char needle[80];
        snprintf(needle, sizeof needle, "| `%s` |", keys[i]);
        if (!strstr(sec, needle))
            gp_test_fail(__FILE__, __LINE__, "docs/config.md's run section lacks %s", needle);
    }
    const char *ex = strstr(gp_test_repo_text("gpulse.example.yaml"), "\nrun:\n");
    CHECK(ex);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char needle[80];
        snprintf(needle, sizeof needle, "\n  %s:", keys[i]);
        if (!strstr(ex, needle))
            gp_test_fail(__FILE__, __LINE__, "gpulse.example.yaml's run section lacks %s", keys[i]);
    }
    struct gp_run_config r;
    struct gp_agent_config a;
    gp_run_config_defaults(&r, &a);
    struct gp_cfg_section s[2] = {gp_run_cfg_section(&r), gp_agent_cfg_section(&a)};
    char err[512], path[1024];
    double price;
    snprintf(path, sizeof path, "%s/../../gpulse.example.yaml", GP_TEST_DATA_DIR);
    CHECK_INT(gp_cfg_load_file(s, 2, path, err, sizeof err), GP_OK);
    CHECK_INT(gp_run_config_validate(&r, &a, &price, err, sizeof err), GP_OK);
}

static void test_config_checks(void)
{
    struct gp_run_config r;
    struct gp_agent_config a;
    char err[512];
    double price;
    gp_run_config_defaults(&r, &a);
    CHECK_STR(a.log_level, "error");
    CHECK_INT(gp_run_config_validate(&r, &a, &price, err, sizeof err), GP_OK);
    CHECK_DBL(price, 0, 0);
    snprintf(r.gpu_hour_price, sizeof r.gpu_hour_price, "2.75");
    CHECK_INT(gp_run_config_validate(&r, &a, &price, err, sizeof err), GP_OK);
    CHECK_DBL(price, 2.75, 0);
    const char *bad_prices[] = {"-1", "cheap", "1e400", "nan", "3$"};
    for (size_t i = 0; i < sizeof bad_prices / sizeof bad_prices[0]; i++) {
        snprintf(r.gpu_hour_price, sizeof r.gpu_hour_price, "%s", bad_prices[i]);
        CHECK_INT(gp_run_config_validate(&r, &a, &price, err, sizeof err), GP_ECONFIG);
        CHECK_CONTAINS(err, "gpu_hour_price");
    }
    r.gpu_hour_price[0] = '\0';
    const char *bad_jobs[] = {"a b", "a/b", "x\"y", "tab\there", "\x01"};
    for (size_t i = 0; i < sizeof bad_jobs / sizeof bad_jobs[0]; i++) {
        snprintf(r.job, sizeof r.job, "%s", bad_jobs[i]);
        CHECK_INT(gp_run_config_validate(&r, &a, &price, err, sizeof err), GP_ECONFIG);
    }
    snprintf(r.job, sizeof r.job, "bert-large_v2.1@team");
    CHECK_INT(gp_run_config_validate(&r, &a, &price, err, sizeof err), GP_OK);
    snprintf(r.server, sizeof r.server, "ftp://x");
    CHECK_INT(gp_run_config_validate(&r, &a, &price, err, sizeof err), GP_ECONFIG);
    snprintf(r.server, sizeof r.server, "http://127.0.0.1:9402");
    CHECK_INT(gp_run_config_validate(&r, &a, &price, err, sizeof err), GP_OK);
}

const struct gp_test gp_tests_run[] = {
    {"docs_name_every_key", test_docs_name_every_key},
    {"config_checks", test_config_checks},
    {"child_exit_codes", test_child_exit_codes},
    {"child_gate_and_env", test_child_gate_and_env},
    {"child_not_found", test_child_not_found},
    {"child_abort_at_gate", test_child_abort_at_gate},
    {"history_totals", test_history_totals},
    {"history_empty_is_null", test_history_empty_is_null},
    {"history_rank_figures", test_history_rank_figures},
    {"history_downsamples", test_history_downsamples},
    {"history_status_line", test_history_status_line},
    {0},
};
