/*
 * goodput.h - goodput and badput of a job, rank by rank: where each
 * rank's wall time went (docs/jobs.md, "Goodput"). A part of the job
 * model (jobmodel.h), fed by the same step stream plus the phase records
 * the clients send around checkpoints and evaluation.
 *
 * A rank's wall time, from its start to its end, splits into:
 *   startup      before its first step, less the phases before it
 *   productive   its steps' seconds, less their data wait
 *   data_wait    the data wait of its steps
 *   checkpoint   phases the protocol names checkpoint, evaluation and
 *   evaluation   other (gp_steps_phase_of: checkpoint, checkpoint_save,
 *   other        checkpoint_load; eval, evaluation, validation; the rest)
 *   lost         whole steps repeated after a restart: a step numbered at
 *                or below the last step seen before the restart
 *                (`resume_from`), wait included
 *   idle         the rest (gaps between steps and phases, the tail)
 * Goodput is productive / wall; the biggest badput is the largest part
 * other than productive.
 *
 * Pure arithmetic: no allocation, no I/O, no locks.
 */
#ifndef GP_QUERY_GOODPUT_H
#define GP_QUERY_GOODPUT_H

#include <stdbool.h>
#include <stdint.h>

enum gp_goodput_part {
    GP_GOODPUT_STARTUP,
    GP_GOODPUT_PRODUCTIVE,
    GP_GOODPUT_DATA_WAIT,
    GP_GOODPUT_CHECKPOINT,
    GP_GOODPUT_EVALUATION,
    GP_GOODPUT_OTHER,
    GP_GOODPUT_LOST,
    GP_GOODPUT_IDLE,
    GP_GOODPUT_NPARTS
};

struct gp_goodput_rank {
    double start_s;            /* the rank's start, epoch s */
    double first_step_s;       /* the first step's start; NaN before it */
    double phases_before;      /* phase seconds ended before the first step */
    double part[GP_GOODPUT_NPARTS]; /* the summed parts (startup, idle: see figures) */
    double resume_from;        /* steps numbered <= this are lost; < 0: no restart */
    double last_step;          /* the highest step number seen; -1 none */
    double steps;              /* step records */
};

/* A rank that started at start_s; resume_from: the last step number seen
 * before a restart of its job, or -1. */
void gp_goodput_rank_init(struct gp_goodput_rank *r, double start_s, double resume_from);

/* One step that ended at t_end after `seconds`, wait of them for data
 * (NaN: not said, counted as 0); n its number, < 0 when not said. */
void gp_goodput_step(struct gp_goodput_rank *r, double t_end, double seconds, double wait,
                     double n);

/* nsteps (> 0) steps that ended by t_end and took `seconds` in all, wait of
 * them for data (NaN: 0), the last numbered n_last (< 0: not said): the
 * steps between two samples of the server's counters. Steps numbered at
 * or below resume_from count as lost in proportion. */
void gp_goodput_interval(struct gp_goodput_rank *r, double t_end, double seconds, double wait,
                         double n_last, double nsteps);

/* One phase named `name` that ended at t_end after `seconds`. */
void gp_goodput_phase(struct gp_goodput_rank *r, const char *name, double t_end, double seconds);

/* The part a phase name counts in. */
enum gp_goodput_part gp_goodput_phase_part(const char *name);

/* The name of a part in documents ("startup", "productive", ...). */
const char *gp_goodput_part_name(enum gp_goodput_part p);

struct gp_goodput_figures {
    double wall;                      /* rank-seconds; 0 when none */
    double part[GP_GOODPUT_NPARTS];   /* seconds, summing to wall */
    double ratio;                     /* productive / wall; NaN without wall, 0 before the first step */
    int biggest_badput;               /* a part, -1 when no badput */
};

/* Adds rank r, which ended at end_s, to f (zero f first with
 * gp_goodput_figures_init). A rank that never stepped is all startup. */
void gp_goodput_figures_init(struct gp_goodput_figures *f);
void gp_goodput_add_rank(struct gp_goodput_figures *f, const struct gp_goodput_rank *r,
                         double end_s);

/* Adds figures (another attempt of the job, or a rank) to f. */
void gp_goodput_add(struct gp_goodput_figures *f, const struct gp_goodput_figures *g);

/* Sets ratio and biggest_badput from the parts. */
void gp_goodput_finish(struct gp_goodput_figures *f);

#endif
