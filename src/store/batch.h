/*
 * batch.h - the store's own unit of writing: series, each a label set and
 * its samples, handed to gp_store_append in one call.
 *
 * The store defines it so that nothing below the codec depends on a wire
 * format: the remote-write codec (ingest/remote_write.h) decodes a body
 * into a batch, the agent's frame walk (ingest/rw_build.h) and the rule
 * engine build batches in memory, and `gpulse up` hands its agent's batch
 * to the store without encoding it. Labels are views into memory someone
 * else owns (a decoder's arena, a builder's buffers): a batch holds no
 * memory of its own beyond what its filler says.
 *
 * Canonical form (what the store requires, the decoder guarantees and
 * gp_rw_check verifies for a built batch): each series' labels sorted by
 * name in byte order, no name twice, no empty value.
 */
#ifndef GP_STORE_BATCH_H
#define GP_STORE_BATCH_H

#include <stddef.h>
#include <stdint.h>

/* Prometheus's staleness marker: a NaN that no computation produces. */
#define GP_STALE_NAN_BITS UINT64_C(0x7ff0000000000002)

/* A string view: not NUL-terminated. */
struct gp_str {
    const char *ptr;
    size_t len;
};

struct gp_label {
    struct gp_str name;
    struct gp_str value;
};

struct gp_sample {
    double value;
    int64_t timestamp_ms;
};

struct gp_series {
    struct gp_label *labels;
    size_t nlabels;
    struct gp_sample *samples;
    size_t nsamples;
};

/*
 * The totals are the sums over series (what limits and counters read);
 * arena is the filler's (a decoded batch's memory, freed by the decoder's
 * gp_rw_decoded_free; NULL for a batch built by hand).
 */
struct gp_batch {
    struct gp_series *series;
    size_t nseries;
    size_t nlabels_total;
    size_t nsamples_total;
    void *arena;
};

#endif
