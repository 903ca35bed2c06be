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
    void (*stats)(struct gp_storage *s, struct gp_store_stats *st);
    void (*render_metrics)(struct gp_storage *s, struct gp_buf *out);
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
/* The window is complete from t on (only ever moves back: after a refill). */
void gp_rwin_held_from(struct gp_rwin *w, int64_t t);
/* Stores a write that passes through (what does not fit the window is skipped). */
int gp_rwin_append(struct gp_rwin *w, const struct gp_batch *req);
/* Stores the raw samples of a refill answer. */
int gp_rwin_fill(struct gp_rwin *w, const struct gp_promapi_result *res);
/* Reads answered locally, samples refilled, and the span held now. */
void gp_rwin_counts(struct gp_rwin *w, uint64_t *reads, uint64_t *filled, int64_t *held_ms);

#endif
