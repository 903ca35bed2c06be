/*
 * selfscrape.c - the server's own families kept in its own store, as a
 * Prometheus scraping itself would (issue 16: the dashboards' server
 * panels answer from gpulse server alone).
 *
 * Every self_scrape_interval a thread of its own renders what /metrics
 * shows of the server (selfmetrics.c; not the `gpulse up` hook's agent
 * families, which the agent pushes itself with its own labels), parses
 * it back with the exposition parser (ingest/textparse.h, one parser
 * kept and reused), adds the scrape's target labels job="gpulse-server"
 * and instance="HOST:PORT" and appends the samples through
 * gp_storage_append (so storage: remote sends them to the cluster too),
 * with up 1 (0 when the exposition could not be rendered or parsed).
 * A family's own job or instance label is kept as exported_job or
 * exported_instance, as a scrape without honor_labels keeps it. The
 * first scrape is one interval after the start, as a scrape target's
 * first comes some way into its interval.
 *
 * A failure (render, parse, append, a sample the store refused) is
 * logged and counted (gpulse_server_self_scrape_failures_total); the
 * next interval tries again. Requests never wait on it: the store takes
 * the append as it takes a remote write's.
 */
#include "server_int.h"

#include "ingest/textparse.h"
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

    struct gp_text_parser parser;
    struct gp_buf text;
    struct gp_series *series; /* the parsed series with the target labels */
    size_t cap_series;
    struct gp_label *labels; /* their labels, each series' run in a row */
    size_t cap_labels;
    struct gp_sample up;

    struct gp_periodic th;
};

static int label_cmp(const void *a, const void *b)
{
    const struct gp_str *x = &((const struct gp_label *)a)->name;
    const struct gp_str *y = &((const struct gp_label *)b)->name;
    int c = memcmp(x->ptr, y->ptr, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static int streq(struct gp_str s, const char *lit)
{
    return s.len == strlen(lit) && !memcmp(s.ptr, lit, s.len);
}

static struct gp_str str(const char *s)
{
    return (struct gp_str){s, strlen(s)};
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return GP_OK;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * size);
    if (!q)
        return GP_ENOMEM;
    *p = q;
    *cap = n;
    return GP_OK;
}

/*
 * in's series, plus up, with the target labels, into *out (pointing into
 * x's arrays and in's strings). in may be NULL: up alone, then 0.
 */
static int relabel(struct gp_srv_self *x, const struct gp_batch *in, int64_t t_ms,
                   struct gp_batch *out)
{
    size_t n = (in ? in->nseries : 0) + 1;
    size_t nl = (in ? in->nlabels_total : 0) + 3 * n;
    if (grow((void **)&x->series, &x->cap_series, n, sizeof *x->series) ||
        grow((void **)&x->labels, &x->cap_labels, nl, sizeof *x->labels))
        return GP_ENOMEM;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        struct gp_series *o = &x->series[i];
        o->labels = &x->labels[at];
        o->nlabels = 0;
        if (i < n - 1) {
            const struct gp_series *se = &in->series[i];
            for (size_t j = 0; j < se->nlabels; j++) {
                struct gp_label l = se->labels[j];
                if (streq(l.name, "job"))
                    l.name = str("exported_job");
                else if (streq(l.name, "instance"))
                    l.name = str("exported_instance");
                o->labels[o->nlabels++] = l;
            }
            o->samples = se->samples;
            o->nsamples = se->nsamples;
        } else {
            o->labels[o->nlabels++] = (struct gp_label){str("__name__"), str("up")};
            x->up = (struct gp_sample){in ? 1 : 0, t_ms};
            o->samples = &x->up;
            o->nsamples = 1;
        }
        o->labels[o->nlabels++] = (struct gp_label){str("job"), str(SELF_JOB)};
        o->labels[o->nlabels++] = (struct gp_label){str("instance"), str(x->instance)};
        qsort(o->labels, o->nlabels, sizeof *o->labels, label_cmp); /* the store's canonical order */
        at += o->nlabels;
    }
    *out = (struct gp_batch){x->series, n, at, (in ? in->nsamples_total : 0) + 1, NULL};
    return GP_OK;
}

/* One self-scrape at t_ms: 1 when every sample was stored, else 0 (logged). */
static int scrape(struct gp_srv_self *x, int64_t t_ms)
{
    struct gp_server *s = x->srv;
    struct gp_storage *st = gp_srv_store(s);
    if (!st)
        return 1; /* not open yet, or closing: nothing to keep it in */
    char err[256] = "";
    const char *what = NULL;
    gp_buf_reset(&x->text);
    int rc = gp_srv_render_own_metrics(s, &x->text);
    if (rc)
        what = "render";
    else if ((rc = gp_text_parse(&x->parser, x->text.data, x->text.len, t_ms, err, sizeof err)))
        what = "parse";
    struct gp_batch rq;
    int bad = rc != GP_OK;
    if (relabel(x, bad ? NULL : &x->parser.req, t_ms, &rq)) {
        gp_log(GP_LOG_WARN, "server", "self-scrape failed", "step=relabel error=\"out of memory\"");
        return 0;
    }
    if (bad)
        gp_log(GP_LOG_WARN, "server", "self-scrape failed", "step=%s error=\"%s\"", what,
               err[0] ? err : gp_strerror(rc));
    struct gp_append_result res;
    memset(&res, 0, sizeof res);
    if ((rc = gp_storage_append(st, &rq, &res, err, sizeof err))) {
        gp_log(GP_LOG_WARN, "server", "self-scrape failed", "step=append samples=%zu error=\"%s\"",
               rq.nsamples_total, err);
        return 0;
    }
    uint64_t refused = res.out_of_order + res.conflict + res.too_old + res.series_limit +
                       res.too_far_in_future;
    if (refused)
        gp_log(GP_LOG_WARN, "server", "self-scrape samples refused by the store",
               "refused=%llu samples=%zu out_of_order=%llu duplicate_timestamp=%llu too_old=%llu "
               "series_limit=%llu too_far_in_future=%llu",
               (unsigned long long)refused, rq.nsamples_total, (unsigned long long)res.out_of_order,
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
    gp_buf_init(&x->text, 0);
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
    gp_text_parser_free(&x->parser);
    gp_buf_free(&x->text);
    free(x->series);
    free(x->labels);
    free(x);
    s->self = NULL;
}
