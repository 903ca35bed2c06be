/*
 * top_http.h - the one GET `gpulse top` sends, to a server (its alerts) or
 * to an agent (its snapshot).
 *
 * Synchronous (net/httpc) with a 5 s deadline, http and https only, an
 * optional bearer token, and a cap on the answer, so a slow, hostile or
 * mistaken peer costs at most that. The caller has run gp_httpc_global_init.
 */
#ifndef GP_TOP_HTTP_H
#define GP_TOP_HTTP_H

#include "lib/buf.h"

#include <stddef.h>

/*
 * GETs url into body (the caller's buffer, initialised with its cap) and
 * sets *status to the HTTP status. what names the request in messages
 * ("alerts", "snapshot"). GP_OK whatever the status; GP_ENET (no answer)
 * or the buffer's error (the answer is over its cap) with detail.
 */
int gp_top_http_get(const char *what, const char *url, const char *token, struct gp_buf *body,
                    long *status, char *err, size_t errlen);

#endif
