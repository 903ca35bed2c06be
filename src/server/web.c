/*
 * web.c - the dashboard's static files (docs/dashboard.md): GET / is
 * index.html, GET /assets/NAME the other embedded files
 * (web_assets.h). No token: the page holds no data, it asks the API.
 *
 * Each answer carries its ETag and Cache-Control: no-cache, so a browser
 * revalidates every load and a new binary's files are seen at once while
 * an unchanged file costs a 304. The bytes are sent gzip'ed (made at build
 * time) when Accept-Encoding allows it. The Content-Security-Policy allows
 * only this origin's scripts, styles and connections and no inline
 * script, so an injected string in a label cannot run.
 */
#include "server_int.h"

#include "server/web_assets.h"

#include <string.h>

/* No inline script or style markup; styles set from script (element.style,
 * as uPlot does) are not the policy's concern. Under 128 bytes (http.h). */
#define WEB_CSP                                                                                 \
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "            \
    "frame-ancestors 'none'; form-action 'self'"

static const struct gp_web_asset *find(const char *name)
{
    for (size_t i = 0; i < gp_web_nassets; i++)
        if (!strcmp(gp_web_assets[i].name, name))
            return &gp_web_assets[i];
    return NULL;
}

void gp_srv_handle_web(const struct gp_http_request *req, struct gp_http_response *resp)
{
    const char *path = gp_http_path(req);
    const char *name = !strcmp(path, "/") ? "index.html" : path + strlen("/assets/");
    const struct gp_web_asset *a = strchr(name, '/') ? NULL : find(name);
    if (!a) {
        gp_http_error(resp, 404, "not found");
        return;
    }
    resp->content_type = a->content_type;
    gp_http_add_header(resp, "ETag", "%s", a->etag);
    gp_http_add_header(resp, "Cache-Control", "no-cache");
    gp_http_add_header(resp, "Vary", "Accept-Encoding");
    gp_http_add_header(resp, "X-Content-Type-Options", "nosniff");
    gp_http_add_header(resp, "Content-Security-Policy", "%s", WEB_CSP);
    if (gp_http_etag_match(gp_http_header(req, "If-None-Match"), a->etag)) {
        resp->status = 304;
        return;
    }
    if (gp_http_accepts(gp_http_header(req, "Accept-Encoding"), "gzip")) {
        gp_http_add_header(resp, "Content-Encoding", "gzip");
        gp_buf_append(&resp->body, a->gz, a->gzlen);
    } else {
        gp_buf_append(&resp->body, a->data, a->len);
    }
}
