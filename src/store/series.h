/*
 * series.h - the series registry and its inverted label index.
 *
 * Each series has a dense id (1, 2, ...; 0 means none) and its canonical
 * label blob (labels.h). Lookups by blob go through a hash table; selects
 * by matchers go through postings lists: for every (name, value) pair the
 * sorted ids of the series that carry it. An equality matcher is one
 * postings list; a regex matcher is the union of the lists of the values
 * it matches; negative matchers subtract. Ids are added in increasing
 * order, so appending keeps every list sorted.
 *
 * Not thread-safe: the store serializes writers and readers with its lock.
 */
#ifndef GP_STORE_SERIES_H
#define GP_STORE_SERIES_H

#include "store/matcher.h"

#include <stddef.h>
#include <stdint.h>

struct gp_sindex;

int gp_sindex_new(struct gp_sindex **out);
void gp_sindex_free(struct gp_sindex *x); /* accepts NULL */

/* The id of the series with exactly this blob (hash = gp_labels_hash of
 * it), or 0. */
uint32_t gp_sindex_find(const struct gp_sindex *x, const uint8_t *blob, size_t len, uint64_t hash);

/*
 * Adds a series (copying the blob) with the given id, which must be
 * greater than every id added before (gaps allowed: ids of series that
 * were deleted are never reused). id 0 means "the next id". Sets *out_id.
 * Returns GP_OK, GP_EUSAGE (id not increasing, blob already present),
 * GP_EPARSE (blob malformed) or GP_ENOMEM.
 */
int gp_sindex_add(struct gp_sindex *x, const uint8_t *blob, size_t len, uint64_t hash, uint32_t id,
                  uint32_t *out_id);

/* The labels of id (pointer owned by the index, valid until it is freed),
 * or NULL with *len 0 for an unknown id. */
const uint8_t *gp_sindex_labels(const struct gp_sindex *x, uint32_t id, size_t *len);

size_t gp_sindex_count(const struct gp_sindex *x);   /* series */
/* Takes ids up to id without naming them, so no new series gets one: the
 * ids of data whose labels were lost (a damaged meta.db). max_id counts
 * them. */
void gp_sindex_reserve(struct gp_sindex *x, uint32_t id);
uint32_t gp_sindex_max_id(const struct gp_sindex *x); /* highest id, 0 when empty */
size_t gp_sindex_bytes(const struct gp_sindex *x);   /* memory held, approximate */

/*
 * Ids of the series that satisfy every matcher, ascending, in a new array
 * *ids (free()) of *n entries. *ids is not NULL on GP_OK even when *n is
 * 0, so a selection can be handed to label_names/label_values as is
 * (where ids NULL means all series). No matchers: every series. Returns
 * GP_OK or GP_ENOMEM.
 */
int gp_sindex_select(const struct gp_sindex *x, const struct gp_matcher *m, size_t nm, uint32_t **ids,
                     size_t *n);

/* Calls fn once per distinct label name, in byte order, of the given
 * series (ids NULL: of all series; unknown ids are skipped). fn gets a
 * view of len bytes, valid during the call. GP_OK or GP_ENOMEM. */
int gp_sindex_label_names(const struct gp_sindex *x, const uint32_t *ids, size_t nids,
                          void (*fn)(void *arg, const char *name, size_t len), void *arg);

/* Calls fn once per distinct value of label name, in byte order, among
 * the given series (ids NULL: all series). The value is a view of len
 * bytes, not NUL-terminated, valid during the call. GP_OK or GP_ENOMEM. */
int gp_sindex_label_values(const struct gp_sindex *x, const char *name, const uint32_t *ids,
                           size_t nids, void (*fn)(void *arg, const char *value, size_t len),
                           void *arg);

#endif
