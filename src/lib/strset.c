/*
 * strset.c - strings gathered, then sorted and made unique (strset.h).
 */
#include "lib/strset.h"

#include "lib/err.h"

#include <stdlib.h>
#include <string.h>

void gp_strset_add(void *arg, const char *p, size_t len)
{
    struct gp_strset *x = arg;
    if (x->err)
        return;
    if (x->n == x->cap) {
        size_t nc = x->cap ? x->cap * 2 : 64;
        char **nv = realloc(x->v, nc * sizeof *nv);
        if (!nv) {
            x->err = GP_ENOMEM;
            return;
        }
        x->v = nv;
        x->cap = nc;
    }
    if (!(x->v[x->n] = strndup(p, len)))
        x->err = GP_ENOMEM;
    else
        x->n++;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void gp_strset_each(struct gp_strset *x, void (*fn)(void *arg, const char *p, size_t len), void *arg)
{
    if (x->n)
        qsort(x->v, x->n, sizeof *x->v, cmp_str);
    for (size_t i = 0; i < x->n; i++)
        if (!i || strcmp(x->v[i], x->v[i - 1]))
            fn(arg, x->v[i], strlen(x->v[i]));
}

void gp_strset_free(struct gp_strset *x)
{
    for (size_t i = 0; i < x->n; i++)
        free(x->v[i]);
    free(x->v);
    memset(x, 0, sizeof *x);
}
