/*
 * symtab.h - the symbol table of the series registry's files.
 *
 * meta.db and series.log name a series' labels by reference: every label
 * name and value string is a symbol with a number (1, 2, ...), kept once
 * per file, and a label set is
 *
 *     uvarint nlabels, nlabels x { uvarint name symbol, uvarint value symbol }
 *
 * in the canonical order (labels.h). dcgm-exporter's ~10 labels share
 * most values across series (the family name by every GPU, the host by a
 * node's 160 series, the model and driver by all), so a series takes ~25
 * bytes instead of ~260 (Prometheus's index does the same with its
 * symbol table). The store keeps one table for both files; numbers are
 * given out in order of first use and never change, so each file holds a
 * prefix of it and appends the rest (meta.c, serieslog.c).
 *
 * A table is zero-initialized; gp_st_syms_free releases it. Not
 * thread-safe: the store's maintenance path owns it.
 */
#ifndef GP_STORE_SYMTAB_H
#define GP_STORE_SYMTAB_H

#include "lib/buf.h"

#include <stddef.h>
#include <stdint.h>

/* Longest symbol (a label name or value) the files hold. */
#define GP_ST_SYM_MAX (1u << 20)

struct gp_st_syms {
    char *bytes;           /* every symbol's bytes, back to back */
    size_t blen, bcap;
    uint32_t *off, *len;   /* by number, [0] unused; len 0: not defined */
    uint32_t n, cap;       /* the highest number defined; arrays' size */
    uint32_t *slots;       /* open addressing: a number, or 0 for empty */
    uint32_t nslots, used;
};

void gp_st_syms_free(struct gp_st_syms *t); /* accepts a zeroed table; leaves it zeroed */

/* Defines symbol id as the n bytes at p (reading a file). GP_OK, also
 * when id already holds these bytes; GP_EPARSE when id is 0 or above
 * limit, n is 0 or over GP_ST_SYM_MAX, or id or the bytes are taken
 * otherwise; GP_ENOMEM. */
int gp_st_syms_define(struct gp_st_syms *t, uint32_t id, const void *p, size_t n, uint32_t limit);

/* The bytes of symbol id: 1 with *p, *n set, 0 when not defined. */
int gp_st_syms_get(const struct gp_st_syms *t, uint64_t id, const char **p, size_t *n);

/* Appends the reference form of a canonical label blob to out, giving
 * new strings the next numbers. GP_OK, GP_EPARSE (a bad blob: nothing
 * defined), GP_ENOMEM or out->err. */
int gp_st_syms_encode(struct gp_st_syms *t, const uint8_t *blob, size_t len, struct gp_buf *out);

/* Reads one reference form at *p (advanced past it) and appends the
 * canonical blob to out. GP_OK; GP_EPARSE when the form is malformed
 * (*p is then not trustworthy), GP_ENOTFOUND when it names a symbol not
 * defined or the labels are not canonical (*p is past the form: the
 * next one may still be read); out->err. */
int gp_st_syms_decode(const struct gp_st_syms *t, const uint8_t **p, const uint8_t *end,
                      struct gp_buf *out);

/* Appends symbols (from, to] as "uvarint first, uvarint count, count x
 * {uvarint len, bytes}", stopping before max_bytes is passed (at least
 * one symbol); returns the last one written. */
uint32_t gp_st_syms_put_range(const struct gp_st_syms *t, uint32_t from, uint32_t to,
                              size_t max_bytes, struct gp_buf *out);
/* Defines the symbols of such a range (ids up to limit). GP_OK, GP_EPARSE
 * (malformed or conflicting: what came before the bad one is defined),
 * GP_ENOMEM. */
int gp_st_syms_parse_range(struct gp_st_syms *t, const uint8_t *p, size_t n, uint32_t limit);

#endif
