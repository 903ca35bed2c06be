/*
 * hcache.c - the open head chunk's samples, kept decoded between reads.
 *
 * A range query that ends now decodes every series' open head chunk
 * (Gorilla, up to GP_ST_HEAD_SAMPLES samples): on the 512-GPU avg-by head
 * query, a fifth of the server's CPU went there, to decode again the same
 * samples as the query before. The chunk only grows by appends (its bit
 * stream is append-only, and appends wait for the write lock) until
 * gp_st_head_cut empties it, so a series read keeps the samples decoded
 * so far and the decoder's state, and the next read decodes only what
 * was appended since. The cut drops the entry; so does closing the store.
 *
 * Memory: an entry is GP_ST_HEAD_SAMPLES times and values (7.7 kB) and
 * is made on the first read of a series' chunk while the store's entries
 * total at most GP_ST_HCACHE_MAX bytes (past that, reads decode as
 * before). Entries live until their chunk is cut (8 minutes of a 1 s
 * series), so the bound is turned over by what is being read.
 *
 * Readers share the read lock, so an entry is taken by one reader at a
 * time (busy); another reader of the same series meanwhile decodes the
 * chunk itself. A decode error drops the entry and the caller decodes,
 * reporting the damage as it always did.
 */
#include "store/store_int.h"

#include "lib/err.h"

#include <stdlib.h>
#include <string.h>

void gp_st_hcache_drop(struct gp_store *s, struct gp_st_series *se)
{
    if (!se->hc)
        return;
    free(se->hc);
    se->hc = NULL;
    __atomic_fetch_sub(&s->hc_bytes, sizeof(struct gp_st_hcache), __ATOMIC_RELAXED);
}

/* se's entry, made when the budget has room; NULL otherwise. */
static struct gp_st_hcache *entry(struct gp_store *s, struct gp_st_series *se)
{
    struct gp_st_hcache *h = __atomic_load_n(&se->hc, __ATOMIC_ACQUIRE);
    if (h)
        return h;
    size_t sz = sizeof *h;
    if (__atomic_add_fetch(&s->hc_bytes, sz, __ATOMIC_RELAXED) > GP_ST_HCACHE_MAX ||
        !(h = calloc(1, sz))) {
        __atomic_fetch_sub(&s->hc_bytes, sz, __ATOMIC_RELAXED);
        return NULL;
    }
    struct gp_st_hcache *none = NULL;
    if (!__atomic_compare_exchange_n(&se->hc, &none, h, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        free(h); /* another reader made it first */
        __atomic_fetch_sub(&s->hc_bytes, sz, __ATOMIC_RELAXED);
        return none;
    }
    return h;
}

/* Brings h up to the chunk's bytes p, len: 0, or -1 on a decode error. */
static int extend(struct gp_st_hcache *h, const uint8_t *p, size_t len)
{
    if (h->n == 0 && h->it.read == 0) {
        if (gp_chunk_iter_init(&h->it, p, len) != GP_OK)
            return -1;
    } else {
        /* the same stream, longer: only the buffer (which an append may
         * have moved), its length and the header's count changed */
        h->it.data = p;
        h->it.len = len;
        h->it.count = (unsigned)p[0] << 8 | p[1];
    }
    if (h->it.count > GP_ST_HEAD_SAMPLES || h->it.read > h->it.count)
        return -1;
    int k = gp_chunk_iter_decode(&h->it, h->t + h->n, h->v + h->n, GP_ST_HEAD_SAMPLES - h->n);
    if (k < 0)
        return -1;
    h->n += (size_t)k;
    return h->n == h->it.count ? 0 : -1;
}

int gp_st_hcache_emit(struct gp_store *s, struct gp_st_series *se, int64_t mint, int64_t maxt,
                      int64_t *last, struct gp_samples *out)
{
    size_t len;
    const uint8_t *p = gp_chunk_bytes(&se->head, &len);
    struct gp_st_hcache *h;
    if (!p || len < 2 || !(h = entry(s, se)) || __atomic_exchange_n(&h->busy, 1, __ATOMIC_ACQUIRE))
        return 1;
    if (extend(h, p, len) != 0) {
        /* start over on the next read; this one decodes as before */
        h->n = 0;
        memset(&h->it, 0, sizeof h->it);
        __atomic_store_n(&h->busy, 0, __ATOMIC_RELEASE);
        return 1;
    }
    /* times increase: the kept samples are one run */
    size_t lo = 0, hi = h->n;
    while (lo < hi && (h->t[lo] < mint || h->t[lo] <= *last))
        lo++;
    while (hi > lo && h->t[hi - 1] > maxt)
        hi--;
    int rc = GP_OK;
    if (hi > lo) {
        if (gp_st_samples_reserve(out, hi - lo) != GP_OK) {
            rc = GP_ENOMEM;
        } else {
            memcpy(out->t + out->n, h->t + lo, (hi - lo) * sizeof *h->t);
            memcpy(out->v + out->n, h->v + lo, (hi - lo) * sizeof *h->v);
            out->n += hi - lo;
            *last = h->t[hi - 1];
        }
    }
    __atomic_store_n(&h->busy, 0, __ATOMIC_RELEASE);
    return rc;
}
