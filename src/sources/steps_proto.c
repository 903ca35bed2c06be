/*
 * steps_proto.c - the step protocol parser (see steps_proto.h).
 *
 * One pass over the datagram: split into lines, each line into blank-
 * separated tokens, the first the kind, the rest key=value. Every value is
 * checked for its key's type and range before the record is delivered;
 * the record is built on the stack, so nothing is allocated.
 */
#include "steps_proto.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct tok {
    const char *p;
    size_t n;
};

static bool tok_is(struct tok t, const char *s)
{
    size_t n = strlen(s);
    return t.n == n && memcmp(t.p, s, n) == 0;
}

/* 1..20 decimal digits without sign or blanks, no overflow. */
static bool parse_u64(struct tok t, uint64_t *out)
{
    if (t.n == 0 || t.n > 20)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < t.n; i++) {
        unsigned d = (unsigned)(unsigned char)t.p[i] - '0';
        if (d > 9 || v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

static bool parse_i32(struct tok t, int32_t min, int32_t *out)
{
    uint64_t v;
    if (!parse_u64(t, &v) || v > INT32_MAX || (int64_t)v < min)
        return false;
    *out = (int32_t)v;
    return true;
}

/* A finite decimal number: digits, one optional sign, '.', exponent.
 * strtod alone would also take "inf", "nan", hex floats and blanks. */
static bool parse_double(struct tok t, bool allow_negative, double *out)
{
    char buf[64];
    if (t.n == 0 || t.n >= sizeof buf)
        return false;
    bool digit = false;
    for (size_t i = 0; i < t.n; i++) {
        char c = t.p[i];
        if (c >= '0' && c <= '9')
            digit = true;
        else if (c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-')
            return false;
    }
    if (!digit)
        return false;
    memcpy(buf, t.p, t.n);
    buf[t.n] = '\0';
    char *end;
    double v = strtod(buf, &end);
    if (end != buf + t.n || !isfinite(v) || (!allow_negative && v < 0))
        return false;
    *out = v;
    return true;
}

/* A job name: printable, no blanks (they separate tokens already). */
static bool parse_job(struct tok t, char *out)
{
    if (t.n == 0 || t.n >= GP_JOB_LEN)
        return false;
    for (size_t i = 0; i < t.n; i++)
        if ((unsigned char)t.p[i] < 0x21 || (unsigned char)t.p[i] > 0x7e)
            return false;
    memcpy(out, t.p, t.n);
    out[t.n] = '\0';
    return true;
}

static bool ident(struct tok t)
{
    if (t.n == 0 || t.n > 32)
        return false;
    for (size_t i = 0; i < t.n; i++) {
        char c = t.p[i];
        if (!((c >= 'a' && c <= 'z') || c == '_' || (i > 0 && c >= '0' && c <= '9')))
            return false;
    }
    return true;
}

/* A phase name: an identifier, as kinds and keys are. */
static bool parse_name(struct tok t, char out[GP_STEPS_PHASE_LEN])
{
    if (!ident(t))
        return false;
    memcpy(out, t.p, t.n);
    out[t.n] = '\0';
    return true;
}

/* Applies one key=value to r. Returns false when the record is malformed. */
static bool apply(struct gp_steps_record *r, struct tok k, struct tok v)
{
    enum gp_steps_kind kind = r->kind;
    bool step = kind == GP_STEPS_STEP, mem = kind == GP_STEPS_MEM, phase = kind == GP_STEPS_PHASE;
    bool named = kind == GP_STEPS_META || kind == GP_STEPS_END, model = kind == GP_STEPS_MODEL;
    uint32_t bit = 0;
    bool ok = true;
    if (tok_is(k, "seq"))
        bit = GP_SK_SEQ, ok = parse_u64(v, &r->seq) && r->seq >= 1;
    else if (tok_is(k, "lost"))
        bit = GP_SK_LOST, ok = parse_u64(v, &r->lost);
    else if (kind == GP_STEPS_OTHER)
        return true; /* a newer kind: only seq and lost are understood */
    else if (step && tok_is(k, "n"))
        bit = GP_SK_N, ok = parse_u64(v, &r->n);
    else if ((step || phase) && tok_is(k, "dur"))
        bit = GP_SK_DUR, ok = parse_double(v, false, &r->dur);
    else if (step && tok_is(k, "wait"))
        bit = GP_SK_WAIT, ok = parse_double(v, false, &r->wait);
    else if (step && tok_is(k, "samples"))
        bit = GP_SK_SAMPLES, ok = parse_double(v, false, &r->samples);
    else if (step && tok_is(k, "tokens"))
        bit = GP_SK_TOKENS, ok = parse_double(v, false, &r->tokens);
    else if (step && tok_is(k, "loss"))
        bit = GP_SK_LOSS, ok = parse_double(v, true, &r->loss);
    else if ((step || phase || kind == GP_STEPS_END) && tok_is(k, "t"))
        bit = GP_SK_T, ok = parse_double(v, false, &r->t);
    else if (mem && tok_is(k, "dev"))
        bit = GP_SK_DEV, ok = parse_i32(v, 0, &r->dev);
    else if (mem && tok_is(k, "alloc"))
        bit = GP_SK_ALLOC, ok = parse_u64(v, &r->alloc);
    else if (mem && tok_is(k, "reserved"))
        bit = GP_SK_RESERVED, ok = parse_u64(v, &r->reserved);
    else if (mem && tok_is(k, "peak"))
        bit = GP_SK_PEAK, ok = parse_u64(v, &r->peak);
    else if (kind == GP_STEPS_META && tok_is(k, "target"))
        bit = GP_SK_TARGET, ok = parse_u64(v, &r->target);
    else if (named && tok_is(k, "job"))
        bit = GP_SK_JOB, ok = parse_job(v, r->job);
    else if (named && tok_is(k, "rank"))
        bit = GP_SK_RANK, ok = parse_i32(v, 0, &r->rank);
    else if (named && tok_is(k, "world"))
        bit = GP_SK_WORLD, ok = parse_i32(v, 1, &r->world);
    else if (phase && tok_is(k, "name"))
        bit = GP_SK_NAME, ok = parse_name(v, r->name);
    else if (kind == GP_STEPS_END && tok_is(k, "status"))
        bit = GP_SK_STATUS, ok = parse_i32(v, 0, &r->status);
    else if (model && tok_is(k, "flops_token"))
        bit = GP_SK_FLOPS_TOKEN, ok = parse_double(v, false, &r->flops_token) && r->flops_token > 0;
    else if (model && tok_is(k, "flops_sample"))
        bit = GP_SK_FLOPS_SAMPLE, ok = parse_double(v, false, &r->flops_sample) && r->flops_sample > 0;
    else if (model && tok_is(k, "params"))
        bit = GP_SK_PARAMS, ok = parse_double(v, false, &r->params) && r->params > 0 &&
                            r->params < 1e300; /* 6·N stays finite */
    else if (model && tok_is(k, "mode"))
        bit = GP_SK_MODE, ok = tok_is(v, "train") || tok_is(v, "infer"), r->infer = tok_is(v, "infer");
    else if (model && tok_is(k, "precision"))
        bit = GP_SK_PRECISION, ok = gp_precision_parse(v.p, v.n, &r->precision);
    else
        return true; /* unknown key: skipped */
    if (!ok || (r->has & bit))
        return false;
    r->has |= bit;
    return true;
}

/* Parses one line (no '\n'). 1: good (r filled), 0: blank, -1: malformed. */
static int parse_line(const char *p, size_t n, struct gp_steps_record *r)
{
    if (n && p[n - 1] == '\r')
        n--;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] < 0x20 && p[i] != '\t')
            return -1;
    memset(r, 0, offsetof(struct gp_steps_record, job));
    r->job[0] = r->name[0] = '\0';
    r->rank = r->world = -1;
    r->flops_token = r->flops_sample = r->params = 0;
    r->infer = false;
    r->precision = GP_PREC_BF16;
    size_t i = 0;
    bool first = true;
    while (i < n) {
        while (i < n && (p[i] == ' ' || p[i] == '\t'))
            i++;
        if (i == n)
            break;
        size_t s = i;
        while (i < n && p[i] != ' ' && p[i] != '\t')
            i++;
        struct tok t = {p + s, i - s};
        if (first) {
            first = false;
            if (tok_is(t, "step"))
                r->kind = GP_STEPS_STEP;
            else if (tok_is(t, "mem"))
                r->kind = GP_STEPS_MEM;
            else if (tok_is(t, "meta"))
                r->kind = GP_STEPS_META;
            else if (tok_is(t, "end"))
                r->kind = GP_STEPS_END;
            else if (tok_is(t, "model"))
                r->kind = GP_STEPS_MODEL;
            else if (tok_is(t, "phase"))
                r->kind = GP_STEPS_PHASE;
            else if (ident(t))
                r->kind = GP_STEPS_OTHER;
            else
                return -1;
            continue;
        }
        const char *eq = memchr(t.p, '=', t.n);
        if (!eq || eq == t.p)
            return -1;
        struct tok k = {t.p, (size_t)(eq - t.p)}, v = {eq + 1, t.n - k.n - 1};
        if (!ident(k) || !apply(r, k, v))
            return -1;
    }
    if (first)
        return 0;
    if ((r->kind == GP_STEPS_STEP || r->kind == GP_STEPS_PHASE) && !(r->has & GP_SK_DUR))
        return -1;
    if (r->kind == GP_STEPS_PHASE && !(r->has & GP_SK_NAME))
        return -1;
    /* A step's wait is part of its seconds (docs/jobs.md): a client that
     * timed only the compute would otherwise make the data-wait share
     * exceed the whole step time. */
    if (r->kind == GP_STEPS_STEP && (r->has & GP_SK_WAIT) && r->wait > r->dur)
        r->wait = r->dur;
    if (r->kind == GP_STEPS_MEM && !(r->has & GP_SK_DEV))
        return -1;
    if (r->kind == GP_STEPS_MODEL &&
        (!(r->has & GP_SK_PRECISION) || !(r->has & (GP_SK_FLOPS_TOKEN | GP_SK_FLOPS_SAMPLE | GP_SK_PARAMS))))
        return -1;
    return 1;
}

double gp_steps_flops_per_token(const struct gp_steps_record *r)
{
    if (r->has & GP_SK_FLOPS_TOKEN)
        return r->flops_token;
    if (r->has & GP_SK_PARAMS)
        return (r->infer ? 2.0 : 6.0) * r->params;
    return NAN;
}

enum gp_steps_phase gp_steps_phase_of(const char *name)
{
    static const char *const ckpt[] = {"checkpoint", "checkpoint_save", "checkpoint_load"};
    static const char *const eval[] = {"eval", "evaluation", "validation"};
    for (unsigned i = 0; i < 3; i++) {
        if (!strcmp(name, ckpt[i]))
            return GP_STEPS_PHASE_CHECKPOINT;
        if (!strcmp(name, eval[i]))
            return GP_STEPS_PHASE_EVALUATION;
    }
    return GP_STEPS_PHASE_OTHER;
}

const char *gp_steps_phase_name(enum gp_steps_phase p)
{
    static const char *const names[] = {"checkpoint", "evaluation", "other"};
    return (unsigned)p < 3 ? names[p] : "other";
}

unsigned gp_steps_parse(const char *data, size_t len, gp_steps_record_fn fn, void *ctx,
                        unsigned *malformed)
{
    if (len > GP_STEPS_DGRAM_MAX) {
        ++*malformed;
        return 0;
    }
    unsigned good = 0;
    struct gp_steps_record r;
    size_t i = 0;
    while (i < len) {
        const char *nl = memchr(data + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - data) : len;
        int rc = parse_line(data + i, end - i, &r);
        if (rc > 0) {
            good++;
            fn(ctx, &r);
        } else if (rc < 0) {
            ++*malformed;
        }
        i = end + 1;
    }
    return good;
}
