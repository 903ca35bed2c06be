/*
 * jobdoc_goodput.h - a job document's "goodput" (docs/jobs.md "Goodput";
 * query-internal): each process that reported steps, found by its
 * gpulse_job_steps_total and step_seconds_total series, its restarts
 * found among the processes of its rank, and its counters' increases
 * between samples fed to the goodput model (goodput.h); then the
 * document's "goodput" object.
 */
#ifndef GP_QUERY_JOBDOC_GOODPUT_H
#define GP_QUERY_JOBDOC_GOODPUT_H

#include "lib/buf.h"
#include "query/goodput.h"
#include "query/jobdoc_int.h"

#include <stddef.h>
#include <stdint.h>

/* A process's goodput counters: the series of one name each, as
 * selected (borrowed). */
struct gp_jobdoc_goodput_in {
    const struct gp_store_series **steps, **secs, **waits, **stepnos, **phases;
    size_t nsteps, nsecs, nwaits, nstepnos, nphases;
};

struct gp_jobdoc_gproc; /* one reporting process (jobdoc_goodput.c) */

struct gp_jobdoc_goodput {
    struct gp_goodput_figures f; /* the job's; its ratio NaN when no process reported */
    unsigned attempts;           /* the most starts of one rank */
    double last_step;            /* the highest step number; -1 none */
    struct gp_jobdoc_gproc *p;   /* the reporting processes, in start order */
    size_t n;
};

/* Works out the job's goodput into out (gp_jobdoc_goodput_free it
 * either way), reading the counters over [t0, tc]. GP_OK, GP_ENOMEM or
 * the store's error. */
int gp_jobdoc_goodput_gather(const struct gp_jobdoc_src *src, const struct gp_jobdoc_goodput_in *in,
                             struct gp_jobdoc_goodput *out);

/* Appends `,"goodput":` and its object, or null when no process reported. */
void gp_jobdoc_goodput_write(const struct gp_jobdoc_goodput *g, struct gp_buf *b);

void gp_jobdoc_goodput_free(struct gp_jobdoc_goodput *g); /* accepts zeroed; leaves it zeroed */

#endif
