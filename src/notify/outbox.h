/*
 * outbox.h - the persisted outbox of notifications (docs/notify.md).
 *
 * A notice is written to <data>/state.db (table notifications, state
 * queued) before anything is sent; a sender thread hands due rows to
 * their receiver's channel and marks them done, schedules a retry
 * (exponential back-off from 1 s doubling up to retry_max_backoff, full
 * jitter, never before the far end's Retry-After) or marks them dead (a
 * permanent failure, or past retry_max_age since created). Opening
 * resumes what was queued.
 *
 * The channels come in as an option (one ops table per receiver type,
 * NULL where a type has none yet): the outbox never names a channel, so
 * tests pass their own. A row whose type has no channel stays queued.
 */
#ifndef GP_NOTIFY_OUTBOX_H
#define GP_NOTIFY_OUTBOX_H

#include "lib/buf.h"
#include "lib/metric_sink.h"
#include "notify/config.h"
#include "notify/notify.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#define GP_OUTBOX_ID_LEN 33 /* 32 hex digits and NUL */

struct gp_outbox;

struct gp_outbox_options {
    const char *dir;                              /* the data directory (state.db) */
    const struct gp_notify_config *cfg;           /* borrowed until close */
    const struct gp_channel_ops *const *channels; /* [GP_RT__COUNT], borrowed; entries may be NULL */
    int64_t (*now_ms)(void *ctx);                 /* NULL: the wall clock */
    void *clock_ctx;
    uint64_t seed;                                /* jitter; 0: from the clock */
};

/* Opens the outbox (*out, caller closes). GP_OK, GP_EIO, GP_ENOMEM, GP_EUNSUPPORTED with detail. */
int gp_outbox_open(struct gp_outbox **out, const struct gp_outbox_options *o, char *err,
                   size_t errlen);

/* Starts the sender thread. GP_OK or GP_ENOMEM. */
int gp_outbox_start(struct gp_outbox *ob);

/* Stops the sender (waiting for a send in flight: a channel never blocks
 * past its receiver's timeout) and closes; accepts NULL. */
void gp_outbox_close(struct gp_outbox *ob);

/* Writes n as a queued notification, due now, on db (the caller's
 * connection to state.db, so the router can write it in the same
 * transaction as its group state); id_out gets its id. GP_OK, GP_EIO or GP_ENOMEM. */
int gp_outbox_insert(sqlite3 *db, const struct gp_notice *n, int64_t now_ms,
                     char id_out[GP_OUTBOX_ID_LEN]);

/* gp_outbox_insert on the outbox's own connection, then wakes the sender. */
int gp_outbox_enqueue(struct gp_outbox *ob, const struct gp_notice *n, char id_out[GP_OUTBOX_ID_LEN]);

/* Tells the sender that rows were written. */
void gp_outbox_wake(struct gp_outbox *ob);

/* Sends every row due at now_ms once (what the thread does each time it
 * wakes; tests call it with their own clock). *sent (may be NULL) gets the
 * number of sends tried. GP_OK or GP_EIO. */
int gp_outbox_run_due(struct gp_outbox *ob, int64_t now_ms, size_t *sent);

/* The rows as the API's data array into out: state "queued", "done",
 * "dead" or NULL/"all"; receiver NULL for all; newest first, at most
 * limit. Details are stored redacted. GP_OK, GP_EIO, GP_ETOOBIG. */
int gp_outbox_list_json(struct gp_outbox *ob, const char *state, const char *receiver, size_t limit,
                        struct gp_buf *out);

/* The /metrics families of docs/notify.md, walked into out. */
void gp_outbox_walk_metrics(struct gp_outbox *ob, struct gp_metric_sink *out);

struct gp_outbox_stats {
    uint64_t queued, done, dead; /* rows now */
    uint64_t sends, retries, failures;
};
void gp_outbox_stats(struct gp_outbox *ob, struct gp_outbox_stats *out);

#endif
