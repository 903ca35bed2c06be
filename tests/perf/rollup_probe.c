/*
 * rollup_probe.c - what a rollup file's columns would take recoded, before
 * anyone changes the rollup format for it (issue 19: rollups are 0.079 of
 * the 1.224 bytes a sample of bench/store.sh's 64 x 120 fleet).
 *
 * Each payload of the file is decoded (gp_st_rollup_decode) and each
 * column, and each candidate recoding, encoded as a self-contained block
 * chunk (gp_st_bchunk_encode: times included, so every column carries the
 * same times and header; the count column, constant at 1 s, is nearly
 * nothing else, and is subtracted to leave the values' bytes):
 *   min, max, sum          today's columns
 *   max-min                the minute's range in place of max
 *   max-mean, mean-min     min and max as distances from the sum's mean
 *   min-prevmax            min as the step from the previous minute's max
 * Differences are snapped to the decimal they stand for
 * (gp_st_decimal_snap), as the sum column is; a format built on one would
 * still have to rebuild the stored doubles bit for bit.
 *
 * Not part of the test suite (numbers, not checks). Build and run:
 *
 *   make build/rel/libgpulse.a
 *   cc -std=c11 -D_GNU_SOURCE -O2 -Isrc -pthread tests/perf/rollup_probe.c \
 *      build/rel/libgpulse.a $(pkg-config --libs sqlite3 snappy yaml-0.1 libcurl jansson) \
 *      -lm -o build/rollup-probe
 *   build/rollup-probe DATA_DIR/rollups/MINT_MAXT.rlp
 *
 * 2026-11-27, the 64 x 120 fleet (`bench/storetool load`), 10,240
 * payloads of 120 minutes, bytes of values: min 1.47 M, max 1.54 M, sum
 * 2.12 M; max-min 2.70 M, max-mean 4.80 M, mean-min 4.85 M, min-prevmax
 * 2.97 M: every recoding is larger than the column it would replace (a
 * minute's range and the distance from its mean vary more from minute to
 * minute than its max does, and the mean is no short decimal).
 */
#include "lib/buf.h"
#include "store/store.h"
#include "store/store_fmt.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MIN, MAX, SUM, RANGE, MAX_MEAN, MEAN_MIN, MIN_PREVMAX, COUNT, NCOL };
static const char *const names[NCOL] = {"min",      "max",      "sum",         "max-min",
                                        "max-mean", "mean-min", "min-prevmax", "count"};

static size_t encoded(const int64_t *t, const double *v, size_t n, struct gp_st_bchunk_scratch *sc)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    size_t len = gp_st_bchunk_encode(t, v, n, sc, &b) == 0 ? b.len : 0;
    gp_buf_free(&b);
    return len;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: rollup-probe ROLLUP_FILE\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(argv[1]);
        return 1;
    }
    uint8_t *d = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    struct gp_st_bfile bf;
    char err[256];
    if (d == MAP_FAILED || gp_st_bfile_parse(d, (size_t)st.st_size, &bf, err, sizeof err) != 0) {
        fprintf(stderr, "rollup-probe: %s: %s\n", argv[1], d == MAP_FAILED ? "cannot map" : err);
        return 1;
    }
    struct gp_st_bchunk_scratch sc = {0};
    double total[NCOL] = {0};
    size_t payloads = 0;
    int64_t *t = malloc(65536 * sizeof *t);
    double *c[NCOL];
    for (int j = 0; j < NCOL; j++)
        c[j] = malloc(65536 * sizeof *c[j]);
    for (uint32_t i = 0; i < bf.n; i++) {
        struct gp_st_bentry e;
        const uint8_t *p;
        struct gp_rollups r = {0};
        gp_st_bfile_entry(&bf, i, &e);
        if (gp_st_bfile_payload(&bf, &e, &p) != 0 ||
            gp_st_rollup_decode(&bf, p, e.len, INT64_MIN, INT64_MAX, &r) != 0)
            continue;
        for (size_t k = 0; k < r.n; k++) {
            const struct gp_rollup *x = &r.r[k];
            double mean = x->sum / (double)x->count;
            t[k] = x->t;
            c[MIN][k] = x->min;
            c[MAX][k] = x->max;
            c[SUM][k] = x->sum;
            c[RANGE][k] = gp_st_decimal_snap(x->max - x->min, 4);
            c[MAX_MEAN][k] = gp_st_decimal_snap(x->max - mean, 64);
            c[MEAN_MIN][k] = gp_st_decimal_snap(mean - x->min, 64);
            c[MIN_PREVMAX][k] = k ? gp_st_decimal_snap(x->min - r.r[k - 1].max, 4) : x->min;
            c[COUNT][k] = (double)x->count;
        }
        for (int j = 0; j < NCOL; j++)
            total[j] += (double)encoded(t, c[j], r.n, &sc);
        gp_rollups_free(&r);
        payloads++;
    }
    printf("%zu payloads; bytes of values (each column less the constant count column):\n",
           payloads);
    for (int j = 0; j < COUNT; j++)
        printf("  %-12s %10.0f\n", names[j], total[j] - total[COUNT]);
    printf("  (count      %10.0f with its times and header)\n", total[COUNT]);
    return 0;
}
