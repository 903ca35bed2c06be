/*
 * http_post.c - see http_post.h.
 *
 * One easy handle per send: notifications are rare (a few a minute at
 * most) and each comes from the sender thread, so keeping a connection
 * open buys nothing and a fresh handle keeps no state between receivers.
 * Only the status, Retry-After (libcurl parses the seconds and the
 * HTTP-date forms) and the first 512 bytes of the answer are kept; the
 * snippet is reduced to one line of printable ASCII before it goes into
 * the outcome, then redacted like libcurl's error text.
 */
#include "notify/http_post.h"

#include "lib/err.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef GP_VERSION
#define GP_VERSION "0.0.0"
#endif

#define ANSWER_KEEP 512

struct answer {
    char data[ANSWER_KEEP];
    size_t len;
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    struct answer *a = arg;
    size_t len = size * n, room = sizeof a->data - a->len;
    size_t take = len < room ? len : room;
    memcpy(a->data + a->len, p, take);
    a->len += take;
    return len;
}

enum gp_send_result gp_http_post_classify(int status)
{
    if (status >= 200 && status < 300)
        return GP_SEND_OK;
    if (status == 429 || (status >= 500 && status < 600))
        return GP_SEND_RETRY;
    return GP_SEND_FAIL;
}

/* Transport errors that will not go away by themselves: the address is wrong. */
static bool permanent_curl_error(CURLcode cc)
{
    switch (cc) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_LOGIN_DENIED:
        return true;
    default:
        return false;
    }
}

void gp_http_post_redact(const char *s, const char *const *secrets, size_t n, char *out,
                         size_t outlen)
{
    static const char mark[] = "[redacted]";
    size_t k = 0;
    if (outlen == 0)
        return;
    while (*s && k + 1 < outlen) {
        size_t best = 0;
        for (size_t i = 0; i < n; i++) {
            size_t l = secrets[i] ? strlen(secrets[i]) : 0;
            if (l > best && strncmp(s, secrets[i], l) == 0)
                best = l;
        }
        if (best) {
            for (const char *m = mark; *m && k + 1 < outlen; m++)
                out[k++] = *m;
            s += best;
        } else {
            out[k++] = *s++;
        }
    }
    out[k] = '\0';
}

/* The parts of url that carry secrets (path, query, user, password), each curl_free'd by the caller. */
static size_t url_secrets(const char *url, char **parts, size_t max)
{
    static const CURLUPart which[] = {CURLUPART_PATH, CURLUPART_QUERY, CURLUPART_USER,
                                      CURLUPART_PASSWORD};
    size_t n = 0;
    CURLU *u = curl_url();
    if (!u)
        return 0;
    if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK) {
        for (size_t i = 0; i < sizeof which / sizeof which[0] && n < max; i++) {
            char *v = NULL;
            if (curl_url_get(u, which[i], &v, 0) == CURLUE_OK && v && strlen(v) > 1)
                parts[n++] = v;
            else
                curl_free(v);
        }
    }
    curl_url_cleanup(u);
    return n;
}

/* One line of printable ASCII from the answer (it goes to logs and the API). */
static void snippet(const struct answer *a, char *out, size_t len)
{
    size_t k = 0;
    for (size_t i = 0; i < a->len && k + 1 < len; i++) {
        unsigned char ch = (unsigned char)a->data[i];
        if (ch == '\n' || ch == '\r') {
            if (k > 0)
                break;
            continue;
        }
        out[k++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
    }
    out[k] = '\0';
}

/* Writes text into out->detail, redacted of the URL, its secret parts and the token. */
static void set_detail(const struct gp_http_post *p, struct gp_send_outcome *out, const char *text)
{
    char *parts[4];
    size_t np = url_secrets(p->url, parts, 4);
    const char *secrets[6];
    size_t n = 0;
    secrets[n++] = p->url;
    secrets[n++] = p->bearer;
    for (size_t i = 0; i < np; i++)
        secrets[n++] = parts[i];
    gp_http_post_redact(text, secrets, n, out->detail, sizeof out->detail);
    for (size_t i = 0; i < np; i++)
        curl_free(parts[i]);
}

static int setup_fail(struct gp_send_outcome *out, int code, const char *what)
{
    out->result = GP_SEND_RETRY;
    snprintf(out->detail, sizeof out->detail, "%s", what);
    return code;
}

int gp_http_post_send(const struct gp_http_post *p, struct gp_send_outcome *out)
{
    memset(out, 0, sizeof *out);
    long timeout = p->timeout_ms > 0 ? (long)p->timeout_ms : 10000L;
    CURL *c = curl_easy_init();
    if (!c)
        return setup_fail(out, GP_ENOMEM, "out of memory");
    struct curl_slist *hdrs = NULL;
    char line[1200];
    const char *fixed[] = {"Content-Type: application/json", "Expect:"};
    int rc = GP_OK;
    for (size_t i = 0; i < 2 && rc == GP_OK; i++) {
        struct curl_slist *l = curl_slist_append(hdrs, fixed[i]);
        if (!l)
            rc = GP_ENOMEM;
        else
            hdrs = l;
    }
    if (rc == GP_OK && p->notice_id && *p->notice_id) {
        snprintf(line, sizeof line, "X-Gpulse-Notification-Id: %s", p->notice_id);
        struct curl_slist *l = curl_slist_append(hdrs, line);
        if (!l)
            rc = GP_ENOMEM;
        else
            hdrs = l;
    }
    if (rc == GP_OK && p->bearer && *p->bearer) {
        int w = snprintf(line, sizeof line, "Authorization: Bearer %s", p->bearer);
        struct curl_slist *l = w > 0 && (size_t)w < sizeof line ? curl_slist_append(hdrs, line) : NULL;
        memset(line, 0, sizeof line); /* the token does not linger on the stack */
        if (!l)
            rc = w > 0 && (size_t)w < sizeof line ? GP_ENOMEM : GP_ECONFIG;
        else
            hdrs = l;
    }
    if (rc != GP_OK) {
        curl_slist_free_all(hdrs);
        curl_easy_cleanup(c);
        if (rc == GP_ECONFIG) {
            out->result = GP_SEND_FAIL;
            snprintf(out->detail, sizeof out->detail, "the bearer token is too long");
            return GP_OK;
        }
        return setup_fail(out, rc, "out of memory");
    }
    struct answer ans = {.len = 0};
    char curl_err[CURL_ERROR_SIZE] = "";
    int bad = 0;
    bad |= curl_easy_setopt(c, CURLOPT_URL, p->url) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_USERAGENT, "gpulse/" GP_VERSION) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_POST, 1L) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_POSTFIELDS, p->body) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)p->len) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout < 5000 ? timeout : 5000L) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_err) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_WRITEDATA, &ans) != CURLE_OK;
    if (bad) {
        curl_slist_free_all(hdrs);
        curl_easy_cleanup(c);
        return setup_fail(out, GP_EINTERNAL, "libcurl refused an option");
    }
    CURLcode cc = curl_easy_perform(c);
    char text[600];
    if (cc != CURLE_OK) {
        out->result = permanent_curl_error(cc) ? GP_SEND_FAIL : GP_SEND_RETRY;
        snprintf(text, sizeof text, "%s", curl_err[0] ? curl_err : curl_easy_strerror(cc));
        set_detail(p, out, text);
    } else {
        long code = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        out->status = (int)code;
        out->result = gp_http_post_classify(out->status);
        curl_off_t ra = -1;
        if (out->result == GP_SEND_RETRY && curl_easy_getinfo(c, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK &&
            ra > 0)
            out->retry_after_ms = (int64_t)ra * 1000;
        char snip[200];
        snippet(&ans, snip, sizeof snip);
        if (code >= 300 && code < 400)
            snprintf(text, sizeof text, "HTTP %ld (redirects are not followed)%s%s", code,
                     snip[0] ? ": " : "", snip);
        else
            snprintf(text, sizeof text, "HTTP %ld%s%s", code, snip[0] ? ": " : "", snip);
        set_detail(p, out, text);
    }
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    return GP_OK;
}
