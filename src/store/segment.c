/*
 * segment.c - append-only files of checksummed records, see segment.h.
 *
 * Parts:
 *  - framing: gp_seg_header writes a record header, gp_seg_parse checks
 *    one (bounds first, then type, length cap, CRC) without touching
 *    anything but the buffer it is given;
 *  - whole-file reads (gp_seg_read_file), also used to scan a file that
 *    an appender reopens;
 *  - the appender: one writev per call (looping on short writes and
 *    EINTR), a size it tracks itself, and a latched failure: once a write
 *    or a sync has failed, what reached the disk is unknown (a failed
 *    fsync may even have dropped dirty pages), so the file is never used
 *    again rather than risk acknowledging data that is not there.
 */
#include "store/segment.h"

#include "lib/bits.h"
#include "lib/crc32c.h"
#include "lib/err.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct gp_seg_syscalls gp_seg_sys = {writev, fdatasync};

/* ---- framing -------------------------------------------------------------- */

static uint32_t record_crc(uint8_t type, const void *payload, size_t n)
{
    return gp_crc32c(gp_crc32c(0, &type, 1), payload, n);
}

void gp_seg_header(uint8_t hdr[GP_SEG_HEADER], uint8_t type, const void *payload, size_t n)
{
    gp_put_le32(hdr, (uint32_t)n);
    gp_put_le32(hdr + 4, record_crc(type, payload, n));
    hdr[8] = type;
}

int gp_seg_parse(const uint8_t *buf, size_t len, size_t *pos, uint8_t *type,
                 const uint8_t **payload, size_t *n)
{
    size_t at = *pos;
    if (at == len)
        return 0;
    if (at > len || len - at < GP_SEG_HEADER)
        return GP_EPARSE;
    const uint8_t *h = buf + at;
    uint32_t plen = gp_get_le32(h), crc = gp_get_le32(h + 4);
    uint8_t t = h[8];
    /* Zeroed space (a file extended but never written) stops here. */
    if (t == 0 || plen > GP_SEG_MAX_RECORD || plen > len - at - GP_SEG_HEADER)
        return GP_EPARSE;
    const uint8_t *p = h + GP_SEG_HEADER;
    if (record_crc(t, p, plen) != crc)
        return GP_EPARSE;
    *type = t;
    *payload = p;
    *n = plen;
    *pos = at + GP_SEG_HEADER + plen;
    return 1;
}

/* A known type at b[q + 8] and a length ending at len or before another
 * header of a known type. */
static int plausible(const uint8_t *b, size_t len, size_t q, uint32_t types)
{
    if (len - q < GP_SEG_HEADER || b[q + 8] == 0 || b[q + 8] > 31 || !(types >> b[q + 8] & 1))
        return 0;
    uint64_t n = gp_get_le32(b + q);
    if (n == 0 || n > len - q - GP_SEG_HEADER)
        return 0;
    size_t end = q + GP_SEG_HEADER + (size_t)n;
    return end == len ||
           (len - end >= GP_SEG_HEADER && b[end + 8] <= 31 && (types >> b[end + 8] & 1));
}

size_t gp_seg_resync(const uint8_t *buf, size_t len, size_t from, uint32_t types)
{
    for (size_t q = from + 1; q + GP_SEG_HEADER <= len; q++) {
        size_t pos = q, n;
        uint8_t type;
        const uint8_t *p;
        if (plausible(buf, len, q, types) && gp_seg_parse(buf, len, &pos, &type, &p, &n) == 1)
            return q;
    }
    return len;
}

/* ---- whole-file reads ----------------------------------------------------- */

/* Reads the first size bytes of fd (fewer if it shrinks meanwhile) into a
 * new buffer the caller frees. GP_OK, GP_ENOMEM or GP_EIO (errno set). */
static int read_fd(int fd, size_t size, uint8_t **out, size_t *len)
{
    uint8_t *data = malloc(size ? size : 1);
    if (!data)
        return GP_ENOMEM;
    size_t got = 0;
    while (got < size) {
        ssize_t r = pread(fd, data + got, size - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(data);
            errno = e;
            return GP_EIO;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    *out = data;
    *len = got;
    return GP_OK;
}

static int file_size(int fd, size_t *size)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return GP_EIO;
    if (!S_ISREG(st.st_mode)) {
        errno = EINVAL;
        return GP_EIO;
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        errno = EFBIG;
        return GP_EIO;
    }
    *size = (size_t)st.st_size;
    return GP_OK;
}

int gp_seg_read_file(const char *path, struct gp_seg_file *f, char *err, size_t errlen)
{
    f->data = NULL;
    f->len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return gp_seterr(err, errlen, GP_ENOTFOUND, "segment: '%s' does not exist", path);
        return gp_seterr(err, errlen, GP_EIO, "segment: open '%s': %s", path, strerror(errno));
    }
    size_t size;
    int rc = file_size(fd, &size);
    if (rc == GP_OK)
        rc = read_fd(fd, size, &f->data, &f->len);
    int e = errno;
    close(fd);
    if (rc == GP_ENOMEM)
        return gp_seterr(err, errlen, rc, "segment: no memory to read '%s' (%zu bytes)", path,
                         size);
    if (rc != GP_OK)
        return gp_seterr(err, errlen, rc, "segment: read '%s': %s", path, strerror(e));
    return GP_OK;
}

void gp_seg_file_free(struct gp_seg_file *f)
{
    if (!f)
        return;
    free(f->data);
    f->data = NULL;
    f->len = 0;
}

/* ---- the appender ----------------------------------------------------------- */

struct gp_segw {
    int fd;
    uint64_t size;
    uint64_t good; /* end of the last whole record (size, unless a write failed midway) */
    int broken;    /* a write or sync failed: every later call answers GP_EIO */
    int sync_failed;
    int err;       /* errno of that failure */
};

int gp_segw_open(struct gp_segw **out, const char *path, uint64_t *cut, char *err, size_t errlen)
{
    *out = NULL;
    if (cut)
        *cut = 0;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return gp_seterr(err, errlen, GP_EIO, "segment: open '%s': %s", path, strerror(errno));

    /* Find the end of the good part: every record before it parses. */
    size_t size, len = 0, good = 0;
    uint8_t *data = NULL;
    int rc = file_size(fd, &size);
    if (rc == GP_OK)
        rc = read_fd(fd, size, &data, &len);
    if (rc != GP_OK) {
        int e = errno;
        close(fd);
        if (rc == GP_ENOMEM)
            return gp_seterr(err, errlen, rc, "segment: no memory to scan '%s'", path);
        return gp_seterr(err, errlen, rc, "segment: read '%s': %s", path, strerror(e));
    }
    uint8_t type;
    const uint8_t *payload;
    size_t n;
    while (gp_seg_parse(data, len, &good, &type, &payload, &n) == 1)
        ;
    free(data);

    if (good < size) {
        /* A torn tail: cut it (and make the cut durable) so records
         * appended now are not hidden behind it. */
        int r;
        while ((r = ftruncate(fd, (off_t)good)) != 0 && errno == EINTR)
            ;
        if (r != 0 || gp_seg_sys.fdatasync(fd) != 0) {
            int e = errno;
            close(fd);
            return gp_seterr(err, errlen, GP_EIO, "segment: truncate '%s' to %zu: %s", path,
                             good, strerror(e));
        }
        if (cut)
            *cut = size - good;
    }
    if (lseek(fd, (off_t)good, SEEK_SET) < 0) {
        int e = errno;
        close(fd);
        return gp_seterr(err, errlen, GP_EIO, "segment: seek '%s': %s", path, strerror(e));
    }
    struct gp_segw *w = calloc(1, sizeof *w);
    if (!w) {
        close(fd);
        return gp_seterr(err, errlen, GP_ENOMEM, "segment: no memory");
    }
    w->fd = fd;
    w->size = w->good = good;
    *out = w;
    return GP_OK;
}

/* Writes all of iov (advancing it), continuing after short writes and
 * EINTR. GP_OK, or GP_EIO with the appender latched broken. */
static int write_all(struct gp_segw *w, struct iovec *iov, int cnt)
{
    for (;;) {
        while (cnt > 0 && iov->iov_len == 0) {
            iov++;
            cnt--;
        }
        if (cnt == 0)
            return GP_OK;
        ssize_t r = gp_seg_sys.writev(w->fd, iov, cnt < IOV_MAX ? cnt : IOV_MAX);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) { /* 0: no progress on a regular file means no space */
            w->broken = 1;
            w->err = r < 0 ? errno : ENOSPC;
            return GP_EIO;
        }
        w->size += (uint64_t)r;
        size_t done = (size_t)r;
        while (cnt > 0 && done >= iov->iov_len) {
            done -= iov->iov_len;
            iov++;
            cnt--;
        }
        if (cnt > 0) {
            iov->iov_base = (char *)iov->iov_base + done;
            iov->iov_len -= done;
        }
    }
}

/* Records per writev: headers and iovecs live on the stack. */
enum { RECS_PER_WRITEV = 64 };

int gp_segw_appendv(struct gp_segw *w, const struct gp_seg_rec *recs, size_t nrecs)
{
    if (w->broken)
        return GP_EIO;
    for (size_t i = 0; i < nrecs; i++) {
        if (recs[i].n > GP_SEG_MAX_RECORD)
            return GP_ETOOBIG;
        if (recs[i].type == 0)
            return GP_EUSAGE;
    }
    uint8_t hdr[RECS_PER_WRITEV][GP_SEG_HEADER];
    struct iovec iov[2 * RECS_PER_WRITEV];
    for (size_t base = 0; base < nrecs; base += RECS_PER_WRITEV) {
        size_t k = nrecs - base < RECS_PER_WRITEV ? nrecs - base : RECS_PER_WRITEV;
        for (size_t i = 0; i < k; i++) {
            const struct gp_seg_rec *r = &recs[base + i];
            gp_seg_header(hdr[i], r->type, r->payload, r->n);
            iov[2 * i] = (struct iovec){hdr[i], GP_SEG_HEADER};
            iov[2 * i + 1] = (struct iovec){(void *)r->payload, r->n};
        }
        int rc = write_all(w, iov, (int)(2 * k));
        if (rc != GP_OK)
            return rc;
        w->good = w->size;
    }
    return GP_OK;
}

int gp_segw_append(struct gp_segw *w, uint8_t type, const void *payload, size_t n)
{
    struct gp_seg_rec r = {type, payload, n};
    return gp_segw_appendv(w, &r, 1);
}

int gp_segw_sync(struct gp_segw *w)
{
    if (w->broken)
        return GP_EIO;
    if (gp_seg_sys.fdatasync(w->fd) != 0) {
        /* After a failed fsync the kernel may have dropped the dirty
         * pages and a retry can "succeed": never trust this file again. */
        w->broken = w->sync_failed = 1;
        w->err = errno;
        return GP_EIO;
    }
    return GP_OK;
}

int gp_segw_repair(struct gp_segw *w)
{
    if (!w->broken)
        return GP_OK;
    if (w->sync_failed)
        return GP_EIO;
    int r;
    while ((r = ftruncate(w->fd, (off_t)w->good)) != 0 && errno == EINTR)
        ;
    if (r != 0 || lseek(w->fd, (off_t)w->good, SEEK_SET) < 0) {
        w->err = errno;
        return GP_EIO;
    }
    if (gp_seg_sys.fdatasync(w->fd) != 0) {
        w->err = errno;
        w->sync_failed = 1;
        return GP_EIO;
    }
    w->size = w->good;
    w->broken = 0;
    w->err = 0;
    return GP_OK;
}

int gp_segw_errno(const struct gp_segw *w) { return w->err; }

uint64_t gp_segw_size(const struct gp_segw *w) { return w->size; }

int gp_segw_fd(const struct gp_segw *w) { return w->fd; }

void gp_segw_close(struct gp_segw *w)
{
    if (!w)
        return;
    close(w->fd);
    free(w);
}

int gp_fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return GP_EIO;
    int r;
    while ((r = fsync(fd)) != 0 && errno == EINTR)
        ;
    close(fd);
    return r == 0 ? GP_OK : GP_EIO;
}
