/*
 * store_int.h - what the store's files share (prefix gp_st_): the store
 * object, the per-series state and the internal calls between
 *
 *   store.c    open (recovery order), close, the background thread,
 *              gp_store_maintain, stats
 *   head.c     the append path: series lookup, the ordering rules, head
 *              chunks and cutting them into chunk files
 *   persist.c  chunk files, the head snapshot and checkpoints, WAL replay
 *   compact.c  compaction into blocks and rollups, retention
 *   read.c     select, read, read_rollups, label names and values
 *   meta.c     SQLite: the series registry and the format version
 *   serieslog.c series.log: the registry's second copy (a journal)
 *   symtab.c   the symbols both copies name labels by
 *   resume.c   the store's clock, pausing writes on a write error and
 *              resuming them once the disk has room again
 *
 * Locking: `lock` (a writer-preferring rwlock) guards everything below
 * except what is marked otherwise; appends and maintenance steps that
 * change state take it for writing, reads for reading. `maint` serializes
 * maintenance (checkpoint, compaction, retention) so those can drop
 * `lock` while they do slow I/O.
 */
#ifndef GP_STORE_STORE_INT_H
#define GP_STORE_STORE_INT_H

#include "lib/buf.h"
#include "store/chunk.h"
#include "store/segment.h"
#include "store/series.h"
#include "store/store.h"
#include "store/store_fmt.h"
#include "store/symtab.h"
#include "store/wal.h"

#include <pthread.h>
#include <stdint.h>

/* Head chunks: cut at 480 samples (8 minutes of a 1 s series), at 4 KiB
 * (noisy values) and at block window edges. Prometheus cuts at 120; at 480
 * a head read of an hour parses, checks and decodes 8 chunk records a
 * series rather than 30, each a cache miss apart (a 1-hour head query
 * costs ~13% less CPU), for ~3 KiB more head memory per series at most.
 * Closed chunks of any size up to these read (older files: 120). */
#define GP_ST_HEAD_SAMPLES 480u
#define GP_ST_HEAD_BYTES 4096u
/* A chunk file is rotated past this size (offsets stay 32-bit). */
#define GP_ST_CHUNK_FILE_MAX (1u << 30)
/* A checkpoint is due once the WAL holds this much. */
#define GP_ST_WAL_CHECKPOINT_BYTES (256ull << 20)
/* Sample times beyond +-2^61 ms are refused (window arithmetic stays in range). */
#define GP_ST_T_LIMIT ((int64_t)1 << 61)

/* A closed chunk in a chunk file, not yet compacted. */
struct gp_st_ref {
    uint32_t file; /* chunk file number */
    uint32_t off;  /* offset of its record */
    int64_t t_first, t_last;
};

struct gp_st_series {
    struct gp_chunk head;    /* the open chunk (owned, growable) */
    int64_t first, newest;   /* oldest / newest sample held (valid when has_data) */
    uint64_t newest_bits;    /* the newest sample's value bits (duplicate vs conflict) */
    struct gp_st_ref *refs;  /* closed chunks in time order */
    uint32_t nrefs, caprefs;
    uint8_t exists;   /* the id names a series (ids can have gaps) */
    uint8_t has_data;
    uint8_t newest_known; /* newest_bits is the value at newest (an append or the snapshot set both) */
    struct gp_st_hcache *hc; /* head's samples decoded (hcache.c); NULL: none kept */
};

/* A chunk file. */
struct gp_st_cfile {
    uint32_t num;
    int rfd;       /* read-only descriptor (compaction's preads) */
    const uint8_t *map; /* the file mapped read-only, GP_ST_CHUNK_FILE_MAX long
                         * (only its first size bytes are ever touched), or
                         * NULL when mapping failed: reads then pread */
    uint64_t size; /* bytes written: records below it are whole */
    uint64_t live; /* refs pointing into it */
};

/* A mapped block or rollup file. */
struct gp_st_mapped {
    char *path;
    uint8_t *map;
    size_t len;
    struct gp_st_bfile bf;
};

struct gp_st_mlist {
    struct gp_st_mapped *f; /* sorted by mint */
    size_t n, cap;
};

struct gp_store {
    struct gp_store_options o; /* defaults filled in; dir points at dir below */
    char *dir, *wal_dir, *chunk_dir, *block_dir, *rollup_dir;
    int lock_fd;

    pthread_rwlock_t lock;
    pthread_mutex_t maint; /* taken before lock, never inside it */

    struct gp_sindex *idx;
    struct gp_st_series *ser; /* indexed by id; ser[0] unused */
    size_t ser_cap;

    struct gp_wal *wal;
    int broken; /* GP_EIO: a write error, appends refused until resume.c clears it;
                 * GP_EPARSE: open failed midway, close must not checkpoint */
    char broken_why[160];      /* what failed, for errors and health */
    int64_t broken_since_ms;   /* monotonic */
    int64_t resume_tried_ms;   /* monotonic; resume attempts at most once a second */
    uint64_t write_errors, write_resumes;

    /* chunk files */
    struct gp_st_cfile *cf; /* ascending num; the last is the current one */
    size_t ncf, capcf;
    struct gp_segw *cw;     /* writer of the current chunk file */
    struct gp_segw **unsynced; /* rotated writers the next checkpoint syncs */
    size_t nunsynced, capunsynced;

    struct gp_st_mlist blocks, rollups;

    int64_t compacted_until; /* data before this lives in blocks only */
    int64_t max_t;           /* newest sample time held (INT64_MIN: none): stats only,
                              * never the store's clock (gp_st_now) */
    int64_t data_min;        /* oldest uncompacted sample time (INT64_MAX: none) */
    uint32_t persisted_max_id; /* highest series id in meta.db (maint only) */

    void *db;          /* sqlite3 (maint and open/close only) */
    void *db_insert;   /* sqlite3_stmt */
    struct gp_segw *slog; /* series.log's appender (maint and open/close only) */
    /* Label symbols of meta.db and series.log (maint and open/close only):
     * meta.db holds numbers up to sym_meta, series.log up to sym_slog. */
    struct gp_st_syms syms;
    uint32_t sym_meta, sym_slog;
    int meta_version; /* meta.db's store format as opened (GP_ST_META_VERSION after start) */

    /* append scratch, reused (steady state allocates nothing) */
    struct gp_buf lbuf;
    struct gp_wal_sample *ws;
    size_t ws_cap;
    struct gp_wal_series *wser;
    size_t wser_cap;
    uint8_t crec[GP_ST_CHUNKREC_HDR + GP_ST_HEAD_BYTES];
    /* a cut chunk's samples and their block encoding (head.c) */
    int64_t cut_t[GP_ST_HEAD_SAMPLES];
    double cut_v[GP_ST_HEAD_SAMPLES];
    struct gp_st_bchunk_scratch cut_sc;
    struct gp_buf cut_buf;
    /* The newest two chunks of one series, decoded once per append for
     * the duplicate check of retried samples (head.c, stored_sample). */
    uint32_t dup_id, dup_n;
    int64_t dup_t[2 * GP_ST_HEAD_SAMPLES];
    uint64_t dup_v[2 * GP_ST_HEAD_SAMPLES];

    /* counters (under lock) */
    uint64_t samples_appended, rej_ooo, rej_conflict, rej_too_old, rej_limit, rej_future, duplicates;
    uint64_t checkpoints, compactions, replayed_samples;
    uint64_t snap_bytes, block_bytes, rollup_bytes;
    double replay_seconds;
    int64_t last_checkpoint_ms; /* monotonic */
    /* damage found at open (store.h GP_STORE_DMG_*) */
    unsigned damage;
    uint64_t series_lost, wal_corrupt, wal_recovered;
    uint64_t damaged_reads; /* atomic: readers hold the lock for reading only */
    size_t hc_bytes;        /* atomic: the hcache.c entries' bytes */
    uint32_t *unk;          /* ids met at open that no series names (open only) */
    size_t nunk, capunk;

    /* background thread */
    pthread_t thread;
    int thread_started;
    pthread_mutex_t tmu;
    pthread_cond_t tcond;
    int stop;
};

/* ---- store.c ---- */
char *gp_st_path(const char *dir, const char *name); /* malloc'd dir/name, NULL on ENOMEM */
/* Makes sure ser[] holds id (zeroed new entries). GP_OK or GP_ENOMEM. */
int gp_st_ser_reserve(struct gp_store *s, uint32_t id);
/* Renames dir/name (and name-wal, name-shm when present) to
 * name.damaged-<unix time>, never deleting; the new name goes to out.
 * GP_OK, GP_ENOTFOUND or GP_EIO. */
int gp_st_set_aside(const char *dir, const char *name, char *out, size_t outlen);
/* Notes an id with data but no series at open (counted as lost). */
void gp_st_unknown_id(struct gp_store *s, uint32_t id);

/* ---- hcache.c ---- */
/* The decoded open head chunks kept between reads: at most this many
 * bytes in all (~2,100 series at 7.7 kB; hcache.c). */
#define GP_ST_HCACHE_MAX ((size_t)16 << 20)
struct gp_st_hcache {
    int busy;                /* atomic: a reader holds the entry */
    size_t n;                /* samples decoded into t, v */
    struct gp_chunk_iter it; /* where decoding stopped; data re-pointed each read */
    int64_t t[GP_ST_HEAD_SAMPLES];
    double v[GP_ST_HEAD_SAMPLES];
};
/* Appends the samples of se's head chunk in [mint, maxt] newer than
 * *last from the series' kept decode, first decoding what was appended
 * since the last read (read lock held). GP_OK, GP_ENOMEM, or 1 when
 * nothing is kept or the chunk did not decode: the caller decodes it. */
int gp_st_hcache_emit(struct gp_store *s, struct gp_st_series *se, int64_t mint, int64_t maxt,
                      int64_t *last, struct gp_samples *out);
/* Frees se's kept decode (write lock held: its head chunk is cut). */
void gp_st_hcache_drop(struct gp_store *s, struct gp_st_series *se);

/* ---- head.c ---- */
/* Appends one sample known to be newer than the series' newest, cutting
 * the head at window edges and when full. GP_OK, GP_ENOMEM or GP_EIO. */
int gp_st_head_append(struct gp_store *s, uint32_t id, int64_t t, uint64_t bits);
/* Writes the head chunk of id to the current chunk file as a ref and
 * empties it. GP_OK or GP_EIO (s->broken is then set). */
int gp_st_head_cut(struct gp_store *s, uint32_t id);
/* Adds a ref to a series (GP_OK or GP_ENOMEM). */
int gp_st_ref_push(struct gp_store *s, uint32_t id, const struct gp_st_ref *r);
/* The cfile entry of chunk file num, or NULL. */
struct gp_st_cfile *gp_st_cfile_find(struct gp_store *s, uint32_t num);

/* ---- persist.c ---- */
/* Loads chunk files below keep_below, deletes the rest, opens the writer
 * after the highest kept (UINT32_MAX: keep and load them all). */
int gp_st_chunks_load(struct gp_store *s, uint32_t keep_below, char *err, size_t errlen);
/* Starts a new chunk file (the old writer goes to s->unsynced). */
int gp_st_chunks_rotate(struct gp_store *s);
/* Removes chunk files no ref points into (but the current one). Under lock. */
void gp_st_chunks_gc(struct gp_store *s);
/* 0: chunk files are not mapped (reads pread): tests cover that path. */
extern int gp_st_map_chunk_files;
/* Unmaps and closes a chunk file's entry (the file stays on disk). */
void gp_st_cfile_close(struct gp_st_cfile *f);
/* Prefetches the start of a mapped chunk record (a hint; no checks). */
void gp_st_chunk_prefetch(struct gp_store *s, const struct gp_st_ref *r);
/* The record at (file, off), checked (CRC, framing, the ref's times) and
 * split: *chunk points into the file's mapping, or into buf (cap bytes)
 * where the file is not mapped; *packed: 1 for a block chunk
 * (GP_ST_REC_PCHUNK), 0 for Gorilla. Under lock. GP_OK, GP_EPARSE, GP_EIO. */
int gp_st_chunk_read(struct gp_store *s, const struct gp_st_ref *r, uint8_t *buf, size_t cap,
                     const uint8_t **chunk, size_t *len, int *packed);
/* The same through a descriptor, without the store (compaction reads
 * outside the lock). */
int gp_st_chunk_pread(int fd, const struct gp_st_ref *r, uint8_t *buf, size_t cap,
                      const uint8_t **chunk, size_t *len, int *packed);
/* The sample count a split chunk announces: GP_OK or GP_EPARSE. */
int gp_st_chunk_count(const uint8_t *p, size_t len, int packed, size_t *n);
/* Decodes a split chunk (either form) into t and v, room for cap: the
 * count, or GP_EPARSE; *got: the samples in t and v that count (for a
 * damaged Gorilla chunk, those before the damage). */
int gp_st_chunk_decode(const uint8_t *p, size_t len, int packed, int64_t *t, double *v, size_t cap,
                       size_t *got);
/* Bytes a chunk record can take: the read buffer size. */
#define GP_ST_CHUNKREC_MAX (GP_SEG_HEADER + GP_ST_CHUNKREC_HDR + GP_ST_HEAD_BYTES)
/* Restores the series records of a parsed snapshot into the head. */
int gp_st_snap_restore(struct gp_store *s, const uint8_t *buf, size_t len, char *err, size_t errlen);
/* Replays the WAL from segment from. */
int gp_st_wal_replay(struct gp_store *s, uint32_t from, char *err, size_t errlen);
/* A full checkpoint (maint held, lock not held). resume: runs although
 * s->broken and, once committed, clears it (resume.c). GP_OK, GP_EIO or
 * GP_ENOMEM; a failure is logged with its step and cause. */
int gp_st_checkpoint(struct gp_store *s, int resume);

/* ---- compact.c ---- */
int gp_st_blocks_load(struct gp_store *s, char *err, size_t errlen);
/* Without a snapshot: each series' first/newest time and the store's
 * max_t from the blocks' indexes, so block data stays visible. */
void gp_st_blocks_bounds(struct gp_store *s);
void gp_st_mlist_free(struct gp_st_mlist *l);
/* Compacts every due window (maint held). force: windows up to the current one. */
int gp_st_compact(struct gp_store *s, int force);
/* Deletes blocks and rollups past retention (maint held). */
int gp_st_retention(struct gp_store *s);
/* Raw samples before this time are gone (in no block: retention or
 * damage), so a series' first sample is at least this. Under lock. */
int64_t gp_st_raw_floor(const struct gp_store *s);
/* Recomputes s->data_min from refs and heads. Under lock. */
void gp_st_data_min(struct gp_store *s);

/* ---- meta.c ---- */
/* meta.db's store format: 2 keeps label sets by reference to the symbols
 * table (symtab.h); 1, series' labels as blobs, is read and rewritten as
 * 2 at start. A gpulse that reads only 1 refuses a store of 2. */
#define GP_ST_META_VERSION 2u
/* Opens and loads meta.db; a damaged or missing one is set aside and
 * rebuilt (GP_STORE_DMG_META_DAMAGED). Errors as the two below. */
int gp_st_meta_start(struct gp_store *s, char *err, size_t errlen);
int gp_st_meta_open(struct gp_store *s, char *err, size_t errlen);
/* Loads the series registry into s->idx and s->ser. */
int gp_st_meta_load(struct gp_store *s, char *err, size_t errlen);
/* Inserts series in one transaction. GP_OK or GP_EIO with SQLite's
 * reason for the first failure in err. */
int gp_st_meta_insert(struct gp_store *s, const struct gp_wal_series *list, size_t n, char *err,
                      size_t errlen);
/* Sets meta(key) = value. GP_OK or GP_EIO (logged). */
int gp_st_meta_set(struct gp_store *s, const char *key, int64_t value);
void gp_st_meta_close(struct gp_store *s);
uint64_t gp_st_meta_bytes(const struct gp_store *s);

/* Every registered series in id order, its labels inside the index
 * (valid while the registry is unchanged); *n set. The caller frees the
 * list; NULL when out of memory. */
struct gp_wal_series *gp_st_meta_list(const struct gp_store *s, size_t *n);

/* Enters series id (labels as read back from meta.db, series.log or
 * the WAL) into the index with an empty head. GP_OK, GP_ENOMEM, or
 * another error when the index refuses it (id or labels taken). */
int gp_st_meta_register(struct gp_store *s, uint32_t id, const uint8_t *labels, size_t len);

/* ---- serieslog.c ---- */
#define GP_ST_SLOG_SERIES 1  /* record type: u32 LE id, labels blob (before symbols) */
#define GP_ST_SLOG_SYMBOLS 2 /* a symbol range (symtab.h) */
#define GP_ST_SLOG_REFS 3    /* repeated { uvarint id, the labels' reference form } */
struct gp_st_slog_stats {
    uint64_t records;     /* valid series */
    uint64_t bad_records; /* damaged records (or series in them) with valid ones after them */
    uint64_t torn_bytes;  /* a torn tail (a crash mid-append) */
    uint64_t old_records; /* series in records of type 1 (a file of an older gpulse) */
    uint32_t max_id;
};
/* Calls fn for each valid series of a series.log image (ids nonzero,
 * labels valid), stepping over damage; fn's nonzero return stops it and
 * is returned (also GP_ENOMEM). The file's symbols go into syms (the
 * caller's, zeroed or not; the caller frees it). The labels handed to fn
 * are valid during the call only. Pure: the fuzz target uses it. */
int gp_st_slog_parse(const uint8_t *buf, size_t len, struct gp_st_syms *syms,
                     int (*fn)(void *ctx, const struct gp_wal_series *ws), void *ctx,
                     struct gp_st_slog_stats *st);
/* Reads DIR/series.log whole into f and parses it (gp_st_slog_parse);
 * the caller frees f (gp_seg_file_free, also after an error). GP_OK, GP_ENOTFOUND, GP_EIO
 * or GP_ENOMEM (with detail), or fn's return. */
int gp_st_slog_read(const struct gp_store *s, struct gp_seg_file *f, struct gp_st_syms *syms,
                    int (*fn)(void *ctx, const struct gp_wal_series *ws), void *ctx,
                    struct gp_st_slog_stats *st, char *err, size_t errlen);
/* Opens the appender (a torn tail is cut and logged). */
int gp_st_slog_open(struct gp_store *s, char *err, size_t errlen);
/* Replaces series.log by the whole registry and every symbol (tmp, sync,
 * rename) and opens the appender. GP_OK, GP_EIO or GP_ENOMEM with detail. */
int gp_st_slog_rewrite(struct gp_store *s, char *err, size_t errlen);
/* Appends and syncs series, after the symbols above sym_slog (before
 * meta.db commits them). GP_OK, GP_EIO
 * (the appender is cut back to its last whole record) or GP_ENOMEM. */
int gp_st_slog_append(struct gp_store *s, const struct gp_wal_series *list, size_t n, char *err,
                      size_t errlen);
void gp_st_slog_close(struct gp_store *s);
uint64_t gp_st_slog_bytes(const struct gp_store *s);

/* ---- resume.c ---- */
/* The store's "now" in ms since the epoch: the server's clock. */
int64_t gp_st_now(const struct gp_store *s);
/* Pauses writes after a failed write (under the write lock): what failed
 * and the errno, logged once per episode and counted. */
void gp_st_set_broken(struct gp_store *s, const char *what, int e);
/* Tries to resume paused writes (maint held, lock not held): at most
 * once a second unless force, and only when the file system has room.
 * GP_OK when writes are taken (again), else GP_EIO. */
int gp_st_resume(struct gp_store *s, int force);

#endif
