/*
 * json.h - the JSON writer: the pieces every API answer is made of.
 *
 * Answers are written straight into a gp_buf (no document tree): strings
 * escaped for any bytes, times and sample values as Prometheus's HTTP API
 * writes them. A gp_buf latches its first failure, so writers emit a
 * whole answer and check the buffer once.
 */
#ifndef GP_LIB_JSON_H
#define GP_LIB_JSON_H

#include "lib/buf.h"

#include <stddef.h>
#include <stdint.h>

/* A quoted JSON string of len bytes: '"' and '\' escaped, control bytes
 * as \n, \t, \r, \b, \f or \u00XX, and bytes that are not well-formed
 * UTF-8 replaced by U+FFFD (as Go's encoder does), so the answer is always
 * valid JSON whatever a label holds. */
void gp_json_str(struct gp_buf *b, const char *s, size_t len);

/* A time as Unix seconds, a JSON number with the millisecond fraction
 * only when needed: 1700000000, 1700000000.5, -0.25. */
void gp_json_time(struct gp_buf *b, int64_t ms);

/* The same into out (32 bytes); returns the length. */
size_t gp_json_format_time(int64_t ms, char *out);

/* One point of a matrix, [t,"v"], preceded by ',' unless first. */
void gp_json_point(struct gp_buf *b, int first, int64_t ms, double v);

/* A sample value as Prometheus writes it: a JSON string holding the
 * shortest decimal that reads back as the same double, "NaN", "+Inf" or
 * "-Inf". */
void gp_json_value(struct gp_buf *b, double v);

/* The shortest decimal text of a finite or non-finite double (no quotes),
 * for gp_json_value and its tests. out needs 32 bytes; returns the length. */
size_t gp_json_format_double(double v, char *out);

#endif
