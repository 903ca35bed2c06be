/*
 * test_series.c - the series index: add/find/labels with id gaps and
 * refusals (duplicates, ids not increasing, bad blobs, wrong hashes),
 * growth to 100k series, Prometheus's absent-label semantics, regex
 * anchoring through select, label names/values (sorted, distinct, per id
 * set), and a property test: select on 5,000 random series with random
 * matchers agrees with a brute-force evaluation, every path included.
 */
#include "lib/err.h"
#include "store/labels.h"
#include "store/series.h"
#include "test.h"

#include <stdint.h>
#include <stdlib.h>

/* Builds a blob from "name=value" pairs (any order); caller frees *blob. */
static size_t blob_of(uint8_t **blob, size_t n, const char *const *kv)
{
    struct gp_label l[16];
    CHECK(n <= 16);
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(kv[i], '=');
        l[i].name = (struct gp_str){kv[i], (size_t)(eq - kv[i])};
        l[i].value = (struct gp_str){eq + 1, strlen(eq + 1)};
    }
    for (size_t i = 1; i < n; i++) /* insertion sort by name */
        for (size_t j = i; j > 0; j--) {
            const struct gp_str *a = &l[j - 1].name, *b = &l[j].name;
            int c = memcmp(a->ptr, b->ptr, a->len < b->len ? a->len : b->len);
            if (c < 0 || (c == 0 && a->len <= b->len))
                break;
            struct gp_label t = l[j];
            l[j] = l[j - 1];
            l[j - 1] = t;
        }
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_labels_encode(l, n, &b), GP_OK);
    size_t len;
    *blob = (uint8_t *)gp_buf_steal(&b, &len);
    return len;
}

#define ADD(x, id, ...)                                                                        \
    add_series(x, id, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *),       \
               (const char *const[]){__VA_ARGS__})

static uint32_t add_series(struct gp_sindex *x, uint32_t id, size_t n, const char *const *kv)
{
    uint8_t *b;
    size_t len = blob_of(&b, n, kv);
    uint32_t got = 0;
    int rc = gp_sindex_add(x, b, len, gp_labels_hash(b, len), id, &got);
    if (rc != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "add %s: %d", kv[0], rc);
    free(b);
    return got;
}

static uint32_t find(const struct gp_sindex *x, size_t n, const char *const *kv)
{
    uint8_t *b;
    size_t len = blob_of(&b, n, kv);
    uint32_t id = gp_sindex_find(x, b, len, gp_labels_hash(b, len));
    free(b);
    return id;
}

static void test_add_find_labels(void)
{
    struct gp_sindex *x;
    CHECK_INT(gp_sindex_new(&x), GP_OK);
    CHECK_INT(gp_sindex_count(x), 0);
    CHECK_INT(gp_sindex_max_id(x), 0);
    const char *a[] = {"__name__=up", "job=gpu", "instance=n1"};
    const char *b[] = {"__name__=up", "job=gpu", "instance=n2"};
    CHECK_INT(find(x, 3, a), 0);
    CHECK_INT(add_series(x, 0, 3, a), 1);
    CHECK_INT(add_series(x, 0, 3, b), 2);
    CHECK_INT(find(x, 3, a), 1);
    CHECK_INT(find(x, 3, b), 2);
    const char *c[] = {"__name__=up", "job=gpu"};
    CHECK_INT(find(x, 2, c), 0);
    CHECK_INT(gp_sindex_count(x), 2);
    CHECK_INT(gp_sindex_max_id(x), 2);
    CHECK(gp_sindex_bytes(x) > 0);

    size_t len;
    const uint8_t *l = gp_sindex_labels(x, 2, &len);
    CHECK(l != NULL);
    struct gp_str v;
    CHECK_INT(gp_labels_get(l, len, "instance", &v), 1);
    CHECK_INT(v.len, 2);
    CHECK(memcmp(v.ptr, "n2", 2) == 0);
    CHECK(gp_sindex_labels(x, 0, &len) == NULL);
    CHECK_INT(len, 0);
    CHECK(gp_sindex_labels(x, 3, &len) == NULL);
    gp_sindex_free(x);
    gp_sindex_free(NULL);
}

static void test_id_gaps_and_refusals(void)
{
    struct gp_sindex *x;
    CHECK_INT(gp_sindex_new(&x), GP_OK);
    CHECK_INT(ADD(x, 5, "a=1"), 5);
    CHECK_INT(ADD(x, 9, "a=2"), 9);
    CHECK_INT(ADD(x, 0, "a=3"), 10);
    CHECK_INT(ADD(x, 4000000000u, "a=4"), 4000000000u);
    CHECK_INT(gp_sindex_max_id(x), 4000000000u);
    CHECK_INT(gp_sindex_count(x), 4);
    size_t len;
    CHECK(gp_sindex_labels(x, 6, &len) == NULL);
    CHECK(gp_sindex_labels(x, 4, &len) == NULL);
    CHECK(gp_sindex_labels(x, 11, &len) == NULL);
    CHECK(gp_sindex_labels(x, 4000000000u, &len) != NULL);
    CHECK(gp_sindex_labels(x, 9, &len) != NULL);

    uint8_t *b;
    const char *kv[] = {"a=5"};
    size_t n = blob_of(&b, 1, kv);
    uint64_t h = gp_labels_hash(b, n);
    uint32_t id = 77;
    CHECK_INT(gp_sindex_add(x, b, n, h, 4000000000u, &id), GP_EUSAGE); /* not increasing */
    CHECK_INT(id, 0);
    CHECK_INT(gp_sindex_add(x, b, n, h, 12, &id), GP_EUSAGE);
    CHECK_INT(gp_sindex_add(x, b, n, h ^ 1, 0, &id), GP_EUSAGE); /* wrong hash */
    CHECK_INT(gp_sindex_add(x, b, n - 1, gp_labels_hash(b, n - 1), 0, &id), GP_EPARSE);
    CHECK_INT(gp_sindex_add(x, b, 0, gp_labels_hash(b, 0), 0, &id), GP_EPARSE);
    CHECK_INT(gp_sindex_add(x, b, n, h, UINT32_MAX, &id), GP_OK);
    CHECK_INT(id, UINT32_MAX);
    free(b);
    const char *kv2[] = {"a=6"};
    n = blob_of(&b, 1, kv2);
    CHECK_INT(gp_sindex_add(x, b, n, gp_labels_hash(b, n), 0, &id), GP_EUSAGE); /* ids used up */
    free(b);
    /* A duplicate is refused, by whatever id. */
    const char *kv3[] = {"a=1"};
    n = blob_of(&b, 1, kv3);
    CHECK_INT(gp_sindex_add(x, b, n, gp_labels_hash(b, n), 0, NULL), GP_EUSAGE);
    free(b);
    CHECK_INT(gp_sindex_count(x), 5);

    /* Refusals left nothing behind. */
    uint32_t *ids;
    struct gp_matcher m;
    char err[128];
    CHECK_INT(gp_matcher_init(&m, GP_MATCH_RE, "a", ".+", err, sizeof err), GP_OK);
    CHECK_INT(gp_sindex_select(x, &m, 1, &ids, &n), GP_OK);
    CHECK_INT(n, 5);
    CHECK_INT(ids[0], 5);
    CHECK_INT(ids[4], UINT32_MAX);
    free(ids);
    gp_matcher_free(&m);
    gp_sindex_free(x);
}

static const char *sel(const struct gp_sindex *x, const char *s);
struct collect {
    char text[1024];
};
static void collect_fn(void *arg, const char *s, size_t len);

/* More labels than add's on-stack scratch holds. */
static void test_many_labels(void)
{
    struct gp_sindex *x;
    CHECK_INT(gp_sindex_new(&x), GP_OK);
    struct gp_label l[150];
    char names[150][16];
    for (int i = 0; i < 150; i++) {
        snprintf(names[i], sizeof names[i], "l%03u", (unsigned)i);
        l[i] = (struct gp_label){{names[i], 4}, {names[i] + 1, 3}};
    }
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_labels_encode(l, 150, &b), GP_OK);
    const uint8_t *p = (const uint8_t *)b.data;
    uint32_t id;
    CHECK_INT(gp_sindex_add(x, p, b.len, gp_labels_hash(p, b.len), 0, &id), GP_OK);
    CHECK_INT(gp_sindex_find(x, p, b.len, gp_labels_hash(p, b.len)), 1);
    gp_buf_free(&b);
    CHECK_INT(ADD(x, 0, "l149=149", "zz=1"), 2);
    CHECK_STR(sel(x, "{l149=\"149\"}"), "1,2");
    CHECK_STR(sel(x, "{l149=\"149\", l000=\"\"}"), "2");
    CHECK_STR(sel(x, "{l100=~\"1.0\"}"), "1");
    struct collect c = {""};
    CHECK_INT(gp_sindex_label_values(x, "l149", NULL, 0, collect_fn, &c), GP_OK);
    CHECK_STR(c.text, "149");
    gp_sindex_free(x);
}

static void test_growth_100k(void)
{
    struct gp_sindex *x;
    CHECK_INT(gp_sindex_new(&x), GP_OK);
    enum { N = 100000 };
    char host[32], gpu[8], uuid[48];
    for (unsigned i = 0; i < N; i++) {
        snprintf(host, sizeof host, "Hostname=node-%u", i / 8);
        snprintf(gpu, sizeof gpu, "gpu=%u", i % 8);
        snprintf(uuid, sizeof uuid, "UUID=GPU-%08x", i * 2654435761u);
        CHECK_INT(ADD(x, 0, "__name__=DCGM_FI_DEV_GPU_TEMP", host, gpu, uuid), i + 1);
    }
    for (unsigned i = 0; i < N; i += 7) {
        snprintf(host, sizeof host, "Hostname=node-%u", i / 8);
        snprintf(gpu, sizeof gpu, "gpu=%u", i % 8);
        snprintf(uuid, sizeof uuid, "UUID=GPU-%08x", i * 2654435761u);
        const char *kv[] = {"__name__=DCGM_FI_DEV_GPU_TEMP", host, gpu, uuid};
        CHECK_INT(find(x, 4, kv), i + 1);
        kv[0] = "__name__=DCGM_FI_DEV_GPU_UTIL";
        CHECK_INT(find(x, 4, kv), 0);
    }
    CHECK_INT(gp_sindex_count(x), N);
    size_t bytes = gp_sindex_bytes(x);
    CHECK(bytes > 100u * N && bytes < 400u * N);

    struct gp_matcher m[2];
    char err[128];
    uint32_t *ids;
    size_t n;
    CHECK_INT(gp_matcher_init(&m[0], GP_MATCH_EQ, "Hostname", "node-77", err, sizeof err), GP_OK);
    CHECK_INT(gp_matcher_init(&m[1], GP_MATCH_RE, "gpu", "[0-3]", err, sizeof err), GP_OK);
    CHECK_INT(gp_sindex_select(x, m, 2, &ids, &n), GP_OK);
    CHECK_INT(n, 4);
    CHECK_INT(ids[0], 77 * 8 + 1);
    CHECK_INT(ids[3], 77 * 8 + 4);
    free(ids);
    gp_matcher_free(&m[0]);
    CHECK_INT(gp_matcher_init(&m[0], GP_MATCH_NE, "gpu", "0", err, sizeof err), GP_OK);
    CHECK_INT(gp_sindex_select(x, m, 2, &ids, &n), GP_OK);
    CHECK_INT(n, N / 8 * 3);
    free(ids);
    gp_matcher_free(&m[0]);
    gp_matcher_free(&m[1]);
    gp_sindex_free(x);
}

/* Selects with one selector string; returns the ids as "1,2,3". */
static const char *sel(const struct gp_sindex *x, const char *s)
{
    static char out[512];
    struct gp_matcher *m;
    size_t nm, n;
    char err[256];
    if (gp_selector_parse(s, strlen(s), &m, &nm, err, sizeof err) != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "%s: %s", s, err);
    uint32_t *ids;
    CHECK_INT(gp_sindex_select(x, m, nm, &ids, &n), GP_OK);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++)
        snprintf(out + strlen(out), sizeof out - strlen(out), "%s%u", i ? "," : "", ids[i]);
    free(ids);
    gp_matchers_free(m, nm);
    return out;
}

static struct gp_sindex *small_index(void)
{
    struct gp_sindex *x;
    CHECK_INT(gp_sindex_new(&x), GP_OK);
    ADD(x, 1, "__name__=temp", "gpu=1", "host=a");
    ADD(x, 2, "__name__=temp", "gpu=10", "host=a");
    ADD(x, 3, "__name__=temp", "gpu=11", "host=b", "mig=1g");
    ADD(x, 5, "__name__=util", "gpu=1", "host=b");
    ADD(x, 8, "__name__=util", "host=c");
    ADD(x, 9, "__name__=mem.used", "gpu=2", "ip=10.0.0.1");
    return x;
}

static void test_absent_label_semantics(void)
{
    struct gp_sindex *x = small_index();
    CHECK_STR(sel(x, "temp{mig=\"\"}"), "1,2");
    CHECK_STR(sel(x, "{host=~\".+\", mig=\"\"}"), "1,2,5,8");
    CHECK_STR(sel(x, "{mig!=\"\"}"), "3");
    CHECK_STR(sel(x, "{__name__=~\"temp|util\", gpu=\"\"}"), "8");
    CHECK_STR(sel(x, "{__name__=~\".+\", gpu!~\".+\"}"), "8");
    CHECK_STR(sel(x, "{__name__=~\".+\", nosuch=\"\"}"), "1,2,3,5,8,9");
    CHECK_STR(sel(x, "{__name__=~\".+\", nosuch!=\"x\"}"), "1,2,3,5,8,9");
    CHECK_STR(sel(x, "{__name__=~\".+\", nosuch=~\"|x\"}"), "1,2,3,5,8,9");
    CHECK_STR(sel(x, "{nosuch=\"x\"}"), "");
    CHECK_STR(sel(x, "{nosuch=~\"x|y\"}"), "");
    CHECK_STR(sel(x, "{__name__=~\".+\", host!=\"a\"}"), "3,5,8,9");
    CHECK_STR(sel(x, "{__name__=~\".+\", host!~\"a|b\"}"), "8,9");
    CHECK_STR(sel(x, "{__name__=~\".+\", gpu=~\"1|\"}"), "1,5,8");
    CHECK_STR(sel(x, "{__name__=~\".+\", gpu!~\"1.*\"}"), "8,9");
    CHECK_STR(sel(x, "{__name__=\"util\", gpu=~\".*\"}"), "5,8");
    CHECK_STR(sel(x, "{__name__=\"util\", gpu!~\".*\"}"), "");
    CHECK_STR(sel(x, "{host=\"a\", __name__!=\"temp\"}"), "");
    CHECK_STR(sel(x, "{host=\"b\", host=\"a\"}"), "");

    /* The index itself accepts matchers that all match "" (every series). */
    struct gp_matcher m;
    char err[128];
    uint32_t *ids;
    size_t n;
    CHECK_INT(gp_matcher_init(&m, GP_MATCH_EQ, "mig", "", err, sizeof err), GP_OK);
    CHECK_INT(gp_sindex_select(x, &m, 1, &ids, &n), GP_OK);
    CHECK_INT(n, 5);
    free(ids);
    gp_matcher_free(&m);
    CHECK_INT(gp_sindex_select(x, NULL, 0, &ids, &n), GP_OK); /* no matchers: all */
    CHECK_INT(n, 6);
    CHECK_INT(ids[5], 9);
    free(ids);
    gp_sindex_free(x);
}

static void test_regex_anchoring_in_select(void)
{
    struct gp_sindex *x = small_index();
    CHECK_STR(sel(x, "{gpu=~\"1\"}"), "1,5");
    CHECK_STR(sel(x, "{gpu=~\"1|10\"}"), "1,2,5");
    CHECK_STR(sel(x, "{gpu=~\"1.\"}"), "2,3");
    CHECK_STR(sel(x, "{gpu=~\"1+\"}"), "1,3,5");
    CHECK_STR(sel(x, "{gpu=~\"1|1|1\"}"), "1,5");
    CHECK_STR(sel(x, "{ip=~`10\\.0\\.0\\.1`}"), "9");
    CHECK_STR(sel(x, "{ip=~`10\\.0\\.0`}"), "");
    CHECK_STR(sel(x, "{ip=~`10.0.0.1`}"), "9");
    CHECK_STR(sel(x, "{__name__=~`mem\\.used|temp`}"), "1,2,3,9");
    CHECK_STR(sel(x, "{gpu=~\"[0-9]\", gpu!~\"2\"}"), "1,5");
    /* Prefix, suffix and substring forms (no regexec) keep regex meaning. */
    CHECK_STR(sel(x, "{gpu=~\"1.*\"}"), "1,2,3,5");
    CHECK_STR(sel(x, "{gpu=~\".*1\"}"), "1,3,5");
    CHECK_STR(sel(x, "{ip=~`.*0\\.0.*`}"), "9");
    CHECK_STR(sel(x, "{ip=~`.*0.0.*`}"), "9");
    CHECK_STR(sel(x, "{__name__=~\".+\", gpu!~\"1.*\"}"), "8,9");
    CHECK_STR(sel(x, "{__name__=~\".+\", host!~\".*\"}"), "");
    CHECK_STR(sel(x, "{gpu=~`1\\.*`}"), "1,5"); /* "1" then any number of dots */
    /* RE2's "." stops at a newline, in the fast forms too; (?s) passes it. */
    ADD(x, 10, "__name__=temp", "host=a\nb");
    CHECK_STR(sel(x, "{host=~\"a.*\"}"), "1,2");
    CHECK_STR(sel(x, "{host=~\".*b\"}"), "3,5");
    CHECK_STR(sel(x, "{host=~\"(?s)a.*\"}"), "1,2,10");
    CHECK_STR(sel(x, "{host=~\"a\\\\nb\"}"), "10");
    gp_sindex_free(x);
}

static void collect_fn(void *arg, const char *s, size_t len)
{
    struct collect *c = arg;
    size_t at = strlen(c->text);
    snprintf(c->text + at, sizeof c->text - at, "%s%.*s", at ? "," : "", (int)len, s);
}

static void test_label_names_and_values(void)
{
    struct gp_sindex *x = small_index();
    struct collect c = {""};
    CHECK_INT(gp_sindex_label_names(x, NULL, 0, collect_fn, &c), GP_OK);
    CHECK_STR(c.text, "__name__,gpu,host,ip,mig");
    c.text[0] = '\0';
    uint32_t ids[] = {8, 5, 1, 404};
    CHECK_INT(gp_sindex_label_names(x, ids, 4, collect_fn, &c), GP_OK);
    CHECK_STR(c.text, "__name__,gpu,host");
    c.text[0] = '\0';
    CHECK_INT(gp_sindex_label_names(x, ids, 0, collect_fn, &c), GP_OK);
    CHECK_STR(c.text, "");

    c.text[0] = '\0';
    CHECK_INT(gp_sindex_label_values(x, "gpu", NULL, 0, collect_fn, &c), GP_OK);
    CHECK_STR(c.text, "1,10,11,2");
    c.text[0] = '\0';
    CHECK_INT(gp_sindex_label_values(x, "__name__", NULL, 0, collect_fn, &c), GP_OK);
    CHECK_STR(c.text, "mem.used,temp,util");
    c.text[0] = '\0';
    CHECK_INT(gp_sindex_label_values(x, "gpu", ids, 4, collect_fn, &c), GP_OK);
    CHECK_STR(c.text, "1"); /* 1 and 5 share it, 8 lacks gpu */
    c.text[0] = '\0';
    CHECK_INT(gp_sindex_label_values(x, "host", ids, 4, collect_fn, &c), GP_OK);
    CHECK_STR(c.text, "a,b,c");
    c.text[0] = '\0';
    CHECK_INT(gp_sindex_label_values(x, "nosuch", NULL, 0, collect_fn, &c), GP_OK);
    CHECK_INT(gp_sindex_label_values(x, "mig", ids, 4, collect_fn, &c), GP_OK);
    CHECK_STR(c.text, "");
    gp_sindex_free(x);
}

/* ---- property test -------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

static unsigned rnd(uint64_t *s, unsigned n) { return (unsigned)(rng_next(s) % n); }

static const char *const pnames[] = {"__name__", "gpu", "host", "job", "mig", "pod", "zz"};
enum { NP = 6 }; /* "zz" is never on a series */

static void rand_value(uint64_t *s, unsigned name, char *out, size_t cap)
{
    static const char *const metrics[] = {"temp", "util", "mem_used", "power", "xid"};
    switch (name) {
    case 0:
        snprintf(out, cap, "%s", metrics[rnd(s, 5)]);
        break;
    case 1:
        snprintf(out, cap, "%u", rnd(s, 12)); /* 1, 10, 11: anchoring */
        break;
    case 2:
        snprintf(out, cap, "n%u", rnd(s, 40));
        break;
    case 3:
        snprintf(out, cap, "%s", rnd(s, 2) ? "dcgm" : "node");
        break;
    case 4:
        snprintf(out, cap, "%ug", 1 + rnd(s, 3));
        break;
    default:
        snprintf(out, cap, "pod-%u", rnd(s, 3000)); /* many values, mostly one series each */
        break;
    }
}

static void rand_matcher(uint64_t *s, struct gp_matcher *m)
{
    static const char *const res[] = {
        ".*", ".+", "", "1", "1|10", "1.", "n1.*", "n[0-9]", "temp|util", "t.*|x.*", "1|",
        "pod-1.*", "pod-(1|2)", "[0-9]+", "dcgm", "1g|2g", "n3|n30|n31", "pod-7|pod-77|pod-777",
        ".*1", ".*od-1.*", ".*0.*", "n\\.*", "pod-.*", ".*g", ".*.*", "\\.*", "te.*|.*il",
    };
    unsigned name = rnd(s, NP + 1);
    enum gp_match_op op = (enum gp_match_op)rnd(s, 4);
    char v[32];
    if (op == GP_MATCH_RE || op == GP_MATCH_NRE)
        snprintf(v, sizeof v, "%s", res[rnd(s, sizeof res / sizeof res[0])]);
    else if (rnd(s, 6) == 0)
        v[0] = '\0';
    else
        rand_value(s, name < NP ? name : rnd(s, NP), v, sizeof v);
    char err[128];
    if (gp_matcher_init(m, op, pnames[name], v, err, sizeof err) != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "%s", err);
}

static int brute_match(const uint8_t *blob, size_t len, const struct gp_matcher *m, size_t nm)
{
    for (size_t i = 0; i < nm; i++) {
        struct gp_str v;
        gp_labels_get(blob, len, m[i].name, &v);
        if (!gp_matcher_matches(&m[i], v.ptr, v.len))
            return 0;
    }
    return 1;
}

static void brute_names(const struct gp_sindex *x, const uint32_t *ids, size_t n,
                        struct collect *c)
{
    /* pnames is sorted by byte order except "zz", which is never present. */
    c->text[0] = '\0';
    for (size_t k = 0; k < NP; k++) {
        int any = 0;
        for (size_t i = 0; i < n && !any; i++) {
            size_t len;
            const uint8_t *b = gp_sindex_labels(x, ids[i], &len);
            struct gp_str v;
            any = gp_labels_get(b, len, pnames[k], &v);
        }
        if (any)
            collect_fn(c, pnames[k], strlen(pnames[k]));
    }
}

static int cand_cmp(const void *a, const void *b) { return strcmp(a, b); }

static void test_select_matches_brute_force(void)
{
    enum { N = 5000, Q = 2000 };
    uint64_t seed = 0x5eed5eed;
    struct gp_sindex *x;
    CHECK_INT(gp_sindex_new(&x), GP_OK);
    uint32_t *all = malloc(N * sizeof *all);
    uint32_t id = 0;
    size_t count = 0;
    for (int i = 0; i < N; i++) {
        const char *kv[NP];
        char buf[NP][48];
        size_t n = 0;
        for (unsigned k = 0; k < NP; k++) {
            if (k != 0 && rnd(&seed, 3) == 0)
                continue; /* labels come and go: absent-label cases */
            char v[32];
            rand_value(&seed, k, v, sizeof v);
            snprintf(buf[n], sizeof buf[n], "%s=%s", pnames[k], v);
            kv[n] = buf[n];
            n++;
        }
        if (find(x, n, kv))
            continue; /* random duplicate */
        id += 1 + (rnd(&seed, 4) == 0 ? rnd(&seed, 1000) : 0); /* gaps */
        CHECK_INT(add_series(x, id, n, kv), id);
        all[count++] = id;
    }
    CHECK(count > N * 9 / 10);
    uint32_t *want = malloc(count * sizeof *want);
    for (int q = 0; q < Q; q++) {
        struct gp_matcher m[4];
        size_t nm = 1 + rnd(&seed, 4);
        for (size_t i = 0; i < nm; i++)
            rand_matcher(&seed, &m[i]);
        size_t nw = 0;
        for (size_t i = 0; i < count; i++) {
            size_t len;
            const uint8_t *b = gp_sindex_labels(x, all[i], &len);
            if (brute_match(b, len, m, nm))
                want[nw++] = all[i];
        }
        uint32_t *got;
        size_t ng;
        CHECK_INT(gp_sindex_select(x, m, nm, &got, &ng), GP_OK);
        int same = ng == nw && (nw == 0 || memcmp(got, want, nw * sizeof *got) == 0);
        if (!same) {
            char desc[512] = "";
            for (size_t i = 0; i < nm; i++)
                snprintf(desc + strlen(desc), sizeof desc - strlen(desc), "%s%s%s\"%s\" ",
                         m[i].name, (const char *[]){"=", "!=", "=~", "!~"}[m[i].op], "",
                         m[i].value);
            gp_test_fail(__FILE__, __LINE__, "query %d {%s}: %zu ids, brute force %zu", q, desc,
                         ng, nw);
        }
        /* Label names and values restricted to the selection. */
        if (q % 10 == 0) {
            struct collect a = {""}, b;
            CHECK_INT(gp_sindex_label_names(x, got, ng, collect_fn, &a), GP_OK);
            brute_names(x, got, ng, &b);
            CHECK_STR(a.text, b.text);
            unsigned k = rnd(&seed, NP - 1) + 1; /* not pod: too many values for the buffer */
            if (k == 5)
                k = 2;
            struct collect v = {""};
            CHECK_INT(gp_sindex_label_values(x, pnames[k], got, ng, collect_fn, &v), GP_OK);
            /* Brute force: each candidate value, in byte order, if any series has it. */
            struct collect w = {""};
            char cand[64][16];
            size_t nc = 0;
            for (unsigned t = 0; t < 64; t++) {
                char val[16];
                if (k == 1)
                    snprintf(val, sizeof val, "%u", t);
                else if (k == 2)
                    snprintf(val, sizeof val, "n%u", t);
                else if (k == 3)
                    snprintf(val, sizeof val, "%s", t == 0 ? "dcgm" : t == 1 ? "node" : "");
                else
                    snprintf(val, sizeof val, "%ug", t);
                if (!val[0])
                    continue;
                snprintf(cand[nc++], sizeof cand[0], "%s", val);
            }
            qsort(cand, nc, sizeof cand[0], cand_cmp);
            for (size_t t = 0; t < nc; t++) {
                int any = 0;
                for (size_t i = 0; i < ng && !any; i++) {
                    size_t len;
                    const uint8_t *bl = gp_sindex_labels(x, got[i], &len);
                    struct gp_str val;
                    any = gp_labels_get(bl, len, pnames[k], &val) == 1 &&
                          val.len == strlen(cand[t]) && memcmp(val.ptr, cand[t], val.len) == 0;
                }
                if (any)
                    collect_fn(&w, cand[t], strlen(cand[t]));
            }
            CHECK_STR(v.text, w.text);
        }
        free(got);
        for (size_t i = 0; i < nm; i++)
            gp_matcher_free(&m[i]);
    }
    free(want);
    free(all);
    gp_sindex_free(x);
}

const struct gp_test gp_tests_series[] = {
    {"add_find_labels", test_add_find_labels},
    {"id_gaps_and_refusals", test_id_gaps_and_refusals},
    {"many_labels", test_many_labels},
    {"growth_100k", test_growth_100k},
    {"absent_label_semantics", test_absent_label_semantics},
    {"regex_anchoring_in_select", test_regex_anchoring_in_select},
    {"label_names_and_values", test_label_names_and_values},
    {"select_matches_brute_force", test_select_matches_brute_force},
    {0},
};
