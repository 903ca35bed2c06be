/* token.c - see token.h. */
#include "lib/token.h"

#include "lib/err.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int gp_token_load(const char *inline_token, const char *file, const char *what, char *out,
                  size_t outlen, char *err, size_t errlen)
{
    out[0] = '\0';
    if (inline_token && inline_token[0]) {
        if (strlen(inline_token) >= outlen)
            return gp_seterr(err, errlen, GP_ECONFIG, "%s is too long (at most %zu bytes)", what,
                             outlen - 1);
        memcpy(out, inline_token, strlen(inline_token) + 1);
    } else if (file && file[0]) {
        FILE *f = fopen(file, "r");
        if (!f)
            return gp_seterr(err, errlen, GP_ECONFIG, "cannot read %s_file '%s': %s", what, file,
                             strerror(errno));
        size_t n = fread(out, 1, outlen - 1, f);
        int more = fgetc(f) != EOF;
        fclose(f);
        out[n] = '\0';
        char *nl = strchr(out, '\n');
        if (nl) {
            *nl = '\0';
            more = 0; /* a second line is not part of the token */
        }
        if (more)
            return gp_seterr(err, errlen, GP_ECONFIG, "%s_file '%s' is too long (at most %zu bytes)",
                             what, file, outlen - 1);
        n = strlen(out);
        while (n && (out[n - 1] == ' ' || out[n - 1] == '\t' || out[n - 1] == '\r'))
            out[--n] = '\0';
        if (!n)
            return gp_seterr(err, errlen, GP_ECONFIG, "%s_file '%s' is empty", what, file);
    } else {
        return GP_OK;
    }
    for (const char *p = out; *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f) {
            out[0] = '\0';
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "%s must be visible ASCII characters without spaces", what);
        }
    return GP_OK;
}
