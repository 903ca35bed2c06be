/*
 * compact.c - compaction of chunk files into blocks and rollups, and
 * retention.
 *
 * Windows are block_ms long, aligned to multiples of block_ms. A window
 * is due once the store's clock (gp_st_now: the server's, never the
 * newest sample, which one sender with a wrong clock could move) is half
 * a window past its end, so a sender up to that late still lands in the
 * head. Samples ahead of the clock (held from before the future bound)
 * wait in the head until their window is due. Compacting a window W takes three
 * steps, so appends stall only for the first and the last:
 *
 *   1. under the write lock: raise compacted_until to W's end (later
 *      samples for W are refused as too old), cut every head chunk that
 *      starts in W into the chunk file, and copy the refs of W;
 *   2. without the lock: read those chunks back (pread), write per series
 *      a block chunk (bchunk.c) per aligned 15-minute piece into
 *      blocks/<mint>_<maxt>.blk and its 1-minute rollups into
 *      rollups/<mint>_<maxt>.rlp, each to a .tmp name, fsynced and
 *      renamed: the rollup file first, the block last, since the block's
 *      presence is what tells recovery the window is compacted;
 *   3. under the write lock: map the new files and drop W's refs.
 *
 * The consumed chunk files are deleted by the checkpoint that follows
 * (gp_st_chunks_gc), once no ref points into them. A block is the only
 * source for its window: recovery skips chunk records, snapshot heads and
 * WAL samples older than the newest block's end.
 */
#include "store/store_int.h"

#include "lib/bits.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Samples in one block chunk, at most. */
#define BLOCK_CHUNK_SAMPLES GP_CHUNK_MAX_SAMPLES
/* A block chunk covers at most one piece of this many ms, counted back
 * from the window's end (so aligned pieces in the default 2-hour window,
 * and one piece in a window this short or shorter): a read decodes whole
 * chunks from their start, and the rules read short windows ([5m],
 * [15m], the lookback), so a piece bounds what a short read decodes.
 * Each piece costs an index entry and a chunk header (~55 bytes, about
 * 0.06 bytes a sample at 1 s; bench/store.sh measures the total). */
#define BLOCK_PIECE_MS (15 * 60 * 1000)

void gp_st_mlist_free(struct gp_st_mlist *l)
{
    for (size_t i = 0; i < l->n; i++) {
        munmap(l->f[i].map, l->f[i].len);
        free(l->f[i].path);
    }
    free(l->f);
    memset(l, 0, sizeof *l);
}

/* Maps and parses path; GP_OK with *m filled, or an error (logged). */
static int map_file(const char *path, uint32_t kind, struct gp_st_mapped *m)
{
    memset(m, 0, sizeof *m);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0) {
        if (fd >= 0)
            close(fd);
        gp_log(GP_LOG_ERROR, "store", "cannot open a block file; skipped", "file=%s", path);
        return GP_EIO;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        gp_log(GP_LOG_ERROR, "store", "cannot map a block file; skipped", "file=%s", path);
        return GP_EIO;
    }
    char err[200];
    int rc = gp_st_bfile_parse(p, (size_t)st.st_size, &m->bf, err, sizeof err);
    if (rc == GP_OK && m->bf.kind != kind)
        rc = gp_seterr(err, sizeof err, GP_EPARSE, "wrong kind of file for its folder");
    if (rc != GP_OK) {
        char q[256];
        gp_log(GP_LOG_ERROR, "store", "damaged block file; skipped", "file=%s error=%s", path,
               gp_log_quote(q, sizeof q, err));
        munmap(p, (size_t)st.st_size);
        return rc;
    }
    m->path = strdup(path);
    if (!m->path) {
        munmap(p, (size_t)st.st_size);
        return GP_ENOMEM;
    }
    m->map = p;
    m->len = (size_t)st.st_size;
    return GP_OK;
}

/* Inserts m keeping the list sorted by mint. */
static int mlist_insert(struct gp_st_mlist *l, const struct gp_st_mapped *m)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        struct gp_st_mapped *p = realloc(l->f, cap * sizeof *p);
        if (!p)
            return GP_ENOMEM;
        l->f = p;
        l->cap = cap;
    }
    size_t i = l->n;
    while (i > 0 && l->f[i - 1].bf.mint > m->bf.mint) {
        l->f[i] = l->f[i - 1];
        i--;
    }
    l->f[i] = *m;
    l->n++;
    return GP_OK;
}

static void mapped_free(struct gp_st_mapped *m)
{
    if (m->map)
        munmap(m->map, m->len);
    free(m->path);
    memset(m, 0, sizeof *m);
}

static int has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* Loads one folder of block or rollup files; removes leftover .tmp files. */
static int load_dir(const char *dir, uint32_t kind, const char *suffix, struct gp_st_mlist *l,
                    uint64_t *bytes)
{
    DIR *d = opendir(dir);
    if (!d)
        return GP_EIO;
    struct dirent *de;
    int rc = GP_OK;
    while (rc == GP_OK && (de = readdir(d)) != NULL) {
        char *path = gp_st_path(dir, de->d_name);
        if (!path) {
            rc = GP_ENOMEM;
            break;
        }
        if (has_suffix(de->d_name, ".tmp")) {
            unlink(path);
        } else if (has_suffix(de->d_name, suffix)) {
            struct gp_st_mapped m;
            if (map_file(path, kind, &m) == GP_OK) {
                *bytes += m.len;
                if ((rc = mlist_insert(l, &m)) != GP_OK)
                    mapped_free(&m);
            }
        }
        free(path);
    }
    closedir(d);
    return rc;
}

int gp_st_blocks_load(struct gp_store *s, char *err, size_t errlen)
{
    int rc = load_dir(s->block_dir, GP_ST_BF_BLOCK, ".blk", &s->blocks, &s->block_bytes);
    if (rc == GP_OK)
        rc = load_dir(s->rollup_dir, GP_ST_BF_ROLLUP, ".rlp", &s->rollups, &s->rollup_bytes);
    if (rc != GP_OK)
        return gp_seterr(err, errlen, rc, "%s: cannot load blocks", s->dir);
    for (size_t i = 0; i < s->blocks.n; i++) {
        if (s->blocks.f[i].bf.maxt + 1 > s->compacted_until)
            s->compacted_until = s->blocks.f[i].bf.maxt + 1;
    }
    /* A rollup file without its block is from a compaction cut short: it is
     * written again when the window is compacted. */
    size_t k = 0;
    for (size_t i = 0; i < s->rollups.n; i++) {
        struct gp_st_mapped *m = &s->rollups.f[i];
        if (m->bf.mint >= s->compacted_until) {
            s->rollup_bytes -= m->len;
            unlink(m->path);
            mapped_free(m);
            continue;
        }
        s->rollups.f[k++] = *m;
    }
    s->rollups.n = k;
    return GP_OK;
}

void gp_st_blocks_bounds(struct gp_store *s)
{
    for (size_t b = 0; b < s->blocks.n; b++) {
        const struct gp_st_bfile *bf = &s->blocks.f[b].bf;
        struct gp_st_bentry e;
        for (uint32_t i = 0; i < bf->n; i++) {
            gp_st_bfile_entry(bf, i, &e);
            if (e.id >= s->ser_cap || !s->ser[e.id].exists)
                continue; /* labels lost with meta.db: counted there */
            struct gp_st_series *se = &s->ser[e.id];
            if (!se->has_data || e.t_first < se->first)
                se->first = e.t_first;
            if (!se->has_data || e.t_last > se->newest)
                se->newest = e.t_last, se->newest_known = 0;
            se->has_data = 1;
            if (e.t_last > s->max_t)
                s->max_t = e.t_last;
        }
    }
}

int64_t gp_st_raw_floor(const struct gp_store *s)
{
    return s->blocks.n ? s->blocks.f[0].bf.mint : s->compacted_until;
}

void gp_st_data_min(struct gp_store *s)
{
    int64_t m = INT64_MAX;
    uint32_t max_id = gp_sindex_max_id(s->idx);
    for (uint32_t id = 1; id <= max_id && id < s->ser_cap; id++) {
        const struct gp_st_series *se = &s->ser[id];
        if (se->nrefs && se->refs[0].t_first < m)
            m = se->refs[0].t_first;
        if (se->head.count && se->head.t_first < m)
            m = se->head.t_first;
    }
    s->data_min = m;
}

/* ---- compaction of one window ---- */

struct job {
    uint32_t id;
    int fd;
    struct gp_st_ref r;
};

/* The time records written into the block so far, found by their
 * bytes: every series of a node has the node's scrape times, so a piece's
 * times are written once for all of them (store_fmt.h, "shared times";
 * at 1 s with scrape jitter that is about half of what a series' chunk
 * would hold otherwise). Open addressing on the record's CRC; the records'
 * bytes are kept to compare. At TIMES_MAX records the table starts
 * again empty, which bounds its memory (a few MB) and costs little: ids
 * are given in arrival order, so a node's series are mostly neighbours. */
#define TIMES_MAX (1u << 14)
struct times_slot {
    uint32_t crc, len;
    uint64_t off; /* in the block file; 0: empty slot */
    size_t at;    /* the bytes, in kept */
};
struct times_table {
    struct times_slot *slot;
    size_t cap, n; /* cap: a power of 2 */
    struct gp_buf kept;
};

static void times_free(struct times_table *tt)
{
    free(tt->slot);
    gp_buf_free(&tt->kept);
    memset(tt, 0, sizeof *tt);
}

/* The slot of the record rec (len bytes), or the empty slot it would take. */
static struct times_slot *times_find(struct times_table *tt, const uint8_t *rec, size_t len)
{
    uint32_t crc = gp_get_le32(rec);
    for (size_t i = crc & (tt->cap - 1);; i = (i + 1) & (tt->cap - 1)) {
        struct times_slot *sl = &tt->slot[i];
        if (sl->off == 0 || (sl->crc == crc && sl->len == len &&
                             memcmp(tt->kept.data + sl->at, rec, len) == 0))
            return sl;
    }
}

static int times_grow(struct times_table *tt)
{
    size_t cap = tt->cap ? tt->cap * 2 : 1024;
    struct times_slot *old = tt->slot, *slot = calloc(cap, sizeof *slot);
    if (!slot)
        return GP_ENOMEM;
    size_t ocap = tt->cap;
    tt->slot = slot;
    tt->cap = cap;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].off)
            *times_find(tt, (const uint8_t *)tt->kept.data + old[i].at, old[i].len) = old[i];
    free(old);
    return GP_OK;
}

struct builder {
    struct gp_st_bwriter bw, rw;
    int64_t *bt; /* the series' samples for its next block chunk */
    double *bv;
    size_t bn;
    struct gp_st_bchunk_scratch sc;
    struct gp_st_rollup_enc re;
    struct gp_buf payload;
    struct gp_rollup cur; /* the minute being folded */
    int64_t rfirst;       /* first minute of the series' rollups */
    uint8_t rec[GP_ST_CHUNKREC_MAX];
    int64_t ct[GP_ST_HEAD_SAMPLES]; /* one closed chunk's samples */
    double cv[GP_ST_HEAD_SAMPLES];
    int64_t end; /* the window's end: pieces count back from it */
    uint64_t samples, damaged;
    struct times_table tt, rtt; /* the block's, the rollup file's */
    struct gp_buf tbuf;         /* one time record being built */
};

/* The piece of t: equal for samples that share a block chunk. */
static int64_t piece(const struct builder *b, int64_t t)
{
    return gp_st_floor((int64_t)((uint64_t)b->end - 1 - (uint64_t)t), BLOCK_PIECE_MS);
}

/* *off: the time record of the n times t in the file w writes (tt: its
 * table), written now unless an earlier series had the same times. */
static int shared_times(struct builder *b, struct times_table *tt, struct gp_st_bwriter *w,
                        const int64_t *t, size_t n, uint64_t *off)
{
    gp_buf_reset(&b->tbuf);
    int rc = gp_st_btimes_encode(t, n, &b->sc, &b->tbuf);
    if (rc != GP_OK)
        return rc;
    const uint8_t *rec = (const uint8_t *)b->tbuf.data;
    size_t len = b->tbuf.len;
    if (tt->n == TIMES_MAX) {
        memset(tt->slot, 0, tt->cap * sizeof *tt->slot);
        gp_buf_reset(&tt->kept);
        tt->n = 0;
    }
    if ((tt->n + 1) * 2 > tt->cap && (rc = times_grow(tt)) != GP_OK)
        return rc;
    struct times_slot *sl = times_find(tt, rec, len);
    if (sl->off) {
        *off = sl->off;
        return GP_OK;
    }
    if ((rc = gp_st_bwriter_raw(w, rec, len, off)) != GP_OK)
        return rc;
    size_t at = tt->kept.len;
    gp_buf_append(&tt->kept, rec, len);
    if (tt->kept.err)
        return tt->kept.err;
    *sl = (struct times_slot){gp_get_le32(rec), (uint32_t)len, *off, at};
    tt->n++;
    return GP_OK;
}

static int flush_big(struct builder *b, uint32_t id)
{
    if (b->bn == 0)
        return GP_OK;
    gp_buf_reset(&b->payload);
    uint64_t toff;
    int rc = shared_times(b, &b->tt, &b->bw, b->bt, b->bn, &toff);
    if (rc == GP_OK)
        rc = gp_st_bchunk_encode_block(b->bt, b->bv, b->bn, toff, b->bw.version, &b->sc,
                                       &b->payload);
    if (rc == GP_OK)
        rc = gp_st_bwriter_add(&b->bw, id, (uint32_t)b->bn, b->bt[0], b->bt[b->bn - 1],
                               b->payload.data, b->payload.len);
    b->bn = 0;
    return rc;
}

static int flush_minute(struct builder *b)
{
    if (b->cur.count == 0)
        return GP_OK;
    if (b->re.n == 0)
        b->rfirst = b->cur.t;
    int rc = gp_st_rollup_enc_add(&b->re, &b->cur);
    b->cur.count = 0;
    return rc;
}

static int flush_rollups(struct builder *b, uint32_t id)
{
    int rc = flush_minute(b);
    if (rc == GP_OK && b->re.n > 0) {
        gp_buf_reset(&b->payload);
        uint32_t n = b->re.n;
        int64_t last = b->re.t[n - 1];
        uint64_t toff = 0;
        if (b->rw.version >= 3)
            rc = shared_times(b, &b->rtt, &b->rw, b->re.t, n, &toff);
        if (rc == GP_OK)
            rc = gp_st_rollup_enc_finish(&b->re, toff, b->rw.version, &b->payload);
        if (rc == GP_OK)
            rc = gp_st_bwriter_add(&b->rw, id, n, b->rfirst, last, b->payload.data, b->payload.len);
    }
    gp_st_rollup_enc_reset(&b->re);
    return rc;
}

static int add_sample(struct builder *b, uint32_t id, int64_t t, double v)
{
    int rc;
    if (b->bn && (b->bn == BLOCK_CHUNK_SAMPLES ||
                  piece(b, t) != piece(b, b->bt[0])) &&
        (rc = flush_big(b, id)) != GP_OK)
        return rc;
    b->bt[b->bn] = t;
    b->bv[b->bn++] = v;
    int64_t m = gp_st_floor(t, 60000);
    if (b->cur.count && b->cur.t != m && (rc = flush_minute(b)) != GP_OK)
        return rc;
    b->cur.t = m;
    gp_st_rollup_fold(&b->cur, v);
    b->samples++;
    return GP_OK;
}

/* Phase 2: reads the jobs' chunks and writes both files. */
static int build(struct builder *b, const struct job *jobs, size_t n)
{
    int rc = GP_OK;
    for (size_t i = 0; rc == GP_OK && i < n;) {
        uint32_t id = jobs[i].id;
        int64_t last = INT64_MIN;
        for (; i < n && jobs[i].id == id && rc == GP_OK; i++) {
            const uint8_t *chunk;
            size_t len, got;
            int packed;
            if (gp_st_chunk_pread(jobs[i].fd, &jobs[i].r, b->rec, sizeof b->rec, &chunk, &len, &packed) !=
                GP_OK) {
                b->damaged++;
                continue;
            }
            int k = gp_st_chunk_decode(chunk, len, packed, b->ct, b->cv, GP_ST_HEAD_SAMPLES, &got);
            for (size_t j = 0; rc == GP_OK && j < got; j++)
                if (b->ct[j] > last) {
                    rc = add_sample(b, id, b->ct[j], b->cv[j]);
                    last = b->ct[j];
                }
            if (rc == GP_OK && k < 0)
                b->damaged++;
        }
        if (rc == GP_OK)
            rc = flush_big(b, id);
        if (rc == GP_OK)
            rc = flush_rollups(b, id);
    }
    return rc;
}

static char *window_path(const char *dir, int64_t mint, int64_t maxt, const char *suffix)
{
    char name[96];
    snprintf(name, sizeof name, "%" PRId64 "_%" PRId64 "%s", mint, maxt, suffix);
    return gp_st_path(dir, name);
}

static int compact_window(struct gp_store *s, int64_t mint, int64_t end)
{
    struct job *jobs = NULL;
    size_t n = 0, cap = 0;
    int rc = GP_OK;

    /* 1. Cut and collect under the lock. */
    pthread_rwlock_wrlock(&s->lock);
    if (s->broken) {
        pthread_rwlock_unlock(&s->lock);
        return GP_EIO;
    }
    int64_t prev_until = s->compacted_until;
    if (end > s->compacted_until)
        s->compacted_until = end;
    uint32_t max_id = gp_sindex_max_id(s->idx);
    for (uint32_t id = 1; rc == GP_OK && id <= max_id; id++) {
        struct gp_st_series *se = &s->ser[id];
        if (!se->exists)
            continue;
        if (se->head.count && se->head.t_first < end && (rc = gp_st_head_cut(s, id)) != GP_OK)
            break;
        for (uint32_t k = 0; k < se->nrefs && se->refs[k].t_first < end; k++) {
            if (n == cap) {
                size_t c = cap ? cap * 2 : 1024;
                struct job *p = realloc(jobs, c * sizeof *p);
                if (!p) {
                    rc = GP_ENOMEM;
                    break;
                }
                jobs = p;
                cap = c;
            }
            struct gp_st_cfile *f = gp_st_cfile_find(s, se->refs[k].file);
            jobs[n++] = (struct job){id, f ? f->rfd : -1, se->refs[k]};
        }
    }
    if (rc != GP_OK && s->compacted_until == end)
        s->compacted_until = prev_until; /* not compacted: the window still takes samples */
    gp_st_data_min(s);
    pthread_rwlock_unlock(&s->lock);
    if (rc != GP_OK || n == 0) {
        free(jobs);
        return rc;
    }

    /* 2. Build the files without the lock. */
    int64_t maxt = end - 1;
    char *bpath = window_path(s->block_dir, mint, maxt, ".blk");
    char *rpath = window_path(s->rollup_dir, mint, maxt, ".rlp");
    char *btmp = window_path(s->block_dir, mint, maxt, ".blk.tmp");
    char *rtmp = window_path(s->rollup_dir, mint, maxt, ".rlp.tmp");
    struct builder *b = calloc(1, sizeof *b);
    uint64_t bsize = 0, rsize = 0;
    if (!bpath || !rpath || !btmp || !rtmp || !b) {
        rc = GP_ENOMEM;
        goto out;
    }
    b->end = end;
    b->bt = malloc(BLOCK_CHUNK_SAMPLES * sizeof *b->bt);
    b->bv = malloc(BLOCK_CHUNK_SAMPLES * sizeof *b->bv);
    gp_st_rollup_enc_init(&b->re);
    gp_buf_init(&b->payload, 0);
    gp_buf_init(&b->tbuf, 0);
    gp_buf_init(&b->tt.kept, 0);
    gp_buf_init(&b->rtt.kept, 0);
    if (!b->bt || !b->bv) {
        rc = GP_ENOMEM;
        goto out;
    }
    if ((rc = gp_st_bwriter_open(&b->bw, btmp, GP_ST_BF_BLOCK, mint, maxt)) != GP_OK ||
        (rc = gp_st_bwriter_open(&b->rw, rtmp, GP_ST_BF_ROLLUP, mint, maxt)) != GP_OK)
        goto out;
    rc = build(b, jobs, n);
    if (b->damaged)
        gp_log(GP_LOG_ERROR, "store", "damaged chunks skipped while compacting",
               "window=%" PRId64 " chunks=%llu", mint, (unsigned long long)b->damaged);
    if (rc == GP_OK)
        rc = gp_st_bwriter_finish(&b->rw, &rsize);
    if (rc == GP_OK && rename(rtmp, rpath) != 0)
        rc = GP_EIO;
    if (rc == GP_OK)
        rc = gp_fsync_dir(s->rollup_dir);
    if (rc == GP_OK)
        rc = gp_st_bwriter_finish(&b->bw, &bsize);
    if (rc == GP_OK && rename(btmp, bpath) != 0)
        rc = GP_EIO;
    if (rc == GP_OK)
        rc = gp_fsync_dir(s->block_dir);
    if (rc != GP_OK)
        goto out;

    /* 3. Install and drop the refs. */
    struct gp_st_mapped bm, rm;
    int brc = map_file(bpath, GP_ST_BF_BLOCK, &bm);
    int rrc = map_file(rpath, GP_ST_BF_ROLLUP, &rm);
    pthread_rwlock_wrlock(&s->lock);
    if (brc == GP_OK && (brc = mlist_insert(&s->blocks, &bm)) != GP_OK)
        mapped_free(&bm);
    if (rrc == GP_OK && (rrc = mlist_insert(&s->rollups, &rm)) != GP_OK)
        mapped_free(&rm);
    if (brc != GP_OK)
        gp_log(GP_LOG_ERROR, "store", "block written but not mapped; it is read at the next start",
               "file=%s", bpath);
    /* The block on disk is the window's data from now on (recovery reads
     * it so), mapped or not: drop the refs either way. */
    {
        s->block_bytes += bsize;
        for (size_t i = 0; i < n;) {
            struct gp_st_series *se = &s->ser[jobs[i].id];
            uint32_t k = 0;
            for (; k < se->nrefs && se->refs[k].t_first < end; k++) {
                struct gp_st_cfile *f = gp_st_cfile_find(s, se->refs[k].file);
                if (f && f->live)
                    f->live--;
            }
            memmove(se->refs, se->refs + k, (se->nrefs - k) * sizeof *se->refs);
            se->nrefs -= k;
            uint32_t id = jobs[i].id;
            while (i < n && jobs[i].id == id)
                i++;
        }
    }
    if (rrc == GP_OK)
        s->rollup_bytes += rsize;
    s->compactions++;
    pthread_rwlock_unlock(&s->lock);
out:
    if (rc != GP_OK) {
        /* No block: the window's refs stay, and so must its samples'
         * welcome, or the window would be neither compacted nor open
         * (and its refs swept into the next window's block). It is
         * compacted again at the next maintenance. */
        pthread_rwlock_wrlock(&s->lock);
        if (s->compacted_until == end)
            s->compacted_until = prev_until;
        pthread_rwlock_unlock(&s->lock);
    }
    if (rc != GP_OK && b) {
        gp_st_bwriter_abort(&b->bw);
        gp_st_bwriter_abort(&b->rw);
        if (btmp)
            unlink(btmp);
        if (rtmp)
            unlink(rtmp);
        int e = b->bw.errnum ? b->bw.errnum : b->rw.errnum;
        char why[160];
        snprintf(why, sizeof why, "%s", e ? strerror(e) : gp_strerror(rc));
        why[0] = (char)tolower((unsigned char)why[0]);
        gp_log(GP_LOG_ERROR, "store", "compaction failed; the window stays in the chunk files and is retried",
               "window=%" PRId64 " error=\"%s\"", mint, why);
    }
    if (b) {
        free(b->bt);
        free(b->bv);
        gp_st_bchunk_scratch_free(&b->sc);
        gp_st_rollup_enc_free(&b->re);
        gp_buf_free(&b->payload);
        gp_buf_free(&b->tbuf);
        times_free(&b->tt);
        times_free(&b->rtt);
    }
    free(b);
    free(bpath);
    free(rpath);
    free(btmp);
    free(rtmp);
    free(jobs);
    return rc;
}

int gp_st_compact(struct gp_store *s, int force)
{
    int64_t block = s->o.block_ms;
    for (;;) {
        pthread_rwlock_rdlock(&s->lock);
        int64_t data_min = s->data_min, until = s->compacted_until;
        pthread_rwlock_unlock(&s->lock);
        if (data_min == INT64_MAX)
            return GP_OK;
        int64_t clock = gp_st_now(s);
        int64_t limit = force ? gp_st_floor(clock, block) : clock - block / 2;
        int64_t start = data_min > until ? data_min : until;
        int64_t wstart = gp_st_floor(start, block), end = wstart + block;
        if (end > limit)
            return GP_OK;
        int rc = compact_window(s, wstart > until ? wstart : until, end);
        if (rc != GP_OK)
            return rc;
    }
}

/* ---- retention ---- */

/* Removes files whose window ended before cut; returns how many. */
static size_t expire(struct gp_st_mlist *l, int64_t cut, uint64_t *bytes)
{
    size_t k = 0, removed = 0;
    for (size_t i = 0; i < l->n; i++) {
        struct gp_st_mapped *m = &l->f[i];
        if (m->bf.maxt < cut) {
            *bytes -= m->len;
            unlink(m->path);
            mapped_free(m);
            removed++;
            continue;
        }
        l->f[k++] = *m;
    }
    l->n = k;
    return removed;
}

/* 1 when some file of l ended before cut. */
static int any_expired(const struct gp_st_mlist *l, int64_t cut)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->f[i].bf.maxt < cut)
            return 1;
    return 0;
}

int gp_st_retention(struct gp_store *s)
{
    int64_t now = gp_st_now(s);
    pthread_rwlock_rdlock(&s->lock);
    int due = any_expired(&s->blocks, now - s->o.retention_raw_ms) ||
              any_expired(&s->rollups, now - s->o.retention_rollup_ms);
    pthread_rwlock_unlock(&s->lock);
    if (!due)
        return GP_OK; /* the usual case: no write lock every tick */
    pthread_rwlock_wrlock(&s->lock);
    size_t b = expire(&s->blocks, now - s->o.retention_raw_ms, &s->block_bytes);
    size_t r = expire(&s->rollups, now - s->o.retention_rollup_ms, &s->rollup_bytes);
    pthread_rwlock_unlock(&s->lock);
    if (b)
        gp_fsync_dir(s->block_dir);
    if (r)
        gp_fsync_dir(s->rollup_dir);
    if (b || r)
        gp_log(GP_LOG_INFO, "store", "retention removed old data", "blocks=%zu rollups=%zu", b, r);
    return GP_OK;
}
