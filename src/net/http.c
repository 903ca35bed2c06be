/*
 * http.c - libmicrohttpd glue; see http.h.
 *
 * libmicrohttpd calls on_request several times per request: once when
 * the headers are in (we allocate the request's state, ask the role's
 * prepare for a body limit, and may answer at once), once per piece of
 * body that arrives (appended to the request's buffer within its limit
 * and deadline, or the connection is cut by returning MHD_NO), and once
 * more with no data (the handler runs and the response is queued).
 * on_complete frees the state whatever happened.
 *
 * The deadline (roles with a prepare callback): a connection's phase is
 * "waiting for headers", "receiving a body" or "answering". A watchdog
 * thread looks every 250 ms and shuts down the socket of a connection
 * that has been receiving a body for longer than body_timeout_ms, or
 * waiting for (the rest of) its headers for longer than that or the idle
 * timeout, whichever is longer (a kept-alive connection waits there
 * between requests): a client trickling a byte a second, in its headers
 * or its body, is cut off, and the idle timeout (reset by every byte)
 * cannot be gamed. shutdown() leaves the fd to
 * libmicrohttpd, which sees the end of the stream and closes it; the
 * watchdog's record is removed (under its lock) before libmicrohttpd
 * closes the fd, so a reused fd number is never touched.
 *
 * Connections are tracked (on_connection) for three things: the
 * watchdog, the per-address limit (on_accept counts a new connection's
 * address among those open; libmicrohttpd accepts and announces
 * connections on its listening thread, so check and record do not race
 * in the server's thread-per-connection mode), and the lingering close:
 * a connection answered early is marked, and when libmicrohttpd closes
 * it (it has sent the answer and shut the write side), a dup of its fd,
 * taken before libmicrohttpd's close, goes to net/linger.c, which keeps
 * the socket open and drains the client's unread body.
 *
 * Streamed answers: libmicrohttpd's content-reader callback (one thread
 * per connection, so it may block) calls the role's producer into a
 * pending buffer and copies out what fits. Returning 0 bytes makes
 * libmicrohttpd call again at once, so the producer's own short wait is
 * what keeps that loop from spinning. gp_http_stop raises `closing`
 * before stopping the daemon: every stream then ends at its next call,
 * so stopping waits a producer's wait at most.
 */
#include "net/http.h"

#include "lib/clock.h"
#include "lib/cfg.h"
#include "lib/err.h"
#include "lib/log.h"
#include "net/form.h"
#include "net/linger.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum conn_phase { PHASE_HEADERS, PHASE_BODY, PHASE_ANSWER };

/* One open connection, for the watchdog. */
struct conn_rec {
    int fd;
    enum conn_phase phase;
    int64_t since_ms; /* CLOSED: when the phase began */
    int cut;
    int linger;       /* answered early: drain the client's body at close */
    uint8_t addr[16]; /* the client's address (IPv4 mapped; IPv6: its /64) */
    struct conn_rec *prev, *next;
};

struct gp_http {
    struct MHD_Daemon *d;
    struct gp_http_options o;
    char *cert, *key; /* copies: libmicrohttpd keeps pointers */
    unsigned port;

    /* the deadline watchdog (servers with prepare) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct conn_rec *conns;
    pthread_t watchdog;
    int watching, stopping, started_watchdog;
    int closing; /* atomic: streams end */

    struct gp_linger *linger;
    unsigned nconns; /* in conns */
    /* counters (atomic), and the refused connections not yet logged */
    uint64_t framing[GP_HTTP_FRAME__COUNT], refused_per_address, refused_max, refused_reserve;
    int64_t refused_logged_ms; /* under mu */
    uint64_t refused_unlogged;
};

/* One streamed answer. */
struct stream {
    struct gp_http *h;
    gp_http_stream_fn fn;
    void (*free_fn)(void *);
    void *arg;
    struct gp_buf pending;
    size_t off; /* sent from pending */
};

struct gp_http_request {
    struct gp_http *h;
    struct MHD_Connection *conn;
    const char *method, *path;
    uint8_t *body;
    size_t len, cap;
    uint64_t limit;
    int64_t deadline_ms; /* CLOCK_MONOTONIC */
    int status;          /* what was queued; 0 until then */
    void *user;
    struct gp_form form; /* a form body's fields (form.h); empty otherwise */
    char form_err[192];  /* why a form body did not decode; "" when it did */
};

const char *gp_http_method(const struct gp_http_request *r) { return r->method; }
const char *gp_http_path(const struct gp_http_request *r) { return r->path; }
void gp_http_set_user(struct gp_http_request *r, void *user) { r->user = user; }
void *gp_http_user(const struct gp_http_request *r) { return r->user; }

/* A form body's fields come before the URL's, as Go's Request.Form
 * orders them and FormValue prefers them (Prometheus reads both). */
const char *gp_http_query(const struct gp_http_request *r, const char *key)
{
    const char *v = gp_form_get(&r->form, key);
    return v ? v : MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *gp_http_form_error(const struct gp_http_request *r)
{
    return r->form_err[0] ? r->form_err : NULL;
}

const char *gp_http_header(const struct gp_http_request *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const uint8_t *gp_http_body(const struct gp_http_request *r, size_t *len)
{
    *len = r->len;
    return r->len ? r->body : NULL;
}

struct query_all {
    const char *key;
    const char **vals;
    size_t max, n;
};

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    (void)kind;
    struct query_all *q = cls;
    if (key && !strcmp(key, q->key)) {
        if (q->n < q->max)
            q->vals[q->n] = value ? value : "";
        q->n++;
    }
    return MHD_YES;
}

size_t gp_http_query_all(const struct gp_http_request *r, const char *key, const char **vals,
                         size_t max)
{
    size_t nf = gp_form_get_all(&r->form, key, vals, max);
    struct query_all q = {key, nf < max ? vals + nf : vals, nf < max ? max - nf : 0, 0};
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, collect_arg, &q);
    return nf + q.n;
}

void gp_http_add_header(struct gp_http_response *resp, const char *name, const char *fmt, ...)
{
    if (resp->nhdr >= GP_HTTP_MAX_HEADERS)
        return;
    resp->hdr[resp->nhdr].name = name;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(resp->hdr[resp->nhdr].value, sizeof resp->hdr[0].value, fmt, ap);
    va_end(ap);
    resp->nhdr++;
}

void gp_http_error(struct gp_http_response *resp, int status, const char *msg)
{
    resp->status = status;
    resp->content_type = "application/json";
    gp_buf_reset(&resp->body);
    gp_buf_puts(&resp->body, "{\"error\":\"");
    for (const char *p = msg; *p; p++) {
        if (*p == '"' || *p == '\\')
            gp_buf_putc(&resp->body, '\\');
        gp_buf_putc(&resp->body, (unsigned char)*p < 0x20 ? ' ' : *p);
    }
    gp_buf_puts(&resp->body, "\"}\n");
}

/* ---- framing ---- */

static const char *const framing_names[GP_HTTP_FRAME__COUNT] = {
    [GP_HTTP_FRAME_OK] = "ok",
    [GP_HTTP_FRAME_CL_REPEATED] = "content_length_repeated",
    [GP_HTTP_FRAME_CL_INVALID] = "content_length_invalid",
    [GP_HTTP_FRAME_CL_AND_TE] = "content_length_and_transfer_encoding",
    [GP_HTTP_FRAME_TE_UNSUPPORTED] = "transfer_encoding_unsupported",
};

const char *gp_http_framing_name(enum gp_http_framing f)
{
    return (unsigned)f < GP_HTTP_FRAME__COUNT ? framing_names[f] : "unknown";
}

/* 1 when v is 1 to 19 digits and nothing else (no sign, space, list). */
static int plain_decimal(const char *v)
{
    size_t n = strspn(v, "0123456789");
    return n > 0 && n <= 19 && v[n] == '\0';
}

enum gp_http_framing gp_http_check_framing(const char *const *names, const char *const *values,
                                           size_t n, int http10, int *status, char *msg,
                                           size_t msglen)
{
    const char *cl = NULL, *te = NULL;
    size_t ncl = 0, nte = 0;
    for (size_t i = 0; i < n; i++) {
        if (!strcasecmp(names[i], "Content-Length")) {
            if (!ncl++)
                cl = values[i] ? values[i] : "";
        } else if (!strcasecmp(names[i], "Transfer-Encoding")) {
            if (!nte++)
                te = values[i] ? values[i] : "";
        }
    }
    *status = 400;
    /* Both: RFC 9112 lets a server take the chunked framing, but a proxy
     * in front may have used Content-Length: the rest of the bytes would
     * be a request one of them never saw. */
    if (ncl && nte) {
        snprintf(msg, msglen, "request has both Content-Length and Transfer-Encoding: its length is "
                              "ambiguous, so it is refused and the connection closed");
        return GP_HTTP_FRAME_CL_AND_TE;
    }
    if (nte) {
        *status = 501;
        if (nte > 1 || strcasecmp(te, "chunked") || http10) {
            snprintf(msg, msglen, "transfer coding '%.64s'%s is not supported: send chunked (HTTP/1.1) "
                                  "or a Content-Length",
                     te, nte > 1 ? " (given twice)" : http10 ? " in HTTP/1.0" : "");
            return GP_HTTP_FRAME_TE_UNSUPPORTED;
        }
        return GP_HTTP_FRAME_OK;
    }
    /* Identical repeats too: RFC 9110 section 8.6 allows collapsing them,
     * but refusing leaves nothing for two parsers to disagree on. */
    if (ncl > 1) {
        snprintf(msg, msglen, "request has %zu Content-Length headers: refused, send one", ncl);
        return GP_HTTP_FRAME_CL_REPEATED;
    }
    if (ncl && !plain_decimal(cl)) {
        snprintf(msg, msglen, "invalid Content-Length '%.64s': not a plain decimal number", cl);
        return GP_HTTP_FRAME_CL_INVALID;
    }
    return GP_HTTP_FRAME_OK;
}

/* Skips spaces and tabs. */
static const char *skip_ows(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* The q of one Accept-Encoding element's parameters (p after the token):
 * 0..1000 (thousandths), or -1 when malformed. */
static int qvalue(const char *p, const char *end)
{
    int q = 1000;
    while (p < end) {
        p = skip_ows(p);
        if (p >= end)
            break;
        if (*p++ != ';')
            return -1;
        p = skip_ows(p);
        if (end - p >= 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
            p += 2;
            if (p >= end || (*p != '0' && *p != '1'))
                return -1;
            int whole = *p++ - '0', frac = 0, digits = 0;
            if (p < end && *p == '.')
                for (p++; p < end && *p >= '0' && *p <= '9' && digits < 3; p++, digits++)
                    frac = frac * 10 + (*p - '0');
            while (digits++ < 3)
                frac *= 10;
            q = whole * 1000 + frac;
            if (q > 1000)
                return -1;
        } else { /* another parameter: skip it */
            while (p < end && *p != ';')
                p++;
        }
    }
    return q;
}

int gp_http_accepts(const char *ae, const char *coding)
{
    if (!ae)
        return 0;
    int named = -1, star = -1;
    size_t cl = strlen(coding);
    for (const char *p = ae; *p;) {
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        const char *t = skip_ows(p), *te = t;
        while (te < end && *te != ';' && *te != ' ' && *te != '\t')
            te++;
        int q = qvalue(te, end);
        if (q >= 0 && (size_t)(te - t) == cl && !strncasecmp(t, coding, cl))
            named = q;
        else if (q >= 0 && te - t == 1 && *t == '*')
            star = q;
        p = *end ? end + 1 : end;
    }
    return named >= 0 ? named > 0 : star > 0;
}

int gp_http_etag_match(const char *inm, const char *etag)
{
    if (!inm)
        return 0;
    size_t el = strlen(etag);
    for (const char *p = inm; *p;) {
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        const char *t = skip_ows(p), *te = end;
        while (te > t && (te[-1] == ' ' || te[-1] == '\t'))
            te--;
        if (te - t == 1 && *t == '*')
            return 1;
        if (te - t >= 2 && t[0] == 'W' && t[1] == '/')
            t += 2;
        if ((size_t)(te - t) == el && !memcmp(t, etag, el))
            return 1;
        p = *end ? end + 1 : end;
    }
    return 0;
}

static void resp_init(struct gp_http_response *resp, int status)
{
    memset(resp, 0, sizeof *resp);
    resp->status = status;
    resp->content_type = "text/plain; charset=utf-8";
    gp_buf_init(&resp->body, 0);
}

/* libmicrohttpd wants more of a stream: what is pending, else a call
 * to the producer (which may wait briefly). */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct stream *st = cls;
    if (st->off == st->pending.len) {
        if (__atomic_load_n(&st->h->closing, __ATOMIC_ACQUIRE))
            return MHD_CONTENT_READER_END_OF_STREAM;
        gp_buf_reset(&st->pending);
        st->off = 0;
        if (st->fn(st->arg, &st->pending) < 0 || st->pending.err)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (!st->pending.len)
            return 0; /* called again: the producer waited */
    }
    size_t n = st->pending.len - st->off;
    if (n > max)
        n = max;
    memcpy(buf, st->pending.data + st->off, n);
    st->off += n;
    return (ssize_t)n;
}

static void stream_end(void *cls)
{
    struct stream *st = cls;
    if (st->free_fn)
        st->free_fn(st->arg);
    gp_buf_free(&st->pending);
    free(st);
}

/* The libmicrohttpd response of a streamed answer; NULL when it cannot
 * be made (the producer's state is then freed). */
static struct MHD_Response *stream_response(struct gp_http *h, struct gp_http_response *resp)
{
    struct stream *st = calloc(1, sizeof *st);
    struct MHD_Response *m = NULL;
    if (st) {
        *st = (struct stream){h, resp->stream, resp->stream_free, resp->stream_arg, {0}, 0};
        gp_buf_init(&st->pending, 0);
        m = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, st, stream_end);
        if (m)
            return m;
        gp_buf_free(&st->pending);
        free(st);
    }
    if (resp->stream_free)
        resp->stream_free(resp->stream_arg);
    return NULL;
}

/* Hands resp to libmicrohttpd (its body moves) and records the status. */
static enum MHD_Result send_response(struct gp_http_request *r, struct gp_http_response *resp)
{
    if (resp->stream && resp->status != 200) { /* a stream answers 200 or not at all */
        if (resp->stream_free)
            resp->stream_free(resp->stream_arg);
        resp->stream = NULL;
    }
    if (resp->body.err)
        gp_http_error(resp, 500, "response too large or out of memory");
    size_t len;
    char *data = gp_buf_steal(&resp->body, &len);
    if (resp->status == 204 || resp->status == 304 || resp->stream) { /* no body allowed */
        free(data);
        data = NULL;
        len = 0;
    }
    struct MHD_Response *m =
        resp->stream ? stream_response(r->h, resp)
                     : MHD_create_response_from_buffer(len, data ? data : (char *)"",
                                                       data ? MHD_RESPMEM_MUST_FREE
                                                            : MHD_RESPMEM_PERSISTENT);
    if (!m) {
        free(data);
        return MHD_NO;
    }
    if (len || resp->status != 204)
        MHD_add_response_header(m, "Content-Type", resp->content_type);
    if (resp->allow)
        MHD_add_response_header(m, "Allow", resp->allow);
    for (unsigned i = 0; i < resp->nhdr && i < GP_HTTP_MAX_HEADERS; i++)
        MHD_add_response_header(m, resp->hdr[i].name, resp->hdr[i].value);
    enum MHD_Result ret = MHD_queue_response(r->conn, (unsigned)resp->status, m);
    MHD_destroy_response(m);
    if (ret == MHD_YES)
        r->status = resp->status;
    return ret;
}

/* The framing headers of a request, in order (a few suffice: more of
 * them is a repeat already). */
struct framing_hdrs {
    const char *names[8], *values[8];
    size_t n;
};

static enum MHD_Result collect_framing(void *cls, enum MHD_ValueKind kind, const char *key,
                                       const char *value)
{
    (void)kind;
    struct framing_hdrs *f = cls;
    if (key && (!strcasecmp(key, "Content-Length") || !strcasecmp(key, "Transfer-Encoding")) &&
        f->n < 8) {
        f->names[f->n] = key;
        f->values[f->n++] = value;
    }
    return MHD_YES;
}

/* Marks the connection of r to linger at close (its body may be unread). */
static void mark_linger(struct gp_http *h, struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct conn_rec *c = ci ? ci->socket_context : NULL;
    if (!c)
        return;
    pthread_mutex_lock(&h->mu);
    c->linger = 1;
    pthread_mutex_unlock(&h->mu);
}

/* Refuses a request whose length could be read two ways: answered and
 * the connection closed, so no byte after its headers is served. */
static enum MHD_Result check_framing(struct gp_http *h, struct gp_http_request *r,
                                     const char *version, int *refused)
{
    struct framing_hdrs f = {.n = 0};
    MHD_get_connection_values(r->conn, MHD_HEADER_KIND, collect_framing, &f);
    int status;
    char msg[200];
    enum gp_http_framing why = gp_http_check_framing(f.names, f.values, f.n,
                                                     version && !strcmp(version, "HTTP/1.0"),
                                                     &status, msg, sizeof msg);
    *refused = why != GP_HTTP_FRAME_OK;
    if (!*refused)
        return MHD_YES;
    __atomic_fetch_add(&h->framing[why], 1, __ATOMIC_RELAXED);
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    char peer[INET6_ADDRSTRLEN] = "?";
    if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)ci->client_addr)->sin_addr, peer, sizeof peer);
    else if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ci->client_addr)->sin6_addr, peer,
                  sizeof peer);
    gp_log(GP_LOG_WARN, "http", "request refused for its framing: connection closed",
           "reason=%s status=%d method=%s path=%s client=%s", gp_http_framing_name(why), status,
           r->method, r->path, peer);
    struct gp_http_response resp;
    resp_init(&resp, status);
    gp_http_error(&resp, status, msg);
    gp_http_add_header(&resp, "Connection", "close");
    return send_response(r, &resp);
}

/* First call: headers are in, no body read yet. */
static enum MHD_Result on_headers(struct gp_http *h, struct gp_http_request *r)
{
    struct gp_http_response early;
    resp_init(&early, 0);
    if (!h->o.prepare) {
        r->limit = 0;
        if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD")) {
            gp_http_error(&early, 405, "method not allowed");
            early.allow = "GET, HEAD";
        }
    } else {
        r->limit = h->o.prepare(h->o.ctx, r, &early);
    }
    if (!early.status) {
        const char *cl = gp_http_header(r, "Content-Length");
        if (cl) {
            char *end;
            errno = 0;
            unsigned long long n = strtoull(cl, &end, 10);
            if (end == cl || *end || errno) {
                gp_http_error(&early, 400, "invalid Content-Length");
            } else if (n > r->limit) {
                char msg[160];
                if (r->limit)
                    snprintf(msg, sizeof msg, "request body of %llu bytes is over the limit of %llu bytes",
                             n, (unsigned long long)r->limit);
                else
                    snprintf(msg, sizeof msg, "this route takes no request body");
                gp_http_error(&early, 413, msg);
            } else if (n > 0) {
                r->body = malloc((size_t)n);
                if (!r->body) {
                    gp_http_error(&early, 503, "out of memory");
                    gp_http_add_header(&early, "Retry-After", "5");
                } else {
                    r->cap = (size_t)n;
                }
            }
        }
    }
    if (!early.status) {
        gp_buf_free(&early.body);
        return MHD_YES;
    }
    return send_response(r, &early);
}

/* A piece of body: keep it within the limit and the deadline, or cut. */
static enum MHD_Result on_body(struct gp_http_request *r, const char *data, size_t n)
{
    if (r->status)
        return MHD_NO; /* answered early: nothing more is read */
    if (gp_mono_ms() > r->deadline_ms) {
        gp_log(GP_LOG_WARN, "http", "request body too slow: connection closed",
               "path=%s received=%zu timeout_ms=%llu", r->path, r->len,
               (unsigned long long)r->h->o.body_timeout_ms);
        return MHD_NO;
    }
    if (n > r->limit - r->len) {
        gp_log(GP_LOG_WARN, "http", "request body over its limit: connection closed",
               "path=%s received=%zu limit=%llu", r->path, r->len + n, (unsigned long long)r->limit);
        return MHD_NO;
    }
    if (r->len + n > r->cap) {
        size_t cap = r->cap ? r->cap : 64 * 1024;
        while (cap < r->len + n)
            cap *= 2;
        if (cap > r->limit)
            cap = (size_t)r->limit;
        uint8_t *nb = realloc(r->body, cap);
        if (!nb)
            return MHD_NO;
        r->body = nb;
        r->cap = cap;
    }
    memcpy(r->body + r->len, data, n);
    r->len += n;
    return MHD_YES;
}

/* Moves the connection of r to a phase (no-op without the watchdog). */
static void set_phase(struct gp_http *h, struct MHD_Connection *conn, enum conn_phase p)
{
    if (!h->watching)
        return;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct conn_rec *c = ci ? ci->socket_context : NULL;
    if (!c)
        return;
    pthread_mutex_lock(&h->mu);
    c->phase = p;
    c->since_ms = gp_mono_ms();
    pthread_mutex_unlock(&h->mu);
}

/* The per-address limit's key of a client address: IPv4 as an
 * IPv4-mapped IPv6 address, IPv6 by its /64 (what one client is
 * normally given). 0 for another family (not limited). */
static int addr_key(const struct sockaddr *sa, uint8_t key[16])
{
    memset(key, 0, 16);
    if (sa && sa->sa_family == AF_INET) {
        key[10] = key[11] = 0xff;
        memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        return 1;
    }
    if (sa && sa->sa_family == AF_INET6) {
        const uint8_t *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        memcpy(key, a, memcmp(a, mapped, 12) ? 8 : 16);
        return 1;
    }
    return 0;
}

/* libmicrohttpd's accept policy: refuses a connection over
 * max_connections, over max_per_address, or into the reserve from an
 * address that has a connection already, counted and logged (once a
 * second at most, with how many went unlogged: a flood must not flood
 * the log). A linear scan: the list holds max_connections at most. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *sa, socklen_t len)
{
    (void)len;
    struct gp_http *h = cls;
    uint8_t key[16];
    int keyed = addr_key(sa, key);
    pthread_mutex_lock(&h->mu);
    unsigned same = 0;
    if (keyed)
        for (struct conn_rec *c = h->conns; c; c = c->next)
            same += !memcmp(c->addr, key, 16);
    /* The last eighth of the connections is kept for addresses holding
     * none: agents (one connection per host) still get in when clients
     * from a few addresses hold all the rest. */
    unsigned reserve = h->o.max_connections / 8;
    int full = h->nconns >= h->o.max_connections;
    int over = h->o.max_per_address && same >= h->o.max_per_address;
    int reserved = same && h->nconns >= h->o.max_connections - reserve;
    if (!full && !over && !reserved) {
        pthread_mutex_unlock(&h->mu);
        return MHD_YES;
    }
    const char *why = full ? "max_connections" : over ? "max_per_address" : "reserve";
    __atomic_fetch_add(full   ? &h->refused_max
                       : over ? &h->refused_per_address
                              : &h->refused_reserve,
                       1, __ATOMIC_RELAXED);
    int64_t now = gp_mono_ms();
    uint64_t unlogged = 0;
    int log = now - h->refused_logged_ms >= 1000;
    if (log) {
        unlogged = h->refused_unlogged;
        h->refused_unlogged = 0;
        h->refused_logged_ms = now;
    } else {
        h->refused_unlogged++;
    }
    unsigned open = h->nconns;
    pthread_mutex_unlock(&h->mu);
    if (log) {
        char peer[INET6_ADDRSTRLEN] = "?";
        if (sa && sa->sa_family == AF_INET)
            inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, peer, sizeof peer);
        else if (sa && sa->sa_family == AF_INET6)
            inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, peer, sizeof peer);
        gp_log(GP_LOG_WARN, "http", "connection refused: too many open",
               "reason=%s client=%s from_client=%u open=%u max_connections=%u max_per_address=%u "
               "refused_unlogged=%llu",
               why, peer, same, open, h->o.max_connections, h->o.max_per_address,
               (unsigned long long)unlogged);
    }
    return MHD_NO;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct gp_http *h = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *ai = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        struct conn_rec *c = ci ? calloc(1, sizeof *c) : NULL;
        if (!c)
            return; /* not watched or counted; the idle timeout still applies */
        c->fd = ci->connect_fd;
        c->phase = PHASE_HEADERS;
        c->since_ms = gp_mono_ms();
        addr_key(ai ? ai->client_addr : NULL, c->addr);
        pthread_mutex_lock(&h->mu);
        c->next = h->conns;
        if (h->conns)
            h->conns->prev = c;
        h->conns = c;
        h->nconns++;
        pthread_mutex_unlock(&h->mu);
        *socket_context = c;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        struct conn_rec *c = *socket_context;
        pthread_mutex_lock(&h->mu);
        if (c->prev)
            c->prev->next = c->next;
        else
            h->conns = c->next;
        if (c->next)
            c->next->prev = c->prev;
        h->nconns--;
        int linger = c->linger && !c->cut;
        pthread_mutex_unlock(&h->mu);
        /* libmicrohttpd closes the fd after this returns: a dup keeps the
         * socket open, so that close sends no reset. */
        int fd = linger && h->linger ? fcntl(c->fd, F_DUPFD_CLOEXEC, 0) : -1;
        if (fd >= 0)
            gp_linger_add(h->linger, fd);
        free(c);
        *socket_context = NULL;
    }
}

static void *watchdog_main(void *arg)
{
    struct gp_http *h = arg;
    pthread_mutex_lock(&h->mu);
    while (!h->stopping) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        t.tv_nsec += 250 * 1000000;
        if (t.tv_nsec >= 1000000000) {
            t.tv_sec++;
            t.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&h->cv, &h->mu, &t);
        int64_t now = gp_mono_ms();
        /* Waiting for headers includes a kept-alive connection's idle
         * time, which the idle timeout governs: the longer of the two. */
        int64_t idle = (int64_t)h->o.idle_timeout_s * 1000, body = (int64_t)h->o.body_timeout_ms;
        int64_t for_headers = idle > body ? idle : body;
        for (struct conn_rec *c = h->conns; c; c = c->next) {
            int64_t limit = c->phase == PHASE_HEADERS ? for_headers : body;
            if (c->cut || c->phase == PHASE_ANSWER || now - c->since_ms <= limit)
                continue;
            c->cut = 1;
            shutdown(c->fd, SHUT_RDWR);
            gp_log(GP_LOG_WARN, "http", "client too slow: connection closed", "phase=%s timeout_ms=%lld",
                   c->phase == PHASE_HEADERS ? "headers" : "body", (long long)limit);
        }
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    struct gp_http *h = cls;
    struct gp_http_request *r = *con_cls;
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r)
            return MHD_NO;
        r->h = h;
        r->conn = conn;
        r->method = method;
        r->path = url;
        r->deadline_ms = gp_mono_ms() + (int64_t)h->o.body_timeout_ms;
        *con_cls = r;
        set_phase(h, conn, PHASE_BODY);
        int refused;
        enum MHD_Result ok = check_framing(h, r, version, &refused);
        if (!refused)
            ok = on_headers(h, r);
        if (r->status) { /* answered before the body: deliver it (linger.h) */
            set_phase(h, conn, PHASE_ANSWER);
            mark_linger(h, conn);
        }
        return ok;
    }
    if (*upload_size) {
        enum MHD_Result ok = on_body(r, upload, *upload_size);
        *upload_size = 0;
        return ok;
    }
    if (r->status)
        return MHD_YES; /* the early answer is on its way */
    set_phase(h, conn, PHASE_ANSWER);
    if (r->len && gp_form_content_type(gp_http_header(r, "Content-Type"))) {
        char err[160];
        if (gp_form_parse((const char *)r->body, r->len, &r->form, err, sizeof err))
            snprintf(r->form_err, sizeof r->form_err, "invalid form body: %s", err);
    }
    struct gp_http_response resp;
    resp_init(&resp, 200);
    h->o.handler(h->o.ctx, r, &resp);
    return send_response(r, &resp);
}

static void on_complete(void *cls, struct MHD_Connection *conn, void **con_cls,
                        enum MHD_RequestTerminationCode toe)
{
    struct gp_http *h = cls;
    set_phase(h, conn, PHASE_HEADERS); /* the next request on this connection */
    struct gp_http_request *r = *con_cls;
    if (!r)
        return;
    if (h->o.complete)
        h->o.complete(h->o.ctx, r, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? r->status : 0);
    gp_form_free(&r->form);
    free(r->body);
    free(r);
    *con_cls = NULL;
}

/* Loads the pair as GnuTLS will, for a clear message before listening. */
static int check_tls_pair(const char *cert, const char *key, char *err, size_t errlen)
{
    gnutls_certificate_credentials_t c;
    if (gnutls_certificate_allocate_credentials(&c) < 0)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    gnutls_datum_t cd = {(unsigned char *)(uintptr_t)cert, (unsigned)strlen(cert)};
    gnutls_datum_t kd = {(unsigned char *)(uintptr_t)key, (unsigned)strlen(key)};
    int r = gnutls_certificate_set_x509_key_mem(c, &cd, &kd, GNUTLS_X509_FMT_PEM);
    gnutls_certificate_free_credentials(c);
    if (r < 0)
        return gp_seterr(err, errlen, GP_ECONFIG, "TLS certificate or key rejected: %s",
                         gnutls_strerror(r));
    return GP_OK;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    struct gp_http *h = cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n')
        msg[--n] = '\0';
    gp_log(GP_LOG_DEBUG, "http", msg, "%s", "");
    /* libmicrohttpd answers a Content-Length it cannot parse (a sign, a
     * list, too many digits) itself, before on_request: its message is
     * the only trace, so it is counted and logged from here. Should a
     * later version word it otherwise, only this count is lost: the
     * request is refused all the same, and gp_http_check_framing would
     * refuse it had the library let it through. */
    if (h && strstr(msg, "Content-Length") &&
        (!strncmp(msg, "Failed to parse", 15) || !strncmp(msg, "Too large value", 15))) {
        __atomic_fetch_add(&h->framing[GP_HTTP_FRAME_CL_INVALID], 1, __ATOMIC_RELAXED);
        gp_log(GP_LOG_WARN, "http", "request refused for its framing: connection closed",
               "reason=%s status=%d by=libmicrohttpd", gp_http_framing_name(GP_HTTP_FRAME_CL_INVALID),
               msg[0] == 'F' ? 400 : 413);
    }
}

int gp_http_start(struct gp_http **out, const char *listen, gp_http_handler handler, void *ctx,
                  char *err, size_t errlen)
{
    struct gp_http_options o = {.listen = listen, .handler = handler, .ctx = ctx, .threads = 2};
    return gp_http_start_opts(out, &o, err, errlen);
}

int gp_http_start_opts(struct gp_http **out, const struct gp_http_options *o, char *err,
                       size_t errlen)
{
    char host[128];
    unsigned port;
    int rc = gp_parse_listen(o->listen, host, sizeof host, &port, err, errlen);
    if (rc)
        return rc;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    flags |= o->threads ? MHD_USE_EPOLL : (MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL);
    struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
    if (host[0] == '\0' || inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        if (!host[0])
            v4->sin_addr.s_addr = htonl(INADDR_ANY);
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        flags |= MHD_USE_IPv6;
    } else {
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "invalid listen address '%s': the address must be an IPv4 or IPv6 literal",
                         o->listen);
    }
    if (!o->tls_cert_pem != !o->tls_key_pem)
        return gp_seterr(err, errlen, GP_ECONFIG, "TLS needs both a certificate and a key");
    if (o->tls_cert_pem) {
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "TLS is configured but this libmicrohttpd was built without TLS support");
        rc = check_tls_pair(o->tls_cert_pem, o->tls_key_pem, err, errlen);
        if (rc)
            return rc;
        flags |= MHD_USE_TLS;
    }
    struct gp_http *h = calloc(1, sizeof *h);
    if (!h)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    pthread_mutex_init(&h->mu, NULL);
    /* The watchdog's deadlines are CLOCK_MONOTONIC times: with the default
     * (realtime) clock every wait would return at once and the thread spin. */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->cv, &ca);
    pthread_condattr_destroy(&ca);
    h->o = *o;
    h->o.listen = NULL; /* not kept: the caller's string */
    if (!h->o.max_connections)
        h->o.max_connections = 256;
    if (!h->o.idle_timeout_s)
        h->o.idle_timeout_s = 30;
    if (!h->o.body_timeout_ms)
        h->o.body_timeout_ms = 30000;
    if (o->tls_cert_pem) {
        h->cert = strdup(o->tls_cert_pem);
        h->key = strdup(o->tls_key_pem);
        if (!h->cert || !h->key) {
            gp_http_stop(h);
            return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        }
    }
    h->o.tls_cert_pem = h->cert;
    h->o.tls_key_pem = h->key;
    h->watching = h->o.prepare != NULL;
    /* Drained for as long as a body may take anyway, 2 s of silence at most. */
    if (gp_linger_start(&h->linger, h->o.max_connections, (int64_t)h->o.body_timeout_ms, 2000)) {
        gp_http_stop(h);
        return gp_seterr(err, errlen, GP_ENOMEM, "cannot start a thread");
    }
    struct MHD_OptionItem opts[12];
    size_t no = 0;
#define GP_OPT_(opt, val, ptr) opts[no++] = (struct MHD_OptionItem){opt, (intptr_t)(val), ptr}
    /* The logger first: libmicrohttpd prints what comes before it to stderr. */
    GP_OPT_(MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, h);
    GP_OPT_(MHD_OPTION_SOCK_ADDR, 0, &ss);
    /* One over ours: on_accept refuses first, and counts it. */
    GP_OPT_(MHD_OPTION_CONNECTION_LIMIT, h->o.max_connections + 1, NULL);
    GP_OPT_(MHD_OPTION_CONNECTION_TIMEOUT, h->o.idle_timeout_s, NULL);
    GP_OPT_(MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_complete, h);
    if (h->o.threads)
        GP_OPT_(MHD_OPTION_THREAD_POOL_SIZE, h->o.threads, NULL);
    GP_OPT_(MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, h);
    if (h->cert) {
        GP_OPT_(MHD_OPTION_HTTPS_MEM_CERT, 0, h->cert);
        GP_OPT_(MHD_OPTION_HTTPS_MEM_KEY, 0, h->key);
    }
    GP_OPT_(MHD_OPTION_END, 0, NULL);
#undef GP_OPT_
    h->d = MHD_start_daemon(flags, (uint16_t)port, on_accept, h, on_request, h, MHD_OPTION_ARRAY, opts,
                            MHD_OPTION_END);
    if (!h->d) {
        gp_http_stop(h);
        return gp_seterr(err, errlen, GP_ENET,
                         "cannot listen on '%s' (address in use, or not an address of this host?)",
                         o->listen);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : port;
    if (h->watching && pthread_create(&h->watchdog, NULL, watchdog_main, h)) {
        h->watching = 0;
        gp_http_stop(h);
        return gp_seterr(err, errlen, GP_ENOMEM, "cannot start a thread");
    }
    h->started_watchdog = h->watching;
    *out = h;
    return GP_OK;
}

unsigned gp_http_port(const struct gp_http *h) { return h->port; }

void gp_http_stats(struct gp_http *h, struct gp_http_stats *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < GP_HTTP_FRAME__COUNT; i++)
        out->framing[i] = __atomic_load_n(&h->framing[i], __ATOMIC_RELAXED);
    out->refused_per_address = __atomic_load_n(&h->refused_per_address, __ATOMIC_RELAXED);
    out->refused_max_connections = __atomic_load_n(&h->refused_max, __ATOMIC_RELAXED);
    out->refused_reserve = __atomic_load_n(&h->refused_reserve, __ATOMIC_RELAXED);
    if (h->linger) {
        struct gp_linger_stats l;
        gp_linger_stats(h->linger, &l);
        out->lingered = l.lingered;
        out->linger_dropped = l.dropped;
    }
}

void gp_http_stop(struct gp_http *h)
{
    if (!h)
        return;
    __atomic_store_n(&h->closing, 1, __ATOMIC_RELEASE);
    if (h->started_watchdog) {
        pthread_mutex_lock(&h->mu);
        h->stopping = 1;
        pthread_cond_signal(&h->cv);
        pthread_mutex_unlock(&h->mu);
        pthread_join(h->watchdog, NULL);
    }
    if (h->d)
        MHD_stop_daemon(h->d);
    gp_linger_stop(h->linger); /* after the daemon: its last closes may linger */
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    free(h->cert);
    free(h->key);
    free(h);
}
