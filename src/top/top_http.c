/* top_http.c - see top_http.h. */
#include "top_http.h"

#include "lib/err.h"

#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
    struct gp_buf *b = arg;
    gp_buf_append(b, p, size * n);
    return b->err ? 0 : size * n; /* 0 stops the transfer past the cap */
}

int gp_top_http_get(const char *what, const char *url, const char *token, struct gp_buf *body,
                    long *status, char *err, size_t errlen)
{
    *status = 0;
    CURL *c = curl_easy_init();
    if (!c)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    char h[600] = "", curl_err[CURL_ERROR_SIZE] = "";
    struct curl_slist *hdrs = NULL;
    int rc = GP_OK;
    if (token && *token) {
        snprintf(h, sizeof h, "Authorization: Bearer %s", token);
        hdrs = curl_slist_append(NULL, h);
        memset(h, 0, sizeof h);
        if (!hdrs) {
            rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
            goto done;
        }
    }
    int bad = 0;
    bad |= curl_easy_setopt(c, CURLOPT_URL, url) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_USERAGENT, "gpulse-top/" GP_VERSION) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_err) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK;
    bad |= curl_easy_setopt(c, CURLOPT_WRITEDATA, body) != CURLE_OK;
    if (bad) {
        rc = gp_seterr(err, errlen, GP_EINTERNAL, "libcurl refused an option");
        goto done;
    }
    CURLcode cc = curl_easy_perform(c);
    if (body->err) {
        rc = gp_seterr(err, errlen, body->err, "%s: the answer is larger than %zu MiB", what,
                       body->max >> 20);
        goto done;
    }
    if (cc != CURLE_OK) {
        rc = gp_seterr(err, errlen, GP_ENET, "%s: %s", what, curl_err[0] ? curl_err : curl_easy_strerror(cc));
        goto done;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
done:
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(c);
    return rc;
}
