/*
 * agent.c - the agent role: config -> sampler -> HTTP routes.
 *
 * Routes: /metrics (Prometheus text 0.0.4), /api/v1/snapshot (JSON of
 * the latest frame), /healthz,
 * and / (a short index). The /metrics text is rendered once per frame
 * and shared by every scrape of that frame.
 *
 * With push targets (--push, or the in-process server of `gpulse up`),
 * the sampler calls a hook after every tick that walks the frame once
 * more (expo.h: the walk /metrics is rendered from) into remote-write
 * series and hands them to the pusher (push.h): what is pushed is what
 * /metrics shows, with the tick's time on every sample, and no text is
 * formatted or parsed on the way.
 */
#include "agent.h"

#include "agent/expo.h"
#include "net/http.h"
#include "agent/sampler.h"
#include "agent/snapshot.h"
#include "ingest/push.h"
#include "ingest/rw_build.h"
#include "lib/err.h"
#include "lib/log.h"
#include "sources/simulate_plan.h"
#include "sources/sources.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct gp_agent {
    struct gp_agent_config cfg;
    struct gp_sampler *sampler;
    struct gp_http *http;
    struct gp_expo_options expo_opts;

    pthread_mutex_t cache_mu; /* guards the rendered /metrics text and the frame's counters */
    struct gp_expo expo;
    struct gp_buf metrics;
    uint64_t metrics_seq;
    /* What changes between a frame's publication and its walks (the
     * agent's and the pusher's counters), taken once per frame by the
     * first walk, so /metrics and the push of one frame agree. */
    uint64_t counters_seq;
    struct gp_agent_stats counters_st;
    struct gp_push_stats counters_push;
    struct gp_agent_embed embed;
    struct gp_push *push; /* NULL without targets */
    /* the sampling thread's own, for the push walk */
    struct gp_expo push_expo;
    struct gp_rw_build push_series;
};

struct render_ctx {
    struct gp_agent *a;
    struct gp_buf *out;
    int rc;
    int64_t frame_ms;
};

/* The counters of frame f, taken now unless a walk of f took them.
 * Called with cache_mu held. */
static void take_counters(struct gp_agent *a, const struct gp_frame *f, const struct gp_agent_stats *st)
{
    if (a->counters_seq == f->seq && f->seq)
        return;
    a->counters_seq = f->seq;
    a->counters_st = *st;
    gp_push_stats(a->push, &a->counters_push);
}

/* The agent's whole exposition of f into s: the frame's families, then
 * the pusher's own; /metrics renders it as text, the push builds its
 * series from it. GP_OK or an error code. */
static int walk(struct gp_agent *a, struct gp_metric_sink *s, struct gp_expo *x, const struct gp_frame *f,
                const struct gp_agent_stats *st, const struct gp_push_stats *ps)
{
    int rc = gp_expo_walk(x, s, f, &a->expo_opts, st);
    gp_push_walk_stats(ps, s);
    return rc ? rc : s->err;
}

/* Renders f into the /metrics cache unless it holds f already. Called
 * with cache_mu held. GP_OK or an error code. */
static int refresh_cache(struct gp_agent *a, const struct gp_frame *f, const struct gp_agent_stats *st)
{
    if (a->metrics_seq == f->seq && !a->metrics.err)
        return GP_OK;
    gp_buf_reset(&a->metrics);
    struct gp_metric_text_sink t;
    gp_metric_text_sink_init(&t, &a->metrics);
    take_counters(a, f, st);
    int rc = walk(a, &t.base, &a->expo, f, &a->counters_st, &a->counters_push);
    if (!rc)
        rc = a->metrics.err;
    a->metrics_seq = rc ? 0 : f->seq;
    return rc;
}

static void render_metrics(const struct gp_frame *f, const struct gp_agent_stats *st, void *arg)
{
    struct render_ctx *c = arg;
    struct gp_agent *a = c->a;
    c->rc = refresh_cache(a, f, st);
    gp_buf_append(c->out, a->metrics.data, a->metrics.len);
}

/* The sampler's hook: each tick, exactly once, the series /metrics will
 * show; then the embedder's own hook. A walk that fails still goes: the
 * pusher drops it and counts it (reason "encoder"). */
static void after_tick(const struct gp_frame *f, const struct gp_agent_stats *st, void *arg)
{
    struct gp_agent *a = arg;
    if (a->push) {
        struct gp_agent_stats cst;
        struct gp_push_stats cps;
        pthread_mutex_lock(&a->cache_mu);
        take_counters(a, f, st);
        cst = a->counters_st;
        cps = a->counters_push;
        pthread_mutex_unlock(&a->cache_mu);
        /* the frame holds still: only this thread replaces it */
        struct gp_rw_build_sink k;
        gp_rw_build_reset(&a->push_series);
        gp_rw_build_sink_init(&k, &a->push_series);
        int rc = walk(a, &k.base, &a->push_expo, f, &cst, &cps);
        if (rc && !a->push_series.err)
            a->push_series.err = rc;
        gp_push_tick(a->push, &a->push_series, f->time_ms);
    }
    if (a->embed.tick_hook)
        a->embed.tick_hook(f, st, a->embed.tick_ctx);
}

static void render_snapshot(const struct gp_frame *f, const struct gp_agent_stats *st, void *arg)
{
    struct render_ctx *c = arg;
    c->rc = gp_snapshot_render(c->out, f, &c->a->expo_opts, st);
}

static void frame_time(const struct gp_frame *f, const struct gp_agent_stats *st, void *arg)
{
    (void)st;
    ((struct render_ctx *)arg)->frame_ms = f->time_ms;
}

static const char index_html[] =
    "<!doctype html><html><head><meta charset=\"utf-8\"><title>gpulse agent</title></head><body>"
    "<h1>gpulse agent</h1><ul>"
    "<li><a href=\"/metrics\">/metrics</a> (Prometheus text format)</li>"
    "<li><a href=\"/api/v1/snapshot\">/api/v1/snapshot</a> (JSON of the latest sample)</li>"
    "<li><a href=\"/healthz\">/healthz</a></li></ul></body></html>\n";

static void handle(void *ctx, const struct gp_http_request *req, struct gp_http_response *resp)
{
    struct gp_agent *a = ctx;
    const char *path = gp_http_path(req);
    struct render_ctx c = {a, &resp->body, GP_OK, 0};
    if (!strcmp(path, "/metrics")) {
        resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
        pthread_mutex_lock(&a->cache_mu);
        gp_sampler_read(a->sampler, render_metrics, &c);
        pthread_mutex_unlock(&a->cache_mu);
        if (c.rc)
            gp_http_error(resp, 500, gp_strerror(c.rc));
    } else if (!strcmp(path, "/api/v1/snapshot")) {
        resp->content_type = "application/json";
        gp_sampler_read(a->sampler, render_snapshot, &c);
        if (c.rc)
            gp_http_error(resp, 500, gp_strerror(c.rc));
    } else if (!strcmp(path, "/healthz")) {
        /* Healthy while frames keep coming: at most 3 intervals + 5 s old. */
        gp_sampler_read(a->sampler, frame_time, &c);
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        int64_t age = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 - c.frame_ms;
        if (age > 3 * a->cfg.interval_ms + 5000) {
            resp->status = 503;
            gp_buf_printf(&resp->body, "stale: last sample %lld ms ago\n", (long long)age);
        } else {
            gp_buf_puts(&resp->body, "ok\n");
        }
    } else if (!strcmp(path, "/")) {
        resp->content_type = "text/html; charset=utf-8";
        gp_buf_puts(&resp->body, index_html);
    } else {
        gp_http_error(resp, 404, "not found");
    }
}

int gp_agent_render_snapshot(struct gp_agent *a, struct gp_buf *out)
{
    struct render_ctx c = {a, out, GP_OK, 0};
    gp_sampler_read(a->sampler, render_snapshot, &c);
    return c.rc ? c.rc : out->err;
}

int gp_agent_render_metrics(struct gp_agent *a, struct gp_buf *out)
{
    struct render_ctx c = {a, out, GP_OK, 0};
    pthread_mutex_lock(&a->cache_mu);
    gp_sampler_read(a->sampler, render_metrics, &c);
    pthread_mutex_unlock(&a->cache_mu);
    return c.rc ? c.rc : out->err;
}

int gp_agent_start(struct gp_agent **out, const struct gp_agent_config *cfg, char *err, size_t errlen)
{
    struct gp_agent_embed none = {0};
    return gp_agent_start_embedded(out, cfg, &none, err, errlen);
}

int gp_agent_start_embedded(struct gp_agent **out, const struct gp_agent_config *cfg,
                            const struct gp_agent_embed *e, char *err, size_t errlen)
{
    struct gp_agent *a = calloc(1, sizeof *a);
    if (!a)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    a->cfg = *cfg;
    a->embed = *e;
    if (!a->cfg.hostname[0] && gethostname(a->cfg.hostname, sizeof a->cfg.hostname - 1))
        snprintf(a->cfg.hostname, sizeof a->cfg.hostname, "localhost");
    a->expo_opts.hostname_label = a->cfg.hostname_label;
    a->expo_opts.run_job = e->run_job;
    a->expo_opts.run_command = e->run_command;
    a->expo_opts.process_series = !strcmp(a->cfg.process_series, "all")    ? GP_PROC_SERIES_ALL
                                  : !strcmp(a->cfg.process_series, "none") ? GP_PROC_SERIES_NONE
                                                                           : GP_PROC_SERIES_GPU;
    pthread_mutex_init(&a->cache_mu, NULL);
    gp_buf_init(&a->metrics, 0);

    struct gp_source_config sc = {
        .proc_root = a->cfg.proc_root,
        .sysfs_root = a->cfg.sysfs_root,
        .nvml_library = a->cfg.nvml_library,
        .simulate = a->cfg.simulate[0] ? a->cfg.simulate : NULL,
        .simulate_faults = a->cfg.simulate_faults[0] ? a->cfg.simulate_faults : NULL,
        .hostname = a->cfg.hostname,
        .seed = a->cfg.seed,
        .interval_ms = a->cfg.interval_ms,
        .gpm = a->cfg.gpm,
        .all_processes = !strcmp(a->cfg.process_series, "all"),
        .follow = e->follow,
        .nfollow = e->nfollow,
        .steps_socket = a->cfg.steps_socket,
        .steps_socket_mode = gp_agent_steps_socket_mode(&a->cfg),
        .steps_socket_group = a->cfg.steps_socket_group,
        .flight_recorder_dir = a->cfg.flight_recorder_dir,
        .steps_per_job = e->steps_per_job,
        .step_observer = e->step_observer,
        .step_observer_ctx = e->step_observer_ctx,
    };
    int rc = GP_OK;
    if (sc.simulate && a->cfg.simulate_truth[0] && strcmp(a->cfg.simulate_truth, "-") != 0)
        rc = gp_sim_write_truth(a->cfg.simulate, a->cfg.seed, a->cfg.simulate_faults, a->cfg.simulate_truth,
                                err, errlen);
    if (rc) {
        gp_agent_stop(a);
        return rc;
    }
    if (sc.simulate)
        rc = gp_sampler_open(&a->sampler, &sc, gp_simulated_sources, gp_simulated_sources_count, err,
                             errlen);
    else
        rc = gp_sampler_open(&a->sampler, &sc, gp_hardware_sources, gp_hardware_sources_count, err,
                             errlen);
    if (!rc && (a->cfg.push.n || e->write)) {
        const char *urls[GP_CFG_LIST_MAX];
        for (unsigned i = 0; i < a->cfg.push.n; i++)
            urls[i] = a->cfg.push.v[i];
        /* The node label first: series that carry none (host, agent,
         * process, job) would otherwise merge with another node's. */
        char node[sizeof a->cfg.hostname_label + sizeof a->cfg.hostname + 1];
        snprintf(node, sizeof node, "%s=%s", a->cfg.hostname_label, a->cfg.hostname);
        const char *labels[1 + GP_CFG_LIST_MAX] = {node};
        for (unsigned i = 0; i < a->cfg.external_labels.n; i++)
            labels[1 + i] = a->cfg.external_labels.v[i];
        struct gp_push_options po = {
            .urls = urls,
            .nurls = a->cfg.push.n,
            .local = e->write,
            .local_ctx = e->write_ctx,
            .buffer_dir = a->cfg.buffer_dir,
            .buffer_max = a->cfg.buffer_max,
            .queue_max = a->cfg.push_queue_max,
            .bearer_token = a->cfg.push_bearer_token,
            .bearer_token_file = a->cfg.push_bearer_token_file,
            .timeout_ms = a->cfg.push_timeout_ms,
            .max_backoff_ms = a->cfg.push_max_backoff_ms,
            .labels = labels,
            .nlabels = 1 + a->cfg.external_labels.n,
        };
        rc = gp_push_start(&a->push, &po, err, errlen);
    }
    if (!rc && (a->push || e->tick_hook))
        gp_sampler_set_hook(a->sampler, after_tick, a);
    if (!rc)
        rc = gp_sampler_run(a->sampler, err, errlen);
    if (rc) {
        gp_agent_stop(a);
        return rc;
    }
    /* the newcomer on a laptop or a CPU VM: say what they get, and how to see more */
    if (!sc.simulate && gp_sampler_gpu_sources(a->sampler) == 0)
        gp_log(GP_LOG_WARN, "agent",
               "no GPU driver found (neither NVML nor an amdgpu card): serving host and process metrics only",
               "hint=\"to try gpulse without a GPU, add --simulate 1x8xH100\"");
    rc = e->no_http ? GP_OK : gp_http_start(&a->http, a->cfg.listen, handle, a, err, errlen);
    if (rc) {
        gp_agent_stop(a);
        return rc;
    }
    *out = a;
    return GP_OK;
}

unsigned gp_agent_port(const struct gp_agent *a) { return a->http ? gp_http_port(a->http) : 0; }

void gp_agent_stop(struct gp_agent *a)
{
    if (!a)
        return;
    gp_http_stop(a->http);
    gp_sampler_stop(a->sampler); /* no more ticks reach the pusher */
    gp_push_stop(a->push);
    gp_expo_free(&a->expo);
    gp_expo_free(&a->push_expo);
    gp_rw_build_free(&a->push_series);
    gp_buf_free(&a->metrics);
    pthread_mutex_destroy(&a->cache_mu);
    free(a);
}

int gp_agent_main(int argc, char **argv)
{
    struct gp_agent_config cfg;
    char err[768];
    bool help;
    int rc0;
    gp_agent_config_defaults(&cfg);
    if (gp_agent_config_from_args(&cfg, argc, argv, &help, err, sizeof err)) {
        fprintf(stderr, "gpulse agent: %s\n", err);
        return 2;
    }
    if (help) {
        gp_agent_config_usage(stdout);
        return 0;
    }
    if (gp_agent_config_validate(&cfg, err, sizeof err)) {
        fprintf(stderr, "gpulse agent: %s\n", err);
        return 2;
    }
    gp_log_parse_level(cfg.log_level, &gp_log_min);
    if (!strcmp(cfg.simulate_truth, "-")) {
        rc0 = gp_sim_write_truth(cfg.simulate, cfg.seed, cfg.simulate_faults, "-", err, sizeof err);
        if (rc0)
            fprintf(stderr, "gpulse agent: %s\n", err);
        return rc0 == GP_OK ? 0 : rc0 == GP_EUSAGE ? 2 : 1;
    }

    /* Signals go to sigwait below, not to the sampling or HTTP threads. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct gp_agent *a;
    int rc = gp_agent_start(&a, &cfg, err, sizeof err);
    if (rc) {
        fprintf(stderr, "gpulse agent: %s\n", err);
        return rc == GP_ECONFIG || rc == GP_EUSAGE ? 2 : 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    char host[128];
    unsigned port;
    gp_parse_listen(cfg.listen, host, sizeof host, &port, NULL, 0);
    gp_log(GP_LOG_INFO, "agent", "serving metrics", "listen=%s%s%s:%u interval=%lldms startup_ms=%.1f",
           strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", gp_agent_port(a),
           (long long)cfg.interval_ms,
           (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    int sig;
    sigwait(&set, &sig);
    gp_log(GP_LOG_INFO, "agent", "shutting down", "signal=%d", sig);
    gp_agent_stop(a);
    return 0;
}
