/*
 * remote_write.h - Prometheus remote-write 1.0 codec (protobuf + snappy).
 *
 * The wire contract between agents and the server (DESIGN.md "Data flow"):
 * a POST body is the snappy *block* encoding of a protobuf WriteRequest
 *
 *     WriteRequest { repeated TimeSeries timeseries = 1; }
 *     TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; }
 *     Label        { string name = 1; string value = 2; }
 *     Sample       { double value = 1; int64 timestamp = 2; }   // ms
 *     WriteRequest.metadata = 3: repeated MetricMetadata
 *                  { MetricType type = 1; string metric_family_name = 2;
 *                    string help = 4; string unit = 5; }
 *
 * Metadata (Prometheus sends it in requests of its own, every
 * metadata_config.send_interval) is decoded beside the series and read
 * with gp_rw_metadata; gp_rw_encode_metadata writes such a request.
 * gp_rw_decode() is the server's half: it decompresses, parses and
 * validates a body into a batch (store/batch.h, the store's own type) whose
 * strings and arrays live in one arena the codec owns. gp_rw_encode() is
 * the agent's half: it serializes caller-owned series and compresses them.
 *
 * Canonical form: a decoded series has its labels sorted by name (byte
 * order) and no label with an empty value (proto3 cannot tell "" from
 * absent, and Prometheus treats an empty label as a missing one); the
 * encoder writes exactly that form, so decode(encode(decode(x))) ==
 * decode(x). Sample values are kept bit-exact, including NaN payloads and
 * the stale marker GP_STALE_NAN_BITS.
 */
#ifndef GP_INGEST_REMOTE_WRITE_H
#define GP_INGEST_REMOTE_WRITE_H

#include "lib/buf.h"
#include "store/batch.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Caps; exceeding one is GP_ETOOBIG. */
/* MetricMetadata entries in one WriteRequest (Prometheus sends 500 a request). */
#define GP_RW_MAX_METADATA 100000
/* Bytes in a metadata entry's family name, help or unit. */
#define GP_RW_MAX_META_LEN 4096
/* Series in one WriteRequest (Prometheus sends at most a few thousand). */
#define GP_RW_MAX_SERIES 100000
/* Labels in one series, empty-valued ones not counted (Mimir's default is 30). */
#define GP_RW_MAX_LABELS 64
/* Bytes in one label name or one label value. */
#define GP_RW_MAX_LABEL_LEN 4096

/*
 * Decodes a snappy-compressed WriteRequest into *out (zeroed first; on
 * success the caller frees it with gp_rw_decoded_free; on failure nothing
 * is left to free). The declared uncompressed length is checked against
 * max_uncompressed before anything is allocated. Returns GP_OK,
 * GP_EPARSE (not snappy, malformed protobuf, invalid labels), GP_ETOOBIG
 * (a size cap) or GP_ENOMEM, with a one-line message in err.
 */
int gp_rw_decode(const uint8_t *body, size_t len, size_t max_uncompressed,
                 struct gp_batch *out, char *err, size_t errlen);

/* Same as gp_rw_decode for a WriteRequest that is not compressed (copied). */
int gp_rw_unmarshal(const uint8_t *pb, size_t len, struct gp_batch *out,
                    char *err, size_t errlen);

/* prompb's MetricMetadata.MetricType, numbered as on the wire. */
enum gp_rw_type {
    GP_MT_UNKNOWN, GP_MT_COUNTER, GP_MT_GAUGE, GP_MT_HISTOGRAM, GP_MT_GAUGEHISTOGRAM,
    GP_MT_SUMMARY, GP_MT_INFO, GP_MT_STATESET, GP_MT__COUNT
};

/* One metadata entry: views into the decoded batch's arena. name is a
 * valid metric name; help and unit are valid UTF-8, maybe empty. */
struct gp_family_meta {
    struct gp_str name, help, unit;
    enum gp_rw_type type;
};

/* The metadata entries of a batch gp_rw_decode or gp_rw_unmarshal filled,
 * in request order, into *out (valid until gp_rw_decoded_free); returns
 * their count (0 for a batch built in memory). */
size_t gp_rw_metadata(const struct gp_batch *req, const struct gp_family_meta **out);

/* Prometheus's name of a type ("counter", "gaugehistogram", ...), as its
 * /api/v1/metadata writes it. */
const char *gp_rw_metric_type_name(enum gp_rw_type t);

/* Whether name is a valid label name ([a-zA-Z_][a-zA-Z0-9_]*) and value
 * valid UTF-8: what the decoder accepts (and the encoder writes). For
 * labels a user configures, checked before anything is sent. */
bool gp_rw_label_valid(const char *name, size_t nlen, const char *value, size_t vlen);

/*
 * Checks a request built in memory as gp_rw_decode checks a body: the
 * canonical form (labels sorted by name, none twice, no empty value), the
 * names, UTF-8 values and caps; *size is its WriteRequest's encoded
 * (uncompressed) size, for the receiver's limits. For a batch handed over
 * in-process (`gpulse up`). Returns GP_OK, GP_EPARSE or GP_ETOOBIG, with
 * a one-line message in err.
 */
int gp_rw_check(const struct gp_batch *req, size_t *size, char *err, size_t errlen);

/* Frees the arena of a batch gp_rw_decode or gp_rw_unmarshal filled and
 * zeroes *req; accepts NULL and zeroed. */
void gp_rw_decoded_free(struct gp_batch *req);

/*
 * Serializes req (labels written sorted by name whatever the caller's
 * order, empty-valued labels skipped) into scratch, then snappy-compresses
 * it into out_compressed. Both buffers are reset first and reused, so a
 * sender that keeps them allocates nothing in steady state; on return
 * scratch holds the uncompressed WriteRequest. Returns GP_OK, GP_ETOOBIG
 * (a cap, or a buffer's max), GP_ENOMEM, or GP_EUSAGE for a series the
 * decoder would reject (no label, empty/invalid/duplicate name, value not
 * UTF-8). More than GP_RW_MAX_LABELS labels in a series is GP_ETOOBIG even
 * when some have empty values.
 */
int gp_rw_encode(const struct gp_batch *req, struct gp_buf *out_compressed,
                 struct gp_buf *scratch);

/*
 * Serializes m[0..n) as a WriteRequest of metadata alone (field 3, no
 * series: what Prometheus sends every metadata send_interval) and
 * snappy-compresses it, as gp_rw_encode does. Returns GP_OK, GP_ETOOBIG
 * (more than GP_RW_MAX_METADATA entries, or a string longer than
 * GP_RW_MAX_META_LEN), GP_ENOMEM, or GP_EUSAGE for an entry the decoder
 * would refuse (no or an invalid family name, help or unit not UTF-8).
 */
int gp_rw_encode_metadata(const struct gp_family_meta *m, size_t n, struct gp_buf *out_compressed,
                          struct gp_buf *scratch);

/*
 * How many of req's series from series first on one WriteRequest of at
 * most max_raw uncompressed bytes and max_series series holds, as
 * gp_rw_encode writes them: at least one while any is left (a single
 * series larger than max_raw goes alone). A sender splits a batch that
 * is too large for one body this way, in order.
 */
size_t gp_rw_fit(const struct gp_batch *req, size_t first, size_t max_raw, size_t max_series);

#endif
