/*
 * jobdoc_gpu.h - the GPUs of a job document (query-internal; the
 * arithmetic is jobdoc.h's "GPUs", "activity" and "memory"): the job's
 * DCGM_FI_* and gpulse_gpu_* series filed under one GPU per (node, gpu,
 * GPU_I_ID), then each GPU's activity and memory read (raw samples, or
 * in storage: remote the cluster's memory aggregates) into what the job
 * model (jobmodel.h) takes: held seconds, time-weighted activity, peak
 * and capacity of memory, idle and unused time.
 */
#ifndef GP_QUERY_JOBDOC_GPU_H
#define GP_QUERY_JOBDOC_GPU_H

#include "query/jobdoc_int.h"
#include "query/jobmodel.h"

#include <stddef.h>
#include <stdint.h>

/* One GPU of the job. The gp_str fields point into its series' labels. */
struct gp_jobdoc_gpu {
    struct gp_str node, gpu, mig, uuid, model, rank;
    /* its families (the newest series of a name); NULL: none */
    const struct gp_store_series *sm, *util, *fb_used, *fb_free, *fb_res, *used, *total;
    struct gp_jobdoc_ser act, mem; /* activity (0-1) and memory in bytes */
    const char *source;            /* "sm_active" or "gpu_util" */
    int64_t step;                  /* its scrape step (ms): the median gap; 0 unknown */
    double seconds, act_sum, act_w, peak, capacity, idle_s, unused_s; /* NaN: unknown */
};

struct gp_jobdoc_gpus {
    struct gp_jobdoc_gpu *g;
    size_t n;
};

/* Whether s is of a GPU family (DCGM_FI_*, gpulse_gpu_*). */
int gp_jobdoc_gpu_family(const struct gp_store_series *s);

/* Files s, of a GPU family, under its GPU (a new one for a new GPU; a
 * series without a gpu label is left out). s is borrowed until
 * gp_jobdoc_gpus_free. GP_OK or GP_ENOMEM. */
int gp_jobdoc_gpus_add(struct gp_jobdoc_gpus *gs, const struct gp_store_series *s);

/* Sorts the GPUs by node, index (numerically) and MIG instance. */
void gp_jobdoc_gpus_sort(struct gp_jobdoc_gpus *gs);

/* Reads g's activity and memory over the job's range and works out its
 * figures; adds each activity sample, weighted by its time, to act.
 * GP_OK, GP_ENOMEM or the store's error. */
int gp_jobdoc_gpu_read(const struct gp_jobdoc_src *src, struct gp_jobdoc_gpu *g,
                       struct gp_jobmodel_gpus *act);

/* The samples g's held time counts (activity, else memory). */
const struct gp_jobdoc_ser *gp_jobdoc_gpu_samples(const struct gp_jobdoc_gpu *g);

/* The newest time of g's samples (ms); 0 without any. */
int64_t gp_jobdoc_gpu_last(const struct gp_jobdoc_gpu *g);

void gp_jobdoc_gpus_free(struct gp_jobdoc_gpus *gs); /* accepts zeroed; leaves it zeroed */

#endif
