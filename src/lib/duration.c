/* duration.c - see duration.h. */
#include "duration.h"

#include "err.h"

#include <stdio.h>
#include <string.h>

#define MAX_MS ((int64_t)10 * 365 * 24 * 3600 * 1000) /* ten years */

int gp_parse_duration_ms(const char *s, int64_t *out_ms, char *err, size_t errlen)
{
    static const struct {
        const char *unit;
        int64_t ms;
    } units[] = {{"ms", 1},          {"y", 31536000000}, {"w", 604800000}, {"d", 86400000},
                 {"h", 3600000},     {"m", 60000},       {"s", 1000}};
    if (!s || !*s)
        return gp_seterr(err, errlen, GP_EPARSE, "empty duration");
    if (strcmp(s, "0") == 0) {
        *out_ms = 0;
        return GP_OK;
    }
    const char *p = s;
    int64_t total = 0, last_unit = INT64_MAX;
    while (*p) {
        if (*p < '0' || *p > '9')
            return gp_seterr(err, errlen, GP_EPARSE, "invalid duration '%s': expected a number", s);
        int64_t n = 0;
        while (*p >= '0' && *p <= '9') {
            if (n > MAX_MS / 10)
                return gp_seterr(err, errlen, GP_ERANGE, "duration '%s' is too long", s);
            n = n * 10 + (*p++ - '0');
        }
        size_t k;
        for (k = 0; k < sizeof units / sizeof units[0]; k++) {
            size_t ul = strlen(units[k].unit);
            /* "m" must not swallow the "m" of "ms". */
            if (strncmp(p, units[k].unit, ul) == 0 && !(ul == 1 && p[0] == 'm' && p[1] == 's'))
                break;
        }
        if (k == sizeof units / sizeof units[0])
            return gp_seterr(err, errlen, GP_EPARSE,
                             "invalid duration '%s': unit must be one of ms, s, m, h, d, w, y", s);
        if (units[k].ms >= last_unit)
            return gp_seterr(err, errlen, GP_EPARSE,
                             "invalid duration '%s': units must go from largest to smallest", s);
        last_unit = units[k].ms;
        p += strlen(units[k].unit);
        if (n > (MAX_MS - total) / units[k].ms)
            return gp_seterr(err, errlen, GP_ERANGE, "duration '%s' is too long", s);
        total += n * units[k].ms;
    }
    *out_ms = total;
    return GP_OK;
}

void gp_format_duration(int64_t ms, char *out, size_t outlen)
{
    static const struct {
        const char *unit;
        int64_t ms;
    } units[] = {{"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};
    size_t o = 0;
    if (ms <= 0) {
        snprintf(out, outlen, "0s");
        return;
    }
    out[0] = '\0';
    for (size_t k = 0; k < sizeof units / sizeof units[0] && ms > 0; k++) {
        if (ms >= units[k].ms) {
            int n = snprintf(out + o, o < outlen ? outlen - o : 0, "%lld%s",
                             (long long)(ms / units[k].ms), units[k].unit);
            if (n > 0)
                o += (size_t)n;
            ms %= units[k].ms;
        }
    }
}
