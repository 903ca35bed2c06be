/*
 * history.h - what `gpulse run` remembers of its job, and the job
 * document (docs/jobs.md) built from it.
 *
 * Two feeds: every sampling tick (the frame: the job's GPUs, found by the
 * job label of the processes on them, and the job's host processes from
 * the jobs source) and every step record the training code sends. Steps
 * are kept exactly where it matters for trust (count, sums, max) and in
 * the job model's 1 % buckets for percentiles, so a ten-day run costs
 * the same memory as a ten-minute one. Curves are kept at most
 * GP_HISTORY_POINTS points: when full, neighbouring points are merged
 * (mean of activity, CPU and step time; max of memory) and each point
 * covers twice as many ticks from then on.
 *
 * The figures of the document (steps, percentiles, throughput, data
 * wait, GPU-seconds, activity, peak memory, cost) are the job model's
 * (query/jobmodel.h), fed every record, as the server's document feeds it
 * counters: one definition for both.
 *
 * Goodput (query/goodput.h) is kept per reporting process (a rank),
 * from its steps and phases; the earlier attempts of the same job (a
 * restart with the same --job), when told, add their figures, and their
 * last step number makes the repeated steps lost work.
 *
 * Feeds and readers may run on different threads: every call takes the
 * history's own lock.
 */
#ifndef GP_RUN_HISTORY_H
#define GP_RUN_HISTORY_H

#include "lib/buf.h"
#include "query/goodput.h"
#include "sources/frame.h"

#include <jansson.h>
#include <stdbool.h>
#include <sys/resource.h>

#define GP_HISTORY_POINTS 512

struct gp_history;

struct gp_history_options {
    const char *job;           /* the job id the processes carry */
    const char *command;       /* shown in the report */
    double interval_s;         /* sampling interval (the first tick's width) */
    double price_per_gpu_hour; /* 0: each GPU at its model's default price */
    double start_s;            /* when the job started, epoch s; 0: now */
};

/* One step as the training code reported it. */
struct gp_history_step {
    double t_end;              /* epoch seconds the step ended (arrival when not sent) */
    double seconds;            /* the step's own duration */
    bool has_samples, has_tokens, has_wait, has_loss;
    double samples, tokens;
    double wait_seconds;       /* time before the step spent waiting for data */
    double loss;               /* the training loss the client sent with the step */
    uint32_t pid;              /* the reporting process (a rank) */
    double n;                  /* the caller's step number; < 0 not said */
};

/* A new history starting now. NULL when out of memory. The caller frees it. */
struct gp_history *gp_history_new(const struct gp_history_options *o);
void gp_history_free(struct gp_history *h); /* accepts NULL */

/* Records one tick. */
void gp_history_frame(struct gp_history *h, const struct gp_frame *f);

/* Records one step. */
void gp_history_step(struct gp_history *h, const struct gp_history_step *s);

/* The model the job trains (a model record, for MFU): FLOPs per token and
 * per sample (<= 0: not said) and its precision (enum gp_precision). */
void gp_history_model(struct gp_history *h, double flops_token, double flops_sample, int precision);

/* Records one phase (checkpoint, eval...) of process pid that ended at
 * t_end after `seconds`. */
void gp_history_phase(struct gp_history *h, uint32_t pid, const char *name, double t_end,
                      double seconds);

/* The job ran before (attempts > 0 earlier runs with the same id): their
 * goodput figures (copied) and the last step number they reached. */
void gp_history_prior(struct gp_history *h, const struct gp_goodput_figures *prior,
                      unsigned attempts, double last_step);

/* This attempt's own goodput figures, over its reporting processes, and
 * the last step number any reached (-1 none), for the next attempt. */
void gp_history_goodput(struct gp_history *h, struct gp_goodput_figures *f, double *last_step);

/* The command ended at end_s with waitpid status and its rusage (its
 * waited-for descendants included): exact CPU time and peak RSS. */
void gp_history_finish(struct gp_history *h, double end_s, int status, const struct rusage *ru);

/* One status line (no newline): elapsed, steps and rate, GPU activity and
 * memory, host RSS. */
void gp_history_status(struct gp_history *h, struct gp_buf *out, double now_s);

/* The job document (docs/jobs.md); the caller owns the reference. NULL
 * when out of memory. */
json_t *gp_history_document(struct gp_history *h);

#endif
