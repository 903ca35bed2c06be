/*
 * head.c - the append path: from a decoded write request to samples in
 * the head chunks and one WAL batch, durable before gp_store_append
 * returns.
 *
 * Under the write lock, for each series of the request: encode its labels
 * into the canonical blob (a reused buffer), find it by hash, create it
 * when absent (up to max_series), then run each sample through the
 * ordering rules of store.h and append it to the series' open Gorilla
 * chunk. A chunk is cut when full or when a sample falls in another block
 * window than the chunk's first (so every chunk belongs to one window and
 * compaction never splits one); a cut chunk is written to the current
 * chunk file at once and remembered as a ref. Accepted samples and new
 * series are collected in reused arrays and appended to the WAL as one
 * batch. The lock is then dropped and the batch synced (group commit in
 * wal.c), so concurrent requests share fdatasyncs.
 *
 * The WAL is written after the head is updated: should that write fail,
 * the samples stay in memory unacknowledged and the store refuses every
 * later append (s->broken), since the log no longer covers the head,
 * until resume.c has made the whole head durable by a checkpoint.
 *
 * Time bounds: a sample older than the too-old floor (the store's clock
 * minus the raw retention, or a compacted window) or later than the
 * clock plus max_future_ms is refused and counted, never stored, so one
 * sender with a wrong clock cannot move windows other series need.
 */
#include "store/store_int.h"

#include "lib/clock.h"
#include "lib/bits.h"
#include "lib/err.h"
#include "lib/log.h"
#include "store/labels.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Per WAL batch: well under GP_SEG_MAX_RECORD (a sample costs <= 23 bytes). */
#define WAL_BATCH_SAMPLES (1u << 21)
#define WAL_BATCH_SERIES_BYTES (32u << 20)

struct gp_st_cfile *gp_st_cfile_find(struct gp_store *s, uint32_t num)
{
    size_t lo = 0, hi = s->ncf;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->cf[mid].num < num)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->ncf && s->cf[lo].num == num ? &s->cf[lo] : NULL;
}

int gp_st_ref_push(struct gp_store *s, uint32_t id, const struct gp_st_ref *r)
{
    struct gp_st_series *se = &s->ser[id];
    if (se->nrefs == se->caprefs) {
        uint32_t cap = se->caprefs ? se->caprefs * 2 : 4;
        struct gp_st_ref *p = realloc(se->refs, cap * sizeof *p);
        if (!p)
            return GP_ENOMEM;
        se->refs = p;
        se->caprefs = cap;
    }
    se->refs[se->nrefs++] = *r;
    struct gp_st_cfile *f = gp_st_cfile_find(s, r->file);
    if (f)
        f->live++;
    return GP_OK;
}

int gp_st_head_cut(struct gp_store *s, uint32_t id)
{
    struct gp_st_series *se = &s->ser[id];
    struct gp_chunk *c = &se->head;
    if (c->count == 0)
        return GP_OK;
    if (s->broken)
        return GP_EIO;
    size_t len;
    const uint8_t *bytes = gp_chunk_bytes(c, &len);
    if (gp_segw_size(s->cw) + GP_SEG_HEADER + GP_ST_CHUNKREC_HDR + len > GP_ST_CHUNK_FILE_MAX &&
        gp_st_chunks_rotate(s) != GP_OK) {
        gp_st_set_broken(s, "start a chunk file", errno);
        return GP_EIO;
    }
    /* Written in the block encoding where it is smaller (nearly always,
     * ~2.5x): a closed chunk is read many times, and that form decodes
     * ~40% faster. Gorilla otherwise, or when encoding fails (memory):
     * the record then still fits crec and the readers' buffers. */
    uint8_t type = GP_ST_REC_CHUNK;
    struct gp_chunk_iter it;
    int k = gp_chunk_iter_init(&it, bytes, len) == GP_OK
                ? gp_chunk_iter_decode(&it, s->cut_t, s->cut_v, GP_ST_HEAD_SAMPLES)
                : GP_EPARSE;
    gp_buf_reset(&s->cut_buf);
    if (k > 0 && gp_st_bchunk_encode(s->cut_t, s->cut_v, (size_t)k, &s->cut_sc, &s->cut_buf) == GP_OK &&
        s->cut_buf.len < len) {
        type = GP_ST_REC_PCHUNK;
        bytes = (const uint8_t *)s->cut_buf.data;
        len = s->cut_buf.len;
    }
    gp_st_chunkrec_header(s->crec, id, c->t_first, c->t_last);
    memcpy(s->crec + GP_ST_CHUNKREC_HDR, bytes, len);
    struct gp_st_ref r = {
        .file = s->cf[s->ncf - 1].num,
        .off = (uint32_t)gp_segw_size(s->cw),
        .t_first = c->t_first,
        .t_last = c->t_last,
    };
    size_t n = GP_ST_CHUNKREC_HDR + len;
    if (gp_segw_append(s->cw, type, s->crec, n) != GP_OK) {
        gp_st_set_broken(s, "write a chunk file", gp_segw_errno(s->cw));
        return GP_EIO;
    }
    s->cf[s->ncf - 1].size = gp_segw_size(s->cw);
    int rc = gp_st_ref_push(s, id, &r);
    if (rc != GP_OK)
        return rc; /* the record is written but unreferenced: the WAL still covers it */
    gp_st_hcache_drop(s, se);
    gp_chunk_reset(c);
    return GP_OK;
}

int gp_st_head_append(struct gp_store *s, uint32_t id, int64_t t, uint64_t bits)
{
    struct gp_st_series *se = &s->ser[id];
    struct gp_chunk *c = &se->head;
    int rc;
    if (c->count > 0 &&
        gp_st_floor(t, s->o.block_ms) != gp_st_floor(c->t_first, s->o.block_ms) &&
        (rc = gp_st_head_cut(s, id)) != GP_OK)
        return rc;
    rc = gp_chunk_append(c, t, gp_bits_f64(bits));
    if (rc == GP_ETOOBIG) {
        if ((rc = gp_st_head_cut(s, id)) != GP_OK)
            return rc;
        rc = gp_chunk_append(c, t, gp_bits_f64(bits));
    }
    if (rc != GP_OK)
        return rc == GP_ENOMEM ? GP_ENOMEM : GP_EIO;
    if (!se->has_data) {
        se->first = t;
        se->has_data = 1;
    }
    se->newest = t;
    se->newest_bits = bits;
    se->newest_known = 1;
    if (t > s->max_t)
        s->max_t = t;
    if (t < s->data_min)
        s->data_min = t;
    return GP_OK;
}

/* Appends the samples of a chunk (either form) to the duplicate cache. */
static void dup_add(struct gp_store *s, const uint8_t *p, size_t len, int packed)
{
    int64_t t[GP_ST_HEAD_SAMPLES];
    double v[GP_ST_HEAD_SAMPLES];
    size_t room = 2 * GP_ST_HEAD_SAMPLES - s->dup_n, got;
    gp_st_chunk_decode(p, len, packed, t, v, room < GP_ST_HEAD_SAMPLES ? room : GP_ST_HEAD_SAMPLES, &got);
    for (size_t i = 0; i < got; i++) {
        s->dup_t[s->dup_n] = t[i];
        s->dup_v[s->dup_n++] = gp_f64_bits(v[i]);
    }
}

/*
 * 1 when the series holds exactly (t, bits) in its head chunk or its
 * newest closed chunk: a sender retrying a request whose answer it lost.
 * Such a sample counts as a duplicate, not out of order, so a retry is
 * answered with success. Only on the out-of-order path; the two chunks
 * are decoded once per series per append (so a flood of old samples
 * costs a binary search each) unless the series grew since.
 */
static int stored_sample(struct gp_store *s, uint32_t id, const struct gp_st_series *se, int64_t t,
                         uint64_t bits)
{
    if (s->dup_id != id || (s->dup_n && t > s->dup_t[s->dup_n - 1])) {
        s->dup_id = id;
        s->dup_n = 0;
        uint8_t buf[GP_ST_CHUNKREC_MAX];
        const uint8_t *p;
        size_t len;
        int packed;
        if (se->nrefs &&
            gp_st_chunk_read(s, &se->refs[se->nrefs - 1], buf, sizeof buf, &p, &len, &packed) == GP_OK)
            dup_add(s, p, len, packed);
        if (se->head.count) {
            p = gp_chunk_bytes(&se->head, &len);
            dup_add(s, p, len, 0);
        }
    }
    size_t lo = 0, hi = s->dup_n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->dup_t[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->dup_n && s->dup_t[lo] == t && s->dup_v[lo] == bits;
}

/* Grows an append scratch array to hold n (allocation only when a request
 * is larger than every one before). */
static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n <= *cap)
        return GP_OK;
    size_t c = *cap ? *cap : 256;
    while (c < n)
        c *= 2;
    void *p = realloc(*arr, c * elem);
    if (!p)
        return GP_ENOMEM;
    *arr = p;
    *cap = c;
    return GP_OK;
}

/* Creates a series with the next id; records it for the WAL batch. */
static int create_series(struct gp_store *s, const uint8_t *blob, size_t len, uint64_t hash,
                         size_t nwser, uint32_t *id)
{
    int rc = gp_st_ser_reserve(s, gp_sindex_max_id(s->idx) + 1);
    if (rc == GP_OK)
        rc = grow((void **)&s->wser, &s->wser_cap, nwser + 1, sizeof *s->wser);
    if (rc == GP_OK)
        rc = gp_sindex_add(s->idx, blob, len, hash, 0, id);
    if (rc != GP_OK)
        return rc == GP_ENOMEM ? GP_ENOMEM : GP_EINTERNAL;
    struct gp_st_series *se = &s->ser[*id];
    memset(se, 0, sizeof *se);
    gp_chunk_init(&se->head, GP_ST_HEAD_BYTES, GP_ST_HEAD_SAMPLES);
    se->exists = 1;
    size_t l;
    s->wser[nwser] = (struct gp_wal_series){*id, gp_sindex_labels(s->idx, *id, &l), 0};
    s->wser[nwser].labels_len = l;
    return GP_OK;
}

/* Appends the collected batch to the WAL, split so no record is too big. */
static int wal_write(struct gp_store *s, size_t nwser, size_t nws, struct gp_wal_pos *pos)
{
    size_t i = 0, j = 0;
    while (i < nwser || j < nws) {
        size_t ni = 0, bytes = 0;
        while (i + ni < nwser && (ni == 0 || bytes < WAL_BATCH_SERIES_BYTES)) {
            bytes += s->wser[i + ni].labels_len + 10;
            ni++;
        }
        size_t nj = 0;
        if (i + ni == nwser) /* the samples follow the last series record */
            nj = nws - j < WAL_BATCH_SAMPLES ? nws - j : WAL_BATCH_SAMPLES;
        int rc = gp_wal_append(s->wal, ni ? s->wser + i : NULL, ni, nj ? s->ws + j : NULL, nj, pos);
        if (rc != GP_OK)
            return rc;
        i += ni;
        j += nj;
    }
    return GP_OK;
}

/* Counts a sample refused for its time; remembers the first future one. */
static void time_reject(struct gp_append_result *res, size_t series, int64_t t, int64_t floor)
{
    if (t >= floor) {
        if (res->too_far_in_future++ == 0) {
            res->future_series = series;
            res->future_t_ms = t;
        }
    } else {
        res->too_old++;
    }
}

int gp_store_append(struct gp_store *s, const struct gp_batch *req,
                    struct gp_append_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    if (!s || !req)
        return gp_seterr(err, errlen, GP_EUSAGE, "store append: no store or request");
    pthread_rwlock_wrlock(&s->lock);
    if (s->broken) {
        int rc = gp_seterr(err, errlen, GP_EIO,
                           "store: writes paused since a write error (%s); retrying every second",
                           s->broken_why);
        pthread_rwlock_unlock(&s->lock);
        return rc;
    }
    int64_t now = gp_st_now(s);
    res->now_ms = now;
    int64_t floor = now - s->o.retention_raw_ms;
    /* max_future_ms < 0: no bound but the store's own limit. */
    int64_t ceil = s->o.max_future_ms < 0 || now > GP_ST_T_LIMIT - s->o.max_future_ms
                       ? GP_ST_T_LIMIT
                       : now + s->o.max_future_ms;
    if (floor < s->compacted_until)
        floor = s->compacted_until;
    if (floor < -GP_ST_T_LIMIT)
        floor = -GP_ST_T_LIMIT;
    s->dup_id = 0;
    size_t nws = 0, nwser = 0, total = 0;
    for (size_t i = 0; i < req->nseries; i++)
        total += req->series[i].nsamples; /* not trusting nsamples_total */
    int rc = grow((void **)&s->ws, &s->ws_cap, total, sizeof *s->ws);
    for (size_t i = 0; rc == GP_OK && i < req->nseries; i++) {
        const struct gp_series *rs = &req->series[i];
        if (rs->nsamples == 0)
            continue;
        gp_buf_reset(&s->lbuf);
        int lrc = gp_labels_encode(rs->labels, rs->nlabels, &s->lbuf);
        if (lrc != GP_OK || s->lbuf.len == 0) {
            rc = lrc == GP_ENOMEM ? GP_ENOMEM : GP_EUSAGE;
            gp_seterr(err, errlen, rc, "store append: series %zu: labels not canonical", i);
            break;
        }
        const uint8_t *blob = (const uint8_t *)s->lbuf.data;
        uint64_t hash = gp_labels_hash(blob, s->lbuf.len);
        uint32_t id = gp_sindex_find(s->idx, blob, s->lbuf.len, hash);
        if (id == 0) {
            int fresh = 0;
            for (size_t k = 0; k < rs->nsamples && !fresh; k++)
                fresh = rs->samples[k].timestamp_ms >= floor && rs->samples[k].timestamp_ms <= ceil;
            if (!fresh) { /* nothing to store: no series for it either */
                for (size_t k = 0; k < rs->nsamples; k++)
                    time_reject(res, i, rs->samples[k].timestamp_ms, floor);
                continue;
            }
            if (gp_sindex_count(s->idx) >= s->o.max_series) {
                res->series_limit += rs->nsamples;
                continue;
            }
            if ((rc = create_series(s, blob, s->lbuf.len, hash, nwser, &id)) != GP_OK) {
                gp_seterr(err, errlen, rc, "store append: cannot create a series");
                break;
            }
            nwser++;
            res->series_created++;
        }
        struct gp_st_series *se = &s->ser[id];
        for (size_t k = 0; k < rs->nsamples; k++) {
            int64_t t = rs->samples[k].timestamp_ms;
            uint64_t bits = gp_f64_bits(rs->samples[k].value);
            if (t < floor || t > ceil) {
                time_reject(res, i, t, floor);
            } else if (se->has_data && t <= se->newest) {
                if (t == se->newest)
                    *(bits == se->newest_bits ? &res->duplicate : &res->conflict) += 1;
                else if (stored_sample(s, id, se, t, bits))
                    res->duplicate++;
                else
                    res->out_of_order++;
            } else if ((rc = gp_st_head_append(s, id, t, bits)) != GP_OK) {
                if (s->broken) /* a chunk file's write failed: say which and why */
                    gp_seterr(err, errlen, rc, "store: %s; writes paused", s->broken_why);
                else
                    gp_seterr(err, errlen, rc, "store append: %s", gp_strerror(rc));
                break;
            } else {
                s->ws[nws++] = (struct gp_wal_sample){id, t, bits};
                res->accepted++;
            }
        }
    }
    /* What was accepted goes to the WAL even when a later step failed. */
    struct gp_wal_pos pos = {0, 0, 0};
    int wrc = GP_OK;
    int need_sync = nws || nwser;
    if (nws || nwser) {
        wrc = wal_write(s, nwser, nws, &pos);
        if (wrc != GP_OK)
            gp_st_set_broken(s, "append to the WAL", gp_wal_errno(s->wal));
    } else if (res->duplicate) {
        /* A retry's duplicates may be of a batch whose sync still runs:
         * "stored" only once that is durable too. */
        gp_wal_end(s->wal, &pos);
        need_sync = 1;
    }
    s->samples_appended += res->accepted;
    s->rej_ooo += res->out_of_order;
    s->rej_conflict += res->conflict;
    s->rej_too_old += res->too_old;
    s->rej_limit += res->series_limit;
    s->rej_future += res->too_far_in_future;
    s->duplicates += res->duplicate;
    pthread_rwlock_unlock(&s->lock);

    if (wrc == GP_OK && need_sync)
        wrc = gp_wal_sync(s->wal, &pos);
    if (wrc != GP_OK) {
        pthread_rwlock_wrlock(&s->lock);
        gp_st_set_broken(s, "sync the WAL", gp_wal_errno(s->wal));
        int rc2 = gp_seterr(err, errlen, GP_EIO, "store: %s; writes paused",
                            s->broken_why);
        pthread_rwlock_unlock(&s->lock);
        return rc2;
    }
    return rc;
}
