/*
 * simulate.h - what the simulated source exposes beyond its ops table.
 *
 * gp_source_simulate (source.h) is the source itself. These helpers let
 * tests and demos ask which workload a simulated GPU plays, so a check
 * can look for each behaviour's signature in the series. Which GPU plays
 * which fault, and the jobs, come from the plan (simulate_plan.h).
 */
#ifndef GP_SIMULATE_H
#define GP_SIMULATE_H

#include "simulate_plan.h"
#include "source.h"

enum gp_sim_behaviour {
    GP_SIM_COMPUTE,   /* compute-bound: busy, power near the limit, clocks at max */
    GP_SIM_STARVED,   /* data-starved: busy bursts, then idle waits for input */
    GP_SIM_LEAKING,   /* memory grows until ~99 %, the job dies and restarts */
    GP_SIM_STRAGGLER, /* thermally throttled: hot, slow clock, less work done */
    GP_SIM_IDLE,      /* idle but allocated: memory held, nothing running */
    GP_SIM_THROTTLED, /* power-capped most of the time: clocks held down (a job of its own) */
    GP_SIM_ECC,       /* compute-bound, then one double-bit ECC error and XID 48 */
    GP_SIM_POWERCAP,  /* held at a lower power limit: at the cap, clocks and steps slower */
    GP_SIM_HANG,      /* the rank its hung job waits for: stuck on the host, GPU idle */
    GP_SIM_RESTART,   /* a rank of a job in a crash loop (its peers crash with it) */
    GP_SIM__COUNT
};

/* "compute", "starved", "leaking", "straggler", "idle", "throttled", "ecc", "powercap", "hang",
 * "restart"; "?" when out of range. */
const char *gp_sim_behaviour_name(enum gp_sim_behaviour b);

/* Number of simulated GPUs of an open simulate state (frame order). */
unsigned gp_sim_gpu_count(const void *state);

/* Behaviour of the i-th simulated GPU (frame order); -1 when i is out of range. */
int gp_sim_gpu_behaviour(const void *state, unsigned i);

/* The plan the state plays (its faults are the ground truth); NULL when state is. */
const struct gp_sim_plan *gp_sim_state_plan(const void *state);

#endif
