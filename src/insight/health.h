/*
 * health.h - the health state of every GPU and node: healthy, degraded
 * or unhealthy, with the reasons (fault catalog rows, faults.h, with
 * their action) and since when (docs/health.md "Health states").
 *
 * Inputs, each evaluation tick (engine.c): the catalog faults the
 * hardware detectors found (gp_health_observe: ECC and row-remap states,
 * a GPU off the bus, a PCIe link below its maximum, throttling that
 * persists), then the view (gp_health_tick), whose per-code XID counters
 * give every XID the driver reported, the application's too. A warning
 * fault makes its GPU degraded, a critical one unhealthy; the same XID
 * `repeat` times within `window` makes it unhealthy ("drain and
 * inspect": the remedy did not hold). A node is as bad as its worst GPU,
 * and degraded at least while its last preflight failed.
 *
 * Stickiness: a hardware fault whose action is a GPU reset or stronger
 * (an uncorrectable ECC error, a row remap failure, XID 48/64/79...,
 * repeats) stays a reason until an operator marks the node healthy
 * (gp_health_mark_healthy, audited); a finding that clears by itself
 * (throttling, an application's XID once the window passes it) clears
 * the state. A fault still present after the mark returns at the next
 * tick: marking says "repaired", not "ignore".
 *
 * Leaving the fleet: a GPU not seen for forget_ms is forgotten (memory
 * and state.db), and so is a node left with no GPUs whose last preflight,
 * if any, is older too; marking a node healthy forgets at once those of
 * its GPUs the newest view lacks, and the node when none is left (it was
 * taken out of the fleet and repaired). A GPU that comes back is new.
 *
 * Everything is kept in state.db (tables health_*), so a restart keeps
 * the states, the reasons, their times and each XID counter's last value
 * (an XID counted before the restart is not counted again).
 *
 * Thread safety: every function locks; the engine's thread feeds, API
 * threads read and mark.
 */
#ifndef GP_INSIGHT_HEALTH_H
#define GP_INSIGHT_HEALTH_H

#include "insight/detect.h"
#include "insight/faults.h"
#include "insight/view.h"
#include "lib/buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GP_HEALTH_STATES(X) X(HEALTHY, "healthy") X(DEGRADED, "degraded") X(UNHEALTHY, "unhealthy")
enum gp_health_state {
#define GP_HS_ENUM_(id, name) GP_HS_##id,
    GP_HEALTH_STATES(GP_HS_ENUM_)
#undef GP_HS_ENUM_
    GP_HS__COUNT
};
extern const char *const gp_health_state_names[GP_HS__COUNT];

struct gp_health_options {
    unsigned xid_repeat;     /* the same XID this many times in xid_window: unhealthy; 0 off */
    int64_t xid_window_ms;   /* how long an XID counts (repeats, and a non-sticky XID's reason) */
    int64_t forget_ms;       /* a GPU not seen this long is forgotten, then its empty node; 0 never */
};

struct gp_health;

/* Opens the health states kept in dir/state.db (dir NULL: in memory
 * only, for tests). GP_OK, GP_EUSAGE (bad options), GP_EIO or GP_ENOMEM,
 * with detail. Close with gp_health_close. */
int gp_health_open(struct gp_health **out, const char *dir, const struct gp_health_options *o,
                   char *err, size_t errlen);
void gp_health_close(struct gp_health *h); /* accepts NULL */

/* A detector's observation of this tick: its catalog faults (o->faults)
 * become reasons of its GPU. Call between ticks' gp_health_tick. GP_OK
 * or GP_ENOMEM. */
int gp_health_observe(struct gp_health *h, const struct gp_observation *o);

/*
 * Ends a tick at now_ms: counts new XIDs from the view's per-code
 * counters, applies the observations since the last tick, drops the
 * non-sticky reasons not found again (only when judged: a tick whose
 * detectors did not all run keeps them), recomputes the states and
 * writes what changed to state.db. GP_OK, or GP_EIO (the states stay
 * right in memory; the write is retried next tick).
 */
int gp_health_tick(struct gp_health *h, const struct gp_view *v, int64_t now_ms, bool judged);

/*
 * An operator marks node healthy: every reason of its GPUs is dropped
 * and its XID history forgotten, the states become healthy as of now_ms,
 * and an audit row (kind mark_healthy, decision marked_healthy, detail
 * "marked healthy by BY: COMMENT; was STATE (reasons)") is written.
 * Its GPUs the newest view lacks are forgotten, and the node with them
 * when none is left (gp_health_json then says GP_ENOTFOUND).
 * GP_OK, GP_ENOTFOUND (no such node), or GP_EIO.
 */
int gp_health_mark_healthy(struct gp_health *h, const char *node, const char *by,
                           const char *comment, int64_t now_ms);

/*
 * The preflight (gpulse check) of node finished at at_ms: ok or not, and
 * its one-line summary. Shown with the node's health (JSON "preflight").
 * A failed one makes the node degraded at least (its GPUs' worst still
 * counts) until a passing one: the prolog said no job should start there,
 * and a mark-healthy does not overrule it. GP_OK, GP_EIO or GP_ENOMEM.
 * Called by the server's preflight route.
 */
int gp_health_note_preflight(struct gp_health *h, const char *node, bool ok, const char *summary,
                             int64_t at_ms);

/* Counts for /metrics (gpulse_health_*): nodes and GPUs by state, and
 * the nodes whose last preflight failed. */
struct gp_health_stats {
    unsigned nodes[GP_HS__COUNT], gpus[GP_HS__COUNT];
    unsigned preflight_failed;
};
void gp_health_stats(struct gp_health *h, struct gp_health_stats *out);

/* Whether node is in the health states (not forgotten). */
bool gp_health_knows(struct gp_health *h, const char *node);

/* The state of node (GP_HS_HEALTHY for an unknown one). */
enum gp_health_state gp_health_node_state(struct gp_health *h, const char *node);

/*
 * Appends GET /api/v1/health/nodes's data to out: a JSON array of nodes
 * (node NULL: all, by name; else that one as an object), each with
 * state, since, reasons (the strongest first), action (the strongest
 * reason's), preflight and its GPUs with theirs. GP_OK, GP_ENOTFOUND
 * (node given and unknown) or GP_ENOMEM.
 */
int gp_health_json(struct gp_health *h, const char *node, struct gp_buf *out);

#endif
