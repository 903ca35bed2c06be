/*
 * alerts.h - the alert state machine of `gpulse server`: what the
 * detectors and custom rules observe becomes alerts with a lifecycle,
 * kept in <data>/state.db (state/state.h, tables alerts,
 * alert_transitions and silences).
 *
 * Key and fingerprint. An alert is about one key: its kind (a detector's
 * name or a custom rule's name), node, gpu, job, rank and pid (detect.h's
 * gp_obs_key; `det` is not part of the key, so custom rules set it to
 * GP_DET__COUNT), plus an `extra` 64-bit hash that custom rules use for
 * the series labels beyond those five. The fingerprint is FNV-1a 64 of
 * those fields as text, written as 16 hex digits: the same key gives the
 * same id on every machine and across restarts, and it is the alert's id
 * in the API. Observations of one key in one tick are de-duplicated (the
 * first bad one wins, else the first).
 *
 * Lifecycle, per key, judged at each evaluation tick:
 *   - bad and no active alert: a new alert, pending (a transition from
 *     nothing, `from` reads RESOLVED for listeners and null in the API),
 *     unless the key resolved from firing less than `cooldown` ago;
 *   - pending and bad for `for` (from its start): firing; for 0: at once;
 *   - pending and not bad (or not observed): resolved at once (it never
 *     fired, so no cool-down follows);
 *   - firing and not bad (or not observed) for `clear_for`: resolved
 *     (clear_for 0: at the first tick that is not bad); bad again within
 *     clear_for keeps it firing;
 *   - a kind the engine could not evaluate this tick (gp_alerts_hold) keeps
 *     its alerts as they are.
 * Hysteresis is the detectors' (detect.h): gp_alerts_active tells them
 * whether a key's alert is pending or firing.
 *
 * Persistence: each transition updates the alert's row (one row per
 * alert instance: the same fingerprint gets a new row when it fires again
 * after resolving) and appends a transition row with the value, evidence
 * and whether a silence matched; a tick's writes are one transaction.
 * Opening reloads the pending and firing alerts, and the resolved ones
 * still in cool-down, so a restart neither fires an alert twice nor
 * forgets a cool-down.
 *
 * Silences: exact matchers on kind, job, node, gpu and severity (an empty
 * matcher matches anything, at least one must be set), a start and an
 * end. A silenced alert moves through its states as any other and is
 * stored; its events carry silenced = true. Deleting a silence ends it
 * now (its row stays, as history).
 *
 * Listeners (alert_event.h) are called for every transition after the
 * tick's writes, outside the lock, on the thread that called
 * gp_alerts_end.
 *
 * Threads: one mutex guards the alerts in memory and the silences; the
 * API's readers and the evaluation thread may call in at any time.
 */
#ifndef GP_INSIGHT_ALERTS_H
#define GP_INSIGHT_ALERTS_H

#include "insight/alert_event.h"
#include "insight/detect.h"
#include "lib/buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GP_ALERTS_MAX 20000        /* alerts held in memory; new ones beyond are dropped (counted) */
#define GP_ALERTS_MAX_LISTENERS 8
#define GP_SILENCES_MAX 1000       /* silences not yet ended */
#define GP_ALERT_KIND_LEN 64
#define GP_ALERT_LABELS_LEN 1024
#define GP_ALERT_RUNBOOK_LEN 512

extern const char *const gp_alert_state_names[3]; /* "pending", "firing", "resolved" */

/* How one observation is judged: its kind and the timings of its alerts. */
struct gp_alert_params {
    const char *kind;          /* detector or rule name; < GP_ALERT_KIND_LEN bytes */
    enum gp_severity severity;
    int64_t for_ms, clear_for_ms, cooldown_ms;
    const char *runbook;       /* may be NULL */
    /* More labels of the API's "labels" object, as JSON members without
     * braces ("\"team\":\"ml\",\"instance\":\"x\""), or NULL. */
    const char *labels_json;
    uint64_t extra;            /* hash of the labels_json key labels; 0 for detectors */
};

struct gp_alerts;

/*
 * Opens dir/state.db (migrating it) and reloads the active alerts and
 * those in cool-down as of now_ms. *out is closed with gp_alerts_close.
 * GP_OK, or gp_state_open's errors, with detail.
 */
int gp_alerts_open(struct gp_alerts **out, const char *dir, int64_t now_ms, char *err,
                   size_t errlen);
void gp_alerts_close(struct gp_alerts *a); /* accepts NULL */

/* Adds a listener (fn, ctx borrowed until close). GP_OK or GP_ETOOBIG. */
int gp_alerts_add_listener(struct gp_alerts *a, gp_alert_listener fn, void *ctx);

/* The fingerprint of a key: 16 hex digits and a NUL into out. */
void gp_alert_fingerprint(const char *kind, const struct gp_obs_key *k, uint64_t extra,
                          char out[17]);

/* A tick: begin, observations, holds, end. Only one tick at a time. */
void gp_alerts_begin(struct gp_alerts *a, int64_t now_ms);
/* One observation of the tick (copied). GP_OK, or GP_ETOOBIG when the
 * table is full (the observation is dropped and counted). */
int gp_alerts_observe(struct gp_alerts *a, const struct gp_alert_params *p,
                      const struct gp_observation *o);
/* Keeps the alerts of kind as they are this tick (its evaluation failed). */
void gp_alerts_hold(struct gp_alerts *a, const char *kind);
/* Judges the alerts that were not observed, writes the tick's transitions
 * in one transaction and calls the listeners. GP_OK, or GP_EIO when the
 * database refused the writes (memory is updated regardless; the rows
 * are written again with the alert's next transition), with detail. */
int gp_alerts_end(struct gp_alerts *a, char *err, size_t errlen);

/* True when the alert of (kind, key, extra) is pending or firing. */
bool gp_alerts_active(struct gp_alerts *a, const char *kind, const struct gp_obs_key *k,
                      uint64_t extra);

/* Calls fn for each pending or firing alert with its key, state and
 * severity, under the lock (fn must not call into a). For the
 * dashboard's per-GPU badges, which need memory, not state.db. */
typedef void (*gp_alerts_each_fn)(void *ctx, const struct gp_obs_key *k, enum gp_alert_state st,
                                  enum gp_severity sev);
void gp_alerts_each_active(struct gp_alerts *a, gp_alerts_each_fn fn, void *ctx);

/* ---- silences ---- */

struct gp_silence {
    char id[17];               /* set by gp_alerts_silence_add */
    char kind[GP_ALERT_KIND_LEN];
    char job[GP_JOB_LEN];
    char node[GP_VIEW_NODE_LEN];
    char gpu[16];
    char severity[16];         /* "" or a severity name */
    char comment[256];
    int64_t created_ms, starts_ms, ends_ms;
};

/* Adds a silence (s->id is written). Checks it: a matcher set, a known
 * severity, ends after starts and after now. GP_OK, GP_EUSAGE (a bad
 * silence, with the reason), GP_ETOOBIG (too many), GP_EIO. */
int gp_alerts_silence_add(struct gp_alerts *a, struct gp_silence *s, int64_t now_ms, char *err,
                          size_t errlen);
/* Ends silence id now. GP_OK, GP_ENOTFOUND (unknown or already ended), GP_EIO. */
int gp_alerts_silence_delete(struct gp_alerts *a, const char *id, int64_t now_ms);
/* True when a silence matches (kind, key, severity) at now_ms. */
bool gp_alerts_silenced(struct gp_alerts *a, const char *kind, const struct gp_obs_key *k,
                        enum gp_severity sev, int64_t now_ms);

/* ---- acknowledgement ---- */

#define GP_ALERT_ACK_BY_LEN 128
#define GP_ALERT_ACK_COMMENT_LEN 512

/* Acknowledges the newest alert of fingerprint id at now_ms: who (by)
 * and why (comment), both may be "", stored on its row (a second ack
 * replaces them) and appended as a transition to "acknowledged" from its
 * state. It changes nothing else: it neither silences nor resolves.
 * GP_OK, GP_ENOTFOUND, GP_EIO. */
int gp_alerts_ack(struct gp_alerts *a, const char *id, const char *by, const char *comment,
                  int64_t now_ms);

/* ---- the API's answers (envelope included), appended to out ---- */

struct gp_alerts_filter {
    int state;                 /* -1 active (pending + firing), -2 all, else enum gp_alert_state */
    const char *kind, *severity, *job, *node; /* NULL: any */
    int64_t since_ms;          /* alerts not resolved before this; INT64_MIN: any */
    size_t limit;
};
/* GP_OK, GP_EIO, or out's latched error. */
int gp_alerts_list_json(struct gp_alerts *a, const struct gp_alerts_filter *f, struct gp_buf *out);
/* The newest alert of fingerprint id with every transition of that
 * fingerprint (at most 1000, oldest first). GP_OK, GP_ENOTFOUND, GP_EIO. */
int gp_alerts_get_json(struct gp_alerts *a, const char *id, struct gp_buf *out);
/* The newest alert of fingerprint id alone, as the list shows it (no
 * envelope, no transitions). GP_OK, GP_ENOTFOUND, GP_EIO. */
int gp_alerts_one_json(struct gp_alerts *a, const char *id, struct gp_buf *out);
/* Silences not yet ended at now_ms (all: every one kept). */
int gp_alerts_silences_json(struct gp_alerts *a, int64_t now_ms, bool all, struct gp_buf *out);

struct gp_alerts_stats {
    uint64_t active, pending, firing;  /* now */
    uint64_t transitions, dropped, db_errors, suppressed_cooldown;
};
void gp_alerts_stats(struct gp_alerts *a, struct gp_alerts_stats *out);

#endif
