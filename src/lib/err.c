/* err.c - message table for enum gp_err. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>

const char *gp_strerror(int err)
{
    switch (err) {
    case GP_OK:
        return "success";
#define GP_ERR_CASE_(name, num, msg) \
    case GP_E##name:                 \
        return msg;
        GP_ERRNO_MAP(GP_ERR_CASE_)
#undef GP_ERR_CASE_
    }
    return "unknown error";
}

int gp_seterr(char *err, size_t errlen, int code, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}
