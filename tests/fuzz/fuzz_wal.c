/*
 * Fuzz target: WAL segment files (src/store/segment.c, src/store/wal.c).
 * The input is read as a segment file: gp_seg_parse record after record,
 * each record's payload through gp_wal_decode_record with handlers that
 * read every byte they are given. Since random bytes rarely carry a good
 * CRC, the input is also decoded directly as one record (first byte the
 * type, the rest the payload), so the fuzzer reaches the decoder quickly.
 * Past a bad record the reader resynchronizes as replay does
 * (gp_wal_resync) and goes on.
 * abort() when an invariant breaks: a record outside the buffer, a parse
 * that does not advance, a resync that goes back or lands on anything but
 * a valid record, a handler given id 0, empty labels or no samples, a
 * decode answering anything but GP_OK or GP_EPARSE.
 */
#include "lib/err.h"
#include "store/segment.h"
#include "store/wal.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct sink {
    uint64_t sum; /* keeps the reads from being optimized away */
};

static int on_series(void *ctx, const struct gp_wal_series *s)
{
    struct sink *k = ctx;
    if (s->id == 0 || s->labels_len == 0 || !s->labels)
        abort();
    for (size_t i = 0; i < s->labels_len; i++)
        k->sum += s->labels[i];
    k->sum += s->id;
    return 0;
}

static int on_samples(void *ctx, const struct gp_wal_sample *s, size_t n)
{
    struct sink *k = ctx;
    if (n == 0 || n > 256)
        abort();
    for (size_t i = 0; i < n; i++) {
        if (s[i].id == 0)
            abort();
        k->sum += s[i].id + (uint64_t)s[i].t_ms + s[i].v_bits;
    }
    return 0;
}

static void decode(uint8_t type, const uint8_t *p, size_t n, struct sink *k)
{
    static const struct gp_wal_handler h = {on_series, on_samples};
    int rc = gp_wal_decode_record(type, p, n, &h, k);
    if (rc != GP_OK && rc != GP_EPARSE)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sink k = {0};
    size_t pos = 0, n;
    uint8_t type;
    const uint8_t *p;
    int rc;
    while ((rc = gp_seg_parse(data, size, &pos, &type, &p, &n)) == 1) {
        if (type == 0 || p < data || n > size || p + n > data + size || p + n != data + pos)
            abort();
        decode(type, p, n, &k);
    }
    if ((rc == 0 && pos != size) || (rc != 0 && rc != GP_EPARSE) || pos > size)
        abort();
    /* Replay's way past damage: resynchronize, read on, again. */
    for (size_t at = pos; rc == GP_EPARSE;) {
        size_t next = gp_wal_resync(data, size, at);
        if (next <= at || next > size)
            abort();
        if (next == size)
            break;
        at = next;
        if (gp_seg_parse(data, size, &at, &type, &p, &n) != 1)
            abort(); /* resync promised a valid record there */
        decode(type, p, n, &k);
        while ((rc = gp_seg_parse(data, size, &at, &type, &p, &n)) == 1)
            decode(type, p, n, &k);
    }
    if (size > 0)
        decode(data[0], data + 1, size - 1, &k);
    return k.sum == 0x5eed ? 0 : 0;
}
