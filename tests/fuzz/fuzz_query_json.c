/*
 * Fuzz target: the query API's JSON writers. Any bytes written as a JSON
 * string must give JSON that jansson accepts, and the same bytes back when
 * they were well-formed UTF-8; the first 8 bytes as a double must format
 * to text that reads back as that double, the text snprintf's shortest
 * round trip gives.
 */
#include "lib/buf.h"
#include "lib/json.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_json_str(&b, (const char *)data, size);
    if (b.err)
        abort();
    json_error_t je;
    json_t *j = json_loadb(b.data, b.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!j || !json_is_string(j))
        abort(); /* not valid JSON */
    /* jansson validates UTF-8 too: feed it the raw input as a probe. */
    json_t *probe = json_stringn((const char *)data, size);
    if (probe && (json_string_length(j) != size || memcmp(json_string_value(j), data, size) != 0))
        abort(); /* valid UTF-8 must come back unchanged */
    json_decref(probe);
    json_decref(j);
    gp_buf_free(&b);

    if (size >= 8) {
        double v;
        memcpy(&v, data, 8);
        char out[32];
        size_t n = gp_json_format_double(v, out);
        if (n == 0 || n >= 32 || strlen(out) != n)
            abort();
        if (isnan(v)) {
            if (strcmp(out, "NaN") != 0)
                abort();
        } else if (isinf(v)) {
            if (strcmp(out, v > 0 ? "+Inf" : "-Inf") != 0)
                abort();
        } else {
            double back = strtod(out, NULL);
            if (memcmp(&back, &v, sizeof v) != 0)
                abort(); /* bit-exact, -0 included */
            /* The same text as the first of %.15g/%.16g/%.17g that reads
             * back, wherever that is fixed notation. */
            char ref[40];
            for (int p = 15; p <= 17; p++) {
                snprintf(ref, sizeof ref, "%.*g", p, v);
                if (strtod(ref, NULL) == v)
                    break;
            }
            if (!strchr(ref, 'e') && strcmp(ref, out) != 0)
                abort();
        }
    }
    return 0;
}
