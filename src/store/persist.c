/*
 * persist.c - chunk files, the head snapshot, checkpoints and WAL replay.
 *
 * Durability rests on one ordering. A checkpoint, under the write lock,
 * cuts the WAL (new segment K), starts a new chunk file C and writes the
 * open heads into head.snap.tmp; then, without the lock, it syncs the
 * chunk files before C, appends the series created since the last
 * checkpoint to series.log and syncs it, inserts them into meta.db (so
 * the journal always holds what meta.db holds), syncs and renames the snapshot (the commit
 * point) and only then removes WAL segments below K. So at any crash:
 *
 *   - meta.db and series.log hold every series that the surviving WAL
 *     does not define (series.log perhaps more: meta.c reconciles);
 *   - chunk files below the snapshot's C are durable and complete; those
 *     from C on may be torn or partly lost, and recovery deletes them,
 *     since replaying the WAL from K regenerates exactly their content;
 *   - head.snap is the old or the new one, whole (rename is atomic).
 *
 * Recovery (store.c drives it): series from meta.db, blocks, chunk files
 * below C, the snapshot's heads, then the WAL from K, skipping samples
 * in compacted windows or at/before a series' newest restored time.
 * Without a (readable) snapshot there is no C and no K: every chunk file
 * is loaded, the whole WAL replayed, and the same skip keeps each sample
 * once; only the heads' samples from before K are gone.
 *
 * Reads: every chunk file is mapped read-only for its largest size
 * (GP_ST_CHUNK_FILE_MAX) when it is opened, so a read of a closed chunk
 * is a bounds check and a CRC instead of a pread (a 1-hour query of 512
 * series reads ~15,000 of them). Chunk files only grow, by whole
 * records, under the write lock, and the mapping is shared, so the
 * bytes below the size a reader sees under the read lock are in place;
 * nothing past it is ever touched (no SIGBUS past the end of the file).
 * The store never truncates below that size (gp_segw_repair cuts a
 * failed append only), and gc unmaps a file under the write lock. The
 * CRC is still checked on every read: the pages may be read again from
 * the disk after the check at open, and the check costs ~2% of a read
 * with SSE4.2. Where mapping fails, reads fall back to pread. A read
 * prefetches the records a few chunks ahead (gp_st_chunk_prefetch), a
 * whole record's ~1 KiB: a series' chunks lie apart, and each first
 * touch is a cache miss (the CRC, first to read a record, waited on
 * them: 7% of a head query, with 4 lines prefetched).
 */
#include "store/store_int.h"

#include "lib/clock.h"
#include "lib/bits.h"
#include "lib/err.h"
#include "lib/log.h"
#include "store/labels.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SNAP_WBUF (1u << 20)
#define SNAP_PACKED (16u << 10) /* payload of a packed record of head.snap */

int gp_st_map_chunk_files = 1;

static char *chunk_path(const struct gp_store *s, uint32_t num)
{
    char name[32];
    snprintf(name, sizeof name, "%08u.chk", num);
    return gp_st_path(s->chunk_dir, name);
}

/* "%08u.chk" exactly: 1 with *num, else 0. */
static int chunk_name(const char *name, uint32_t *num)
{
    unsigned long long v = 0;
    size_t i = 0;
    for (; name[i] >= '0' && name[i] <= '9'; i++) {
        v = v * 10 + (unsigned)(name[i] - '0');
        if (v > UINT32_MAX)
            return 0;
    }
    if (i != 8 || strcmp(name + i, ".chk") != 0)
        return 0;
    *num = (uint32_t)v;
    return 1;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Appends a cfile entry (num must exceed the others) with a read fd. */
static int cfile_add(struct gp_store *s, uint32_t num, uint64_t size)
{
    if (s->ncf == s->capcf) {
        size_t cap = s->capcf ? s->capcf * 2 : 16;
        struct gp_st_cfile *p = realloc(s->cf, cap * sizeof *p);
        if (!p)
            return GP_ENOMEM;
        s->cf = p;
        s->capcf = cap;
    }
    char *path = chunk_path(s, num);
    if (!path)
        return GP_ENOMEM;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    free(path);
    if (fd < 0)
        return GP_EIO;
    /* Mapping past the end is allowed; the pages there are never touched. */
    void *map = gp_st_map_chunk_files
                    ? mmap(NULL, GP_ST_CHUNK_FILE_MAX, PROT_READ, MAP_SHARED, fd, 0)
                    : MAP_FAILED;
    if (map == MAP_FAILED && gp_st_map_chunk_files)
        gp_log(GP_LOG_WARN, "store", "cannot map a chunk file; it is read with pread",
               "file=%08u.chk error=\"%s\"", num, strerror(errno));
    s->cf[s->ncf++] = (struct gp_st_cfile){
        .num = num,
        .rfd = fd,
        .map = map == MAP_FAILED ? NULL : map,
        .size = size,
        .live = 0,
    };
    return GP_OK;
}

void gp_st_cfile_close(struct gp_st_cfile *f)
{
    if (f->map)
        munmap((void *)f->map, GP_ST_CHUNK_FILE_MAX);
    f->map = NULL;
    close(f->rfd);
    f->rfd = -1;
}

/* Loads the records of one chunk file as refs (durable: below the
 * snapshot's first unsynced file, so even a bad tail is damage). */
static int load_chunk_file(struct gp_store *s, uint32_t num, const char *path, int durable)
{
    struct gp_seg_file f;
    char err[256];
    int rc = gp_seg_read_file(path, &f, err, sizeof err);
    if (rc != GP_OK) {
        gp_log(GP_LOG_ERROR, "store", "cannot read a chunk file", "file=%s error=\"%s\"", path, err);
        return rc;
    }
    if ((rc = cfile_add(s, num, f.len)) != GP_OK) {
        gp_seg_file_free(&f);
        return rc;
    }
    size_t pos = 0, n, bad_at = 0;
    uint8_t type;
    const uint8_t *p;
    uint64_t unknown = 0, disorder = 0, bad = 0, after = 0;
    for (;;) {
        size_t at = pos;
        int prc = gp_seg_parse(f.data, f.len, &pos, &type, &p, &n);
        if (prc == 0)
            break;
        uint32_t id;
        int64_t tf, tl;
        const uint8_t *chunk;
        size_t clen;
        if (at > UINT32_MAX)
            break; /* never written: files rotate at 1 GiB */
        if (prc < 0 || gp_st_chunkrec_parse(type, p, n, &id, &tf, &tl, &chunk, &clen) != GP_OK) {
            /* Damage: step to the next valid record (same framing as the
             * WAL), so one bad chunk costs that chunk only. */
            size_t next = gp_seg_resync(f.data, f.len, at, 1u << GP_ST_REC_CHUNK | 1u << GP_ST_REC_PCHUNK);
            if (next == f.len) {
                /* A torn tail, in a file written after the lost snapshot,
                 * is a crash's: the WAL replay writes it again. */
                if (durable || bad) {
                    gp_log(GP_LOG_ERROR, "store",
                           "chunk file damaged: the records from here to its end are ignored",
                           "file=%s offset=%zu", path, at);
                    s->damage |= GP_STORE_DMG_CHUNK_FILE;
                }
                break;
            }
            if (!bad)
                bad_at = at;
            bad++;
            s->damage |= GP_STORE_DMG_CHUNK_FILE;
            pos = next;
            continue;
        }
        after += bad != 0;
        if (tf < s->compacted_until)
            continue; /* its window is in a block */
        if (id >= s->ser_cap || !s->ser[id].exists) {
            unknown++;
            gp_st_unknown_id(s, id);
            continue;
        }
        struct gp_st_series *se = &s->ser[id];
        if (se->nrefs > 0 && tf <= se->refs[se->nrefs - 1].t_last) {
            disorder++;
            continue;
        }
        struct gp_st_ref r = {.file = num, .off = (uint32_t)at, .t_first = tf, .t_last = tl};
        if ((rc = gp_st_ref_push(s, id, &r)) != GP_OK)
            break;
        if (!se->has_data || tf < se->first)
            se->first = tf;
        if (!se->has_data || tl > se->newest)
            se->newest = tl, se->newest_known = 0;
        se->has_data = 1;
        if (tl > s->max_t)
            s->max_t = tl;
    }
    if (bad)
        gp_log(GP_LOG_ERROR, "store",
               "chunk file damaged: the damaged chunks are lost, the valid ones after them loaded",
               "file=%s offset=%zu damaged=%llu recovered_chunks=%llu", path, bad_at,
               (unsigned long long)bad, (unsigned long long)after);
    if (unknown || disorder)
        gp_log(GP_LOG_ERROR, "store", "chunk file has chunks of unknown series or out of order",
               "file=%s unknown=%llu disorder=%llu", path, (unsigned long long)unknown,
               (unsigned long long)disorder);
    gp_seg_file_free(&f);
    return rc;
}

int gp_st_chunks_load(struct gp_store *s, uint32_t keep_below, char *err, size_t errlen)
{
    DIR *d = opendir(s->chunk_dir);
    if (!d)
        return gp_seterr(err, errlen, GP_EIO, "%s: %s", s->chunk_dir, strerror(errno));
    uint32_t *nums = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    int rc = GP_OK;
    while ((de = readdir(d)) != NULL) {
        uint32_t num;
        if (!chunk_name(de->d_name, &num))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            uint32_t *p = realloc(nums, cap * sizeof *p);
            if (!p) {
                rc = GP_ENOMEM;
                break;
            }
            nums = p;
        }
        nums[n++] = num;
    }
    closedir(d);
    if (n)
        qsort(nums, n, sizeof *nums, cmp_u32);
    /* Keeping them all (no snapshot to say which are durable), the writer
     * starts after the highest. */
    uint32_t next = keep_below == UINT32_MAX ? 0 : keep_below;
    int removed = 0;
    for (size_t i = 0; rc == GP_OK && i < n; i++) {
        char *path = chunk_path(s, nums[i]);
        if (!path) {
            rc = GP_ENOMEM;
            break;
        }
        if (nums[i] >= keep_below) {
            /* Written after the snapshot: the WAL replay writes it again. */
            if (unlink(path) != 0)
                rc = GP_EIO;
            removed = 1;
        } else {
            int lrc = load_chunk_file(s, nums[i], path, keep_below != UINT32_MAX);
            if (lrc == GP_ENOMEM)
                rc = lrc;
            if (nums[i] + 1 > next)
                next = nums[i] + 1;
        }
        free(path);
    }
    free(nums);
    if (removed && rc == GP_OK)
        gp_fsync_dir(s->chunk_dir);
    if (rc != GP_OK)
        return gp_seterr(err, errlen, rc, "%s: cannot load chunk files", s->chunk_dir);
    char *path = chunk_path(s, next);
    if (!path)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    char e2[256];
    rc = gp_segw_open(&s->cw, path, NULL, e2, sizeof e2);
    free(path);
    if (rc != GP_OK)
        return gp_seterr(err, errlen, rc, "%s", e2);
    gp_fsync_dir(s->chunk_dir);
    if ((rc = cfile_add(s, next, gp_segw_size(s->cw))) != GP_OK)
        return gp_seterr(err, errlen, rc, "%s: cannot open chunk file %u", s->chunk_dir, next);
    return GP_OK;
}

int gp_st_chunks_rotate(struct gp_store *s)
{
    uint32_t num = s->cf[s->ncf - 1].num + 1;
    if (s->nunsynced == s->capunsynced) {
        size_t cap = s->capunsynced ? s->capunsynced * 2 : 8;
        struct gp_segw **p = realloc(s->unsynced, cap * sizeof *p);
        if (!p)
            return GP_ENOMEM;
        s->unsynced = p;
        s->capunsynced = cap;
    }
    char *path = chunk_path(s, num);
    if (!path)
        return GP_ENOMEM;
    struct gp_segw *w;
    char err[256];
    int rc = gp_segw_open(&w, path, NULL, err, sizeof err);
    free(path);
    if (rc != GP_OK) {
        gp_log(GP_LOG_ERROR, "store", "cannot start a chunk file", "error=\"%s\"", err);
        return rc;
    }
    if ((rc = cfile_add(s, num, 0)) != GP_OK) {
        gp_segw_close(w);
        return rc;
    }
    s->unsynced[s->nunsynced++] = s->cw;
    s->cw = w;
    return GP_OK;
}

void gp_st_chunks_gc(struct gp_store *s)
{
    size_t k = 0;
    int removed = 0;
    for (size_t i = 0; i < s->ncf; i++) {
        struct gp_st_cfile *f = &s->cf[i];
        if (f->live == 0 && i + 1 < s->ncf) {
            char *path = chunk_path(s, f->num);
            if (path && unlink(path) == 0) {
                gp_st_cfile_close(f);
                removed = 1;
                free(path);
                continue;
            }
            free(path);
        }
        s->cf[k++] = *f;
    }
    s->ncf = k;
    if (removed)
        gp_fsync_dir(s->chunk_dir);
}

/* Checks and splits the record at off of buf[0..len). */
static int chunk_split(const uint8_t *buf, size_t len, size_t off, const struct gp_st_ref *r,
                       const uint8_t **chunk, size_t *clen, int *packed)
{
    size_t pos = off, n;
    uint8_t type;
    const uint8_t *p;
    uint32_t id;
    int64_t tf, tl;
    if (gp_seg_parse(buf, len, &pos, &type, &p, &n) != 1 ||
        gp_st_chunkrec_parse(type, p, n, &id, &tf, &tl, chunk, clen) != GP_OK || tf != r->t_first ||
        tl != r->t_last)
        return GP_EPARSE;
    *packed = type == GP_ST_REC_PCHUNK;
    return GP_OK;
}

int gp_st_chunk_count(const uint8_t *p, size_t len, int packed, size_t *n)
{
    if (packed)
        return gp_st_bchunk_count(p, len, n);
    struct gp_chunk_iter it;
    if (gp_chunk_iter_init(&it, p, len) != GP_OK)
        return GP_EPARSE;
    *n = gp_chunk_iter_count(&it);
    return GP_OK;
}

int gp_st_chunk_decode(const uint8_t *p, size_t len, int packed, int64_t *t, double *v, size_t cap,
                       size_t *got)
{
    *got = 0;
    if (packed) {
        /* No partial answer: the record's CRC passed, so damage here is a
         * writer's bug, and the whole chunk is refused. */
        int k = gp_st_bchunk_decode(p, len, t, v, cap);
        if (k > 0)
            *got = (size_t)k;
        return k;
    }
    struct gp_chunk_iter it;
    if (gp_chunk_iter_init(&it, p, len) != GP_OK)
        return GP_EPARSE;
    int k = gp_chunk_iter_decode(&it, t, v, cap);
    *got = k < 0 ? it.read : (size_t)k;
    return k;
}

int gp_st_chunk_pread(int fd, const struct gp_st_ref *r, uint8_t *buf, size_t cap,
                      const uint8_t **chunk, size_t *len, int *packed)
{
    ssize_t got;
    do
        got = pread(fd, buf, cap, r->off);
    while (got < 0 && errno == EINTR);
    if (got < 0)
        return GP_EIO;
    return chunk_split(buf, (size_t)got, 0, r, chunk, len, packed);
}

int gp_st_chunk_read(struct gp_store *s, const struct gp_st_ref *r, uint8_t *buf, size_t cap,
                     const uint8_t **chunk, size_t *len, int *packed)
{
    struct gp_st_cfile *f = gp_st_cfile_find(s, r->file);
    if (!f || r->off >= f->size)
        return GP_EIO;
    if (f->map)
        return chunk_split(f->map, (size_t)f->size, r->off, r, chunk, len, packed);
    return gp_st_chunk_pread(f->rfd, r, buf, cap, chunk, len, packed);
}

/* Asks the CPU for the first bytes of a mapped chunk record ahead of
 * its read: a series' chunks lie apart in the files, so each read begins
 * with a cache miss (15% of a 512-series head query), and prefetches of
 * several chunks wait for memory together. Prefetches never fault. */
void gp_st_chunk_prefetch(struct gp_store *s, const struct gp_st_ref *r)
{
    const struct gp_st_cfile *f = gp_st_cfile_find(s, r->file);
    if (!f || !f->map || r->off >= f->size)
        return;
    const uint8_t *p = f->map + r->off;
    for (unsigned i = 0; i < 16; i++) /* a 480-sample record: ~800 bytes */
        __builtin_prefetch(p + 64 * i);
}

/* ---- snapshot restore ---- */

static int restore_series(void *arg, const struct gp_st_snap_series *ss)
{
    struct gp_store *s = arg;
    if (ss->id >= s->ser_cap || !s->ser[ss->id].exists) {
        gp_log(GP_LOG_ERROR, "store", "snapshot names an unknown series; skipped", "id=%u", ss->id);
        gp_st_unknown_id(s, ss->id);
        return 0;
    }
    struct gp_st_series *se = &s->ser[ss->id];
    if (!se->has_data || ss->first < se->first)
        se->first = ss->first;
    if (!se->has_data || ss->newest >= se->newest) {
        se->newest = ss->newest;
        se->newest_bits = ss->newest_bits;
        se->newest_known = 1;
    }
    se->has_data = 1;
    if (ss->newest > s->max_t)
        s->max_t = ss->newest;
    if (!ss->chunk)
        return 0;
    struct gp_chunk_iter it;
    int64_t t, after = se->nrefs ? se->refs[se->nrefs - 1].t_last : INT64_MIN;
    double v;
    int rc;
    gp_chunk_iter_init(&it, ss->chunk, ss->len);
    while ((rc = gp_chunk_iter_next(&it, &t, &v)) == 1) {
        if (t < s->compacted_until || t <= after)
            continue;
        if (gp_chunk_append(&se->head, t, v) != GP_OK)
            return GP_ENOMEM; /* a head chunk holds what a head chunk held */
        if (t < s->data_min)
            s->data_min = t;
    }
    if (rc < 0)
        gp_log(GP_LOG_ERROR, "store", "snapshot head chunk damaged; the rest comes from the WAL",
               "id=%u", ss->id);
    return 0;
}

int gp_st_snap_restore(struct gp_store *s, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
    struct gp_st_snap_header h;
    int rc = gp_st_snap_parse(buf, len, &h, restore_series, s, err, errlen);
    if (rc == GP_ENOMEM)
        gp_seterr(err, errlen, rc, "snapshot: out of memory");
    if (rc == GP_OK && h.max_t > s->max_t)
        s->max_t = h.max_t;
    return rc;
}

/* ---- WAL replay ---- */

static int replay_series(void *ctx, const struct gp_wal_series *ws)
{
    struct gp_store *s = ctx;
    uint64_t hash = gp_labels_hash(ws->labels, ws->labels_len);
    uint32_t have = gp_sindex_find(s->idx, ws->labels, ws->labels_len, hash);
    if (have == ws->id)
        return 0; /* already in meta.db */
    if (have != 0 || ws->id <= gp_sindex_max_id(s->idx) || ws->id == 0) {
        gp_log(GP_LOG_ERROR, "store", "WAL series record conflicts with the registry; skipped",
               "id=%u existing=%u", ws->id, have);
        return 0;
    }
    int rc = gp_st_ser_reserve(s, ws->id);
    uint32_t id;
    if (rc == GP_OK)
        rc = gp_sindex_add(s->idx, ws->labels, ws->labels_len, hash, ws->id, &id);
    if (rc == GP_ENOMEM)
        return rc;
    if (rc != GP_OK) {
        gp_log(GP_LOG_ERROR, "store", "WAL series record invalid; skipped", "id=%u", ws->id);
        return 0;
    }
    struct gp_st_series *se = &s->ser[id];
    memset(se, 0, sizeof *se);
    gp_chunk_init(&se->head, GP_ST_HEAD_BYTES, GP_ST_HEAD_SAMPLES);
    se->exists = 1;
    return 0;
}

static int replay_samples(void *ctx, const struct gp_wal_sample *ws, size_t n)
{
    struct gp_store *s = ctx;
    for (size_t i = 0; i < n; i++) {
        uint32_t id = ws[i].id;
        if (id >= s->ser_cap || !s->ser[id].exists)
            continue; /* its series record was rejected above, and logged */
        struct gp_st_series *se = &s->ser[id];
        int64_t t = ws[i].t_ms;
        if (t < s->compacted_until || (se->has_data && t <= se->newest))
            continue;
        int rc = gp_st_head_append(s, id, t, ws[i].v_bits);
        if (rc != GP_OK)
            return rc;
        s->replayed_samples++;
    }
    return 0;
}

int gp_st_wal_replay(struct gp_store *s, uint32_t from, char *err, size_t errlen)
{
    struct gp_wal_handler h = {replay_series, replay_samples};
    struct gp_wal_replay_stats st;
    memset(&st, 0, sizeof st);
    int rc = gp_wal_replay(s->wal_dir, from, &h, s, &st, err, errlen);
    if (st.corrupt_records) {
        s->damage |= GP_STORE_DMG_WAL_CORRUPT;
        s->wal_corrupt = st.corrupt_records;
        s->wal_recovered = st.recovered_records;
    }
    return rc;
}

/* ---- checkpoint ---- */

struct snapw {
    int fd;
    uint8_t *buf;
    size_t len;
    uint64_t total;
    int err;
    int errnum; /* errno of the failed write */
};

static void snapw_flush(struct snapw *w)
{
    size_t off = 0;
    while (w->err == GP_OK && off < w->len) {
        /* Through the appenders' syscall table, so tests fill the disk for it too. */
        struct iovec iov = {w->buf + off, w->len - off};
        ssize_t k = gp_seg_sys.writev(w->fd, &iov, 1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            w->err = GP_EIO;
            w->errnum = k < 0 ? errno : ENOSPC;
        } else
            off += (size_t)k;
    }
    w->len = 0;
}

static void snapw_record(struct snapw *w, uint8_t type, const uint8_t *payload, size_t n)
{
    uint8_t hdr[GP_SEG_HEADER];
    gp_seg_header(hdr, type, payload, n);
    if (w->len + sizeof hdr + n > SNAP_WBUF)
        snapw_flush(w);
    memcpy(w->buf + w->len, hdr, sizeof hdr);
    memcpy(w->buf + w->len + sizeof hdr, payload, n);
    w->len += sizeof hdr + n;
    w->total += sizeof hdr + n;
}

/* Writes the snapshot (under the lock) into the open tmp file. */
static int snap_write(struct gp_store *s, struct snapw *w, const struct gp_st_snap_header *h)
{
    uint8_t hb[GP_ST_SNAP_HEADER_LEN];
    uint8_t rec[GP_ST_SNAP_SERIES_HDR + GP_ST_HEAD_BYTES];
    uint8_t packed[SNAP_PACKED + GP_ST_SNAP_PACKED_MAX]; /* series with empty heads */
    size_t plen = 0;
    uint32_t prev = 0;
    gp_st_snap_header_encode(hb, h);
    snapw_record(w, GP_ST_SNAP_HEADER, hb, sizeof hb);
    uint64_t count = 0;
    for (uint32_t id = 1; id <= h->max_id && w->err == GP_OK; id++) {
        struct gp_st_series *se = &s->ser[id];
        if (!se->exists || !se->has_data)
            continue;
        count++;
        size_t len;
        const uint8_t *b = gp_chunk_bytes(&se->head, &len);
        if (se->head.count == 0 || !len) {
            plen += gp_st_snap_packed_put(packed + plen, prev, id, se->first, se->newest,
                                          se->newest_bits, h->max_t);
            prev = id;
            if (plen >= SNAP_PACKED) {
                snapw_record(w, GP_ST_SNAP_PACKED, packed, plen);
                plen = prev = 0;
            }
            continue;
        }
        gp_st_snap_series_encode(rec, id, se->first, se->newest, se->newest_bits);
        memcpy(rec + GP_ST_SNAP_SERIES_HDR, b, len);
        snapw_record(w, GP_ST_SNAP_SERIES, rec, GP_ST_SNAP_SERIES_HDR + len);
    }
    if (plen)
        snapw_record(w, GP_ST_SNAP_PACKED, packed, plen);
    uint8_t eb[8];
    for (int i = 0; i < 8; i++)
        eb[i] = (uint8_t)(count >> (8 * i));
    snapw_record(w, GP_ST_SNAP_END, eb, sizeof eb);
    snapw_flush(w);
    return w->err;
}

/* Records the step that failed and its cause, for the one log line. */
static int ck_fail(char *why, size_t n, const char *step, const char *cause, int rc)
{
    snprintf(why, n, "%s: %s", step, cause);
    return rc;
}

int gp_st_checkpoint(struct gp_store *s, int resume)
{
    char why[320] = "";
    char *tmp = gp_st_path(s->dir, "head.snap.tmp"), *final = gp_st_path(s->dir, "head.snap");
    struct snapw w = {.fd = -1, .buf = malloc(SNAP_WBUF)};
    struct gp_segw **sync = NULL;
    size_t nsync = 0;
    struct gp_wal_series *fresh = NULL;
    uint8_t *labels = NULL;
    size_t nfresh = 0;
    int rc = GP_OK;
    uint32_t seg = 0;
    if (!tmp || !final || !w.buf) {
        rc = ck_fail(why, sizeof why, "start", "out of memory", GP_ENOMEM);
        goto out;
    }

    int64_t t0 = gp_mono_ms();
    pthread_rwlock_wrlock(&s->lock);
    if (s->broken && !resume) {
        pthread_rwlock_unlock(&s->lock);
        rc = ck_fail(why, sizeof why, "start", "writes are paused after a write error", GP_EIO);
        goto out;
    }
    uint32_t max_id = gp_sindex_max_id(s->idx);
    /* Copy the labels of series created since the last checkpoint. */
    size_t lbytes = 0;
    for (uint32_t id = s->persisted_max_id + 1; id <= max_id; id++) {
        size_t l;
        if (s->ser[id].exists && gp_sindex_labels(s->idx, id, &l))
            lbytes += l, nfresh++;
    }
    fresh = malloc((nfresh ? nfresh : 1) * sizeof *fresh);
    labels = malloc(lbytes ? lbytes : 1);
    w.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (!fresh || !labels || w.fd < 0) {
        int e = errno;
        pthread_rwlock_unlock(&s->lock);
        rc = w.fd < 0 ? ck_fail(why, sizeof why, "create head.snap.tmp", strerror(e), GP_EIO)
                      : ck_fail(why, sizeof why, "start", "out of memory", GP_ENOMEM);
        goto out;
    }
    nfresh = lbytes = 0;
    for (uint32_t id = s->persisted_max_id + 1; id <= max_id; id++) {
        size_t l;
        const uint8_t *b = s->ser[id].exists ? gp_sindex_labels(s->idx, id, &l) : NULL;
        if (!b)
            continue;
        memcpy(labels + lbytes, b, l);
        fresh[nfresh++] = (struct gp_wal_series){id, labels + lbytes, l};
        lbytes += l;
    }
    if ((rc = gp_wal_cut(s->wal, &seg)) != GP_OK) {
        /* A failed cut breaks the WAL: pause writes until resume.c. */
        gp_st_set_broken(s, "start a WAL segment", gp_wal_errno(s->wal));
        pthread_rwlock_unlock(&s->lock);
        ck_fail(why, sizeof why, "cut the WAL", strerror(gp_wal_errno(s->wal)), rc);
        goto out;
    }
    if ((rc = gp_st_chunks_rotate(s)) != GP_OK) {
        int e = errno;
        pthread_rwlock_unlock(&s->lock);
        ck_fail(why, sizeof why, "start a chunk file", strerror(e), rc);
        goto out;
    }
    struct gp_st_snap_header h = {
        .version = GP_ST_SNAP_VERSION,
        .wal_segment = seg,
        .chunk_file = s->cf[s->ncf - 1].num,
        .max_id = max_id,
        .compacted_until = s->compacted_until,
        .max_t = s->max_t,
    };
    rc = snap_write(s, &w, &h);
    if (rc != GP_OK)
        ck_fail(why, sizeof why, "write head.snap.tmp", strerror(w.errnum), rc);
    sync = s->unsynced;
    nsync = s->nunsynced;
    s->unsynced = NULL;
    s->nunsynced = s->capunsynced = 0;
    pthread_rwlock_unlock(&s->lock);
    int64_t locked = gp_mono_ms() - t0;

    /* Slow I/O without the lock: appends go on meanwhile. */
    for (size_t i = 0; i < nsync; i++) {
        if (gp_segw_sync(sync[i]) != GP_OK && rc == GP_OK)
            rc = ck_fail(why, sizeof why, "sync a chunk file", strerror(gp_segw_errno(sync[i])),
                         GP_EIO);
        gp_segw_close(sync[i]);
    }
    if (rc != GP_OK)
        goto out;
    char merr[200];
    /* series.log first: it must hold every series meta.db holds. */
    if (nfresh && (rc = gp_st_slog_append(s, fresh, nfresh, merr, sizeof merr)) != GP_OK) {
        ck_fail(why, sizeof why, "append new series to series.log", merr, rc);
        goto out;
    }
    if (nfresh && (rc = gp_st_meta_insert(s, fresh, nfresh, merr, sizeof merr)) != GP_OK) {
        ck_fail(why, sizeof why, "register new series in meta.db", merr, rc);
        goto out;
    }
    s->persisted_max_id = max_id;
    if (fsync(w.fd) != 0 || close(w.fd) != 0) {
        w.fd = -1;
        rc = ck_fail(why, sizeof why, "sync head.snap.tmp", strerror(errno), GP_EIO);
        goto out;
    }
    w.fd = -1;
    if (rename(tmp, final) != 0 || gp_fsync_dir(s->dir) != GP_OK) {
        rc = ck_fail(why, sizeof why, "rename head.snap.tmp to head.snap", strerror(errno), GP_EIO);
        goto out;
    }

    pthread_rwlock_wrlock(&s->lock);
    if (resume && s->broken) {
        /* The snapshot holds every head sample, logged or not: the WAL
         * segments before seg are not needed, and appends may go on. */
        s->broken = 0;
        s->write_resumes++;
        char q[200];
        gp_log(GP_LOG_INFO, "store", "writes resumed after a write error",
               "paused_seconds=%.1f error=%s", (double)(gp_mono_ms() - s->broken_since_ms) / 1e3,
               gp_log_quote(q, sizeof q, s->broken_why));
        s->broken_why[0] = '\0';
    }
    if (gp_wal_remove_before(s->wal, seg) != GP_OK)
        gp_log(GP_LOG_WARN, "store", "cannot remove old WAL segments", "before=%u", seg);
    gp_st_chunks_gc(s);
    s->checkpoints++;
    s->snap_bytes = w.total;
    s->last_checkpoint_ms = gp_mono_ms();
    pthread_rwlock_unlock(&s->lock);
    gp_log(GP_LOG_DEBUG, "store", "checkpoint",
           "wal_segment=%u chunk_file=%u new_series=%zu snapshot_bytes=%llu locked_ms=%lld total_ms=%lld",
           seg, h.chunk_file, nfresh, (unsigned long long)w.total, (long long)locked,
           (long long)(gp_mono_ms() - t0));
out:
    if (rc != GP_OK) {
        /* Lowercase, as every message here (strerror capitalizes). */
        char *c = strchr(why, ':');
        if (c && c[1] == ' ')
            c[2] = (char)tolower((unsigned char)c[2]);
        char q[400];
        gp_log(resume ? GP_LOG_WARN : GP_LOG_ERROR, "store",
               resume ? "writes still paused: checkpoint failed"
                      : "checkpoint failed; the WAL keeps every acknowledged sample",
               "error=%s", gp_log_quote(q, sizeof q, why[0] ? why : gp_strerror(rc)));
        if (tmp)
            unlink(tmp);
    }
    if (w.fd >= 0)
        close(w.fd);
    free(sync);
    free(w.buf);
    free(fresh);
    free(labels);
    free(tmp);
    free(final);
    return rc;
}
