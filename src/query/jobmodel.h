/*
 * jobmodel.h - the job model: every figure of a job's document
 * (docs/jobs.md) worked out once, from one input abstraction, so that
 * `gpulse run`'s end-of-run report (run/history.c, fed record by record)
 * and the server's job document (query/jobdoc.c, fed from the store's
 * counters) give the same numbers for the same step stream. The builders
 * only gather their inputs and render what this module computes.
 *
 * The input is two parts:
 *   step stream   totals (steps, step seconds, data-wait seconds, samples,
 *                 tokens: sums over the job's steps), the stepping span
 *                 (the first step's start to the last step's end), and
 *                 the step-time distribution: each step weighs one, at its
 *                 own seconds (a record) or at the mean of the interval it
 *                 falls in (steps between two samples of a counter).
 *   GPU series    per GPU: the seconds it was held, its time-weighted
 *                 activity, peak and capacity of memory, its price; the
 *                 activity distribution weighted by time.
 *
 * The definitions (docs/jobs.md, "The figures"):
 *   mean step     step seconds / steps
 *   p50/p90/p99   nearest rank over the steps; each value is the mean of
 *                 the steps in its 1 % bucket (exact when they are equal)
 *   throughput    steps, samples, tokens over the stepping span
 *   loss          the earliest and the newest reported, the lowest
 *   data wait     data-wait seconds / step seconds (a step's wait is part
 *                 of its seconds: the step protocol caps it there, so the
 *                 share is at most 1)
 *   GPU-seconds   the sum over GPUs (0 for a job seen holding none, unknown
 *                 when nothing was seen); activity avg and percentiles weigh
 *                 time; peak memory and its ratio the largest of any GPU;
 *                 cost the sum of each GPU's seconds x its price, unknown
 *                 when a GPU has no price; idle cost its seconds at
 *                 activity < 0.05 x its price, unused compute its
 *                 (1 - activity) x seconds x its price.
 *   straggler     per rank, as nvidia-resiliency-ext scores them:
 *                 relative = the fastest rank's mean step / this rank's
 *                 (1: the fastest; 0.8: 25 % slower), individual = the
 *                 rank's own best interval's mean step / its mean (1: as
 *                 fast as it ever was); unknown for a rank with no step.
 *   MFU           achieved model FLOP/s (the declared FLOPs per token x
 *                 tokens/s, else per sample x samples/s) over the peak
 *                 dense FLOP/s of the job's GPUs at its precision (the
 *                 model table's, summed over its GPUs); n/a with a reason
 *                 when a part is missing. Beside it, the gap to the
 *                 hardware's activity explained.
 * Unknown is NaN here and null in documents, never 0.
 *
 * Pure arithmetic: no store, no JSON, no allocation, no locks.
 */
#ifndef GP_QUERY_JOBMODEL_H
#define GP_QUERY_JOBMODEL_H

#include "lib/gpumodels.h"

#include <stdbool.h>
#include <stddef.h>

#define GP_JOBMODEL_STEP_BUCKETS 2560 /* 1 % buckets from 1 us to ~1e5 s */
#define GP_JOBMODEL_ACT_BUCKETS 101   /* activity 0, 0.01, ..., 1 */
#define GP_JOBMODEL_IDLE_ACTIVITY 0.05 /* activity below this: the GPU is idle */

/* A weighted distribution in fixed buckets: weight and weighted sum per
 * bucket, so a percentile reads the mean of its bucket. */
struct gp_jobmodel_bucket {
    double w, sum;
};

struct gp_jobmodel_steps {
    double steps, seconds;       /* NaN: the stream is unknown */
    double wait, samples, tokens; /* NaN: never reported */
    double start_s, end_s;       /* stepping span, epoch s; NaN when no step */
    double max;                  /* longest step (or interval mean); NaN when none */
    double loss_first, loss_last, loss_min; /* NaN: never reported */
    double loss_first_t, loss_last_t;       /* when (epoch s) */
    struct gp_jobmodel_bucket hist[GP_JOBMODEL_STEP_BUCKETS];
};

/* Empty, every sum unknown. */
void gp_jobmodel_steps_init(struct gp_jobmodel_steps *m);

/* One step record: it ended at t_end (epoch s) after `seconds`; wait,
 * samples, tokens NaN when not reported. Adds to the sums, the span and
 * the distribution. */
void gp_jobmodel_step(struct gp_jobmodel_steps *m, double t_end, double seconds, double wait,
                      double samples, double tokens);

/* n steps (> 0) took `seconds` in all between two samples of a counter:
 * n steps of their mean in the distribution. The sums are the builder's
 * (counter increases). */
void gp_jobmodel_interval(struct gp_jobmodel_steps *m, double n, double seconds);

/* A loss the training code reported at t (epoch s): a step record's, or
 * one sample of a reporter's gpulse_job_loss. */
void gp_jobmodel_loss(struct gp_jobmodel_steps *m, double t, double loss);

/* Adds v to a sum that may still be unknown (NaN). */
void gp_jobmodel_sum(double *sum, double v);

struct gp_jobmodel_step_figures {
    double steps, samples, tokens;
    double stepping_seconds, steps_per_second, samples_per_second, tokens_per_second;
    double mean, p50, p90, p99, max; /* step seconds */
    double data_wait_ratio;
    double loss_first, loss_last, loss_min; /* the earliest, newest, lowest */
};

void gp_jobmodel_step_figures(const struct gp_jobmodel_steps *m, struct gp_jobmodel_step_figures *f);

/* One GPU of the job. */
struct gp_jobmodel_gpu {
    double seconds;          /* held by the job */
    double act_sum, act_w;   /* activity x seconds, seconds with activity */
    double peak, capacity;   /* bytes; NaN unknown */
    double price;            /* USD per GPU-hour; NaN or <= 0: none */
    double idle_s;           /* seconds at activity < GP_JOBMODEL_IDLE_ACTIVITY; NaN: no activity */
    double unused_s;         /* sum of (1 - activity) x seconds; NaN: no activity */
};

struct gp_jobmodel_gpus {
    struct gp_jobmodel_bucket act[GP_JOBMODEL_ACT_BUCKETS];
};

void gp_jobmodel_gpus_init(struct gp_jobmodel_gpus *a);

/* Adds activity a (0-1; NaN counts as 0) held for w seconds to a GPU's
 * idle_s and unused_s (NaN until the first). */
void gp_jobmodel_busy(double *idle_s, double *unused_s, double a, double w);

/* Activity a (0-1) held for w seconds on some GPU of the job. */
void gp_jobmodel_activity(struct gp_jobmodel_gpus *a, double v, double w);

struct gp_jobmodel_gpu_figures {
    double gpu_seconds, gpu_hours;
    double activity_avg, activity_p50, activity_p90, activity_p99;
    double peak_memory_bytes, peak_memory_ratio;
    double cost, price_per_gpu_hour;
    double cost_idle, cost_unused_compute; /* over priced GPUs; NaN without activity */
};

/* The totals over n GPUs. With none: when the job's processes were seen
 * holding none (held_none), 0 GPU-seconds and nothing to pay; else
 * unknown (NaN). fallback_price: the price shown when no GPU is priced;
 * NaN or <= 0 none. */
void gp_jobmodel_gpu_figures(const struct gp_jobmodel_gpus *a, const struct gp_jobmodel_gpu *g,
                             size_t n, bool held_none, double fallback_price,
                             struct gp_jobmodel_gpu_figures *f);

/* One GPU's activity average and peak-memory ratio (NaN when unknown). */
double gp_jobmodel_gpu_activity(const struct gp_jobmodel_gpu *g);
double gp_jobmodel_gpu_peak_ratio(const struct gp_jobmodel_gpu *g);

/* One rank's steps, for its straggler scores: its sums and its best
 * (lowest) step time of any interval; its tokens and samples, for its
 * MFU. */
struct gp_jobmodel_rank {
    double steps, seconds, best;
    double tokens, samples; /* NaN: never reported */
};

void gp_jobmodel_rank_init(struct gp_jobmodel_rank *r);
/* n steps (> 0) took `seconds` in all: one interval between two samples
 * of its counters, or the records of one sampling interval (gpulse run),
 * so that a rank's best is a mean over an interval on both paths. */
void gp_jobmodel_rank_interval(struct gp_jobmodel_rank *r, double n, double seconds);
/* Adds another process's figures of the same rank (a restart). */
void gp_jobmodel_rank_merge(struct gp_jobmodel_rank *into, const struct gp_jobmodel_rank *r);

struct gp_jobmodel_rank_figures {
    double step_mean, step_best;  /* seconds; NaN: no step */
    double relative, individual;  /* straggler scores, 0-1; NaN: unknown */
};

/* The figures of rank i among r[0..n). */
void gp_jobmodel_rank_figures(const struct gp_jobmodel_rank *r, size_t n, size_t i,
                              struct gp_jobmodel_rank_figures *f);
/* What MFU is computed from. */
struct gp_jobmodel_mfu_in {
    double flops_token, flops_sample; /* model FLOPs declared; <= 0 or NaN: not said */
    int precision;                    /* enum gp_precision; -1: not said */
    double tokens_per_second, samples_per_second; /* the step figures */
    const char *const *models;        /* the job's GPUs' model names (NULL entries: unknown) */
    size_t ngpus;
    /* the hardware's own figures (0-1, NaN unknown), to explain a gap */
    double activity, tensor_active, dram_active, link_busy;
};

struct gp_jobmodel_mfu {
    double achieved_flops_per_second; /* NaN when unknown */
    double peak_flops_per_second;     /* of all the job's GPUs; NaN when unknown */
    double mfu;                       /* NaN when n/a: then why says why */
    const char *per;                  /* "token", "sample" or NULL: what the FLOPs counted */
    char why[160];                    /* "" when mfu is known */
    char gap[320];                    /* activity high, MFU low: the likely causes; "" otherwise */
};

void gp_jobmodel_mfu(const struct gp_jobmodel_mfu_in *in, struct gp_jobmodel_mfu *out);

/* A rank's throughput for its MFU, into in: its tokens and samples over
 * the job's stepping span (job: the job's step figures), so that ranks are
 * measured on one clock and a straggler's lower rate shows. The caller
 * gives the declaration and the rank's own GPUs. */
void gp_jobmodel_rank_rates(const struct gp_jobmodel_rank *r, const struct gp_jobmodel_step_figures *job,
                            struct gp_jobmodel_mfu_in *in);

/* Ranks as documents show them: a job of one rank entry that never said
 * its rank (gpulse run of a single process, GPULSE_JOB) is rank 0 of a
 * world of 1; otherwise what was said, -1 when unknown. */
long long gp_jobmodel_rank(long long rank, size_t nranks);
long long gp_jobmodel_world_size(long long world_size, size_t nranks);

#endif
