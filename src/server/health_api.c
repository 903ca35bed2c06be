/*
 * health_api.c - the health states' routes (docs/health.md "Health
 * states", docs/api.md):
 *
 *   GET  /api/v1/health/nodes               every node's state, reasons, GPUs
 *   GET  /api/v1/health/nodes/NODE          one node
 *   POST /api/v1/health/nodes/NODE/healthy  {"by": "...", "comment": "..."}
 *                                           (the write token): a repaired
 *                                           node is healthy again, audited
 *
 * The states themselves are insight/health.c's; the engine feeds them.
 * Marking healthy also undoes what remediation did to the node where it
 * did something (undo_remediation below).
 */
#include "server_int.h"

#include "insight/alerts.h"
#include "insight/health.h"
#include "insight/remediate.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/json.h"
#include "lib/log.h"

#include <string.h>

/* The node named by the path after prefix (up to the suffix's length
 * before its end): "" when empty or too long. */
static void node_of_path(const char *path, size_t prefix, size_t suffix, char *out, size_t len)
{
    size_t n = strlen(path);
    out[0] = '\0';
    if (n < prefix + suffix || n - prefix - suffix >= len)
        return;
    memcpy(out, path + prefix, n - prefix - suffix);
    out[n - prefix - suffix] = '\0';
}

/* A node gpulse drained or cordoned is resumed or uncordoned once
 * marked healthy, where remediation_undo_on_healthy says so
 * (insight/remediate.h "Mark healthy"; it audits what it does). The mark
 * stands whatever the undoing says: it is logged. */
static void undo_remediation(struct gp_server *s, const char *node, const char *by,
                             const char *comment)
{
    int rc = s->rem ? gp_rem_node_healthy(s->rem, node, by, comment) : GP_OK;
    if (rc)
        gp_log(GP_LOG_WARN, "health", "cannot queue undoing the remediation of a node marked healthy",
               "node=\"%s\" error=\"%s\"", node, gp_strerror(rc));
}

static void mark(struct gp_server *s, const struct gp_http_request *req,
                 struct gp_http_response *resp)
{
    static const char pre[] = "/api/v1/health/nodes/", suf[] = "/healthy";
    char node[GP_VIEW_NODE_LEN];
    node_of_path(gp_http_path(req), sizeof pre - 1, sizeof suf - 1, node, sizeof node);
    if (!node[0]) {
        gp_srv_bad(resp, 404, "not_found", "no node in the path (or a name too long)");
        return;
    }
    size_t len;
    const uint8_t *body = gp_http_body(req, &len);
    char by[GP_ALERT_ACK_BY_LEN], comment[GP_ALERT_ACK_COMMENT_LEN], err[256];
    if (!gp_srv_parse_ack(body ? body : (const uint8_t *)"", body ? len : 0, by, sizeof by,
                          comment, sizeof comment, err, sizeof err)) {
        gp_srv_bad(resp, 400, "bad_data", "invalid mark-healthy request: %s", err);
        return;
    }
    int rc = gp_health_mark_healthy(s->health, node, by, comment, gp_wall_ms());
    if (rc == GP_ENOTFOUND) {
        gp_srv_bad(resp, 404, "not_found", "no node '%s' in the health states", node);
        return;
    }
    if (rc) {
        gp_srv_bad(resp, 500, "internal", "cannot store the mark and its audit row in state.db");
        return;
    }
    undo_remediation(s, node, by, comment);
    gp_buf_puts(&resp->body, "{\"status\":\"success\",\"data\":");
    size_t at = resp->body.len;
    rc = gp_health_json(s->health, node, &resp->body);
    if (rc == GP_ENOTFOUND) {
        /* none of its GPUs is in the fleet: the mark forgot the node */
        resp->body.len = at;
        gp_buf_puts(&resp->body, "{\"node\":");
        gp_json_str(&resp->body, node, strlen(node));
        gp_buf_puts(&resp->body, ",\"state\":\"healthy\",\"forgotten\":true}");
        rc = GP_OK;
    }
    gp_buf_puts(&resp->body, "}\n");
    if (rc)
        gp_srv_bad(resp, 500, "internal", "%s", gp_strerror(rc));
}

void gp_srv_handle_health(struct gp_server *s, enum gp_srv_route route,
                          const struct gp_http_request *req, struct gp_http_response *resp)
{
    if (!s->health) {
        gp_srv_bad(resp, 503, "unavailable", "the health states are starting");
        gp_http_add_header(resp, "Retry-After", "5");
        return;
    }
    if (route == GP_SRV_R_HEALTH_MARK) {
        mark(s, req, resp);
        return;
    }
    static const char pre[] = "/api/v1/health/nodes/";
    char node[GP_VIEW_NODE_LEN] = "";
    if (route == GP_SRV_R_HEALTH_NODE) {
        node_of_path(gp_http_path(req), sizeof pre - 1, 0, node, sizeof node);
        if (!node[0]) {
            gp_srv_bad(resp, 404, "not_found", "node name too long");
            return;
        }
    }
    gp_buf_puts(&resp->body, "{\"status\":\"success\",\"data\":");
    int rc = gp_health_json(s->health, node[0] ? node : NULL, &resp->body);
    gp_buf_puts(&resp->body, "}\n");
    if (rc == GP_ENOTFOUND)
        gp_srv_bad(resp, 404, "not_found", "no node '%s' in the health states", node);
    else if (rc)
        gp_srv_bad(resp, 500, "internal", "%s", gp_strerror(rc));
}
