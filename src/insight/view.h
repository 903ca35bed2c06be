/*
 * view.h - what the detectors see: a window of recent samples of every
 * GPU and every step-reporting process, on one time grid.
 *
 * The engine (engine.c) keeps the view up to date from the store at each
 * evaluation tick; the detectors (detect_*.c) only read it. The view is
 * plain memory with no store types in it, so detector tests build views
 * by hand and the benchmark builds one of 10,000 GPUs without a store.
 *
 * Grid: npoints points, step_ms apart, the last at t_end_ms; point k is
 * at t_end_ms - (npoints - 1 - k) * step_ms. A point holds the newest
 * sample at or before it within the lookback (as Prometheus's instant
 * vectors do), NaN where there is none. Counters are kept raw (not
 * rates): a detector takes differences itself and treats a decrease as
 * a reset. Units are base units: ratios 0-1, bytes, watts, hertz, °C,
 * bytes per second.
 */
#ifndef GP_INSIGHT_VIEW_H
#define GP_INSIGHT_VIEW_H

#include "lib/gpumodels.h"
#include "sources/frame.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* X(id, metric the engine reads, scale to base units). Selections that
 * need label matchers (clock-event reasons) are spelled out in engine.c. */
#define GP_VIEW_GPU_METRICS(X)                                                     \
    X(UTIL, "DCGM_FI_DEV_GPU_UTIL", 0.01)                /* 0-1, coarse */          \
    X(SM_ACTIVE, "DCGM_FI_PROF_SM_ACTIVE", 1)            /* 0-1, GPM */             \
    X(SM_OCC, "DCGM_FI_PROF_SM_OCCUPANCY", 1)                                       \
    X(TENSOR, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 1)                                 \
    X(DRAM, "DCGM_FI_PROF_DRAM_ACTIVE", 1)                                          \
    X(MEM_USED, "gpulse_gpu_memory_used_bytes", 1)       /* else FB_USED MiB */    \
    X(MEM_TOTAL, "gpulse_gpu_memory_total_bytes", 1)     /* else FB_USED+FREE */   \
    X(POWER, "DCGM_FI_DEV_POWER_USAGE", 1)                                          \
    X(POWER_LIMIT, "gpulse_gpu_power_limit_watts", 1)                               \
    X(TEMP, "DCGM_FI_DEV_GPU_TEMP", 1)                                              \
    X(SM_CLOCK, "DCGM_FI_DEV_SM_CLOCK", 1e6)             /* hertz */               \
    X(SM_CLOCK_MAX, "gpulse_gpu_sm_clock_max_hertz", 1)                             \
    X(PCIE_RX, "DCGM_FI_PROF_PCIE_RX_BYTES", 1)          /* bytes/s */             \
    X(PCIE_TX, "DCGM_FI_PROF_PCIE_TX_BYTES", 1)                                     \
    X(THROTTLE_THERMAL, "gpulse_gpu_clock_event_reasons", 1) /* 1: hw/sw thermal */ \
    X(THROTTLE_POWER, "gpulse_gpu_clock_event_reasons", 1)   /* 1: power cap/brake */ \
    X(ECC_DBE, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", 1)       /* counter */             \
    X(XID_TOTAL, "gpulse_gpu_xid_errors_total", 1)       /* counter, hardware XIDs */ \
    X(XID_LAST, "DCGM_FI_DEV_XID_ERRORS", 1)             /* last XID code */       \
    X(RETIRED_PENDING, "DCGM_FI_DEV_RETIRED_PENDING", 1)                            \
    X(REMAP_UNC, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", 1)                      \
    X(REMAP_FAILURE, "DCGM_FI_DEV_ROW_REMAP_FAILURE", 1)                            \
    X(PCIE_REPLAY, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", 1) /* counter */             \
    X(REMAP_PENDING, "DCGM_FI_DEV_ROW_REMAP_PENDING", 1)                            \
    X(LOST, "gpulse_gpu_lost", 1)                        /* 1: off the bus */      \
    X(PCIE_GEN, "DCGM_FI_DEV_PCIE_LINK_GEN", 1)                                     \
    X(PCIE_GEN_MAX, "DCGM_FI_DEV_PCIE_MAX_LINK_GEN", 1)                             \
    X(PCIE_WIDTH, "DCGM_FI_DEV_PCIE_LINK_WIDTH", 1)                                 \
    X(PCIE_WIDTH_MAX, "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", 1)

enum gp_vgm {
#define GP_VGM_ENUM_(id, name, scale) GP_VGM_##id,
    GP_VIEW_GPU_METRICS(GP_VGM_ENUM_)
#undef GP_VGM_ENUM_
    GP_VGM__COUNT
};

/* Per step-reporting process (docs/jobs.md step series), raw counters. */
#define GP_VIEW_PROC_METRICS(X)                                      \
    X(STEPS, "gpulse_job_steps_total", 1)                            \
    X(STEP_SECONDS, "gpulse_job_step_seconds_total", 1)              \
    X(DATA_WAIT, "gpulse_job_data_wait_seconds_total", 1)            \
    X(SAMPLES, "gpulse_job_samples_total", 1)                        \
    X(ALLOCATED, "gpulse_job_allocator_bytes", 1) /* kind allocated, summed over devices */ \
    X(RESERVED, "gpulse_job_allocator_bytes", 1)  /* kind reserved */ \
    X(TARGET_STEPS, "gpulse_job_target_steps", 1)                    \
    X(LAST_STEP, "gpulse_job_step", 1)             /* the last step's number */ \
    X(END, "gpulse_job_end_time_seconds", 1)       /* set once it said end */ \
    X(FR_MISSING, "gpulse_job_collective_missing_seq", 1) /* flight recorder */ \
    X(FR_WAITING, "gpulse_job_collective_waiting_seq", 1)                      \
    X(CHECKPOINT, "gpulse_job_phase_seconds_total", 1) /* phase checkpoint, counter */

enum gp_vpm {
#define GP_VPM_ENUM_(id, name, scale) GP_VPM_##id,
    GP_VIEW_PROC_METRICS(GP_VPM_ENUM_)
#undef GP_VPM_ENUM_
    GP_VPM__COUNT
};

extern const char *const gp_vgm_names[GP_VGM__COUNT]; /* "UTIL", ... for messages */
extern const char *const gp_vpm_names[GP_VPM__COUNT];

#define GP_VIEW_NODE_LEN 128
#define GP_VIEW_XIDS 8

/* One XID code's counter (gpulse_gpu_xid_errors_total{xid}) at the
 * newest point: application XIDs too, which XID_TOTAL leaves out. */
struct gp_view_xid {
    uint32_t code;
    double count;
};

struct gp_view_gpu {
    char node[GP_VIEW_NODE_LEN]; /* Hostname label */
    char gpu[16];                /* gpu label (index) */
    char uuid[96];
    char model[96];              /* modelName */
    char job[GP_JOB_LEN];        /* "" when no job holds it */
    int32_t rank;                /* -1 unknown */
    bool simulated;
    const struct gp_gpumodel *spec; /* model table row; NULL: unknown model */
    double *v;                   /* GP_VGM__COUNT x npoints, metric-major */
    struct gp_view_xid xids[GP_VIEW_XIDS]; /* per-code XID counters (health.h) */
    unsigned nxids;
};

struct gp_view_proc {
    char node[GP_VIEW_NODE_LEN];
    char job[GP_JOB_LEN];
    int32_t rank;                /* -1 unknown */
    uint32_t pid;
    double *v;                   /* GP_VPM__COUNT x npoints */
};

/* A job present in the window: its GPUs and step reporters (indices). */
struct gp_view_job {
    char job[GP_JOB_LEN];
    unsigned *gpus, ngpus;
    unsigned *procs, nprocs;
    double budget;               /* configured budget in USD; <= 0: none */
    double cost;                 /* cost so far in USD (cost.c); NaN: unknown */
    /* goodput so far (query/goodput.h), from the job's document; NaN
     * ratio: unknown */
    double goodput_ratio, goodput_wall_s, badput_s;
    int badput;                  /* the biggest badput part; -1 none */
};

struct gp_view {
    int64_t t_end_ms, step_ms;
    unsigned npoints;
    struct gp_view_gpu *gpus;
    unsigned ngpus;
    struct gp_view_proc *procs;
    unsigned nprocs;
    struct gp_view_job *jobs;
    unsigned njobs;
};

/* Series m of GPU g: npoints values, oldest first. */
static inline const double *gp_view_gpu_at(const struct gp_view *v, const struct gp_view_gpu *g,
                                           enum gp_vgm m)
{
    return g->v + (size_t)m * v->npoints;
}

static inline const double *gp_view_proc_at(const struct gp_view *v, const struct gp_view_proc *p,
                                            enum gp_vpm m)
{
    return p->v + (size_t)m * v->npoints;
}

/* Time of point k. */
static inline int64_t gp_view_time(const struct gp_view *v, unsigned k)
{
    return v->t_end_ms - (int64_t)(v->npoints - 1 - k) * v->step_ms;
}

/*
 * What an entity's readings cover from point `from` on: the oldest point
 * with any reading and how many points have one (first == npoints, n 0:
 * none). Texts state this, not the configured window: a server younger
 * than its window, or a GPU that came later, has NaN before its first
 * sample. Computed here only, when a detector writes its text.
 */
struct gp_view_span {
    unsigned first, n;
};
struct gp_view_span gp_view_gpu_span(const struct gp_view *v, const struct gp_view_gpu *g,
                                     unsigned from);
struct gp_view_span gp_view_proc_span(const struct gp_view *v, const struct gp_view_proc *p,
                                      unsigned from);
/* "the last 1m30s (7 points 15s apart)"; with gaps "the last 10m (30
 * points on a 15s grid)"; "the newest point (1 point)"; "no points". */
void gp_view_span_text(const struct gp_view *v, struct gp_view_span s, char *out, size_t len);

/*
 * GPU activity at point k: SM active where the GPU reports it, else
 * coarse utilization; NaN when neither. *sm (may be NULL) tells which.
 */
double gp_view_activity(const struct gp_view *v, const struct gp_view_gpu *g, unsigned k, bool *sm);

/* Building views by hand (tests, the benchmark) and freeing any view. */
int gp_view_init(struct gp_view *v, unsigned npoints, int64_t t_end_ms, int64_t step_ms);
/* Appends a GPU with every point NaN; NULL when out of memory. The
 * pointer (and earlier ones) stays valid until the next add. */
struct gp_view_gpu *gp_view_add_gpu(struct gp_view *v);
struct gp_view_proc *gp_view_add_proc(struct gp_view *v);
/* Groups GPUs and processes by their job label into v->jobs (budgets 0,
 * costs NaN). GP_OK or GP_ENOMEM. */
int gp_view_index_jobs(struct gp_view *v);
/* Mutable series for filling. */
double *gp_view_gpu_series(struct gp_view *v, struct gp_view_gpu *g, enum gp_vgm m);
double *gp_view_proc_series(struct gp_view *v, struct gp_view_proc *p, enum gp_vpm m);
void gp_view_free(struct gp_view *v); /* accepts a zeroed view */

#endif
