/*
 * push_http.h - one remote-write POST over HTTP(S), through net/httpc.
 *
 * The network half of a push target: it knows nothing of queues or
 * retries. A handle keeps its connection alive between requests and
 * sends the remote-write 1.0 headers (Content-Encoding: snappy,
 * Content-Type: application/x-protobuf, X-Prometheus-Remote-Write-Version:
 * 0.1.0, User-Agent: gpulse/VERSION) plus an optional bearer token.
 * Redirects are not followed (a redirect answers like a 4xx: Prometheus's
 * sender does the same).
 */
#ifndef GP_PUSH_HTTP_H
#define GP_PUSH_HTTP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct gp_push_http;

struct gp_push_result {
    int status;             /* HTTP status; 0 when no response came (connect error, timeout) */
    int64_t retry_after_ms; /* the Retry-After header, -1 when absent */
    char msg[256];          /* the transport error, or the start of the response body */
};

/*
 * Checks url (http:// or https:// with a host) and prepares a handle.
 * bearer may be NULL or ""; headers[0..nheaders) are "Name: value" lines
 * added to every request. timeout_ms bounds a whole request. Returns
 * GP_OK with *out set (caller closes), GP_ECONFIG for a bad URL or
 * header, or GP_ENOMEM / GP_EINTERNAL with detail in err.
 */
int gp_push_http_open(struct gp_push_http **out, const char *url, const char *bearer,
                      const char *const *headers, size_t nheaders, int64_t timeout_ms, char *err,
                      size_t errlen);

/*
 * POSTs one body and waits for the answer (at most the timeout; sooner
 * when *cancel becomes nonzero, which answers status 0). GP_OK when a
 * status or a connection error was obtained (see res), GP_ENOMEM
 * otherwise.
 */
int gp_push_http_post(struct gp_push_http *h, const void *body, size_t len, const atomic_int *cancel,
                      struct gp_push_result *res);

void gp_push_http_close(struct gp_push_http *h); /* accepts NULL */

#endif
