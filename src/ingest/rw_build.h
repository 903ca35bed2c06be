/*
 * rw_build.h - remote-write series built in memory, one sample each,
 * owning their strings: what the agent pushes each tick.
 *
 * The agent's walk of a frame (agent/expo.h) adds series here through
 * gp_rw_build_sink, without formatting text; the pusher (push.h) takes the whole build
 * from the sampling thread by swapping it for an empty one (no copy),
 * and its encoder views it as a gp_batch with the tick's time, the
 * node and external labels that a series lacks added, and its labels in
 * canonical form (sorted by name, empty values left out: what
 * gp_rw_decode gives), ready for gp_rw_encode or for a store's append.
 *
 * Strings are kept as offsets while building (the buffer moves as it
 * grows); the view turns them into pointers. In steady state nothing is
 * allocated: every array is reused.
 */
#ifndef GP_INGEST_RW_BUILD_H
#define GP_INGEST_RW_BUILD_H

#include "ingest/remote_write.h"
#include "lib/buf.h"
#include "lib/metric_sink.h"

#include <stddef.h>
#include <stdint.h>

struct gp_rw_build_label {
    uint32_t name, nlen, value, vlen; /* offsets and lengths in str */
};

struct gp_rw_build_series {
    size_t first, n; /* its labels: lab[first .. first + n) */
    double value;
};

/* Zero-initialise; free with gp_rw_build_free. */
struct gp_rw_build {
    struct gp_buf str;
    struct gp_rw_build_label *lab;
    size_t nlab, cap_lab;
    struct gp_rw_build_series *ser;
    size_t nser, cap_ser;
    int err; /* the first error while building (GP_ENOMEM, GP_ETOOBIG), sticky until reset */

    /* the view (gp_rw_build_view) */
    struct gp_batch req;
    struct gp_series *vser;
    struct gp_label *vlab;
    struct gp_sample *vsam;
    size_t cap_vser, cap_vlab, cap_vsam;
};

/* Empties b, keeping its memory. */
void gp_rw_build_reset(struct gp_rw_build *b);

/* Starts a series named name (its __name__ label). */
void gp_rw_build_begin(struct gp_rw_build *b, const char *name);

/* Adds a label to the series begun last. */
void gp_rw_build_label(struct gp_rw_build *b, const char *name, const char *value);

/* Ends the series begun last with its value. */
void gp_rw_build_end(struct gp_rw_build *b, double value);

/* Series and bytes (strings and arrays) held, for queue accounting. */
static inline size_t gp_rw_build_nseries(const struct gp_rw_build *b) { return b->nser; }
size_t gp_rw_build_bytes(const struct gp_rw_build *b);

/*
 * The series as a request in canonical form, every sample at time_ms,
 * with add[0..nadd) on each series that has no label of that name (a
 * series keeps its own). Valid until b changes; owned by b (never pass it
 * to gp_rw_decoded_free). Returns GP_OK with *out set, b->err, GP_ENOMEM,
 * or GP_ETOOBIG (more than GP_RW_MAX_LABELS labels in a series).
 */
int gp_rw_build_view(struct gp_rw_build *b, int64_t time_ms, const struct gp_label *add, size_t nadd,
                     const struct gp_batch **out);

/* A metric sink (lib/metric_sink.h) that adds each sample to b as one
 * series: how the agent's walk of a frame becomes the tick's series. */
struct gp_rw_build_sink {
    struct gp_metric_sink base;
    struct gp_rw_build *b;
};
void gp_rw_build_sink_init(struct gp_rw_build_sink *k, struct gp_rw_build *b);

/* Exchanges the contents of a and b (the pusher takes a tick this way). */
void gp_rw_build_swap(struct gp_rw_build *a, struct gp_rw_build *b);

/* Frees what b holds and zeroes it; accepts NULL. */
void gp_rw_build_free(struct gp_rw_build *b);

#endif
