/*
 * store.h - the embedded time-series store of `gpulse server`.
 *
 * DESIGN.md "Storage". On disk, under the data directory:
 *
 *   wal/          write-ahead log (wal.h): every accepted batch, synced
 *                 before the write is acknowledged
 *   chunks/       closed head chunks, appended as they fill (segment.h
 *                 records: series id, first/last time, Gorilla bytes)
 *   head.snap     the open head chunks at the last checkpoint
 *   blocks/       compacted data: per 2-hour window, one large chunk per
 *                 series and an index; raw retention deletes whole blocks.
 *                 Block chunks store values as decimals (m / 10^e) with
 *                 bit-packed deltas, Gorilla where values are not decimals
 *                 (store_fmt.h, bchunk.c): 0.7 B/sample on GPU gauges
 *   rollups/      1-minute rollups (min, max, sum, count) per series and
 *                 window, written at compaction and kept longer
 *   meta.db       SQLite (WAL mode): the series registry, store metadata
 *   series.log    the registry's second copy: a checksummed journal of
 *                 (id, labels), appended before meta.db commits
 *
 * In memory: the series index (series.h) and one open Gorilla chunk per
 * series (chunk.h).
 *
 * Appends: samples of one series must come in increasing time. As in
 * Prometheus, a sample older than the series' newest is rejected as out of
 * order; one at the same time with the same value bits is a duplicate,
 * dropped silently (a sender's retry); one at the same time with other bits
 * is a conflict, rejected. Rejections are counted, never stored. Beyond
 * Prometheus, an older sample that equals (time and value bits) one the
 * series still holds in its newest two chunks also counts as a duplicate,
 * so a sender that retries a multi-sample request after losing the answer
 * is told success rather than "out of order". Sample times below
 * -2^61 ms are refused as too old, above 2^61 ms as too far in the
 * future whatever the bound.
 *
 * Time: the store's "now" (the too-old floor, which windows compaction
 * takes, retention) is the server's clock (o.clock_ms), never the newest
 * sample: one sender with a wrong clock must not move it. A sample more
 * than max_future_ms ahead of that clock is refused (too_far_in_future),
 * as Mimir's create grace period does; samples already held from before
 * that bound existed are only data, kept until their window is due.
 *
 * Write errors (a full disk): the append that meets one answers GP_EIO
 * and appends are refused from then on (GP_EIO, "writes paused") while
 * the store resumes by itself (resume.c): every second, once the file
 * system has room, it starts a new WAL segment, cuts the torn record off
 * the chunk file and checkpoints the whole head, so what was in memory
 * but not in the log is durable before any append is acknowledged again.
 *
 * Crash safety: gp_store_append returns only after the batch is in the
 * WAL and synced. Start-up loads blocks, chunk segments and the snapshot,
 * then replays the WAL after the snapshot, skipping samples at or before
 * a series' newest persisted time, so each sample is restored once.
 * Damage (docs/storage.md "Damage and repair"): a missing or damaged
 * head.snap or meta.db is set aside and rebuilt from the other files, a
 * damaged WAL record skipped with the records after it replayed, a
 * damaged chunk skipped by reads and reported in the result.
 *
 * Threads: any number of appenders and readers; one lock inside orders
 * them. Background work (checkpoints, compaction, retention) runs on the
 * store's own thread.
 */
#ifndef GP_STORE_STORE_H
#define GP_STORE_STORE_H

#include "store/batch.h"
#include "store/matcher.h"

#include <stddef.h>
#include <stdint.h>

/* Default bound on sample times ahead of the store's clock: Grafana
 * Mimir's create grace period (10m); clocks under NTP are within
 * milliseconds, and a sender batching a few minutes stays inside. */
#define GP_STORE_MAX_FUTURE_MS (10 * 60 * 1000LL)

struct gp_store_options {
    const char *dir;               /* data directory, created if absent */
    int64_t retention_raw_ms;      /* 0: 15 days */
    int64_t retention_rollup_ms;   /* 0: 400 days */
    int64_t checkpoint_interval_ms;/* 0: 5 minutes */
    int64_t block_ms;              /* compaction window; 0: 2 hours */
    uint64_t wal_segment_bytes;    /* 0: the WAL default */
    size_t max_series;             /* 0: 10 million; more is rejected */
    int no_sync;                   /* 1: no fsync (benchmarks of the rest) */
    int no_background;             /* 1: no thread; the caller runs gp_store_maintain (tests) */
    int64_t max_future_ms;         /* samples later than now + this are refused; 0: 10 minutes,
                                    * < 0: no bound (backfilling synthetic future data) */
    int64_t (*clock_ms)(void);     /* the server's clock, ms since the epoch; NULL: the wall
                                    * clock (tests pass their own) */
};

struct gp_store;

/* Opens (and recovers) the store. GP_OK, GP_EIO (also: the directory is
 * in use by another process), GP_EPARSE (a hole in the WAL's numbering),
 * GP_EUSAGE (bad options: block_ms must be whole minutes), GP_EUNSUPPORTED
 * (meta.db is of a newer store format) or GP_ENOMEM, with detail.
 * A missing or damaged head.snap or meta.db does not stop it: the damaged
 * file is set aside (NAME.damaged-<unix time>), what it held is rebuilt
 * from the other files, and gp_store_stats reports it (GP_STORE_DMG_*). */
int gp_store_open(struct gp_store **out, const struct gp_store_options *o, char *err, size_t errlen);

/* Stops the thread, checkpoints, closes. Accepts NULL. */
void gp_store_close(struct gp_store *s);

/* What one append did with the request's samples. */
struct gp_append_result {
    uint64_t accepted;
    uint64_t duplicate;    /* same time and value as stored: dropped, not an error */
    uint64_t out_of_order; /* older than the series' newest sample */
    uint64_t conflict;     /* same time as the newest, other value */
    uint64_t too_old;      /* older than the raw retention window */
    uint64_t series_limit; /* samples of new series over max_series */
    uint64_t too_far_in_future; /* later than the store's clock + max_future_ms */
    uint64_t series_created;
    /* The first too_far_in_future sample, for the sender's message: its
     * series' index in the request, its time and the clock it was judged by. */
    size_t future_series;
    int64_t future_t_ms, now_ms;
};

/*
 * Appends a decoded write request and returns once it is durable.
 * Rejected samples are counted in *res and skipped; the rest is stored.
 * Returns GP_OK (even when samples were rejected: the caller answers 400
 * if any were, as Prometheus does), GP_EIO (nothing acknowledged: a write
 * error, or writes are paused since one until the store resumes them),
 * GP_ENOMEM, or GP_EUSAGE for labels
 * not in canonical form (gp_rw_decode never yields those). After an error
 * the samples before the failing one may be stored: not acknowledged,
 * but a retry finds them as duplicates.
 */
int gp_store_append(struct gp_store *s, const struct gp_batch *req, struct gp_append_result *res,
                    char *err, size_t errlen);

/* ---- reading ---- */

/* Series chosen by matchers: ids and a copy of their canonical labels. */
struct gp_store_series {
    uint32_t id;
    const uint8_t *labels; /* canonical (labels.h), owned by the selection */
    size_t labels_len;
    int64_t first_ms, last_ms; /* times of the series' oldest and newest sample held */
};
struct gp_store_selection {
    struct gp_store_series *series;
    size_t n;
    void *arena;
};

/*
 * Selects the series that satisfy every matcher and have at least one
 * sample in [mint, maxt] (INT64_MIN/INT64_MAX for all), ascending by id.
 * "Has a sample" is judged by [first_ms, last_ms] overlapping the range
 * (a series with a gap spanning the whole range is still selected).
 * nm 0 selects every series.
 * GP_OK or GP_ENOMEM. Free with gp_store_selection_free.
 */
int gp_store_select(struct gp_store *s, const struct gp_matcher *m, size_t nm, int64_t mint,
                    int64_t maxt, struct gp_store_selection *out);
void gp_store_selection_free(struct gp_store_selection *sel);

/*
 * As gp_store_select, without the copy, for callers that keep what they
 * need of a large selection (the inventory, query.h): fn sees each
 * series in turn, first without its labels (labels NULL); returning 1
 * asks for them, and fn is called again with them pointing into the
 * index (valid during the call only). fn runs under the store's read
 * lock: it must not call the store. GP_OK or GP_ENOMEM.
 */
typedef int (*gp_store_series_fn)(void *arg, const struct gp_store_series *se);
int gp_store_select_each(struct gp_store *s, const struct gp_matcher *m, size_t nm, int64_t mint,
                         int64_t maxt, gp_store_series_fn fn, void *arg);

/* A growable array of raw samples. damaged counts the chunks reads
 * skipped as damaged and [damaged_from, damaged_to] the time they
 * covered; reads add to them, callers that reuse the array reset them. */
struct gp_samples {
    int64_t *t;
    double *v;
    size_t n, cap;
    uint32_t damaged;
    int64_t damaged_from, damaged_to;
};
void gp_samples_free(struct gp_samples *x);

/*
 * Appends the raw samples of series id with mint <= t <= maxt, in time
 * order, to out (from blocks, chunk segments and the head alike).
 * GP_OK, GP_ENOMEM, GP_EIO or GP_EPARSE (a damaged chunk: logged,
 * counted in out->damaged with its time span and in the stats'
 * damaged_chunks_read, and the rest of the range still returned).
 */
int gp_store_read(struct gp_store *s, uint32_t id, int64_t mint, int64_t maxt, struct gp_samples *out);

/*
 * The newest number (not NaN, not a stale marker) of series id within
 * lookback_ms before its last sample at last_ms, or NaN (read errors
 * too: callers use it for best-effort readings). scratch is reused.
 */
double gp_store_newest_value(struct gp_store *s, uint32_t id, int64_t last_ms, int64_t lookback_ms,
                             struct gp_samples *scratch);

/* One minute of one series: the minute starting at t (a multiple of 60000 ms). */
struct gp_rollup {
    int64_t t;
    double min, max, sum;
    uint64_t count; /* samples in the minute, stale markers not counted; a NaN
                     * sample counts and makes sum NaN (min/max skip it) */
};
struct gp_rollups {
    struct gp_rollup *r;
    size_t n, cap;
    uint32_t damaged; /* as in gp_samples: raw data skipped as damaged */
    int64_t damaged_from, damaged_to;
};
void gp_rollups_free(struct gp_rollups *x);

/*
 * Appends the 1-minute rollups of series id for the minutes that overlap
 * [mint, maxt], in time order: from rollup files where compaction wrote
 * them, computed from raw samples for newer minutes. Minutes without
 * samples are absent. Same returns as gp_store_read.
 */
int gp_store_read_rollups(struct gp_store *s, uint32_t id, int64_t mint, int64_t maxt,
                          struct gp_rollups *out);

/* Distinct label names / values (of series matching m, or of all when
 * nm is 0), sorted, via fn. GP_OK or GP_ENOMEM. */
int gp_store_label_names(struct gp_store *s, const struct gp_matcher *m, size_t nm,
                         void (*fn)(void *arg, const char *name, size_t len), void *arg);
int gp_store_label_values(struct gp_store *s, const char *name, const struct gp_matcher *m,
                          size_t nm, void (*fn)(void *arg, const char *value, size_t len),
                          void *arg);

/* ---- maintenance and health ---- */

/* Runs due background work now: checkpoint, compaction, retention
 * (force: all of it regardless of timers). For tests and shutdown.
 * While writes are paused it tries to resume them instead (at most once
 * a second unless force) and returns GP_EIO until that succeeds. */
int gp_store_maintain(struct gp_store *s, int force);

/* 1 while writes are paused after a write error, with what failed in
 * why (may be NULL); 0 when appends are taken. Cheap: for every request. */
int gp_store_write_paused(struct gp_store *s, char *why, size_t whylen);

struct gp_store_stats {
    uint64_t series;
    uint64_t head_chunks, head_bytes;
    uint64_t samples_appended; /* since start */
    uint64_t rejected_out_of_order, rejected_conflict, rejected_too_old, rejected_series_limit;
    uint64_t rejected_too_far_in_future;
    uint64_t write_errors;     /* episodes of paused writes (a write error each) */
    uint64_t write_resumes;    /* of them, how many the store resumed by itself */
    int writes_paused;         /* 1 now */
    uint64_t duplicates;
    uint64_t wal_bytes, wal_syncs;
    uint64_t disk_bytes;       /* chunks + blocks + rollups + snapshot + meta */
    uint64_t blocks, checkpoints, compactions;
    int64_t oldest_ms, newest_ms;
    double replay_seconds;     /* time the last start spent recovering */
    uint64_t replayed_samples;
    /* Damage (docs/storage.md "Damage and repair"): what the last open
     * found and worked around, and damaged chunks met by reads since. */
    unsigned damage;               /* GP_STORE_DMG_* bits */
    uint64_t series_lost;          /* ids holding data whose labels no file keeps */
    uint64_t wal_corrupt_records;  /* bad records before the WAL's end, at the last open */
    uint64_t wal_recovered_records;/* valid records found after them */
    uint64_t damaged_chunks_read;  /* chunks reads skipped as damaged, since start */
};

/* Checks the CRC of every chunk in every block (what `gpulse repair`
 * reports): *chunks checked, *damaged of them bad (logged each). */
void gp_store_check_blocks(struct gp_store *s, uint64_t *chunks, uint64_t *damaged);

/* What gp_store_open found damaged or missing (stats.damage bits). */
#define GP_STORE_DMG_SNAP_MISSING 1u /* head.snap missing: rebuilt from the other files */
#define GP_STORE_DMG_SNAP_DAMAGED 2u /* head.snap damaged: set aside, rebuilt */
#define GP_STORE_DMG_META_DAMAGED 4u /* meta.db damaged: set aside, registry rebuilt */
#define GP_STORE_DMG_WAL_CORRUPT 8u  /* a corrupt record before the WAL's end */
#define GP_STORE_DMG_CHUNK_FILE 16u  /* damaged records in a chunk file: those chunks lost */
#define GP_STORE_DMG_SERIES_LOG 32u  /* series.log damaged or missing: rebuilt from meta.db */
#define GP_STORE_DMG_COUNT 6
/* Short lowercase description of one bit ("head.snap missing"), or NULL. */
const char *gp_store_damage_name(unsigned bit);
/* Its name as a metric label value ("head_snap_missing"), or NULL. */
const char *gp_store_damage_label(unsigned bit);
void gp_store_stats(struct gp_store *s, struct gp_store_stats *st);

#endif
