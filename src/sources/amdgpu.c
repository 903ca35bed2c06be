/*
 * amdgpu.c - the AMD GPU source: kernel amdgpu sysfs + DRM fdinfo.
 *
 * No ROCm, no libdrm: everything comes from files the kernel driver
 * exports, under a configurable sysfs root and proc root (tests build a
 * fake tree of both).
 *
 * Parts:
 *  - discovery (open): class/drm/cardN entries (connectors such as
 *    card0-DP-1 and render nodes are skipped) whose device/driver link
 *    ends in "amdgpu" (or, without that link, whose device/vendor is
 *    0x1002). Identity (bus id, model, UUID, driver version) is read once.
 *  - attributes (sample): each sysfs/hwmon file gpulse reads is opened
 *    once and re-read with pread at offset 0 (sysfs regenerates the text
 *    on every read at offset 0) into a stack buffer, so a tick costs one
 *    syscall per value and allocates nothing. A file that fails is
 *    closed and reopened on the next tick. Files absent when the card
 *    was probed are not retried (not every ASIC has mem_busy_percent),
 *    until the card is probed again after being lost.
 *    EPERM/EINVAL/ENODATA/EOPNOTSUPP are what amdgpu returns during a
 *    GPU reset, in runtime suspend or on SR-IOV functions: the value is
 *    "unsupported this tick", not an error. Values out of physical range
 *    (busy > 100 %, used > total VRAM, ...) are dropped and counted.
 *  - lost cards: one stat() of the device directory per card per tick.
 *    When it is gone (hot unplug, driver unbind), the GPU is still listed
 *    with lost set and no readings; when it comes back, it is re-probed.
 *  - per-process use (DRM fdinfo): for each /proc/PID/fd entry whose
 *    link points into /dev/dri/, /proc/PID/fdinfo/N is read and parsed
 *    (amdgpu_parse.c). Only DRM fds are read because readlink is one
 *    cheap syscall while fdinfo costs open+read+close; the walk is capped
 *    at GP_AMDGPU_MAX_FDS fds per tick so a host with millions of fds
 *    cannot stall the tick (a warning is logged once when the cap bites).
 *    Directories are listed with getdents64 into buffers kept in the
 *    state, so the walk allocates nothing either. Clients are
 *    de-duplicated by drm-client-id per (pid, card): dup'ed fds and
 *    the render + primary node of one client count once. Unreadable
 *    processes (other users, EACCES) are skipped silently.
 *  - per-process busy: drm-engine-gfx + drm-engine-compute (ns, cumulative
 *    per client) differenced between ticks over the frame's wall clock
 *    (f->time_ms, so tests are deterministic). Previous values live in a
 *    table sorted by (pid, card, client) and looked up by binary search;
 *    this tick's table is built alongside and swapped in at the end, so
 *    exited clients fall out. A counter that went backwards keeps the
 *    larger previous value (drm-usage-stats.rst allows momentary
 *    non-monotonicity) and gives no reading this tick; a delta longer
 *    than the elapsed time is dropped and counted. gfx and compute
 *    running together are capped at 100 %.
 *
 * Not here: cards hot-added after open (the agent re-opens sources on
 * its own schedule), the binary gpu_metrics blob (ASIC-specific), the
 * old percentage engine lines of Linux 5.14-5.18 (no defined window).
 */
#include "amdgpu_parse.h"
#include "source.h"

#include "lib/err.h"
#include "lib/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define GP_AMDGPU_MAX_FDS 65536      /* fds examined per tick, all processes together */
#define GP_AMDGPU_MAX_CARDS 64
#define GP_AMDGPU_MAX_TEMPS 16       /* temp1..temp16 labels looked at */
#define PATH_LEN 1024             /* roots, device and hwmon dirs; s->path is larger */
#define DENTS_BUF 32768
#define FDINFO_BUF 8192

/* Sanity bounds: a reading beyond these is a driver or parse problem. */
#define MAX_TEMP_C 250.0
#define MIN_TEMP_C -60.0
#define MAX_POWER_W 10000.0
#define MAX_CLOCK_MHZ 100000.0

enum attr {
    AT_GPU_BUSY,
    AT_MEM_BUSY,
    AT_VRAM_TOTAL,
    AT_VRAM_USED,
    AT_TEMP_GPU,
    AT_TEMP_MEM,
    AT_POWER_AVG,
    AT_POWER_INPUT,
    AT_POWER_CAP,
    AT_SCLK,
    AT_MCLK,
    AT_PWM,
    AT_ENERGY,
    AT__COUNT
};

struct attr_file {
    int fd;         /* -1 while closed */
    bool present;   /* existed when the card was probed */
    bool hwmon;     /* name is relative to the hwmon dir, else to device/ */
    char name[32];
};

struct card {
    unsigned num;                 /* N of cardN */
    char devpath[PATH_LEN];       /* <sysfs>/class/drm/cardN/device */
    char hwmon[PATH_LEN];         /* its hwmon/hwmonM dir, "" if none */
    bool has_pci;
    struct gp_amdgpu_pci pci;     /* matches fdinfo's drm-pdev */
    char pci_bus_id[32], uuid[96], model[96];
    struct attr_file at[AT__COUNT];
    bool lost;
    /* this tick */
    bool vram_total_valid;
    uint64_t vram_total;
};

/* One DRM client seen in fdinfo: the key and its cumulative engine times. */
struct client {
    uint32_t pid;
    uint32_t card;     /* index into state->cards */
    uint64_t id;       /* drm-client-id */
    bool has_gfx, has_compute;
    uint64_t gfx_ns, compute_ns;
};

/* Per-card accumulator of the process being scanned. */
struct proc_acc {
    bool any, mem_valid, util_valid;
    uint64_t mem_bytes;
    uint64_t busy_ns;
};

struct amd_state {
    char sysfs_root[PATH_LEN];
    char proc_root[PATH_LEN];
    char driver[80];
    unsigned ncards;
    struct card *cards;
    struct proc_acc *acc;         /* ncards entries */

    /* engine-time history: prev sorted, cur built this tick */
    struct client *prev, *cur;
    unsigned nprev, ncur, capprev, capcur;
    int64_t prev_time_ms;
    bool fd_cap_warned;

    char path[PATH_MAX];          /* scratch */
    _Alignas(8) char dents_proc[DENTS_BUF];
    _Alignas(8) char dents_fd[DENTS_BUF];
    char fdinfo[FDINFO_BUF];
};

/* ---- small file helpers -------------------------------------------------- */

/* Reads up to cap-1 bytes of path into buf (NUL-terminated); length or -1. */
static ssize_t read_small(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return n;
}

/* Copies the first line of text into out, dropping trailing blanks and stopping at
 * any control byte (these become label values). */
static void copy_line(char *out, size_t outlen, const char *text)
{
    size_t n = 0;
    while (text[n] && (unsigned char)text[n] >= 0x20 && text[n] != 0x7f && n + 1 < outlen)
        n++;
    while (n && text[n - 1] == ' ')
        n--;
    memcpy(out, text, n);
    out[n] = '\0';
}

static bool is_card_name(const char *s)
{
    if (strncmp(s, "card", 4) != 0 || !s[4])
        return false;
    for (s += 4; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* ---- identity ------------------------------------------------------------ */

static const struct {
    unsigned id;
    const char *name;
} models[] = {
    {0x74a0, "AMD Instinct MI300A"},
    {0x74a1, "AMD Instinct MI300X"},
    {0x74a2, "AMD Instinct MI308X"},
    {0x74a5, "AMD Instinct MI325X"},
    {0x740c, "AMD Instinct MI250X/MI250"},
    {0x740f, "AMD Instinct MI210"},
    {0x738c, "AMD Instinct MI100"},
    {0x7448, "AMD Radeon PRO W7900"},
    {0x744c, "AMD Radeon RX 7900 XTX"},
    {0x73bf, "AMD Radeon RX 6800/6900 XT"},
};

static void model_name(unsigned devid, char *out, size_t outlen)
{
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
        if (models[i].id == devid) {
            snprintf(out, outlen, "%s", models[i].name);
            return;
        }
    snprintf(out, outlen, "AMD GPU 0x%04x", devid);
}

/* Is cardN's device driven by amdgpu? The driver link, else the vendor id. */
static bool is_amdgpu(struct amd_state *s, const char *devpath)
{
    char link[PATH_MAX];
    snprintf(s->path, sizeof s->path, "%s/driver", devpath);
    ssize_t n = readlink(s->path, link, sizeof link - 1);
    if (n >= 0) {
        link[n] = '\0';
        const char *base = strrchr(link, '/');
        return strcmp(base ? base + 1 : link, "amdgpu") == 0;
    }
    char buf[32];
    unsigned vendor;
    snprintf(s->path, sizeof s->path, "%s/vendor", devpath);
    n = read_small(s->path, buf, sizeof buf);
    return n > 0 && gp_amdgpu_parse_hex_id(buf, (size_t)n, &vendor) == GP_OK && vendor == 0x1002;
}

static void read_identity(struct amd_state *s, struct card *c)
{
    char buf[256];
    char real[PATH_MAX];
    c->has_pci = false;
    if (realpath(c->devpath, real)) {
        const char *base = strrchr(real, '/');
        base = base ? base + 1 : real;
        c->has_pci = gp_amdgpu_parse_pci(base, strlen(base), &c->pci) == GP_OK;
    }
    if (c->has_pci)
        snprintf(c->pci_bus_id, sizeof c->pci_bus_id, "%08X:%02X:%02X.%X", c->pci.domain,
                 c->pci.bus, c->pci.dev, c->pci.fn);

    c->model[0] = '\0';
    snprintf(s->path, sizeof s->path, "%s/product_name", c->devpath);
    if (read_small(s->path, buf, sizeof buf) > 0)
        copy_line(c->model, sizeof c->model, buf);
    if (!c->model[0]) {
        unsigned devid;
        ssize_t n;
        snprintf(s->path, sizeof s->path, "%s/device", c->devpath);
        n = read_small(s->path, buf, sizeof buf);
        if (n > 0 && gp_amdgpu_parse_hex_id(buf, (size_t)n, &devid) == GP_OK)
            model_name(devid, c->model, sizeof c->model);
        else
            snprintf(c->model, sizeof c->model, "AMD GPU");
    }

    char uid[64] = "";
    snprintf(s->path, sizeof s->path, "%s/unique_id", c->devpath);
    if (read_small(s->path, buf, sizeof buf) > 0)
        copy_line(uid, sizeof uid, buf);
    if (uid[0])
        snprintf(c->uuid, sizeof c->uuid, "GPU-%s", uid);
    else if (c->has_pci)
        snprintf(c->uuid, sizeof c->uuid, "GPU-pci-%04x:%02x:%02x.%x", c->pci.domain, c->pci.bus,
                 c->pci.dev, c->pci.fn);
    else
        snprintf(c->uuid, sizeof c->uuid, "GPU-card%u", c->num);
}

/* ---- attribute files ----------------------------------------------------- */

static void close_attrs(struct card *c)
{
    for (int a = 0; a < AT__COUNT; a++) {
        if (c->at[a].fd >= 0)
            close(c->at[a].fd);
        c->at[a].fd = -1;
    }
}

static int attr_path(struct amd_state *s, const struct card *c, const struct attr_file *af)
{
    if (af->hwmon && !c->hwmon[0])
        return -1;
    int n = snprintf(s->path, sizeof s->path, "%s/%s", af->hwmon ? c->hwmon : c->devpath,
                     af->name);
    return n < 0 || (size_t)n >= sizeof s->path ? -1 : 0;
}

static void set_attr(struct attr_file *af, bool hwmon, const char *name)
{
    af->hwmon = hwmon;
    snprintf(af->name, sizeof af->name, "%s", name);
}

/* Finds the hwmon dir and the temperature inputs; names every attribute. */
static void probe_attrs(struct amd_state *s, struct card *c)
{
    struct attr_file *at = c->at;
    set_attr(&at[AT_GPU_BUSY], false, "gpu_busy_percent");
    set_attr(&at[AT_MEM_BUSY], false, "mem_busy_percent");
    set_attr(&at[AT_VRAM_TOTAL], false, "mem_info_vram_total");
    set_attr(&at[AT_VRAM_USED], false, "mem_info_vram_used");
    set_attr(&at[AT_POWER_AVG], true, "power1_average");
    set_attr(&at[AT_POWER_INPUT], true, "power1_input");
    set_attr(&at[AT_POWER_CAP], true, "power1_cap");
    set_attr(&at[AT_SCLK], true, "freq1_input");
    set_attr(&at[AT_MCLK], true, "freq2_input");
    set_attr(&at[AT_PWM], true, "pwm1");
    set_attr(&at[AT_ENERGY], true, "energy1_input");
    at[AT_TEMP_GPU].name[0] = at[AT_TEMP_MEM].name[0] = '\0';
    at[AT_TEMP_GPU].hwmon = at[AT_TEMP_MEM].hwmon = true;

    /* The first hwmon* below device/hwmon (amdgpu registers one). */
    c->hwmon[0] = '\0';
    snprintf(s->path, sizeof s->path, "%s/hwmon", c->devpath);
    DIR *d = opendir(s->path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (strncmp(e->d_name, "hwmon", 5) == 0) {
                int n = snprintf(c->hwmon, sizeof c->hwmon, "%s/%s", s->path, e->d_name);
                if (n < 0 || (size_t)n >= sizeof c->hwmon)
                    c->hwmon[0] = '\0';
                break;
            }
        closedir(d);
    }

    /* Temperatures: junction (hotspot) for the GPU if labelled, else edge;
     * without labels temp1 is edge. */
    int edge = 0, junction = 0, mem = 0;
    bool any_label = false;
    for (int i = 1; c->hwmon[0] && i <= GP_AMDGPU_MAX_TEMPS; i++) {
        char buf[80];
        enum gp_amdgpu_temp_kind k;
        snprintf(s->path, sizeof s->path, "%s/temp%d_label", c->hwmon, i);
        ssize_t n = read_small(s->path, buf, sizeof buf);
        if (n < 0 || gp_amdgpu_parse_hwmon_label(buf, (size_t)n, &k) != GP_OK)
            continue;
        any_label = true;
        if (k == GP_AMDGPU_TEMP_EDGE && !edge)
            edge = i;
        else if (k == GP_AMDGPU_TEMP_JUNCTION && !junction)
            junction = i;
        else if (k == GP_AMDGPU_TEMP_MEM && !mem)
            mem = i;
    }
    if (!any_label)
        edge = 1;
    if (junction || edge)
        snprintf(at[AT_TEMP_GPU].name, sizeof at[AT_TEMP_GPU].name, "temp%d_input",
                 junction ? junction : edge);
    if (mem)
        snprintf(at[AT_TEMP_MEM].name, sizeof at[AT_TEMP_MEM].name, "temp%d_input", mem);

    for (int a = 0; a < AT__COUNT; a++) {
        at[a].fd = -1;
        at[a].present = false;
        if (!at[a].name[0] || attr_path(s, c, &at[a]))
            continue;
        at[a].fd = open(s->path, O_RDONLY | O_CLOEXEC);
        at[a].present = at[a].fd >= 0;
    }
}

/* Outcome of reading one attribute. */
enum rd { RD_OK, RD_NONE, RD_ERR };

/* Reads attribute a of card c: RD_OK with *v; RD_NONE when absent or transiently
 * refused by the driver (not an error); RD_ERR when unreadable or garbled. */
static enum rd read_attr(struct amd_state *s, struct card *c, enum attr a, int64_t *v)
{
    struct attr_file *af = &c->at[a];
    if (!af->present)
        return RD_NONE;
    if (af->fd < 0) {
        if (attr_path(s, c, af))
            return RD_NONE;
        af->fd = open(s->path, O_RDONLY | O_CLOEXEC);
        if (af->fd < 0)
            return errno == EPERM || errno == EACCES || errno == ENOENT ? RD_NONE : RD_ERR;
    }
    char buf[64];
    ssize_t n = pread(af->fd, buf, sizeof buf, 0);
    if (n < 0) {
        int e = errno;
        close(af->fd);
        af->fd = -1;
        return e == EPERM || e == EINVAL || e == ENODATA || e == EOPNOTSUPP || e == EBUSY ||
                       e == EAGAIN
                   ? RD_NONE
                   : RD_ERR;
    }
    if ((size_t)n == sizeof buf) /* no integer attribute is this long */
        return RD_ERR;
    return gp_amdgpu_parse_int(buf, (size_t)n, v) == GP_OK ? RD_OK : RD_ERR;
}

/* Reads a and, if it lies in [lo, hi], returns true with *v; counts garbage and
 * out-of-range values in *errors. */
static bool read_checked(struct amd_state *s, struct card *c, enum attr a, int64_t lo, int64_t hi,
                         int64_t *v, unsigned *errors)
{
    enum rd r = read_attr(s, c, a, v);
    if (r == RD_ERR || (r == RD_OK && (*v < lo || *v > hi))) {
        (*errors)++;
        return false;
    }
    return r == RD_OK;
}

static void sample_card(struct amd_state *s, struct card *c, struct gp_gpu *g, unsigned *errors)
{
    const double MiB = 1024.0 * 1024.0;
    int64_t v, total = -1, used = -1;
    c->vram_total_valid = false;
    if (read_checked(s, c, AT_GPU_BUSY, 0, 100, &v, errors))
        gp_gpu_set(g, GPF_GPU_UTIL, (double)v);
    if (read_checked(s, c, AT_MEM_BUSY, 0, 100, &v, errors))
        gp_gpu_set(g, GPF_MEM_COPY_UTIL, (double)v);
    if (read_checked(s, c, AT_VRAM_TOTAL, 0, INT64_MAX, &v, errors))
        total = v;
    if (read_checked(s, c, AT_VRAM_USED, 0, INT64_MAX, &v, errors))
        used = v;
    if (total >= 0 && used > total) {
        (*errors)++; /* used beyond the card's size: trust neither */
        total = used = -1;
    }
    if (total >= 0) {
        gp_gpu_set(g, GPF_MEMORY_TOTAL, (double)total);
        c->vram_total_valid = true;
        c->vram_total = (uint64_t)total;
    }
    if (used >= 0) {
        gp_gpu_set(g, GPF_MEMORY_USED, (double)used);
        gp_gpu_set(g, GPF_FB_USED, (double)used / MiB);
        if (total >= 0)
            gp_gpu_set(g, GPF_FB_FREE, (double)(total - used) / MiB);
    }

    const int64_t tlo = (int64_t)(MIN_TEMP_C * 1000), thi = (int64_t)(MAX_TEMP_C * 1000);
    if (read_checked(s, c, AT_TEMP_GPU, tlo, thi, &v, errors))
        gp_gpu_set(g, GPF_GPU_TEMP, (double)v / 1000.0);
    if (read_checked(s, c, AT_TEMP_MEM, tlo, thi, &v, errors))
        gp_gpu_set(g, GPF_MEMORY_TEMP, (double)v / 1000.0);

    /* Most ASICs have only one of power1_average and power1_input: read both. */
    const int64_t pmax = (int64_t)(MAX_POWER_W * 1e6);
    int64_t pavg, pin;
    bool has_avg = read_checked(s, c, AT_POWER_AVG, 0, pmax, &pavg, errors);
    bool has_in = read_checked(s, c, AT_POWER_INPUT, 0, pmax, &pin, errors);
    if (has_avg || has_in)
        gp_gpu_set(g, GPF_POWER_USAGE, (double)(has_avg ? pavg : pin) / 1e6);
    if (read_checked(s, c, AT_POWER_CAP, 0, pmax, &v, errors) && v > 0)
        gp_gpu_set(g, GPF_POWER_LIMIT, (double)v / 1e6);

    const int64_t fmax = (int64_t)(MAX_CLOCK_MHZ * 1e6);
    if (read_checked(s, c, AT_SCLK, 0, fmax, &v, errors))
        gp_gpu_set(g, GPF_SM_CLOCK, (double)v / 1e6);
    if (read_checked(s, c, AT_MCLK, 0, fmax, &v, errors))
        gp_gpu_set(g, GPF_MEM_CLOCK, (double)v / 1e6);
    if (read_checked(s, c, AT_PWM, 0, 255, &v, errors))
        gp_gpu_set(g, GPF_FAN_SPEED, (double)v / 255.0);
    if (read_checked(s, c, AT_ENERGY, 0, INT64_MAX, &v, errors))
        gp_gpu_set(g, GPF_TOTAL_ENERGY, (double)v / 1000.0);
}

/* ---- DRM fdinfo ---------------------------------------------------------- */

static int cmp_client(const void *a, const void *b)
{
    const struct client *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->card != y->card)
        return x->card < y->card ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static const struct client *find_prev(const struct amd_state *s, const struct client *key)
{
    return s->nprev ? bsearch(key, s->prev, s->nprev, sizeof *s->prev, cmp_client) : NULL;
}

/* Appends to s->cur; grows it (allocation only while the table grows). */
static struct client *cur_add(struct amd_state *s)
{
    if (s->ncur == s->capcur) {
        unsigned nc = s->capcur ? s->capcur * 2 : 64;
        struct client *p = realloc(s->cur, (size_t)nc * sizeof *p);
        if (!p)
            return NULL;
        s->cur = p;
        s->capcur = nc;
    }
    return &s->cur[s->ncur++];
}

static struct card *card_by_pci(struct amd_state *s, const struct gp_amdgpu_pci *p, unsigned *idx)
{
    for (unsigned i = 0; i < s->ncards; i++) {
        const struct card *c = &s->cards[i];
        if (c->has_pci && !c->lost && c->pci.domain == p->domain && c->pci.bus == p->bus &&
            c->pci.dev == p->dev && c->pci.fn == p->fn) {
            *idx = i;
            return &s->cards[i];
        }
    }
    return NULL;
}

/* Reads the fdinfo of one fd into s->fdinfo; length, or -1 when unreadable. A document
 * longer than the buffer is cut after its last whole line. */
static ssize_t read_fdinfo(struct amd_state *s, int procfd, const char *pid, const char *fd)
{
    char rel[96];
    snprintf(rel, sizeof rel, "%s/fdinfo/%s", pid, fd);
    int f = openat(procfd, rel, O_RDONLY | O_CLOEXEC);
    if (f < 0)
        return -1;
    size_t len = 0;
    while (len < sizeof s->fdinfo) {
        ssize_t n = read(f, s->fdinfo + len, sizeof s->fdinfo - len);
        if (n < 0) {
            close(f);
            return -1;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(f);
    if (len == sizeof s->fdinfo) {
        char *nl = memrchr(s->fdinfo, '\n', len);
        len = nl ? (size_t)(nl - s->fdinfo) + 1 : 0;
    }
    return (ssize_t)len;
}

/* Accounts one parsed amdgpu client of process pid; cur entries from pid_start on
 * belong to this pid (de-duplication). */
static void add_client(struct amd_state *s, uint32_t pid, unsigned pid_start,
                       const struct gp_amdgpu_fdinfo *fi, int64_t elapsed_ns, unsigned *errors)
{
    unsigned ci;
    if (!fi->has_pdev || !fi->has_client_id || !card_by_pci(s, &fi->pdev, &ci))
        return;
    for (unsigned i = pid_start; i < s->ncur; i++)
        if (s->cur[i].card == ci && s->cur[i].id == fi->client_id)
            return; /* another fd of a client already counted */
    struct client *cl = cur_add(s);
    if (!cl) {
        (*errors)++;
        return;
    }
    *cl = (struct client){.pid = pid, .card = ci, .id = fi->client_id, .has_gfx = fi->has_gfx,
                          .has_compute = fi->has_compute, .gfx_ns = fi->gfx_ns,
                          .compute_ns = fi->compute_ns};
    struct proc_acc *acc = &s->acc[ci];
    acc->any = true;
    if (fi->has_vram) {
        acc->mem_valid = true;
        acc->mem_bytes += fi->vram_bytes;
    }
    const struct client *pv = find_prev(s, cl);
    if (!pv || elapsed_ns <= 0 || !(cl->has_gfx || cl->has_compute))
        return;
    bool ok = true;
    uint64_t busy = 0;
    if (cl->has_gfx && pv->has_gfx) {
        if (cl->gfx_ns < pv->gfx_ns) {
            cl->gfx_ns = pv->gfx_ns; /* stay with the larger value */
            ok = false;
        } else {
            busy += cl->gfx_ns - pv->gfx_ns;
            if (cl->gfx_ns - pv->gfx_ns > (uint64_t)elapsed_ns) {
                (*errors)++;
                ok = false;
            }
        }
    }
    if (cl->has_compute && pv->has_compute) {
        if (cl->compute_ns < pv->compute_ns) {
            cl->compute_ns = pv->compute_ns;
            ok = false;
        } else {
            busy += cl->compute_ns - pv->compute_ns;
            if (cl->compute_ns - pv->compute_ns > (uint64_t)elapsed_ns) {
                (*errors)++;
                ok = false;
            }
        }
    }
    if (ok && ((cl->has_gfx && pv->has_gfx) || (cl->has_compute && pv->has_compute))) {
        acc->util_valid = true;
        acc->busy_ns += busy;
    }
}

static bool all_digits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* getdents64 records: fields at the offsets of struct dirent64 (memcpy: the
 * buffer is a char array). */
static size_t dent_reclen(const char *rec)
{
    unsigned short r;
    memcpy(&r, rec + offsetof(struct dirent64, d_reclen), sizeof r);
    return r ? r : 1; /* a zero length would loop forever; never seen */
}
#define DENT_RECLEN(p) ((ssize_t)dent_reclen(p))
#define DENT_NAME(p) ((const char *)((p) + offsetof(struct dirent64, d_name)))

/* Scans one process's DRM fds; emits its per-GPU entries into the frame. */
static void scan_pid(struct amd_state *s, int procfd, const char *pidname, struct gp_gpu *gpus,
                     int64_t elapsed_ns, unsigned *budget, unsigned *errors)
{
    char rel[64];
    snprintf(rel, sizeof rel, "%s/fd", pidname);
    int fdd = openat(procfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fdd < 0)
        return; /* exited, or another user's process */
    uint32_t pid = (uint32_t)strtoul(pidname, NULL, 10);
    unsigned pid_start = s->ncur;
    memset(s->acc, 0, s->ncards * sizeof *s->acc);
    bool any = false;
    ssize_t n;
    while (*budget && (n = getdents64(fdd, s->dents_fd, sizeof s->dents_fd)) > 0) {
        for (ssize_t off = 0; off < n && *budget; off += DENT_RECLEN(s->dents_fd + off)) {
            const char *name = DENT_NAME(s->dents_fd + off);
            if (!all_digits(name))
                continue;
            (*budget)--;
            char link[64];
            ssize_t ln = readlinkat(fdd, name, link, sizeof link - 1);
            if (ln < 9 || memcmp(link, "/dev/dri/", 9) != 0)
                continue;
            ssize_t len = read_fdinfo(s, procfd, pidname, name);
            if (len < 0)
                continue; /* fd closed meanwhile, or EACCES */
            struct gp_amdgpu_fdinfo fi;
            if (gp_amdgpu_parse_fdinfo(s->fdinfo, (size_t)len, &fi) != GP_OK) {
                (*errors)++;
                continue;
            }
            if (!fi.amdgpu)
                continue;
            add_client(s, pid, pid_start, &fi, elapsed_ns, errors);
            any = true;
        }
    }
    close(fdd);
    if (!any)
        return;
    for (unsigned i = 0; i < s->ncards; i++) {
        const struct proc_acc *a = &s->acc[i];
        if (!a->any)
            continue;
        struct gp_gpu_proc *p = gp_gpu_add_proc(&gpus[i]);
        if (!p) {
            (*errors)++;
            continue;
        }
        p->pid = pid;
        if (a->mem_valid) {
            const struct card *c = &s->cards[i];
            if (c->vram_total_valid && a->mem_bytes > c->vram_total)
                (*errors)++; /* more than the card holds: not believable */
            else {
                p->mem_valid = true;
                p->mem_bytes = a->mem_bytes;
            }
        }
        if (a->util_valid) {
            double u = (double)a->busy_ns * 100.0 / (double)elapsed_ns;
            p->util_valid = true;
            p->sm_util = u > 100.0 ? 100.0 : u;
        }
    }
}

static void scan_procs(struct amd_state *s, struct gp_gpu *gpus, int64_t now_ms, unsigned *errors)
{
    int64_t elapsed_ns = s->prev_time_ms > 0 && now_ms > s->prev_time_ms
                             ? (now_ms - s->prev_time_ms) * 1000000
                             : 0;
    s->ncur = 0;
    int procfd = open(s->proc_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (procfd >= 0) {
        unsigned budget = GP_AMDGPU_MAX_FDS;
        ssize_t n;
        while (budget && (n = getdents64(procfd, s->dents_proc, sizeof s->dents_proc)) > 0)
            for (ssize_t off = 0; off < n && budget; off += DENT_RECLEN(s->dents_proc + off)) {
                const char *name = DENT_NAME(s->dents_proc + off);
                if (all_digits(name) && strlen(name) < 11)
                    scan_pid(s, procfd, name, gpus, elapsed_ns, &budget, errors);
            }
        close(procfd);
        if (!budget && !s->fd_cap_warned) {
            s->fd_cap_warned = true;
            gp_log(GP_LOG_WARN, "amdgpu", "fd scan cap reached, per-process data incomplete",
                   "max_fds=%d", GP_AMDGPU_MAX_FDS);
        }
    }
    /* This tick's clients become the history. */
    if (s->ncur > 1)
        qsort(s->cur, s->ncur, sizeof *s->cur, cmp_client);
    struct client *t = s->prev;
    unsigned tc = s->capprev;
    s->prev = s->cur;
    s->capprev = s->capcur;
    s->nprev = s->ncur;
    s->cur = t;
    s->capcur = tc;
    s->ncur = 0;
    s->prev_time_ms = now_ms;
}

/* ---- the source ---------------------------------------------------------- */

static void amd_close(void *state)
{
    struct amd_state *s = state;
    if (!s)
        return;
    for (unsigned i = 0; i < s->ncards; i++)
        close_attrs(&s->cards[i]);
    free(s->cards);
    free(s->acc);
    free(s->prev);
    free(s->cur);
    free(s);
}

static int cmp_card(const void *a, const void *b)
{
    unsigned x = ((const struct card *)a)->num, y = ((const struct card *)b)->num;
    return (x > y) - (x < y);
}

static int amd_open(const struct gp_source_config *cfg, void **state, char *err, size_t errlen)
{
    *state = NULL;
    struct amd_state *s = calloc(1, sizeof *s);
    if (!s)
        return gp_seterr(err, errlen, GP_ENOMEM, "amdgpu: out of memory");
    snprintf(s->sysfs_root, sizeof s->sysfs_root, "%s",
             cfg && cfg->sysfs_root && *cfg->sysfs_root ? cfg->sysfs_root : "/sys");
    snprintf(s->proc_root, sizeof s->proc_root, "%s",
             cfg && cfg->proc_root && *cfg->proc_root ? cfg->proc_root : "/proc");

    char drmdir[PATH_LEN + 16];
    snprintf(drmdir, sizeof drmdir, "%s/class/drm", s->sysfs_root);
    DIR *d = opendir(drmdir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) && s->ncards < GP_AMDGPU_MAX_CARDS) {
            if (!is_card_name(e->d_name))
                continue;
            char devpath[PATH_LEN];
            int n = snprintf(devpath, sizeof devpath, "%s/%s/device", drmdir, e->d_name);
            if (n < 0 || (size_t)n >= sizeof devpath || !is_amdgpu(s, devpath))
                continue;
            struct card *nc = realloc(s->cards, (s->ncards + 1) * sizeof *nc);
            if (!nc) {
                closedir(d);
                amd_close(s);
                return gp_seterr(err, errlen, GP_ENOMEM, "amdgpu: out of memory");
            }
            s->cards = nc;
            struct card *c = &s->cards[s->ncards++];
            memset(c, 0, sizeof *c);
            for (int a = 0; a < AT__COUNT; a++)
                c->at[a].fd = -1;
            c->num = (unsigned)strtoul(e->d_name + 4, NULL, 10);
            memcpy(c->devpath, devpath, (size_t)n + 1);
        }
        closedir(d);
    }
    if (!s->ncards) {
        amd_close(s);
        return gp_seterr(err, errlen, GP_ENODEV,
                         "amdgpu: no card driven by amdgpu under %s (no AMD GPU, or driver "
                         "not loaded)",
                         drmdir);
    }
    qsort(s->cards, s->ncards, sizeof *s->cards, cmp_card);
    s->acc = calloc(s->ncards, sizeof *s->acc);
    if (!s->acc) {
        amd_close(s);
        return gp_seterr(err, errlen, GP_ENOMEM, "amdgpu: out of memory");
    }
    for (unsigned i = 0; i < s->ncards; i++) {
        read_identity(s, &s->cards[i]);
        probe_attrs(s, &s->cards[i]);
    }

    /* DKMS builds have a module version; the in-kernel driver is the kernel's. */
    char buf[80];
    snprintf(s->path, sizeof s->path, "%s/module/amdgpu/version", s->sysfs_root);
    if (read_small(s->path, buf, sizeof buf) > 0)
        copy_line(s->driver, sizeof s->driver, buf);
    if (!s->driver[0]) {
        snprintf(s->path, sizeof s->path, "%s/sys/kernel/osrelease", s->proc_root);
        if (read_small(s->path, buf, sizeof buf) > 0)
            copy_line(s->driver, sizeof s->driver, buf);
    }
    *state = s;
    return GP_OK;
}

static int amd_sample(void *state, struct gp_frame *f, unsigned *errors)
{
    struct amd_state *s = state;
    unsigned first = f->ngpus;
    for (unsigned i = 0; i < s->ncards; i++) {
        struct card *c = &s->cards[i];
        struct gp_gpu *g = gp_frame_add_gpu(f);
        if (!g)
            return GP_ENOMEM;
        g->vendor = GP_VENDOR_AMD;
        g->index = c->num;
        snprintf(g->device, sizeof g->device, "card%u", c->num);
        snprintf(g->uuid, sizeof g->uuid, "%s", c->uuid);
        snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%s", c->pci_bus_id);
        snprintf(g->model, sizeof g->model, "%s", c->model);
        snprintf(g->driver, sizeof g->driver, "%s", s->driver);

        struct stat st;
        if (stat(c->devpath, &st) != 0) {
            if (!c->lost) {
                c->lost = true;
                close_attrs(c);
                (*errors)++;
                gp_log(GP_LOG_WARN, "amdgpu", "GPU lost", "device=card%u", c->num);
            }
            c->vram_total_valid = false;
            g->lost = true;
            continue;
        }
        if (c->lost) {
            c->lost = false;
            probe_attrs(s, c);
            gp_log(GP_LOG_INFO, "amdgpu", "GPU back", "device=card%u", c->num);
        }
        sample_card(s, c, g, errors);
    }
    int64_t now_ms = f->time_ms;
    if (now_ms <= 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    }
    scan_procs(s, &f->gpus[first], now_ms, errors);
    return GP_OK;
}

const struct gp_source_ops gp_source_amdgpu = {
    .name = "amdgpu",
    .id = GP_SRC_AMDGPU,
    .open = amd_open,
    .sample = amd_sample,
    .close = amd_close,
};
