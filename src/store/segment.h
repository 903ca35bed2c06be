/*
 * segment.h - append-only files of checksummed records.
 *
 * The one on-disk framing of the store (the WAL, chunk segments, the head
 * snapshot) and of the agent's push buffer. A record is
 *
 *     u32 LE  payload length n
 *     u32 LE  CRC-32C over the type byte and the payload
 *     u8      type (1..255; 0 never written, so zeroed space reads as torn)
 *     n bytes payload
 *
 * and a file is records back to back, nothing else. A crash can leave a
 * torn last record (short, or with a bad checksum); readers stop there and
 * report where the good part ends, and a writer reopening the file cuts
 * it there before appending, so a torn tail never hides later records.
 */
#ifndef GP_STORE_SEGMENT_H
#define GP_STORE_SEGMENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#define GP_SEG_HEADER 9u
/* Largest payload a record may declare; a larger length reads as corrupt. */
#define GP_SEG_MAX_RECORD (64u << 20)

/*
 * Parses the record at buf[*pos..len). Returns 1 with *type, *payload,
 * *n set and *pos advanced past it; 0 at a clean end (*pos == len);
 * GP_EPARSE when the rest is not a whole valid record (torn or corrupt:
 * *pos is left at the record's start, the end of the good part).
 * Pure: the fuzz target and every reader use it.
 */
int gp_seg_parse(const uint8_t *buf, size_t len, size_t *pos, uint8_t *type,
                 const uint8_t **payload, size_t *n);

/*
 * The offset of the first whole, valid record after the bad one at from,
 * or len when none follows (a torn or damaged tail). A candidate needs a
 * type in types (bit t for type t, 1..31), a length that ends at len or
 * at another plausible header, and a good CRC-32C; the cheap checks come
 * first, so the checksum runs on few candidates and a 64 MiB stretch of
 * noise is crossed in about a second. Pure: replay and the fuzz targets
 * use it to step over damage.
 */
size_t gp_seg_resync(const uint8_t *buf, size_t len, size_t from, uint32_t types);

/* Writes the 9-byte header for a payload into hdr. */
void gp_seg_header(uint8_t hdr[GP_SEG_HEADER], uint8_t type, const void *payload, size_t n);

/* A whole file read into memory (files are bounded by their writers). */
struct gp_seg_file {
    uint8_t *data;
    size_t len;
};
/* Reads path whole. GP_ENOTFOUND when it does not exist, GP_EIO otherwise. */
int gp_seg_read_file(const char *path, struct gp_seg_file *f, char *err, size_t errlen);
void gp_seg_file_free(struct gp_seg_file *f);

/* An appender. Not thread-safe: the owner serializes calls. */
struct gp_segw;

/*
 * Opens path for appending, creating it (mode 0644) when absent. An
 * existing file is scanned and truncated after its last good record; the
 * bytes cut are reported in *cut (may be NULL); the cut is synced.
 * Returns GP_OK, GP_ENOMEM or GP_EIO.
 */
int gp_segw_open(struct gp_segw **out, const char *path, uint64_t *cut, char *err, size_t errlen);

/*
 * Appends one record with a single write(2) of header and payload, so
 * a concurrent reader or a crash sees the record whole or torn, never
 * interleaved. Not durable until gp_segw_sync. Returns GP_OK, GP_ETOOBIG
 * (n > GP_SEG_MAX_RECORD), GP_EUSAGE (type 0) or GP_EIO (the file is then
 * unusable: every later append answers GP_EIO, since what reached the
 * disk is unknown). Short writes and EINTR are continued, not errors.
 */
int gp_segw_append(struct gp_segw *w, uint8_t type, const void *payload, size_t n);

/* Appends several records with one writev(2) (per 64 records); same
 * contract; nothing is written when a record is too big or of type 0. */
struct gp_seg_rec {
    uint8_t type;
    const void *payload;
    size_t n;
};
int gp_segw_appendv(struct gp_segw *w, const struct gp_seg_rec *recs, size_t nrecs);

/* fdatasync(2). GP_OK or GP_EIO (latched like a failed append: after a
 * failed fsync the kernel may have dropped the dirty pages). */
int gp_segw_sync(struct gp_segw *w);
uint64_t gp_segw_size(const struct gp_segw *w); /* bytes, i.e. the end offset */
/* The errno of the failure that latched the appender (0: none). */
int gp_segw_errno(const struct gp_segw *w);
/*
 * Makes an appender latched by a failed write usable again (a full disk
 * that has room now): cuts the file back to the end of its last whole
 * record, syncs that and clears the latch. GP_OK (also when not latched),
 * or GP_EIO: the truncation failed, or the latch came from a failed sync
 * (the kernel may have dropped pages: the file is not trusted again).
 */
int gp_segw_repair(struct gp_segw *w);
int gp_segw_fd(const struct gp_segw *w);
/* Closes (without syncing); accepts NULL. */
void gp_segw_close(struct gp_segw *w);

/* fsync(2) of a directory, after creating, renaming or removing in it. */
int gp_fsync_dir(const char *dir);

/*
 * The system calls appenders make, through a table tests may change to
 * inject short writes, EINTR, failing or observed syncs (SQLite's syscall
 * table). Defaults are libc's writev and fdatasync. Set before any
 * appender is used; every appender in the process shares it.
 */
struct gp_seg_syscalls {
    ssize_t (*writev)(int fd, const struct iovec *iov, int iovcnt);
    int (*fdatasync)(int fd);
};
extern struct gp_seg_syscalls gp_seg_sys;

#endif
