/*
 * httpc.h - the one HTTP client: every request gpulse sends (remote-write
 * pushes, notifications, the remote store's queries, `gpulse top` and
 * `gpulse report`) and the SMTP submissions of the email channel.
 *
 * A thin layer over libcurl that fixes what every caller wants the same
 * way: http and https only (smtp and smtps for mail), no redirects
 * followed (a redirect answers like a 4xx, as Prometheus's sender does),
 * no signals (the callers are threaded), a whole-request timeout and a
 * shorter connect timeout, "User-Agent: gpulse/VERSION", an optional
 * bearer token that does not linger in freed memory, the status,
 * Retry-After (seconds or an HTTP date) and libcurl's error text. No
 * caller includes <curl/curl.h>.
 *
 * A handle (gp_httpc_open) keeps its connection, and a TLS session, open
 * between requests; gp_httpc_request is the one-shot form.
 */
#ifndef GP_NET_HTTPC_H
#define GP_NET_HTTPC_H

#include "lib/buf.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What every request of a handle carries. Borrowed only during open. */
struct gp_httpc_opts {
    int64_t timeout_ms;         /* a whole request; <= 0: 10 s */
    int64_t connect_timeout_ms; /* <= 0: the smaller of timeout_ms and 5 s */
    const char *user_agent;     /* NULL: "gpulse/VERSION" */
    const char *bearer;         /* Authorization: Bearer; NULL or "": none; a secret */
    const char *const *headers; /* "Name: value" lines */
    size_t nheaders;
    bool gzip;                  /* offer every encoding libcurl decodes */
    const char *ca_file;        /* https: trust this CA bundle; NULL or "": the system's */
};

/* One request. Borrowed during the call. */
struct gp_httpc_req {
    const char *url;          /* http:// or https:// */
    const void *body;         /* POST these len bytes; NULL: GET */
    const char *method;       /* NULL: GET or POST as above; else this verb (PATCH) with the body */
    size_t len;
    int64_t timeout_ms;       /* > 0: this request's, instead of the handle's */
    struct gp_buf *answer;    /* the whole answer up to the buffer's cap; NULL: only res->head */
    const atomic_int *cancel; /* nonzero aborts the request (res->cancelled) */
};

/* How a request ended. */
struct gp_httpc_res {
    int status;             /* the HTTP status (the last SMTP reply); 0 when none came */
    int64_t retry_after_ms; /* the Retry-After header; -1 when absent */
    bool permanent;         /* no answer, and retrying will not change it (bad URL or scheme,
                             * login denied, TLS required and refused, a certificate that fails) */
    bool cancelled;         /* req->cancel stopped it */
    bool too_large;         /* the answer outgrew req->answer's cap (req->answer->err says why) */
    char err[256];          /* with status 0: libcurl's error text; else "" */
    char head[512];         /* the answer's first bytes, as sent (not NUL-terminated) */
    size_t head_len;
};

struct gp_httpc;

/* libcurl's process-wide set-up, counted (pairs may nest). GP_OK or GP_EINTERNAL. */
int gp_httpc_global_init(void);
void gp_httpc_global_cleanup(void);

/*
 * A handle with options o. GP_OK with *out set (the caller closes it),
 * GP_ECONFIG when a header (the bearer's included) is over 4 KiB,
 * GP_ENOMEM or GP_EINTERNAL (libcurl refused an option), with detail in
 * err.
 */
int gp_httpc_open(struct gp_httpc **out, const struct gp_httpc_opts *o, char *err, size_t errlen);
void gp_httpc_close(struct gp_httpc *h); /* accepts NULL */

/*
 * Sends req and fills res (always). GP_OK when res says what happened
 * (an answer, whatever its status, or a transport error in res->err);
 * GP_ENOMEM or GP_EINTERNAL when the request could not be set up.
 */
int gp_httpc_do(struct gp_httpc *h, const struct gp_httpc_req *req, struct gp_httpc_res *res);

/* The same on a handle made for it and closed after (err gets open's detail). */
int gp_httpc_request(const struct gp_httpc_opts *o, const struct gp_httpc_req *req,
                     struct gp_httpc_res *res);

/*
 * The plain GET of the command-line clients: url into body (the caller's
 * buffer, initialised with its cap), with o's options and gzip offered;
 * *status gets the HTTP status. GP_OK whatever the status; GP_ENET (no
 * answer) with libcurl's text, GP_ETOOBIG ("the answer is larger than N
 * MiB") or GP_ENOMEM, with detail in err.
 */
int gp_httpc_get(const struct gp_httpc_opts *o, const char *url, struct gp_buf *body, long *status,
                 char *err, size_t errlen);

/* One line of printable ASCII from res->head (others as '?'; leading line
 * ends skipped), for logs and error texts. out: len bytes, NUL-terminated. */
void gp_httpc_head_line(const struct gp_httpc_res *res, char *out, size_t len);

/* An SMTP submission (smtp:// or smtps://). Borrowed during the call. */
struct gp_httpc_mail {
    const char *url;
    bool require_tls;           /* STARTTLS on smtp:// (or TLS on smtps://), never in clear */
    const char *from;           /* the envelope sender, a bare address */
    const char *const *to;      /* the envelope recipients, bare addresses */
    size_t nto;
    const char *username;       /* AUTH when non-empty */
    const char *password;       /* a secret */
    const char *ca_file;        /* adds a CA; NULL or "": the system's */
    bool insecure_skip_verify;
    const char *msg;            /* the whole message, headers and body */
    size_t len;
    int64_t timeout_ms;         /* <= 0: 30 s; the connect timeout is at most 10 s */
};

/* Sends m; res as for gp_httpc_do (status is the last SMTP reply). */
int gp_httpc_mail(const struct gp_httpc_mail *m, struct gp_httpc_res *res);

/* s (NUL-terminated) percent-encoded for a URL or a form; the caller
 * frees. NULL when out of memory. */
char *gp_httpc_escape(const char *s);

/*
 * Checks that url is http:// or https:// with a host. GP_OK, or
 * GP_ECONFIG with "WHAT '<label>': why" in err (what names the URL:
 * "push URL").
 */
int gp_httpc_check_url(const char *what, const char *url, char *err, size_t errlen);

/*
 * The label for a URL: scheme://host[:port]/path without user info,
 * query or fragment (credentials never reach /metrics or logs). Writes
 * "invalid-url" when url does not parse.
 */
void gp_httpc_url_label(const char *url, char *out, size_t len);

/*
 * The parts of url that may carry secrets (path, query, user, password),
 * those longer than one byte, into parts[0..max); returns how many. The
 * caller frees each.
 */
size_t gp_httpc_url_secrets(const char *url, char **parts, size_t max);

#endif
