/* test_check.c - gpulse check's pieces: the kernel log's XID lines
 * (sources/kmsg_xid.h), good and malformed, and the preflight's checks
 * (check/check.h) on made-up frames: one fault at a time gives one failed
 * item with the catalog's fault and action. */
#include "check/check.h"
#include "lib/err.h"
#include "test.h"

#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static int parse(const char *s, struct gp_kxid *x)
{
    return gp_kxid_parse(s, strlen(s), x);
}

static void test_kmsg_good(void)
{
    struct gp_kxid x;
    CHECK_INT(parse("4,1056,5140900,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.", &x), GP_OK);
    CHECK_INT(x.ts_us, 5140900);
    CHECK_INT(x.domain, 0);
    CHECK_INT(x.bus, 0x3b);
    CHECK_INT(x.dev, 0);
    CHECK_INT(x.xid, 79);
    CHECK(gp_kxid_matches_bus(&x, "00000000:3B:00.0"));
    CHECK(!gp_kxid_matches_bus(&x, "00000000:3c:00.0"));
    CHECK(!gp_kxid_matches_bus(&x, "garbage"));
    /* newer kernels add fields after FLAGS */
    CHECK_INT(parse("6,339,17,-,caller=T1;NVRM: Xid (PCI:0001:18:01): 48, pid=7, DBE", &x), GP_OK);
    CHECK_INT(x.ts_us, 17);
    CHECK_INT(x.domain, 1);
    CHECK_INT(x.dev, 1);
    CHECK_INT(x.xid, 48);
    /* dmesg's form, and an older driver without "PCI:" */
    CHECK_INT(parse("[ 1234.500000] NVRM: Xid (0000:18:00): 13, Graphics Exception", &x), GP_OK);
    CHECK_INT(x.ts_us, 1234500000);
    CHECK_INT(x.xid, 13);
    /* no time at all (journalctl -o cat): parsed, ts -1 */
    CHECK_INT(parse("NVRM: Xid (PCI:0000:18:00): 94", &x), GP_OK);
    CHECK_INT(x.ts_us, -1);
    CHECK_INT(x.xid, 94);
    /* other lines are not XIDs */
    CHECK_INT(parse("6,1,2,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15", &x), GP_ENOTFOUND);
    CHECK_INT(parse(" SUBSYSTEM=pci", &x), GP_ENOTFOUND);
    CHECK_INT(parse("", &x), GP_ENOTFOUND);
}

static void test_kmsg_malformed(void)
{
    struct gp_kxid x = {.xid = 77};
    static const char *const bad[] = {
        "4,1056;NVRM: Xid (PCI:0000:3b:00): 79,",       /* header short of USEC */
        "4,1056,51x,-;NVRM: Xid (PCI:0000:3b:00): 79,", /* USEC not a number */
        "4,1056,5140900,-NVRM: Xid (PCI:0000:3b:00): 79", /* no ';' */
        "[1234.5] NVRM: Xid (PCI:0000:3b:00): 79",        /* dmesg time not 6 digits */
        "[ 12 NVRM: Xid (PCI:0000:3b:00): 79",
        "6,1,2,-;NVRM: Xid PCI:0000:3b:00: 79",           /* no parentheses */
        "6,1,2,-;NVRM: Xid (PCI:0000:3b): 79",            /* no device */
        "6,1,2,-;NVRM: Xid (PCI:0000:3b:20): 79",         /* device above 0x1f */
        "6,1,2,-;NVRM: Xid (PCI:0000:3bb:00): 79",        /* bus of three digits */
        "6,1,2,-;NVRM: Xid (PCI:123456789:3b:00): 79",    /* domain of nine */
        "6,1,2,-;NVRM: Xid (PCI:0000:3b:00): x79",        /* code not a number */
        "6,1,2,-;NVRM: Xid (PCI:0000:3b:00): 0",          /* code 0 */
        "6,1,2,-;NVRM: Xid (PCI:0000:3b:00): 100000",     /* code out of range */
        "6,1,2,-;NVRM: Xid (PCI:0000:3b:00): 79x",        /* code run into text */
        "6,1,2,-;NVRM: Xid (PCI:0000:3b:00):",            /* cut short */
        "6,1,2,-;NVRM: Xid",
        "99999999999999999999,1,2,-;NVRM: Xid (PCI:0000:3b:00): 79", /* PRI overflows */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (parse(bad[i], &x) != GP_EPARSE)
            gp_test_fail(__FILE__, __LINE__, "'%s' not refused as malformed", bad[i]);
    CHECK_INT(x.xid, 77); /* untouched */
}

static struct {
    struct gp_kxid x[8];
    unsigned n;
} got;

static void collect(void *ctx, const struct gp_kxid *x)
{
    (void)ctx;
    if (got.n < 8)
        got.x[got.n++] = *x;
}

/* A text file of lines: XIDs kept, a malformed one counted, a line
 * longer than the reader's buffer skipped whole. */
static void test_kmsg_file(void)
{
    char path[] = "/tmp/gp-kmsg-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "6,1,100,-;NVRM: Xid (PCI:0000:18:00): 48, pid=1\n");
    fprintf(f, "6,2,200,-;kernel: something else\n");
    fprintf(f, "6,3,300,-;NVRM: Xid (PCI:0000:18:00): bogus\n");
    fprintf(f, "6,4,400,-;");
    for (int i = 0; i < 10000; i++)
        fputc('a', f);
    fprintf(f, "NVRM: Xid (PCI:0000:28:00): 79\n");
    fprintf(f, "6,5,500,-;NVRM: Xid (PCI:0000:38:00): 64, last");
    fclose(f);
    fd = open(path, 0);
    unsigned malformed = 0;
    char err[128];
    got.n = 0;
    CHECK_INT(gp_kxid_scan_fd(fd, false, collect, NULL, &malformed, err, sizeof err), GP_OK);
    close(fd);
    unlink(path);
    CHECK_INT(got.n, 2);
    CHECK_INT(got.x[0].xid, 48);
    CHECK_INT(got.x[1].xid, 64);
    CHECK_INT(got.x[1].ts_us, 500);
    CHECK_INT(malformed, 1);
}

/* Two healthy H100s. */
static void healthy(struct gp_frame *f)
{
    gp_frame_init(f);
    f->ngpus = 2;
    f->cap_gpus = 2;
    f->gpus = calloc(2, sizeof *f->gpus);
    for (unsigned i = 0; i < 2; i++) {
        struct gp_gpu *g = &f->gpus[i];
        g->index = i;
        g->mig_gi = -1;
        g->job_idx = -1;
        snprintf(g->model, sizeof g->model, "NVIDIA H100 80GB HBM3");
        snprintf(g->uuid, sizeof g->uuid, "GPU-%u", i);
        snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "00000000:%u8:00.0", i + 1);
        snprintf(g->driver, sizeof g->driver, "550.54.15");
        g->cuda_version = 12040;
        gp_gpu_set(g, GPF_ECC_DBE_VOL, 0);
        gp_gpu_set(g, GPF_RETIRED_PENDING, 0);
        gp_gpu_set(g, GPF_REMAP_PENDING, 0);
        gp_gpu_set(g, GPF_REMAP_FAILURE, 0);
        gp_gpu_set(g, GPF_PCIE_LINK_WIDTH, 16);
        gp_gpu_set(g, GPF_PCIE_MAX_LINK_WIDTH, 16);
        gp_gpu_set(g, GPF_PCIE_LINK_GEN, 1); /* idle: stepped down, never a fault */
        gp_gpu_set(g, GPF_PCIE_MAX_LINK_GEN, 5);
        gp_gpu_set(g, GPF_GPU_TEMP, 35);
        gp_gpu_set(g, GPF_POWER_LIMIT, 700);
        g->clock_events_valid = true;
        g->clock_events = 0x1; /* gpu_idle */
    }
}

static const struct gp_check_expect expect = {.gpus = 2, .model = "H100", .driver = "550.54.15", .cuda = "12.4",
                                              .max_temp_c = 85, .min_power_pct = 90,
                                              .xid_window_ms = 24 * 3600 * 1000LL};

/* Evaluates f; exactly `failed` failed items, the first of check id with
 * the fault and action given. */
static void expect_one(struct gp_frame *f, const struct gp_check_xids *xs, enum gp_check_id id, int gpu,
                       const char *fault, enum gp_fault_action act, const char *reason)
{
    struct gp_check_result r;
    CHECK_INT(gp_check_eval(f, &expect, xs, &r), GP_OK);
    CHECK_INT(r.failed, 1);
    CHECK_INT(gp_check_exit_code(&r), 1);
    CHECK_INT(r.action, act);
    const struct gp_check_item *it = NULL;
    for (unsigned i = 0; i < r.n; i++)
        if (r.items[i].status == GP_CHECK_FAILED)
            it = &r.items[i];
    CHECK(it);
    if (it) {
        CHECK_STR(gp_check_names[it->id], gp_check_names[id]);
        CHECK_INT(it->gpu, gpu);
        CHECK_STR(it->fault ? it->fault->name : "", fault);
        CHECK_INT(it->action, act);
        CHECK_CONTAINS(it->reason, reason);
    }
    gp_check_result_free(&r);
    gp_frame_free(f);
}

static void test_eval_healthy(void)
{
    struct gp_frame f;
    healthy(&f);
    struct gp_kxid app = {.ts_us = 1000, .bus = 0x18, .xid = 13}; /* the last job's own XID */
    struct gp_check_xids xs = {.read = true, .x = &app, .n = 1, .now_us = 2000};
    struct gp_check_result r;
    CHECK_INT(gp_check_eval(&f, &expect, &xs, &r), GP_OK);
    CHECK_INT(r.failed, 0);
    CHECK_INT(r.skipped, 0);
    CHECK_INT(gp_check_exit_code(&r), 0);
    CHECK_INT(r.n, GP_CK__COUNT); /* one ok line per check */
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_check_json(&r, "n1", 1700000000000, 2, &b);
    gp_buf_putc(&b, '\0');
    CHECK_CONTAINS(b.data, "{\"node\":\"n1\",\"time\":1700000000,\"status\":\"ok\",\"action\":\"none\",\"gpus\":2,");
    CHECK_CONTAINS(b.data, "{\"check\":\"recent_xid\",\"status\":\"ok\",\"reason\":\"no hardware XID in the last 24 h (1 other XID: the application's, or asking nothing)");
    gp_buf_free(&b);
    gp_check_result_free(&r);
    gp_frame_free(&f);
}

static void test_eval_faults(void)
{
    struct gp_frame f;
    healthy(&f);
    f.ngpus = 1;
    expect_one(&f, NULL, GP_CK_GPUS, -1, "gpu_lost", GP_FA_REBOOT, "1 GPU present, 2 expected");
    healthy(&f);
    snprintf(f.gpus[1].model, sizeof f.gpus[1].model, "NVIDIA A100-SXM4-80GB");
    expect_one(&f, NULL, GP_CK_MODEL, 1, "", GP_FA_DRAIN_INSPECT, "'H100' expected");
    healthy(&f);
    f.gpus[0].lost = true;
    expect_one(&f, NULL, GP_CK_LOST, 0, "gpu_lost", GP_FA_REBOOT, "fell off the bus");
    healthy(&f);
    gp_gpu_set(&f.gpus[1], GPF_ECC_DBE_VOL, 2);
    expect_one(&f, NULL, GP_CK_ECC, 1, "ecc_uncorrectable", GP_FA_RESET_GPU, "uncorrectable ECC errors");
    healthy(&f);
    gp_gpu_set(&f.gpus[0], GPF_RETIRED_PENDING, 1);
    expect_one(&f, NULL, GP_CK_RETIRE, 0, "page_retirement_pending", GP_FA_RESET_GPU, "pending retirement");
    healthy(&f);
    gp_gpu_set(&f.gpus[1], GPF_REMAP_PENDING, 1);
    expect_one(&f, NULL, GP_CK_REMAP, 1, "row_remap_pending", GP_FA_RESET_GPU, "a row remap pending");
    healthy(&f);
    gp_gpu_set(&f.gpus[1], GPF_REMAP_PENDING, 1);
    gp_gpu_set(&f.gpus[1], GPF_REMAP_FAILURE, 1);
    expect_one(&f, NULL, GP_CK_REMAP, 1, "row_remap_failure", GP_FA_DRAIN_INSPECT, "a row remap failure");
    healthy(&f);
    gp_gpu_set(&f.gpus[0], GPF_PCIE_LINK_WIDTH, 8);
    expect_one(&f, NULL, GP_CK_PCIE, 0, "pcie_link_degraded", GP_FA_DRAIN_INSPECT, "PCIe link x8 of x16");
    healthy(&f);
    f.gpus[1].clock_events = 0x1 | 0x40;
    expect_one(&f, NULL, GP_CK_CLOCKS, 1, "throttling_persistent", GP_FA_DRAIN_INSPECT,
               "clocks held down (hw_thermal_slowdown)");
    healthy(&f);
    gp_gpu_set(&f.gpus[0], GPF_GPU_TEMP, 91);
    expect_one(&f, NULL, GP_CK_TEMP, 0, "", GP_FA_DRAIN_INSPECT, "91 °C before its job, 85 °C at most");
    healthy(&f);
    gp_gpu_set(&f.gpus[1], GPF_POWER_LIMIT, 400);
    expect_one(&f, NULL, GP_CK_POWER, 1, "", GP_FA_DRAIN_INSPECT, "power limit 400 W, below 90 % of the H100's 700 W");
    healthy(&f);
    snprintf(f.gpus[0].driver, sizeof f.gpus[0].driver, "535.104.05");
    expect_one(&f, NULL, GP_CK_DRIVER, -1, "", GP_FA_DRAIN_INSPECT, "driver 535.104.05, the fleet's is 550.54.15");
    healthy(&f);
    f.gpus[0].cuda_version = f.gpus[1].cuda_version = 12020;
    expect_one(&f, NULL, GP_CK_CUDA, -1, "", GP_FA_DRAIN_INSPECT, "the driver's CUDA is 12.2, the fleet's is 12.4");
    /* a hardware XID an hour ago on GPU 1 (bus 0x28); one 2 days ago on GPU 0 is too old */
    healthy(&f);
    int64_t now = 100LL * 3600 * 1000000;
    struct gp_kxid x[] = {{.ts_us = now - 3600LL * 1000000, .bus = 0x28, .xid = 79},
                          {.ts_us = now - 48 * 3600LL * 1000000, .bus = 0x18, .xid = 48},
                          {.ts_us = now - 60LL * 1000000, .bus = 0x28, .xid = 13}};
    struct gp_check_xids xs = {.read = true, .x = x, .n = 3, .now_us = now};
    expect_one(&f, &xs, GP_CK_XID, 1, "xid_79", GP_FA_REBOOT, "GPU 1: GPU has fallen off the bus, 1 in the last 24 h, newest 60 min ago");
}

/* Checks without their reading are skipped, with the reason, and the
 * node passes: exit 0. */
static void test_eval_skipped(void)
{
    struct gp_frame f;
    healthy(&f);
    for (unsigned i = 0; i < 2; i++) {
        memset(f.gpus[i].valid, 0, sizeof f.gpus[i].valid);
        f.gpus[i].clock_events_valid = false;
        f.gpus[i].cuda_version = 0;
    }
    struct gp_check_xids xs = {.read = false};
    snprintf(xs.why, sizeof xs.why, "cannot read the kernel log /dev/kmsg: Operation not permitted");
    struct gp_check_result r;
    CHECK_INT(gp_check_eval(&f, &expect, &xs, &r), GP_OK);
    CHECK_INT(r.failed, 0);
    CHECK_INT(r.skipped, 9);
    CHECK_INT(gp_check_exit_code(&r), 0);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_check_text(&r, "n1", &b);
    gp_buf_putc(&b, '\0');
    CHECK_CONTAINS(b.data, "skipped recent_xid               cannot read the kernel log /dev/kmsg: Operation not permitted\n");
    CHECK_CONTAINS(b.data, "skipped cuda_version             NVML does not say the driver's CUDA version\n");
    CHECK_CONTAINS(b.data, "n1: ready (9 skipped)\n");
    gp_buf_free(&b);
    gp_check_result_free(&r);
    gp_frame_free(&f);
}

/* docs/config.md's Check section and gpulse.example.yaml's check: name
 * every key of the settings table, and the example loads. */
static void test_docs_keys(void)
{
    struct gp_cfg_section s = gp_check_cfg_section();
    const char *doc = strstr(gp_test_repo_text("docs/config.md"), "## Check");
    const char *ex = strstr(gp_test_repo_text("gpulse.example.yaml"), "\ncheck:\n");
    CHECK(doc && ex);
    for (size_t i = 0; doc && ex && i < s.nkeys; i++) {
        char needle[80];
        snprintf(needle, sizeof needle, "| `%s` |", s.keys[i].yaml);
        if (!strstr(doc, needle))
            gp_test_fail(__FILE__, __LINE__, "docs/config.md's check section lacks %s", needle);
        snprintf(needle, sizeof needle, "\n  %s:", s.keys[i].yaml);
        if (!strstr(ex, needle))
            gp_test_fail(__FILE__, __LINE__, "gpulse.example.yaml's check section lacks %s", s.keys[i].yaml);
    }
}

const struct gp_test gp_tests_check[] = {
    {"docs_keys", test_docs_keys},
    {"kmsg_good", test_kmsg_good},
    {"kmsg_malformed", test_kmsg_malformed},
    {"kmsg_file", test_kmsg_file},
    {"eval_healthy", test_eval_healthy},
    {"eval_faults", test_eval_faults},
    {"eval_skipped", test_eval_skipped},
    {0},
};
