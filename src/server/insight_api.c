/*
 * insight_api.c - GET /api/v1/recommendations and GET /api/v1/audit:
 * parameters in, insight/recommend.h and insight/remediate.h out,
 * errors in the API's error envelope.
 *
 *   /api/v1/recommendations  job=ID (that job), else the most recent
 *                            jobs, newest first: limit=N (1..100,
 *                            default 20), state=... as /api/v1/jobs.
 *                            data: [{"job", "state", "recommendations":
 *                            [...recommend.h entries]}]
 *   /api/v1/audit            kind=, node=, job=, decision=, since=TIME,
 *                            limit=N (1..1000, default 100); newest first
 *
 * A job's recommendations come from the same job document that
 * /api/v1/jobs/ID answers (without series), read back with jansson and
 * handed to the diagnosis tree, so both routes agree.
 */
#include "server_int.h"

#include "insight/recommend.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "query/query.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define REC_LIMIT_DEFAULT 20
#define REC_LIMIT_MAX 100
#define AUDIT_LIMIT_DEFAULT 100
#define AUDIT_LIMIT_MAX 1000

/* The recommendations of one job as {"job","state","recommendations"}:
 * a new object (caller owns), or NULL with *rc and err set. */
static json_t *job_recs(struct gp_server *s, struct gp_storage *st, const char *id, int *rc, char *err,
                        size_t errlen)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    *rc = gp_srv_job_doc(s, st, id, 0, &b, err, errlen);
    if (!*rc && b.err)
        *rc = b.err;
    json_t *doc = *rc ? NULL : json_loadb(b.data, b.len, 0, NULL);
    gp_buf_free(&b);
    if (*rc)
        return NULL;
    json_t *recs = json_array();
    json_t *o = json_object();
    if (!doc || !recs || !o) {
        json_decref(doc);
        json_decref(recs);
        json_decref(o);
        *rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory advising job '%.200s'", id);
        return NULL;
    }
    struct gp_rec_in in = {.doc = doc, .prices = &s->prices};
    *rc = gp_recommend(&in, recs);
    json_t *state = json_object_get(doc, "state");
    if (*rc || json_object_set_new(o, "job", json_string(id)) ||
        json_object_set(o, "state", state ? state : json_null()) ||
        json_object_set_new(o, "recommendations", recs)) {
        if (!*rc)
            recs = NULL; /* set_new released it */
        json_decref(recs);
        json_decref(o);
        json_decref(doc);
        *rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory advising job '%.200s'", id);
        return NULL;
    }
    json_decref(doc);
    return o;
}

static void answer(struct gp_http_response *resp, json_t *data)
{
    char *text = json_dumps(data, JSON_COMPACT);
    json_decref(data);
    if (!text) {
        gp_srv_bad(resp, 503, "unavailable", "out of memory writing the answer");
        return;
    }
    gp_buf_puts(&resp->body, "{\"status\":\"success\",\"data\":");
    gp_buf_puts(&resp->body, text);
    gp_buf_puts(&resp->body, "}\n");
    free(text);
    if (resp->body.err)
        gp_srv_bad(resp, 400, "bad_data", "the answer is larger than %zu bytes: lower 'limit'",
                   resp->body.max);
}

static void do_recommendations(struct gp_server *s, struct gp_storage *st,
                               const struct gp_http_request *req, struct gp_http_response *resp)
{
    if (!s->jobs) {
        gp_srv_bad(resp, 503, "unavailable", "the jobs registry is not open");
        return;
    }
    char err[512] = "";
    int rc;
    const char *id = gp_http_query(req, "job");
    json_t *data = json_array();
    if (!data) {
        gp_srv_bad(resp, 503, "unavailable", "out of memory");
        return;
    }
    if (id && *id) {
        json_t *o = job_recs(s, st, id, &rc, err, sizeof err);
        if (!o) {
            json_decref(data);
            gp_srv_bad(resp, rc == GP_ENOTFOUND ? 404 : rc == GP_ENOMEM ? 503 : 500,
                       rc == GP_ENOTFOUND ? "not_found" : rc == GP_ENOMEM ? "unavailable" : "internal",
                       "%s", err);
            return;
        }
        json_array_append_new(data, o);
        answer(resp, data);
        return;
    }
    struct gp_jobs_filter f = {.state = -1, .since_ms = INT64_MIN, .limit = REC_LIMIT_DEFAULT};
    if (!gp_srv_query_limit(req, resp, REC_LIMIT_MAX, &f.limit)) {
        json_decref(data);
        return;
    }
    const char *v = gp_http_query(req, "state");
    if (v && *v) {
        enum gp_job_state js;
        if (gp_job_state_parse(v, strlen(v), &js)) {
            json_decref(data);
            gp_srv_bad(resp, 400, "bad_data",
                       "invalid parameter 'state': '%.40s' (use running, finished, failed, killed "
                       "or lost)",
                       v);
            return;
        }
        f.state = (int)js;
    }
    /* the registry's own list answers newest first; read its ids back */
    struct gp_buf lb;
    gp_buf_init(&lb, 0);
    rc = gp_jobs_list_json(s->jobs, &f, gp_wall_ms(), &lb);
    json_t *list = rc ? NULL : json_loadb(lb.data, lb.len, 0, NULL);
    gp_buf_free(&lb);
    const json_t *jobs = json_object_get(list, "data");
    if (!json_is_array(jobs)) {
        json_decref(list);
        json_decref(data);
        gp_srv_bad(resp, 503, "unavailable", "cannot list the jobs");
        return;
    }
    for (size_t i = 0; i < json_array_size(jobs); i++) {
        const char *jid = json_string_value(json_object_get(json_array_get(jobs, i), "id"));
        if (!jid)
            continue;
        json_t *o = job_recs(s, st, jid, &rc, err, sizeof err);
        if (!o && rc == GP_ENOTFOUND)
            continue; /* gone between the list and the read */
        if (!o || json_array_append_new(data, o)) {
            json_decref(list);
            json_decref(data);
            gp_srv_bad(resp, rc == GP_ENOMEM ? 503 : 500, rc == GP_ENOMEM ? "unavailable" : "internal",
                       "%s", err);
            return;
        }
    }
    json_decref(list);
    answer(resp, data);
}

static void do_audit(struct gp_server *s, const struct gp_http_request *req,
                     struct gp_http_response *resp)
{
    if (!s->rem) {
        gp_srv_bad(resp, 503, "unavailable", "the audit log is not open");
        return;
    }
    struct gp_audit_filter f = {.since_ms = INT64_MIN, .limit = AUDIT_LIMIT_DEFAULT};
    static const char *const keys[] = {"kind", "node", "job", "decision"};
    const char **fields[] = {&f.kind, &f.node, &f.job, &f.decision};
    for (size_t i = 0; i < 4; i++) {
        const char *v = gp_http_query(req, keys[i]);
        if (v && *v)
            *fields[i] = v;
    }
    if (f.decision && gp_rem_decision_check(f.decision)) {
        gp_srv_bad(resp, 400, "bad_data",
                   "invalid parameter 'decision': '%.40s' (use skipped, refused, rate_limited, "
                   "dry_run, ran, failed or timed_out)",
                   f.decision);
        return;
    }
    const char *v = gp_http_query(req, "since");
    if (v && *v) {
        char err[256];
        if (gp_parse_time_ms(v, &f.since_ms, err, sizeof err)) {
            gp_srv_bad(resp, 400, "bad_data", "invalid parameter 'since': %s", err);
            return;
        }
    }
    if (!gp_srv_query_limit(req, resp, AUDIT_LIMIT_MAX, &f.limit))
        return;
    int rc = gp_rem_audit_json(s->rem, &f, &resp->body);
    if (rc == GP_ETOOBIG)
        gp_srv_bad(resp, 400, "bad_data", "the answer is larger than %zu bytes: lower 'limit'",
                   resp->body.max);
    else if (rc)
        gp_srv_bad(resp, 503, "unavailable", "cannot read the audit log: %s", gp_strerror(rc));
}

void gp_srv_handle_insight(struct gp_server *s, struct gp_storage *st, enum gp_srv_route route,
                           const struct gp_http_request *req, struct gp_http_response *resp)
{
    if (route == GP_SRV_R_RECOMMENDATIONS)
        do_recommendations(s, st, req, resp);
    else
        do_audit(s, req, resp);
}
