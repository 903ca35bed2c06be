/*
 * test_engine.c - the evaluation engine (insight/engine.h): the view it
 * builds from a store of synthetic series against the grid worked out by
 * hand (gaps beyond the lookback, the FB_* fallbacks, clock-event
 * reasons, summed XIDs and allocator bytes, job/rank/model from labels);
 * the incremental view equal to a fresh build after ticks with late
 * samples; entities leaving; detectors through the options' table (a
 * test detector, hysteresis through `active`, disabled, failing); the
 * detector settings keys; and the build time for a few thousand GPUs.
 */
#include "insight/engine.h"
#include "ingest/remote_write.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "store_testlib.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>

#define S 1000LL
/* An hour ago, a multiple of 15 s (samples must be within the raw retention). */
static int64_t T0;
static void set_t0(void) { T0 = gp_wall_ms() / 15000 * 15000 - 3600000; }

static struct gp_alerts *open_alerts(void)
{
    struct gp_alerts *a;
    char err[256];
    if (gp_alerts_open(&a, gp_test_tmpdir(), T0, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "alerts: %s", err);
    return a;
}

static int lab_cmp(const void *a, const void *b)
{
    const struct gp_label *x = a, *y = b;
    size_t n = x->name.len < y->name.len ? x->name.len : y->name.len;
    int c = memcmp(x->name.ptr, y->name.ptr, n);
    return c ? c : (int)x->name.len - (int)y->name.len;
}

/* Appends name{labels "k=v;k=v"} samples (t[i] ms, v[i]). */
static void put(struct gp_storage *st, const char *name, const char *labels, const int64_t *t,
                const double *v, size_t n)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", labels);
    struct gp_label l[12];
    size_t nl = 0;
    l[nl++] = (struct gp_label){{"__name__", 8}, {name, strlen(name)}};
    for (char *save = NULL, *p = strtok_r(buf, ";", &save); p; p = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(p, '=');
        CHECK(eq && nl < 12);
        *eq = '\0';
        l[nl++] = (struct gp_label){{p, strlen(p)}, {eq + 1, strlen(eq + 1)}};
    }
    qsort(l, nl, sizeof l[0], lab_cmp);
    struct gp_sample smp[128];
    CHECK(n <= 128);
    for (size_t i = 0; i < n; i++)
        smp[i] = (struct gp_sample){v[i], t[i]};
    struct gp_series se = {l, nl, smp, n};
    struct gp_batch rq = {&se, 1, nl, n, NULL};
    struct gp_append_result res;
    char err[256];
    CHECK_INT(gp_storage_append(st, &rq, &res, err, sizeof err), GP_OK);
    CHECK_INT(res.accepted, n);
}

static void put1(struct gp_storage *st, const char *name, const char *labels, int64_t t, double v)
{
    put(st, name, labels, &t, &v, 1);
}

static struct gp_engine *engine(struct gp_storage *st, struct gp_alerts *a, const gp_detect_fn *fns,
                                int64_t window)
{
    struct gp_engine_options o = {.store = st, .alerts = a, .detectors = fns, .interval_ms = 15 * S,
                                  .window_ms = window, .step_ms = 15 * S, .clear_for_ms = 0};
    char err[256];
    CHECK_INT(gp_engine_detector_config("", "", o.det_cfg, err, sizeof err), GP_OK);
    struct gp_engine *e;
    if (gp_engine_new(&e, &o, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "engine: %s", err);
    return e;
}

static const struct gp_view_gpu *gpu_of(const struct gp_view *v, const char *node, const char *gpu)
{
    for (unsigned i = 0; i < v->ngpus; i++)
        if (!strcmp(v->gpus[i].node, node) && !strcmp(v->gpus[i].gpu, gpu))
            return &v->gpus[i];
    gp_test_fail(__FILE__, __LINE__, "no GPU %s/%s in the view", node, gpu);
}

#define GA "Hostname=n1;gpu=0;UUID=GPU-a;modelName=NVIDIA H100 80GB HBM3;job=j1;rank=0"
#define GB "Hostname=n1;gpu=1;UUID=GPU-b;modelName=Mystery GPU"
#define PA "Hostname=n1;job=j1;rank=0;pid=100"

/* Grid of the fill: window 2m, step 15 s: 9 points, the last at T0 + 120 s. */
static void fill(struct gp_storage *st)
{
    /* UTIL on A: 50% at 0..30 s, nothing until 120 s (60 at 120). */
    int64_t t[] = {T0, T0 + 15 * S, T0 + 30 * S, T0 + 120 * S};
    put(st, "DCGM_FI_DEV_GPU_UTIL", GA, t, (double[]){50, 50, 50, 60}, 4);
    put(st, "gpulse_gpu_memory_used_bytes", GA, (int64_t[]){T0, T0 + 60 * S}, (double[]){1e9, 2e9}, 2);
    put(st, "gpulse_gpu_memory_total_bytes", GA, (int64_t[]){T0}, (double[]){8e10}, 1);
    put(st, "gpulse_gpu_clock_event_reasons", GA ";reason=hw_thermal_slowdown",
        (int64_t[]){T0, T0 + 30 * S}, (double[]){0, 1}, 2);
    put(st, "gpulse_gpu_clock_event_reasons", GA ";reason=sw_thermal_slowdown",
        (int64_t[]){T0, T0 + 60 * S}, (double[]){0, 0}, 2);
    put(st, "gpulse_gpu_clock_event_reasons", GA ";reason=gpu_idle", (int64_t[]){T0}, (double[]){1}, 1);
    put(st, "gpulse_gpu_clock_event_reasons", GA ";reason=sw_power_cap", (int64_t[]){T0}, (double[]){0}, 1);
    put(st, "gpulse_gpu_xid_errors_total", GA ";xid=79", (int64_t[]){T0, T0 + 90 * S}, (double[]){1, 2}, 2);
    put(st, "gpulse_gpu_xid_errors_total", GA ";xid=48", (int64_t[]){T0 + 90 * S}, (double[]){3}, 1);
    /* an application's XID: not summed into the hardware XIDs, but its
     * own code's counter in the view's xids (the health states') */
    put(st, "gpulse_gpu_xid_errors_total", GA ";xid=13", (int64_t[]){T0, T0 + 100 * S}, (double[]){7, 7}, 2);
    put(st, "DCGM_FI_DEV_SM_CLOCK", GA, (int64_t[]){T0 + 105 * S}, (double[]){1980}, 1);
    /* B: memory only from FB_USED/FB_FREE (MiB). */
    put(st, "DCGM_FI_DEV_FB_USED", GB, (int64_t[]){T0 + 105 * S}, (double[]){1024}, 1);
    put(st, "DCGM_FI_DEV_FB_FREE", GB, (int64_t[]){T0 + 105 * S}, (double[]){3072}, 1);
    /* The step reporter. */
    put(st, "gpulse_job_steps_total", PA, (int64_t[]){T0 + 100 * S, T0 + 110 * S}, (double[]){10, 20}, 2);
    put(st, "gpulse_job_allocator_bytes", PA ";device=0;kind=allocated", (int64_t[]){T0 + 110 * S},
        (double[]){100}, 1);
    put(st, "gpulse_job_allocator_bytes", PA ";device=1;kind=allocated", (int64_t[]){T0 + 110 * S},
        (double[]){50}, 1);
    put(st, "gpulse_job_allocator_bytes", PA ";device=0;kind=reserved", (int64_t[]){T0 + 110 * S},
        (double[]){400}, 1);
    put(st, "gpulse_job_allocator_bytes", PA ";device=0;kind=peak", (int64_t[]){T0 + 110 * S},
        (double[]){999}, 1);
}

static void same(const double *got, const double *want, unsigned n, const char *what)
{
    for (unsigned k = 0; k < n; k++)
        if (!(isnan(got[k]) && isnan(want[k])) && got[k] != want[k])
            gp_test_fail(__FILE__, __LINE__, "%s[%u] = %.17g, want %.17g", what, k, got[k], want[k]);
}

static void check_grid(const struct gp_view *v)
{
    const double N = NAN;
    CHECK_INT(v->npoints, 9);
    CHECK_INT(v->t_end_ms, T0 + 120 * S);
    CHECK_INT(v->ngpus, 2);
    CHECK_INT(v->nprocs, 1);
    const struct gp_view_gpu *a = gpu_of(v, "n1", "0"), *b = gpu_of(v, "n1", "1");
    CHECK_STR(a->uuid, "GPU-a");
    CHECK_STR(a->job, "j1");
    CHECK_INT(a->rank, 0);
    CHECK(a->spec != NULL && !strcmp(a->spec->short_name, "H100"));
    CHECK(b->spec == NULL);
    CHECK_STR(b->job, "");
    CHECK_INT(b->rank, -1);
    /* points at 0, 15, ..., 120 s; lookback 60 s */
    same(gp_view_gpu_at(v, a, GP_VGM_UTIL), (double[]){.5, .5, .5, .5, .5, .5, .5, N, .6}, 9, "UTIL");
    same(gp_view_gpu_at(v, a, GP_VGM_MEM_USED), (double[]){1e9, 1e9, 1e9, 1e9, 2e9, 2e9, 2e9, 2e9, 2e9}, 9,
         "MEM_USED");
    same(gp_view_gpu_at(v, a, GP_VGM_MEM_TOTAL), (double[]){8e10, 8e10, 8e10, 8e10, 8e10, N, N, N, N}, 9,
         "MEM_TOTAL");
    same(gp_view_gpu_at(v, a, GP_VGM_THROTTLE_THERMAL), (double[]){0, 0, 1, 1, 1, 1, 1, 0, 0}, 9,
         "THROTTLE_THERMAL");
    same(gp_view_gpu_at(v, a, GP_VGM_THROTTLE_POWER), (double[]){0, 0, 0, 0, 0, N, N, N, N}, 9,
         "THROTTLE_POWER");
    same(gp_view_gpu_at(v, a, GP_VGM_XID_TOTAL), (double[]){1, 1, 1, 1, 1, N, 5, 5, 5}, 9, "XID_TOTAL");
    /* each code's counter at the newest point, application XIDs too */
    double per_code[3] = {N, N, N};
    for (unsigned i = 0; i < a->nxids; i++)
        per_code[a->xids[i].code == 79 ? 0 : a->xids[i].code == 48 ? 1 : 2] = a->xids[i].count;
    CHECK_INT(a->nxids, 3);
    CHECK(per_code[0] == 2 && per_code[1] == 3 && per_code[2] == 7);
    CHECK_INT(b->nxids, 0);
    same(gp_view_gpu_at(v, a, GP_VGM_SM_CLOCK), (double[]){N, N, N, N, N, N, N, 1.98e9, 1.98e9}, 9,
         "SM_CLOCK");
    same(gp_view_gpu_at(v, a, GP_VGM_TEMP), (double[]){N, N, N, N, N, N, N, N, N}, 9, "TEMP");
    same(gp_view_gpu_at(v, b, GP_VGM_MEM_USED), (double[]){N, N, N, N, N, N, N, 1024 * 1048576.0,
                                                         1024 * 1048576.0}, 9, "B MEM_USED");
    same(gp_view_gpu_at(v, b, GP_VGM_MEM_TOTAL), (double[]){N, N, N, N, N, N, N, 4096 * 1048576.0,
                                                          4096 * 1048576.0}, 9, "B MEM_TOTAL");
    const struct gp_view_proc *p = &v->procs[0];
    CHECK_STR(p->job, "j1");
    CHECK_INT(p->rank, 0);
    CHECK_INT(p->pid, 100);
    same(gp_view_proc_at(v, p, GP_VPM_STEPS), (double[]){N, N, N, N, N, N, N, 10, 20}, 9, "STEPS");
    same(gp_view_proc_at(v, p, GP_VPM_ALLOCATED), (double[]){N, N, N, N, N, N, N, N, 150}, 9, "ALLOCATED");
    same(gp_view_proc_at(v, p, GP_VPM_RESERVED), (double[]){N, N, N, N, N, N, N, N, 400}, 9, "RESERVED");
    CHECK_INT(v->njobs, 1);
    CHECK_STR(v->jobs[0].job, "j1");
    CHECK_INT(v->jobs[0].ngpus, 1);
    CHECK_INT(v->jobs[0].nprocs, 1);
}

static void test_view_grid(void)
{
    set_t0();
    struct gp_storage *st = sopen_tmp();
    struct gp_alerts *a = open_alerts();
    fill(st);
    struct gp_engine *e = engine(st, a, NULL, 120 * S);
    char err[256];
    /* 7 s past the last point: floored to it. */
    CHECK_INT(gp_engine_refresh_view(e, T0 + 127 * S, err, sizeof err), GP_OK);
    check_grid(gp_engine_view(e));
    struct gp_engine_stats es;
    gp_engine_stats(e, &es);
    CHECK_INT(es.last_full_rebuild, 1);
    CHECK_INT(es.gpus, 2);
    CHECK_INT(es.series, 16); /* with the application XID's counter (view.h xids) */
    gp_engine_close(e);
    gp_alerts_close(a);
    gp_storage_close(st);
}

/* Ticks while samples arrive (some late) give the view a fresh build gives. */
static void test_incremental_equals_full(void)
{
    set_t0();
    struct gp_storage *st = sopen_tmp();
    struct gp_alerts *a = open_alerts();
    struct gp_engine *inc = engine(st, a, NULL, 300 * S);
    char err[256];
    for (int i = 0; i < 40; i++) {
        int64_t t = T0 + i * 15 * S;
        put1(st, "DCGM_FI_DEV_GPU_UTIL", GA, t, i % 7 == 3 ? 0 : 40 + i);
        if (i % 5 != 4) /* gaps */
            put1(st, "DCGM_FI_DEV_FB_USED", GB, t, 100 + i);
        put1(st, "DCGM_FI_DEV_FB_FREE", GB, t, 1000);
        if (i % 2)
            put1(st, "gpulse_gpu_xid_errors_total", GA ";xid=79", t - 5 * S, i);
        /* A late sample: the tick at t runs before the sample at t - 1 s arrives. */
        CHECK_INT(gp_engine_refresh_view(inc, t, err, sizeof err), GP_OK);
        put1(st, "gpulse_job_steps_total", PA, t - 1 * S, 10.0 * i);
        if (i == 20)
            put1(st, "DCGM_FI_DEV_GPU_TEMP", GA, t + 1 * S, 70);
    }
    int64_t end = T0 + 40 * 15 * S;
    CHECK_INT(gp_engine_refresh_view(inc, end, err, sizeof err), GP_OK);
    struct gp_engine_stats es;
    gp_engine_stats(inc, &es);
    CHECK_INT(es.last_full_rebuild, 0);
    struct gp_engine *full = engine(st, a, NULL, 300 * S);
    CHECK_INT(gp_engine_refresh_view(full, end, err, sizeof err), GP_OK);
    const struct gp_view *vi = gp_engine_view(inc), *vf = gp_engine_view(full);
    CHECK_INT(vi->ngpus, vf->ngpus);
    CHECK_INT(vi->nprocs, vf->nprocs);
    CHECK_INT(vi->t_end_ms, vf->t_end_ms);
    for (unsigned g = 0; g < vf->ngpus; g++) {
        const struct gp_view_gpu *x = gpu_of(vi, vf->gpus[g].node, vf->gpus[g].gpu);
        for (int m = 0; m < GP_VGM__COUNT; m++)
            same(gp_view_gpu_at(vi, x, m), gp_view_gpu_at(vf, &vf->gpus[g], m), vf->npoints,
                 gp_vgm_names[m]);
    }
    same(gp_view_proc_at(vi, &vi->procs[0], GP_VPM_STEPS), gp_view_proc_at(vf, &vf->procs[0], GP_VPM_STEPS),
         vf->npoints, "STEPS");
    /* and the late samples are in: steps at the last points */
    CHECK_DBL(gp_view_proc_at(vi, &vi->procs[0], GP_VPM_STEPS)[vi->npoints - 1], 390, 0);
    /* GPUs whose series stop leave the view once past window + lookback. */
    CHECK_INT(gp_engine_refresh_view(inc, end + 300 * S + 61 * S + 15 * S, err, sizeof err), GP_OK);
    CHECK_INT(gp_engine_view(inc)->ngpus, 0);
    CHECK_INT(gp_engine_view(inc)->nprocs, 0);
    gp_engine_close(inc);
    gp_engine_close(full);
    gp_alerts_close(a);
    gp_storage_close(st);
}

/* A test detector: memory used ratio over threshold (clear when active). */
static int det_memory(const struct gp_detect_ctx *c)
{
    const struct gp_view *v = c->view;
    for (unsigned i = 0; i < v->ngpus; i++) {
        const struct gp_view_gpu *g = &v->gpus[i];
        double u = gp_view_gpu_at(v, g, GP_VGM_MEM_USED)[v->npoints - 1];
        double t = gp_view_gpu_at(v, g, GP_VGM_MEM_TOTAL)[v->npoints - 1];
        if (isnan(u) || isnan(t) || t <= 0)
            continue;
        struct gp_observation o;
        memset(&o, 0, sizeof o);
        o.key.det = GP_DET_MEMORY_HIGH;
        snprintf(o.key.node, sizeof o.key.node, "%s", g->node);
        snprintf(o.key.gpu, sizeof o.key.gpu, "%s", g->gpu);
        snprintf(o.key.job, sizeof o.key.job, "%s", g->job);
        o.key.rank = g->rank;
        o.value = u / t;
        o.bad = o.value > (c->active(c->active_ctx, &o.key) ? c->cfg->clear : c->cfg->threshold);
        snprintf(o.summary, sizeof o.summary, "memory %.0f%% used", o.value * 100);
        int rc = c->emit(c->emit_ctx, &o);
        if (rc)
            return rc;
    }
    return GP_OK;
}

static int det_fails(const struct gp_detect_ctx *c)
{
    (void)c;
    return GP_ENOMEM;
}

static int alerts_in(struct gp_alerts *a, int state)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    struct gp_alerts_filter f = {.state = state, .since_ms = INT64_MIN, .limit = 100};
    CHECK_INT(gp_alerts_list_json(a, &f, &b), GP_OK);
    int n = 0;
    for (const char *p = b.data; (p = strstr(p, "\"id\":")); p++)
        n++;
    gp_buf_free(&b);
    return n;
}

static void test_detectors(void)
{
    set_t0();
    struct gp_storage *st = sopen_tmp();
    struct gp_alerts *a = open_alerts();
    gp_detect_fn fns[GP_DET__COUNT] = {0};
    fns[GP_DET_MEMORY_HIGH] = det_memory;
    fns[GP_DET_STRAGGLER] = det_fails;
    struct gp_engine_options o = {.store = st, .alerts = a, .detectors = fns, .interval_ms = 15 * S,
                                  .window_ms = 60 * S, .step_ms = 15 * S, .clear_for_ms = 0};
    char err[256];
    CHECK_INT(gp_engine_detector_config("", "memory_near_exhaustion.for=30s", o.det_cfg, err, sizeof err),
              GP_OK);
    struct gp_engine *e;
    CHECK_INT(gp_engine_new(&e, &o, err, sizeof err), GP_OK);
    /* used/total: .96 (bad), .96, .96 (firing after 30 s), .92 (between clear .90 and
     * threshold .95: stays), .85 (resolved). */
    double used[] = {96, 96, 96, 92, 85};
    for (int i = 0; i < 5; i++) {
        int64_t t = T0 + i * 15 * S;
        put1(st, "gpulse_gpu_memory_used_bytes", GA, t, used[i]);
        put1(st, "gpulse_gpu_memory_total_bytes", GA, t, 100);
        int rc = gp_engine_tick(e, t, err, sizeof err);
        CHECK_INT(rc, GP_ENOMEM); /* the failing detector */
        CHECK_CONTAINS(err, "straggler");
        int want_firing = i >= 2 && i <= 3, want_pending = i < 2;
        CHECK_INT(alerts_in(a, GP_ALERT_FIRING), want_firing);
        CHECK_INT(alerts_in(a, GP_ALERT_PENDING), want_pending);
    }
    CHECK_INT(alerts_in(a, GP_ALERT_RESOLVED), 1);
    struct gp_engine_stats es;
    gp_engine_stats(e, &es);
    CHECK_INT(es.ticks, 5);
    CHECK_INT(es.detector_errors, 5);
    CHECK_INT(es.observations, 1);
    gp_engine_close(e);
    /* Disabled: nothing judged. */
    CHECK_INT(gp_engine_detector_config("memory_near_exhaustion, straggler", "", o.det_cfg, err,
                                        sizeof err),
              GP_OK);
    CHECK(!o.det_cfg[GP_DET_MEMORY_HIGH].enabled && !o.det_cfg[GP_DET_STRAGGLER].enabled);
    CHECK_INT(gp_engine_new(&e, &o, err, sizeof err), GP_OK);
    put1(st, "gpulse_gpu_memory_used_bytes", GB, T0 + 20 * 15 * S, 99);
    put1(st, "gpulse_gpu_memory_total_bytes", GB, T0 + 20 * 15 * S, 100);
    CHECK_INT(gp_engine_tick(e, T0 + 20 * 15 * S, err, sizeof err), GP_OK);
    CHECK_INT(alerts_in(a, -1), 0);
    gp_engine_close(e);
    gp_alerts_close(a);
    gp_storage_close(st);
}

static void test_detector_config(void)
{
    struct gp_detector_cfg c[GP_DET__COUNT];
    char err[256];
    CHECK_INT(gp_engine_detector_config("", "memory_near_exhaustion.threshold=0.9, oom_predicted.for=2m,"
                                            "straggler.severity=critical,gpu_saturated.enabled=false,"
                                            "memory_leak.cooldown=1h,memory_leak.clear=0.005",
                                        c, err, sizeof err),
              GP_OK);
    CHECK_DBL(c[GP_DET_MEMORY_HIGH].threshold, 0.9, 0);
    CHECK_INT(c[GP_DET_OOM_PREDICTED].for_ms, 120000);
    CHECK_INT(c[GP_DET_STRAGGLER].severity, GP_SEV_CRITICAL);
    CHECK(!c[GP_DET_SATURATED].enabled);
    CHECK_INT(c[GP_DET_MEMORY_LEAK].cooldown_ms, 3600000);
    CHECK_DBL(c[GP_DET_MEMORY_LEAK].clear, 0.005, 0);
    CHECK_DBL(c[GP_DET_MEMORY_HIGH].clear, 0.90, 0); /* untouched: the table's */
    const struct {
        const char *dis, *ovr, *msg;
    } bad[] = {
        {"nosuch", "", "detectors_disabled: unknown detector 'nosuch'"},
        {"", "nosuch.threshold=1", "unknown detector 'nosuch'"},
        {"", "straggler=1", "is not DETECTOR.FIELD=VALUE"},
        {"", "straggler.speed=1", "unknown field 'speed'"},
        {"", "straggler.threshold=high", "'threshold' must be a number"},
        {"", "straggler.for=soon", "'for'"},
        {"", "straggler.severity=loud", "'severity' must be info"},
        {"", "straggler.enabled=maybe", "'enabled' must be true or false"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        int rc = gp_engine_detector_config(bad[i].dis, bad[i].ovr, c, err, sizeof err);
        if (rc != GP_ECONFIG || !strstr(err, bad[i].msg))
            gp_test_fail(__FILE__, __LINE__, "'%s' '%s': %d '%s', want '%s'", bad[i].dis, bad[i].ovr,
                         rc, err, bad[i].msg);
    }
    struct gp_engine_options o = {.store = (struct gp_storage *)1, .alerts = (struct gp_alerts *)1,
                                  .interval_ms = 1000, .window_ms = 1500, .step_ms = 1000};
    struct gp_engine *e;
    CHECK_INT(gp_engine_new(&e, &o, err, sizeof err), GP_EUSAGE);
    CHECK_CONTAINS(err, "whole number");
}

/* The build time for a few thousand GPUs (8 series each, 15 minutes at
 * 15 s), full and incremental: printed, and the incremental tick must be
 * cheaper than the full build. */
static void test_build_cost(void)
{
    set_t0();
    struct gp_storage *st = sopen_tmp();
    struct gp_alerts *a = open_alerts();
    enum { NGPU = 2048, NPTS = 61 };
    static const char *const names[] = {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_SM_ACTIVE",
                                        "gpulse_gpu_memory_used_bytes", "gpulse_gpu_memory_total_bytes",
                                        "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP",
                                        "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_PROF_DRAM_ACTIVE"};
    enum { NM = sizeof names / sizeof names[0] };
    struct gp_series *se = calloc(NGPU * NM, sizeof *se);
    struct gp_label *l = calloc(NGPU * NM * 4, sizeof *l);
    struct gp_sample *smp = calloc((size_t)NGPU * NM * (NPTS + 1), sizeof *smp);
    char (*str)[2][16] = calloc(NGPU, sizeof *str);
    CHECK(se && l && smp && str);
    for (int g = 0; g < NGPU; g++) {
        snprintf(str[g][0], 16, "node%03d", g / 8);
        snprintf(str[g][1], 16, "%d", g % 8);
    }
    for (int g = 0; g < NGPU; g++)
        for (int m = 0; m < NM; m++) {
            size_t i = (size_t)g * NM + m;
            struct gp_label *li = l + i * 4;
            li[0] = (struct gp_label){{"Hostname", 8}, {str[g][0], strlen(str[g][0])}};
            li[1] = (struct gp_label){{"__name__", 8}, {names[m], strlen(names[m])}};
            li[2] = (struct gp_label){{"gpu", 3}, {str[g][1], strlen(str[g][1])}};
            li[3] = (struct gp_label){{"job", 3}, {"big", 3}};
            struct gp_sample *si = smp + i * (NPTS + 1);
            for (int k = 0; k < NPTS; k++)
                si[k] = (struct gp_sample){(double)((g + k) % 100), T0 + k * 15 * S};
            se[i] = (struct gp_series){li, 4, si, NPTS};
        }
    struct gp_batch rq = {se, NGPU * NM, NGPU * NM * 4, (size_t)NGPU * NM * NPTS, NULL};
    struct gp_append_result res;
    char err[256];
    CHECK_INT(gp_storage_append(st, &rq, &res, err, sizeof err), GP_OK);
    struct gp_engine *e = engine(st, a, NULL, 900 * S);
    int64_t end = T0 + (NPTS - 1) * 15 * S;
    int64_t t0 = gp_mono_ns();
    CHECK_INT(gp_engine_refresh_view(e, end, err, sizeof err), GP_OK);
    int64_t full_ns = gp_mono_ns() - t0;
    CHECK_INT(gp_engine_view(e)->ngpus, NGPU);
    /* One more sample per series, then an incremental tick. */
    for (size_t i = 0; i < (size_t)NGPU * NM; i++) {
        smp[i * (NPTS + 1) + NPTS] = (struct gp_sample){1, T0 + NPTS * 15 * S};
        se[i].samples = smp + i * (NPTS + 1) + NPTS;
        se[i].nsamples = 1;
    }
    rq.nsamples_total = (size_t)NGPU * NM;
    CHECK_INT(gp_storage_append(st, &rq, &res, err, sizeof err), GP_OK);
    t0 = gp_mono_ns();
    CHECK_INT(gp_engine_refresh_view(e, end + 15 * S, err, sizeof err), GP_OK);
    int64_t inc_ns = gp_mono_ns() - t0;
    const struct gp_view *v = gp_engine_view(e);
    CHECK_DBL(gp_view_gpu_at(v, &v->gpus[0], GP_VGM_TEMP)[v->npoints - 1], 1, 0);
    printf("  view of %d GPUs x %d series, %u points: full build %.1f ms, incremental tick %.1f ms\n",
           NGPU, NM, v->npoints, full_ns / 1e6, inc_ns / 1e6);
    CHECK(inc_ns < full_ns);
    gp_engine_close(e);
    free(se);
    free(l);
    free(smp);
    free(str);
    gp_alerts_close(a);
    gp_storage_close(st);
}

/* A server younger than its window: 90 s of samples in a 10m window.
 * The alert's texts, as the API gives them, state the 1m30s and the 7
 * points the detector judged, not the window's 10m and 41 points. */
static void test_young_server(void)
{
    set_t0();
    struct gp_storage *st = sopen_tmp();
    struct gp_alerts *a = open_alerts();
    gp_detect_fn fns[GP_DET__COUNT] = {0};
    fns[GP_DET_MEMORY_HIGH] = gp_detect_fns[GP_DET_MEMORY_HIGH];
    struct gp_engine *e = engine(st, a, fns, 600 * S);
    char err[256];
    for (int i = 0; i <= 6; i++) {
        put1(st, "gpulse_gpu_memory_used_bytes", GA, T0 + i * 15 * S, 96);
        put1(st, "gpulse_gpu_memory_total_bytes", GA, T0 + i * 15 * S, 100);
    }
    CHECK_INT(gp_engine_tick(e, T0 + 90 * S, err, sizeof err), GP_OK);
    CHECK_INT(gp_engine_view(e)->npoints, 41);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    struct gp_alerts_filter f = {.state = -1, .since_ms = INT64_MIN, .limit = 100};
    CHECK_INT(gp_alerts_list_json(a, &f, &b), GP_OK);
    CHECK_CONTAINS(b.data, "over the last 1m30s (7 points 15s apart): min 0.00");
    CHECK(!strstr(b.data, "10m"));
    CHECK(!strstr(b.data, "41 points"));
    gp_buf_free(&b);
    gp_engine_close(e);
    gp_alerts_close(a);
    gp_storage_close(st);
}

const struct gp_test gp_tests_engine[] = {
    {"view_grid", test_view_grid},
    {"incremental_equals_full", test_incremental_equals_full},
    {"detectors", test_detectors},
    {"young_server", test_young_server},
    {"detector_config", test_detector_config},
    {"build_cost", test_build_cost},
    {0},
};
