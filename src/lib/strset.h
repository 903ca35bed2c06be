/*
 * strset.h - strings gathered from callbacks (label names and values,
 * in any order, with repeats), then handed on sorted and once each.
 * Callers that collect from several sources (selectors, a cluster's
 * answer) share this instead of each keeping a list of their own.
 */
#ifndef GP_STRSET_H
#define GP_STRSET_H

#include <stddef.h>

struct gp_strset {
    char **v;  /* NUL-terminated copies, owned */
    size_t n, cap;
    int err;   /* GP_ENOMEM once an add failed (later adds are ignored) */
};

/* Adds a copy of p[0..len); arg is a struct gp_strset * (the shape of the
 * storage's label callbacks). Failure latches set->err. */
void gp_strset_add(void *arg, const char *p, size_t len);

/* Sorts (bytewise) and calls fn once per distinct string, in order. */
void gp_strset_each(struct gp_strset *set, void (*fn)(void *arg, const char *p, size_t len), void *arg);

void gp_strset_free(struct gp_strset *set); /* accepts zeroed; leaves it zeroed */

#endif
