/*
 * jobdoc.h - the job document of docs/jobs.md computed from the store:
 * what GET /api/v1/jobs/ID answers (inside the envelope) and what
 * `gpulse report` can write bare. The registry (server/jobs.h) says who
 * the job is and when; this module reads the job's series over
 * [start, end or now] and works out the totals.
 *
 * Every series of the job carries its `job` label (docs/jobs.md), so one
 * selection {job="ID"} over the job's time finds them all; they are
 * sorted out by name. The arithmetic, as docs/api.md tells users:
 *
 *   GPUs           one per (node, gpu, GPU_I_ID) of the DCGM_FI_* and
 *                  gpulse_gpu_* series. Its scrape step is the median gap
 *                  between samples of its activity series (else its memory
 *                  series); its GPU-seconds are that series' samples x the
 *                  step: the time the GPU was present with the job.
 *   activity       DCGM_FI_PROF_SM_ACTIVE where the GPU has it, else
 *                  DCGM_FI_DEV_GPU_UTIL / 100 (activity_source). Each
 *                  sample weighs the time to the next one (at most two
 *                  steps; the last one step); avg and the p50/p90/p99
 *                  (nearest rank over the weights) pool all GPUs.
 *   memory         peak of DCGM_FI_DEV_FB_USED (MiB) or
 *                  gpulse_gpu_memory_used_bytes; capacity the newest
 *                  gpulse_gpu_memory_total_bytes, else FB_USED + FB_FREE
 *                  (+ FB_RESERVED) at their newest samples.
 *   counters       increase over the samples in the range, a drop read as
 *                  a reset (Prometheus's rule); a series whose first
 *                  sample is at or after the job's start was born with the
 *                  job and counts from 0. Host CPU, steps, samples and
 *                  tokens sum the increases of their series (ranks, pids).
 *   RSS peak       the largest, over a grid at the RSS scrape step, of the
 *                  sum over ranks of each window's maximum.
 *   step time      per interval between two samples of a process's
 *                  steps_total and step_seconds_total at the same time:
 *                  delta seconds / delta steps, each of its steps at
 *                  that mean. mean = all seconds / all steps;
 *                  p50/p90/p99/max over the steps.
 *   data wait      increase of data_wait_seconds_total / increase of
 *                  step_seconds_total.
 *   (the step stream's figures are the job model's: query/jobmodel.h)
 *   tail           an ended job's step counters are read up to
 *                  GP_JOBDOC_TAIL_MS past its end: the last steps before
 *                  exit reach the agent with the end record and are
 *                  sampled after it (the agent keeps an ended sender's
 *                  counters that long, sources/steps.c).
 *   cost           per GPU: its held time x its model's price (insight/
 *                  cost.h: gpu_prices, the model table, the fallback);
 *                  cost_idle the samples with activity < 0.05,
 *                  cost_unused_compute (1 - activity) x step x price.
 *   projection     while running, with gpulse_job_target_steps: the
 *                  leading reporter's gpulse_job_step, its rate over the
 *                  last 5 minutes of samples, and the job's cost per hour
 *                  now (the prices of the GPUs seen at its newest sample):
 *                  seconds left = (target - step) / rate, projected total
 *                  = cost + seconds left x cost per hour.
 *
 * What the data cannot give is null, never 0: no GPU series, no
 * counter, no price. `series` (on request) samples the same series on at
 * most 500 grid points (the query engine's windows, eval.h): activity
 * means and memory maxima per GPU, step time per window, host CPU cores
 * and summed RSS; t in seconds since start, null where nothing was seen.
 */
#ifndef GP_QUERY_JOBDOC_H
#define GP_QUERY_JOBDOC_H

#include "lib/buf.h"
#include "query/goodput.h"
#include "storage/storage.h"

#include <stddef.h>
#include <stdint.h>

#define GP_JOBDOC_NONE INT64_MIN
#define GP_JOBDOC_MAX_POINTS 500
#define GP_JOBDOC_TAIL_MS 300000

struct gp_jobdoc_rank {
    const char *node;          /* "" when unknown */
    int64_t rank, local_rank;  /* GP_JOBDOC_NONE when unknown */
    int64_t world_size;        /* GP_JOBDOC_NONE when unknown */
};

struct gp_jobdoc_in {
    const char *id, *scheme;   /* scheme "" when unknown */
    const char *state;         /* "running", "finished", ... */
    int64_t start_ms;          /* the job's start (or first seen) */
    int64_t end_ms;            /* its end, GP_JOBDOC_NONE while unknown */
    int64_t range_end_ms;      /* end of the range to read: end, else now or last seen */
    int64_t exit_status;       /* GP_JOBDOC_NONE when unknown */
    const struct gp_jobdoc_rank *ranks;
    size_t nranks;
    double price_per_gpu_hour; /* USD for every GPU when prices is NULL; 0 not configured */
    const struct gp_prices *prices; /* per model (query/cost.h); NULL: price_per_gpu_hour */
    double budget;             /* USD; 0: none */
    int series;                /* 1: add "series" */
};

/*
 * Appends the bare job document (a JSON object) to out. Borrowed
 * inputs; nothing kept. GP_OK, GP_ENOMEM, GP_EIO (the store), or out's
 * latched GP_ETOOBIG, with detail; on failure out is as it was.
 */
int gp_jobdoc_write(struct gp_storage *st, const struct gp_jobdoc_in *in, struct gp_buf *out,
                    char *err, size_t errlen);

/*
 * The document's totals.cost alone (NaN when unknown), without writing
 * the document: what the budget detector needs. GP_OK or as above.
 */
int gp_jobdoc_cost(struct gp_storage *st, const struct gp_jobdoc_in *in, double *cost, char *err,
                   size_t errlen);

/* What the job detectors read, without writing the document: totals.cost
 * (NaN unknown) and goodput (its ratio NaN when no process reported). */
struct gp_jobdoc_figures {
    double cost;
    struct gp_goodput_figures goodput;
};
int gp_jobdoc_figures(struct gp_storage *st, const struct gp_jobdoc_in *in,
                      struct gp_jobdoc_figures *out, char *err, size_t errlen);

#endif
