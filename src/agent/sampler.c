/* sampler.c - see sampler.h. */
#include "sampler.h"

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "sources/flightrec.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct open_source {
    const struct gp_source_ops *ops;
    void *state;
    uint64_t errors_total;
    double duration_s;
    int last_rc;          /* logged when it changes, not every tick */
};

double gp_sampler_reprobe_s = 60.0;

struct gp_sampler {
    struct gp_source_config cfg;
    struct open_source src[GP_SRC__COUNT];
    size_t nsrc;
    const struct gp_source_ops *absent[GP_SRC__COUNT]; /* answered GP_ENODEV */
    size_t nabsent;
    double reprobe_at;    /* monotonic seconds of the next probe of absent */
    struct gp_frame work;      /* filled by the tick, private */
    struct gp_frame published; /* read by outputs under lock */
    pthread_rwlock_t lock;
    struct gp_agent_stats stats;
    uint64_t seq;
    struct gp_fr_watch *fr;    /* flight recorder dumps; NULL: none */

    gp_sampler_hook hook;
    void *hook_arg;

    pthread_t thread;
    int running;
    pthread_mutex_t stop_mu;
    pthread_cond_t stop_cv;
    int stopping;
};

static double mono_s(void) { return (double)gp_mono_ns() / 1e9; }

/* Opens a source into the next slot. Returns what its open returned. */
static int open_source(struct gp_sampler *s, const struct gp_source_ops *ops, char *detail,
                       size_t len)
{
    void *state = NULL;
    int rc = ops->open(&s->cfg, &state, detail, len);
    if (rc == GP_OK) {
        s->src[s->nsrc] = (struct open_source){.ops = ops, .state = state};
        s->nsrc++;
    }
    return rc;
}

/* Tries the absent sources again; one that opens now joins the next ticks.
 * The GPU and step sources sample before procfs, which follows their
 * processes, and jobs, which names them: a newcomer is moved in front of
 * both. */
static void reprobe(struct gp_sampler *s)
{
    for (size_t i = 0; i < s->nabsent;) {
        char detail[512] = "";
        int rc = open_source(s, s->absent[i], detail, sizeof detail);
        if (rc != GP_OK) {
            i++;
            continue;
        }
        gp_log(GP_LOG_INFO, s->absent[i]->name, "source found something to sample", "%s", "");
        for (size_t k = s->nsrc - 1; k > 0 && (s->src[k - 1].ops->id == GP_SRC_PROCFS ||
                                               s->src[k - 1].ops->id == GP_SRC_JOBS);
             k--) {
            struct open_source t = s->src[k];
            s->src[k] = s->src[k - 1];
            s->src[k - 1] = t;
        }
        s->absent[i] = s->absent[--s->nabsent];
    }
}

void gp_sampler_tick(struct gp_sampler *s)
{
    struct gp_frame *f = &s->work;
    double t0 = mono_s();
    if (s->nabsent && t0 >= s->reprobe_at) {
        reprobe(s);
        s->reprobe_at = t0 + gp_sampler_reprobe_s;
    }
    gp_frame_reset(f);
    f->seq = ++s->seq;
    f->time_ms = gp_wall_ms();
    snprintf(f->hostname, sizeof f->hostname, "%s", s->cfg.hostname);
    for (size_t i = 0; i < s->nsrc; i++) {
        struct open_source *o = &s->src[i];
        unsigned errors = 0;
        double a = mono_s();
        int rc = o->ops->sample(o->state, f, &errors);
        o->duration_s = mono_s() - a;
        o->errors_total += errors + (rc != GP_OK);
        if (rc != o->last_rc) {
            if (rc != GP_OK)
                gp_log(GP_LOG_WARN, o->ops->name, "sampling failed", "err=\"%s\"", gp_strerror(rc));
            else
                gp_log(GP_LOG_INFO, o->ops->name, "sampling works again", "%s", "");
            o->last_rc = rc;
        }
    }
    gp_frame_sort_procs(f);
    /* after the jobs source, which gives the step reporters their ranks */
    gp_fr_watch_apply(s->fr, mono_s(), (double)f->time_ms / 1000.0, f->steps, f->nsteps);
    memset(f->src, 0, sizeof f->src);
    for (size_t i = 0; i < s->nsrc; i++) {
        struct gp_source_stat *st = &f->src[s->src[i].ops->id];
        st->active = true;
        st->errors_total = s->src[i].errors_total;
        st->duration_s = s->src[i].duration_s;
    }
    f->tick_duration_s = mono_s() - t0;

    /* Publish by swapping the two frames: no copy, no allocation. */
    pthread_rwlock_wrlock(&s->lock);
    struct gp_frame tmp = s->published;
    s->published = s->work;
    s->work = tmp;
    s->stats.ticks++;
    s->stats.last_tick_duration_s = f->tick_duration_s;
    pthread_rwlock_unlock(&s->lock);
    /* Only this thread swaps frames, so the published one holds still
     * while the hook reads it (readers share it under the read lock). */
    if (s->hook)
        s->hook(&s->published, &s->stats, s->hook_arg);
}

void gp_sampler_set_hook(struct gp_sampler *s, gp_sampler_hook fn, void *arg)
{
    s->hook = fn;
    s->hook_arg = arg;
}

void gp_sampler_read(struct gp_sampler *s,
                     void (*fn)(const struct gp_frame *f, const struct gp_agent_stats *st, void *arg),
                     void *arg)
{
    pthread_rwlock_rdlock(&s->lock);
    fn(&s->published, &s->stats, arg);
    pthread_rwlock_unlock(&s->lock);
}

static void advance(struct timespec *t, int64_t ns)
{
    t->tv_nsec += ns % 1000000000;
    t->tv_sec += ns / 1000000000 + t->tv_nsec / 1000000000;
    t->tv_nsec %= 1000000000;
}

static int before(const struct timespec *a, const struct timespec *b)
{
    return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static void *run(void *arg)
{
    struct gp_sampler *s = arg;
    int64_t ns = s->cfg.interval_ms * 1000000;
    struct timespec next, now;
    clock_gettime(CLOCK_MONOTONIC, &next);
    advance(&next, ns);
    pthread_mutex_lock(&s->stop_mu);
    while (!s->stopping) {
        /* Wait for the deadline or a stop request (the condvar uses CLOCK_MONOTONIC). */
        while (!s->stopping && pthread_cond_timedwait(&s->stop_cv, &s->stop_mu, &next) != ETIMEDOUT)
            ;
        if (s->stopping)
            break;
        pthread_mutex_unlock(&s->stop_mu);
        gp_sampler_tick(s);
        advance(&next, ns);
        /* Overran? Skip the ticks we missed instead of bursting to catch up. */
        clock_gettime(CLOCK_MONOTONIC, &now);
        while (!before(&now, &next)) {
            advance(&next, ns);
            pthread_rwlock_wrlock(&s->lock);
            s->stats.overruns++;
            pthread_rwlock_unlock(&s->lock);
        }
        pthread_mutex_lock(&s->stop_mu);
    }
    pthread_mutex_unlock(&s->stop_mu);
    return NULL;
}

int gp_sampler_open(struct gp_sampler **out, const struct gp_source_config *cfg,
                    const struct gp_source_ops *const *sources, size_t nsources, char *err,
                    size_t errlen)
{
    struct gp_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    s->cfg = *cfg;
    if (cfg->flight_recorder_dir && cfg->flight_recorder_dir[0] &&
        !(s->fr = gp_fr_watch_new(cfg->flight_recorder_dir))) {
        free(s);
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    }
    gp_frame_init(&s->work);
    gp_frame_init(&s->published);
    pthread_rwlock_init(&s->lock, NULL);
    pthread_mutex_init(&s->stop_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->stop_cv, &ca);
    pthread_condattr_destroy(&ca);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    s->stats.start_time_s = (double)now.tv_sec + (double)now.tv_nsec / 1e9;

    for (size_t i = 0; i < nsources && s->nsrc + s->nabsent < GP_SRC__COUNT; i++) {
        char detail[512] = "";
        int rc = open_source(s, sources[i], detail, sizeof detail);
        if (rc == GP_ENODEV) {
            char q[600];
            gp_log(GP_LOG_INFO, sources[i]->name, "source has nothing to sample here", "detail=%s",
                   gp_log_quote(q, sizeof q, detail));
            s->absent[s->nabsent++] = sources[i];
            continue;
        }
        if (rc != GP_OK) {
            gp_seterr(err, errlen, rc, "source '%s': %s", sources[i]->name, detail);
            gp_sampler_stop(s);
            return rc;
        }
    }
    s->reprobe_at = mono_s() + gp_sampler_reprobe_s;
    *out = s;
    return GP_OK;
}

int gp_sampler_run(struct gp_sampler *s, char *err, size_t errlen)
{
    gp_sampler_tick(s);
    if (pthread_create(&s->thread, NULL, run, s))
        return gp_seterr(err, errlen, GP_EINTERNAL, "cannot start the sampling thread");
    s->running = 1;
    return GP_OK;
}

int gp_sampler_start(struct gp_sampler **out, const struct gp_source_config *cfg,
                     const struct gp_source_ops *const *sources, size_t nsources, char *err,
                     size_t errlen)
{
    struct gp_sampler *s;
    int rc = gp_sampler_open(&s, cfg, sources, nsources, err, errlen);
    if (rc)
        return rc;
    if ((rc = gp_sampler_run(s, err, errlen))) {
        gp_sampler_stop(s);
        return rc;
    }
    *out = s;
    return GP_OK;
}

unsigned gp_sampler_gpu_sources(const struct gp_sampler *s)
{
    unsigned n = 0;
    for (size_t i = 0; i < s->nsrc; i++)
        n += s->src[i].ops->id == GP_SRC_NVML || s->src[i].ops->id == GP_SRC_AMDGPU ||
             s->src[i].ops->id == GP_SRC_SIMULATE; /* not procfs, steps, jobs */
    return n;
}

void gp_sampler_stop(struct gp_sampler *s)
{
    if (!s)
        return;
    if (s->running) {
        pthread_mutex_lock(&s->stop_mu);
        s->stopping = 1;
        pthread_cond_signal(&s->stop_cv);
        pthread_mutex_unlock(&s->stop_mu);
        pthread_join(s->thread, NULL);
    }
    for (size_t i = 0; i < s->nsrc; i++)
        s->src[i].ops->close(s->src[i].state);
    gp_frame_free(&s->work);
    gp_frame_free(&s->published);
    gp_fr_watch_free(s->fr);
    pthread_rwlock_destroy(&s->lock);
    pthread_mutex_destroy(&s->stop_mu);
    pthread_cond_destroy(&s->stop_cv);
    free(s);
}
