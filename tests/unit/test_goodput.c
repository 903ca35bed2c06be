/*
 * test_goodput.c - the split of a rank's wall time (query/goodput.h): a
 * hand-made timeline whose every second is known, a restart's repeated
 * steps as lost work, phase names, and figures summed over attempts.
 */
#include "query/goodput.h"
#include "test.h"

#include <math.h>

/* Rank starts at 100; 2 s start-up; a checkpoint restored (1 s) before
 * the first step; 10 steps of 1 s each with 0.25 s of data wait from
 * t=103; an evaluation of 2 s; a checkpoint save of 1.5 s; an idle gap of
 * 0.5 s and a tail of 1 s; end at 120. */
static void test_split(void)
{
    struct gp_goodput_rank r;
    gp_goodput_rank_init(&r, 100, -1);
    gp_goodput_phase(&r, "checkpoint_load", 103, 1);
    double t = 103;
    for (int i = 1; i <= 10; i++) {
        t += 1;
        gp_goodput_step(&r, t, 1, 0.25, i);
    }
    gp_goodput_phase(&r, "eval", t + 2, 2);
    gp_goodput_phase(&r, "checkpoint", t + 3.5, 1.5);
    gp_goodput_phase(&r, "warmup_compile", t + 4, 0.5); /* other */
    struct gp_goodput_figures f;
    gp_goodput_figures_init(&f);
    gp_goodput_add_rank(&f, &r, 120);
    gp_goodput_finish(&f);
    CHECK_DBL(f.wall, 20, 1e-9);
    CHECK_DBL(f.part[GP_GOODPUT_STARTUP], 2, 1e-9);
    CHECK_DBL(f.part[GP_GOODPUT_PRODUCTIVE], 7.5, 1e-9);
    CHECK_DBL(f.part[GP_GOODPUT_DATA_WAIT], 2.5, 1e-9);
    CHECK_DBL(f.part[GP_GOODPUT_CHECKPOINT], 2.5, 1e-9);
    CHECK_DBL(f.part[GP_GOODPUT_EVALUATION], 2, 1e-9);
    CHECK_DBL(f.part[GP_GOODPUT_OTHER], 0.5, 1e-9);
    CHECK_DBL(f.part[GP_GOODPUT_LOST], 0, 1e-9);
    CHECK_DBL(f.part[GP_GOODPUT_IDLE], 3, 1e-9); /* 20 - 17 */
    CHECK_DBL(f.ratio, 7.5 / 20, 1e-9);
    CHECK_INT(f.biggest_badput, GP_GOODPUT_IDLE);
    CHECK_STR(gp_goodput_part_name(f.biggest_badput), "idle");
}

/* A restart: the first attempt reached step 30; the second resumes from
 * step 20's checkpoint, so steps 21..30 are done again and lost. */
static void test_restart(void)
{
    struct gp_goodput_rank a, b;
    gp_goodput_rank_init(&a, 0, -1);
    for (int i = 1; i <= 30; i++)
        gp_goodput_step(&a, 1 + i * 0.5, 0.5, NAN, i);
    CHECK_DBL(a.last_step, 30, 0);
    gp_goodput_rank_init(&b, 100, a.last_step);
    for (int i = 21; i <= 40; i++)
        gp_goodput_step(&b, 101 + (i - 20) * 0.5, 0.5, 0.1, i);
    struct gp_goodput_figures fa, fb, job;
    gp_goodput_figures_init(&fa);
    gp_goodput_figures_init(&fb);
    gp_goodput_add_rank(&fa, &a, 16);
    gp_goodput_add_rank(&fb, &b, 111);
    CHECK_DBL(fb.part[GP_GOODPUT_LOST], 10 * 0.5, 1e-9);      /* steps 21..30, wait included */
    CHECK_DBL(fb.part[GP_GOODPUT_PRODUCTIVE], 10 * 0.4, 1e-9); /* steps 31..40 */
    CHECK_DBL(fb.part[GP_GOODPUT_DATA_WAIT], 10 * 0.1, 1e-9);
    CHECK_DBL(fb.part[GP_GOODPUT_STARTUP], 1, 1e-9);
    gp_goodput_figures_init(&job);
    gp_goodput_add(&job, &fa);
    gp_goodput_add(&job, &fb);
    gp_goodput_finish(&job);
    CHECK_DBL(job.wall, 16 + 11, 1e-9);
    CHECK_DBL(job.part[GP_GOODPUT_PRODUCTIVE], 15 + 4, 1e-9);
    CHECK_DBL(job.ratio, 19.0 / 27, 1e-9);
    CHECK_INT(job.biggest_badput, GP_GOODPUT_LOST);
    double sum = 0;
    for (int p = 0; p < GP_GOODPUT_NPARTS; p++)
        sum += job.part[p];
    CHECK_DBL(sum, job.wall, 1e-9);
}

/* Edge cases: a rank that never stepped is start-up; steps without
 * numbers are never lost; overlapping records never make idle negative;
 * bad numbers are ignored. */
static void test_edges(void)
{
    struct gp_goodput_rank r;
    gp_goodput_rank_init(&r, 10, 5);
    struct gp_goodput_figures f;
    gp_goodput_figures_init(&f);
    gp_goodput_add_rank(&f, &r, 14);
    gp_goodput_finish(&f);
    CHECK_DBL(f.part[GP_GOODPUT_STARTUP], 4, 1e-9);
    CHECK_DBL(f.ratio, 0, 1e-9);
    CHECK_INT(f.biggest_badput, GP_GOODPUT_STARTUP);

    gp_goodput_step(&r, 12, 1, NAN, -1); /* unnumbered: productive */
    gp_goodput_step(&r, 12, 3, 5, 2);     /* numbered 2 <= 5: lost; wait capped */
    gp_goodput_step(&r, NAN, 1, 0, 9);
    gp_goodput_step(&r, 13, -1, 0, 9);
    gp_goodput_phase(&r, "checkpoint", 13, INFINITY);
    gp_goodput_figures_init(&f);
    gp_goodput_add_rank(&f, &r, 13);
    gp_goodput_finish(&f);
    CHECK_DBL(f.part[GP_GOODPUT_PRODUCTIVE], 1, 1e-9);
    CHECK_DBL(f.part[GP_GOODPUT_LOST], 3, 1e-9);
    CHECK_DBL(f.part[GP_GOODPUT_STARTUP], 0, 1e-9); /* the first step started at 9, before start */
    CHECK_DBL(f.part[GP_GOODPUT_IDLE], 0, 1e-9);    /* 4 s of steps in 3 s of wall */
    CHECK_DBL(r.steps, 2, 0);

    gp_goodput_figures_init(&f);
    gp_goodput_add_rank(&f, &r, 5); /* ended before it started */
    gp_goodput_finish(&f);
    CHECK(f.wall == 0 && isnan(f.ratio) && f.biggest_badput == -1);

    CHECK_INT(gp_goodput_phase_part("checkpoint_save"), GP_GOODPUT_CHECKPOINT);
    CHECK_INT(gp_goodput_phase_part("validation"), GP_GOODPUT_EVALUATION);
    CHECK_INT(gp_goodput_phase_part("checkpointing"), GP_GOODPUT_OTHER);
}

/* The server's path: steps between two counter samples; the interval
 * that straddles the resume point is lost in proportion. */
static void test_intervals(void)
{
    struct gp_goodput_rank r;
    gp_goodput_rank_init(&r, 0, 45); /* resumed: steps up to 45 were done */
    gp_goodput_phase(&r, "checkpoint_load", 2, 1);
    gp_goodput_interval(&r, 5, 2, 0.5, 42, 2);  /* 41, 42: lost */
    gp_goodput_interval(&r, 6, 1, 0.25, 46, 4); /* 43..45 lost, 46 not */
    gp_goodput_interval(&r, 7, 1, NAN, 50, 4);  /* 47..50 */
    gp_goodput_interval(&r, 8, 1, 0, 51, 0);    /* no steps: ignored */
    struct gp_goodput_figures f;
    gp_goodput_figures_init(&f);
    gp_goodput_add_rank(&f, &r, 10);
    gp_goodput_finish(&f);
    CHECK_DBL(f.part[GP_GOODPUT_LOST], 2 + 0.75, 1e-9);
    CHECK_DBL(f.part[GP_GOODPUT_PRODUCTIVE], 0.75 * 0.25 + 1, 1e-9);
    CHECK_DBL(f.part[GP_GOODPUT_DATA_WAIT], 0.25 * 0.25, 1e-9);
    CHECK_DBL(f.part[GP_GOODPUT_STARTUP], 3 - 1, 1e-9); /* first steps from t=3, less the load */
    CHECK_DBL(r.steps, 10, 0);
    CHECK_DBL(r.last_step, 50, 0);
    double sum = 0;
    for (int p = 0; p < GP_GOODPUT_NPARTS; p++)
        sum += f.part[p];
    CHECK_DBL(sum, 10, 1e-9);
}

const struct gp_test gp_tests_goodput[] = {
    {"intervals", test_intervals},
    {"split", test_split},
    {"restart", test_restart},
    {"edges", test_edges},
    {0},
};
