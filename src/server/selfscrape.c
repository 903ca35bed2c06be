/*
 * selfscrape.c - the server's own families kept in its own store, as a
 * Prometheus scraping itself would (issue 16: the dashboards' server
 * panels answer from gpulse server alone).
 *
 * Every self_scrape_interval a periodic thread (lib/periodic.h) walks
 * what /metrics shows of the server (selfmetrics.c's walk, the one the
 * text of /metrics comes from; not the `gpulse up` hook's agent
 * families, which the agent pushes itself with its own labels) into a
 * sink that builds remote-write series directly (ingest/rw_build.h): no
 * text is formatted or parsed, and every value is the one /metrics
 * shows. The scrape's target labels job="gpulse-server" and
 * instance="HOST:PORT" are added and the samples appended through
 * gp_storage_append (so storage: remote sends them to the cluster too),
 * with the series a Prometheus scrape adds: up 1 (0 when the walk
 * failed), scrape_duration_seconds (the walk and the build) and
 * scrape_samples_scraped. A family's own job or instance
 * label is kept as exported_job or exported_instance, as a scrape
 * without honor_labels keeps it. The first scrape is one interval after
 * the start, as a scrape target's first comes some way into its
 * interval.
 *
 * A failure (the walk, the append, a sample the store refused) is
 * logged and counted (gpulse_server_self_scrape_failures_total); the
 * next interval tries again. Requests never wait on it: the store takes
 * the append as it takes a remote write's.
 */
#include "server_int.h"

#include "ingest/rw_build.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "lib/periodic.h"

#include <stdlib.h>
#include <string.h>

#define SELF_JOB "gpulse-server"

struct gp_srv_self {
    struct gp_server *srv;
    int64_t interval_ms;
    char instance[GP_SRV_INSTANCE_LEN];
    struct gp_rw_build series; /* this scrape's, memory reused */
    struct gp_periodic th;
};

/* The sink of the walk: each sample one series of x->series, with a
 * job or instance label of its own renamed exported_*. */
struct self_sink {
    struct gp_metric_sink base;
    struct gp_rw_build *b;
};

static void self_family(struct gp_metric_sink *k, const char *name, const char *help, const char *type)
{
    (void)k, (void)name, (void)help, (void)type; /* the families' metadata is the metrics table's */
}

static const char *target_safe(const char *name)
{
    if (!strcmp(name, "job"))
        return "exported_job";
    if (!strcmp(name, "instance"))
        return "exported_instance";
    return name;
}

static void self_sample(struct gp_metric_sink *k, const char *name, const struct gp_metric_labels *set,
                        const struct gp_metric_label *extra, size_t nextra, double v)
{
    struct gp_rw_build *b = ((struct self_sink *)k)->b;
    gp_rw_build_begin(b, name);
    for (size_t i = 0; set && i < set->n; i++)
        gp_rw_build_label(b, target_safe(set->l[i].name), set->l[i].value);
    for (size_t i = 0; i < nextra; i++)
        gp_rw_build_label(b, target_safe(extra[i].name), extra[i].value);
    gp_rw_build_end(b, v);
    if (b->err && !k->err)
        k->err = b->err;
}

/* One self-scrape at t_ms: 1 when every sample was stored, else 0 (logged). */
static int scrape(struct gp_srv_self *x, int64_t t_ms)
{
    struct gp_server *s = x->srv;
    struct gp_storage *st = gp_srv_store(s);
    if (!st)
        return 1; /* not open yet, or closing: nothing to keep it in */
    int64_t t0 = gp_mono_ns();
    struct self_sink k = {{self_family, self_sample, GP_OK}, &x->series};
    gp_rw_build_reset(&x->series);
    gp_srv_walk_own_metrics(s, &k.base);
    int bad = k.base.err;
    if (bad) {
        gp_log(GP_LOG_WARN, "server", "self-scrape failed", "step=walk error=\"%s\"", gp_strerror(bad));
        gp_rw_build_reset(&x->series); /* the scrape's own series alone */
    }
    size_t scraped = gp_rw_build_nseries(&x->series);
    gp_rw_build_begin(&x->series, "up");
    gp_rw_build_end(&x->series, bad ? 0 : 1);
    gp_rw_build_begin(&x->series, "scrape_samples_scraped");
    gp_rw_build_end(&x->series, (double)scraped);
    gp_rw_build_begin(&x->series, "scrape_duration_seconds");
    gp_rw_build_end(&x->series, (double)(gp_mono_ns() - t0) / 1e9);
    const struct gp_label target[] = {
        {{"job", sizeof "job" - 1}, {SELF_JOB, sizeof SELF_JOB - 1}},
        {{"instance", sizeof "instance" - 1}, {x->instance, strlen(x->instance)}},
    };
    const struct gp_batch *rq;
    char err[256] = "";
    int rc = gp_rw_build_view(&x->series, t_ms, target, 2, &rq);
    if (rc) {
        gp_log(GP_LOG_WARN, "server", "self-scrape failed", "step=build error=\"%s\"", gp_strerror(rc));
        return 0;
    }
    struct gp_append_result res;
    memset(&res, 0, sizeof res);
    if ((rc = gp_storage_append(st, rq, &res, err, sizeof err))) {
        gp_log(GP_LOG_WARN, "server", "self-scrape failed", "step=append samples=%zu error=\"%s\"",
               rq->nsamples_total, err);
        return 0;
    }
    uint64_t refused = res.out_of_order + res.conflict + res.too_old + res.series_limit +
                       res.too_far_in_future;
    if (refused)
        gp_log(GP_LOG_WARN, "server", "self-scrape samples refused by the store",
               "refused=%llu samples=%zu out_of_order=%llu duplicate_timestamp=%llu too_old=%llu "
               "series_limit=%llu too_far_in_future=%llu",
               (unsigned long long)refused, rq->nsamples_total, (unsigned long long)res.out_of_order,
               (unsigned long long)res.conflict, (unsigned long long)res.too_old,
               (unsigned long long)res.series_limit, (unsigned long long)res.too_far_in_future);
    return !bad && !refused;
}

static void self_tick(void *arg)
{
    struct gp_srv_self *x = arg;
    int ok = scrape(x, gp_wall_ms());
    gp_srv_count(&x->srv->self_scrapes, 1);
    if (!ok)
        gp_srv_count(&x->srv->self_scrape_failures, 1);
}

int gp_srv_self_start(struct gp_server *s, const char *instance)
{
    if (!s->cfg.self_scrape_interval_ms)
        return GP_OK;
    struct gp_srv_self *x = calloc(1, sizeof *x);
    if (!x)
        return GP_ENOMEM;
    x->srv = s;
    x->interval_ms = s->cfg.self_scrape_interval_ms;
    snprintf(x->instance, sizeof x->instance, "%s", instance);
    s->self = x;
    if (gp_periodic_start(&x->th, x->interval_ms, 0, self_tick, x))
        return GP_ENOMEM;
    gp_log(GP_LOG_INFO, "server", "self-scrape on", "interval_ms=%lld job=%s instance=%s",
           (long long)x->interval_ms, SELF_JOB, x->instance);
    return GP_OK;
}

void gp_srv_self_stop(struct gp_server *s)
{
    struct gp_srv_self *x = s->self;
    if (!x)
        return;
    gp_periodic_stop(&x->th);
    gp_rw_build_free(&x->series);
    free(x);
    s->self = NULL;
}
