#include "lib/clock.h"
#include "lib/err.h"
#include "lib/periodic.h"
#include "test.h"

#include <unistd.h>

struct counter {
    int n;
    int64_t sleep_ms; /* each call takes this long */
};

static void tick(void *arg)
{
    struct counter *c = arg;
    __atomic_add_fetch(&c->n, 1, __ATOMIC_RELAXED);
    if (c->sleep_ms)
        usleep((useconds_t)(c->sleep_ms * 1000));
}

static int count(struct counter *c) { return __atomic_load_n(&c->n, __ATOMIC_RELAXED); }

/* A stop while the thread waits out a long interval returns at once,
 * not after the interval. */
static void test_stop_is_prompt(void)
{
    struct counter c = {0, 0};
    struct gp_periodic p;
    CHECK_INT(gp_periodic_start(&p, 60000, 0, tick, &c), GP_OK);
    usleep(50000);
    int64_t t0 = gp_mono_ms();
    gp_periodic_stop(&p);
    int64_t took = gp_mono_ms() - t0;
    if (took > 1000)
        gp_test_fail(__FILE__, __LINE__, "stop took %lld ms while waiting a 60 s interval", (long long)took);
    CHECK_INT(count(&c), 0); /* not first_now: nothing ran before the first interval */
    gp_periodic_stop(&p);    /* again: harmless */
}

/* It runs every interval, and first_now runs once at start. */
static void test_runs_every_interval(void)
{
    struct counter c = {0, 0};
    struct gp_periodic p;
    CHECK_INT(gp_periodic_start(&p, 20, 0, tick, &c), GP_OK);
    int64_t t0 = gp_mono_ms();
    while (count(&c) < 3 && gp_mono_ms() - t0 < 5000)
        usleep(5000);
    gp_periodic_stop(&p);
    CHECK(count(&c) >= 3);
    int n = count(&c);
    usleep(60000);
    CHECK_INT(count(&c), n); /* nothing after stop */

    struct counter d = {0, 0};
    CHECK_INT(gp_periodic_start(&p, 60000, 1, tick, &d), GP_OK);
    t0 = gp_mono_ms();
    while (count(&d) < 1 && gp_mono_ms() - t0 < 5000)
        usleep(2000);
    gp_periodic_stop(&p);
    CHECK_INT(count(&d), 1);
}

/* A stop during a call waits for that call, then no more come. */
static void test_stop_waits_for_the_call(void)
{
    struct counter c = {0, 300};
    struct gp_periodic p;
    CHECK_INT(gp_periodic_start(&p, 60000, 1, tick, &c), GP_OK);
    while (count(&c) < 1)
        usleep(1000);
    int64_t t0 = gp_mono_ms();
    gp_periodic_stop(&p);
    int64_t took = gp_mono_ms() - t0;
    CHECK(took >= 200);  /* the call in progress finished first */
    CHECK(took < 2000);  /* and the 60 s interval was not waited out */
    CHECK_INT(count(&c), 1);
}

/* A zeroed one, never started, may be stopped. */
static void test_stop_unstarted(void)
{
    struct gp_periodic p = {0};
    gp_periodic_stop(&p);
    CHECK_INT(p.started, 0);
}

const struct gp_test gp_tests_periodic[] = {
    {"stop_is_prompt", test_stop_is_prompt},
    {"runs_every_interval", test_runs_every_interval},
    {"stop_waits_for_the_call", test_stop_waits_for_the_call},
    {"stop_unstarted", test_stop_unstarted},
    {0},
};
