/* Fuzz target: the request headers the static files negotiate on
 * (Accept-Encoding, If-None-Match; net/http.c). */
#include "net/http.h"

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
    int gz = gp_http_accepts(s, "gzip"), star = gp_http_accepts(s, "*");
    if ((gz != 0 && gz != 1) || (star != 0 && star != 1))
        abort();
    int m = gp_http_etag_match(s, "\"0123456789abcdef\"");
    if (m != 0 && m != 1)
        abort();
    /* a list holding the tag always matches */
    char *l = malloc(size + 24);
    if (l) {
        memcpy(l, "\"0123456789abcdef\",", 19);
        memcpy(l + 19, s, size + 1);
        if (!gp_http_etag_match(l, "\"0123456789abcdef\""))
            abort();
        free(l);
    }
    free(s);
    return 0;
}
