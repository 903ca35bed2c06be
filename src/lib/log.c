/* log.c - logfmt lines on stderr, one write() per line so threads do not interleave. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum gp_log_level gp_log_min = GP_LOG_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error", "off"};

int gp_log_parse_level(const char *s, enum gp_log_level *out)
{
    for (int i = 0; i <= GP_LOG_OFF; i++)
        if (strcmp(s, level_names[i]) == 0) {
            *out = (enum gp_log_level)i;
            return 0;
        }
    return -3; /* GP_EPARSE; log.h stays free of err.h */
}

const char *gp_log_quote(char *out, size_t outlen, const char *s)
{
    size_t o = 0;
    if (outlen < 3) {
        if (outlen)
            out[0] = '\0';
        return out;
    }
    out[o++] = '"';
    for (; *s && o + 3 < outlen; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c == '\n') {
            out[o++] = '\\';
            out[o++] = 'n';
        } else if (c < 0x20) {
            out[o++] = ' ';
        } else {
            out[o++] = (char)c;
        }
    }
    out[o++] = '"';
    out[o] = '\0';
    return out;
}

void gp_log_(enum gp_log_level lvl, const char *module, const char *msg, const char *kvfmt, ...)
{
    char line[2048], q[768], ts[40];
    struct timespec now;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    int n = snprintf(line, sizeof line, "ts=%s.%03ldZ level=%s module=%s msg=%s", ts,
                     now.tv_nsec / 1000000L, level_names[lvl], module,
                     gp_log_quote(q, sizeof q, msg));
    if (n < 0)
        return;
    if (kvfmt && *kvfmt && (size_t)n + 1 < sizeof line) {
        va_list ap;
        va_start(ap, kvfmt);
        int m = vsnprintf(line + n + 1, sizeof line - (size_t)n - 1, kvfmt, ap);
        va_end(ap);
        if (m > 0) {
            line[n] = ' ';
            n += m + 1;
        }
    }
    if ((size_t)n >= sizeof line - 1)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
}
