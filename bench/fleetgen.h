/*
 * fleetgen.h - the file of pre-encoded remote-write bodies that
 * bench/fleetgen writes and bench/rwload (and bench/storetool) read.
 *
 * Layout (little-endian):
 *
 *   header  "GPRWBODY" u32 version=1, u32 shards, u64 bodies, u64 samples,
 *           i64 first_ms, i64 last_ms, u32 series, u32 zero
 *   bodies  repeated { u32 shard, u32 len, u64 samples, len bytes }
 *
 * A body is one snappy-compressed WriteRequest. A shard is a group of
 * nodes: every body of one shard carries the same series, and bodies of
 * a shard appear in time order, so a sender that gives each connection
 * whole shards never delivers a series' samples out of order.
 */
#ifndef GP_BENCH_FLEETGEN_H
#define GP_BENCH_FLEETGEN_H

#include <stddef.h>
#include <stdint.h>

#define GP_BODIES_MAGIC "GPRWBODY"
#define GP_BODIES_VERSION 1u
#define GP_BODIES_HEADER_LEN 56
#define GP_BODIES_RECORD_LEN 16 /* 4 + 4 + 8 before the body bytes */

struct gp_bodies_header {
    uint32_t shards;
    uint64_t bodies, samples;
    int64_t first_ms, last_ms;
    uint32_t series;
};

/* One body inside a mapped file (points into the mapping). */
struct gp_body {
    uint32_t shard;
    uint64_t samples;
    const uint8_t *data;
    size_t len;
};

/* A mapped bodies file and the index of its records (bodies.c). */
struct gp_bodies {
    struct gp_bodies_header h;
    struct gp_body *body; /* h.bodies entries */
    void *map;
    size_t map_len;
};

/* Maps path and indexes its records. 0, or -1 with a message in err. */
int gp_bodies_open(struct gp_bodies *b, const char *path, char *err, size_t errlen);
/* Unmaps and frees; accepts a zeroed struct. */
void gp_bodies_close(struct gp_bodies *b);

#endif
