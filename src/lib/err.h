/*
 * err.h - the one error enum of gpulse.
 *
 * Every fallible function returns an `int`: GP_OK (0) or a negative
 * GP_E* code from the table below. Details that a code cannot carry go
 * into a caller-supplied buffer (`char *err, size_t errlen`), the way
 * curl pairs CURLcode with CURLOPT_ERRORBUFFER. Messages are lowercase
 * and name what failed first.
 */
#ifndef GP_ERR_H
#define GP_ERR_H

#include <stddef.h>

#define GP_ERRNO_MAP(X)                                   \
    X(NOMEM, 1, "out of memory")                          \
    X(IO, 2, "input/output error")                        \
    X(PARSE, 3, "malformed input")                        \
    X(NODEV, 4, "no such device")                         \
    X(USAGE, 5, "invalid usage")                          \
    X(CONFIG, 6, "invalid configuration")                 \
    X(TOOBIG, 7, "input too large")                       \
    X(UNSUPPORTED, 8, "not supported")                    \
    X(LOST, 9, "device lost")                             \
    X(NOTFOUND, 10, "not found")                          \
    X(RANGE, 11, "value out of range")                    \
    X(NET, 12, "network error")                           \
    X(INTERNAL, 13, "internal error")

enum gp_err {
    GP_OK = 0,
#define GP_ERR_ENUM_(name, num, msg) GP_E##name = -(num),
    GP_ERRNO_MAP(GP_ERR_ENUM_)
#undef GP_ERR_ENUM_
};

/* Static text for a code; never NULL. */
const char *gp_strerror(int err);

/* Formats into a caller's detail buffer (err may be NULL); returns code. */
int gp_seterr(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
