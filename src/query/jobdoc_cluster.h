/*
 * jobdoc_cluster.h - what a job document asks the cluster to compute
 * (query-internal; docs/storage.md "A job's document"). In storage:
 * remote, a job reaching before the local window (or job-scoped on a
 * named server: gp_storage_pushdown) would move every raw sample of
 * every series labelled with the job. The document needs raw samples of
 * only a few families; of the others it needs figures the cluster
 * evaluates exactly, so one value per series (and chart window) crosses
 * the network:
 *
 *   GPU memory     peak (max_over_time), newest (last_over_time), and
 *                  for its chart a peak per chart window
 *   newest only    processes, target steps, model FLOPs (their newest
 *                  value); the job's info and GPUs series (only their
 *                  labels and presence are read)
 *   counter totals samples and tokens (and host CPU without charts):
 *                  lowest, highest and resets(); with no reset the
 *                  counter never fell, so its lowest and highest are its
 *                  first and last samples, and those two give the same
 *                  increase as all of them (gp_jobdoc_increase)
 *
 * jobdoc.c still computes every figure (jobmodel.h); only what it reads
 * changes.
 */
#ifndef GP_QUERY_JOBDOC_CLUSTER_H
#define GP_QUERY_JOBDOC_CLUSTER_H

#include "storage/storage.h"

#include <stddef.h>
#include <stdint.h>

/* The families read raw (a regex on __name__), whose figures need every
 * sample: the GPU activity (the time-weighted mean and percentiles, idle
 * time and GPU-seconds weigh each sample by its gap to the next and the
 * median scrape gap), the step counters (a step record per interval
 * between two samples; goodput's phases, waits and step numbers per
 * interval; the projection's recent rate), RSS (its peak is taken on a
 * grid at its median scrape gap), loss (its first sample; a mean per
 * chart window) and, with charts (series=1), host CPU (its increments
 * per chart window). Keep it in step with jobdoc.c's names and the
 * aggregated families of jobdoc_cluster.c. */
const char *gp_jobdoc_cluster_raw_names(int charts);

/* One series of the job, as the cluster aggregated it: s (its labels
 * with __name__, and gpulse_family=the name too; id 0; first_ms the
 * job's start, last_ms the end of the range it was asked over), its
 * newest, highest and lowest value and its counter resets over the range
 * (NaN: not asked, or no sample), and for GPU memory with a grid its peak
 * per window (t - step, t] at the grid's times (t, v, n; else none). */
struct gp_jobdoc_agg {
    struct gp_store_series s;
    double last, peak, low, resets;
    int64_t *t;
    double *v;
    size_t n;
};

struct gp_jobdoc_aggs {
    struct gp_jobdoc_agg *a; /* sorted by labels */
    size_t n;
};

/*
 * The aggregated families of job from the cluster: the document's own
 * range [t0, t1] and, for the step counters' families, [t0, tc] (tc >=
 * t1). One PromQL request per range (one when tc is t1),
 * a third with grid_step > 0 (the memory chart's windows at t0, t0 +
 * step, ... <= t1); charts: host CPU is read raw (its chart needs its
 * samples), not aggregated. GP_OK, GP_ENOMEM, or the storage's error
 * (GP_ENET: gp_storage_last_error). out is freed with
 * gp_jobdoc_aggs_free either way.
 */
int gp_jobdoc_cluster_read(struct gp_storage *st, const char *job, int64_t t0, int64_t t1, int64_t tc,
                           int64_t grid_step, int charts, struct gp_jobdoc_aggs *out);

void gp_jobdoc_aggs_free(struct gp_jobdoc_aggs *a);

/* The aggregate whose series s is (a pointer into a), or NULL. */
const struct gp_jobdoc_agg *gp_jobdoc_agg_of(const struct gp_jobdoc_aggs *a,
                                             const struct gp_store_series *s);

#endif
