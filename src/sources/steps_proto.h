/*
 * steps_proto.h - the step protocol (docs/jobs.md "The step protocol"):
 * one datagram of text records, parsed without allocation.
 *
 * A datagram (at most GP_STEPS_DGRAM_MAX bytes) holds records, one per
 * line: `KIND key=value ...`. The parser is pure: bytes in, records out
 * through a callback, nothing kept between calls, so the fuzzer and the
 * unit tests drive it directly and the steps source (steps.c) and
 * `gpulse run` share it.
 *
 * Strictness, record by record: a record that breaks a rule (a value that
 * is not a number of its kind, a negative or non-finite number where one
 * cannot be, an integer that overflows, a duplicated key, a missing
 * required key, a token without '=', a NUL or control byte) is dropped and
 * counted; the good records of the same datagram are kept. Unknown keys
 * are skipped (newer clients). An unknown kind whose name is well formed
 * is delivered as GP_STEPS_OTHER with only seq/lost, so a newer client's
 * records do not look like sequence gaps; it is not counted as malformed.
 */
#ifndef GP_STEPS_PROTO_H
#define GP_STEPS_PROTO_H

#include "frame.h"
#include "lib/gpumodels.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GP_STEPS_DGRAM_MAX 4096

enum gp_steps_kind {
    GP_STEPS_STEP,
    GP_STEPS_MEM,
    GP_STEPS_META,
    GP_STEPS_END,
    GP_STEPS_PHASE,
    GP_STEPS_OTHER,
    GP_STEPS_MODEL
};

#define GP_STEPS_PHASE_LEN 33 /* a phase name: 1..32 of [a-z0-9_], a letter or _ first */

/* Which optional keys a record carried (bits of gp_steps_record.has). */
enum gp_steps_key {
    GP_SK_SEQ = 1u << 0,
    GP_SK_LOST = 1u << 1,
    GP_SK_N = 1u << 2,
    GP_SK_DUR = 1u << 3,
    GP_SK_WAIT = 1u << 4,
    GP_SK_SAMPLES = 1u << 5,
    GP_SK_TOKENS = 1u << 6,
    GP_SK_LOSS = 1u << 7,
    GP_SK_T = 1u << 8,
    GP_SK_DEV = 1u << 9,
    GP_SK_ALLOC = 1u << 10,
    GP_SK_RESERVED = 1u << 11,
    GP_SK_PEAK = 1u << 12,
    GP_SK_TARGET = 1u << 13,
    GP_SK_JOB = 1u << 14,
    GP_SK_RANK = 1u << 15,
    GP_SK_WORLD = 1u << 16,
    GP_SK_STATUS = 1u << 17,
    GP_SK_FLOPS_TOKEN = 1u << 24, /* model: high bits, clear of other kinds' keys */
    GP_SK_FLOPS_SAMPLE = 1u << 25,
    GP_SK_PARAMS = 1u << 26,
    GP_SK_MODE = 1u << 27,
    GP_SK_PRECISION = 1u << 28,
    GP_SK_NAME = 1u << 18,
};

/*
 * One record. Keys by kind (docs/jobs.md):
 *   every kind: seq (>= 1), lost (>= 0)
 *   step: dur (required, seconds >= 0), n, wait (read as at most dur:
 *         a part of the step), samples, tokens (>= 0),
 *         loss (any finite number), t (epoch seconds >= 0)
 *   mem:  dev (required, 0..INT32_MAX), alloc, reserved, peak (bytes)
 *   meta: target (steps), job (1..GP_JOB_LEN-1 printable bytes), rank
 *         (>= 0), world (>= 1)
 *   end:  status (0..INT32_MAX), t, and job/rank/world as meta
 *   model: what the model computes, once per job (MFU, docs/jobs.md):
 *         flops_token, flops_sample (model FLOPs per token / sample,
 *         > 0), params (parameters, > 0), mode (train | infer),
 *         precision (required: fp32 tf32 fp16 bf16 fp8); at least one of
 *         flops_token, flops_sample, params
 *   phase: name (required, GP_STEPS_PHASE_LEN), dur (required, seconds
 *         >= 0: the phase's length), t (its end, epoch seconds)
 */
struct gp_steps_record {
    enum gp_steps_kind kind;
    uint32_t has;             /* GP_SK_* bits */
    uint64_t seq, lost;
    uint64_t n;
    double dur, wait, samples, tokens, loss, t;
    int32_t dev;
    uint64_t alloc, reserved, peak;
    uint64_t target;
    char job[GP_JOB_LEN];
    int32_t rank, world;      /* -1 when absent */
    int32_t status;
    double flops_token, flops_sample, params; /* model */
    bool infer;                               /* model: mode=infer */
    enum gp_precision precision;              /* model */
    char name[GP_STEPS_PHASE_LEN]; /* a phase's */
};

/*
 * A model record's FLOPs per token: flops_token when given, else from the
 * parameter count N: 6·N for training (forward 2·N, backward 4·N), 2·N for
 * inference, the attention term (which grows with the context) left out.
 * NaN when neither was given.
 */
double gp_steps_flops_per_token(const struct gp_steps_record *r);

/* What a phase name counts as (docs/jobs.md "The step protocol"). */
enum gp_steps_phase { GP_STEPS_PHASE_CHECKPOINT, GP_STEPS_PHASE_EVALUATION, GP_STEPS_PHASE_OTHER };

/* The phase a name counts as: checkpoint, checkpoint_save, checkpoint_load;
 * eval, evaluation, validation; else other. */
enum gp_steps_phase gp_steps_phase_of(const char *name);

/* "checkpoint", "evaluation", "other": the phase label of series. */
const char *gp_steps_phase_name(enum gp_steps_phase p);

/* Called once per good record; r is valid only during the call. */
typedef void (*gp_steps_record_fn)(void *ctx, const struct gp_steps_record *r);

/*
 * Parses one datagram of len bytes (data need not be NUL-terminated and
 * is only read). Calls fn for every good record in order; adds the number
 * of malformed records to *malformed (a datagram longer than
 * GP_STEPS_DGRAM_MAX counts as one malformed record and nothing of it is
 * delivered). Returns the number of good records delivered.
 */
unsigned gp_steps_parse(const char *data, size_t len, gp_steps_record_fn fn, void *ctx,
                        unsigned *malformed);

#endif
