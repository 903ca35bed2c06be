/*
 * bchunk_perf.c - measures the block chunk decoder (src/store/bchunk.c)
 * on a real block file: every chunk of the file decoded whole, then
 * through the windowed decoder for the last 5 minutes of each chunk
 * (what an instant selector's lookback reads), ROUNDS times each, both
 * through gp_st_bchunk_decode_in as the store reads them (a chunk of
 * encoding 2 finds its shared time record in the file); prints ns per
 * sample decoded and the file's bytes per sample.
 *
 * Not part of the test suite (numbers, not checks). Build and run:
 *
 *   make build/rel/libgpulse.a
 *   cc -std=c11 -D_GNU_SOURCE -O2 -Isrc -pthread tests/perf/bchunk_perf.c \
 *      build/rel/libgpulse.a $(pkg-config --libs sqlite3 snappy) -lm -o build/bchunk-perf
 *   build/bchunk-perf DATA_DIR/blocks/<mint>_<maxt>.blk [ROUNDS]
 *
 * (bench/storetool load makes a data directory with a block.)
 */
#include "lib/err.h"
#include "store/store_fmt.h"
#include "perf_file.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bchunk-perf BLOCK_FILE [ROUNDS]\n");
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    size_t size;
    const uint8_t *map = map_file(argv[1], &size);
    if (!map)
        return 1;
    struct gp_st_bfile bf;
    char err[200];
    if (gp_st_bfile_parse(map, size, &bf, err, sizeof err) != GP_OK) {
        fprintf(stderr, "bchunk-perf: %s: not a block file\n", argv[1]);
        return 1;
    }
    int64_t *t = malloc(GP_CHUNK_MAX_SAMPLES * sizeof *t);
    double *v = malloc(GP_CHUNK_MAX_SAMPLES * sizeof *v);
    uint64_t samples = 0, bytes = 0, sink = 0;
    for (uint32_t i = 0; i < bf.n; i++) {
        struct gp_st_bentry e;
        gp_st_bfile_entry(&bf, i, &e);
        samples += e.count;
    }
    bytes = size; /* time records, index and all */
    double whole = 1e30, tail = 1e30;
    for (int r = 0; r < rounds; r++) {
        double t0 = now_s();
        for (uint32_t i = 0; i < bf.n; i++) {
            struct gp_st_bentry e;
            gp_st_bfile_entry(&bf, i, &e);
            size_t first;
            int k = gp_st_bchunk_decode_in(&bf, bf.data + e.off, e.len, INT64_MIN, INT64_MAX, 1, t, v,
                                           GP_CHUNK_MAX_SAMPLES, &first);
            if (k < 0) {
                fprintf(stderr, "bchunk-perf: entry %u does not decode\n", i);
                return 1;
            }
            sink += (uint64_t)t[k - 1];
        }
        double t1 = now_s();
        for (uint32_t i = 0; i < bf.n; i++) {
            struct gp_st_bentry e;
            size_t first;
            gp_st_bfile_entry(&bf, i, &e);
            int k = gp_st_bchunk_decode_in(&bf, bf.data + e.off, e.len, e.t_last - 300000, e.t_last, 0, t, v,
                                           GP_CHUNK_MAX_SAMPLES, &first);
            if (k < 0)
                return 1;
            sink += (uint64_t)first;
        }
        double t2 = now_s();
        whole = t1 - t0 < whole ? t1 - t0 : whole;
        tail = t2 - t1 < tail ? t2 - t1 : tail;
    }
    printf("%u chunks, %llu samples, %.3f bytes/sample (index included)\n", bf.n,
           (unsigned long long)samples, (double)bytes / (double)samples);
    printf("whole chunks: %.2f ns/sample (%.1f ms); last 5 min of each chunk: %.1f ms (best of %d)%s\n",
           whole * 1e9 / (double)samples, whole * 1e3, tail * 1e3, rounds, sink ? "" : " ");
    return 0;
}
