/*
 * periodic.h - a thread that runs one function every interval and stops
 * promptly when asked.
 *
 * The server's background jobs (the self-scrape, the weekly report)
 * each need the same loop: wait an interval or until told to stop, run,
 * repeat. The wait is a condition variable on the monotonic clock, so a
 * stop wakes the thread at once (it never sleeps out the interval) and a
 * wall-clock step neither stretches nor shortens an interval. A run in
 * progress is not interrupted: stop returns once it has finished.
 */
#ifndef GP_LIB_PERIODIC_H
#define GP_LIB_PERIODIC_H

#include <pthread.h>
#include <stdint.h>

/* Zero-initialise (a zeroed one may be stopped without being started). */
struct gp_periodic {
    void (*fn)(void *arg);
    void *arg;
    int64_t interval_ms;
    int first_now; /* run once at start, before the first interval */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th;
    int stop, started;
};

/*
 * Starts a thread that calls fn(arg) every interval_ms (> 0), counted
 * from the end of the previous call; the first call comes at once when
 * first_now, else after one interval. Returns GP_OK, or GP_ENOMEM when
 * the thread cannot be made (p is then as zeroed: stop is harmless).
 */
int gp_periodic_start(struct gp_periodic *p, int64_t interval_ms, int first_now, void (*fn)(void *arg),
                      void *arg);

/* Asks the thread to stop and waits for it: at once if it waits, after
 * the call in progress otherwise. Accepts one never started; idempotent. */
void gp_periodic_stop(struct gp_periodic *p);

#endif
