/*
 * Fuzz target: the store's block and rollup files and their payloads
 * (src/store/store_fmt.c, bchunk.c). The input is tried as
 *   - a whole container: parsed; every entry's payload (CRC checked)
 *     decoded as a block chunk or a rollup payload by the file's kind;
 *   - a bare block chunk: when it decodes, its times must strictly
 *     increase, encoding the samples again must decode to the same
 *     samples bit for bit, and the windowed decoder must give the same
 *     samples for a window inside (it is also run on what does not
 *     decode, for the sanitizers), and so must the same bytes inside a
 *     file with slack after them (the one-pass group path);
 *   - a bare rollup payload.
 * Each decoded chunk is also written again with its times as a shared
 * time record (encoding 2) inside a container, and must read back the
 * same through gp_st_bchunk_decode_in. A container's block payloads
 * are decoded in it as well (encoding 2 finds its time record there).
 * abort() on any broken property; the sanitizers catch the rest.
 */
#include "lib/bits.h"
#include "lib/err.h"
#include "store/store_fmt.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CAP GP_CHUNK_MAX_SAMPLES

static int64_t t1[CAP], t2[CAP];
static double v1[CAP], v2[CAP];

/* The windowed decode of [t1[a], t1[b]] equals the whole decode there. */
static void window(const uint8_t *p, size_t len, int k, int a, int b)
{
    size_t first;
    int hi = gp_st_bchunk_decode_window(p, len, t1[a], t1[b], t2, v2, CAP, &first);
    if (hi != b + 1 || first != (size_t)a)
        abort();
    for (int i = a; i <= b && i < k; i++)
        if (t1[i] != t2[i] || gp_f64_bits(v1[i]) != gp_f64_bits(v2[i]))
            abort();
}

/* The k samples as a container's header, a time record and a chunk of
 * encoding 2 that names it, as a block of the given version holds them
 * (3: a constant series without a value stream): decoded in that file,
 * they are the same. */
static void shared(const int64_t *t, const double *v, int k, uint32_t version,
                   struct gp_st_bchunk_scratch *sc, struct gp_buf *b)
{
    gp_buf_reset(b);
    uint8_t hdr[GP_ST_BF_HEADER] = {0};
    gp_buf_append(b, hdr, sizeof hdr);
    if (gp_st_btimes_encode(t, (size_t)k, sc, b) != GP_OK)
        abort();
    size_t at = b->len;
    if (gp_st_bchunk_encode_block(t, v, (size_t)k, GP_ST_BF_HEADER, version, sc, b) != GP_OK)
        abort();
    struct gp_st_bfile bf = {.data = (const uint8_t *)b->data, .len = b->len};
    const uint8_t *p = bf.data + at;
    size_t first;
    if (gp_st_bchunk_decode_in(&bf, p, b->len - at, INT64_MIN, INT64_MAX, 1, t2, v2, CAP, &first) != k ||
        first != 0 || gp_st_bchunk_check_in(&bf, p, b->len - at) != GP_OK)
        abort();
    for (int i = 0; i < k; i++)
        if (t[i] != t2[i] || gp_f64_bits(v[i]) != gp_f64_bits(v2[i]))
            abort();
    /* without its file, a chunk of encoding 2 is refused, never misread */
    if (p[0] == 2 && gp_st_bchunk_decode(p, b->len - at, t2, v2, CAP) != GP_EPARSE)
        abort();
}

/* The same bytes inside a file with set bits after them, where every
 * full group takes the decoder's one-pass path (alone, the last ones
 * take the careful path): the same answer, sample for sample. */
static void with_slack(const uint8_t *p, size_t len, int k)
{
    uint8_t *f = malloc(len + 64);
    if (!f)
        return;
    memcpy(f, p, len);
    memset(f + len, 0xff, 64);
    struct gp_st_bfile bf = {.data = f, .len = len + 64};
    size_t first;
    if (gp_st_bchunk_decode_in(&bf, f, len, INT64_MIN, INT64_MAX, 1, t2, v2, CAP, &first) != k)
        abort();
    for (int i = 0; i < k; i++)
        if (t1[i] != t2[i] || gp_f64_bits(v1[i]) != gp_f64_bits(v2[i]))
            abort();
    free(f);
}

static void bchunk(const uint8_t *p, size_t len)
{
    size_t n, first;
    gp_st_bchunk_decode_window(p, len, len > 40 ? (int64_t)p[len - 1] << 40 : 0, INT64_MAX / 3, t2, v2,
                               CAP, &first);
    int k = gp_st_bchunk_decode(p, len, t1, v1, CAP);
    with_slack(p, len, k);
    if (k == GP_EPARSE)
        return;
    if (k > 0) {
        window(p, len, k, k / 3, k / 2);
        window(p, len, k, 0, k - 1);
    }
    if (k <= 0 || gp_st_bchunk_count(p, len, &n) != GP_OK || n != (size_t)k)
        abort();
    for (int i = 1; i < k; i++)
        if (t1[i] <= t1[i - 1])
            abort();
    struct gp_st_bchunk_scratch sc = {0};
    struct gp_buf b;
    gp_buf_init(&b, 0);
    if (gp_st_bchunk_encode(t1, v1, (size_t)k, &sc, &b) != GP_OK)
        abort();
    if (gp_st_bchunk_decode((const uint8_t *)b.data, b.len, t2, v2, CAP) != k)
        abort();
    for (int i = 0; i < k; i++)
        if (t1[i] != t2[i] || gp_f64_bits(v1[i]) != gp_f64_bits(v2[i]))
            abort();
    shared(t1, v1, k, 2, &sc, &b);
    shared(t1, v1, k, 3, &sc, &b);
    gp_buf_free(&b);
    gp_st_bchunk_scratch_free(&sc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gp_st_bfile bf;
    char err[200];
    struct gp_rollups r = {0};
    if (gp_st_bfile_parse(data, size, &bf, err, sizeof err) == GP_OK) {
        for (uint32_t i = 0; i < bf.n; i++) {
            struct gp_st_bentry e;
            const uint8_t *p;
            gp_st_bfile_entry(&bf, i, &e);
            if (e.off + e.len > size)
                abort(); /* the parser promised bounds */
            if (gp_st_bfile_payload(&bf, &e, &p) != GP_OK)
                continue;
            if (bf.kind == GP_ST_BF_BLOCK) {
                size_t first;
                int k = gp_st_bchunk_decode_in(&bf, p, e.len, INT64_MIN, INT64_MAX, 1, t2, v2, CAP, &first);
                if (k >= 0 && gp_st_bchunk_check_in(&bf, p, e.len) != GP_OK)
                    abort(); /* it decoded, so its time record is sound */
                gp_st_bchunk_decode_in(&bf, p, e.len, e.t_first + 1, e.t_last - 1, 0, t2, v2, CAP, &first);
                bchunk(p, e.len);
            }
            else
                gp_st_rollup_decode(&bf, p, e.len, INT64_MIN, INT64_MAX, &r);
        }
        if (gp_st_bfile_lower(&bf, UINT32_MAX) > bf.n)
            abort();
    }
    bchunk(data, size);
    r.n = 0;
    int rc = gp_st_rollup_decode(NULL, data, size, INT64_MIN, INT64_MAX, &r);
    for (size_t i = 1; rc == GP_OK && i < r.n; i++)
        if (r.r[i].t <= r.r[i - 1].t || r.r[i].count == 0)
            abort();
    gp_rollups_free(&r);
    return 0;
}
