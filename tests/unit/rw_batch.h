/*
 * rw_batch.h - building a remote-write request in a test: series given
 * as a name, "k=v;k=v" labels and samples, copied into a fixed pool (no
 * allocation), labels sorted as remote write wants. Static functions in a
 * header included by one test file each (as store_testlib.h).
 */
#ifndef GP_RW_BATCH_H
#define GP_RW_BATCH_H

#include "ingest/remote_write.h"
#include "test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RW_BATCH_SERIES 512
#define RW_BATCH_LABELS 10
#define RW_BATCH_SAMPLES 16

struct rw_batch {
    struct gp_series s[RW_BATCH_SERIES];
    struct gp_label l[RW_BATCH_SERIES][RW_BATCH_LABELS];
    struct gp_sample smp[RW_BATCH_SERIES][RW_BATCH_SAMPLES];
    char pool[RW_BATCH_SERIES][RW_BATCH_LABELS][2][64];
    size_t n;
};

static inline int rw_batch_lab_cmp(const void *a, const void *b)
{
    const struct gp_label *x = a, *y = b;
    return strcmp(x->name.ptr, y->name.ptr);
}

/* Adds series name{labels} ("k=v;k=v") with n samples t[i] (s) = v[i]. */
static inline void rw_batch_add(struct rw_batch *b, const char *name, const char *labels,
                                const double *t, const double *v, size_t n)
{
    size_t i = b->n++, nl = 1;
    CHECK(i < RW_BATCH_SERIES && n <= RW_BATCH_SAMPLES);
    snprintf(b->pool[i][0][0], 64, "__name__");
    snprintf(b->pool[i][0][1], 64, "%s", name);
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", labels);
    for (char *save = NULL, *p = strtok_r(tmp, ";", &save); p; p = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(p, '=');
        CHECK(eq && nl < RW_BATCH_LABELS);
        *eq = '\0';
        snprintf(b->pool[i][nl][0], 64, "%s", p);
        snprintf(b->pool[i][nl][1], 64, "%s", eq + 1);
        nl++;
    }
    for (size_t k = 0; k < nl; k++)
        b->l[i][k] = (struct gp_label){{b->pool[i][k][0], strlen(b->pool[i][k][0])},
                                          {b->pool[i][k][1], strlen(b->pool[i][k][1])}};
    qsort(b->l[i], nl, sizeof b->l[i][0], rw_batch_lab_cmp);
    for (size_t k = 0; k < n; k++)
        b->smp[i][k] = (struct gp_sample){v[k], (int64_t)llround(t[k] * 1000)};
    b->s[i] = (struct gp_series){b->l[i], nl, b->smp[i], n};
}

/* The request of the batch's series (borrowing them). */
static inline struct gp_batch rw_batch_request(struct rw_batch *b)
{
    size_t nl = 0, ns = 0;
    for (size_t i = 0; i < b->n; i++)
        nl += b->s[i].nlabels, ns += b->s[i].nsamples;
    return (struct gp_batch){b->s, b->n, nl, ns, NULL};
}

#endif
