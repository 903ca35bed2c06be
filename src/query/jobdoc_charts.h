/*
 * jobdoc_charts.h - a job document's "series" (series=1, the report's
 * charts; query-internal): the job's series sampled on at most
 * GP_JOBDOC_MAX_POINTS grid points with the query engine's windows
 * (eval.h): activity means and memory maxima per GPU, step time per
 * window, loss, host CPU cores and summed RSS. t in seconds since the
 * start, null where nothing was seen.
 */
#ifndef GP_QUERY_JOBDOC_CHARTS_H
#define GP_QUERY_JOBDOC_CHARTS_H

#include "lib/buf.h"
#include "query/eval.h"
#include "query/jobdoc_gpu.h"
#include "query/jobdoc_int.h"

#include <stddef.h>
#include <stdint.h>

/* One step-time interval of a process: at t (ms), steps steps took sec. */
struct gp_jobdoc_interval {
    int64_t t;
    double sec, steps;
};

/* What the charts show, borrowed. */
struct gp_jobdoc_charts_in {
    int64_t t0, t1; /* the job's range */
    const struct gp_jobdoc_gpus *gpus;
    const struct gp_jobdoc_interval *iv;
    size_t niv;
    const struct gp_jobdoc_ser *loss, *cpu, *rss; /* one a process */
    size_t nloss, ncpu, nrss;
};

/* The step of the charts' grid over [t0, t1] (ms): at most
 * GP_JOBDOC_MAX_POINTS points, at least 1 s apart. */
int64_t gp_jobdoc_grid_step(int64_t t0, int64_t t1);

/* Sum over series xs of their grid values (MEAN or MAX windows) into
 * val/has (r->npoints each); tmp/th are scratch of the same size. */
void gp_jobdoc_grid_sum(const struct gp_eval_range *r, enum gp_eval_mode mode, const struct gp_jobdoc_ser *xs,
                        size_t n, double *val, uint8_t *has, double *tmp, uint8_t *th);

/* Appends `,"series":` and its object. GP_OK, GP_ENOMEM, or GP_EUSAGE
 * for a range the grid cannot hold. */
int gp_jobdoc_charts_write(const struct gp_jobdoc_charts_in *in, struct gp_buf *b);

#endif
