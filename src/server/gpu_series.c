/*
 * gpu_series.c - the fleet routes' selection of each GPU's series
 * (gpu_series.h).
 */
#include "server/gpu_series.h"

#include "lib/buf.h"
#include "lib/err.h"
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

static int order(const struct gp_srv_cand *a, const struct gp_srv_cand *b, int by_job)
{
    int c = gp_srv_rw_cmp(a->node, b->node);
    if (!c)
        c = gp_srv_rw_cmp(a->gpu, b->gpu);
    if (!c)
        c = gp_srv_rw_cmp(a->mig, b->mig);
    if (!c && by_job)
        c = gp_srv_rw_cmp(a->job, b->job);
    if (!c)
        c = a->kind - b->kind;
    if (!c)
        c = a->s->last_ms > b->s->last_ms ? -1 : a->s->last_ms < b->s->last_ms;
    return c;
}

static int cmp_gpu(const void *a, const void *b) { return order(a, b, 0); }
static int cmp_job(const void *a, const void *b) { return order(a, b, 1); }

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
                         int64_t t1, int by_job, int hosts, struct gp_store_selection *sel,
                         struct gp_srv_cand **cands, size_t *n, char *err, size_t errlen)
{
    *cands = NULL;
    *n = 0;
    struct gp_buf re;
    gp_buf_init(&re, 0);
    for (size_t i = 0; i < nnames; i++)
        gp_buf_printf(&re, "%s%s", i ? "|" : "", names[i]);
    if (re.err) {
        gp_buf_free(&re);
        return GP_ENOMEM;
    }
    struct gp_matcher m;
    int rc = gp_matcher_init(&m, GP_MATCH_RE, "__name__", re.data, err, errlen);
    gp_buf_free(&re);
    if (rc)
        return rc;
    rc = gp_storage_select(st, &m, 1, t0, t1, sel);
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
            struct gp_str *dst = is(ln, "__name__")   ? &name
                                    : is(ln, "Hostname") ? &c.node
                                    : is(ln, "hostname") ? &host
                                    : is(ln, "gpu")      ? &c.gpu
                                    : is(ln, "GPU_I_ID") ? &c.mig
                                    : is(ln, "job")      ? &c.job
                                    : is(ln, "modelName") ? &c.model
                                    : is(ln, "instance") ? &instance
                                                          : NULL;
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
    if (*n)
        qsort(*cands, *n, sizeof **cands, by_job ? cmp_job : cmp_gpu);
    return GP_OK;
}

int gp_srv_gpu_series(struct gp_storage *st, const char *const *names, size_t nnames, int64_t t0,
                      int64_t t1, int by_job, struct gp_store_selection *sel,
                      struct gp_srv_cand **cands, size_t *n, char *err, size_t errlen)
{
    return select_series(st, names, nnames, t0, t1, by_job, 0, sel, cands, n, err, errlen);
}

int gp_srv_host_series(struct gp_storage *st, const char *const *names, size_t nnames, int64_t t0,
                       int64_t t1, struct gp_store_selection *sel, struct gp_srv_cand **cands,
                       size_t *n, char *err, size_t errlen)
{
    return select_series(st, names, nnames, t0, t1, 0, 1, sel, cands, n, err, errlen);
}
