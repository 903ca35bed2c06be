/*
 * periodic.c - the periodic thread (see periodic.h): one mutex guards the
 * stop flag; the thread waits on a condition variable whose clock is
 * CLOCK_MONOTONIC with a deadline one interval after its last call.
 */
#include "lib/periodic.h"

#include "lib/err.h"

#include <errno.h>
#include <string.h>
#include <time.h>

static struct timespec mono_after(int64_t ms)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    int64_t ns = t.tv_nsec + (ms % 1000) * 1000000;
    t.tv_sec += (time_t)(ms / 1000 + ns / 1000000000);
    t.tv_nsec = ns % 1000000000;
    return t;
}

static void *periodic_thread(void *arg)
{
    struct gp_periodic *p = arg;
    if (p->first_now)
        p->fn(p->arg);
    for (;;) {
        struct timespec until = mono_after(p->interval_ms);
        pthread_mutex_lock(&p->mu);
        while (!p->stop && pthread_cond_timedwait(&p->cv, &p->mu, &until) != ETIMEDOUT)
            ;
        int stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop)
            return NULL;
        p->fn(p->arg);
    }
}

int gp_periodic_start(struct gp_periodic *p, int64_t interval_ms, int first_now, void (*fn)(void *arg),
                      void *arg)
{
    memset(p, 0, sizeof *p);
    p->fn = fn;
    p->arg = arg;
    p->interval_ms = interval_ms > 0 ? interval_ms : 1;
    p->first_now = first_now;
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca))
        return GP_ENOMEM;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int bad = pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (bad)
        return GP_ENOMEM;
    pthread_mutex_init(&p->mu, NULL);
    if (pthread_create(&p->th, NULL, periodic_thread, p)) {
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        memset(p, 0, sizeof *p);
        return GP_ENOMEM;
    }
    p->started = 1;
    return GP_OK;
}

void gp_periodic_stop(struct gp_periodic *p)
{
    if (!p->started)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->th, NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    p->started = 0;
}
