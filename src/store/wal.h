/*
 * wal.h - the store's write-ahead log.
 *
 * Every accepted write is one WAL batch, appended under the store's lock
 * and made durable by gp_wal_sync before the sender gets its 204, so an
 * acknowledged sample survives a crash (DESIGN.md "Storage"). The log is
 * a directory of numbered segment files (`%08u.wal`, segment.h framing);
 * a batch never spans two segments. Record types:
 *
 *   1 SERIES   new series first seen in this batch:
 *              repeated { uvarint id, uvarint len, len bytes of labels }
 *              (labels in the canonical form of labels.h)
 *   2 SAMPLES  uvarint count, then per sample { uvarint id,
 *              varint (zigzag) timestamp ms as a delta from the previous
 *              sample of the record (the first from 0), 8 bytes value
 *              bits little-endian }
 *
 * A batch writes its SERIES record (when it has new series) before its
 * SAMPLES record, in one writev, so replay always knows a sample's series.
 *
 * Checkpoints: the store persists what the head holds, then calls
 * gp_wal_cut (start a new segment) and, once that state is durable,
 * gp_wal_remove_before (drop the segments it covers).
 *
 * Threads: gp_wal_append, gp_wal_cut and gp_wal_remove_before are called
 * under the store's write lock; gp_wal_sync is called by many request
 * threads at once, outside that lock, and batches their fdatasyncs (group
 * commit: one fdatasync covers every batch appended before it started).
 */
#ifndef GP_STORE_WAL_H
#define GP_STORE_WAL_H

#include <stddef.h>
#include <stdint.h>

#define GP_WAL_REC_SERIES 1
#define GP_WAL_REC_SAMPLES 2

/* Default segment size: a new segment is started once this is passed. */
#define GP_WAL_DEFAULT_SEGMENT_BYTES (64u << 20)

struct gp_wal_series {
    uint32_t id;
    const uint8_t *labels; /* canonical, labels.h */
    size_t labels_len;
};

struct gp_wal_sample {
    uint32_t id;
    int64_t t_ms;
    uint64_t v_bits; /* the value's raw bits: NaN payloads survive */
};

/* Where a batch ends: durable once gp_wal_sync(pos) returned GP_OK.
 * epoch: the log's failure count when it was appended; a position from
 * before a failure is reported durable after it only if it was synced
 * before it (gp_wal_reopen). */
struct gp_wal_pos {
    uint32_t segment;
    uint64_t offset;
    uint64_t epoch;
};

struct gp_wal_options {
    uint64_t segment_bytes; /* 0: GP_WAL_DEFAULT_SEGMENT_BYTES */
    int no_sync;            /* 1: skip fdatasync (benchmarks of the rest only) */
};

/* Replay callbacks; a nonzero return stops the replay with that code.
 * Either may be NULL. A record is validated whole before any callback;
 * its samples may then arrive in several calls (up to 256 at a time). */
struct gp_wal_handler {
    int (*series)(void *ctx, const struct gp_wal_series *s);
    int (*samples)(void *ctx, const struct gp_wal_sample *s, size_t n);
};

struct gp_wal_replay_stats {
    uint32_t segments;     /* segment files read */
    uint64_t records;      /* good records */
    uint64_t series, samples;
    uint64_t torn_bytes;   /* cut from the end of the last segment */
    int corrupt;           /* 1: a bad record before the log's end */
    uint64_t corrupt_records;   /* damaged stretches skipped (not torn tails) */
    uint64_t recovered_records; /* valid records found after them in their segments */
};

/*
 * Replays segments numbered >= from_segment in order, calling h for each
 * record. Run before gp_wal_open. A torn record at the end of the last
 * segment is cut off (the file truncated after its last good record), as
 * Prometheus repairs its WAL: a write after a torn one was never
 * acknowledged. A bad record with valid records after it is damage: it
 * is skipped (the next valid header found by scanning), the records after
 * it replayed, the file left as it is, and the stretch counted in
 * st->corrupt_records and logged as an error naming its segment and
 * offset. Damage reaching a segment's end in an older segment ends that
 * segment only; later segments are replayed.
 * Returns GP_OK (also for a missing or empty directory), a handler's code,
 * GP_EPARSE for a record whose payload does not decode (its checksum is
 * good, so this is not a torn write: nothing is repaired) or for a hole
 * in the numbering (only a prefix is ever removed), GP_ENOMEM or GP_EIO.
 * st may be NULL.
 */
int gp_wal_replay(const char *dir, uint32_t from_segment, const struct gp_wal_handler *h, void *ctx,
                  struct gp_wal_replay_stats *st, char *err, size_t errlen);

/* gp_seg_resync for the WAL's record types: how replay steps over a
 * damaged record. Pure (the fuzz target drives it). */
size_t gp_wal_resync(const uint8_t *b, size_t len, size_t from);

/* Decodes one record's payload (the fuzz target's entry); same callbacks.
 * GP_OK, a handler's code, or GP_EPARSE (unknown type, bad varint, id 0
 * or above 2^32-1, empty labels, counts the payload cannot hold, trailing
 * bytes). Label blobs are not checked further: that is the store's job. */
int gp_wal_decode_record(uint8_t type, const uint8_t *p, size_t n, const struct gp_wal_handler *h,
                         void *ctx);

struct gp_wal;

/*
 * Opens dir (created if absent) for appending: always into a new segment
 * numbered after the highest existing one (0 in an empty directory),
 * and syncs the directory so the new file's name is durable. Returns
 * GP_OK, GP_ENOMEM or GP_EIO.
 */
int gp_wal_open(struct gp_wal **out, const char *dir, const struct gp_wal_options *o, char *err,
                size_t errlen);

/*
 * Appends one batch (series may be 0, samples may be 0 but not both).
 * Starts a new segment first when the current one is past segment_bytes.
 * Sets *end to where the batch ends. Not durable until gp_wal_sync.
 * GP_OK, GP_ENOMEM, GP_ETOOBIG (a record would pass GP_SEG_MAX_RECORD;
 * nothing written), GP_EUSAGE (nothing to append, an id 0, empty labels:
 * what replay would reject) or GP_EIO (then the WAL is broken and the
 * store must stop acknowledging writes).
 */
int gp_wal_append(struct gp_wal *w, const struct gp_wal_series *series, size_t nseries,
                  const struct gp_wal_sample *samples, size_t nsamples, struct gp_wal_pos *end);

/* Makes everything up to pos durable (group commit). GP_OK, GP_EIO, or
 * GP_EUSAGE for a position past anything appended. Returns at once when
 * pos is already durable, even while another thread's fdatasync runs. */
int gp_wal_sync(struct gp_wal *w, const struct gp_wal_pos *pos);

/*
 * After a failure (a full disk), makes the log writable again: cuts the
 * torn record off the current segment (best effort: a crash before the
 * next checkpoint replays up to it either way), starts the next segment
 * and clears the failure. Positions appended before the failure and not
 * synced by then stay undurable to gp_wal_sync (GP_EIO), whatever
 * follows, since what they wrote may be gone; the caller makes that data
 * durable otherwise (the store checkpoints its head) before it
 * acknowledges anything again.
 * GP_OK (also when nothing failed) or GP_EIO (still no room: try later).
 */
int gp_wal_reopen(struct gp_wal *w, char *err, size_t errlen);

/* Where the log ends now: syncing to it covers every batch appended so
 * far (a request whose samples were all duplicates of batches still
 * being synced waits for them so). */
void gp_wal_end(struct gp_wal *w, struct gp_wal_pos *pos);

/* The errno of the last failure (0: none since the last reopen). */
int gp_wal_errno(const struct gp_wal *w);

/* Syncs and closes the current segment and starts the next; *segment is
 * the new segment's number: replaying from it replays what follows. */
int gp_wal_cut(struct gp_wal *w, uint32_t *segment);

/* Removes the segments numbered below segment (and fsyncs the directory),
 * oldest first. GP_OK, GP_EIO, or GP_EUSAGE when segment is past the
 * current one (which is never removed). */
int gp_wal_remove_before(struct gp_wal *w, uint32_t segment);

uint64_t gp_wal_bytes(const struct gp_wal *w);   /* on disk, all segments */
uint32_t gp_wal_segment(const struct gp_wal *w); /* the current one */
uint64_t gp_wal_syncs(const struct gp_wal *w);   /* fdatasyncs done */

/* Syncs and closes; accepts NULL. */
void gp_wal_close(struct gp_wal *w);

#endif
