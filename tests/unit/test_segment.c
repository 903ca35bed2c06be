/*
 * test_segment.c - CRC-32C (check values, software against SSE4.2) and
 * segment files: framing round trips, every truncation point, every bit
 * flip, rejected headers, reopen with a torn tail, and the appender's
 * failure paths through the syscall table (short writes, EINTR, a failing
 * write or fdatasync latching the error) and through a real file-size
 * limit.
 */
#include "lib/crc32c.h"
#include "lib/err.h"
#include "store/segment.h"
#include "test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

static char *path_in(const char *name)
{
    static char buf[4][512];
    static int k;
    char *p = buf[k++ & 3];
    snprintf(p, 512, "%s/%s", gp_test_tmpdir(), name);
    return p;
}

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    CHECK(n == 0 || fwrite(p, 1, n, f) == n);
    CHECK(fclose(f) == 0);
}

static uint64_t size_of(const char *path)
{
    struct stat st;
    CHECK(stat(path, &st) == 0);
    return (uint64_t)st.st_size;
}

/* ---- CRC-32C ---------------------------------------------------------------- */

static void test_crc_check_values(void)
{
    CHECK_INT(gp_crc32c(0, "123456789", 9), 0xe3069283u);
    CHECK_INT(gp_crc32c_sw(0, "123456789", 9), 0xe3069283u);
    CHECK_INT(gp_crc32c_hw(0, "123456789", 9), 0xe3069283u);
    CHECK_INT(gp_crc32c(0, "", 0), 0);
    /* RFC 3720 (iSCSI) B.4 vectors. */
    uint8_t b[32];
    memset(b, 0, sizeof b);
    CHECK_INT(gp_crc32c_sw(0, b, 32), 0x8a9136aau);
    CHECK_INT(gp_crc32c_hw(0, b, 32), 0x8a9136aau);
    memset(b, 0xff, sizeof b);
    CHECK_INT(gp_crc32c_sw(0, b, 32), 0x62a8ab43u);
    CHECK_INT(gp_crc32c_hw(0, b, 32), 0x62a8ab43u);
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)i;
    CHECK_INT(gp_crc32c_sw(0, b, 32), 0x46dd794eu);
    CHECK_INT(gp_crc32c_hw(0, b, 32), 0x46dd794eu);
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)(31 - i);
    CHECK_INT(gp_crc32c(0, b, 32), 0x113fdb5cu);
}

static void test_crc_sw_matches_hw(void)
{
#if defined(__x86_64__)
    /* Every x86-64 this project targets has SSE4.2; if not, say so. */
    CHECK(gp_crc32c_hw_available());
#endif
    enum { N = 4096 };
    uint8_t *buf = malloc(N + 8);
    CHECK(buf != NULL);
    uint64_t s = 0x1234567;
    for (size_t i = 0; i < N + 8; i++)
        buf[i] = (uint8_t)rng_next(&s);
    for (int iter = 0; iter < 2000; iter++) {
        size_t off = rng_next(&s) % 8, n = rng_next(&s) % (N + 1);
        uint32_t seed = (uint32_t)rng_next(&s);
        uint32_t a = gp_crc32c_sw(seed, buf + off, n), c = gp_crc32c_hw(seed, buf + off, n);
        if (a != c)
            gp_test_fail(__FILE__, __LINE__, "off %zu n %zu: sw %08x hw %08x", off, n, a, c);
        CHECK_INT(gp_crc32c(seed, buf + off, n), a);
        /* Extending in two parts equals one pass, on both paths. */
        size_t k = n ? rng_next(&s) % n : 0;
        CHECK_INT(gp_crc32c_sw(gp_crc32c_sw(seed, buf + off, k), buf + off + k, n - k), a);
        CHECK_INT(gp_crc32c_hw(gp_crc32c_hw(seed, buf + off, k), buf + off + k, n - k), a);
    }
    free(buf);
}

/* ---- framing ------------------------------------------------------------------ */

/* A file of records with payload sizes 0, 1, 7, 100, 1000 into out. */
static const size_t sizes[] = {0, 1, 7, 100, 1000};
enum { NREC = sizeof sizes / sizeof sizes[0] };

static size_t build(uint8_t *out, size_t *ends)
{
    size_t len = 0;
    for (int r = 0; r < NREC; r++) {
        uint8_t payload[1000];
        for (size_t i = 0; i < sizes[r]; i++)
            payload[i] = (uint8_t)(r * 31 + i);
        gp_seg_header(out + len, (uint8_t)(r + 1), payload, sizes[r]);
        memcpy(out + len + GP_SEG_HEADER, payload, sizes[r]);
        len += GP_SEG_HEADER + sizes[r];
        ends[r] = len;
    }
    return len;
}

/* Parses buf[0..len) to the end; returns the records read, *rc the last
 * gp_seg_parse answer, *good where the good part ends. Checks contents. */
static int parse_all(const uint8_t *buf, size_t len, int *rc, size_t *good)
{
    size_t pos = 0, n;
    uint8_t type;
    const uint8_t *p;
    int count = 0, r;
    while ((r = gp_seg_parse(buf, len, &pos, &type, &p, &n)) == 1) {
        CHECK(count < NREC);
        CHECK_INT(type, count + 1);
        CHECK_INT(n, sizes[count]);
        CHECK(p >= buf && p + n <= buf + len);
        for (size_t i = 0; i < n; i++)
            CHECK_INT(p[i], (uint8_t)(count * 31 + i));
        count++;
    }
    *rc = r;
    *good = pos;
    return count;
}

static void test_round_trip(void)
{
    uint8_t buf[2000];
    size_t ends[NREC];
    size_t len = build(buf, ends);
    int rc;
    size_t good;
    CHECK_INT(parse_all(buf, len, &rc, &good), NREC);
    CHECK_INT(rc, 0);
    CHECK_INT(good, len);
    /* Empty input is a clean end. */
    size_t pos = 0, n;
    uint8_t type;
    const uint8_t *p;
    CHECK_INT(gp_seg_parse(buf, 0, &pos, &type, &p, &n), 0);
    /* A position past the end is an error, not a read. */
    pos = len + 1;
    CHECK_INT(gp_seg_parse(buf, len, &pos, &type, &p, &n), GP_EPARSE);
    CHECK_INT(pos, len + 1);
}

static void test_every_truncation(void)
{
    uint8_t buf[2000];
    size_t ends[NREC];
    size_t len = build(buf, ends);
    for (size_t cut = 0; cut <= len; cut++) {
        /* A private copy of exactly cut bytes, so ASan sees any overread. */
        uint8_t *copy = malloc(cut ? cut : 1);
        CHECK(copy != NULL);
        memcpy(copy, buf, cut);
        int whole = 0;
        while (whole < NREC && ends[whole] <= cut)
            whole++;
        int rc;
        size_t good;
        CHECK_INT(parse_all(copy, cut, &rc, &good), whole);
        CHECK_INT(good, whole ? ends[whole - 1] : 0);
        CHECK_INT(rc, good == cut ? 0 : GP_EPARSE);
        free(copy);
    }
}

static void test_every_bit_flip(void)
{
    uint8_t buf[2000];
    size_t ends[NREC];
    size_t len = build(buf, ends);
    for (size_t byte = 0; byte < len; byte++) {
        int rec = 0;
        while (ends[rec] <= byte)
            rec++;
        for (int bit = 0; bit < 8; bit++) {
            buf[byte] ^= (uint8_t)(1u << bit);
            int rc;
            size_t good;
            /* The records before the damaged one read; it and all after do not. */
            CHECK_INT(parse_all(buf, len, &rc, &good), rec);
            CHECK_INT(rc, GP_EPARSE);
            CHECK_INT(good, rec ? ends[rec - 1] : 0);
            buf[byte] ^= (uint8_t)(1u << bit);
        }
    }
}

static void test_rejects_bad_headers(void)
{
    uint8_t buf[64];
    size_t pos, n;
    uint8_t type;
    const uint8_t *p;
    /* Type 0 with a matching CRC: zeroed space never reads as a record. */
    gp_seg_header(buf, 0, "abc", 3);
    memcpy(buf + GP_SEG_HEADER, "abc", 3);
    pos = 0;
    CHECK_INT(gp_seg_parse(buf, GP_SEG_HEADER + 3, &pos, &type, &p, &n), GP_EPARSE);
    CHECK_INT(pos, 0);
    /* All zeros. */
    memset(buf, 0, sizeof buf);
    pos = 0;
    CHECK_INT(gp_seg_parse(buf, sizeof buf, &pos, &type, &p, &n), GP_EPARSE);
    /* A length past the end of the buffer. */
    gp_seg_header(buf, 5, "abc", 3);
    memcpy(buf + GP_SEG_HEADER, "abc", 3);
    pos = 0;
    CHECK_INT(gp_seg_parse(buf, GP_SEG_HEADER + 2, &pos, &type, &p, &n), GP_EPARSE);
    CHECK_INT(gp_seg_parse(buf, GP_SEG_HEADER + 3, &pos, &type, &p, &n), 1);
    CHECK_INT(pos, GP_SEG_HEADER + 3);
    /* A header shorter than 9 bytes. */
    pos = 0;
    CHECK_INT(gp_seg_parse(buf, 8, &pos, &type, &p, &n), GP_EPARSE);
}

static void test_length_cap(void)
{
    /* A record exactly at the cap parses; one byte more is refused even
     * when the buffer holds it and the CRC matches. */
    size_t big = GP_SEG_MAX_RECORD + 1;
    uint8_t *buf = calloc(1, GP_SEG_HEADER + big);
    CHECK(buf != NULL);
    size_t pos = 0, n;
    uint8_t type;
    const uint8_t *p;
    gp_seg_header(buf, 1, buf + GP_SEG_HEADER, GP_SEG_MAX_RECORD);
    CHECK_INT(gp_seg_parse(buf, GP_SEG_HEADER + GP_SEG_MAX_RECORD, &pos, &type, &p, &n), 1);
    CHECK_INT(n, GP_SEG_MAX_RECORD);
    gp_seg_header(buf, 1, buf + GP_SEG_HEADER, big);
    pos = 0;
    CHECK_INT(gp_seg_parse(buf, GP_SEG_HEADER + big, &pos, &type, &p, &n), GP_EPARSE);
    /* A length of 0xffffffff on a short buffer. */
    memset(buf, 0xff, 8);
    buf[8] = 1;
    pos = 0;
    CHECK_INT(gp_seg_parse(buf, 100, &pos, &type, &p, &n), GP_EPARSE);
    free(buf);
}

/* ---- files and the appender ----------------------------------------------------- */

static void check_file_records(const char *path, int want, size_t payload_len)
{
    struct gp_seg_file f;
    char err[256];
    CHECK_INT(gp_seg_read_file(path, &f, err, sizeof err), GP_OK);
    size_t pos = 0, n;
    uint8_t type;
    const uint8_t *p;
    int count = 0, rc;
    while ((rc = gp_seg_parse(f.data, f.len, &pos, &type, &p, &n)) == 1) {
        CHECK_INT(type, 1 + count % 255);
        CHECK_INT(n, payload_len);
        for (size_t i = 0; i < n; i++)
            CHECK_INT(p[i], (uint8_t)(count + i));
        count++;
    }
    CHECK_INT(rc, 0);
    CHECK_INT(count, want);
    gp_seg_file_free(&f);
}

static void append_n(struct gp_segw *w, int from, int to, size_t payload_len)
{
    uint8_t payload[256];
    for (int r = from; r < to; r++) {
        for (size_t i = 0; i < payload_len; i++)
            payload[i] = (uint8_t)(r + i);
        CHECK_INT(gp_segw_append(w, (uint8_t)(1 + r % 255), payload, payload_len), GP_OK);
    }
}

static void test_read_file(void)
{
    struct gp_seg_file f;
    char err[256];
    CHECK_INT(gp_seg_read_file(path_in("absent"), &f, err, sizeof err), GP_ENOTFOUND);
    CHECK(f.data == NULL);
    write_bytes(path_in("empty"), "", 0);
    CHECK_INT(gp_seg_read_file(path_in("empty"), &f, err, sizeof err), GP_OK);
    CHECK_INT(f.len, 0);
    gp_seg_file_free(&f);
    gp_seg_file_free(NULL);
    CHECK_INT(gp_seg_read_file(gp_test_tmpdir(), &f, err, sizeof err), GP_EIO);
}

static void test_append_reopen(void)
{
    const char *path = path_in("a.seg");
    struct gp_segw *w;
    char err[256];
    uint64_t cut = 99;
    CHECK_INT(gp_segw_open(&w, path, &cut, err, sizeof err), GP_OK);
    CHECK_INT(cut, 0);
    CHECK_INT(gp_segw_size(w), 0);
    append_n(w, 0, 10, 20);
    CHECK_INT(gp_segw_size(w), 10 * (GP_SEG_HEADER + 20));
    CHECK_INT(gp_segw_sync(w), GP_OK);
    gp_segw_close(w);
    gp_segw_close(NULL);
    check_file_records(path, 10, 20);

    /* A clean reopen cuts nothing and appends after the last record. */
    CHECK_INT(gp_segw_open(&w, path, &cut, err, sizeof err), GP_OK);
    CHECK_INT(cut, 0);
    CHECK_INT(gp_segw_size(w), 10 * (GP_SEG_HEADER + 20));
    append_n(w, 10, 12, 20);
    gp_segw_close(w);
    check_file_records(path, 12, 20);
}

static void test_reopen_cuts_torn_tail(void)
{
    const char *path = path_in("t.seg");
    struct gp_segw *w;
    char err[256];
    uint64_t cut;
    CHECK_INT(gp_segw_open(&w, path, NULL, err, sizeof err), GP_OK);
    append_n(w, 0, 5, 30);
    gp_segw_close(w);
    uint64_t whole = size_of(path);

    /* Cut the last record short by every amount: reopen keeps 4 records. */
    for (uint64_t drop = 1; drop < GP_SEG_HEADER + 30; drop++) {
        CHECK(truncate(path, (off_t)(whole - drop)) == 0);
        CHECK_INT(gp_segw_open(&w, path, &cut, err, sizeof err), GP_OK);
        CHECK_INT(cut, GP_SEG_HEADER + 30 - drop);
        CHECK_INT(gp_segw_size(w), whole - (GP_SEG_HEADER + 30));
        CHECK_INT(size_of(path), whole - (GP_SEG_HEADER + 30));
        append_n(w, 4, 5, 30); /* the lost record again, after the good part */
        gp_segw_close(w);
        check_file_records(path, 5, 30);
    }

    /* Zeroes after the good part (a file extended but not written). */
    int fd = open(path, O_WRONLY | O_APPEND);
    CHECK(fd >= 0);
    uint8_t zeros[4096] = {0};
    CHECK(write(fd, zeros, sizeof zeros) == (ssize_t)sizeof zeros);
    close(fd);
    CHECK_INT(gp_segw_open(&w, path, &cut, err, sizeof err), GP_OK);
    CHECK_INT(cut, sizeof zeros);
    append_n(w, 5, 6, 30);
    gp_segw_close(w);
    check_file_records(path, 6, 30);

    /* A damaged record in the middle: everything from it on is cut. */
    fd = open(path, O_WRONLY);
    CHECK(fd >= 0);
    CHECK(pwrite(fd, "X", 1, GP_SEG_HEADER + 2) == 1);
    close(fd);
    CHECK_INT(gp_segw_open(&w, path, &cut, err, sizeof err), GP_OK);
    CHECK_INT(cut, 6 * (GP_SEG_HEADER + 30));
    CHECK_INT(gp_segw_size(w), 0);
    gp_segw_close(w);
}

static void test_open_errors(void)
{
    struct gp_segw *w = (struct gp_segw *)1;
    char err[256] = "";
    CHECK_INT(gp_segw_open(&w, path_in("no/such/dir/x.seg"), NULL, err, sizeof err), GP_EIO);
    CHECK(w == NULL);
    CHECK_CONTAINS(err, "x.seg");
    CHECK_INT(gp_segw_open(&w, gp_test_tmpdir(), NULL, err, sizeof err), GP_EIO);
    CHECK_INT(gp_fsync_dir(gp_test_tmpdir()), GP_OK);
    CHECK_INT(gp_fsync_dir(path_in("absent")), GP_EIO);
}

static void test_appendv_and_limits(void)
{
    const char *path = path_in("v.seg");
    struct gp_segw *w;
    char err[256];
    CHECK_INT(gp_segw_open(&w, path, NULL, err, sizeof err), GP_OK);
    enum { N = 200 };
    static uint8_t payloads[N][16];
    struct gp_seg_rec recs[N];
    for (int r = 0; r < N; r++) {
        for (int i = 0; i < 16; i++)
            payloads[r][i] = (uint8_t)(r + i);
        recs[r] = (struct gp_seg_rec){(uint8_t)(1 + r % 255), payloads[r], 16};
    }
    CHECK_INT(gp_segw_appendv(w, recs, N), GP_OK);
    CHECK_INT(gp_segw_appendv(w, recs, 0), GP_OK);
    /* Refused whole, before anything is written, and not latched. */
    recs[5].n = GP_SEG_MAX_RECORD + 1;
    CHECK_INT(gp_segw_appendv(w, recs, N), GP_ETOOBIG);
    CHECK_INT(gp_segw_append(w, 1, payloads[0], (size_t)GP_SEG_MAX_RECORD + 1), GP_ETOOBIG);
    CHECK_INT(gp_segw_append(w, 0, payloads[0], 16), GP_EUSAGE);
    CHECK_INT(gp_segw_size(w), N * (GP_SEG_HEADER + 16));
    CHECK_INT(gp_segw_sync(w), GP_OK);
    CHECK(gp_segw_fd(w) >= 0);
    gp_segw_close(w);
    check_file_records(path, N, 16);
}

/* ---- failure injection --------------------------------------------------------- */

static int calls, fail_mode;

/* Writes at most 3 bytes per call and fails every other call with EINTR. */
static ssize_t dribble_writev(int fd, const struct iovec *iov, int cnt)
{
    calls++;
    if (calls % 2 == 0) {
        errno = EINTR;
        return -1;
    }
    for (int i = 0; i < cnt; i++)
        if (iov[i].iov_len > 0) {
            size_t n = iov[i].iov_len < 3 ? iov[i].iov_len : 3;
            return write(fd, iov[i].iov_base, n);
        }
    return 0;
}

static void test_short_writes_and_eintr(void)
{
    gp_seg_sys.writev = dribble_writev;
    const char *path = path_in("s.seg");
    struct gp_segw *w;
    char err[256];
    CHECK_INT(gp_segw_open(&w, path, NULL, err, sizeof err), GP_OK);
    append_n(w, 0, 20, 50);
    CHECK_INT(gp_segw_size(w), 20 * (GP_SEG_HEADER + 50));
    gp_segw_close(w);
    CHECK(calls > (int)(20 * 2 * (GP_SEG_HEADER + 50) / 3));
    check_file_records(path, 20, 50);
}

static ssize_t failing_writev(int fd, const struct iovec *iov, int cnt)
{
    (void)cnt;
    if (fail_mode == 0) { /* write part, then fail */
        fail_mode = 1;
        return write(fd, iov[0].iov_base, iov[0].iov_len > 4 ? 4 : iov[0].iov_len);
    }
    errno = ENOSPC;
    return -1;
}

static int failing_fdatasync(int fd)
{
    (void)fd;
    errno = EIO;
    return -1;
}

static void test_write_failure_latches(void)
{
    const char *path = path_in("f.seg");
    struct gp_segw *w;
    char err[256];
    CHECK_INT(gp_segw_open(&w, path, NULL, err, sizeof err), GP_OK);
    append_n(w, 0, 3, 10);
    uint8_t x[10] = {0};
    /* 4 bytes go out, then ENOSPC: the file is unusable from now on. */
    fail_mode = 0;
    gp_seg_sys.writev = failing_writev;
    CHECK_INT(gp_segw_append(w, 1, x, 10), GP_EIO);
    CHECK_INT(gp_segw_size(w), 3 * (GP_SEG_HEADER + 10) + 4);
    gp_seg_sys.writev = writev;
    CHECK_INT(gp_segw_append(w, 1, x, 10), GP_EIO);
    CHECK_INT(gp_segw_sync(w), GP_EIO);
    gp_segw_close(w);
    /* The torn record is cut on reopen. */
    uint64_t cut;
    CHECK_INT(gp_segw_open(&w, path, &cut, err, sizeof err), GP_OK);
    CHECK_INT(cut, 4);
    gp_segw_close(w);
    check_file_records(path, 3, 10);
}

static void test_sync_failure_latches(void)
{
    const char *path = path_in("y.seg");
    struct gp_segw *w;
    char err[256];
    CHECK_INT(gp_segw_open(&w, path, NULL, err, sizeof err), GP_OK);
    append_n(w, 0, 1, 10);
    gp_seg_sys.fdatasync = failing_fdatasync;
    CHECK_INT(gp_segw_sync(w), GP_EIO);
    gp_seg_sys.fdatasync = fdatasync;
    CHECK_INT(gp_segw_sync(w), GP_EIO); /* a retry must not "succeed" */
    uint8_t x[10] = {0};
    CHECK_INT(gp_segw_append(w, 1, x, 10), GP_EIO);
    gp_segw_close(w);
    /* Reopen cuts a torn tail but cannot sync the cut: an error, no appender. */
    CHECK(truncate(path, GP_SEG_HEADER + 5) == 0);
    gp_seg_sys.fdatasync = failing_fdatasync;
    CHECK_INT(gp_segw_open(&w, path, NULL, err, sizeof err), GP_EIO);
    CHECK(w == NULL);
    gp_seg_sys.fdatasync = fdatasync;
}

static void test_real_file_size_limit(void)
{
    /* The kernel's own short write then EFBIG, past RLIMIT_FSIZE. */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {100, 100};
    CHECK(setrlimit(RLIMIT_FSIZE, &rl) == 0);
    const char *path = path_in("r.seg");
    struct gp_segw *w;
    char err[256];
    CHECK_INT(gp_segw_open(&w, path, NULL, err, sizeof err), GP_OK);
    uint8_t x[51] = {0};
    CHECK_INT(gp_segw_append(w, 1, x, 51), GP_OK); /* 60 bytes */
    CHECK_INT(gp_segw_append(w, 1, x, 51), GP_EIO); /* 40 more fit, then EFBIG */
    CHECK_INT(gp_segw_size(w), 100);
    CHECK_INT(gp_segw_append(w, 1, x, 1), GP_EIO);
    gp_segw_close(w);
    CHECK_INT(size_of(path), 100);
    uint64_t cut;
    CHECK_INT(gp_segw_open(&w, path, &cut, err, sizeof err), GP_OK);
    CHECK_INT(cut, 40);
    gp_segw_close(w);
}

const struct gp_test gp_tests_segment[] = {
    {"crc_check_values", test_crc_check_values},
    {"crc_sw_matches_hw", test_crc_sw_matches_hw},
    {"round_trip", test_round_trip},
    {"every_truncation", test_every_truncation},
    {"every_bit_flip", test_every_bit_flip},
    {"rejects_bad_headers", test_rejects_bad_headers},
    {"length_cap", test_length_cap},
    {"read_file", test_read_file},
    {"append_reopen", test_append_reopen},
    {"reopen_cuts_torn_tail", test_reopen_cuts_torn_tail},
    {"open_errors", test_open_errors},
    {"appendv_and_limits", test_appendv_and_limits},
    {"short_writes_and_eintr", test_short_writes_and_eintr},
    {"write_failure_latches", test_write_failure_latches},
    {"sync_failure_latches", test_sync_failure_latches},
    {"real_file_size_limit", test_real_file_size_limit},
    {0},
};
