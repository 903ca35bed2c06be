/*
 * gpu_series.h - the series of each GPU now, for the fleet routes
 * (cost_api.c's /api/v1/fleet and /api/v1/cost; gpus_api.c's
 * /api/v1/fleet/gpus reads the inventory's cache instead, query.h
 * gp_inventory_each_gpu, and uses only the comparator): one selection of every wanted metric name for
 * all GPUs at once, each series tagged with its GPU's labels and the
 * index of its name, sorted so that each GPU's series are together, by
 * name index, newest first. Selecting once for the whole fleet (not per
 * GPU) is what keeps these routes fast at hundreds of GPUs.
 *
 * A GPU is (Hostname or hostname, gpu, GPU_I_ID); series without a `gpu`
 * label are left out. gp_srv_host_series selects the others (a node's
 * host series, cost_api.c's `hosts`): one run per node, the node named
 * by instance (a Prometheus scrape's) when neither host label is there. Strings point into the selection: valid until it
 * is freed.
 */
#ifndef GP_SERVER_GPU_SERIES_H
#define GP_SERVER_GPU_SERIES_H

#include "ingest/remote_write.h"
#include "storage/storage.h"

#include <stddef.h>
#include <stdint.h>

struct gp_srv_cand {
    const struct gp_store_series *s;
    struct gp_str node, gpu, mig, job, model;
    int kind; /* index of the series' name in the names asked for */
};

/* The label `name` of s ("" when absent). */
struct gp_str gp_srv_label(const struct gp_store_series *s, const char *name);
int gp_srv_rw_cmp(struct gp_str a, struct gp_str b);

/* Selects the series named names[0..nnames) with a sample in [t0, t1]
 * into *cands (caller frees *cands and gp_storage_selection_free(sel)),
 * sorted by GPU, then (by_job) job, then kind, then newest first.
 * GP_OK, GP_ENOMEM, or the store's error with detail. */
int gp_srv_gpu_series(struct gp_storage *st, const char *const *names, size_t nnames, int64_t t0,
                      int64_t t1, int by_job, struct gp_store_selection *sel,
                      struct gp_srv_cand **cands, size_t *n, char *err, size_t errlen);

/* As gp_srv_gpu_series for a caller that reads only samples at or after
 * since (gp_storage_select_since: remote, the others' samples are not
 * fetched and their last_ms is a bound, since - 1). */
int gp_srv_gpu_series_since(struct gp_storage *st, const char *const *names, size_t nnames,
                            int64_t t0, int64_t t1, int64_t since, int by_job,
                            struct gp_store_selection *sel, struct gp_srv_cand **cands, size_t *n,
                            char *err, size_t errlen);

/* As gp_srv_gpu_series for the series without a `gpu` label. */
int gp_srv_host_series(struct gp_storage *st, const char *const *names, size_t nnames, int64_t t0,
                       int64_t t1, struct gp_store_selection *sel, struct gp_srv_cand **cands,
                       size_t *n, char *err, size_t errlen);
int gp_srv_host_series_since(struct gp_storage *st, const char *const *names, size_t nnames,
                             int64_t t0, int64_t t1, int64_t since, struct gp_store_selection *sel,
                             struct gp_srv_cand **cands, size_t *n, char *err, size_t errlen);

/* Where the run of the same GPU (and job with by_job) as c[i] ends. */
size_t gp_srv_gpu_run(const struct gp_srv_cand *c, size_t n, size_t i, int by_job);

#endif
