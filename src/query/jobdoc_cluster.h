/*
 * jobdoc_cluster.h - what a job document asks the cluster to compute
 * (query-internal; docs/storage.md "Old reads: aggregates, not raw
 * samples"). In storage: remote, a job reaching before the local window
 * (or job-scoped on a named server: gp_storage_pushdown) would move every
 * raw sample of every series labelled with the job. The document needs
 * raw samples of only a few families; of GPU memory it needs a peak, a
 * newest value and, for its charts, a peak per chart window, which the
 * cluster evaluates (max_over_time, last_over_time) so one value per
 * series (and window) crosses the network.
 *
 * jobdoc.c still computes every figure (jobmodel.h); only what it reads
 * changes.
 */
#ifndef GP_QUERY_JOBDOC_CLUSTER_H
#define GP_QUERY_JOBDOC_CLUSTER_H

#include "storage/storage.h"

#include <stddef.h>
#include <stdint.h>

/* The families read raw (a regex on __name__): the GPU activity (the
 * time-weighted mean and percentiles, idle time and GPU-seconds weigh
 * each sample by its gap to the next and the median scrape gap) and the
 * job's own series that jobdoc.c reads (step counters: step records,
 * goodput phases, restarts; host CPU and RSS; loss; one series per rank
 * or process). Keep it in step with jobdoc.c's names. */
#define GP_JOBDOC_RAW_NAMES                                                                        \
    "DCGM_FI_PROF_SM_ACTIVE|DCGM_FI_DEV_GPU_UTIL|gpulse_job_(info|gpus|processes|target_steps|step|"  \
    "steps_total|step_seconds_total|data_wait_seconds_total|samples_total|tokens_total|"            \
    "phase_seconds_total|cpu_seconds_total|resident_memory_bytes|loss|model_flops)"

/* One GPU memory series of the job, as the cluster aggregated it over
 * [t0, t1]: s (its labels with __name__, and gpulse_family=the name too;
 * id 0, first_ms t0, last_ms t1),
 * its peak and newest value (NaN: none), and with a grid its peak per
 * window (t - step, t] at the grid's times (t, v, n; else none). */
struct gp_jobdoc_agg {
    struct gp_store_series s;
    double peak, last;
    int64_t *t;
    double *v;
    size_t n;
};

struct gp_jobdoc_aggs {
    struct gp_jobdoc_agg *a;
    size_t n;
};

/*
 * The memory families of job (FB used, free and reserved; gpulse's used
 * and total bytes) over [t0, t1] from the cluster: two PromQL requests
 * (peaks, newest values), a third with grid_step > 0 (the windows at
 * t0, t0 + step, ... <= t1). GP_OK, GP_ENOMEM, or the storage's error
 * (GP_ENET: gp_storage_last_error). out is freed with
 * gp_jobdoc_aggs_free either way.
 */
int gp_jobdoc_cluster_memory(struct gp_storage *st, const char *job, int64_t t0, int64_t t1,
                             int64_t grid_step, struct gp_jobdoc_aggs *out);

void gp_jobdoc_aggs_free(struct gp_jobdoc_aggs *a);

/* The aggregate whose series s is (a pointer into a), or NULL. */
const struct gp_jobdoc_agg *gp_jobdoc_agg_of(const struct gp_jobdoc_aggs *a,
                                             const struct gp_store_series *s);

#endif
