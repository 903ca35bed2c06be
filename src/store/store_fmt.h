/*
 * store_fmt.h - the store's own on-disk formats, as pure functions over
 * bytes (no files, no locks), so the fuzz targets and the tests drive them
 * directly. store.h describes the directory; the files are:
 *
 * chunks/%08u.chk   segment.h records of type GP_ST_REC_PCHUNK (or
 *                   GP_ST_REC_CHUNK), one closed head chunk each:
 *                       u32 series id, i64 t_first, i64 t_last (LE),
 *                       then a block chunk (type 2, "block chunks"
 *                       below) or the Gorilla bytes (type 1, chunk.h)
 *
 * head.snap         segment.h records: one GP_ST_SNAP_HEADER first, one
 *                   GP_ST_SNAP_SERIES per series holding data in its
 *                   head, GP_ST_SNAP_PACKED records for those whose head
 *                   is empty (version 2; version 1 writes those as
 *                   series records too; both read), one GP_ST_SNAP_END
 *                   last (its count makes a cut-short file detectable
 *                   even where the cut falls between records).
 *                       header: u32 version, u32 wal_segment (replay from),
 *                               u32 chunk_file (first chunk file not
 *                               durable at the snapshot), u32 max_id,
 *                               i64 compacted_until, i64 max_t
 *                       series: u32 id, i64 first, i64 newest,
 *                               u64 newest value bits, then the open head
 *                               chunk's Gorilla bytes (none when empty)
 *                       packed: repeated { uvarint id - the previous
 *                               entry's id (the first: the id), uvarint
 *                               zigzag(max_t - newest), uvarint newest -
 *                               first, u64 newest value bits }: ~16
 *                               bytes a series instead of 45 (after a
 *                               compaction every head is empty)
 *                       end:    u64 number of series, both kinds
 *
 * blocks/<mint>_<maxt>.blk, rollups/<mint>_<maxt>.rlp  one container:
 *     header  32 bytes: "GPSTORE1", u32 version, u32 kind, i64 mint, i64 maxt
 *     payloads back to back, and (blocks of version 2) before the first
 *     chunk that names it, each time record (see "shared times" below)
 *     index   n entries, sorted by (id, t_first); version 3, 28 bytes:
 *             u32 id, u32 CRC-32C of the payload, u48 offset, u32 length,
 *             u16 count, u32 t_first - mint, u32 t_last - mint;
 *             versions 1 and 2, 40 bytes: u32 id, u32 CRC, u64 offset,
 *             u32 length, u32 count, i64 t_first, i64 t_last
 *     footer  24 bytes: u64 index offset, u32 n, u32 CRC-32C over header
 *             and index, "GPSTEND1"
 *   A block's payload is one block chunk (count = samples, up to 65535):
 *   compaction writes one per series per 15-minute piece of the window
 *   (compact.c; blocks written before 2026-11-27 hold one per window,
 *   and read the same). Each is decimal scaling and bit-packed deltas,
 *   or a Gorilla chunk where values are not decimals (bchunk.c); in a
 *   version 2 block its times are a time record that every series with
 *   the same times shares (version 1: in each chunk; both read). A rollup payload holds one series' minutes
 *   of the window: uvarint n, then four length-prefixed block chunks
 *   (uvarint length, bytes) of n samples each, all at the minutes' start
 *   times: min, max, sum and count (as a double); in a file of version
 *   3 chunks of encoding 2 whose times are one time record of the file,
 *   which every series with the same minutes shares (before: encoding 1,
 *   the times in each of the four). Minima and maxima of
 *   decimal gauges pack as well as the samples do; the sum is written as
 *   the decimal it stands for (gp_st_decimal_snap within count ulps), so
 *   it packs as well.
 *
 * All integers little-endian. Every parser bounds-checks before reading
 * and answers GP_EPARSE for anything malformed.
 */
#ifndef GP_STORE_STORE_FMT_H
#define GP_STORE_STORE_FMT_H

#include "lib/buf.h"
#include "store/chunk.h"
#include "store/store.h"

#include <stddef.h>
#include <stdint.h>

#define GP_ST_FORMAT_VERSION 1u
/* Block and rollup files (layouts: the top of this file): 2 may hold
 * time records and chunks of encoding 2 (shared times, 2026-11-27); 1
 * does not; 3 is 2 with index entries of 28 bytes instead of 40 (a
 * block's index was 4 % of it) whose chunks may be of value mode 2 (a
 * constant series: no value stream), and whose rollup payloads name a
 * time record of the file. All read; the writer writes 3 where the
 * window is shorter than 2^32 ms (49 days), else 2. */
#define GP_ST_BLOCK_VERSION 3u

/* ---- chunk segment records ---- */

/* A closed head chunk: the header below, then its samples, as a Gorilla
 * chunk (type 1, what older binaries wrote and the fallback) or as a
 * block chunk ("block chunks" below; type 2), which decodes ~40% faster
 * and takes ~2.5x less room. Readers take both. */
#define GP_ST_REC_CHUNK 1
#define GP_ST_REC_PCHUNK 2
#define GP_ST_CHUNKREC_HDR 20u

/* Writes the fixed part of a chunk record's payload into out. */
void gp_st_chunkrec_header(uint8_t out[GP_ST_CHUNKREC_HDR], uint32_t id, int64_t t_first,
                           int64_t t_last);

/* Splits the payload of a chunk record of the given type (out: id,
 * times, the chunk's bytes inside p). GP_OK, or GP_EPARSE for another
 * type, a short payload, id 0, t_first > t_last, or a chunk header
 * announcing no samples. */
int gp_st_chunkrec_parse(uint8_t type, const uint8_t *p, size_t n, uint32_t *id, int64_t *t_first,
                         int64_t *t_last, const uint8_t **chunk, size_t *len);

/* ---- head snapshot ---- */

#define GP_ST_SNAP_HEADER 1
#define GP_ST_SNAP_SERIES 2
#define GP_ST_SNAP_END 3
#define GP_ST_SNAP_PACKED 4
/* head.snap's version: 2 may hold packed records; GP_ST_FORMAT_VERSION
 * (1) does not. Both read; a gpulse that reads only 1 sets a 2 aside as
 * damaged (it refuses the store's meta.db format 2 before that). */
#define GP_ST_SNAP_VERSION 2u
/* Largest packed entry: 5 + 10 + 10 + 8 bytes. */
#define GP_ST_SNAP_PACKED_MAX 33u
#define GP_ST_SNAP_HEADER_LEN 32u
#define GP_ST_SNAP_SERIES_HDR 36u

struct gp_st_snap_header {
    uint32_t version;
    uint32_t wal_segment;
    uint32_t chunk_file;
    uint32_t max_id;
    int64_t compacted_until;
    int64_t max_t;
};

struct gp_st_snap_series {
    uint32_t id;
    int64_t first, newest;
    uint64_t newest_bits;
    const uint8_t *chunk; /* inside the parsed buffer; NULL when the head is empty */
    size_t len;
};

void gp_st_snap_header_encode(uint8_t out[GP_ST_SNAP_HEADER_LEN], const struct gp_st_snap_header *h);
void gp_st_snap_series_encode(uint8_t out[GP_ST_SNAP_SERIES_HDR], uint32_t id, int64_t first,
                              int64_t newest, uint64_t newest_bits);
/* Writes one packed entry (a series with an empty head; prev_id: the
 * record's previous entry's id, 0 for its first) at out; its size, at
 * most GP_ST_SNAP_PACKED_MAX. max_t is the header's. */
size_t gp_st_snap_packed_put(uint8_t *out, uint32_t prev_id, uint32_t id, int64_t first,
                             int64_t newest, uint64_t newest_bits, int64_t max_t);

/*
 * Parses a whole snapshot file: *h (out), then fn once per series record
 * (a nonzero return stops with that code). GP_OK, or GP_EPARSE with
 * detail for a damaged or cut-short file (fn may have been called for
 * the records before the damage).
 */
int gp_st_snap_parse(const uint8_t *buf, size_t len, struct gp_st_snap_header *h,
                     int (*fn)(void *arg, const struct gp_st_snap_series *s), void *arg, char *err,
                     size_t errlen);

/* ---- block and rollup files ---- */

#define GP_ST_BF_BLOCK 1u
#define GP_ST_BF_ROLLUP 2u
#define GP_ST_BF_HEADER 32u
#define GP_ST_BF_ENTRY 40u  /* versions 1 and 2 */
#define GP_ST_BF_ENTRY3 28u /* version 3 */
#define GP_ST_BF_FOOTER 24u

/* A parsed container over bytes the caller keeps (an mmap). */
struct gp_st_bfile {
    const uint8_t *data;
    size_t len;
    uint32_t kind;
    int64_t mint, maxt;
    const uint8_t *index;
    uint32_t n;
    uint32_t version, esize; /* esize: bytes of an index entry */
};

struct gp_st_bentry {
    uint32_t id, crc, len, count;
    uint64_t off;
    int64_t t_first, t_last;
};

/* Checks header, footer, index checksum and every entry's bounds and
 * order. GP_OK or GP_EPARSE with detail. */
int gp_st_bfile_parse(const uint8_t *data, size_t len, struct gp_st_bfile *bf, char *err,
                      size_t errlen);
void gp_st_bfile_entry(const struct gp_st_bfile *bf, uint32_t i, struct gp_st_bentry *e);
/* Index of the first entry whose id is >= id (bf->n when none). */
uint32_t gp_st_bfile_lower(const struct gp_st_bfile *bf, uint32_t id);
/* The payload of an entry after checking its CRC: GP_OK or GP_EPARSE. */
int gp_st_bfile_payload(const struct gp_st_bfile *bf, const struct gp_st_bentry *e,
                        const uint8_t **p);

/* Writes a container through a buffered fd: entries must come sorted. */
struct gp_st_bwriter {
    int fd;
    uint8_t *buf;
    size_t blen;
    uint64_t off;
    uint8_t header[GP_ST_BF_HEADER];
    uint8_t *index; /* n * GP_ST_BF_ENTRY bytes */
    size_t n, cap;
    uint32_t last_id;
    int64_t last_t;
    int64_t mint, maxt;
    uint32_t version, esize;
    int err;
    int errnum; /* errno of a failed write or sync, for the log */
};

/* Creates path (truncating) and writes the header. GP_OK or GP_EIO. */
int gp_st_bwriter_open(struct gp_st_bwriter *w, const char *path, uint32_t kind, int64_t mint,
                       int64_t maxt);
/* The same in a chosen version (2 or 3; GP_EUSAGE for another, or for 3
 * where the window is 2^32 ms or longer): open picks it, and tests write
 * the files of older versions with it. */
int gp_st_bwriter_open_version(struct gp_st_bwriter *w, const char *path, uint32_t kind,
                               int64_t mint, int64_t maxt, uint32_t version);
/* Writes bytes that no index entry names (a time record) between the
 * payloads; *off: where they start in the file. GP_OK or GP_EIO. */
int gp_st_bwriter_raw(struct gp_st_bwriter *w, const void *p, size_t len, uint64_t *off);
/* Appends one payload. GP_OK, GP_EUSAGE (out of order, times outside
 * the window, or a count over 65535 in version 3), GP_ENOMEM, GP_EIO. */
int gp_st_bwriter_add(struct gp_st_bwriter *w, uint32_t id, uint32_t count, int64_t t_first,
                      int64_t t_last, const void *payload, size_t len);
/* Writes index and footer, fsyncs and closes. GP_OK or GP_EIO. *size: the file's bytes. */
int gp_st_bwriter_finish(struct gp_st_bwriter *w, uint64_t *size);
/* Closes without finishing (the caller removes the file); accepts a zeroed writer. */
void gp_st_bwriter_abort(struct gp_st_bwriter *w);

/* ---- block chunks (bchunk.c describes the encoding) ---- */

/* Arrays the encoder reuses between chunks; zero-initialize. */
struct gp_st_bchunk_scratch {
    uint64_t *u;
    int64_t *m;
    size_t cap;
};
void gp_st_bchunk_scratch_free(struct gp_st_bchunk_scratch *sc);

/* Encodes n (1..65535) samples with strictly increasing times, appending
 * to out. GP_OK, GP_EUSAGE (bad n or order), GP_ENOMEM or out->err. */
int gp_st_bchunk_encode(const int64_t *t, const double *v, size_t n, struct gp_st_bchunk_scratch *sc,
                        struct gp_buf *out);
/* The sample count a block chunk announces: GP_OK or GP_EPARSE. */
int gp_st_bchunk_count(const uint8_t *p, size_t len, size_t *n);
/* Decodes a whole block chunk into t and v (room for cap samples; both
 * are written even on failure). Returns the count, or GP_EPARSE. */
int gp_st_bchunk_decode(const uint8_t *p, size_t len, int64_t *t, double *v, size_t cap);
/* For a reader of [mint, maxt]: decodes the times, and the values only
 * as far as the last sample at or before maxt. Returns how many samples
 * are at or before maxt, or GP_EPARSE; t and v hold them from *first
 * (the first at or after mint; the values before it are not decoded).
 * Stopping early, it does not check the bytes it did not need (the
 * block's CRC covers them). Room for the whole chunk (cap) is needed. */
int gp_st_bchunk_decode_window(const uint8_t *p, size_t len, int64_t mint, int64_t maxt, int64_t *t,
                               double *v, size_t cap, size_t *first);

/* Shared times (block files only). A time record holds the times of a
 * piece once for every series that has the same ones (all series a node
 * sends share its scrape times): u32 CRC-32C of the body, uvarint body
 * length, body: uvarint n, then the times as in a packed chunk. A chunk
 * of encoding 2 names the record's offset in the file instead of
 * holding the times. gp_st_btimes_encode appends a record of n (1..65535)
 * strictly increasing times to out; gp_st_bchunk_encode_block appends
 * a chunk of encoding 2 whose times are the record at file offset toff
 * (or a Gorilla chunk, self-contained, where the values are not
 * decimals), as a block file of the given format version holds it: from
 * version 3, a chunk whose decimals are all one has no value stream
 * (value mode 2, bchunk.c), which older readers refuse. Both: GP_OK,
 * GP_EUSAGE, GP_ENOMEM or out->err. */
int gp_st_btimes_encode(const int64_t *t, size_t n, struct gp_st_bchunk_scratch *sc,
                        struct gp_buf *out);
int gp_st_bchunk_encode_block(const int64_t *t, const double *v, size_t n, uint64_t toff,
                              uint32_t version, struct gp_st_bchunk_scratch *sc, struct gp_buf *out);
/* The decoders above for a chunk at p inside the parsed file bf, which
 * may be of encoding 2 (its time record found in bf, and its CRC
 * checked); full: decode all and check every end, as
 * gp_st_bchunk_decode does, else as gp_st_bchunk_decode_window. The
 * decoders without bf answer GP_EPARSE for encoding 2. */
int gp_st_bchunk_decode_in(const struct gp_st_bfile *bf, const uint8_t *p, size_t len, int64_t mint,
                           int64_t maxt, int full, int64_t *t, double *v, size_t cap, size_t *first);
/* For a check of the whole file: GP_EPARSE where the chunk at p names a
 * time record that is not there or fails its CRC, else GP_OK (the
 * chunk's own CRC is the index's). */
int gp_st_bchunk_check_in(const struct gp_st_bfile *bf, const uint8_t *p, size_t len);

/* Where a block chunk's bytes go, for bench/storetool sizes: encoding
 * (0 Gorilla, 1 packed, 2 packed with shared times), exponent, mode,
 * samples, exceptions, header bytes (counts, first values, exceptions),
 * bits of packed times and of values (a Gorilla chunk: all value bits).
 * GP_OK or GP_EPARSE. */
struct gp_st_bchunk_info {
    unsigned enc, e, mode;
    size_t n, nexc, head_bytes;
    uint64_t time_bits, value_bits;
};
int gp_st_bchunk_info(const uint8_t *p, size_t len, struct gp_st_bchunk_info *in);

/* The decimal of the fewest digits after the point (at most 15) within
 * max_ulps of v, or v where there is none (bchunk.c). */
double gp_st_decimal_snap(double v, unsigned max_ulps);

/* ---- rollup payloads ---- */

struct gp_st_rollup_enc {
    int64_t *t;
    double *col[4]; /* min, max, sum, count */
    uint32_t n, cap;
    struct gp_st_bchunk_scratch sc;
};
void gp_st_rollup_enc_init(struct gp_st_rollup_enc *e);
void gp_st_rollup_enc_reset(struct gp_st_rollup_enc *e);
void gp_st_rollup_enc_free(struct gp_st_rollup_enc *e);
/* Adds one minute (t a multiple of 60000, increasing). GP_OK, GP_ETOOBIG
 * (65535 minutes), GP_EUSAGE (not increasing) or GP_ENOMEM. */
int gp_st_rollup_enc_add(struct gp_st_rollup_enc *e, const struct gp_rollup *r);
/* Serializes into out (appended), for a rollup file of the given
 * version: from 3, the chunks name the time record of e's minutes at
 * file offset toff (gp_st_btimes_encode), else they hold the times.
 * GP_OK, GP_EUSAGE or out->err. */
int gp_st_rollup_enc_finish(struct gp_st_rollup_enc *e, uint64_t toff, uint32_t version,
                            struct gp_buf *out);

/*
 * Decodes a rollup payload at p inside the parsed file bf (NULL: a
 * payload alone, whose chunks cannot name time records), appending the
 * minutes that overlap [mint, maxt] to out. GP_OK, GP_EPARSE or
 * GP_ENOMEM (entries before the problem are kept).
 */
int gp_st_rollup_decode(const struct gp_st_bfile *bf, const uint8_t *p, size_t n, int64_t mint,
                        int64_t maxt, struct gp_rollups *out);

/* Folds one raw sample into a minute's rollup (r->count 0: empty). */
void gp_st_rollup_fold(struct gp_rollup *r, double v);
/* A folded minute's sum as it is stored and read, from rollup files and
 * raw samples alike: the decimal the float sum stands for, within count
 * ulps (gp_st_decimal_snap). */
double gp_st_rollup_sum(const struct gp_rollup *r);

/* Growth helpers for the public arrays (GP_OK or GP_ENOMEM). */
int gp_st_samples_reserve(struct gp_samples *x, size_t extra);
int gp_st_samples_push(struct gp_samples *x, int64_t t, double v);
int gp_st_rollups_push(struct gp_rollups *x, const struct gp_rollup *r);

/* t rounded down to a multiple of unit (> 0), negative times included;
 * saturates at INT64_MIN where the multiple is not representable. */
static inline int64_t gp_st_floor(int64_t t, int64_t unit)
{
    int64_t r = t % unit, out;
    if (r < 0)
        r += unit;
    return __builtin_sub_overflow(t, r, &out) ? INT64_MIN : out;
}

#endif
