#include "sources/frame.h"
#include "test.h"

static void test_reuse_keeps_memory(void)
{
    struct gp_frame f;
    gp_frame_init(&f);
    for (int tick = 0; tick < 3; tick++) {
        gp_frame_reset(&f);
        for (int i = 0; i < 8; i++) {
            struct gp_gpu *g = gp_frame_add_gpu(&f);
            CHECK(g);
            CHECK(!gp_gpu_has(g, GPF_GPU_UTIL));
            CHECK_INT(g->mig_gi, -1);
            gp_gpu_set(g, GPF_GPU_UTIL, 50);
            for (int p = 0; p < 5; p++)
                CHECK(gp_gpu_add_proc(g));
        }
    }
    CHECK_INT(f.ngpus, 8);
    CHECK_INT(f.gpus[3].nprocs, 5);
    CHECK(f.gpus[3].cap_procs >= 5);
    gp_frame_free(&f);
}

static void test_find_proc(void)
{
    struct gp_frame f;
    gp_frame_init(&f);
    unsigned pids[] = {30, 10, 20, 40};
    for (int i = 0; i < 4; i++)
        gp_frame_add_proc(&f)->pid = pids[i];
    gp_frame_sort_procs(&f);
    CHECK(gp_frame_find_proc(&f, 20) && gp_frame_find_proc(&f, 20)->pid == 20);
    CHECK(gp_frame_find_proc(&f, 25) == NULL);
    CHECK(gp_frame_find_proc(&f, 41) == NULL);
    struct gp_frame c;
    gp_frame_init(&c);
    gp_frame_add_gpu(&f)->index = 3;
    gp_gpu_add_proc(&f.gpus[0])->pid = 10;
    CHECK_INT(gp_frame_copy(&c, &f), 0);
    CHECK_INT(c.nprocs, 4);
    CHECK_INT(c.gpus[0].index, 3);
    CHECK_INT(c.gpus[0].procs[0].pid, 10);
    CHECK(c.gpus[0].procs != f.gpus[0].procs);
    gp_frame_free(&c);
    gp_frame_free(&f);
}

const struct gp_test gp_tests_frame[] = {
    {"reuse_keeps_memory", test_reuse_keeps_memory},
    {"find_proc", test_find_proc},
    {0},
};
