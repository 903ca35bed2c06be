/*
 * test_simulate.c - the GPU model table, the --simulate spec parser and
 * the simulated source: determinism, each behaviour's signature, counters,
 * sanity of every value, vendor/generation field sets, a large fleet.
 * The fault plan and the simulated jobs: test_simulate_plan.c.
 */
#include "lib/err.h"
#include "lib/gpumodels.h"
#include "sources/simulate.h"
#include "sources/simulate_spec.h"
#include "test.h"

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#define MIB (1024.0 * 1024.0)
#define T0_MS 1700000000000ll

/* ---- model table ---- */

static void test_model_lookup(void)
{
    const struct gp_gpumodel *h = gp_gpumodel_find("H100");
    CHECK(h != NULL);
    CHECK_STR(h->name, "NVIDIA H100 80GB HBM3");
    CHECK(h->gpm);
    CHECK_INT(h->vendor, GP_VENDOR_NVIDIA);
    CHECK(gp_gpumodel_find("h100") == h);
    CHECK(gp_gpumodel_find("  H100 ") == h);
    CHECK(gp_gpumodel_find("nvidia h100 80gb hbm3") == h);
    CHECK(gp_gpumodel_find("H100-SXM") == h);
    CHECK(gp_gpumodel_find("H100-PCIE") != h);
    CHECK_STR(gp_gpumodel_find("A100")->name, "NVIDIA A100-SXM4-80GB");
    CHECK_STR(gp_gpumodel_find("a100-40gb")->name, "NVIDIA A100-SXM4-40GB");
    CHECK_STR(gp_gpumodel_find("Tesla V100-SXM2-32GB")->short_name, "V100");
    const struct gp_gpumodel *mi = gp_gpumodel_find("mi300x");
    CHECK(mi != NULL);
    CHECK_INT(mi->vendor, GP_VENDOR_AMD);
    CHECK_STR(mi->name, "AMD Instinct MI300X");
    CHECK(!mi->gpm);
    CHECK(!gp_gpumodel_find("V100")->gpm);
    CHECK(gp_gpumodel_find("H900") == NULL);
    CHECK(gp_gpumodel_find("") == NULL);
    CHECK(gp_gpumodel_find(NULL) == NULL);
    CHECK(gp_gpumodel_find("H10") == NULL);
    static const char *const all[] = {"V100", "T4",    "A10",   "A100-40GB", "A100",
                                      "L4",   "L40S",  "H100",  "H100-PCIE", "H200",
                                      "GH200", "B200", "MI250X", "MI300X",   "RTX4090"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!gp_gpumodel_find(all[i]))
            gp_test_fail(__FILE__, __LINE__, "model %s missing", all[i]);
    CHECK(gp_gpumodel_has_row_remap(h));
    CHECK(!gp_gpumodel_has_page_retire(h));
    CHECK(gp_gpumodel_has_page_retire(gp_gpumodel_find("V100")));
    CHECK(!gp_gpumodel_has_row_remap(mi));
}

static void test_model_table_sane(void)
{
    CHECK(gp_gpumodel_count() >= 15);
    CHECK(gp_gpumodel_at(gp_gpumodel_count()) == NULL);
    for (size_t i = 0; i < gp_gpumodel_count(); i++) {
        const struct gp_gpumodel *m = gp_gpumodel_at(i);
        CHECK(m->memory_bytes >= 8ull << 30 && m->memory_bytes <= 320ull << 30); /* B300, MI355X: 288 GB */
        CHECK(m->mem_bw_gbps > 100 && m->mem_bw_gbps < 10000);
        CHECK(m->tensor_tflops > m->fp32_tflops);
        CHECK(m->power_limit_w > m->idle_power_w && m->idle_power_w > 0);
        CHECK(m->sm_clock_max_mhz > 500 && m->mem_clock_max_mhz > 500);
        CHECK(m->pcie_gbps > 10);
        CHECK(!m->gpm || (m->vendor == GP_VENDOR_NVIDIA && m->arch >= GP_ARCH_HOPPER));
        /* names are unique, both kinds, and find() finds each row by both */
        CHECK(gp_gpumodel_find(m->short_name) == m);
        CHECK(gp_gpumodel_find(m->name) == m);
    }
    char names[512];
    size_t need = gp_gpumodel_names(names, sizeof names, ", ");
    CHECK(need < sizeof names);
    CHECK_CONTAINS(names, "V100, T4, A10");
    CHECK_CONTAINS(names, "MI300X");
    char small[8];
    CHECK_INT(gp_gpumodel_names(small, sizeof small, ", "), need);
    CHECK_INT(strlen(small), 7);
}

/* The cards clouds rent, by the device name NVML (or amdgpu) reports: each
 * finds its own row, and a name that another begins with finds the other
 * only when it is that name (an H20 is not an H200, an A10G not an A10). */
static void test_model_cloud_names(void)
{
    static const char *const by_driver[][2] = {
        {"NVIDIA A10G", "A10G"},           {"NVIDIA A10", "A10"},
        {"NVIDIA L4", "L4"},               {"NVIDIA L40", "L40"},
        {"NVIDIA L40S", "L40S"},           {"NVIDIA H20", "H20"},
        {"NVIDIA H200", "H200"},           {"NVIDIA H200 NVL", "H200-NVL"},
        {"NVIDIA H100 NVL", "H100-NVL"},   {"NVIDIA H100 80GB HBM3", "H100"},
        {"NVIDIA H100 PCIe", "H100-PCIE"}, {"NVIDIA B200", "B200"},
        {"NVIDIA GB200", "GB200"},         {"NVIDIA B300 SXM6 AC", "B300"},
        {"NVIDIA B300", "B300"},           {" nvidia h200 nvl\n", "H200-NVL"},
        {"AMD Instinct MI325X", "MI325X"}, {"AMD Instinct MI325X OAM", "MI325X"},
        {"AMD Instinct MI355X", "MI355X"}, {"AMD Instinct MI300X", "MI300X"},
    };
    for (size_t i = 0; i < sizeof by_driver / sizeof by_driver[0]; i++) {
        const struct gp_gpumodel *m = gp_gpumodel_find(by_driver[i][0]);
        if (!m || strcmp(m->short_name, by_driver[i][1]))
            gp_test_fail(__FILE__, __LINE__, "\"%s\" found %s, want %s", by_driver[i][0],
                         m ? m->short_name : "nothing", by_driver[i][1]);
    }
    static const char *const unknown[] = {"NVIDIA H2", "NVIDIA H200 NV", "NVIDIA A10GX", "NVIDIA GB20",
                                          "AMD Instinct MI325"};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
        if (gp_gpumodel_find(unknown[i]))
            gp_test_fail(__FILE__, __LINE__, "\"%s\" matched a model", unknown[i]);
    /* the variants differ where their data sheets do */
    const struct gp_gpumodel *a10 = gp_gpumodel_find("A10"), *a10g = gp_gpumodel_find("A10G");
    CHECK(a10g->tensor_tflops < a10->tensor_tflops && a10g->memory_bytes == a10->memory_bytes);
    CHECK(gp_gpumodel_find("L40")->tensor_tflops * 2 < gp_gpumodel_find("L40S")->tensor_tflops + 1);
    CHECK(gp_gpumodel_find("H200-NVL")->memory_bytes == gp_gpumodel_find("H200")->memory_bytes);
    CHECK(gp_gpumodel_find("H200-NVL")->power_limit_w < gp_gpumodel_find("H200")->power_limit_w);
    CHECK(gp_gpumodel_find("H20")->tensor_tflops < gp_gpumodel_find("H100")->tensor_tflops / 5);
    CHECK(gp_gpumodel_find("GB200")->tensor_tflops > gp_gpumodel_find("B200")->tensor_tflops);
    CHECK(gp_gpumodel_find("MI325X")->memory_bytes > gp_gpumodel_find("MI300X")->memory_bytes);
    /* and --simulate builds fleets of them */
    struct gp_sim_spec sp;
    char err[1024] = "";
    CHECK_INT(gp_sim_spec_parse("2x8xA10G,1x4xh200-nvl,1x8xMI325X,1x4xGB200,1x1xL4", &sp, err, sizeof err),
              GP_OK);
    CHECK_STR(sp.groups[1].model->name, "NVIDIA H200 NVL");
    CHECK_INT(sp.total_gpus, 33);
}

/* ---- spec parser ---- */

static void test_spec_good(void)
{
    struct gp_sim_spec s;
    char err[512] = "";
    CHECK_INT(gp_sim_spec_parse("4x8xH100", &s, err, sizeof err), GP_OK);
    CHECK_INT(s.ngroups, 1);
    CHECK_INT(s.groups[0].nodes, 4);
    CHECK_INT(s.groups[0].gpus, 8);
    CHECK_STR(s.groups[0].model->short_name, "H100");
    CHECK_INT(s.total_gpus, 32);
    CHECK_INT(s.total_nodes, 4);

    CHECK_INT(gp_sim_spec_parse(" 2x8xH100 , 1X8Xmi300x\t", &s, err, sizeof err), GP_OK);
    CHECK_INT(s.ngroups, 2);
    CHECK_STR(s.groups[1].model->short_name, "MI300X");
    CHECK_INT(s.total_gpus, 24);
    CHECK_INT(s.total_nodes, 3);

    CHECK_INT(gp_sim_spec_parse("1 x 4 x A100-40GB", &s, err, sizeof err), GP_OK);
    CHECK_STR(s.groups[0].model->short_name, "A100-40GB");
    CHECK_INT(gp_sim_spec_parse("1024x8xH100", &s, err, sizeof err), GP_OK);
    CHECK_INT(s.total_gpus, 8192);
    CHECK_INT(gp_sim_spec_parse("1x16xB200,1x1xT4", &s, err, sizeof err), GP_OK);
    CHECK_INT(gp_sim_spec_parse("1x8xMI250X", &s, err, sizeof err), GP_OK);
    CHECK_STR(s.groups[0].model->short_name, "MI250X");
}

static void expect_bad(const char *spec, const char *needle)
{
    struct gp_sim_spec s;
    char err[512] = "";
    int rc = gp_sim_spec_parse(spec, &s, err, sizeof err);
    if (rc == GP_OK)
        gp_test_fail(__FILE__, __LINE__, "accepted \"%s\"", spec);
    CHECK_INT(rc, GP_EUSAGE);
    if (!strstr(err, needle))
        gp_test_fail(__FILE__, __LINE__, "spec \"%s\": error \"%s\" lacks \"%s\"", spec, err,
                     needle);
    CHECK_CONTAINS(err, "invalid --simulate spec '");
}

static void test_spec_bad(void)
{
    expect_bad("2x8", "'2x8': expected NODESxGPUSxMODEL");
    expect_bad("", "expected NODESxGPUSxMODEL");
    expect_bad("   ", "expected NODESxGPUSxMODEL");
    expect_bad("x8xH100", "'x8xH100': expected");
    expect_bad("2x8x", "'2x8x': expected");
    expect_bad("2x8xH100,1x8", "'1x8': expected");
    expect_bad("2*8*H100", "expected");
    expect_bad("-1x8xH100", "expected");
    expect_bad("+1x8xH100", "expected");
    expect_bad("2x8xH900", "unknown GPU model 'H900' (known: V100, T4");
    expect_bad("2x8xH900", "RTX4090)");
    expect_bad("2x8xH100,", "empty item");
    expect_bad(",2x8xH100", "empty item");
    expect_bad("2x8xH100,,1x8xH100", "empty item");
    expect_bad("2x8xH100, ,1x8xH100", "empty item");
    expect_bad("0x8xH100", "nodes must be 1 to 1024");
    expect_bad("1025x8xH100", "'1025x8xH100': nodes must be 1 to 1024");
    expect_bad("1x0xH100", "GPUs per node must be 1 to 16");
    expect_bad("1x17xH100", "GPUs per node must be 1 to 16");
    expect_bad("99999999999999999999x8xH100", "nodes must be");
    expect_bad("1x99999999999999999999xH100", "GPUs per node must be");
    expect_bad("1024x8xH100,1x1xH100", "more than 8192 GPUs");
    expect_bad("1x8xH100 extra", "unknown GPU model 'H100 extra'");
    expect_bad("1x8xH1\x01" "00", "unknown GPU model 'H1?00'");
    expect_bad("1.5x8xH100", "expected");
    expect_bad("1x8xNVIDIA H100 80GB HBM3 and a very long tail that goes on and on and on",
               "...");
    /* too many items and too long a spec */
    char many[GP_SIM_MAX_GROUPS * 8 + 16] = "";
    for (int i = 0; i <= GP_SIM_MAX_GROUPS; i++)
        strcat(many, i ? ",1x1xT4" : "1x1xT4");
    expect_bad(many, "more than 64 items");
    char *huge = malloc(GP_SIM_MAX_SPEC_LEN + 2);
    memset(huge, ' ', GP_SIM_MAX_SPEC_LEN + 1);
    huge[GP_SIM_MAX_SPEC_LEN + 1] = '\0';
    expect_bad(huge, "longer than 4096 characters");
    free(huge);
    /* a tiny error buffer is still terminated */
    struct gp_sim_spec s;
    char tiny[10];
    CHECK(gp_sim_spec_parse("2x8", &s, tiny, sizeof tiny) == GP_EUSAGE);
    CHECK_INT(strlen(tiny), 9);
}

/* ---- the source ---- */

static void *open_sim_faults(const char *spec, uint64_t seed, const char *faults)
{
    struct gp_source_config cfg = {.simulate = spec, .seed = seed, .interval_ms = 1000,
                                   .simulate_faults = faults};
    void *st = NULL;
    char err[512] = "";
    int rc = gp_source_simulate.open(&cfg, &st, err, sizeof err);
    if (rc != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "open \"%s\": %s", spec, err);
    CHECK(st != NULL);
    return st;
}

static void *open_sim(const char *spec, uint64_t seed) { return open_sim_faults(spec, seed, NULL); }

/* Every job has started and steps by then (start 1-5 s, loading 8 s). */
#define RUNNING_MS 14000

static void sample_at(void *st, struct gp_frame *f, int64_t ms)
{
    gp_frame_reset(f);
    f->time_ms = ms;
    unsigned errors = 0;
    CHECK_INT(gp_source_simulate.sample(st, f, &errors), GP_OK);
    CHECK_INT(errors, 0);
}

static void test_open_errors(void)
{
    struct gp_source_config cfg = {.simulate = NULL};
    void *st = (void *)1;
    char err[512] = "";
    CHECK_INT(gp_source_simulate.open(&cfg, &st, err, sizeof err), GP_ENODEV);
    CHECK(st == NULL);
    cfg.simulate = "2x8";
    CHECK_INT(gp_source_simulate.open(&cfg, &st, err, sizeof err), GP_EUSAGE);
    CHECK_CONTAINS(err, "'2x8'");
    CHECK(st == NULL);
    gp_source_simulate.close(NULL);
    CHECK_STR(gp_source_simulate.name, "simulate");
    CHECK_INT(gp_source_simulate.id, GP_SRC_SIMULATE);
}

static void test_identity(void)
{
    void *st = open_sim("2x8xH100,1x2xMI300X", 7);
    struct gp_frame f;
    gp_frame_init(&f);
    sample_at(st, &f, T0_MS);
    CHECK_INT(f.ngpus, 18);
    CHECK_INT(gp_sim_gpu_count(st), 18);
    for (unsigned i = 0; i < f.ngpus; i++) {
        const struct gp_gpu *g = &f.gpus[i];
        CHECK(g->simulated);
        CHECK_INT(g->mig_gi, -1);
        CHECK_INT(strlen(g->uuid), 40);
        CHECK(strncmp(g->uuid, "GPU-", 4) == 0);
        CHECK(g->uuid[12] == '-' && g->uuid[17] == '-' && g->uuid[22] == '-' && g->uuid[27] == '-');
        for (unsigned j = 0; j < i; j++)
            CHECK(strcmp(f.gpus[j].uuid, g->uuid) != 0);
    }
    const struct gp_gpu *g = &f.gpus[9];
    CHECK_STR(g->node, "sim-node-1");
    CHECK_INT(g->index, 1);
    CHECK_STR(g->pci_bus_id, "00000000:2A:00.0");
    CHECK_STR(g->device, "nvidia1");
    CHECK_STR(g->model, "NVIDIA H100 80GB HBM3");
    CHECK_INT(g->vendor, GP_VENDOR_NVIDIA);
    CHECK(g->driver[0] != '\0');
    g = &f.gpus[17];
    CHECK_STR(g->node, "sim-node-2");
    CHECK_STR(g->device, "card1");
    CHECK_STR(g->pci_bus_id, "0000:22:00.0");
    CHECK_STR(g->model, "AMD Instinct MI300X");
    CHECK_INT(g->vendor, GP_VENDOR_AMD);
    CHECK_STR(f.gpus[0].pci_bus_id, "00000000:18:00.0");
    CHECK_STR(f.gpus[0].node, "sim-node-0");
    gp_frame_free(&f);
    gp_source_simulate.close(st);
}

/* Compares two frames' GPUs value by value. */
static bool frames_equal(const struct gp_frame *a, const struct gp_frame *b)
{
    if (a->ngpus != b->ngpus)
        return false;
    for (unsigned i = 0; i < a->ngpus; i++) {
        const struct gp_gpu *x = &a->gpus[i], *y = &b->gpus[i];
        if (strcmp(x->uuid, y->uuid) || memcmp(x->valid, y->valid, sizeof x->valid) ||
            x->clock_events != y->clock_events || x->nprocs != y->nprocs)
            return false;
        for (int k = 0; k < GPF__COUNT; k++)
            if (gp_gpu_has(x, (enum gp_gpu_field)k) && x->val[k] != y->val[k])
                return false;
        for (unsigned p = 0; p < x->nprocs; p++)
            if (x->procs[p].pid != y->procs[p].pid || x->procs[p].mem_bytes != y->procs[p].mem_bytes ||
                x->procs[p].sm_util != y->procs[p].sm_util)
                return false;
    }
    return true;
}

static void test_deterministic(void)
{
    void *a = open_sim("2x8xH100", 42), *b = open_sim("2x8xH100", 42), *c = open_sim("2x8xH100", 43);
    struct gp_frame fa, fb, fc;
    gp_frame_init(&fa);
    gp_frame_init(&fb);
    gp_frame_init(&fc);
    /* same relative times from different wall clocks: identical frames */
    bool all_same_c = true;
    for (int i = 0; i < 30; i++) {
        int64_t rel = i * 1000 + (i % 3) * 137;
        sample_at(a, &fa, T0_MS + rel);
        sample_at(b, &fb, 1000 + rel);
        sample_at(c, &fc, T0_MS + rel);
        if (!frames_equal(&fa, &fb))
            gp_test_fail(__FILE__, __LINE__, "frames differ at tick %d", i);
        if (!frames_equal(&fa, &fc))
            all_same_c = false;
    }
    CHECK(!all_same_c);
    CHECK(strcmp(fa.gpus[0].uuid, fc.gpus[0].uuid) != 0);
    for (unsigned i = 0; i < 16; i++)
        CHECK_INT(gp_sim_gpu_behaviour(a, i), gp_sim_gpu_behaviour(b, i));
    CHECK_INT(gp_sim_gpu_behaviour(a, 16), -1);
    gp_frame_free(&fa);
    gp_frame_free(&fb);
    gp_frame_free(&fc);
    gp_source_simulate.close(a);
    gp_source_simulate.close(b);
    gp_source_simulate.close(c);
}

/* Index of the first GPU with behaviour b; fails when there is none. */
static unsigned find_beh(void *st, enum gp_sim_behaviour b)
{
    for (unsigned i = 0; i < gp_sim_gpu_count(st); i++)
        if (gp_sim_gpu_behaviour(st, i) == (int)b)
            return i;
    gp_test_fail(__FILE__, __LINE__, "no %s GPU", gp_sim_behaviour_name(b));
}

static double mem_ratio(const struct gp_gpu *g)
{
    return g->val[GPF_MEMORY_USED] / g->val[GPF_MEMORY_TOTAL];
}

/* Whether GPU i's rank checkpoints around t seconds after the first tick (a second's margin). */
static bool in_checkpoint(void *st, unsigned i, double t)
{
    const struct gp_sim_slot *sl = &gp_sim_state_plan(st)->slots[i];
    double run = t - sl->start_s - GP_SIM_LOAD_S, per = sl->ckpt_every_s + sl->ckpt_s;
    if (!(sl->ckpt_s > 0) || run < 0)
        return false;
    double in = run - per * floor(run / per);
    return in >= sl->ckpt_every_s - 1 || in < 1;
}

static void test_behaviours(void)
{
    for (uint64_t seed = 1; seed <= 5; seed++) {
        void *st = open_sim("2x8xH100", seed);
        unsigned comp = find_beh(st, GP_SIM_COMPUTE), starv = find_beh(st, GP_SIM_STARVED);
        unsigned leak = find_beh(st, GP_SIM_LEAKING), strag = find_beh(st, GP_SIM_STRAGGLER);
        unsigned idle = find_beh(st, GP_SIM_IDLE), thr = find_beh(st, GP_SIM_THROTTLED);
        unsigned ecc = find_beh(st, GP_SIM_ECC);
        unsigned ncomp = 0;
        for (unsigned i = 0; i < 16; i++)
            ncomp += gp_sim_gpu_behaviour(st, i) == GP_SIM_COMPUTE;
        CHECK_INT(ncomp, 9); /* six faults and powercap; no node left for a hang or a crash loop */

        struct gp_frame f;
        gp_frame_init(&f);
        double starv_sm = 0, comp_sm = 0, starv_min = 100, starv_max = 0;
        double starv_pmin = 1e9, starv_pmax = 0, starv_rx_idle = 0, starv_rx_busy = 0;
        unsigned leak_stairs = 0, leak_frees = 0, leak_drops = 0, comp_moves = 0, nstarv_idle = 0, nstarv_busy = 0, comp_busy = 0;
        unsigned thr_capped = 0, ecc_seen = 0;
        double last_leak = -1, first_leak = -1, last_comp = -1, comp_jitter = 0;
        const int ticks = 600;
        sample_at(st, &f, T0_MS); /* the simulation's clock starts at its first tick */
        for (int i = 0; i < ticks; i++) {
            sample_at(st, &f, T0_MS + RUNNING_MS + (int64_t)i * 1000);
            const struct gp_gpu *c = &f.gpus[comp], *s = &f.gpus[starv], *l = &f.gpus[leak];
            const struct gp_gpu *t = &f.gpus[strag], *d = &f.gpus[idle], *h = &f.gpus[thr];
            const struct gp_gpu *e = &f.gpus[ecc];
            /* compute-bound: busy but for short dips between batches (and
             * its checkpoints, test_simulate_plan's), never throttled */
            bool ck = in_checkpoint(st, comp, (double)(RUNNING_MS + i * 1000) / 1000);
            comp_busy += ck || c->val[GPF_GPU_UTIL] >= 97;
            CHECK(ck || c->val[GPF_GPU_UTIL] >= 50);
            CHECK(ck || (c->val[GPF_PROF_SM_ACTIVE] >= 0.25 && c->val[GPF_PROF_SM_ACTIVE] <= 0.95));
            CHECK(ck || c->val[GPF_POWER_USAGE] >= 0.5 * c->val[GPF_POWER_LIMIT]);
            CHECK(c->val[GPF_POWER_USAGE] < 0.95 * c->val[GPF_POWER_LIMIT]);
            CHECK(ck || (mem_ratio(c) >= 0.70 && mem_ratio(c) <= 0.85));
            CHECK(c->val[GPF_SM_CLOCK] * 1e6 == c->val[GPF_SM_CLOCK_MAX]);
            CHECK((c->clock_events & ~0x1ull) == 0);
            comp_sm += c->val[GPF_PROF_SM_ACTIVE];
            /* allocator noise: a healthy rank's allocated bytes move a little
             * between samples, and no more than the noise */
            double cm = -1;
            for (unsigned k = 0; k < f.nsteps; k++)
                if (f.steps[k].nalloc && f.steps[k].alloc[0].device == (int32_t)comp)
                    cm = (double)f.steps[k].alloc[0].allocated;
            if (last_comp >= 0 && cm >= 0) {
                comp_moves += cm != last_comp;
                comp_jitter = fmax(comp_jitter, fabs(cm - last_comp));
            }
            last_comp = cm;
            /* data-starved */
            starv_sm += s->val[GPF_PROF_SM_ACTIVE];
            starv_min = fmin(starv_min, s->val[GPF_GPU_UTIL]);
            starv_max = fmax(starv_max, s->val[GPF_GPU_UTIL]);
            starv_pmin = fmin(starv_pmin, s->val[GPF_POWER_USAGE]);
            starv_pmax = fmax(starv_pmax, s->val[GPF_POWER_USAGE]);
            if (s->val[GPF_GPU_UTIL] < 10) {
                starv_rx_idle += s->val[GPF_PROF_PCIE_RX];
                nstarv_idle++;
            } else if (s->val[GPF_GPU_UTIL] > 90) {
                starv_rx_busy += s->val[GPF_PROF_PCIE_RX];
                nstarv_busy++;
            }
            /* leaking */
            double lm = l->val[GPF_MEMORY_USED];
            if (last_leak >= 0) {
                if (lm > last_leak + 100 * MIB)
                    leak_stairs++;
                else if (lm < 0.8 * last_leak)
                    leak_drops++;
                else if (lm < last_leak - 100 * MIB)
                    leak_frees++;
            } else {
                first_leak = lm;
            }
            last_leak = lm;
            CHECK(mem_ratio(l) <= 0.995);
            /* straggler */
            CHECK(t->clock_events & 0x40);
            CHECK(t->val[GPF_GPU_TEMP] >= 87 && t->val[GPF_GPU_TEMP] <= 90);
            CHECK(t->val[GPF_SM_CLOCK] < 0.75 * c->val[GPF_SM_CLOCK]);
            /* idle but allocated */
            CHECK(d->val[GPF_GPU_UTIL] < 5);
            CHECK(mem_ratio(d) > 0.3);
            CHECK(d->val[GPF_POWER_USAGE] < 0.2 * d->val[GPF_POWER_LIMIT]);
            CHECK(d->clock_events & 0x1);
            /* throttled: power cap most of the time, clocks down, no thermal reason */
            thr_capped += (h->clock_events & 0x4) != 0;
            CHECK(h->val[GPF_SM_CLOCK] < 0.85 * c->val[GPF_SM_CLOCK]);
            CHECK((h->clock_events & 0x60) == 0);
            /* ECC: one double-bit error and XID 48, once, and it stays counted */
            if (e->val[GPF_ECC_DBE_VOL] > 0) {
                CHECK_DBL(e->val[GPF_ECC_DBE_VOL], 1, 0);
                CHECK_DBL(e->val[GPF_XID_ERRORS], 48, 0);
                CHECK_INT(e->nxids, 1);
                CHECK_INT(e->xids[0].xid, 48);
                CHECK_INT(e->xids[0].count, 1);
                ecc_seen++;
            } else {
                CHECK_INT(ecc_seen, 0);
                CHECK_INT(e->nxids, 0);
            }
            /* only the planted GPUs carry errors */
            for (unsigned k = 0; k < f.ngpus; k++)
                if (k != ecc)
                    CHECK(f.gpus[k].val[GPF_ECC_DBE_VOL] == 0 && f.gpus[k].nxids == 0);
        }
        CHECK(comp_busy > (unsigned)ticks * 8 / 10);
        CHECK(comp_busy < (unsigned)ticks); /* the dips between batches are there */
        CHECK(starv_sm / ticks < 0.6);
        CHECK(comp_sm / ticks > 0.8);
        CHECK(starv_min < 10 && starv_max > 90);
        CHECK(starv_pmax > 2 * starv_pmin);
        CHECK(nstarv_idle > 0 && nstarv_busy > 0);
        CHECK(starv_rx_idle / nstarv_idle > 5 * (starv_rx_busy / nstarv_busy));
        /* a stepwise leak: a stair every 20 s, a partial free between */
        CHECK(leak_stairs >= 28 && leak_stairs <= 31);
        CHECK(leak_frees >= 28 && leak_frees <= 31);
        CHECK(last_leak - first_leak > 0.2 * f.gpus[leak].val[GPF_MEMORY_TOTAL]);
        CHECK_INT(leak_drops, 0); /* 10 minutes: it grows all along, OOM comes later */
        CHECK(comp_moves > (unsigned)ticks / 2);
        if (!(comp_jitter > 5 * MIB && comp_jitter <= 20 * MIB))
            gp_test_fail(__FILE__, __LINE__, "healthy allocator jitter %.1f MiB", comp_jitter / MIB);
        CHECK(thr_capped > (unsigned)ticks * 7 / 10);
        CHECK(ecc_seen > (unsigned)ticks * 8 / 10);
        /* the straggler's thermal violation counter keeps growing */
        const struct gp_gpu *t = &f.gpus[strag];
        double tv = t->val[GPF_THERMAL_VIOLATION];
        sample_at(st, &f, T0_MS + RUNNING_MS + (int64_t)ticks * 1000);
        CHECK(f.gpus[strag].val[GPF_THERMAL_VIOLATION] > tv + 5e5);
        gp_frame_free(&f);
        gp_source_simulate.close(st);
    }
}

/* Every value within its range, memory consistent, processes plausible. */
static void check_sane(const struct gp_gpu *g, bool running)
{
    static const enum gp_gpu_field pct[] = {GPF_GPU_UTIL, GPF_MEM_COPY_UTIL, GPF_ENC_UTIL,
                                            GPF_DEC_UTIL};
    for (size_t i = 0; i < sizeof pct / sizeof pct[0]; i++)
        if (gp_gpu_has(g, pct[i]))
            CHECK(g->val[pct[i]] >= 0 && g->val[pct[i]] <= 100);
    for (int k = GPF_PROF_GR_ACTIVE; k <= GPF_PROF_FP16; k++)
        if (gp_gpu_has(g, (enum gp_gpu_field)k))
            CHECK(g->val[k] >= 0 && g->val[k] <= 1);
    if (gp_gpu_has(g, GPF_TENSOR_HMMA))
        CHECK(g->val[GPF_TENSOR_HMMA] >= 0 && g->val[GPF_TENSOR_HMMA] <= 1);
    if (gp_gpu_has(g, GPF_FAN_SPEED))
        CHECK(g->val[GPF_FAN_SPEED] >= 0 && g->val[GPF_FAN_SPEED] <= 1);
    for (int k = 0; k < GPF__COUNT; k++)
        if (gp_gpu_has(g, (enum gp_gpu_field)k))
            CHECK(g->val[k] >= 0 && isfinite(g->val[k]));
    CHECK(gp_gpu_has(g, GPF_MEMORY_USED) && gp_gpu_has(g, GPF_FB_USED) && gp_gpu_has(g, GPF_FB_FREE));
    CHECK(g->val[GPF_MEMORY_USED] <= g->val[GPF_MEMORY_TOTAL]);
    double res = gp_gpu_has(g, GPF_FB_RESERVED) ? g->val[GPF_FB_RESERVED] : 0;
    CHECK_DBL((g->val[GPF_FB_USED] + g->val[GPF_FB_FREE] + res) * MIB,
              floor(g->val[GPF_MEMORY_TOTAL] / MIB) * MIB, 0.5);
    CHECK_DBL(g->val[GPF_FB_USED] * MIB, g->val[GPF_MEMORY_USED], 0.5);
    CHECK(g->val[GPF_POWER_USAGE] > 0 && g->val[GPF_POWER_USAGE] <= g->val[GPF_POWER_LIMIT]);
    CHECK(g->val[GPF_SM_CLOCK] * 1e6 <= g->val[GPF_SM_CLOCK_MAX]);
    CHECK(g->val[GPF_MEM_CLOCK] * 1e6 <= g->val[GPF_MEM_CLOCK_MAX]);
    CHECK(g->val[GPF_GPU_TEMP] > 20 && g->val[GPF_GPU_TEMP] < 100);
    CHECK(g->nprocs <= 1);
    if (running)
        CHECK_INT(g->nprocs, 1);
    if (!g->nprocs)
        return;
    const struct gp_gpu_proc *p = &g->procs[0];
    CHECK(p->pid >= 100000);
    CHECK(p->mem_valid && p->util_valid);
    CHECK((double)p->mem_bytes <= g->val[GPF_MEMORY_USED]);
    CHECK((double)p->mem_bytes >= 0.85 * g->val[GPF_MEMORY_USED]);
    CHECK(p->sm_util >= 0 && p->sm_util <= 100);
}

static void test_counters_and_sanity(void)
{
    static const enum gp_gpu_field counters[] = {
        GPF_TOTAL_ENERGY, GPF_PCIE_TX_TOTAL, GPF_PCIE_RX_TOTAL, GPF_POWER_VIOLATION,
        GPF_THERMAL_VIOLATION, GPF_ECC_SBE_VOL, GPF_ECC_DBE_VOL, GPF_PCIE_REPLAY};
    const size_t nc = sizeof counters / sizeof counters[0];
    void *st = open_sim("2x8xH100,1x4xMI300X,1x2xV100,1x2xRTX4090", 11);
    struct gp_frame f;
    gp_frame_init(&f);
    sample_at(st, &f, T0_MS);
    unsigned n = f.ngpus;
    double *last = calloc((size_t)n * nc, sizeof *last);
    double *first_energy = calloc(n, sizeof *first_energy);
    for (unsigned i = 0; i < n; i++)
        first_energy[i] = f.gpus[i].val[GPF_TOTAL_ENERGY];
    for (int tick = 0; tick < 100; tick++) {
        /* uneven intervals, and once the clock steps back */
        int64_t ms = T0_MS + tick * 1000 + (tick % 7) * 90 - (tick == 50 ? 5000 : 0);
        sample_at(st, &f, ms);
        CHECK_INT(f.ngpus, n);
        for (unsigned i = 0; i < n; i++) {
            const struct gp_gpu *g = &f.gpus[i];
            check_sane(g, ms - T0_MS >= RUNNING_MS);
            for (size_t c = 0; c < nc; c++) {
                if (!gp_gpu_has(g, counters[c]))
                    continue;
                double v = g->val[counters[c]];
                if (v < last[i * nc + c])
                    gp_test_fail(__FILE__, __LINE__, "gpu %u counter %s went down at tick %d", i,
                                 gp_gpu_fields[counters[c]].name, tick);
                last[i * nc + c] = v;
            }
        }
    }
    /* energy grew by about the mean power times ~100 s */
    for (unsigned i = 0; i < n; i++) {
        const struct gp_gpu *g = &f.gpus[i];
        double joules = (g->val[GPF_TOTAL_ENERGY] - first_energy[i]) / 1e3;
        CHECK(joules > 100 * 0.5 * gp_gpumodel_find(g->model)->idle_power_w);
        CHECK(joules < 101 * g->val[GPF_POWER_LIMIT]);
    }
    free(last);
    free(first_energy);
    gp_frame_free(&f);
    gp_source_simulate.close(st);
}

static void test_mixed_fleet_fields(void)
{
    void *st = open_sim("1x8xH100,1x4xMI300X,1x2xV100", 3);
    struct gp_frame f;
    gp_frame_init(&f);
    sample_at(st, &f, T0_MS);
    sample_at(st, &f, T0_MS + RUNNING_MS);
    CHECK_INT(f.ngpus, 14);
    for (unsigned i = 0; i < f.ngpus; i++) {
        const struct gp_gpu *g = &f.gpus[i];
        const struct gp_gpumodel *m = gp_gpumodel_find(g->model);
        CHECK(m != NULL);
        bool hopper = i < 8, amd = i >= 8 && i < 12;
        CHECK_STR(m->short_name, hopper ? "H100" : amd ? "MI300X" : "V100");
        for (int k = GPF_PROF_GR_ACTIVE; k <= GPF_PROF_NVLINK_RX; k++)
            CHECK(gp_gpu_has(g, (enum gp_gpu_field)k) == hopper);
        CHECK(gp_gpu_has(g, GPF_TENSOR_HMMA) == hopper);
        CHECK(g->clock_events_valid == !amd);
        CHECK(gp_gpu_has(g, GPF_FB_RESERVED) == !amd);
        CHECK(gp_gpu_has(g, GPF_REMAP_COR) == hopper);
        CHECK(gp_gpu_has(g, GPF_RETIRED_SBE) == (!hopper && !amd));
        CHECK(gp_gpu_has(g, GPF_MIG_MODE) == hopper);
        CHECK(gp_gpu_has(g, GPF_MEMORY_TEMP)); /* all three have HBM */
        CHECK(!gp_gpu_has(g, GPF_FAN_SPEED));
        CHECK(gp_gpu_has(g, GPF_TOTAL_ENERGY) && gp_gpu_has(g, GPF_POWER_LIMIT));
        CHECK(gp_gpu_has(g, GPF_SM_CLOCK_MAX) && gp_gpu_has(g, GPF_GPU_UTIL));
        CHECK_DBL(g->val[GPF_MEMORY_TOTAL], (double)m->memory_bytes, 0);
        CHECK_INT(g->vendor, m->vendor);
        check_sane(g, true);
    }
    /* a GDDR card with a fan: fan speed, no memory temperature, no ECC */
    void *st2 = open_sim("1x2xRTX4090", 3);
    sample_at(st2, &f, T0_MS);
    CHECK(gp_gpu_has(&f.gpus[0], GPF_FAN_SPEED));
    CHECK(!gp_gpu_has(&f.gpus[0], GPF_MEMORY_TEMP));
    CHECK(!gp_gpu_has(&f.gpus[0], GPF_ECC_SBE_VOL));
    gp_frame_free(&f);
    gp_source_simulate.close(st);
    gp_source_simulate.close(st2);
}

static void count_behaviours(void *st, unsigned seen[GP_SIM__COUNT])
{
    memset(seen, 0, GP_SIM__COUNT * sizeof *seen);
    for (unsigned i = 0; i < gp_sim_gpu_count(st); i++)
        seen[gp_sim_gpu_behaviour(st, i)]++;
}

static void test_small_fleets(void)
{
    unsigned seen[GP_SIM__COUNT];
    /* one GPU: the first fault that fits (no straggler without peers) */
    void *st = open_sim("1x1xA100", 1);
    CHECK_INT(gp_sim_gpu_behaviour(st, 0), GP_SIM_LEAKING);
    CHECK_INT(gp_sim_state_plan(st)->nfaults, 1);
    gp_source_simulate.close(st);
    /* eight GPUs on one node: every fault once, the straggler keeps peers */
    st = open_sim("1x8xH200", 99);
    count_behaviours(st, seen);
    CHECK_INT(seen[GP_SIM_COMPUTE], 2);
    for (int b = 1; b <= GP_SIM_ECC; b++)
        CHECK_INT(seen[b], 1);
    /* the powercap not beside the straggler, whole-job faults not on a shared node */
    CHECK_INT(seen[GP_SIM_POWERCAP] + seen[GP_SIM_HANG] + seen[GP_SIM_RESTART], 0);
    CHECK_STR(gp_sim_behaviour_name(GP_SIM_LEAKING), "leaking");
    CHECK_STR(gp_sim_behaviour_name(GP_SIM_THROTTLED), "throttled");
    CHECK_STR(gp_sim_behaviour_name(GP_SIM_ECC), "ecc");
    CHECK_STR(gp_sim_behaviour_name((enum gp_sim_behaviour)99), "?");
    gp_source_simulate.close(st);
    /* cards without ECC memory: no ECC fault */
    st = open_sim("1x8xRTX4090", 3);
    count_behaviours(st, seen);
    CHECK_INT(seen[GP_SIM_ECC], 0);
    CHECK_INT(seen[GP_SIM_COMPUTE], 3);
    gp_source_simulate.close(st);
}

static void test_large_fleet(void)
{
    void *st = open_sim("64x8xH100", 5);
    struct gp_frame f;
    gp_frame_init(&f);
    struct timespec a, b;
    sample_at(st, &f, T0_MS);
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < 10; i++)
        sample_at(st, &f, T0_MS + RUNNING_MS + i * 1000);
    clock_gettime(CLOCK_MONOTONIC, &b);
    CHECK_INT(f.ngpus, 512);
    CHECK_STR(f.gpus[511].node, "sim-node-63");
    CHECK_INT(f.gpus[511].index, 7);
    unsigned seen[GP_SIM__COUNT];
    count_behaviours(st, seen);
    for (int k = 1; k < GP_SIM__COUNT; k++)
        CHECK_INT(seen[k], 1); /* exactly one of each, however large the fleet */
    CHECK_INT(seen[GP_SIM_COMPUTE], 503); /* the hang's and the crash loop's other ranks compute */
    CHECK_INT(f.njobs, 512);
    CHECK_INT(f.nsteps, 511); /* the idle rank reports no steps */
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    CHECK(s < 5.0); /* ten ticks of 512 GPUs, even under ASan */
    gp_frame_free(&f);
    gp_source_simulate.close(st);
}

const struct gp_test gp_tests_simulate[] = {
    {"model_lookup", test_model_lookup},
    {"model_table_sane", test_model_table_sane},
    {"model_cloud_names", test_model_cloud_names},
    {"spec_good", test_spec_good},
    {"spec_bad", test_spec_bad},
    {"open_errors", test_open_errors},
    {"identity", test_identity},
    {"deterministic", test_deterministic},
    {"behaviours", test_behaviours},
    {"counters_and_sanity", test_counters_and_sanity},
    {"mixed_fleet_fields", test_mixed_fleet_fields},
    {"small_fleets", test_small_fleets},
    {"large_fleet", test_large_fleet},
    {0},
};
