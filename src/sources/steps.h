/*
 * steps.h - tunables of the steps source (steps.c), for tests.
 *
 * The source itself is gp_source_steps (source.h); its wire format is
 * steps_proto.h.
 */
#ifndef GP_STEPS_H
#define GP_STEPS_H

/* An idle sender whose process is gone is forgotten after this long. */
extern double gp_steps_idle_evict_s;   /* 600 */
/* A sender that said `end` is forgotten this long after. */
extern double gp_steps_ended_keep_s;   /* 300 */
/* Senders tracked at once; records of more are dropped and counted as
 * source errors. */
extern unsigned gp_steps_max_pids;     /* 4096 */

#endif
