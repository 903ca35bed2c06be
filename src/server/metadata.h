/*
 * metadata.h - the metric families' metadata that remote write carried
 * (metadata.c): kept, latest per family, in memory and in state.db, and
 * read by /api/v1/metadata.
 */
#ifndef GP_SERVER_METADATA_H
#define GP_SERVER_METADATA_H

#include "ingest/remote_write.h"

#include <stddef.h>

/* Families kept at most, and bytes of their names, help and units. */
#define GP_SRV_META_MAX_FAMILIES 20000
#define GP_SRV_META_MAX_BYTES (8 << 20)

struct gp_srv_meta;

/* Opens the table over dir/state.db and reads what it kept (caller
 * closes with gp_srv_meta_close). GP_OK, or gp_state_open's errors and
 * GP_EIO, with detail. */
int gp_srv_meta_open(struct gp_srv_meta **out, const char *dir, char *err, size_t errlen);

/* Accepts NULL. */
void gp_srv_meta_close(struct gp_srv_meta *m);

/* Keeps the n entries of a request (a later entry of a family replaces
 * the earlier), writing the new and changed ones to state.db. Never
 * fails the write that carried them: past the limits an entry is
 * dropped, and a database error is logged. m NULL: nothing. */
void gp_srv_meta_put(struct gp_srv_meta *m, const struct gp_family_meta *f, size_t n);

/* Calls fn for each kept family in name order (metric non-empty: only
 * that one), under the table's lock: fn must not call back in. The
 * strings are valid during the call. m NULL: none. */
typedef void (*gp_srv_meta_fn)(void *arg, const char *name, const char *type, const char *help,
                               const char *unit);
void gp_srv_meta_walk(struct gp_srv_meta *m, const char *metric, gp_srv_meta_fn fn, void *arg);

/* The type named s ("counter", as gp_rw_metric_type_name writes it);
 * unknown for a name it does not write. */
enum gp_rw_type gp_srv_meta_type(const char *s);

/* How many times a put changed the table (a new family, or a new type,
 * help or unit): a reader that saw the same count has nothing new to
 * forward. m NULL: 0. */
uint64_t gp_srv_meta_changes(struct gp_srv_meta *m);

/* The families kept into *families; returns the entries dropped at the
 * limits since start (m NULL: 0 and 0). */
uint64_t gp_srv_meta_stats(struct gp_srv_meta *m, size_t *families);

#endif
