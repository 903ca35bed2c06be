/*
 * detect_util.h - what the built-in detectors (detect_*.c) share: the
 * observation key of each scope, hysteresis, the robust statistics they
 * judge by, and the words that name a GPU or a rank. Internal to
 * src/insight (prefix gp_det_); the contract is detect.h.
 *
 * Cost model: the engine runs every detector over every entity at each
 * tick (10,000 GPUs under 100 ms of CPU in all), so everything here is a
 * single pass over a series with no allocation. Text (summary and
 * evidence, a few snprintf calls) is written only for observations the
 * engine will show: the bad ones and those whose alert is active; an
 * observation that is neither carries its key, value and bad flag with
 * empty text.
 */
#ifndef GP_INSIGHT_DETECT_UTIL_H
#define GP_INSIGHT_DETECT_UTIL_H

#include "insight/detect.h"
#include "lib/plural.h"

#include <stdbool.h>
#include <stddef.h>

#define GP_DET_GIB (1024.0 * 1024.0 * 1024.0)
#define GP_DET_MIB (1024.0 * 1024.0)

/* The detectors, in the order of GP_DETECTORS (detect_fns.c lists them). */
int gp_det_memory_high(const struct gp_detect_ctx *c);
int gp_det_oom_predicted(const struct gp_detect_ctx *c);
int gp_det_memory_leak(const struct gp_detect_ctx *c);
int gp_det_fragmentation(const struct gp_detect_ctx *c);
int gp_det_saturated(const struct gp_detect_ctx *c);
int gp_det_idle_allocated(const struct gp_detect_ctx *c);
int gp_det_data_starved(const struct gp_detect_ctx *c);
int gp_det_no_tensor_cores(const struct gp_detect_ctx *c);
int gp_det_memory_bound(const struct gp_detect_ctx *c);
int gp_det_throttled(const struct gp_detect_ctx *c);
int gp_det_hw_errors(const struct gp_detect_ctx *c);
int gp_det_pcie_degraded(const struct gp_detect_ctx *c);
int gp_det_straggler(const struct gp_detect_ctx *c);
int gp_det_budget(const struct gp_detect_ctx *c);
int gp_det_hang(const struct gp_detect_ctx *c);
int gp_det_low_goodput(const struct gp_detect_ctx *c);

/* Starts observation o of detector d about GPU g (key labels and uuid;
 * value 0, not bad, empty text). */
void gp_det_key_gpu(struct gp_observation *o, enum gp_detector d, const struct gp_view_gpu *g);
/* ... about step reporter p (job, rank, node, pid). */
void gp_det_key_proc(struct gp_observation *o, enum gp_detector d, const struct gp_view_proc *p);
/* ... about job j. */
void gp_det_key_job(struct gp_observation *o, enum gp_detector d, const struct gp_view_job *j);

/*
 * Hysteresis: sets o->value and o->bad against the threshold, or against
 * the clear level while the engine says o's alert is active. `above`:
 * bad when value >= limit; else bad when value <= limit. Returns true
 * when the observation needs its text (bad or active).
 */
bool gp_det_judge(const struct gp_detect_ctx *c, struct gp_observation *o, double value, bool above);

/* Hands o to the engine (c->emit). GP_OK or GP_ENOMEM. */
int gp_det_emit(const struct gp_detect_ctx *c, const struct gp_observation *o);

/* vsnprintf into buf (always terminated; silently cut). */
void gp_det_printf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* "GPU 3 on n1 (job bert-1 rank 3)", "GPU 0 on n2" into out. */
void gp_det_gpu_name(const struct gp_view_gpu *g, char *out, size_t len);
/* "rank 3 of bert-1 on n1 (pid 4242)", "pid 4242 of bert-1 on n1". */
void gp_det_proc_name(const struct gp_view_proc *p, char *out, size_t len);
/* The GPU's memory size in bytes at point k: its MEM_TOTAL reading, else
 * the model table's; NaN when neither is known. */
double gp_det_mem_total(const struct gp_view *v, const struct gp_view_gpu *g, unsigned k);
/* What GPU g's / process p's readings cover from point `from` on, as
 * gp_view_span_text writes it: "the last 1m30s (7 points 15s apart)" on
 * a server younger than its 10m window. */
void gp_det_window_gpu(const struct gp_view *v, const struct gp_view_gpu *g, unsigned from,
                       char *out, size_t len);
void gp_det_window_proc(const struct gp_view *v, const struct gp_view_proc *p, unsigned from,
                        char *out, size_t len);

/* Summary statistics of x[0..n) ignoring NaN; n_valid 0: all NaN (the
 * other fields are then NaN). */
struct gp_det_stats {
    unsigned n;
    double mean, sd, min, max;
};
struct gp_det_stats gp_det_stats(const double *x, unsigned n);

/* The last valid value of x[0..n) and its index (*at may be NULL); NaN
 * when none. */
double gp_det_last(const double *x, unsigned n, unsigned *at);
double gp_det_first(const double *x, unsigned n, unsigned *at);

/* A counter's increase over x[0..n) (a decrease is a reset: the new
 * value counts as the increase since it); 0 with fewer than 2 valid
 * points. */
double gp_det_increase(const double *x, unsigned n);

/* Least-squares line y = a + b*t over the points of y[0..n) that are
 * not NaN, t in seconds from point 0 (step_s apart). r2 is the share of
 * variance the line explains (1 for a flat series that is exactly flat,
 * 0 when it explains nothing). n: points used. */
struct gp_det_fit {
    unsigned n;
    double a, b, r2;
};
struct gp_det_fit gp_det_linfit(const double *y, unsigned n, double step_s);

/* Median of a[0..n) (n > 0); reorders a. */
double gp_det_median(double *a, unsigned n);

/* Robust z-score: 0.6745 * (x - median) / max(mad, floor_frac * |median|). */
double gp_det_robust_z(double x, double median, double mad, double floor_frac);

/* Index maps between a view's GPUs and its step reporters: the reporter
 * of the same job on the same node with the same rank (or the only one
 * of its job on that node when ranks are unknown). UINT_MAX: none.
 * Caller frees both with free(). GP_OK or GP_ENOMEM. */
int gp_det_match_procs(const struct gp_view *v, unsigned **gpu_proc, unsigned **proc_gpu);

#endif
