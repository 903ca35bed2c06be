/*
 * test_labels.c - canonical label blobs: encode round trips and refusals,
 * iteration and lookup, validation of every kind of damage (truncation at
 * each byte, padded varints, order, empties), the varint helpers, and the
 * hash: pinned values (it may be persisted), no collisions over 200k
 * blobs, even low bits and avalanche.
 */
#include "lib/err.h"
#include "lib/varint.h"
#include "store/labels.h"
#include "test.h"

#include <stdint.h>
#include <stdlib.h>

#define L(n, v) {{n, sizeof(n) - 1}, {v, sizeof(v) - 1}}

static const struct gp_label gpu_labels[] = {
    L("Hostname", "dgx-01"), L("UUID", "GPU-4f6c"),      L("__name__", "DCGM_FI_DEV_GPU_UTIL"),
    L("gpu", "0"),           L("modelName", "NVIDIA H100"),
};

static void encode(const struct gp_label *l, size_t n, struct gp_buf *b)
{
    gp_buf_init(b, 0);
    CHECK_INT(gp_labels_encode(l, n, b), GP_OK);
}

static void test_encode_round_trip(void)
{
    struct gp_buf b;
    encode(gpu_labels, 5, &b);
    const uint8_t *p = (const uint8_t *)b.data;
    CHECK_INT(p[0], 8);
    CHECK(memcmp(p + 1, "Hostname", 8) == 0);
    CHECK_INT(p[9], 6);
    CHECK_INT(gp_labels_validate(p, b.len), GP_OK);

    struct gp_labels_iter it;
    struct gp_str n, v;
    gp_labels_iter_init(&it, p, b.len);
    for (size_t i = 0; i < 5; i++) {
        CHECK_INT(gp_labels_next(&it, &n, &v), 1);
        CHECK_INT(n.len, gpu_labels[i].name.len);
        CHECK(memcmp(n.ptr, gpu_labels[i].name.ptr, n.len) == 0);
        CHECK_INT(v.len, gpu_labels[i].value.len);
        CHECK(memcmp(v.ptr, gpu_labels[i].value.ptr, v.len) == 0);
    }
    CHECK_INT(gp_labels_next(&it, &n, &v), 0);
    CHECK_INT(gp_labels_next(&it, &n, &v), 0);

    CHECK_INT(gp_labels_get(p, b.len, "gpu", &v), 1);
    CHECK_INT(v.len, 1);
    CHECK(v.ptr[0] == '0');
    CHECK_INT(gp_labels_get(p, b.len, "modelName", &v), 1);
    CHECK_INT(v.len, 11);
    CHECK_INT(gp_labels_get(p, b.len, "Hostnam", &v), 0);
    CHECK_INT(v.len, 0);
    CHECK_INT(gp_labels_get(p, b.len, "zzz", &v), 0);
    CHECK_INT(gp_labels_get(p, b.len, "A", &v), 0);
    CHECK_INT(gp_labels_get(p, b.len, "", &v), 0);
    gp_buf_free(&b);
}

static void test_encode_long_and_binary_values(void)
{
    char big[300];
    memset(big, 'x', sizeof big);
    struct gp_label l[2] = {{{"a", 1}, {big, sizeof big}}, {{"b", 1}, {"\0\n\xff", 3}}};
    struct gp_buf b;
    encode(l, 2, &b);
    const uint8_t *p = (const uint8_t *)b.data;
    CHECK_INT(b.len, 1 + 1 + 2 + 300 + 1 + 1 + 1 + 3);
    CHECK_INT(p[2], 0x80 | (300 & 0x7f));
    CHECK_INT(p[3], 300 >> 7);
    CHECK_INT(gp_labels_validate(p, b.len), GP_OK);
    struct gp_str v;
    CHECK_INT(gp_labels_get(p, b.len, "b", &v), 1);
    CHECK_INT(v.len, 3);
    CHECK(memcmp(v.ptr, "\0\n\xff", 3) == 0);
    gp_buf_free(&b);
}

static void test_encode_refuses_non_canonical(void)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_buf_puts(&b, "keep");
    struct gp_label unsorted[] = {L("b", "1"), L("a", "2")};
    struct gp_label dup[] = {L("a", "1"), L("a", "2")};
    struct gp_label empty_val[] = {L("a", "1"), L("b", "")};
    struct gp_label empty_name[] = {L("", "1")};
    struct gp_label prefix[] = {L("ab", "1"), L("a", "2")}; /* "a" < "ab" */
    CHECK_INT(gp_labels_encode(unsorted, 2, &b), GP_EUSAGE);
    CHECK_INT(gp_labels_encode(dup, 2, &b), GP_EUSAGE);
    CHECK_INT(gp_labels_encode(empty_val, 2, &b), GP_EUSAGE);
    CHECK_INT(gp_labels_encode(empty_name, 1, &b), GP_EUSAGE);
    CHECK_INT(gp_labels_encode(prefix, 2, &b), GP_EUSAGE);
    CHECK_INT(gp_labels_encode(gpu_labels, 0, &b), GP_EUSAGE);
    CHECK_STR(b.data, "keep"); /* nothing written on refusal */
    CHECK_INT(b.err, GP_OK);
    struct gp_label ok[] = {L("a", "2"), L("ab", "1")};
    CHECK_INT(gp_labels_encode(ok, 2, &b), GP_OK);
    CHECK_INT(b.len, 4 + 9);
    gp_buf_free(&b);

    /* A buffer's cap is reported, not overrun. */
    gp_buf_init(&b, 10);
    CHECK_INT(gp_labels_encode(gpu_labels, 5, &b), GP_ETOOBIG);
    gp_buf_free(&b);
}

/* A blob prefix is valid exactly when it ends on a label boundary. */
static void test_validate_every_truncation(void)
{
    struct gp_buf b;
    encode(gpu_labels, 5, &b);
    const uint8_t *p = (const uint8_t *)b.data;
    size_t bounds[6], nb = 0, off = 0;
    for (size_t i = 0; i < 5; i++) {
        off += 2 + gpu_labels[i].name.len + gpu_labels[i].value.len;
        bounds[nb++] = off;
    }
    CHECK_INT(off, b.len);
    for (size_t len = 0; len <= b.len; len++) {
        uint8_t *copy = malloc(len ? len : 1); /* exact size: ASan sees any overread */
        memcpy(copy, p, len);
        int boundary = 0;
        for (size_t k = 0; k < nb; k++)
            boundary |= bounds[k] == len;
        CHECK_INT(gp_labels_validate(copy, len), boundary ? GP_OK : GP_EPARSE);
        struct gp_labels_iter it;
        struct gp_str n, v;
        gp_labels_iter_init(&it, copy, len);
        int rc, count = 0;
        while ((rc = gp_labels_next(&it, &n, &v)) == 1)
            count++;
        CHECK_INT(rc, boundary || len == 0 ? 0 : GP_EPARSE);
        free(copy);
    }
    gp_buf_free(&b);
}

static void test_validate_rejects_damage(void)
{
    static const struct {
        const char *bytes;
        size_t len;
        int want;
    } cases[] = {
        {"\x01" "a" "\x01" "1", 4, GP_OK},
        {"\x01" "a" "\x01" "1" "\x01" "b" "\x01" "2", 8, GP_OK},
        {"\x81\x00" "a" "\x01" "1", 5, GP_EPARSE},                 /* padded varint */
        {"\x01" "a" "\x81\x00" "1", 5, GP_EPARSE},                 /* padded varint */
        {"\x01" "b" "\x01" "1" "\x01" "a" "\x01" "2", 8, GP_EPARSE}, /* unsorted */
        {"\x01" "a" "\x01" "1" "\x01" "a" "\x01" "2", 8, GP_EPARSE}, /* duplicate */
        {"\x01" "a" "\x00", 3, GP_EPARSE},                         /* empty value */
        {"\x00" "\x01" "1", 3, GP_EPARSE},                         /* empty name */
        {"\x05" "a" "\x01" "1", 4, GP_EPARSE},                     /* past the end */
        {"\x01" "a" "\x7f" "1", 4, GP_EPARSE},
        {"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10, GP_EPARSE}, /* 2^64-1 */
        {"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 10, GP_EPARSE}, /* overflow */
        {"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11, GP_EPARSE}, /* 11 bytes */
        {"\x80", 1, GP_EPARSE},
        {"", 0, GP_EPARSE}, /* no labels */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = gp_labels_validate((const uint8_t *)cases[i].bytes, cases[i].len);
        if (rc != cases[i].want)
            gp_test_fail(__FILE__, __LINE__, "case %zu: %d != %d", i, rc, cases[i].want);
    }
    /* get on a damaged blob reads as absent. */
    struct gp_str v;
    CHECK_INT(gp_labels_get((const uint8_t *)"\x05" "a" "\x01" "1", 4, "a", &v), 0);
    CHECK_INT(v.len, 0);
}

static void test_varint_helpers(void)
{
    static const uint64_t vals[] = {0, 1, 127, 128, 255, 300, 16383, 16384, UINT32_MAX,
                                    (uint64_t)1 << 63, UINT64_MAX};
    static const size_t sizes[] = {1, 1, 1, 2, 2, 2, 2, 3, 5, 10, 10};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        uint8_t buf[GP_UVARINT_MAX];
        size_t n = (size_t)(gp_uvarint_put(buf, vals[i]) - buf);
        CHECK_INT(n, sizes[i]);
        CHECK_INT(gp_uvarint_size(vals[i]), n);
        uint64_t v = 0;
        const uint8_t *p = buf;
        CHECK_INT(gp_uvarint_get(&p, buf + n, &v), GP_OK);
        CHECK(p == buf + n);
        CHECK(v == vals[i]);
        for (size_t k = 0; k < n; k++) {
            p = buf;
            CHECK_INT(gp_uvarint_get(&p, buf + k, &v), GP_EPARSE); /* truncated */
        }
    }
    const uint8_t over[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
    const uint8_t eleven[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
    uint64_t v;
    const uint8_t *p = over;
    CHECK_INT(gp_uvarint_get(&p, over + sizeof over, &v), GP_EPARSE);
    p = eleven;
    CHECK_INT(gp_uvarint_get(&p, eleven + sizeof eleven, &v), GP_EPARSE);
    static const int64_t zz[] = {0, -1, 1, -2, 2, INT64_MAX, INT64_MIN, -1234567890123LL};
    static const uint64_t zzenc[] = {0, 1, 2, 3, 4, UINT64_MAX - 1, UINT64_MAX, 2469135780245ULL};
    for (size_t i = 0; i < sizeof zz / sizeof zz[0]; i++) {
        CHECK(gp_zigzag((uint64_t)zz[i]) == zzenc[i]);
        CHECK(gp_u64_to_i64(gp_unzigzag(zzenc[i])) == zz[i]);
    }
}

/* Pinned values: the hash may be stored on disk, so it must never drift. */
static void test_hash_pinned(void)
{
    struct gp_buf b;
    encode(gpu_labels, 5, &b);
    const struct {
        const char *s;
        size_t len;
    } in[] = {{"", 0}, {"a", 1}, {"\0", 1}, {"\0\0", 2}, {"0123456789abcdef", 16},
              {"0123456789abcdefg", 17}, {b.data, b.len}};
    static const uint64_t want[7] = {
        UINT64_C(0xc54d3591ddd74836), UINT64_C(0xdb16c75f17a89253), UINT64_C(0x9c1a8fb9ec5f158d),
        UINT64_C(0x9d1fee7ec6eae93b), UINT64_C(0xe2ec664949fc5c5c), UINT64_C(0xa963ca5f1ba6952d),
        UINT64_C(0x8463fde16218ba72),
    };
    for (int i = 0; i < 7; i++) {
        uint64_t h = gp_labels_hash((const uint8_t *)in[i].s, in[i].len);
        if (h != want[i])
            gp_test_fail(__FILE__, __LINE__, "hash[%d] = 0x%016llx, pinned 0x%016llx", i,
                         (unsigned long long)h, (unsigned long long)want[i]);
    }
    gp_buf_free(&b);
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* 200k blobs that differ in one short value (the hard case for a hash):
 * no two share a 64-bit hash, and the low 10 bits (a table index) are even. */
static void test_hash_distribution(void)
{
    enum { N = 200000, B = 1024 };
    uint64_t *h = malloc(N * sizeof *h);
    unsigned *bucket = calloc(B, sizeof *bucket);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    for (unsigned i = 0; i < N; i++) {
        char host[16], gpu[8];
        snprintf(host, sizeof host, "node-%u", i / 8);
        snprintf(gpu, sizeof gpu, "%u", i % 8);
        struct gp_label l[3] = {{{"Hostname", 8}, {host, strlen(host)}},
                                   {{"__name__", 8}, {"DCGM_FI_DEV_GPU_TEMP", 20}},
                                   {{"gpu", 3}, {gpu, strlen(gpu)}}};
        gp_buf_reset(&b);
        CHECK_INT(gp_labels_encode(l, 3, &b), GP_OK);
        h[i] = gp_labels_hash((const uint8_t *)b.data, b.len);
        bucket[h[i] & (B - 1)]++;
    }
    qsort(h, N, sizeof *h, u64_cmp);
    for (unsigned i = 1; i < N; i++)
        CHECK(h[i] != h[i - 1]);
    double chi = 0, expect = (double)N / B;
    for (unsigned i = 0; i < B; i++)
        chi += (bucket[i] - expect) * (bucket[i] - expect) / expect;
    CHECK(chi < 1200); /* 1023 degrees of freedom: mean 1023, sd ~45 */
    free(h);
    free(bucket);
    gp_buf_free(&b);
}

/* Flipping any one input bit flips about half of the output bits. */
static void test_hash_avalanche(void)
{
    uint64_t seed = 42;
    for (size_t len = 1; len <= 40; len += 3) {
        uint8_t buf[40];
        double total = 0;
        int trials = 0;
        for (int r = 0; r < 20; r++) {
            for (size_t i = 0; i < len; i++)
                buf[i] = (uint8_t)rng_next(&seed);
            uint64_t h0 = gp_labels_hash(buf, len);
            for (size_t bit = 0; bit < len * 8; bit++) {
                buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
                total += __builtin_popcountll(h0 ^ gp_labels_hash(buf, len));
                buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
                trials++;
            }
        }
        double mean = total / trials;
        if (mean < 31 || mean > 33)
            gp_test_fail(__FILE__, __LINE__, "len %zu: mean flipped bits %.2f", len, mean);
    }
}

/* The order every selection sorts by: bytewise, shorter first on a tie,
 * and an empty set (an aggregate's, NULL) without touching the pointer. */
static void test_cmp_order(void)
{
    const uint8_t a[] = {1, 2, 3}, b[] = {1, 2, 4};
    CHECK(gp_labels_cmp(a, 3, b, 3) < 0);
    CHECK(gp_labels_cmp(b, 3, a, 3) > 0);
    CHECK(gp_labels_cmp(a, 2, a, 3) < 0);
    CHECK(gp_labels_cmp(a, 3, a, 2) > 0);
    CHECK_INT(gp_labels_cmp(a, 3, a, 3), 0);
    CHECK_INT(gp_labels_cmp(NULL, 0, NULL, 0), 0);
    CHECK(gp_labels_cmp(NULL, 0, a, 1) < 0);
    CHECK(gp_labels_cmp(a, 1, NULL, 0) > 0);
}

const struct gp_test gp_tests_labels[] = {
    {"encode_round_trip", test_encode_round_trip},
    {"encode_long_and_binary_values", test_encode_long_and_binary_values},
    {"encode_refuses_non_canonical", test_encode_refuses_non_canonical},
    {"validate_every_truncation", test_validate_every_truncation},
    {"validate_rejects_damage", test_validate_rejects_damage},
    {"varint_helpers", test_varint_helpers},
    {"hash_pinned", test_hash_pinned},
    {"hash_distribution", test_hash_distribution},
    {"hash_avalanche", test_hash_avalanche},
    {"cmp_order", test_cmp_order},
    {0},
};
