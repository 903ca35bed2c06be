/* top_http.c - see top_http.h; the transport is net/httpc's. */
#include "top_http.h"

#include "lib/err.h"
#include "net/httpc.h"

int gp_top_http_get(const char *what, const char *url, const char *token, struct gp_buf *body,
                    long *status, char *err, size_t errlen)
{
    struct gp_httpc_opts o = {.timeout_ms = 5000, .user_agent = "gpulse-top/" GP_VERSION, .bearer = token};
    char why[256];
    int rc = gp_httpc_get(&o, url, body, status, why, sizeof why);
    return rc ? gp_seterr(err, errlen, rc, "%s: %s", what, why) : GP_OK;
}
