/*
 * jobdoc_int.h - the pieces the job document's modules share (query-
 * internal): where the document reads (gp_jobdoc_src: the store, the
 * job's range and, in storage: remote, the cluster's aggregates that
 * stand in for some series), one series' samples as read, the
 * arithmetic on them that more than one figure uses (counter increase,
 * median scrape gap, newest value), the label look-ups that sort the
 * job's series out, and the JSON of one figure (a number or null).
 *
 *   jobdoc.c          selects the job's series, gathers, renders
 *   jobdoc_gpu.c      the job's GPUs: activity, memory, held time
 *   jobdoc_goodput.c  goodput of the reporting processes
 *   jobdoc_charts.c   the "series" grids (series=1)
 *   jobdoc_cluster.c  what storage: remote asks the cluster to compute
 */
#ifndef GP_QUERY_JOBDOC_INT_H
#define GP_QUERY_JOBDOC_INT_H

#include "lib/buf.h"
#include "store/labels.h"
#include "query/jobdoc_cluster.h"
#include "storage/storage.h"

#include <stddef.h>
#include <stdint.h>

/* Where a document reads: borrowed, for one document. */
struct gp_jobdoc_src {
    struct gp_storage *st;
    const struct gp_jobdoc_aggs *agg; /* the cluster's aggregates; none in embedded mode */
    int64_t t0, t1; /* the job's range */
    int64_t tc;     /* its step counters are read to here (GP_JOBDOC_TAIL_MS) */
};

/* One series' samples in a range, stale markers and NaN left out. */
struct gp_jobdoc_ser {
    const struct gp_store_series *s;
    int64_t *t;
    double *v;
    size_t n;
};

/* Reads s over [t0, t1] into out (gp_jobdoc_ser_free it). GP_OK,
 * GP_ENOMEM or the store's error; a series whose blocks fail to parse
 * reads as what was read. A counter the cluster aggregated (without a
 * reset: jobdoc_cluster.h) reads as its lowest value at the start and
 * its highest at the end of the range it was asked over, which is all
 * gp_jobdoc_increase needs of a counter that never fell. */
int gp_jobdoc_ser_read(const struct gp_jobdoc_src *src, const struct gp_store_series *s, int64_t t0,
                       int64_t t1, struct gp_jobdoc_ser *out);
void gp_jobdoc_ser_free(struct gp_jobdoc_ser *x);

/* The newest value of s (NULL: none) in the job's range, or NaN: the
 * cluster's last_over_time where it aggregated s. */
double gp_jobdoc_newest(const struct gp_jobdoc_src *src, const struct gp_store_series *s);

/* Whether s was born with the job (its first sample at or after the
 * start): its counters count from 0. */
int gp_jobdoc_born(const struct gp_jobdoc_src *src, const struct gp_store_series *s);

/* Counter increase over x, a drop read as a reset; born: counting from
 * 0 before the first sample. */
double gp_jobdoc_increase(const struct gp_jobdoc_ser *x, int born);

/* Median gap between x's samples (ms), or 0 with fewer than two. */
int64_t gp_jobdoc_median_gap(const struct gp_jobdoc_ser *x);

/* Labels of s: __name__ is name / starts with pre; the value of label
 * name ("" when none); the node (Hostname, else hostname). */
int gp_jobdoc_name_is(const struct gp_store_series *s, const char *name);
int gp_jobdoc_name_prefix(const struct gp_store_series *s, const char *pre);
struct gp_str gp_jobdoc_lab(const struct gp_store_series *s, const char *name);
struct gp_str gp_jobdoc_node(const struct gp_store_series *s);
int gp_jobdoc_str_eq(struct gp_str a, struct gp_str b);

/* Whether a and b carry the same labels, __name__ and `also` (NULL:
 * none) left out. */
int gp_jobdoc_same_except(const struct gp_store_series *a, const struct gp_store_series *b,
                          const char *also);

/* JSON: a finite number, else null; `,"name":` and the number; a string,
 * null when empty. */
void gp_jobdoc_num(struct gp_buf *b, double v);
void gp_jobdoc_total(struct gp_buf *b, const char *name, double v);
void gp_jobdoc_str_or_null(struct gp_buf *b, struct gp_str s);

#endif
