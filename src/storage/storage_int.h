/*
 * storage_int.h - what the backends of storage.h share: the table of
 * operations each fills in, and the handle that carries it.
 */
#ifndef GP_STORAGE_INT_H
#define GP_STORAGE_INT_H

#include "storage/storage.h"

struct gp_storage_ops {
    const char *name;
    int (*append)(struct gp_storage *s, const struct gp_batch *req, struct gp_append_result *res,
                  char *err, size_t errlen);
    int (*select)(struct gp_storage *s, const struct gp_matcher *m, size_t nm, int64_t mint,
                  int64_t maxt, struct gp_store_selection *out);
    /* NULL: select (the embedded store reads only the index anyway) */
    int (*select_since)(struct gp_storage *s, const struct gp_matcher *m, size_t nm, int64_t mint,
                        int64_t maxt, int64_t since, struct gp_store_selection *out);
    /* NULL: select, then each series visited (gp_storage_each_of_select) */
    int (*select_each)(struct gp_storage *s, const struct gp_matcher *m, size_t nm, int64_t mint,
                       int64_t maxt, gp_store_series_fn fn, void *arg);
    int (*read)(struct gp_storage *s, uint32_t id, int64_t mint, int64_t maxt, struct gp_samples *out);
    int (*read_rollups)(struct gp_storage *s, uint32_t id, int64_t mint, int64_t maxt,
                        struct gp_rollups *out);
    double (*newest_value)(struct gp_storage *s, uint32_t id, int64_t last_ms, int64_t lookback_ms,
                           struct gp_samples *scratch);
    int (*label_names)(struct gp_storage *s, const struct gp_matcher *m, size_t nm, int64_t start_ms,
                       int64_t end_ms, void (*fn)(void *arg, const char *name, size_t len), void *arg);
    int (*label_values)(struct gp_storage *s, const char *name, const struct gp_matcher *m, size_t nm,
                        int64_t start_ms, int64_t end_ms,
                        void (*fn)(void *arg, const char *value, size_t len), void *arg);
    /* NULL: the backend does not evaluate PromQL (the caller does) */
    int (*promql)(struct gp_storage *s, const struct gp_storage_promql *q, struct gp_buf *out,
                  int *status);
    /* NULL: never (every read is local) */
    int (*pushdown)(struct gp_storage *s, const struct gp_matcher *m, size_t nm, int64_t mint);
    void (*stats)(struct gp_storage *s, struct gp_store_stats *st);
    void (*walk_metrics)(struct gp_storage *s, struct gp_metric_sink *out);
    /* NULL: the backend keeps no cluster to tell */
    int (*send_metadata)(struct gp_storage *s, const struct gp_family_meta *m, size_t n, char *err,
                         size_t errlen);
    void (*close)(struct gp_storage *s);
};

struct gp_storage {
    const struct gp_storage_ops *ops;
    enum gp_storage_kind kind;
    void *impl;
    int own; /* embedded: close the store with the storage */
};

extern const struct gp_storage_ops gp_storage_embedded_ops;
extern const struct gp_storage_ops gp_storage_remote_ops;

int gp_storage_remote_open(struct gp_storage *s, const struct gp_storage_remote_options *o, char *err,
                           size_t errlen);

/* gp_storage_select_each by a selection of s->ops->select, visited. */
int gp_storage_each_of_select(struct gp_storage *s, const struct gp_matcher *m, size_t nm,
                              int64_t mint, int64_t maxt,
                              gp_store_series_fn fn, void *arg);

/* Frees a remote selection (sel->arena is its own record). */
void gp_storage_remote_selection_free(struct gp_store_selection *sel);

/* Samples of one series in the selection's arena: 1 when sel was made by
 * the remote backend. */
int gp_storage_is_remote_selection(const struct gp_store_selection *sel);

/* The recent window a remote-mode server keeps (storage_window.c). */
struct gp_promapi_result;
struct gp_rwin;
int gp_rwin_open(struct gp_rwin **out, const char *dir, int64_t window_ms, char *err, size_t errlen);
void gp_rwin_close(struct gp_rwin *w); /* accepts NULL */
/* The window as an embedded storage: its ids, selections and reads. */
struct gp_storage *gp_rwin_storage(struct gp_rwin *w);
int64_t gp_rwin_window_ms(const struct gp_rwin *w);
/* 1 (counted as a local read) when the window holds every sample from mint on. */
int gp_rwin_covers(struct gp_rwin *w, int64_t mint);
/* 1 when the window holds every sample from mint on (not counted). */
int gp_rwin_holds(struct gp_rwin *w, int64_t mint);
/* The window is complete from t on (only ever moves back: after a refill). */
void gp_rwin_held_from(struct gp_rwin *w, int64_t t);
/* Stores a write that passes through (what does not fit the window is skipped). */
int gp_rwin_append(struct gp_rwin *w, const struct gp_batch *req);
/* Stores the raw samples of a refill answer. */
int gp_rwin_fill(struct gp_rwin *w, const struct gp_promapi_result *res);
/* Reads answered locally, samples refilled, and the span held now. */
void gp_rwin_counts(struct gp_rwin *w, uint64_t *reads, uint64_t *filled, int64_t *held_ms);

/* What the remote backend lends the refill (storage_refill.c). */
#define GP_STORAGE_SERVER_LABEL "gpulse_server" /* names the server a series came through */
#define GP_REFILL_NO_MATCH SIZE_MAX /* names()'s nm: the whole name index, no match[] */
struct gp_refill_src {
    void *arg;
    /* The raw samples of selector sel over [qmin, qmax]. */
    int (*fetch)(void *arg, const char *sel, int64_t qmin, int64_t qmax,
                 struct gp_promapi_result *res);
    /* The metric names of the series m chooses with samples in [qmin, qmax]. */
    int (*names)(void *arg, const struct gp_matcher *m, size_t nm, int64_t qmin, int64_t qmax,
                 void (*fn)(void *fnarg, const char *name, size_t len), void *fnarg);
};
/* Refills w from src (only server_name's part when not NULL); t0: when
 * the start's wait began (gp_mono_ms), for the log. */
void gp_rwin_refill(struct gp_rwin *w, const char *server_name, const struct gp_refill_src *src,
                    int64_t t0);
/* 1 when rc is this thread's last request refused by the cluster for the
 * number of series or samples it touches (a 422 saying so). */
int gp_storage_remote_refused(int rc);
/* storage_rollups.c: the minutes of a rollups answer (series labelled
 * gpulse_rollup="count"|"sum"|"min"|"max", points at minute ends) into
 * out[idx[i]] for the series sel->series[idx[0..n)] of one metric name,
 * matched by their labels without __name__; figures of other series or
 * names are left out, and so are minutes without a count; means: a
 * minute without min and max gets its mean for both. Pure (the fuzz
 * target's). GP_OK or GP_ENOMEM. */
struct gp_promapi_result;
int gp_storage_rollups_answer(const struct gp_store_selection *sel, const size_t *idx, size_t n,
                              const struct gp_promapi_result *res, int means, struct gp_rollups *out);
/* Appends s as a PromQL string literal. */
void gp_storage_put_quoted(struct gp_buf *b, const char *s, size_t n);

#endif
