/*
 * sampler.h - the sampling loop: sources -> frame, once per interval.
 *
 * One thread ticks at a fixed rate on CLOCK_MONOTONIC. Each tick fills a
 * private frame from every open source, then publishes it by swapping
 * it with the shared one under a write lock. Readers (the HTTP handlers)
 * take the read lock only while they render into memory, never while
 * they send, so a slow client can not stall sampling. A tick that runs
 * past the next deadline skips the missed ticks and counts an overrun.
 */
#ifndef GP_SAMPLER_H
#define GP_SAMPLER_H

#include "agent/expo.h"
#include "sources/source.h"

struct gp_sampler;

/* Sources with nothing to sample at start (no driver loaded yet, no
 * card) are probed again every this many seconds (60): a node may start
 * the agent before the GPU driver. Tests lower it. */
extern double gp_sampler_reprobe_s;

/*
 * Opens the sources (a source with nothing to watch is skipped after one
 * log line), takes the first sample synchronously, and starts the
 * thread. Returns GP_OK with *out set (caller stops it with
 * gp_sampler_stop), or an error with detail in err.
 */
int gp_sampler_start(struct gp_sampler **out, const struct gp_source_config *cfg,
                     const struct gp_source_ops *const *sources, size_t nsources, char *err,
                     size_t errlen);

/* Calls fn with the latest frame and stats under the read lock; fn must not block. */
void gp_sampler_read(struct gp_sampler *s,
                     void (*fn)(const struct gp_frame *f, const struct gp_agent_stats *st, void *arg),
                     void *arg);

/*
 * A hook the sampling thread calls after each tick is published, with the
 * frame and stats just published (valid during the call; the hook runs
 * before the next tick starts, so it sees every tick once). The agent's
 * pusher renders the tick here. It must not block for long: it delays
 * the next tick. Set it on a sampler from gp_sampler_open, before
 * gp_sampler_run or the first gp_sampler_tick.
 */
typedef void (*gp_sampler_hook)(const struct gp_frame *f, const struct gp_agent_stats *st, void *arg);
void gp_sampler_set_hook(struct gp_sampler *s, gp_sampler_hook fn, void *arg);

/* Takes the first sample and starts the thread of a sampler made by
 * gp_sampler_open (gp_sampler_start is open + run). GP_OK or an error. */
int gp_sampler_run(struct gp_sampler *s, char *err, size_t errlen);

/* Runs one tick now, in the caller's thread (tests and benchmarks). Only
 * valid for a sampler created with gp_sampler_open (no thread). */
void gp_sampler_tick(struct gp_sampler *s);

/* Like gp_sampler_start without the thread: the caller ticks. */
int gp_sampler_open(struct gp_sampler **out, const struct gp_source_config *cfg,
                    const struct gp_source_ops *const *sources, size_t nsources, char *err,
                    size_t errlen);

/* Stops the thread, closes the sources, frees everything. Accepts NULL. */
void gp_sampler_stop(struct gp_sampler *s);

/* Number of open sources that report GPUs (nvml, amdgpu, simulate). */
unsigned gp_sampler_gpu_sources(const struct gp_sampler *s);

#endif
