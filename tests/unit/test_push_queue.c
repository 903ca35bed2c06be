/*
 * test_push_queue.c - a push target's queue: FIFO order, acknowledgement,
 * drop-oldest at the byte bound, and the disk buffer across restarts:
 * reopening finds exactly what was not acknowledged, in order; a torn
 * tail is cut; a corrupt record is detected; failed writes (injected
 * through segment.h's syscall table) lose only the batch being written;
 * segment files are deleted once delivered; the checkpoint log stays
 * small. Every file is synced as in production (real fdatasync).
 */
#include "ingest/push_queue.h"
#include "lib/err.h"
#include "store/segment.h"
#include "test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* A body that says which batch it is: "batch-<n>" padded to len bytes. */
static void body_of(unsigned n, size_t len, char *out)
{
    memset(out, 'x', len);
    char head[32];
    int k = snprintf(head, sizeof head, "batch-%u;", n);
    memcpy(out, head, (size_t)k < len ? (size_t)k : len);
}

static void append_n(struct gp_pushq *q, unsigned from, unsigned count, size_t len, uint64_t *dropped)
{
    char body[4096];
    CHECK(len <= sizeof body);
    for (unsigned i = from; i < from + count; i++) {
        body_of(i, len, body);
        CHECK_INT(gp_pushq_append(q, body, len, 10 + i, 1000, 1000 * (int64_t)i, dropped), GP_OK);
    }
    CHECK_INT(gp_pushq_sync(q), GP_OK);
}

/* Checks that the queue holds batches first..first+count-1, in order. */
static void expect_batches(struct gp_pushq *q, unsigned first, unsigned count, size_t len)
{
    CHECK_INT(gp_pushq_count(q), count);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    char want[4096];
    for (unsigned i = 0; i < count; i++) {
        struct gp_pushq_info in = gp_pushq_info(q, i);
        CHECK_INT(in.nsamples, 10 + first + i);
        CHECK_INT(in.time_ms, 1000 * (int64_t)(first + i));
        CHECK_INT(in.raw_len, 1000);
        CHECK_INT(in.body_len, len);
        if (i)
            CHECK(in.id > gp_pushq_info(q, i - 1).id);
        gp_buf_reset(&b);
        CHECK_INT(gp_pushq_read(q, i, &b), GP_OK);
        body_of(first + i, len, want);
        CHECK_INT(b.len, len);
        CHECK(memcmp(b.data, want, len) == 0);
    }
    gp_buf_free(&b);
}

static unsigned count_files(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    unsigned n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name), s = strlen(suffix);
        n += l > s && !strcmp(e->d_name + l - s, suffix);
    }
    closedir(d);
    return n;
}

/* Path of the newest (last) segment file in dir. */
static void last_segment(const char *dir, char *out, size_t len)
{
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    char best[256] = "";
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".seg") && strcmp(e->d_name, best) > 0)
            CHECK(snprintf(best, sizeof best, "%s", e->d_name) < (int)sizeof best);
    closedir(d);
    CHECK(best[0]);
    CHECK(snprintf(out, len, "%s/%s", dir, best) < (int)len);
}

static off_t file_size(const char *path)
{
    struct stat st;
    CHECK(stat(path, &st) == 0);
    return st.st_size;
}

static void test_memory_fifo_and_ack(void)
{
    struct gp_pushq *q;
    char err[256] = "";
    CHECK_INT(gp_pushq_open(&q, NULL, 1 << 20, 0, NULL, err, sizeof err), GP_OK);
    append_n(q, 0, 5, 100, NULL);
    expect_batches(q, 0, 5, 100);
    CHECK_INT(gp_pushq_disk_bytes(q), 0);
    uint64_t bytes = gp_pushq_bytes(q);
    CHECK(bytes >= 500);
    uint64_t samples = 0;
    /* Acknowledge the first two (ids below the third's). */
    CHECK_INT(gp_pushq_ack(q, gp_pushq_info(q, 2).id, &samples), GP_OK);
    CHECK_INT(samples, 10 + 11);
    expect_batches(q, 2, 3, 100);
    CHECK(gp_pushq_bytes(q) < bytes);
    /* An old id again changes nothing. */
    CHECK_INT(gp_pushq_ack(q, 1, &samples), GP_OK);
    CHECK_INT(gp_pushq_count(q), 3);
    CHECK_INT(gp_pushq_ack(q, UINT64_MAX, NULL), GP_OK);
    CHECK_INT(gp_pushq_count(q), 0);
    CHECK_INT(gp_pushq_bytes(q), 0);
    /* The ring grows past its first size and wraps. */
    append_n(q, 0, 100, 10, NULL);
    CHECK_INT(gp_pushq_ack(q, gp_pushq_info(q, 60).id, NULL), GP_OK);
    append_n(q, 100, 100, 10, NULL);
    CHECK_INT(gp_pushq_count(q), 140);
    CHECK_INT(gp_pushq_info(q, 0).nsamples, 70);
    CHECK_INT(gp_pushq_info(q, 139).nsamples, 209);
    gp_pushq_close(q);
    gp_pushq_close(NULL);
}

static void test_memory_drops_oldest_when_full(void)
{
    struct gp_pushq *q;
    char err[256];
    /* Each record is 9 + 32 + 1000 bytes: four fit in 4200, five do not. */
    CHECK_INT(gp_pushq_open(&q, "", 4200, 0, NULL, err, sizeof err), GP_OK);
    uint64_t dropped = 0;
    append_n(q, 0, 4, 1000, &dropped);
    CHECK_INT(dropped, 0);
    append_n(q, 4, 3, 1000, &dropped);
    CHECK_INT(dropped, 10 + 11 + 12); /* batches 0, 1, 2 went, oldest first */
    expect_batches(q, 3, 4, 1000);
    CHECK(gp_pushq_bytes(q) <= 4200);
    /* A batch larger than the whole bound is refused, and nothing is dropped for it. */
    char big[4200 - 9 - 32 + 1];
    body_of(99, sizeof big, big);
    dropped = 0;
    CHECK_INT(gp_pushq_append(q, big, sizeof big, 1, 1, 1, &dropped), GP_ETOOBIG);
    CHECK_INT(dropped, 0);
    expect_batches(q, 3, 4, 1000);
    gp_pushq_close(q);
}

static void test_disk_survives_restart(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/buf", gp_test_tmpdir());
    struct gp_pushq *q;
    struct gp_pushq_recovery rec;
    char err[256] = "";
    CHECK_INT(gp_pushq_open(&q, dir, 1 << 20, 0, &rec, err, sizeof err), GP_OK);
    CHECK_INT(rec.batches, 0);
    append_n(q, 0, 10, 500, NULL);
    CHECK(gp_pushq_disk_bytes(q) >= gp_pushq_bytes(q));
    CHECK_INT(gp_pushq_ack(q, gp_pushq_info(q, 3).id, NULL), GP_OK); /* 0..2 delivered */
    uint64_t last_id = gp_pushq_info(q, 6).id;
    gp_pushq_close(q);

    CHECK_INT(gp_pushq_open(&q, dir, 1 << 20, 0, &rec, err, sizeof err), GP_OK);
    CHECK_INT(rec.batches, 7);
    CHECK_INT(rec.torn_bytes, 0);
    CHECK_INT(rec.lost_bytes, 0);
    expect_batches(q, 3, 7, 500);
    CHECK_INT(gp_pushq_info(q, 6).id, last_id);
    /* New ids continue after the recovered ones. */
    append_n(q, 10, 2, 500, NULL);
    CHECK(gp_pushq_info(q, 7).id > last_id);
    expect_batches(q, 3, 9, 500);
    CHECK_INT(gp_pushq_ack(q, UINT64_MAX, NULL), GP_OK);
    gp_pushq_close(q);

    /* Everything delivered: nothing comes back, ids still increase. */
    CHECK_INT(gp_pushq_open(&q, dir, 1 << 20, 0, &rec, err, sizeof err), GP_OK);
    CHECK_INT(rec.batches, 0);
    CHECK_INT(gp_pushq_count(q), 0);
    append_n(q, 50, 1, 500, NULL);
    CHECK(gp_pushq_info(q, 0).id > last_id + 2);
    gp_pushq_close(q);
}

/* A crash mid-write leaves a partial record: reopening cuts exactly it. */
static void test_disk_torn_tail_is_cut(void)
{
    char dir[512], seg[600];
    snprintf(dir, sizeof dir, "%s/buf", gp_test_tmpdir());
    struct gp_pushq *q;
    struct gp_pushq_recovery rec;
    char err[256] = "";
    CHECK_INT(gp_pushq_open(&q, dir, 1 << 20, 0, NULL, err, sizeof err), GP_OK);
    append_n(q, 0, 4, 700, NULL);
    gp_pushq_close(q);
    last_segment(dir, seg, sizeof seg);
    off_t full = file_size(seg);
    /* Cut the last record in the middle of its body. */
    CHECK(truncate(seg, full - 300) == 0);
    CHECK_INT(gp_pushq_open(&q, dir, 1 << 20, 0, &rec, err, sizeof err), GP_OK);
    CHECK_INT(rec.batches, 3);
    CHECK_INT(rec.torn_bytes, 9 + 32 + 700 - 300);
    expect_batches(q, 0, 3, 700);
    /* Appending after the cut works, and a restart sees a clean file. */
    append_n(q, 3, 2, 700, NULL);
    gp_pushq_close(q);
    CHECK_INT(gp_pushq_open(&q, dir, 1 << 20, 0, &rec, err, sizeof err), GP_OK);
    CHECK_INT(rec.torn_bytes, 0);
    expect_batches(q, 0, 5, 700);
    gp_pushq_close(q);

    /* A tail of zeroes (space allocated, never written) is torn too. */
    int fd = open(seg, O_WRONLY | O_APPEND);
    CHECK(fd >= 0);
    char zeros[100] = {0};
    CHECK(write(fd, zeros, sizeof zeros) == (ssize_t)sizeof zeros);
    close(fd);
    CHECK_INT(gp_pushq_open(&q, dir, 1 << 20, 0, &rec, err, sizeof err), GP_OK);
    CHECK_INT(rec.torn_bytes, 100);
    expect_batches(q, 0, 5, 700);
    gp_pushq_close(q);
}

/* A flipped byte in a record is caught by its checksum when read back,
 * and at recovery the damaged part of an older segment is skipped. */
static void test_disk_corruption_detected(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/buf", gp_test_tmpdir());
    struct gp_pushq *q;
    struct gp_pushq_recovery rec;
    char err[256] = "";
    /* Small segments: 3 records each. */
    CHECK_INT(gp_pushq_open(&q, dir, 1 << 20, 3 * (9 + 32 + 500), NULL, err, sizeof err), GP_OK);
    append_n(q, 0, 7, 500, NULL);
    CHECK_INT(count_files(dir, ".seg"), 3);
    /* Damage the body of batch 1 (first segment, second record). */
    char first[600];
    snprintf(first, sizeof first, "%s/%020d.seg", dir, 1);
    int fd = open(first, O_RDWR);
    CHECK(fd >= 0);
    off_t at = (9 + 32 + 500) + 9 + 32 + 100;
    char ch;
    CHECK(pread(fd, &ch, 1, at) == 1);
    ch ^= 0x40;
    CHECK(pwrite(fd, &ch, 1, at) == 1);
    close(fd);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_pushq_read(q, 0, &b), GP_OK);
    gp_buf_reset(&b);
    CHECK_INT(gp_pushq_read(q, 1, &b), GP_EPARSE);
    gp_pushq_close(q);

    /* Recovery keeps batch 0, loses the rest of that segment (1 and 2),
     * and keeps the later segments whole. */
    CHECK_INT(gp_pushq_open(&q, dir, 1 << 20, 3 * (9 + 32 + 500), &rec, err, sizeof err), GP_OK);
    CHECK_INT(rec.lost_bytes, 2 * (9 + 32 + 500));
    CHECK_INT(rec.batches, 5);
    CHECK_INT(gp_pushq_count(q), 5);
    CHECK_INT(gp_pushq_info(q, 0).nsamples, 10);
    CHECK_INT(gp_pushq_info(q, 1).nsamples, 13);
    gp_buf_reset(&b);
    CHECK_INT(gp_pushq_read(q, 4, &b), GP_OK);
    CHECK(memcmp(b.data, "batch-6;", 8) == 0);
    gp_buf_free(&b);
    gp_pushq_close(q);
}

/* Segments are deleted once everything in them is delivered. */
static void test_disk_segments_rotate_and_go(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/buf", gp_test_tmpdir());
    struct gp_pushq *q;
    char err[256] = "";
    uint64_t rec_bytes = 9 + 32 + 1000;
    CHECK_INT(gp_pushq_open(&q, dir, 1 << 20, 4 * rec_bytes, NULL, err, sizeof err), GP_OK);
    append_n(q, 0, 12, 1000, NULL);
    CHECK_INT(count_files(dir, ".seg"), 3);
    CHECK_INT(gp_pushq_disk_bytes(q), 12 * rec_bytes);
    CHECK_INT(gp_pushq_bytes(q), 12 * rec_bytes);
    CHECK_INT(gp_pushq_ack(q, gp_pushq_info(q, 5).id, NULL), GP_OK); /* 0..4 */
    CHECK_INT(count_files(dir, ".seg"), 2);
    CHECK_INT(gp_pushq_disk_bytes(q), 8 * rec_bytes);
    CHECK_INT(gp_pushq_bytes(q), 7 * rec_bytes);
    CHECK_INT(gp_pushq_ack(q, UINT64_MAX, NULL), GP_OK);
    CHECK_INT(count_files(dir, ".seg"), 1); /* the one being appended to stays */
    gp_pushq_close(q);
}

/* Drop-oldest on disk: the dropped batches do not come back after a
 * restart, and a smaller bound at reopen drops the oldest to fit. */
static void test_disk_full_drops_oldest(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/buf", gp_test_tmpdir());
    struct gp_pushq *q;
    struct gp_pushq_recovery rec;
    char err[256] = "";
    uint64_t rec_bytes = 9 + 32 + 1000;
    CHECK_INT(gp_pushq_open(&q, dir, 10 * rec_bytes, 3 * rec_bytes, NULL, err, sizeof err), GP_OK);
    uint64_t dropped = 0;
    append_n(q, 0, 25, 1000, &dropped);
    CHECK_INT(gp_pushq_count(q), 10);
    uint64_t want = 0;
    for (unsigned i = 0; i < 15; i++)
        want += 10 + i;
    CHECK_INT(dropped, want);
    expect_batches(q, 15, 10, 1000);
    /* Disk use: the queued records plus at most one partly delivered segment. */
    CHECK(gp_pushq_disk_bytes(q) <= 10 * rec_bytes + 3 * rec_bytes);
    gp_pushq_close(q);

    CHECK_INT(gp_pushq_open(&q, dir, 10 * rec_bytes, 3 * rec_bytes, &rec, err, sizeof err), GP_OK);
    CHECK_INT(rec.batches, 10);
    expect_batches(q, 15, 10, 1000);
    gp_pushq_close(q);

    CHECK_INT(gp_pushq_open(&q, dir, 4 * rec_bytes, 3 * rec_bytes, &rec, err, sizeof err), GP_OK);
    CHECK_INT(rec.dropped_samples, 25 + 26 + 27 + 28 + 29 + 30);
    expect_batches(q, 21, 4, 1000);
    gp_pushq_close(q);
    CHECK_INT(gp_pushq_open(&q, dir, 4 * rec_bytes, 3 * rec_bytes, &rec, err, sizeof err), GP_OK);
    expect_batches(q, 21, 4, 1000);
    gp_pushq_close(q);
}

/* The checkpoint is a log of ids: thousands of acks keep it small. */
static void test_checkpoint_stays_small(void)
{
    char dir[512], ck[600];
    snprintf(dir, sizeof dir, "%s/buf", gp_test_tmpdir());
    struct gp_pushq *q;
    struct gp_pushq_recovery rec;
    char err[256] = "";
    CHECK_INT(gp_pushq_open(&q, dir, 1 << 20, 0, NULL, err, sizeof err), GP_OK);
    for (unsigned i = 0; i < 4000; i++) {
        append_n(q, i, 1, 10, NULL);
        if (i % 3 != 2)
            CHECK_INT(gp_pushq_ack(q, gp_pushq_info(q, 0).id + 1, NULL), GP_OK);
    }
    CHECK_INT(gp_pushq_count(q), 1333);
    uint32_t want[1333];
    for (size_t i = 0; i < 1333; i++)
        want[i] = gp_pushq_info(q, i).nsamples;
    gp_pushq_close(q);
    snprintf(ck, sizeof ck, "%s/acked", dir);
    CHECK(file_size(ck) <= 65536 + 17);
    CHECK_INT(gp_pushq_open(&q, dir, 1 << 20, 0, &rec, err, sizeof err), GP_OK);
    CHECK_INT(rec.batches, 1333);
    for (size_t i = 0; i < 1333; i++)
        CHECK_INT(gp_pushq_info(q, i).nsamples, want[i]);
    gp_pushq_close(q);
}

/* Injected failures of writev/fdatasync (segment.h's syscall table). */
static int fail_writes;
static ssize_t failing_writev(int fd, const struct iovec *iov, int n)
{
    if (fail_writes) {
        errno = ENOSPC;
        return -1;
    }
    return writev(fd, iov, n);
}

static void test_write_failure_loses_only_that_batch(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/buf", gp_test_tmpdir());
    struct gp_pushq *q;
    struct gp_pushq_recovery rec;
    char err[256] = "";
    struct gp_seg_syscalls saved = gp_seg_sys;
    gp_seg_sys.writev = failing_writev;
    CHECK_INT(gp_pushq_open(&q, dir, 1 << 20, 0, NULL, err, sizeof err), GP_OK);
    append_n(q, 0, 2, 200, NULL);
    fail_writes = 1;
    char body[200];
    body_of(2, sizeof body, body);
    CHECK_INT(gp_pushq_append(q, body, sizeof body, 12, 1000, 2000, NULL), GP_EIO);
    CHECK_INT(gp_pushq_count(q), 2);
    fail_writes = 0;
    /* The next append goes to a new segment file; all of it reads back. */
    append_n(q, 2, 2, 200, NULL);
    CHECK_INT(count_files(dir, ".seg"), 2);
    expect_batches(q, 0, 4, 200);
    gp_pushq_close(q);
    CHECK_INT(gp_pushq_open(&q, dir, 1 << 20, 0, &rec, err, sizeof err), GP_OK);
    CHECK_INT(rec.batches, 4);
    expect_batches(q, 0, 4, 200);
    gp_pushq_close(q);
    gp_seg_sys = saved;
}

static void test_open_errors(void)
{
    struct gp_pushq *q = NULL;
    char err[256] = "";
    char dir[600];
    snprintf(dir, sizeof dir, "%s/no/such/parent", gp_test_tmpdir());
    CHECK_INT(gp_pushq_open(&q, dir, 1 << 20, 0, NULL, err, sizeof err), GP_EIO);
    CHECK_CONTAINS(err, "cannot create buffer directory");
    CHECK(q == NULL);
    /* A file where the directory should be. */
    gp_test_write_file(gp_test_tmpdir(), "afile", "x");
    snprintf(dir, sizeof dir, "%s/afile", gp_test_tmpdir());
    CHECK(gp_pushq_open(&q, dir, 1 << 20, 0, NULL, err, sizeof err) != GP_OK);
    /* One owner per directory at a time. */
    struct gp_pushq *q2 = NULL;
    snprintf(dir, sizeof dir, "%s/owned", gp_test_tmpdir());
    CHECK_INT(gp_pushq_open(&q, dir, 1 << 20, 0, NULL, err, sizeof err), GP_OK);
    CHECK_INT(gp_pushq_open(&q2, dir, 1 << 20, 0, NULL, err, sizeof err), GP_EIO);
    CHECK_CONTAINS(err, "is in use by another agent");
    gp_pushq_close(q);
    CHECK_INT(gp_pushq_open(&q2, dir, 1 << 20, 0, NULL, err, sizeof err), GP_OK);
    gp_pushq_close(q2);
    /* Files that are not segments are left alone. */
    snprintf(dir, sizeof dir, "%s/buf", gp_test_tmpdir());
    gp_test_write_file(gp_test_tmpdir(), "buf/README", "hello");
    gp_test_write_file(gp_test_tmpdir(), "buf/123.seg", "not ours: wrong name length");
    CHECK_INT(gp_pushq_open(&q, dir, 1 << 20, 0, NULL, err, sizeof err), GP_OK);
    CHECK_INT(gp_pushq_count(q), 0);
    gp_pushq_close(q);
}

const struct gp_test gp_tests_push_queue[] = {
    {"memory_fifo_and_ack", test_memory_fifo_and_ack},
    {"memory_drops_oldest_when_full", test_memory_drops_oldest_when_full},
    {"disk_survives_restart", test_disk_survives_restart},
    {"disk_torn_tail_is_cut", test_disk_torn_tail_is_cut},
    {"disk_corruption_detected", test_disk_corruption_detected},
    {"disk_segments_rotate_and_go", test_disk_segments_rotate_and_go},
    {"disk_full_drops_oldest", test_disk_full_drops_oldest},
    {"checkpoint_stays_small", test_checkpoint_stays_small},
    {"write_failure_loses_only_that_batch", test_write_failure_loses_only_that_batch},
    {"open_errors", test_open_errors},
    {0},
};
