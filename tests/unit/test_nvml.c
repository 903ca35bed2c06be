/*
 * test_nvml.c - the NVIDIA source against the stand-in libnvidia-ml.so.1.
 *
 * The source loads build/fakenvml/{full,old}/libnvidia-ml.so.1 through its
 * real dlopen path; the scenario (a tests/data/nvml scenario or one written
 * here) is named by $GPULSE_FAKENVML_SCENARIO. The fake's virtual clock
 * is moved with its exported fakenvml_advance_ms(), and its call counts
 * (fakenvml_calls) show what the source asked. Build the fakes first:
 * `make fakenvml`.
 */
#include "lib/err.h"
#include "lib/log.h"
#include "sources/nvml.h"
#include "sources/source.h"
#include "test.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#define FAKE_FULL GP_TEST_DATA_DIR "/../../build/fakenvml/full/libnvidia-ml.so.1"
#define FAKE_OLD GP_TEST_DATA_DIR "/../../build/fakenvml/old/libnvidia-ml.so.1"
#define GIB 1073741824.0

static const char *g_lib = FAKE_FULL;

static void *open_with(const char *lib, const char *scn_path, bool gpm, int want)
{
    if (access(lib, R_OK) != 0)
        gp_test_fail(__FILE__, __LINE__, "%s missing: build the stand-in NVML first (make fakenvml)", lib);
    setenv("GPULSE_FAKENVML_SCENARIO", scn_path, 1);
    gp_log_min = getenv("GP_TEST_NVML_DEBUG") ? GP_LOG_DEBUG : GP_LOG_ERROR;
    g_lib = lib;
    struct gp_source_config cfg = {.nvml_library = lib, .gpm = gpm, .interval_ms = 1000};
    void *st = NULL;
    char err[512] = "";
    int rc = gp_source_nvml.open(&cfg, &st, err, sizeof err);
    if (rc != want)
        gp_test_fail(__FILE__, __LINE__, "open: %d (%s), want %d", rc, err, want);
    return st;
}

static void *open_scn(const char *name, bool gpm)
{
    char rel[128];
    snprintf(rel, sizeof rel, "nvml/%s", name);
    return open_with(FAKE_FULL, gp_test_data(rel), gpm, GP_OK);
}

static void *fake_sym(const char *name)
{
    void *h = dlopen(g_lib, RTLD_NOW | RTLD_NOLOAD);
    CHECK(h);
    void *p = dlsym(h, name);
    CHECK(p);
    dlclose(h);
    return p;
}

static void advance(unsigned ms)
{
    void (*fn)(unsigned) = (void (*)(unsigned))fake_sym("fakenvml_advance_ms");
    fn(ms);
}

static unsigned long calls(const char *fn_name, int dev)
{
    unsigned long (*fn)(const char *, int) = (unsigned long (*)(const char *, int))fake_sym("fakenvml_calls");
    return fn(fn_name, dev);
}

static unsigned tick(void *st, struct gp_frame *f)
{
    unsigned errors = 0;
    gp_frame_reset(f);
    CHECK_INT(gp_source_nvml.sample(st, f, &errors), GP_OK);
    return errors;
}

static const struct gp_gpu_proc *find_proc(const struct gp_gpu *g, unsigned pid)
{
    for (unsigned i = 0; i < g->nprocs; i++)
        if (g->procs[i].pid == pid)
            return &g->procs[i];
    return NULL;
}

#define CHECK_VAL(g, f, v)                 \
    do {                                   \
        CHECK(gp_gpu_has((g), GPF_##f));   \
        CHECK_DBL((g)->val[GPF_##f], (v), 1e-6); \
    } while (0)

static void test_h100x8_exact_values(void)
{
    struct gp_frame f;
    gp_frame_init(&f);
    void *st = open_scn("h100x8.scn", true);
    CHECK_INT(tick(st, &f), 0);
    CHECK_INT(f.ngpus, 8);
    static const char *const bus[8] = {"18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"};
    static const unsigned long long events[8] = {0x1, 0, 0, 0x4, 0, 0x48, 0, 0};
    for (unsigned i = 0; i < 8; i++) {
        const struct gp_gpu *g = &f.gpus[i];
        char s[64];
        CHECK_INT(g->index, i);
        CHECK(!g->lost);
        CHECK_INT(g->mig_gi, -1);
        snprintf(s, sizeof s, "GPU-8f6e2b10-0000-4000-8000-00000000000%u", i);
        CHECK_STR(g->uuid, s);
        snprintf(s, sizeof s, "00000000:%s:00.0", bus[i]);
        CHECK_STR(g->pci_bus_id, s);
        snprintf(s, sizeof s, "nvidia%u", i);
        CHECK_STR(g->device, s);
        CHECK_STR(g->model, "NVIDIA H100 80GB HBM3");
        CHECK_STR(g->driver, "550.54.15");
        CHECK_VAL(g, FB_USED, 8192.0 * (i + 1));
        CHECK_VAL(g, FB_RESERVED, 512);
        CHECK_VAL(g, FB_FREE, 81559.0 - 512 - 8192.0 * (i + 1));
        CHECK_VAL(g, MEMORY_TOTAL, 85520809984.0);
        CHECK_VAL(g, MEMORY_USED, 8 * GIB * (i + 1));
        CHECK_VAL(g, GPU_UTIL, 10.0 * (i + 1));
        CHECK_VAL(g, MEM_COPY_UTIL, 5.0 * (i + 1));
        CHECK_VAL(g, ENC_UTIL, i);
        CHECK_VAL(g, DEC_UTIL, 2.0 * i);
        CHECK_VAL(g, GPU_TEMP, 40 + i);
        CHECK_VAL(g, MEMORY_TEMP, 50 + i);
        CHECK_VAL(g, POWER_USAGE, 300 + 10.0 * i);
        CHECK_VAL(g, POWER_LIMIT, 700);
        CHECK_VAL(g, TOTAL_ENERGY, 1e9 + 1e6 * i);
        CHECK_VAL(g, SM_CLOCK, 1500 + 10 * i);
        CHECK_VAL(g, MEM_CLOCK, 2619);
        CHECK_VAL(g, SM_CLOCK_MAX, 1980e6);
        CHECK_VAL(g, MEM_CLOCK_MAX, 2619e6);
        CHECK(g->clock_events_valid);
        CHECK_INT(g->clock_events, events[i]);
        CHECK_VAL(g, PCIE_TX_TOTAL, 1e9 * (i + 1));
        CHECK_VAL(g, PCIE_RX_TOTAL, 2e9 * (i + 1));
        CHECK_VAL(g, PCIE_REPLAY, i);
        CHECK_VAL(g, POWER_VIOLATION, 1000.0 * i);
        CHECK_VAL(g, THERMAL_VIOLATION, 500.0 * i);
        CHECK_VAL(g, ECC_SBE_VOL, i);
        CHECK_VAL(g, ECC_DBE_VOL, 0);
        CHECK_VAL(g, ECC_SBE_AGG, 10.0 * i);
        CHECK_VAL(g, ECC_DBE_AGG, 0);
        CHECK_VAL(g, REMAP_COR, i);
        CHECK_VAL(g, REMAP_UNC, 0);
        CHECK_VAL(g, REMAP_FAILURE, 0);
        CHECK_VAL(g, MIG_MODE, 0);
        CHECK(!gp_gpu_has(g, GPF_FAN_SPEED));
        CHECK(!gp_gpu_has(g, GPF_RETIRED_SBE));
        CHECK(!gp_gpu_has(g, GPF_RETIRED_PENDING));
        CHECK(!gp_gpu_has(g, GPF_XID_ERRORS));
        CHECK(!gp_gpu_has(g, GPF_PROF_SM_ACTIVE)); /* GPM needs two samples */
        CHECK(!gp_gpu_has(g, GPF_PROF_PCIE_TX));
    }
    static const unsigned nprocs[8] = {2, 1, 0, 3, 1, 0, 1, 0};
    for (unsigned i = 0; i < 8; i++)
        CHECK_INT(f.gpus[i].nprocs, nprocs[i]);
    const struct gp_gpu_proc *p = find_proc(&f.gpus[0], 1000);
    CHECK(p && p->mem_valid && p->util_valid);
    CHECK_DBL((double)p->mem_bytes, 6 * GIB, 0);
    CHECK_DBL(p->sm_util, 40, 0);
    CHECK_DBL(p->mem_util, 20, 0);
    p = find_proc(&f.gpus[0], 1001);
    CHECK(p && p->util_valid && p->sm_util == 10 && p->mem_util == 5);
    p = find_proc(&f.gpus[3], 1302); /* idle: no sample, 0 % */
    CHECK(p && p->util_valid && p->sm_util == 0 && p->mem_bytes == 4 * (uint64_t)GIB);
    p = find_proc(&f.gpus[6], 1600);
    CHECK(p && p->sm_util == 90 && p->mem_util == 45 && p->mem_bytes == 30 * (uint64_t)GIB);

    /* Second tick one second later: GPM from the two samples. */
    advance(1000);
    CHECK_INT(tick(st, &f), 0);
    for (unsigned i = 0; i < 8; i++) {
        const struct gp_gpu *g = &f.gpus[i];
        CHECK_VAL(g, PROF_GR_ACTIVE, (50 + i) / 100.0);
        CHECK_VAL(g, PROF_SM_ACTIVE, (40 + i) / 100.0);
        CHECK_VAL(g, PROF_SM_OCCUPANCY, (20 + i) / 100.0);
        CHECK_VAL(g, PROF_TENSOR, (30 + i) / 100.0);
        CHECK_VAL(g, TENSOR_HMMA, (25 + i) / 100.0);
        CHECK_VAL(g, PROF_DRAM, (35 + i) / 100.0);
        CHECK_VAL(g, PROF_FP64, (1 + i) / 100.0);
        CHECK_VAL(g, PROF_FP32, (10 + i) / 100.0);
        CHECK_VAL(g, PROF_FP16, (15 + i) / 100.0);
        CHECK_DBL(g->val[GPF_PROF_PCIE_TX], 100.0 * (i + 1) * 1048576, 1e-3);
        CHECK_DBL(g->val[GPF_PROF_PCIE_RX], 200.0 * (i + 1) * 1048576, 1e-3);
        CHECK_DBL(g->val[GPF_PROF_NVLINK_RX], 1000.0 * (i + 1) * 1048576, 1e-2);
        CHECK_DBL(g->val[GPF_PROF_NVLINK_TX], 1500.0 * (i + 1) * 1048576, 1e-2);
        CHECK_VAL(g, ECC_SBE_AGG, 10.0 * i); /* slow set carried over */
    }
    /* process utilization: new samples one second later */
    p = find_proc(&f.gpus[4], 1400);
    CHECK(p && p->util_valid && p->sm_util == 70);
    gp_source_nvml.close(st);
    gp_frame_free(&f);
}

static void test_gpm_off_by_config(void)
{
    struct gp_frame f;
    gp_frame_init(&f);
    void *st = open_scn("h100x8.scn", false);
    tick(st, &f);
    advance(1000);
    CHECK_INT(tick(st, &f), 0);
    CHECK(!gp_gpu_has(&f.gpus[0], GPF_PROF_SM_ACTIVE));
    CHECK_INT(calls("nvmlGpmSampleGet", 0), 0);
    gp_source_nvml.close(st);
    gp_frame_free(&f);
}

static void test_old_driver_fallbacks(void)
{
    struct gp_frame f;
    gp_frame_init(&f);
    void *st = open_with(FAKE_OLD, gp_test_data("nvml/old_driver.scn"), true, GP_OK);
    CHECK_INT(tick(st, &f), 0);
    advance(1000);
    CHECK_INT(tick(st, &f), 0);
    CHECK_INT(f.ngpus, 2);
    const struct gp_gpu *g = &f.gpus[0];
    CHECK_STR(g->model, "Tesla V100-SXM2-32GB");
    CHECK_STR(g->pci_bus_id, "00000000:1A:00.0"); /* built from the legacy layout */
    CHECK_STR(g->driver, "470.223.02");
    CHECK_VAL(g, FB_USED, 4096);        /* v1: used includes reserved */
    CHECK(!gp_gpu_has(g, GPF_FB_RESERVED)); /* only v2 tells */
    CHECK_VAL(g, GPU_UTIL, 55);
    CHECK_VAL(g, POWER_USAGE, 210);
    CHECK(g->clock_events_valid && g->clock_events == 0x4); /* ThrottleReasons fallback */
    CHECK_VAL(g, RETIRED_SBE, 2);
    CHECK_VAL(g, POWER_VIOLATION, 3000);
    CHECK(!gp_gpu_has(g, GPF_MEMORY_TEMP));
    CHECK(!gp_gpu_has(g, GPF_PCIE_TX_TOTAL));
    CHECK(!gp_gpu_has(g, GPF_REMAP_UNC));
    CHECK(!gp_gpu_has(g, GPF_FAN_SPEED));
    CHECK(!gp_gpu_has(g, GPF_MIG_MODE) || g->val[GPF_MIG_MODE] == 0);
    CHECK(!gp_gpu_has(g, GPF_PROF_SM_ACTIVE)); /* no GPM symbols */
    CHECK_INT(g->nprocs, 2);
    const struct gp_gpu_proc *p = find_proc(g, 4001); /* 16-byte v1 entries */
    CHECK(p && p->mem_bytes == (uint64_t)GIB && p->util_valid && p->sm_util == 20);
    CHECK_INT(calls("nvmlDeviceGetComputeRunningProcesses", 0), 2);
    CHECK_INT(calls("nvmlInit", -1), 1);
    CHECK_VAL(&f.gpus[1], FB_USED, 1024);
    /* NOT_SUPPORTED is remembered: fan asked once, not every tick */
    CHECK_INT(calls("nvmlDeviceGetFanSpeed", 0), 1);
    gp_source_nvml.close(st);
    gp_frame_free(&f);
}

static void test_lost_gpu_mid_run(void)
{
    struct gp_frame f;
    gp_frame_init(&f);
    void *st = open_scn("lost.scn", true);
    CHECK_INT(tick(st, &f), 0);
    CHECK_INT(f.ngpus, 4);
    CHECK(!f.gpus[2].lost);
    CHECK_VAL(&f.gpus[2], GPU_UTIL, 30);
    advance(1000);
    CHECK_INT(tick(st, &f), 1); /* one error: the loss */
    CHECK_INT(f.ngpus, 4);
    const struct gp_gpu *g = &f.gpus[2];
    CHECK(g->lost);
    CHECK_STR(g->uuid, "GPU-2a000000-0000-4000-8000-000000000002");
    CHECK_STR(g->pci_bus_id, "00000000:B1:00.0");
    CHECK_INT(g->index, 2);
    for (int k = 0; k < GPF__COUNT; k++)
        CHECK(!gp_gpu_has(g, (enum gp_gpu_field)k));
    CHECK_INT(g->nprocs, 0);
    CHECK_VAL(&f.gpus[0], GPU_UTIL, 10);
    CHECK_VAL(&f.gpus[3], GPU_UTIL, 40);
    CHECK_INT(f.gpus[0].nprocs, 1);
    unsigned long n = calls("nvmlDeviceGetMemoryInfo_v2", 2);
    advance(1000);
    CHECK_INT(tick(st, &f), 0); /* counted once, not every tick */
    CHECK(f.gpus[2].lost);
    CHECK_INT(calls("nvmlDeviceGetMemoryInfo_v2", 2), n); /* never called again */
    CHECK_VAL(&f.gpus[1], GPU_UTIL, 20);
    gp_source_nvml.close(st);
    gp_frame_free(&f);
}

static unsigned long long xid_count(const struct gp_gpu *g, unsigned xid)
{
    for (unsigned i = 0; i < g->nxids; i++)
        if (g->xids[i].xid == xid)
            return g->xids[i].count;
    return 0;
}

static void test_events_over_time(void)
{
    struct gp_frame f;
    gp_frame_init(&f);
    gp_nvml_slow_interval_ms = 0; /* read ECC every tick */
    void *st = open_scn("events.scn", true);
    CHECK_INT(tick(st, &f), 0);
    CHECK(!gp_gpu_has(&f.gpus[0], GPF_XID_ERRORS));
    CHECK_INT(f.gpus[0].nxids, 0);
    CHECK_VAL(&f.gpus[1], ECC_DBE_VOL, 0);
    CHECK_INT(f.gpus[0].nprocs, 1);
    CHECK_INT(f.gpus[1].nprocs, 0);

    advance(1000);
    CHECK_INT(tick(st, &f), 0);
    CHECK_VAL(&f.gpus[0], XID_ERRORS, 13);
    CHECK_INT(xid_count(&f.gpus[0], 13), 1);
    CHECK_VAL(&f.gpus[1], XID_ERRORS, 48);
    CHECK_INT(xid_count(&f.gpus[1], 48), 1);
    CHECK_VAL(&f.gpus[1], ECC_DBE_VOL, 1);
    CHECK_VAL(&f.gpus[1], ECC_DBE_AGG, 1);

    advance(1000);
    CHECK_INT(tick(st, &f), 0);
    CHECK_VAL(&f.gpus[0], XID_ERRORS, 31);
    CHECK_INT(xid_count(&f.gpus[0], 13), 2);
    CHECK_INT(xid_count(&f.gpus[0], 31), 1);
    CHECK_INT(f.gpus[0].nxids, 2);
    CHECK_INT(f.gpus[1].nprocs, 1);
    CHECK_INT(f.gpus[1].procs[0].pid, 6100);
    CHECK_DBL((double)f.gpus[1].procs[0].mem_bytes, 2 * GIB, 0);

    advance(1000);
    CHECK_INT(tick(st, &f), 0);
    CHECK_INT(f.gpus[0].nprocs, 0);
    CHECK_VAL(&f.gpus[1], REMAP_UNC, 1);
    CHECK_VAL(&f.gpus[1], ECC_SBE_VOL, 7);
    CHECK_INT(xid_count(&f.gpus[0], 13), 2); /* nothing new: counts stay */
    CHECK_INT(calls("nvmlEventSetWait_v2", -1) > 0, 1);
    gp_source_nvml.close(st);
    gp_frame_free(&f);
}

static void test_slow_fields_carried_over(void)
{
    struct gp_frame f;
    gp_frame_init(&f);
    gp_nvml_slow_interval_ms = 10000;
    void *st = open_scn("events.scn", false);
    tick(st, &f);
    unsigned long n = calls("nvmlDeviceGetFieldValues", 1);
    advance(1000);
    CHECK_INT(tick(st, &f), 0);
    CHECK_VAL(&f.gpus[1], ECC_DBE_VOL, 0); /* changed in the fake, not re-read yet: still valid */
    CHECK_INT(calls("nvmlDeviceGetFieldValues", 1), n + 1); /* fast set only */
    gp_source_nvml.close(st);
    gp_frame_free(&f);
}

static void test_mig_instances(void)
{
    struct gp_frame f;
    gp_frame_init(&f);
    void *st = open_scn("mig.scn", true);
    CHECK_INT(tick(st, &f), 0);
    CHECK_INT(f.ngpus, 4); /* gpu0, its two instances, gpu1 */
    const struct gp_gpu *g = &f.gpus[0];
    CHECK_INT(g->mig_gi, -1);
    CHECK_VAL(g, MIG_MODE, 1);
    CHECK(!gp_gpu_has(g, GPF_GPU_UTIL)); /* unsupported in MIG mode */
    CHECK_VAL(g, GPU_TEMP, 45);
    const struct gp_gpu *m = &f.gpus[1];
    CHECK_INT(m->index, 0);
    CHECK_INT(m->mig_gi, 1);
    CHECK_STR(m->mig_profile, "3g.20gb");
    CHECK_STR(m->uuid, "MIG-5d000000-0000-4000-8000-000000000001");
    CHECK_STR(m->model, "NVIDIA A100-SXM4-40GB");
    CHECK_STR(m->pci_bus_id, "00000000:07:00.0");
    CHECK_STR(m->device, "nvidia0");
    CHECK_VAL(m, FB_USED, 1024);
    CHECK_VAL(m, MEMORY_TOTAL, 20937965568.0);
    CHECK(!gp_gpu_has(m, GPF_GPU_TEMP));
    CHECK_INT(m->nprocs, 1);
    CHECK_INT(m->procs[0].pid, 7000);
    m = &f.gpus[2];
    CHECK_INT(m->mig_gi, 7);
    CHECK_STR(m->mig_profile, "1g.5gb");
    CHECK_VAL(m, FB_USED, 512);
    CHECK_INT(m->procs[0].pid, 7001);
    g = &f.gpus[3];
    CHECK_INT(g->index, 1);
    CHECK_VAL(g, MIG_MODE, 0);
    CHECK_VAL(g, GPU_UTIL, 33);
    CHECK(g->nprocs == 1 && g->procs[0].util_valid && g->procs[0].sm_util == 33);
    gp_source_nvml.close(st);
    gp_frame_free(&f);
}

static void test_missing_library(void)
{
    struct gp_source_config cfg = {.nvml_library = "/nonexistent/dir/libnvidia-ml.so.1"};
    void *st = (void *)&cfg;
    char err[512] = "";
    gp_log_min = GP_LOG_ERROR;
    CHECK_INT(gp_source_nvml.open(&cfg, &st, err, sizeof err), GP_ENODEV);
    CHECK(st == NULL);
    CHECK_CONTAINS(err, "/nonexistent/dir/libnvidia-ml.so.1");
    gp_source_nvml.close(NULL);
}

static void test_library_from_env(void)
{
    setenv("GPULSE_NVML_LIBRARY", FAKE_FULL, 1);
    setenv("GPULSE_FAKENVML_SCENARIO", gp_test_data("nvml/lost.scn"), 1);
    gp_log_min = GP_LOG_ERROR;
    struct gp_source_config cfg = {.nvml_library = ""};
    void *st = NULL;
    char err[512] = "";
    CHECK_INT(gp_source_nvml.open(&cfg, &st, err, sizeof err), GP_OK);
    struct gp_frame f;
    gp_frame_init(&f);
    g_lib = FAKE_FULL;
    CHECK_INT(tick(st, &f), 0);
    CHECK_INT(f.ngpus, 4);
    gp_source_nvml.close(st);
    gp_frame_free(&f);
}

static const char *write_scn(const char *text)
{
    static char path[512];
    const char *dir = gp_test_tmpdir();
    gp_test_write_file(dir, "t.scn", text);
    snprintf(path, sizeof path, "%s/t.scn", dir);
    return path;
}

#define ONE_GPU                                                                             \
    "gpu 0\n name \"NVIDIA H100 80GB HBM3\"\n mem_total 85520809984\n mem_used 1073741824\n" \
    " util_gpu 50\n power 200000\n mem_temp 60\n temp 50\n proc 10 1073741824 50 10\n"

static void test_fault_injection(void)
{
    struct gp_frame f;
    gp_frame_init(&f);
    void *st = open_with(FAKE_FULL,
                         write_scn(ONE_GPU "fail nvmlDeviceGetPowerUsage gpu 0 with 999\n"
                                           "fail field82 gpu 0 with 999\n"),
                         true, GP_OK);
    CHECK_INT(tick(st, &f), 2);
    const struct gp_gpu *g = &f.gpus[0];
    CHECK(!gp_gpu_has(g, GPF_POWER_USAGE));
    CHECK(!gp_gpu_has(g, GPF_MEMORY_TEMP));
    CHECK_VAL(g, GPU_TEMP, 50);
    CHECK_VAL(g, GPU_UTIL, 50);
    CHECK_INT(tick(st, &f), 2); /* a failure (not NOT_SUPPORTED) is asked again */
    CHECK_INT(calls("nvmlDeviceGetPowerUsage", 0), 2);
    gp_source_nvml.close(st);
    gp_frame_free(&f);
}

static void test_sanity_checks(void)
{
    struct gp_frame f;
    gp_frame_init(&f);
    void *st = open_with(FAKE_FULL,
                         write_scn("gpu 0\n mem_total 1000\n mem_used 2000\n util_gpu 150\n util_mem 10\n"
                                   "gpu 1\n mem_total 85520809984\n mem_used 1073741824\n"
                                   " proc 20 99999999999999 10 10\n proc 21 1024 150 10\n"
                                   " proc 22 2048 30 10\n"),
                         false, GP_OK);
    /* gpu0: util 150 dropped, used > total dropped; gpu1: process > total, sample util > 100 */
    CHECK_INT(tick(st, &f), 4);
    CHECK(!gp_gpu_has(&f.gpus[0], GPF_GPU_UTIL));
    CHECK_VAL(&f.gpus[0], MEM_COPY_UTIL, 10);
    CHECK(!gp_gpu_has(&f.gpus[0], GPF_FB_USED));
    CHECK_INT(f.gpus[1].nprocs, 2);
    const struct gp_gpu_proc *p = find_proc(&f.gpus[1], 21);
    CHECK(p && p->util_valid && p->sm_util == 0);
    p = find_proc(&f.gpus[1], 22);
    CHECK(p && p->sm_util == 30);
    gp_source_nvml.close(st);
    gp_frame_free(&f);
}

static void test_r535_process_stride(void)
{
    struct gp_frame f;
    gp_frame_init(&f);
    void *st = open_with(FAKE_FULL,
                         write_scn("driver 535.54.03\n" ONE_GPU " proc 11 2048 0 0\n proc 12 4096 0 0\n"),
                         false, GP_OK);
    CHECK_INT(tick(st, &f), 0);
    CHECK_INT(f.gpus[0].nprocs, 1);
    CHECK_INT(f.gpus[0].procs[0].pid, 10);
    CHECK_DBL((double)f.gpus[0].procs[0].mem_bytes, GIB, 0);
    gp_source_nvml.close(st);
    gp_frame_free(&f);
}

static void test_driver_not_loaded(void)
{
    char err[512] = "";
    setenv("GPULSE_FAKENVML_SCENARIO", write_scn("init_error 9\n"), 1);
    gp_log_min = GP_LOG_ERROR;
    struct gp_source_config cfg = {.nvml_library = FAKE_FULL};
    void *st = NULL;
    CHECK_INT(gp_source_nvml.open(&cfg, &st, err, sizeof err), GP_ENODEV);
    CHECK_CONTAINS(err, "driver");
    CHECK(st == NULL);
}

static void test_malformed_scenarios(void)
{
    static const char *const bad[] = {
        "",
        "# only a comment\n",
        "gpu 0\n util_gpu -1\n",
        "gpu 0\n util_gpu 12abc\n",
        "gpu 0\n bogus 1\n",
        "util_gpu 5\n",
        "gpu 1\n",
        "gpu 0\ngpu 0\n",
        "gpu 0\n name \"unterminated\n",
        "gpu 0\n name a\"b\n",
        "gpu 0\n name \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"\n",
        "gpu 0\nat 100 gpu 5 util_gpu 1\n",
        "gpu 0\nat x gpu 0 util_gpu 1\n",
        "gpu 0\nat 100 gpu 0 proc_remove 77\n",
        "gpu 0\nat 100 gpu 0\n",
        "gpu 0\n proc 1 2 3\n",
        "gpu 0\n gpm_metric 0 5\n",
        "gpu 0\n gpm_metric 7 nan\n",
        "gpu 0\nmig 3 0\n",
        "gpu 0\nmig 0 9\n",
        "gpu 0\nfail nvmlDeviceGetName gpu 0 with\n",
        "gpu 0\n a b c d e f g h i j k l\n",
        "gpu 0\n util_gpu 99999999999999999999999\n",
    };
    gp_log_min = GP_LOG_ERROR;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("GPULSE_FAKENVML_SCENARIO", write_scn(bad[i]), 1);
        struct gp_source_config cfg = {.nvml_library = FAKE_FULL};
        void *st = NULL;
        char err[512] = "";
        int rc = gp_source_nvml.open(&cfg, &st, err, sizeof err);
        if (rc != GP_EIO)
            gp_test_fail(__FILE__, __LINE__, "scenario %zu: open %d (%s), want GP_EIO", i, rc, err);
        CHECK_CONTAINS(err, "nvmlInit");
        CHECK(st == NULL);
    }
    /* a NUL byte */
    const char *path = write_scn("gpu 0\n");
    FILE *fp = fopen(path, "ab");
    CHECK(fp);
    fputc('\0', fp);
    fclose(fp);
    setenv("GPULSE_FAKENVML_SCENARIO", path, 1);
    struct gp_source_config cfg = {.nvml_library = FAKE_FULL};
    void *st = NULL;
    char err[512];
    CHECK_INT(gp_source_nvml.open(&cfg, &st, err, sizeof err), GP_EIO);
    /* no scenario at all */
    setenv("GPULSE_FAKENVML_SCENARIO", "/nonexistent.scn", 1);
    CHECK_INT(gp_source_nvml.open(&cfg, &st, err, sizeof err), GP_EIO);
}

/* The fake enforces the versioned-struct ABI the source must respect. */
static void test_fake_abi_traps(void)
{
    setenv("GPULSE_FAKENVML_SCENARIO", gp_test_data("nvml/h100x8.scn"), 1);
    void *h = dlopen(FAKE_FULL, RTLD_NOW | RTLD_LOCAL);
    CHECK(h);
    int (*init)(void) = (int (*)(void))dlsym(h, "nvmlInit_v2");
    int (*handle)(unsigned, void **) = (int (*)(unsigned, void **))dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
    int (*mem2)(void *, void *) = (int (*)(void *, void *))dlsym(h, "nvmlDeviceGetMemoryInfo_v2");
    int (*gpmsup)(void *, unsigned *) = (int (*)(void *, unsigned *))dlsym(h, "nvmlGpmQueryDeviceSupport");
    int (*shut)(void) = (int (*)(void))dlsym(h, "nvmlShutdown");
    CHECK(init && handle && mem2 && gpmsup && shut);
    CHECK_INT(init(), 0);
    void *dev = NULL;
    CHECK_INT(handle(0, &dev), 0);
    unsigned long long m[5] = {0};
    m[0] = 2; /* the doc comment's "2": fails like the real driver */
    CHECK_INT(mem2(dev, m), 13);
    m[0] = 0x02000028;
    CHECK_INT(mem2(dev, m), 0);
    unsigned sup[2] = {0x01000008, 0}; /* encoded version: rejected, GPM wants raw 1 */
    CHECK_INT(gpmsup(dev, sup), 25);
    sup[0] = 1;
    CHECK_INT(gpmsup(dev, sup), 0);
    CHECK_INT(sup[1], 1);
    CHECK_INT(shut(), 0);
    dlclose(h);
}

/* The ECC family of ecc_dedicated.scn's two GPUs, whatever path read it. */
static void check_ecc_values(const struct gp_frame *f)
{
    CHECK_INT(f->ngpus, 2);
    const struct gp_gpu *g = &f->gpus[0];
    CHECK_VAL(g, ECC_SBE_VOL, 11);
    CHECK_VAL(g, ECC_DBE_VOL, 2);
    CHECK_VAL(g, ECC_SBE_AGG, 130);
    CHECK_VAL(g, ECC_DBE_AGG, 4);
    CHECK_VAL(g, RETIRED_SBE, 3);
    CHECK_VAL(g, RETIRED_DBE, 1);
    CHECK_VAL(g, RETIRED_PENDING, 1);
    CHECK_VAL(g, REMAP_COR, 5);
    CHECK_VAL(g, REMAP_UNC, 6);
    CHECK_VAL(g, REMAP_FAILURE, 1);
    CHECK_VAL(g, REMAP_PENDING, 1);
    CHECK_VAL(g, PCIE_LINK_GEN, 4);
    CHECK_VAL(g, PCIE_MAX_LINK_GEN, 4);
    CHECK_VAL(g, PCIE_LINK_WIDTH, 8);
    CHECK_VAL(g, PCIE_MAX_LINK_WIDTH, 16);
    g = &f->gpus[1];
    CHECK_VAL(g, ECC_SBE_VOL, 21);
    CHECK_VAL(g, ECC_DBE_VOL, 0);
    CHECK_VAL(g, ECC_SBE_AGG, 230);
    CHECK_VAL(g, ECC_DBE_AGG, 7);
    CHECK_VAL(g, RETIRED_SBE, 0);
    CHECK_VAL(g, RETIRED_DBE, 0);
    CHECK_VAL(g, RETIRED_PENDING, 0);
    CHECK_VAL(g, REMAP_COR, 9);
    CHECK_VAL(g, REMAP_UNC, 0);
    CHECK_VAL(g, REMAP_FAILURE, 0);
    CHECK_VAL(g, REMAP_PENDING, 0);
    /* a driver without the link readings: unsupported, not 0 */
    CHECK(!gp_gpu_has(g, GPF_PCIE_LINK_WIDTH) && !gp_gpu_has(g, GPF_PCIE_MAX_LINK_GEN));
}

/* Issue 15 #12: a driver whose field values lack the ECC ids (per entry
 * NOT_SUPPORTED, or the whole call failing) still gives every ECC,
 * retired-page and remapped-row reading, through the dedicated calls,
 * with the values field values give on a driver that has them. */
static void test_ecc_without_field_ids(void)
{
    struct gp_frame f;
    gp_frame_init(&f);
    gp_nvml_slow_interval_ms = 10000;
    void *st = open_scn("ecc_dedicated.scn", false);
    CHECK_INT(tick(st, &f), 0);
    check_ecc_values(&f);
    CHECK_INT(calls("nvmlDeviceGetTotalEccErrors", 0), 4);
    CHECK_INT(calls("nvmlDeviceGetRetiredPages", 0), 2);
    CHECK_INT(calls("nvmlDeviceGetRetiredPagesPendingStatus", 0), 1);
    CHECK_INT(calls("nvmlDeviceGetRemappedRows", 0), 1);
    advance(1000);
    CHECK_INT(tick(st, &f), 0);
    check_ecc_values(&f); /* carried between slow refreshes, like field values */
    CHECK_INT(calls("nvmlDeviceGetTotalEccErrors", 0), 4);
    gp_source_nvml.close(st);

    /* the same scenario with the ids offered: field values, no dedicated call */
    const char *scn = gp_test_repo_text("tests/data/nvml/ecc_dedicated.scn");
    const char *sw = strstr(scn, "ecc_fields absent\n");
    CHECK(sw);
    size_t n = strlen(scn);
    char *text = malloc(n + 128);
    CHECK(text);
    snprintf(text, n + 128, "%.*secc_fields present\n%s", (int)(sw - scn), scn, sw + 18);
    st = open_with(FAKE_FULL, write_scn(text), false, GP_OK);
    CHECK_INT(tick(st, &f), 0);
    check_ecc_values(&f);
    CHECK_INT(calls("nvmlDeviceGetTotalEccErrors", 0), 0);
    CHECK_INT(calls("nvmlDeviceGetRemappedRows", 0), 0);
    gp_source_nvml.close(st);

    /* field values failing as a whole: the dedicated calls again */
    char *t2 = malloc(n + 256);
    CHECK(t2);
    snprintf(t2, n + 256, "%sfail nvmlDeviceGetFieldValues with 3\n", text);
    st = open_with(FAKE_FULL, write_scn(t2), false, GP_OK);
    CHECK_INT(tick(st, &f), 0);
    check_ecc_values(&f);
    CHECK_INT(calls("nvmlDeviceGetTotalEccErrors", 1), 4);
    gp_source_nvml.close(st);

    /* ECC mode off: the dedicated call answers NOT_SUPPORTED once, no series */
    snprintf(t2, n + 256, "%sfail nvmlDeviceGetFieldValues with 3\nfail nvmlDeviceGetTotalEccErrors with 3\n",
             text);
    st = open_with(FAKE_FULL, write_scn(t2), false, GP_OK);
    CHECK_INT(tick(st, &f), 0);
    CHECK(!gp_gpu_has(&f.gpus[0], GPF_ECC_SBE_VOL) && !gp_gpu_has(&f.gpus[0], GPF_ECC_DBE_AGG));
    CHECK_VAL(&f.gpus[0], REMAP_COR, 5);
    advance(20000);
    CHECK_INT(tick(st, &f), 0);
    CHECK_INT(calls("nvmlDeviceGetTotalEccErrors", 0), 1); /* remembered unsupported */
    gp_source_nvml.close(st);
    free(t2);
    free(text);
    gp_frame_free(&f);
}

const struct gp_test gp_tests_nvml[] = {
    {"h100x8_exact_values", test_h100x8_exact_values},
    {"gpm_off_by_config", test_gpm_off_by_config},
    {"old_driver_fallbacks", test_old_driver_fallbacks},
    {"lost_gpu_mid_run", test_lost_gpu_mid_run},
    {"events_over_time", test_events_over_time},
    {"slow_fields_carried_over", test_slow_fields_carried_over},
    {"mig_instances", test_mig_instances},
    {"missing_library", test_missing_library},
    {"library_from_env", test_library_from_env},
    {"fault_injection", test_fault_injection},
    {"sanity_checks", test_sanity_checks},
    {"r535_process_stride", test_r535_process_stride},
    {"driver_not_loaded", test_driver_not_loaded},
    {"malformed_scenarios", test_malformed_scenarios},
    {"fake_abi_traps", test_fake_abi_traps},
    {"ecc_without_field_ids", test_ecc_without_field_ids},
    {0},
};
