/*
 * Fuzz target: Gorilla chunks (src/store/chunk.c). The first byte picks:
 *   even  the rest is chunk bytes: iterate to the end; decoded timestamps
 *         must strictly increase and never outnumber the header's count;
 *         the batch decoder (gp_chunk_iter_decode) must give the same
 *         samples, stop at the same one and agree on damage;
 *   odd   the rest is (delta, value) pairs, 8 + 8 bytes each: append them
 *         (deltas added to a running int64 time, wrapping) to a small chunk,
 *         cutting a new one on GP_ETOOBIG, and check that each chunk
 *         decodes to exactly what was accepted, value bits included.
 * abort() on any mismatch.
 */
#include "lib/err.h"
#include "store/chunk.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void iterate_bytes(const uint8_t *p, size_t len)
{
    struct gp_chunk_iter it;
    if (gp_chunk_iter_init(&it, p, len) != GP_OK)
        return;
    unsigned count = gp_chunk_iter_count(&it), n = 0;
    struct gp_chunk_iter b = it;
    int64_t *bt = malloc(((size_t)count + 1) * sizeof *bt);
    double *bv = malloc(((size_t)count + 1) * sizeof *bv);
    if (!bt || !bv)
        abort();
    int k = gp_chunk_iter_decode(&b, bt, bv, (size_t)count + 1);
    int64_t t, prev = 0;
    double v;
    int rc;
    while ((rc = gp_chunk_iter_next(&it, &t, &v)) == 1) {
        if (n > 0 && t <= prev)
            abort();
        if (n >= b.read || bt[n] != t || memcmp(&bv[n], &v, sizeof v) != 0)
            abort();
        prev = t;
        n++;
    }
    if ((rc != 0 && rc != GP_EPARSE) || n > count || (rc == 0 && n != count))
        abort();
    if (b.read != n || k != (rc == 0 ? (int)n : GP_EPARSE))
        abort();
    free(bt);
    free(bv);
}

enum { MAXS = 64 };

static void verify(const struct gp_chunk *c, const int64_t *ts, const uint64_t *vs, unsigned n)
{
    size_t len;
    const uint8_t *p = gp_chunk_bytes(c, &len);
    if (gp_chunk_count(c) != n || len != gp_chunk_size(c) || len > c->max_bytes)
        abort();
    if (n == 0)
        return;
    if (gp_chunk_first_t(c) != ts[0] || gp_chunk_last_t(c) != ts[n - 1])
        abort();
    struct gp_chunk_iter it;
    if (gp_chunk_iter_init(&it, p, len) != GP_OK)
        abort();
    int64_t t;
    double v;
    for (unsigned i = 0; i < n; i++) {
        uint64_t bits;
        if (gp_chunk_iter_next(&it, &t, &v) != 1)
            abort();
        memcpy(&bits, &v, sizeof bits);
        if (t != ts[i] || bits != vs[i])
            abort();
    }
    if (gp_chunk_iter_next(&it, &t, &v) != 0)
        abort();
}

static void build_and_check(const uint8_t *p, size_t len)
{
    struct gp_chunk c;
    /* Small caps so the byte limit and the rollback are hit often. */
    if (gp_chunk_init(&c, 96, 32) != GP_OK)
        abort();
    int64_t ts[MAXS];
    uint64_t vs[MAXS];
    unsigned n = 0;
    uint64_t t = 0;
    for (size_t off = 0; off + 16 <= len; off += 16) {
        uint64_t d, bits;
        memcpy(&d, p + off, 8);
        memcpy(&bits, p + off + 8, 8);
        t += d; /* wrapping: sometimes going backwards */
        double v;
        memcpy(&v, &bits, sizeof v);
        int rc = gp_chunk_append(&c, (int64_t)t, v);
        if (rc == GP_ETOOBIG) {
            if (n == 0)
                abort(); /* an empty chunk always accepts */
            verify(&c, ts, vs, n);
            gp_chunk_reset(&c);
            n = 0;
            rc = gp_chunk_append(&c, (int64_t)t, v);
        }
        if (rc == GP_ERANGE) {
            if (n == 0 || (int64_t)t > ts[n - 1])
                abort();
            continue;
        }
        if (rc != GP_OK || n >= MAXS)
            abort();
        ts[n] = (int64_t)t;
        vs[n] = bits;
        n++;
    }
    verify(&c, ts, vs, n);
    gp_chunk_free(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        build_and_check(data + 1, size - 1);
    else
        iterate_bytes(data + 1, size - 1);
    return 0;
}
