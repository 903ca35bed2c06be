/*
 * router.h - alert transitions to notices (docs/notify.md, "Semantics").
 *
 * gp_router_listener is a gp_alert_listener: it copies the event into a
 * bounded queue and returns (the evaluation thread never waits on
 * SQLite). The router's thread (or a test calling gp_router_run with its
 * own clock) applies the queued events to the groups and emits a notice
 * per group when due, writing it with gp_outbox_insert in the same
 * transaction as the group's state (notify_groups, notify_group_alerts in
 * state.db), so a restart neither repeats nor forgets a notification.
 *
 * A group is (route index, receiver, values of the route's group_by;
 * an alert without a job groups by its node where group_by names job).
 * Non-silenced transitions to firing join every matching route's group
 * (first match wins unless continue); transitions to resolved mark the
 * alert for its resolution; pending transitions are ignored.
 *
 * When a group is due (its alerts' news: a firing or a resolution not yet
 * sent):
 *   - the first notice after group_wait from its first alert, later ones
 *     at most every group_interval after the last; a notice holds the
 *     alerts with news (each alert's firing once, its resolution once);
 *   - an unchanged group with firing alerts: every firing alert again
 *     after repeat_interval;
 *   - Alertmanager receivers (it groups itself): news goes out at once,
 *     and every firing alert of the group is re-sent every group_interval
 *     (so Alertmanager does not time it out), resolutions once with
 *     ends_ms set.
 * A group whose alerts are all resolved and notified is dropped.
 */
#ifndef GP_NOTIFY_ROUTER_H
#define GP_NOTIFY_ROUTER_H

#include "insight/alert_event.h"
#include "notify/config.h"
#include "notify/outbox.h"

#include <stddef.h>
#include <stdint.h>

#define GP_ROUTER_QUEUE_MAX 100000

struct gp_router;

struct gp_router_options {
    const char *dir;                      /* the data directory (state.db) */
    const struct gp_notify_config *cfg;   /* borrowed until close */
    struct gp_outbox *outbox;             /* woken after a notice is written; may be NULL */
    int64_t (*now_ms)(void *ctx);         /* NULL: the wall clock */
    void *clock_ctx;
};

/* Opens the router on its own connection to state.db and loads the
 * groups persisted there (those of routes no longer configured the same
 * way are dropped). *out is the caller's to close. GP_OK, GP_EIO,
 * GP_ENOMEM, GP_EUNSUPPORTED with detail. */
int gp_router_open(struct gp_router **out, const struct gp_router_options *o, char *err,
                   size_t errlen);

/* Starts the router's thread: it runs gp_router_run when events arrive
 * and at least every 200 ms. GP_OK or GP_ENOMEM. */
int gp_router_start(struct gp_router *r);

/* Stops the thread, applies the events still queued (no notice is
 * emitted) and closes; accepts NULL. Call before the alerts close or
 * after gp_alerts_close: the listener must not run on a closed router. */
void gp_router_close(struct gp_router *r);

/* The gp_alert_listener (ctx: the router). Copies ev; never blocks on
 * SQLite; an event past GP_ROUTER_QUEUE_MAX queued is dropped and counted. */
void gp_router_listener(void *ctx, const struct gp_alert_event *ev);

/* Applies the queued events and emits every notice due at now_ms (what
 * the thread does; tests call it with their clock). *emitted (may be
 * NULL) gets the number of notices written. GP_OK, GP_EIO or GP_ENOMEM. */
int gp_router_run(struct gp_router *r, int64_t now_ms, size_t *emitted);

struct gp_router_stats {
    uint64_t events, dropped, notices, db_errors;
    uint64_t groups, alerts; /* now */
};
void gp_router_stats(struct gp_router *r, struct gp_router_stats *out);

#endif
