/*
 * test_funnel.c - the fleet funnel (query/funnel.c) on synthetic GPUs
 * with hand-computed answers: the four stages, idle cost by job, user and
 * team (unallocated time idle in full), unpriced GPUs, zombies and the
 * JSON document; the weekly report's schedule, its slots and its text and
 * HTML rendered from that document.
 */
#include "query/funnel.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "report/report.h"
#include "server/server_int.h"
#include "storage/storage.h"
#include "test.h"

#include <math.h>

/* Steps of 10 s at 3.6 USD/h: a sample costs 0.01 USD. Range 100 s.
 *   A  job j1, alice, team ml: 0, 0.5, 1, 0.02  held 40, idle 20 (0, 0.02),
 *      unused 10 x (1 + 0.5 + 0 + 0.98) = 24.8: effective 15.2
 *   B  job j2, no user or team: 0, 0               held 20, idle 20
 *   C  no job: 0.9 x 3                            held 30, all idle cost */
static void fill(struct gp_funnel *f)
{
    static const double a[] = {0, 0.5, 1, 0.02}, b[] = {0, 0}, c[] = {0.9, 0.9, 0.9};
    gp_funnel_init(f, 0, 100000);
    struct gp_funnel_gpu g[] = {
        {a, 4, 10000, 3.6, "j1", "alice", "ml"},
        {b, 2, 10000, 3.6, "j2", "", NULL},
        {c, 3, 10000, 3.6, "", "", ""},
    };
    for (size_t i = 0; i < 3; i++)
        CHECK_INT(gp_funnel_add(f, &g[i]), GP_OK);
    gp_funnel_sort(f);
}

static void test_stages(void)
{
    struct gp_funnel f;
    fill(&f);
    CHECK_DBL(f.total_s, 90, 1e-9);
    CHECK_DBL(f.allocated_s, 60, 1e-9);
    CHECK_DBL(f.active_s, 20, 1e-9);
    CHECK_DBL(f.effective_s, 15.2, 1e-9);
    CHECK_DBL(gp_cost_total(&f.all), 0.09, 1e-12);
    CHECK_DBL(gp_funnel_idle_cost(&f), 0.07, 1e-12); /* 0.02 + 0.02 allocated, 0.03 free */
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_funnel_json(&f, &b);
    CHECK_CONTAINS(b.data, "\"gpus\":{\"total\":0.9,\"allocated\":0.6,\"active\":0.2,\"effective\":0.152}");
    CHECK_CONTAINS(b.data, "\"gpu_hours\":{\"total\":0.025,");
    CHECK_CONTAINS(b.data, "\"idle_cost\":0.07,\"idle_cost_allocated\":0.04,\"idle_cost_unallocated\":0.03,");
    CHECK_CONTAINS(b.data, "\"zombie_memory_bytes\":0,\"zombies\":[]}");
    gp_buf_free(&b);
    gp_funnel_free(&f);
}

static void test_groups(void)
{
    struct gp_funnel f;
    fill(&f);
    CHECK_INT((int)f.by_job.n, 2);
    /* equal idle cost: by key; an unknown user or team last */
    CHECK_STR(f.by_job.g[0].key, "j1");
    CHECK_STR(f.by_job.g[1].key, "j2");
    CHECK_STR(f.by_user.g[0].key, "alice");
    CHECK_STR(f.by_user.g[1].key, "");
    CHECK_STR(f.by_team.g[0].key, "ml");
    CHECK_DBL(f.by_job.g[0].idle_s, 20, 1e-9);
    CHECK_DBL(gp_cost_idle(&f.by_job.g[0].acc), 0.02, 1e-12);
    CHECK_DBL(gp_cost_total(&f.by_job.g[0].acc), 0.04, 1e-12);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_funnel_json(&f, &b);
    CHECK_CONTAINS(b.data, "\"job\":[{\"job\":\"j1\",\"gpus\":1,");
    CHECK_CONTAINS(b.data, "{\"user\":null,\"gpus\":1,");
    CHECK_CONTAINS(b.data, "{\"team\":null,");
    gp_buf_free(&b);
    gp_funnel_free(&f);
    /* a job with more idle cost sorts first; a GPU without a price costs null */
    static const double idle[] = {0, 0, 0, 0, 0}, busy[] = {1, 1};
    gp_funnel_init(&f, 0, 60000);
    struct gp_funnel_gpu g[] = {{busy, 2, 10000, 1, "a", "", ""},
                                {idle, 5, 10000, 1, "b", "", ""},
                                {idle, 5, 10000, 0, "c", "", ""}};
    for (size_t i = 0; i < 3; i++)
        CHECK_INT(gp_funnel_add(&f, &g[i]), GP_OK);
    gp_funnel_sort(&f);
    CHECK_STR(f.by_job.g[0].key, "b");
    CHECK_STR(f.by_job.g[2].key, "c");
    gp_buf_init(&b, 0);
    gp_funnel_json(&f, &b);
    CHECK_CONTAINS(b.data, "{\"job\":\"c\",\"gpus\":1,\"gpu_hours\":");
    CHECK_CONTAINS(b.data, "\"cost\":null,\"idle_cost\":null,\"unpriced_gpus\":1}");
    CHECK_CONTAINS(b.data, "\"unpriced_gpus\":1,\"currency\":\"USD\"");
    /* no GPU without a job: nothing unallocated to pay for */
    CHECK_CONTAINS(b.data, "\"idle_cost_unallocated\":0,");
    gp_buf_free(&b);
    gp_funnel_free(&f);
}

static void test_empty(void)
{
    struct gp_funnel f;
    gp_funnel_init(&f, 1000, 1000);
    struct gp_funnel_gpu none = {NULL, 0, 10000, 1, "j", "", ""};
    CHECK_INT(gp_funnel_add(&f, &none), GP_OK);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_funnel_sort(&f);
    gp_funnel_json(&f, &b);
    /* an empty range has no average; no GPU time costs nothing */
    CHECK_CONTAINS(b.data, "\"gpus\":{\"total\":null,");
    CHECK_CONTAINS(b.data, "\"cost\":0,\"idle_cost\":0,\"idle_cost_allocated\":0,\"idle_cost_unallocated\":0,");
    CHECK_CONTAINS(b.data, "\"idle_cost_by\":{\"job\":[],\"user\":[],\"team\":[]}");
    gp_buf_free(&b);
    gp_funnel_free(&f);
}

static void test_zombies(void)
{
    /* the job said it ended at 60 s: memory at 100 s is a zombie's, at
     * 80 s within the grace of a process still exiting */
    CHECK(gp_funnel_is_zombie(1e9, 100000, 60));
    CHECK(!gp_funnel_is_zombie(1e9, 80000, 60));
    CHECK(!gp_funnel_is_zombie(0, 100000, 60));
    CHECK(!gp_funnel_is_zombie(1e9, 100000, NAN));
    struct gp_funnel f;
    gp_funnel_init(&f, 0, 200000);
    struct gp_funnel_zombie z = {"n1", "0", "42", "python", "j9", 2e9, 150000, 60};
    CHECK_INT(gp_funnel_zombie(&f, &z), GP_OK);
    struct gp_funnel_zombie big = z, alive = z;
    snprintf(big.pid, sizeof big.pid, "43");
    big.memory_bytes = 3e9;
    alive.job_end_s = NAN;
    CHECK_INT(gp_funnel_zombie(&f, &big), GP_OK);
    CHECK_INT(gp_funnel_zombie(&f, &alive), GP_OK);
    CHECK_INT((int)f.nzombies, 2);
    gp_funnel_sort(&f);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_funnel_json(&f, &b);
    CHECK_CONTAINS(b.data, "\"zombie_memory_bytes\":5000000000,\"zombies\":[{\"node\":\"n1\","
                           "\"gpu\":\"0\",\"pid\":\"43\",\"comm\":\"python\",\"job\":\"j9\","
                           "\"memory_bytes\":3000000000,\"seen\":150,\"job_ended\":60}");
    gp_buf_free(&b);
    gp_funnel_free(&f);
}

/* The rollups the store keeps of samples v[] taken every step_ms from 0:
 * the store's own fold (gp_storage_rollups_of). */
static void rollups_of(const double *v, size_t n, int64_t step_ms, struct gp_rollups *out)
{
    int64_t t[64];
    for (size_t i = 0; i < n; i++)
        t[i] = (int64_t)i * step_ms;
    struct gp_samples x = {.t = t, .v = (double *)v, .n = n};
    CHECK_INT(gp_storage_rollups_of(&x, 0, t[n - 1], out), GP_OK);
}

/* Job j1 at 15 s steps, 3.6 USD/h, four minutes:
 *   m0  0.8 x 4              active; unused 0.8
 *   m1  0, 0, 0.01, 0.03     idle; unused 3.96
 *   m2  0, 0.02, 0.5, 1      both: mean 0.38, min 0, max 1: 0.38 x 4 =
 *                            1.52 estimated active (truly 2); unused 2.48
 *   m3  0.6 x 4              active; unused 1.6
 * step 60 / 4 (m1, m2 full) = 15 s; held 16 x 15 = 240 s; idle (4 +
 * 2.48) x 15 = 97.2 s, active 142.8 (raw: 150); unused 8.84 x 15 = 132.6,
 * effective 107.4 (= raw); uncertain m2's 60 s. Utilization 50 % (unit
 * 100) on a free GPU for two minutes: step 60 / 4 = 15 s (estimated: no
 * full minute), held 120 s, all idle cost. */
static const double roll_a[] = {0.8, 0.8, 0.8, 0.8, 0, 0, 0.01, 0.03, 0, 0.02, 0.5, 1, 0.6, 0.6, 0.6, 0.6};

static void test_rollups(void)
{
    struct gp_rollups ra = {0}, rb = {0};
    static const double b[] = {50, 50, 50, 50, 50, 50, 50, 50};
    rollups_of(roll_a, 16, 15000, &ra);
    rollups_of(b, 8, 15000, &rb);
    CHECK_INT((int)ra.n, 4);
    bool exact = false;
    CHECK(gp_funnel_rollup_step(ra.r, ra.n, &exact) == 15000 && exact);
    CHECK(gp_funnel_rollup_step(rb.r, rb.n, &exact) == 15000 && !exact);
    struct gp_funnel f;
    gp_funnel_init(&f, 0, 240000);
    struct gp_funnel_gpu_rollups ga = {ra.r, ra.n, 1, 0, 3.6, "j1", "alice", "ml"},
                                 gb = {rb.r, rb.n, 100, 0, 3.6, "", "", ""};
    CHECK_INT(gp_funnel_add_rollups(&f, &ga), GP_OK);
    CHECK_INT(gp_funnel_add_rollups(&f, &gb), GP_OK);
    CHECK(f.rollups);
    CHECK_DBL(f.total_s, 360, 1e-9);
    CHECK_DBL(f.allocated_s, 240, 1e-9);
    CHECK_DBL(f.active_s, 142.8, 1e-9);
    CHECK_DBL(f.effective_s, 107.4, 1e-9);
    CHECK_DBL(f.uncertain_s, 60, 1e-9);
    CHECK_DBL(gp_cost_total(&f.all), 0.36, 1e-12);
    CHECK_DBL(gp_cost_idle(&f.allocated), 0.0972, 1e-12);
    CHECK_DBL(gp_funnel_idle_cost(&f), 0.0972 + 0.12, 1e-12);
    CHECK_DBL(gp_cost_unused(&f.allocated), 0.1326, 1e-12);
    CHECK_DBL(f.by_user.g[0].idle_s, 97.2, 1e-9);
    gp_funnel_sort(&f);
    struct gp_buf j;
    gp_buf_init(&j, 0);
    gp_funnel_json(&f, &j);
    CHECK_CONTAINS(j.data, "\"resolution\":\"1m\",\"approximate\":true,"
                           "\"active_uncertain_gpu_hours\":0.0166666");
    /* the raw answer: equal where the minute is exact, within the bound */
    struct gp_funnel r;
    gp_funnel_init(&r, 0, 240000);
    struct gp_funnel_gpu raw = {roll_a, 16, 15000, 3.6, "j1", "alice", "ml"};
    CHECK_INT(gp_funnel_add(&r, &raw), GP_OK);
    CHECK_DBL(r.active_s, 150, 1e-9);
    CHECK_DBL(r.effective_s, f.effective_s, 1e-9);
    CHECK_DBL(r.allocated_s, f.allocated_s, 1e-9);
    CHECK(fabs(r.active_s - f.active_s) <= f.uncertain_s);
    gp_buf_reset(&j);
    gp_funnel_json(&r, &j);
    CHECK_CONTAINS(j.data, "\"resolution\":\"raw\",\"approximate\":false,"
                           "\"active_uncertain_gpu_hours\":0,");
    /* a minute of NaNs only: the raw path drops them, so does this; a
     * NaN among numbers is estimated from min and max */
    struct gp_rollup odd[] = {{0, NAN, NAN, NAN, 4}, {60000, 0.2, 0.4, NAN, 4}};
    struct gp_funnel_gpu_rollups go = {odd, 2, 1, 0, 0, "j2", "", ""};
    gp_funnel_free(&r);
    gp_funnel_init(&r, 0, 120000);
    CHECK_INT(gp_funnel_add_rollups(&r, &go), GP_OK);
    /* the caller's raw step (samples 20 s apart) wins over the counts' 15 s */
    go.step_ms = 20000;
    CHECK_INT(gp_funnel_add_rollups(&r, &go), GP_OK);
    CHECK_DBL(r.allocated_s, 60 + 80, 1e-9);
    CHECK_DBL(r.effective_s, 0.3 * 140, 1e-9);
    CHECK_DBL(r.uncertain_s, 140, 1e-9);
    gp_funnel_free(&r);
    gp_funnel_init(&r, 0, 120000);
    go.step_ms = 0;
    CHECK_INT(gp_funnel_add_rollups(&r, &go), GP_OK);
    CHECK_DBL(r.allocated_s, 60, 1e-9);
    CHECK_DBL(r.effective_s, 0.3 * 60, 1e-9);
    CHECK_DBL(r.uncertain_s, 60, 1e-9);
    gp_buf_free(&j);
    gp_funnel_free(&r);
    gp_funnel_free(&f);
    gp_rollups_free(&ra);
    gp_rollups_free(&rb);
}

static void test_schedule(void)
{
    char err[160];
    int dow = -1, min = -1;
    CHECK_INT(gp_srv_funnel_schedule("mon 08:00", &dow, &min, err, sizeof err), GP_OK);
    CHECK_INT(dow, 0);
    CHECK_INT(min, 480);
    CHECK_INT(gp_srv_funnel_schedule("SUN 23:59", &dow, &min, err, sizeof err), GP_OK);
    CHECK_INT(dow, 6);
    CHECK_INT(min, 1439);
    const char *bad[] = {"", "mon", "mon 8", "mon 24:00", "mon 08:60", "monday 08:00", "mon 08:00x",
                         "xyz 08:00", "mon -1:00"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_INT(gp_srv_funnel_schedule(bad[i], &dow, &min, err, sizeof err), GP_ECONFIG);
        CHECK_CONTAINS(err, "funnel_report_schedule: '");
    }
    /* Thursday 2026-11-26 21:50 UTC: Monday 08:00 was 2026-11-23 */
    CHECK(gp_srv_funnel_slot(0, 480, 1795729800000LL) == 1795420800000LL);
    /* at the slot itself, that slot; a minute before, the week before */
    CHECK(gp_srv_funnel_slot(0, 480, 1795420800000LL) == 1795420800000LL);
    CHECK(gp_srv_funnel_slot(0, 480, 1795420740000LL) == 1794816000000LL);
    /* before the first Monday of the epoch: 1969-12-29 08:00 */
    CHECK(gp_srv_funnel_slot(0, 480, 0) == -230400000LL);
}

static void test_report(void)
{
    struct gp_funnel f;
    fill(&f);
    struct gp_funnel_gpu evil = {(const double[]){0, 0}, 2, 10000, 3.6, "<script>x</script>", "\x1b[31mroot", ""};
    CHECK_INT(gp_funnel_add(&f, &evil), GP_OK);
    struct gp_funnel_zombie z = {"n1", "0", "42", "python", "j9", 2147483648.0, 150000, 60};
    CHECK_INT(gp_funnel_zombie(&f, &z), GP_OK);
    gp_funnel_sort(&f);
    struct gp_buf b, t, h;
    gp_buf_init(&b, 0);
    gp_buf_init(&t, 0);
    gp_buf_init(&h, 0);
    gp_funnel_json(&f, &b);
    json_error_t je;
    json_t *d = json_loads(b.data, 0, &je);
    CHECK(d != NULL);
    char subject[256];
    CHECK_INT(gp_report_funnel(d, "http://g:9402/#/fleet?funnel_end=100", subject, sizeof subject, &t, &h),
              GP_OK);
    CHECK_STR(subject, "[gpulse] fleet funnel to 1970-01-01 00:01:40 UTC: $0.09 idle");
    CHECK_CONTAINS(t.data, "gpulse fleet funnel, 1970-01-01 00:00:00 UTC to 1970-01-01 00:01:40 UTC");
    /* (90 + 20) s over 100 s; 80 s allocated; 20 s active */
    CHECK_CONTAINS(t.data, "  total         1.10          0.03");
    CHECK_CONTAINS(t.data, "  allocated     0.80          0.02");
    CHECK_CONTAINS(t.data, "  idle cost             $0.09");
    CHECK_CONTAINS(t.data, "  unallocated           $0.03");
    CHECK_CONTAINS(t.data, "Zombie processes: 1 holding 2.00 GiB");
    CHECK_CONTAINS(t.data, "The dashboard: http://g:9402/#/fleet?funnel_end=100");
    CHECK(!strchr(t.data, '\x1b'));
    CHECK(!strstr(h.data, "<script>"));
    CHECK_CONTAINS(h.data, "&lt;script&gt;x&lt;/script&gt;");
    CHECK_CONTAINS(h.data, "<a href=\"http://g:9402/#/fleet?funnel_end=100\">");
    json_decref(d);
    /* not a funnel */
    d = json_loads("{\"start\":1}", 0, &je);
    CHECK_INT(gp_report_funnel(d, "", subject, sizeof subject, &t, &h), GP_EPARSE);
    json_decref(d);
    gp_buf_free(&b);
    gp_buf_free(&t);
    gp_buf_free(&h);
    gp_funnel_free(&f);
}

/* gp_funnel_rollup_cuts: a minute whose samples straddle no cut (all
 * idle or all busy, all within 0-1 or all outside on one side) splits
 * the same with its mean for min and max, what the remote backend sends
 * for such minutes; some that straddle one need both. */
static void test_rollup_cuts(void)
{
    int differ = 0;
    for (int unit = 1; unit <= 100; unit += 99) {
        double cuts[GP_FUNNEL_CUTS];
        CHECK_INT((int)gp_funnel_rollup_cuts(unit, cuts), GP_FUNNEL_CUTS);
        CHECK(cuts[0] == 0 && cuts[1] == 0.05 * unit && cuts[2] == unit);
        /* minutes of 4 samples: lo..hi, evenly spread (all times unit) */
        static const double m[][2] = {{0, 0.04}, {0.01, 0.049}, {0.05, 0.9}, {0.3, 1}, {1.2, 1.5},
                                      {-0.3, -0.1}, {0.2, 0.2}, {0.01, 0.9}, {-0.1, 0.3}, {0.5, 1.3}};
        for (size_t k = 0; k < sizeof m / sizeof m[0]; k++) {
            struct gp_rollup r = {.t = 0, .min = m[k][0] * unit, .max = m[k][1] * unit, .count = 4};
            r.sum = (m[k][0] + m[k][0] + m[k][1] + m[k][1]) * unit; /* two at each end */
            int straddles = 0;
            for (size_t c = 0; c < GP_FUNNEL_CUTS; c++)
                straddles |= r.min < cuts[c] && cuts[c] <= r.max;
            struct gp_rollup mean = r;
            mean.min = mean.max = r.sum / (double)r.count;
            struct gp_funnel a, b;
            gp_funnel_init(&a, 0, 60000);
            gp_funnel_init(&b, 0, 60000);
            struct gp_funnel_gpu_rollups ga = {&r, 1, unit, 15000, 3.6, "j", "", ""},
                                         gb = {&mean, 1, unit, 15000, 3.6, "j", "", ""};
            CHECK_INT(gp_funnel_add_rollups(&a, &ga), GP_OK);
            CHECK_INT(gp_funnel_add_rollups(&b, &gb), GP_OK);
            int same = a.active_s == b.active_s && a.effective_s == b.effective_s &&
                       a.uncertain_s == b.uncertain_s && a.allocated.cost_idle == b.allocated.cost_idle;
            if (!straddles && !same)
                gp_test_fail(__FILE__, __LINE__, "unit %d minute %g..%g straddles no cut but splits "
                             "otherwise with its mean", unit, m[k][0], m[k][1]);
            differ += straddles && !same;
            gp_funnel_free(&a);
            gp_funnel_free(&b);
        }
    }
    CHECK_INT(differ, 2 * 3); /* 0.01..0.9, -0.1..0.3, 0.5..1.3 need their min and max */
}

const struct gp_test gp_tests_funnel[] = {
    {"rollup_cuts", test_rollup_cuts},
    {"stages", test_stages},
    {"groups", test_groups},
    {"empty", test_empty},
    {"zombies", test_zombies},
    {"rollups", test_rollups},
    {"schedule", test_schedule},
    {"report", test_report},
    {0},
};
