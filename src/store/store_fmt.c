/*
 * store_fmt.c - the store's on-disk formats (store_fmt.h): chunk record
 * payloads, the head snapshot, the block/rollup container and rollup
 * payloads.
 *
 * Parsers here only read the bytes they were given and check every
 * length and offset before use; they are what the fuzz targets drive.
 * The container writer is the one piece that touches a file: it buffers
 * payloads into 1 MiB writes and keeps the index in memory until finish.
 */
#include "store/store_fmt.h"

#include "lib/bits.h"
#include "lib/crc32c.h"
#include "lib/err.h"
#include "lib/varint.h"
#include "store/segment.h"

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char bf_magic[8] = {'G', 'P', 'S', 'T', 'O', 'R', 'E', '1'};
static const char bf_end[8] = {'G', 'P', 'S', 'T', 'E', 'N', 'D', '1'};

#define WBUF (1u << 20)

/* ---- chunk records ---- */

void gp_st_chunkrec_header(uint8_t out[GP_ST_CHUNKREC_HDR], uint32_t id, int64_t t_first,
                           int64_t t_last)
{
    gp_put_le32(out, id);
    gp_put_le64(out + 4, (uint64_t)t_first);
    gp_put_le64(out + 12, (uint64_t)t_last);
}

int gp_st_chunkrec_parse(uint8_t type, const uint8_t *p, size_t n, uint32_t *id, int64_t *t_first,
                         int64_t *t_last, const uint8_t **chunk, size_t *len)
{
    if (n < GP_ST_CHUNKREC_HDR + 2 || (type != GP_ST_REC_CHUNK && type != GP_ST_REC_PCHUNK))
        return GP_EPARSE;
    *id = gp_get_le32(p);
    *t_first = (int64_t)gp_get_le64(p + 4);
    *t_last = (int64_t)gp_get_le64(p + 12);
    *chunk = p + GP_ST_CHUNKREC_HDR;
    *len = n - GP_ST_CHUNKREC_HDR;
    size_t count = 0;
    if (type == GP_ST_REC_CHUNK)
        count = (unsigned)(*chunk)[0] << 8 | (*chunk)[1];
    else if (gp_st_bchunk_count(*chunk, *len, &count) != GP_OK)
        return GP_EPARSE;
    if (*id == 0 || *t_first > *t_last || count == 0)
        return GP_EPARSE;
    return GP_OK;
}

/* ---- head snapshot ---- */

void gp_st_snap_header_encode(uint8_t out[GP_ST_SNAP_HEADER_LEN], const struct gp_st_snap_header *h)
{
    gp_put_le32(out, h->version);
    gp_put_le32(out + 4, h->wal_segment);
    gp_put_le32(out + 8, h->chunk_file);
    gp_put_le32(out + 12, h->max_id);
    gp_put_le64(out + 16, (uint64_t)h->compacted_until);
    gp_put_le64(out + 24, (uint64_t)h->max_t);
}

void gp_st_snap_series_encode(uint8_t out[GP_ST_SNAP_SERIES_HDR], uint32_t id, int64_t first,
                              int64_t newest, uint64_t newest_bits)
{
    gp_put_le32(out, id);
    gp_put_le64(out + 4, (uint64_t)first);
    gp_put_le64(out + 12, (uint64_t)newest);
    gp_put_le64(out + 20, newest_bits);
    memset(out + 28, 0, 8); /* reserved */
}

size_t gp_st_snap_packed_put(uint8_t *out, uint32_t prev_id, uint32_t id, int64_t first,
                             int64_t newest, uint64_t newest_bits, int64_t max_t)
{
    uint8_t *p = gp_uvarint_put(out, id - prev_id);
    p = gp_uvarint_put(p, gp_zigzag((uint64_t)max_t - (uint64_t)newest));
    p = gp_uvarint_put(p, (uint64_t)newest - (uint64_t)first);
    gp_put_le64(p, newest_bits);
    return (size_t)(p + 8 - out);
}

/* Calls fn for each entry of a packed record; *count adds them. */
static int snap_packed(const uint8_t *p, size_t n, const struct gp_st_snap_header *h,
                       int (*fn)(void *arg, const struct gp_st_snap_series *s), void *arg,
                       uint64_t *count)
{
    const uint8_t *end = p + n;
    uint64_t id = 0;
    if (n == 0)
        return GP_EPARSE;
    while (p < end) {
        uint64_t d, zz, span;
        if (gp_uvarint_get(&p, end, &d) || gp_uvarint_get(&p, end, &zz) ||
            gp_uvarint_get(&p, end, &span) || end - p < 8 || d == 0 || d > h->max_id - id)
            return GP_EPARSE;
        id += d;
        struct gp_st_snap_series s = {.id = (uint32_t)id, .newest_bits = gp_get_le64(p)};
        p += 8;
        /* Unsigned arithmetic: any bytes give some times, never overflow. */
        s.newest = (int64_t)((uint64_t)h->max_t - gp_unzigzag(zz));
        s.first = (int64_t)((uint64_t)s.newest - span);
        if (s.first > s.newest)
            return GP_EPARSE;
        (*count)++;
        int rc = fn ? fn(arg, &s) : 0;
        if (rc)
            return rc;
    }
    return GP_OK;
}

int gp_st_snap_parse(const uint8_t *buf, size_t len, struct gp_st_snap_header *h,
                     int (*fn)(void *arg, const struct gp_st_snap_series *s), void *arg, char *err,
                     size_t errlen)
{
    size_t pos = 0, n;
    uint8_t type;
    const uint8_t *p;
    uint64_t nseries = 0;
    int rc = gp_seg_parse(buf, len, &pos, &type, &p, &n);
    if (rc != 1 || type != GP_ST_SNAP_HEADER || n != GP_ST_SNAP_HEADER_LEN)
        return gp_seterr(err, errlen, GP_EPARSE, "snapshot: no valid header record");
    h->version = gp_get_le32(p);
    h->wal_segment = gp_get_le32(p + 4);
    h->chunk_file = gp_get_le32(p + 8);
    h->max_id = gp_get_le32(p + 12);
    h->compacted_until = (int64_t)gp_get_le64(p + 16);
    h->max_t = (int64_t)gp_get_le64(p + 24);
    if (h->version < GP_ST_FORMAT_VERSION || h->version > GP_ST_SNAP_VERSION)
        return gp_seterr(err, errlen, GP_EPARSE, "snapshot: format version %u, expected %u to %u",
                         h->version, GP_ST_FORMAT_VERSION, GP_ST_SNAP_VERSION);
    for (;;) {
        size_t at = pos;
        rc = gp_seg_parse(buf, len, &pos, &type, &p, &n);
        if (rc != 1)
            return gp_seterr(err, errlen, GP_EPARSE,
                             "snapshot: %s at byte %zu before the end record",
                             rc == 0 ? "file ends" : "damaged record", at);
        if (type == GP_ST_SNAP_END) {
            if (n != 8 || gp_get_le64(p) != nseries)
                return gp_seterr(err, errlen, GP_EPARSE, "snapshot: end record does not match");
            if (pos != len)
                return gp_seterr(err, errlen, GP_EPARSE, "snapshot: bytes after the end record");
            return GP_OK;
        }
        if (type == GP_ST_SNAP_PACKED && h->version >= 2) {
            rc = snap_packed(p, n, h, fn, arg, &nseries);
            if (rc == GP_EPARSE)
                return gp_seterr(err, errlen, rc, "snapshot: bad packed record at byte %zu", at);
            if (rc)
                return rc;
            continue;
        }
        if (type != GP_ST_SNAP_SERIES || n < GP_ST_SNAP_SERIES_HDR)
            return gp_seterr(err, errlen, GP_EPARSE, "snapshot: unexpected record at byte %zu", at);
        struct gp_st_snap_series s = {
            .id = gp_get_le32(p),
            .first = (int64_t)gp_get_le64(p + 4),
            .newest = (int64_t)gp_get_le64(p + 12),
            .newest_bits = gp_get_le64(p + 20),
            .chunk = n > GP_ST_SNAP_SERIES_HDR ? p + GP_ST_SNAP_SERIES_HDR : NULL,
            .len = n - GP_ST_SNAP_SERIES_HDR,
        };
        if (s.id == 0 || s.id > h->max_id || s.first > s.newest || s.len == 1)
            return gp_seterr(err, errlen, GP_EPARSE, "snapshot: bad series record at byte %zu", at);
        nseries++;
        if (fn && (rc = fn(arg, &s)) != 0)
            return rc;
    }
}

/* ---- block / rollup container ---- */

int gp_st_bfile_parse(const uint8_t *data, size_t len, struct gp_st_bfile *bf, char *err,
                      size_t errlen)
{
    memset(bf, 0, sizeof *bf);
    if (len < GP_ST_BF_HEADER + GP_ST_BF_FOOTER)
        return gp_seterr(err, errlen, GP_EPARSE, "file of %zu bytes is too short", len);
    if (memcmp(data, bf_magic, 8) != 0)
        return gp_seterr(err, errlen, GP_EPARSE, "bad magic");
    uint32_t version = gp_get_le32(data + 8);
    if (version < 1 || version > GP_ST_BLOCK_VERSION)
        return gp_seterr(err, errlen, GP_EPARSE, "format version %u, expected 1 to %u", version,
                         GP_ST_BLOCK_VERSION);
    bf->kind = gp_get_le32(data + 12);
    bf->mint = (int64_t)gp_get_le64(data + 16);
    bf->maxt = (int64_t)gp_get_le64(data + 24);
    if ((bf->kind != GP_ST_BF_BLOCK && bf->kind != GP_ST_BF_ROLLUP) || bf->mint > bf->maxt)
        return gp_seterr(err, errlen, GP_EPARSE, "bad header");
    const uint8_t *f = data + len - GP_ST_BF_FOOTER;
    if (memcmp(f + 16, bf_end, 8) != 0)
        return gp_seterr(err, errlen, GP_EPARSE, "bad footer (file cut short?)");
    bf->version = version;
    bf->esize = version >= 3 ? GP_ST_BF_ENTRY3 : GP_ST_BF_ENTRY;
    uint64_t ioff = gp_get_le64(f);
    uint32_t n = gp_get_le32(f + 8);
    size_t room = len - GP_ST_BF_FOOTER;
    if (ioff < GP_ST_BF_HEADER || ioff > room || (room - ioff) / bf->esize != n ||
        (room - ioff) % bf->esize != 0)
        return gp_seterr(err, errlen, GP_EPARSE, "bad index bounds");
    uint32_t crc = gp_crc32c(0, data, GP_ST_BF_HEADER);
    crc = gp_crc32c(crc, data + ioff, room - ioff);
    if (crc != gp_get_le32(f + 12))
        return gp_seterr(err, errlen, GP_EPARSE, "index checksum mismatch");
    bf->data = data;
    bf->len = len;
    bf->index = data + ioff;
    bf->n = n;
    struct gp_st_bentry e, prev = {0};
    for (uint32_t i = 0; i < n; i++) {
        gp_st_bfile_entry(bf, i, &e);
        if (e.id == 0 || e.len == 0 || e.count == 0 || e.off < GP_ST_BF_HEADER || e.off > ioff ||
            e.len > ioff - e.off || e.t_first > e.t_last || e.t_first < bf->mint ||
            e.t_last > bf->maxt)
            return gp_seterr(err, errlen, GP_EPARSE, "index entry %u out of bounds", i);
        if (i > 0 && (e.id < prev.id || (e.id == prev.id && e.t_first <= prev.t_last)))
            return gp_seterr(err, errlen, GP_EPARSE, "index entry %u out of order", i);
        prev = e;
    }
    return GP_OK;
}

void gp_st_bfile_entry(const struct gp_st_bfile *bf, uint32_t i, struct gp_st_bentry *e)
{
    const uint8_t *p = bf->index + (size_t)i * bf->esize;
    if (bf->esize == GP_ST_BF_ENTRY3) {
        e->id = gp_get_le32(p);
        e->crc = gp_get_le32(p + 4);
        e->off = gp_get_le32(p + 8) | (uint64_t)gp_get_le16(p + 12) << 32;
        e->len = gp_get_le32(p + 14);
        e->count = gp_get_le16(p + 18);
        /* unsigned: a wrap lands before mint, which the parser refuses */
        e->t_first = (int64_t)((uint64_t)bf->mint + gp_get_le32(p + 20));
        e->t_last = (int64_t)((uint64_t)bf->mint + gp_get_le32(p + 24));
        return;
    }
    e->id = gp_get_le32(p);
    e->crc = gp_get_le32(p + 4);
    e->off = gp_get_le64(p + 8);
    e->len = gp_get_le32(p + 16);
    e->count = gp_get_le32(p + 20);
    e->t_first = (int64_t)gp_get_le64(p + 24);
    e->t_last = (int64_t)gp_get_le64(p + 32);
}

uint32_t gp_st_bfile_lower(const struct gp_st_bfile *bf, uint32_t id)
{
    uint32_t lo = 0, hi = bf->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (gp_get_le32(bf->index + (size_t)mid * bf->esize) < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int gp_st_bfile_payload(const struct gp_st_bfile *bf, const struct gp_st_bentry *e,
                        const uint8_t **p)
{
    *p = bf->data + e->off;
    return gp_crc32c(0, *p, e->len) == e->crc ? GP_OK : GP_EPARSE;
}

/* Writes all of buf (retrying short writes). GP_OK or GP_EIO. Through
 * the appenders' syscall table, so tests can fill the disk for it too. */
static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        struct iovec iov = {(void *)p, n};
        ssize_t k = gp_seg_sys.writev(fd, &iov, 1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = ENOSPC; /* no progress on a regular file */
            return GP_EIO;
        }
        p += k;
        n -= (size_t)k;
    }
    return GP_OK;
}

static int bw_flush(struct gp_st_bwriter *w)
{
    if (w->err == GP_OK && w->blen > 0 && (w->err = write_all(w->fd, w->buf, w->blen)) != GP_OK)
        w->errnum = errno;
    w->blen = 0;
    return w->err;
}

static int bw_write(struct gp_st_bwriter *w, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (w->err == GP_OK && n > 0) {
        if (w->blen == WBUF && bw_flush(w) != GP_OK)
            break;
        size_t take = WBUF - w->blen < n ? WBUF - w->blen : n;
        memcpy(w->buf + w->blen, b, take);
        w->blen += take;
        b += take;
        n -= take;
        w->off += take;
    }
    return w->err;
}

/* Version 3 keeps an entry's times as u32 offsets from mint. */
static int fits_v3(int64_t mint, int64_t maxt)
{
    return mint <= maxt && (uint64_t)maxt - (uint64_t)mint <= UINT32_MAX;
}

int gp_st_bwriter_open(struct gp_st_bwriter *w, const char *path, uint32_t kind, int64_t mint,
                       int64_t maxt)
{
    return gp_st_bwriter_open_version(w, path, kind, mint, maxt, fits_v3(mint, maxt) ? 3u : 2u);
}

int gp_st_bwriter_open_version(struct gp_st_bwriter *w, const char *path, uint32_t kind,
                               int64_t mint, int64_t maxt, uint32_t version)
{
    memset(w, 0, sizeof *w);
    w->fd = -1;
    if ((version != 2 && version != 3) || (version == 3 && !fits_v3(mint, maxt)))
        return GP_EUSAGE;
    w->version = version;
    w->esize = version == 3 ? GP_ST_BF_ENTRY3 : GP_ST_BF_ENTRY;
    w->mint = mint;
    w->maxt = maxt;
    w->buf = malloc(WBUF);
    if (!w->buf)
        return GP_ENOMEM;
    w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        free(w->buf);
        w->buf = NULL;
        return GP_EIO;
    }
    memcpy(w->header, bf_magic, 8);
    gp_put_le32(w->header + 8, version);
    gp_put_le32(w->header + 12, kind);
    gp_put_le64(w->header + 16, (uint64_t)mint);
    gp_put_le64(w->header + 24, (uint64_t)maxt);
    w->last_t = INT64_MIN;
    return bw_write(w, w->header, GP_ST_BF_HEADER);
}

int gp_st_bwriter_raw(struct gp_st_bwriter *w, const void *p, size_t len, uint64_t *off)
{
    *off = w->off;
    return w->err != GP_OK ? w->err : bw_write(w, p, len);
}

int gp_st_bwriter_add(struct gp_st_bwriter *w, uint32_t id, uint32_t count, int64_t t_first,
                      int64_t t_last, const void *payload, size_t len)
{
    if (w->err != GP_OK)
        return w->err;
    int v3 = w->esize == GP_ST_BF_ENTRY3;
    if (id == 0 || id < w->last_id || (id == w->last_id && t_first <= w->last_t) || len == 0 ||
        len > UINT32_MAX || t_first > t_last || t_first < w->mint || t_last > w->maxt ||
        count == 0 || (v3 && count > UINT16_MAX))
        return GP_EUSAGE;
    if (v3 && w->off >= (uint64_t)1 << 48)
        return w->err = GP_ETOOBIG;
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 1024;
        uint8_t *p = realloc(w->index, cap * w->esize);
        if (!p)
            return w->err = GP_ENOMEM;
        w->index = p;
        w->cap = cap;
    }
    uint8_t *e = w->index + w->n * w->esize;
    gp_put_le32(e, id);
    gp_put_le32(e + 4, gp_crc32c(0, payload, len));
    if (v3) {
        gp_put_le32(e + 8, (uint32_t)w->off);
        gp_put_le16(e + 12, (uint16_t)(w->off >> 32));
        gp_put_le32(e + 14, (uint32_t)len);
        gp_put_le16(e + 18, (uint16_t)count);
        gp_put_le32(e + 20, (uint32_t)((uint64_t)t_first - (uint64_t)w->mint));
        gp_put_le32(e + 24, (uint32_t)((uint64_t)t_last - (uint64_t)w->mint));
    } else {
        gp_put_le64(e + 8, w->off);
        gp_put_le32(e + 16, (uint32_t)len);
        gp_put_le32(e + 20, count);
        gp_put_le64(e + 24, (uint64_t)t_first);
        gp_put_le64(e + 32, (uint64_t)t_last);
    }
    if (bw_write(w, payload, len) != GP_OK)
        return w->err;
    w->n++;
    w->last_id = id;
    w->last_t = t_last;
    return GP_OK;
}

int gp_st_bwriter_finish(struct gp_st_bwriter *w, uint64_t *size)
{
    uint64_t ioff = w->off;
    uint8_t footer[GP_ST_BF_FOOTER];
    size_t ilen = w->n * w->esize;
    uint32_t crc = gp_crc32c(0, w->header, GP_ST_BF_HEADER);
    crc = gp_crc32c(crc, w->index, ilen);
    gp_put_le64(footer, ioff);
    gp_put_le32(footer + 8, (uint32_t)w->n);
    gp_put_le32(footer + 12, crc);
    memcpy(footer + 16, bf_end, 8);
    if (w->n > UINT32_MAX)
        w->err = GP_ETOOBIG;
    if (ilen)
        bw_write(w, w->index, ilen);
    bw_write(w, footer, sizeof footer);
    bw_flush(w);
    if (w->err == GP_OK && fsync(w->fd) != 0)
        w->err = GP_EIO;
    if (close(w->fd) != 0 && w->err == GP_OK)
        w->err = GP_EIO;
    w->fd = -1;
    if (size)
        *size = w->off;
    int rc = w->err;
    gp_st_bwriter_abort(w);
    return rc;
}

void gp_st_bwriter_abort(struct gp_st_bwriter *w)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    free(w->buf);
    free(w->index);
    w->buf = NULL;
    w->index = NULL;
    w->n = w->cap = 0;
}

/* ---- rollup payloads ---- */

void gp_st_rollup_enc_init(struct gp_st_rollup_enc *e) { memset(e, 0, sizeof *e); }

void gp_st_rollup_enc_reset(struct gp_st_rollup_enc *e) { e->n = 0; }

void gp_st_rollup_enc_free(struct gp_st_rollup_enc *e)
{
    free(e->t);
    for (int i = 0; i < 4; i++)
        free(e->col[i]);
    gp_st_bchunk_scratch_free(&e->sc);
    memset(e, 0, sizeof *e);
}

int gp_st_rollup_enc_add(struct gp_st_rollup_enc *e, const struct gp_rollup *r)
{
    if (e->n >= GP_CHUNK_MAX_SAMPLES)
        return GP_ETOOBIG;
    if (e->n > 0 && r->t <= e->t[e->n - 1])
        return GP_EUSAGE;
    if (e->n == e->cap) {
        uint32_t cap = e->cap ? e->cap * 2 : 128;
        int64_t *t = realloc(e->t, cap * sizeof *t);
        if (!t)
            return GP_ENOMEM;
        e->t = t;
        for (int i = 0; i < 4; i++) {
            double *c = realloc(e->col[i], cap * sizeof *c);
            if (!c)
                return GP_ENOMEM;
            e->col[i] = c;
        }
        e->cap = cap;
    }
    e->t[e->n] = r->t;
    e->col[0][e->n] = r->min;
    e->col[1][e->n] = r->max;
    e->col[2][e->n] = gp_st_rollup_sum(r);
    e->col[3][e->n] = (double)r->count;
    e->n++;
    return GP_OK;
}

int gp_st_rollup_enc_finish(struct gp_st_rollup_enc *e, uint64_t toff, uint32_t version,
                            struct gp_buf *out)
{
    if (e->n == 0)
        return GP_EUSAGE;
    gp_buf_put_uvarint(out, e->n);
    struct gp_buf tmp;
    gp_buf_init(&tmp, 0);
    int rc = GP_OK;
    for (int i = 0; i < 4 && rc == GP_OK; i++) {
        gp_buf_reset(&tmp);
        /* version 3: the minutes once, in the file's time record at toff */
        rc = version >= 3 ? gp_st_bchunk_encode_block(e->t, e->col[i], e->n, toff, version, &e->sc,
                                                      &tmp)
                          : gp_st_bchunk_encode(e->t, e->col[i], e->n, &e->sc, &tmp);
        if (rc == GP_OK) {
            gp_buf_put_uvarint(out, tmp.len);
            gp_buf_append(out, tmp.data, tmp.len);
        }
    }
    gp_buf_free(&tmp);
    return rc != GP_OK ? rc : out->err;
}

int gp_st_rollup_decode(const struct gp_st_bfile *bf, const uint8_t *p, size_t n, int64_t mint,
                        int64_t maxt, struct gp_rollups *out)
{
    const uint8_t *end = p + n;
    uint64_t cnt, len;
    if (gp_uvarint_get(&p, end, &cnt) < 0 || cnt == 0 || cnt > GP_CHUNK_MAX_SAMPLES)
        return GP_EPARSE;
    int64_t *t = malloc(cnt * 2 * sizeof *t);
    double *col = malloc(cnt * 4 * sizeof *col);
    int rc = t && col ? GP_OK : GP_ENOMEM;
    for (int i = 0; i < 4 && rc == GP_OK; i++) {
        int64_t *ti = i == 0 ? t : t + cnt;
        size_t first;
        if (gp_uvarint_get(&p, end, &len) < 0 || len > (uint64_t)(end - p) ||
            gp_st_bchunk_decode_in(bf, p, (size_t)len, INT64_MIN, INT64_MAX, 1, ti, col + i * cnt,
                                   cnt, &first) != (int)cnt ||
            (i > 0 && memcmp(t, ti, cnt * sizeof *t) != 0))
            rc = GP_EPARSE;
        p += rc == GP_OK ? len : 0;
    }
    if (rc == GP_OK && p != end)
        rc = GP_EPARSE;
    for (uint64_t k = 0; k < cnt && rc == GP_OK; k++) {
        double c = col[3 * cnt + k];
        struct gp_rollup r = {t[k], col[k], col[cnt + k], col[2 * cnt + k], (uint64_t)0};
        if (t[k] % 60000 != 0 || !(c >= 1 && c < 9007199254740992.0) || c != floor(c)) {
            rc = GP_EPARSE;
            break;
        }
        r.count = (uint64_t)c;
        /* The minute [t, t + 59999] overlaps [mint, maxt]; unsigned, so no overflow. */
        if (r.t <= maxt && (r.t >= mint || (uint64_t)mint - (uint64_t)r.t <= 59999))
            rc = gp_st_rollups_push(out, &r);
    }
    free(t);
    free(col);
    return rc;
}

void gp_st_rollup_fold(struct gp_rollup *r, double v)
{
    if (gp_f64_bits(v) == GP_STALE_NAN_BITS)
        return; /* the stale marker ends a series: not a sample of the minute */
    if (r->count == 0) {
        r->min = r->max = v;
        r->sum = 0;
    }
    r->count++;
    r->sum += v; /* a NaN makes the minute's mean NaN, as the raw window mean is */
    if (v != v)
        return; /* min and max skip NaN, as PromQL's min/max do */
    if (r->min != r->min || v < r->min)
        r->min = v;
    if (r->max != r->max || v > r->max)
        r->max = v;
}

double gp_st_rollup_sum(const struct gp_rollup *r)
{
    /* The exact sum of the minute's decimals rather than the float sum's
     * rounding noise: it packs as a decimal (a quarter of the series'
     * sums fell back to Gorilla) and is the truer figure. A float sum of
     * n terms of one sign is within about n/2 ulps of the exact one. */
    unsigned ulps = r->count < 2 ? 2u : r->count > 4096 ? 4096u : (unsigned)r->count;
    return gp_st_decimal_snap(r->sum, ulps);
}

int gp_st_samples_reserve(struct gp_samples *x, size_t extra)
{
    if (x->cap - x->n >= extra)
        return GP_OK;
    size_t cap = x->cap ? x->cap : 256;
    while (cap - x->n < extra)
        cap *= 2;
    int64_t *nt = realloc(x->t, cap * sizeof *nt);
    if (!nt)
        return GP_ENOMEM;
    x->t = nt;
    double *nv = realloc(x->v, cap * sizeof *nv);
    if (!nv)
        return GP_ENOMEM;
    x->v = nv;
    x->cap = cap;
    return GP_OK;
}

int gp_st_samples_push(struct gp_samples *x, int64_t t, double v)
{
    if (x->n == x->cap && gp_st_samples_reserve(x, 1) != GP_OK)
        return GP_ENOMEM;
    x->t[x->n] = t;
    x->v[x->n] = v;
    x->n++;
    return GP_OK;
}

int gp_st_rollups_push(struct gp_rollups *x, const struct gp_rollup *r)
{
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 64;
        struct gp_rollup *p = realloc(x->r, cap * sizeof *p);
        if (!p)
            return GP_ENOMEM;
        x->r = p;
        x->cap = cap;
    }
    x->r[x->n++] = *r;
    return GP_OK;
}

void gp_samples_free(struct gp_samples *x)
{
    if (!x)
        return;
    free(x->t);
    free(x->v);
    memset(x, 0, sizeof *x);
}

void gp_rollups_free(struct gp_rollups *x)
{
    if (!x)
        return;
    free(x->r);
    memset(x, 0, sizeof *x);
}
