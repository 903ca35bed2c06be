/*
 * push_queue.c - see push_queue.h.
 *
 * Parts:
 *  - the in-memory index: a ring of batch descriptors (id, sizes, frame
 *    time, and where the body is: a heap copy, or a segment and offset);
 *  - the record format: segment.h framing around a 32-byte batch header
 *    (u8 version, 3 reserved, u32 samples, u32 body bytes, u32
 *    uncompressed bytes, u64 id, i64 frame time; little-endian) and the
 *    body; the checkpoint file holds records of one u64 id each;
 *  - append with drop-oldest, read-back with the checksum checked again,
 *    ack (checkpoint first, then delete segments wholly behind it);
 *  - recovery: segments in name order (names are the first id each
 *    holds, zero-padded), records below the checkpoint skipped, ids that
 *    do not increase treated as corrupt, a torn tail of the last segment
 *    cut by the appender that reopens it.
 */
#include "ingest/push_queue.h"

#include "lib/bits.h"
#include "lib/err.h"
#include "lib/log.h"
#include "store/segment.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

enum { REC_BATCH = 1, REC_ACKED = 2 };
#define BATCH_VERSION 1
#define BATCH_HDR 32u
#define CKPT_FILE "acked"
#define CKPT_TMP "acked.tmp"
#define CKPT_MAX 65536 /* rewrite the checkpoint log past this */
#define NAME_LEN 512

struct item {
    struct gp_pushq_info info;
    uint64_t seg; /* disk: name (first id) of the segment holding it */
    uint64_t off; /* disk: offset of its record there */
    uint8_t *mem; /* memory: the body */
};

struct seg {
    uint64_t name;
    uint64_t size;
};

struct gp_pushq {
    char dir[NAME_LEN];
    int disk;
    uint64_t max_bytes, seg_bytes;

    struct item *it; /* ring: it[(head + i) % cap] is the i-th oldest */
    size_t cap, head, n;
    uint64_t bytes;
    uint64_t next_id;
    uint64_t acked; /* first id not given up on, as last checkpointed */
    int ckpt_dirty;

    struct seg *segs; /* oldest first; the last is appended to */
    size_t nsegs, cap_segs;
    struct gp_segw *w;  /* appender of the last segment, NULL until needed */
    struct gp_segw *ck; /* checkpoint appender */
    int rfd;            /* reader of segment rseg, or -1 */
    int lockfd;         /* holds flock(2) on dir/lock while open, or -1 */
    uint64_t rseg;
    struct gp_buf scratch;
};

/* ---- little helpers ------------------------------------------------------ */

static uint64_t rec_size(uint32_t body_len) { return GP_SEG_HEADER + BATCH_HDR + (uint64_t)body_len; }

static struct item *at(const struct gp_pushq *q, size_t i) { return &q->it[(q->head + i) % q->cap]; }

static void seg_path(const struct gp_pushq *q, uint64_t name, char *out, size_t len)
{
    snprintf(out, len, "%s/%020" PRIu64 ".seg", q->dir, name);
}

static int push_item(struct gp_pushq *q, const struct item *x)
{
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 64;
        struct item *it = malloc(cap * sizeof *it);
        if (!it)
            return GP_ENOMEM;
        for (size_t i = 0; i < q->n; i++)
            it[i] = *at(q, i);
        free(q->it);
        q->it = it;
        q->cap = cap;
        q->head = 0;
    }
    *at(q, q->n) = *x;
    q->n++;
    q->bytes += rec_size(x->info.body_len);
    return GP_OK;
}

/* Removes the head item; returns its sample count. */
static uint32_t pop_item(struct gp_pushq *q)
{
    struct item *x = at(q, 0);
    uint32_t ns = x->info.nsamples;
    q->bytes -= rec_size(x->info.body_len);
    free(x->mem);
    q->head = (q->head + 1) % q->cap;
    q->n--;
    return ns;
}

static int push_seg(struct gp_pushq *q, uint64_t name, uint64_t size)
{
    if (q->nsegs == q->cap_segs) {
        size_t cap = q->cap_segs ? q->cap_segs * 2 : 16;
        struct seg *s = realloc(q->segs, cap * sizeof *s);
        if (!s)
            return GP_ENOMEM;
        q->segs = s;
        q->cap_segs = cap;
    }
    q->segs[q->nsegs++] = (struct seg){name, size};
    return GP_OK;
}

/* ---- checkpoint ---------------------------------------------------------- */

/* The first id still queued (or next_id when empty). */
static uint64_t head_id(const struct gp_pushq *q) { return q->n ? at(q, 0)->info.id : q->next_id; }

static int ckpt_rewrite(struct gp_pushq *q, uint64_t id)
{
    char tmp[NAME_LEN + 16], path[NAME_LEN + 16];
    snprintf(tmp, sizeof tmp, "%s/" CKPT_TMP, q->dir);
    snprintf(path, sizeof path, "%s/" CKPT_FILE, q->dir);
    unlink(tmp);
    struct gp_segw *w;
    uint8_t p[8];
    gp_put_le64(p, id);
    if (gp_segw_open(&w, tmp, NULL, NULL, 0))
        return GP_EIO;
    int rc = gp_segw_append(w, REC_ACKED, p, sizeof p);
    if (!rc)
        rc = gp_segw_sync(w);
    if (!rc && rename(tmp, path))
        rc = GP_EIO;
    if (!rc)
        rc = gp_fsync_dir(q->dir) ? GP_EIO : GP_OK;
    gp_segw_close(q->ck);
    q->ck = w; /* the renamed file: the same inode, appended to from now on */
    return rc;
}

/* Records head_id() durably. */
static int ckpt_write(struct gp_pushq *q)
{
    if (!q->disk)
        return GP_OK;
    uint64_t id = head_id(q);
    if (id == q->acked && !q->ckpt_dirty)
        return GP_OK;
    int rc;
    if (!q->ck || gp_segw_size(q->ck) >= CKPT_MAX) {
        rc = ckpt_rewrite(q, id);
    } else {
        uint8_t p[8];
        gp_put_le64(p, id);
        rc = gp_segw_append(q->ck, REC_ACKED, p, sizeof p);
        if (!rc)
            rc = gp_segw_sync(q->ck);
        if (rc) /* a failed appender stays failed: start a fresh file */
            rc = ckpt_rewrite(q, id);
    }
    if (rc)
        return rc;
    q->acked = id;
    q->ckpt_dirty = 0;
    return GP_OK;
}

/* Deletes the oldest segments that hold nothing still queued. Called
 * after the checkpoint is durable, so a crash in between resends nothing. */
static void drop_done_segments(struct gp_pushq *q)
{
    int removed = 0;
    while (q->nsegs > 1) {
        uint64_t name = q->segs[0].name;
        if (q->n && at(q, 0)->info.id < q->segs[1].name)
            break; /* the head still lives in segs[0] */
        char path[NAME_LEN + 32];
        seg_path(q, name, path, sizeof path);
        if (q->rfd >= 0 && q->rseg == name) {
            close(q->rfd);
            q->rfd = -1;
        }
        if (unlink(path) && errno != ENOENT)
            gp_log(GP_LOG_WARN, "push", "cannot delete a delivered buffer segment", "path=%s errno=%d",
                   path, errno);
        memmove(q->segs, q->segs + 1, (q->nsegs - 1) * sizeof *q->segs);
        q->nsegs--;
        removed = 1;
    }
    if (removed)
        gp_fsync_dir(q->dir);
}

/* ---- open and recovery --------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Segment names found in dir, sorted. Caller frees *names. */
static int list_segments(const char *dir, uint64_t **names, size_t *n, char *err, size_t errlen)
{
    size_t cap = 0;
    *names = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return gp_seterr(err, errlen, GP_EIO, "cannot read buffer directory '%s': %s", dir,
                         strerror(errno));
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *s = e->d_name;
        size_t len = strlen(s);
        if (len != 24 || strcmp(s + 20, ".seg"))
            continue;
        uint64_t v = 0;
        int ok = 1;
        for (int i = 0; i < 20; i++) {
            if (s[i] < '0' || s[i] > '9')
                ok = 0;
            else
                v = v * 10 + (uint64_t)(s[i] - '0');
        }
        if (!ok)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            uint64_t *p = realloc(*names, cap * sizeof *p);
            if (!p) {
                closedir(d);
                free(*names);
                *names = NULL;
                return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
            }
            *names = p;
        }
        (*names)[(*n)++] = v;
    }
    closedir(d);
    if (*n)
        qsort(*names, *n, sizeof **names, cmp_u64);
    return GP_OK;
}

static void read_checkpoint(struct gp_pushq *q)
{
    char path[NAME_LEN + 16];
    snprintf(path, sizeof path, "%s/" CKPT_FILE, q->dir);
    struct gp_seg_file f = {0};
    if (gp_seg_read_file(path, &f, NULL, 0))
        return;
    size_t pos = 0, n;
    uint8_t type;
    const uint8_t *p;
    while (gp_seg_parse(f.data, f.len, &pos, &type, &p, &n) == 1)
        if (type == REC_ACKED && n == 8)
            q->acked = gp_get_le64(p);
    gp_seg_file_free(&f);
}

/* Queues the records of one segment that are past the checkpoint. */
static int recover_segment(struct gp_pushq *q, uint64_t name, int last, struct gp_pushq_recovery *rec,
                           char *err, size_t errlen)
{
    char path[NAME_LEN + 32];
    seg_path(q, name, path, sizeof path);
    struct gp_seg_file f = {0};
    int rc = gp_seg_read_file(path, &f, err, errlen);
    if (rc)
        return rc;
    size_t pos = 0, n;
    uint8_t type;
    const uint8_t *p;
    while (gp_seg_parse(f.data, f.len, &pos, &type, &p, &n) == 1) {
        size_t start = pos - GP_SEG_HEADER - n;
        if (type != REC_BATCH || n < BATCH_HDR || p[0] != BATCH_VERSION ||
            gp_get_le32(p + 8) != n - BATCH_HDR) {
            rec->lost_records++;
            continue;
        }
        struct item x = {.seg = name, .off = start};
        x.info.nsamples = gp_get_le32(p + 4);
        x.info.body_len = (uint32_t)(n - BATCH_HDR);
        x.info.raw_len = gp_get_le32(p + 12);
        x.info.id = gp_get_le64(p + 16);
        x.info.time_ms = (int64_t)gp_get_le64(p + 24);
        if (x.info.id < q->next_id) {
            rec->lost_records++; /* ids only increase: this one is not ours */
            continue;
        }
        q->next_id = x.info.id + 1;
        if (x.info.id < q->acked)
            continue;
        if ((rc = push_item(q, &x))) {
            gp_seg_file_free(&f);
            return gp_seterr(err, errlen, rc, "out of memory");
        }
        rec->batches++;
        rec->samples += x.info.nsamples;
    }
    uint64_t good = pos;
    gp_seg_file_free(&f);
    if (last) {
        uint64_t cut = 0;
        if ((rc = gp_segw_open(&q->w, path, &cut, err, errlen)))
            return rc;
        rec->torn_bytes += cut;
        return push_seg(q, name, gp_segw_size(q->w));
    }
    struct stat st;
    if (!stat(path, &st) && (uint64_t)st.st_size > good)
        rec->lost_bytes += (uint64_t)st.st_size - good;
    return push_seg(q, name, good);
}

int gp_pushq_open(struct gp_pushq **out, const char *dir, uint64_t max_bytes, uint64_t seg_bytes,
                  struct gp_pushq_recovery *rec, char *err, size_t errlen)
{
    struct gp_pushq_recovery dummy;
    if (!rec)
        rec = &dummy;
    memset(rec, 0, sizeof *rec);
    struct gp_pushq *q = calloc(1, sizeof *q);
    if (!q)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    q->rfd = -1;
    q->lockfd = -1;
    q->max_bytes = max_bytes;
    q->next_id = 1;
    q->acked = 1;
    if (!seg_bytes) {
        seg_bytes = max_bytes / 16;
        if (seg_bytes < (64u << 10))
            seg_bytes = 64u << 10;
        if (seg_bytes > (8u << 20))
            seg_bytes = 8u << 20;
    }
    q->seg_bytes = seg_bytes;
    gp_buf_init(&q->scratch, GP_SEG_MAX_RECORD + GP_SEG_HEADER);
    if (!dir || !*dir) {
        *out = q;
        return GP_OK;
    }
    q->disk = 1;
    if (strlen(dir) >= NAME_LEN - 40) {
        gp_pushq_close(q);
        return gp_seterr(err, errlen, GP_ECONFIG, "buffer directory path too long: '%s'", dir);
    }
    snprintf(q->dir, sizeof q->dir, "%s", dir);
    if (mkdir(dir, 0755) && errno != EEXIST) {
        int e = errno;
        gp_pushq_close(q);
        return gp_seterr(err, errlen, GP_EIO, "cannot create buffer directory '%s': %s", dir,
                         strerror(e));
    }
    /* One writer per directory: a second agent on the same buffer would
     * interleave records and acknowledge each other's batches. */
    char tmp[NAME_LEN + 16];
    snprintf(tmp, sizeof tmp, "%s/lock", dir);
    q->lockfd = open(tmp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (q->lockfd < 0 || flock(q->lockfd, LOCK_EX | LOCK_NB)) {
        int e = errno;
        gp_pushq_close(q);
        return gp_seterr(err, errlen, GP_EIO, "buffer directory '%s' %s", dir,
                         e == EWOULDBLOCK ? "is in use by another agent" : strerror(e));
    }
    snprintf(tmp, sizeof tmp, "%s/" CKPT_TMP, dir);
    unlink(tmp);
    read_checkpoint(q);
    uint64_t *names;
    size_t nn;
    int rc = list_segments(dir, &names, &nn, err, errlen);
    for (size_t i = 0; !rc && i < nn; i++)
        rc = recover_segment(q, names[i], i + 1 == nn, rec, err, errlen);
    free(names);
    if (!rc && q->next_id < q->acked)
        q->next_id = q->acked;
    /* A smaller max_bytes than the last run's: keep the newest. */
    while (!rc && q->bytes > q->max_bytes && q->n) {
        rec->dropped_samples += pop_item(q);
        q->ckpt_dirty = 1;
    }
    if (!rc)
        rc = ckpt_write(q);
    if (rc) {
        if (err && !*err)
            gp_seterr(err, errlen, rc, "cannot write the checkpoint in '%s'", dir);
        gp_pushq_close(q);
        return rc;
    }
    drop_done_segments(q);
    rec->bytes = q->bytes;
    *out = q;
    return GP_OK;
}

/* ---- append / read / ack ------------------------------------------------- */

/* Starts a new segment named by the next id. */
static int rotate(struct gp_pushq *q)
{
    gp_segw_close(q->w);
    q->w = NULL;
    char path[NAME_LEN + 32];
    seg_path(q, q->next_id, path, sizeof path);
    if (q->nsegs && q->segs[q->nsegs - 1].name == q->next_id) {
        /* A broken appender's file never got a record: reuse the name. */
        q->nsegs--;
        unlink(path);
    }
    int rc = gp_segw_open(&q->w, path, NULL, NULL, 0);
    if (rc)
        return rc;
    gp_fsync_dir(q->dir);
    return push_seg(q, q->next_id, 0);
}

int gp_pushq_append(struct gp_pushq *q, const void *body, size_t len, uint32_t nsamples,
                    uint32_t raw_len, int64_t time_ms, uint64_t *dropped_samples)
{
    if (len > GP_SEG_MAX_RECORD - BATCH_HDR || rec_size((uint32_t)len) > q->max_bytes)
        return GP_ETOOBIG;
    uint64_t size = rec_size((uint32_t)len);
    while (q->n && q->bytes + size > q->max_bytes) {
        uint32_t ns = pop_item(q);
        if (dropped_samples)
            *dropped_samples += ns;
        q->ckpt_dirty = 1;
    }
    struct item x = {.info = {.id = q->next_id, .time_ms = time_ms, .nsamples = nsamples,
                              .raw_len = raw_len, .body_len = (uint32_t)len}};
    int rc;
    if (!q->disk) {
        x.mem = malloc(len ? len : 1);
        if (!x.mem)
            return GP_ENOMEM;
        memcpy(x.mem, body, len);
        if ((rc = push_item(q, &x))) {
            free(x.mem);
            return rc;
        }
        q->next_id++;
        return GP_OK;
    }
    if (!q->w || (q->segs[q->nsegs - 1].size > 0 && q->segs[q->nsegs - 1].size + size > q->seg_bytes))
        if ((rc = rotate(q)))
            return rc;
    gp_buf_reset(&q->scratch);
    uint8_t h[BATCH_HDR] = {BATCH_VERSION};
    gp_put_le32(h + 4, nsamples);
    gp_put_le32(h + 8, (uint32_t)len);
    gp_put_le32(h + 12, raw_len);
    gp_put_le64(h + 16, x.info.id);
    gp_put_le64(h + 24, (uint64_t)time_ms);
    gp_buf_append(&q->scratch, h, sizeof h);
    gp_buf_append(&q->scratch, body, len);
    if (q->scratch.err)
        return q->scratch.err;
    x.seg = q->segs[q->nsegs - 1].name;
    x.off = gp_segw_size(q->w);
    rc = gp_segw_append(q->w, REC_BATCH, q->scratch.data, q->scratch.len);
    if (rc) {
        /* What reached the file is unknown: the next append starts a new one. */
        gp_segw_close(q->w);
        q->w = NULL;
        return rc;
    }
    q->segs[q->nsegs - 1].size = gp_segw_size(q->w);
    if ((rc = push_item(q, &x)))
        return rc;
    q->next_id++;
    return GP_OK;
}

int gp_pushq_sync(struct gp_pushq *q)
{
    if (!q->disk)
        return GP_OK;
    int rc = q->w ? gp_segw_sync(q->w) : GP_OK;
    if (rc) {
        gp_segw_close(q->w);
        q->w = NULL;
        return rc;
    }
    if (q->ckpt_dirty) {
        if ((rc = ckpt_write(q)))
            return rc;
        drop_done_segments(q);
    }
    return GP_OK;
}

size_t gp_pushq_count(const struct gp_pushq *q) { return q->n; }
uint64_t gp_pushq_bytes(const struct gp_pushq *q) { return q->bytes; }

uint64_t gp_pushq_disk_bytes(const struct gp_pushq *q)
{
    uint64_t b = 0;
    for (size_t i = 0; i < q->nsegs; i++)
        b += q->segs[i].size;
    return b;
}

struct gp_pushq_info gp_pushq_info(const struct gp_pushq *q, size_t i) { return at(q, i)->info; }

int gp_pushq_read(struct gp_pushq *q, size_t i, struct gp_buf *out)
{
    const struct item *x = at(q, i);
    if (!q->disk) {
        gp_buf_append(out, x->mem, x->info.body_len);
        return out->err;
    }
    if (q->rfd < 0 || q->rseg != x->seg) {
        if (q->rfd >= 0)
            close(q->rfd);
        char path[NAME_LEN + 32];
        seg_path(q, x->seg, path, sizeof path);
        q->rfd = open(path, O_RDONLY | O_CLOEXEC);
        if (q->rfd < 0)
            return GP_EIO;
        q->rseg = x->seg;
    }
    size_t n = (size_t)rec_size(x->info.body_len);
    gp_buf_reset(&q->scratch);
    if (gp_buf_reserve(&q->scratch, n))
        return q->scratch.err;
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(q->rfd, q->scratch.data + got, n - got, (off_t)(x->off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return GP_EIO;
        if (r == 0)
            return GP_EPARSE; /* shorter than indexed: the file was cut */
        got += (size_t)r;
    }
    size_t pos = 0, pn;
    uint8_t type;
    const uint8_t *p;
    if (gp_seg_parse((const uint8_t *)q->scratch.data, n, &pos, &type, &p, &pn) != 1 ||
        type != REC_BATCH || pn != n - GP_SEG_HEADER || gp_get_le64(p + 16) != x->info.id)
        return GP_EPARSE;
    gp_buf_append(out, p + BATCH_HDR, x->info.body_len);
    return out->err;
}

int gp_pushq_ack(struct gp_pushq *q, uint64_t next_id, uint64_t *samples)
{
    int moved = 0;
    while (q->n && at(q, 0)->info.id < next_id) {
        uint32_t ns = pop_item(q);
        if (samples)
            *samples += ns;
        moved = 1;
    }
    if (!moved || !q->disk)
        return GP_OK;
    int rc = ckpt_write(q);
    if (!rc)
        drop_done_segments(q);
    return rc;
}

void gp_pushq_close(struct gp_pushq *q)
{
    if (!q)
        return;
    if (q->disk) {
        if (q->w)
            gp_segw_sync(q->w);
        ckpt_write(q);
    }
    gp_segw_close(q->w);
    gp_segw_close(q->ck);
    if (q->rfd >= 0)
        close(q->rfd);
    if (q->lockfd >= 0)
        close(q->lockfd); /* releases the flock */
    while (q->n)
        pop_item(q);
    free(q->it);
    free(q->segs);
    gp_buf_free(&q->scratch);
    free(q);
}
