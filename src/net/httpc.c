/*
 * httpc.c - see httpc.h.
 *
 * One curl easy handle per gp_httpc. The options every request shares
 * are set once at open; gp_httpc_do sets only the URL, the body, the
 * timeout and where the answer goes, so a reused handle keeps its
 * connection. The answer goes to the caller's capped buffer (a write
 * callback that returns 0 stops the transfer past the cap) and its first
 * bytes to res->head. A progress callback lets the owner cancel a
 * request that hangs.
 */
#include "net/httpc.h"

#include "lib/err.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef GP_VERSION
#define GP_VERSION "0.0.0"
#endif

#define HEADER_MAX 4096

struct gp_httpc {
    CURL *curl;
    struct curl_slist *headers;
    int64_t timeout_ms, connect_timeout_ms;
    /* per request */
    struct gp_buf *answer;
    struct gp_httpc_res *res;
    const atomic_int *cancel;
    char errbuf[CURL_ERROR_SIZE];
};

static pthread_mutex_t global_mu = PTHREAD_MUTEX_INITIALIZER;
static int global_refs;

int gp_httpc_global_init(void)
{
    int rc = GP_OK;
    pthread_mutex_lock(&global_mu);
    if (global_refs == 0 && curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        rc = GP_EINTERNAL;
    else
        global_refs++;
    pthread_mutex_unlock(&global_mu);
    return rc;
}

void gp_httpc_global_cleanup(void)
{
    pthread_mutex_lock(&global_mu);
    if (global_refs > 0 && --global_refs == 0)
        curl_global_cleanup();
    pthread_mutex_unlock(&global_mu);
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    struct gp_httpc *h = arg;
    struct gp_httpc_res *res = h->res;
    size_t len = size * n, room = sizeof res->head - res->head_len;
    size_t take = len < room ? len : room;
    memcpy(res->head + res->head_len, p, take);
    res->head_len += take;
    if (!h->answer)
        return len;
    gp_buf_append(h->answer, p, len);
    return h->answer->err ? 0 : len; /* 0 stops the transfer past the cap */
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    const struct gp_httpc *h = arg;
    return h->cancel && atomic_load(h->cancel) ? 1 : 0;
}

static int append_header(struct curl_slist **l, const char *line)
{
    struct curl_slist *n = curl_slist_append(*l, line);
    if (!n)
        return GP_ENOMEM;
    *l = n;
    return GP_OK;
}

static int build_headers(struct gp_httpc *h, const struct gp_httpc_opts *o, char *err, size_t errlen)
{
    /* No "Expect: 100-continue": it costs a round trip on every POST. */
    if (append_header(&h->headers, "Expect:"))
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    for (size_t i = 0; i < o->nheaders; i++) {
        if (strlen(o->headers[i]) > HEADER_MAX)
            return gp_seterr(err, errlen, GP_ECONFIG, "an HTTP header is over %d bytes", HEADER_MAX);
        if (append_header(&h->headers, o->headers[i]))
            return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    }
    if (o->bearer && *o->bearer) {
        char line[HEADER_MAX + 32];
        int w = snprintf(line, sizeof line, "Authorization: Bearer %s", o->bearer);
        int rc = w < 0 || (size_t)w >= sizeof line ? GP_ECONFIG : append_header(&h->headers, line);
        memset(line, 0, sizeof line); /* the token does not linger on the stack */
        if (rc == GP_ECONFIG)
            return gp_seterr(err, errlen, rc, "the bearer token is over %d bytes", HEADER_MAX);
        if (rc)
            return gp_seterr(err, errlen, rc, "out of memory");
    }
    return GP_OK;
}

int gp_httpc_open(struct gp_httpc **out, const struct gp_httpc_opts *o, char *err, size_t errlen)
{
    *out = NULL;
    struct gp_httpc *h = calloc(1, sizeof *h);
    if (!h)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    h->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 10000;
    h->connect_timeout_ms = o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 5000;
    h->curl = curl_easy_init();
    if (!h->curl) {
        gp_httpc_close(h);
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    }
    int rc = build_headers(h, o, err, errlen);
    if (rc) {
        gp_httpc_close(h);
        return rc;
    }
    CURL *c = h->curl;
    int bad = 0;
    bad |= curl_easy_setopt(c, CURLOPT_HTTPHEADER, h->headers) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_USERAGENT, o->user_agent ? o->user_agent : "gpulse/" GP_VERSION) !=
           CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_ERRORBUFFER, h->errbuf) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_WRITEDATA, h) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_XFERINFODATA, h) != CURLE_OK;
    if (o->gzip)
        bad |= curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "") != CURLE_OK;
    if (o->ca_file && *o->ca_file)
        bad |= curl_easy_setopt(c, CURLOPT_CAINFO, o->ca_file) != CURLE_OK;
    if (bad) {
        gp_httpc_close(h);
        return gp_seterr(err, errlen, GP_EINTERNAL, "libcurl refused an option");
    }
    *out = h;
    return GP_OK;
}

void gp_httpc_close(struct gp_httpc *h)
{
    if (!h)
        return;
    if (h->curl)
        curl_easy_cleanup(h->curl);
    curl_slist_free_all(h->headers);
    free(h);
}

static void res_reset(struct gp_httpc_res *res)
{
    memset(res, 0, sizeof *res);
    res->retry_after_ms = -1;
}

/* Fills res from a finished transfer; permanent lists the transport
 * errors that retrying will not cure for this protocol. */
static void finish(CURL *c, CURLcode cc, const char *errbuf, const CURLcode *permanent, size_t npermanent,
                   struct gp_httpc_res *res)
{
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    res->status = (int)code;
    if (cc != CURLE_OK) {
        res->cancelled = cc == CURLE_ABORTED_BY_CALLBACK;
        for (size_t i = 0; i < npermanent; i++)
            res->permanent |= cc == permanent[i];
        snprintf(res->err, sizeof res->err, "%s",
                 cc == CURLE_USE_SSL_FAILED ? "the server does not offer STARTTLS; not sending in clear"
                 : errbuf[0]                ? errbuf
                                            : curl_easy_strerror(cc));
        return;
    }
    curl_off_t ra = -1;
    if (curl_easy_getinfo(c, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
        res->retry_after_ms = (int64_t)ra * 1000;
}

int gp_httpc_do(struct gp_httpc *h, const struct gp_httpc_req *req, struct gp_httpc_res *res)
{
    static const CURLcode permanent[] = {CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT, CURLE_LOGIN_DENIED};
    res_reset(res);
    h->answer = req->answer;
    h->res = res;
    h->cancel = req->cancel;
    h->errbuf[0] = '\0';
    int64_t tmo = req->timeout_ms > 0 ? req->timeout_ms : h->timeout_ms;
    int64_t ctmo = tmo < h->connect_timeout_ms ? tmo : h->connect_timeout_ms;
    CURL *c = h->curl;
    int bad = 0;
    bad |= curl_easy_setopt(c, CURLOPT_URL, req->url) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)tmo) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)ctmo) != CURLE_OK;
    if (req->body) {
        bad |= curl_easy_setopt(c, CURLOPT_POST, 1L) != CURLE_OK;
        bad |= curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->body) != CURLE_OK;
        bad |= curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->len) != CURLE_OK;
    } else {
        bad |= curl_easy_setopt(c, CURLOPT_HTTPGET, 1L) != CURLE_OK;
    }
    /* the handle is reused: a verb set for one request must not stick */
    bad |= curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req->method) != CURLE_OK;
    if (bad)
        return GP_EINTERNAL;
    CURLcode cc = curl_easy_perform(c);
    res->too_large = req->answer && req->answer->err;
    finish(c, cc, h->errbuf, permanent, sizeof permanent / sizeof permanent[0], res);
    h->answer = NULL;
    h->res = NULL;
    h->cancel = NULL;
    return GP_OK;
}

int gp_httpc_request(const struct gp_httpc_opts *o, const struct gp_httpc_req *req,
                     struct gp_httpc_res *res)
{
    struct gp_httpc *h;
    res_reset(res);
    int rc = gp_httpc_open(&h, o, res->err, sizeof res->err);
    if (rc)
        return rc;
    rc = gp_httpc_do(h, req, res);
    gp_httpc_close(h);
    return rc;
}

int gp_httpc_get(const struct gp_httpc_opts *o, const char *url, struct gp_buf *body, long *status,
                 char *err, size_t errlen)
{
    *status = 0;
    struct gp_httpc_opts go = *o;
    go.gzip = true;
    struct gp_httpc_req req = {.url = url, .answer = body};
    struct gp_httpc_res res;
    int rc = gp_httpc_request(&go, &req, &res);
    if (rc)
        return gp_seterr(err, errlen, rc, "%s", res.err);
    if (body->err == GP_ETOOBIG)
        return gp_seterr(err, errlen, GP_ETOOBIG, "the answer is larger than %zu MiB", body->max >> 20);
    if (body->err)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    if (res.err[0])
        return gp_seterr(err, errlen, GP_ENET, "%s", res.err);
    *status = res.status;
    return GP_OK;
}

void gp_httpc_head_line(const struct gp_httpc_res *res, char *out, size_t len)
{
    size_t k = 0;
    if (len == 0)
        return;
    for (size_t i = 0; i < res->head_len && k + 1 < len; i++) {
        unsigned char ch = (unsigned char)res->head[i];
        if (ch == '\n' || ch == '\r') {
            if (k > 0)
                break;
            continue;
        }
        out[k++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
    }
    out[k] = '\0';
}

struct upload {
    const char *data;
    size_t len, off;
};

static size_t on_read(char *dst, size_t size, size_t nitems, void *arg)
{
    struct upload *u = arg;
    size_t room = size * nitems, left = u->len - u->off;
    size_t n = left < room ? left : room;
    memcpy(dst, u->data + u->off, n);
    u->off += n;
    return n;
}

int gp_httpc_mail(const struct gp_httpc_mail *m, struct gp_httpc_res *res)
{
    /* A refused STARTTLS or certificate will refuse again: never retried. */
    static const CURLcode permanent[] = {CURLE_USE_SSL_FAILED, CURLE_PEER_FAILED_VERIFICATION,
                                         CURLE_LOGIN_DENIED,   CURLE_UNSUPPORTED_PROTOCOL,
                                         CURLE_URL_MALFORMAT,  CURLE_SSL_CACERT_BADFILE};
    res_reset(res);
    if (gp_httpc_global_init() != GP_OK) {
        snprintf(res->err, sizeof res->err, "libcurl did not initialise");
        return GP_EINTERNAL;
    }
    CURL *c = curl_easy_init();
    struct curl_slist *rcpt = NULL;
    int bad = c == NULL;
    for (size_t i = 0; i < m->nto && !bad; i++) {
        char a[260];
        snprintf(a, sizeof a, "<%s>", m->to[i]);
        bad = append_header(&rcpt, a) != GP_OK;
    }
    char from[260], errbuf[CURL_ERROR_SIZE] = "";
    snprintf(from, sizeof from, "<%s>", m->from);
    struct upload up = {m->msg, m->len, 0};
    int64_t tmo = m->timeout_ms > 0 ? m->timeout_ms : 30000;
    if (!bad) {
        bad |= curl_easy_setopt(c, CURLOPT_URL, m->url) != CURLE_OK;
        bad |= curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "smtp,smtps") != CURLE_OK;
        bad |= curl_easy_setopt(c, CURLOPT_USE_SSL, m->require_tls ? CURLUSESSL_ALL : CURLUSESSL_NONE) !=
               CURLE_OK;
        bad |= curl_easy_setopt(c, CURLOPT_MAIL_FROM, from) != CURLE_OK;
        bad |= curl_easy_setopt(c, CURLOPT_MAIL_RCPT, rcpt) != CURLE_OK;
        bad |= curl_easy_setopt(c, CURLOPT_UPLOAD, 1L) != CURLE_OK;
        bad |= curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read) != CURLE_OK;
        bad |= curl_easy_setopt(c, CURLOPT_READDATA, &up) != CURLE_OK;
        bad |= curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)m->len) != CURLE_OK;
        bad |= curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) != CURLE_OK;
        bad |= curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)tmo) != CURLE_OK;
        bad |= curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(tmo < 10000 ? tmo : 10000)) != CURLE_OK;
        bad |= curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf) != CURLE_OK;
        if (m->username && *m->username) {
            bad |= curl_easy_setopt(c, CURLOPT_USERNAME, m->username) != CURLE_OK;
            bad |= curl_easy_setopt(c, CURLOPT_PASSWORD, m->password ? m->password : "") != CURLE_OK;
        }
        if (m->ca_file && *m->ca_file)
            bad |= curl_easy_setopt(c, CURLOPT_CAINFO, m->ca_file) != CURLE_OK;
        if (m->insecure_skip_verify) {
            bad |= curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L) != CURLE_OK;
            bad |= curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L) != CURLE_OK;
        }
    }
    int rc = GP_OK;
    if (bad) {
        rc = GP_EINTERNAL;
        snprintf(res->err, sizeof res->err, "libcurl refused an option");
    } else {
        CURLcode cc = curl_easy_perform(c);
        finish(c, cc, errbuf, permanent, sizeof permanent / sizeof permanent[0], res);
    }
    curl_slist_free_all(rcpt);
    curl_easy_cleanup(c);
    gp_httpc_global_cleanup();
    return rc;
}

char *gp_httpc_escape(const char *s)
{
    char *e = curl_easy_escape(NULL, s, 0);
    if (!e)
        return NULL;
    char *copy = strdup(e); /* the caller frees with free(), not curl_free() */
    curl_free(e);
    return copy;
}

void gp_httpc_url_label(const char *url, char *out, size_t len)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
    if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
        curl_url_get(u, CURLUPART_PORT, &port, 0);
        curl_url_get(u, CURLUPART_PATH, &path, 0);
        snprintf(out, len, "%s://%s%s%s%s", scheme, host, port ? ":" : "", port ? port : "",
                 path ? path : "");
    } else {
        snprintf(out, len, "invalid-url");
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_url_cleanup(u);
}

int gp_httpc_check_url(const char *what, const char *url, char *err, size_t errlen)
{
    char label[512];
    gp_httpc_url_label(url, label, sizeof label);
    CURLU *u = curl_url();
    if (!u)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    char *scheme = NULL, *host = NULL;
    CURLUcode uc = curl_url_set(u, CURLUPART_URL, url, 0);
    int rc = GP_OK;
    if (uc != CURLUE_OK)
        rc = gp_seterr(err, errlen, GP_ECONFIG, "%s '%s': %s", what, label, curl_url_strerror(uc));
    else if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
             (strcmp(scheme, "http") && strcmp(scheme, "https")))
        rc = gp_seterr(err, errlen, GP_ECONFIG, "%s '%s': the scheme must be http or https", what, label);
    else if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host)
        rc = gp_seterr(err, errlen, GP_ECONFIG, "%s '%s' has no host", what, label);
    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(u);
    return rc;
}

size_t gp_httpc_url_secrets(const char *url, char **parts, size_t max)
{
    static const CURLUPart which[] = {CURLUPART_PATH, CURLUPART_QUERY, CURLUPART_USER, CURLUPART_PASSWORD};
    size_t n = 0;
    CURLU *u = curl_url();
    if (!u)
        return 0;
    if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK) {
        for (size_t i = 0; i < sizeof which / sizeof which[0] && n < max; i++) {
            char *v = NULL;
            if (curl_url_get(u, which[i], &v, 0) == CURLUE_OK && v && strlen(v) > 1 &&
                (parts[n] = strdup(v)) != NULL)
                n++;
            curl_free(v);
        }
    }
    curl_url_cleanup(u);
    return n;
}
