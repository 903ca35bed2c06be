/* Fuzz target: a request's framing headers (gp_http_check_framing,
 * net/http.c). Input: a first line "1.0" or "1.1" (the request's HTTP
 * version; anything else is 1.1), then "Name: value" lines. Checks that
 * the verdict is one of the reasons, with 400 or 501 and a message, and
 * agrees with a count of the headers done here. */
#include "net/http.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    const char *names[16], *values[16];
    size_t n = 0, ncl = 0, nte = 0;
    int http10 = 0;
    char *line = s, *next;
    for (int first = 1; line && n < 16; line = next, first = 0) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (first && (!strcmp(line, "1.0") || !strcmp(line, "1.1"))) {
            http10 = line[2] == '0';
            continue;
        }
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        *colon = '\0';
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        names[n] = line;
        values[n++] = v;
        ncl += !strcasecmp(line, "Content-Length");
        nte += !strcasecmp(line, "Transfer-Encoding");
    }
    int status = 0;
    char msg[200];
    msg[0] = '\0';
    enum gp_http_framing f = gp_http_check_framing(names, values, n, http10, &status, msg, sizeof msg);
    if ((unsigned)f >= GP_HTTP_FRAME__COUNT)
        abort();
    if (f != GP_HTTP_FRAME_OK && ((status != 400 && status != 501) || !msg[0] || strlen(msg) >= sizeof msg))
        abort();
    if ((ncl && nte) != (f == GP_HTTP_FRAME_CL_AND_TE))
        abort();
    if (ncl > 1 && !nte && f != GP_HTTP_FRAME_CL_REPEATED)
        abort();
    if (nte > 1 && !ncl && f != GP_HTTP_FRAME_TE_UNSUPPORTED)
        abort();
    if (!ncl && !nte && f != GP_HTTP_FRAME_OK)
        abort();
    free(s);
    return 0;
}
