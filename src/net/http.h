/*
 * http.h - a small HTTP server over libmicrohttpd, for the agent and the
 * server roles.
 *
 * The IO layer only: it accepts connections, reads request bodies within
 * limits, calls one handler per request with the method, path, query,
 * headers and body, and sends what the handler put in the response.
 * Routing and rendering live with the role that owns the routes (agent.c,
 * server/), so this file knows nothing of metrics or remote write.
 * Responses are built in memory and copied to libmicrohttpd, so a slow
 * client holds no lock of ours. A streamed answer (Server-Sent Events)
 * sets a stream callback instead of a body: it is called on the
 * connection's thread whenever the client can take more, for as long as
 * the answer lasts (see gp_http_stream_fn).
 *
 * Bodies. A role that takes bodies gives a `prepare` callback, called
 * once the headers are in and before any body byte is read. It returns
 * the most body bytes that route accepts (0: none), or answers at once
 * (401, 405, 429...) by filling the early response; an early answer is
 * sent (with Connection: close) without storing the body. A
 * Content-Length over the limit is answered 413 at once, unread; a
 * chunked body that grows past the limit is cut off (the connection
 * closed) the moment it does, so no more than the limit is ever held.
 * An early answer is still delivered: once it is sent the connection
 * lingers (net/linger.h), reading and discarding what the client still
 * sends, so a client that writes its whole body before reading gets the
 * status instead of a broken pipe.
 *
 * Framing (RFC 9112 section 6). Before prepare runs, a request whose body
 * length two parties could read differently is refused and its
 * connection closed, so nothing after it on that connection is served
 * (request smuggling through a proxy): Content-Length and
 * Transfer-Encoding together, Content-Length given twice (even with the
 * same value: a proxy may have used either), a Content-Length that is
 * not plain digits (400); a Transfer-Encoding other than one `chunked`
 * (501). See gp_http_check_framing.
 *
 * Connections. At most max_connections at once, and at most
 * max_per_address from one client address (an IPv6 client's /64): one
 * client opening slow connections cannot take them all. The last eighth
 * of max_connections is kept for addresses that hold no connection yet
 * (agents hold one each), so clients from a few addresses cannot take it
 * either. A refused connection is closed at once, before any byte is
 * read, and counted (gp_http_stats).
 *
 * Every body must arrive within body_timeout_ms of its headers, and
 * headers within the longer of that and the idle timeout: a client
 * trickling a byte a second is cut off (a watchdog thread shuts its
 * socket), while the idle timeout still closes one that sends nothing. A connection that is cut
 * off gets no response (HTTP has no way to answer mid-body).
 *
 * Threads. The agent's default is a pool of 2 threads on epoll (its
 * handlers only copy a cached text). The server sets threads = 0: one
 * thread per connection, so a handler that waits for a WAL sync or runs
 * a long query never delays another client.
 *
 * TLS when tls_cert_pem and tls_key_pem are given (libmicrohttpd's
 * GnuTLS backend); gp_http_start fails with a clear message when the
 * library was built without TLS.
 */
#ifndef GP_HTTP_H
#define GP_HTTP_H

#include "lib/buf.h"

#include <stddef.h>
#include <stdint.h>

struct gp_http;
struct gp_http_request;

#define GP_HTTP_MAX_HEADERS 8

/*
 * A streamed answer's producer. Called on the connection's thread each
 * time the client can take more: appends what is ready to out and
 * returns 0 (out may stay empty: it is called again), or returns -1 to
 * end the answer. It may wait for something to send, but briefly (a
 * quarter second or so): the server stopping is noticed between calls,
 * and a client gone when a write fails. Streams need threads = 0 (a
 * thread per connection): in a pool, a waiting producer would hold a
 * thread that other connections share.
 */
typedef int (*gp_http_stream_fn)(void *arg, struct gp_buf *out);

struct gp_http_response {
    int status;               /* 200 by default */
    const char *content_type; /* static string */
    const char *allow;        /* for 405: the allowed methods */
    struct gp_buf body;
    /* Extra response headers (Retry-After, WWW-Authenticate...): names are
     * static strings, values copied. Set with gp_http_add_header. */
    struct {
        const char *name;
        char value[128];
    } hdr[GP_HTTP_MAX_HEADERS];
    unsigned nhdr;
    /* Streamed instead of body when set (status 200 only): stream_free
     * (may be NULL) gets stream_arg once the answer is over, whatever
     * ended it; it is also called when the answer cannot start. */
    gp_http_stream_fn stream;
    void (*stream_free)(void *arg);
    void *stream_arg;
};

typedef void (*gp_http_handler)(void *ctx, const struct gp_http_request *req,
                                struct gp_http_response *resp);

/*
 * Called when a request's headers have arrived, before its body is read.
 * Returns the body limit in bytes for this request. To answer at once
 * instead, set early->status (and body/headers); the body is then not
 * read. May attach per-request state with gp_http_set_user.
 */
typedef uint64_t (*gp_http_prepare)(void *ctx, struct gp_http_request *req,
                                    struct gp_http_response *early);

/*
 * Called once per request when it is over: status is what was sent, or 0
 * when the connection was cut off (body over its limit or its deadline,
 * client gone) before a response. For counting and releasing what
 * prepare reserved.
 */
typedef void (*gp_http_complete)(void *ctx, struct gp_http_request *req, int status);

struct gp_http_options {
    const char *listen;       /* "ADDR:PORT", "[V6]:PORT"; port 0 picks a free one */
    gp_http_handler handler;
    void *ctx;
    gp_http_prepare prepare;  /* NULL: GET and HEAD only, no bodies (405 otherwise) */
    gp_http_complete complete;/* may be NULL */
    unsigned threads;         /* 0: a thread per connection; else a pool of this size */
    unsigned max_connections; /* 0: 256 */
    unsigned max_per_address; /* connections from one address; 0: no limit */
    unsigned idle_timeout_s;  /* 0: 30 */
    uint64_t body_timeout_ms; /* 0: 30000 */
    const char *tls_cert_pem; /* PEM text (copied); both or neither */
    const char *tls_key_pem;
};

const char *gp_http_method(const struct gp_http_request *req);
const char *gp_http_path(const struct gp_http_request *req);
/* Value of a query argument (URL-decoded), or NULL. A request whose body
 * is a form (Content-Type application/x-www-form-urlencoded, net/form.h)
 * has its fields read too, before the URL's: as Prometheus (Go's
 * Request.FormValue) reads them, so GET and form POST mean the same. */
const char *gp_http_query(const struct gp_http_request *req, const char *key);
/* Why a form body did not decode ("invalid form body: ..."), or NULL:
 * its fields are then absent, and the handler should answer 400. */
const char *gp_http_form_error(const struct gp_http_request *req);
/* Every value of a repeated query argument (match[]=a&match[]=b), in
 * order (the form body's, then the URL's): up to max into vals; returns
 * how many there are in all. */
size_t gp_http_query_all(const struct gp_http_request *req, const char *key, const char **vals,
                         size_t max);
/* Value of a request header (name case-insensitive), or NULL. */
const char *gp_http_header(const struct gp_http_request *req, const char *name);
/* The request body (NULL and 0 without one); owned by the request. */
const uint8_t *gp_http_body(const struct gp_http_request *req, size_t *len);
/* Per-request state for the role (NULL until set). */
void gp_http_set_user(struct gp_http_request *req, void *user);
void *gp_http_user(const struct gp_http_request *req);

/* Adds a response header (value formatted, truncated at 127 bytes);
 * silently ignored past GP_HTTP_MAX_HEADERS. */
void gp_http_add_header(struct gp_http_response *resp, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Starts serving per o. Returns GP_OK with *out set, or GP_ECONFIG (bad
 * address, TLS wanted but unsupported or the PEM rejected), GP_ENET (the
 * address in use) or GP_ENOMEM, with detail. */
int gp_http_start_opts(struct gp_http **out, const struct gp_http_options *o, char *err,
                       size_t errlen);

/* The agent's form: GET/HEAD routes, a pool of 2 threads. */
int gp_http_start(struct gp_http **out, const char *listen, gp_http_handler h, void *ctx, char *err,
                  size_t errlen);
unsigned gp_http_port(const struct gp_http *h);
void gp_http_stop(struct gp_http *h); /* accepts NULL; waits for running handlers */

/* Why a request's framing is refused (GP_HTTP_FRAME_OK: it is not). */
enum gp_http_framing {
    GP_HTTP_FRAME_OK,
    GP_HTTP_FRAME_CL_REPEATED,
    GP_HTTP_FRAME_CL_INVALID,
    GP_HTTP_FRAME_CL_AND_TE,
    GP_HTTP_FRAME_TE_UNSUPPORTED,
    GP_HTTP_FRAME__COUNT
};
/* The reason's label on /metrics ("content_length_repeated"...). */
const char *gp_http_framing_name(enum gp_http_framing f);

/* Checks a request's framing headers: names[i] and values[i] for n
 * headers in the order received (any others may be left out), http10
 * when the request line said HTTP/1.0. Returns the reason it is refused,
 * with *status (400 or 501) and a message in msg; GP_HTTP_FRAME_OK
 * otherwise. */
enum gp_http_framing gp_http_check_framing(const char *const *names, const char *const *values,
                                           size_t n, int http10, int *status, char *msg,
                                           size_t msglen);

/* What the HTTP layer refused or repaired, since start. */
struct gp_http_stats {
    uint64_t framing[GP_HTTP_FRAME__COUNT]; /* requests refused, by reason */
    uint64_t refused_per_address;           /* connections over max_per_address */
    uint64_t refused_max_connections;       /* connections over max_connections */
    uint64_t refused_reserve;               /* into the reserve from a connected address */
    uint64_t lingered;                      /* early answers drained before closing */
    uint64_t linger_dropped;                /* closed at once: too many lingering */
};
void gp_http_stats(struct gp_http *h, struct gp_http_stats *out);

/* Content negotiation over request headers (NULL: absent), for the
 * static files. 1 when Accept-Encoding allows `coding` (named with q > 0,
 * or `*` with q > 0 and the coding not refused by name), else 0; a
 * malformed element counts as absent. */
int gp_http_accepts(const char *accept_encoding, const char *coding);
/* 1 when If-None-Match names etag (a quoted tag; weak comparison: a W/
 * prefix is ignored) or is `*`, else 0. */
int gp_http_etag_match(const char *if_none_match, const char *etag);

/* Fills resp with a JSON error {"error": msg}. */
void gp_http_error(struct gp_http_response *resp, int status, const char *msg);

#endif
