/* Fuzz target: duration strings from flags and YAML. */
#include "lib/duration.h"

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
    int64_t ms;
    char err[128];
    if (gp_parse_duration_ms(s, &ms, err, sizeof err) == 0) {
        char out[64];
        gp_format_duration(ms, out, sizeof out);
        int64_t back;
        if (gp_parse_duration_ms(out, &back, err, sizeof err) != 0 || back != ms)
            abort(); /* formatting must read back */
    }
    free(s);
    return 0;
}
