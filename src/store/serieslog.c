/*
 * serieslog.c - series.log, the second copy of the series registry.
 *
 * meta.db is the registry the store loads; series.log is an append-only
 * journal of the same (id, canonical labels) pairs in the segment record
 * format (segment.h: length, CRC-32C, type, payload), so that damage to
 * either copy is rebuilt from the other and no series loses its labels
 * (block indexes, chunk files and head.snap hold ids only). One record per
 * series:
 *
 *     type 1 (GP_ST_SLOG_SERIES)  u32 LE id, then the labels blob
 *
 * Invariant: series.log holds every series meta.db holds. A checkpoint
 * appends and syncs the new series here before it commits them to
 * meta.db (persist.c), so a crash between the two leaves the journal a
 * superset, which the next start reconciles (meta.c). A torn tail (a crash
 * mid-append) is cut when the appender opens; a bad record with valid ones
 * after it is damage: the file is set aside and rewritten from the
 * registry. Records are only ever appended, or the whole file is replaced
 * by an atomic rewrite (tmp, sync, rename, sync the directory), so the
 * journal never holds less than it did.
 *
 * Cost: the labels' bytes once more on disk (plus 13 bytes a series) and
 * one fdatasync per checkpoint that registers new series.
 */
#include "store/store_int.h"

#include "lib/bits.h"
#include "lib/err.h"
#include "lib/log.h"
#include "store/labels.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SLOG_NAME "series.log"
#define SLOG_TMP "series.log.tmp"

int gp_st_slog_parse(const uint8_t *buf, size_t len,
                     int (*fn)(void *ctx, const struct gp_wal_series *ws), void *ctx,
                     struct gp_st_slog_stats *st)
{
    memset(st, 0, sizeof *st);
    size_t pos = 0;
    for (;;) {
        uint8_t type;
        const uint8_t *p;
        size_t n;
        int r = gp_seg_parse(buf, len, &pos, &type, &p, &n);
        if (r == 0)
            break;
        if (r != 1) {
            /* A torn tail unless a valid record follows: then damage. */
            size_t next = gp_seg_resync(buf, len, pos, 1u << GP_ST_SLOG_SERIES);
            if (next >= len) {
                st->torn_bytes = len - pos;
                break;
            }
            st->bad_records++;
            pos = next;
            continue;
        }
        uint32_t id = n >= 4 ? gp_get_le32(p) : 0;
        if (type != GP_ST_SLOG_SERIES || id == 0 ||
            gp_labels_validate(p + 4, n - 4) != GP_OK) {
            st->bad_records++;
            continue;
        }
        st->records++;
        if (id > st->max_id)
            st->max_id = id;
        int rc = fn ? fn(ctx, &(struct gp_wal_series){id, p + 4, n - 4}) : 0;
        if (rc)
            return rc;
    }
    return GP_OK;
}

int gp_st_slog_read(const struct gp_store *s, struct gp_seg_file *f,
                    int (*fn)(void *ctx, const struct gp_wal_series *ws), void *ctx,
                    struct gp_st_slog_stats *st, char *err, size_t errlen)
{
    memset(st, 0, sizeof *st);
    char *path = gp_st_path(s->dir, SLOG_NAME);
    if (!path)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    int rc = gp_seg_read_file(path, f, err, errlen);
    free(path);
    if (rc != GP_OK)
        return rc;
    return gp_st_slog_parse(f->data, f->len, fn, ctx, st);
}

/* Appends n series; syncs unless the store runs without syncs. */
static int append_list(struct gp_store *s, struct gp_segw *w, const struct gp_wal_series *list,
                       size_t n)
{
    enum { BATCH = 64 };
    struct gp_seg_rec recs[BATCH];
    uint8_t *bufs[BATCH] = {0};
    int rc = GP_OK;
    for (size_t i = 0; i < n && rc == GP_OK; i += BATCH) {
        size_t k = n - i < BATCH ? n - i : BATCH;
        for (size_t j = 0; j < k; j++) {
            const struct gp_wal_series *ws = &list[i + j];
            uint8_t *b = malloc(4 + ws->labels_len);
            if (!b) {
                rc = GP_ENOMEM;
                k = j;
                break;
            }
            gp_put_le32(b, ws->id);
            memcpy(b + 4, ws->labels, ws->labels_len);
            bufs[j] = b;
            recs[j] = (struct gp_seg_rec){GP_ST_SLOG_SERIES, b, 4 + ws->labels_len};
        }
        if (rc == GP_OK)
            rc = gp_segw_appendv(w, recs, k);
        for (size_t j = 0; j < k; j++) {
            free(bufs[j]);
            bufs[j] = NULL;
        }
    }
    if (rc == GP_OK && !s->o.no_sync)
        rc = gp_segw_sync(w);
    return rc;
}

int gp_st_slog_open(struct gp_store *s, char *err, size_t errlen)
{
    char *path = gp_st_path(s->dir, SLOG_NAME);
    if (!path)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    uint64_t cut = 0;
    int rc = gp_segw_open(&s->slog, path, &cut, err, errlen);
    if (rc == GP_OK && cut)
        gp_log(GP_LOG_WARN, "store",
               "series.log: torn record at the end cut off (a crash mid-append)",
               "file=%s bytes=%llu", path, (unsigned long long)cut);
    free(path);
    return rc;
}

int gp_st_slog_append(struct gp_store *s, const struct gp_wal_series *list, size_t n, char *err,
                      size_t errlen)
{
    /* Closed after a failed sync: reopening scans the file and cuts it
     * after its last whole record; what the failed checkpoints did not
     * commit to meta.db comes again with the next one. */
    int rc = s->slog ? GP_OK : gp_st_slog_open(s, err, errlen);
    if (rc != GP_OK)
        return rc;
    rc = append_list(s, s->slog, list, n);
    if (rc == GP_ENOMEM)
        return gp_seterr(err, errlen, rc, "out of memory");
    if (rc != GP_OK) {
        int e = gp_segw_errno(s->slog);
        /* A latched appender stays unusable until it is cut back. */
        if (gp_segw_repair(s->slog) != GP_OK)
            gp_st_slog_close(s);
        return gp_seterr(err, errlen, GP_EIO, "%s", e ? strerror(e) : gp_strerror(rc));
    }
    return GP_OK;
}

int gp_st_slog_rewrite(struct gp_store *s, char *err, size_t errlen)
{
    gp_st_slog_close(s);
    char *tmp = gp_st_path(s->dir, SLOG_TMP), *path = gp_st_path(s->dir, SLOG_NAME);
    uint32_t max = gp_sindex_max_id(s->idx);
    struct gp_wal_series *list = malloc((gp_sindex_count(s->idx) + 1) * sizeof *list);
    int rc = GP_OK;
    if (!tmp || !path || !list) {
        rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        goto out;
    }
    size_t n = 0;
    for (uint32_t id = 1; id <= max && id < s->ser_cap; id++) {
        size_t l;
        const uint8_t *b = s->ser[id].exists ? gp_sindex_labels(s->idx, id, &l) : NULL;
        if (b)
            list[n++] = (struct gp_wal_series){id, b, l};
    }
    unlink(tmp);
    struct gp_segw *w = NULL;
    if ((rc = gp_segw_open(&w, tmp, NULL, err, errlen)) != GP_OK)
        goto out;
    rc = append_list(s, w, list, n);
    int e = gp_segw_errno(w);
    gp_segw_close(w);
    if (rc != GP_OK) {
        unlink(tmp);
        rc = gp_seterr(err, errlen, rc, "write %s: %s", SLOG_TMP,
                       rc == GP_ENOMEM ? "out of memory" : strerror(e ? e : EIO));
        goto out;
    }
    if (rename(tmp, path) != 0 || (!s->o.no_sync && gp_fsync_dir(s->dir) != GP_OK)) {
        rc = gp_seterr(err, errlen, GP_EIO, "rename %s to %s: %s", SLOG_TMP, SLOG_NAME,
                       strerror(errno));
        unlink(tmp);
        goto out;
    }
    rc = gp_st_slog_open(s, err, errlen);
out:
    free(list);
    free(tmp);
    free(path);
    return rc;
}

void gp_st_slog_close(struct gp_store *s)
{
    gp_segw_close(s->slog);
    s->slog = NULL;
}

uint64_t gp_st_slog_bytes(const struct gp_store *s)
{
    /* stat, not the appender: stats run outside maint. */
    char *p = gp_st_path(s->dir, SLOG_NAME);
    struct stat st;
    uint64_t n = p && stat(p, &st) == 0 ? (uint64_t)st.st_size : 0;
    free(p);
    return n;
}
