/*
 * test_remote_write.c - the remote-write 1.0 codec: the verified wire
 * vector both ways, bit-exact round trips, and every rejection path.
 * Malformed protobuf is wrapped in real snappy so it goes through
 * gp_rw_decode exactly as a POST body would.
 */
#include "lib/bits.h"
#include "ingest/remote_write.h"
#include "lib/err.h"
#include "test.h"

#include <snappy-c.h>
#include <stdint.h>
#include <stdlib.h>

/* The reference's 46-byte WriteRequest: {__name__="up", job="a"} 1.0 @ 1700000000000. */
static const uint8_t VEC[] = {0x0a, 0x2c, 0x0a, 0x0e, 0x0a, 0x08, 0x5f, 0x5f, 0x6e, 0x61, 0x6d, 0x65,
                              0x5f, 0x5f, 0x12, 0x02, 0x75, 0x70, 0x0a, 0x08, 0x0a, 0x03, 0x6a, 0x6f,
                              0x62, 0x12, 0x01, 0x61, 0x12, 0x10, 0x09, 0x00, 0x00, 0x00, 0x00, 0x00,
                              0x00, 0xf0, 0x3f, 0x10, 0x80, 0xd0, 0x95, 0xff, 0xbc, 0x31};

#define CAP ((size_t)1 << 20)

static struct gp_str S(const char *s) { return (struct gp_str){s, strlen(s)}; }

static int streq(struct gp_str a, const char *b)
{
    return a.len == strlen(b) && memcmp(a.ptr, b, a.len) == 0;
}

/* Compresses raw protobuf bytes with libsnappy, then decodes them. */
static int decode_raw(const void *pb, size_t len, struct gp_batch *out, char *err, size_t errlen)
{
    size_t clen = snappy_max_compressed_length(len);
    char *c = malloc(clen);
    CHECK(c != NULL);
    CHECK(snappy_compress(pb, len, c, &clen) == SNAPPY_OK);
    int rc = gp_rw_decode((const uint8_t *)c, clen, CAP, out, err, errlen);
    free(c);
    return rc;
}

static void expect_error(const void *pb, size_t len, int code, const char *msg)
{
    struct gp_batch req;
    char err[256] = "";
    int rc = decode_raw(pb, len, &req, err, sizeof err);
    if (rc != code)
        gp_test_fail(__FILE__, __LINE__, "want %d (%s), got %d: %s", code, msg, rc, err);
    CHECK_CONTAINS(err, msg);
    CHECK(req.arena == NULL && req.nseries == 0);
    gp_rw_decoded_free(&req);
}

static void test_vector_decodes(void)
{
    struct gp_batch req;
    char err[256] = "";
    CHECK_INT(decode_raw(VEC, sizeof VEC, &req, err, sizeof err), GP_OK);
    CHECK_INT(req.nseries, 1);
    CHECK_INT(req.nlabels_total, 2);
    CHECK_INT(req.nsamples_total, 1);
    const struct gp_series *s = &req.series[0];
    CHECK_INT(s->nlabels, 2);
    CHECK(streq(s->labels[0].name, "__name__") && streq(s->labels[0].value, "up"));
    CHECK(streq(s->labels[1].name, "job") && streq(s->labels[1].value, "a"));
    CHECK_INT(s->nsamples, 1);
    CHECK(s->samples[0].value == 1.0);
    CHECK_INT(s->samples[0].timestamp_ms, 1700000000000LL);
    gp_rw_decoded_free(&req);
    gp_rw_decoded_free(&req); /* zeroed: harmless */
    gp_rw_decoded_free(NULL);
}

static void test_vector_encodes(void)
{
    /* Labels given out of order: the encoder sorts them. */
    struct gp_label labels[] = {{S("job"), S("a")}, {S("__name__"), S("up")}};
    struct gp_sample samples[] = {{1.0, 1700000000000LL}};
    struct gp_series series = {labels, 2, samples, 1};
    struct gp_batch req = {&series, 1, 0, 0, NULL};
    struct gp_buf out, scratch;
    gp_buf_init(&out, 0);
    gp_buf_init(&scratch, 0);
    CHECK_INT(gp_rw_encode(&req, &out, &scratch), GP_OK);
    CHECK_INT(scratch.len, sizeof VEC);
    CHECK(memcmp(scratch.data, VEC, sizeof VEC) == 0);
    /* The compressed body is valid snappy of exactly those bytes. */
    char back[64];
    size_t blen = sizeof back;
    CHECK(snappy_uncompress(out.data, out.len, back, &blen) == SNAPPY_OK);
    CHECK_INT(blen, sizeof VEC);
    CHECK(memcmp(back, VEC, sizeof VEC) == 0);
    /* Reusing the buffers gives the same result. */
    CHECK_INT(gp_rw_encode(&req, &out, &scratch), GP_OK);
    CHECK_INT(scratch.len, sizeof VEC);
    gp_buf_free(&out);
    gp_buf_free(&scratch);
}

static void test_round_trip_many(void)
{
    enum { NS = 300, NSMP = 5 };
    static char names[NS][32];
    static struct gp_label labels[NS][4];
    static struct gp_sample samples[NS][NSMP];
    static struct gp_series series[NS];
    const uint64_t special[] = {GP_STALE_NAN_BITS, gp_f64_bits(NAN), gp_f64_bits(INFINITY),
                                gp_f64_bits(-INFINITY), UINT64_C(0x7ff8dead00000001),
                                UINT64_C(0x8000000000000000)};
    for (int i = 0; i < NS; i++) {
        snprintf(names[i], sizeof names[i], "gpu_metric_%d:rate", i);
        labels[i][0] = (struct gp_label){S("zone"), S("\xc3\xa9t\xc3\xa9 \xf0\x9f\x94\xa5")};
        labels[i][1] = (struct gp_label){S("__name__"), S(names[i])};
        labels[i][2] = (struct gp_label){S("gpu"), S(i % 2 ? "0" : "1")};
        labels[i][3] = (struct gp_label){S("empty"), S("")}; /* dropped */
        for (int k = 0; k < NSMP; k++) {
            uint64_t b = special[(size_t)(i + k) % (sizeof special / sizeof special[0])];
            samples[i][k].value = (k == 0) ? i * 0.5 : gp_bits_f64(b);
            samples[i][k].timestamp_ms = (k == 1) ? -1 - i : (k == 2 ? INT64_MIN + i : 1700000000000LL + k);
        }
        series[i] = (struct gp_series){labels[i], 4, samples[i], NSMP};
    }
    struct gp_batch in = {series, NS, 0, 0, NULL};
    struct gp_buf out, scratch;
    gp_buf_init(&out, 0);
    gp_buf_init(&scratch, 0);
    CHECK_INT(gp_rw_encode(&in, &out, &scratch), GP_OK);
    CHECK(out.len < scratch.len); /* repetitive labels compress */
    struct gp_batch dec;
    char err[256] = "";
    CHECK_INT(gp_rw_decode((const uint8_t *)out.data, out.len, CAP, &dec, err, sizeof err), GP_OK);
    CHECK_INT(dec.nseries, NS);
    CHECK_INT(dec.nlabels_total, NS * 3);
    CHECK_INT(dec.nsamples_total, NS * NSMP);
    for (int i = 0; i < NS; i++) {
        const struct gp_series *s = &dec.series[i];
        CHECK_INT(s->nlabels, 3);
        CHECK(streq(s->labels[0].name, "__name__") && streq(s->labels[0].value, names[i]));
        CHECK(streq(s->labels[1].name, "gpu"));
        CHECK(streq(s->labels[2].name, "zone") && streq(s->labels[2].value, labels[i][0].value.ptr));
        CHECK_INT(s->nsamples, NSMP);
        for (int k = 0; k < NSMP; k++) {
            CHECK(gp_f64_bits(s->samples[k].value) == gp_f64_bits(samples[i][k].value));
            CHECK_INT(s->samples[k].timestamp_ms, samples[i][k].timestamp_ms);
        }
    }
    CHECK(gp_f64_bits(dec.series[0].samples[1].value) == gp_f64_bits(gp_bits_f64(special[1])));
    gp_rw_decoded_free(&dec);
    gp_buf_free(&out);
    gp_buf_free(&scratch);
}

static void test_empty_request(void)
{
    struct gp_batch req = {0};
    struct gp_buf out, scratch;
    gp_buf_init(&out, 0);
    gp_buf_init(&scratch, 0);
    CHECK_INT(gp_rw_encode(&req, &out, &scratch), GP_OK);
    CHECK_INT(scratch.len, 0);
    CHECK_INT(out.len, 1); /* snappy of nothing: the 0x00 length preamble */
    struct gp_batch dec;
    char err[128];
    CHECK_INT(gp_rw_decode((const uint8_t *)out.data, out.len, CAP, &dec, err, sizeof err), GP_OK);
    CHECK_INT(dec.nseries, 0);
    CHECK(dec.series == NULL);
    gp_rw_decoded_free(&dec);
    gp_buf_free(&out);
    gp_buf_free(&scratch);
}

static void test_skips_unknown_and_exemplars(void)
{
    /* Series: label a="b", exemplar (field 3) with a label and a value,
     * histogram (4), unknown fixed32 (9), unknown varint (10), then a sample
     * with an unknown field 7; request level: metadata (3) and field 15. */
    const uint8_t pb[] = {
        0x0a, 0x2c,                                     /* timeseries, 44 bytes */
        0x0a, 0x06, 0x0a, 0x01, 'a', 0x12, 0x01, 'b',   /* label (8) */
        0x1a, 0x11, 0x0a, 0x06, 0x0a, 0x01, 'x', 0x12, 0x01, 'y', 0x11, 0, 0, 0, 0, 0, 0, 0, 0, /* exemplar (19) */
        0x22, 0x00,                                     /* histogram (2) */
        0x4d, 1, 2, 3, 4,                               /* field 9 fixed32 (5) */
        0x50, 0x01,                                     /* field 10 varint (2) */
        0x12, 0x06, 0x38, 0x05, 0x10, 0x2a, 0x38, 0x00, /* sample: f7, ts 42, f7 (8) */
        0x1a, 0x05, 0x08, 0x01, 0x12, 0x01, 'm',        /* metadata: counter m */
        0x78, 0x05,                                     /* field 15 varint */
    };
    struct gp_batch req;
    char err[256] = "";
    CHECK_INT(decode_raw(pb, sizeof pb, &req, err, sizeof err), GP_OK);
    CHECK_INT(req.nseries, 1);
    CHECK_INT(req.series[0].nlabels, 1);
    CHECK(streq(req.series[0].labels[0].name, "a") && streq(req.series[0].labels[0].value, "b"));
    CHECK_INT(req.series[0].nsamples, 1);
    CHECK(req.series[0].samples[0].value == 0.0); /* proto3 default */
    CHECK_INT(req.series[0].samples[0].timestamp_ms, 42);
    gp_rw_decoded_free(&req);
}

static void test_rejects_malformed_wire(void)
{
    const uint8_t trunc_varint[] = {0x0a, 0x80};
    expect_error(trunc_varint, sizeof trunc_varint, GP_EPARSE, "truncated varint at byte 1");
    const uint8_t past_end[] = {0x0a, 0x05, 0x0a, 0x00};
    expect_error(past_end, sizeof past_end, GP_EPARSE, "runs past the end");
    const uint8_t wt_series[] = {0x08, 0x01};
    expect_error(wt_series, sizeof wt_series, GP_EPARSE, "timeseries has wire type 0");
    const uint8_t wt_label[] = {0x0a, 0x02, 0x0d, 0x00};
    expect_error(wt_label, sizeof wt_label, GP_EPARSE, "label has wire type 5");
    const uint8_t wt_value[] = {0x0a, 0x0c, 0x0a, 0x06, 0x0a, 0x01, 'a', 0x12, 0x01, 'b',
                                0x12, 0x02, 0x08, 0x01};
    expect_error(wt_value, sizeof wt_value, GP_EPARSE, "sample value has wire type 0");
    const uint8_t wt_ts[] = {0x0a, 0x0c, 0x0a, 0x06, 0x0a, 0x01, 'a', 0x12, 0x01, 'b',
                             0x12, 0x02, 0x12, 0x00};
    expect_error(wt_ts, sizeof wt_ts, GP_EPARSE, "sample timestamp has wire type 2");
    const uint8_t wt_name[] = {0x0a, 0x04, 0x0a, 0x02, 0x08, 0x01};
    expect_error(wt_name, sizeof wt_name, GP_EPARSE, "label name has wire type 0");
    const uint8_t long_varint[] = {0x50, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    expect_error(long_varint, sizeof long_varint, GP_EPARSE, "varint longer than 10 bytes");
    const uint8_t ovf_varint[] = {0x50, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    expect_error(ovf_varint, sizeof ovf_varint, GP_EPARSE, "overflows 64 bits");
    const uint8_t group[] = {0x13};
    expect_error(group, sizeof group, GP_EPARSE, "unsupported wire type 3");
    const uint8_t field0[] = {0x02, 0x00};
    expect_error(field0, sizeof field0, GP_EPARSE, "invalid field number 0");
    const uint8_t trunc_double[] = {0x0a, 0x0c, 0x0a, 0x06, 0x0a, 0x01, 'a', 0x12, 0x01, 'b',
                                    0x12, 0x02, 0x09, 0x00};
    expect_error(trunc_double, sizeof trunc_double, GP_EPARSE, "truncated 8-byte value");
}

static void test_rejects_bad_labels(void)
{
    const uint8_t no_labels[] = {0x0a, 0x02, 0x12, 0x00};
    expect_error(no_labels, sizeof no_labels, GP_EPARSE, "has no labels");
    const uint8_t only_empty[] = {0x0a, 0x05, 0x0a, 0x03, 0x0a, 0x01, 'a'};
    expect_error(only_empty, sizeof only_empty, GP_EPARSE, "has no labels");
    const uint8_t empty_name[] = {0x0a, 0x05, 0x0a, 0x03, 0x12, 0x01, 'v'};
    expect_error(empty_name, sizeof empty_name, GP_EPARSE, "empty label name");
    const uint8_t bad_name[] = {0x0a, 0x08, 0x0a, 0x06, 0x0a, 0x01, '1', 0x12, 0x01, 'v'};
    expect_error(bad_name, sizeof bad_name, GP_EPARSE, "invalid label name");
    const uint8_t colon_name[] = {0x0a, 0x08, 0x0a, 0x06, 0x0a, 0x01, ':', 0x12, 0x01, 'v'};
    expect_error(colon_name, sizeof colon_name, GP_EPARSE, "invalid label name");
    const uint8_t bad_metric[] = {0x0a, 0x10, 0x0a, 0x0e, 0x0a, 0x08, '_', '_', 'n', 'a', 'm', 'e',
                                  '_', '_', 0x12, 0x02, 'u', '-'};
    expect_error(bad_metric, sizeof bad_metric, GP_EPARSE, "invalid metric name");
    const uint8_t dup[] = {0x0a, 0x10, 0x0a, 0x06, 0x0a, 0x01, 'a', 0x12, 0x01, 'v',
                           0x0a, 0x06, 0x0a, 0x01, 'a', 0x12, 0x01, 'w'};
    expect_error(dup, sizeof dup, GP_EPARSE, "duplicate label name a");
    const uint8_t bad_utf8[] = {0x0a, 0x08, 0x0a, 0x06, 0x0a, 0x01, 'a', 0x12, 0x01, 0xff};
    expect_error(bad_utf8, sizeof bad_utf8, GP_EPARSE, "not valid UTF-8");
    const uint8_t overlong[] = {0x0a, 0x09, 0x0a, 0x07, 0x0a, 0x01, 'a', 0x12, 0x02, 0xc0, 0xaf};
    expect_error(overlong, sizeof overlong, GP_EPARSE, "not valid UTF-8");
    const uint8_t surrogate[] = {0x0a, 0x0a, 0x0a, 0x08, 0x0a, 0x01, 'a', 0x12, 0x03, 0xed, 0xa0, 0x80};
    expect_error(surrogate, sizeof surrogate, GP_EPARSE, "not valid UTF-8");
    const uint8_t cut_utf8[] = {0x0a, 0x09, 0x0a, 0x07, 0x0a, 0x01, 'a', 0x12, 0x02, 0xe2, 0x82};
    expect_error(cut_utf8, sizeof cut_utf8, GP_EPARSE, "not valid UTF-8");
}

static void test_caps(void)
{
    /* A label value one byte over the cap. */
    size_t vlen = GP_RW_MAX_LABEL_LEN + 1;
    uint8_t *pb = malloc(vlen + 32);
    CHECK(pb != NULL);
    size_t lab = 3 + 1 + 2 + vlen; /* name key+len+'a', value key+2-byte len+data */
    size_t n = 0;
    pb[n++] = 0x0a;
    pb[n++] = (uint8_t)((lab + 3) | 0x80);
    pb[n++] = (uint8_t)((lab + 3) >> 7);
    pb[n++] = 0x0a;
    pb[n++] = (uint8_t)(lab | 0x80);
    pb[n++] = (uint8_t)(lab >> 7);
    pb[n++] = 0x0a;
    pb[n++] = 0x01;
    pb[n++] = 'a';
    pb[n++] = 0x12;
    pb[n++] = (uint8_t)(vlen | 0x80);
    pb[n++] = (uint8_t)(vlen >> 7);
    memset(pb + n, 'v', vlen);
    n += vlen;
    expect_error(pb, n, GP_ETOOBIG, "longer than 4096 bytes");
    free(pb);

    /* GP_RW_MAX_LABELS + 1 labels. */
    uint8_t many[2 + 3 + 9 * (GP_RW_MAX_LABELS + 1)];
    n = 0;
    many[n++] = 0x0a;
    size_t body = 9 * (GP_RW_MAX_LABELS + 1);
    many[n++] = (uint8_t)(body | 0x80);
    many[n++] = (uint8_t)(body >> 7);
    for (int i = 0; i <= GP_RW_MAX_LABELS; i++) {
        const uint8_t l[] = {0x0a, 0x07, 0x0a, 0x02, (uint8_t)('a' + i / 26), (uint8_t)('a' + i % 26), 0x12, 0x01, 'v'};
        memcpy(many + n, l, sizeof l);
        n += sizeof l;
    }
    expect_error(many, n, GP_ETOOBIG, "more than 64 labels");

    /* Too many series. */
    size_t ns = GP_RW_MAX_SERIES + 1;
    uint8_t *big = malloc(ns * 10);
    CHECK(big != NULL);
    for (size_t i = 0; i < ns; i++)
        memcpy(big + i * 10, (const uint8_t[]){0x0a, 0x08, 0x0a, 0x06, 0x0a, 0x01, 'a', 0x12, 0x01, 'v'}, 10);
    expect_error(big, ns * 10, GP_ETOOBIG, "more than 100000 series");
    free(big);
}

static void test_not_snappy_and_too_big(void)
{
    struct gp_batch req;
    char err[256] = "";
    /* The raw protobuf: its first byte declares 10 bytes, the body is not valid snappy. */
    CHECK_INT(gp_rw_decode(VEC, sizeof VEC, CAP, &req, err, sizeof err), GP_EPARSE);
    CHECK_CONTAINS(err, "corrupt snappy body");
    const uint8_t bad_pre[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    CHECK_INT(gp_rw_decode(bad_pre, sizeof bad_pre, CAP, &req, err, sizeof err), GP_EPARSE);
    CHECK_CONTAINS(err, "not snappy-compressed");
    CHECK_INT(gp_rw_decode(bad_pre, 0, CAP, &req, err, sizeof err), GP_EPARSE);
    /* A preamble declaring ~4 GiB: refused before any allocation (ASan
     * would fail the test on an allocation that large). */
    const uint8_t huge[] = {0xfe, 0xff, 0xff, 0xff, 0x0f, 0x00};
    CHECK_INT(gp_rw_decode(huge, sizeof huge, CAP, &req, err, sizeof err), GP_ETOOBIG);
    CHECK_CONTAINS(err, "exceeds the cap of 1048576");
    CHECK(req.arena == NULL);
    /* Exactly at the cap is fine; one byte over is not. */
    size_t clen = snappy_max_compressed_length(sizeof VEC);
    char c[128];
    CHECK(snappy_compress((const char *)VEC, sizeof VEC, c, &clen) == SNAPPY_OK);
    CHECK_INT(gp_rw_decode((const uint8_t *)c, clen, sizeof VEC, &req, err, sizeof err), GP_OK);
    gp_rw_decoded_free(&req);
    CHECK_INT(gp_rw_decode((const uint8_t *)c, clen, sizeof VEC - 1, &req, err, sizeof err), GP_ETOOBIG);
}

static void test_encode_rejects(void)
{
    struct gp_buf out, scratch;
    gp_buf_init(&out, 0);
    gp_buf_init(&scratch, 0);
    struct gp_sample smp = {1, 1};
    struct gp_label dup[] = {{S("a"), S("1")}, {S("a"), S("2")}};
    struct gp_series s = {dup, 2, &smp, 1};
    struct gp_batch req = {&s, 1, 0, 0, NULL};
    CHECK_INT(gp_rw_encode(&req, &out, &scratch), GP_EUSAGE);
    struct gp_label bad[] = {{S("__name__"), S("a b")}};
    s = (struct gp_series){bad, 1, &smp, 1};
    CHECK_INT(gp_rw_encode(&req, &out, &scratch), GP_EUSAGE);
    struct gp_label empty[] = {{S("a"), S("")}};
    s = (struct gp_series){empty, 1, &smp, 1};
    CHECK_INT(gp_rw_encode(&req, &out, &scratch), GP_EUSAGE);
    s = (struct gp_series){empty, GP_RW_MAX_LABELS + 1, &smp, 1};
    CHECK_INT(gp_rw_encode(&req, &out, &scratch), GP_ETOOBIG);
    /* A buffer cap too small for the request. */
    struct gp_label ok[] = {{S("__name__"), S("up")}};
    s = (struct gp_series){ok, 1, &smp, 1};
    struct gp_buf tiny;
    gp_buf_init(&tiny, 8);
    CHECK_INT(gp_rw_encode(&req, &out, &tiny), GP_ETOOBIG);
    gp_buf_free(&tiny);
    gp_buf_free(&out);
    gp_buf_free(&scratch);
}

static void test_unmarshal_uncompressed(void)
{
    struct gp_batch req;
    char err[128];
    CHECK_INT(gp_rw_unmarshal(VEC, sizeof VEC, &req, err, sizeof err), GP_OK);
    CHECK_INT(req.nseries, 1);
    gp_rw_decoded_free(&req);
    CHECK_INT(gp_rw_unmarshal(VEC, sizeof VEC - 1, &req, err, sizeof err), GP_EPARSE);
    CHECK_CONTAINS(err, "runs past the end");
}

/* ---- hand-built protobuf for the decoder's fast and slow paths ---------- */

/* A growing protobuf body; lengths here stay below 128 (one-byte varints). */
struct pb {
    uint8_t b[4096];
    size_t n;
};

static void pb_bytes(struct pb *p, uint8_t key, const void *s, size_t len)
{
    CHECK(len < 128 && p->n + 2 + len <= sizeof p->b);
    p->b[p->n++] = key;
    p->b[p->n++] = (uint8_t)len;
    memcpy(p->b + p->n, s, len);
    p->n += len;
}

/* Appends a Label field (name, value: value_len bytes) to a series body. */
static void pb_label(struct pb *ser, const char *name, const void *value, size_t value_len)
{
    struct pb l = {.n = 0};
    pb_bytes(&l, 0x0a, name, strlen(name));
    pb_bytes(&l, 0x12, value, value_len);
    pb_bytes(ser, 0x0a, l.b, l.n);
}

/* Appends a Sample field (value v, timestamp ts) to a series body. */
static void pb_sample(struct pb *ser, double v, uint8_t ts)
{
    uint8_t s[11] = {0x09};
    uint64_t bits = gp_f64_bits(v);
    for (int i = 0; i < 8; i++)
        s[1 + i] = (uint8_t)(bits >> (8 * i));
    s[9] = 0x10;
    s[10] = ts;
    pb_bytes(ser, 0x12, s, sizeof s);
}

static void test_unsorted_labels_sorted(void)
{
    /* Two series: reverse order with a sample between labels, then one
     * already sorted; both must come back sorted, with their samples. */
    struct pb s1 = {.n = 0}, s2 = {.n = 0}, req = {.n = 0};
    pb_label(&s1, "zone", "z", 1);
    pb_sample(&s1, 1.5, 7);
    pb_label(&s1, "job", "j", 1);
    pb_label(&s1, "empty", "", 0); /* dropped */
    pb_label(&s1, "__name__", "up", 2);
    pb_label(&s1, "Hostname", "h", 1);
    pb_label(&s1, "a", "x", 1);
    pb_label(&s1, "ab", "y", 1);
    pb_sample(&s1, -2.0, 8);
    pb_label(&s2, "__name__", "m", 1);
    pb_label(&s2, "gpu", "0", 1);
    pb_bytes(&req, 0x0a, s1.b, s1.n);
    pb_bytes(&req, 0x0a, s2.b, s2.n);
    struct gp_batch r;
    char err[256] = "";
    CHECK_INT(decode_raw(req.b, req.n, &r, err, sizeof err), GP_OK);
    CHECK_INT(r.nseries, 2);
    CHECK_INT(r.nlabels_total, 8);
    CHECK_INT(r.nsamples_total, 2);
    const char *want[] = {"Hostname", "__name__", "a", "ab", "job", "zone"};
    CHECK_INT(r.series[0].nlabels, 6);
    for (size_t i = 0; i < 6; i++)
        CHECK(streq(r.series[0].labels[i].name, want[i]));
    CHECK(streq(r.series[0].labels[1].value, "up"));
    CHECK(streq(r.series[0].labels[5].value, "z"));
    CHECK_INT(r.series[0].nsamples, 2);
    CHECK(r.series[0].samples[0].value == 1.5 && r.series[0].samples[0].timestamp_ms == 7);
    CHECK(r.series[0].samples[1].value == -2.0 && r.series[0].samples[1].timestamp_ms == 8);
    CHECK_INT(r.series[1].nlabels, 2);
    CHECK(streq(r.series[1].labels[0].name, "__name__"));
    CHECK(streq(r.series[1].labels[1].name, "gpu"));
    CHECK_INT(r.series[1].nsamples, 0);
    gp_rw_decoded_free(&r);
}

static void test_unsorted_duplicates_rejected(void)
{
    /* Not adjacent on the wire: only found once sorted. */
    struct pb s = {.n = 0}, req = {.n = 0};
    pb_label(&s, "b", "1", 1);
    pb_label(&s, "a", "2", 1);
    pb_label(&s, "c", "3", 1);
    pb_label(&s, "b", "4", 1);
    pb_bytes(&req, 0x0a, s.b, s.n);
    expect_error(req.b, req.n, GP_EPARSE, "duplicate label name b in series at byte 2");
    /* Adjacent and otherwise sorted. */
    struct pb s2 = {.n = 0}, req2 = {.n = 0};
    pb_label(&s2, "a", "1", 1);
    pb_label(&s2, "a", "2", 1);
    pb_bytes(&req2, 0x0a, s2.b, s2.n);
    expect_error(req2.b, req2.n, GP_EPARSE, "duplicate label name a");
    /* A duplicate is reported only once the whole message parsed: a
     * malformed later series wins (as with the earlier two-pass decoder). */
    const uint8_t trunc[] = {0x0a, 0x80};
    memcpy(req.b + req.n, trunc, sizeof trunc);
    expect_error(req.b, req.n + sizeof trunc, GP_EPARSE, "truncated varint");
}

/* Decodes one series {a=<value>} and returns the decoder's result. */
static int decode_value(const uint8_t *v, size_t n)
{
    struct pb s = {.n = 0}, req = {.n = 0};
    pb_label(&s, "a", v, n);
    pb_bytes(&req, 0x0a, s.b, s.n);
    struct gp_batch r;
    char err[256] = "";
    int rc = decode_raw(req.b, req.n, &r, err, sizeof err);
    if (rc == GP_OK) {
        CHECK(r.series[0].labels[0].value.len == n);
        CHECK(memcmp(r.series[0].labels[0].value.ptr, v, n) == 0);
        gp_rw_decoded_free(&r);
    } else
        CHECK_CONTAINS(err, "not valid UTF-8");
    return rc;
}

static void test_utf8_every_position(void)
{
    /* A multi-byte character, valid or not, at every offset of two 8-byte
     * words (the ASCII fast path reads whole words), in values of every
     * length around the word size. */
    static const struct {
        const char *bytes;
        int ok;
    } seqs[] = {
        {"\xc3\xa9", 1},         {"\xe2\x82\xac", 1},     {"\xf0\x9f\x98\x80", 1},
        {"\xf4\x8f\xbf\xbf", 1}, {"\xff", 0},             {"\x80", 0},
        {"\xc0\xaf", 0},         {"\xed\xa0\x80", 0},     {"\xf4\x90\x80\x80", 0},
        {"\xe2\x82", 0},         {"\xc3", 0},             {"\xf8\x88\x80\x80\x80", 0},
    };
    for (size_t k = 0; k < sizeof seqs / sizeof seqs[0]; k++) {
        size_t sl = strlen(seqs[k].bytes);
        for (size_t len = sl; len <= 20; len++)
            for (size_t pos = 0; pos + sl <= len; pos++) {
                uint8_t v[32];
                memset(v, 'x', len);
                memcpy(v + pos, seqs[k].bytes, sl);
                int rc = decode_value(v, len);
                if (rc != (seqs[k].ok ? GP_OK : GP_EPARSE))
                    gp_test_fail(__FILE__, __LINE__, "seq %zu at %zu of %zu: rc %d", k, pos,
                                 len, rc);
            }
    }
    /* A high byte in every position of an otherwise ASCII 16-byte value. */
    for (size_t pos = 0; pos < 16; pos++) {
        uint8_t v[16];
        memset(v, 'y', sizeof v);
        v[pos] = 0xa0;
        CHECK_INT(decode_value(v, sizeof v), GP_EPARSE);
    }
    /* Pure ASCII of every length 0..40 (0 is an empty value: dropped,
     * leaving no label). */
    for (size_t len = 1; len <= 40; len++) {
        uint8_t v[40];
        for (size_t i = 0; i < len; i++)
            v[i] = (uint8_t)(0x01 + (i * 37) % 0x7f);
        CHECK_INT(decode_value(v, len), GP_OK);
    }
}

static void test_name_charset(void)
{
    static const struct {
        const char *name;
        int ok;
    } names[] = {
        {"a", 1},  {"_", 1},   {"Z9_z", 1}, {"__name_", 1}, {"a:b", 0},  {"9a", 0},
        {"a-b", 0}, {"a\xc3\xa9", 0}, {"\xc3\xa9", 0}, {"a b", 0},  {"a\x7f", 0},
    };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        struct pb s = {.n = 0}, req = {.n = 0};
        pb_label(&s, names[k].name, "v", 1);
        pb_bytes(&req, 0x0a, s.b, s.n);
        struct gp_batch r;
        char err[256] = "";
        int rc = decode_raw(req.b, req.n, &r, err, sizeof err);
        if (rc != (names[k].ok ? GP_OK : GP_EPARSE))
            gp_test_fail(__FILE__, __LINE__, "name %zu: rc %d %s", k, rc, err);
        gp_rw_decoded_free(&r);
    }
    static const struct {
        const char *metric;
        int ok;
    } metrics[] = {
        {"up", 1}, {":a", 1}, {"a:b:c", 1}, {"_9", 1}, {"9a", 0}, {"a.b", 0}, {"a\xc3\xa9", 0},
    };
    for (size_t k = 0; k < sizeof metrics / sizeof metrics[0]; k++) {
        struct pb s = {.n = 0}, req = {.n = 0};
        pb_label(&s, "__name__", metrics[k].metric, strlen(metrics[k].metric));
        pb_bytes(&req, 0x0a, s.b, s.n);
        struct gp_batch r;
        char err[256] = "";
        int rc = decode_raw(req.b, req.n, &r, err, sizeof err);
        if (rc != (metrics[k].ok ? GP_OK : GP_EPARSE))
            gp_test_fail(__FILE__, __LINE__, "metric %zu: rc %d %s", k, rc, err);
        gp_rw_decoded_free(&r);
    }
}

/* A Sample's bytes: value (when has_v), then timestamp varint bytes ts[0..nts), then extra. */
static size_t sample_bytes(uint8_t *out, int has_v, double v, const uint8_t *ts, size_t nts,
                           const uint8_t *extra, size_t nextra)
{
    size_t n = 0;
    if (has_v) {
        uint64_t bits = gp_f64_bits(v);
        out[n++] = 0x09;
        for (int i = 0; i < 8; i++)
            out[n++] = (uint8_t)(bits >> (8 * i));
    }
    if (nts) {
        out[n++] = 0x10;
        memcpy(out + n, ts, nts);
        n += nts;
    }
    if (nextra)
        memcpy(out + n, extra, nextra);
    return n + nextra;
}

static void test_sample_forms(void)
{
    /* The usual form takes the decoder's one-step path; every other form
     * (fields reordered, repeated or unknown, a 10-byte timestamp, padded
     * varints) must decode as protobuf says, and a cut one must fail. */
    static const uint8_t t7[] = {7}, t_now[] = {0xe8, 0xa7, 0xac, 0x8f, 0xac, 0x33}, /* 1764190000104 */
        t_neg[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},  /* -1 */
        t_pad[] = {0x85, 0x80, 0x00},                                            /* 5, padded */
        ts9[] = {0x10, 9}, unk[] = {0x18, 5}, v2[] = {0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}; /* 1.0 */
    struct {
        uint8_t b[40];
        size_t n;
        double v;
        int64_t t;
    } c[9];
    size_t k = 0;
    c[k].n = sample_bytes(c[k].b, 1, 2.5, t7, 1, NULL, 0), c[k].v = 2.5, c[k].t = 7, k++;
    c[k].n = sample_bytes(c[k].b, 1, -0.125, t_now, sizeof t_now, NULL, 0), c[k].v = -0.125,
    c[k].t = INT64_C(1764190000104), k++;
    c[k].n = sample_bytes(c[k].b, 1, 3.0, t_neg, sizeof t_neg, NULL, 0), c[k].v = 3.0, c[k].t = -1, k++;
    c[k].n = sample_bytes(c[k].b, 1, 4.0, t_pad, sizeof t_pad, NULL, 0), c[k].v = 4.0, c[k].t = 5, k++;
    c[k].n = sample_bytes(c[k].b, 1, 5.0, t7, 1, ts9, sizeof ts9), c[k].v = 5.0, c[k].t = 9, k++;
    c[k].n = sample_bytes(c[k].b, 1, 6.0, t7, 1, unk, sizeof unk), c[k].v = 6.0, c[k].t = 7, k++;
    c[k].n = sample_bytes(c[k].b, 1, 7.0, t7, 1, v2, sizeof v2), c[k].v = 1.0, c[k].t = 7, k++;
    c[k].n = sample_bytes(c[k].b, 0, 0, t7, 1, v2, sizeof v2), c[k].v = 1.0, c[k].t = 7, k++; /* t first */
    c[k].n = sample_bytes(c[k].b, 1, 8.0, NULL, 0, NULL, 0), c[k].v = 8.0, c[k].t = 0, k++;
    struct pb req = {.n = 0};
    for (size_t i = 0; i < k; i++) { /* a series each: pb's lengths stay one byte */
        struct pb ser = {.n = 0};
        pb_label(&ser, "__name__", "m", 1);
        pb_bytes(&ser, 0x12, c[i].b, c[i].n);
        pb_bytes(&ser, 0x12, c[0].b, c[0].n); /* and the usual form after it */
        pb_bytes(&req, 0x0a, ser.b, ser.n);
    }
    struct gp_batch r;
    char err[256] = "";
    CHECK_INT(decode_raw(req.b, req.n, &r, err, sizeof err), GP_OK);
    CHECK_INT(r.nseries, k);
    for (size_t i = 0; i < k; i++) {
        const struct gp_sample *x = r.series[i].samples;
        CHECK_INT(r.series[i].nsamples, 2);
        if (x[0].value != c[i].v || x[0].timestamp_ms != c[i].t)
            gp_test_fail(__FILE__, __LINE__, "sample %zu: got %g at %lld, want %g at %lld", i, x[0].value,
                         (long long)x[0].timestamp_ms, c[i].v, (long long)c[i].t);
        CHECK(x[1].value == 2.5 && x[1].timestamp_ms == 7);
    }
    gp_rw_decoded_free(&r);

    /* The usual length, but the timestamp's varint never ends. */
    static const uint8_t t_cut[] = {0x80, 0x80};
    struct pb bad = {.n = 0}, breq = {.n = 0};
    uint8_t b[40];
    pb_label(&bad, "__name__", "m", 1);
    pb_bytes(&bad, 0x12, b, sample_bytes(b, 1, 1.0, t_cut, sizeof t_cut, NULL, 0));
    pb_bytes(&breq, 0x0a, bad.b, bad.n);
    expect_error(breq.b, breq.n, GP_EPARSE, "truncated varint");
}

/* One MetricMetadata body: type (negative: absent), name, help, unit
 * (NULL: absent), and an unknown field 9 when extra. */
static void pb_meta(struct pb *req, int type, const char *name, const char *help, const char *unit,
                    int extra)
{
    struct pb m = {.n = 0};
    if (type >= 0) {
        m.b[m.n++] = 0x08;
        m.b[m.n++] = (uint8_t)type;
    }
    if (name)
        pb_bytes(&m, 0x12, name, strlen(name));
    if (extra) {
        m.b[m.n++] = 0x48; /* field 9, varint */
        m.b[m.n++] = 0x07;
    }
    if (help)
        pb_bytes(&m, 0x22, help, strlen(help));
    if (unit)
        pb_bytes(&m, 0x2a, unit, strlen(unit));
    pb_bytes(req, 0x1a, m.b, m.n);
}

static int meta_is(const struct gp_family_meta *m, const char *name, enum gp_rw_type t,
                   const char *help, const char *unit)
{
    return streq(m->name, name) && m->type == t && streq(m->help, help) && streq(m->unit, unit);
}

/* WriteRequest.metadata (3): every field, in request order beside the
 * series, defaults for absent fields, unknown fields skipped, a type
 * from a newer sender read as unknown. */
static void test_metadata_decodes(void)
{
    struct pb req = {.n = 0}, ser = {.n = 0};
    pb_meta(&req, 1, "http_requests", "Requests served.", "", 0);
    pb_label(&ser, "__name__", "up", 2);
    pb_sample(&ser, 1, 5);
    pb_bytes(&req, 0x0a, ser.b, ser.n);
    pb_meta(&req, 2, "node_temp_celsius", "Temperature \xc2\xb0" "C.", "celsius", 1);
    pb_meta(&req, -1, "a:b", NULL, NULL, 0);
    pb_meta(&req, 42, "future_kind", "h", "u", 0);
    pb_meta(&req, 7, "feature_state", "", NULL, 0);
    struct gp_batch r;
    char err[256] = "";
    CHECK_INT(decode_raw(req.b, req.n, &r, err, sizeof err), GP_OK);
    CHECK_INT(r.nseries, 1);
    const struct gp_family_meta *m = NULL;
    CHECK_INT(gp_rw_metadata(&r, &m), 5);
    CHECK(meta_is(&m[0], "http_requests", GP_MT_COUNTER, "Requests served.", ""));
    CHECK(meta_is(&m[1], "node_temp_celsius", GP_MT_GAUGE, "Temperature \xc2\xb0" "C.", "celsius"));
    CHECK(meta_is(&m[2], "a:b", GP_MT_UNKNOWN, "", ""));
    CHECK(meta_is(&m[3], "future_kind", GP_MT_UNKNOWN, "h", "u"));
    CHECK(meta_is(&m[4], "feature_state", GP_MT_STATESET, "", ""));
    CHECK_STR(gp_rw_metric_type_name(GP_MT_GAUGEHISTOGRAM), "gaugehistogram");
    CHECK_STR(gp_rw_metric_type_name(m[4].type), "stateset");
    gp_rw_decoded_free(&r);
    /* Uncompressed too; a batch built in memory has none. */
    CHECK_INT(gp_rw_unmarshal(req.b, req.n, &r, err, sizeof err), GP_OK);
    CHECK_INT(gp_rw_metadata(&r, &m), 5);
    gp_rw_decoded_free(&r);
    struct gp_batch none = {0};
    CHECK_INT(gp_rw_metadata(&none, &m), 0);
    CHECK(m == NULL);
    /* Only metadata, as Prometheus sends it. */
    struct pb only = {.n = 0};
    pb_meta(&only, 5, "rpc_seconds", "RPC latency.", "seconds", 0);
    CHECK_INT(decode_raw(only.b, only.n, &r, err, sizeof err), GP_OK);
    CHECK_INT(r.nseries, 0);
    CHECK_INT(gp_rw_metadata(&r, &m), 1);
    CHECK(meta_is(&m[0], "rpc_seconds", GP_MT_SUMMARY, "RPC latency.", "seconds"));
    gp_rw_decoded_free(&r);
}

/* gp_rw_encode_metadata: the wire bytes Prometheus writes for one entry,
 * a round trip of every field through the decoder, and the entries the
 * decoder would refuse refused before sending. */
static void test_metadata_encodes(void)
{
    struct gp_buf body, raw;
    gp_buf_init(&body, 0);
    gp_buf_init(&raw, 0);
    const struct gp_family_meta one = {{"m", 1}, {"", 0}, {"", 0}, GP_MT_COUNTER};
    CHECK_INT(gp_rw_encode_metadata(&one, 1, &body, &raw), GP_OK);
    static const uint8_t want[] = {0x1a, 0x05, 0x08, 0x01, 0x12, 0x01, 'm'};
    CHECK_INT(raw.len, sizeof want);
    CHECK(!memcmp(raw.data, want, sizeof want));

    const struct gp_family_meta m[] = {
        {{"rpc_seconds", 11}, {"RPC latency.", 12}, {"seconds", 7}, GP_MT_SUMMARY},
        {{"node_temp_celsius", 17}, {"Temperature \xc2\xb0" "C.", 16}, {"celsius", 7}, GP_MT_GAUGE},
        {{"a:b", 3}, {"", 0}, {"", 0}, GP_MT_UNKNOWN},
        {{"feature_state", 13}, {"x", 1}, {"", 0}, GP_MT_STATESET},
    };
    CHECK_INT(gp_rw_encode_metadata(m, 4, &body, &raw), GP_OK);
    struct gp_batch r;
    char err[256] = "";
    CHECK_INT(gp_rw_decode((const uint8_t *)body.data, body.len, 1 << 20, &r, err, sizeof err), GP_OK);
    CHECK_INT(r.nseries, 0);
    const struct gp_family_meta *got = NULL;
    CHECK_INT(gp_rw_metadata(&r, &got), 4);
    for (size_t i = 0; i < 4; i++)
        CHECK(meta_is(&got[i], m[i].name.ptr, m[i].type, m[i].help.ptr, m[i].unit.ptr));
    gp_rw_decoded_free(&r);

    const struct gp_family_meta bad[] = {
        {{"", 0}, {"h", 1}, {"", 0}, GP_MT_GAUGE},
        {{"1bad", 4}, {"", 0}, {"", 0}, GP_MT_GAUGE},
        {{"ok", 2}, {"bad \xff", 5}, {"", 0}, GP_MT_GAUGE},
        {{"ok", 2}, {"", 0}, {"\xc3", 1}, GP_MT_GAUGE},
        {{"ok", 2}, {"", 0}, {"", 0}, GP_MT__COUNT},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_INT(gp_rw_encode_metadata(&bad[i], 1, &body, &raw), GP_EUSAGE);
    char big[GP_RW_MAX_META_LEN + 1];
    memset(big, 'a', sizeof big);
    const struct gp_family_meta toolong = {{"ok", 2}, {big, sizeof big}, {"", 0}, GP_MT_GAUGE};
    CHECK_INT(gp_rw_encode_metadata(&toolong, 1, &body, &raw), GP_ETOOBIG);
    gp_buf_free(&body);
    gp_buf_free(&raw);
}

static void expect_meta_error(int type, const char *name, const char *help, const char *unit, int code,
                              const char *msg)
{
    struct pb req = {.n = 0};
    pb_meta(&req, type, name, help, unit, 0);
    expect_error(req.b, req.n, code, msg);
}

/* Malformed metadata: wire types, truncation, and what an entry holds. */
static void test_metadata_rejects(void)
{
    const uint8_t wt_meta[] = {0x18, 0x01};
    expect_error(wt_meta, sizeof wt_meta, GP_EPARSE, "metadata has wire type 0");
    const uint8_t wt_type[] = {0x1a, 0x02, 0x0a, 0x00};
    expect_error(wt_type, sizeof wt_type, GP_EPARSE, "metadata type has wire type 2");
    const uint8_t wt_fam[] = {0x1a, 0x02, 0x10, 0x01};
    expect_error(wt_fam, sizeof wt_fam, GP_EPARSE, "metadata family name has wire type 0");
    const uint8_t wt_help[] = {0x1a, 0x05, 0x12, 0x01, 'a', 0x20, 0x01};
    expect_error(wt_help, sizeof wt_help, GP_EPARSE, "metadata help has wire type 0");
    const uint8_t wt_unit[] = {0x1a, 0x05, 0x12, 0x01, 'a', 0x2d, 0x01};
    expect_error(wt_unit, sizeof wt_unit, GP_EPARSE, "metadata unit has wire type 5");
    const uint8_t past[] = {0x1a, 0x05, 0x12, 0x09, 'a'};
    expect_error(past, sizeof past, GP_EPARSE, "runs past the end");
    const uint8_t trunc_type[] = {0x1a, 0x02, 0x08, 0x80};
    expect_error(trunc_type, sizeof trunc_type, GP_EPARSE, "truncated varint");
    const uint8_t outer_past[] = {0x1a, 0x09, 0x08, 0x01};
    expect_error(outer_past, sizeof outer_past, GP_EPARSE, "runs past the end");
    expect_meta_error(1, NULL, "help", "", GP_EPARSE, "metadata at byte 2: no metric family name");
    expect_meta_error(1, "", "help", "", GP_EPARSE, "no metric family name");
    expect_meta_error(1, "9lives", "", "", GP_EPARSE, "invalid metric family name");
    expect_meta_error(1, "a-b", "", "", GP_EPARSE, "invalid metric family name");
    expect_meta_error(1, "ok", "bad \xff byte", "", GP_EPARSE, "metadata at byte 2 for ok: help is not valid UTF-8");
    expect_meta_error(1, "ok", "", "\xc0\xaf", GP_EPARSE, "for ok: unit is not valid UTF-8");
    /* Longer than the cap (two-byte lengths, built by hand). */
    size_t big = GP_RW_MAX_META_LEN + 1, n = 0;
    uint8_t *b = malloc(big + 32);
    CHECK(b != NULL);
    size_t body = 3 + 1 + 2 + big;
    b[n++] = 0x1a;
    b[n++] = (uint8_t)(body | 0x80);
    b[n++] = (uint8_t)(body >> 7);
    b[n++] = 0x12, b[n++] = 0x01, b[n++] = 'x';
    b[n++] = 0x22;
    b[n++] = (uint8_t)(big | 0x80);
    b[n++] = (uint8_t)(big >> 7);
    memset(b + n, 'h', big);
    n += big;
    expect_error(b, n, GP_ETOOBIG, "for x: name, help or unit longer than 4096 bytes");
    free(b);
    /* A bad entry after a good series fails the whole request, as any
     * malformed body does. */
    struct pb req = {.n = 0}, ser = {.n = 0};
    pb_label(&ser, "__name__", "up", 2);
    pb_bytes(&req, 0x0a, ser.b, ser.n);
    pb_meta(&req, 1, "bad name", "", "", 0);
    expect_error(req.b, req.n, GP_EPARSE, "invalid metric family name");
}

/* More than GP_RW_MAX_METADATA entries in one request. */
static void test_metadata_cap(void)
{
    const uint8_t one[] = {0x1a, 0x03, 0x12, 0x01, 'm'};
    size_t n = (size_t)GP_RW_MAX_METADATA + 1;
    uint8_t *b = malloc(n * sizeof one);
    CHECK(b != NULL);
    for (size_t i = 0; i < n; i++)
        memcpy(b + i * sizeof one, one, sizeof one);
    struct gp_batch r;
    char err[256] = "";
    CHECK_INT(decode_raw(b, (n - 1) * sizeof one, &r, err, sizeof err), GP_OK);
    const struct gp_family_meta *m;
    CHECK_INT(gp_rw_metadata(&r, &m), GP_RW_MAX_METADATA);
    gp_rw_decoded_free(&r);
    expect_error(b, n * sizeof one, GP_ETOOBIG, "more than 100000 metadata entries in one request");
    free(b);
}

/* gp_rw_fit counts the bytes gp_rw_encode writes: three series fit in
 * exactly their encoded size and not one byte less; a series larger than
 * the limit goes alone; the series cap holds; none is left past the end. */
static void test_fit_matches_encoded_size(void)
{
    struct gp_label l0[] = {{S("__name__"), S("up")}, {S("job"), S("a")}};
    struct gp_label l1[] = {{S("__name__"), S("up")}, {S("job"), S("bb")}, {S("x"), S("")}};
    struct gp_label l2[] = {{S("__name__"), S("up")}, {S("job"), S("ccc")}};
    struct gp_sample sm[] = {{1.0, 1700000000000LL}, {2.0, 1700000015000LL}};
    struct gp_series ser[] = {{l0, 2, sm, 1}, {l1, 3, sm, 2}, {l2, 2, sm, 1}};
    struct gp_batch req = {ser, 3, 0, 0, NULL};
    struct gp_buf out, scratch;
    gp_buf_init(&out, 0);
    gp_buf_init(&scratch, 0);
    CHECK_INT(gp_rw_encode(&req, &out, &scratch), GP_OK);
    size_t all = scratch.len;
    CHECK_INT(gp_rw_fit(&req, 0, all, 100), 3);
    CHECK_INT(gp_rw_fit(&req, 0, all - 1, 100), 2);
    CHECK_INT(gp_rw_fit(&req, 0, 1, 100), 1);
    CHECK_INT(gp_rw_fit(&req, 0, all, 2), 2);
    CHECK_INT(gp_rw_fit(&req, 2, all, 100), 1);
    CHECK_INT(gp_rw_fit(&req, 3, all, 100), 0);
    struct gp_batch tail = {ser + 1, 2, 0, 0, NULL};
    CHECK_INT(gp_rw_encode(&tail, &out, &scratch), GP_OK);
    CHECK_INT(gp_rw_fit(&req, 1, scratch.len, 100), 2);
    CHECK_INT(gp_rw_fit(&req, 1, scratch.len - 1, 100), 1);
    gp_buf_free(&out);
    gp_buf_free(&scratch);
}

const struct gp_test gp_tests_remote_write[] = {
    {"fit_matches_encoded_size", test_fit_matches_encoded_size},
    {"vector_decodes", test_vector_decodes},
    {"vector_encodes", test_vector_encodes},
    {"round_trip_many", test_round_trip_many},
    {"empty_request", test_empty_request},
    {"skips_unknown_and_exemplars", test_skips_unknown_and_exemplars},
    {"rejects_malformed_wire", test_rejects_malformed_wire},
    {"rejects_bad_labels", test_rejects_bad_labels},
    {"caps", test_caps},
    {"not_snappy_and_too_big", test_not_snappy_and_too_big},
    {"encode_rejects", test_encode_rejects},
    {"unmarshal_uncompressed", test_unmarshal_uncompressed},
    {"unsorted_labels_sorted", test_unsorted_labels_sorted},
    {"unsorted_duplicates_rejected", test_unsorted_duplicates_rejected},
    {"utf8_every_position", test_utf8_every_position},
    {"name_charset", test_name_charset},
    {"sample_forms", test_sample_forms},
    {"metadata_decodes", test_metadata_decodes},
    {"metadata_rejects", test_metadata_rejects},
    {"metadata_cap", test_metadata_cap},
    {"metadata_encodes", test_metadata_encodes},
    {0},
};
