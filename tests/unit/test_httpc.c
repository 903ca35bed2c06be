/* test_httpc.c - net/httpc: the one HTTP client, against a local server. */
#include "lib/buf.h"
#include "lib/err.h"
#include "net/httpc.h"
#include "test.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A server that answers by path: /big (a 64 KiB body), /redirect (302),
 * /busy (503 with an HTTP-date Retry-After), anything else 200 with the
 * request's method, Authorization and custom header in the body. */
struct srv {
    struct MHD_Daemon *d;
    unsigned port;
    char base[64];
};

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *size, void **state)
{
    (void)cls, (void)version, (void)data;
    if (!*state) {
        *state = (void *)1;
        return MHD_YES;
    }
    if (*size) { /* the body is not needed */
        *size = 0;
        return MHD_YES;
    }
    char text[70000];
    unsigned status = 200;
    if (!strcmp(url, "/big")) {
        memset(text, 'x', 65536);
        text[65536] = '\0';
    } else {
        const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
        const char *x = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Test");
        snprintf(text, sizeof text, "\n%s auth=%s x=%s\x01\nsecond line", method, auth ? auth : "-",
                 x ? x : "-");
        status = !strcmp(url, "/redirect") ? 302 : !strcmp(url, "/busy") ? 503 : 200;
    }
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_COPY);
    if (status == 302)
        MHD_add_response_header(r, "Location", "/elsewhere");
    if (status == 503) /* far in the future: the client turns it into a delay */
        MHD_add_response_header(r, "Retry-After", "Fri, 31 Dec 2099 23:59:59 GMT");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

static void srv_start(struct srv *s)
{
    memset(s, 0, sizeof *s);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, on_request, NULL,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a, MHD_OPTION_END);
    CHECK(s->d != NULL);
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    CHECK(i != NULL);
    s->port = i->port;
    snprintf(s->base, sizeof s->base, "http://127.0.0.1:%u", s->port);
}

/* A POST on a kept handle carries the bearer and the headers; the head
 * line is the first non-empty line, printable only; a GET follows on the
 * same handle. */
static void test_post_then_get_on_one_handle(void)
{
    struct srv s;
    srv_start(&s);
    CHECK_INT(gp_httpc_global_init(), GP_OK);
    const char *hdrs[] = {"X-Test: yes"};
    struct gp_httpc_opts o = {.timeout_ms = 5000, .bearer = "tok", .headers = hdrs, .nheaders = 1};
    struct gp_httpc *h;
    char err[200];
    CHECK_INT(gp_httpc_open(&h, &o, err, sizeof err), GP_OK);
    char url[128], line[100];
    snprintf(url, sizeof url, "%s/x", s.base);
    struct gp_httpc_req req = {.url = url, .body = "abc", .len = 3};
    struct gp_httpc_res res;
    CHECK_INT(gp_httpc_do(h, &req, &res), GP_OK);
    CHECK_INT(res.status, 200);
    CHECK_STR(res.err, "");
    CHECK_INT(res.retry_after_ms, -1);
    gp_httpc_head_line(&res, line, sizeof line);
    CHECK_STR(line, "POST auth=Bearer tok x=yes?");
    req.body = NULL;
    CHECK_INT(gp_httpc_do(h, &req, &res), GP_OK);
    gp_httpc_head_line(&res, line, sizeof line);
    CHECK_STR(line, "GET auth=Bearer tok x=yes?");
    gp_httpc_close(h);
    gp_httpc_global_cleanup();
    MHD_stop_daemon(s.d);
}

/* Redirects are answered, not followed; an HTTP-date Retry-After is read. */
static void test_redirect_and_retry_after(void)
{
    struct srv s;
    srv_start(&s);
    CHECK_INT(gp_httpc_global_init(), GP_OK);
    struct gp_httpc_opts o = {.timeout_ms = 5000};
    char url[128];
    snprintf(url, sizeof url, "%s/redirect", s.base);
    struct gp_httpc_req req = {.url = url};
    struct gp_httpc_res res;
    CHECK_INT(gp_httpc_request(&o, &req, &res), GP_OK);
    CHECK_INT(res.status, 302);
    snprintf(url, sizeof url, "%s/busy", s.base);
    CHECK_INT(gp_httpc_request(&o, &req, &res), GP_OK);
    CHECK_INT(res.status, 503);
    CHECK(res.retry_after_ms > 365LL * 86400 * 1000);
    gp_httpc_global_cleanup();
    MHD_stop_daemon(s.d);
}

/* An answer over the buffer's cap stops the transfer with GP_ETOOBIG. */
static void test_get_caps_the_answer(void)
{
    struct srv s;
    srv_start(&s);
    CHECK_INT(gp_httpc_global_init(), GP_OK);
    struct gp_httpc_opts o = {.timeout_ms = 5000};
    char url[128], err[200];
    snprintf(url, sizeof url, "%s/big", s.base);
    struct gp_buf body;
    gp_buf_init(&body, 1 << 20);
    long status = 0;
    CHECK_INT(gp_httpc_get(&o, url, &body, &status, err, sizeof err), GP_OK);
    CHECK_INT(status, 200);
    CHECK_INT(body.len, 65536);
    gp_buf_free(&body);
    gp_buf_init(&body, 1000);
    CHECK_INT(gp_httpc_get(&o, url, &body, &status, err, sizeof err), GP_ETOOBIG);
    CHECK_STR(err, "the answer is larger than 0 MiB");
    gp_buf_free(&body);
    gp_httpc_global_cleanup();
    MHD_stop_daemon(s.d);
}

/* No answer: libcurl's text, permanent only for what retrying cannot fix;
 * a raised cancel flag stops the request. */
static void test_transport_errors(void)
{
    CHECK_INT(gp_httpc_global_init(), GP_OK);
    struct srv s;
    srv_start(&s);
    char url[128];
    snprintf(url, sizeof url, "%s/x", s.base);
    struct gp_httpc_opts o = {.timeout_ms = 5000};
    atomic_int cancel = 1;
    struct gp_httpc_req req = {.url = url, .cancel = &cancel};
    struct gp_httpc_res res;
    CHECK_INT(gp_httpc_request(&o, &req, &res), GP_OK);
    CHECK(res.cancelled);
    CHECK_INT(res.status, 0);
    req.cancel = NULL;
    MHD_stop_daemon(s.d); /* nothing listens there now */
    CHECK_INT(gp_httpc_request(&o, &req, &res), GP_OK);
    CHECK_INT(res.status, 0);
    CHECK(res.err[0] != '\0');
    CHECK(!res.permanent);
    req.url = "ftp://127.0.0.1/x";
    CHECK_INT(gp_httpc_request(&o, &req, &res), GP_OK);
    CHECK(res.permanent);
    gp_httpc_global_cleanup();
}

/* A header or bearer over 4 KiB is refused at open, by name. */
static void test_oversized_header_refused(void)
{
    char *big = malloc(5000);
    memset(big, 'a', 4999);
    big[4999] = '\0';
    struct gp_httpc_opts o = {.bearer = big};
    struct gp_httpc *h = (struct gp_httpc *)1;
    char err[200];
    CHECK_INT(gp_httpc_open(&h, &o, err, sizeof err), GP_ECONFIG);
    CHECK(h == NULL);
    CHECK_STR(err, "the bearer token is over 4096 bytes");
    const char *hdrs[] = {big};
    o = (struct gp_httpc_opts){.headers = hdrs, .nheaders = 1};
    CHECK_INT(gp_httpc_open(&h, &o, err, sizeof err), GP_ECONFIG);
    CHECK_STR(err, "an HTTP header is over 4096 bytes");
    free(big);
}

static void test_urls(void)
{
    char l[256], err[256];
    CHECK_INT(gp_httpc_check_url("push URL", "http://127.0.0.1:9/w", err, sizeof err), GP_OK);
    CHECK_INT(gp_httpc_check_url("push URL", "ftp://h/x", err, sizeof err), GP_ECONFIG);
    CHECK_STR(err, "push URL 'ftp://h/x': the scheme must be http or https");
    CHECK_INT(gp_httpc_check_url("push URL", "not a url", err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "push URL 'invalid-url': ");
    gp_httpc_url_label("https://u:p@example.com:8443/a?token=y#f", l, sizeof l);
    CHECK_STR(l, "https://example.com:8443/a");
    char *parts[4];
    size_t n = gp_httpc_url_secrets("https://user:pw@h/services/T0/B1?k=v", parts, 4);
    CHECK_INT(n, 4);
    CHECK_STR(parts[0], "/services/T0/B1");
    CHECK_STR(parts[1], "k=v");
    CHECK_STR(parts[2], "user");
    CHECK_STR(parts[3], "pw");
    for (size_t i = 0; i < n; i++)
        free(parts[i]);
    char *e = gp_httpc_escape("a b/c&d=é");
    CHECK_STR(e, "a%20b%2Fc%26d%3D%C3%A9");
    free(e);
}

const struct gp_test gp_tests_httpc[] = {
    {"post_then_get_on_one_handle", test_post_then_get_on_one_handle},
    {"redirect_and_retry_after", test_redirect_and_retry_after},
    {"get_caps_the_answer", test_get_caps_the_answer},
    {"transport_errors", test_transport_errors},
    {"oversized_header_refused", test_oversized_header_refused},
    {"urls", test_urls},
    {0},
};
