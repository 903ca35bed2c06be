/*
 * state.h - the server's own state database, <data>/state.db (SQLite,
 * WAL mode): what the server derives and must remember across restarts,
 * as opposed to the samples (the store). It holds the jobs registry
 * and the alerts (insight/alerts.h), the remediation audit log
 * (insight/remediate.h), remote write's metric metadata
 * (server/metadata.h), the health states (insight/health.h) and the
 * nodes' last preflight results (server/preflight.c); the
 * notification outbox is meant to live here too, adding a migration.
 *
 * Why not the store's meta.db: meta.db belongs to the store. Its format
 * version decides whether a data directory can be opened at all, it is
 * opened without SQLite's mutexes because only the store's maintenance
 * thread touches it, and every checkpoint commits to it with
 * synchronous=FULL. Server state has other writers (the jobs scanner,
 * later the alert evaluator), other durability needs and its own schema
 * history; a separate file keeps both free to change and never makes a
 * scan wait for a checkpoint (or the reverse).
 *
 * Schema versions: PRAGMA user_version counts the migrations applied.
 * Opening applies the missing ones in order, each in its own
 * transaction; a database of a newer version than this binary knows is
 * refused (GP_EUNSUPPORTED) rather than written to.
 *
 * Damage. The first open of a state.db in a process runs SQLite's quick
 * check. A file SQLite finds damaged (not a database, corrupt pages) is
 * left untouched and every connection gets a private, empty in-memory
 * database of the same schema instead: the server keeps ingesting,
 * answering queries and evaluating detectors, and what state.db holds
 * starts afresh and is not kept across restarts. The damage is logged,
 * shown by gp_state_damaged (health, /metrics) and repaired offline by
 * `gpulse repair`, which sets the file aside (docs/storage.md).
 */
#ifndef GP_STATE_STATE_H
#define GP_STATE_STATE_H

#include <sqlite3.h>
#include <stddef.h>

/* The schema version this binary writes. */
#define GP_STATE_VERSION 9

/*
 * Opens (creating and migrating) dir/state.db in WAL mode with
 * synchronous=NORMAL (a power cut may lose the last commits, never
 * corrupt: the registry is rebuilt from samples by the next scan).
 * *out is the connection (caller closes with gp_state_close). GP_OK,
 * GP_EIO, GP_ENOMEM, or GP_EUNSUPPORTED (a newer schema), with detail.
 * A damaged file is not an error: see "Damage" above.
 */
int gp_state_open(sqlite3 **out, const char *dir, char *err, size_t errlen);

/* 1 when dir/state.db was found damaged by this process (detail, when
 * given, says how), else 0. */
int gp_state_damaged(const char *dir, char *detail, size_t len);

/* Closes a connection from gp_state_open; accepts NULL. */
void gp_state_close(sqlite3 *db);

#endif
