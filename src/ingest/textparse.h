/*
 * textparse.h - a parser of the Prometheus text exposition format 0.0.4.
 *
 * A general, strict parser of outside data (fuzzed; the tests that
 * compare /metrics with what is pushed or stored read with it), following Prometheus's own text parser (expfmt):
 *
 *   # HELP <name> <docstring>        docstring escapes \\ and \n only
 *   # TYPE <name> <counter|gauge|histogram|summary|untyped>
 *   # anything else                  a comment
 *   name[{label="value",...}] value [timestamp_ms]
 *
 * Blanks are spaces and tabs; empty lines are skipped; every line, the
 * last included, ends with '\n'. Names follow [a-zA-Z_:][a-zA-Z0-9_:]*
 * (metrics) and [a-zA-Z_][a-zA-Z0-9_]* (labels); label values are UTF-8
 * with the escapes \\, \" and \n only; a trailing comma inside braces is
 * allowed. Values use Go's ParseFloat syntax plus NaN, +Inf, -Inf (case-
 * insensitive, as Go accepts them); NaN parses to Prometheus's normal NaN
 * bits 0x7ff8000000000001. Timestamps are int64 milliseconds.
 *
 * Rejected (with "line N: ..." in err): bad names, a label named
 * __name__, duplicate label names, bad escapes, invalid UTF-8, unclosed
 * quotes or braces, values that are not floats (or overflow), timestamps
 * that are not int64, unknown TYPE words, a second HELP or TYPE for the
 * same family, a TYPE after the family's samples, more than
 * GP_RW_MAX_LABELS labels or GP_RW_MAX_LABEL_LEN bytes in a name or value,
 * and more than max_series samples. Not checked (as promtool does not):
 * a series repeated within one exposition, and histogram bucket order.
 */
#ifndef GP_INGEST_TEXTPARSE_H
#define GP_INGEST_TEXTPARSE_H

#include "ingest/remote_write.h"
#include "lib/buf.h"

#include <stddef.h>
#include <stdint.h>

/* Prometheus's NaN for a value written "NaN" (value.NormalNaN). */
#define GP_TEXT_NORMAL_NAN_BITS UINT64_C(0x7ff8000000000001)

/*
 * Parser state, reused across calls so a parser kept by its owner stops
 * allocating once it has seen its largest input. Zero-initialise; free
 * with gp_text_parser_free. After a successful gp_text_parse, `req` holds
 * one series per sample line, in input order, each with its labels sorted
 * by name in byte order (`__name__` included) and exactly one sample.
 * Label strings point into the parsed text (or into the parser, for
 * values that had escapes): valid until the text is freed or the next
 * parse, whichever is first. req.arena is NULL: never pass req to
 * gp_rw_decoded_free.
 */
struct gp_text_parser {
    struct gp_batch req; /* the result */
    size_t max_series;        /* 0: GP_RW_MAX_SERIES */

    /* internals */
    struct gp_series *series;
    struct gp_sample *samples;
    size_t cap_series;
    struct gp_label *labels;
    size_t cap_labels;
    size_t *label_start; /* per series: index of its first label */
    char *arena;         /* unescaped label values */
    size_t cap_arena;
};

/*
 * Parses text[0..len) into p->req (previous results are discarded).
 * Samples without a timestamp get default_ts_ms. Returns GP_OK,
 * GP_EPARSE (malformed; err names the line), GP_ETOOBIG (a cap) or
 * GP_ENOMEM; on failure p->req is empty.
 */
int gp_text_parse(struct gp_text_parser *p, const char *text, size_t len, int64_t default_ts_ms,
                  char *err, size_t errlen);

/* Frees what the parser holds and zeroes it; accepts NULL. */
void gp_text_parser_free(struct gp_text_parser *p);

#endif
