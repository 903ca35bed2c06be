/*
 * read.c - the query side: select, raw reads, rollup reads, label names
 * and values.
 *
 * Every call holds the read lock for its duration, so it sees one
 * consistent state; readers run in parallel with each other and wait
 * only for appends and the short locked steps of maintenance. A series'
 * samples live in three places, oldest first: blocks (mapped files, one
 * or more chunks per series per window, found by binary search in the
 * block's index), closed chunks in chunk files (mapped, see persist.c),
 * and the open head chunk (kept decoded between reads, hcache.c). They
 * never overlap, since a window's data moves to its block in one locked
 * step; a reader still emits only increasing times, so a damaged source
 * cannot produce disorder.
 */
#include "store/store_int.h"

#include "lib/bits.h"
#include "lib/err.h"
#include "lib/log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Decodes a chunk (Gorilla, or a chunk file's block-encoded one),
 * appending samples in [mint, maxt] newer than *last: the whole chunk in
 * one call into out's spare room, then filtered in place (as emit_bchunk
 * does). */
static int emit_chunk(const uint8_t *p, size_t len, int packed, int64_t mint, int64_t maxt,
                      int64_t *last, struct gp_samples *out)
{
    size_t n, base = out->n, got;
    if (gp_st_chunk_count(p, len, packed, &n) != GP_OK)
        return GP_EPARSE;
    if (gp_st_samples_reserve(out, n) != GP_OK)
        return GP_ENOMEM;
    int k = gp_st_chunk_decode(p, len, packed, out->t + base, out->v + base, n, &got);
    /* Nearly every chunk of a range lies wholly inside it: kept as decoded. */
    if (k > 0 && out->t[base] >= mint && out->t[base] > *last && out->t[base + k - 1] <= maxt) {
        out->n = base + (size_t)k;
        *last = out->t[out->n - 1];
        return GP_OK;
    }
    /* After damage, the samples decoded before it still count; and damage
     * past maxt is never reached, as a sample-by-sample read stops there. */
    size_t w = base;
    int rc = k < 0 ? GP_EPARSE : GP_OK;
    for (size_t i = base; i < base + got; i++) {
        int64_t t = out->t[i];
        if (t > maxt) {
            rc = GP_OK;
            break;
        }
        if (t < mint || t <= *last)
            continue;
        out->t[w] = t;
        out->v[w++] = out->v[i];
        *last = t;
    }
    out->n = w;
    return rc;
}

/* Decodes a block chunk straight into out, keeping the samples in
 * [mint, maxt] newer than *last: the chunk's values past maxt are not
 * decoded, those before mint not scaled. */
static int emit_bchunk(const struct gp_st_bfile *bf, const uint8_t *p, size_t len, int64_t mint,
                       int64_t maxt, int64_t *last, struct gp_samples *out)
{
    size_t n, first;
    if (gp_st_bchunk_count(p, len, &n) != GP_OK)
        return GP_EPARSE;
    size_t base = out->n;
    if (gp_st_samples_reserve(out, n) != GP_OK)
        return GP_ENOMEM;
    int k = gp_st_bchunk_decode_in(bf, p, len, mint, maxt, 0, out->t + base, out->v + base, n, &first);
    if (k < 0)
        return GP_EPARSE;
    /* Times increase within the chunk: skip those not newer than *last,
     * then move the rest down in one piece (or not at all: usually the
     * whole chunk is kept). */
    size_t i = base + first, end = base + (size_t)k;
    while (i < end && out->t[i] <= *last)
        i++;
    if (i < end) {
        if (i > base) {
            memmove(out->t + base, out->t + i, (end - i) * sizeof *out->t);
            memmove(out->v + base, out->v + i, (end - i) * sizeof *out->v);
        }
        *last = out->t[end - 1];
    }
    out->n = base + (end - i);
    return GP_OK;
}

/* Keeps the worst of two results: ENOMEM over EIO over EPARSE over OK. */
static int worse(int a, int b)
{
    static const int order[] = {GP_ENOMEM, GP_EIO, GP_EPARSE};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (a == order[i] || b == order[i])
            return order[i];
    return a != GP_OK ? a : b;
}

/* Notes a damaged chunk covering [t1, t2] that a read skipped. */
static void note_damage(struct gp_store *s, struct gp_samples *out, int64_t t1, int64_t t2)
{
    __atomic_fetch_add(&s->damaged_reads, 1, __ATOMIC_RELAXED);
    if (!out->damaged || t1 < out->damaged_from)
        out->damaged_from = t1;
    if (!out->damaged || t2 > out->damaged_to)
        out->damaged_to = t2;
    out->damaged++;
}

static int read_locked(struct gp_store *s, uint32_t id, int64_t mint, int64_t maxt,
                       struct gp_samples *out)
{
    if (id == 0 || id >= s->ser_cap || !s->ser[id].exists || mint > maxt)
        return GP_OK;
    int64_t last = INT64_MIN;
    int rc = GP_OK, k;
    for (size_t b = 0; b < s->blocks.n && rc != GP_ENOMEM; b++) {
        const struct gp_st_mapped *m = &s->blocks.f[b];
        if (m->bf.maxt < mint || m->bf.mint > maxt)
            continue;
        struct gp_st_bentry e;
        for (uint32_t i = gp_st_bfile_lower(&m->bf, id); i < m->bf.n; i++) {
            gp_st_bfile_entry(&m->bf, i, &e);
            if (e.id != id || e.t_first > maxt)
                break;
            if (e.t_last < mint)
                continue;
            const uint8_t *p;
            k = gp_st_bfile_payload(&m->bf, &e, &p);
            if (k == GP_OK)
                k = emit_bchunk(&m->bf, p, e.len, mint, maxt, &last, out);
            if (k == GP_EPARSE) {
                gp_log(GP_LOG_ERROR, "store", "damaged chunk in a block; its samples skipped",
                       "file=%s id=%u t_first=%lld t_last=%lld", m->path, id,
                       (long long)e.t_first, (long long)e.t_last);
                note_damage(s, out, e.t_first, e.t_last);
            }
            rc = worse(rc, k);
        }
    }
    const struct gp_st_series *se = &s->ser[id];
    uint8_t buf[GP_ST_CHUNKREC_MAX];
    /* Chunk records are prefetched PREFETCH_AHEAD ahead of their read. */
    enum { PREFETCH_AHEAD = 8 };
    uint32_t pf = 0;
    for (uint32_t i = 0; i < se->nrefs && rc != GP_ENOMEM; i++) {
        const struct gp_st_ref *r = &se->refs[i];
        if (r->t_first > maxt)
            break;
        if (r->t_last < mint)
            continue;
        if (pf <= i)
            pf = i;
        for (; pf < se->nrefs && pf <= i + PREFETCH_AHEAD && se->refs[pf].t_first <= maxt; pf++)
            gp_st_chunk_prefetch(s, &se->refs[pf]);
        const uint8_t *p;
        size_t len;
        int packed;
        k = gp_st_chunk_read(s, r, buf, sizeof buf, &p, &len, &packed);
        if (k == GP_OK)
            k = emit_chunk(p, len, packed, mint, maxt, &last, out);
        if (k == GP_EPARSE) {
            gp_log(GP_LOG_ERROR, "store", "damaged chunk in a chunk file; its samples skipped",
                   "file=%u offset=%u id=%u", r->file, r->off, id);
            note_damage(s, out, r->t_first, r->t_last);
        }
        rc = worse(rc, k);
    }
    if (se->head.count && se->head.t_first <= maxt && se->head.t_last >= mint &&
        rc != GP_ENOMEM) {
        k = gp_st_hcache_emit(s, &s->ser[id], mint, maxt, &last, out);
        if (k == 1) {
            size_t len;
            const uint8_t *p = gp_chunk_bytes(&se->head, &len);
            k = emit_chunk(p, len, 0, mint, maxt, &last, out);
        }
        rc = worse(rc, k);
    }
    return rc;
}

int gp_store_read(struct gp_store *s, uint32_t id, int64_t mint, int64_t maxt, struct gp_samples *out)
{
    pthread_rwlock_rdlock(&s->lock);
    int rc = read_locked(s, id, mint, maxt, out);
    pthread_rwlock_unlock(&s->lock);
    return rc;
}

/* A minute folded from raw samples, as a rollup file would give it. */
static int push_minute(struct gp_rollups *out, struct gp_rollup *r)
{
    r->sum = gp_st_rollup_sum(r);
    return gp_st_rollups_push(out, r);
}

/* Rollups of [from, to] (whole minutes) computed from raw samples. */
static int raw_rollups(struct gp_store *s, uint32_t id, int64_t from, int64_t to,
                       struct gp_rollups *out)
{
    struct gp_samples x = {0};
    int rc = read_locked(s, id, from, to, &x);
    struct gp_rollup r = {.count = 0};
    for (size_t i = 0; i < x.n && rc != GP_ENOMEM; i++) {
        int64_t m = gp_st_floor(x.t[i], 60000);
        if (r.count && r.t != m) {
            if (push_minute(out, &r) != GP_OK)
                rc = GP_ENOMEM;
            r.count = 0;
        }
        r.t = m;
        gp_st_rollup_fold(&r, x.v[i]);
    }
    if (r.count && rc != GP_ENOMEM && push_minute(out, &r) != GP_OK)
        rc = GP_ENOMEM;
    if (x.damaged) {
        if (!out->damaged || x.damaged_from < out->damaged_from)
            out->damaged_from = x.damaged_from;
        if (!out->damaged || x.damaged_to > out->damaged_to)
            out->damaged_to = x.damaged_to;
        out->damaged += x.damaged;
    }
    gp_samples_free(&x);
    return rc;
}

int gp_store_read_rollups(struct gp_store *s, uint32_t id, int64_t mint, int64_t maxt,
                          struct gp_rollups *out)
{
    if (mint > maxt)
        return GP_OK;
    pthread_rwlock_rdlock(&s->lock);
    int rc = GP_OK;
    if (id == 0 || id >= s->ser_cap || !s->ser[id].exists)
        goto out;
    int64_t cursor = gp_st_floor(mint, 60000);
    int64_t end = gp_st_floor(maxt, 60000);
    end = end > INT64_MAX - 59999 ? INT64_MAX : end + 59999;
    for (size_t f = 0; f < s->rollups.n && rc != GP_ENOMEM; f++) {
        const struct gp_st_mapped *m = &s->rollups.f[f];
        if (m->bf.maxt < cursor)
            continue;
        if (m->bf.mint > end)
            break;
        if (m->bf.mint > cursor)
            rc = worse(rc, raw_rollups(s, id, cursor, m->bf.mint - 1, out));
        size_t before = out->n;
        struct gp_st_bentry e;
        int bad = 0;
        for (uint32_t i = gp_st_bfile_lower(&m->bf, id); i < m->bf.n && !bad; i++) {
            gp_st_bfile_entry(&m->bf, i, &e);
            if (e.id != id)
                break;
            const uint8_t *p;
            int k = gp_st_bfile_payload(&m->bf, &e, &p);
            if (k == GP_OK)
                k = gp_st_rollup_decode(&m->bf, p, e.len, mint, maxt, out);
            if (k == GP_ENOMEM) {
                rc = k;
                goto out;
            }
            bad = k != GP_OK;
        }
        if (bad) {
            /* Damaged: the block may still hold the raw samples. */
            gp_log(GP_LOG_ERROR, "store", "damaged rollup entry; computed from raw samples",
                   "file=%s id=%u", m->path, id);
            out->n = before;
            rc = worse(rc, GP_EPARSE);
            int64_t from = m->bf.mint > cursor ? m->bf.mint : cursor;
            rc = worse(rc, raw_rollups(s, id, from, m->bf.maxt < end ? m->bf.maxt : end, out));
        }
        cursor = m->bf.maxt + 1;
    }
    if (cursor <= end && rc != GP_ENOMEM)
        rc = worse(rc, raw_rollups(s, id, cursor, end, out));
out:
    pthread_rwlock_unlock(&s->lock);
    return rc;
}

/* Ids matching m (all existing series when nm is 0); caller frees *ids. */
static int select_ids(struct gp_store *s, const struct gp_matcher *m, size_t nm, uint32_t **ids,
                      size_t *n)
{
    if (nm > 0)
        return gp_sindex_select(s->idx, m, nm, ids, n);
    uint32_t max_id = gp_sindex_max_id(s->idx);
    *n = 0;
    *ids = malloc((max_id ? max_id : 1) * sizeof **ids);
    if (!*ids)
        return GP_ENOMEM;
    for (uint32_t id = 1; id <= max_id; id++)
        if (s->ser[id].exists)
            (*ids)[(*n)++] = id;
    return GP_OK;
}

/* Whether series se has a sample held in [mint, maxt] (selections' test). */
static int in_range(const struct gp_st_series *se, int64_t floor, int64_t mint, int64_t maxt)
{
    int64_t first = se->first > floor ? se->first : floor;
    return se->has_data && se->newest >= first && se->newest >= mint && first <= maxt;
}

int gp_store_select(struct gp_store *s, const struct gp_matcher *m, size_t nm, int64_t mint,
                    int64_t maxt, struct gp_store_selection *out)
{
    memset(out, 0, sizeof *out);
    pthread_rwlock_rdlock(&s->lock);
    uint32_t *ids = NULL;
    size_t n = 0, keep = 0, bytes = 0;
    int rc = select_ids(s, m, nm, &ids, &n);
    int64_t floor = gp_st_raw_floor(s);
    for (size_t i = 0; rc == GP_OK && i < n; i++) {
        if (!in_range(&s->ser[ids[i]], floor, mint, maxt))
            continue;
        size_t l;
        gp_sindex_labels(s->idx, ids[i], &l);
        bytes += l;
        ids[keep++] = ids[i];
    }
    if (rc == GP_OK && keep > 0) {
        size_t head = keep * sizeof(struct gp_store_series);
        uint8_t *arena = malloc(head + bytes);
        if (!arena) {
            rc = GP_ENOMEM;
        } else {
            struct gp_store_series *ss = (struct gp_store_series *)arena;
            uint8_t *lp = arena + head;
            for (size_t i = 0; i < keep; i++) {
                const struct gp_st_series *se = &s->ser[ids[i]];
                size_t l;
                const uint8_t *b = gp_sindex_labels(s->idx, ids[i], &l);
                memcpy(lp, b, l);
                ss[i] = (struct gp_store_series){
                    .id = ids[i],
                    .labels = lp,
                    .labels_len = l,
                    .first_ms = se->first > floor ? se->first : floor,
                    .last_ms = se->newest,
                };
                lp += l;
            }
            out->series = ss;
            out->n = keep;
            out->arena = arena;
        }
    }
    pthread_rwlock_unlock(&s->lock);
    free(ids);
    return rc;
}

void gp_store_selection_free(struct gp_store_selection *sel)
{
    if (!sel)
        return;
    free(sel->arena);
    memset(sel, 0, sizeof *sel);
}

int gp_store_select_each(struct gp_store *s, const struct gp_matcher *m, size_t nm, int64_t mint,
                         int64_t maxt, gp_store_series_fn fn, void *arg)
{
    pthread_rwlock_rdlock(&s->lock);
    uint32_t *ids = NULL;
    size_t n = 0;
    int rc = select_ids(s, m, nm, &ids, &n);
    int64_t floor = gp_st_raw_floor(s);
    for (size_t i = 0; rc == GP_OK && i < n; i++) {
        const struct gp_st_series *se = &s->ser[ids[i]];
        if (!in_range(se, floor, mint, maxt))
            continue;
        struct gp_store_series x = {.id = ids[i], .first_ms = se->first > floor ? se->first : floor,
                                    .last_ms = se->newest};
        if (fn(arg, &x)) {
            x.labels = gp_sindex_labels(s->idx, ids[i], &x.labels_len);
            fn(arg, &x);
        }
    }
    pthread_rwlock_unlock(&s->lock);
    free(ids);
    return rc;
}

int gp_store_label_names(struct gp_store *s, const struct gp_matcher *m, size_t nm,
                         void (*fn)(void *arg, const char *name, size_t len), void *arg)
{
    pthread_rwlock_rdlock(&s->lock);
    uint32_t *ids = NULL;
    size_t n = 0;
    int rc = GP_OK;
    if (nm == 0)
        rc = gp_sindex_label_names(s->idx, NULL, 0, fn, arg);
    else if ((rc = gp_sindex_select(s->idx, m, nm, &ids, &n)) == GP_OK && n > 0)
        rc = gp_sindex_label_names(s->idx, ids, n, fn, arg);
    pthread_rwlock_unlock(&s->lock);
    free(ids);
    return rc;
}

int gp_store_label_values(struct gp_store *s, const char *name, const struct gp_matcher *m,
                          size_t nm, void (*fn)(void *arg, const char *value, size_t len),
                          void *arg)
{
    pthread_rwlock_rdlock(&s->lock);
    uint32_t *ids = NULL;
    size_t n = 0;
    int rc = GP_OK;
    if (nm == 0)
        rc = gp_sindex_label_values(s->idx, name, NULL, 0, fn, arg);
    else if ((rc = gp_sindex_select(s->idx, m, nm, &ids, &n)) == GP_OK && n > 0)
        rc = gp_sindex_label_values(s->idx, name, ids, n, fn, arg);
    pthread_rwlock_unlock(&s->lock);
    free(ids);
    return rc;
}

/* The newest number of id in [mint, last_ms], or NaN. */
static double newest_in(struct gp_store *s, uint32_t id, int64_t mint, int64_t last_ms,
                        struct gp_samples *scratch)
{
    scratch->n = 0;
    int rc = gp_store_read(s, id, mint, last_ms, scratch);
    if (rc && rc != GP_EPARSE)
        return NAN;
    for (size_t i = scratch->n; i-- > 0;)
        if (!isnan(scratch->v[i]))
            return scratch->v[i];
    return NAN;
}

double gp_store_newest_value(struct gp_store *s, uint32_t id, int64_t last_ms, int64_t lookback_ms,
                             struct gp_samples *scratch)
{
    /* The newest sample, kept at ingest, answers without a decode when
     * it is the one asked about and a number (the fleet routes read
     * thousands of series per request). */
    double v = NAN;
    pthread_rwlock_rdlock(&s->lock);
    if (id < s->ser_cap && s->ser[id].exists && s->ser[id].has_data && s->ser[id].newest_known &&
        s->ser[id].newest == last_ms && last_ms >= gp_st_raw_floor(s))
        v = gp_bits_f64(s->ser[id].newest_bits);
    pthread_rwlock_unlock(&s->lock);
    if (!isnan(v)) {
        scratch->n = 0;
        return v;
    }
    /* Else the newest chunk nearly always holds it: a short window first
     * decodes that chunk alone, not every chunk of the lookback. */
    enum { NEAR_MS = 15000 };
    if (lookback_ms > NEAR_MS) {
        v = newest_in(s, id, last_ms - NEAR_MS, last_ms, scratch);
        if (!isnan(v))
            return v;
    }
    return newest_in(s, id, last_ms - lookback_ms, last_ms, scratch);
}

void gp_store_check_blocks(struct gp_store *s, uint64_t *chunks, uint64_t *damaged)
{
    *chunks = *damaged = 0;
    pthread_rwlock_rdlock(&s->lock);
    for (size_t b = 0; b < s->blocks.n; b++) {
        const struct gp_st_mapped *m = &s->blocks.f[b];
        struct gp_st_bentry e;
        for (uint32_t i = 0; i < m->bf.n; i++) {
            gp_st_bfile_entry(&m->bf, i, &e);
            const uint8_t *p;
            (*chunks)++;
            if (gp_st_bfile_payload(&m->bf, &e, &p) != GP_OK ||
                gp_st_bchunk_check_in(&m->bf, p, e.len) != GP_OK) {
                (*damaged)++;
                gp_log(GP_LOG_ERROR, "store", "damaged chunk in a block",
                       "file=%s id=%u t_first=%lld t_last=%lld", m->path, e.id,
                       (long long)e.t_first, (long long)e.t_last);
            }
        }
    }
    pthread_rwlock_unlock(&s->lock);
}
