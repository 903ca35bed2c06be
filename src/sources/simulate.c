/*
 * simulate.c - simulated training nodes (--simulate SPEC).
 *
 * Stands in for the hardware sources in demos, load tests and benchmarks:
 * every GPU of the spec becomes a gp_gpu marked simulated, on a node named
 * "sim-node-<n>", with the identity a real box would give it (UUID, PCI
 * bus id, device, model, driver) and the readings the real source fills
 * for that vendor and generation: PROF_* only where NVML has GPM (Hopper
 * and later), memory temperature only on HBM parts, fan only where there
 * is one, row remapping or page retirement by generation.
 *
 * Parts:
 * - noise: a hash-based value noise (splitmix64 of seed, GPU and time
 *   cell, smoothly interpolated), so the series wander like real ones yet
 *   are a pure function of (seed, GPU, time since the first tick). Two
 *   instances with the same seed sampled at the same relative times give
 *   identical frames; no rand(), no global state.
 * - behaviours: each GPU plays one workload (simulate.h), from the plan
 *   (simulate_plan.h): exactly one leak, straggler, starved job,
 *   throttled card, ECC error, idle allocation, power-capped straggler,
 *   hung job and crash loop, the rest healthy and compute-bound (a short
 *   dip between batches every half minute or so, memory that rises once
 *   when the job starts, then plateaus). Ranks of node jobs checkpoint
 *   every few minutes (utilization and memory dip, the steps pause, a
 *   checkpoint phase is reported); a hung job's ranks stop stepping, the
 *   one it waits for idle on the host, the others spinning in NCCL (busy,
 *   few SMs active), with Flight Recorder state a minute later; a crash
 *   loop's ranks die together, restart with new pids and repeat the
 *   steps they had done (timeline(), numbers from the plan). Memory
 *   and allocator bytes carry allocator noise (+-10 MiB, new each second),
 *   and the leak grows in stairs with partial frees, as real allocators
 *   do: detectors tuned on smooth lines would not hold on real data.
 * - jobs and steps: every GPU is a rank of its plan's job. The job's
 *   process is there from the first tick (so a GPU's job and rank labels
 *   never change), loads for its start offset (1-5 s) plus LOAD_S (memory
 *   ramps up once, no work), then steps. Each rank is one
 *   gp_job entry (job, rank) and, while it steps, one step reporter in
 *   frame->steps whose counters are closed forms of the time it has run:
 *   steps at the rank's step time (slower on the straggler, one a data
 *   cycle on the starved GPU), data wait, samples, tokens and allocator
 *   bytes that follow the GPU's memory. frame->nsim_jobs tells the jobs
 *   source to keep them.
 * - counters (energy, PCIe bytes, throttle time) integrate the gauges
 *   from tick to tick (trapezoids), starting from a plausible
 *   "since boot" value, and never go down.
 *
 * Gauges that NVML averages over a period (utilization, GPM ratios) are
 * averaged here over the last second, which is what turns the starved
 * GPU's square wave of work into the sawtooth a scrape sees.
 */
#include "simulate.h"

#include "lib/err.h"
#include "lib/gpumodels.h"
#include "simulate_spec.h"
#include "steps_proto.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024.0 * 1024.0)
#define GP_SIM_DRIVER_NVIDIA "550.127.05"
#define GP_SIM_DRIVER_AMD "6.8.5"
#define RESTART_S GP_SIM_RESTART_S
#define LOAD_S GP_SIM_LOAD_S
#define LEAK_FROM 0.55 /* a leaking rank's memory share when it starts stepping */
#define LEAK_TO 0.99   /* ... when it dies of OOM */
#define LEAK_STAIR_S 20.0  /* the leak grows stepwise: a stair every 20 s, */
#define LEAK_FREE 0.3      /* ... and frees this share of one halfway through it */
#define ALLOC_NOISE_MIB 10.0 /* allocator noise: memory moves +-10 MiB between samples */
#define BATCH GP_SIM_BATCH
#define SEQ GP_SIM_SEQ
#define CKPT_DIP 0.05  /* a checkpoint frees this share of memory (activations) while it saves */
#define POWERCAP_LIMIT 0.6 /* the powercap card's limit, share of the model's */

struct sim_gpu {
    const struct gp_gpumodel *m;
    unsigned node, index; /* node number in the fleet, GPU index within it */
    enum gp_sim_behaviour beh;
    const struct gp_sim_slot *slot; /* job, rank, start (the state's plan) */
    char job[32];
    double step_s;     /* seconds per step while running (starved: period_s); the plan's */
    double ecc_at_s;   /* ecc: when the double-bit error happens */
    uint64_t key; /* hash of (seed, node, index): every per-GPU constant and noise */
    char uuid[48], pci[32], device[16], nodename[32];
    uint32_t pid_base; /* this node's fake pid range starts here */
    double mem_frac;   /* steady memory use, fraction of total */
    double period_s;   /* starved: input cycle; leaking: time from first step to OOM */
    double duty;       /* starved: busy share of the cycle */
    double phase_s;    /* starved: offset into the cycle at t = 0 */
    double dip_period_s; /* healthy: a dip between batches every this long */
    double temp_base;  /* busy temperature, C */
    /* counters and the previous tick's rates, for the trapezoids */
    bool have_last;
    double last_t;
    double energy_mj, pcie_tx_b, pcie_rx_b, power_viol_us, thermal_viol_us;
    double last_power, last_tx, last_rx, last_pcap, last_therm;
};

struct sim_state {
    unsigned n;
    struct sim_gpu *gpus;
    struct gp_sim_plan plan;
    bool started;
    int64_t t0_ms;
};

/* One tick's readings of one GPU, before they go into the frame. */
struct sim_reading {
    double util, copy_util;                 /* % */
    double gr, sm, occ, tensor, dram, fp64, fp32, fp16; /* ratios */
    double pcie_tx, pcie_rx, nvl_tx, nvl_rx; /* bytes/s */
    double power, sm_clock, mem_clock, temp, mem_temp, fan;
    double mem_frac;
    double power_capped, thermal_throttled; /* share of the period, 0..1 */
    uint64_t clock_events;
    uint32_t pid;
    double run_s;    /* how long the process has stepped; < 0: not stepping */
    double alloc_noise; /* bytes the allocator holds beyond mem_frac now */
    double power_limit; /* W; 0: the model's */
    /* the process's timeline (timeline()): what its step counters show */
    double active_s;    /* seconds it spent stepping (checkpoints and a hang excluded) */
    double ckpts;       /* checkpoints it finished */
    bool hung;          /* its job hangs: no more steps, the process lives */
    double hung_s;      /* ... for this long */
};

/* ---- noise ---- */

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Uniform in [0, 1) from a key and two more words (the plan's hash). */
static double hash_unit(uint64_t key, uint64_t a, uint64_t b) { return gp_sim_unit(key, a, b); }

/* Smooth value noise in [-1, 1]: hashed values at cells of `scale` seconds. */
static double vnoise(uint64_t key, unsigned chan, double t, double scale)
{
    double x = t / scale, c = floor(x), f = x - c;
    uint64_t i = (uint64_t)(int64_t)c;
    double a = 2.0 * hash_unit(key, chan, i) - 1.0;
    double b = 2.0 * hash_unit(key, chan, i + 1) - 1.0;
    double u = f * f * (3.0 - 2.0 * f);
    return a + (b - a) * u;
}

/* Two octaves: slow drift plus faster jitter, still within [-1, 1]. */
static double noise(const struct sim_gpu *sg, unsigned chan, double t)
{
    return 0.65 * vnoise(sg->key, chan, t, 7.0) + 0.35 * vnoise(sg->key, chan + 1000, t, 1.7);
}

static double clamp(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ---- behaviours ---- */

/* Busy time of a square wave (period p, duty d, offset o) integrated from 0 to t. */
static double busy_integral(double t, double p, double d, double o)
{
    double x = (t + o) / p, c = floor(x);
    return (c * d + fmin(x - c, d)) * p;
}

/* Everything of a compute-bound GPU; the other behaviours start from it. */
static void compute_bound(const struct sim_gpu *sg, double t, struct sim_reading *r)
{
    const struct gp_gpumodel *m = sg->m;
    r->util = clamp(98.6 + 1.4 * noise(sg, 1, t), 0, 100);
    r->copy_util = clamp(38 + 10 * noise(sg, 2, t), 0, 100);
    r->sm = clamp(0.90 + 0.045 * noise(sg, 3, t), 0, 1);
    r->gr = clamp(r->sm + 0.04, 0, 1);
    r->occ = clamp(0.45 + 0.08 * noise(sg, 4, t), 0, 1);
    r->tensor = m->tensor_cores ? clamp(0.60 + 0.09 * noise(sg, 5, t), 0, 1) : 0;
    r->dram = clamp(0.45 + 0.08 * noise(sg, 6, t), 0, 1);
    r->fp64 = clamp(0.002 + 0.002 * noise(sg, 7, t), 0, 1);
    r->fp32 = clamp(0.12 + 0.04 * noise(sg, 8, t), 0, 1);
    r->fp16 = clamp(0.15 + 0.05 * noise(sg, 9, t), 0, 1);
    double pcie = m->pcie_gbps * 1e9;
    r->pcie_rx = clamp(0.03 * pcie * (1 + 0.5 * noise(sg, 10, t)), 0, pcie);
    r->pcie_tx = clamp(0.012 * pcie * (1 + 0.5 * noise(sg, 11, t)), 0, pcie);
    double nvl = m->nvlink_gbps * 1e9;
    r->nvl_tx = clamp(nvl * (0.35 + 0.1 * noise(sg, 12, t)), 0, nvl);
    r->nvl_rx = clamp(nvl * (0.35 + 0.1 * noise(sg, 13, t)), 0, nvl);
    double pl = m->power_limit_w;
    r->power = pl * (0.90 + 0.04 * noise(sg, 14, t)); /* never at the cap: healthy cards do not throttle */
    r->power_capped = clamp((r->power / pl - 0.97) / 0.02, 0, 1);
    r->sm_clock = m->sm_clock_max_mhz * (1 - 0.03 * r->power_capped);
    r->mem_clock = m->mem_clock_max_mhz;
    if (r->power_capped > 0)
        r->clock_events |= 0x4; /* sw_power_cap */
    r->temp = sg->temp_base + 3 * noise(sg, 15, t);
    r->mem_temp = r->temp + 6 + 2 * noise(sg, 16, t);
    r->fan = clamp(0.6 + 0.1 * noise(sg, 17, t), 0, 1);
    r->mem_frac = clamp(sg->mem_frac + 0.001 * noise(sg, 18, t), 0, 0.99);
}

/* A healthy GPU's short dip between batches (evaluation, logging): about
 * a second and a half every half minute, averaged over the last second. */
static void batch_dips(const struct sim_gpu *sg, double t, struct sim_reading *r)
{
    double p = sg->dip_period_s, d = 1 - 1.5 / p;
    double b = busy_integral(t, p, d, sg->phase_s) - busy_integral(t - 1.0, p, d, sg->phase_s);
    b = clamp(b, 0, 1);
    if (b >= 1)
        return;
    double idle = 1 - b;
    r->util = b * r->util + idle * 55;
    r->sm = b * r->sm + idle * 0.30;
    r->gr = clamp(r->sm + 0.04, 0, 1);
    r->tensor *= b;
    r->fp16 *= b;
    r->fp32 *= b;
    r->power -= idle * 0.35 * (r->power - sg->m->idle_power_w);
}

/* Busy bursts, then waits for the next batch: work scales with the busy share. */
static void starved(const struct sim_gpu *sg, double t, struct sim_reading *r)
{
    const struct gp_gpumodel *m = sg->m;
    compute_bound(sg, t, r);
    double w0 = t - 1.0; /* the last second, what NVML averages over */
    double b = busy_integral(t, sg->period_s, sg->duty, sg->phase_s) -
               busy_integral(w0, sg->period_s, sg->duty, sg->phase_s);
    b = clamp(b, 0, 1);
    double idle = 1 - b;
    r->util = clamp(b * r->util + idle * (1.5 + 1.5 * noise(sg, 20, t)), 0, 100);
    r->copy_util *= b;
    r->sm = b * r->sm + idle * 0.03;
    r->gr = clamp(r->sm + 0.02, 0, 1);
    r->occ *= b;
    r->tensor *= b;
    r->dram = b * r->dram + idle * 0.02;
    r->fp32 *= b;
    r->fp16 *= b;
    r->fp64 *= b;
    r->nvl_tx *= b;
    r->nvl_rx *= b;
    double pcie = m->pcie_gbps * 1e9;
    r->pcie_rx = clamp(b * r->pcie_rx + idle * pcie * (0.55 + 0.1 * noise(sg, 21, t)), 0, pcie);
    double wait_power = 1.8 * m->idle_power_w;
    r->power = wait_power + (r->power - wait_power) * b;
    r->power_capped *= b;
    if (r->power_capped <= 0)
        r->clock_events &= ~0x4ull;
    r->temp -= 8 * idle;
    r->mem_temp -= 8 * idle;
    if (r->util < 5)
        r->clock_events |= 0x1; /* gpu_idle */
}

/* A crashed rank's new process loads for tl of RESTART_S: memory rises
 * back to plateau, no work. */
static void reloading(const struct sim_gpu *sg, double t, double tl, double plateau, struct sim_reading *r)
{
    r->mem_frac = 0.03 + (plateau - 0.03) * tl / RESTART_S;
    r->util = clamp(1 + noise(sg, 30, t), 0, 100);
    r->copy_util = 0;
    r->sm = r->gr = r->occ = r->tensor = r->fp16 = r->fp32 = r->fp64 = 0.005;
    r->dram = 0.01;
    r->nvl_tx = r->nvl_rx = 0;
    r->power = sg->m->idle_power_w * 1.3;
    r->power_capped = 0;
    r->clock_events = 0x1;
    r->temp -= 15;
    r->mem_temp -= 15;
    r->run_s = -1;
}

/*
 * Memory grows from LEAK_FROM to LEAK_TO over period_s of stepping, at a
 * steady step rate, in stairs: each LEAK_STAIR_S it takes the stair's
 * growth at once and frees LEAK_FREE of a stair halfway through (a
 * stepwise leak with partial frees, linear on average); then the job dies (OOM), restarts
 * (RESTART_S loading, a new pid) and leaks again. run is the time since
 * the first step of the first process.
 */
static void leaking(const struct sim_gpu *sg, double run, double t, struct sim_reading *r,
                    unsigned *cycle)
{
    double c = floor(run / (sg->period_s + RESTART_S));
    double tc = run - c * (sg->period_s + RESTART_S);
    *cycle = (unsigned)fmod(c, 1024.0); /* only picks the pid: keep the cast in range */
    if (tc >= sg->period_s) {
        reloading(sg, t, tc - sg->period_s, LEAK_FROM, r); /* died of OOM */
        return;
    }
    double n = floor(tc / LEAK_STAIR_S), grown = fmin(sg->period_s, (n + 1) * LEAK_STAIR_S);
    if (tc - n * LEAK_STAIR_S >= LEAK_STAIR_S / 2)
        grown -= LEAK_FREE * LEAK_STAIR_S;
    r->mem_frac = LEAK_FROM + (LEAK_TO - LEAK_FROM) * grown / sg->period_s;
    r->run_s = r->active_s = tc;
}

/* Hot: thermal slowdown holds the SM clock down, so it does less work than its peers. */
static void straggler(const struct sim_gpu *sg, double t, struct sim_reading *r)
{
    const struct gp_gpumodel *m = sg->m;
    compute_bound(sg, t, r);
    r->temp = 88.5 + 1.5 * noise(sg, 40, t);
    r->mem_temp = r->temp + 5;
    r->sm_clock = m->sm_clock_max_mhz * (0.62 + 0.06 * noise(sg, 41, t));
    r->util = clamp(95.5 + 3 * noise(sg, 42, t), 0, 100);
    r->sm = clamp(0.62 + 0.05 * noise(sg, 43, t), 0, 1);
    r->gr = clamp(r->sm + 0.05, 0, 1);
    r->tensor = m->tensor_cores ? clamp(0.35 + 0.05 * noise(sg, 44, t), 0, 1) : 0;
    r->fp16 *= 0.6;
    r->fp32 *= 0.6;
    r->dram *= 0.7;
    r->nvl_tx *= 0.6;
    r->nvl_rx *= 0.6;
    r->power = m->power_limit_w * (0.70 + 0.05 * noise(sg, 45, t));
    r->power_capped = 0;
    r->thermal_throttled = clamp(0.9 + 0.1 * noise(sg, 46, t), 0, 1);
    r->clock_events = 0x40 | 0x20; /* hw_thermal_slowdown | sw_thermal_slowdown */
    r->fan = 1.0;
}

/* A job holds memory but runs nothing (a hung rank, a notebook left open). */
static void idle_allocated(const struct sim_gpu *sg, double t, struct sim_reading *r)
{
    const struct gp_gpumodel *m = sg->m;
    compute_bound(sg, t, r);
    r->util = clamp(0.5 + 0.5 * noise(sg, 50, t), 0, 100);
    r->copy_util = 0;
    r->sm = clamp(0.002 * (1 + noise(sg, 51, t)), 0, 1);
    r->gr = r->sm;
    r->occ = r->sm / 2;
    r->tensor = r->fp16 = r->fp32 = r->fp64 = 0;
    r->dram = 0.001;
    r->pcie_rx *= 0.01;
    r->pcie_tx *= 0.01;
    r->nvl_tx = r->nvl_rx = 0;
    r->power = m->idle_power_w * (1.05 + 0.05 * noise(sg, 52, t));
    r->power_capped = 0;
    r->sm_clock = round(m->sm_clock_max_mhz * 0.175);
    r->mem_clock = m->hbm ? m->mem_clock_max_mhz : round(m->mem_clock_max_mhz * 0.13);
    r->clock_events = 0x1; /* gpu_idle */
    r->temp = sg->temp_base - 30 + 2 * noise(sg, 53, t);
    r->mem_temp = r->temp + 4;
    r->fan = 0.3;
    r->mem_frac = sg->mem_frac;
}

/* Power-capped most of the time: at the limit, clocks held down, the cap reason set. */
static void throttled(const struct sim_gpu *sg, double t, struct sim_reading *r)
{
    const struct gp_gpumodel *m = sg->m;
    r->power = m->power_limit_w * (0.995 + 0.004 * noise(sg, 60, t));
    r->power_capped = clamp(0.85 + 0.3 * noise(sg, 61, t), 0, 1);
    r->sm_clock = m->sm_clock_max_mhz * (0.80 + 0.03 * noise(sg, 62, t));
    r->clock_events = r->power_capped > 0.3 ? 0x4 | 0x80 : 0x4; /* sw_power_cap, power brake */
    r->temp = 79 + 2 * noise(sg, 63, t);
    r->mem_temp = r->temp + 6;
}

/* Held at a power limit under the card's (nvidia-smi -pl): at that cap
 * most of the time, clocks down, so its rank steps slower than its peers. */
static void powercapped(const struct sim_gpu *sg, double t, struct sim_reading *r)
{
    const struct gp_gpumodel *m = sg->m;
    r->power_limit = POWERCAP_LIMIT * m->power_limit_w;
    r->power = r->power_limit * (0.995 + 0.004 * noise(sg, 80, t));
    r->power_capped = clamp(0.9 + 0.2 * noise(sg, 81, t), 0, 1);
    r->sm_clock = m->sm_clock_max_mhz * (0.72 + 0.03 * noise(sg, 82, t));
    r->clock_events = 0x4; /* sw_power_cap */
    r->temp = sg->temp_base - 6 + 2 * noise(sg, 83, t);
    r->mem_temp = r->temp + 6;
}

/* A checkpoint: the state goes to the host (copies, little compute) and
 * the activations are freed while it saves: utilization and memory dip. */
static void checkpointing(const struct sim_gpu *sg, double t, struct sim_reading *r)
{
    const struct gp_gpumodel *m = sg->m;
    r->util = clamp(22 + 6 * noise(sg, 90, t), 0, 100);
    r->copy_util = clamp(60 + 10 * noise(sg, 91, t), 0, 100);
    r->sm = clamp(0.08 + 0.03 * noise(sg, 92, t), 0, 1);
    r->gr = clamp(r->sm + 0.02, 0, 1);
    r->occ *= 0.2;
    r->tensor = r->fp16 = r->fp32 = r->fp64 = 0;
    r->dram = 0.1;
    r->pcie_tx = 0.6 * m->pcie_gbps * 1e9 * (1 + 0.05 * noise(sg, 93, t)); /* device to host */
    r->nvl_tx = r->nvl_rx = 0;
    r->power = m->idle_power_w + 0.3 * ((r->power_limit > 0 ? r->power_limit : m->power_limit_w) - m->idle_power_w);
    r->power_capped = 0;
    r->clock_events &= ~(0x4ull | 0x80ull);
    r->mem_frac = fmax(0.03, r->mem_frac - CKPT_DIP);
}

/* Waiting in a collective that never completes: NCCL's kernels poll, so
 * the GPU is busy every sampled moment while few SMs do anything. */
static void spinning(const struct sim_gpu *sg, double t, struct sim_reading *r)
{
    const struct gp_gpumodel *m = sg->m;
    r->util = 100;
    r->copy_util = 0;
    r->sm = clamp(0.18 + 0.02 * noise(sg, 95, t), 0, 1);
    r->gr = clamp(r->sm + 0.02, 0, 1);
    r->occ = 0.05;
    r->tensor = r->fp16 = r->fp32 = r->fp64 = 0;
    r->dram = 0.02;
    r->pcie_tx *= 0.1;
    r->pcie_rx *= 0.1;
    r->nvl_tx = r->nvl_rx = 0;
    r->power = m->idle_power_w + 0.35 * ((r->power_limit > 0 ? r->power_limit : m->power_limit_w) - m->idle_power_w);
    r->power_capped = 0;
    r->clock_events = 0;
    r->temp = sg->temp_base - 10 + 2 * noise(sg, 96, t);
    r->mem_temp = r->temp + 6;
}

/*
 * Where the rank's process is, run seconds after the job's first step
 * (the plan's timeline): in a crash loop, each attempt steps
 * crash_every_s then restarts (RESTART_S) and repeats the same steps; a
 * hang stops the clock of its steps at hang_at_s; checkpoints take
 * ckpt_s after each ckpt_every_s of stepping. Fills run_s, active_s,
 * ckpts, hung and hung_s of r and *attempt; returns false while a
 * crashed process restarts, with *reload_s the time since it crashed.
 */
static bool timeline(const struct gp_sim_slot *sl, double run, struct sim_reading *r,
                     unsigned *attempt, bool *in_ckpt, double *reload_s)
{
    double tr = run;
    *in_ckpt = false;
    if (sl->crash_every_s > 0) {
        double cyc = sl->crash_every_s + RESTART_S, c = floor(run / cyc);
        tr = run - c * cyc;
        *attempt = (unsigned)fmod(c, 1024.0); /* only picks the pid */
        if (tr >= sl->crash_every_s) {
            *reload_s = tr - sl->crash_every_s;
            return false;
        }
    }
    r->hung = sl->hang_at_s > 0 && tr >= sl->hang_at_s;
    if (r->hung) {
        r->hung_s = tr - sl->hang_at_s;
        tr = sl->hang_at_s;
    }
    r->run_s = r->active_s = tr;
    r->ckpts = 0;
    if (sl->ckpt_every_s > 0 && sl->ckpt_s > 0) {
        double per = sl->ckpt_every_s + sl->ckpt_s, n = floor(tr / per), rem = tr - n * per;
        r->ckpts = n;
        r->active_s = n * sl->ckpt_every_s + fmin(rem, sl->ckpt_every_s);
        *in_ckpt = rem >= sl->ckpt_every_s && !r->hung;
    }
    return true;
}

/* The job's start: its process allocates up to the plateau, no work yet. */
static void loading(const struct sim_gpu *sg, double t, double plateau, struct sim_reading *r)
{
    idle_allocated(sg, t, r);
    r->util = clamp(3 + 2 * noise(sg, 70, t), 0, 100);
    r->mem_frac = 0.03 + (plateau - 0.03) * clamp(t / (sg->slot->start_s + LOAD_S), 0, 1);
}

/* Seconds the GPU's process has been stepping at t; < 0 before. */
static double run_time(const struct sim_gpu *sg, double t) { return t - sg->slot->start_s - LOAD_S; }

static void readings(const struct sim_gpu *sg, double t, struct sim_reading *r)
{
    memset(r, 0, sizeof *r);
    /* a new draw each second, not a smooth drift: allocations come and go */
    r->alloc_noise = ALLOC_NOISE_MIB * MIB * (2 * hash_unit(sg->key, 40, (uint64_t)(int64_t)floor(t)) - 1);
    unsigned cycle = 0;
    double run = run_time(sg, t), reload_s = 0;
    bool in_ckpt = false;
    r->run_s = r->active_s = run;
    if (run < 0) {
        loading(sg, t, sg->beh == GP_SIM_LEAKING ? LEAK_FROM : sg->mem_frac, r);
    } else if (sg->beh != GP_SIM_LEAKING && sg->beh != GP_SIM_IDLE &&
               !timeline(sg->slot, run, r, &cycle, &in_ckpt, &reload_s)) {
        compute_bound(sg, t, r);
        reloading(sg, t, reload_s, sg->mem_frac, r); /* crashed: its new process loads */
    } else {
        switch (sg->beh) {
        case GP_SIM_STARVED:
            starved(sg, t, r);
            break;
        case GP_SIM_LEAKING:
            compute_bound(sg, t, r);
            batch_dips(sg, t, r);
            leaking(sg, run, t, r, &cycle);
            break;
        case GP_SIM_STRAGGLER:
            straggler(sg, t, r);
            break;
        case GP_SIM_IDLE:
            idle_allocated(sg, t, r);
            r->run_s = -1; /* holds memory, runs nothing: no steps */
            break;
        case GP_SIM_THROTTLED:
            compute_bound(sg, t, r);
            batch_dips(sg, t, r);
            throttled(sg, t, r);
            break;
        case GP_SIM_POWERCAP:
            compute_bound(sg, t, r);
            batch_dips(sg, t, r);
            powercapped(sg, t, r);
            break;
        case GP_SIM_HANG: /* the rank stuck on the host: its GPU idles, memory held */
            if (r->hung) {
                idle_allocated(sg, t, r);
                break;
            }
            compute_bound(sg, t, r);
            batch_dips(sg, t, r);
            break;
        default: /* compute-bound; the ECC card too (its error is in fill_gpu) */
            compute_bound(sg, t, r);
            batch_dips(sg, t, r);
            break;
        }
        if (r->hung && sg->beh != GP_SIM_HANG)
            spinning(sg, t, r); /* its peers wait for it in a collective */
        if (in_ckpt)
            checkpointing(sg, t, r);
    }
    /* a restarted job gets a new pid (ranks of one node share a range) */
    r->pid = sg->pid_base + sg->index + GP_SIM_MAX_GPUS_PER_NODE * cycle;
}

/* ---- identity and fleet ---- */

/* PCI buses of the GPUs in a DGX/HGX H100 box, then a second set for 16-GPU nodes. */
static const unsigned nv_bus[GP_SIM_MAX_GPUS_PER_NODE] = {
    0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb,
    0x1b, 0x2d, 0x3d, 0x60, 0x9d, 0xae, 0xbd, 0xde};
/* ... and of an 8x MI300X box. */
static const unsigned amd_bus[GP_SIM_MAX_GPUS_PER_NODE] = {
    0x0c, 0x22, 0x38, 0x5c, 0x9f, 0xaf, 0xbf, 0xdf,
    0x0f, 0x25, 0x3b, 0x5f, 0xa2, 0xb2, 0xc2, 0xe2};

static void identity(struct sim_gpu *sg, uint64_t seed)
{
    uint64_t h1 = mix64(sg->key ^ 0x5555), h2 = mix64(sg->key ^ 0xaaaa);
    snprintf(sg->uuid, sizeof sg->uuid, "GPU-%08x-%04x-%04x-%04x-%012llx",
             (unsigned)(h1 >> 32), (unsigned)(h1 >> 16) & 0xffff, (unsigned)h1 & 0xffff,
             (unsigned)(h2 >> 48), (unsigned long long)(h2 & 0xffffffffffffull));
    snprintf(sg->nodename, sizeof sg->nodename, "sim-node-%u", sg->node);
    if (sg->m->vendor == GP_VENDOR_AMD) {
        snprintf(sg->pci, sizeof sg->pci, "0000:%02x:00.0", amd_bus[sg->index]);
        snprintf(sg->device, sizeof sg->device, "card%u", sg->index);
    } else {
        snprintf(sg->pci, sizeof sg->pci, "00000000:%02X:00.0", nv_bus[sg->index]);
        snprintf(sg->device, sizeof sg->device, "nvidia%u", sg->index);
    }
    uint64_t nk = mix64(seed ^ mix64(0x6e6f6465ull + sg->node));
    sg->pid_base = 100000 + (uint32_t)(nk % 3000u) * 1000u; /* up to ~3.12e6 with restarts: below pid_max */
    double u[8];
    for (unsigned i = 0; i < 8; i++)
        u[i] = hash_unit(sg->key, 0xc0, i);
    sg->temp_base = 62 + 10 * u[0];
    sg->dip_period_s = 25 + 10 * u[5];
    sg->phase_s = sg->dip_period_s * u[3];
    /* the step time (the straggler's, powercap's and throttled card's
     * slower), the starved cycle and the leak's time to OOM: the plan's */
    sg->step_s = sg->slot->step_s;
    switch (sg->beh) {
    case GP_SIM_STARVED:
        sg->period_s = sg->slot->step_s; /* one step a data cycle */
        sg->duty = sg->slot->duty;
        sg->phase_s = sg->period_s * u[3];
        break;
    case GP_SIM_LEAKING:
        sg->period_s = sg->slot->oom_s;
        break;
    case GP_SIM_ECC:
        sg->ecc_at_s = sg->slot->start_s + LOAD_S + 45 + 30 * u[7];
        break;
    default:
        break;
    }
    sg->mem_frac = sg->beh == GP_SIM_IDLE ? 0.42 + 0.16 * u[4] : 0.71 + 0.13 * u[4];
    gp_sim_job_name(sg->job, sizeof sg->job, sg->slot->job);
}

/* The behaviour that plays a planted fault. */
static enum gp_sim_behaviour fault_behaviour(int fault)
{
    switch (fault) {
    case GP_SIM_FAULT_LEAK: return GP_SIM_LEAKING;
    case GP_SIM_FAULT_STRAGGLER: return GP_SIM_STRAGGLER;
    case GP_SIM_FAULT_STARVED: return GP_SIM_STARVED;
    case GP_SIM_FAULT_THROTTLED: return GP_SIM_THROTTLED;
    case GP_SIM_FAULT_ECC: return GP_SIM_ECC;
    case GP_SIM_FAULT_IDLE: return GP_SIM_IDLE;
    case GP_SIM_FAULT_POWERCAP: return GP_SIM_POWERCAP;
    case GP_SIM_FAULT_HANG: return GP_SIM_HANG;
    case GP_SIM_FAULT_RESTART: return GP_SIM_RESTART;
    default: return GP_SIM_COMPUTE;
    }
}

/* ---- the source ---- */

static void sim_close(void *state)
{
    struct sim_state *s = state;
    if (!s)
        return;
    free(s->gpus);
    gp_sim_plan_free(&s->plan);
    free(s);
}

static int sim_open(const struct gp_source_config *cfg, void **state, char *err, size_t errlen)
{
    *state = NULL;
    if (!cfg->simulate)
        return GP_ENODEV;
    struct gp_sim_spec *spec = malloc(sizeof *spec);
    if (!spec)
        return gp_seterr(err, errlen, GP_ENOMEM, "simulate: out of memory");
    int rc = gp_sim_spec_parse(cfg->simulate, spec, err, errlen);
    if (rc != GP_OK) {
        free(spec);
        return rc;
    }
    struct sim_state *s = calloc(1, sizeof *s);
    if (s)
        s->gpus = calloc(spec->total_gpus, sizeof *s->gpus);
    if (!s || !s->gpus) {
        unsigned total = spec->total_gpus;
        free(spec);
        sim_close(s);
        return gp_seterr(err, errlen, GP_ENOMEM, "simulate: out of memory for %u GPUs", total);
    }
    unsigned node = 0;
    for (unsigned gi = 0; gi < spec->ngroups; gi++) {
        const struct gp_sim_group *g = &spec->groups[gi];
        for (unsigned nd = 0; nd < g->nodes; nd++, node++)
            for (unsigned i = 0; i < g->gpus; i++) {
                struct sim_gpu *sg = &s->gpus[s->n++];
                sg->m = g->model;
                sg->node = node;
                sg->index = i;
                sg->key = mix64(cfg->seed * 0x9e3779b97f4a7c15ull ^ mix64(((uint64_t)node << 20) | i));
            }
    }
    rc = gp_sim_plan_build(spec, cfg->seed, cfg->simulate_faults, &s->plan, err, errlen);
    free(spec);
    if (rc != GP_OK) {
        sim_close(s);
        return rc;
    }
    for (unsigned i = 0; i < s->n; i++) {
        s->gpus[i].slot = &s->plan.slots[i];
        s->gpus[i].beh = fault_behaviour(s->plan.slots[i].fault);
        identity(&s->gpus[i], cfg->seed);
    }
    *state = s;
    return GP_OK;
}

/* Counters "since boot" at the first tick: a few days' worth, per GPU. */
static void start_counters(struct sim_gpu *sg)
{
    const struct gp_gpumodel *m = sg->m;
    double uptime = 86400 * (1 + 29 * hash_unit(sg->key, 0xb0, 0));
    sg->energy_mj = uptime * (m->idle_power_w + 0.5 * (m->power_limit_w - m->idle_power_w)) * 1e3;
    sg->pcie_rx_b = uptime * m->pcie_gbps * 1e9 * 0.02 * hash_unit(sg->key, 0xb0, 1);
    sg->pcie_tx_b = uptime * m->pcie_gbps * 1e9 * 0.008 * hash_unit(sg->key, 0xb0, 2);
    sg->power_viol_us = uptime * 1e6 * 0.01 * hash_unit(sg->key, 0xb0, 3);
    sg->thermal_viol_us = sg->beh == GP_SIM_STRAGGLER ? uptime * 1e6 * 0.2 : 0;
}

/* Adds the trapezoid from the previous tick to t; counters never go down. */
static void integrate(struct sim_gpu *sg, double t, const struct sim_reading *r)
{
    if (!sg->have_last) {
        start_counters(sg);
    } else if (t > sg->last_t) {
        double dt = t - sg->last_t;
        sg->energy_mj += 0.5 * (sg->last_power + r->power) * dt * 1e3;
        sg->pcie_tx_b += 0.5 * (sg->last_tx + r->pcie_tx) * dt;
        sg->pcie_rx_b += 0.5 * (sg->last_rx + r->pcie_rx) * dt;
        sg->power_viol_us += 0.5 * (sg->last_pcap + r->power_capped) * dt * 1e6;
        sg->thermal_viol_us += 0.5 * (sg->last_therm + r->thermal_throttled) * dt * 1e6;
    } else {
        return; /* time stood still or went back: keep the counters and the last rates */
    }
    sg->have_last = true;
    sg->last_t = t;
    sg->last_power = r->power;
    sg->last_tx = r->pcie_tx;
    sg->last_rx = r->pcie_rx;
    sg->last_pcap = r->power_capped;
    sg->last_therm = r->thermal_throttled;
}

/* Writes one simulated GPU into the frame (t: seconds since the first tick). */
static int fill_gpu(struct gp_gpu *g, const struct sim_gpu *sg, const struct sim_reading *r, double t)
{
    const struct gp_gpumodel *m = sg->m;
    bool nv = m->vendor == GP_VENDOR_NVIDIA;
    g->vendor = m->vendor;
    g->index = sg->index;
    g->simulated = true;
    snprintf(g->uuid, sizeof g->uuid, "%s", sg->uuid);
    snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%s", sg->pci);
    snprintf(g->device, sizeof g->device, "%s", sg->device);
    snprintf(g->model, sizeof g->model, "%s", m->name);
    snprintf(g->driver, sizeof g->driver, "%s", nv ? GP_SIM_DRIVER_NVIDIA : GP_SIM_DRIVER_AMD);
    snprintf(g->node, sizeof g->node, "%s", sg->nodename);

    gp_gpu_set(g, GPF_SM_CLOCK, round(r->sm_clock));
    gp_gpu_set(g, GPF_MEM_CLOCK, round(r->mem_clock));
    gp_gpu_set(g, GPF_SM_CLOCK_MAX, m->sm_clock_max_mhz * 1e6);
    gp_gpu_set(g, GPF_MEM_CLOCK_MAX, m->mem_clock_max_mhz * 1e6);
    gp_gpu_set(g, GPF_GPU_TEMP, round(r->temp));
    if (m->hbm)
        gp_gpu_set(g, GPF_MEMORY_TEMP, round(r->mem_temp));
    gp_gpu_set(g, GPF_POWER_USAGE, round(r->power * 1000) / 1000); /* NVML gives mW */
    gp_gpu_set(g, GPF_POWER_LIMIT, r->power_limit > 0 ? r->power_limit : m->power_limit_w);
    gp_gpu_set(g, GPF_TOTAL_ENERGY, floor(sg->energy_mj));
    gp_gpu_set(g, GPF_GPU_UTIL, round(r->util));
    gp_gpu_set(g, GPF_MEM_COPY_UTIL, round(r->copy_util));
    gp_gpu_set(g, GPF_PCIE_REPLAY, 0);
    if (m->fan)
        gp_gpu_set(g, GPF_FAN_SPEED, round(r->fan * 100) / 100);

    /* memory: used + free (+ reserved on NVIDIA) = total, in MiB and in bytes */
    double total_mib = floor((double)m->memory_bytes / MIB);
    double reserved_mib = nv ? floor(total_mib / 160) : 0;
    double used_mib = round(r->mem_frac * (total_mib - reserved_mib) + r->alloc_noise / MIB);
    used_mib = used_mib < 0 ? 0 : used_mib > total_mib - reserved_mib ? total_mib - reserved_mib : used_mib;
    gp_gpu_set(g, GPF_FB_USED, used_mib);
    gp_gpu_set(g, GPF_FB_FREE, total_mib - reserved_mib - used_mib);
    gp_gpu_set(g, GPF_MEMORY_TOTAL, (double)m->memory_bytes);
    gp_gpu_set(g, GPF_MEMORY_USED, used_mib * MIB);
    bool dbe = sg->beh == GP_SIM_ECC && t >= sg->ecc_at_s; /* the planted double-bit error */
    if (m->ecc) {
        gp_gpu_set(g, GPF_ECC_SBE_VOL, 0);
        gp_gpu_set(g, GPF_ECC_DBE_VOL, dbe ? 1 : 0);
    }
    if (dbe && nv) {
        g->nxids = 1;
        g->xids[0] = (struct gp_xid_count){48, 1}; /* XID 48: double-bit ECC error */
    }

    if (nv) {
        gp_gpu_set(g, GPF_FB_RESERVED, reserved_mib);
        gp_gpu_set(g, GPF_ENC_UTIL, 0);
        gp_gpu_set(g, GPF_DEC_UTIL, 0);
        gp_gpu_set(g, GPF_XID_ERRORS, dbe ? 48 : 0);
        gp_gpu_set(g, GPF_POWER_VIOLATION, floor(sg->power_viol_us));
        gp_gpu_set(g, GPF_THERMAL_VIOLATION, floor(sg->thermal_viol_us));
        gp_gpu_set(g, GPF_PCIE_TX_TOTAL, floor(sg->pcie_tx_b));
        gp_gpu_set(g, GPF_PCIE_RX_TOTAL, floor(sg->pcie_rx_b));
        g->clock_events_valid = true;
        g->clock_events = r->clock_events;
        if (m->ecc) {
            gp_gpu_set(g, GPF_ECC_SBE_AGG, 0);
            gp_gpu_set(g, GPF_ECC_DBE_AGG, dbe ? 1 : 0);
        }
        if (gp_gpumodel_has_row_remap(m)) {
            gp_gpu_set(g, GPF_REMAP_COR, 0);
            gp_gpu_set(g, GPF_REMAP_UNC, 0);
            gp_gpu_set(g, GPF_REMAP_FAILURE, 0);
            gp_gpu_set(g, GPF_REMAP_PENDING, 0);
        }
        /* a healthy x16 link at the generation the model's x16 bandwidth
         * implies (about 16, 32, 64 GB/s for gen 3, 4, 5) */
        double gen = m->pcie_gbps >= 45 ? 5 : m->pcie_gbps >= 22 ? 4 : 3;
        gp_gpu_set(g, GPF_PCIE_LINK_GEN, gen);
        gp_gpu_set(g, GPF_PCIE_MAX_LINK_GEN, gen);
        gp_gpu_set(g, GPF_PCIE_LINK_WIDTH, 16);
        gp_gpu_set(g, GPF_PCIE_MAX_LINK_WIDTH, 16);
        if (gp_gpumodel_has_page_retire(m)) {
            gp_gpu_set(g, GPF_RETIRED_SBE, 0);
            gp_gpu_set(g, GPF_RETIRED_DBE, 0);
            gp_gpu_set(g, GPF_RETIRED_PENDING, 0);
        }
        if (m->mig)
            gp_gpu_set(g, GPF_MIG_MODE, 0);
        if (m->gpm) {
            gp_gpu_set(g, GPF_PROF_GR_ACTIVE, r->gr);
            gp_gpu_set(g, GPF_PROF_SM_ACTIVE, r->sm);
            gp_gpu_set(g, GPF_PROF_SM_OCCUPANCY, r->occ);
            gp_gpu_set(g, GPF_PROF_TENSOR, r->tensor);
            gp_gpu_set(g, GPF_TENSOR_HMMA, r->tensor * 0.97);
            gp_gpu_set(g, GPF_PROF_DRAM, r->dram);
            gp_gpu_set(g, GPF_PROF_FP64, r->fp64);
            gp_gpu_set(g, GPF_PROF_FP32, r->fp32);
            gp_gpu_set(g, GPF_PROF_FP16, r->fp16);
            gp_gpu_set(g, GPF_PROF_PCIE_TX, round(r->pcie_tx));
            gp_gpu_set(g, GPF_PROF_PCIE_RX, round(r->pcie_rx));
            gp_gpu_set(g, GPF_PROF_NVLINK_TX, round(r->nvl_tx));
            gp_gpu_set(g, GPF_PROF_NVLINK_RX, round(r->nvl_rx));
        }
    }

    /* the training process: its memory is the GPU's minus the context */
    struct gp_gpu_proc *p = gp_gpu_add_proc(g);
    if (!p)
        return GP_ENOMEM;
    double used = used_mib * MIB, ctx = fmin(512 * MIB, used / 10);
    p->pid = r->pid;
    p->mem_valid = true;
    p->mem_bytes = (uint64_t)(used - ctx);
    p->util_valid = true;
    p->sm_util = round(r->util);
    p->mem_util = round(r->copy_util);
    return GP_OK;
}

/* Bytes the rank's process holds on the GPU (as fill_gpu computes them) for a memory share. */
static double proc_bytes(const struct gp_gpumodel *m, double frac)
{
    double total_mib = floor((double)m->memory_bytes / MIB);
    double reserved_mib = m->vendor == GP_VENDOR_NVIDIA ? floor(total_mib / 160) : 0;
    double used = round(frac * (total_mib - reserved_mib)) * MIB;
    return used - fmin(512 * MIB, used / 10);
}

/* Appends the rank's gp_job entry (the frame owns it) and points g's job_idx at it. */
static int add_job(struct gp_frame *f, struct gp_gpu *g, const struct sim_state *s,
                   const struct sim_gpu *sg, const struct sim_reading *r, double t)
{
    struct gp_job *j = gp_frame_add_job(f);
    if (!j)
        return GP_ENOMEM;
    snprintf(j->id.job, sizeof j->id.job, "%s", sg->job);
    j->id.rank = sg->slot->rank;
    j->id.local_rank = sg->slot->rank;
    j->id.world_size = sg->slot->world;
    j->id.scheme = GP_JOB_ENV;
    snprintf(j->node, sizeof j->node, "%s", sg->nodename);
    j->start_time_s = (double)s->t0_ms / 1000.0; /* it was there at the first tick */
    j->nprocs = sg->beh == GP_SIM_IDLE ? 1 : 5; /* the rank and its data-loader workers */
    j->cpu_seconds = t * (sg->beh == GP_SIM_IDLE ? 0.02 : 1.8);
    j->rss_bytes = (uint64_t)(6e9 + 1e9 * hash_unit(sg->key, 0xd0, 0));
    j->ngpus = 1;
    j->gpu_mem_valid = j->sm_valid = true;
    j->gpu_memory_bytes = g->nprocs ? g->procs[0].mem_bytes : 0;
    j->sm_ratio = round(r->util) / 100.0;
    g->job_idx = (int)(f->njobs - 1);
    return GP_OK;
}

/* Appends the rank's step reporter (the frame owns it): counters in closed form of the time it has stepped. */
static int add_steps(struct gp_frame *f, const struct sim_gpu *sg, const struct sim_reading *r)
{
    struct gp_step_stats *st = gp_frame_add_steps(f);
    if (!st)
        return GP_ENOMEM;
    const struct gp_sim_slot *sl = sg->slot;
    double steps = floor(r->active_s / sg->step_s);
    st->pid = r->pid;
    snprintf(st->node, sizeof st->node, "%s", sg->nodename);
    snprintf(st->jid.job, sizeof st->jid.job, "%s", sg->job);
    st->jid.rank = sg->slot->rank;
    st->jid.local_rank = sg->slot->rank;
    st->jid.world_size = sg->slot->world;
    st->jid.scheme = GP_JOB_ENV;
    st->steps_total = (uint64_t)steps;
    st->last_step = (uint64_t)steps;
    st->step_seconds_total = steps * sg->step_s;
    st->last_step_seconds = steps > 0 ? sg->step_s : 0;
    st->data_wait_valid = true;
    st->data_wait_seconds_total = st->step_seconds_total * sl->wait_share;
    st->samples_valid = st->tokens_valid = true;
    st->samples_total = steps * BATCH;
    st->tokens_total = steps * BATCH * SEQ;
    st->loss_valid = true;
    st->loss = 1.2 + 2.5 * exp(-steps / 5000.0);
    st->target_steps = 200000;
    if (sl->flops_token > 0) { /* the model record: MFU */
        st->model_flops_token = sl->flops_token;
        st->model_precision = GP_PREC_BF16;
    }
    if (sl->ckpt_every_s > 0) { /* checkpoint phases, reported as each ends */
        st->phase_valid = true;
        st->phase_seconds_total[GP_STEPS_PHASE_CHECKPOINT] = r->ckpts * sl->ckpt_s;
    }
    if (r->hung && r->hung_s >= GP_SIM_FR_AFTER_S) {
        /* the Flight Recorder dumps of its NCCL timeout: the stuck rank
         * never entered the collective its peers wait in */
        int64_t seq = (int64_t)floor(sl->hang_at_s * 10) + 1;
        if (sg->beh == GP_SIM_HANG)
            st->fr_missing_valid = true, st->fr_missing = seq;
        else
            st->fr_waiting_valid = true, st->fr_waiting = seq;
    }
    st->last_ms = f->time_ms;
    /* allocator: follows the memory the process holds (without the gauge's
     * slow drift), allocated bytes with the allocator's noise */
    double frac = sg->beh == GP_SIM_LEAKING ? r->mem_frac : sg->mem_frac;
    double held = proc_bytes(sg->m, frac);
    st->nalloc = 1;
    st->alloc[0] = (struct gp_step_alloc){(int32_t)sg->index, (uint64_t)(0.86 * held + r->alloc_noise),
                                          (uint64_t)(0.93 * held), (uint64_t)(0.91 * held)};
    return GP_OK;
}

static int sim_sample(void *state, struct gp_frame *f, unsigned *errors)
{
    struct sim_state *s = state;
    if (!s->started) {
        s->started = true;
        s->t0_ms = f->time_ms;
    }
    /* unsigned difference: no overflow whatever the clock says */
    int64_t ms = (int64_t)((uint64_t)f->time_ms - (uint64_t)s->t0_ms);
    double t = ms > 0 ? (double)ms / 1000.0 : 0;
    for (unsigned i = 0; i < s->n; i++) {
        struct sim_gpu *sg = &s->gpus[i];
        struct sim_reading r;
        readings(sg, t, &r);
        integrate(sg, t, &r);
        struct gp_gpu *g = gp_frame_add_gpu(f);
        if (!g || fill_gpu(g, sg, &r, t) != GP_OK) {
            (*errors)++; /* out of memory: this GPU is missing from the tick */
            if (g)
                f->ngpus--;
            continue;
        }
        if (add_job(f, g, s, sg, &r, t) != GP_OK || (r.run_s >= 0 && add_steps(f, sg, &r) != GP_OK))
            (*errors)++; /* out of memory: its job or steps are missing from the tick */
    }
    f->nsim_jobs = f->njobs;
    return GP_OK;
}

const struct gp_source_ops gp_source_simulate = {
    .name = "simulate",
    .id = GP_SRC_SIMULATE,
    .open = sim_open,
    .sample = sim_sample,
    .close = sim_close,
};

const char *gp_sim_behaviour_name(enum gp_sim_behaviour b)
{
    static const char *const names[GP_SIM__COUNT] = {"compute", "starved",  "leaking", "straggler",
                                                     "idle",    "throttled", "ecc",     "powercap",
                                                     "hang",    "restart"};
    return (unsigned)b < GP_SIM__COUNT ? names[b] : "?";
}

unsigned gp_sim_gpu_count(const void *state)
{
    const struct sim_state *s = state;
    return s ? s->n : 0;
}

int gp_sim_gpu_behaviour(const void *state, unsigned i)
{
    const struct sim_state *s = state;
    return s && i < s->n ? (int)s->gpus[i].beh : -1;
}

const struct gp_sim_plan *gp_sim_state_plan(const void *state)
{
    const struct sim_state *s = state;
    return s ? &s->plan : NULL;
}
