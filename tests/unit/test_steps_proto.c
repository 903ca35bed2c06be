/*
 * test_steps_proto.c - the step protocol parser: every kind and key,
 * strict numbers, malformed records dropped and counted while the good
 * ones of the same datagram are kept, unknown keys and kinds, limits.
 */
#include "sources/steps_proto.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAXREC 64

struct got {
    unsigned n;
    struct gp_steps_record r[MAXREC];
};

static void collect(void *ctx, const struct gp_steps_record *r)
{
    struct got *g = ctx;
    if (g->n < MAXREC)
        g->r[g->n] = *r;
    g->n++;
}

/* Parses text; returns the good count, *bad the malformed count. The text
 * is copied into a buffer of exactly its length (ASan sees overreads). */
static unsigned parse(const char *text, struct got *g, unsigned *bad)
{
    size_t len = strlen(text);
    char *copy = malloc(len ? len : 1);
    memcpy(copy, text, len);
    memset(g, 0, sizeof *g);
    *bad = 0;
    unsigned good = gp_steps_parse(copy, len, collect, g, bad);
    free(copy);
    CHECK_INT(good, g->n);
    return good;
}

static void test_the_documented_example(void)
{
    struct got g;
    unsigned bad;
    CHECK_INT(parse("step seq=41 n=1200 dur=0.0834 wait=0.0121 samples=32 tokens=65536 loss=2.4131 "
                    "t=1763912345.123456\n"
                    "mem seq=42 dev=0 alloc=1073741824 reserved=2147483648 peak=1610612736\n"
                    "meta seq=43 target=50000 job=bert rank=0 world=8\n"
                    "end seq=44 status=0 t=1763912399.5\n",
                    &g, &bad),
              4);
    CHECK_INT(bad, 0);
    const struct gp_steps_record *s = &g.r[0];
    CHECK_INT(s->kind, GP_STEPS_STEP);
    CHECK_INT(s->seq, 41);
    CHECK_INT(s->n, 1200);
    CHECK_DBL(s->dur, 0.0834, 1e-12);
    CHECK_DBL(s->wait, 0.0121, 1e-12);
    CHECK_DBL(s->samples, 32, 0);
    CHECK_DBL(s->tokens, 65536, 0);
    CHECK_DBL(s->loss, 2.4131, 1e-12);
    CHECK_DBL(s->t, 1763912345.123456, 1e-6);
    CHECK(s->has & GP_SK_LOSS);
    CHECK(!(s->has & GP_SK_LOST));
    const struct gp_steps_record *m = &g.r[1];
    CHECK_INT(m->kind, GP_STEPS_MEM);
    CHECK_INT(m->dev, 0);
    CHECK_INT(m->alloc, 1073741824ull);
    CHECK_INT(m->reserved, 2147483648ull);
    CHECK_INT(m->peak, 1610612736ull);
    const struct gp_steps_record *t = &g.r[2];
    CHECK_INT(t->kind, GP_STEPS_META);
    CHECK_INT(t->target, 50000);
    CHECK_STR(t->job, "bert");
    CHECK_INT(t->rank, 0);
    CHECK_INT(t->world, 8);
    const struct gp_steps_record *e = &g.r[3];
    CHECK_INT(e->kind, GP_STEPS_END);
    CHECK_INT(e->status, 0);
    CHECK(e->has & GP_SK_STATUS);
    CHECK_DBL(e->t, 1763912399.5, 1e-6);
    CHECK_INT(e->rank, -1);
}

static void test_malformed_records_are_dropped_the_rest_kept(void)
{
    static const char *const bad_lines[] = {
        "step seq=1",                          /* dur is required */
        "mem seq=1 alloc=5",                   /* dev is required */
        "step dur=nan",
        "step dur=inf",
        "step dur=-1",
        "step dur=0x10",
        "step dur=1e999",
        "step dur=",
        "step dur=1.5.5",
        "step dur=1 samples=-3",
        "step dur=1 loss=abc",
        "step dur=1 n=18446744073709551616", /* 2^64 */
        "step dur=1 n=-1",
        "step dur=1 n=+5",
        "step dur=1 seq=0",
        "step dur=1 dur=2",                    /* duplicated key */
        "step dur=1 junk",                     /* token without '=' */
        "step dur=1 =5",
        "step dur=1 Bad=5",                    /* key not [a-z_][a-z0-9_]* */
        "mem dev=-1",
        "mem dev=2147483648",
        "meta rank=-1",
        "meta world=0",
        "meta job=" /* empty */,
        "end status=-2",
        "Step dur=1",                          /* kind not an identifier */
        "5tep dur=1",
        "step dur=1 \x01",
        "step\x7f dur=1",
        "phase dur=1",                         /* name is required */
        "phase name=checkpoint",               /* dur is required */
        "phase name= dur=1",
        "phase name=Checkpoint dur=1",         /* not [a-z_][a-z0-9_]* */
        "phase name=9lives dur=1",
        "phase name=check-point dur=1",
        "phase name=abcdefghijklmnopqrstuvwxyz0123456 dur=1", /* 33 bytes */
        "phase name=eval name=eval dur=1",     /* duplicated key */
        "phase name=eval dur=-0.5",
        "phase name=eval dur=1 t=-1",
        "phase name=eval dur=nan",
    };
    for (size_t i = 0; i < sizeof bad_lines / sizeof bad_lines[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "step seq=1 dur=1\n%s\nstep seq=3 dur=2\n", bad_lines[i]);
        struct got g;
        unsigned bad;
        unsigned good = parse(text, &g, &bad);
        if (good != 2 || bad != 1)
            gp_test_fail(__FILE__, __LINE__, "line %zu \"%s\": %u good, %u malformed", i,
                         bad_lines[i], good, bad);
        CHECK_INT(g.r[0].seq, 1);
        CHECK_INT(g.r[1].seq, 3);
    }
}

static void test_numbers_and_limits(void)
{
    struct got g;
    unsigned bad;
    CHECK_INT(parse("step dur=1.5e-3 loss=-0.25 samples=1E2 n=18446744073709551615\n", &g, &bad), 1);
    CHECK_DBL(g.r[0].dur, 0.0015, 1e-15);
    CHECK_DBL(g.r[0].loss, -0.25, 0); /* loss may be negative */
    CHECK_DBL(g.r[0].samples, 100, 0);
    CHECK_INT(g.r[0].n == UINT64_MAX, 1);
    CHECK_INT(parse("mem dev=2147483647 alloc=0\n", &g, &bad), 1);
    CHECK_INT(g.r[0].dev, 2147483647);
    /* A job name of 127 bytes fits, 128 does not. */
    char text[512];
    char name[129];
    memset(name, 'j', 128);
    name[127] = '\0';
    snprintf(text, sizeof text, "meta job=%s\n", name);
    CHECK_INT(parse(text, &g, &bad), 1);
    CHECK_INT(strlen(g.r[0].job), 127);
    name[127] = 'j';
    name[128] = '\0';
    snprintf(text, sizeof text, "meta job=%s\n", name);
    CHECK_INT(parse(text, &g, &bad), 0);
    CHECK_INT(bad, 1);
}

/* A wait longer than its step (a client that timed only the compute) is
 * read as the whole step, so no data-wait share exceeds 1. */
static void test_wait_is_part_of_the_step(void)
{
    struct got g;
    unsigned bad;
    CHECK_INT(parse("step dur=0.04 wait=0.06\nstep dur=0.1 wait=0.06\n", &g, &bad), 2);
    CHECK_DBL(g.r[0].wait, 0.04, 0);
    CHECK_DBL(g.r[1].wait, 0.06, 0);
    CHECK_INT(bad, 0);
}

/* A phase: its name, length and end; keys of other kinds are skipped. */
static void test_phase(void)
{
    struct got g;
    unsigned bad;
    CHECK_INT(parse("phase seq=5 name=checkpoint dur=1.25 t=1763912350.5 n=3 job=x\n"
                    "phase seq=6 name=abcdefghijklmnopqrstuvwxyz012345 dur=0\n",
                    &g, &bad),
              2);
    CHECK_INT(bad, 0);
    CHECK_INT(g.r[0].kind, GP_STEPS_PHASE);
    CHECK_INT(g.r[0].seq, 5);
    CHECK_STR(g.r[0].name, "checkpoint");
    CHECK_DBL(g.r[0].dur, 1.25, 1e-12);
    CHECK_DBL(g.r[0].t, 1763912350.5, 1e-6);
    CHECK(!(g.r[0].has & (GP_SK_N | GP_SK_JOB)));
    CHECK_STR(g.r[1].name, "abcdefghijklmnopqrstuvwxyz012345");
    CHECK(!(g.r[1].has & GP_SK_T));
    /* name is a phase's key only */
    CHECK_INT(parse("step dur=1 name=x\n", &g, &bad), 1);
    CHECK(!(g.r[0].has & GP_SK_NAME) && g.r[0].name[0] == '\0');
}

static void test_unknown_keys_and_kinds(void)
{
    struct got g;
    unsigned bad;
    /* Unknown keys are skipped, also a known key under the wrong kind. */
    CHECK_INT(parse("step dur=1 future=x lr=0.1 dev=3 job=x\n", &g, &bad), 1);
    CHECK_INT(bad, 0);
    CHECK(!(g.r[0].has & (GP_SK_DEV | GP_SK_JOB)));
    /* A newer kind: delivered as OTHER with its seq, not malformed. */
    CHECK_INT(parse("eval seq=7 lost=2 acc=0.9\n", &g, &bad), 1);
    CHECK_INT(bad, 0);
    CHECK_INT(g.r[0].kind, GP_STEPS_OTHER);
    CHECK_INT(g.r[0].seq, 7);
    CHECK_INT(g.r[0].lost, 2);
    /* ...but its seq must still be a number. */
    CHECK_INT(parse("eval seq=x\n", &g, &bad), 0);
    CHECK_INT(bad, 1);
}

static void test_blank_lines_crlf_and_no_final_newline(void)
{
    struct got g;
    unsigned bad;
    CHECK_INT(parse("\n\n  \t\nstep dur=1\r\n\nstep  \t dur=2", &g, &bad), 2);
    CHECK_INT(bad, 0);
    CHECK_DBL(g.r[1].dur, 2, 0);
    CHECK_INT(parse("", &g, &bad), 0);
    CHECK_INT(bad, 0);
    /* A NUL inside a line makes that line malformed, not the datagram. */
    char text[] = "step dur=1\nstep dur=2\0x\nstep dur=3\n";
    memset(&g, 0, sizeof g);
    bad = 0;
    CHECK_INT(gp_steps_parse(text, sizeof text - 1, collect, &g, &bad), 2);
    CHECK_INT(bad, 1);
}

/* The model record (MFU): FLOPs per token or sample, or parameters read
 * as 6·N per token for training and 2·N for inference. */
static void test_model_record(void)
{
    struct got g;
    unsigned bad;
    CHECK_INT(parse("model seq=1 params=7e9 mode=train precision=bf16\n"
                    "model seq=2 params=7000000000 mode=infer precision=fp8\n"
                    "model flops_token=4.2e10 params=7e9 precision=tf32\n"
                    "model flops_sample=123456.5 precision=fp32\n",
                    &g, &bad),
              4);
    CHECK_INT(bad, 0);
    CHECK_INT(g.r[0].kind, GP_STEPS_MODEL);
    CHECK_DBL(g.r[0].params, 7e9, 0);
    CHECK_INT(g.r[0].precision, GP_PREC_BF16);
    CHECK(!g.r[0].infer);
    CHECK_DBL(gp_steps_flops_per_token(&g.r[0]), 6 * 7e9, 0);
    CHECK(g.r[1].infer);
    CHECK_INT(g.r[1].precision, GP_PREC_FP8);
    CHECK_DBL(gp_steps_flops_per_token(&g.r[1]), 2 * 7e9, 0);
    /* a declared figure wins over the parameter count */
    CHECK_DBL(gp_steps_flops_per_token(&g.r[2]), 4.2e10, 0);
    CHECK_INT(g.r[2].precision, GP_PREC_TF32);
    CHECK(g.r[3].has & GP_SK_FLOPS_SAMPLE);
    CHECK_DBL(g.r[3].flops_sample, 123456.5, 0);
    CHECK(isnan(gp_steps_flops_per_token(&g.r[3])));
    /* model keys mean nothing on other kinds: skipped there */
    CHECK_INT(parse("step dur=1 params=5 precision=bf17\n", &g, &bad), 1);
    CHECK_INT(bad, 0);
    CHECK(!(g.r[0].has & (GP_SK_PARAMS | GP_SK_PRECISION)));

    static const char *const bad_lines[] = {
        "model params=7e9",                           /* precision is required */
        "model precision=bf16",                       /* and a figure */
        "model mode=train precision=bf16",
        "model params=7e9 precision=BF16",            /* names are lowercase */
        "model params=7e9 precision=bf17",
        "model params=7e9 precision=",
        "model params=0 precision=bf16",              /* figures are > 0 */
        "model params=-7e9 precision=bf16",
        "model params=1e308 precision=bf16",          /* 6·N would overflow */
        "model flops_token=0 precision=bf16",
        "model flops_sample=nan precision=bf16",
        "model flops_token=inf precision=bf16",
        "model flops_token=1e999 precision=bf16",
        "model params=7e9 mode=training precision=bf16",
        "model params=7e9 mode= precision=bf16",
        "model params=1 params=2 precision=bf16",      /* duplicated key */
        "model params=7e9 precision=bf16 precision=fp8",
    };
    for (size_t i = 0; i < sizeof bad_lines / sizeof bad_lines[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "step seq=1 dur=1\n%s\nstep seq=3 dur=2\n", bad_lines[i]);
        unsigned good = parse(text, &g, &bad);
        if (good != 2 || bad != 1)
            gp_test_fail(__FILE__, __LINE__, "line %zu \"%s\": %u good, %u malformed", i,
                         bad_lines[i], good, bad);
    }
}

static void test_oversized_datagram(void)
{
    size_t len = GP_STEPS_DGRAM_MAX + 1;
    char *big = malloc(len);
    memset(big, ' ', len);
    memcpy(big, "step dur=1\n", 11);
    struct got g = {0};
    unsigned bad = 0;
    CHECK_INT(gp_steps_parse(big, len, collect, &g, &bad), 0);
    CHECK_INT(bad, 1);
    /* Exactly the maximum is fine. */
    bad = 0;
    CHECK_INT(gp_steps_parse(big, GP_STEPS_DGRAM_MAX, collect, &g, &bad), 1);
    CHECK_INT(bad, 0);
    free(big);
}

const struct gp_test gp_tests_steps_proto[] = {
    {"the_documented_example", test_the_documented_example},
    {"malformed_records_are_dropped_the_rest_kept", test_malformed_records_are_dropped_the_rest_kept},
    {"phase", test_phase},
    {"numbers_and_limits", test_numbers_and_limits},
    {"wait_is_part_of_the_step", test_wait_is_part_of_the_step},
    {"unknown_keys_and_kinds", test_unknown_keys_and_kinds},
    {"blank_lines_crlf_and_no_final_newline", test_blank_lines_crlf_and_no_final_newline},
    {"oversized_datagram", test_oversized_datagram},
    {"model_record", test_model_record},
    {0},
};
