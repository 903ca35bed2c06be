/*
 * labels.h - the canonical byte form of a series' label set.
 *
 * A series is named by its labels (`__name__` included), sorted by name in
 * byte order, with no empty value and no name twice: the form the
 * remote-write decoder yields. Stored and hashed as one blob:
 *
 *     repeated { uvarint name_len, name bytes, uvarint value_len, value bytes }
 *
 * Lengths rather than separators, so a value may hold any byte. The same
 * labels always give the same bytes, so equality is memcmp and the hash
 * of the blob names the series.
 */
#ifndef GP_STORE_LABELS_H
#define GP_STORE_LABELS_H

#include "store/batch.h"
#include "lib/buf.h"

#include <stddef.h>
#include <stdint.h>

/* Appends the canonical form of n labels, which must already be sorted by
 * name with no duplicates or empty values (as gp_rw_decode yields them).
 * Returns GP_OK or GP_EUSAGE when they are not (or n is 0; nothing is
 * appended then), or out->err. */
int gp_labels_encode(const struct gp_label *l, size_t n, struct gp_buf *out);

/* 64-bit hash of a blob (stable across runs and machines; not keyed).
 * Any bytes. */
uint64_t gp_labels_hash(const uint8_t *blob, size_t len);

/* Orders two canonical forms bytewise, the shorter first on a tie; an
 * empty form (len 0, blob may be NULL) sorts first. */
int gp_labels_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

struct gp_labels_iter {
    const uint8_t *p, *end;
};
void gp_labels_iter_init(struct gp_labels_iter *it, const uint8_t *blob, size_t len);
/* Next label: 1 with name/value set, 0 at the end, GP_EPARSE for a bad blob. */
int gp_labels_next(struct gp_labels_iter *it, struct gp_str *name, struct gp_str *value);

/* Value of label name (NUL-terminated) in the blob: 1 and *value when
 * present, 0 when absent (Prometheus reads an absent label as ""; *value
 * is then ""). A malformed blob reads as absent: validate blobs first. */
int gp_labels_get(const uint8_t *blob, size_t len, const char *name, struct gp_str *value);

/* Checks a blob read from disk: well-formed, sorted, unique, non-empty
 * names and values, at least one label, minimal varints (so that equal
 * labels are equal bytes). GP_OK or GP_EPARSE. */
int gp_labels_validate(const uint8_t *blob, size_t len);

/* A label set (a canonical blob) as a JSON object
 * {"name":"value",...}. GP_OK, or GP_EPARSE for a malformed blob (what
 * was written so far stays; the caller abandons the answer). */
int gp_json_labels(struct gp_buf *b, const uint8_t *blob, size_t len);

#endif
