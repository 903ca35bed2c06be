#include "agent/sampler.h"
#include "lib/err.h"
#include "test.h"

/* A GPU source whose driver "loads" on the third probe. */
static int probes;

static int late_open(const struct gp_source_config *c, void **st, char *err, size_t n)
{
    (void)c;
    if (++probes < 3)
        return gp_seterr(err, n, GP_ENODEV, "driver not loaded yet");
    *st = &probes;
    return GP_OK;
}

static int late_sample(void *st, struct gp_frame *f, unsigned *errors)
{
    (void)st, (void)errors;
    struct gp_gpu *g = gp_frame_add_gpu(f);
    if (!g)
        return GP_ENOMEM;
    g->index = 7;
    gp_gpu_set(g, GPF_GPU_UTIL, 42);
    return GP_OK;
}

static void late_close(void *st) { (void)st; }

static const struct gp_source_ops late = {"nvml", GP_SRC_NVML, late_open, late_sample, late_close};

/* procfs stand-in: records whether the GPU source ran before it. */
static int saw_gpu;
static int host_open(const struct gp_source_config *c, void **st, char *err, size_t n)
{
    (void)c, (void)err, (void)n;
    *st = &saw_gpu;
    return GP_OK;
}
static int host_sample(void *st, struct gp_frame *f, unsigned *errors)
{
    (void)st, (void)errors;
    saw_gpu = f->ngpus > 0;
    return GP_OK;
}
static const struct gp_source_ops host = {"procfs", GP_SRC_PROCFS, host_open, host_sample, late_close};

struct seen {
    unsigned ngpus;
    bool nvml_active;
};

static void read_frame(const struct gp_frame *f, const struct gp_agent_stats *st, void *arg)
{
    (void)st;
    struct seen *s = arg;
    s->ngpus = f->ngpus;
    s->nvml_active = f->src[GP_SRC_NVML].active;
}

static void test_absent_source_is_probed_again(void)
{
    const struct gp_source_ops *const srcs[] = {&late, &host};
    struct gp_source_config cfg = {.interval_ms = 100, .hostname = "h"};
    struct gp_sampler *s;
    char err[128];
    gp_sampler_reprobe_s = 0;
    probes = 0;
    CHECK_INT(gp_sampler_open(&s, &cfg, srcs, 2, err, sizeof err), GP_OK);
    CHECK_INT(gp_sampler_gpu_sources(s), 0);
    struct seen v = {0};
    gp_sampler_tick(s); /* probe 2: still absent */
    gp_sampler_read(s, read_frame, &v);
    CHECK_INT(v.ngpus, 0);
    CHECK(!v.nvml_active);
    gp_sampler_tick(s); /* probe 3: found, sampled in this very tick */
    gp_sampler_read(s, read_frame, &v);
    CHECK_INT(v.ngpus, 1);
    CHECK(v.nvml_active);
    CHECK(saw_gpu); /* the newcomer samples before procfs */
    CHECK_INT(gp_sampler_gpu_sources(s), 1);
    gp_sampler_tick(s);
    CHECK_INT(probes, 3); /* no more probes once open */
    gp_sampler_stop(s);
}

const struct gp_test gp_tests_sampler[] = {
    {"absent_source_is_probed_again", test_absent_source_is_probed_again},
    {0},
};
