/*
 * test_amdgpu.c - the amdgpu source against a fake sysfs + procfs tree.
 *
 * The fixture, built in the test's tmpdir: an MI300X (card1, power1_average
 * and power1_input, labelled edge/junction/mem temperatures, energy), a
 * consumer RX 7900 XTX (card0, power1_input only, unlabelled temp1, fan),
 * a connector entry card0-DP-1 and an Intel card (i915) that must be
 * ignored; processes with DRM fds in both fdinfo formats. Also the pure
 * parsers on valid and malformed text.
 */
#include "sources/amdgpu_parse.h"
#include "sources/source.h"
#include "lib/err.h"
#include "test.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define MI300 "sys/devices/pci0000:00/0000:03:00.0"
#define NAVI "sys/devices/pci0000:00/0000:c1:00.0"
#define INTEL "sys/devices/pci0000:00/0000:00:02.0"

static char root_sys[600], root_proc[600];

static void mkdirs(const char *rel)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s/.keep", gp_test_tmpdir(), rel);
    gp_test_write_file(gp_test_tmpdir(), p + strlen(gp_test_tmpdir()) + 1, "");
}

static void link_rel(const char *target, const char *rel)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", gp_test_tmpdir(), rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    mkdirs(p + strlen(gp_test_tmpdir()) + 1);
    *slash = '/';
    unlink(p);
    if (symlink(target, p) != 0)
        gp_test_fail(__FILE__, __LINE__, "symlink %s", p);
}

/* class/drm/<name>/device -> the absolute device directory. */
static void drm_entry(const char *name, const char *devrel)
{
    char target[1024], rel[256];
    snprintf(target, sizeof target, "%s/%s", gp_test_tmpdir(), devrel);
    snprintf(rel, sizeof rel, "sys/class/drm/%s/device", name);
    link_rel(target, rel);
}

static void put(const char *dev, const char *file, const char *content)
{
    char rel[512];
    snprintf(rel, sizeof rel, "%s/%s", dev, file);
    gp_test_write_file(gp_test_tmpdir(), rel, content);
}

/* Writes exact bytes (NULs included), truncating the same inode. */
static void put_bytes(const char *dev, const char *file, const char *data, size_t n)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s/%s", gp_test_tmpdir(), dev, file);
    int fd = open(p, O_WRONLY | O_TRUNC | O_CREAT, 0644);
    CHECK(fd >= 0);
    CHECK(write(fd, data, n) == (ssize_t)n);
    close(fd);
}

static void fd_entry(int pid, int fd, const char *link, const char *fdinfo)
{
    char rel[256];
    snprintf(rel, sizeof rel, "proc/%d/fd/%d", pid, fd);
    link_rel(link, rel);
    if (fdinfo) {
        snprintf(rel, sizeof rel, "proc/%d/fdinfo/%d", pid, fd);
        gp_test_write_file(gp_test_tmpdir(), rel, fdinfo);
    }
}

static char *fdinfo_new(char *buf, size_t n, const char *pdev, int client, const char *vram_line,
                        unsigned long long gfx, unsigned long long compute)
{
    snprintf(buf, n,
             "pos:\t0\nflags:\t02100002\nmnt_id:\t24\nino:\t1032\n"
             "drm-driver:\tamdgpu\ndrm-client-id:\t%d\ndrm-pdev:\t%s\npasid:\t32771\n"
             "%s\ndrm-memory-gtt: \t2048 KiB\ndrm-engine-gfx:\t%llu ns\n"
             "drm-engine-compute:\t%llu ns\ndrm-engine-dma:\t77 ns\n",
             client, pdev, vram_line, gfx, compute);
    return buf;
}

static void build_fixture(void)
{
    snprintf(root_sys, sizeof root_sys, "%s/sys", gp_test_tmpdir());
    snprintf(root_proc, sizeof root_proc, "%s/proc", gp_test_tmpdir());

    /* MI300X, card1 */
    link_rel("../../../bus/pci/drivers/amdgpu", MI300 "/driver");
    put(MI300, "vendor", "0x1002\n");
    put(MI300, "device", "0x74a1\n");
    put(MI300, "product_name", "AMD Instinct MI300X\n");
    put(MI300, "unique_id", "1a2b3c4d5e6f7788\n");
    put(MI300, "gpu_busy_percent", "87\n");
    put(MI300, "mem_busy_percent", "40\n");
    put(MI300, "mem_info_vram_total", "206158430208\n"); /* 192 GiB */
    put(MI300, "mem_info_vram_used", "107374182400\n");  /* 100 GiB */
    put(MI300, "hwmon/hwmon3/temp1_label", "edge\n");
    put(MI300, "hwmon/hwmon3/temp1_input", "45000\n");
    put(MI300, "hwmon/hwmon3/temp2_label", "junction\n");
    put(MI300, "hwmon/hwmon3/temp2_input", "61000\n");
    put(MI300, "hwmon/hwmon3/temp3_label", "mem\n");
    put(MI300, "hwmon/hwmon3/temp3_input", "55000\n");
    put(MI300, "hwmon/hwmon3/power1_average", "550000000\n");
    put(MI300, "hwmon/hwmon3/power1_input", "600000000\n");
    put(MI300, "hwmon/hwmon3/power1_cap", "750000000\n");
    put(MI300, "hwmon/hwmon3/freq1_input", "2100000000\n");
    put(MI300, "hwmon/hwmon3/freq2_input", "1300000000\n");
    put(MI300, "hwmon/hwmon3/energy1_input", "123456789\n");
    drm_entry("card1", MI300);

    /* RX 7900 XTX, card0: no product_name, no unique_id, power1_input only */
    link_rel("../../../bus/pci/drivers/amdgpu", NAVI "/driver");
    put(NAVI, "vendor", "0x1002\n");
    put(NAVI, "device", "0x744c\n");
    put(NAVI, "gpu_busy_percent", "12\n");
    put(NAVI, "mem_info_vram_total", "25769803776\n"); /* 24 GiB */
    put(NAVI, "mem_info_vram_used", "1073741824");     /* no newline */
    put(NAVI, "hwmon/hwmon0/temp1_input", "50000\n");
    put(NAVI, "hwmon/hwmon0/power1_input", "300000000\n");
    put(NAVI, "hwmon/hwmon0/power1_cap", "327000000\n");
    put(NAVI, "hwmon/hwmon0/pwm1", "128\n");
    drm_entry("card0", NAVI);
    drm_entry("card0-DP-1", NAVI);
    mkdirs("sys/class/drm/renderD128");

    /* Intel iGPU, card2: ignored */
    link_rel("../../../bus/pci/drivers/i915", INTEL "/driver");
    put(INTEL, "vendor", "0x8086\n");
    put(INTEL, "gpu_busy_percent", "5\n");
    drm_entry("card2", INTEL);

    gp_test_write_file(gp_test_tmpdir(), "sys/module/amdgpu/version", "6.7.0\n");

    char b[1024];
    /* pid 100: one MI300X client through two fds (dedupe), one 7900 XTX client */
    fdinfo_new(b, sizeof b, "0000:03:00.0", 5, "drm-memory-vram:\t2097152 KiB", 1000000000ull, 0);
    fd_entry(100, 3, "/dev/dri/renderD128", b);
    fd_entry(100, 4, "/dev/dri/card1", b);
    fd_entry(100, 5, "/dev/null", "pos:\t0\nflags:\t02\nmnt_id:\t25\nino:\t5\n");
    fdinfo_new(b, sizeof b, "0000:c1:00.0", 9, "drm-resident-vram:\t512 MiB", 0, 0);
    fd_entry(100, 6, "/dev/dri/renderD129", b);
    /* pid 200: the Linux 5.14-5.18 layout */
    fd_entry(200, 3, "/dev/dri/renderD128",
             "pos:\t0\nflags:\t02\nmnt_id:\t24\ndrm-driver:\tamdgpu\n"
             "pdev:\t0000:03:00.0\npasid:\t32770\nvram mem:\t1048576 kB\n"
             "gtt mem:\t4096 kB\ncpu mem:\t0 kB\ngfx0:\t12.00%\n");
    /* pid 300: an i915 client, ignored */
    fd_entry(300, 3, "/dev/dri/renderD130",
             "pos:\t0\ndrm-driver:\ti915\ndrm-pdev:\t0000:00:02.0\ndrm-client-id:\t3\n"
             "drm-total-local0:\t0\n");
    /* pid 400: no fd dir; pid 500: fdinfo vanished */
    mkdirs("proc/400");
    fd_entry(500, 3, "/dev/dri/renderD128", NULL);
    mkdirs("proc/self");
}

static void *open_fixture(void)
{
    struct gp_source_config cfg = {.sysfs_root = root_sys, .proc_root = root_proc};
    void *st = NULL;
    char err[256] = "";
    int rc = gp_source_amdgpu.open(&cfg, &st, err, sizeof err);
    if (rc != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "open: %d %s", rc, err);
    return st;
}

static unsigned tick(void *st, struct gp_frame *f, int64_t time_ms)
{
    unsigned errors = 0;
    gp_frame_reset(f);
    f->time_ms = time_ms;
    CHECK_INT(gp_source_amdgpu.sample(st, f, &errors), GP_OK);
    return errors;
}

static const struct gp_gpu_proc *find_proc(const struct gp_gpu *g, uint32_t pid)
{
    for (unsigned i = 0; i < g->nprocs; i++)
        if (g->procs[i].pid == pid)
            return &g->procs[i];
    return NULL;
}

static void test_two_cards(void)
{
    build_fixture();
    void *st = open_fixture();
    struct gp_frame f;
    gp_frame_init(&f);
    CHECK_INT(tick(st, &f, 1000000), 0);
    CHECK_INT(f.ngpus, 2);

    const struct gp_gpu *n = &f.gpus[0], *m = &f.gpus[1];
    CHECK_INT(n->vendor, GP_VENDOR_AMD);
    CHECK_INT(n->index, 0);
    CHECK_STR(n->device, "card0");
    CHECK_STR(n->pci_bus_id, "00000000:C1:00.0");
    CHECK_STR(n->model, "AMD Radeon RX 7900 XTX");
    CHECK_STR(n->uuid, "GPU-pci-0000:c1:00.0");
    CHECK_STR(n->driver, "6.7.0");
    CHECK(!n->lost);
    CHECK_DBL(n->val[GPF_GPU_UTIL], 12, 0);
    CHECK(gp_gpu_has(n, GPF_GPU_UTIL));
    CHECK(!gp_gpu_has(n, GPF_MEM_COPY_UTIL));
    CHECK_DBL(n->val[GPF_MEMORY_TOTAL], 25769803776.0, 0);
    CHECK_DBL(n->val[GPF_MEMORY_USED], 1073741824.0, 0);
    CHECK_DBL(n->val[GPF_FB_USED], 1024, 0);
    CHECK_DBL(n->val[GPF_FB_FREE], 23 * 1024, 0);
    CHECK(gp_gpu_has(n, GPF_GPU_TEMP));
    CHECK_DBL(n->val[GPF_GPU_TEMP], 50, 0);
    CHECK(!gp_gpu_has(n, GPF_MEMORY_TEMP));
    CHECK(gp_gpu_has(n, GPF_POWER_USAGE));
    CHECK_DBL(n->val[GPF_POWER_USAGE], 300, 1e-9);
    CHECK_DBL(n->val[GPF_POWER_LIMIT], 327, 1e-9);
    CHECK(gp_gpu_has(n, GPF_FAN_SPEED));
    CHECK_DBL(n->val[GPF_FAN_SPEED], 128.0 / 255.0, 1e-12);
    CHECK(!gp_gpu_has(n, GPF_SM_CLOCK));
    CHECK(!gp_gpu_has(n, GPF_TOTAL_ENERGY));

    CHECK_INT(m->index, 1);
    CHECK_STR(m->device, "card1");
    CHECK_STR(m->pci_bus_id, "00000000:03:00.0");
    CHECK_STR(m->model, "AMD Instinct MI300X");
    CHECK_STR(m->uuid, "GPU-1a2b3c4d5e6f7788");
    CHECK_DBL(m->val[GPF_GPU_UTIL], 87, 0);
    CHECK_DBL(m->val[GPF_MEM_COPY_UTIL], 40, 0);
    CHECK_DBL(m->val[GPF_MEMORY_TOTAL], 206158430208.0, 0);
    CHECK_DBL(m->val[GPF_MEMORY_USED], 107374182400.0, 0);
    CHECK_DBL(m->val[GPF_FB_USED], 102400, 0);
    CHECK_DBL(m->val[GPF_FB_FREE], 196608 - 102400, 0);
    CHECK_DBL(m->val[GPF_GPU_TEMP], 61, 0); /* junction, not edge */
    CHECK_DBL(m->val[GPF_MEMORY_TEMP], 55, 0);
    CHECK_DBL(m->val[GPF_POWER_USAGE], 550, 1e-9); /* average preferred */
    CHECK_DBL(m->val[GPF_POWER_LIMIT], 750, 1e-9);
    CHECK_DBL(m->val[GPF_SM_CLOCK], 2100, 1e-9);
    CHECK_DBL(m->val[GPF_MEM_CLOCK], 1300, 1e-9);
    CHECK(!gp_gpu_has(m, GPF_FAN_SPEED));
    CHECK_DBL(m->val[GPF_TOTAL_ENERGY], 123456.789, 1e-6);

    /* processes: dedupe of fds 3+4 (client 5), old format, i915 ignored */
    CHECK_INT(m->nprocs, 2);
    const struct gp_gpu_proc *p = find_proc(m, 100);
    CHECK(p && p->mem_valid && !p->util_valid);
    CHECK_INT(p->mem_bytes, 2ull << 30);
    p = find_proc(m, 200);
    CHECK(p && p->mem_valid && !p->util_valid);
    CHECK_INT(p->mem_bytes, 1ull << 30);
    CHECK_INT(n->nprocs, 1);
    p = find_proc(n, 100);
    CHECK(p && p->mem_valid);
    CHECK_INT(p->mem_bytes, 512ull << 20);

    /* tick 2, one second later: gfx +0.5 s, compute +0.25 s -> 75 % */
    char b[1024];
    fdinfo_new(b, sizeof b, "0000:03:00.0", 5, "drm-memory-vram:\t2097152 KiB", 1500000000ull,
               250000000ull);
    gp_test_write_file(gp_test_tmpdir(), "proc/100/fdinfo/3", b);
    gp_test_write_file(gp_test_tmpdir(), "proc/100/fdinfo/4", b);
    put(MI300, "gpu_busy_percent", "90\n");
    CHECK_INT(tick(st, &f, 1001000), 0);
    m = &f.gpus[1];
    CHECK_DBL(m->val[GPF_GPU_UTIL], 90, 0); /* same fd, new content */
    p = find_proc(m, 100);
    CHECK(p && p->util_valid);
    CHECK_DBL(p->sm_util, 75, 1e-9);
    p = find_proc(&f.gpus[0], 100);
    CHECK(p && p->util_valid); /* counters present, idle */
    CHECK_DBL(p->sm_util, 0, 0);
    p = find_proc(m, 200); /* the old format has no engine times */
    CHECK(p && !p->util_valid);

    gp_source_amdgpu.close(st);
    gp_frame_free(&f);
}

static void set_client(unsigned long long gfx, unsigned long long compute)
{
    char b[1024];
    fdinfo_new(b, sizeof b, "0000:03:00.0", 5, "drm-memory-vram:\t1024 KiB", gfx, compute);
    gp_test_write_file(gp_test_tmpdir(), "proc/100/fdinfo/3", b);
    gp_test_write_file(gp_test_tmpdir(), "proc/100/fdinfo/4", b);
}

static const struct gp_gpu_proc *mi300_proc(const struct gp_frame *f)
{
    CHECK_INT(f->ngpus, 2);
    return find_proc(&f->gpus[1], 100);
}

static void test_engine_counters(void)
{
    build_fixture();
    void *st = open_fixture();
    struct gp_frame f;
    gp_frame_init(&f);
    set_client(1000000000ull, 0);
    CHECK_INT(tick(st, &f, 5000), 0);
    set_client(1400000000ull, 0);
    CHECK_INT(tick(st, &f, 7000), 0); /* 0.4 s over 2 s */
    CHECK_DBL(mi300_proc(&f)->sm_util, 20, 1e-9);
    set_client(1300000000ull, 0); /* backwards: no reading, keep 1.4 s, no error */
    CHECK_INT(tick(st, &f, 8000), 0);
    CHECK(!mi300_proc(&f)->util_valid);
    set_client(1500000000ull, 0); /* +0.1 s over the kept 1.4 s */
    CHECK_INT(tick(st, &f, 9000), 0);
    CHECK(mi300_proc(&f)->util_valid);
    CHECK_DBL(mi300_proc(&f)->sm_util, 10, 1e-9);
    set_client(9500000000ull, 0); /* 8 s busy in 1 s: dropped and counted */
    CHECK_INT(tick(st, &f, 10000), 1);
    CHECK(!mi300_proc(&f)->util_valid);
    set_client(10400000000ull, 900000000ull); /* both engines flat out: capped */
    CHECK_INT(tick(st, &f, 11000), 0);
    CHECK_DBL(mi300_proc(&f)->sm_util, 100, 0);
    CHECK_INT(tick(st, &f, 11000), 0); /* no time passed: no reading */
    CHECK(!mi300_proc(&f)->util_valid);
    gp_source_amdgpu.close(st);
    gp_frame_free(&f);
}

static void test_malformed_values(void)
{
    build_fixture();
    void *st = open_fixture();
    struct gp_frame f;
    gp_frame_init(&f);
    static const struct {
        const char *data;
        size_t len;
    } bad[] = {
        {"", 0},
        {"abc\n", 4},
        {"99999999999999999999999\n", 24},
        {"-5\n", 3},
        {"1\0" "2\n", 4},
        {"\0\0\0\0", 4},
        {"12abc", 5},
        {" \n", 2},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        put_bytes(MI300, "gpu_busy_percent", bad[i].data, bad[i].len);
        put_bytes(MI300, "hwmon/hwmon3/power1_average", bad[i].data, bad[i].len);
        CHECK_INT(tick(st, &f, 1000 + (int64_t)i), 2);
        CHECK(!gp_gpu_has(&f.gpus[1], GPF_GPU_UTIL));
        /* power1_input still gives the power */
        CHECK_DBL(f.gpus[1].val[GPF_POWER_USAGE], 600, 1e-9);
        CHECK_DBL(f.gpus[1].val[GPF_GPU_TEMP], 61, 0);
    }
    put(MI300, "gpu_busy_percent", "150\n"); /* beyond 100 %: dropped, counted */
    CHECK_INT(tick(st, &f, 1500), 2);
    CHECK(!gp_gpu_has(&f.gpus[1], GPF_GPU_UTIL));
    put(MI300, "gpu_busy_percent", "42");
    put(MI300, "hwmon/hwmon3/power1_average", "550000000\n");
    CHECK_INT(tick(st, &f, 2000), 0);
    CHECK_DBL(f.gpus[1].val[GPF_GPU_UTIL], 42, 0);

    /* used beyond total: neither believed */
    put(MI300, "mem_info_vram_used", "306158430208\n");
    put(MI300, "hwmon/hwmon3/temp2_input", "900000\n"); /* 900 C */
    put(MI300, "hwmon/hwmon3/pwm1", "300\n");          /* absent at open: not read */
    CHECK_INT(tick(st, &f, 3000), 2);
    CHECK(!gp_gpu_has(&f.gpus[1], GPF_MEMORY_USED));
    CHECK(!gp_gpu_has(&f.gpus[1], GPF_MEMORY_TOTAL));
    CHECK(!gp_gpu_has(&f.gpus[1], GPF_FB_FREE));
    CHECK(!gp_gpu_has(&f.gpus[1], GPF_GPU_TEMP));
    CHECK(!gp_gpu_has(&f.gpus[1], GPF_FAN_SPEED));

    /* garbled fdinfo: that fd counted and skipped; a client bigger than the card dropped */
    put("proc/200", "fdinfo/3", "drm-driver:\tamdgpu\npdev:\t0000:03:00.0\npasid:\t1\nvram mem:\tlots kB\n");
    put("proc/100", "fdinfo/6",
        "drm-driver:\tamdgpu\ndrm-pdev:\t0000:c1:00.0\ndrm-client-id:\t9\n"
        "drm-memory-vram:\t100 GiB\n");
    put(MI300, "mem_info_vram_used", "107374182400\n");
    put(MI300, "hwmon/hwmon3/temp2_input", "61000\n");
    CHECK_INT(tick(st, &f, 4000), 2);
    CHECK(find_proc(&f.gpus[1], 200) == NULL);
    const struct gp_gpu_proc *p = find_proc(&f.gpus[0], 100);
    CHECK(p && !p->mem_valid);
    gp_source_amdgpu.close(st);
    gp_frame_free(&f);
}

static void test_card_vanishes(void)
{
    build_fixture();
    void *st = open_fixture();
    struct gp_frame f;
    gp_frame_init(&f);
    CHECK_INT(tick(st, &f, 1000), 0);
    char from[1024], to[1024];
    snprintf(from, sizeof from, "%s/%s", gp_test_tmpdir(), MI300);
    snprintf(to, sizeof to, "%s/%s.gone", gp_test_tmpdir(), MI300);
    CHECK(rename(from, to) == 0);
    CHECK_INT(tick(st, &f, 2000), 1);
    CHECK_INT(f.ngpus, 2);
    CHECK(f.gpus[1].lost);
    CHECK_STR(f.gpus[1].uuid, "GPU-1a2b3c4d5e6f7788");
    CHECK(!gp_gpu_has(&f.gpus[1], GPF_GPU_UTIL));
    CHECK_INT(f.gpus[1].nprocs, 0);
    CHECK(!f.gpus[0].lost);
    CHECK_DBL(f.gpus[0].val[GPF_GPU_UTIL], 12, 0);
    CHECK_INT(tick(st, &f, 3000), 0); /* counted once */
    CHECK(f.gpus[1].lost);
    CHECK(rename(to, from) == 0);
    put(MI300, "gpu_busy_percent", "33\n");
    CHECK_INT(tick(st, &f, 4000), 0);
    CHECK(!f.gpus[1].lost);
    CHECK_DBL(f.gpus[1].val[GPF_GPU_UTIL], 33, 0);
    CHECK_DBL(f.gpus[1].val[GPF_GPU_TEMP], 61, 0);
    CHECK(find_proc(&f.gpus[1], 100) != NULL);
    gp_source_amdgpu.close(st);
    gp_frame_free(&f);
}

static void test_no_card(void)
{
    char sys[600], err[256] = "";
    snprintf(sys, sizeof sys, "%s/sys", gp_test_tmpdir());
    struct gp_source_config cfg = {.sysfs_root = sys, .proc_root = "/nonexistent"};
    void *st = (void *)1;
    /* no class/drm at all */
    CHECK_INT(gp_source_amdgpu.open(&cfg, &st, err, sizeof err), GP_ENODEV);
    CHECK(st == NULL);
    CHECK_CONTAINS(err, "no card driven by amdgpu");
    /* only an Intel card, a connector and a non-AMD card without driver link */
    link_rel("../../../bus/pci/drivers/i915", INTEL "/driver");
    drm_entry("card0", INTEL);
    drm_entry("card0-DP-1", INTEL);
    put("sys/devices/pci0000:00/0000:05:00.0", "vendor", "0x10de\n");
    drm_entry("card1", "sys/devices/pci0000:00/0000:05:00.0");
    CHECK_INT(gp_source_amdgpu.open(&cfg, &st, err, sizeof err), GP_ENODEV);
    gp_source_amdgpu.close(NULL);
}

static void test_vendor_fallback(void)
{
    /* A fixture without driver links: vendor 0x1002 decides; no hwmon; the
     * driver version falls back to the kernel release. */
    char sys[600], proc[600], err[256] = "";
    snprintf(sys, sizeof sys, "%s/sys", gp_test_tmpdir());
    snprintf(proc, sizeof proc, "%s/proc", gp_test_tmpdir());
    put("sys/devices/pci0000:00/0000:41:00.0", "vendor", "0x1002\n");
    put("sys/devices/pci0000:00/0000:41:00.0", "device", "0x1234\n");
    put("sys/devices/pci0000:00/0000:41:00.0", "gpu_busy_percent", "7\n");
    drm_entry("card3", "sys/devices/pci0000:00/0000:41:00.0");
    gp_test_write_file(gp_test_tmpdir(), "proc/sys/kernel/osrelease", "6.1.0-18-amd64\n");
    struct gp_source_config cfg = {.sysfs_root = sys, .proc_root = proc};
    void *st = NULL;
    CHECK_INT(gp_source_amdgpu.open(&cfg, &st, err, sizeof err), GP_OK);
    struct gp_frame f;
    gp_frame_init(&f);
    CHECK_INT(tick(st, &f, 0), 0); /* time_ms unset: the source's own clock */
    CHECK_INT(f.ngpus, 1);
    CHECK_INT(f.gpus[0].index, 3);
    CHECK_STR(f.gpus[0].model, "AMD GPU 0x1234");
    CHECK_STR(f.gpus[0].pci_bus_id, "00000000:41:00.0");
    CHECK_STR(f.gpus[0].driver, "6.1.0-18-amd64");
    CHECK_DBL(f.gpus[0].val[GPF_GPU_UTIL], 7, 0);
    CHECK(!gp_gpu_has(&f.gpus[0], GPF_GPU_TEMP));
    CHECK(!gp_gpu_has(&f.gpus[0], GPF_POWER_USAGE));
    gp_source_amdgpu.close(st);
    gp_frame_free(&f);
}

/* ---- parsers ---- */

static int pint(const char *s, int64_t *v) { return gp_amdgpu_parse_int(s, strlen(s), v); }

static void test_parse_int(void)
{
    int64_t v;
    CHECK_INT(pint("42\n", &v), GP_OK);
    CHECK_INT(v, 42);
    CHECK_INT(pint("  -7 \n", &v), GP_OK);
    CHECK_INT(v, -7);
    CHECK_INT(pint("9223372036854775807", &v), GP_OK);
    CHECK_INT(v, INT64_MAX);
    CHECK_INT(pint("-9223372036854775808", &v), GP_OK);
    CHECK(v == INT64_MIN);
    CHECK_INT(pint("9223372036854775808", &v), GP_EPARSE);
    CHECK_INT(pint("18446744073709551616", &v), GP_EPARSE);
    CHECK_INT(pint("", &v), GP_EPARSE);
    CHECK_INT(pint("-", &v), GP_EPARSE);
    CHECK_INT(pint("0x10", &v), GP_EPARSE);
    CHECK_INT(pint("1 2", &v), GP_EPARSE);
    CHECK_INT(pint("+3", &v), GP_EPARSE);
    CHECK_INT(gp_amdgpu_parse_int("5\0", 2, &v), GP_EPARSE);
    CHECK_INT(gp_amdgpu_parse_int("55", 1, &v), GP_OK); /* length, not NUL, bounds it */
    CHECK_INT(v, 5);
    unsigned id;
    CHECK_INT(gp_amdgpu_parse_hex_id("0x74a1\n", 7, &id), GP_OK);
    CHECK_INT(id, 0x74a1);
    CHECK_INT(gp_amdgpu_parse_hex_id("0x", 2, &id), GP_EPARSE);
    CHECK_INT(gp_amdgpu_parse_hex_id("0x123456", 8, &id), GP_EPARSE);
}

static void test_parse_label_pci(void)
{
    enum gp_amdgpu_temp_kind k;
    CHECK_INT(gp_amdgpu_parse_hwmon_label("junction\n", 9, &k), GP_OK);
    CHECK_INT(k, GP_AMDGPU_TEMP_JUNCTION);
    CHECK_INT(gp_amdgpu_parse_hwmon_label("edge", 4, &k), GP_OK);
    CHECK_INT(k, GP_AMDGPU_TEMP_EDGE);
    CHECK_INT(gp_amdgpu_parse_hwmon_label("mem\n", 4, &k), GP_OK);
    CHECK_INT(k, GP_AMDGPU_TEMP_MEM);
    CHECK_INT(gp_amdgpu_parse_hwmon_label("vddgfx\n", 7, &k), GP_OK);
    CHECK_INT(k, GP_AMDGPU_TEMP_OTHER);
    CHECK_INT(gp_amdgpu_parse_hwmon_label("\n", 1, &k), GP_EPARSE);
    CHECK_INT(gp_amdgpu_parse_hwmon_label("ed\0ge", 5, &k), GP_EPARSE);
    char lng[100];
    memset(lng, 'a', sizeof lng);
    CHECK_INT(gp_amdgpu_parse_hwmon_label(lng, sizeof lng, &k), GP_EPARSE);

    struct gp_amdgpu_pci a;
    CHECK_INT(gp_amdgpu_parse_pci("0000:c1:1f.7", 12, &a), GP_OK);
    CHECK_INT(a.domain, 0);
    CHECK_INT(a.bus, 0xc1);
    CHECK_INT(a.dev, 0x1f);
    CHECK_INT(a.fn, 7);
    CHECK_INT(gp_amdgpu_parse_pci("03:00.0", 7, &a), GP_OK);
    CHECK_INT(a.bus, 3);
    CHECK_INT(gp_amdgpu_parse_pci("0000:03:20.0", 12, &a), GP_EPARSE); /* dev > 0x1f */
    CHECK_INT(gp_amdgpu_parse_pci("0000:03:00.8", 12, &a), GP_EPARSE);
    CHECK_INT(gp_amdgpu_parse_pci("0000:03:00", 10, &a), GP_EPARSE);
    CHECK_INT(gp_amdgpu_parse_pci("0000:03:00.0x", 13, &a), GP_EPARSE);
    CHECK_INT(gp_amdgpu_parse_pci("device", 6, &a), GP_EPARSE);
}

static int pfd(const char *s, struct gp_amdgpu_fdinfo *fi)
{
    return gp_amdgpu_parse_fdinfo(s, strlen(s), fi);
}

static void test_parse_fdinfo(void)
{
    struct gp_amdgpu_fdinfo fi;
    CHECK_INT(pfd("drm-driver:\tamdgpu\ndrm-pdev:\t0000:03:00.0\ndrm-client-id:\t12\n"
                  "drm-memory-vram:\t3 MiB\ndrm-resident-vram:\t4 MiB\ndrm-memory-vram:\t5 MiB\n"
                  "drm-engine-gfx:\t99 ns\ndrm-engine-compute:\t7\n",
                  &fi),
              GP_OK);
    CHECK(fi.amdgpu && fi.has_pdev && fi.has_client_id && fi.has_vram);
    CHECK_INT(fi.pdev.bus, 3);
    CHECK_INT(fi.client_id, 12);
    CHECK_INT(fi.vram_bytes, 4ull << 20); /* resident wins over the alias */
    CHECK(fi.has_gfx && fi.has_compute);
    CHECK_INT(fi.gfx_ns, 99);
    CHECK_INT(fi.compute_ns, 7);

    CHECK_INT(pfd("pdev:\t0000:03:00.0\npasid:\t32770\nvram mem:\t10 kB\n", &fi), GP_OK);
    CHECK(fi.amdgpu && fi.has_client_id && fi.has_vram && !fi.has_gfx);
    CHECK_INT(fi.client_id, 32770);
    CHECK_INT(fi.vram_bytes, 10240);

    CHECK_INT(pfd("drm-driver:\tamdgpu\ndrm-memory-vram:\t77\n", &fi), GP_OK);
    CHECK_INT(fi.vram_bytes, 77); /* bare bytes */
    CHECK(!fi.has_pdev && !fi.has_client_id);
    CHECK_INT(pfd("drm-memory-vram:\t1 GiB", &fi), GP_OK); /* no final newline */
    CHECK_INT(fi.vram_bytes, 1ull << 30);
    CHECK(!fi.amdgpu);

    CHECK_INT(pfd("drm-driver:\ti915\ndrm-pdev:\t0000:00:02.0\npasid:\t1\n", &fi), GP_OK);
    CHECK(!fi.amdgpu);
    CHECK_INT(pfd("pos:\t0\nflags:\t02\ninotify wd:1 ino:2\nno colon here\n", &fi), GP_OK);
    CHECK(!fi.amdgpu && !fi.has_vram);
    CHECK_INT(pfd("", &fi), GP_OK);
    CHECK(!fi.amdgpu);

    CHECK_INT(pfd("drm-memory-vram:\t12 TiB\n", &fi), GP_EPARSE);
    CHECK_INT(pfd("drm-memory-vram:\t\n", &fi), GP_EPARSE);
    CHECK_INT(pfd("drm-memory-vram:\t-1 KiB\n", &fi), GP_EPARSE);
    CHECK_INT(pfd("drm-memory-vram:\t18446744073709551615 KiB\n", &fi), GP_EPARSE);
    CHECK_INT(pfd("drm-client-id:\t99999999999999999999999\n", &fi), GP_EPARSE);
    CHECK_INT(pfd("drm-engine-gfx:\t12 ms\n", &fi), GP_EPARSE);
    CHECK_INT(pfd("drm-pdev:\tnot-a-bus\n", &fi), GP_EPARSE);
    CHECK_INT(gp_amdgpu_parse_fdinfo("drm-driver:\tamd\0gpu\n", 20, &fi), GP_EPARSE);
}

const struct gp_test gp_tests_amdgpu[] = {
    {"two_cards", test_two_cards},
    {"engine_counters", test_engine_counters},
    {"malformed_values", test_malformed_values},
    {"card_vanishes", test_card_vanishes},
    {"no_card", test_no_card},
    {"vendor_fallback", test_vendor_fallback},
    {"parse_int", test_parse_int},
    {"parse_label_pci", test_parse_label_pci},
    {"parse_fdinfo", test_parse_fdinfo},
    {0},
};
