/*
 * jobs_api.c - GET /api/v1/jobs (the registry, filtered) and
 * GET /api/v1/jobs/ID (the job document of docs/jobs.md, in the
 * Prometheus-style envelope): parameters in, server/jobs.h and
 * query/jobdoc.h out, errors in the API's error envelope.
 *
 *   /api/v1/jobs      state=running|finished|failed|killed|lost,
 *                     since=TIME (seen at or after), node=NAME,
 *                     limit=N (1..1000, default 100)
 *   /api/v1/jobs/ID   series=0|1 (adds the series, at most 500 points)
 *   /api/v1/jobs/ID/report   format=html (default) | json | text: the
 *                     end-of-run report (src/report) of the document with
 *                     its series (without, when they make it too large),
 *                     advice added, as `gpulse report` shows it
 *
 * ID is the rest of the path, as the HTTP layer decoded it
 * (percent-escapes included), so an id may hold '/', '?' or spaces when
 * the client escapes them; one ending in "/report" is read as the report
 * route.
 */
#include "server_int.h"

#include "lib/clock.h"
#include "lib/err.h"
#include "query/jobdoc.h"
#include "query/query.h"
#include "report/report.h"
#include "server/jobs.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define JOBS_LIMIT_DEFAULT 100
#define JOBS_LIMIT_MAX 1000

static void do_list(struct gp_server *s, const struct gp_http_request *req,
                    struct gp_http_response *resp)
{
    struct gp_jobs_filter f = {.state = -1, .since_ms = INT64_MIN, .node = NULL,
                               .limit = JOBS_LIMIT_DEFAULT};
    const char *v = gp_http_query(req, "state");
    if (v && *v) {
        enum gp_job_state st;
        if (gp_job_state_parse(v, strlen(v), &st)) {
            gp_srv_bad(resp, 400, "bad_data",
                       "invalid parameter 'state': '%.40s' (use running, finished, failed, killed "
                       "or lost)",
                       v);
            return;
        }
        f.state = (int)st;
    }
    v = gp_http_query(req, "since");
    if (v && *v) {
        char err[256];
        if (gp_parse_time_ms(v, &f.since_ms, err, sizeof err)) {
            gp_srv_bad(resp, 400, "bad_data", "invalid parameter 'since': %s", err);
            return;
        }
    }
    v = gp_http_query(req, "node");
    if (v && *v)
        f.node = v;
    if (!gp_srv_query_limit(req, resp, JOBS_LIMIT_MAX, &f.limit))
        return;
    int rc = gp_jobs_list_json(s->jobs, &f, gp_wall_ms(), &resp->body);
    if (rc == GP_ETOOBIG)
        gp_srv_bad(resp, 400, "bad_data", "the answer is larger than %zu bytes: lower 'limit'",
                   resp->body.max);
    else if (rc)
        gp_srv_bad(resp, 503, "unavailable", "out of memory listing jobs");
}

/* The job's document into out, or (out NULL) the detectors' figures alone
 * into *fig. */
static int job_doc_or_cost(struct gp_server *s, struct gp_storage *st, const char *id, int series,
                           struct gp_buf *out, struct gp_jobdoc_figures *fig, char *err, size_t errlen)
{
    if (strlen(id) > GP_JOB_ID_MAX)
        return gp_seterr(err, errlen, GP_ENOTFOUND, "no job with an id of %zu bytes (at most %d)",
                         strlen(id), GP_JOB_ID_MAX);
    int64_t now = gp_wall_ms();
    struct gp_jobs_entry job;
    int rc = gp_jobs_get(s->jobs, id, now, &job);
    if (rc == GP_ENOTFOUND)
        return gp_seterr(err, errlen, rc, "no job '%.300s'", id);
    if (rc)
        return gp_seterr(err, errlen, rc, "out of memory reading the job");
    struct gp_jobdoc_rank *ranks = calloc(job.nranks ? job.nranks : 1, sizeof *ranks);
    if (!ranks) {
        gp_job_free(&job);
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory reading the job");
    }
    for (size_t i = 0; i < job.nranks; i++)
        ranks[i] = (struct gp_jobdoc_rank){job.ranks[i].node, job.ranks[i].rank, job.ranks[i].local_rank,
                                           job.ranks[i].world_size};
    int64_t start = job.start_ms != GP_JOBS_NONE ? job.start_ms : job.first_ms;
    struct gp_jobdoc_in in = {
        .id = job.id,
        .scheme = job.scheme,
        .state = gp_job_state_name(job.state),
        .start_ms = start,
        .end_ms = job.end_ms,
        .range_end_ms = job.end_ms != GP_JOBS_NONE ? job.end_ms
                        : job.state == GP_JOBS_RUNNING ? now
                                                       : job.last_ms,
        .exit_status = job.exit_status,
        .ranks = ranks,
        .nranks = job.nranks,
        .price_per_gpu_hour = s->gpu_hour_price,
        .prices = &s->prices,
        .budget = s->job_budget,
        .series = series,
    };
    rc = out ? gp_jobdoc_write(st, &in, out, err, errlen) : gp_jobdoc_figures(st, &in, fig, err, errlen);
    free(ranks);
    gp_job_free(&job);
    return rc;
}

int gp_srv_job_doc(struct gp_server *s, struct gp_storage *st, const char *id, int series,
                   struct gp_buf *out, char *err, size_t errlen)
{
    return job_doc_or_cost(s, st, id, series, out, NULL, err, errlen);
}

int gp_srv_job_figures(struct gp_server *s, struct gp_storage *st, const char *id,
                       struct gp_jobdoc_figures *fig, char *err, size_t errlen)
{
    fig->cost = NAN;
    gp_goodput_figures_init(&fig->goodput);
    return job_doc_or_cost(s, st, id, 0, NULL, fig, err, errlen);
}

int gp_srv_job_cost(struct gp_server *s, struct gp_storage *st, const char *id, double *cost,
                    char *err, size_t errlen)
{
    struct gp_jobdoc_figures fig;
    int rc = gp_srv_job_figures(s, st, id, &fig, err, errlen);
    *cost = fig.cost;
    return rc;
}

static void do_job(struct gp_server *s, struct gp_storage *st, const struct gp_http_request *req,
                   struct gp_http_response *resp)
{
    const char *id = gp_http_path(req) + strlen("/api/v1/jobs/");
    int series = 0;
    const char *v = gp_http_query(req, "series");
    if (v && *v) {
        if (!strcmp(v, "1") || !strcmp(v, "true"))
            series = 1;
        else if (strcmp(v, "0") && strcmp(v, "false")) {
            gp_srv_bad(resp, 400, "bad_data", "invalid parameter 'series': use 0 or 1");
            return;
        }
    }
    char err[256] = "";
    gp_buf_puts(&resp->body, "{\"status\":\"success\",\"data\":");
    int rc = gp_srv_job_doc(s, st, id, series, &resp->body, err, sizeof err);
    gp_buf_puts(&resp->body, "}\n");
    if (rc == GP_ENOTFOUND)
        gp_srv_bad(resp, 404, "not_found", "%s", err);
    else if (rc == GP_ENOMEM)
        gp_srv_bad(resp, 503, "unavailable", "%s", err);
    else if (rc == GP_ETOOBIG)
        gp_srv_bad(resp, 400, "bad_data", "%s: ask without series=1", err);
    else if (rc)
        gp_srv_bad(resp, 500, "internal", "%s", err);
    else if (resp->body.err)
        gp_srv_bad(resp, 400, "bad_data", "the job document is larger than %zu bytes",
                   resp->body.max);
}

static void do_report(struct gp_server *s, struct gp_storage *st, const struct gp_http_request *req,
                      struct gp_http_response *resp)
{
    static const char pre[] = "/api/v1/jobs/";
    const char *fmt = gp_http_query(req, "format");
    if (!fmt || !*fmt)
        fmt = "html";
    if (strcmp(fmt, "html") && strcmp(fmt, "json") && strcmp(fmt, "text")) {
        gp_srv_bad(resp, 400, "bad_data", "invalid parameter 'format': '%.40s' (use html, json or text)",
                   fmt);
        return;
    }
    const char *path = gp_http_path(req);
    size_t n = gp_srv_path_suffix(path, sizeof pre - 1, "/report");
    char id[GP_JOB_ID_MAX + 1];
    if (n > GP_JOB_ID_MAX) {
        gp_srv_bad(resp, 404, "not_found", "no job with an id of %zu bytes (at most %d)", n,
                   GP_JOB_ID_MAX);
        return;
    }
    memcpy(id, path + sizeof pre - 1, n);
    id[n] = '\0';
    struct gp_buf doc;
    gp_buf_init(&doc, 0);
    char err[256] = "";
    int rc = gp_srv_job_doc(s, st, id, 1, &doc, err, sizeof err);
    if (rc == GP_ETOOBIG || (!rc && doc.err)) { /* the series made it too large: without them */
        gp_buf_reset(&doc);
        rc = gp_srv_job_doc(s, st, id, 0, &doc, err, sizeof err);
    }
    json_t *root = !rc && !doc.err ? json_loadb(doc.data, doc.len, 0, NULL) : NULL;
    gp_buf_free(&doc);
    if (rc == GP_ENOTFOUND) {
        gp_srv_bad(resp, 404, "not_found", "%s", err);
        return;
    }
    if (!root || gp_report_advise(root)) {
        json_decref(root);
        gp_srv_bad(resp, rc == GP_ENOMEM ? 503 : 500, rc == GP_ENOMEM ? "unavailable" : "internal",
                   "cannot build the job's report: %s", err[0] ? err : "a bad job document");
        return;
    }
    struct gp_report_opts ro = {.color = false};
    if (!strcmp(fmt, "html")) {
        resp->content_type = "text/html; charset=utf-8";
        rc = gp_report_html(&resp->body, root);
    } else if (!strcmp(fmt, "json")) {
        rc = gp_report_json(&resp->body, root);
    } else {
        resp->content_type = "text/plain; charset=utf-8";
        rc = gp_report_text(&resp->body, root, &ro);
    }
    json_decref(root);
    if (rc)
        gp_srv_bad(resp, rc == GP_ENOMEM ? 503 : 500, rc == GP_ENOMEM ? "unavailable" : "internal",
                   "cannot render the job's report: %s", gp_strerror(rc));
}

void gp_srv_handle_jobs(struct gp_server *s, struct gp_storage *st, enum gp_srv_route route,
                        const struct gp_http_request *req, struct gp_http_response *resp)
{
    if (!s->jobs) {
        gp_srv_bad(resp, 503, "unavailable", "the jobs registry is not open");
        return;
    }
    if (route == GP_SRV_R_JOBS)
        do_list(s, req, resp);
    else if (route == GP_SRV_R_JOB_REPORT)
        do_report(s, st, req, resp);
    else
        do_job(s, st, req, resp);
}
