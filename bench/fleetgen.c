/*
 * fleetgen - deterministic GPU-fleet telemetry for the store benchmark
 * and the server crash test.
 *
 *   fleetgen [-n NODES] [-g GPUS] [-m MINUTES] [-e END_MS] [-i INTERVAL_MS]
 *            [-s SEED] [-j JITTER_MS] [-G NODES_PER_REQUEST]
 *            [-T TIMESTAMPS_PER_REQUEST] [-F 12|20] [-f rw|om] -o FILE
 *
 * Every node has GPUS H100s, each exposing the 12 dcgm-exporter gauges of
 * `metric[]` (-F 20: and 8 more families of dcgm-exporter's default
 * list, among them the counters DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION and
 * DCGM_FI_DEV_PCIE_REPLAY_COUNTER, for the PromQL benchmark's rate())
 * with dcgm-exporter's labels (gpu, UUID, device, modelName,
 * Hostname, pci_bus_id, DCGM_FI_DRIVER_VERSION) plus the instance and job
 * a Prometheus scraping it would add. Values behave like a training
 * cluster: most nodes train (GPU utilization on a 97-100 % plateau,
 * power around 600 W with milliwatt resolution, integer MiB of memory
 * held constant by the caching allocator, temperatures following power
 * with thermal lag, SM clocks dropping under power capping, PCIe bursts
 * at each step's batch load), pausing for evaluation and checkpoints; a
 * few are data-starved (utilization swinging, low SM activity) and a few
 * hold memory while idle. Values are what a receiver gets from
 * dcgm-exporter, which prints doubles with "%f": profiling ratios with 6
 * decimals, power (NVML's milliwatts) with 3. Scrape timestamps are one per
 * node per tick, with up to JITTER_MS of jitter (Prometheus's scrape
 * timing), aligned to INTERVAL_MS otherwise.
 *
 * The same seed and arguments give the same bytes. The window is the
 * MINUTES before END_MS (default: now, rounded down to the interval).
 *
 * Output -f rw (default): the bodies file of fleetgen.h. Nodes are cut
 * into groups of NODES_PER_REQUEST (a shard each); one body holds all
 * series of one group at TIMESTAMPS_PER_REQUEST consecutive ticks, and
 * bodies come tick-block by tick-block, shard after shard. -f om:
 * OpenMetrics text (timestamps in seconds, ending with "# EOF") for
 * `promtool tsdb create-blocks-from openmetrics`.
 */
#include "fleetgen.h"

#include "ingest/remote_write.h"
#include "lib/buf.h"
#include "lib/err.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
    M_GPU_UTIL,
    M_GPU_TEMP,
    M_MEMORY_TEMP,
    M_POWER,
    M_FB_USED,
    M_FB_FREE,
    M_SM_CLOCK,
    M_MEM_CLOCK,
    M_SM_ACTIVE,
    M_DRAM_ACTIVE,
    M_TENSOR_ACTIVE,
    M_PCIE_TX,
    M_BASE_COUNT, /* -F 12 */
    M_ENERGY = M_BASE_COUNT,
    M_PCIE_REPLAY,
    M_XID,
    M_MEM_COPY_UTIL,
    M_ENC_UTIL,
    M_DEC_UTIL,
    M_GR_ACTIVE,
    M_PCIE_RX,
    M_COUNT /* -F 20 */
};

static const char *const metric[M_COUNT] = {
    "DCGM_FI_DEV_GPU_UTIL",      "DCGM_FI_DEV_GPU_TEMP",          "DCGM_FI_DEV_MEMORY_TEMP",
    "DCGM_FI_DEV_POWER_USAGE",   "DCGM_FI_DEV_FB_USED",           "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_SM_CLOCK",      "DCGM_FI_DEV_MEM_CLOCK",         "DCGM_FI_PROF_SM_ACTIVE",
    "DCGM_FI_PROF_DRAM_ACTIVE",  "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_PCIE_TX_BYTES",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_ENC_UTIL",         "DCGM_FI_DEV_DEC_UTIL",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PCIE_RX_BYTES",
};

/* Families per GPU (-F): the first 12, or all 20. */
static int nfam = M_BASE_COUNT;

/* H100 SXM: what NVML reports for memory (MiB), clocks (MHz) and power (W). */
#define FB_TOTAL_MIB 81559.0
#define FB_RESERVED_MIB 520.0
#define SM_CLOCK_MAX 1980.0
#define MEM_CLOCK 2619.0
#define POWER_LIMIT 700.0
#define MODEL "NVIDIA H100 80GB HBM3"
#define DRIVER "550.54.15"

static const int pci_bus[8] = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb};

/* ---- deterministic randomness: splitmix64 streams ---- */

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s) /* [0, 1) */
{
    return (double)(rng_next(s) >> 11) * 0x1.0p-53;
}

static double rng_range(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * rng_unit(s);
}

static double rng_normal(uint64_t *s)
{
    double u = rng_unit(s), v = rng_unit(s);
    return sqrt(-2.0 * log(u + 1e-300)) * cos(2.0 * M_PI * v);
}

static double clamp(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* ---- the fleet model ---- */

enum node_kind { K_TRAIN, K_STARVED, K_IDLE_HELD, K_IDLE };
enum phase { P_TRAIN, P_EVAL, P_CKPT, P_IDLE };

struct node {
    enum node_kind kind;
    enum phase phase;
    int phase_left;    /* ticks */
    int step_ticks;    /* a training step, in ticks: the batch-load period */
    int step_pos;
    double sm_base, dram_base, tensor_base, fb_job;
    uint64_t rng;
};

struct gpu {
    double temp, temp_offset, memtemp_offset, fb_used;
    double energy_mj, replays; /* counters since the driver loaded */
    double v[M_COUNT];
    uint64_t rng;
    uint64_t rng2; /* the -F 20 families' own stream: -F 12 output stays as it was */
};

struct fleet {
    int nodes, gpus;
    struct node *node;
    struct gpu *gpu; /* nodes * gpus */
    int64_t interval_ms;
    int jitter_ms;
    int64_t *stamp;  /* per node, this tick */
};

static void node_new_phase(struct node *n)
{
    switch (n->kind) {
    case K_IDLE:
    case K_IDLE_HELD:
        n->phase = P_IDLE;
        n->phase_left = 1 << 30;
        return;
    default:
        break;
    }
    /* train 10-30 min, then evaluate 1-3 min, then checkpoint 20-60 s */
    if (n->phase == P_TRAIN) {
        n->phase = P_EVAL;
        n->phase_left = (int)rng_range(&n->rng, 60, 180);
    } else if (n->phase == P_EVAL) {
        n->phase = P_CKPT;
        n->phase_left = (int)rng_range(&n->rng, 20, 60);
    } else {
        n->phase = P_TRAIN;
        n->phase_left = (int)rng_range(&n->rng, 600, 1800);
        /* a new phase may grow the caching allocator's pool a little */
        n->fb_job = fmin(n->fb_job + 256.0 * (double)(rng_next(&n->rng) % 3), FB_TOTAL_MIB - 2000);
    }
}

static int fleet_init(struct fleet *f, int nodes, int gpus, uint64_t seed, int64_t interval_ms,
                      int jitter_ms)
{
    memset(f, 0, sizeof *f);
    f->nodes = nodes;
    f->gpus = gpus;
    f->interval_ms = interval_ms;
    f->jitter_ms = jitter_ms;
    f->node = calloc((size_t)nodes, sizeof *f->node);
    f->gpu = calloc((size_t)nodes * (size_t)gpus, sizeof *f->gpu);
    f->stamp = calloc((size_t)nodes, sizeof *f->stamp);
    if (!f->node || !f->gpu || !f->stamp)
        return -1;
    for (int i = 0; i < nodes; i++) {
        struct node *n = &f->node[i];
        n->rng = seed ^ (UINT64_C(0x1000193) * (uint64_t)(i + 1));
        rng_next(&n->rng);
        double k = rng_unit(&n->rng);
        n->kind = k < 0.85 ? K_TRAIN : k < 0.92 ? K_STARVED : k < 0.96 ? K_IDLE_HELD : K_IDLE;
        n->sm_base = rng_range(&n->rng, 0.74, 0.92);
        n->dram_base = rng_range(&n->rng, 0.30, 0.58);
        n->tensor_base = rng_range(&n->rng, 0.42, 0.68);
        n->fb_job = floor(rng_range(&n->rng, 62000, 77000));
        n->step_ticks = 2 + (int)(rng_next(&n->rng) % 5);
        n->step_pos = (int)(rng_next(&n->rng) % (uint64_t)n->step_ticks);
        /* start somewhere inside a training phase */
        n->phase = P_CKPT;
        node_new_phase(n);
        if (n->phase == P_TRAIN)
            n->phase_left = 1 + (int)(rng_next(&n->rng) % (uint64_t)n->phase_left);
        for (int g = 0; g < gpus; g++) {
            struct gpu *u = &f->gpu[i * gpus + g];
            u->rng = n->rng ^ (UINT64_C(0x9e3779b97f4a7c15) * (uint64_t)(g + 1));
            rng_next(&u->rng);
            u->temp_offset = rng_range(&u->rng, -3, 5); /* airflow differs by slot */
            u->memtemp_offset = rng_range(&u->rng, 4, 9);
            u->temp = n->kind >= K_IDLE_HELD ? 33 + u->temp_offset : 68 + u->temp_offset;
            u->fb_used = n->kind == K_IDLE ? 0 : n->fb_job + floor(rng_range(&u->rng, -300, 300));
            u->rng2 = u->rng ^ UINT64_C(0x5851f42d4c957f2d);
            u->energy_mj = floor(rng_range(&u->rng2, 1e9, 5e10)); /* days since boot */
            u->replays = (double)(rng_next(&u->rng2) % 4);
        }
    }
    return 0;
}

static void fleet_free(struct fleet *f)
{
    free(f->node);
    free(f->gpu);
    free(f->stamp);
}

/* Advances every node and GPU by one tick at base time t. */
static void fleet_tick(struct fleet *f, int64_t t)
{
    for (int i = 0; i < f->nodes; i++) {
        struct node *n = &f->node[i];
        if (--n->phase_left <= 0)
            node_new_phase(n);
        n->step_pos = (n->step_pos + 1) % n->step_ticks;
        int64_t jit = f->jitter_ms > 0 ? (int64_t)(rng_next(&n->rng) % (uint64_t)(f->jitter_ms + 1)) : 0;
        f->stamp[i] = t + jit;
        int burst = n->step_pos == 0;
        double starve = n->kind == K_STARVED ? 0.5 + 0.5 * sin((double)t / 37000.0) : 0;
        for (int g = 0; g < f->gpus; g++) {
            struct gpu *u = &f->gpu[i * f->gpus + g];
            double *v = u->v, util, sm, dram, tensor, power, pcie;
            uint64_t *r = &u->rng;
            switch (n->phase) {
            case P_TRAIN:
                if (n->kind == K_STARVED) {
                    util = round(clamp(55 + 40 * starve + 6 * rng_normal(r), 0, 100));
                    sm = clamp(0.25 + 0.35 * starve + 0.03 * rng_normal(r), 0, 1);
                } else {
                    util = round(clamp(100 - fabs(1.3 * rng_normal(r)), 0, 100));
                    sm = clamp(n->sm_base + 0.012 * rng_normal(r), 0, 1);
                }
                dram = clamp(n->dram_base * sm / n->sm_base + 0.015 * rng_normal(r), 0, 1);
                tensor = clamp(n->tensor_base * sm / n->sm_base + 0.015 * rng_normal(r), 0, 1);
                power = 330 + 380 * sm + 12 * rng_normal(r);
                pcie = burst ? 2.1e9 + 2e8 * rng_normal(r) : 1.4e7 + 3e6 * rng_normal(r);
                break;
            case P_EVAL:
                util = round(clamp(72 + 6 * rng_normal(r), 0, 100));
                sm = clamp(0.45 + 0.03 * rng_normal(r), 0, 1);
                dram = clamp(0.25 + 0.02 * rng_normal(r), 0, 1);
                tensor = clamp(0.30 + 0.02 * rng_normal(r), 0, 1);
                power = 390 + 15 * rng_normal(r);
                pcie = burst ? 9e8 + 1e8 * rng_normal(r) : 1e7 + 2e6 * rng_normal(r);
                break;
            case P_CKPT:
                util = round(clamp(4 + fabs(3 * rng_normal(r)), 0, 100));
                sm = clamp(0.02 + 0.01 * fabs(rng_normal(r)), 0, 1);
                dram = clamp(0.03 + 0.01 * fabs(rng_normal(r)), 0, 1);
                tensor = 0;
                power = 150 + 8 * rng_normal(r);
                pcie = 6e9 + 4e8 * rng_normal(r); /* weights to host memory */
                break;
            default:
                util = 0;
                sm = dram = tensor = 0;
                power = 69 + 0.7 * rng_normal(r);
                pcie = 12000 + 2000 * rng_normal(r);
                break;
            }
            power = clamp(power, 60, POWER_LIMIT + 5);
            /* temperature follows power with a minute-scale lag */
            u->temp += (32 + 0.062 * power + u->temp_offset - u->temp) * 0.02 + 0.05 * rng_normal(r);
            double sm_clock = SM_CLOCK_MAX;
            if (n->phase == P_IDLE)
                sm_clock = 345;
            else if (power > POWER_LIMIT - 15) /* power capping pulls clocks down in 15 MHz bins */
                sm_clock = SM_CLOCK_MAX - 15 * (double)(1 + rng_next(r) % 8);
            v[M_GPU_UTIL] = util;
            v[M_GPU_TEMP] = round(u->temp);
            v[M_MEMORY_TEMP] = round(u->temp + u->memtemp_offset);
            v[M_POWER] = round(power * 1000) / 1000; /* NVML reports mW */
            v[M_FB_USED] = u->fb_used;
            v[M_FB_FREE] = FB_TOTAL_MIB - FB_RESERVED_MIB - u->fb_used;
            v[M_SM_CLOCK] = sm_clock;
            v[M_MEM_CLOCK] = MEM_CLOCK;
            /* "%f": the nearest double to the 6-decimal text */
            v[M_SM_ACTIVE] = round(sm * 1e6) / 1e6;
            v[M_DRAM_ACTIVE] = round(dram * 1e6) / 1e6;
            v[M_TENSOR_ACTIVE] = round(tensor * 1e6) / 1e6;
            v[M_PCIE_TX] = round(fmax(pcie, 0));
            if (nfam > M_BASE_COUNT) {
                uint64_t *r2 = &u->rng2;
                u->energy_mj += round(power * (double)f->interval_ms); /* W x ms = mJ */
                if (rng_unit(r2) < 1e-4) /* PCIe replays are rare */
                    u->replays += 1;
                v[M_ENERGY] = u->energy_mj;
                v[M_PCIE_REPLAY] = u->replays;
                v[M_XID] = 0;
                v[M_MEM_COPY_UTIL] = round(clamp(100 * dram * 0.9 + 2 * rng_normal(r2), 0, 100));
                v[M_ENC_UTIL] = 0;
                v[M_DEC_UTIL] = 0;
                v[M_GR_ACTIVE] = round(clamp(sm + 0.03 + 0.01 * rng_normal(r2), 0, 1) * 1e6) / 1e6;
                v[M_PCIE_RX] = round(fmax(0.4 * pcie + 1e6 * rng_normal(r2), 0));
            }
        }
    }
}

/* ---- labels ---- */

#define NLABELS 10
struct series_labels {
    char uuid[48], host[32], instance[48], gpu[16], device[24], pci[32];
};

static void make_labels(struct series_labels *sl, uint64_t seed, int node, int g)
{
    uint64_t r = seed ^ (UINT64_C(0xa0761d6478bd642f) * (uint64_t)(node * 64 + g + 1));
    uint64_t a = rng_next(&r), b = rng_next(&r);
    snprintf(sl->uuid, sizeof sl->uuid, "GPU-%08x-%04x-%04x-%04x-%012llx", (unsigned)(a >> 32),
             (unsigned)(a >> 16) & 0xffff, (unsigned)a & 0xffff, (unsigned)(b >> 48),
             (unsigned long long)(b & UINT64_C(0xffffffffffff)));
    snprintf(sl->host, sizeof sl->host, "node-%03d", node);
    snprintf(sl->instance, sizeof sl->instance, "node-%03d:9400", node);
    snprintf(sl->gpu, sizeof sl->gpu, "%d", g);
    snprintf(sl->device, sizeof sl->device, "nvidia%d", g);
    snprintf(sl->pci, sizeof sl->pci, "00000000:%02X:00.0", g < 8 ? pci_bus[g] : 0xe0 + g);
}

static struct gp_str S(const char *s)
{
    return (struct gp_str){s, strlen(s)};
}

/* Fills the 10 labels of (metric m, GPU sl), sorted by name. */
static void fill_labels(struct gp_label *l, const struct series_labels *sl, int m)
{
    l[0] = (struct gp_label){S("DCGM_FI_DRIVER_VERSION"), S(DRIVER)};
    l[1] = (struct gp_label){S("Hostname"), S(sl->host)};
    l[2] = (struct gp_label){S("UUID"), S(sl->uuid)};
    l[3] = (struct gp_label){S("__name__"), S(metric[m])};
    l[4] = (struct gp_label){S("device"), S(sl->device)};
    l[5] = (struct gp_label){S("gpu"), S(sl->gpu)};
    l[6] = (struct gp_label){S("instance"), S(sl->instance)};
    l[7] = (struct gp_label){S("job"), S("dcgm-exporter")};
    l[8] = (struct gp_label){S("modelName"), S(MODEL)};
    l[9] = (struct gp_label){S("pci_bus_id"), S(sl->pci)};
}

/* ---- output ---- */

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static int xwrite(FILE *fp, const void *p, size_t n)
{
    return fwrite(p, 1, n, fp) == n ? 0 : -1;
}

struct opts {
    int nodes, gpus, minutes, jitter_ms, per_req_nodes, per_req_ts;
    int64_t end_ms, interval_ms;
    uint64_t seed;
    const char *format, *out;
};

static int gen_rw(const struct opts *o, struct fleet *f, const struct series_labels *sl, int64_t first,
                  int64_t ticks, FILE *fp)
{
    int shards = (o->nodes + o->per_req_nodes - 1) / o->per_req_nodes;
    int per_node = o->gpus * nfam;
    size_t max_series = (size_t)o->per_req_nodes * (size_t)per_node;
    struct gp_series *series = calloc(max_series, sizeof *series);
    struct gp_label *labels = calloc(max_series * NLABELS, sizeof *labels);
    /* samples[shard][series][ts] for one block of ticks */
    size_t nsamp = (size_t)o->nodes * (size_t)per_node * (size_t)o->per_req_ts;
    struct gp_sample *samp = calloc(nsamp, sizeof *samp);
    if (!series || !labels || !samp) {
        fprintf(stderr, "fleetgen: out of memory\n");
        return -1;
    }
    uint8_t hdr[GP_BODIES_HEADER_LEN] = {0};
    if (xwrite(fp, hdr, sizeof hdr) != 0) /* rewritten at the end */
        return -1;
    struct gp_buf out, scratch;
    gp_buf_init(&out, 256u << 20);
    gp_buf_init(&scratch, 256u << 20);
    uint64_t bodies = 0, total = 0;
    int64_t last_ms = first;
    for (int64_t k = 0; k < ticks; k += o->per_req_ts) {
        int nts = (int)(ticks - k < o->per_req_ts ? ticks - k : o->per_req_ts);
        for (int j = 0; j < nts; j++) {
            fleet_tick(f, first + (k + j) * o->interval_ms);
            for (int n = 0; n < o->nodes; n++) {
                if (f->stamp[n] > last_ms)
                    last_ms = f->stamp[n];
                for (int g = 0; g < o->gpus; g++)
                    for (int m = 0; m < nfam; m++) {
                        size_t si = (size_t)n * (size_t)per_node + (size_t)g * (size_t)nfam + (size_t)m;
                        samp[si * (size_t)o->per_req_ts + (size_t)j] =
                            (struct gp_sample){f->gpu[n * o->gpus + g].v[m], f->stamp[n]};
                    }
            }
        }
        for (int s = 0; s < shards; s++) {
            int n0 = s * o->per_req_nodes, n1 = n0 + o->per_req_nodes;
            if (n1 > o->nodes)
                n1 = o->nodes;
            size_t ns = 0;
            for (int n = n0; n < n1; n++)
                for (int g = 0; g < o->gpus; g++)
                    for (int m = 0; m < nfam; m++) {
                        size_t si = (size_t)n * (size_t)per_node + (size_t)g * (size_t)nfam + (size_t)m;
                        fill_labels(&labels[ns * NLABELS], &sl[n * o->gpus + g], m);
                        series[ns] = (struct gp_series){&labels[ns * NLABELS], NLABELS,
                                                           &samp[si * (size_t)o->per_req_ts], (size_t)nts};
                        ns++;
                    }
            struct gp_batch req = {series, ns, ns * NLABELS, ns * (size_t)nts, NULL};
            int rc = gp_rw_encode(&req, &out, &scratch);
            if (rc != GP_OK) {
                fprintf(stderr, "fleetgen: encode: %s\n", gp_strerror(rc));
                return -1;
            }
            uint8_t rec[GP_BODIES_RECORD_LEN];
            put32(rec, (uint32_t)s);
            put32(rec + 4, (uint32_t)out.len);
            put64(rec + 8, req.nsamples_total);
            if (xwrite(fp, rec, sizeof rec) != 0 || xwrite(fp, out.data, out.len) != 0)
                return -1;
            bodies++;
            total += req.nsamples_total;
        }
    }
    memcpy(hdr, GP_BODIES_MAGIC, 8);
    put32(hdr + 8, GP_BODIES_VERSION);
    put32(hdr + 12, (uint32_t)shards);
    put64(hdr + 16, bodies);
    put64(hdr + 24, total);
    put64(hdr + 32, (uint64_t)first);
    put64(hdr + 40, (uint64_t)last_ms);
    put32(hdr + 48, (uint32_t)(o->nodes * per_node));
    long size = ftell(fp);
    if (fseek(fp, 0, SEEK_SET) != 0 || xwrite(fp, hdr, sizeof hdr) != 0)
        return -1;
    fprintf(stderr, "fleetgen: %d series, %llu samples in %llu bodies (%d shards), %.1f MiB\n",
            o->nodes * per_node, (unsigned long long)total, (unsigned long long)bodies, shards,
            (double)size / 1048576.0);
    gp_buf_free(&out);
    gp_buf_free(&scratch);
    free(series);
    free(labels);
    free(samp);
    return 0;
}

static int gen_om(const struct opts *o, struct fleet *f, const struct series_labels *sl, int64_t first,
                  int64_t ticks, FILE *fp)
{
    /* the label part of every series, rendered once */
    size_t nser = (size_t)o->nodes * (size_t)o->gpus * (size_t)nfam;
    char **lab = calloc(nser, sizeof *lab);
    if (!lab)
        return -1;
    for (int n = 0; n < o->nodes; n++)
        for (int g = 0; g < o->gpus; g++)
            for (int m = 0; m < nfam; m++) {
                const struct series_labels *x = &sl[n * o->gpus + g];
                char *s = NULL;
                if (asprintf(&s,
                             "%s{gpu=\"%s\",UUID=\"%s\",device=\"%s\",modelName=\"%s\",Hostname=\"%s\","
                             "pci_bus_id=\"%s\",DCGM_FI_DRIVER_VERSION=\"%s\",instance=\"%s\","
                             "job=\"dcgm-exporter\"} ",
                             metric[m], x->gpu, x->uuid, x->device, MODEL, x->host, x->pci, DRIVER,
                             x->instance) < 0)
                    return -1;
                lab[((size_t)n * (size_t)o->gpus + (size_t)g) * (size_t)nfam + (size_t)m] = s;
            }
    struct gp_buf b;
    gp_buf_init(&b, 256u << 20);
    uint64_t total = 0;
    for (int64_t k = 0; k < ticks; k++) {
        fleet_tick(f, first + k * o->interval_ms);
        gp_buf_reset(&b);
        for (int n = 0; n < o->nodes; n++) {
            char ts[32];
            snprintf(ts, sizeof ts, " %lld.%03lld\n", (long long)(f->stamp[n] / 1000),
                     (long long)(f->stamp[n] % 1000));
            for (int g = 0; g < o->gpus; g++)
                for (int m = 0; m < nfam; m++) {
                    gp_buf_puts(&b, lab[((size_t)n * (size_t)o->gpus + (size_t)g) * (size_t)nfam + (size_t)m]);
                    gp_buf_put_double(&b, f->gpu[n * o->gpus + g].v[m]);
                    gp_buf_puts(&b, ts);
                    total++;
                }
        }
        if (b.err || xwrite(fp, b.data, b.len) != 0)
            return -1;
    }
    if (fputs("# EOF\n", fp) < 0)
        return -1;
    fprintf(stderr, "fleetgen: %zu series, %llu samples, %.1f MiB of OpenMetrics\n", nser,
            (unsigned long long)total, (double)ftell(fp) / 1048576.0);
    gp_buf_free(&b);
    for (size_t i = 0; i < nser; i++)
        free(lab[i]);
    free(lab);
    return 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: fleetgen [-n NODES] [-g GPUS] [-m MINUTES] [-e END_MS] [-i INTERVAL_MS]\n"
                    "                [-s SEED] [-j JITTER_MS] [-G NODES_PER_REQUEST]\n"
                    "                [-T TIMESTAMPS_PER_REQUEST] [-F 12|20] [-f rw|om] -o FILE\n");
    exit(2);
}

static long long num(const char *s, long long lo, long long hi)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi) {
        fprintf(stderr, "fleetgen: '%s' is not a number in [%lld, %lld]\n", s, lo, hi);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    struct opts o = {.nodes = 64, .gpus = 8, .minutes = 60, .jitter_ms = 2, .per_req_nodes = 8,
                     .per_req_ts = 2, .interval_ms = 1000, .seed = 1, .format = "rw"};
    int c;
    while ((c = getopt(argc, argv, "n:g:m:e:i:s:j:G:T:F:f:o:")) != -1) {
        switch (c) {
        case 'n': o.nodes = (int)num(optarg, 1, 100000); break;
        case 'g': o.gpus = (int)num(optarg, 1, 16); break;
        case 'm': o.minutes = (int)num(optarg, 1, 60 * 24 * 30); break;
        case 'e': o.end_ms = num(optarg, 1, INT64_MAX / 2); break;
        case 'i': o.interval_ms = num(optarg, 1, 3600000); break;
        case 's': o.seed = (uint64_t)num(optarg, 0, INT64_MAX); break;
        case 'j': o.jitter_ms = (int)num(optarg, 0, 1000); break;
        case 'G': o.per_req_nodes = (int)num(optarg, 1, 100000); break;
        case 'T': o.per_req_ts = (int)num(optarg, 1, 1000); break;
        case 'F':
            nfam = (int)num(optarg, M_BASE_COUNT, M_COUNT);
            if (nfam != M_BASE_COUNT && nfam != M_COUNT)
                usage();
            break;
        case 'f': o.format = optarg; break;
        case 'o': o.out = optarg; break;
        default: usage();
        }
    }
    if (!o.out || optind != argc || (strcmp(o.format, "rw") != 0 && strcmp(o.format, "om") != 0))
        usage();
    if (o.jitter_ms >= o.interval_ms) {
        fprintf(stderr, "fleetgen: jitter must be shorter than the interval\n");
        return 2;
    }
    if (!o.end_ms) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        o.end_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    }
    o.end_ms -= o.end_ms % o.interval_ms;
    int64_t ticks = (int64_t)o.minutes * 60000 / o.interval_ms;
    int64_t first = o.end_ms - ticks * o.interval_ms;

    struct fleet f;
    struct series_labels *sl = calloc((size_t)o.nodes * (size_t)o.gpus, sizeof *sl);
    if (!sl || fleet_init(&f, o.nodes, o.gpus, o.seed, o.interval_ms, o.jitter_ms) != 0) {
        fprintf(stderr, "fleetgen: out of memory\n");
        return 1;
    }
    for (int n = 0; n < o.nodes; n++)
        for (int g = 0; g < o.gpus; g++)
            make_labels(&sl[n * o.gpus + g], o.seed, n, g);
    FILE *fp = fopen(o.out, "wb");
    if (!fp) {
        fprintf(stderr, "fleetgen: %s: %s\n", o.out, strerror(errno));
        return 1;
    }
    setvbuf(fp, NULL, _IOFBF, 1 << 20);
    int rc = strcmp(o.format, "rw") == 0 ? gen_rw(&o, &f, sl, first, ticks, fp)
                                         : gen_om(&o, &f, sl, first, ticks, fp);
    if (fclose(fp) != 0)
        rc = -1;
    if (rc != 0) {
        fprintf(stderr, "fleetgen: writing %s failed\n", o.out);
        return 1;
    }
    fleet_free(&f);
    free(sl);
    return 0;
}
