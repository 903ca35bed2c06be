/*
 * Fuzz target: the step protocol parser (src/sources/steps_proto.c).
 *
 * The input is one datagram, copied into a buffer of exactly its size so
 * ASan catches any read past len. Every delivered record must be sane:
 * a known kind, the required keys present, numbers finite and in range,
 * a NUL-terminated printable job name; and good + malformed can never
 * exceed the lines of the input.
 */
#include "sources/steps_proto.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(void *ctx, const struct gp_steps_record *r)
{
    (void)ctx;
    if (r->kind > GP_STEPS_MODEL)
        abort();
    if ((r->has & GP_SK_SEQ) && r->seq == 0)
        abort();
    if (r->kind == GP_STEPS_STEP) {
        if (!(r->has & GP_SK_DUR) || !isfinite(r->dur) || r->dur < 0)
            abort();
        if ((r->has & GP_SK_SAMPLES) && !(isfinite(r->samples) && r->samples >= 0))
            abort();
        if ((r->has & GP_SK_TOKENS) && !(isfinite(r->tokens) && r->tokens >= 0))
            abort();
        if ((r->has & GP_SK_WAIT) && !(isfinite(r->wait) && r->wait >= 0))
            abort();
        if ((r->has & GP_SK_LOSS) && !isfinite(r->loss))
            abort();
    }
    if (r->kind == GP_STEPS_MEM && (!(r->has & GP_SK_DEV) || r->dev < 0))
        abort();
    if (r->kind == GP_STEPS_MODEL) { /* a precision and a positive, finite figure */
        if (!(r->has & GP_SK_PRECISION) || (unsigned)r->precision >= GP_PREC__COUNT ||
            !gp_precision_name(r->precision))
            abort();
        double fpt = gp_steps_flops_per_token(r);
        if (!(r->has & (GP_SK_FLOPS_TOKEN | GP_SK_FLOPS_SAMPLE | GP_SK_PARAMS)) ||
            ((r->has & GP_SK_FLOPS_SAMPLE) && !(isfinite(r->flops_sample) && r->flops_sample > 0)) ||
            (!isnan(fpt) && !(isfinite(fpt) && fpt > 0)))
            abort();
    }
    if (r->kind == GP_STEPS_PHASE) { /* a named phase of a finite length */
        size_t n = strnlen(r->name, GP_STEPS_PHASE_LEN);
        if (!(r->has & GP_SK_NAME) || !(r->has & GP_SK_DUR) || n == 0 || n >= GP_STEPS_PHASE_LEN ||
            !isfinite(r->dur) || r->dur < 0)
            abort();
        for (size_t i = 0; i < n; i++)
            if (!((r->name[i] >= 'a' && r->name[i] <= 'z') || r->name[i] == '_' ||
                  (i > 0 && r->name[i] >= '0' && r->name[i] <= '9')))
                abort();
    }
    if (r->has & GP_SK_JOB) {
        size_t n = strnlen(r->job, GP_JOB_LEN);
        if (n == 0 || n >= GP_JOB_LEN)
            abort();
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)r->job[i] <= 0x20 || (unsigned char)r->job[i] >= 0x7f)
                abort();
    }
    if (((r->has & GP_SK_RANK) && r->rank < 0) || ((r->has & GP_SK_WORLD) && r->world < 1))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    unsigned bad = 0;
    unsigned good = gp_steps_parse(buf, size, check, NULL, &bad);
    size_t lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += buf[i] == '\n';
    if (size > GP_STEPS_DGRAM_MAX ? (good != 0 || bad != 1) : good + bad > lines)
        abort();
    free(buf);
    return 0;
}
