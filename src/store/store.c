/*
 * store.c - opening (and recovering) the store, closing it, the
 * background thread, gp_store_maintain and stats.
 *
 * Recovery order (persist.c explains why it is correct):
 *   1. meta.db and series.log: the series registered at checkpoints, in
 *      two copies (either damaged: set aside and rebuilt from the other,
 *      meta.c);
 *   2. head.snap's header: the WAL segment and chunk file it covers, and
 *      how far compaction had come (missing or damaged: blocks, every
 *      chunk file and the whole WAL stand in, see recover());
 *   3. blocks/ and rollups/ (mapped; a damaged file is logged, skipped);
 *   4. chunk files written before the snapshot (later ones are removed);
 *   5. the snapshot's head chunks and per-series newest samples;
 *   6. the WAL from the snapshot's segment;
 * then the WAL is opened for appending and the thread started.
 *
 * A LOCK file held with flock(2) keeps a second process off the same
 * directory (the lock goes away with the process, so a SIGKILL leaves
 * nothing to clean up).
 */
#include "store/store_int.h"

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DAY_MS (24LL * 3600 * 1000)

char *gp_st_path(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p)
        return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

int gp_st_ser_reserve(struct gp_store *s, uint32_t id)
{
    if (id < s->ser_cap)
        return GP_OK;
    size_t cap = s->ser_cap ? s->ser_cap * 2 : 1024;
    while (cap <= id)
        cap *= 2;
    struct gp_st_series *p = realloc(s->ser, cap * sizeof *p);
    if (!p)
        return GP_ENOMEM;
    memset(p + s->ser_cap, 0, (cap - s->ser_cap) * sizeof *p);
    s->ser = p;
    s->ser_cap = cap;
    return GP_OK;
}

/* mkdir -p. GP_OK or GP_EIO. */
static int mkdirs(const char *path)
{
    char *p = strdup(path);
    if (!p)
        return GP_ENOMEM;
    for (char *q = p + 1; *q; q++) {
        if (*q != '/')
            continue;
        *q = 0;
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            free(p);
            return GP_EIO;
        }
        *q = '/';
    }
    int rc = mkdir(p, 0755) != 0 && errno != EEXIST ? GP_EIO : GP_OK;
    free(p);
    return rc;
}

static int check_options(struct gp_store_options *o, char *err, size_t errlen)
{
    if (!o->dir || !*o->dir)
        return gp_seterr(err, errlen, GP_EUSAGE, "store: no data directory");
    if (!o->retention_raw_ms)
        o->retention_raw_ms = 15 * DAY_MS;
    if (!o->retention_rollup_ms)
        o->retention_rollup_ms = 400 * DAY_MS;
    if (!o->checkpoint_interval_ms)
        o->checkpoint_interval_ms = 5 * 60 * 1000;
    if (!o->block_ms)
        o->block_ms = 2 * 3600 * 1000;
    if (!o->max_series)
        o->max_series = 10 * 1000 * 1000;
    if (!o->max_future_ms)
        o->max_future_ms = GP_STORE_MAX_FUTURE_MS;
    if (o->max_future_ms > GP_ST_T_LIMIT)
        o->max_future_ms = -1;
    if (o->max_series > UINT32_MAX - 1)
        o->max_series = UINT32_MAX - 1;
    if (o->block_ms < 60000 || o->block_ms % 60000 != 0 ||
        o->block_ms / 60000 > GP_CHUNK_MAX_SAMPLES)
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "store: block window of %lld ms is not a whole number of minutes "
                         "between 1 and 65535",
                         (long long)o->block_ms);
    if (o->retention_raw_ms < 0 || o->retention_rollup_ms < 0 || o->checkpoint_interval_ms < 0 ||
        o->retention_raw_ms > GP_ST_T_LIMIT || o->retention_rollup_ms > GP_ST_T_LIMIT)
        return gp_seterr(err, errlen, GP_EUSAGE, "store: negative or huge retention or interval");
    return GP_OK;
}

static void *bg_main(void *arg)
{
    struct gp_store *s = arg;
    int64_t tick = s->o.checkpoint_interval_ms / 4;
    if (tick < 10)
        tick = 10;
    if (tick > 1000)
        tick = 1000;
    pthread_mutex_lock(&s->tmu);
    while (!s->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += tick / 1000;
        ts.tv_nsec += (tick % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&s->tcond, &s->tmu, &ts);
        if (s->stop)
            break;
        pthread_mutex_unlock(&s->tmu);
        gp_store_maintain(s, 0);
        pthread_mutex_lock(&s->tmu);
    }
    pthread_mutex_unlock(&s->tmu);
    return NULL;
}

int gp_st_set_aside(const char *dir, const char *name, char *out, size_t outlen)
{
    static const char *const sfx[] = {"", "-wal", "-shm"};
    char from[4096], to[4096];
    long now = (long)time(NULL);
    int moved = 0;
    snprintf(out, outlen, "%s.damaged-%ld", name, now);
    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++) {
        snprintf(from, sizeof from, "%s/%s%s", dir, name, sfx[i]);
        snprintf(to, sizeof to, "%s/%s.damaged-%ld%s", dir, name, now, sfx[i]);
        if (rename(from, to) == 0)
            moved = 1;
        else if (errno != ENOENT)
            return GP_EIO;
    }
    if (moved)
        gp_fsync_dir(dir);
    return moved ? GP_OK : GP_ENOTFOUND;
}

static const char *const dmg_names[GP_STORE_DMG_COUNT][2] = {
    {"head.snap missing", "head_snap_missing"},
    {"head.snap damaged", "head_snap_damaged"},
    {"meta.db damaged", "meta_db_damaged"},
    {"wal corrupt record", "wal_corrupt"},
    {"chunk file damaged", "chunk_file_damaged"},
    {"series.log damaged", "series_log_damaged"},
};

static int dmg_index(unsigned bit)
{
    for (int i = 0; i < GP_STORE_DMG_COUNT; i++)
        if (bit == 1u << i)
            return i;
    return -1;
}

const char *gp_store_damage_name(unsigned bit)
{
    int i = dmg_index(bit);
    return i < 0 ? NULL : dmg_names[i][0];
}

const char *gp_store_damage_label(unsigned bit)
{
    int i = dmg_index(bit);
    return i < 0 ? NULL : dmg_names[i][1];
}

/* 1 when this directory never had a checkpoint: no blocks, no registered
 * series, and the WAL still starts at its first segment (or nothing was
 * ever written). Then a missing head.snap is no damage, and the WAL alone
 * regenerates every chunk file. */
static int never_checkpointed(const struct gp_store *s)
{
    if (s->blocks.n || s->persisted_max_id)
        return 0;
    char *seg0 = gp_st_path(s->wal_dir, "00000000.wal");
    int has0 = seg0 && access(seg0, F_OK) == 0;
    free(seg0);
    if (has0)
        return 1;
    const char *dirs[] = {s->wal_dir, s->chunk_dir};
    for (size_t i = 0; i < 2; i++) {
        DIR *d = opendir(dirs[i]);
        struct dirent *de;
        int any = 0;
        while (d && (de = readdir(d)) != NULL)
            any |= de->d_name[0] != '.';
        if (d)
            closedir(d);
        if (any)
            return 0;
    }
    return 1;
}

/* Steps 2-6 of recovery (the caller has loaded meta.db). A missing or
 * damaged head.snap costs only what it alone held (the open head chunks'
 * samples whose WAL segments were already removed): blocks are found from
 * their files, every chunk file is kept and loaded, and the whole WAL is
 * replayed, whose samples at or before a series' newest loaded time are
 * skipped, so nothing is restored twice. */
static int recover(struct gp_store *s, char *err, size_t errlen)
{
    char *snap_path = gp_st_path(s->dir, "head.snap"), *tmp = gp_st_path(s->dir, "head.snap.tmp");
    if (!snap_path || !tmp) {
        free(snap_path);
        free(tmp);
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    }
    unlink(tmp);
    free(tmp);
    struct gp_seg_file snap = {0};
    struct gp_st_snap_header h = {0};
    int have = 0;
    char why[300] = "";
    int rc = gp_seg_read_file(snap_path, &snap, err, errlen);
    if (rc == GP_OK) {
        rc = gp_st_snap_parse(snap.data, snap.len, &h, NULL, NULL, why, sizeof why);
        if (rc == GP_ENOMEM)
            goto out;
        if (rc != GP_OK) {
            char aside[128];
            gp_seg_file_free(&snap);
            if (gp_st_set_aside(s->dir, "head.snap", aside, sizeof aside) != GP_OK) {
                rc = gp_seterr(err, errlen, GP_EIO, "%s: damaged (%s) and cannot be set aside: %s",
                               snap_path, why, strerror(errno));
                goto out;
            }
            char q[320];
            gp_log(GP_LOG_ERROR, "store",
                   "head.snap damaged: set aside; rebuilt from blocks, chunk files and the whole "
                   "WAL",
                   "file=%s set_aside=%s error=%s", snap_path, aside,
                   gp_log_quote(q, sizeof q, why));
            s->damage |= GP_STORE_DMG_SNAP_DAMAGED;
        } else {
            have = 1;
            if (h.max_id > gp_sindex_max_id(s->idx)) {
                gp_log(GP_LOG_ERROR, "store", "meta.db lacks series the snapshot knows",
                       "snapshot=%u db=%u", h.max_id, gp_sindex_max_id(s->idx));
                /* Their ids stay taken: a new series must not inherit their data. */
                if (gp_st_ser_reserve(s, h.max_id) != GP_OK) {
                    rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
                    goto out;
                }
                gp_sindex_reserve(s->idx, h.max_id);
            }
            s->compacted_until = h.compacted_until;
            s->max_t = h.max_t;
            s->snap_bytes = snap.len;
        }
    } else if (rc != GP_ENOTFOUND) {
        goto out;
    }
    if ((rc = gp_st_blocks_load(s, err, errlen)) != GP_OK)
        goto out;
    int rebuild = !have && (s->damage & GP_STORE_DMG_SNAP_DAMAGED || !never_checkpointed(s));
    if (rebuild && !(s->damage & GP_STORE_DMG_SNAP_DAMAGED)) {
        s->damage |= GP_STORE_DMG_SNAP_MISSING;
        gp_log(GP_LOG_ERROR, "store",
               "head.snap missing: rebuilt from blocks, chunk files and the whole WAL",
               "dir=%s blocks=%zu", s->dir, s->blocks.n);
    }
    if (rebuild)
        gp_st_blocks_bounds(s);
    if ((rc = gp_st_chunks_load(s, have ? h.chunk_file : rebuild ? UINT32_MAX : 0, err, errlen)) !=
        GP_OK)
        goto out;
    if (have && (rc = gp_st_snap_restore(s, snap.data, snap.len, err, errlen)) != GP_OK)
        goto out;
    gp_seg_file_free(&snap);
    rc = gp_st_wal_replay(s, have ? h.wal_segment : 0, err, errlen);
    /* Blocks compacted after head.snap was written (a crash between a
     * compaction and the checkpoint that follows it) hold samples the
     * snapshot does not bound, of series only the WAL registers, whose
     * WAL samples replay skips as compacted: widen every series' bounds
     * by the blocks' own, or no selection would find those samples. */
    if (rc == GP_OK)
        gp_st_blocks_bounds(s);
out:
    gp_seg_file_free(&snap);
    free(snap_path);
    return rc;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* After a registry rebuild: the ids holding data in blocks, chunk files
 * or the snapshot that no series names (labels lost with meta.db) are
 * counted and reserved, so a new series never inherits their samples. */
static int count_lost(struct gp_store *s)
{
    size_t n = s->nunk, cap = s->capunk;
    uint32_t *ids = s->unk; /* those of chunk files and the snapshot */
    s->unk = NULL;
    s->nunk = s->capunk = 0;
    for (size_t b = 0; b < s->blocks.n; b++) {
        const struct gp_st_bfile *bf = &s->blocks.f[b].bf;
        struct gp_st_bentry e;
        for (uint32_t i = 0; i < bf->n; i++) {
            gp_st_bfile_entry(bf, i, &e);
            if (e.id < s->ser_cap && s->ser[e.id].exists)
                continue;
            if (n && ids[n - 1] == e.id)
                continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 256;
                uint32_t *p = realloc(ids, cap * sizeof *p);
                if (!p) {
                    free(ids);
                    return GP_ENOMEM;
                }
                ids = p;
            }
            ids[n++] = e.id;
        }
    }
    size_t k = 0;
    if (n) {
        qsort(ids, n, sizeof *ids, cmp_u32);
        for (size_t i = 0; i < n; i++)
            if (!k || ids[k - 1] != ids[i])
                ids[k++] = ids[i];
    }
    uint32_t top = k ? ids[k - 1] : 0;
    free(ids);
    s->series_lost = k;
    if (top > gp_sindex_max_id(s->idx)) {
        if (gp_st_ser_reserve(s, top) != GP_OK)
            return GP_ENOMEM;
        gp_sindex_reserve(s->idx, top);
    }
    /* Kept in the new meta.db: the reservation must outlive this run, and
     * the loss stays reported (health, /metrics, repair). */
    if (gp_st_meta_set(s, "reserved_id", gp_sindex_max_id(s->idx)) != GP_OK ||
        gp_st_meta_set(s, "lost_series", (int64_t)s->series_lost) != GP_OK)
        return GP_EIO;
    if (s->series_lost)
        gp_log(GP_LOG_ERROR, "store",
               "series whose labels were only in the damaged meta.db: their samples are kept on "
               "disk but cannot be queried",
               "series=%llu highest_id=%u", (unsigned long long)s->series_lost, top);
    return GP_OK;
}

void gp_st_unknown_id(struct gp_store *s, uint32_t id)
{
    if (s->nunk && s->unk[s->nunk - 1] == id)
        return;
    if (s->nunk == s->capunk) {
        size_t cap = s->capunk ? s->capunk * 2 : 64;
        uint32_t *p = realloc(s->unk, cap * sizeof *p);
        if (!p)
            return; /* the count is a report; the reservation below still sees blocks */
        s->unk = p;
        s->capunk = cap;
    }
    s->unk[s->nunk++] = id;
}

int gp_store_open(struct gp_store **out, const struct gp_store_options *o, char *err, size_t errlen)
{
    *out = NULL;
    if (!o)
        return gp_seterr(err, errlen, GP_EUSAGE, "store: no options");
    struct gp_store_options opt = *o;
    int rc = check_options(&opt, err, errlen);
    if (rc != GP_OK)
        return rc;
    struct gp_store *s = calloc(1, sizeof *s);
    if (!s)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    s->lock_fd = -1;
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&s->lock, &ra);
    pthread_rwlockattr_destroy(&ra);
    pthread_mutex_init(&s->maint, NULL);
    pthread_mutex_init(&s->tmu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->tcond, &ca);
    pthread_condattr_destroy(&ca);
    s->compacted_until = INT64_MIN;
    s->max_t = INT64_MIN;
    s->data_min = INT64_MAX;
    gp_buf_init(&s->lbuf, 0);
    gp_buf_init(&s->cut_buf, 0);
    s->o = opt;
    s->dir = strdup(opt.dir);
    s->o.dir = s->dir;
    if (!s->dir || !(s->wal_dir = gp_st_path(s->dir, "wal")) ||
        !(s->chunk_dir = gp_st_path(s->dir, "chunks")) ||
        !(s->block_dir = gp_st_path(s->dir, "blocks")) ||
        !(s->rollup_dir = gp_st_path(s->dir, "rollups"))) {
        rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        goto fail;
    }
    const char *dirs[] = {s->dir, s->wal_dir, s->chunk_dir, s->block_dir, s->rollup_dir};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (mkdirs(dirs[i]) != GP_OK) {
            rc = gp_seterr(err, errlen, GP_EIO, "%s: %s", dirs[i], strerror(errno));
            goto fail;
        }
    char *lp = gp_st_path(s->dir, "LOCK");
    s->lock_fd = lp ? open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0644) : -1;
    free(lp);
    if (s->lock_fd < 0 || flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        rc = gp_seterr(err, errlen, GP_EIO, "%s: %s", s->dir,
                       errno == EWOULDBLOCK ? "in use by another gpulse process" : strerror(errno));
        goto fail;
    }
    if (gp_sindex_new(&s->idx) != GP_OK) {
        rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        goto fail;
    }
    int64_t t0 = gp_mono_ms();
    if ((rc = gp_st_meta_start(s, err, errlen)) != GP_OK || (rc = recover(s, err, errlen)) != GP_OK)
        goto fail;
    if (s->damage & GP_STORE_DMG_META_DAMAGED && (rc = count_lost(s)) != GP_OK) {
        gp_seterr(err, errlen, rc, "meta.db: cannot record the ids of lost series: %s",
                  gp_strerror(rc));
        goto fail;
    }
    struct gp_wal_options wo = {.segment_bytes = opt.wal_segment_bytes, .no_sync = opt.no_sync};
    if ((rc = gp_wal_open(&s->wal, s->wal_dir, &wo, err, errlen)) != GP_OK)
        goto fail;
    gp_st_data_min(s);
    s->replay_seconds = (double)(gp_mono_ms() - t0) / 1000.0;
    s->last_checkpoint_ms = gp_mono_ms();
    gp_log(GP_LOG_INFO, "store", "opened", "dir=%s series=%zu blocks=%zu replayed_samples=%llu seconds=%.3f",
           s->dir, gp_sindex_count(s->idx), s->blocks.n, (unsigned long long)s->replayed_samples,
           s->replay_seconds);
    if (!opt.no_background) {
        if (pthread_create(&s->thread, NULL, bg_main, s) != 0) {
            rc = gp_seterr(err, errlen, GP_ENOMEM, "store: cannot start its thread");
            goto fail;
        }
        s->thread_started = 1;
    }
    *out = s;
    return GP_OK;
fail:
    s->broken = GP_EPARSE; /* close must not checkpoint (or resume) a half-recovered store */
    gp_store_close(s);
    return rc;
}

void gp_store_close(struct gp_store *s)
{
    if (!s)
        return;
    if (s->thread_started) {
        pthread_mutex_lock(&s->tmu);
        s->stop = 1;
        pthread_cond_signal(&s->tcond);
        pthread_mutex_unlock(&s->tmu);
        pthread_join(s->thread, NULL);
    }
    if (s->wal && s->broken != GP_EPARSE) {
        /* Paused writes get one last try: the head then needs no replay. */
        pthread_mutex_lock(&s->maint);
        if (!s->broken || gp_st_resume(s, 1) != GP_OK) {
            if (!s->broken)
                gp_st_checkpoint(s, 0);
            else
                gp_log(GP_LOG_WARN, "store", "closing with writes paused: no checkpoint; the WAL "
                       "keeps every acknowledged sample", "error=\"%s\"", s->broken_why);
        }
        pthread_mutex_unlock(&s->maint);
    }
    gp_wal_close(s->wal);
    gp_segw_close(s->cw);
    for (size_t i = 0; i < s->nunsynced; i++)
        gp_segw_close(s->unsynced[i]);
    free(s->unsynced);
    for (size_t i = 0; i < s->ncf; i++)
        gp_st_cfile_close(&s->cf[i]);
    free(s->cf);
    gp_st_mlist_free(&s->blocks);
    gp_st_mlist_free(&s->rollups);
    gp_st_meta_close(s);
    gp_st_slog_close(s);
    gp_st_syms_free(&s->syms);
    for (size_t i = 0; i < s->ser_cap; i++) {
        gp_st_hcache_drop(s, &s->ser[i]);
        gp_chunk_free(&s->ser[i].head);
        free(s->ser[i].refs);
    }
    free(s->ser);
    free(s->unk);
    gp_sindex_free(s->idx);
    gp_buf_free(&s->lbuf);
    gp_buf_free(&s->cut_buf);
    gp_st_bchunk_scratch_free(&s->cut_sc);
    free(s->ws);
    free(s->wser);
    if (s->lock_fd >= 0)
        close(s->lock_fd);
    free(s->dir);
    free(s->wal_dir);
    free(s->chunk_dir);
    free(s->block_dir);
    free(s->rollup_dir);
    pthread_rwlock_destroy(&s->lock);
    pthread_mutex_destroy(&s->maint);
    pthread_mutex_destroy(&s->tmu);
    pthread_cond_destroy(&s->tcond);
    free(s);
}

int gp_store_maintain(struct gp_store *s, int force)
{
    pthread_mutex_lock(&s->maint);
    pthread_rwlock_rdlock(&s->lock);
    int broken = s->broken;
    uint64_t compactions = s->compactions;
    int due = force || gp_mono_ms() - s->last_checkpoint_ms >= s->o.checkpoint_interval_ms ||
              gp_wal_bytes(s->wal) >= GP_ST_WAL_CHECKPOINT_BYTES;
    pthread_rwlock_unlock(&s->lock);
    int rc = GP_OK;
    if (broken) {
        rc = gp_st_resume(s, force); /* and nothing else until writes go on */
    } else {
        rc = gp_st_compact(s, force);
        int rrc = gp_st_retention(s);
        if (rc == GP_OK)
            rc = rrc;
        pthread_rwlock_rdlock(&s->lock);
        if (s->compactions != compactions)
            due = 1; /* drop the consumed chunk files and the WAL soon */
        pthread_rwlock_unlock(&s->lock);
        if (due) {
            int crc = gp_st_checkpoint(s, 0);
            if (rc == GP_OK)
                rc = crc;
        }
    }
    pthread_mutex_unlock(&s->maint);
    return rc;
}

void gp_store_stats(struct gp_store *s, struct gp_store_stats *st)
{
    memset(st, 0, sizeof *st);
    uint64_t meta = gp_st_meta_bytes(s) + gp_st_slog_bytes(s);
    pthread_rwlock_rdlock(&s->lock);
    st->series = gp_sindex_count(s->idx);
    int64_t floor = gp_st_raw_floor(s), oldest = INT64_MAX;
    for (size_t id = 1; id < s->ser_cap; id++) {
        const struct gp_st_series *se = &s->ser[id];
        if (!se->exists)
            continue;
        if (se->head.count) {
            st->head_chunks++;
            st->head_bytes += gp_chunk_size(&se->head);
        }
        if (se->has_data && se->newest >= floor) {
            int64_t f = se->first > floor ? se->first : floor;
            if (f < oldest)
                oldest = f;
        }
    }
    st->samples_appended = s->samples_appended;
    st->rejected_out_of_order = s->rej_ooo;
    st->rejected_conflict = s->rej_conflict;
    st->rejected_too_old = s->rej_too_old;
    st->rejected_series_limit = s->rej_limit;
    st->rejected_too_far_in_future = s->rej_future;
    st->write_errors = s->write_errors;
    st->write_resumes = s->write_resumes;
    st->writes_paused = s->broken != 0;
    st->duplicates = s->duplicates;
    st->wal_bytes = gp_wal_bytes(s->wal);
    st->wal_syncs = gp_wal_syncs(s->wal);
    uint64_t chunks = 0;
    for (size_t i = 0; i < s->ncf; i++)
        chunks += s->cf[i].size;
    st->disk_bytes = chunks + s->block_bytes + s->rollup_bytes + s->snap_bytes + meta;
    st->blocks = s->blocks.n;
    st->checkpoints = s->checkpoints;
    st->compactions = s->compactions;
    st->oldest_ms = oldest == INT64_MAX ? 0 : oldest;
    st->newest_ms = s->max_t == INT64_MIN ? 0 : s->max_t;
    st->replay_seconds = s->replay_seconds;
    st->replayed_samples = s->replayed_samples;
    st->damage = s->damage;
    st->series_lost = s->series_lost;
    st->wal_corrupt_records = s->wal_corrupt;
    st->wal_recovered_records = s->wal_recovered;
    st->damaged_chunks_read = __atomic_load_n(&s->damaged_reads, __ATOMIC_RELAXED);
    pthread_rwlock_unlock(&s->lock);
}
