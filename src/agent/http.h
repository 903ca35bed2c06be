/*
 * http.h - a small HTTP server over libmicrohttpd.
 *
 * The IO layer only: it accepts connections, calls one handler per
 * request with the method, path and query, and sends what the handler
 * put in the response. Routing and rendering live with the role that
 * owns the routes (agent.c), so this file knows nothing of metrics.
 * Responses are built in memory and copied to libmicrohttpd, so a slow
 * client holds no lock of ours.
 */
#ifndef GP_HTTP_H
#define GP_HTTP_H

#include "lib/buf.h"

#include <stddef.h>

struct gp_http;
struct gp_http_request;

struct gp_http_response {
    int status;               /* 200 by default */
    const char *content_type; /* static string */
    const char *allow;        /* for 405: the allowed methods */
    struct gp_buf body;
};

typedef void (*gp_http_handler)(void *ctx, const struct gp_http_request *req,
                                struct gp_http_response *resp);

const char *gp_http_method(const struct gp_http_request *req);
const char *gp_http_path(const struct gp_http_request *req);
/* Value of a query argument, or NULL. */
const char *gp_http_query(const struct gp_http_request *req, const char *key);

/*
 * Listens on "ADDR:PORT" ("[V6]:PORT"; port 0 picks a free one) and
 * serves with a small thread pool. Returns GP_OK with *out set, or an
 * error with detail (e.g. the address is in use).
 */
int gp_http_start(struct gp_http **out, const char *listen, gp_http_handler h, void *ctx, char *err,
                  size_t errlen);
unsigned gp_http_port(const struct gp_http *h);
void gp_http_stop(struct gp_http *h); /* accepts NULL */

/* Fills resp with a JSON error {"error": msg}. */
void gp_http_error(struct gp_http_response *resp, int status, const char *msg);

#endif
