/*
 * test_store_cfile.c - reads of closed chunks from mapped chunk files
 * (persist.c): reads follow a file's growth, a rotation and gc; a range
 * read equals the whole read cut to the range; the pread fallback answers
 * the same; a record damaged while the store is open is still
 * detected at read time (the CRC is checked on every read); closed
 * chunks are written block-encoded, and Gorilla records still read.
 */
#include "store/store_int.h"
#include "store_testlib.h"

#include "lib/buf.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

/* Checks that [mint, maxt] of series k holds exactly fill's samples from
 * t0 on (n of them), bit for bit. */
static void cf_check(struct gp_store *s, uint32_t k, int64_t t0, size_t n, int64_t mint,
                     int64_t maxt)
{
    struct gp_samples x = {0};
    CHECK_INT(gp_store_read(s, tid(s, k), mint, maxt, &x), GP_OK);
    size_t want = 0;
    for (size_t j = 0; j < n; j++) {
        int64_t t = t0 + (int64_t)j * 1000;
        if (t < mint || t > maxt)
            continue;
        if (want >= x.n || x.t[want] != t || x.v[want] != tvalue(k, t)) {
            gp_test_fail(__FILE__, __LINE__, "series %u: sample %zu of [%lld, %lld] differs", k,
                         want, (long long)mint, (long long)maxt);
            break;
        }
        want++;
    }
    CHECK_INT(x.n, want);
    CHECK_INT(x.damaged, 0);
    gp_samples_free(&x);
}

static size_t count_chunk_files(const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/chunks", dir);
    DIR *d = opendir(path);
    CHECK(d);
    size_t n = 0;
    for (struct dirent *de; d && (de = readdir(d));)
        n += strstr(de->d_name, ".chk") != NULL;
    if (d)
        closedir(d);
    return n;
}

static void test_reads_follow_growth_rotation_and_gc(void)
{
    const char *dir = gp_test_tmpdir();
    struct gp_store_options o = {
        .block_ms = 120000, .no_sync = 1, .no_background = 1, .max_future_ms = -1};
    struct gp_store *s = topen(dir, &o);
    int64_t t0 = gp_st_floor(tnow_ms() - 3600 * 1000, 120000) + 3000;
    /* 300 s: closed chunks (cut at 120 samples and at window edges) and an
     * open head per series. */
    tfill(s, 6, 300, t0, 50);
    for (uint32_t k = 0; k < 6; k++)
        cf_check(s, k, t0, 300, INT64_MIN, INT64_MAX);
    /* The same mapped file grows: the new records are read too. */
    tfill(s, 6, 600, t0 + 300 * 1000, 50);
    for (uint32_t k = 0; k < 6; k++)
        cf_check(s, k, t0, 900, INT64_MIN, INT64_MAX);
    /* Ranges that start and end inside chunks, and one chunk's exact span. */
    cf_check(s, 2, t0, 900, t0 + 57 * 1000 + 1, t0 + 401 * 1000);
    cf_check(s, 3, t0, 900, t0 + 117 * 1000, t0 + 117 * 1000);
    cf_check(s, 4, t0, 900, t0 + 117 * 1000, t0 + 236 * 1000);
    cf_check(s, 5, t0, 900, t0 + 901 * 1000, INT64_MAX);
    /* A checkpoint rotates to a new mapped file; compaction moves the
     * hour into blocks and gc unmaps and removes the files it emptied. */
    CHECK_INT(gp_store_maintain(s, 1), GP_OK);
    CHECK(count_chunk_files(s->dir) <= 2);
    /* Later windows (ahead of the clock: never compacted here) go to the
     * new file, which grows and is rotated again while they are read. */
    int64_t t1 = gp_st_floor(tnow_ms(), 120000) + 240000 + 3000;
    tfill(s, 6, 600, t1, 50);
    for (uint32_t k = 0; k < 6; k++)
        cf_check(s, k, t1, 600, t1, INT64_MAX);
    CHECK_INT(gp_store_maintain(s, 1), GP_OK);
    tfill(s, 6, 300, t1 + 600 * 1000, 50);
    for (uint32_t k = 0; k < 6; k++) {
        cf_check(s, k, t0, 900, INT64_MIN, t1 - 1);
        cf_check(s, k, t1, 900, t1, INT64_MAX);
    }
    gp_store_close(s);
    s = topen(dir, &o);
    for (uint32_t k = 0; k < 6; k++) {
        cf_check(s, k, t0, 900, INT64_MIN, t1 - 1);
        cf_check(s, k, t1, 900, t1, INT64_MAX);
    }
    gp_store_close(s);
}

static void test_pread_fallback_answers_the_same(void)
{
    const char *dir = gp_test_tmpdir();
    struct gp_store_options o = {.no_sync = 1, .no_background = 1};
    gp_st_map_chunk_files = 0;
    struct gp_store *s = topen(dir, &o);
    int64_t t0 = t0_one_window(700 * 1000);
    tfill(s, 5, 700, t0, 100);
    CHECK(s->cf[0].map == NULL);
    for (uint32_t k = 0; k < 5; k++) {
        cf_check(s, k, t0, 700, INT64_MIN, INT64_MAX);
        cf_check(s, k, t0, 700, t0 + 100 * 1000, t0 + 333 * 1000);
    }
    gp_store_close(s);
    gp_st_map_chunk_files = 1;
    s = topen(dir, &o);
    CHECK(s->cf[0].map != NULL);
    for (uint32_t k = 0; k < 5; k++) {
        cf_check(s, k, t0, 700, INT64_MIN, INT64_MAX);
        cf_check(s, k, t0, 700, t0 + 100 * 1000, t0 + 333 * 1000);
    }
    gp_store_close(s);
}

/* Flips one byte of the store's first chunk file at offset off. */
static void flip(const char *dir, long off)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/chunks/00000000.chk", dir);
    int fd = open(path, O_RDWR);
    CHECK(fd >= 0);
    uint8_t b = 0;
    CHECK(pread(fd, &b, 1, off) == 1);
    b ^= 0x5a;
    CHECK(pwrite(fd, &b, 1, off) == 1);
    close(fd);
}

static void test_damage_after_open_detected_on_read(void)
{
    const char *dir = gp_test_tmpdir();
    struct gp_store_options o = {.no_sync = 1, .no_background = 1};
    for (int mapped = 1; mapped >= 0; mapped--) {
        char sub[700];
        snprintf(sub, sizeof sub, "%s/%s", dir, mapped ? "mapped" : "pread");
        gp_st_map_chunk_files = mapped;
        struct gp_store *s = topen(sub, &o);
        int64_t t0 = t0_one_window(600 * 1000);
        tfill(s, 4, 600, t0, 600);
        for (uint32_t k = 0; k < 4; k++)
            cf_check(s, k, t0, 600, INT64_MIN, INT64_MAX);
        /* Inside the first record's chunk bytes, after the store checked it. */
        flip(sub, 100);
        size_t total = 0, hurt = 0;
        uint64_t before = __atomic_load_n(&s->damaged_reads, __ATOMIC_RELAXED);
        for (uint32_t k = 0; k < 4; k++) {
            struct gp_samples x = {0};
            int rc = gp_store_read(s, tid(s, k), INT64_MIN, INT64_MAX, &x);
            CHECK(rc == GP_OK || rc == GP_EPARSE);
            if (rc == GP_EPARSE) {
                hurt++;
                CHECK_INT(x.damaged, 1);
                CHECK_INT(x.n, 600 - GP_ST_HEAD_SAMPLES);
                CHECK_INT(x.damaged_from, t0);
                CHECK_INT(x.damaged_to, t0 + (GP_ST_HEAD_SAMPLES - 1) * 1000);
            }
            total += x.n;
            gp_samples_free(&x);
        }
        CHECK_INT(hurt, 1);
        CHECK_INT(total, 4 * 600 - GP_ST_HEAD_SAMPLES);
        CHECK_INT(__atomic_load_n(&s->damaged_reads, __ATOMIC_RELAXED), before + 1);
        gp_store_close(s);
    }
    gp_st_map_chunk_files = 1;
}

/* Counts the chunk file's records by type (1: Gorilla, 2: packed). */
static void count_types(const char *dir, size_t *gorilla, size_t *packed)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/chunks/00000000.chk", dir);
    struct gp_seg_file f;
    char err[200];
    *gorilla = *packed = 0;
    CHECK_INT(gp_seg_read_file(path, &f, err, sizeof err), GP_OK);
    size_t pos = 0, n;
    uint8_t type;
    const uint8_t *p;
    while (gp_seg_parse(f.data, f.len, &pos, &type, &p, &n) == 1) {
        *gorilla += type == GP_ST_REC_CHUNK;
        *packed += type == GP_ST_REC_PCHUNK;
    }
    gp_seg_file_free(&f);
}

/* Rewrites the first chunk file as an older binary wrote it: every
 * packed record (type 2) as a Gorilla one (type 1), same order. */
static void rewrite_as_gorilla(const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/chunks/00000000.chk", dir);
    struct gp_seg_file f;
    char err[200];
    CHECK_INT(gp_seg_read_file(path, &f, err, sizeof err), GP_OK);
    struct gp_buf out;
    gp_buf_init(&out, 0);
    size_t pos = 0, n;
    uint8_t type;
    const uint8_t *p;
    while (gp_seg_parse(f.data, f.len, &pos, &type, &p, &n) == 1) {
        uint8_t rec[GP_ST_CHUNKREC_HDR + GP_ST_HEAD_BYTES];
        size_t rn = n;
        if (type == GP_ST_REC_PCHUNK) {
            int64_t t[GP_ST_HEAD_SAMPLES];
            double v[GP_ST_HEAD_SAMPLES];
            int k = gp_st_bchunk_decode(p + GP_ST_CHUNKREC_HDR, n - GP_ST_CHUNKREC_HDR, t, v,
                                        GP_ST_HEAD_SAMPLES);
            CHECK(k > 0);
            struct gp_chunk c;
            CHECK_INT(gp_chunk_init(&c, GP_ST_HEAD_BYTES, GP_ST_HEAD_SAMPLES), GP_OK);
            for (int i = 0; i < k; i++)
                CHECK_INT(gp_chunk_append(&c, t[i], v[i]), GP_OK);
            size_t len;
            const uint8_t *g = gp_chunk_bytes(&c, &len);
            memcpy(rec, p, GP_ST_CHUNKREC_HDR);
            memcpy(rec + GP_ST_CHUNKREC_HDR, g, len);
            rn = GP_ST_CHUNKREC_HDR + len;
            gp_chunk_free(&c);
            type = GP_ST_REC_CHUNK;
        } else {
            memcpy(rec, p, n);
        }
        uint8_t h[GP_SEG_HEADER];
        gp_seg_header(h, type, rec, rn);
        gp_buf_append(&out, h, sizeof h);
        gp_buf_append(&out, rec, rn);
    }
    gp_seg_file_free(&f);
    int fd = open(path, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0);
    CHECK(write(fd, out.data, out.len) == (ssize_t)out.len);
    close(fd);
    gp_buf_free(&out);
}

/* Closed chunks go to the chunk file block-encoded (type 2); a chunk
 * file of Gorilla records (type 1, older binaries) still loads, reads
 * and compacts to the same samples. */
static void test_packed_records_and_older_gorilla_files(void)
{
    const char *dir = gp_test_tmpdir();
    struct gp_store_options o = {.no_sync = 1, .no_background = 1};
    struct gp_store *s = topen(dir, &o);
    int64_t t0 = gp_st_floor(tnow_ms() - 3 * 3600 * 1000, 3600000) + 3000;
    /* five closed chunks a series, and an open one */
    enum { N = 5 * GP_ST_HEAD_SAMPLES + 100 };
    tfill(s, 4, N, t0, 100);
    size_t gorilla, packed;
    count_types(dir, &gorilla, &packed);
    CHECK(packed >= 4 * 5);
    CHECK_INT(gorilla, 0);
    for (uint32_t k = 0; k < 4; k++)
        cf_check(s, k, t0, N, INT64_MIN, INT64_MAX);
    gp_store_close(s);

    rewrite_as_gorilla(dir);
    count_types(dir, &gorilla, &packed);
    CHECK_INT(packed, 0);
    CHECK(gorilla >= 4 * 5);
    s = topen(dir, &o);
    CHECK_INT(s->damage, 0);
    for (uint32_t k = 0; k < 4; k++) {
        cf_check(s, k, t0, N, INT64_MIN, INT64_MAX);
        cf_check(s, k, t0, N, t0 + 130 * 1000, t0 + 250 * 1000);
    }
    /* compaction reads the Gorilla records into a block */
    CHECK_INT(gp_store_maintain(s, 1), GP_OK);
    struct gp_store_stats st;
    gp_store_stats(s, &st);
    CHECK(st.blocks >= 1);
    for (uint32_t k = 0; k < 4; k++)
        cf_check(s, k, t0, N, INT64_MIN, INT64_MAX);
    gp_store_close(s);
}

/* A closed chunk of a 1 s series holds minutes, not the 2 minutes of
 * Prometheus's 120 samples: a 1-hour read of it parses, checks and
 * decodes 8 records, not 30 (the head read's cost per record is what
 * made head queries slower than block ones). */
static void test_closed_chunks_hold_minutes(void)
{
    const char *dir = gp_test_tmpdir();
    struct gp_store_options o = {.no_sync = 1, .no_background = 1};
    struct gp_store *s = topen(dir, &o);
    /* one hour inside one 2-hour window */
    int64_t t0 = gp_st_floor(tnow_ms() - 4 * 3600 * 1000, 7200000) + 1000;
    tfill(s, 2, 3600, t0, 600);
    char path[1024];
    snprintf(path, sizeof path, "%s/chunks/00000000.chk", dir);
    struct gp_seg_file f;
    char err[200];
    CHECK_INT(gp_seg_read_file(path, &f, err, sizeof err), GP_OK);
    size_t pos = 0, n, recs[2] = {0}, samples[2] = {0};
    uint8_t type;
    const uint8_t *p;
    while (gp_seg_parse(f.data, f.len, &pos, &type, &p, &n) == 1) {
        uint32_t id;
        int64_t tf, tl;
        const uint8_t *c;
        size_t clen, cnt;
        CHECK_INT(gp_st_chunkrec_parse(type, p, n, &id, &tf, &tl, &c, &clen), GP_OK);
        CHECK_INT(gp_st_chunk_count(c, clen, type == GP_ST_REC_PCHUNK, &cnt), GP_OK);
        for (uint32_t k = 0; k < 2; k++)
            if (id == tid(s, k)) {
                recs[k]++;
                samples[k] += cnt;
            }
    }
    gp_seg_file_free(&f);
    for (uint32_t k = 0; k < 2; k++) {
        CHECK_INT(recs[k], 7); /* 7 x 480 closed, 240 in the open head */
        CHECK_INT(samples[k], 7 * 480);
        cf_check(s, k, t0, 3600, INT64_MIN, INT64_MAX);
    }
    gp_store_close(s);
}

const struct gp_test gp_tests_store_cfile[] = {
    {"packed_records_and_older_gorilla_files", test_packed_records_and_older_gorilla_files},
    {"reads_follow_growth_rotation_and_gc", test_reads_follow_growth_rotation_and_gc},
    {"pread_fallback_answers_the_same", test_pread_fallback_answers_the_same},
    {"damage_after_open_detected_on_read", test_damage_after_open_detected_on_read},
    {"closed_chunks_hold_minutes", test_closed_chunks_hold_minutes},
    {0},
};
