/*
 * remediate_k8s.c - the Kubernetes action of remediation (remediate.h):
 * cordon a node and put gpulse's taint on it, or take both back.
 *
 * Through the API server, as a service account: GET /api/v1/nodes/NAME
 * for the node's taints and resourceVersion, then PATCH the same path
 * with a JSON merge patch (application/merge-patch+json, RFC 7386):
 * spec.unschedulable and the whole spec.taints list (a merge patch
 * replaces a list, and NodeSpec.taints has no strategic-merge key, so
 * the list sent is the node's own taints with gpulse's added or taken
 * out), with metadata.resourceVersion so that a change made between the
 * GET and the PATCH answers 409 instead of being overwritten; a 409 is
 * retried once from the GET. The token is read from its file at each
 * action: projected service-account tokens are rotated.
 */
#include "insight/remediate.h"

#include "lib/clock.h"
#include "lib/err.h"
#include "net/httpc.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ANSWER_MAX (4u << 20)

/* The API server's base URL: the configured one, else the in-cluster
 * service from the environment; "" when neither. */
static void api_base(const struct gp_rem_k8s *k, char *out, size_t len)
{
    if (k->api && k->api[0]) {
        snprintf(out, len, "%s", k->api);
    } else {
        const char *h = getenv("KUBERNETES_SERVICE_HOST"), *p = getenv("KUBERNETES_SERVICE_PORT");
        if (h && h[0] && p && p[0])
            snprintf(out, len, strchr(h, ':') ? "https://[%s]:%s" : "https://%s:%s", h, p);
        else
            out[0] = '\0';
    }
    size_t n = strlen(out);
    while (n && out[n - 1] == '/')
        out[--n] = '\0';
}

/* The token file's first line into tok; GP_OK, or GP_EIO with detail. */
static int read_token(const char *path, char *tok, size_t len, char *err, size_t errlen)
{
    tok[0] = '\0';
    if (!path || !path[0])
        return GP_OK;
    FILE *f = fopen(path, "r");
    if (!f)
        return gp_seterr(err, errlen, GP_EIO, "cannot read the service account token '%s'", path);
    size_t n = fread(tok, 1, len - 1, f);
    fclose(f);
    tok[n] = '\0';
    tok[strcspn(tok, "\r\n")] = '\0';
    if (!tok[0])
        return gp_seterr(err, errlen, GP_EIO, "the service account token '%s' is empty", path);
    return GP_OK;
}

json_t *gp_rem_k8s_taints(const char *answer, size_t len, const struct gp_rem_k8s *k, bool cordon,
                          const char *value, char *rv, size_t rvlen)
{
    json_t *node = json_loadb(answer, len, 0, NULL);
    json_t *meta = json_object_get(node, "metadata");
    const char *v = json_string_value(json_object_get(meta, "resourceVersion"));
    if (!v || strlen(v) >= rvlen) {
        json_decref(node);
        return NULL;
    }
    snprintf(rv, rvlen, "%s", v);
    json_t *out = json_array();
    json_t *old = json_object_get(json_object_get(node, "spec"), "taints");
    size_t i;
    json_t *t;
    json_array_foreach(old, i, t) {
        /* the API server's own taints go back as they came; a taint that
         * is not an object would be refused by it, so it is not sent */
        const char *key = json_string_value(json_object_get(t, "key"));
        if (json_is_object(t) && (!key || strcmp(key, k->taint_key)))
            json_array_append(out, t);
    }
    if (cordon)
        json_array_append_new(out, json_pack("{s:s, s:s, s:s}", "key", k->taint_key, "value", value,
                                             "effect", "NoSchedule"));
    json_decref(node);
    return out;
}

int gp_rem_k8s_node(const struct gp_rem_k8s *k, const char *node, bool cordon, const char *value,
                    int64_t timeout_ms, struct gp_rem_k8s_result *res)
{
    memset(res, 0, sizeof *res);
    int64_t t0 = gp_mono_ms();
    char base[512];
    api_base(k, base, sizeof base);
    snprintf(res->url, sizeof res->url, "%s/api/v1/nodes/%s", base, node);
    if (!base[0])
        return gp_seterr(res->detail, sizeof res->detail, GP_ECONFIG,
                         "no Kubernetes API server: set remediation_kubernetes_api or run in a pod");
    char tok[8192];
    int rc = read_token(k->token_file, tok, sizeof tok, res->detail, sizeof res->detail);
    if (rc)
        return rc;
    static const char *const hdr[] = {"Content-Type: application/merge-patch+json",
                                      "Accept: application/json"};
    struct gp_httpc_opts ho = {.timeout_ms = timeout_ms, .bearer = tok, .headers = hdr,
                               .nheaders = 2,
                               .ca_file = k->ca_file && !access(k->ca_file, R_OK) ? k->ca_file : NULL};
    struct gp_httpc *h;
    rc = gp_httpc_open(&h, &ho, res->detail, sizeof res->detail);
    memset(tok, 0, sizeof tok);
    if (rc)
        return rc;
    struct gp_buf ans;
    gp_buf_init(&ans, ANSWER_MAX);
    struct gp_httpc_res hr;
    rc = GP_ENET;
    for (int attempt = 0; attempt < 2; attempt++) {
        gp_buf_reset(&ans);
        struct gp_httpc_req get = {.url = res->url, .answer = &ans};
        char line[160];
        if (gp_httpc_do(h, &get, &hr) || hr.status != 200) {
            gp_httpc_head_line(&hr, line, sizeof line);
            res->http_status = hr.status;
            rc = gp_seterr(res->detail, sizeof res->detail, GP_ENET, "cannot read node '%s': %s%s%s", node,
                           hr.status ? "" : hr.err, hr.status ? "answered " : "",
                           hr.status ? line : "");
            if (hr.status)
                snprintf(res->detail + strlen(res->detail), sizeof res->detail - strlen(res->detail),
                         " (HTTP %d)", hr.status);
            break;
        }
        char rv[128];
        json_t *taints = gp_rem_k8s_taints(ans.data, ans.len, k, cordon, value, rv, sizeof rv);
        if (!taints) {
            rc = gp_seterr(res->detail, sizeof res->detail, GP_EPARSE,
                           "cannot read node '%s': the answer is not a Node with a resourceVersion", node);
            break;
        }
        json_t *patch = json_pack("{s:{s:s}, s:{s:b, s:o}}", "metadata", "resourceVersion", rv, "spec",
                                  "unschedulable", cordon, "taints", taints);
        char *body = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
        json_decref(patch);
        if (!body) {
            rc = gp_seterr(res->detail, sizeof res->detail, GP_ENOMEM, "out of memory");
            break;
        }
        snprintf(res->body, sizeof res->body, "%s", body);
        gp_buf_reset(&ans);
        struct gp_httpc_req pr = {.url = res->url, .method = "PATCH", .body = body,
                                  .len = strlen(body), .answer = &ans};
        int drc = gp_httpc_do(h, &pr, &hr);
        free(body);
        res->http_status = hr.status;
        if (!drc && hr.status == 200) {
            rc = GP_OK;
            break;
        }
        gp_httpc_head_line(&hr, line, sizeof line);
        rc = gp_seterr(res->detail, sizeof res->detail, GP_ENET, "cannot patch node '%s': %s%s", node,
                       hr.status ? "answered " : hr.err, hr.status ? line : "");
        if (hr.status)
            snprintf(res->detail + strlen(res->detail), sizeof res->detail - strlen(res->detail),
                     " (HTTP %d)", hr.status);
        if (hr.status != 409)
            break; /* 409: the node changed since the GET; read it again once */
    }
    gp_buf_free(&ans);
    gp_httpc_close(h);
    res->duration_ms = gp_mono_ms() - t0;
    return rc;
}
