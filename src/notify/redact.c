/*
 * redact.c - gp_notify_redact (notify.h): the one place that knows what
 * a secret is. Secrets are each receiver's url, password and
 * bearer_token; each is looked for as written and URL-encoded (every
 * byte but RFC 3986's unreserved ones as %XX, upper- and lower-case
 * hex, as curl and servers echo them). At each position the longest
 * matching secret wins, so a URL is replaced whole rather than leaving
 * a tail behind a shorter token that it contains.
 */
#include "notify/notify.h"

#include <ctype.h>
#include <string.h>

#define REDACTED "[redacted]"

/* The URL-encoded form of s into out (size len); 0 when it does not fit
 * or equals s (nothing to encode). */
static size_t url_encode(const char *s, char *out, size_t len, int upper)
{
    const char *hex = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    size_t n = 0;
    int changed = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~') {
            if (n + 1 >= len)
                return 0;
            out[n++] = (char)*p;
        } else {
            if (n + 3 >= len)
                return 0;
            out[n++] = '%';
            out[n++] = hex[*p >> 4];
            out[n++] = hex[*p & 15];
            changed = 1;
        }
    }
    out[n] = '\0';
    return changed ? n : 0;
}

/* Length of the longest secret (or encoded secret) at s, 0 when none. */
static size_t secret_at(const struct gp_receiver *recv, size_t nrecv, const char *s)
{
    size_t best = 0;
    char enc[3 * GP_NOTIFY_URL_LEN + 1];
    for (size_t i = 0; i < nrecv; i++) {
        const char *sec[3] = {recv[i].url, recv[i].password, recv[i].bearer_token};
        for (int j = 0; j < 3; j++) {
            size_t l = strlen(sec[j]);
            if (!l || l >= GP_NOTIFY_URL_LEN + 1 || (*s != sec[j][0] && *s != '%'))
                continue; /* both forms start with the first byte or a % */
            if (l > best && !strncmp(s, sec[j], l))
                best = l;
            for (int upper = 0; upper < 2; upper++) {
                size_t el = url_encode(sec[j], enc, sizeof enc, upper);
                if (el > best && !strncmp(s, enc, el))
                    best = el;
            }
        }
    }
    return best;
}

void gp_notify_redact(const struct gp_receiver *recv, size_t nrecv, const char *s, char *out,
                      size_t outlen)
{
    if (!outlen)
        return;
    size_t n = 0;
    while (*s && n + 1 < outlen) {
        size_t l = secret_at(recv, nrecv, s);
        if (l) {
            size_t rl = strlen(REDACTED);
            if (n + rl >= outlen)
                break; /* never a cut marker that could be read as text */
            memcpy(out + n, REDACTED, rl);
            n += rl;
            s += l;
            continue;
        }
        out[n++] = *s++;
    }
    out[n] = '\0';
}
