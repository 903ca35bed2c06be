/* http.c - libmicrohttpd glue; see http.h. */
#include "http.h"

#include "agent/config.h"
#include "lib/err.h"
#include "lib/log.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct gp_http {
    struct MHD_Daemon *d;
    gp_http_handler handler;
    void *ctx;
    unsigned port;
};

struct gp_http_request {
    struct MHD_Connection *conn;
    const char *method, *path;
};

const char *gp_http_method(const struct gp_http_request *r) { return r->method; }
const char *gp_http_path(const struct gp_http_request *r) { return r->path; }

const char *gp_http_query(const struct gp_http_request *r, const char *key)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    (void)version, (void)upload;
    struct gp_http *h = cls;
    /* First call per request only announces the headers. */
    if (*con_cls == NULL) {
        *con_cls = h;
        return MHD_YES;
    }
    if (*upload_size) {
        *upload_size = 0; /* no route takes a body yet: drained and answered 405 */
        return MHD_YES;
    }
    struct gp_http_request req = {conn, method, url};
    struct gp_http_response resp = {200, "text/plain; charset=utf-8", NULL, {0}};
    gp_buf_init(&resp.body, 0);
    if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
        gp_http_error(&resp, 405, "method not allowed");
        resp.allow = "GET, HEAD";
    } else {
        h->handler(h->ctx, &req, &resp);
    }
    if (resp.body.err) {
        gp_http_error(&resp, 500, "response too large or out of memory");
    }
    size_t len;
    char *data = gp_buf_steal(&resp.body, &len);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, data ? data : (char *)"", data ? MHD_RESPMEM_MUST_FREE
                                                                            : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        free(data);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", resp.content_type);
    if (resp.allow)
        MHD_add_response_header(r, "Allow", resp.allow);
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)resp.status, r);
    MHD_destroy_response(r);
    return ret;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n')
        msg[--n] = '\0';
    gp_log(GP_LOG_DEBUG, "http", msg, "%s", "");
}

int gp_http_start(struct gp_http **out, const char *listen, gp_http_handler handler, void *ctx,
                  char *err, size_t errlen)
{
    char host[128];
    unsigned port;
    int rc = gp_parse_listen(listen, host, sizeof host, &port, err, errlen);
    if (rc)
        return rc;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
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
                         "invalid listen address '%s': the address must be an IPv4 or IPv6 literal", listen);
    }
    struct gp_http *h = calloc(1, sizeof *h);
    if (!h)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    h->handler = handler;
    h->ctx = ctx;
    h->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR,
                            (struct sockaddr *)&ss, MHD_OPTION_THREAD_POOL_SIZE, 2U,
                            MHD_OPTION_CONNECTION_LIMIT, 256U, MHD_OPTION_CONNECTION_TIMEOUT, 30U,
                            MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
    if (!h->d) {
        free(h);
        return gp_seterr(err, errlen, GP_ENET,
                         "cannot listen on '%s' (address in use, or not an address of this host?)", listen);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : port;
    *out = h;
    return GP_OK;
}

unsigned gp_http_port(const struct gp_http *h) { return h->port; }

void gp_http_stop(struct gp_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->d);
    free(h);
}
