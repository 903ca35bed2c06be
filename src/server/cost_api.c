/*
 * cost_api.c - GET /api/v1/fleet (the fleet's use and spend now) and
 * GET /api/v1/cost (cost over a range, by job or node), in the API's
 * envelope. The arithmetic is query/cost.h's; this file reads the
 * store and sorts series out.
 *
 *   /api/v1/fleet   the newest sample of each GPU seen within the last
 *                   5 minutes: activity (DCGM_FI_PROF_SM_ACTIVE, else
 *                   DCGM_FI_DEV_GPU_UTIL / 100), the agent's
 *                   gpulse_gpu_effective_tflops when it sends it, and
 *                   whether a job holds it (its newest series carries a
 *                   `job` label). GPUs known only by memory series count
 *                   with unknown activity. `hosts`: each node's host
 *                   figures (hosts.c), what a fleet without GPUs shows.
 *   /api/v1/cost    by=job|node (default job), start=, end= (RFC 3339 or
 *                   epoch seconds; end defaults to now, start to end - 1d;
 *                   at most 31 days). Each GPU's activity series in the
 *                   range: its samples x its median scrape step are held
 *                   time, priced by its modelName. A GPU's series with a
 *                   job label count for that job; without one, for the
 *                   group `null` (GPUs no job held).
 *
 * A GPU is (Hostname, gpu, GPU_I_ID); for one GPU and job, SM activity
 * wins over coarse utilization. Memory: the selections and samples of one
 * request, freed before it returns.
 */
#include "server_int.h"

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/json.h"
#include "query/query.h"
#include "server/gpu_series.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FLEET_LOOKBACK_MS (5 * 60 * 1000)
#define COST_RANGE_DEFAULT_MS (24LL * 3600 * 1000)
#define COST_RANGE_MAX_MS (31LL * 24 * 3600 * 1000)

/* The names the fleet reads, in the order a GPU's series sort (K_MEM: the
 * last two, either is enough to know the GPU). */
enum kind { K_SM, K_UTIL, K_EFF, K_MEM };
static const char *const fleet_names[] = {"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_GPU_UTIL",
                                          "gpulse_gpu_effective_tflops",
                                          "gpulse_gpu_memory_used_bytes", "DCGM_FI_DEV_FB_USED"};

int gp_srv_fleet_data(struct gp_server *s, struct gp_storage *st, struct gp_buf *out, char *err,
                      size_t errlen)
{
    int64_t now = gp_wall_ms();
    struct gp_store_selection sel = {0};
    struct gp_srv_cand *c = NULL;
    size_t n = 0;
    struct gp_fleet fl = {0};
    struct gp_samples scratch = {0};
    int rc = gp_srv_gpu_series(st, fleet_names, sizeof fleet_names / sizeof fleet_names[0],
                               now - FLEET_LOOKBACK_MS, now, 0, &sel, &c, &n, err, errlen);
    for (size_t i = 0; !rc && i < n;) {
        size_t j = gp_srv_gpu_run(c, n, i, 0);
        /* c[i..j) is one GPU, by kind, newest first within a kind. */
        struct gp_fleet_gpu g = {.model = "", .activity = NAN, .effective_tflops = NAN};
        const struct gp_srv_cand *act = NULL, *eff = NULL, *newest = &c[i];
        for (size_t k = i; k < j; k++) {
            if (!act && (c[k].kind == K_SM || c[k].kind == K_UTIL)) {
                double v = gp_storage_newest_value(st, c[k].s->id, c[k].s->last_ms, FLEET_LOOKBACK_MS,
                                                 &scratch);
                if (isfinite(v)) {
                    act = &c[k];
                    g.activity = c[k].kind == K_UTIL ? v / 100.0 : v;
                }
            }
            if (!eff && c[k].kind == K_EFF) {
                eff = &c[k];
                g.effective_tflops =
                    gp_storage_newest_value(st, c[k].s->id, c[k].s->last_ms, FLEET_LOOKBACK_MS, &scratch);
            }
            if (c[k].s->last_ms > newest->s->last_ms)
                newest = &c[k];
        }
        const struct gp_srv_cand *who = act ? act : newest;
        char model[GP_PRICE_NAME_LEN];
        size_t ml = who->model.len < sizeof model - 1 ? who->model.len : sizeof model - 1;
        memcpy(model, who->model.ptr, ml);
        model[ml] = '\0';
        g.model = model;
        g.allocated = who->job.len > 0;
        rc = gp_fleet_add(&fl, &g, &s->prices);
        i = j;
    }
    if (!rc) {
        gp_buf_putc(out, '{');
        gp_fleet_json_members(&fl, out);
        gp_buf_puts(out, ",\"hosts\":");
        rc = gp_srv_hosts_json(st, now, out, err, errlen);
        gp_buf_putc(out, '}');
    }
    gp_samples_free(&scratch);
    gp_fleet_free(&fl);
    free(c);
    gp_storage_selection_free(&sel);
    return rc;
}

static void do_fleet(struct gp_server *s, struct gp_storage *st, struct gp_http_response *resp)
{
    char err[256] = "";
    gp_buf_puts(&resp->body, "{\"status\":\"success\",\"data\":");
    int rc = gp_srv_fleet_data(s, st, &resp->body, err, sizeof err);
    gp_buf_puts(&resp->body, "}\n");
    if (rc)
        gp_srv_bad(resp, rc == GP_ENOMEM ? 503 : 500, rc == GP_ENOMEM ? "unavailable" : "internal",
                   "reading the fleet: %s", err[0] ? err : gp_strerror(rc));
    else if (resp->body.err)
        gp_srv_bad(resp, 400, "bad_data", "the answer is larger than %zu bytes", resp->body.max);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Median gap between samples (ms); 0 with fewer than two. Sorts g. */
static int64_t median_gap(const int64_t *t, size_t n, int64_t *g)
{
    if (n < 2)
        return 0;
    for (size_t i = 1; i < n; i++)
        g[i - 1] = t[i] - t[i - 1];
    qsort(g, n - 1, sizeof *g, cmp_i64);
    return g[(n - 1) / 2];
}

/* The cost of one group (a job, a node); by NULL: no key (the total). */
struct group {
    struct gp_str key;
    unsigned gpus;
    struct gp_cost_acc acc;
    int64_t first, last;
};

static void group_json(struct gp_buf *b, const struct group *g, const char *by)
{
    if (by) {
        gp_buf_printf(b, "{\"%s\":", by);
        if (g->key.len)
            gp_json_str(b, g->key.ptr, g->key.len);
        else
            gp_buf_puts(b, "null");
        gp_buf_putc(b, ',');
    } else {
        gp_buf_putc(b, '{');
    }
    gp_buf_printf(b, "\"gpus\":%u,\"gpu_hours\":", g->gpus);
    gp_buf_put_double(b, g->acc.gpu_seconds / 3600.0);
    double cost = gp_cost_total(&g->acc), span = (double)(g->last - g->first) / 3.6e6;
    const struct {
        const char *name;
        double v;
    } f[] = {{"cost", cost},
             {"cost_idle", gp_cost_idle(&g->acc)},
             {"cost_unused_compute", gp_cost_unused(&g->acc)},
             {"cost_per_hour", span > 0 ? cost / span : NAN}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        gp_buf_printf(b, ",\"%s\":", f[i].name);
        if (isfinite(f[i].v))
            gp_buf_put_double(b, f[i].v);
        else
            gp_buf_puts(b, "null");
    }
    gp_buf_printf(b, ",\"unpriced_gpus\":%u,\"currency\":\"USD\"}", g->acc.unpriced);
}

static int group_cmp(const void *pa, const void *pb)
{
    const struct group *a = pa, *b = pb;
    if (!a->key.len != !b->key.len)
        return a->key.len ? -1 : 1; /* null last */
    return gp_srv_rw_cmp(a->key, b->key);
}

int gp_srv_activity_series(struct gp_storage *st, int64_t start, int64_t end, int64_t since,
                           struct gp_store_selection *sel, struct gp_srv_cand **c, size_t *n,
                           char *err, size_t errlen)
{
    return gp_srv_gpu_series_since(st, fleet_names, 2, start, end, since, 1, sel, c, n, err, errlen);
}

int gp_srv_range(const struct gp_http_request *req, struct gp_http_response *resp, int64_t *start,
                 int64_t *end)
{
    char err[256] = "";
    *end = gp_wall_ms();
    const char *v = gp_http_query(req, "end");
    if (v && *v && gp_parse_time_ms(v, end, err, sizeof err)) {
        gp_srv_bad(resp, 400, "bad_data", "invalid parameter 'end': %s", err);
        return 0;
    }
    *start = *end - COST_RANGE_DEFAULT_MS;
    v = gp_http_query(req, "start");
    if (v && *v && gp_parse_time_ms(v, start, err, sizeof err)) {
        gp_srv_bad(resp, 400, "bad_data", "invalid parameter 'start': %s", err);
        return 0;
    }
    if (*end < *start) {
        gp_srv_bad(resp, 400, "bad_data", "invalid parameters: 'end' is before 'start'");
        return 0;
    }
    if (*end - *start > COST_RANGE_MAX_MS) {
        gp_srv_bad(resp, 400, "bad_data", "the range is longer than 31 days: narrow 'start'..'end'");
        return 0;
    }
    return 1;
}

double gp_srv_activity_unit(const struct gp_srv_cand *c)
{
    return c->kind == K_UTIL ? 100.0 : 1;
}

int gp_srv_activity_samples(struct gp_storage *st, const struct gp_srv_cand *c, int64_t start,
                            int64_t end, struct gp_samples *smp, int64_t *step, size_t *n)
{
    *step = 0;
    *n = 0;
    int rc = gp_storage_read(st, c->s->id, start, end, smp);
    if (rc == GP_EPARSE)
        rc = GP_OK; /* a damaged chunk: the rest still counts */
    size_t k = 0;
    for (size_t m = 0; !rc && m < smp->n; m++)
        if (!isnan(smp->v[m])) {
            smp->t[k] = smp->t[m];
            smp->v[k++] = smp->v[m] / gp_srv_activity_unit(c);
        }
    if (rc || !k)
        return rc;
    int64_t *gaps = malloc(k * sizeof *gaps);
    if (!gaps)
        return GP_ENOMEM;
    *step = median_gap(smp->t, k, gaps);
    free(gaps);
    *n = k;
    return GP_OK;
}

static void do_cost(struct gp_server *s, struct gp_storage *st, const struct gp_http_request *req,
                    struct gp_http_response *resp)
{
    const char *by = "job";
    const char *v = gp_http_query(req, "by");
    if (v && *v) {
        if (strcmp(v, "job") && strcmp(v, "node")) {
            gp_srv_bad(resp, 400, "bad_data", "invalid parameter 'by': '%.40s' (use job or node)", v);
            return;
        }
        by = v;
    }
    char err[256] = "";
    int64_t start, end;
    if (!gp_srv_range(req, resp, &start, &end))
        return;
    int by_job = !strcmp(by, "job");
    struct gp_store_selection sel = {0};
    struct gp_srv_cand *c = NULL;
    struct group *gr = NULL;
    size_t n = 0, ng = 0;
    int rc = gp_srv_activity_series(st, start, end, INT64_MIN, &sel, &c, &n, err, sizeof err);
    if (!rc && n) {
        gr = calloc(n, sizeof *gr);
        if (!gr)
            rc = GP_ENOMEM;
    }
    for (size_t i = 0; !rc && i < n;) {
        size_t j = gp_srv_gpu_run(c, n, i, 1);
        /* c[i] is the best activity series of this GPU and job: SM first. */
        struct gp_samples smp = {0};
        int64_t step = 0;
        size_t k = 0;
        rc = gp_srv_activity_samples(st, &c[i], start, end, &smp, &step, &k);
        if (!rc && k) {
            struct gp_str key = by_job ? c[i].job : c[i].node;
            struct group *g = NULL;
            for (size_t q = 0; q < ng && !g; q++)
                if (gr[q].key.len == key.len && !gp_srv_rw_cmp(gr[q].key, key))
                    g = &gr[q];
            if (!g) {
                g = &gr[ng++];
                g->key = key;
                g->first = smp.t[0];
                g->last = smp.t[k - 1];
            }
            if (smp.t[0] < g->first)
                g->first = smp.t[0];
            if (smp.t[k - 1] > g->last)
                g->last = smp.t[k - 1];
            g->gpus++;
            if (step > 0)
                gp_cost_add_gpu(&g->acc, smp.v, k, step,
                                gp_prices_of(&s->prices, c[i].model.ptr, c[i].model.len));
        }
        gp_samples_free(&smp);
        i = j;
    }
    if (!rc) {
        if (ng)
            qsort(gr, ng, sizeof *gr, group_cmp);
        struct group total = {.key = {"", 0}};
        struct gp_buf *b = &resp->body;
        gp_buf_printf(b, "{\"status\":\"success\",\"data\":{\"by\":\"%s\",\"start\":", by);
        gp_json_time(b, start);
        gp_buf_puts(b, ",\"end\":");
        gp_json_time(b, end);
        gp_buf_puts(b, ",\"groups\":[");
        for (size_t q = 0; q < ng; q++) {
            if (q)
                gp_buf_putc(b, ',');
            group_json(b, &gr[q], by);
            total.gpus += gr[q].gpus;
            total.acc.gpu_seconds += gr[q].acc.gpu_seconds;
            total.acc.cost += gr[q].acc.cost;
            total.acc.cost_idle += gr[q].acc.cost_idle;
            total.acc.cost_unused += gr[q].acc.cost_unused;
            total.acc.priced_seconds += gr[q].acc.priced_seconds;
            total.acc.unpriced += gr[q].acc.unpriced;
            total.acc.activity |= gr[q].acc.activity;
            if (!q || gr[q].first < total.first)
                total.first = gr[q].first;
            if (!q || gr[q].last > total.last)
                total.last = gr[q].last;
        }
        gp_buf_puts(b, "],\"total\":");
        group_json(b, &total, NULL);
        gp_buf_puts(b, "}}\n");
        if (b->err)
            gp_srv_bad(resp, 400, "bad_data", "the answer is larger than %zu bytes: narrow the range",
                       b->max);
    } else {
        gp_srv_bad(resp, rc == GP_ENOMEM ? 503 : 500, rc == GP_ENOMEM ? "unavailable" : "internal",
                   "reading the cost: %s", err[0] ? err : gp_strerror(rc));
    }
    free(gr);
    free(c);
    gp_storage_selection_free(&sel);
}

void gp_srv_handle_cost(struct gp_server *s, struct gp_storage *st, enum gp_srv_route route,
                        const struct gp_http_request *req, struct gp_http_response *resp)
{
    if (route == GP_SRV_R_FLEET)
        do_fleet(s, st, resp);
    else
        do_cost(s, st, req, resp);
}
