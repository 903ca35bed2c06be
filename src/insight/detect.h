/*
 * detect.h - the built-in detectors: what each looks for, and what it
 * hands the alert engine.
 *
 * A detector is a pure function of the view (view.h) and its settings:
 * for every entity it can judge (a GPU, a job's rank, a job, a node) it
 * emits an observation with the number it judges by (memory used ratio,
 * minutes to OOM, leak rate, robust z-score of a rank's step time...),
 * whether that number crosses its threshold now (`bad`), and the words
 * and numbers a person needs (summary, evidence). It keeps no state: the
 * alert engine (alerts.c) owns pending -> firing -> resolved, the `for`
 * durations, hysteresis and cool-down, so every detector is tested by
 * handing it a view and reading what it says.
 *
 * Hysteresis lives in the detector's two thresholds: `threshold` makes
 * an entity bad, and while the engine reports it already active
 * (`active` callback) the detector uses `clear` instead, so a value that
 * wobbles around one number does not flap the alert.
 */
#ifndef GP_INSIGHT_DETECT_H
#define GP_INSIGHT_DETECT_H

#include "insight/view.h"

#include <stdbool.h>
#include <stdint.h>

#define GP_SEVERITIES(X) X(INFO, "info") X(WARNING, "warning") X(CRITICAL, "critical")
enum gp_severity {
#define GP_SEV_ENUM_(id, name) GP_SEV_##id,
    GP_SEVERITIES(GP_SEV_ENUM_)
#undef GP_SEV_ENUM_
    GP_SEV__COUNT
};
extern const char *const gp_severity_names[GP_SEV__COUNT];
int gp_severity_parse(const char *s, enum gp_severity *out); /* GP_OK or GP_EPARSE */

/*
 * X(id, name (alert kind, config key under detectors:), scope, default
 *   severity, default threshold, default clear, default for, runbook).
 * Scopes: GPU (node+gpu, with its job/rank when held), RANK (job+rank+
 * node+pid of a step reporter), JOB, NODE.
 */
#define GP_DETECTORS(X)                                                                            \
    X(MEMORY_HIGH, "memory_near_exhaustion", GPU, WARNING, 0.95, 0.90, "2m",                     \
      "Lower the batch size or sequence length, enable activation checkpointing, or move to a "   \
      "card with more memory before the job hits out-of-memory.")                                  \
    X(OOM_PREDICTED, "oom_predicted", GPU, CRITICAL, 600, 900, "1m",                              \
      "Memory grows toward the card's limit: save a checkpoint now; look for tensors kept across " \
      "steps (losses kept with their graph, growing caches); lower the batch size.")             \
    X(MEMORY_LEAK, "memory_leak", RANK, WARNING, 0.02, 0.01, "5m",                                \
      "Memory grows step after step at a steady step rate: look for tensors kept across steps "   \
      "(appending losses without .item(), caches keyed by step, retained graphs).")              \
    X(FRAGMENTATION, "allocator_fragmentation", RANK, WARNING, 0.5, 0.4, "5m",                    \
      "The caching allocator holds much more than it uses: set "                                  \
      "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, avoid varying tensor shapes, or call "  \
      "torch.cuda.empty_cache() between phases.")                                                 \
    X(SATURATED, "gpu_saturated", GPU, INFO, 0.95, 0.90, "10m",                                    \
      "The GPU is fully busy: speed now comes from less work (mixed precision, fused kernels, "   \
      "torch.compile) or more GPUs.")                                                             \
    X(IDLE_ALLOCATED, "idle_gpu_allocated", GPU, WARNING, 0.05, 0.10, "5m",                       \
      "A job holds this GPU's memory but runs nothing on it: release it, or check the job is "    \
      "not stuck (a hung collective, a dead data loader).")                                       \
    X(DATA_STARVED, "dataloader_starvation", GPU, WARNING, 0.5, 0.4, "5m",                         \
      "The GPU waits for input: more DataLoader workers, pin_memory=True, prefetching, faster "   \
      "storage or pre-processed data.")                                                          \
    X(NO_TENSOR_CORES, "tensor_cores_unused", GPU, INFO, 0.01, 0.02, "10m",                        \
      "Busy but no tensor-core work: train in bf16/fp16 (torch.autocast) and keep matrix "       \
      "dimensions multiples of 8.")                                                              \
    X(MEMORY_BOUND, "memory_bandwidth_bound", GPU, INFO, 0.6, 0.5, "10m",                          \
      "DRAM is busy while the SMs are not: fuse element-wise kernels (torch.compile), use "      \
      "lower precision, raise arithmetic intensity (larger batch).")                             \
    X(THROTTLED, "gpu_throttled", GPU, WARNING, 0.5, 0.3, "5m",                                    \
      "Clocks held down by temperature or power: check cooling, airflow and fans, and the "      \
      "power limit; a throttled card slows every rank of its job.")                              \
    X(HW_ERRORS, "gpu_hardware_errors", GPU, CRITICAL, 1, 1, "0s",                                 \
      "Uncorrectable memory errors, hardware XIDs, pending retirements or remaps, or a GPU off " \
      "the bus: while it fires, the alert names the fault catalog's action and explanation "     \
      "(docs/health.md): reset the GPU, reboot the node, or drain it and inspect the card.")    \
    X(PCIE_DEGRADED, "pcie_link_degraded", GPU, WARNING, 0.5, 0.3, "5m",                           \
      "The PCIe link runs below the width or generation the card and slot support: drain the "   \
      "node and reseat the card or riser, check the slot and the BIOS link settings.")            \
    X(STRAGGLER, "straggler", RANK, WARNING, 3.5, 3.0, "5m",                                       \
      "One rank is slower than its peers and holds every other rank back at each collective: "   \
      "check its GPU for throttling, lower clocks or PCIe errors, and its node for other load.") \
    X(BUDGET, "budget_exceeded", JOB, WARNING, 1.0, 1.0, "0s",                                     \
      "The job's cost passed its budget: stop it, or raise the budget if the spend is expected.") \
    X(HANG, "job_hang", JOB, CRITICAL, 1.0, 1.0, "0s",                                             \
      "Every rank stopped stepping while its process lives: a rank that stopped first or is "     \
      "missing from the collective the others wait in is the one to inspect (py-spy dump, its "   \
      "log, its node); GPUs spinning at full use are waiting in a collective.")                 \
    X(LOW_GOODPUT, "low_goodput", JOB, WARNING, 0.5, 0.6, "10m",                                   \
      "Little of the job's time trains the model: shorten what the alert names as the biggest "  \
      "badput (faster start-up, more DataLoader workers, asynchronous or rarer checkpoints, "    \
      "rarer evaluation, checkpoints often enough that a restart repeats little).")

enum gp_detector {
#define GP_DET_ENUM_(id, name, scope, sev, thr, clr, for_, runbook) GP_DET_##id,
    GP_DETECTORS(GP_DET_ENUM_)
#undef GP_DET_ENUM_
    GP_DET__COUNT
};

enum gp_det_scope { GP_SCOPE_GPU, GP_SCOPE_RANK, GP_SCOPE_JOB, GP_SCOPE_NODE };

struct gp_detector_info {
    const char *name;
    enum gp_det_scope scope;
    enum gp_severity severity;
    double threshold, clear;
    const char *for_;        /* duration text, parsed into the config */
    const char *runbook;
};
extern const struct gp_detector_info gp_detectors[GP_DET__COUNT];

/* job_hang's own defaults (docs/insight.md "Hangs"): nvidia-resiliency-ext
 * sets its step timeout at 5 x the longest step seen; 10 x the recent mean
 * leaves room for the odd slow step (evaluation, a checkpoint). */
#define GP_HANG_STEP_MULTIPLE 10.0
#define GP_HANG_MIN_STALL_MS (2 * 60 * 1000)
#define GP_HANG_FIRST_STEP_MS (15 * 60 * 1000)
#define GP_HANG_CHECKPOINT_MULTIPLE 2.0

/* One detector's settings (defaults from the table, overridden by the
 * `detectors:` section of the server config). */
struct gp_detector_cfg {
    bool enabled;
    enum gp_severity severity;
    double threshold, clear;
    int64_t for_ms;          /* bad this long before firing */
    int64_t cooldown_ms;     /* after resolving, no new firing for this long */
    /* job_hang only (docs/insight.md "Hangs"): a rank's allowance without
     * a step is step_multiple x its own recent step time (at least
     * min_stall_ms), or first_step_ms before its first step; one that
     * checkpointed in the window at least checkpoint_multiple x its
     * longest checkpoint. */
    double step_multiple, checkpoint_multiple;
    int64_t min_stall_ms, first_step_ms;
};

/* The labels that name what an observation is about ("" / -1 / 0: n/a). */
struct gp_obs_key {
    enum gp_detector det;
    char node[GP_VIEW_NODE_LEN];
    char gpu[16];
    char job[GP_JOB_LEN];
    int32_t rank;
    uint32_t pid;
};

struct gp_fault; /* faults.h */
#define GP_OBS_FAULTS 8

struct gp_observation {
    struct gp_obs_key key;
    char uuid[96];
    bool bad;                /* crosses threshold (or, when active, clear) now */
    double value;            /* the number judged */
    /* Text is written when bad or when the alert is active (what the
     * engine shows); "" otherwise, to keep a tick over 10,000 GPUs cheap. */
    char summary[256];       /* one line a person can act on */
    char evidence[768];      /* the numbers and the window behind them */
    /* what to do, where it depends on what was found (the fault
     * catalog's action and explanation, faults.h); "": the detector's
     * own runbook. At most GP_ALERT_RUNBOOK_LEN - 1 bytes are kept. */
    char runbook[512];
    /* the fault catalog's rows found, set with bad (the hardware
     * detectors); the health states (health.h) take them as reasons */
    const struct gp_fault *faults[GP_OBS_FAULTS];
    unsigned nfaults;
};

/* What a detector is told and where it writes. */
struct gp_detect_ctx {
    const struct gp_view *view;
    const struct gp_detector_cfg *cfg; /* this detector's own settings */
    /* true when the alert of this key is pending or firing: use `clear` */
    bool (*active)(void *ctx, const struct gp_obs_key *k);
    void *active_ctx;
    /* appends one observation; returns GP_OK or GP_ENOMEM */
    int (*emit)(void *ctx, const struct gp_observation *o);
    void *emit_ctx;
};

/* Whether XID code xid points at the hardware (the GPU, its memory,
 * links or firmware) rather than the application: the fault catalog's
 * `hardware` column (faults.h). Application XIDs (13, 31, 43, 45...)
 * are no reason to drain a node. */
bool gp_xid_is_hardware(double xid);

typedef int (*gp_detect_fn)(const struct gp_detect_ctx *c);
extern const gp_detect_fn gp_detect_fns[GP_DET__COUNT];

/* Defaults from the table. */
void gp_detector_cfg_defaults(struct gp_detector_cfg cfg[GP_DET__COUNT]);

#endif
