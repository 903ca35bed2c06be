/*
 * push_http.h - one remote-write POST over HTTP(S), through libcurl.
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
    char msg[256];          /* curl's error, or the start of the response body */
};

/*
 * Checks url (http:// or https:// with a host) and prepares a handle.
 * bearer may be NULL or "". timeout_ms bounds a whole request. Returns
 * GP_OK with *out set (caller closes), GP_ECONFIG for a bad URL, or
 * GP_ENOMEM / GP_EINTERNAL with detail in err.
 */
int gp_push_http_open(struct gp_push_http **out, const char *url, const char *bearer,
                      int64_t timeout_ms, char *err, size_t errlen);

/*
 * POSTs one body and waits for the answer (at most the timeout; sooner
 * when *cancel becomes nonzero, which answers status 0). GP_OK when a
 * status or a connection error was obtained (see res), GP_ENOMEM
 * otherwise.
 */
/* Adds "Name: value" headers to every request. GP_OK or GP_ENOMEM. */
int gp_push_http_add_headers(struct gp_push_http *h, const char *const *hdrs, size_t n);

int gp_push_http_post(struct gp_push_http *h, const void *body, size_t len, const atomic_int *cancel,
                      struct gp_push_result *res);

void gp_push_http_close(struct gp_push_http *h); /* accepts NULL */

/*
 * The target label for a URL: scheme://host[:port]/path without user
 * info, query or fragment (credentials never reach /metrics or logs).
 * Writes "invalid-url" when url does not parse.
 */
void gp_push_url_label(const char *url, char *out, size_t len);

/* libcurl's process-wide init and cleanup, counted (pairs may nest). */
int gp_push_http_global_init(void);
void gp_push_http_global_cleanup(void);

#endif
