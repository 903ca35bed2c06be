/*
 * chunk.h - Gorilla-compressed chunks of one time series.
 *
 * The head of the embedded store keeps one open chunk per series; a chunk
 * holds up to ~120 samples (two hours of 1-minute scrapes, or two minutes
 * of 1 s ticks) in about a kilobyte, so the memory of the head stays small.
 * The encoding is Facebook's Gorilla scheme as Prometheus's XOR chunks use
 * it, written here from the paper's idea:
 *
 *   bytes 0-1   sample count, big-endian (rewritten on every append)
 *   then a bit stream, most significant bit first:
 *   sample 0    timestamp (int64 ms) as a zigzag varint, value as raw 64 bits
 *   sample 1    timestamp delta (> 0) as an unsigned varint, value XOR'ed
 *   sample n    delta-of-delta of the timestamp in a bucket chosen by size:
 *                 '0'                 dod == 0 (a regular scrape)
 *                 '10'   + 14 bits    -8192 .. 8191
 *                 '110'  + 17 bits    -65536 .. 65535
 *                 '1110' + 20 bits    -524288 .. 524287
 *                 '1111' + 64 bits    anything else
 *               then the value XOR'ed with the previous one:
 *                 '0'                 same value
 *                 '10' + bits         inside the previous window of
 *                                     meaningful bits (leading/trailing zeros)
 *                 '11' + 5 bits leading zeros + 6 bits length (0 = 64)
 *                      + the meaningful bits: a new window
 *   The last byte is padded with zero bits.
 *
 * Timestamps and deltas are computed in unsigned 64-bit (modular)
 * arithmetic, so every strictly increasing int64 sequence encodes, from
 * INT64_MIN to INT64_MAX. Values are carried as their 64 raw bits: NaN
 * payloads (Prometheus's stale marker 0x7ff0000000000002), -0.0, ±Inf and
 * denormals come back bit-exact.
 *
 * Parts: an appender (struct gp_chunk) over a growable or caller-provided
 * buffer with a hard byte cap, and an iterator over encoded bytes that
 * never reads past its length and rejects corrupt input with GP_EPARSE.
 */
#ifndef GP_STORE_CHUNK_H
#define GP_STORE_CHUNK_H

#include <stddef.h>
#include <stdint.h>

/* Defaults: Prometheus cuts its XOR chunks at 120 samples; the byte cap
 * only bites for noisy values (each sample then costs up to ~19 bytes). */
#define GP_CHUNK_DEFAULT_SAMPLES 120u
#define GP_CHUNK_DEFAULT_BYTES 1024u
/* Largest count the 16-bit header holds. */
#define GP_CHUNK_MAX_SAMPLES 65535u
/* Smallest byte cap: room for the header and one sample of any kind, so an
 * empty chunk always accepts its first sample. */
#define GP_CHUNK_MIN_BYTES 24u

struct gp_chunk {
    uint8_t *data;        /* encoded bytes; bytes past the bit position are 0 */
    size_t alloc;         /* bytes allocated (or the caller's buffer size) */
    size_t max_bytes;     /* hard cap on the encoded size */
    unsigned max_samples; /* cut after this many samples */
    int owned;            /* 1: data is ours (growable); 0: the caller's */
    size_t nbits;         /* bits written, header included */
    unsigned count;
    int64_t t_first, t_last;
    uint64_t delta;  /* last timestamp delta (modular) */
    uint64_t v_last; /* raw bits of the last value */
    uint8_t leading, trailing; /* current XOR window; leading 0xff: none yet */
};

/*
 * Initializes an empty chunk over a growable buffer allocated on the first
 * append (freed by gp_chunk_free). max_bytes 0 means GP_CHUNK_DEFAULT_BYTES,
 * max_samples 0 means GP_CHUNK_DEFAULT_SAMPLES. Returns GP_OK, or GP_EUSAGE
 * for max_bytes below GP_CHUNK_MIN_BYTES or max_samples above
 * GP_CHUNK_MAX_SAMPLES (the chunk is then left unusable but freeable).
 */
int gp_chunk_init(struct gp_chunk *c, size_t max_bytes, unsigned max_samples);

/*
 * Initializes an empty chunk that encodes into the caller's buffer (which
 * the caller owns and must keep alive; it is zeroed here). The byte cap is
 * len. Returns GP_OK, or GP_EUSAGE as gp_chunk_init does.
 */
int gp_chunk_init_buf(struct gp_chunk *c, uint8_t *buf, size_t len, unsigned max_samples);

/* Empties the chunk, keeping its memory and caps. */
void gp_chunk_reset(struct gp_chunk *c);

/* Frees an owned buffer (never the caller's); accepts NULL. c is emptied. */
void gp_chunk_free(struct gp_chunk *c);

/*
 * Appends one sample. Returns
 *   GP_OK        appended;
 *   GP_ERANGE    t_ms is not strictly greater than the last timestamp (out
 *                of order or duplicate): the caller counts and drops it.
 *                Checked first, so a full chunk never hides a late sample;
 *   GP_ETOOBIG   the chunk is full (max_samples, or the sample would pass
 *                max_bytes): the caller cuts a new chunk and appends there.
 *                An empty chunk never answers this;
 *   GP_ENOMEM    growing the buffer failed.
 * On any error the chunk is exactly as it was before the call.
 */
int gp_chunk_append(struct gp_chunk *c, int64_t t_ms, double v);

/* The encoded bytes (owned by the chunk, valid until the next append,
 * reset or free) and their length in *len. NULL with *len 0 before the
 * first append of a growable chunk. */
const uint8_t *gp_chunk_bytes(const struct gp_chunk *c, size_t *len);

unsigned gp_chunk_count(const struct gp_chunk *c);
size_t gp_chunk_size(const struct gp_chunk *c); /* encoded bytes, as gp_chunk_bytes */
/* First and last timestamps; meaningless (0) while the count is 0. */
int64_t gp_chunk_first_t(const struct gp_chunk *c);
int64_t gp_chunk_last_t(const struct gp_chunk *c);

/* Decoder over encoded bytes; the bytes stay the caller's and must outlive it. */
struct gp_chunk_iter {
    const uint8_t *data;
    size_t len;
    size_t pos;     /* bit position */
    unsigned count; /* from the header */
    unsigned read;  /* samples decoded so far */
    int err;        /* latched GP_EPARSE */
    int64_t t;
    uint64_t delta, v;
    uint8_t leading, trailing;
};

/*
 * Starts decoding len bytes. Returns GP_OK, or GP_EPARSE when the header
 * is missing (the iterator then answers GP_EPARSE too).
 */
int gp_chunk_iter_init(struct gp_chunk_iter *it, const uint8_t *data, size_t len);

/*
 * Decodes the next sample into *t_ms and *v (out). Returns 1 for a sample,
 * 0 at the end, GP_EPARSE for corrupt bytes (truncated stream, bad varint,
 * impossible bit window, timestamps not increasing); after an error every
 * later call answers GP_EPARSE. Never reads past len.
 */
int gp_chunk_iter_next(struct gp_chunk_iter *it, int64_t *t_ms, double *v);

/* Decodes the samples left, at most cap, into t and v: how many, or
 * GP_EPARSE (those before the damage are in t and v). The same as calling
 * gp_chunk_iter_next for each, without a call per sample. */
int gp_chunk_iter_decode(struct gp_chunk_iter *it, int64_t *t, double *v, size_t cap);

/* The sample count the header announces (0 for a bad header). */
unsigned gp_chunk_iter_count(const struct gp_chunk_iter *it);

#endif
