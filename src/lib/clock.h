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

#endif
