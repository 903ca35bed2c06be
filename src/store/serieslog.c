/*
 * serieslog.c - series.log, the second copy of the series registry.
 *
 * meta.db is the registry the store loads; series.log is an append-only
 * journal of the same (id, canonical labels) pairs in the segment record
 * format (segment.h: length, CRC-32C, type, payload), so that damage to
 * either copy is rebuilt from the other and no series loses its labels
 * (block indexes, chunk files and head.snap hold ids only). Labels are
 * kept by reference to the store's symbols (symtab.h), each defined once
 * in the file before the first series that uses it:
 *
 *     type 2 (GP_ST_SLOG_SYMBOLS)  uvarint first number, uvarint count,
 *                                  count x { uvarint length, bytes }
 *     type 3 (GP_ST_SLOG_REFS)     repeated { uvarint id, uvarint nlabels,
 *                                  nlabels x { uvarint name, uvarint value } }
 *
 * A checkpoint appends the symbols above sym_slog, then its series, up to
 * 4 KiB a record. A symbol defined twice (a torn append done again) is
 * the same bytes or damage. Files of older versions hold one record per
 * series, type 1 (GP_ST_SLOG_SERIES: u32 LE id, then the labels blob):
 * still read; the store rewrites such a file in the new form at start
 * (meta.c). A damaged symbol record makes the series that use it
 * unreadable here: the file is then damaged and rebuilt from meta.db like
 * any other damage.
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
 * Cost: ~25 bytes a series of dcgm-exporter's labels (260 before the
 * symbols) and one fdatasync per checkpoint that registers new series.
 */
#include "store/store_int.h"

#include "lib/bits.h"
#include "lib/err.h"
#include "lib/log.h"
#include "lib/varint.h"
#include "store/labels.h"
#include "store/symtab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SLOG_NAME "series.log"
#define SLOG_TMP "series.log.tmp"

/* The series of a REFS record, each decoded through syms. */
static int parse_refs(const uint8_t *p, size_t n, const struct gp_st_syms *syms,
                      struct gp_buf *lb, int (*fn)(void *ctx, const struct gp_wal_series *ws),
                      void *ctx, struct gp_st_slog_stats *st)
{
    const uint8_t *q = p, *end = p + n;
    if (q == end)
        st->bad_records++;
    while (q < end) {
        uint64_t id;
        gp_buf_reset(lb);
        int rc = gp_uvarint_get(&q, end, &id);
        if (rc == GP_OK)
            rc = id == 0 || id > UINT32_MAX ? GP_EPARSE : gp_st_syms_decode(syms, &q, end, lb);
        if (rc == GP_ENOMEM)
            return rc;
        if (rc != GP_OK)
            st->bad_records++;
        if (rc == GP_EPARSE)
            break; /* the rest of the record cannot be framed */
        if (rc != GP_OK)
            continue;
        st->records++;
        if (id > st->max_id)
            st->max_id = (uint32_t)id;
        rc = fn ? fn(ctx, &(struct gp_wal_series){(uint32_t)id, (const uint8_t *)lb->data,
                                                  lb->len})
                : 0;
        if (rc)
            return rc;
    }
    return GP_OK;
}

int gp_st_slog_parse(const uint8_t *buf, size_t len, struct gp_st_syms *syms,
                     int (*fn)(void *ctx, const struct gp_wal_series *ws), void *ctx,
                     struct gp_st_slog_stats *st)
{
    memset(st, 0, sizeof *st);
    /* A symbol takes two bytes at least: no valid file numbers more. */
    uint32_t limit = len < UINT32_MAX - 1 ? (uint32_t)len : UINT32_MAX - 1;
    const uint32_t types =
        1u << GP_ST_SLOG_SERIES | 1u << GP_ST_SLOG_SYMBOLS | 1u << GP_ST_SLOG_REFS;
    struct gp_buf lb;
    gp_buf_init(&lb, GP_ST_SYM_MAX * 8u);
    size_t pos = 0;
    int rc = GP_OK;
    while (rc == GP_OK) {
        uint8_t type;
        const uint8_t *p;
        size_t n;
        int r = gp_seg_parse(buf, len, &pos, &type, &p, &n);
        if (r == 0)
            break;
        if (r != 1) {
            /* A torn tail unless a valid record follows: then damage. */
            size_t next = gp_seg_resync(buf, len, pos, types);
            if (next >= len) {
                st->torn_bytes = len - pos;
                break;
            }
            st->bad_records++;
            pos = next;
            continue;
        }
        if (type == GP_ST_SLOG_SYMBOLS) {
            rc = gp_st_syms_parse_range(syms, p, n, limit);
            if (rc == GP_EPARSE)
                st->bad_records++;
            rc = rc == GP_ENOMEM ? rc : GP_OK;
            continue;
        }
        if (type == GP_ST_SLOG_REFS) {
            rc = parse_refs(p, n, syms, &lb, fn, ctx, st);
            continue;
        }
        uint32_t id = n >= 4 ? gp_get_le32(p) : 0;
        if (type != GP_ST_SLOG_SERIES || id == 0 ||
            gp_labels_validate(p + 4, n - 4) != GP_OK) {
            st->bad_records++;
            continue;
        }
        st->records++;
        st->old_records++;
        if (id > st->max_id)
            st->max_id = id;
        rc = fn ? fn(ctx, &(struct gp_wal_series){id, p + 4, n - 4}) : 0;
    }
    gp_buf_free(&lb);
    return rc;
}

int gp_st_slog_read(const struct gp_store *s, struct gp_seg_file *f, struct gp_st_syms *syms,
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
    return gp_st_slog_parse(f->data, f->len, syms, fn, ctx, st);
}

#define SLOG_RECORD (4u << 10) /* payload bytes a record aims at: damage costs one */

/* Records cut from one buffer: where each payload ends. */
struct cuts {
    size_t *end;
    size_t n, cap;
};

static int cut(struct cuts *c, size_t end)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        size_t *e = realloc(c->end, cap * sizeof *e);
        if (!e)
            return GP_ENOMEM;
        c->end = e;
        c->cap = cap;
    }
    c->end[c->n++] = end;
    return GP_OK;
}

/* Appends the symbols above *sym_done, then n series, and syncs unless
 * the store runs without syncs; *sym_done moves on once that is done. */
static int append_list(struct gp_store *s, struct gp_segw *w, const struct gp_wal_series *list,
                       size_t n, uint32_t *sym_done)
{
    struct gp_buf sb, yb; /* series, symbols */
    gp_buf_init(&sb, SIZE_MAX / 2);
    gp_buf_init(&yb, SIZE_MAX / 2);
    struct cuts sc = {0}, yc = {0};
    struct gp_seg_rec *recs = NULL;
    int rc = GP_OK;
    /* The series first: encoding gives new strings their numbers. */
    size_t start = 0;
    for (size_t i = 0; i < n && rc == GP_OK; i++) {
        gp_buf_put_uvarint(&sb, list[i].id);
        rc = gp_st_syms_encode(&s->syms, list[i].labels, list[i].labels_len, &sb);
        if (rc == GP_OK && (sb.len - start >= SLOG_RECORD || i + 1 == n))
            rc = cut(&sc, start = sb.len);
    }
    for (uint32_t from = *sym_done; rc == GP_OK && from < s->syms.n;) {
        from = gp_st_syms_put_range(&s->syms, from, s->syms.n, SLOG_RECORD, &yb);
        rc = yb.err ? yb.err : cut(&yc, yb.len);
    }
    size_t nrec = yc.n + sc.n;
    if (rc == GP_OK && !(recs = malloc((nrec ? nrec : 1) * sizeof *recs)))
        rc = GP_ENOMEM;
    if (rc == GP_OK) {
        for (size_t i = 0; i < yc.n; i++) {
            size_t from = i ? yc.end[i - 1] : 0;
            recs[i] = (struct gp_seg_rec){GP_ST_SLOG_SYMBOLS, yb.data + from, yc.end[i] - from};
        }
        for (size_t i = 0; i < sc.n; i++) {
            size_t from = i ? sc.end[i - 1] : 0;
            recs[yc.n + i] = (struct gp_seg_rec){GP_ST_SLOG_REFS, sb.data + from, sc.end[i] - from};
        }
        rc = gp_segw_appendv(w, recs, nrec);
    }
    if (rc == GP_OK && !s->o.no_sync)
        rc = gp_segw_sync(w);
    if (rc == GP_OK)
        *sym_done = s->syms.n;
    if (rc == GP_EPARSE)
        rc = GP_EUSAGE; /* the registry holds valid labels only */
    free(recs);
    free(sc.end);
    free(yc.end);
    gp_buf_free(&sb);
    gp_buf_free(&yb);
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
    rc = append_list(s, s->slog, list, n, &s->sym_slog);
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
    size_t n;
    struct gp_wal_series *list = gp_st_meta_list(s, &n);
    int rc = GP_OK;
    if (!tmp || !path || !list) {
        rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        goto out;
    }
    unlink(tmp);
    struct gp_segw *w = NULL;
    if ((rc = gp_segw_open(&w, tmp, NULL, err, errlen)) != GP_OK)
        goto out;
    uint32_t done = 0; /* a new file: every symbol */
    rc = append_list(s, w, list, n, &done);
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
    s->sym_slog = done;
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
