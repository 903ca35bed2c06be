/*
 * push_http.c - see push_http.h.
 *
 * One curl easy handle per target, reused for every request so the
 * connection (and a TLS session) stays open between ticks. Only the
 * answer's status, Retry-After (libcurl parses both the seconds and the
 * HTTP-date forms) and the first bytes of its body are kept. Signals are
 * off (CURLOPT_NOSIGNAL: the agent is threaded) and a progress callback
 * lets the owner cancel a request that hangs when the agent stops.
 */
#include "agent/push_http.h"

#include "lib/err.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef GP_VERSION
#define GP_VERSION "0.0.0"
#endif

struct gp_push_http {
    CURL *curl;
    struct curl_slist *headers;
    char *url;
    char body[256]; /* start of the response body */
    size_t body_len;
    const atomic_int *cancel;
};

static pthread_mutex_t global_mu = PTHREAD_MUTEX_INITIALIZER;
static int global_refs;

int gp_push_http_global_init(void)
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

void gp_push_http_global_cleanup(void)
{
    pthread_mutex_lock(&global_mu);
    if (global_refs > 0 && --global_refs == 0)
        curl_global_cleanup();
    pthread_mutex_unlock(&global_mu);
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    struct gp_push_http *h = arg;
    size_t len = size * n, room = sizeof h->body - 1 - h->body_len;
    size_t take = len < room ? len : room;
    memcpy(h->body + h->body_len, p, take);
    h->body_len += take;
    return len;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    const struct gp_push_http *h = arg;
    return h->cancel && atomic_load(h->cancel) ? 1 : 0;
}

void gp_push_url_label(const char *url, char *out, size_t len)
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

static int check_url(const char *url, char *err, size_t errlen)
{
    char label[512];
    gp_push_url_label(url, label, sizeof label);
    CURLU *u = curl_url();
    if (!u)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    char *scheme = NULL, *host = NULL;
    CURLUcode uc = curl_url_set(u, CURLUPART_URL, url, 0);
    int rc = GP_OK;
    if (uc != CURLUE_OK)
        rc = gp_seterr(err, errlen, GP_ECONFIG, "push URL '%s': %s", label, curl_url_strerror(uc));
    else if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
             (strcmp(scheme, "http") && strcmp(scheme, "https")))
        rc = gp_seterr(err, errlen, GP_ECONFIG, "push URL '%s': the scheme must be http or https",
                       label);
    else if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host)
        rc = gp_seterr(err, errlen, GP_ECONFIG, "push URL '%s' has no host", label);
    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(u);
    return rc;
}

int gp_push_http_open(struct gp_push_http **out, const char *url, const char *bearer,
                      int64_t timeout_ms, char *err, size_t errlen)
{
    int rc = check_url(url, err, errlen);
    if (rc)
        return rc;
    struct gp_push_http *h = calloc(1, sizeof *h);
    if (!h)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    h->url = strdup(url);
    h->curl = curl_easy_init();
    const char *hdrs[] = {"Content-Encoding: snappy", "Content-Type: application/x-protobuf",
                          "X-Prometheus-Remote-Write-Version: 0.1.0", "Expect:"};
    for (size_t i = 0; i < sizeof hdrs / sizeof hdrs[0]; i++) {
        struct curl_slist *l = curl_slist_append(h->headers, hdrs[i]);
        if (!l)
            goto nomem;
        h->headers = l;
    }
    if (bearer && *bearer) {
        size_t n = strlen(bearer) + 32;
        char *a = malloc(n);
        if (!a)
            goto nomem;
        snprintf(a, n, "Authorization: Bearer %s", bearer);
        struct curl_slist *l = curl_slist_append(h->headers, a);
        memset(a, 0, n); /* the token does not linger in freed memory */
        free(a);
        if (!l)
            goto nomem;
        h->headers = l;
    }
    if (!h->url || !h->curl)
        goto nomem;
    CURL *c = h->curl;
    int bad = 0;
    bad |= curl_easy_setopt(c, CURLOPT_URL, h->url) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_HTTPHEADER, h->headers) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_USERAGENT, "gpulse/" GP_VERSION) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_POST, 1L) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout_ms < 5000 ? timeout_ms : 5000)) !=
           CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_WRITEDATA, h) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_XFERINFODATA, h) != CURLE_OK;
    if (bad) {
        gp_push_http_close(h);
        return gp_seterr(err, errlen, GP_EINTERNAL, "libcurl refused an option");
    }
    *out = h;
    return GP_OK;
nomem:
    gp_push_http_close(h);
    return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
}

int gp_push_http_add_headers(struct gp_push_http *h, const char *const *hdrs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct curl_slist *l = curl_slist_append(h->headers, hdrs[i]);
        if (!l)
            return GP_ENOMEM;
        h->headers = l;
    }
    return curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, h->headers) == CURLE_OK ? GP_OK : GP_ENOMEM;
}

/* Keeps the first line of the body, printable ASCII only (it goes to logs). */
static void body_summary(const struct gp_push_http *h, char *out, size_t len)
{
    size_t k = 0;
    for (size_t i = 0; i < h->body_len && k + 1 < len; i++) {
        char ch = h->body[i];
        if (ch == '\n' || ch == '\r')
            break;
        out[k++] = (ch >= 0x20 && ch < 0x7f) ? ch : '?';
    }
    out[k] = '\0';
}

int gp_push_http_post(struct gp_push_http *h, const void *body, size_t len, const atomic_int *cancel,
                      struct gp_push_result *res)
{
    memset(res, 0, sizeof *res);
    res->retry_after_ms = -1;
    h->body_len = 0;
    h->cancel = cancel;
    CURL *c = h->curl;
    if (curl_easy_setopt(c, CURLOPT_POSTFIELDS, body) != CURLE_OK ||
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len) != CURLE_OK)
        return GP_ENOMEM;
    CURLcode cc = curl_easy_perform(c);
    if (cc != CURLE_OK) {
        snprintf(res->msg, sizeof res->msg, "%s",
                 cc == CURLE_ABORTED_BY_CALLBACK ? "cancelled: the agent is stopping"
                                                 : curl_easy_strerror(cc));
        return GP_OK;
    }
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    res->status = (int)code;
    curl_off_t ra = -1;
    if (curl_easy_getinfo(c, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
        res->retry_after_ms = (int64_t)ra * 1000;
    body_summary(h, res->msg, sizeof res->msg);
    return GP_OK;
}

void gp_push_http_close(struct gp_push_http *h)
{
    if (!h)
        return;
    if (h->curl)
        curl_easy_cleanup(h->curl);
    curl_slist_free_all(h->headers);
    free(h->url);
    free(h);
}
