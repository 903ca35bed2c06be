/*
 * store_testlib.h - helpers shared by the store's test groups: building
 * write requests of synthetic GPU series, a deterministic value for any
 * (series, time), and opening a store in the test's directory.
 *
 * Static functions in a header included by one test file each, so every
 * group stays a single translation unit without exported helpers.
 */
#ifndef GP_TESTS_STORE_TESTLIB_H
#define GP_TESTS_STORE_TESTLIB_H

#include "lib/bits.h"
#include "lib/err.h"
#include "storage/storage.h"
#include "store/store.h"
#include "store/store_fmt.h"
#include "test.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A request of nseries series (gpu_util{gpu="<k>",node="n<k/8>"} for k in
 * [first, first+nseries)) with per samples each. */
struct treq {
    struct gp_batch req;
    struct gp_series *series;
    struct gp_label *labels;
    struct gp_sample *samples;
    char *strings;
};

/* Deterministic "GPU-like" value of series k at time t. */
static inline double tvalue(uint32_t k, int64_t t)
{
    uint64_t x = (uint64_t)t / 1000u * 2654435761u + k * 40503u;
    return (double)(x % 101u); /* a utilization percentage */
}

static inline void treq_free(struct treq *r)
{
    free(r->series);
    free(r->labels);
    free(r->samples);
    free(r->strings);
    memset(r, 0, sizeof *r);
}

/* Builds the request; sample j of series k is at t0 + j * step with
 * tvalue(k, t) unless val is given (then val[k * per + j]). */
static inline void treq_build(struct treq *r, uint32_t first, size_t nseries, size_t per,
                              int64_t t0, int64_t step, const double *val)
{
    memset(r, 0, sizeof *r);
    r->series = calloc(nseries ? nseries : 1, sizeof *r->series);
    r->labels = calloc(nseries * 3 + 1, sizeof *r->labels);
    r->samples = calloc(nseries * per + 1, sizeof *r->samples);
    r->strings = calloc(nseries + 1, 32);
    CHECK(r->series && r->labels && r->samples && r->strings);
    for (size_t i = 0; i < nseries; i++) {
        uint32_t k = first + (uint32_t)i;
        char *s = r->strings + i * 32;
        int a = snprintf(s, 16, "%u", k);
        int b = snprintf(s + 16, 16, "n%u", k / 8);
        struct gp_label *l = r->labels + i * 3;
        l[0] = (struct gp_label){{"__name__", 8}, {"gpu_util", 8}};
        l[1] = (struct gp_label){{"gpu", 3}, {s, (size_t)a}};
        l[2] = (struct gp_label){{"node", 4}, {s + 16, (size_t)b}};
        struct gp_sample *sm = r->samples + i * per;
        for (size_t j = 0; j < per; j++) {
            int64_t t = t0 + (int64_t)j * step;
            sm[j] = (struct gp_sample){val ? val[i * per + j] : tvalue(k, t), t};
        }
        r->series[i] = (struct gp_series){l, 3, sm, per};
    }
    r->req = (struct gp_batch){r->series, nseries, nseries * 3, nseries * per, NULL};
}

static inline int64_t tnow_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A start half an hour ago, on a whole minute, for span_ms of samples
 * that must not cross a 2-hour compaction window's edge (a chunk is cut
 * there, so tests that count closed chunks would depend on the hour they
 * run at): moved to the next edge where they would cross it. */
static inline int64_t t0_one_window(int64_t span_ms)
{
    const int64_t window = 2 * 3600 * 1000;
    int64_t t0 = tnow_ms() - 1800 * 1000;
    t0 -= t0 % 60000;
    int64_t edge = t0 - t0 % window + window;
    return t0 + span_ms > edge ? edge : t0;
}

/* A clock for tests that write ahead of the wall clock and want the
 * store to compact as though that time had come: the later of the wall
 * clock and the newest time given to tclock_advance (the store's clock is
 * never its newest sample, store.h). Use with max_future_ms = -1. */
static _Atomic int64_t tclock_at = INT64_MIN;

static inline int64_t tclock(void)
{
    int64_t w = tnow_ms(), a = atomic_load(&tclock_at);
    return a > w ? a : w;
}

static inline void tclock_advance(int64_t t)
{
    int64_t cur = atomic_load(&tclock_at);
    while (t > cur && !atomic_compare_exchange_weak(&tclock_at, &cur, t))
        ;
}

/* Opens the store in dir with small windows for tests (no thread). */
static inline struct gp_store *topen(const char *dir, struct gp_store_options *o)
{
    struct gp_store_options def = {.dir = dir, .no_background = 1};
    if (!o)
        o = &def;
    o->dir = dir;
    struct gp_store *s = NULL;
    char err[512] = "";
    int rc = gp_store_open(&s, o, err, sizeof err);
    if (rc != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "gp_store_open: %s (%d)", err, rc);
    return s;
}

/* A store in the test's temporary directory ("data"), without fsync or
 * background thread. */
static inline struct gp_store *topen_tmp(void)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s/data", gp_test_tmpdir());
    struct gp_store_options o = {.no_sync = 1, .no_background = 1};
    return topen(dir, &o);
}

/* The same store behind the storage interface (storage/storage.h), for
 * tests of the code above it. */
static inline struct gp_storage *sopen_tmp(void)
{
    struct gp_storage *s = NULL;
    if (gp_storage_wrap(&s, topen_tmp(), 1))
        gp_test_fail(__FILE__, __LINE__, "gp_storage_wrap: out of memory");
    return s;
}

/* Appends and checks the call succeeded; returns the result. */
static inline struct gp_append_result tappend(struct gp_store *s, const struct treq *r)
{
    struct gp_append_result res;
    char err[256] = "";
    int rc = gp_store_append(s, &r->req, &res, err, sizeof err);
    if (rc != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "gp_store_append: %s (%d)", err, rc);
    return res;
}

/* Appends n samples one a second from t0 to series 0..nseries-1, in
 * batches of `batch` samples per series, each wholly accepted. */
static inline void tfill(struct gp_store *s, size_t nseries, size_t n, int64_t t0, size_t batch)
{
    for (size_t j = 0; j < n; j += batch) {
        size_t per = n - j < batch ? n - j : batch;
        struct treq r;
        treq_build(&r, 0, nseries, per, t0 + (int64_t)j * 1000, 1000, NULL);
        struct gp_append_result res = tappend(s, &r);
        CHECK_INT(res.accepted, nseries * per);
        treq_free(&r);
    }
}

static inline struct gp_append_result sappend(struct gp_storage *s, const struct treq *r)
{
    struct gp_append_result res;
    char err[256] = "";
    int rc = gp_storage_append(s, &r->req, &res, err, sizeof err);
    if (rc != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "gp_storage_append: %s (%d)", err, rc);
    return res;
}

/* The id of the one series selector sel selects, or 0. */
static inline uint32_t tid_of(struct gp_store *s, const char *sel)
{
    struct gp_matcher *m;
    size_t nm;
    char err[128];
    CHECK_INT(gp_selector_parse(sel, strlen(sel), &m, &nm, err, sizeof err), GP_OK);
    struct gp_store_selection sl;
    CHECK_INT(gp_store_select(s, m, nm, INT64_MIN, INT64_MAX, &sl), GP_OK);
    uint32_t id = sl.n == 1 ? sl.series[0].id : 0;
    gp_store_selection_free(&sl);
    gp_matchers_free(m, nm);
    return id;
}

/* The id of gpu_util{gpu="<k>"} via select, or 0. */
static inline uint32_t tid(struct gp_store *s, uint32_t k)
{
    char sel[96];
    snprintf(sel, sizeof sel, "gpu_util{gpu=\"%u\"}", k);
    return tid_of(s, sel);
}

/* The one block file in dir/blocks: its bytes (caller frees), its path
 * (into path) and size. */
static inline uint8_t *tblock_read(const char *dir, char *path, size_t plen, size_t *size)
{
    snprintf(path, plen, "%s/blocks", dir);
    DIR *d = opendir(path);
    CHECK(d);
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l > 4 && strcmp(de->d_name + l - 4, ".blk") == 0)
            break;
    }
    CHECK(de);
    snprintf(path + strlen(path), plen - strlen(path), "/%s", de->d_name);
    closedir(d);
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    struct stat st;
    CHECK(fstat(fd, &st) == 0);
    uint8_t *buf = malloc((size_t)st.st_size);
    CHECK(buf && pread(fd, buf, (size_t)st.st_size, 0) == st.st_size);
    close(fd);
    *size = (size_t)st.st_size;
    return buf;
}

/* The offset of the first indexed payload of the one block file in
 * dir/blocks (the bytes before it, past the header, are the time record
 * that payload's series shares). */
static inline uint64_t tfirst_payload(const char *dir)
{
    char path[1024];
    size_t size;
    uint8_t *buf = tblock_read(dir, path, sizeof path, &size);
    struct gp_st_bfile bf;
    char err[128];
    CHECK_INT(gp_st_bfile_parse(buf, size, &bf, err, sizeof err), GP_OK);
    struct gp_st_bentry e;
    gp_st_bfile_entry(&bf, 0, &e);
    free(buf);
    CHECK(e.off > GP_ST_BF_HEADER);
    return e.off;
}

#endif
