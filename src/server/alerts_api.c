/*
 * alerts_api.c - the alert and silence routes (docs/api.md, the contract
 * in docs/insight.md): parameters and bodies in, insight/alerts.h out,
 * errors in the API's envelope (400 bad_data with the reason).
 *
 *   GET    /prometheus/api/v1/alerts   the active alerts in Prometheus's shape
 *   GET    /api/v1/alerts        state=active|firing|pending|resolved|all,
 *                                kind=, severity=, job=, node=, since=TIME,
 *                                limit=N (1..1000, default 100)
 *   GET    /api/v1/alerts/ID     the newest alert of that id + transitions
 *   POST   /api/v1/silences      {"matchers":{"kind","job","node","gpu",
 *                                "severity"}, "duration":"2h" | "ends_at":T,
 *                                "starts_at":T, "comment":"..."} -> {"id"}
 *   GET    /api/v1/silences      state=active (default) | all
 *   DELETE /api/v1/silences/ID   ends it now
 *   POST   /api/v1/alerts/ID/ack {"by": "...", "comment": "..."} (both
 *                                optional, the body too) -> the alert
 *
 * The write token guards POST and DELETE (server.c's prepare). This file
 * also starts and stops the rules, alerts and engine for server.c, which
 * cannot include the insight headers next to server/jobs.h.
 */
#include "server_int.h"

#include "insight/alerts.h"
#include "insight/detect.h"
#include "insight/remediate.h"
#include "insight/engine.h"
#include "insight/health.h"
#include "insight/promrules.h"
#include "insight/rules.h"
#include "lib/clock.h"
#include "lib/log.h"
#include "lib/duration.h"
#include "lib/err.h"
#include "lib/metrics.h"
#include "query/jobdoc.h"
#include "query/query.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ALERTS_LIMIT_DEFAULT 100
#define ALERTS_LIMIT_MAX 1000

static void list_alerts(struct gp_server *s, const struct gp_http_request *req,
                        struct gp_http_response *resp)
{
    struct gp_alerts_filter f = {.state = -1, .since_ms = INT64_MIN, .limit = ALERTS_LIMIT_DEFAULT};
    const char *v = gp_http_query(req, "state");
    if (v && *v) {
        if (!strcmp(v, "active"))
            f.state = -1;
        else if (!strcmp(v, "all"))
            f.state = -2;
        else if (!strcmp(v, "pending"))
            f.state = GP_ALERT_PENDING;
        else if (!strcmp(v, "firing"))
            f.state = GP_ALERT_FIRING;
        else if (!strcmp(v, "resolved"))
            f.state = GP_ALERT_RESOLVED;
        else {
            gp_srv_bad(resp, 400, "bad_data",
                       "invalid parameter 'state': '%.40s' (use active, firing, pending, resolved or "
                       "all)",
                       v);
            return;
        }
    }
    const char **dst[] = {&f.kind, &f.severity, &f.job, &f.node};
    const char *names[] = {"kind", "severity", "job", "node"};
    for (size_t i = 0; i < 4; i++) {
        v = gp_http_query(req, names[i]);
        *dst[i] = v && *v ? v : NULL;
    }
    enum gp_severity sev;
    if (f.severity && gp_severity_parse(f.severity, &sev)) {
        gp_srv_bad(resp, 400, "bad_data",
                   "invalid parameter 'severity': '%.40s' (use info, warning or critical)", f.severity);
        return;
    }
    v = gp_http_query(req, "since");
    if (v && *v) {
        char err[256];
        if (gp_parse_time_ms(v, &f.since_ms, err, sizeof err)) {
            gp_srv_bad(resp, 400, "bad_data", "invalid parameter 'since': %s", err);
            return;
        }
    }
    if (!gp_srv_query_limit(req, resp, ALERTS_LIMIT_MAX, &f.limit))
        return;
    int rc = gp_alerts_list_json(s->alerts, &f, &resp->body);
    if (rc == GP_ETOOBIG)
        gp_srv_bad(resp, 400, "bad_data", "the answer is larger than %zu bytes: lower 'limit'",
                   resp->body.max);
    else if (rc == GP_ENOMEM)
        gp_srv_bad(resp, 503, "unavailable", "out of memory listing alerts");
    else if (rc)
        gp_srv_bad(resp, 500, "internal", "cannot read the alerts from state.db");
}

/* The answer of GET /api/v1/alerts/ID for a well-formed id. */
static void get_alert_id(struct gp_server *s, const char *id, struct gp_http_response *resp)
{
    int rc = gp_alerts_get_json(s->alerts, id, &resp->body);
    if (rc == GP_ENOTFOUND)
        gp_srv_bad(resp, 404, "not_found", "no alert '%s'", id);
    else if (rc == GP_ENOMEM || rc == GP_ETOOBIG)
        gp_srv_bad(resp, 503, "unavailable", "out of memory reading the alert");
    else if (rc)
        gp_srv_bad(resp, 500, "internal", "cannot read the alert from state.db");
}

static void get_alert(struct gp_server *s, const struct gp_http_request *req,
                      struct gp_http_response *resp)
{
    const char *id = gp_http_path(req) + strlen("/api/v1/alerts/");
    if (strlen(id) != 16 || strspn(id, "0123456789abcdef") != 16) {
        gp_srv_bad(resp, 404, "not_found", "no alert '%.40s' (ids are 16 hex digits)", id);
        return;
    }
    get_alert_id(s, id, resp);
}

/* A time in JSON: a number of Unix seconds or a string gp_parse_time_ms
 * reads. 1 and *ms, or 0 with the reason in err. */
static int json_time(json_t *v, int64_t *ms, char *err, size_t errlen)
{
    if (json_is_number(v)) {
        double x = json_number_value(v);
        if (!isfinite(x) || x < 0 || x > 1e11)
            return snprintf(err, errlen, "a time out of range"), 0;
        *ms = (int64_t)llround(x * 1000);
        return 1;
    }
    if (json_is_string(v))
        return gp_parse_time_ms(json_string_value(v), ms, err, errlen) == GP_OK;
    snprintf(err, errlen, "a time must be Unix seconds or RFC 3339 text");
    return 0;
}

/* Copies the string member name of obj into out; 0 with the reason in err. */
static int json_field(json_t *obj, const char *name, char *out, size_t len, char *err, size_t errlen)
{
    json_t *v = json_object_get(obj, name);
    out[0] = '\0';
    if (!v || json_is_null(v))
        return 1;
    if (!json_is_string(v)) {
        snprintf(err, errlen, "'%s' must be a string", name);
        return 0;
    }
    const char *sv = json_string_value(v);
    if (strlen(sv) >= len) {
        snprintf(err, errlen, "'%s' is longer than %zu bytes", name, len - 1);
        return 0;
    }
    memcpy(out, sv, strlen(sv) + 1);
    return 1;
}

/* Parses a silence body into *si. 1, or 0 with the reason in err. */
/* A request body that must be a JSON object of the NULL-terminated
 * fields (each optional): the object (caller decrefs), or NULL with the
 * reason in err. */
static json_t *load_object(const uint8_t *body, size_t len, const char *const *fields, char *err,
                           size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb((const char *)body, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        snprintf(err, errlen, "the body is not JSON: %s (line %d)", je.text, je.line);
        return NULL;
    }
    if (!json_is_object(root)) {
        snprintf(err, errlen, "the body must be a JSON object");
        json_decref(root);
        return NULL;
    }
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val)
    {
        size_t i = 0;
        while (fields[i] && strcmp(key, fields[i]))
            i++;
        if (!fields[i]) {
            snprintf(err, errlen, "unknown field '%.40s'", key);
            json_decref(root);
            return NULL;
        }
    }
    return root;
}

static int parse_silence(const uint8_t *body, size_t len, int64_t now, struct gp_silence *si,
                         char *err, size_t errlen)
{
    memset(si, 0, sizeof *si);
    static const char *const fields[] = {"matchers", "duration", "ends_at", "starts_at", "comment",
                                         NULL};
    json_t *root = load_object(body, len, fields, err, errlen);
    if (!root)
        return 0;
    int ok = 0;
    const char *key;
    json_t *val;
    json_t *m = json_object_get(root, "matchers");
    if (!json_is_object(m)) {
        snprintf(err, errlen, "'matchers' must be an object with kind, job, node, gpu or severity");
        goto out;
    }
    json_object_foreach(m, key, val)
    {
        if (strcmp(key, "kind") && strcmp(key, "job") && strcmp(key, "node") && strcmp(key, "gpu") &&
            strcmp(key, "severity")) {
            snprintf(err, errlen, "unknown matcher '%.40s' (use kind, job, node, gpu or severity)", key);
            goto out;
        }
    }
    if (!json_field(m, "kind", si->kind, sizeof si->kind, err, errlen) ||
        !json_field(m, "job", si->job, sizeof si->job, err, errlen) ||
        !json_field(m, "node", si->node, sizeof si->node, err, errlen) ||
        !json_field(m, "gpu", si->gpu, sizeof si->gpu, err, errlen) ||
        !json_field(m, "severity", si->severity, sizeof si->severity, err, errlen) ||
        !json_field(root, "comment", si->comment, sizeof si->comment, err, errlen))
        goto out;
    json_t *st = json_object_get(root, "starts_at");
    si->starts_ms = now;
    if (st && !json_time(st, &si->starts_ms, err, errlen))
        goto out;
    json_t *d = json_object_get(root, "duration"), *e = json_object_get(root, "ends_at");
    if (!d == !e) {
        snprintf(err, errlen, "give 'duration' or 'ends_at' (one of them)");
        goto out;
    }
    if (d) {
        int64_t ms;
        char detail[128];
        if (!json_is_string(d) || gp_parse_duration_ms(json_string_value(d), &ms, detail, sizeof detail)) {
            snprintf(err, errlen, "'duration' must be a duration such as \"2h\"");
            goto out;
        }
        if (ms <= 0 || ms > 365LL * 24 * 3600 * 1000) {
            snprintf(err, errlen, "'duration' must be more than 0 and at most 1y");
            goto out;
        }
        si->ends_ms = si->starts_ms + ms;
    } else if (!json_time(e, &si->ends_ms, err, errlen)) {
        goto out;
    }
    ok = 1;
out:
    json_decref(root);
    return ok;
}

static void post_silence(struct gp_server *s, const struct gp_http_request *req,
                         struct gp_http_response *resp)
{
    size_t len;
    const uint8_t *body = gp_http_body(req, &len);
    int64_t now = gp_wall_ms();
    struct gp_silence si;
    char err[256];
    if (!body || !len) {
        gp_srv_bad(resp, 400, "bad_data", "the body must be a JSON silence");
        return;
    }
    if (!parse_silence(body, len, now, &si, err, sizeof err)) {
        gp_srv_bad(resp, 400, "bad_data", "invalid silence: %s", err);
        return;
    }
    int rc = gp_alerts_silence_add(s->alerts, &si, now, err, sizeof err);
    if (rc == GP_EUSAGE || rc == GP_ETOOBIG)
        gp_srv_bad(resp, 400, "bad_data", "invalid silence: %s", err);
    else if (rc)
        gp_srv_bad(resp, 500, "internal", "%s", err);
    else
        gp_buf_printf(&resp->body, "{\"status\":\"success\",\"data\":{\"id\":\"%s\"}}\n", si.id);
}

int gp_srv_parse_ack(const uint8_t *body, size_t len, char *by, size_t bylen, char *comment,
                     size_t commentlen, char *err, size_t errlen)
{
    by[0] = comment[0] = '\0';
    size_t i = 0;
    while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n'))
        i++;
    if (i == len)
        return 1; /* no body: an anonymous ack */
    static const char *const fields[] = {"by", "comment", NULL};
    json_t *root = load_object(body, len, fields, err, errlen);
    if (!root)
        return 0;
    int ok = json_field(root, "by", by, bylen, err, errlen) &&
             json_field(root, "comment", comment, commentlen, err, errlen);
    json_decref(root);
    return ok;
}

static void post_ack(struct gp_server *s, const struct gp_http_request *req,
                     struct gp_http_response *resp)
{
    static const char pre[] = "/api/v1/alerts/";
    const char *path = gp_http_path(req);
    size_t n = gp_srv_path_suffix(path, sizeof pre - 1, "/ack");
    char id[17];
    if (n != 16 || strspn(path + sizeof pre - 1, "0123456789abcdef") < 16) {
        gp_srv_bad(resp, 404, "not_found", "no alert '%.*s' (ids are 16 hex digits)",
                   (int)(n < 40 ? n : 40), path + sizeof pre - 1);
        return;
    }
    memcpy(id, path + sizeof pre - 1, 16);
    id[16] = '\0';
    size_t len;
    const uint8_t *body = gp_http_body(req, &len);
    char by[GP_ALERT_ACK_BY_LEN], comment[GP_ALERT_ACK_COMMENT_LEN], err[256];
    if (!gp_srv_parse_ack(body ? body : (const uint8_t *)"", len, by, sizeof by, comment,
                          sizeof comment, err, sizeof err)) {
        gp_srv_bad(resp, 400, "bad_data", "invalid acknowledgement: %s", err);
        return;
    }
    int rc = gp_alerts_ack(s->alerts, id, by, comment, gp_wall_ms());
    if (rc == GP_ENOTFOUND) {
        gp_srv_bad(resp, 404, "not_found", "no alert '%s'", id);
        return;
    }
    if (rc) {
        gp_srv_bad(resp, 500, "internal", "cannot store the acknowledgement in state.db");
        return;
    }
    gp_log(GP_LOG_INFO, "alerts", "alert acknowledged", "id=%s by=\"%s\"", id, by);
    gp_srv_stream_alert(s, id);
    get_alert_id(s, id, resp);
}

/* Prometheus writes a sample value as Go's FormatFloat(v, 'e', -1, 64):
 * the shortest exponent form that reads back the same. */
static void prom_value(char *out, size_t len, double v)
{
    if (isnan(v)) {
        snprintf(out, len, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(out, len, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    for (int p = 0; p < 17; p++) {
        snprintf(out, len, "%.*e", p, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

/* One gpulse alert (the list's JSON object) as Prometheus's: alertname
 * and severity among the labels, summary/description/runbook_url as
 * annotations, activeAt in RFC 3339. */
static json_t *prom_alert(json_t *a)
{
    json_t *labels = json_object(), *ann = json_object(), *out = json_object();
    json_t *own = json_object_get(a, "labels");
    const char *k;
    json_t *v;
    if (json_is_object(own))
        json_object_foreach(own, k, v) if (json_is_string(v)) json_object_set(labels, k, v);
    json_object_set(labels, "alertname", json_object_get(a, "kind"));
    json_object_set(labels, "severity", json_object_get(a, "severity"));
    static const char *const ann_of[][2] = {
        {"summary", "summary"}, {"evidence", "description"}, {"runbook", "runbook_url"}};
    for (size_t i = 0; i < 3; i++) {
        json_t *x = json_object_get(a, ann_of[i][0]);
        if (json_is_string(x) && json_string_length(x))
            json_object_set(ann, ann_of[i][1], x);
    }
    char when[40] = "0001-01-01T00:00:00Z", val[40] = "NaN";
    json_t *started = json_object_get(a, "started");
    if (json_is_number(started)) {
        double t = json_number_value(started);
        time_t sec = (time_t)floor(t);
        struct tm tm;
        if (gmtime_r(&sec, &tm)) {
            size_t n = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
            snprintf(when + n, sizeof when - n, ".%03dZ", (int)((t - floor(t)) * 1000 + 0.5) % 1000);
        }
    }
    json_t *value = json_object_get(a, "value");
    if (json_is_number(value))
        prom_value(val, sizeof val, json_number_value(value));
    json_object_set_new(out, "labels", labels);
    json_object_set_new(out, "annotations", ann);
    json_object_set(out, "state", json_object_get(a, "state"));
    json_object_set_new(out, "activeAt", json_string(when));
    json_object_set_new(out, "value", json_string(val));
    return out;
}

/* GET /prometheus/api/v1/alerts: the pending and firing alerts (the
 * detectors', the custom rules' and the rule files') in Prometheus's
 * shape, for Grafana and other Prometheus clients. */
static void prom_alerts(struct gp_server *s, struct gp_http_response *resp)
{
    struct gp_alerts_filter f = {.state = -1, .since_ms = INT64_MIN, .limit = GP_ALERTS_MAX};
    struct gp_buf b;
    gp_buf_init(&b, 0);
    int rc = gp_alerts_list_json(s->alerts, &f, &b);
    json_t *doc = rc ? NULL : json_loadb(b.data ? b.data : "", b.len, 0, NULL);
    gp_buf_free(&b);
    json_t *list = json_object_get(doc, "data");
    if (!json_is_array(list)) {
        json_decref(doc);
        gp_srv_bad(resp, 500, "internal", "cannot read the alerts from state.db");
        return;
    }
    json_t *alerts = json_array();
    size_t i;
    json_t *a;
    json_array_foreach(list, i, a) json_array_append_new(alerts, prom_alert(a));
    json_t *out = json_pack("{s:s, s:{s:o}}", "status", "success", "data", "alerts", alerts);
    char *text = out ? json_dumps(out, JSON_COMPACT) : NULL;
    if (text)
        gp_buf_puts(&resp->body, text);
    else
        gp_srv_bad(resp, 500, "internal", "out of memory writing the alerts");
    free(text);
    json_decref(out);
    json_decref(doc);
}

void gp_srv_handle_alerts(struct gp_server *s, enum gp_srv_route route,
                          const struct gp_http_request *req, struct gp_http_response *resp)
{
    if (!s->alerts) {
        gp_srv_bad(resp, 503, "unavailable", "the alerts are not open");
        return;
    }
    const char *m = gp_http_method(req);
    switch (route) {
    case GP_SRV_R_ALERTS:
        list_alerts(s, req, resp);
        break;
    case GP_SRV_R_PROM_ALERTS:
        prom_alerts(s, resp);
        break;
    case GP_SRV_R_ALERT:
        get_alert(s, req, resp);
        break;
    case GP_SRV_R_ALERT_ACK:
        post_ack(s, req, resp);
        break;
    case GP_SRV_R_SILENCES:
        if (!strcmp(m, "POST")) {
            post_silence(s, req, resp);
        } else {
            const char *v = gp_http_query(req, "state");
            if (v && *v && strcmp(v, "active") && strcmp(v, "all")) {
                gp_srv_bad(resp, 400, "bad_data", "invalid parameter 'state': use active or all");
                return;
            }
            int rc = gp_alerts_silences_json(s->alerts, gp_wall_ms(), v && !strcmp(v, "all"),
                                             &resp->body);
            if (rc)
                gp_srv_bad(resp, 500, "internal", "cannot read the silences from state.db");
        }
        break;
    case GP_SRV_R_SILENCE: {
        const char *id = gp_http_path(req) + strlen("/api/v1/silences/");
        int rc = strlen(id) < 17 ? gp_alerts_silence_delete(s->alerts, id, gp_wall_ms())
                                 : GP_ENOTFOUND;
        if (rc == GP_ENOTFOUND)
            gp_srv_bad(resp, 404, "not_found", "no active silence '%.40s'", id);
        else if (rc)
            gp_srv_bad(resp, 500, "internal", "cannot end the silence in state.db");
        else
            gp_buf_puts(&resp->body, "{\"status\":\"success\",\"data\":null}\n");
        break;
    }
    case GP_SRV_R_RULES: {
        /* Prometheus's GET /api/v1/rules (its type filter; 2.42 words) */
        const char *v = gp_http_query(req, "type");
        int type = 0;
        if (v && *v) {
            if (!strcmp(v, "alert"))
                type = 'a';
            else if (!strcmp(v, "record"))
                type = 'r';
            else {
                gp_srv_bad(resp, 400, "bad_data", "invalid query parameter type='%.40s'", v);
                return;
            }
        }
        if (gp_promrules_json(s->promrules, type, &resp->body))
            gp_srv_bad(resp, 503, "unavailable", "out of memory listing the rules");
        break;
    }
    default:
        gp_srv_bad(resp, 404, "not_found", "no such route");
    }
}

/* ---- start and stop ---- */

/* The directory of the config file, under which relative rule_files
 * lie (as Prometheus resolves them); "" without a config file. */
static void config_dir(const char *file, char *out, size_t len)
{
    const char *slash = strrchr(file, '/');
    if (!file[0])
        snprintf(out, len, "%s", "");
    else if (!slash)
        snprintf(out, len, "%s", ".");
    else
        snprintf(out, len, "%.*s", (int)(slash == file ? 1 : slash - file), file);
}

/* rule_files: every file loaded and checked into *def, so a bad file is
 * a config error (exit 2 at start, the old rules kept on a reload)
 * naming file and line. */
static int promrules_read(const struct gp_server *s, struct gp_promrules *def, char *err, size_t errlen)
{
    const char *pats[GP_CFG_LIST_MAX];
    for (unsigned i = 0; i < s->cfg.rule_files.n; i++)
        pats[i] = s->cfg.rule_files.v[i];
    char dir[GP_SERVER_PATH_LEN], detail[768];
    config_dir(s->cfg.config_file, dir, sizeof dir);
    int rc = gp_promrules_load(pats, s->cfg.rule_files.n, dir, def, detail, sizeof detail);
    if (rc)
        return gp_seterr(err, errlen, rc == GP_ENOMEM ? rc : GP_ECONFIG, "rule_files: %s", detail);
    for (size_t i = 0; s->rules && i < s->rules->n; i++)
        if (gp_promrules_has_alert(def, s->rules->r[i].name)) {
            gp_promrules_free(def);
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "rule_files: alert \"%s\" has the name of a rule of the config's rules:",
                             s->rules->r[i].name);
        }
    return GP_OK;
}

static int promrules_load(struct gp_server *s, char *err, size_t errlen)
{
    s->promrules_def = calloc(1, sizeof *s->promrules_def);
    if (!s->promrules_def)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    return promrules_read(s, s->promrules_def, err, errlen);
}

int gp_srv_rules_reload(struct gp_server *s, char *err, size_t errlen)
{
    struct gp_promrules def = {0};
    int rc = promrules_read(s, &def, err, errlen);
    if (!rc && (rc = gp_promrules_run_reload(s->promrules, &def, err, errlen)))
        gp_promrules_free(&def);
    gp_srv_count(&s->rule_reloads[rc != GP_OK], 1);
    __atomic_store_n(&s->rules_reload_failed, rc != GP_OK, __ATOMIC_RELEASE);
    return rc;
}

int gp_server_reload(struct gp_server *s)
{
    char err[1024];
    int rc = s->promrules ? gp_srv_rules_reload(s, err, sizeof err) : GP_OK;
    if (rc)
        gp_log(GP_LOG_ERROR, "server", "reload failed; the rules already loaded stay", "error=\"%s\"", err);
    else
        gp_log(GP_LOG_INFO, "server", "rule_files reloaded", "rule_file_rules=%zu",
               gp_promrules_count(s->promrules));
    return rc;
}

int gp_srv_rules_load(struct gp_server *s, char *err, size_t errlen)
{
    s->rules = calloc(1, sizeof *s->rules);
    if (!s->rules)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    if (!s->cfg.config_file[0])
        return promrules_load(s, err, errlen);
    char detail[512];
    int rc = gp_rules_load_file(s->cfg.config_file, s->rules, detail, sizeof detail);
    if (rc)
        return gp_seterr(err, errlen, rc == GP_ENOMEM ? rc : GP_ECONFIG, "%s: rules: %s",
                         s->cfg.config_file, detail);
    return promrules_load(s, err, errlen);
}

/*
 * The job detectors' inputs: each view job's budget (job_budget) and
 * its cost so far, and its goodput (low_goodput), the job model's as its
 * document shows them, computed
 * without writing the document (the window holds too little of
 * the job to add it up). A document costs a read of the job's series, so
 * a job's cost is recomputed at most every COST_REFRESH_MS; between, the
 * last one stands (a budget is passed a minute late at worst).
 */
#define COST_REFRESH_MS 60000
#define UNKNOWN_REFRESH_MS 10000
#define COST_CACHE 1024

struct job_cost {
    char job[GP_JOB_LEN];
    struct gp_jobdoc_figures fig;
    int64_t at_ms;
};

struct cost_ctx {
    struct gp_server *s;
    struct gp_storage *st;
    struct job_cost cache[COST_CACHE];
    unsigned n;
    bool goodput; /* low_goodput is enabled: every job's figures are read */
    pthread_mutex_t mu; /* the cache: the engine writes, /metrics reads */
};

static struct gp_jobdoc_figures job_cost_now(struct cost_ctx *c, const char *job, int64_t now)
{
    struct job_cost *slot = NULL, *oldest = NULL;
    pthread_mutex_lock(&c->mu);
    for (unsigned i = 0; i < c->n && !slot; i++)
        if (!strcmp(c->cache[i].job, job))
            slot = &c->cache[i];
    /* a job that has not stepped yet (no goodput, or all of it start-up)
     * is read again sooner: its goodput moves off 0 within
     * UNKNOWN_REFRESH_MS of its first steps, not a minute later */
    bool stepped = slot && slot->fig.goodput.ratio > 0;
    if (slot && now - slot->at_ms < (stepped || !c->goodput ? COST_REFRESH_MS : UNKNOWN_REFRESH_MS)) {
        struct gp_jobdoc_figures f = slot->fig;
        pthread_mutex_unlock(&c->mu);
        return f;
    }
    if (!slot && c->n < COST_CACHE)
        slot = &c->cache[c->n++];
    for (unsigned i = 0; !slot && i < c->n; i++)
        if (!oldest || c->cache[i].at_ms < oldest->at_ms)
            oldest = &c->cache[i];
    if (!slot)
        slot = oldest;
    size_t at = (size_t)(slot - c->cache);
    pthread_mutex_unlock(&c->mu);
    /* the document is read without the lock: /metrics does not wait on it */
    char err[256];
    struct gp_jobdoc_figures f;
    if (gp_srv_job_figures(c->s, c->st, job, &f, err, sizeof err) != GP_OK) {
        f.cost = NAN;
        gp_goodput_figures_init(&f.goodput);
    }
    pthread_mutex_lock(&c->mu);
    slot = &c->cache[at];
    snprintf(slot->job, sizeof slot->job, "%s", job);
    slot->fig = f;
    slot->at_ms = now;
    pthread_mutex_unlock(&c->mu);
    return f;
}

/* gpulse_job_goodput_ratio of the jobs judged in the last few minutes. */
static void walk_goodput(struct cost_ctx *c, struct gp_metric_sink *b)
{
    int64_t now = gp_wall_ms();
    bool head = false;
    pthread_mutex_lock(&c->mu);
    for (unsigned i = 0; i < c->n; i++) {
        const struct job_cost *e = &c->cache[i];
        const struct gp_goodput_figures *g = &e->fig.goodput;
        if (!isfinite(g->ratio) || now - e->at_ms > 5 * COST_REFRESH_MS)
            continue;
        if (!head)
            gp_metric_family(b, GP_M_JOB_GOODPUT);
        head = true;
        gp_metric_sample(b, GP_M_JOB_GOODPUT, NULL, "job", e->job, g->ratio);
    }
    pthread_mutex_unlock(&c->mu);
}

static void fill_job_costs(void *ctx, struct gp_view *v)
{
    struct cost_ctx *c = ctx;
    if (c->s->job_budget <= 0 && !c->goodput)
        return;
    int64_t now = gp_wall_ms();
    for (unsigned i = 0; i < v->njobs; i++) {
        struct gp_view_job *j = &v->jobs[i];
        const struct gp_jobdoc_figures f = job_cost_now(c, j->job, now);
        if (c->s->job_budget > 0) {
            j->budget = c->s->job_budget;
            j->cost = f.cost;
        }
        j->goodput_ratio = f.goodput.ratio;
        j->goodput_wall_s = f.goodput.wall;
        j->badput = f.goodput.biggest_badput;
        j->badput_s = j->badput >= 0 ? f.goodput.part[j->badput] : NAN;
    }
}

int gp_srv_alerts_start(struct gp_server *s, struct gp_storage *st, char *err, size_t errlen)
{
    const struct gp_server_config *c = &s->cfg;
    s->costs = calloc(1, sizeof *s->costs);
    if (!s->costs)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    s->costs->s = s;
    s->costs->st = st;
    pthread_mutex_init(&s->costs->mu, NULL);
    struct gp_engine_options eo = {
        .store = st,
        .detectors = gp_detect_fns,
        .job_costs = fill_job_costs,
        .job_costs_ctx = s->costs,
        .rules = s->rules,
        .interval_ms = c->eval_interval_ms,
        .window_ms = c->eval_window_ms,
        .step_ms = c->eval_step_ms,
        .clear_for_ms = c->alert_clear_for_ms,
    };
    int rc = gp_engine_detector_config(c->detectors_disabled, c->detector_overrides, eo.det_cfg, err,
                                       errlen);
    s->costs->goodput = eo.det_cfg[GP_DET_LOW_GOODPUT].enabled;
    if (rc || (rc = gp_alerts_open(&s->alerts, c->data_dir, gp_wall_ms(), err, errlen)))
        return rc;
    eo.alerts = s->alerts;
    struct gp_health_options ho = {.xid_repeat = (unsigned)c->health_xid_repeat,
                                   .xid_window_ms = c->health_xid_window_ms,
                                   .forget_ms = c->health_forget_after_ms};
    if ((rc = gp_health_open(&s->health, c->data_dir, &ho, err, errlen)))
        return rc;
    eo.health = s->health;
    gp_srv_promql_limits(s, &eo.query_limits);
    /* the rule files' groups run in the engine's ticks, over the same store */
    struct gp_promrules_options po = {
        .store = st,
        .default_interval_ms = c->eval_interval_ms,
        .tick_ms = c->eval_interval_ms,
    };
    gp_srv_promql_limits(s, &po.limits);
    if ((rc = gp_promrules_run_new(&s->promrules, s->promrules_def, &po, err, errlen)))
        return rc;
    eo.promrules = s->promrules;
    eo.rem = s->rem;
    /* remediation acts on alerts that start firing */
    if (s->rem && (rc = gp_alerts_add_listener(s->alerts, gp_rem_listener, s->rem)))
        return gp_seterr(err, errlen, rc, "cannot register the remediation hooks");
    /* notifications: the router hears every transition from the first tick */
    gp_alert_listener fn;
    void *fctx;
    if ((rc = gp_srv_notify_open(s, &fn, &fctx, err, errlen)))
        return rc;
    if ((rc = gp_alerts_add_listener(s->alerts, fn, fctx)))
        return gp_seterr(err, errlen, rc, "cannot register the notification router");
    /* the dashboard's streams hear them too */
    if (s->streams && (rc = gp_alerts_add_listener(s->alerts, gp_srv_stream_on_alert, s)))
        return gp_seterr(err, errlen, rc, "cannot register the event streams");
    if ((rc = gp_engine_new(&s->engine, &eo, err, errlen)))
        return rc;
    if ((rc = gp_engine_start(s->engine)))
        return gp_seterr(err, errlen, rc, "cannot start the evaluation thread");
    struct gp_alerts_stats as;
    gp_alerts_stats(s->alerts, &as);
    gp_log(GP_LOG_INFO, "server", "alerts open",
           "rules=%zu rule_file_rules=%zu active_alerts=%llu eval_interval_ms=%lld eval_window_ms=%lld "
           "eval_step_ms=%lld",
           s->rules ? s->rules->n : 0, gp_promrules_count(s->promrules), (unsigned long long)as.active,
           (long long)c->eval_interval_ms,
           (long long)c->eval_window_ms, (long long)c->eval_step_ms);
    return GP_OK;
}

void gp_srv_alerts_stop(struct gp_server *s)
{
    gp_engine_close(s->engine);
    s->engine = NULL;
    gp_health_close(s->health); /* after the engine: its ticks feed it */
    s->health = NULL;
    gp_promrules_run_free(s->promrules); /* after the engine: its ticks run them */
    s->promrules = NULL;
    gp_promrules_free(s->promrules_def);
    free(s->promrules_def);
    s->promrules_def = NULL;
    gp_srv_notify_stop(s); /* no transition comes after the engine: router, then outbox */
    gp_alerts_close(s->alerts);
    s->alerts = NULL;
    gp_rules_free(s->rules);
    free(s->rules);
    s->rules = NULL;
    if (s->costs)
        pthread_mutex_destroy(&s->costs->mu);
    free(s->costs);
    s->costs = NULL;
}

void gp_srv_walk_alert_metrics(struct gp_server *s, struct gp_metric_sink *b)
{
    if (!s->engine || !s->alerts)
        return;
    struct gp_engine_stats es;
    struct gp_alerts_stats as;
    gp_engine_stats(s->engine, &es);
    gp_alerts_stats(s->alerts, &as);
    gp_metric_one(b, GP_M_EVAL_TICKS, (double)es.ticks);
    static const char *const err_parts[] = {"tick", "detector", "rule", "alerts_db"};
    const uint64_t errs[] = {es.tick_errors, es.detector_errors, es.rule_errors, as.db_errors};
    gp_metric_family(b, GP_M_EVAL_ERRORS);
    for (size_t i = 0; i < 4; i++)
        gp_metric_sample(b, GP_M_EVAL_ERRORS, NULL, "part", err_parts[i], (double)errs[i]);
    static const char *const time_parts[] = {"view", "detectors", "rules", "total"};
    const uint64_t ns[] = {es.last_view_ns, es.last_detect_ns, es.last_rules_ns, es.last_tick_ns};
    gp_metric_family(b, GP_M_EVAL_LAST);
    for (size_t i = 0; i < 4; i++)
        gp_metric_sample(b, GP_M_EVAL_LAST, NULL, "part", time_parts[i], (double)ns[i] / 1e9);
    gp_metric_family(b, GP_M_RULE_RELOADS);
    gp_metric_sample(b, GP_M_RULE_RELOADS, NULL, "result", "success", (double)gp_srv_get(&s->rule_reloads[0]));
    gp_metric_sample(b, GP_M_RULE_RELOADS, NULL, "result", "failure", (double)gp_srv_get(&s->rule_reloads[1]));
    gp_metric_one(b, GP_M_RULE_RELOAD_OK, !__atomic_load_n(&s->rules_reload_failed, __ATOMIC_ACQUIRE));
    gp_promrules_walk_metrics(s->promrules, b);
    gp_metric_one(b, GP_M_EVAL_VIEW_GPUS, (double)es.gpus);
    gp_metric_family(b, GP_M_ALERTS);
    gp_metric_sample(b, GP_M_ALERTS, NULL, "state", "pending", (double)as.pending);
    gp_metric_sample(b, GP_M_ALERTS, NULL, "state", "firing", (double)as.firing);
    gp_metric_one(b, GP_M_ALERT_TRANSITIONS, (double)as.transitions);
    if (s->health) {
        struct gp_health_stats hs;
        gp_health_stats(s->health, &hs);
        gp_metric_family(b, GP_M_HEALTH_NODES);
        for (int i = 0; i < GP_HS__COUNT; i++)
            gp_metric_sample(b, GP_M_HEALTH_NODES, NULL, "state", gp_health_state_names[i], hs.nodes[i]);
        gp_metric_family(b, GP_M_HEALTH_GPUS);
        for (int i = 0; i < GP_HS__COUNT; i++)
            gp_metric_sample(b, GP_M_HEALTH_GPUS, NULL, "state", gp_health_state_names[i], hs.gpus[i]);
        gp_metric_one(b, GP_M_HEALTH_PREFLIGHT_FAILED, hs.preflight_failed);
    }
    if (s->costs)
        walk_goodput(s->costs, b);
    if (s->rem) {
        struct gp_rem_stats rs;
        gp_rem_stats(s->rem, &rs);
        gp_metric_family(b, GP_M_REMEDIATION_REFUSED);
        for (size_t i = 0; i < GP_REM_REFUSE__COUNT; i++)
            gp_metric_sample(b, GP_M_REMEDIATION_REFUSED, NULL, "reason", gp_rem_refusal_names[i],
                             (double)rs.refused[i]);
        struct gp_rem_breaker rb;
        gp_rem_breaker_state(s->rem, &rb);
        gp_metric_one(b, GP_M_REMEDIATION_BREAKER_NODES, rb.acted);
        gp_metric_one(b, GP_M_REMEDIATION_BREAKER_LIMIT, rb.limit);
        gp_metric_one(b, GP_M_REMEDIATION_BREAKER_REFUSED, (double)rs.breaker_refused);
    }
}
