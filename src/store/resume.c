/*
 * resume.c - the store's clock, and pausing and resuming writes around a
 * write error (a full disk, mostly).
 *
 * Clock: everything that asks "what time is it" (the too-old floor, the
 * future bound, which windows compaction takes, retention) asks
 * gp_st_now: the server's clock, never the newest sample, so a sender
 * with a wrong clock cannot move the store's time.
 *
 * Pausing: a failed WAL or chunk-file write leaves samples in the head
 * that the log does not cover (head.c appends to the head first), so
 * from then on appends answer GP_EIO ("writes paused") and the server
 * answers 503 with Retry-After. Nothing acknowledged is at risk: every
 * acknowledged batch was synced before the error.
 *
 * Resuming, from the maintenance thread at most once a second:
 *   1. only when statvfs says the file system has room for a snapshot of
 *      the head (a resume that fails midway leaves empty files behind);
 *   2. under the write lock, reopen the WAL into a new segment (torn
 *      record cut) and repair the chunk-file writer the same way;
 *   3. a checkpoint in resume mode: it snapshots every head, syncs the
 *      chunk files, registers new series in meta.db and renames the
 *      snapshot; once that is durable the head is covered again, and the
 *      same locked step that removes the old WAL segments clears the
 *      pause. Until then appends stay refused, so no sample is
 *      acknowledged that is not durable: a sender's retry of a batch
 *      that reached the head before the error finds it as a duplicate
 *      only once the snapshot holds it. The WAL never reports a position
 *      from before the error as durable (wal.h, gp_wal_reopen).
 * A latch from a failed fsync of a chunk file cannot be repaired (the
 * kernel may have dropped its pages): that needs a restart, whose WAL
 * replay rewrites the file, and the log says so.
 */
#include "store/store_int.h"

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* Room beyond the head's snapshot that a resume wants: the WAL's first
 * batches and SQLite's journal. */
#define RESUME_SLACK_BYTES (4u << 20)
#define RESUME_EVERY_MS 1000

int64_t gp_st_now(const struct gp_store *s)
{
    return s->o.clock_ms ? s->o.clock_ms() : gp_wall_ms();
}

void gp_st_set_broken(struct gp_store *s, const char *what, int e)
{
    if (s->broken)
        return;
    s->broken = GP_EIO;
    s->write_errors++;
    s->broken_since_ms = gp_mono_ms();
    s->resume_tried_ms = s->broken_since_ms; /* the disk is not freed within the same second */
    int n = snprintf(s->broken_why, sizeof s->broken_why, "cannot %s: %s", what,
                     e ? strerror(e) : "i/o error");
    /* strerror capitalizes; messages here are lowercase. */
    size_t at = strlen("cannot ") + strlen(what) + 2;
    if (n > 0 && at < sizeof s->broken_why)
        s->broken_why[at] = (char)tolower((unsigned char)s->broken_why[at]);
    char q[200];
    gp_log(GP_LOG_ERROR, "store", "write failed; writes paused until the store can resume them",
           "error=%s", gp_log_quote(q, sizeof q, s->broken_why));
}

int gp_store_write_paused(struct gp_store *s, char *why, size_t whylen)
{
    pthread_rwlock_rdlock(&s->lock);
    int paused = s->broken != 0;
    if (paused && why && whylen)
        snprintf(why, whylen, "%s", s->broken_why);
    pthread_rwlock_unlock(&s->lock);
    return paused;
}

/* 1 when the data directory's file system has room for the snapshot of
 * the head (or statvfs cannot tell: then the attempt itself finds out). */
static int has_room(struct gp_store *s)
{
    uint64_t need = RESUME_SLACK_BYTES;
    pthread_rwlock_rdlock(&s->lock);
    uint32_t max_id = gp_sindex_max_id(s->idx);
    for (uint32_t id = 1; id <= max_id && id < s->ser_cap; id++)
        if (s->ser[id].exists)
            need += 64 + gp_chunk_size(&s->ser[id].head);
    pthread_rwlock_unlock(&s->lock);
    struct statvfs v;
    if (statvfs(s->dir, &v) != 0)
        return 1;
    /* root may write into the blocks reserved for it (ext4's 5 %) */
    uint64_t blocks = geteuid() == 0 ? v.f_bfree : v.f_bavail;
    return blocks * v.f_frsize >= need;
}

int gp_st_resume(struct gp_store *s, int force)
{
    pthread_rwlock_wrlock(&s->lock);
    int due = s->broken && (force || gp_mono_ms() - s->resume_tried_ms >= RESUME_EVERY_MS);
    int broken = s->broken;
    if (due)
        s->resume_tried_ms = gp_mono_ms();
    pthread_rwlock_unlock(&s->lock);
    if (!broken)
        return GP_OK;
    if (!due || !has_room(s))
        return GP_EIO;

    pthread_rwlock_wrlock(&s->lock);
    char err[256] = "";
    int rc = gp_wal_reopen(s->wal, err, sizeof err);
    if (rc == GP_OK && gp_segw_repair(s->cw) != GP_OK) {
        rc = GP_EIO;
        snprintf(err, sizeof err, "chunk file writer: %s%s", strerror(gp_segw_errno(s->cw)),
                 "; a failed sync of a chunk file needs a restart (the WAL replay rewrites it)");
    }
    pthread_rwlock_unlock(&s->lock);
    if (rc != GP_OK) {
        char q[300];
        gp_log(GP_LOG_WARN, "store", "writes still paused: cannot reopen the logs", "error=%s",
               gp_log_quote(q, sizeof q, err));
        return GP_EIO;
    }
    return gp_st_checkpoint(s, 1) == GP_OK ? GP_OK : GP_EIO;
}
