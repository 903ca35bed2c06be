/* Fuzz target: the body of POST /api/v1/alerts/ID/ack (server/alerts_api.c). */
#include "server/server_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char by[16], comment[32], err[256];
    memset(by, 'x', sizeof by);
    memset(comment, 'x', sizeof comment);
    int ok = gp_srv_parse_ack(data, size, by, sizeof by, comment, sizeof comment, err, sizeof err);
    /* accepted: both fields are NUL-terminated within their room */
    if (ok && (!memchr(by, '\0', sizeof by) || !memchr(comment, '\0', sizeof comment)))
        abort();
    if (!ok && !memchr(err, '\0', sizeof err))
        abort();
    return 0;
}
