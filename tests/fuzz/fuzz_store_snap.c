/*
 * Fuzz target: the store's head snapshot and chunk files
 * (src/store/store_fmt.c). The input is parsed as a whole snapshot (each
 * series record's head chunk iterated, as recovery does) and as a chunk
 * file (records of both chunk types split and each chunk decoded). A record the parsers
 * accept must hold what they promise: a known id range, ordered times,
 * a chunk that starts with a sample count.
 */
#include "lib/err.h"
#include "store/chunk.h"
#include "store/segment.h"
#include "store/store_fmt.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void iterate(const uint8_t *p, size_t len)
{
    struct gp_chunk_iter it;
    int64_t t;
    double v;
    if (gp_chunk_iter_init(&it, p, len) != GP_OK)
        return;
    while (gp_chunk_iter_next(&it, &t, &v) == 1)
        ;
}

static int on_series(void *arg, const struct gp_st_snap_series *s)
{
    const struct gp_st_snap_header *h = arg;
    if (s->id == 0 || s->id > h->max_id || s->first > s->newest)
        abort();
    if (s->chunk)
        iterate(s->chunk, s->len);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gp_st_snap_header h = {0};
    char err[200];
    /* The header is filled before the first series callback. */
    gp_st_snap_parse(data, size, &h, on_series, &h, err, sizeof err);

    size_t pos = 0, n;
    uint8_t type;
    const uint8_t *p;
    while (gp_seg_parse(data, size, &pos, &type, &p, &n) == 1) {
        uint32_t id;
        int64_t tf, tl;
        const uint8_t *chunk;
        size_t len;
        if (gp_st_chunkrec_parse(type, p, n, &id, &tf, &tl, &chunk, &len) != GP_OK)
            continue;
        if (id == 0 || tf > tl || len < 2 || chunk < p || chunk + len > p + n ||
            (type != GP_ST_REC_CHUNK && type != GP_ST_REC_PCHUNK))
            abort();
        if (type == GP_ST_REC_CHUNK) {
            iterate(chunk, len);
        } else {
            static int64_t t[GP_CHUNK_MAX_SAMPLES];
            static double v[GP_CHUNK_MAX_SAMPLES];
            size_t count;
            if (gp_st_bchunk_count(chunk, len, &count) != GP_OK || count == 0)
                abort(); /* the parser promised a sample count */
            gp_st_bchunk_decode(chunk, len, t, v, GP_CHUNK_MAX_SAMPLES);
        }
    }
    return 0;
}
