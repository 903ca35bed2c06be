/*
 * gpu_series.c - the fleet routes' selection of each GPU's series
 * (gpu_series.h).
 */
#include "server/gpu_series.h"

#include "lib/buf.h"
#include "lib/err.h"
#include "query/query.h"
#include "store/labels.h"
#include "store/matcher.h"

#include <stdlib.h>
#include <string.h>

struct gp_str gp_srv_label(const struct gp_store_series *s, const char *name)
{
    struct gp_str v = {"", 0};
    if (gp_labels_get(s->labels, s->labels_len, name, &v) != 1)
        v = (struct gp_str){"", 0};
    return v;
}

int gp_srv_rw_cmp(struct gp_str a, struct gp_str b)
{
    int c = memcmp(a.ptr, b.ptr, a.len < b.len ? a.len : b.len);
    return c ? c : a.len < b.len ? -1 : a.len > b.len;
}

static int is(struct gp_str a, const char *b)
{
    return a.len == strlen(b) && !memcmp(a.ptr, b, a.len);
}

static int same(const struct gp_srv_cand *a, const struct gp_srv_cand *b, int by_job)
{
    return !gp_srv_rw_cmp(a->node, b->node) && !gp_srv_rw_cmp(a->gpu, b->gpu) &&
           !gp_srv_rw_cmp(a->mig, b->mig) && (!by_job || !gp_srv_rw_cmp(a->job, b->job));
}

/* Within a GPU (and job): by kind, newest first. */
static int kind_time(const struct gp_srv_cand *a, const struct gp_srv_cand *b)
{
    int c = a->kind - b->kind;
    return c ? c : a->s->last_ms > b->s->last_ms ? -1 : a->s->last_ms < b->s->last_ms;
}

static uint64_t key_hash(const struct gp_srv_cand *x, int by_job)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a over node, gpu, mig (, job) */
    const struct gp_str *k[4] = {&x->node, &x->gpu, &x->mig, &x->job};
    for (int i = 0; i < 3 + !!by_job; i++) {
        for (size_t j = 0; j < k[i]->len; j++)
            h = (h ^ (unsigned char)k[i]->ptr[j]) * 1099511628211ULL;
        h = (h ^ 0xff) * 1099511628211ULL;
    }
    return h;
}

struct grp {
    const struct gp_srv_cand *first;
    uint32_t id;
    int by_job;
};

static int grp_cmp(const void *pa, const void *pb)
{
    const struct grp *a = pa, *b = pb;
    int c = gp_srv_rw_cmp(a->first->node, b->first->node);
    if (!c)
        c = gp_srv_rw_cmp(a->first->gpu, b->first->gpu);
    if (!c)
        c = gp_srv_rw_cmp(a->first->mig, b->first->mig);
    if (!c && a->by_job)
        c = gp_srv_rw_cmp(a->first->job, b->first->job);
    return c;
}

/*
 * Sorts c[0..n) by GPU, then (by_job) job, then kind_time, equal ones in
 * their selection order: the series are grouped by a hash of their GPU
 * (and job) and only the groups are sorted by their strings, then each
 * group's few series by kind and time (one sort of every series by its
 * strings was most of /api/v1/fleet/gpus at 4,096 GPUs). GP_OK or
 * GP_ENOMEM.
 */
static int sort_cands(struct gp_srv_cand *c, size_t n, int by_job)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    uint32_t *slot = calloc(cap, sizeof *slot), *gid = malloc(n * sizeof *gid);
    uint32_t *at = NULL;
    struct grp *g = malloc(n * sizeof *g);
    struct gp_srv_cand *out = malloc(n * sizeof *out);
    int rc = slot && gid && g && out ? GP_OK : GP_ENOMEM;
    size_t ng = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        size_t k = key_hash(&c[i], by_job) & (cap - 1);
        while (slot[k] && !same(g[slot[k] - 1].first, &c[i], by_job))
            k = (k + 1) & (cap - 1);
        if (!slot[k]) {
            g[ng] = (struct grp){&c[i], (uint32_t)ng, by_job};
            slot[k] = (uint32_t)++ng;
        }
        gid[i] = slot[k] - 1;
    }
    if (!rc && !(at = calloc(ng + 1, sizeof *at)))
        rc = GP_ENOMEM;
    if (!rc) {
        qsort(g, ng, sizeof *g, grp_cmp);
        /* at[id]: where group id starts in out */
        for (size_t i = 0; i < n; i++)
            at[gid[i] + 1]++;
        uint32_t *start = slot; /* reused: starts by rank */
        memset(start, 0, (ng + 1) * sizeof *start);
        for (size_t j = 0; j < ng; j++)
            start[j + 1] = start[j] + at[g[j].id + 1];
        for (size_t j = 0; j < ng; j++)
            at[g[j].id] = start[j];
        for (size_t i = 0; i < n; i++)
            out[at[gid[i]]++] = c[i];
        /* Each group by kind, newest first; insertion keeps ties in order. */
        for (size_t j = 0; j < ng; j++)
            for (size_t i = start[j] + 1; i < start[j + 1]; i++) {
                struct gp_srv_cand x = out[i];
                size_t k = i;
                for (; k > start[j] && kind_time(&out[k - 1], &x) > 0; k--)
                    out[k] = out[k - 1];
                out[k] = x;
            }
        memcpy(c, out, n * sizeof *c);
    }
    free(slot);
    free(gid);
    free(g);
    free(at);
    free(out);
    return rc;
}

size_t gp_srv_gpu_run(const struct gp_srv_cand *c, size_t n, size_t i, int by_job)
{
    size_t j = i;
    while (j < n && same(&c[i], &c[j], by_job))
        j++;
    return j;
}

/* hosts: the series without a `gpu` label, named by instance when
 * neither host label is there; else those with one. */
static int select_series(struct gp_storage *st, const char *const *names, size_t nnames, int64_t t0,
                         int64_t t1, int64_t since, int by_job, int hosts, struct gp_store_selection *sel,
                         struct gp_srv_cand **cands, size_t *n, char *err, size_t errlen)
{
    *cands = NULL;
    *n = 0;
    struct gp_matcher m;
    int rc = gp_query_names_matcher(&m, names, nnames, err, errlen);
    if (rc)
        return rc;
    rc = gp_storage_select_since(st, &m, 1, t0, t1, since, sel);
    gp_matcher_free(&m);
    if (rc)
        return rc;
    *cands = calloc(sel->n ? sel->n : 1, sizeof **cands);
    if (!*cands)
        return GP_ENOMEM;
    for (size_t i = 0; i < sel->n; i++) {
        const struct gp_store_series *s = &sel->series[i];
        struct gp_srv_cand c = {.s = s, .kind = -1};
        struct gp_str name = {"", 0}, host = {"", 0}, instance = {"", 0}, ln, lv;
        c.node = c.gpu = c.mig = c.job = c.model = host;
        /* one pass over the labels (thousands of series per request) */
        struct gp_labels_iter it;
        gp_labels_iter_init(&it, s->labels, s->labels_len);
        while (gp_labels_next(&it, &ln, &lv) == 1) {
            struct gp_str *dst = NULL;
            /* by length first: fixed-size compares, no strlen */
            if (ln.len == 3)
                dst = !memcmp(ln.ptr, "gpu", 3) ? &c.gpu : !memcmp(ln.ptr, "job", 3) ? &c.job : NULL;
            else if (ln.len == 8)
                dst = !memcmp(ln.ptr, "__name__", 8)   ? &name
                      : !memcmp(ln.ptr, "Hostname", 8) ? &c.node
                      : !memcmp(ln.ptr, "hostname", 8) ? &host
                      : !memcmp(ln.ptr, "GPU_I_ID", 8) ? &c.mig
                      : !memcmp(ln.ptr, "instance", 8) ? &instance
                                                       : NULL;
            else if (ln.len == 9 && !memcmp(ln.ptr, "modelName", 9))
                dst = &c.model;
            if (dst)
                *dst = lv;
        }
        if (!c.node.len)
            c.node = host.len || !hosts ? host : instance;
        for (size_t k = 0; k < nnames && c.kind < 0; k++)
            if (is(name, names[k]))
                c.kind = (int)k;
        if (!c.gpu.len == !!hosts && c.kind >= 0)
            (*cands)[(*n)++] = c;
    }
    return *n ? sort_cands(*cands, *n, by_job) : GP_OK;
}

int gp_srv_gpu_series(struct gp_storage *st, const char *const *names, size_t nnames, int64_t t0,
                      int64_t t1, int by_job, struct gp_store_selection *sel,
                      struct gp_srv_cand **cands, size_t *n, char *err, size_t errlen)
{
    return select_series(st, names, nnames, t0, t1, INT64_MIN, by_job, 0, sel, cands, n, err, errlen);
}

int gp_srv_gpu_series_since(struct gp_storage *st, const char *const *names, size_t nnames,
                            int64_t t0, int64_t t1, int64_t since, int by_job,
                            struct gp_store_selection *sel, struct gp_srv_cand **cands, size_t *n,
                            char *err, size_t errlen)
{
    return select_series(st, names, nnames, t0, t1, since, by_job, 0, sel, cands, n, err, errlen);
}

int gp_srv_host_series(struct gp_storage *st, const char *const *names, size_t nnames, int64_t t0,
                       int64_t t1, struct gp_store_selection *sel, struct gp_srv_cand **cands,
                       size_t *n, char *err, size_t errlen)
{
    return select_series(st, names, nnames, t0, t1, INT64_MIN, 0, 1, sel, cands, n, err, errlen);
}

int gp_srv_host_series_since(struct gp_storage *st, const char *const *names, size_t nnames,
                             int64_t t0, int64_t t1, int64_t since, struct gp_store_selection *sel,
                             struct gp_srv_cand **cands, size_t *n, char *err, size_t errlen)
{
    return select_series(st, names, nnames, t0, t1, since, 0, 1, sel, cands, n, err, errlen);
}
