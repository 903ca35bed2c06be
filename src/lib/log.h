/*
 * log.h - logfmt logging to stderr.
 *
 * One line per event: `ts=... level=info module=nvml msg="..." k=v ...`.
 * The level is checked before anything is formatted, so disabled debug
 * lines cost one comparison. `kv` is appended verbatim: callers write
 * logfmt pairs themselves and quote values with gp_log_quote() when they
 * may contain blanks or quotes.
 */
#ifndef GP_LOG_H
#define GP_LOG_H

#include <stddef.h>

enum gp_log_level { GP_LOG_DEBUG, GP_LOG_INFO, GP_LOG_WARN, GP_LOG_ERROR, GP_LOG_OFF };

extern enum gp_log_level gp_log_min;

/* Parses "debug", "info", "warn", "error", "off"; returns GP_OK or GP_EPARSE. */
int gp_log_parse_level(const char *s, enum gp_log_level *out);

void gp_log_(enum gp_log_level lvl, const char *module, const char *msg, const char *kvfmt, ...)
    __attribute__((format(printf, 4, 5)));

#define gp_log(lvl, module, msg, ...)                      \
    do {                                                   \
        if ((lvl) >= gp_log_min)                           \
            gp_log_((lvl), (module), (msg), __VA_ARGS__);  \
    } while (0)

/* Writes s as a logfmt-quoted value into out (always NUL-terminated). */
const char *gp_log_quote(char *out, size_t outlen, const char *s);

#endif
