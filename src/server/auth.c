/*
 * auth.c - bearer tokens and the loopback rule; see auth.h.
 */
#include "auth.h"

#include "lib/cfg.h"
#include "lib/err.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

int gp_auth_bearer_ok(const char *h, const char *token)
{
    size_t tl = strlen(token);
    if (!h || !tl || strncasecmp(h, "Bearer ", 7))
        return 0;
    const char *p = h + 7;
    while (*p == ' ')
        p++;
    size_t n = strlen(p);
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    /* Every presented byte is compared: time depends on the client's
     * length only, not on the position of the first difference. */
    volatile unsigned char d = n != tl;
    for (size_t i = 0; i < n; i++)
        d |= (unsigned char)(p[i] ^ token[i % tl]);
    return d == 0;
}

int gp_auth_is_loopback(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, host, &a6) == 1) {
        static const uint8_t lo[16] = {[15] = 1};
        static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};
        if (!memcmp(a6.s6_addr, lo, 16))
            return 1;
        return !memcmp(a6.s6_addr, mapped, 12) && a6.s6_addr[12] == 127;
    }
    return 0;
}

int gp_auth_bind_address(const char *listen, int have_write_token, int have_read_token, char *out,
                         size_t outlen, int *fell_back, char *why, size_t whylen)
{
    char host[128];
    unsigned port;
    int rc = gp_parse_listen(listen, host, sizeof host, &port, why, whylen);
    if (rc)
        return rc;
    *fell_back = 0;
    if (gp_auth_is_loopback(host) || (have_write_token && have_read_token)) {
        snprintf(out, outlen, "%s", listen);
        if (why && whylen)
            why[0] = '\0';
        return GP_OK;
    }
    *fell_back = 1;
    snprintf(out, outlen, "127.0.0.1:%u", port);
    snprintf(why, whylen, "%s%s%s not set", have_write_token ? "" : "write_token",
             !have_write_token && !have_read_token ? " and " : "", have_read_token ? "" : "read_token");
    return GP_OK;
}
