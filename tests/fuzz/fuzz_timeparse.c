/*
 * Fuzz target: the query API's time, step and aggregation parsers (input
 * straight from HTTP query strings), and the JSON time writer they pair
 * with: a parsed time written as JSON must parse back to itself.
 */
#include "lib/buf.h"
#include "lib/err.h"
#include "lib/json.h"
#include "query/query.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    char err[256];
    int64_t ms;
    if (gp_parse_time_ms(s, &ms, err, sizeof err) == GP_OK) {
        if (ms < INT64_C(-62135596800000) || ms > INT64_C(253402300799999))
            abort(); /* outside years 0001..9999 */
        struct gp_buf b;
        gp_buf_init(&b, 0);
        gp_json_time(&b, ms);
        int64_t back;
        if (b.err || gp_parse_time_ms(b.data, &back, err, sizeof err) != GP_OK || back != ms)
            abort(); /* the JSON form of a time reads back */
        gp_buf_free(&b);
    } else if (!err[0]) {
        abort(); /* every rejection says why */
    }
    err[0] = '\0';
    if (gp_parse_step_ms(s, &ms, err, sizeof err) == GP_OK) {
        if (ms <= 0)
            abort();
    } else if (!err[0]) {
        abort();
    }
    enum gp_agg agg;
    if (gp_parse_agg(s, &agg) == GP_OK && s[0] && agg == GP_AGG_NONE)
        abort();
    free(s);
    return 0;
}
