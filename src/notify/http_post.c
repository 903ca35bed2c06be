/*
 * http_post.c - see http_post.h.
 *
 * One request per send (net/httpc's one-shot form): notifications are
 * rare (a few a minute at most) and each comes from the sender thread, so
 * keeping a connection open buys nothing and a fresh handle keeps no
 * state between receivers. Only the status, Retry-After and the first
 * 512 bytes of the answer are kept; the snippet is reduced to one line of
 * printable ASCII before it goes into the outcome, then redacted like
 * the transport's error text.
 */
#include "notify/http_post.h"

#include "lib/err.h"
#include "net/httpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum gp_send_result gp_http_post_classify(int status)
{
    if (status >= 200 && status < 300)
        return GP_SEND_OK;
    if (status == 429 || (status >= 500 && status < 600))
        return GP_SEND_RETRY;
    return GP_SEND_FAIL;
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

/* Writes text into out->detail, redacted of the URL, its secret parts and the token. */
static void set_detail(const struct gp_http_post *p, struct gp_send_outcome *out, const char *text)
{
    char *parts[4];
    size_t np = gp_httpc_url_secrets(p->url, parts, 4);
    const char *secrets[6];
    size_t n = 0;
    secrets[n++] = p->url;
    secrets[n++] = p->bearer;
    for (size_t i = 0; i < np; i++)
        secrets[n++] = parts[i];
    gp_http_post_redact(text, secrets, n, out->detail, sizeof out->detail);
    for (size_t i = 0; i < np; i++)
        free(parts[i]);
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
    char id[1200] = "";
    const char *hdrs[2] = {"Content-Type: application/json"};
    size_t nh = 1;
    if (p->notice_id && *p->notice_id) {
        snprintf(id, sizeof id, "X-Gpulse-Notification-Id: %s", p->notice_id);
        hdrs[nh++] = id;
    }
    struct gp_httpc_opts o = {.timeout_ms = p->timeout_ms, .bearer = p->bearer, .headers = hdrs, .nheaders = nh};
    struct gp_httpc_req req = {.url = p->url, .body = p->body ? p->body : "", .len = p->len};
    struct gp_httpc_res r;
    int rc = gp_httpc_request(&o, &req, &r);
    if (rc == GP_ECONFIG) {
        out->result = GP_SEND_FAIL;
        snprintf(out->detail, sizeof out->detail, "the bearer token is too long");
        return GP_OK;
    }
    if (rc)
        return setup_fail(out, rc, rc == GP_ENOMEM ? "out of memory" : "libcurl refused an option");
    char text[600];
    if (r.err[0]) {
        out->result = r.permanent ? GP_SEND_FAIL : GP_SEND_RETRY;
        snprintf(text, sizeof text, "%s", r.err);
        set_detail(p, out, text);
        return GP_OK;
    }
    out->status = r.status;
    out->result = gp_http_post_classify(out->status);
    if (out->result == GP_SEND_RETRY && r.retry_after_ms > 0)
        out->retry_after_ms = r.retry_after_ms;
    char snip[200];
    gp_httpc_head_line(&r, snip, sizeof snip);
    if (r.status >= 300 && r.status < 400)
        snprintf(text, sizeof text, "HTTP %d (redirects are not followed)%s%s", r.status, snip[0] ? ": " : "",
                 snip);
    else
        snprintf(text, sizeof text, "HTTP %d%s%s", r.status, snip[0] ? ": " : "", snip);
    set_detail(p, out, text);
    return GP_OK;
}
