/*
 * test_textparse.c - the Prometheus text parser: the forms the format
 * allows (blanks, escapes, special values, timestamps, comments), the
 * result's shape (sorted labels, __name__, one sample each), the agent's
 * own exposition round-tripping through parse + remote-write encode, and
 * every rejection with its line number: garbled, truncated, huge, empty.
 */
#include "agent/expo.h"
#include "ingest/remote_write.h"
#include "ingest/textparse.h"
#include "lib/bits.h"
#include "lib/err.h"
#include "sources/source.h"
#include "test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

static int sv_eq(struct gp_str a, const char *b)
{
    return a.len == strlen(b) && memcmp(a.ptr, b, a.len) == 0;
}

/* The value of label `name` in series s, or NULL (static buffer). */
static const char *lab(const struct gp_series *s, const char *name)
{
    static char out[512];
    for (size_t i = 0; i < s->nlabels; i++)
        if (sv_eq(s->labels[i].name, name)) {
            snprintf(out, sizeof out, "%.*s", (int)s->labels[i].value.len, s->labels[i].value.ptr);
            return out;
        }
    return NULL;
}

static int parse(struct gp_text_parser *p, const char *text, char *err, size_t errlen)
{
    return gp_text_parse(p, text, strlen(text), 1000, err, errlen);
}

static void test_basic_document(void)
{
    const char *doc = "# HELP up Whether the target is up.\n"
                      "# TYPE up gauge\n"
                      "up 1\n"
                      "# a plain comment\n"
                      "\n"
                      "  \t\n"
                      "# TYPE http_requests_total counter\n"
                      "http_requests_total{method=\"post\",code=\"200\"} 1027 1395066363000\n"
                      "http_requests_total{ code = \"400\" , method=\"post\", } 3\n"
                      "   metric_without_timestamp_and_labels 12.47\n"
                      "empty_braces{} -0\n"
                      "tabs\t{a=\"b\"}\t+Inf\t-5\n";
    struct gp_text_parser p = {0};
    char err[256] = "";
    CHECK_INT(parse(&p, doc, err, sizeof err), GP_OK);
    CHECK_INT(p.req.nseries, 6);
    CHECK_INT(p.req.nsamples_total, 6);
    const struct gp_series *s = p.req.series;
    CHECK_INT(s[0].nlabels, 1);
    CHECK(sv_eq(s[0].labels[0].name, "__name__") && sv_eq(s[0].labels[0].value, "up"));
    CHECK_DBL(s[0].samples[0].value, 1, 0);
    CHECK_INT(s[0].samples[0].timestamp_ms, 1000);
    /* Sorted by name: __name__, code, method. */
    CHECK_INT(s[1].nlabels, 3);
    CHECK(sv_eq(s[1].labels[0].name, "__name__"));
    CHECK(sv_eq(s[1].labels[1].name, "code") && sv_eq(s[1].labels[1].value, "200"));
    CHECK(sv_eq(s[1].labels[2].name, "method"));
    CHECK_INT(s[1].samples[0].timestamp_ms, 1395066363000LL);
    CHECK_STR(lab(&s[2], "code"), "400");
    CHECK_INT(s[2].samples[0].timestamp_ms, 1000);
    CHECK_DBL(s[3].samples[0].value, 12.47, 0);
    CHECK(s[4].samples[0].value == 0 && signbit(s[4].samples[0].value));
    CHECK(isinf(s[5].samples[0].value) && s[5].samples[0].value > 0);
    CHECK_INT(s[5].samples[0].timestamp_ms, -5);
    CHECK_STR(lab(&s[5], "__name__"), "tabs");
    gp_text_parser_free(&p);
    gp_text_parser_free(&p); /* idempotent */
    gp_text_parser_free(NULL);
}

static void test_uppercase_labels_sort_before_name(void)
{
    struct gp_text_parser p = {0};
    char err[256];
    CHECK_INT(parse(&p, "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-1\",Hostname=\"n\",modelName=\"H\"} 41\n",
                    err, sizeof err),
              GP_OK);
    const struct gp_series *s = &p.req.series[0];
    const char *want[] = {"Hostname", "UUID", "__name__", "gpu", "modelName"};
    CHECK_INT(s->nlabels, 5);
    for (size_t i = 0; i < 5; i++)
        CHECK(sv_eq(s->labels[i].name, want[i]));
    gp_text_parser_free(&p);
}

static void test_escapes(void)
{
    struct gp_text_parser p = {0};
    char err[256];
    CHECK_INT(parse(&p,
                    "# HELP m A \\\\ backslash and\\nnewline.\n"
                    "m{path=\"C:\\\\dir\\\\f\",q=\"say \\\"hi\\\"\",nl=\"a\\nb\",plain=\"x\"} 1\n"
                    "m{path=\"\\\\\"} 2\n",
                    err, sizeof err),
              GP_OK);
    CHECK_INT(p.req.nseries, 2);
    CHECK_STR(lab(&p.req.series[0], "path"), "C:\\dir\\f");
    CHECK_STR(lab(&p.req.series[0], "q"), "say \"hi\"");
    CHECK_STR(lab(&p.req.series[0], "nl"), "a\nb");
    CHECK_STR(lab(&p.req.series[0], "plain"), "x");
    CHECK_STR(lab(&p.req.series[1], "path"), "\\");
    /* UTF-8 in values is fine; empty values are kept (the encoder drops them). */
    CHECK_INT(parse(&p, "m{comm=\"python3 – trainer ✓\",empty=\"\"} 3\n", err, sizeof err), GP_OK);
    CHECK_STR(lab(&p.req.series[0], "comm"), "python3 – trainer ✓");
    CHECK_STR(lab(&p.req.series[0], "empty"), "");
    gp_text_parser_free(&p);
}

static double value_of(const char *v)
{
    char doc[512];
    snprintf(doc, sizeof doc, "m %s\n", v);
    struct gp_text_parser p = {0};
    char err[256] = "";
    int rc = parse(&p, doc, err, sizeof err);
    if (rc)
        gp_test_fail(__FILE__, __LINE__, "value '%s' rejected: %s", v, err);
    double out = p.req.series[0].samples[0].value;
    gp_text_parser_free(&p);
    return out;
}

static void test_values(void)
{
    CHECK_DBL(value_of("0"), 0, 0);
    CHECK_DBL(value_of("-17"), -17, 0);
    CHECK_DBL(value_of("+17"), 17, 0);
    CHECK_DBL(value_of("007"), 7, 0);
    CHECK_DBL(value_of("123456789012345678901234567890"), 1.2345678901234568e29, 1e14);
    CHECK_DBL(value_of("1.5e3"), 1500, 0);
    CHECK_DBL(value_of("1E-3"), 0.001, 0);
    CHECK_DBL(value_of(".5"), 0.5, 0);
    CHECK_DBL(value_of("5."), 5, 0);
    CHECK_DBL(value_of("0x1p-2"), 0.25, 0);
    CHECK_DBL(value_of("0x1.8P1"), 3, 0);
    CHECK_DBL(value_of("1e-400"), 0, 0); /* underflow is not an error in Go */
    CHECK_DBL(value_of("0.1"), 0.1, 0);
    CHECK_DBL(value_of("1.7976931348623157e308"), 1.7976931348623157e308, 0);
    CHECK(isinf(value_of("+Inf")) && value_of("+Inf") > 0);
    CHECK(isinf(value_of("-Inf")) && value_of("-Inf") < 0);
    CHECK(isinf(value_of("Inf")) && isinf(value_of("infinity")) && isinf(value_of("-INFINITY")));
    double n = value_of("NaN");
    CHECK(isnan(n));
    CHECK(gp_f64_bits(n) == GP_TEXT_NORMAL_NAN_BITS);
    CHECK(isnan(value_of("nan")));
    /* gp_buf_put_double's shortest form reads back bit-exactly. */
    const double vals[] = {0.1, 1.0 / 3, 123456.789e-300, 4.9e-324, -2.5e-10, 9007199254740993.0};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        struct gp_buf b;
        gp_buf_init(&b, 0);
        gp_buf_put_double(&b, vals[i]);
        CHECK(gp_f64_bits(value_of(b.data)) == gp_f64_bits(vals[i]));
        gp_buf_free(&b);
    }
}

/* The decimal fast path agrees with strtod bit for bit (random short
 * decimals, exponents around the path's edges, shortest round-trip forms). */
static void test_values_match_strtod(void)
{
    struct gp_text_parser p = {0};
    struct gp_buf doc;
    gp_buf_init(&doc, 0);
    char vals[2000][48];
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < 2000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int kind = i % 4;
        if (kind == 0) /* d.ddd..e±xx */
            snprintf(vals[i], sizeof vals[i], "%s%llu.%llue%d", x & 1 ? "-" : "",
                     (unsigned long long)(x >> 8) % 100000, (unsigned long long)(x >> 20) % 1000000000,
                     (int)((x >> 50) % 60) - 30);
        else if (kind == 1) /* 0.000ddd */
            snprintf(vals[i], sizeof vals[i], "0.%0*llu", (int)((x >> 3) % 18) + 1,
                     (unsigned long long)(x >> 9) % 1000000000000ULL);
        else if (kind == 2) { /* shortest form of a random double */
            double d;
            uint64_t bits = x & ~(UINT64_C(0x7ff) << 52);
            bits |= (uint64_t)((x >> 40) % 2046 + 1) << 52;
            memcpy(&d, &bits, sizeof d);
            struct gp_buf b;
            gp_buf_init(&b, 0);
            gp_buf_put_double(&b, d);
            snprintf(vals[i], sizeof vals[i], "%s", b.data);
            gp_buf_free(&b);
        } else /* 15 and 16 significant digits */
            snprintf(vals[i], sizeof vals[i], "%llu.%llue%d", (unsigned long long)(x % 10),
                     (unsigned long long)(x >> 7) % (i % 8 ? 100000000000000ULL : 1000000000000000ULL),
                     (int)((x >> 56) % 46) - 23);
        gp_buf_printf(&doc, "m{i=\"%d\"} %s\n", i, vals[i]);
    }
    char err[256] = "";
    CHECK_INT(gp_text_parse(&p, doc.data, doc.len, 0, err, sizeof err), GP_OK);
    CHECK_INT(p.req.nseries, 2000);
    for (int i = 0; i < 2000; i++) {
        double want = strtod(vals[i], NULL), got = p.req.series[i].samples[0].value;
        if (gp_f64_bits(want) != gp_f64_bits(got))
            gp_test_fail(__FILE__, __LINE__, "'%s': strtod %.17g, parser %.17g", vals[i], want, got);
    }
    gp_buf_free(&doc);
    gp_text_parser_free(&p);
}

/* One malformed document: its error code, the message part, the line. */
struct bad {
    const char *doc;
    int code;
    const char *msg;
};

static void test_rejects_malformed(void)
{
    const struct bad cases[] = {
        {"m 1", GP_EPARSE, "line 1: last line does not end with a newline"},
        {"ok 1\nm{a=\"b\"} 1", GP_EPARSE, "line 2: last line does not end with a newline"},
        {"9m 1\n", GP_EPARSE, "line 1: invalid metric name"},
        {"m-x 1\n", GP_EPARSE, "invalid character in metric name"},
        {"ok 1\n\nm\n", GP_EPARSE, "line 3: missing value"},
        {"m{} \n", GP_EPARSE, "missing value"},
        {"m abc\n", GP_EPARSE, "invalid value"},
        {"m 1_000\n", GP_EPARSE, "invalid value"},
        {"m 0x10\n", GP_EPARSE, "invalid value"}, /* hex needs a p exponent */
        {"m +NaN\n", GP_EPARSE, "invalid value"},
        {"m 1e\n", GP_EPARSE, "invalid value"},
        {"m .\n", GP_EPARSE, "invalid value"},
        {"m -\n", GP_EPARSE, "invalid value"},
        {"m 1\r\n", GP_EPARSE, "invalid value"},
        {"m 1e400\n", GP_EPARSE, "value out of range"},
        {"m 1 2.5\n", GP_EPARSE, "invalid timestamp"},
        {"m 1 -\n", GP_EPARSE, "invalid timestamp"},
        {"m 1 9223372036854775808\n", GP_EPARSE, "timestamp out of range"},
        {"m 1 2 3\n", GP_EPARSE, "unexpected text after the timestamp"},
        {"m{a=\"b\" 1\n", GP_EPARSE, "expected ',' or '}'"},
        {"m{a=\"b\n", GP_EPARSE, "label value not closed"},
        {"m{a=\"b\\\"} 1\n", GP_EPARSE, "label value not closed"},
        {"m{a=\"b\\q\"} 1\n", GP_EPARSE, "invalid escape sequence in label value"},
        {"m{a=\"b\\", GP_EPARSE, "newline"},
        {"m{a} 1\n", GP_EPARSE, "expected '=' after label name"},
        {"m{a=b} 1\n", GP_EPARSE, "expected '\"'"},
        {"m{1a=\"b\"} 1\n", GP_EPARSE, "invalid label name"},
        {"m{a:b=\"c\"} 1\n", GP_EPARSE, "expected '='"},
        {"m{,} 1\n", GP_EPARSE, "invalid label name"},
        {"m{a=\"1\",,} 1\n", GP_EPARSE, "invalid label name"},
        {"m{a=\"1\"\n", GP_EPARSE, "expected ',' or '}'"},
        {"m{a=\"1\",\n", GP_EPARSE, "label set not closed"},
        {"m{a=\"1\",a=\"2\"} 1\n", GP_EPARSE, "duplicate label name \"a\""},
        {"m{__name__=\"x\"} 1\n", GP_EPARSE, "__name__ is reserved"},
        {"m{a=\"\xff\"} 1\n", GP_EPARSE, "not valid UTF-8"},
        {"m{a=\"\xc0\xaf\"} 1\n", GP_EPARSE, "not valid UTF-8"},         /* overlong '/' */
        {"m{a=\"\xed\xa0\x80\"} 1\n", GP_EPARSE, "not valid UTF-8"},     /* surrogate */
        {"m{a=\"\xf4\x90\x80\x80\"} 1\n", GP_EPARSE, "not valid UTF-8"}, /* > U+10FFFF */
        {"m{a=\"\xe2\x82\"} 1\n", GP_EPARSE, "not valid UTF-8"},         /* truncated */
        {"{a=\"b\"} 1\n", GP_EPARSE, "invalid metric name"},
        {"# TYPE m gauge extra\n", GP_EPARSE, "unexpected text after the metric type"},
        {"# TYPE m gauges\n", GP_EPARSE, "unknown metric type"},
        {"# TYPE m\n", GP_EPARSE, "unknown metric type"},
        {"# TYPE 9m gauge\n", GP_EPARSE, "invalid metric name in TYPE line"},
        {"# HELP m-x help\n", GP_EPARSE, "invalid metric name in HELP line"},
        {"# HELP m a \\t tab\n", GP_EPARSE, "invalid escape sequence in HELP text"},
        {"# HELP m a \xff\n", GP_EPARSE, "HELP text is not valid UTF-8"},
        {"# HELP m a\n# HELP m b\n", GP_EPARSE, "line 2: second HELP line for metric name"},
        {"# TYPE m gauge\n# HELP m x\n# TYPE m counter\n", GP_EPARSE, "line 3: second TYPE line"},
        {"m 1\n# TYPE m gauge\n", GP_EPARSE, "line 2: TYPE line for metric name after its samples"},
        {"h_bucket{le=\"1\"} 1\n# TYPE h histogram\n", GP_EPARSE, "after its samples"},
        {"m 1\n\x01\n", GP_EPARSE, "line 2: invalid metric name near \"?\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct gp_text_parser p = {0};
        char err[256] = "";
        int rc = gp_text_parse(&p, cases[i].doc, strlen(cases[i].doc), 0, err, sizeof err);
        if (rc != cases[i].code || !strstr(err, cases[i].msg))
            gp_test_fail(__FILE__, __LINE__, "case %zu (%s): want %d '%s', got %d '%s'", i,
                         cases[i].doc, cases[i].code, cases[i].msg, rc, err);
        CHECK_INT(p.req.nseries, 0);
        gp_text_parser_free(&p);
    }
}

/* A comment-like HELP/TYPE without a name, and other comments, are ignored. */
static void test_comments(void)
{
    struct gp_text_parser p = {0};
    char err[256];
    CHECK_INT(parse(&p, "#\n# HELP\n#TYPE\n# EOF\n#HELP m written without a space\nm 1\n", err,
                    sizeof err),
              GP_OK);
    CHECK_INT(p.req.nseries, 1);
    /* HELP after the samples is fine; the family of another name resets the group. */
    CHECK_INT(parse(&p, "# TYPE a gauge\na 1\n# HELP a late\n# TYPE b gauge\nb 2\n# TYPE a_x gauge\n",
                    err, sizeof err),
              GP_OK);
    CHECK_INT(p.req.nseries, 2);
    gp_text_parser_free(&p);
}

static void test_empty_and_blank_input(void)
{
    struct gp_text_parser p = {0};
    char err[256];
    CHECK_INT(gp_text_parse(&p, "", 0, 0, err, sizeof err), GP_OK);
    CHECK_INT(p.req.nseries, 0);
    CHECK_INT(parse(&p, "\n\n   \n# only comments\n", err, sizeof err), GP_OK);
    CHECK_INT(p.req.nseries, 0);
    gp_text_parser_free(&p);
}

static void test_caps(void)
{
    struct gp_text_parser p = {0};
    char err[256] = "";
    /* 64 labels including __name__ is the most; one more is too many. */
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_buf_puts(&b, "m{");
    for (int i = 0; i < 63; i++)
        gp_buf_printf(&b, "l%d=\"v\",", i);
    gp_buf_puts(&b, "} 1\n");
    CHECK_INT(gp_text_parse(&p, b.data, b.len, 0, err, sizeof err), GP_OK);
    CHECK_INT(p.req.series[0].nlabels, 64);
    gp_buf_reset(&b);
    gp_buf_puts(&b, "m{");
    for (int i = 0; i < 64; i++)
        gp_buf_printf(&b, "l%d=\"v\",", i);
    gp_buf_puts(&b, "} 1\n");
    CHECK_INT(gp_text_parse(&p, b.data, b.len, 0, err, sizeof err), GP_ETOOBIG);
    CHECK_CONTAINS(err, "more than 64 labels");

    /* A value of 4096 bytes passes, 4097 do not (also after unescaping). */
    gp_buf_reset(&b);
    gp_buf_puts(&b, "m{a=\"");
    for (int i = 0; i < 4096; i++)
        gp_buf_putc(&b, 'x');
    gp_buf_puts(&b, "\"} 1\n");
    CHECK_INT(gp_text_parse(&p, b.data, b.len, 0, err, sizeof err), GP_OK);
    gp_buf_reset(&b);
    gp_buf_puts(&b, "m{a=\"\\n");
    for (int i = 0; i < 4096; i++)
        gp_buf_putc(&b, 'x');
    gp_buf_puts(&b, "\"} 1\n");
    CHECK_INT(gp_text_parse(&p, b.data, b.len, 0, err, sizeof err), GP_ETOOBIG);
    CHECK_CONTAINS(err, "label value longer than 4096");
    gp_buf_reset(&b);
    for (int i = 0; i < 4097; i++)
        gp_buf_putc(&b, 'm');
    gp_buf_puts(&b, " 1\n");
    CHECK_INT(gp_text_parse(&p, b.data, b.len, 0, err, sizeof err), GP_ETOOBIG);
    CHECK_CONTAINS(err, "metric name longer");

    /* max_series caps the samples; the default is GP_RW_MAX_SERIES. */
    gp_buf_reset(&b);
    for (int i = 0; i < 1001; i++)
        gp_buf_printf(&b, "m{i=\"%d\"} %d\n", i, i);
    p.max_series = 1000;
    CHECK_INT(gp_text_parse(&p, b.data, b.len, 0, err, sizeof err), GP_ETOOBIG);
    CHECK_CONTAINS(err, "line 1001: more than 1000 samples");
    p.max_series = 0;
    CHECK_INT(gp_text_parse(&p, b.data, b.len, 0, err, sizeof err), GP_OK);
    CHECK_INT(p.req.nseries, 1001);
    CHECK_DBL(p.req.series[1000].samples[0].value, 1000, 0);
    CHECK_STR(lab(&p.req.series[999], "i"), "999");
    gp_buf_free(&b);
    gp_text_parser_free(&p);
}

/* Every prefix of a valid document either parses (cut at a line end) or
 * fails cleanly; never more series than lines. */
static void test_truncated_prefixes(void)
{
    const char *doc = "# HELP m h\\n\n# TYPE m gauge\nm{a=\"x\\\"y\",b=\"\xc3\xa9\"} 1.5 17\nm 2\n";
    size_t n = strlen(doc);
    struct gp_text_parser p = {0};
    for (size_t k = 0; k <= n; k++) {
        char *copy = malloc(k ? k : 1); /* exact size: ASan sees any over-read */
        CHECK(copy != NULL);
        memcpy(copy, doc, k);
        char err[256] = "";
        int rc = gp_text_parse(&p, copy, k, 0, err, sizeof err);
        if (k == 0 || doc[k - 1] == '\n')
            CHECK_INT(rc, GP_OK);
        else
            CHECK(rc == GP_EPARSE && strstr(err, "line "));
        free(copy);
    }
    gp_text_parser_free(&p);
}

/* The parser is reused: the second result replaces the first, and views
 * into a new text are valid. */
static void test_reuse(void)
{
    struct gp_text_parser p = {0};
    char err[256];
    CHECK_INT(parse(&p, "a{x=\"\\\\1\"} 1\nb 2\nc 3\n", err, sizeof err), GP_OK);
    CHECK_INT(p.req.nseries, 3);
    CHECK_INT(parse(&p, "d{y=\"\\\\2\"} 4\n", err, sizeof err), GP_OK);
    CHECK_INT(p.req.nseries, 1);
    CHECK_STR(lab(&p.req.series[0], "y"), "\\2");
    CHECK_INT(parse(&p, "bad\n", err, sizeof err), GP_EPARSE);
    CHECK_INT(p.req.nseries, 0);
    gp_text_parser_free(&p);
}

/* The agent's own exposition of a simulated node parses, every sample
 * line becomes one series, and the result encodes as remote write and
 * decodes to the same label sets and values. */
static void test_agent_exposition_round_trip(void)
{
    struct gp_frame f;
    gp_frame_init(&f);
    char err[512] = "";
    struct gp_source_config cfg = {.simulate = "1x8xH100", .hostname = "node-a", .seed = 7,
                                   .interval_ms = 1000};
    void *sim = NULL;
    unsigned errors = 0;
    CHECK_INT(gp_source_simulate.open(&cfg, &sim, err, sizeof err), GP_OK);
    f.time_ms = 1700000000000;
    snprintf(f.hostname, sizeof f.hostname, "node-a");
    CHECK_INT(gp_source_simulate.sample(sim, &f, &errors), GP_OK);
    struct gp_expo x = {0};
    struct gp_buf text;
    gp_buf_init(&text, 0);
    struct gp_expo_options o = {.hostname_label = "Hostname", .process_series = GP_PROC_SERIES_GPU};
    struct gp_agent_stats st = {0};
    CHECK_INT(gp_expo_render(&x, &text, &f, &o, &st), GP_OK);
    size_t lines = 0;
    for (size_t i = 0; i < text.len; i++)
        lines += text.data[i] == '\n' && i + 1 < text.len && text.data[i + 1] != '#';
    struct gp_text_parser p = {0};
    CHECK_INT(gp_text_parse(&p, text.data, text.len, f.time_ms, err, sizeof err), GP_OK);
    CHECK_INT(p.req.nseries, lines);
    CHECK(p.req.nseries > 300);

    struct gp_buf body, scratch;
    gp_buf_init(&body, 0);
    gp_buf_init(&scratch, 0);
    CHECK_INT(gp_rw_encode(&p.req, &body, &scratch), GP_OK);
    struct gp_batch back;
    CHECK_INT(gp_rw_decode((const uint8_t *)body.data, body.len, 64 << 20, &back, err, sizeof err),
              GP_OK);
    CHECK_INT(back.nseries, p.req.nseries);
    for (size_t i = 0; i < back.nseries; i++) {
        const struct gp_series *a = &p.req.series[i], *b = &back.series[i];
        CHECK(gp_f64_bits(a->samples[0].value) == gp_f64_bits(b->samples[0].value));
        CHECK_INT(b->samples[0].timestamp_ms, 1700000000000LL);
        size_t k = 0;
        for (size_t j = 0; j < a->nlabels; j++) {
            if (!a->labels[j].value.len)
                continue;
            CHECK(a->labels[j].name.len == b->labels[k].name.len &&
                  !memcmp(a->labels[j].name.ptr, b->labels[k].name.ptr, a->labels[j].name.len));
            CHECK(a->labels[j].value.len == b->labels[k].value.len &&
                  !memcmp(a->labels[j].value.ptr, b->labels[k].value.ptr, a->labels[j].value.len));
            k++;
        }
        CHECK_INT(k, b->nlabels);
    }
    gp_rw_decoded_free(&back);
    gp_buf_free(&body);
    gp_buf_free(&scratch);
    gp_text_parser_free(&p);
    gp_buf_free(&text);
    gp_expo_free(&x);
    gp_source_simulate.close(sim);
    gp_frame_free(&f);
}

const struct gp_test gp_tests_textparse[] = {
    {"basic_document", test_basic_document},
    {"uppercase_labels_sort_before_name", test_uppercase_labels_sort_before_name},
    {"escapes", test_escapes},
    {"values", test_values},
    {"values_match_strtod", test_values_match_strtod},
    {"rejects_malformed", test_rejects_malformed},
    {"comments", test_comments},
    {"empty_and_blank_input", test_empty_and_blank_input},
    {"caps", test_caps},
    {"truncated_prefixes", test_truncated_prefixes},
    {"reuse", test_reuse},
    {"agent_exposition_round_trip", test_agent_exposition_round_trip},
    {0},
};
