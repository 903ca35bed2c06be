/*
 * test_cost.c - normalization (agent/expo_norm.c) and cost (query/cost.c):
 * the normalized series of a GPM card, a card without GPM and an unknown
 * model; the price list parser and its errors; cost arithmetic on
 * synthetic series with hand-computed answers; projection; fleet totals.
 */
#include "agent/expo.h"
#include "query/cost.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "lib/gpumodels.h"
#include "test.h"

#include <stdlib.h>

static struct gp_gpu *gpu(struct gp_frame *f, unsigned idx, const char *model)
{
    struct gp_gpu *g = gp_frame_add_gpu(f);
    g->index = idx;
    snprintf(g->uuid, sizeof g->uuid, "GPU-%u", idx);
    snprintf(g->model, sizeof g->model, "%s", model);
    return g;
}

static char *render(const struct gp_frame *f)
{
    struct gp_expo x = {0};
    struct gp_buf b;
    gp_buf_init(&b, 0);
    struct gp_expo_options o = {.hostname_label = "Hostname", .process_series = GP_PROC_SERIES_NONE};
    struct gp_agent_stats st = {1, 0, 1700000000, 0.001};
    CHECK_INT(gp_expo_render(&x, &b, f, &o, &st), 0);
    gp_expo_free(&x);
    return gp_buf_steal(&b, NULL);
}

/* The value of the line starting with prefix (name{labels...), or NaN. */
static double value_of(const char *text, const char *prefix)
{
    const char *p = strstr(text, prefix);
    if (!p)
        return NAN;
    p = strchr(p, '}');
    return p ? strtod(p + 2, NULL) : NAN;
}

static void test_norm_gpm_card(void)
{
    struct gp_frame f;
    gp_frame_init(&f);
    snprintf(f.hostname, sizeof f.hostname, "n1");
    struct gp_gpu *g = gpu(&f, 0, "NVIDIA H100 80GB HBM3");
    gp_gpu_set(g, GPF_PROF_SM_ACTIVE, 0.5);
    gp_gpu_set(g, GPF_GPU_UTIL, 100);
    gp_gpu_set(g, GPF_PROF_TENSOR, 0.25);
    gp_gpu_set(g, GPF_PROF_FP32, 0.1);
    gp_gpu_set(g, GPF_PROF_DRAM, 0.4);
    gp_gpu_set(g, GPF_MEM_COPY_UTIL, 90);
    gp_gpu_set(g, GPF_MEMORY_USED, 20e9);
    gp_gpu_set(g, GPF_MEMORY_TOTAL, 80e9);
    gp_gpu_set(g, GPF_POWER_USAGE, 350);
    gp_gpu_set(g, GPF_POWER_LIMIT, 500); /* capped below the table's 700: the driver wins */
    gp_gpu_set(g, GPF_SM_CLOCK, 990);
    char *t = render(&f);
    const char *l = "gpu=\"0\",UUID=\"GPU-0\",pci_bus_id=\"\",device=\"\",modelName=\"NVIDIA H100 80GB HBM3\","
                    "Hostname=\"n1\",vendor=\"nvidia\"";
    char want[512];
    snprintf(want, sizeof want, "\ngpulse_gpu_compute_ratio{%s,source=\"sm_active\"} 0.5\n", l);
    CHECK_CONTAINS(t, want);
    snprintf(want, sizeof want, "\ngpulse_gpu_bandwidth_ratio{%s,source=\"dram_active\"} 0.4\n", l);
    CHECK_CONTAINS(t, want);
    snprintf(want, sizeof want, "\ngpulse_gpu_memory_used_ratio{%s} 0.25\n", l);
    CHECK_CONTAINS(t, want);
    snprintf(want, sizeof want, "\ngpulse_gpu_power_ratio{%s} 0.7\n", l);
    CHECK_CONTAINS(t, want);
    /* no SM_CLOCK_MAX from the driver: the table's 1980 MHz */
    snprintf(want, sizeof want, "\ngpulse_gpu_clock_ratio{%s} 0.5\n", l);
    CHECK_CONTAINS(t, want);
    /* 0.25 x 989.4 + 0.1 x 67 */
    CHECK_DBL(value_of(t, "gpulse_gpu_effective_tflops{gpu=\"0\""), 0.25 * 989.4 + 0.1 * 67, 1e-9);
    CHECK_CONTAINS(t, "vendor=\"nvidia\",basis=\"pipes\"} ");
    snprintf(want, sizeof want, "\ngpulse_gpu_peak_tflops{%s,precision=\"bf16\"} 989.4\n", l);
    CHECK_CONTAINS(t, want);
    snprintf(want, sizeof want, "\ngpulse_gpu_peak_tflops{%s,precision=\"fp32\"} 67\n", l);
    CHECK_CONTAINS(t, want);
    snprintf(want, sizeof want, "\ngpulse_gpu_h100_equivalents{%s} 1\n", l);
    CHECK_CONTAINS(t, want);
    snprintf(want, sizeof want, "\ngpulse_gpu_model_known{%s} 1\n", l);
    CHECK_CONTAINS(t, want);
    CHECK_CONTAINS(t, "# HELP gpulse_gpu_compute_ratio ");
    CHECK_CONTAINS(t, "# TYPE gpulse_gpu_effective_tflops gauge\n");
    free(t);
    gp_frame_free(&f);
}

static void test_norm_coarse_and_unknown(void)
{
    struct gp_frame f;
    gp_frame_init(&f);
    snprintf(f.hostname, sizeof f.hostname, "n1");
    /* An A100 (no GPM): coarse utilization, copy utilization, FB_* in MiB. */
    struct gp_gpu *g = gpu(&f, 0, "NVIDIA A100-SXM4-80GB");
    gp_gpu_set(g, GPF_GPU_UTIL, 80);
    gp_gpu_set(g, GPF_MEM_COPY_UTIL, 30);
    gp_gpu_set(g, GPF_FB_USED, 1024);
    gp_gpu_set(g, GPF_FB_FREE, 3072);
    gp_gpu_set(g, GPF_POWER_USAGE, 100); /* no limit from the driver: the table's 400 W */
    gp_gpu_set(g, GPF_SM_CLOCK, 705);
    gp_gpu_set(g, GPF_SM_CLOCK_MAX, 1410e6);
    /* An unknown model: driver figures only. */
    g = gpu(&f, 1, "NVIDIA Mystery 9000");
    gp_gpu_set(g, GPF_GPU_UTIL, 50);
    gp_gpu_set(g, GPF_MEMORY_USED, 1e9);
    gp_gpu_set(g, GPF_MEMORY_TOTAL, 4e9);
    gp_gpu_set(g, GPF_POWER_USAGE, 100);
    gp_gpu_set(g, GPF_POWER_LIMIT, 200);
    gp_gpu_set(g, GPF_SM_CLOCK, 1000); /* no maximum known: no clock ratio */
    /* A lost GPU has none of them. */
    g = gpu(&f, 2, "NVIDIA H100 80GB HBM3");
    g->lost = true;
    char *t = render(&f);
    CHECK_CONTAINS(t, "gpulse_gpu_compute_ratio{gpu=\"0\"");
    CHECK_DBL(value_of(t, "gpulse_gpu_compute_ratio{gpu=\"0\""), 0.8, 1e-12);
    CHECK_CONTAINS(t, "modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"n1\",vendor=\"nvidia\",source=\"gpu_util\"} 0.8\n");
    CHECK_CONTAINS(t, "vendor=\"nvidia\",source=\"mem_copy_util\"} 0.3\n");
    CHECK_DBL(value_of(t, "gpulse_gpu_memory_used_ratio{gpu=\"0\""), 0.25, 1e-12);
    CHECK_DBL(value_of(t, "gpulse_gpu_power_ratio{gpu=\"0\""), 0.25, 1e-12);
    CHECK_DBL(value_of(t, "gpulse_gpu_clock_ratio{gpu=\"0\""), 0.5, 1e-12);
    CHECK_DBL(value_of(t, "gpulse_gpu_effective_tflops{gpu=\"0\""), 0.8 * 312, 1e-9);
    CHECK_CONTAINS(t, "basis=\"compute_ratio\"} ");
    CHECK_DBL(value_of(t, "gpulse_gpu_h100_equivalents{gpu=\"0\""), 312 / 989.4, 1e-12);
    /* the unknown model */
    CHECK_DBL(value_of(t, "gpulse_gpu_model_known{gpu=\"1\""), 0, 0);
    CHECK_DBL(value_of(t, "gpulse_gpu_model_known{gpu=\"0\""), 1, 0);
    CHECK_DBL(value_of(t, "gpulse_gpu_compute_ratio{gpu=\"1\""), 0.5, 1e-12);
    CHECK_DBL(value_of(t, "gpulse_gpu_memory_used_ratio{gpu=\"1\""), 0.25, 1e-12);
    CHECK_DBL(value_of(t, "gpulse_gpu_power_ratio{gpu=\"1\""), 0.5, 1e-12);
    CHECK(!strstr(t, "gpulse_gpu_clock_ratio{gpu=\"1\""));
    CHECK(!strstr(t, "gpulse_gpu_effective_tflops{gpu=\"1\""));
    CHECK(!strstr(t, "gpulse_gpu_peak_tflops{gpu=\"1\""));
    CHECK(!strstr(t, "gpulse_gpu_h100_equivalents{gpu=\"1\""));
    CHECK(!strstr(t, "{gpu=\"2\",UUID=\"GPU-2\",pci_bus_id=\"\",device=\"\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"n1\",vendor=\"nvidia\"} 1\ngpulse_gpu_model"));
    CHECK(!strstr(t, "gpulse_gpu_model_known{gpu=\"2\""));
    free(t);
    gp_frame_free(&f);
}

static void test_model_table(void)
{
    const char *want[] = {"V100", "A10", "A100-40GB", "A100", "L4", "L40S", "H100", "H100-PCIE",
                          "H200", "GH200", "B200", "MI250X", "MI300X", "RTX3090", "RTX4090",
                          "RTX4080", "RTXA6000", "RTX6000ADA"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const struct gp_gpumodel *m = gp_gpumodel_find(want[i]);
        if (!m)
            gp_test_fail(__FILE__, __LINE__, "model %s missing", want[i]);
        CHECK(m->tensor_tflops > 0 && m->fp32_tflops > 0 && m->memory_bytes > 0 && m->mem_bw_gbps > 0);
        CHECK(m->power_limit_w > 0 && m->price_usd_hour > 0 && m->price_usd_hour < 20);
    }
    CHECK(gp_gpumodel_find("NVIDIA RTX 6000 Ada Generation") == gp_gpumodel_find("RTX6000ADA"));
    CHECK(gp_gpumodel_find("NVIDIA A100 80GB PCIe") == gp_gpumodel_find("A100"));
    CHECK_DBL(gp_gpumodel_h100_equivalents(gp_gpumodel_find("H100")), 1, 0);
    CHECK_DBL(gp_gpumodel_h100_equivalents(gp_gpumodel_find("B200")), 2250 / 989.4, 1e-12);
}

static void test_prices_parse(void)
{
    struct gp_prices p;
    char err[512];
    CHECK_INT(gp_prices_parse(&p, " H100=2.9, a100 = 1.8 ,NVIDIA Foo 48GB=1.1,default=2.0", 5, err,
                              sizeof err),
              GP_OK);
    CHECK_INT(p.n, 3);
    CHECK_DBL(p.fallback, 2.0, 0);
    CHECK_DBL(gp_prices_of(&p, "NVIDIA H100 80GB HBM3", 21), 2.9, 0);
    CHECK_DBL(gp_prices_of(&p, "NVIDIA A100-SXM4-80GB", 21), 1.8, 0);
    CHECK_DBL(gp_prices_of(&p, "nvidia foo 48gb", 15), 1.1, 0);
    /* the table's default for a model the list does not name */
    CHECK_DBL(gp_prices_of(&p, "NVIDIA L4", 9), 0.8, 0);
    /* unknown model: default= */
    CHECK_DBL(gp_prices_of(&p, "NVIDIA Bar", 10), 2.0, 0);
    CHECK_DBL(gp_prices_of(&p, NULL, 0), 2.0, 0);
    /* without default=, gpu_hour_price is the fallback; 0: none */
    CHECK_INT(gp_prices_parse(&p, "", 2.5, err, sizeof err), GP_OK);
    CHECK_DBL(gp_prices_of(&p, "NVIDIA Bar", 10), 2.5, 0);
    CHECK_DBL(gp_prices_of(&p, "H100", 4), 3.5, 0);
    CHECK_INT(gp_prices_parse(&p, NULL, 0, err, sizeof err), GP_OK);
    CHECK_DBL(gp_prices_of(&p, "NVIDIA Bar", 10), 0, 0);
    CHECK_DBL(gp_prices_of(NULL, "H200", 4), 4.5, 0);

    static const struct {
        const char *in, *msg;
    } bad[] = {
        {"H100", "is not MODEL=USD"},
        {"H100=", "must be a number"},
        {"H100=-1", "must be a number"},
        {"H100=nan", "must be a number"},
        {"H100=inf", "must be a number"},
        {"H100=2e6", "must be a number"},
        {"H100=2$", "must be a number"},
        {"=2", "no model before"},
        {"H10=2", "unknown model 'H10'"},
        {"H100=1,h100-sxm=2", "priced twice"},
        {"H100=1,,A100=2", "entry 2 is empty"},
        {"H100=1,", "entry 2 is empty"},
        {"default=1,default=2", "'default' is given twice"},
        {"NVIDIA Zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"
         "zzzzzzz=1",
         "longer than"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        if (gp_prices_parse(&p, bad[i].in, 0, err, sizeof err) != GP_ECONFIG || !strstr(err, bad[i].msg))
            gp_test_fail(__FILE__, __LINE__, "'%s': '%s' (want '%s')", bad[i].in, err, bad[i].msg);
        CHECK_INT(p.n, 0);
    }
    /* more than GP_PRICES_MAX entries */
    char big[8192] = "";
    size_t len = 0;
    for (int i = 0; i <= GP_PRICES_MAX; i++)
        len += (size_t)snprintf(big + len, sizeof big - len, "%sNVIDIA X%d=1", i ? "," : "", i);
    CHECK_INT(gp_prices_parse(&p, big, 0, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "more than 64 entries");
}

static void test_cost_arithmetic(void)
{
    /* GPU a: 6 samples 10 s apart at 3.6 USD/h (0.001 USD/s):
     * activity 0, 0.02, 0.5, 1, 1.2 (clamped to 1), 0.04.
     * held 60 s -> 0.06; idle: 0, 0.02, 0.04 -> 30 s -> 0.03;
     * unused: (1 + 0.98 + 0.5 + 0 + 0 + 0.96) x 10 s = 34.4 s -> 0.0344. */
    const double a[] = {0, 0.02, 0.5, 1, 1.2, 0.04};
    struct gp_cost_acc acc = {0};
    gp_cost_add_gpu(&acc, a, 6, 10000, 3.6);
    CHECK_DBL(gp_cost_total(&acc), 0.06, 1e-12);
    CHECK_DBL(gp_cost_idle(&acc), 0.03, 1e-12);
    CHECK_DBL(gp_cost_unused(&acc), 0.0344, 1e-12);
    /* GPU b: memory only, 3 samples 20 s apart at 7.2 USD/h: 60 s -> 0.12;
     * idle and unused keep a's figures. */
    gp_cost_add_gpu(&acc, NULL, 3, 20000, 7.2);
    CHECK_DBL(acc.gpu_seconds, 120, 1e-12);
    CHECK_DBL(gp_cost_total(&acc), 0.18, 1e-12);
    CHECK_DBL(gp_cost_idle(&acc), 0.03, 1e-12);
    /* GPU c: no price: time counted, cost unchanged, noted */
    gp_cost_add_gpu(&acc, a, 6, 10000, 0);
    CHECK_DBL(acc.gpu_seconds, 180, 1e-12);
    CHECK_DBL(gp_cost_total(&acc), 0.18, 1e-12);
    CHECK_INT(acc.unpriced, 1);
    /* nothing priced: unknown, not 0 */
    struct gp_cost_acc none = {0};
    gp_cost_add_gpu(&none, a, 6, 10000, 0);
    CHECK(isnan(gp_cost_total(&none)) && isnan(gp_cost_idle(&none)) && isnan(gp_cost_unused(&none)));
    struct gp_cost_acc mem = {0};
    gp_cost_add_gpu(&mem, NULL, 2, 1000, 1);
    CHECK(isfinite(gp_cost_total(&mem)) && isnan(gp_cost_idle(&mem)));
}

static void test_projection(void)
{
    double left, total;
    /* at step 400 of 1000, 2 steps/s, 36 USD/h, 5 USD so far:
     * 300 s left -> 5 + 300/3600 x 36 = 8 */
    CHECK_INT(gp_cost_project(5, 36, 1000, 400, 2, &left, &total), 1);
    CHECK_DBL(left, 300, 1e-12);
    CHECK_DBL(total, 8, 1e-12);
    /* done */
    CHECK_INT(gp_cost_project(5, 36, 1000, 1000, NAN, &left, &total), 1);
    CHECK_DBL(left, 0, 0);
    CHECK_DBL(total, 5, 0);
    /* unknowns */
    CHECK_INT(gp_cost_project(5, 36, 0, 400, 2, &left, &total), 0);
    CHECK(isnan(left) && isnan(total));
    CHECK_INT(gp_cost_project(5, 36, 1000, 400, 0, &left, &total), 0);
    CHECK_INT(gp_cost_project(NAN, 36, 1000, 400, 2, &left, &total), 0);
    CHECK_INT(gp_cost_project(5, NAN, 1000, 400, 2, &left, &total), 0);
    CHECK_INT(gp_cost_project(5, 36, 1000, NAN, 2, &left, &total), 0);
}

static void test_fleet_totals(void)
{
    struct gp_prices p;
    char err[256];
    CHECK_INT(gp_prices_parse(&p, "H100=4,A100=2,default=1", 0, err, sizeof err), GP_OK);
    struct gp_fleet fl = {0};
    const struct gp_fleet_gpu g[] = {
        {"NVIDIA H100 80GB HBM3", 0.9, NAN, true},    /* busy */
        {"NVIDIA H100 80GB HBM3", 0.01, NAN, true},   /* allocated, idle */
        {"NVIDIA H100 80GB HBM3", 0.0, NAN, false},   /* idle, free */
        {"NVIDIA A100-SXM4-80GB", 0.5, 100, true},    /* the agent's effective TFLOP/s */
        {"NVIDIA Mystery", NAN, NAN, false},          /* unknown model and activity */
    };
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++)
        CHECK_INT(gp_fleet_add(&fl, &g[i], &p), GP_OK);
    const struct gp_fleet_totals *t = &fl.all;
    CHECK_INT(t->gpus, 5);
    CHECK_INT(t->busy, 2);
    CHECK_INT(t->idle, 2);
    CHECK_INT(t->allocated, 3);
    CHECK_INT(t->allocated_idle, 1);
    CHECK_INT(t->unknown_activity, 1);
    CHECK_INT(t->unknown_model, 1);
    CHECK_DBL(t->effective_tflops, 0.91 * 989.4 + 100, 1e-9);
    CHECK_DBL(t->h100_total, 3 + 312 / 989.4, 1e-12);
    CHECK_DBL(t->h100_allocated, 2 + 312 / 989.4, 1e-12);
    CHECK_DBL(t->h100_used, 0.91 + 0.5 * 312 / 989.4, 1e-12);
    CHECK_DBL(t->cost_per_hour, 4 * 3 + 2 + 1, 1e-12);
    CHECK_DBL(t->idle_cost_per_hour, 8, 1e-12);
    CHECK_DBL(t->wasted_cost_per_hour, 4 * 0.1 + 4 * 0.99 + 4 + 2 * 0.5, 1e-12);
    CHECK_INT(fl.nmodels, 3);
    CHECK_STR(fl.models[0].model, "H100");
    CHECK_INT(fl.models[0].gpus, 3);
    CHECK_STR(fl.models[2].model, "NVIDIA Mystery");
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_fleet_json(&fl, &b);
    CHECK_CONTAINS(b.data, "{\"overall\":{\"gpus\":5,\"busy\":2,\"idle\":2,\"allocated\":3,\"allocated_idle\":1,");
    CHECK_CONTAINS(b.data, "\"models\":[{\"model\":\"H100\",\"gpus\":3,");
    CHECK_CONTAINS(b.data, "\"cost_per_hour\":15,");
    gp_buf_free(&b);
    gp_fleet_free(&fl);
    /* no price anywhere: spend unknown */
    struct gp_prices none;
    CHECK_INT(gp_prices_parse(&none, "", 0, err, sizeof err), GP_OK);
    struct gp_fleet_gpu u = {"NVIDIA Mystery", 0.5, NAN, false};
    CHECK_INT(gp_fleet_add(&fl, &u, &none), GP_OK);
    gp_buf_init(&b, 0);
    gp_fleet_json(&fl, &b);
    CHECK_CONTAINS(b.data, "\"cost_per_hour\":null,");
    gp_buf_free(&b);
    gp_fleet_free(&fl);
}

/* docs/metrics.md names every normalized family. */
static void test_docs_name_families(void)
{
    const char *t = gp_test_repo_text("docs/metrics.md");
    const char *fams[] = {"gpulse_gpu_compute_ratio", "gpulse_gpu_memory_used_ratio",
                          "gpulse_gpu_bandwidth_ratio", "gpulse_gpu_power_ratio",
                          "gpulse_gpu_clock_ratio", "gpulse_gpu_effective_tflops",
                          "gpulse_gpu_peak_tflops", "gpulse_gpu_h100_equivalents",
                          "gpulse_gpu_model_known"};
    for (size_t i = 0; i < sizeof fams / sizeof fams[0]; i++)
        CHECK_CONTAINS(t, fams[i]);
}

const struct gp_test gp_tests_cost[] = {
    {"norm_gpm_card", test_norm_gpm_card},
    {"norm_coarse_and_unknown", test_norm_coarse_and_unknown},
    {"model_table", test_model_table},
    {"prices_parse", test_prices_parse},
    {"cost_arithmetic", test_cost_arithmetic},
    {"projection", test_projection},
    {"fleet_totals", test_fleet_totals},
    {"docs_name_families", test_docs_name_families},
    {0},
};
