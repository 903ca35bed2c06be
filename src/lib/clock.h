/*
 * clock.h - the two clocks gpulse reads: monotonic for intervals,
 * deadlines and durations; wall (realtime) for sample timestamps.
 */
#ifndef GP_LIB_CLOCK_H
#define GP_LIB_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline int64_t gp_mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static inline int64_t gp_mono_ms(void) { return gp_mono_ns() / 1000000; }

static inline int64_t gp_wall_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The realtime clock ms from now, for pthread_cond_timedwait's deadline. */
static inline struct timespec gp_realtime_after(int64_t ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    int64_t ns = t.tv_nsec + (ms % 1000) * 1000000;
    t.tv_sec += ms / 1000 + ns / 1000000000;
    t.tv_nsec = ns % 1000000000;
    return t;
}

#endif
