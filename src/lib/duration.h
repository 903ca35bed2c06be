/*
 * duration.h - "100ms", "1s", "5m", "1h30m" as Prometheus writes them.
 */
#ifndef GP_DURATION_H
#define GP_DURATION_H

#include <stddef.h>
#include <stdint.h>

/* Parses a duration into milliseconds. Units ms, s, m, h, d, w (7d) and
 * y (365d), as Prometheus has them (combinable, largest first, e.g.
 * "1m30s"); a bare "0" is allowed. Returns GP_OK, or
 * GP_EPARSE / GP_ERANGE with detail in err. */
int gp_parse_duration_ms(const char *s, int64_t *out_ms, char *err, size_t errlen);

/* Formats ms as the shortest duration string ("1m30s", "100ms"). */
void gp_format_duration(int64_t ms, char *out, size_t outlen);

#endif
