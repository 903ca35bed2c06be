/*
 * funnel_api.c - GET /api/v1/fleet/funnel?start=&end= (docs/api.md
 * "Fleet funnel"): reads the range's series and hands them to the funnel
 * (query/funnel.h), which does all the arithmetic.
 *
 *   GPUs     each GPU's activity series in the range, one per GPU and
 *            job (cost_api.c's reading, so the funnel's cost is
 *            /api/v1/cost's), priced by modelName; its `job` label makes
 *            it allocated, its `team` label names the team.
 *   users    a series' `user` label, else the uid of the job's processes
 *            on that node (gpulse_process_info's `uid`: the process
 *            owner; the server cannot resolve names).
 *   zombies  gpulse_gpu_process_memory_bytes's newest sample in the range
 *            against the newest gpulse_job_end_time_seconds of the same
 *            job and node; both read near the series' last sample, from
 *            its newest rollup minute when raw samples are gone there.
 *   long     ranges longer than GP_FUNNEL_RAW_MAX_MS or starting before
 *            the raw retention (or resolution=1m) read each GPU's
 *            1-minute rollups over the whole minutes of the range.
 * Memory: one request's selections and samples, freed before it returns.
 */
#include "server_int.h"

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/json.h"
#include "query/funnel.h"
#include "server/gpu_series.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZOMBIE_LOOKBACK_MS (31LL * 24 * 3600 * 1000) /* a job's end before the range still counts */
#define NEWEST_WINDOW_MS (10 * 60 * 1000) /* raw samples read before a series' last one */

static void copy(char *dst, size_t cap, struct gp_str v)
{
    snprintf(dst, cap, "%.*s", (int)v.len, v.ptr);
}

static int same(struct gp_str a, struct gp_str b)
{
    return a.len == b.len && !gp_srv_rw_cmp(a, b);
}

/* The newest non-NaN sample of x at or before hi; NaN when none. */
static double newest_of(const struct gp_samples *x, int64_t hi, int64_t *t)
{
    for (size_t i = x->n; i-- > 0;)
        if (x->t[i] <= hi && !isnan(x->v[i])) {
            *t = x->t[i];
            return x->v[i];
        }
    return NAN;
}

/* The newest value of series c in [start, end]; NaN when none. Reads the
 * raw samples just before its last one, then (f->rollups) its newest
 * rollup minute, whose max stands for the value at the minute's end (a
 * process's memory and a job's end time hardly fall), else the whole
 * range raw. */
static double newest(struct gp_storage *st, struct gp_funnel *f, const struct gp_srv_cand *c,
                     int64_t start, int64_t end, int64_t *t)
{
    int64_t hi = c->s->last_ms < end ? c->s->last_ms : end;
    if (hi < start)
        return NAN;
    int64_t lo = hi - NEWEST_WINDOW_MS > start ? hi - NEWEST_WINDOW_MS : start;
    struct gp_samples smp = {0};
    double v = NAN;
    int rc = gp_storage_read(st, c->s->id, lo, hi, &smp);
    if (!rc || rc == GP_EPARSE)
        v = newest_of(&smp, hi, t);
    if (isnan(v) && lo > start && !f->rollups) {
        smp.n = 0;
        rc = gp_storage_read(st, c->s->id, start, lo, &smp);
        if (!rc || rc == GP_EPARSE)
            v = newest_of(&smp, hi, t);
    }
    gp_samples_free(&smp);
    if (!isnan(v) || !f->rollups)
        return v;
    struct gp_rollups ru = {0};
    rc = gp_storage_read_rollups(st, c->s->id, start, hi, &ru);
    for (size_t i = ru.n; (!rc || rc == GP_EPARSE) && i-- > 0;)
        if (ru.r[i].count && !isnan(ru.r[i].max)) {
            v = ru.r[i].max;
            *t = ru.r[i].t + 59999 < hi ? ru.r[i].t + 59999 : hi;
            f->estimated++;
            break;
        }
    gp_rollups_free(&ru);
    return v;
}

/* The median gap of series c's raw samples just before its last one in
 * [start, end]: the step its rollups' counts stand for; 0 where raw
 * samples are gone. */
static int raw_step(struct gp_storage *st, const struct gp_srv_cand *c, int64_t start, int64_t end,
                    int64_t *step)
{
    *step = 0;
    int64_t hi = c->s->last_ms < end ? c->s->last_ms : end;
    if (hi < start)
        return GP_OK;
    struct gp_samples smp = {0};
    size_t k = 0;
    int rc = gp_srv_activity_samples(st, c, hi - NEWEST_WINDOW_MS > start ? hi - NEWEST_WINDOW_MS : start,
                                     hi, &smp, step, &k);
    gp_samples_free(&smp);
    return rc;
}

/* Host series (no gpu label) of one name, for owners and job ends. */
struct hostset {
    struct gp_store_selection sel;
    struct gp_srv_cand *c;
    size_t n;
    double *v; /* each series' newest value (job ends); NULL: not read */
};

static int user_of(const struct hostset *procs, struct gp_str node, struct gp_str job,
                   char *out, size_t cap)
{
    for (size_t i = 0; i < procs->n; i++)
        if (same(procs->c[i].node, node) && same(procs->c[i].job, job)) {
            struct gp_str uid = gp_srv_label(procs->c[i].s, "uid");
            if (uid.len) {
                copy(out, cap, uid);
                return 1;
            }
        }
    return 0;
}

static int add_gpus(struct gp_server *s, struct gp_storage *st, struct gp_funnel *f,
                    const struct hostset *procs, char *err, size_t errlen)
{
    struct gp_store_selection sel = {0};
    struct gp_srv_cand *c = NULL;
    size_t n = 0;
    int64_t last = f->rollups ? f->end_ms - 1 : f->end_ms; /* rollups: whole minutes before end */
    int rc = gp_srv_activity_series(st, f->start_ms, last, &sel, &c, &n, err, errlen);
    for (size_t i = 0; !rc && i < n;) {
        size_t j = gp_srv_gpu_run(c, n, i, 1);
        /* c[i] is the best activity series of this GPU and job: SM first. */
        char job[GP_FUNNEL_KEY_LEN], user[GP_FUNNEL_KEY_LEN], team[GP_FUNNEL_KEY_LEN];
        copy(job, sizeof job, c[i].job);
        copy(user, sizeof user, gp_srv_label(c[i].s, "user"));
        copy(team, sizeof team, gp_srv_label(c[i].s, "team"));
        if (!user[0] && c[i].job.len)
            user_of(procs, c[i].node, c[i].job, user, sizeof user);
        double usd_hour = gp_prices_of(&s->prices, c[i].model.ptr, c[i].model.len);
        if (f->rollups) {
            struct gp_rollups ru = {0};
            rc = gp_storage_read_rollups(st, c[i].s->id, f->start_ms, f->end_ms - 1, &ru);
            if (rc == GP_EPARSE)
                rc = GP_OK; /* a damaged chunk: the rest still counts */
            struct gp_funnel_gpu_rollups g = {
                .r = ru.r, .n = ru.n, .unit = gp_srv_activity_unit(&c[i]), .usd_hour = usd_hour,
                .job = job, .user = user, .team = team};
            if (!rc)
                rc = raw_step(st, &c[i], f->start_ms, f->end_ms - 1, &g.step_ms);
            if (!rc)
                rc = gp_funnel_add_rollups(f, &g);
            gp_rollups_free(&ru);
            i = j;
            continue;
        }
        struct gp_samples smp = {0};
        int64_t step = 0;
        size_t k = 0;
        rc = gp_srv_activity_samples(st, &c[i], f->start_ms, f->end_ms, &smp, &step, &k);
        if (!rc && k) {
            struct gp_funnel_gpu g = {.act = smp.v, .n = k, .step_ms = step, .usd_hour = usd_hour,
                                      .job = job, .user = user, .team = team};
            rc = gp_funnel_add(f, &g);
        }
        gp_samples_free(&smp);
        i = j;
    }
    free(c);
    gp_storage_selection_free(&sel);
    return rc;
}

static int add_zombies(struct gp_storage *st, struct gp_funnel *f, const struct hostset *ends,
                       char *err, size_t errlen)
{
    static const char *const names[] = {"gpulse_gpu_process_memory_bytes"};
    struct gp_store_selection sel = {0};
    struct gp_srv_cand *c = NULL;
    size_t n = 0;
    int rc = gp_srv_gpu_series(st, names, 1, f->start_ms, f->end_ms, 1, &sel, &c, &n, err, errlen);
    for (size_t i = 0; !rc && i < n; i++) {
        if (!c[i].job.len)
            continue;
        double end_s = NAN;
        for (size_t k = 0; k < ends->n; k++)
            if (same(ends->c[k].node, c[i].node) && same(ends->c[k].job, c[i].job) &&
                isfinite(ends->v[k]) && (isnan(end_s) || ends->v[k] > end_s))
                end_s = ends->v[k];
        if (isnan(end_s))
            continue;
        struct gp_funnel_zombie z = {.job_end_s = end_s};
        z.memory_bytes = newest(st, f, &c[i], f->start_ms, f->end_ms - f->rollups, &z.seen_ms);
        copy(z.node, sizeof z.node, c[i].node);
        copy(z.gpu, sizeof z.gpu, c[i].gpu);
        copy(z.pid, sizeof z.pid, gp_srv_label(c[i].s, "pid"));
        copy(z.comm, sizeof z.comm, gp_srv_label(c[i].s, "comm"));
        copy(z.job, sizeof z.job, c[i].job);
        rc = gp_funnel_zombie(f, &z);
    }
    free(c);
    gp_storage_selection_free(&sel);
    return rc;
}

/* Whether [start, end] is read from rollups: asked, longer than raw
 * reading is quick for, or starting where raw samples are gone. */
static bool use_rollups(const struct gp_server *s, int64_t start, int64_t end, int resolution)
{
    if (resolution != GP_SRV_FUNNEL_AUTO)
        return resolution == GP_SRV_FUNNEL_ROLLUP;
    return end - start > GP_FUNNEL_RAW_MAX_MS || start < gp_wall_ms() - s->cfg.retention_raw_ms;
}

int gp_srv_funnel_data(struct gp_server *s, struct gp_storage *st, int64_t start, int64_t end,
                       int resolution, struct gp_buf *out, char *err, size_t errlen)
{
    bool rollups = use_rollups(s, start, end, resolution);
    if (rollups) { /* the whole minutes of the range, at least one */
        start -= ((start % 60000) + 60000) % 60000;
        end -= ((end % 60000) + 60000) % 60000;
        if (end <= start)
            end = start + 60000;
    }
    static const char *const proc_names[] = {"gpulse_process_info"};
    static const char *const end_names[] = {"gpulse_job_end_time_seconds"};
    struct hostset procs = {0}, ends = {0};
    struct gp_funnel f;
    gp_funnel_init(&f, start, end);
    f.rollups = rollups;
    int rc = gp_srv_host_series(st, proc_names, 1, start, end, &procs.sel, &procs.c, &procs.n, err,
                                errlen);
    if (!rc)
        rc = gp_srv_host_series(st, end_names, 1, start - ZOMBIE_LOOKBACK_MS, end, &ends.sel,
                                &ends.c, &ends.n, err, errlen);
    if (!rc && ends.n && !(ends.v = malloc(ends.n * sizeof *ends.v)))
        rc = GP_ENOMEM;
    for (size_t k = 0; !rc && k < ends.n; k++) {
        int64_t t;
        ends.v[k] = newest(st, &f, &ends.c[k], start - ZOMBIE_LOOKBACK_MS, end - rollups, &t);
    }
    if (!rc)
        rc = add_gpus(s, st, &f, &procs, err, errlen);
    if (!rc)
        rc = add_zombies(st, &f, &ends, err, errlen);
    if (!rc) {
        gp_funnel_sort(&f);
        gp_funnel_json(&f, out);
    }
    gp_funnel_free(&f);
    free(procs.c);
    free(ends.c);
    free(ends.v);
    gp_storage_selection_free(&procs.sel);
    gp_storage_selection_free(&ends.sel);
    return rc;
}

void gp_srv_handle_funnel(struct gp_server *s, struct gp_storage *st,
                          const struct gp_http_request *req, struct gp_http_response *resp)
{
    int64_t start, end;
    if (!gp_srv_range(req, resp, &start, &end))
        return;
    int resolution = GP_SRV_FUNNEL_AUTO;
    const char *v = gp_http_query(req, "resolution");
    if (v && !strcmp(v, "raw"))
        resolution = GP_SRV_FUNNEL_RAW;
    else if (v && !strcmp(v, "1m"))
        resolution = GP_SRV_FUNNEL_ROLLUP;
    else if (v && *v && strcmp(v, "auto")) {
        gp_srv_bad(resp, 400, "bad_data", "invalid parameter 'resolution': '%.40s' (use auto, raw or 1m)", v);
        return;
    }
    char err[256] = "";
    gp_buf_puts(&resp->body, "{\"status\":\"success\",\"data\":");
    int rc = gp_srv_funnel_data(s, st, start, end, resolution, &resp->body, err, sizeof err);
    gp_buf_puts(&resp->body, "}\n");
    if (rc)
        gp_srv_bad(resp, rc == GP_ENOMEM ? 503 : 500, rc == GP_ENOMEM ? "unavailable" : "internal",
                   "reading the funnel: %s", err[0] ? err : gp_strerror(rc));
    else if (resp->body.err)
        gp_srv_bad(resp, 400, "bad_data", "the answer is larger than %zu bytes: narrow the range",
                   resp->body.max);
}
