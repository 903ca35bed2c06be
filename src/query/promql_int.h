/*
 * promql_int.h - what the evaluator's files share (query-internal; the
 * engine's API is promql.h).
 *
 * Representation: every instant-vector or scalar node is evaluated once
 * for all steps of a grid (Prometheus's rangeEval), not step by step
 * from the root. A vector value is a set of series, each with a dense
 * value per step and a presence byte per step; a scalar is one value per
 * step. An instant query is the grid of one step. Label sets are the
 * store's canonical blobs (store/labels.h), so equality is memcmp and a
 * blob hashes once.
 *
 * Files:
 *   promql_eval.c    entry points, dispatch, values, limits
 *   promql_select.c  selectors, range selectors and subqueries (reading the store)
 *   promql_call.c    function calls
 *   promql_binop.c   binary operators and vector matching
 *   promql_agg.c     aggregations
 *   promql_labels.c  label blobs: edit, compare, print, the series map
 *   promql_cse.c     subexpressions written twice, evaluated once
 *   promql_json.c    rendering and error types
 */
#ifndef GP_QUERY_PROMQL_INT_H
#define GP_QUERY_PROMQL_INT_H

#include "ingest/remote_write.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "query/promql.h"
#include "storage/storage.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Errors of evaluation itself (many-to-many matching, duplicate label
 * sets, a bad label_replace regex): Prometheus's "execution" errors, 422. */
#define GP_PQ_EEXEC GP_EINTERNAL

/* Steps start + k*step for k < n. */
struct gp_pq_grid {
    int64_t start, step;
    size_t n;
};

static inline int64_t gp_pq_grid_t(const struct gp_pq_grid *g, size_t k)
{
    return g->start + (int64_t)k * g->step;
}

/* What the reads skipped as damaged, for the answer's warning: chunks,
 * their span, the series they belong to, and of those the one whose
 * labels sort first (text, cut at the buffer), so the warning names a
 * series whichever thread read it. */
struct gp_pq_damage {
    uint64_t chunks, series;
    int64_t from, to;
    char first[256];
};

/* Notes the damage a read of series s reported in smp (none: nothing). */
void gp_pq_damage_note(struct gp_pq_damage *d, const struct gp_store_series *s,
                       const struct gp_samples *smp);
/* Adds d's damage to into. */
void gp_pq_damage_merge(struct gp_pq_damage *into, const struct gp_pq_damage *d);


/* Evaluation context of one query. */
struct gp_pq_ctx {
    struct gp_storage *s;
    struct gp_promql_limits lim;
    int64_t qstart, qend;      /* for @ start() / @ end() */
    int64_t deadline_ns;       /* CLOCK_MONOTONIC */
    unsigned tick;             /* throttles clock reads */
    size_t samples, peak;      /* samples held now, most at once */
    size_t cells;              /* step slots allocated for vector values: they bound
                                * memory (a series that lives one step of many
                                * still takes a slot per step), so they are held
                                * to max_samples too */
    struct gp_pq_damage damage; /* damaged chunks skipped by reads */
    char *err;
    size_t errlen;
    struct gp_buf tmp;         /* scratch for label blobs */
    struct gp_pq_cse *cse;     /* repeated subexpressions (promql_cse.c); NULL: none */
};

/* ---- label blobs (promql_labels.c) ---- */

/* A decoded label set; names and values point into blobs the caller keeps. */
struct gp_pq_lset {
    struct gp_label *l;
    size_t n, cap;
};
void gp_pq_lset_free(struct gp_pq_lset *ls);
/* Decodes blob into ls (replacing its content). GP_OK or GP_ENOMEM. */
int gp_pq_lset_decode(struct gp_pq_lset *ls, const uint8_t *blob, size_t len);
/* Sets (value "" deletes) name; keeps ls sorted. */
int gp_pq_lset_set(struct gp_pq_lset *ls, const char *name, size_t nlen, const char *value,
                   size_t vlen);
void gp_pq_lset_del(struct gp_pq_lset *ls, const char *name);
/* Keeps only the names in keep (keep_not: drops them, and __name__ too). */
void gp_pq_lset_filter(struct gp_pq_lset *ls, const struct gp_pq_labels *names, int keep);
/* Replaces out's content with ls's canonical blob (empty for no labels). */
void gp_pq_lset_encode(const struct gp_pq_lset *ls, struct gp_buf *out);

/* Prometheus's labels.Compare order. */
int gp_pq_labels_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);
/* Writes {a="b", c="d"} as Prometheus's Labels.String() does. */
void gp_pq_labels_str(const uint8_t *blob, size_t len, struct gp_buf *out);
/* The blob without __name__, into out (replaced). */
void gp_pq_labels_drop_name(const uint8_t *blob, size_t len, struct gp_buf *out);
/* Blob of the labels a matching or grouping looks at, into out
 * (replaced): on/by: only names; else every label but names and __name__. */
void gp_pq_labels_key(const uint8_t *blob, size_t len, const struct gp_pq_labels *names, int on,
                      struct gp_buf *out);

/* A map from byte strings to indexes (open addressing, keys copied). */
struct gp_pq_map {
    struct gp_pq_slot *slots;
    size_t cap, n;
    struct gp_buf keys;
};
void gp_pq_map_free(struct gp_pq_map *m);
/* Index of key, or adds it with value next (*added 1). GP_OK or GP_ENOMEM. */
int gp_pq_map_get(struct gp_pq_map *m, const void *key, size_t len, size_t next, size_t *out,
                  int *added);

/* ---- values ---- */

struct gp_pq_ser {
    uint8_t *lab;         /* owned canonical blob; NULL for none */
    size_t lablen;
    double *v;            /* grid.n values */
    uint8_t *has;         /* grid.n presence bytes */
};

struct gp_pq_val {
    enum gp_pq_type type;
    double *sc;           /* scalar: grid.n values */
    struct gp_pq_ser *s;  /* vector */
    size_t n, cap;
    size_t npoints;       /* present points, counted against max_samples */
    size_t ncells;        /* step slots of its series, in c->cells */
    struct gp_pq_map idx; /* label blob -> series (vectors built by label) */
    char *str;            /* string */
    /* matrix (instant queries of range selectors and subqueries) */
    struct gp_promql_series *m;
    size_t mn;
    int ordered;          /* vector order is meaningful (sort*, topk/bottomk) */
};

void gp_pq_val_free(struct gp_pq_ctx *c, struct gp_pq_val *v);
/* The series with these labels, added (no points) when absent. */
int gp_pq_val_series(struct gp_pq_ctx *c, struct gp_pq_val *v, const struct gp_pq_grid *g,
                     const uint8_t *lab, size_t len, size_t *idx);
/* Sets point k of series i; a second value at the same step is
 * "vector cannot contain metrics with the same labelset". */
int gp_pq_val_put(struct gp_pq_ctx *c, struct gp_pq_val *v, size_t i, size_t k, double x);

/* A new series (labels copied, no points) without looking at the map:
 * for labels known to be distinct. */
int gp_pq_val_append(struct gp_pq_ctx *c, struct gp_pq_val *v, const struct gp_pq_grid *g,
                     const uint8_t *lab, size_t len, size_t *idx);
/* A new series holding v/has (ownership passes, np points). */
int gp_pq_val_adopt(struct gp_pq_ctx *c, struct gp_pq_val *v, const struct gp_pq_grid *g,
                    const uint8_t *lab, size_t len, double *vals, uint8_t *has, size_t np);
/* Takes n step slots (c->cells) or fails as too many samples. */
int gp_pq_cells(struct gp_pq_ctx *c, struct gp_pq_val *v, size_t n);
/* A deep copy of src (a value on grid g), counted as any value. */
int gp_pq_val_copy(struct gp_pq_ctx *c, const struct gp_pq_val *src, const struct gp_pq_grid *g,
                   struct gp_pq_val *dst);
int gp_pq_scalar_new(struct gp_pq_ctx *c, struct gp_pq_val *out, const struct gp_pq_grid *g);
void gp_pq_vector_new(struct gp_pq_val *out);

#define GP_PQ_TOO_MANY_SAMPLES \
    "query processing would load too many samples into memory in query execution"

int64_t gp_pq_now_ns(void); /* CLOCK_MONOTONIC */
/* out = the points of in, each through fn (it may change *x; 0 drops the
 * point), under in's labels or, with drop_name, without __name__; two
 * series that become one are "vector cannot contain metrics with the
 * same labelset" where both have a point. */
typedef int (*gp_pq_point_fn)(void *arg, size_t k, double *x);
int gp_pq_map_points(struct gp_pq_ctx *c, const struct gp_pq_val *in, const struct gp_pq_grid *g,
                     int drop_name, gp_pq_point_fn fn, void *arg, struct gp_pq_val *out);

int gp_pq_check(struct gp_pq_ctx *c);               /* timeout */
int gp_pq_count(struct gp_pq_ctx *c, size_t n);     /* samples held += n */
void gp_pq_uncount(struct gp_pq_ctx *c, size_t n);  /* samples held -= n */
int gp_pq_oom(struct gp_pq_ctx *c);

int gp_pq_eval(struct gp_pq_ctx *c, const struct gp_pq_node *e, const struct gp_pq_grid *g,
               struct gp_pq_val *out);
int gp_pq_eval_call(struct gp_pq_ctx *c, const struct gp_pq_node *e, const struct gp_pq_grid *g,
                    struct gp_pq_val *out);
int gp_pq_eval_binary(struct gp_pq_ctx *c, const struct gp_pq_node *e, const struct gp_pq_grid *g,
                      struct gp_pq_val *out);
int gp_pq_eval_agg(struct gp_pq_ctx *c, const struct gp_pq_node *e, const struct gp_pq_grid *g,
                   struct gp_pq_val *out);

/* Go's strconv.FormatFloat(v, 'f', -1, 64) (exp_form 0) or the form
 * Prometheus's JSON uses ('e' below 1e-6 and from 1e21), into buf
 * (at least 400 bytes). */
void gp_pq_fmt_float(double v, int json_form, char *buf, size_t len);

/* Go's fmt %v of a float64 (Prometheus's error messages): 'g' with the
 * shortest digits, an exponent below 1e-4 and from 1e6. */
void gp_pq_fmt_go_v(double v, char *buf, size_t len);

const struct gp_pq_node *gp_pq_unparen(const struct gp_pq_node *e);

/* ---- repeated subexpressions (promql_cse.c) ---- */

/* Finds the nodes of root whose text appears more than once. */
void gp_pq_cse_scan(struct gp_pq_ctx *c, const struct gp_pq_node *root);
/* 1 with out a copy of e's cached value on g, 0 when there is none
 * (*slot: where to put it, or (size_t)-1 when e is not repeated), or an
 * error. */
int gp_pq_cse_get(struct gp_pq_ctx *c, const struct gp_pq_node *e, const struct gp_pq_grid *g,
                  struct gp_pq_val *out, size_t *slot);
void gp_pq_cse_put(struct gp_pq_ctx *c, size_t slot, const struct gp_pq_val *v,
                   const struct gp_pq_grid *g);
void gp_pq_cse_free(struct gp_pq_ctx *c);
/* The cache slot of an instant vector selector of the query with the
 * series, offset and @ of range selector m (a range function's argument),
 * with *vsel its selector, while that slot is empty; else (size_t)-1. */
size_t gp_pq_cse_twin(const struct gp_pq_ctx *c, const struct gp_pq_node *m,
                      const struct gp_pq_sel **vsel);
/* Keeps v (ownership passes) in slot as the value on g. */
void gp_pq_cse_keep(struct gp_pq_ctx *c, size_t slot, struct gp_pq_val *v,
                    const struct gp_pq_grid *g);

/* ---- selectors and range sources (promql_select.c) ---- */

/* When a selector or subquery looks: its @ and offset. */
struct gp_pq_when {
    enum gp_pq_at at;
    int64_t at_ms, offset_ms;
};

/* A range source: the series of a matrix selector (read from the store
 * one at a time) or of a subquery (its inner expression evaluated once
 * on its own grid), each with its samples over the union of every
 * step's window; gp_pq_rsrc_window slides over them step by step. */
/* A selection being read series by series, in label order. */
struct gp_pq_sel_read {
    struct gp_store_selection sel;
    size_t *order; /* selection indexes sorted by labels */
    size_t i;
    struct gp_samples smp;
    int64_t mint, maxt;
    /* An instant selector with the same matchers, offset and @, computed
     * by gp_pq_sel_each from the same samples (gp_pq_rsrc_open's twin). */
    struct vsel_job *twin;
    atomic_int twin_failed;
};

struct gp_pq_rsrc {
    struct gp_pq_when w;
    int64_t range;
    int sub;
    struct gp_pq_sel_read r;            /* matrix selector */
    struct gp_pq_val inner;       /* subquery */
    struct gp_pq_grid ig;
    size_t vi;
    int64_t *t;
    double *v;
    /* the current series */
    const uint8_t *lab;
    size_t lablen, n;
    const int64_t *ct;
    const double *cv;
};

/* Runs fn for every series of a selection, on both cores when there are
 * enough series (the store takes any number of readers), with the
 * series' samples in the selection's window (stale markers kept; fn may
 * change the arrays). i is the series' place in label order: fn stores
 * its results by i, so they do not depend on the threads. fn reads c
 * only (limits, times) and reports errors in err. */
typedef int (*gp_pq_series_fn)(void *arg, size_t i, const struct gp_store_series *ser, int64_t *t,
                               double *v, size_t n, char *err, size_t errlen);
/* pair (NULL: none) takes series i and i + 1 at once, where a kernel
 * gains from two independent series (fn takes any series left over). */
typedef int (*gp_pq_pair_fn)(void *arg, size_t i, int64_t *t[2], double *v[2], size_t n[2],
                             char *err, size_t errlen);
int gp_pq_sel_each(struct gp_pq_ctx *c, struct gp_pq_sel_read *r, gp_pq_series_fn fn,
                   gp_pq_pair_fn pair, void *arg);
/* Step k's window [t - range, t] (left-open with prom3_windows) of the
 * samples t[0..n): [*lo, *hi), cursors only moving forward. */
void gp_pq_window_at(const struct gp_pq_ctx *c, const struct gp_pq_when *w, int64_t range,
                     const struct gp_pq_grid *g, size_t k, const int64_t *t, size_t n, size_t *lo,
                     size_t *hi, int64_t *from, int64_t *to);
/* The first of t[p..n) (increasing) past at. A step usually moves as
 * many samples as the one before (hint), give or take a few: a short
 * walk from there finds it; else a gallop from p and a binary search. A
 * sample-by-sample scan was a tenth of an avg-by query over 1 s samples
 * at 15 s steps. Any hint is safe.
 * Inline: it runs once per step of every series. */
static inline size_t gp_pq_first_past(const int64_t *t, size_t p, size_t n, int64_t at, size_t hint)
{
    if (p >= n || t[p] > at)
        return p;
    if (hint > 0 && hint < n - p) {
        /* Jittered samples move a step one more or one fewer than the
         * step before: walk a few from the guess, either way. t[p] <= at,
         * so walking back stops at p + 1 at the latest. */
        size_t q = p + hint;
        if (t[q - 1] <= at) {
            for (int i = 0; i < 4; i++, q++)
                if (q == n || t[q] > at)
                    return q;
        } else {
            for (int i = 0; i < 4; i++)
                if (t[--q - 1] <= at)
                    return q;
        }
    }
    size_t lo = p, hi = n, step = 1; /* t[lo] <= at, and t[hi] > at or hi == n */
    while (lo + step < n && t[lo + step] <= at) {
        lo += step;
        step *= 2;
    }
    if (lo + step < n)
        hi = lo + step;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (t[mid] <= at)
            lo = mid;
        else
            hi = mid;
    }
    return hi;
}
/* Drops stale markers in place; returns the samples left. */
size_t gp_pq_drop_stale(int64_t *t, double *v, size_t n);

/* twin (a matrix selector read with gp_pq_sel_each only; NULL: none):
 * an instant vector selector of the same series, offset and @ that the
 * query evaluates on g too; the read reaches back far enough for both,
 * and gp_pq_rsrc_twin then hands out its value. */
int gp_pq_rsrc_open(struct gp_pq_ctx *c, struct gp_pq_rsrc *rs, const struct gp_pq_node *e,
                    const struct gp_pq_grid *g, const struct gp_pq_sel *twin);
/* 1 with out the twin's value (what gp_pq_eval_vsel gives on g), 0 when
 * there is none (or it failed: a limit, memory; its own evaluation will
 * fail the same way). */
int gp_pq_rsrc_twin(struct gp_pq_ctx *c, struct gp_pq_rsrc *rs, struct gp_pq_val *out);
/* Next series: 1 (lab, ct, cv, n set), 0 at the end, or an error. */
int gp_pq_rsrc_next(struct gp_pq_ctx *c, struct gp_pq_rsrc *rs);
/* Step k's window of the current series: samples [*lo, *hi) (cursors
 * start at 0 for each series and only move forward). */
void gp_pq_rsrc_window(const struct gp_pq_ctx *c, const struct gp_pq_rsrc *rs,
                       const struct gp_pq_grid *g, size_t k, size_t *lo, size_t *hi,
                       int64_t *from, int64_t *to);
void gp_pq_rsrc_close(struct gp_pq_ctx *c, struct gp_pq_rsrc *rs);
/* An instant vector selector; ts_mode: values are the samples' times in
 * seconds (timestamp()). */
int gp_pq_eval_vsel(struct gp_pq_ctx *c, const struct gp_pq_sel *sel, const struct gp_pq_grid *g,
                    int ts_mode, struct gp_pq_val *out);
/* A range selector or subquery as an instant query's matrix result. */
int gp_pq_eval_matrix(struct gp_pq_ctx *c, const struct gp_pq_node *e, const struct gp_pq_grid *g,
                      struct gp_pq_val *out);

#endif
