/*
 * gpus_api.c - GET /api/v1/fleet/gpus: every GPU now, as the
 * dashboard's tiles show it (docs/dashboard.md): identity (node, gpu,
 * uuid, model), its job and rank, the newest reading of each metric
 * below within the last 5 minutes, whether its clocks are held down, and
 * a badge of its active alerts. Filters: node=, job=, model= (exact).
 *
 * Speed: the GPUs and their series come from the inventory's cache
 * (query.h gp_inventory_each_gpu: labels read once per series for the
 * server's life, not per request; at 4,096 GPUs the selection's copy of
 * every label set and its parse were most of this route), then per GPU
 * the newest finite value of its newest series of each metric; GPUs a
 * filter leaves out are never read. The alert badges come from the
 * alerts in memory, matched to GPUs by binary search. A thread keeps the
 * cache warm (gp_srv_inventory_warm_start): the first request after a
 * start, or after a thousand GPUs' series appeared, reads no label set.
 *
 * Units: DCGM's FB_* are MiB; gpulse's own memory series are bytes and
 * win when both are there. Utilization (%) becomes a fraction.
 */
#include "server_int.h"

#include "insight/alerts.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/json.h"
#include "lib/log.h"
#include "query/query.h"
#include "server/gpu_series.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GPUS_LOOKBACK_MS (5 * 60 * 1000)
/* A clock-event reason series this much older than the GPU's newest one
 * is a former label set (another job), not the GPU now. */
#define GPUS_REASON_STALE_MS 30000
#define MIB 1048576.0
/* How often the inventory's cache is brought up with the store: a
 * fleet's new series (a thousand GPUs' first tick) are parsed within this
 * of their arrival instead of by the next request. A pass over a warm
 * cache costs a few ms at 4,096 GPUs. */
#define WARM_INTERVAL_MS 5000
/* New label sets read under one hold of the store's lock: about 10 ms of
 * parsing, so a cold start's pass does not stall ingest. */
#define WARM_SLICE 16384

#define GPU_METRICS(X)                                          \
    X(UTIL, "DCGM_FI_DEV_GPU_UTIL")                             \
    X(SM, "DCGM_FI_PROF_SM_ACTIVE")                             \
    X(OCC, "DCGM_FI_PROF_SM_OCCUPANCY")                         \
    X(TENSOR, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")                \
    X(MEM_USED, "gpulse_gpu_memory_used_bytes")                 \
    X(MEM_TOTAL, "gpulse_gpu_memory_total_bytes")               \
    X(FB_USED, "DCGM_FI_DEV_FB_USED")                           \
    X(FB_FREE, "DCGM_FI_DEV_FB_FREE")                           \
    X(FB_RESERVED, "DCGM_FI_DEV_FB_RESERVED")                   \
    X(TEMP, "DCGM_FI_DEV_GPU_TEMP")                             \
    X(POWER, "DCGM_FI_DEV_POWER_USAGE")                         \
    X(POWER_LIMIT, "gpulse_gpu_power_limit_watts")              \
    X(CLOCK, "DCGM_FI_DEV_SM_CLOCK")                            \
    X(REASONS, "gpulse_gpu_clock_event_reasons")

enum metric {
#define GPU_M_ENUM_(id, name) M_##id,
    GPU_METRICS(GPU_M_ENUM_)
#undef GPU_M_ENUM_
    M_COUNT
};

static const char *const metric_names[M_COUNT] = {
#define GPU_M_NAME_(id, name) name,
    GPU_METRICS(GPU_M_NAME_)
#undef GPU_M_NAME_
};

struct gpu_row {
    struct gp_str node, gpu, mig, model, job, rank, uuid; /* of its newest series */
    double v[M_COUNT];
    int throttled;                 /* -1: no clock-event series */
    int64_t last_seen;
    unsigned firing, pending;
    int severity;                  /* -1: no active alert */
};

static int str_eq(struct gp_str a, const char *b)
{
    return a.len == strlen(b) && !memcmp(a.ptr, b, a.len);
}

/* GPU index as a number when it is one, so "10" sorts after "9". */
static int gpu_cmp(struct gp_str a, struct gp_str b)
{
    unsigned long x = 0, y = 0;
    int an = a.len > 0 && a.len < 10, bn = b.len > 0 && b.len < 10;
    for (size_t i = 0; an && i < a.len; i++)
        an = a.ptr[i] >= '0' && a.ptr[i] <= '9' && ((x = x * 10 + (unsigned)(a.ptr[i] - '0')), 1);
    for (size_t i = 0; bn && i < b.len; i++)
        bn = b.ptr[i] >= '0' && b.ptr[i] <= '9' && ((y = y * 10 + (unsigned)(b.ptr[i] - '0')), 1);
    if (an && bn && x != y)
        return x < y ? -1 : 1;
    if (an != bn)
        return an ? -1 : 1;
    return gp_srv_rw_cmp(a, b);
}

static int row_cmp(const void *pa, const void *pb)
{
    const struct gpu_row *a = pa, *b = pb;
    int c = gp_srv_rw_cmp(a->node, b->node);
    if (!c)
        c = gpu_cmp(a->gpu, b->gpu);
    return c ? c : gp_srv_rw_cmp(a->mig, b->mig);
}

/* Reads GPU g into row; 0 when a filter leaves it out. */
static int read_gpu(struct gp_storage *st, const struct gp_inv_gpu *g,
                    const struct gp_srv_gpu_filter *f, struct gp_samples *scratch,
                    struct gpu_row *row)
{
    const struct gp_inv_series *c = g->series, *who = &c[0];
    int64_t reasons_newest = INT64_MIN;
    for (size_t k = 0; k < g->n; k++) {
        if (c[k].last_ms > who->last_ms)
            who = &c[k];
        if (c[k].kind == M_REASONS && c[k].last_ms > reasons_newest)
            reasons_newest = c[k].last_ms;
    }
    if ((f->node && !str_eq(g->node, f->node)) || (f->job && !str_eq(who->job, f->job)) ||
        (f->model && !str_eq(who->model, f->model)))
        return 0;
    memset(row, 0, sizeof *row);
    row->node = g->node;
    row->gpu = g->gpu;
    row->mig = g->mig;
    row->model = who->model;
    row->job = who->job;
    row->rank = who->rank;
    row->uuid = who->uuid;
    row->last_seen = who->last_ms;
    row->throttled = -1;
    row->severity = -1;
    for (size_t m = 0; m < M_COUNT; m++)
        row->v[m] = NAN;
    for (size_t k = 0; k < g->n; k++) {
        const struct gp_inv_series *x = &c[k];
        if (x->kind == M_REASONS) {
            if (x->last_ms < reasons_newest - GPUS_REASON_STALE_MS)
                continue;
            double v = gp_storage_newest_value(st, x->id, x->last_ms, GPUS_LOOKBACK_MS, scratch);
            if (row->throttled < 0)
                row->throttled = 0;
            if (v >= 0.5 && !str_eq(x->reason, "gpu_idle") &&
                !str_eq(x->reason, "applications_clocks_setting"))
                row->throttled = 1;
        } else if (isnan(row->v[x->kind])) { /* newest series first: the first finite wins */
            row->v[x->kind] = gp_storage_newest_value(st, x->id, x->last_ms, GPUS_LOOKBACK_MS, scratch);
        }
    }
    return 1;
}

/* The alert badges: each active alert counts on the GPUs of its node and gpu. */
struct badges {
    struct gpu_row *rows;
    size_t n;
};

static void count_alert(void *ctx, const struct gp_obs_key *k, enum gp_alert_state state,
                        enum gp_severity sev)
{
    struct badges *b = ctx;
    if (!k->node[0] || !k->gpu[0])
        return;
    struct gp_str node = {k->node, strlen(k->node)}, gpu = {k->gpu, strlen(k->gpu)};
    size_t lo = 0, hi = b->n;
    while (lo < hi) { /* the first row not before (node, gpu) */
        size_t mid = lo + (hi - lo) / 2;
        int c = gp_srv_rw_cmp(b->rows[mid].node, node);
        if (!c)
            c = gpu_cmp(b->rows[mid].gpu, gpu);
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < b->n && !gp_srv_rw_cmp(b->rows[i].node, node) &&
                        !gp_srv_rw_cmp(b->rows[i].gpu, gpu);
         i++) {
        struct gpu_row *r = &b->rows[i];
        r->firing += state == GP_ALERT_FIRING;
        r->pending += state == GP_ALERT_PENDING;
        if ((int)sev > r->severity)
            r->severity = (int)sev;
    }
}

void gp_srv_put_num(struct gp_buf *b, const char *name, double v)
{
    gp_buf_puts(b, ",\""); /* not printf: 11 numbers a GPU */
    gp_buf_puts(b, name);
    gp_buf_puts(b, "\":");
    if (isfinite(v))
        gp_buf_put_double(b, v);
    else
        gp_buf_puts(b, "null");
}

static void put_str(struct gp_buf *b, const char *name, struct gp_str v, int null_if_empty)
{
    gp_buf_puts(b, ",\"");
    gp_buf_puts(b, name);
    gp_buf_puts(b, "\":");
    if (!v.len && null_if_empty)
        gp_buf_puts(b, "null");
    else
        gp_json_str(b, v.ptr, v.len);
}

static void row_json(struct gp_buf *b, const struct gpu_row *r)
{
    const double *v = r->v;
    gp_buf_puts(b, "{\"node\":");
    gp_json_str(b, r->node.ptr, r->node.len);
    put_str(b, "gpu", r->gpu, 0);
    put_str(b, "mig", r->mig, 1);
    put_str(b, "uuid", r->uuid, 1);
    put_str(b, "model", r->model, 1);
    put_str(b, "job", r->job, 1);
    put_str(b, "rank", r->rank, 1);
    gp_srv_put_num(b, "util", v[M_UTIL] / 100.0);
    gp_srv_put_num(b, "sm_active", v[M_SM]);
    gp_srv_put_num(b, "sm_occupancy", v[M_OCC]);
    gp_srv_put_num(b, "tensor_active", v[M_TENSOR]);
    gp_srv_put_num(b, "mem_used_bytes", isfinite(v[M_MEM_USED]) ? v[M_MEM_USED] : v[M_FB_USED] * MIB);
    double fb_total = (v[M_FB_USED] + v[M_FB_FREE] + (isfinite(v[M_FB_RESERVED]) ? v[M_FB_RESERVED] : 0)) * MIB;
    gp_srv_put_num(b, "mem_total_bytes", isfinite(v[M_MEM_TOTAL]) ? v[M_MEM_TOTAL] : fb_total);
    gp_srv_put_num(b, "temp_c", v[M_TEMP]);
    gp_srv_put_num(b, "power_w", v[M_POWER]);
    gp_srv_put_num(b, "power_limit_w", v[M_POWER_LIMIT]);
    gp_srv_put_num(b, "sm_clock_mhz", v[M_CLOCK]);
    gp_buf_printf(b, ",\"throttled\":%s,\"last_seen\":",
                  r->throttled < 0 ? "null" : r->throttled ? "true" : "false");
    gp_json_time(b, r->last_seen);
    gp_buf_printf(b, ",\"alerts\":{\"firing\":%u,\"pending\":%u,\"severity\":", r->firing, r->pending);
    if (r->severity >= 0)
        gp_buf_printf(b, "\"%s\"}}", gp_severity_names[r->severity]);
    else
        gp_buf_puts(b, "null}}");
}

/* One request: the rows read per GPU, written once all are in. */
struct fleet {
    struct gp_server *s;
    struct gp_storage *st;
    const struct gp_srv_gpu_filter *f;
    struct gp_buf *out;
    int64_t now;
    struct gp_samples scratch;
    struct gpu_row *rows;
    size_t n, cap;
};

static int fleet_gpu(void *arg, const struct gp_inv_gpu *g)
{
    struct fleet *x = arg;
    if (g) {
        if (x->n == x->cap) {
            size_t nc = x->cap ? 2 * x->cap : 256;
            struct gpu_row *r = realloc(x->rows, nc * sizeof *r);
            if (!r)
                return GP_ENOMEM;
            x->rows = r;
            x->cap = nc;
        }
        x->n += (size_t)read_gpu(x->st, g, x->f, &x->scratch, &x->rows[x->n]);
        return GP_OK;
    }
    /* all in: the strings stay valid until this returns */
    if (x->n)
        qsort(x->rows, x->n, sizeof *x->rows, row_cmp);
    struct badges b = {x->rows, x->n};
    if (x->s->alerts)
        gp_alerts_each_active(x->s->alerts, count_alert, &b);
    gp_buf_puts(x->out, "{\"time\":");
    gp_json_time(x->out, x->now);
    gp_buf_puts(x->out, ",\"gpus\":[");
    for (size_t i = 0; i < x->n; i++) {
        if (i)
            gp_buf_putc(x->out, ',');
        row_json(x->out, &x->rows[i]);
    }
    gp_buf_puts(x->out, "]}");
    return GP_OK;
}

int gp_srv_fleet_gpus_data(struct gp_server *s, struct gp_storage *st,
                           const struct gp_srv_gpu_filter *f, struct gp_buf *out, char *err,
                           size_t errlen)
{
    struct fleet x = {.s = s, .st = st, .f = f, .out = out, .now = gp_wall_ms()};
    int rc = gp_inventory_each_gpu(s->inventory, st, metric_names, M_COUNT, x.now - GPUS_LOOKBACK_MS,
                                   x.now, fleet_gpu, &x, err, errlen);
    gp_samples_free(&x.scratch);
    free(x.rows);
    return rc;
}

void gp_srv_gpu_filter_parse(const struct gp_http_request *req, struct gp_srv_gpu_filter *f)
{
    const char *v;
    f->node = (v = gp_http_query(req, "node")) && *v ? v : NULL;
    f->job = (v = gp_http_query(req, "job")) && *v ? v : NULL;
    f->model = (v = gp_http_query(req, "model")) && *v ? v : NULL;
}

void gp_srv_handle_fleet_gpus(struct gp_server *s, struct gp_storage *st,
                              const struct gp_http_request *req, struct gp_http_response *resp)
{
    struct gp_srv_gpu_filter f;
    gp_srv_gpu_filter_parse(req, &f);
    char err[256] = "";
    gp_buf_puts(&resp->body, "{\"status\":\"success\",\"data\":");
    int rc = gp_srv_fleet_gpus_data(s, st, &f, &resp->body, err, sizeof err);
    gp_buf_puts(&resp->body, "}\n");
    if (rc)
        gp_srv_bad(resp, rc == GP_ENOMEM ? 503 : 500, rc == GP_ENOMEM ? "unavailable" : "internal",
                   "reading the GPUs: %s", err[0] ? err : gp_strerror(rc));
    else if (resp->body.err)
        gp_srv_bad(resp, 400, "bad_data", "the answer is larger than %zu bytes: filter it",
                   resp->body.max);
}

static void warm(void *arg)
{
    struct gp_server *s = arg;
    struct gp_storage *st = gp_srv_store(s);
    /* Remote, where the local window does not hold the inventory's
     * lookback (no window, or its refill after a restart failed), a pass
     * would be a cluster query of every GPU series: requests alone pay
     * for that. */
    if (!st || gp_storage_pushdown(st, NULL, 0, gp_wall_ms() - s->cfg.remote_lookback_ms))
        return;
    char err[256] = "";
    int rc = gp_inventory_warm(s->inventory, st, WARM_SLICE, err, sizeof err);
    if (rc && !s->inventory_warm_failed)
        gp_log(GP_LOG_WARN, "inventory", "cannot bring the inventory up to date", "err=\"%s\"", err);
    else if (!rc && s->inventory_warm_failed)
        gp_log(GP_LOG_INFO, "inventory", "inventory up to date again", "%s", "");
    s->inventory_warm_failed = rc != GP_OK;
}

int gp_srv_inventory_warm_start(struct gp_server *s)
{
    return gp_periodic_start(&s->inventory_warm, WARM_INTERVAL_MS, 1, warm, s);
}

void gp_srv_inventory_warm_stop(struct gp_server *s)
{
    gp_periodic_stop(&s->inventory_warm);
}
