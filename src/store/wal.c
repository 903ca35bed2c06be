/*
 * wal.c - the store's write-ahead log, see wal.h.
 *
 * Parts:
 *  - record codec: a batch encodes into a reused buffer as a SERIES and a
 *    SAMPLES payload (sizes computed first, so one allocation at most and
 *    none once the buffer has grown); gp_wal_decode_record validates a
 *    whole payload before it calls any handler, so a bad record delivers
 *    nothing;
 *  - the directory: `%08u.wal` names, listed, sorted, checked contiguous;
 *  - replay: records in order; a torn tail of the last segment is cut
 *    off (as Prometheus repairs); a bad record with valid ones after it
 *    (damage, not a crash: a record is written whole or torn at the end)
 *    is skipped by scanning for the next valid header (length, known
 *    type, CRC-32C), and the records after it are replayed;
 *  - the appender and group commit.
 *
 * Locking (the appender is one thread at a time, under the store's lock):
 *  - write_mu guards the current segment (its writer, number and size).
 *    Appends hold it across their writev, so a size read under it counts
 *    whole batches only.
 *  - sync_mu guards the synced position, the sync token and broken; it
 *    is never held across a system call, so a thread whose position is
 *    already durable returns at once even while an fdatasync runs.
 *  - The sync token (`syncing`) is held by the one thread that runs an
 *    fdatasync, and by rotation. The syncer takes it, reads the current
 *    segment's fd and size under write_mu, releases write_mu and syncs;
 *    appends go on meanwhile. Rotation takes the token before write_mu,
 *    so it never closes a file that is being synced. Order: token, then
 *    write_mu; sync_mu is taken last (set_broken takes it under write_mu)
 *    and nothing is taken under it.
 *  - Group commit: threads that find the token taken wait for it; when
 *    the fdatasync ends, every position up to the size read before it is
 *    durable, and one waiter still not covered takes the token and syncs
 *    everything appended since, for all the others.
 *  - Rotation syncs the old segment before it opens the next, so a
 *    position in an earlier segment is always durable.
 */
#include "store/wal.h"

#include "lib/err.h"
#include "lib/log.h"
#include "lib/varint.h"
#include "store/segment.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- record codec ------------------------------------------------------------ */

/* The smallest encoded sample: 1-byte id, 1-byte timestamp, 8 value bytes. */
#define MIN_SAMPLE_BYTES 10u

static void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Payload sizes of a batch; GP_ETOOBIG past the record cap, GP_EUSAGE
 * for what the decoder would reject (id 0, empty labels, nothing). */
static int batch_sizes(const struct gp_wal_series *series, size_t nseries,
                       const struct gp_wal_sample *samples, size_t nsamples, size_t *series_len,
                       size_t *samples_len)
{
    if (nseries == 0 && nsamples == 0)
        return GP_EUSAGE;
    size_t a = 0;
    for (size_t i = 0; i < nseries; i++) {
        const struct gp_wal_series *s = &series[i];
        if (s->id == 0 || s->labels_len == 0 || !s->labels)
            return GP_EUSAGE;
        if (s->labels_len > GP_SEG_MAX_RECORD)
            return GP_ETOOBIG;
        a += gp_uvarint_size(s->id) + gp_uvarint_size(s->labels_len) + s->labels_len;
        if (a > GP_SEG_MAX_RECORD)
            return GP_ETOOBIG;
    }
    size_t b = 0;
    if (nsamples > 0) {
        if (nsamples > GP_SEG_MAX_RECORD / MIN_SAMPLE_BYTES)
            return GP_ETOOBIG;
        b = gp_uvarint_size(nsamples);
        uint64_t prev = 0;
        for (size_t i = 0; i < nsamples; i++) {
            const struct gp_wal_sample *s = &samples[i];
            if (s->id == 0)
                return GP_EUSAGE;
            uint64_t t = (uint64_t)s->t_ms;
            b += gp_uvarint_size(s->id) + gp_uvarint_size(gp_zigzag(t - prev)) + 8;
            prev = t;
        }
        if (b > GP_SEG_MAX_RECORD)
            return GP_ETOOBIG;
    }
    *series_len = a;
    *samples_len = b;
    return GP_OK;
}

static uint8_t *encode_series(uint8_t *p, const struct gp_wal_series *series, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        p = gp_uvarint_put(p, series[i].id);
        p = gp_uvarint_put(p, series[i].labels_len);
        memcpy(p, series[i].labels, series[i].labels_len);
        p += series[i].labels_len;
    }
    return p;
}

static uint8_t *encode_samples(uint8_t *p, const struct gp_wal_sample *samples, size_t n)
{
    p = gp_uvarint_put(p, n);
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t t = (uint64_t)samples[i].t_ms; /* deltas wrap: INT64_MIN..MAX is fine */
        p = gp_uvarint_put(p, samples[i].id);
        p = gp_uvarint_put(p, gp_zigzag(t - prev));
        put_le64(p, samples[i].v_bits);
        p += 8;
        prev = t;
    }
    return p;
}

static int read_id(const uint8_t **s, const uint8_t *end, uint32_t *id)
{
    uint64_t v;
    if (gp_uvarint_get(s, end, &v) != GP_OK || v == 0 || v > UINT32_MAX)
        return GP_EPARSE;
    *id = (uint32_t)v;
    return GP_OK;
}

/* Counters replay keeps while decoding (NULL from the public entry). */
struct counts {
    uint64_t series, samples;
};

static int decode_series(const uint8_t *p, size_t n, const struct gp_wal_handler *h, void *ctx,
                         struct counts *c)
{
    if (n == 0)
        return GP_EPARSE; /* a SERIES record is only written with series in it */
    const uint8_t *end = p + n;
    for (int pass = 0; pass < 2; pass++) { /* validate all, then deliver */
        const uint8_t *s = p;
        while (s < end) {
            struct gp_wal_series ser;
            uint64_t len;
            if (read_id(&s, end, &ser.id) != GP_OK ||
                gp_uvarint_get(&s, end, &len) != GP_OK || len == 0 ||
                len > (uint64_t)(end - s))
                return GP_EPARSE;
            ser.labels = s;
            ser.labels_len = (size_t)len;
            s += len;
            if (pass == 1) {
                if (c)
                    c->series++;
                int rc = h && h->series ? h->series(ctx, &ser) : 0;
                if (rc)
                    return rc;
            }
        }
    }
    return GP_OK;
}

/* Samples handed to the handler per call: a stack batch, no allocation. */
enum { SAMPLE_BATCH = 256 };

static int decode_samples(const uint8_t *p, size_t n, const struct gp_wal_handler *h, void *ctx,
                          struct counts *c)
{
    const uint8_t *s = p, *end = p + n;
    uint64_t count;
    if (gp_uvarint_get(&s, end, &count) != GP_OK || count == 0 ||
        count > (uint64_t)(end - s) / MIN_SAMPLE_BYTES)
        return GP_EPARSE;
    const uint8_t *body = s;
    for (uint64_t i = 0; i < count; i++) { /* pass 1: validate */
        uint32_t id;
        uint64_t zz;
        if (read_id(&s, end, &id) != GP_OK || gp_uvarint_get(&s, end, &zz) != GP_OK ||
            end - s < 8)
            return GP_EPARSE;
        s += 8;
    }
    if (s != end)
        return GP_EPARSE; /* trailing bytes: not what the writer wrote */

    struct gp_wal_sample batch[SAMPLE_BATCH];
    size_t k = 0;
    uint64_t prev = 0;
    s = body;
    for (uint64_t i = 0; i < count; i++) { /* pass 2: cannot fail */
        uint64_t zz = 0;
        read_id(&s, end, &batch[k].id);
        gp_uvarint_get(&s, end, &zz);
        prev += gp_unzigzag(zz);
        batch[k].t_ms = gp_u64_to_i64(prev);
        batch[k].v_bits = get_le64(s);
        s += 8;
        if (++k == SAMPLE_BATCH || i + 1 == count) {
            if (c)
                c->samples += k;
            int rc = h && h->samples ? h->samples(ctx, batch, k) : 0;
            if (rc)
                return rc;
            k = 0;
        }
    }
    return GP_OK;
}

static int decode(uint8_t type, const uint8_t *p, size_t n, const struct gp_wal_handler *h,
                  void *ctx, struct counts *c)
{
    switch (type) {
    case GP_WAL_REC_SERIES:
        return decode_series(p, n, h, ctx, c);
    case GP_WAL_REC_SAMPLES:
        return decode_samples(p, n, h, ctx, c);
    default:
        return GP_EPARSE;
    }
}

int gp_wal_decode_record(uint8_t type, const uint8_t *p, size_t n, const struct gp_wal_handler *h,
                         void *ctx)
{
    return decode(type, p, n, h, ctx, NULL);
}

/* ---- the directory ------------------------------------------------------------- */

/* Parses a canonical segment name ("%08u.wal"); 1 with *num, else 0. */
static int parse_name(const char *name, uint32_t *num)
{
    size_t digits = 0;
    uint64_t v = 0;
    while (name[digits] >= '0' && name[digits] <= '9' && digits < 10)
        v = v * 10 + (uint64_t)(name[digits++] - '0');
    if (digits < 8 || v > UINT32_MAX || strcmp(name + digits, ".wal") != 0)
        return 0;
    char canon[16];
    snprintf(canon, sizeof canon, "%08u.wal", (unsigned)v);
    if (strcmp(canon, name) != 0)
        return 0; /* "000000001.wal" and the like are not ours */
    *num = (uint32_t)v;
    return 1;
}

static int seg_path(char *out, size_t outlen, const char *dir, uint32_t num)
{
    int n = snprintf(out, outlen, "%s/%08u.wal", dir, (unsigned)num);
    return n > 0 && (size_t)n < outlen ? GP_OK : GP_EIO;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Lists the segment numbers in dir, sorted; *nums is the caller's to free.
 * A missing directory lists nothing. GP_OK, GP_ENOMEM or GP_EIO. */
static int list_segments(const char *dir, uint32_t **nums, size_t *n, char *err, size_t errlen)
{
    *nums = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT)
            return GP_OK;
        return gp_seterr(err, errlen, GP_EIO, "wal: open directory '%s': %s", dir,
                         strerror(errno));
    }
    uint32_t *v = NULL;
    size_t len = 0, cap = 0;
    struct dirent *e;
    errno = 0;
    while ((e = readdir(d))) {
        uint32_t num;
        if (!parse_name(e->d_name, &num))
            continue;
        if (len == cap) {
            size_t ncap = cap ? 2 * cap : 16;
            uint32_t *nv = realloc(v, ncap * sizeof *nv);
            if (!nv) {
                free(v);
                closedir(d);
                return gp_seterr(err, errlen, GP_ENOMEM, "wal: no memory to list '%s'", dir);
            }
            v = nv;
            cap = ncap;
        }
        v[len++] = num;
        errno = 0;
    }
    int e2 = errno;
    closedir(d);
    if (e2) {
        free(v);
        return gp_seterr(err, errlen, GP_EIO, "wal: read directory '%s': %s", dir, strerror(e2));
    }
    if (len > 0)
        qsort(v, len, sizeof *v, cmp_u32);
    *nums = v;
    *n = len;
    return GP_OK;
}

/* Creates dir and its missing parents (like mkdir -p). */
static int make_dirs(const char *dir, char *err, size_t errlen)
{
    char path[PATH_MAX];
    size_t len = strlen(dir);
    if (len == 0 || len >= sizeof path)
        return gp_seterr(err, errlen, GP_EIO, "wal: bad directory name '%s'", dir);
    memcpy(path, dir, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        char c = path[i];
        path[i] = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            return gp_seterr(err, errlen, GP_EIO, "wal: create directory '%s': %s", path,
                             strerror(errno));
        path[i] = c;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return gp_seterr(err, errlen, GP_EIO, "wal: '%s' is not a directory", dir);
    return GP_OK;
}

/* Truncates path to len and syncs the cut. */
static int truncate_file(const char *path, uint64_t len)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return GP_EIO;
    int r;
    while ((r = ftruncate(fd, (off_t)len)) != 0 && errno == EINTR)
        ;
    if (r == 0)
        r = gp_seg_sys.fdatasync(fd);
    int e = errno;
    close(fd);
    errno = e;
    return r == 0 ? GP_OK : GP_EIO;
}

/* ---- replay ---------------------------------------------------------------------- */

/* Cuts the torn tail of the log's last segment at good. */
static int cut_tail(const char *dir, uint32_t num, size_t good, size_t len,
                    struct gp_wal_replay_stats *st, char *err, size_t errlen)
{
    char path[PATH_MAX];
    if (seg_path(path, sizeof path, dir, num) != GP_OK || truncate_file(path, good) != GP_OK)
        return gp_seterr(err, errlen, GP_EIO, "wal: truncate segment %08u to %zu bytes: %s",
                         (unsigned)num, good, strerror(errno));
    st->torn_bytes = len - good;
    gp_log(GP_LOG_WARN, "wal", "torn record at the end of the log cut off",
           "segment=%08u offset=%zu bytes=%zu", (unsigned)num, good, len - good);
    return GP_OK;
}

size_t gp_wal_resync(const uint8_t *b, size_t len, size_t from)
{
    return gp_seg_resync(b, len, from, 1u << GP_WAL_REC_SERIES | 1u << GP_WAL_REC_SAMPLES);
}

int gp_wal_replay(const char *dir, uint32_t from_segment, const struct gp_wal_handler *h, void *ctx,
                  struct gp_wal_replay_stats *st, char *err, size_t errlen)
{
    struct gp_wal_replay_stats local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    uint32_t *all;
    size_t nall;
    int rc = list_segments(dir, &all, &nall, err, errlen);
    if (rc != GP_OK)
        return rc;
    size_t first = 0;
    while (first < nall && all[first] < from_segment)
        first++;
    const uint32_t *nums = all + first;
    size_t nseg = nall - first;
    /* Only a prefix is ever removed, so a hole means lost data: refuse
     * rather than replay past it. */
    for (size_t i = 1; i < nseg; i++)
        if (nums[i] != nums[i - 1] + 1) {
            rc = gp_seterr(err, errlen, GP_EPARSE,
                           "wal: segments %08u to %08u are missing in '%s'",
                           (unsigned)nums[i - 1] + 1, (unsigned)nums[i] - 1, dir);
            free(all);
            return rc;
        }

    struct counts c = {0, 0};
    for (size_t i = 0; i < nseg && rc == GP_OK; i++) {
        char path[PATH_MAX];
        struct gp_seg_file f;
        if (seg_path(path, sizeof path, dir, nums[i]) != GP_OK) {
            rc = gp_seterr(err, errlen, GP_EIO, "wal: path too long in '%s'", dir);
            break;
        }
        if ((rc = gp_seg_read_file(path, &f, err, errlen)) != GP_OK)
            break;
        st->segments++;
        size_t pos = 0, n, bad_at = 0;
        uint64_t after = 0; /* valid records after the first bad one */
        int bad = 0;
        uint8_t type;
        const uint8_t *payload;
        for (;;) {
            int prc = gp_seg_parse(f.data, f.len, &pos, &type, &payload, &n);
            if (prc == 0)
                break;
            if (prc < 0) {
                /* A bad record: a torn tail, or damage with valid records
                 * after it, which are acknowledged writes and kept. */
                size_t next = gp_wal_resync(f.data, f.len, pos);
                if (next == f.len) {
                    if (!bad && i + 1 == nseg) {
                        rc = cut_tail(dir, nums[i], pos, f.len, st, err, errlen);
                    } else {
                        st->corrupt = 1;
                        st->corrupt_records++;
                        gp_log(GP_LOG_ERROR, "wal",
                               "corrupt record before the end of the log; the rest of its segment "
                               "is unreadable, later segments are replayed",
                               "segment=%08u offset=%zu bytes=%zu", (unsigned)nums[i], pos,
                               f.len - pos);
                    }
                    break;
                }
                if (!bad)
                    bad_at = pos;
                bad = 1;
                st->corrupt = 1;
                st->corrupt_records++;
                pos = next;
                continue;
            }
            st->records++;
            after += bad;
            size_t at = pos - GP_SEG_HEADER - n;
            rc = decode(type, payload, n, h, ctx, &c);
            if (rc == GP_EPARSE)
                gp_seterr(err, errlen, rc,
                          "wal: record of type %u at offset %zu of segment %08u does not decode",
                          type, at, (unsigned)nums[i]);
            if (rc != GP_OK)
                break;
        }
        if (bad) {
            st->recovered_records += after;
            char msg[160];
            snprintf(msg, sizeof msg,
                     "corrupt record at offset %zu of segment %08u; %llu valid records after it "
                     "recovered",
                     bad_at, (unsigned)nums[i], (unsigned long long)after);
            gp_log(GP_LOG_ERROR, "wal", msg, "segment=%08u offset=%zu recovered_records=%llu",
                   (unsigned)nums[i], bad_at, (unsigned long long)after);
        }
        gp_seg_file_free(&f);
    }
    st->series = c.series;
    st->samples = c.samples;
    free(all);
    return rc;
}

/* ---- the appender ------------------------------------------------------------------ */

struct gp_wal {
    char *dir;
    uint64_t segment_bytes;
    int no_sync;

    pthread_mutex_t write_mu; /* cur and seg */
    struct gp_segw *seg;
    uint32_t cur;

    pthread_mutex_t sync_mu; /* syncing, synced_*, sync_cv */
    pthread_cond_t sync_cv;
    int syncing; /* the sync token: an fdatasync or a rotation runs */
    uint32_t synced_seg;
    uint64_t synced_off;

    atomic_int broken; /* a write, sync or rotation failed: nothing more is acknowledged */
    atomic_int err;    /* its errno */
    _Atomic uint64_t epoch; /* failures so far: a position of an older epoch is durable only
                             * if the last failure's mark covers it */
    uint64_t mark_epoch;    /* sync_mu: the epoch the last failure ended */
    uint32_t mark_seg;      /* sync_mu: the synced position when it failed */
    uint64_t mark_off;
    _Atomic uint64_t bytes, syncs;
    _Atomic uint32_t segment;

    uint8_t *buf; /* the batch being encoded; the appender's, kept across calls */
    size_t cap;
};

static int covered(const struct gp_wal *w, uint32_t seg, uint64_t off)
{
    return seg < w->synced_seg || (seg == w->synced_seg && off <= w->synced_off);
}

static void take_token(struct gp_wal *w)
{
    pthread_mutex_lock(&w->sync_mu);
    while (w->syncing)
        pthread_cond_wait(&w->sync_cv, &w->sync_mu);
    w->syncing = 1;
    pthread_mutex_unlock(&w->sync_mu);
}

/* Gives the token back; ok: everything up to (seg, off) is durable. */
static void give_token(struct gp_wal *w, int ok, uint32_t seg, uint64_t off)
{
    pthread_mutex_lock(&w->sync_mu);
    w->syncing = 0;
    if (ok && !covered(w, seg, off)) {
        w->synced_seg = seg;
        w->synced_off = off;
    }
    pthread_cond_broadcast(&w->sync_cv);
    pthread_mutex_unlock(&w->sync_mu);
}

/* broken before epoch: an append that saw broken clear read the epoch
 * before, so its position is refused by one test or the other. The
 * synced position at the failure is kept: what it covers was durable.
 * (sync_mu is taken here under write_mu by rotation: never the other
 * way round, so the order stays safe.) */
static void set_broken(struct gp_wal *w, const char *what, int e)
{
    if (!atomic_exchange(&w->broken, 1)) {
        pthread_mutex_lock(&w->sync_mu);
        w->mark_epoch = atomic_load(&w->epoch);
        w->mark_seg = w->synced_seg;
        w->mark_off = w->synced_off;
        atomic_fetch_add(&w->epoch, 1);
        pthread_mutex_unlock(&w->sync_mu);
        atomic_store(&w->err, e);
        gp_log(GP_LOG_ERROR, "wal", "write-ahead log failed; no writes are acknowledged until it is reopened",
               "op=%s segment=%08u error=\"%s\"", what, (unsigned)atomic_load(&w->segment),
               strerror(e));
    }
}

static int fdatasync_fd(int fd)
{
    int r;
    while ((r = gp_seg_sys.fdatasync(fd)) != 0 && errno == EINTR)
        ;
    return r;
}

/* Opens segment num (new, empty) and makes its name durable. Under write_mu. */
static int open_segment(struct gp_wal *w, uint32_t num, struct gp_segw **out, char *err,
                        size_t errlen)
{
    char path[PATH_MAX];
    if (seg_path(path, sizeof path, w->dir, num) != GP_OK)
        return gp_seterr(err, errlen, GP_EIO, "wal: path too long in '%s'", w->dir);
    int rc = gp_segw_open(out, path, NULL, err, errlen);
    if (rc != GP_OK)
        return rc;
    if (!w->no_sync && gp_fsync_dir(w->dir) != GP_OK) {
        int e = errno;
        gp_segw_close(*out);
        *out = NULL;
        return gp_seterr(err, errlen, GP_EIO, "wal: sync directory '%s': %s", w->dir,
                         strerror(e));
    }
    return GP_OK;
}

/* Syncs the current segment, then switches to the next. Takes the token. */
static int rotate(struct gp_wal *w, uint32_t *newseg)
{
    take_token(w);
    pthread_mutex_lock(&w->write_mu);
    uint32_t old = w->cur;
    uint64_t size = gp_segw_size(w->seg);
    int rc = GP_OK;
    char err[256] = "";
    if (atomic_load(&w->broken)) {
        rc = GP_EIO;
    } else if (old == UINT32_MAX) {
        rc = GP_EIO;
        set_broken(w, "rotate", ERANGE);
    } else if (!w->no_sync && fdatasync_fd(gp_segw_fd(w->seg)) != 0) {
        rc = GP_EIO;
        set_broken(w, "fdatasync", errno);
    } else {
        if (!w->no_sync)
            atomic_fetch_add(&w->syncs, 1);
        struct gp_segw *next;
        if ((rc = open_segment(w, old + 1, &next, err, sizeof err)) != GP_OK) {
            int e = errno;
            gp_log(GP_LOG_ERROR, "wal", "cannot start a new segment", "error=\"%s\"", err);
            set_broken(w, "open", e);
            rc = GP_EIO;
        } else {
            gp_segw_close(w->seg);
            w->seg = next;
            w->cur = old + 1;
            atomic_store(&w->segment, old + 1);
            if (newseg)
                *newseg = old + 1;
        }
    }
    pthread_mutex_unlock(&w->write_mu);
    give_token(w, rc == GP_OK, old, size);
    return rc;
}

int gp_wal_open(struct gp_wal **out, const char *dir, const struct gp_wal_options *o, char *err,
                size_t errlen)
{
    *out = NULL;
    int rc = make_dirs(dir, err, errlen);
    if (rc != GP_OK)
        return rc;
    uint32_t *nums;
    size_t n;
    if ((rc = list_segments(dir, &nums, &n, err, errlen)) != GP_OK)
        return rc;
    uint64_t bytes = 0;
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX];
        struct stat st;
        if (seg_path(path, sizeof path, dir, nums[i]) == GP_OK && stat(path, &st) == 0)
            bytes += (uint64_t)st.st_size;
    }
    uint32_t next = n ? nums[n - 1] + 1 : 0;
    int full = n && nums[n - 1] == UINT32_MAX;
    free(nums);
    if (full)
        return gp_seterr(err, errlen, GP_EIO, "wal: segment numbers exhausted in '%s'", dir);

    struct gp_wal *w = calloc(1, sizeof *w);
    if (!w || !(w->dir = strdup(dir))) {
        free(w);
        return gp_seterr(err, errlen, GP_ENOMEM, "wal: no memory");
    }
    w->segment_bytes = o && o->segment_bytes ? o->segment_bytes : GP_WAL_DEFAULT_SEGMENT_BYTES;
    w->no_sync = o ? o->no_sync : 0;
    if ((rc = open_segment(w, next, &w->seg, err, errlen)) != GP_OK) {
        free(w->dir);
        free(w);
        return rc;
    }
    pthread_mutex_init(&w->write_mu, NULL);
    pthread_mutex_init(&w->sync_mu, NULL);
    pthread_cond_init(&w->sync_cv, NULL);
    w->cur = next;
    w->synced_seg = next;
    w->synced_off = 0;
    atomic_init(&w->broken, 0);
    atomic_init(&w->err, 0);
    atomic_init(&w->epoch, 0);
    atomic_init(&w->bytes, bytes);
    atomic_init(&w->syncs, 0);
    atomic_init(&w->segment, next);
    *out = w;
    return GP_OK;
}

int gp_wal_append(struct gp_wal *w, const struct gp_wal_series *series, size_t nseries,
                  const struct gp_wal_sample *samples, size_t nsamples, struct gp_wal_pos *end)
{
    if (atomic_load(&w->broken))
        return GP_EIO;
    size_t a, b;
    int rc = batch_sizes(series, nseries, samples, nsamples, &a, &b);
    if (rc != GP_OK)
        return rc;
    if (a + b > w->cap) {
        size_t ncap = w->cap ? w->cap : 4096;
        while (ncap < a + b)
            ncap *= 2;
        uint8_t *nb = realloc(w->buf, ncap);
        if (!nb)
            return GP_ENOMEM;
        w->buf = nb;
        w->cap = ncap;
    }
    encode_series(w->buf, series, nseries);
    encode_samples(w->buf + a, samples, nsamples);
    struct gp_seg_rec recs[2];
    size_t nrec = 0;
    if (nseries)
        recs[nrec++] = (struct gp_seg_rec){GP_WAL_REC_SERIES, w->buf, a};
    if (nsamples)
        recs[nrec++] = (struct gp_seg_rec){GP_WAL_REC_SAMPLES, w->buf + a, b};

    pthread_mutex_lock(&w->write_mu);
    int full = gp_segw_size(w->seg) >= w->segment_bytes;
    pthread_mutex_unlock(&w->write_mu);
    if (full && (rc = rotate(w, NULL)) != GP_OK)
        return rc;

    pthread_mutex_lock(&w->write_mu);
    uint64_t epoch = atomic_load(&w->epoch);
    uint64_t before = gp_segw_size(w->seg);
    rc = gp_segw_appendv(w->seg, recs, nrec);
    uint64_t after = gp_segw_size(w->seg);
    int e = gp_segw_errno(w->seg);
    end->segment = w->cur;
    end->offset = after;
    end->epoch = epoch;
    pthread_mutex_unlock(&w->write_mu);
    atomic_fetch_add(&w->bytes, after - before);
    if (rc != GP_OK) {
        set_broken(w, "write", e);
        return GP_EIO;
    }
    if (atomic_load(&w->broken))
        return GP_EIO; /* a sync failed meanwhile: this batch may share its fate */
    return GP_OK;
}

int gp_wal_sync(struct gp_wal *w, const struct gp_wal_pos *pos)
{
    if (w->no_sync)
        return atomic_load(&w->broken) || pos->epoch != atomic_load(&w->epoch) ? GP_EIO : GP_OK;
    pthread_mutex_lock(&w->sync_mu);
    for (;;) {
        if (pos->epoch != atomic_load(&w->epoch)) {
            /* Appended before a failure: durable only if synced before it. */
            int ok = pos->epoch == w->mark_epoch &&
                     (pos->segment < w->mark_seg ||
                      (pos->segment == w->mark_seg && pos->offset <= w->mark_off));
            pthread_mutex_unlock(&w->sync_mu);
            return ok ? GP_OK : GP_EIO;
        }
        if (covered(w, pos->segment, pos->offset)) {
            pthread_mutex_unlock(&w->sync_mu);
            return GP_OK;
        }
        if (atomic_load(&w->broken)) {
            pthread_mutex_unlock(&w->sync_mu);
            return GP_EIO;
        }
        if (!w->syncing)
            break;
        pthread_cond_wait(&w->sync_cv, &w->sync_mu);
    }
    w->syncing = 1; /* this thread syncs for every waiter */
    pthread_mutex_unlock(&w->sync_mu);

    /* The token keeps rotation away, so the fd stays open and current. */
    pthread_mutex_lock(&w->write_mu);
    uint32_t seg = w->cur;
    uint64_t size = gp_segw_size(w->seg);
    int fd = gp_segw_fd(w->seg);
    pthread_mutex_unlock(&w->write_mu);
    if (pos->segment > seg || (pos->segment == seg && pos->offset > size)) {
        give_token(w, 0, 0, 0);
        return GP_EUSAGE; /* not a position this log has written */
    }
    int rc = GP_OK;
    if (fdatasync_fd(fd) != 0) {
        set_broken(w, "fdatasync", errno);
        rc = GP_EIO;
    }
    atomic_fetch_add(&w->syncs, 1);
    give_token(w, rc == GP_OK, seg, size);
    return rc;
}

int gp_wal_cut(struct gp_wal *w, uint32_t *segment)
{
    return rotate(w, segment);
}

int gp_wal_reopen(struct gp_wal *w, char *err, size_t errlen)
{
    take_token(w);
    pthread_mutex_lock(&w->write_mu);
    int rc = GP_OK;
    uint32_t old = w->cur;
    if (!atomic_load(&w->broken))
        goto out;
    if (old == UINT32_MAX) {
        rc = gp_seterr(err, errlen, GP_EIO, "wal: segment numbers exhausted in '%s'", w->dir);
        goto out;
    }
    /* Cut the torn record now so that a replay before the next
     * checkpoint does not take it for damage and stop there. */
    char path[PATH_MAX];
    struct gp_segw *cut = NULL;
    uint64_t torn = 0;
    char cerr[256];
    if (seg_path(path, sizeof path, w->dir, old) == GP_OK &&
        gp_segw_open(&cut, path, &torn, cerr, sizeof cerr) == GP_OK)
        gp_segw_close(cut);
    else
        gp_log(GP_LOG_WARN, "wal", "cannot cut the torn record of a failed segment; replay stops there",
               "segment=%08u", (unsigned)old);
    struct gp_segw *next;
    if ((rc = open_segment(w, old + 1, &next, err, errlen)) != GP_OK)
        goto out;
    gp_segw_close(w->seg);
    w->seg = next;
    w->cur = old + 1;
    atomic_store(&w->segment, old + 1);
    pthread_mutex_lock(&w->sync_mu); /* the token is ours: no syncer reads these */
    w->synced_seg = old + 1;
    w->synced_off = 0;
    pthread_mutex_unlock(&w->sync_mu);
    atomic_store(&w->err, 0);
    atomic_store(&w->broken, 0);
    gp_log(GP_LOG_INFO, "wal", "write-ahead log reopened after a failure",
           "segment=%08u torn_bytes_cut=%llu", (unsigned)(old + 1), (unsigned long long)torn);
out:
    pthread_mutex_unlock(&w->write_mu);
    give_token(w, 0, 0, 0);
    return rc;
}

int gp_wal_errno(const struct gp_wal *w) { return atomic_load(&w->err); }

void gp_wal_end(struct gp_wal *w, struct gp_wal_pos *pos)
{
    pthread_mutex_lock(&w->write_mu);
    pos->segment = w->cur;
    pos->offset = gp_segw_size(w->seg);
    pos->epoch = atomic_load(&w->epoch);
    pthread_mutex_unlock(&w->write_mu);
}

int gp_wal_remove_before(struct gp_wal *w, uint32_t segment)
{
    if (segment > atomic_load(&w->segment))
        return GP_EUSAGE; /* the current segment is never removed */
    uint32_t *nums;
    size_t n;
    char err[256];
    int rc = list_segments(w->dir, &nums, &n, err, sizeof err);
    if (rc != GP_OK)
        return rc;
    size_t removed = 0;
    /* Oldest first: a crash midway leaves a prefix removed, never a hole. */
    for (size_t i = 0; i < n && nums[i] < segment && rc == GP_OK; i++) {
        char path[PATH_MAX];
        struct stat st;
        if (seg_path(path, sizeof path, w->dir, nums[i]) != GP_OK) {
            rc = GP_EIO;
            break;
        }
        uint64_t size = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
        if (unlink(path) != 0 && errno != ENOENT) {
            gp_log(GP_LOG_ERROR, "wal", "cannot remove a segment", "segment=%08u error=\"%s\"",
                   (unsigned)nums[i], strerror(errno));
            rc = GP_EIO;
            break;
        }
        atomic_fetch_sub(&w->bytes, size);
        removed++;
    }
    free(nums);
    if (removed && !w->no_sync && gp_fsync_dir(w->dir) != GP_OK && rc == GP_OK)
        rc = GP_EIO;
    return rc;
}

uint64_t gp_wal_bytes(const struct gp_wal *w) { return atomic_load(&w->bytes); }

uint32_t gp_wal_segment(const struct gp_wal *w) { return atomic_load(&w->segment); }

uint64_t gp_wal_syncs(const struct gp_wal *w) { return atomic_load(&w->syncs); }

void gp_wal_close(struct gp_wal *w)
{
    if (!w)
        return;
    if (!w->no_sync && !atomic_load(&w->broken) && fdatasync_fd(gp_segw_fd(w->seg)) != 0)
        gp_log(GP_LOG_ERROR, "wal", "final sync failed", "segment=%08u error=\"%s\"",
               (unsigned)w->cur, strerror(errno));
    gp_segw_close(w->seg);
    pthread_mutex_destroy(&w->write_mu);
    pthread_mutex_destroy(&w->sync_mu);
    pthread_cond_destroy(&w->sync_cv);
    free(w->buf);
    free(w->dir);
    free(w);
}
