/*
 * test_jobdoc_parts.c - the job document's parts behind their own
 * interfaces (query/jobdoc_int.h, jobdoc_gpu.h): the per-series
 * arithmetic (counter increase, median gap), what a cluster's aggregate
 * reads as in place of samples, and the GPUs: which series
 * file under which GPU, their order, and one GPU's figures read from a
 * store (activity weighted by its gaps, the GPU_UTIL fallback, memory in
 * bytes, capacity from FB used + free + reserved); which processes
 * goodput counts.
 */
#include "lib/err.h"
#include "query/jobdoc.h"
#include "query/jobdoc_gpu.h"
#include "query/jobdoc_int.h"
#include "rw_batch.h"
#include "store/labels.h"
#include "store_testlib.h"
#include "test.h"

#include <jansson.h>
#include <math.h>
#include <string.h>
#include <time.h>

/* Increase reads a drop as a reset (counting from 0 again); a counter
 * born in the job counts its first value too. */
static void test_counter_arithmetic(void)
{
    int64_t t[5] = {0, 10000, 20000, 50000, 60000};
    double v[5] = {5, 7, 10, 2, 6};
    struct gp_jobdoc_ser x = {.t = t, .v = v, .n = 5};
    CHECK_DBL(gp_jobdoc_increase(&x, 0), 2 + 3 + 2 + 4, 0);
    CHECK_DBL(gp_jobdoc_increase(&x, 1), 5 + 2 + 3 + 2 + 4, 0);
    /* gaps 10, 10, 30, 10 s: the median is 10 s, not the mean */
    CHECK_INT(gp_jobdoc_median_gap(&x), 10000);
    x.n = 1;
    CHECK_DBL(gp_jobdoc_increase(&x, 0), 0, 0);
    CHECK_INT(gp_jobdoc_median_gap(&x), 0);
    x.n = 0;
    CHECK_DBL(gp_jobdoc_increase(&x, 1), 0, 0);
}

/* A counter the cluster aggregated (remote mode) reads as its lowest
 * and highest value, whose increase is the raw samples' when it never
 * fell; its newest value is the cluster's last_over_time; a series that
 * is not one of the aggregates is read from the store. */
static void test_aggregate_stand_in(void)
{
    int64_t t[4] = {1000, 2000, 3000, 4000};
    double v[4] = {10, 25, 25, 70};
    struct gp_jobdoc_ser raw = {.t = t, .v = v, .n = 4};
    struct gp_jobdoc_agg a[2] = {
        {.s = {.first_ms = 1000, .last_ms = 4000}, .last = 70, .peak = 70, .low = 10, .resets = 0},
        {.s = {.first_ms = 1000, .last_ms = 4000}, .last = 5, .peak = NAN, .low = NAN, .resets = NAN},
    };
    struct gp_jobdoc_aggs aggs = {a, 2};
    struct gp_jobdoc_src src = {.agg = &aggs, .t0 = 1000, .t1 = 4000, .tc = 4000};
    struct gp_jobdoc_ser x;
    CHECK_INT(gp_jobdoc_ser_read(&src, &a[0].s, 1000, 4000, &x), GP_OK);
    CHECK_INT(x.n, 2);
    CHECK(gp_jobdoc_born(&src, &a[0].s));
    CHECK_DBL(gp_jobdoc_increase(&x, 1), gp_jobdoc_increase(&raw, 1), 0);
    CHECK_DBL(gp_jobdoc_increase(&x, 0), gp_jobdoc_increase(&raw, 0), 0);
    gp_jobdoc_ser_free(&x);
    /* newest only (no lowest/highest asked): no samples, its newest value */
    CHECK_INT(gp_jobdoc_ser_read(&src, &a[1].s, 1000, 4000, &x), GP_OK);
    CHECK_INT(x.n, 0);
    gp_jobdoc_ser_free(&x);
    CHECK_DBL(gp_jobdoc_newest(&src, &a[1].s), 5, 0);
    CHECK(!gp_jobdoc_agg_of(&aggs, &(struct gp_store_series){0}));
    CHECK(gp_jobdoc_agg_of(&aggs, &a[1].s) == &a[1]);
}

/* A series made of a label blob, for filing (no store). */
struct tser {
    struct gp_store_series s;
    struct gp_buf blob;
};

static void tser(struct tser *x, const char *name, const char *node, const char *gpu, const char *model,
                 int64_t last_ms)
{
    struct gp_label l[4]; /* sorted by name: Hostname, __name__, gpu, modelName */
    size_t n = 0;
    l[n++] = (struct gp_label){{"Hostname", 8}, {node, strlen(node)}};
    l[n++] = (struct gp_label){{"__name__", 8}, {name, strlen(name)}};
    if (gpu)
        l[n++] = (struct gp_label){{"gpu", 3}, {gpu, strlen(gpu)}};
    if (model)
        l[n++] = (struct gp_label){{"modelName", 9}, {model, strlen(model)}};
    gp_buf_init(&x->blob, 0);
    CHECK_INT(gp_labels_encode(l, n, &x->blob), GP_OK);
    x->s = (struct gp_store_series){.id = 1, .labels = (const uint8_t *)x->blob.data,
                                    .labels_len = x->blob.len, .last_ms = last_ms};
}

/* Families file under one GPU per (node, gpu); a series without a gpu
 * label makes none; the newest series of a name wins; GPUs sort by node
 * and then by index as a number. */
static void test_gpus_filing(void)
{
    static struct tser x[7];
    tser(&x[0], "DCGM_FI_PROF_SM_ACTIVE", "n1", "10", "NVIDIA H100", 100);
    tser(&x[1], "DCGM_FI_DEV_FB_USED", "n1", "2", NULL, 100);
    tser(&x[2], "DCGM_FI_DEV_FB_USED", "n0", "3", NULL, 100);
    tser(&x[3], "DCGM_FI_DEV_GPU_TEMP", "n1", "10", NULL, 100); /* listed, read for nothing */
    tser(&x[4], "DCGM_FI_DEV_FB_USED", "n1", "2", "newer", 200);
    tser(&x[5], "DCGM_FI_DEV_FB_USED", "n1", "2", "older", 50);
    tser(&x[6], "DCGM_FI_DEV_GPU_UTIL", "n1", NULL, NULL, 100); /* no gpu label */
    CHECK(gp_jobdoc_gpu_family(&x[0].s) && gp_jobdoc_gpu_family(&x[3].s));
    struct gp_jobdoc_gpus gs = {0};
    for (int i = 0; i < 7; i++)
        CHECK_INT(gp_jobdoc_gpus_add(&gs, &x[i].s), GP_OK);
    CHECK_INT(gs.n, 3);
    gp_jobdoc_gpus_sort(&gs);
    const char *want[3][2] = {{"n0", "3"}, {"n1", "2"}, {"n1", "10"}};
    for (int i = 0; i < 3; i++) {
        CHECK(gp_jobdoc_str_eq(gs.g[i].node, (struct gp_str){want[i][0], strlen(want[i][0])}));
        CHECK(gp_jobdoc_str_eq(gs.g[i].gpu, (struct gp_str){want[i][1], strlen(want[i][1])}));
    }
    CHECK(gs.g[1].fb_used == &x[4].s);
    CHECK(gs.g[2].sm == &x[0].s && !gs.g[2].fb_used && !gs.g[2].util);
    CHECK(gp_jobdoc_str_eq(gs.g[2].model, (struct gp_str){"NVIDIA H100", 11}));
    gp_jobdoc_gpus_free(&gs);
    CHECK(!gs.g && !gs.n);
    for (int i = 0; i < 7; i++)
        gp_buf_free(&x[i].blob);
}

/* an hour ago, to the minute: inside any retention */
static int64_t T0;

/* Appends name{job="j",Hostname="n1",gpu="0"} with n samples. */
static void put(struct gp_storage *st, const char *name, const int64_t *t, const double *v, size_t n)
{
    static struct rw_batch b;
    memset(&b, 0, sizeof b);
    double ts[RW_BATCH_SAMPLES];
    for (size_t i = 0; i < n; i++)
        ts[i] = (double)t[i] / 1e3;
    rw_batch_add(&b, name, "job=j;Hostname=n1;gpu=0", ts, v, n);
    struct gp_batch rq = rw_batch_request(&b);
    struct gp_append_result res;
    char err[256];
    CHECK_INT(gp_storage_append(st, &rq, &res, err, sizeof err), GP_OK);
}

/* One GPU's figures from a store: SM active at a 10 s step with one 40 s
 * gap (weighing two steps, not four), GPU_UTIL ignored while SM active
 * has samples; memory in MiB read as bytes, its peak, and the capacity
 * from the newest FB used + free + reserved. */
static void test_gpu_read(void)
{
    T0 = ((int64_t)time(NULL) / 60 - 60) * 60000;
    struct gp_storage *st = sopen_tmp();
    int64_t t[6] = {T0, T0 + 10000, T0 + 20000, T0 + 60000, T0 + 70000, T0 + 80000};
    double act[6] = {0.5, 0.02, 1.0, 0.5, 0.5, 0.5}, util[6] = {90, 90, 90, 90, 90, 90};
    double used[6] = {100, 300, 200, 200, 200, 250}, fb_free[6] = {700, 500, 600, 600, 600, 550};
    double res[6] = {24, 24, 24, 24, 24, 24};
    put(st, "DCGM_FI_PROF_SM_ACTIVE", t, act, 6);
    put(st, "DCGM_FI_DEV_GPU_UTIL", t, util, 6);
    put(st, "DCGM_FI_DEV_FB_USED", t, used, 6);
    put(st, "DCGM_FI_DEV_FB_FREE", t, fb_free, 6);
    put(st, "DCGM_FI_DEV_FB_RESERVED", t, res, 6);
    struct gp_matcher m;
    char err[128];
    CHECK_INT(gp_matcher_init(&m, GP_MATCH_EQ, "job", "j", err, sizeof err), GP_OK);
    struct gp_store_selection sel;
    CHECK_INT(gp_storage_select(st, &m, 1, T0, T0 + 80000, &sel), GP_OK);
    CHECK_INT(sel.n, 5);
    struct gp_jobdoc_gpus gs = {0};
    for (size_t i = 0; i < sel.n; i++)
        CHECK_INT(gp_jobdoc_gpus_add(&gs, &sel.series[i]), GP_OK);
    CHECK_INT(gs.n, 1);
    struct gp_jobdoc_src src = {.st = st, .t0 = T0, .t1 = T0 + 80000, .tc = T0 + 80000};
    struct gp_jobmodel_gpus acc;
    gp_jobmodel_gpus_init(&acc);
    struct gp_jobdoc_gpu *g = &gs.g[0];
    CHECK_INT(gp_jobdoc_gpu_read(&src, g, &acc), GP_OK);
    CHECK(!strcmp(g->source, "sm_active"));
    CHECK_INT(g->act.n, 6);
    CHECK_INT(g->step, 10000);
    CHECK_DBL(g->seconds, 60, 0);
    /* weights 10, 10, 20 (the 40 s gap capped at two steps), 10, 10, 10 s */
    CHECK_DBL(g->act_w, 70000, 0);
    CHECK_DBL(g->act_sum, (0.5 * 10 + 0.02 * 10 + 1.0 * 20 + 0.5 * 30) * 1000, 1e-6);
    CHECK_DBL(g->idle_s, 10, 1e-9); /* the one sample under 0.05, one step */
    CHECK_DBL(g->peak, 300 * 1048576.0, 0);
    CHECK_DBL(g->capacity, (250 + 550 + 24) * 1048576.0, 0);
    CHECK_INT(gp_jobdoc_gpu_last(g), T0 + 80000);
    CHECK_DBL(gp_jobdoc_newest(&src, g->fb_free), 550, 0);
    gp_jobdoc_gpus_free(&gs);

    /* SM active with no sample in the range: GPU_UTIL / 100 instead */
    for (size_t i = 0; i < sel.n; i++)
        CHECK_INT(gp_jobdoc_gpus_add(&gs, &sel.series[i]), GP_OK);
    src.t0 = T0 + 90000, src.t1 = T0 + 100000;
    put(st, "DCGM_FI_DEV_GPU_UTIL", (int64_t[]){T0 + 90000, T0 + 100000}, (double[]){40, 60}, 2);
    CHECK_INT(gp_jobdoc_gpu_read(&src, &gs.g[0], &acc), GP_OK);
    CHECK(!strcmp(gs.g[0].source, "gpu_util"));
    CHECK_INT(gs.g[0].act.n, 2);
    CHECK_DBL(gs.g[0].act_sum / gs.g[0].act_w, 0.5, 1e-12);
    CHECK(isnan(gs.g[0].peak) && isnan(gs.g[0].capacity)); /* no memory sample in the range */
    gp_jobdoc_gpus_free(&gs);
    gp_storage_selection_free(&sel);
    gp_matcher_free(&m);
    gp_storage_close(st);
}

/* Goodput's processes: one that reported steps and a data wait but no
 * step seconds is not a reporting process, and its series are not the
 * next one's (the slot it would have had was once reused with its wait
 * series still in it). */
static void test_goodput_processes(void)
{
    T0 = ((int64_t)time(NULL) / 60 - 60) * 60000;
    struct gp_storage *st = sopen_tmp();
    static struct rw_batch b;
    memset(&b, 0, sizeof b);
    double ts[6], steps[6], wait[6], secs[6];
    for (int i = 0; i < 6; i++) {
        ts[i] = (double)(T0 + i * 10000) / 1e3;
        steps[i] = 10 * i, wait[i] = 2 * i, secs[i] = 5 * i;
    }
    rw_batch_add(&b, "gpulse_job_steps_total", "job=j;Hostname=n1;rank=0;pid=1", ts, steps, 6);
    rw_batch_add(&b, "gpulse_job_data_wait_seconds_total", "job=j;Hostname=n1;rank=0;pid=1", ts, wait, 6);
    rw_batch_add(&b, "gpulse_job_steps_total", "job=j;Hostname=n1;rank=0;pid=2", ts, steps, 6);
    rw_batch_add(&b, "gpulse_job_step_seconds_total", "job=j;Hostname=n1;rank=0;pid=2", ts, secs, 6);
    struct gp_batch rq = rw_batch_request(&b);
    struct gp_append_result res;
    char err[256];
    CHECK_INT(gp_storage_append(st, &rq, &res, err, sizeof err), GP_OK);
    struct gp_jobdoc_rank rank = {.node = "n1", .rank = 0, .local_rank = 0, .world_size = 1};
    struct gp_jobdoc_in in = {.id = "j", .scheme = "", .state = "finished", .start_ms = T0,
                              .end_ms = T0 + 50000, .range_end_ms = T0 + 50000, .exit_status = 0,
                              .ranks = &rank, .nranks = 1};
    struct gp_buf out;
    gp_buf_init(&out, 0);
    CHECK_INT(gp_jobdoc_write(st, &in, &out, err, sizeof err), GP_OK);
    json_t *doc = json_loads(out.data, 0, NULL);
    CHECK(doc);
    json_t *ranks = json_object_get(json_object_get(doc, "goodput"), "ranks");
    CHECK_INT(json_array_size(ranks), 1);
    json_t *r = json_array_get(ranks, 0);
    CHECK_INT(json_integer_value(json_object_get(r, "pid")), 2);
    json_t *sec = json_object_get(r, "seconds");
    CHECK_DBL(json_number_value(json_object_get(sec, "data_wait")), 0, 0);
    CHECK_DBL(json_number_value(json_object_get(sec, "productive")), 25, 1e-9);
    json_decref(doc);
    gp_buf_free(&out);
    gp_storage_close(st);
}

const struct gp_test gp_tests_jobdoc_parts[] = {
    {"counter_arithmetic", test_counter_arithmetic},
    {"aggregate_stand_in", test_aggregate_stand_in},
    {"gpus_filing", test_gpus_filing},
    {"gpu_read", test_gpu_read},
    {"goodput_processes", test_goodput_processes},
    {0},
};
