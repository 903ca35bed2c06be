/*
 * hchunk_perf.c - would closed head chunks decode faster in the block
 * encoding? Reads a chunk segment file (DATA_DIR/chunks/NNNNNNNN.chk),
 * decodes every record's Gorilla chunk whole (gp_chunk_iter_decode),
 * re-encodes the same samples with gp_st_bchunk_encode and decodes those
 * whole (gp_st_bchunk_decode) and through the windowed decoder (last 5
 * minutes), ROUNDS times each, best of; prints ns per sample and bytes
 * per sample of both forms, and the encoder's cost (ingest side).
 *
 * Not part of the test suite (numbers, not checks). Build and run:
 *
 *   make build/rel/libgpulse.a
 *   cc -std=c11 -D_GNU_SOURCE -O2 -Isrc -pthread tests/perf/hchunk_perf.c \
 *      build/rel/libgpulse.a $(pkg-config --libs sqlite3 snappy) -lm -o build/hchunk-perf
 *   build/hchunk-perf DATA_DIR/chunks/00000000.chk [ROUNDS]
 *
 * (bench/storetool load DIR BODIES 0 leaves the data in the head.)
 */
#include "lib/buf.h"
#include "lib/err.h"
#include "store/chunk.h"
#include "store/segment.h"
#include "store/store_fmt.h"
#include "perf_file.h"

#include <stdio.h>
#include <stdlib.h>

struct rec {
    const uint8_t *g; /* Gorilla bytes */
    size_t glen;
    size_t boff, blen; /* block-encoded copy inside the packed buffer */
    int64_t t_last;
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: hchunk-perf CHUNK_FILE [ROUNDS]\n");
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    size_t size;
    const uint8_t *map = map_file(argv[1], &size);
    if (!map)
        return 1;
    size_t nrec = 0, cap = 1024;
    struct rec *r = malloc(cap * sizeof *r);
    int64_t *t = malloc(GP_CHUNK_MAX_SAMPLES * sizeof *t);
    double *v = malloc(GP_CHUNK_MAX_SAMPLES * sizeof *v);
    struct gp_buf packed;
    gp_buf_init(&packed, (size_t)1 << 40);
    struct gp_st_bchunk_scratch sc = {0};
    uint64_t samples = 0, gbytes = 0, sink = 0;
    double enc = 0;
    size_t pos = 0;
    for (;;) {
        uint8_t type;
        const uint8_t *p;
        size_t n;
        if (gp_seg_parse(map, size, &pos, &type, &p, &n) != 1)
            break;
        if (type != GP_ST_REC_CHUNK) {
            fprintf(stderr, "hchunk-perf: %s holds block-encoded chunks: needs a file of Gorilla ones\n",
                    argv[1]);
            return 1;
        }
        uint32_t id;
        int64_t tf, tl;
        struct rec e;
        if (gp_st_chunkrec_parse(type, p, n, &id, &tf, &tl, &e.g, &e.glen) != GP_OK)
            break;
        struct gp_chunk_iter it;
        gp_chunk_iter_init(&it, e.g, e.glen);
        int k = gp_chunk_iter_decode(&it, t, v, GP_CHUNK_MAX_SAMPLES);
        if (k <= 0)
            break;
        double t0 = now_s();
        e.boff = packed.len;
        if (gp_st_bchunk_encode(t, v, (size_t)k, &sc, &packed) != GP_OK)
            return 1;
        enc += now_s() - t0;
        e.blen = packed.len - e.boff;
        e.t_last = t[k - 1];
        samples += (uint64_t)k;
        gbytes += e.glen + GP_ST_CHUNKREC_HDR + GP_SEG_HEADER;
        if (nrec == cap)
            r = realloc(r, (cap *= 2) * sizeof *r);
        r[nrec++] = e;
    }
    const uint8_t *pk = (const uint8_t *)packed.data;
    double gor = 1e30, blk = 1e30, win = 1e30;
    for (int round = 0; round < rounds; round++) {
        double t0 = now_s();
        for (size_t i = 0; i < nrec; i++) {
            struct gp_chunk_iter it;
            gp_chunk_iter_init(&it, r[i].g, r[i].glen);
            int k = gp_chunk_iter_decode(&it, t, v, GP_CHUNK_MAX_SAMPLES);
            sink += (uint64_t)t[k - 1] + (uint64_t)v[0];
        }
        double t1 = now_s();
        for (size_t i = 0; i < nrec; i++) {
            int k = gp_st_bchunk_decode(pk + r[i].boff, r[i].blen, t, v, GP_CHUNK_MAX_SAMPLES);
            if (k <= 0)
                return 1;
            sink += (uint64_t)t[k - 1] + (uint64_t)v[0];
        }
        double t2 = now_s();
        for (size_t i = 0; i < nrec; i++) {
            size_t first;
            int k = gp_st_bchunk_decode_window(pk + r[i].boff, r[i].blen, r[i].t_last - 300000, r[i].t_last, t,
                                               v, GP_CHUNK_MAX_SAMPLES, &first);
            sink += (uint64_t)k + first;
        }
        double t3 = now_s();
        gor = t1 - t0 < gor ? t1 - t0 : gor;
        blk = t2 - t1 < blk ? t2 - t1 : blk;
        win = t3 - t2 < win ? t3 - t2 : win;
    }
    printf("%zu chunks, %llu samples (%.1f per chunk)\n", nrec, (unsigned long long)samples,
           (double)samples / (double)nrec);
    printf("gorilla: %.2f ns/sample (%.1f ms), %.3f bytes/sample (record included)\n", gor * 1e9 / (double)samples,
           gor * 1e3, (double)gbytes / (double)samples);
    printf("block:   %.2f ns/sample (%.1f ms), %.3f bytes/sample (+29 header), encode %.2f ns/sample\n",
           blk * 1e9 / (double)samples, blk * 1e3, (double)packed.len / (double)samples,
           enc * 1e9 / (double)samples);
    printf("block, last 5 min of each chunk: %.1f ms (best of %d)%s\n", win * 1e3, rounds, sink ? "" : " ");
    return 0;
}
