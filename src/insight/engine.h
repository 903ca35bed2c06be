/*
 * engine.h - the evaluation engine of `gpulse server`: every
 * eval_interval it brings the view (view.h) up to date from the store,
 * runs the detectors, the custom rules and the groups of Prometheus rule
 * files (promrules.h) that are due, and hands what they observe
 * to the alert state machine (alerts.h).
 *
 * The view. Grid: eval_window / eval_step + 1 points, the last at the
 * tick's time floored to a step. GPUs are grouped by (Hostname, gpu,
 * UUID) over the metrics of GP_VIEW_GPU_METRICS, step reporters by (job,
 * rank, Hostname, pid) over GP_VIEW_PROC_METRICS; job, rank, model and
 * `simulated` come from the labels of the entity's newest series. A point
 * holds the newest sample at or before it within the lookback,
 * max(2 x eval_step, 1m) (shorter than Prometheus's 5m so a GPU that
 * stops reporting leaves the view within a minute); a stale marker ends
 * the series. Where several series feed one metric of one GPU (a new job
 * label, a restarted agent), the newest sample wins; clock-event reasons
 * take the max over their reasons (THROTTLE_THERMAL: hw/sw thermal
 * slowdown, THROTTLE_POWER: sw power cap, hw power brake), XID_TOTAL and
 * the allocator bytes the sum over their series (xid codes, devices);
 * CHECKPOINT is gpulse_job_phase_seconds_total{phase="checkpoint"}.
 * MEM_USED and MEM_TOTAL fall back to DCGM_FI_DEV_FB_USED (and FB_USED +
 * FB_FREE) in MiB where gpulse_gpu_memory_*_bytes are absent.
 *
 * Incremental. The engine keeps the view between ticks with a map from
 * series id to its GPU or process. A tick selects each metric's series
 * from the store's index (no samples read), adds the new series, shifts
 * every grid left by the steps that passed, and reads only the samples
 * that can change a point: the new points plus a settle margin of
 * max(2 steps, 30s) (for samples that arrive late), each point looking
 * back over the lookback. Entities none of whose series were selected
 * leave the view. A first tick, or one after a pause longer than the
 * window, reads the whole window.
 *
 * Detectors run through the table in the options (NULL: none, custom
 * rules only), with their settings (defaults from detect.h, changed by
 * the server keys detectors_disabled and detector_overrides); their
 * observations go to the alerts with the detector's `for`, cool-down and
 * severity and the engine's clear_for. A detector or rule that fails
 * holds its alerts for the tick (gp_alerts_hold) and is counted.
 */
#ifndef GP_INSIGHT_ENGINE_H
#define GP_INSIGHT_ENGINE_H

#include "insight/alerts.h"
#include "insight/detect.h"
#include "insight/health.h"
#include "insight/promrules.h"
#include "insight/remediate.h"
#include "insight/rules.h"
#include "insight/view.h"
#include "storage/storage.h"

#include <stddef.h>
#include <stdint.h>

struct gp_engine_options {
    struct gp_storage *store;            /* borrowed; outlives the engine */
    struct gp_alerts *alerts;          /* borrowed */
    const gp_detect_fn *detectors;     /* GP_DET__COUNT entries (NULL ones skipped), or NULL */
    struct gp_detector_cfg det_cfg[GP_DET__COUNT];
    const struct gp_rules *rules;      /* borrowed; may be NULL */
    /* The server's query settings (lookback, windows, limits): custom
     * rules evaluate through the PromQL engine with them. Zeroed:
     * the engine's defaults. */
    struct gp_promql_limits query_limits;
    /* Prometheus rule files' groups (promrules.h), run after the custom
     * rules in each tick; borrowed; may be NULL. */
    struct gp_promrules_run *promrules;
    /* remediation (remediate.h): told the fleet's size each tick, and
     * raises its circuit breaker's alert; NULL: none */
    struct gp_rem *rem;
    int64_t interval_ms, window_ms, step_ms, clear_for_ms;
    /* Fills the budget and cost so far of the view's jobs (view.h), which
     * the window alone cannot tell; NULL: no budgets. Called on the
     * evaluation thread after each refresh of the view. */
    void (*job_costs)(void *ctx, struct gp_view *v);
    void *job_costs_ctx;
    /* The health states (health.h), fed each tick with the detectors'
     * catalog faults and the view; borrowed; may be NULL. */
    struct gp_health *health;
};

struct gp_engine;

/* Checks the options (window a whole number of steps, at most 10,000
 * points) and creates an engine. GP_OK, GP_EUSAGE or GP_ENOMEM, with
 * detail. Close with gp_engine_close. */
int gp_engine_new(struct gp_engine **out, const struct gp_engine_options *o, char *err,
                  size_t errlen);
/* Starts the thread: a tick every interval on the wall clock, the first
 * one interval after the start (agents push again after a server
 * restart before reloaded alerts are judged). GP_OK or GP_ENOMEM. */
int gp_engine_start(struct gp_engine *e);
/* Stops the thread (if started) and frees. Accepts NULL. */
void gp_engine_close(struct gp_engine *e);

/* One tick as of now_ms (the thread's work; tests call it with their
 * own clock). GP_OK, or the first error (the tick still runs what it
 * can), with detail. */
int gp_engine_tick(struct gp_engine *e, int64_t now_ms, char *err, size_t errlen);

/* Brings the view up to date as of now_ms without judging anything. */
int gp_engine_refresh_view(struct gp_engine *e, int64_t now_ms, char *err, size_t errlen);
/* The view as of the last tick or refresh (owned by the engine; valid
 * until the next one; only the engine's thread, or a test without it,
 * may read it). */
const struct gp_view *gp_engine_view(const struct gp_engine *e);

struct gp_engine_stats {
    uint64_t ticks, tick_errors, detector_errors, rule_errors;
    uint64_t gpus, procs, series;      /* in the view now */
    uint64_t last_view_ns, last_detect_ns, last_rules_ns, last_tick_ns;
    uint64_t last_full_rebuild;        /* 1 when the last refresh read the whole window */
    uint64_t observations;             /* last tick */
};
void gp_engine_stats(struct gp_engine *e, struct gp_engine_stats *out);

/*
 * Detector settings from the server keys: defaults (detect.h), then
 * `disabled` (comma-separated detector names) and `overrides`
 * ("name.field=value,..." with field threshold, clear, for, cooldown,
 * severity or enabled). GP_OK or GP_ECONFIG naming the bad entry.
 */
int gp_engine_detector_config(const char *disabled, const char *overrides,
                              struct gp_detector_cfg cfg[GP_DET__COUNT], char *err, size_t errlen);

#endif
