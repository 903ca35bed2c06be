/*
 * push_http.c - see push_http.h.
 *
 * What is remote-write about a push target's HTTP: its headers and how an
 * answer becomes a gp_push_result. The transport (one kept-alive handle
 * per target, timeouts, Retry-After in both forms, cancelling a request
 * that hangs when the agent stops) is net/httpc's.
 */
#include "ingest/push_http.h"

#include "lib/err.h"
#include "net/httpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gp_push_http {
    struct gp_httpc *c;
    char *url;
};

static const char *const rw_headers[] = {"Content-Encoding: snappy", "Content-Type: application/x-protobuf",
                                         "X-Prometheus-Remote-Write-Version: 0.1.0"};
#define NRW (sizeof rw_headers / sizeof rw_headers[0])

int gp_push_http_open(struct gp_push_http **out, const char *url, const char *bearer,
                      const char *const *headers, size_t nheaders, int64_t timeout_ms, char *err,
                      size_t errlen)
{
    int rc = gp_httpc_check_url("push URL", url, err, errlen);
    if (rc)
        return rc;
    struct gp_push_http *h = calloc(1, sizeof *h);
    const char **all = calloc(NRW + nheaders, sizeof *all);
    if (!h || !all || !(h->url = strdup(url))) {
        free(all);
        gp_push_http_close(h);
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    }
    memcpy(all, rw_headers, sizeof rw_headers);
    for (size_t i = 0; i < nheaders; i++)
        all[NRW + i] = headers[i];
    struct gp_httpc_opts o = {.timeout_ms = timeout_ms, .bearer = bearer, .headers = all,
                              .nheaders = NRW + nheaders};
    rc = gp_httpc_open(&h->c, &o, err, errlen);
    free(all);
    if (rc) {
        gp_push_http_close(h);
        return rc;
    }
    *out = h;
    return GP_OK;
}

int gp_push_http_post(struct gp_push_http *h, const void *body, size_t len, const atomic_int *cancel,
                      struct gp_push_result *res)
{
    memset(res, 0, sizeof *res);
    res->retry_after_ms = -1;
    struct gp_httpc_req req = {.url = h->url, .body = body, .len = len, .cancel = cancel};
    struct gp_httpc_res r;
    if (gp_httpc_do(h->c, &req, &r))
        return GP_ENOMEM;
    if (r.err[0]) {
        snprintf(res->msg, sizeof res->msg, "%s", r.cancelled ? "cancelled: the agent is stopping" : r.err);
        return GP_OK;
    }
    res->status = r.status;
    res->retry_after_ms = r.retry_after_ms;
    gp_httpc_head_line(&r, res->msg, sizeof res->msg);
    return GP_OK;
}

void gp_push_http_close(struct gp_push_http *h)
{
    if (!h)
        return;
    gp_httpc_close(h->c);
    free(h->url);
    free(h);
}
