/*
 * push_queue.h - one remote-write target's queue of batches, in memory or
 * spooled to disk, bounded in bytes.
 *
 * A batch is one tick's remote-write body (snappy + protobuf, exactly what
 * is POSTed) with its sample count, uncompressed size and frame time. The
 * queue is a FIFO: batches are appended at the tail as ticks are encoded
 * and removed from the head when the target acknowledges them (or rejects
 * them for good), so a target that is down holds newer batches behind the
 * older ones and delivers them in order when it is back.
 *
 * With a directory the queue survives a restart: every batch is written as
 * a checksummed record (store/segment.h) to a segment file `<first-id>.seg`
 * before the caller sends it; the id of the first batch not yet
 * acknowledged is appended to a small checkpoint file `acked` (a log of
 * records, the last good one wins, rewritten when it grows). Reopening the
 * directory rebuilds the queue from the segments past the checkpoint, in
 * order, and cuts a torn tail (a crash mid-write) off the last segment.
 * Segments wholly acknowledged are deleted. Disk use is at most max_bytes
 * of queued records plus the acknowledged part of the oldest segment.
 *
 * Without a directory the same queue keeps the batches in memory.
 *
 * When an append would take the queue past max_bytes, the OLDEST batches
 * are dropped (and reported) until the new one fits: after a long outage
 * the newest data is worth more than the oldest.
 *
 * A directory has one owner at a time (flock on `lock`): a second open
 * fails until the first is closed.
 *
 * Not thread-safe: the owner serializes calls (push.c holds a mutex).
 */
#ifndef GP_PUSH_QUEUE_H
#define GP_PUSH_QUEUE_H

#include "lib/buf.h"

#include <stddef.h>
#include <stdint.h>

struct gp_pushq;

/* What is known of a batch without reading its body. */
struct gp_pushq_info {
    uint64_t id;       /* increasing from 1, never reused in a directory */
    int64_t time_ms;   /* frame time of the tick */
    uint32_t nsamples;
    uint32_t raw_len;  /* uncompressed protobuf bytes */
    uint32_t body_len; /* snappy bytes */
};

/* What an open recovered from a directory. */
struct gp_pushq_recovery {
    uint64_t batches, samples, bytes; /* queued again */
    uint64_t torn_bytes;      /* cut off the end of the last segment */
    uint64_t lost_bytes;      /* unreadable ends of older segments (corruption) */
    uint64_t lost_records;    /* well-framed records that are not batches of this queue */
    uint64_t dropped_samples; /* oldest dropped to fit a smaller max_bytes */
};

/*
 * Opens a queue. dir NULL or "": in memory. Otherwise dir is created when
 * absent (its parent must exist) and what it holds is recovered (rec may
 * be NULL). max_bytes bounds the queued records (header + payload);
 * seg_bytes is the size past which a new segment file is started (0: a
 * sixteenth of max_bytes, between 64 KiB and 8 MiB). Returns GP_OK with
 * *out set (caller closes), GP_EIO or GP_ENOMEM with detail in err.
 */
int gp_pushq_open(struct gp_pushq **out, const char *dir, uint64_t max_bytes, uint64_t seg_bytes,
                  struct gp_pushq_recovery *rec, char *err, size_t errlen);

/*
 * Appends one batch (the body is copied or written). Oldest batches are
 * dropped first when it would not fit; their samples are added to
 * *dropped_samples (may be NULL). A batch larger than max_bytes by itself
 * is not queued: GP_ETOOBIG (its samples are not in *dropped_samples). On
 * disk the record is written but not yet durable: call gp_pushq_sync.
 * GP_OK, GP_ETOOBIG, GP_ENOMEM or GP_EIO (the batch is not queued; the
 * next append starts a new segment file).
 */
int gp_pushq_append(struct gp_pushq *q, const void *body, size_t len, uint32_t nsamples,
                    uint32_t raw_len, int64_t time_ms, uint64_t *dropped_samples);

/* Makes appended batches durable (fdatasync; a no-op in memory). GP_OK or GP_EIO. */
int gp_pushq_sync(struct gp_pushq *q);

/* Batches queued. */
size_t gp_pushq_count(const struct gp_pushq *q);
/* Bytes of the queued records. */
uint64_t gp_pushq_bytes(const struct gp_pushq *q);
/* Bytes of the segment files on disk (0 in memory). */
uint64_t gp_pushq_disk_bytes(const struct gp_pushq *q);

/* The i-th oldest batch's description (i < count). */
struct gp_pushq_info gp_pushq_info(const struct gp_pushq *q, size_t i);

/*
 * Appends the i-th oldest batch's body to out (not reset first). On disk
 * the record is read back and its checksum checked: GP_EPARSE when it is
 * corrupt (the caller drops it with gp_pushq_ack past its id), GP_EIO
 * when it cannot be read. GP_OK otherwise.
 */
int gp_pushq_read(struct gp_pushq *q, size_t i, struct gp_buf *out);

/*
 * Removes every batch with an id below next_id from the head (delivered,
 * or given up on) and records the new head in the checkpoint (durably).
 * Ids already gone are ignored. Their samples are added to *samples (may
 * be NULL). GP_OK, or GP_EIO when the checkpoint cannot be written (the
 * queue is still advanced in memory).
 */
int gp_pushq_ack(struct gp_pushq *q, uint64_t next_id, uint64_t *samples);

/* Writes the checkpoint and closes; accepts NULL. Nothing queued is lost:
 * reopening the directory finds it. */
void gp_pushq_close(struct gp_pushq *q);

#endif
