/*
 * storage_window.c - the recent window a remote-mode server keeps itself
 * (docs/storage.md "The local window").
 *
 * In remote mode every write already passes through the server on its
 * way to the cluster. The window is an embedded store (store/store.h)
 * under data_dir/remote-window with a short retention, fed by the same
 * writes: the reads that dominate the server's work (the detectors'
 * eval_window, the inventory's and the jobs scanner's remote_lookback)
 * fall inside it and are answered locally, at embedded speed, instead of
 * moving raw samples from the cluster as JSON. Reads reaching further
 * back go to the cluster as before (storage_remote.c decides).
 *
 * The window is a cache, not a copy of record: the cluster is. So it is
 * written without fsync, wiped at every start and refilled from the
 * cluster (storage_remote.c asks, gp_rwin_fill stores), and it says from
 * when it is complete (held_from): a read reaching before that is not
 * its to answer. Before the refill succeeds held_from is the start time;
 * without a refill the window fills from the live writes and is whole
 * once window_ms has passed.
 */
#include "storage/storage_int.h"

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "storage/promapi.h"
#include "store/labels.h"

#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct gp_rwin {
    struct gp_storage *st; /* the embedded store, as a storage */
    int64_t window_ms;
    _Atomic int64_t held_from;
    atomic_uint_fast64_t reads, filled;
};

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path) && errno != ENOENT ? -1 : 0;
}

int gp_rwin_open(struct gp_rwin **out, const char *dir, int64_t window_ms, char *err, size_t errlen)
{
    *out = NULL;
    /* What an earlier run held may have holes (no fsync, writes that went
     * to the cluster while this server was down): start empty and refill. */
    if (nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS) && errno != ENOENT)
        return gp_seterr(err, errlen, GP_EIO, "cannot clear the remote window '%s': %s", dir,
                         strerror(errno));
    struct gp_rwin *w = calloc(1, sizeof *w);
    if (!w)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    /* Blocks of a few minutes: compaction keeps the head small and
     * retention drops whole blocks soon after they leave the window. */
    int64_t block = (window_ms / 4 + 59999) / 60000 * 60000;
    if (block > 2 * 3600000)
        block = 2 * 3600000;
    struct gp_store_options so = {
        .dir = dir,
        .retention_raw_ms = window_ms + block,
        .retention_rollup_ms = window_ms + block,
        .block_ms = block,
        .no_sync = 1,        /* a cache: the cluster and the disk buffer are the record */
        .max_future_ms = -1, /* as the cluster: it judges times */
    };
    struct gp_store *store = NULL;
    int rc = gp_store_open(&store, &so, err, errlen);
    if (!rc && gp_storage_wrap(&w->st, store, 1)) {
        gp_store_close(store);
        rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    }
    if (rc) {
        free(w);
        return rc;
    }
    w->window_ms = window_ms;
    atomic_store(&w->held_from, gp_wall_ms());
    *out = w;
    return GP_OK;
}

void gp_rwin_close(struct gp_rwin *w)
{
    if (!w)
        return;
    gp_storage_close(w->st);
    free(w);
}

struct gp_storage *gp_rwin_storage(struct gp_rwin *w) { return w->st; }

int64_t gp_rwin_window_ms(const struct gp_rwin *w) { return w->window_ms; }

int gp_rwin_holds(struct gp_rwin *w, int64_t mint)
{
    return mint >= atomic_load(&w->held_from);
}

int gp_rwin_covers(struct gp_rwin *w, int64_t mint)
{
    if (!gp_rwin_holds(w, mint))
        return 0;
    atomic_fetch_add(&w->reads, 1);
    return 1;
}

void gp_rwin_held_from(struct gp_rwin *w, int64_t t)
{
    int64_t old = atomic_load(&w->held_from);
    while (t < old && !atomic_compare_exchange_weak(&w->held_from, &old, t))
        ;
}

int gp_rwin_append(struct gp_rwin *w, const struct gp_batch *req)
{
    struct gp_append_result res;
    char err[256];
    /* Out of order, too old: the cluster judges those; the window keeps
     * what fits it. */
    int rc = gp_storage_append(w->st, req, &res, err, sizeof err);
    if (rc)
        gp_log(GP_LOG_WARN, "storage", "remote window append failed", "err=\"%s\"", err);
    return rc;
}

/* Stores one answer of the refill: the series' canonical labels become
 * the batch's label views. */
int gp_rwin_fill(struct gp_rwin *w, const struct gp_promapi_result *res)
{
    size_t nl = 0;
    for (size_t i = 0; i < res->n; i++) {
        struct gp_labels_iter it;
        struct gp_str name, value;
        gp_labels_iter_init(&it, res->s[i].labels, res->s[i].labels_len);
        while (gp_labels_next(&it, &name, &value) == 1)
            nl++;
    }
    struct gp_series *se = calloc(res->n ? res->n : 1, sizeof *se);
    struct gp_label *lab = calloc(nl ? nl : 1, sizeof *lab);
    size_t ns = 0; /* the series' own counts: a caller may have trimmed them */
    for (size_t i = 0; i < res->n; i++)
        ns += res->s[i].n;
    struct gp_sample *smp = calloc(ns ? ns : 1, sizeof *smp);
    int rc = se && lab && smp ? GP_OK : GP_ENOMEM;
    struct gp_batch b = {.series = se, .nseries = 0};
    size_t li = 0, si = 0;
    for (size_t i = 0; !rc && i < res->n; i++) {
        const struct gp_promapi_series *d = &res->s[i];
        struct gp_labels_iter it;
        struct gp_str name, value;
        struct gp_series *o = &se[b.nseries];
        o->labels = &lab[li];
        gp_labels_iter_init(&it, d->labels, d->labels_len);
        while (li < nl && gp_labels_next(&it, &name, &value) == 1)
            lab[li++] = (struct gp_label){name, value};
        o->nlabels = (size_t)(&lab[li] - o->labels);
        o->samples = &smp[si];
        for (size_t j = 0; j < d->n; j++)
            smp[si++] = (struct gp_sample){.value = d->v[j], .timestamp_ms = d->t[j]};
        o->nsamples = (size_t)(&smp[si] - o->samples);
        b.nlabels_total += o->nlabels;
        b.nsamples_total += o->nsamples;
        b.nseries++;
    }
    if (!rc && b.nsamples_total) {
        rc = gp_rwin_append(w, &b);
        if (!rc)
            atomic_fetch_add(&w->filled, b.nsamples_total);
    }
    free(se);
    free(lab);
    free(smp);
    return rc;
}

void gp_rwin_counts(struct gp_rwin *w, uint64_t *reads, uint64_t *filled, int64_t *held_ms)
{
    *reads = atomic_load(&w->reads);
    *filled = atomic_load(&w->filled);
    int64_t held = gp_wall_ms() - atomic_load(&w->held_from);
    *held_ms = held < 0 ? 0 : held > w->window_ms ? w->window_ms : held;
}
