/*
 * test_simulate_plan.c - the simulated fleet's plan and what it plays:
 * exactly one of each planted fault for the issue's spec, deterministic
 * by seed; the simulate_faults override and its errors; the ground
 * truth; simulated jobs and step reporters in the frame (and the jobs
 * source leaving them alone); the leak's slope and time to OOM; the
 * straggler's step time as an outlier of its job; healthy memory that
 * rises once and plateaus; checkpoints, the hang, the crash loop and
 * the power-capped straggler.
 */
#include "lib/err.h"
#include "sources/simulate.h"
#include "sources/simulate_plan.h"
#include "sources/simulate_spec.h"
#include "sources/steps_proto.h"
#include "test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#define ISSUE_SPEC "8x8xH100,4x8xA100,2x8xMI300X"
#define T0_MS 1700000000000ll
#define RUNNING_MS 14000 /* every job steps by then (start 1-5 s, loading 8 s) */

static void *open_sim(const char *spec, uint64_t seed, const char *faults)
{
    struct gp_source_config cfg = {.simulate = spec, .seed = seed, .interval_ms = 1000,
                                   .simulate_faults = faults};
    void *st = NULL;
    char err[512] = "";
    if (gp_source_simulate.open(&cfg, &st, err, sizeof err) != GP_OK)
        gp_test_fail(__FILE__, __LINE__, "open \"%s\": %s", spec, err);
    return st;
}

static void sample_at(void *st, struct gp_frame *f, int64_t ms)
{
    gp_frame_reset(f);
    f->time_ms = ms;
    unsigned errors = 0;
    CHECK_INT(gp_source_simulate.sample(st, f, &errors), GP_OK);
    CHECK_INT(errors, 0);
}

static int build(const char *spec_text, uint64_t seed, const char *faults, struct gp_sim_plan *p,
                 char *err, size_t errlen)
{
    struct gp_sim_spec spec;
    CHECK_INT(gp_sim_spec_parse(spec_text, &spec, err, errlen), GP_OK);
    return gp_sim_plan_build(&spec, seed, faults, p, err, errlen);
}

/* Frame index of the GPU of fault kind k in plan p of a spec of 8-GPU nodes. */
static unsigned fault_gpu(const struct gp_sim_plan *p, enum gp_sim_fault_kind k)
{
    for (unsigned i = 0; i < p->nfaults; i++)
        if (p->faults[i].kind == k)
            return p->faults[i].node * 8 + p->faults[i].gpu;
    gp_test_fail(__FILE__, __LINE__, "no %s fault", gp_sim_fault_infos[k].name);
}

static void test_plan_issue_spec(void)
{
    char err[256];
    bool differ = false;
    struct gp_sim_plan first = {0};
    for (uint64_t seed = 1; seed <= 20; seed++) {
        struct gp_sim_plan p, q;
        CHECK_INT(build(ISSUE_SPEC, seed, NULL, &p, err, sizeof err), GP_OK);
        CHECK_INT(build(ISSUE_SPEC, seed, "", &q, err, sizeof err), GP_OK);
        CHECK_INT(p.ngpus, 112);
        CHECK_INT(p.nfaults, GP_SIM_FAULT__COUNT);
        /* deterministic: the same seed, the same plan */
        CHECK(memcmp(p.faults, q.faults, sizeof p.faults) == 0);
        CHECK(memcmp(p.slots, q.slots, p.ngpus * sizeof *p.slots) == 0);
        unsigned seen[GP_SIM_FAULT__COUNT] = {0}, nfault_slots = 0;
        for (unsigned i = 0; i < p.nfaults; i++) {
            const struct gp_sim_fault *f = &p.faults[i];
            seen[f->kind]++;
            for (unsigned j = 0; j < i; j++)
                CHECK(p.faults[j].node != f->node); /* 14 nodes: each fault alone on its node */
            const struct gp_sim_slot *s = &p.slots[f->node * 8 + f->gpu];
            CHECK_INT(s->fault, (int)f->kind);
            CHECK_INT(s->job, f->job);
            CHECK_INT(s->rank, f->rank);
            if (f->kind == GP_SIM_FAULT_ECC)
                CHECK(f->node < 12); /* H100 or A100: ECC memory */
            bool solo = f->kind == GP_SIM_FAULT_STARVED || f->kind == GP_SIM_FAULT_THROTTLED ||
                        f->kind == GP_SIM_FAULT_IDLE;
            CHECK_INT(s->world, solo ? 1 : 8);
        }
        for (unsigned i = 0; i < p.ngpus; i++) {
            nfault_slots += p.slots[i].fault >= 0;
            CHECK(p.slots[i].start_s >= 1 && p.slots[i].start_s <= 5);
            CHECK(p.slots[i].rank >= 0 && p.slots[i].rank < p.slots[i].world);
        }
        CHECK_INT(nfault_slots, GP_SIM_FAULT__COUNT);
        for (int k = 0; k < GP_SIM_FAULT__COUNT; k++)
            CHECK_INT(seen[k], 1);
        /* the throttled card is not in the straggler's job */
        unsigned sg = fault_gpu(&p, GP_SIM_FAULT_STRAGGLER), tg = fault_gpu(&p, GP_SIM_FAULT_THROTTLED);
        CHECK(p.slots[sg].job != p.slots[tg].job);
        CHECK_INT(p.njobs, 14 + 3); /* a job per node, and the three single-GPU faults' own */
        if (seed == 1)
            first = p;
        else {
            differ |= memcmp(first.faults, p.faults, sizeof p.faults) != 0;
            gp_sim_plan_free(&p);
        }
        gp_sim_plan_free(&q);
    }
    CHECK(differ);
    gp_sim_plan_free(&first);
    gp_sim_plan_free(NULL);
}

static void test_faults_parse(void)
{
    struct gp_sim_faults o;
    char err[512];
    CHECK_INT(gp_sim_faults_parse(" none ", &o, err, sizeof err), GP_OK);
    CHECK_INT(o.n, 0);
    CHECK_INT(gp_sim_faults_parse("leak=sim-node-2/3, straggler = sim-node-5/1,ecc=sim-node-0/0", &o, err,
                                  sizeof err),
              GP_OK);
    CHECK_INT(o.n, 3);
    CHECK_INT(o.f[0].kind, GP_SIM_FAULT_LEAK);
    CHECK_INT(o.f[0].node, 2);
    CHECK_INT(o.f[0].gpu, 3);
    CHECK_INT(o.f[1].kind, GP_SIM_FAULT_STRAGGLER);
    CHECK_INT(o.f[1].node, 5);
    CHECK_INT(o.f[2].kind, GP_SIM_FAULT_ECC);
    static const struct {
        const char *in, *msg;
    } bad[] = {
        {"", "expected none or KIND"},
        {"leak", "expected KIND=sim-node-N/GPU"},
        {"leak=node-2/3", "expected KIND=sim-node-N/GPU"},
        {"leak=sim-node-2", "expected KIND=sim-node-N/GPU"},
        {"leak=sim-node-2/", "expected KIND=sim-node-N/GPU"},
        {"leak=sim-node-2/3x", "expected KIND=sim-node-N/GPU"},
        {"leak=sim-node-99999999/0", "expected KIND=sim-node-N/GPU"},
        {"oops=sim-node-0/0", "unknown fault 'oops'"},
        {"leak=sim-node-0/0,leak=sim-node-0/1", "fault 'leak' given twice"},
        {"leak=sim-node-0/0,idle=sim-node-0/0", "sim-node-0/0 already has a fault"},
        {"leak=sim-node-0/0,", "empty item"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        if (gp_sim_faults_parse(bad[i].in, &o, err, sizeof err) != GP_EUSAGE)
            gp_test_fail(__FILE__, __LINE__, "'%s' parsed", bad[i].in);
        CHECK_CONTAINS(err, bad[i].msg);
    }
    /* against a spec */
    struct gp_sim_plan p;
    static const struct {
        const char *spec, *faults, *msg;
    } misfit[] = {
        {"2x8xH100", "leak=sim-node-2/0", "the fleet has nodes 0 to 1"},
        {"2x8xH100", "leak=sim-node-1/8", "that node has GPUs 0 to 7"},
        {"1x8xRTX4090", "ecc=sim-node-0/1", "has no ECC memory"},
        {"1x2xH100", "straggler=sim-node-0/1", "needs at least two peers"},
        {"1x3xH100", "straggler=sim-node-0/1,idle=sim-node-0/2", "needs at least two peers"},
    };
    for (size_t i = 0; i < sizeof misfit / sizeof misfit[0]; i++) {
        err[0] = '\0';
        CHECK_INT(build(misfit[i].spec, 1, misfit[i].faults, &p, err, sizeof err), GP_EUSAGE);
        CHECK_CONTAINS(err, misfit[i].msg);
        CHECK(p.slots == NULL);
    }
}

static void test_faults_override(void)
{
    void *st = open_sim("2x8xH100", 1, "leak=sim-node-1/3,straggler=sim-node-0/5,idle=sim-node-1/0");
    for (unsigned i = 0; i < 16; i++) {
        int want = i == 11 ? GP_SIM_LEAKING : i == 5 ? GP_SIM_STRAGGLER : i == 8 ? GP_SIM_IDLE : GP_SIM_COMPUTE;
        CHECK_INT(gp_sim_gpu_behaviour(st, i), want);
    }
    const struct gp_sim_plan *p = gp_sim_state_plan(st);
    CHECK_INT(p->nfaults, 3);
    CHECK_INT(p->slots[8].world, 1);  /* idle: a job of its own */
    CHECK_INT(p->slots[9].world, 7);  /* its node's job: the other seven */
    CHECK_INT(p->slots[9].rank, 0);
    CHECK_INT(p->slots[11].rank, 2);
    gp_source_simulate.close(st);
    /* none: a healthy fleet */
    st = open_sim("2x8xH100", 1, "none");
    for (unsigned i = 0; i < 16; i++)
        CHECK_INT(gp_sim_gpu_behaviour(st, i), GP_SIM_COMPUTE);
    CHECK_INT(gp_sim_state_plan(st)->njobs, 2);
    gp_source_simulate.close(st);
    CHECK(gp_sim_state_plan(NULL) == NULL);
    /* a bad override stops the source from opening */
    struct gp_source_config cfg = {.simulate = "1x8xH100", .seed = 1, .simulate_faults = "leak=sim-node-1/0"};
    void *bad = NULL;
    char err[256];
    CHECK_INT(gp_source_simulate.open(&cfg, &bad, err, sizeof err), GP_EUSAGE);
    CHECK(bad == NULL);
    CHECK_CONTAINS(err, "nodes 0 to 0");
}

static void test_truth_json(void)
{
    struct gp_sim_spec spec;
    struct gp_sim_plan p;
    char err[256];
    CHECK_INT(gp_sim_spec_parse(ISSUE_SPEC, &spec, err, sizeof err), GP_OK);
    CHECK_INT(gp_sim_plan_build(&spec, 1, NULL, &p, err, sizeof err), GP_OK);
    FILE *f = tmpfile();
    CHECK(f != NULL);
    CHECK_INT(gp_sim_plan_truth_json(&p, &spec, ISSUE_SPEC, 1, f), GP_OK);
    long n = ftell(f);
    rewind(f);
    char *buf = calloc(1, (size_t)n + 1);
    CHECK(fread(buf, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    CHECK_CONTAINS(buf, "\"spec\": \"" ISSUE_SPEC "\", \"seed\": 1");
    CHECK_CONTAINS(buf, "\"kind\": \"leak\"");
    CHECK_CONTAINS(buf, "\"expect\": [\"memory_leak\", \"oom_predicted\"]");
    CHECK_CONTAINS(buf, "\"kind\": \"straggler\"");
    CHECK_CONTAINS(buf, "\"allow\": [\"gpu_throttled\"]");
    CHECK_CONTAINS(buf, "\"expect\": [\"idle_gpu_allocated\"], \"allow\": []");
    unsigned kinds = 0, jobs = 0;
    for (const char *s = buf; (s = strstr(s, "\"kind\": ")); s++)
        kinds++;
    for (const char *s = buf; (s = strstr(s, "{\"job\": ")); s++)
        jobs++;
    CHECK_INT(kinds, GP_SIM_FAULT__COUNT);
    CHECK_CONTAINS(buf, "\"kind\": \"hang\"");
    CHECK_CONTAINS(buf, "\"scope\": \"job\", \"expect\": [\"job_hang\"]");
    CHECK_CONTAINS(buf, "\"says\": \"rank ");
    CHECK_CONTAINS(buf, "\"expect\": [\"low_goodput\"], \"allow\": [], \"says\": \"lost\"");
    CHECK_CONTAINS(buf, "\"tokens_per_step\": 65536");
    CHECK_CONTAINS(buf, "\"precision\": \"bf16\", \"step_s\": [");
    CHECK_INT(jobs, 17);
    free(buf);
    gp_sim_plan_free(&p);
    /* the whole path, and its errors */
    CHECK_INT(gp_sim_write_truth("2x8", 1, NULL, "-", err, sizeof err), GP_EUSAGE);
    CHECK_INT(gp_sim_write_truth("2x8xH100", 1, "leak=x", "-", err, sizeof err), GP_EUSAGE);
    CHECK_INT(gp_sim_write_truth("2x8xH100", 1, NULL, "/nonexistent/dir/truth.json", err, sizeof err), GP_EIO);
    CHECK_CONTAINS(err, "/nonexistent/dir/truth.json");
}

static void test_jobs_and_steps(void)
{
    void *st = open_sim(ISSUE_SPEC, 1, NULL);
    const struct gp_sim_plan *p = gp_sim_state_plan(st);
    struct gp_frame f;
    gp_frame_init(&f);
    sample_at(st, &f, T0_MS); /* every job loading: its process there, no steps yet */
    CHECK_INT(f.njobs, 112);
    CHECK_INT(f.nsteps, 0);
    for (unsigned i = 0; i < f.ngpus; i++) {
        CHECK_INT(f.gpus[i].nprocs, 1);
        CHECK_INT(f.gpus[i].job_idx, (int)i);
        CHECK(f.gpus[i].val[GPF_MEMORY_USED] < 0.05 * f.gpus[i].val[GPF_MEMORY_TOTAL]);
    }
    sample_at(st, &f, T0_MS + 120000);
    CHECK_INT(f.njobs, 112);
    CHECK_INT(f.nsim_jobs, 112);
    CHECK_INT(f.nsteps, 111);
    unsigned idle = fault_gpu(p, GP_SIM_FAULT_IDLE), starved = fault_gpu(p, GP_SIM_FAULT_STARVED);
    char name[32];
    for (unsigned i = 0; i < f.ngpus; i++) {
        const struct gp_gpu *g = &f.gpus[i];
        CHECK_INT(g->job_idx, (int)i);
        const struct gp_job *j = &f.jobs[i];
        gp_sim_job_name(name, sizeof name, p->slots[i].job);
        CHECK_STR(j->id.job, name);
        CHECK_INT(j->id.rank, p->slots[i].rank);
        CHECK_INT(j->id.world_size, p->slots[i].world);
        CHECK_STR(j->node, g->node);
        CHECK(j->gpu_mem_valid && j->gpu_memory_bytes == g->procs[0].mem_bytes);
        CHECK_INT(j->ngpus, 1);
    }
    for (unsigned s = 0; s < f.nsteps; s++) {
        const struct gp_step_stats *ss = &f.steps[s];
        unsigned i = s < idle ? s : s + 1; /* in GPU order, the idle one skipped */
        const struct gp_gpu *g = &f.gpus[i];
        CHECK_INT(ss->pid, g->procs[0].pid);
        CHECK_STR(ss->node, g->node);
        CHECK_STR(ss->jid.job, f.jobs[i].id.job);
        CHECK_INT(ss->jid.rank, f.jobs[i].id.rank);
        CHECK(ss->steps_total > 10);
        CHECK_DBL(ss->samples_total, 32.0 * (double)ss->steps_total, 0);
        CHECK_DBL(ss->tokens_total, 32.0 * 2048 * (double)ss->steps_total, 0);
        double wait = ss->data_wait_seconds_total / ss->step_seconds_total;
        if (i == starved)
            CHECK(wait > 0.5);
        else
            CHECK(wait < 0.05);
        CHECK_INT(ss->nalloc, 1);
        CHECK(ss->alloc[0].allocated < ss->alloc[0].peak && ss->alloc[0].peak < ss->alloc[0].reserved);
        CHECK((double)ss->alloc[0].reserved <= (double)g->procs[0].mem_bytes);
        /* fragmentation (reserved - allocated) / allocated well under the detector's 0.5 */
        CHECK((double)(ss->alloc[0].reserved - ss->alloc[0].allocated) < 0.1 * (double)ss->alloc[0].allocated);
    }
    gp_frame_free(&f);
    gp_source_simulate.close(st);
}

static void test_jobs_source_keeps(void)
{
    void *st = open_sim("2x8xH100", 3, NULL);
    struct gp_source_config jc = {.hostname = "real-host"};
    void *js = NULL;
    char err[256];
    CHECK_INT(gp_source_jobs.open(&jc, &js, err, sizeof err), GP_OK);
    struct gp_frame f;
    gp_frame_init(&f);
    sample_at(st, &f, T0_MS); /* the simulation's clock starts at its first tick */
    for (int k = 0; k < 3; k++) {
        sample_at(st, &f, T0_MS + RUNNING_MS + k * 1000);
        unsigned njobs = f.njobs, nsteps = f.nsteps;
        char job0[GP_JOB_LEN];
        snprintf(job0, sizeof job0, "%s", f.steps[0].jid.job);
        unsigned errors = 0;
        CHECK_INT(gp_source_jobs.sample(js, &f, &errors), GP_OK);
        CHECK_INT(f.njobs, njobs);
        CHECK_INT(f.nsteps, nsteps);
        CHECK_STR(f.steps[0].jid.job, job0);
        for (unsigned i = 0; i < f.ngpus; i++)
            CHECK_INT(f.gpus[i].job_idx, (int)i);
    }
    gp_source_jobs.close(js);
    gp_frame_free(&f);
    gp_source_simulate.close(st);
}

/* Least-squares slope of y over x. */
static double slope(const double *x, const double *y, unsigned n)
{
    double mx = 0, my = 0, sxy = 0, sxx = 0;
    for (unsigned i = 0; i < n; i++) {
        mx += x[i] / n;
        my += y[i] / n;
    }
    for (unsigned i = 0; i < n; i++) {
        sxy += (x[i] - mx) * (y[i] - my);
        sxx += (x[i] - mx) * (x[i] - mx);
    }
    return sxy / sxx;
}

static void test_leak_slope(void)
{
    void *st = open_sim("1x8xH100", 1, "leak=sim-node-0/2");
    const struct gp_sim_plan *p = gp_sim_state_plan(st);
    double run0 = p->slots[2].start_s + 8; /* first step */
    struct gp_frame f;
    gp_frame_init(&f);
    sample_at(st, &f, T0_MS); /* the simulation's clock starts at its first tick */
    enum { STEP = 10, N = 130 };
    double ts[N], mem[N], steps[N], alloc[N], total = 0;
    unsigned oom = N;
    for (unsigned k = 0; k < N; k++) {
        ts[k] = run0 + 1 + STEP * k;
        sample_at(st, &f, T0_MS + (int64_t)(ts[k] * 1000));
        const struct gp_gpu *g = &f.gpus[2];
        total = g->val[GPF_MEMORY_TOTAL];
        mem[k] = g->val[GPF_MEMORY_USED];
        const struct gp_step_stats *ss = NULL;
        for (unsigned s = 0; s < f.nsteps; s++)
            if (f.steps[s].jid.rank == p->slots[2].rank && !strcmp(f.steps[s].jid.job, f.jobs[2].id.job))
                ss = &f.steps[s];
        steps[k] = ss ? (double)ss->steps_total : -1;
        alloc[k] = ss ? (double)ss->alloc[0].allocated : -1;
        if (oom == N && k && mem[k] < 0.8 * mem[k - 1])
            oom = k;
    }
    /* it dies of OOM 15 to 17 minutes after its first step, near the card's limit */
    CHECK(oom < N);
    double t_oom = ts[oom] - run0;
    CHECK(t_oom >= 900 && t_oom <= 1030);
    CHECK(mem[oom - 1] > 0.97 * total);
    /* steady growth: the slope over the first five minutes predicts the OOM */
    double sl = slope(ts, mem, 30);
    CHECK(sl > 0);
    double tto = (0.99 * total - mem[29]) / sl;
    if (fabs((ts[29] + tto) - ts[oom]) >= 30)
        gp_test_fail(__FILE__, __LINE__, "predicted OOM at %.0f s, it came at %.0f s", ts[29] + tto, ts[oom]);
    /* slow enough to warn ahead: a 2-minute fit first predicts OOM under 10
     * minutes at least 5 minutes before it happens, and never wrongly early */
    int first_warn = -1;
    for (unsigned k = 12; k < oom; k++) {
        double s2 = slope(ts + k - 12, mem + k - 12, 13);
        double pred = (0.99 * total - mem[k]) / s2;
        if (first_warn < 0 && pred < 600)
            first_warn = (int)k;
    }
    CHECK(first_warn >= 0);
    CHECK(ts[oom] - ts[first_warn] >= 300);
    CHECK(ts[oom] - ts[first_warn] <= 620);
    /* at a steady step rate, the allocator grows with every step */
    double rate0 = (steps[10] - steps[0]) / (ts[10] - ts[0]);
    double rate1 = (steps[oom - 1] - steps[oom - 11]) / (ts[oom - 1] - ts[oom - 11]);
    CHECK(rate0 > 1);
    CHECK(fabs(rate1 - rate0) < 0.05 * rate0);
    double per_step = (alloc[oom - 1] - alloc[0]) / (steps[oom - 1] - steps[0]);
    CHECK(per_step > 1 << 20); /* over a MiB a step */
    /* the restarted process starts counting again, with a new pid */
    CHECK(steps[N - 1] < steps[oom - 1]);
    gp_frame_free(&f);
    gp_source_simulate.close(st);
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
    qsort(v, n, sizeof *v, cmp_dbl);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void test_straggler_outlier(void)
{
    for (uint64_t seed = 1; seed <= 3; seed++) {
        void *st = open_sim(ISSUE_SPEC, seed, NULL);
        const struct gp_sim_plan *p = gp_sim_state_plan(st);
        unsigned sg = fault_gpu(p, GP_SIM_FAULT_STRAGGLER);
        struct gp_frame f;
        gp_frame_init(&f);
        sample_at(st, &f, T0_MS);
        sample_at(st, &f, T0_MS + 300000);
        double t[16], dev[16];
        int rank_of[16];
        unsigned n = 0;
        double straggler = 0;
        for (unsigned s = 0; s < f.nsteps; s++) {
            const struct gp_step_stats *ss = &f.steps[s];
            if (strcmp(ss->jid.job, f.jobs[sg].id.job))
                continue;
            CHECK(n < 16);
            t[n] = ss->step_seconds_total / (double)ss->steps_total;
            rank_of[n] = ss->jid.rank;
            if (ss->jid.rank == p->slots[sg].rank)
                straggler = t[n];
            n++;
        }
        CHECK_INT(n, 8);
        double sorted[16];
        memcpy(sorted, t, n * sizeof *t);
        double med = median(sorted, n);
        for (unsigned i = 0; i < n; i++)
            dev[i] = fabs(t[i] - med);
        double mad = median(dev, n);
        CHECK(mad > 0);
        for (unsigned i = 0; i < n; i++) {
            double z = 0.6745 * (t[i] - med) / mad;
            /* the detector's score: the MAD floored at 2 % of the median */
            double zf = 0.6745 * (t[i] - med) / fmax(mad, 0.02 * med);
            if (rank_of[i] == p->slots[sg].rank)
                CHECK(z > 3.5 && zf > 3.5);
            else
                CHECK(fabs(zf) < 3.5);
        }
        CHECK(straggler > 1.4 * med);
        gp_frame_free(&f);
        gp_source_simulate.close(st);
    }
}

static void test_healthy_plateau(void)
{
    void *st = open_sim(ISSUE_SPEC, 1, NULL);
    const struct gp_sim_plan *p = gp_sim_state_plan(st);
    struct gp_frame f;
    gp_frame_init(&f);
    enum { N = 121 };
    double *lo = calloc(112, sizeof *lo), *hi = calloc(112, sizeof *hi), *prev = calloc(112, sizeof *prev);
    for (unsigned i = 0; i < 112; i++)
        lo[i] = INFINITY;
    for (unsigned k = 0; k < N; k++) {
        double t = 0.5 * k; /* the first minute: start, loading, first steps */
        if (k > 40)
            t = 20 + 5.0 * (k - 40); /* then every 5 s to 7 minutes */
        sample_at(st, &f, T0_MS + (int64_t)(t * 1000));
        for (unsigned i = 0; i < 112; i++) {
            const struct gp_gpu *g = &f.gpus[i];
            double m = g->val[GPF_MEMORY_USED] / g->val[GPF_MEMORY_TOTAL];
            const struct gp_sim_slot *sl = &p->slots[i];
            double run = t - sl->start_s - 8;
            if (sl->fault == GP_SIM_FAULT_LEAK || sl->crash_every_s > 0)
                continue; /* memory that grows, or rises again at each restart */
            /* a checkpoint's dip (test_checkpoint) */
            double per = sl->ckpt_every_s + sl->ckpt_s, in = run - per * floor(run / per);
            if (sl->ckpt_s > 0 && run > 0 && in >= sl->ckpt_every_s - 1 && in < per + 1)
                continue;
            if (k == 0)
                CHECK(m < 0.05);
            else if (run < 0)
                CHECK(m >= prev[i] - 0.002); /* rises once, while the job loads */
            else {
                lo[i] = fmin(lo[i], m);
                hi[i] = fmax(hi[i], m);
            }
            prev[i] = m;
        }
    }
    for (unsigned i = 0; i < 112; i++) {
        if (p->slots[i].fault == GP_SIM_FAULT_LEAK || p->slots[i].crash_every_s > 0)
            continue;
        CHECK(hi[i] - lo[i] < 0.003); /* then plateaus */
        CHECK(hi[i] < 0.9);
    }
    free(lo);
    free(hi);
    free(prev);
    gp_frame_free(&f);
    gp_source_simulate.close(st);
}

static double mem_of(const struct gp_gpu *g) { return g->val[GPF_MEMORY_USED] / g->val[GPF_MEMORY_TOTAL]; }

/* The step reporter of job k's rank in f; NULL when none. */
static const struct gp_step_stats *steps_of(const struct gp_frame *f, unsigned k, int rank)
{
    char name[32];
    gp_sim_job_name(name, sizeof name, k);
    for (unsigned s = 0; s < f->nsteps; s++)
        if (!strcmp(f->steps[s].jid.job, name) && f->steps[s].jid.rank == rank)
            return &f->steps[s];
    return NULL;
}

/* Samples st at `run` seconds after GPU gi's job's first step (a first tick at T0_MS comes first). */
static void sample_run(void *st, struct gp_frame *f, const struct gp_sim_slot *sl, double run)
{
    sample_at(st, f, T0_MS + (int64_t)((sl->start_s + GP_SIM_LOAD_S + run) * 1000));
}

/* A node job checkpoints: steps pause, utilization and memory dip, the
 * phase is reported when it ends; the single-GPU jobs never do. */
static void test_checkpoint(void)
{
    void *st = open_sim("1x8xH100", 4, "starved=sim-node-0/6");
    const struct gp_sim_plan *p = gp_sim_state_plan(st);
    const struct gp_sim_slot *sl = &p->slots[0];
    CHECK(sl->ckpt_every_s >= 240 && sl->ckpt_every_s <= 330);
    CHECK(sl->ckpt_s >= 15 && sl->ckpt_s <= 25);
    CHECK_INT(p->slots[6].ckpt_s, 0);
    struct gp_frame f;
    gp_frame_init(&f);
    sample_at(st, &f, T0_MS);
    double every = sl->ckpt_every_s, ck = sl->ckpt_s;
    sample_run(st, &f, sl, every - 3);
    const struct gp_step_stats *a = steps_of(&f, sl->job, 0);
    CHECK(a && a->phase_valid && a->phase_seconds_total[GP_STEPS_PHASE_CHECKPOINT] == 0);
    double before_mem = f.gpus[0].val[GPF_MEMORY_USED] / f.gpus[0].val[GPF_MEMORY_TOTAL];
    uint64_t before = a->steps_total;
    CHECK(f.gpus[0].val[GPF_GPU_UTIL] >= 50);
    sample_run(st, &f, sl, every + 2);
    uint64_t in1 = steps_of(&f, sl->job, 0)->steps_total;
    sample_run(st, &f, sl, every + ck / 2);
    const struct gp_step_stats *m = steps_of(&f, sl->job, 0);
    CHECK_INT(m->steps_total, in1); /* no step while it saves */
    CHECK(in1 > before);
    CHECK_DBL(m->phase_seconds_total[GP_STEPS_PHASE_CHECKPOINT], 0, 0); /* reported when it ends */
    CHECK(f.gpus[0].val[GPF_GPU_UTIL] < 40);
    double dip = f.gpus[0].val[GPF_MEMORY_USED] / f.gpus[0].val[GPF_MEMORY_TOTAL];
    CHECK(dip < before_mem - 0.04 && dip > before_mem - 0.06);
    CHECK(!steps_of(&f, p->slots[6].job, 0)->phase_valid); /* the starved job: no checkpoints */
    sample_run(st, &f, sl, every + ck + 10);
    const struct gp_step_stats *after = steps_of(&f, sl->job, 0);
    CHECK_DBL(after->phase_seconds_total[GP_STEPS_PHASE_CHECKPOINT], ck, 1e-9);
    CHECK(after->steps_total > in1);
    CHECK_DBL(after->step_seconds_total, (double)after->steps_total * sl->step_s, 1e-6);
    CHECK(fabs(f.gpus[0].val[GPF_MEMORY_USED] / f.gpus[0].val[GPF_MEMORY_TOTAL] - before_mem) < 0.003);
    CHECK(after->model_flops_token > 0 && after->model_precision == GP_PREC_BF16);
    gp_frame_free(&f);
    gp_source_simulate.close(st);
}

/* A hung job: every rank stops stepping, processes live; the rank it
 * waits for idles, its peers spin in the collective; a minute later the
 * Flight Recorder names the missing rank. */
static void test_hang(void)
{
    void *st = open_sim("3x8xA100", 1, "hang=sim-node-0/3");
    const struct gp_sim_plan *p = gp_sim_state_plan(st);
    const struct gp_sim_slot *sl = &p->slots[3];
    CHECK(sl->hang_at_s >= 150 && sl->hang_at_s < sl->ckpt_every_s);
    CHECK_INT(gp_sim_gpu_behaviour(st, 3), GP_SIM_HANG);
    CHECK_INT(p->slots[8].hang_at_s, 0); /* the other nodes' jobs step on */
    struct gp_frame f;
    gp_frame_init(&f);
    sample_at(st, &f, T0_MS);
    uint64_t s1[8], s2[8];
    uint32_t pid[8];
    sample_run(st, &f, sl, sl->hang_at_s - 5);
    for (int r = 0; r < 8; r++) {
        s1[r] = steps_of(&f, sl->job, r)->steps_total;
        pid[r] = steps_of(&f, sl->job, r)->pid;
    }
    sample_run(st, &f, sl, sl->hang_at_s + 30);
    for (int r = 0; r < 8; r++) {
        s2[r] = steps_of(&f, sl->job, r)->steps_total;
        CHECK(s2[r] >= s1[r] && s2[r] <= s1[r] + 15);
        CHECK(!steps_of(&f, sl->job, r)->fr_missing_valid && !steps_of(&f, sl->job, r)->fr_waiting_valid);
    }
    sample_run(st, &f, sl, sl->hang_at_s + 200);
    int64_t seq = -1;
    for (int r = 0; r < 8; r++) {
        const struct gp_step_stats *x = steps_of(&f, sl->job, r);
        CHECK(x != NULL); /* the process lives */
        CHECK_INT(x->steps_total, s2[r]);
        CHECK_INT(x->pid, pid[r]);
        const struct gp_gpu *g = &f.gpus[r];
        if (r == 3) { /* stuck on the host */
            CHECK(g->val[GPF_GPU_UTIL] < 5);
            CHECK(x->fr_missing_valid && !x->fr_waiting_valid);
            seq = x->fr_missing;
        } else { /* spinning in NCCL */
            CHECK_DBL(g->val[GPF_GPU_UTIL], 100, 0);
            CHECK(g->val[GPF_POWER_USAGE] < 0.6 * g->val[GPF_POWER_LIMIT]);
            CHECK(x->fr_waiting_valid && !x->fr_missing_valid);
        }
        CHECK(mem_of(g) > 0.6); /* memory held */
    }
    CHECK(seq > 0);
    for (int r = 0; r < 8; r++)
        if (r != 3)
            CHECK_INT(steps_of(&f, sl->job, r)->fr_waiting, seq);
    CHECK(steps_of(&f, p->slots[8].job, 0)->steps_total > s2[0]); /* another job steps on */
    gp_frame_free(&f);
    gp_source_simulate.close(st);
}

/* A crash loop: every rank dies after crash_every_s, restarts with a new
 * pid and repeats the steps it had done (none was checkpointed). */
static void test_crash_loop(void)
{
    void *st = open_sim("3x8xA100", 1, "restart=sim-node-1/2");
    const struct gp_sim_plan *p = gp_sim_state_plan(st);
    const struct gp_sim_slot *sl = &p->slots[8 + 2];
    double c = sl->crash_every_s;
    CHECK(c >= 150 && c < 200 && c < sl->ckpt_every_s);
    for (unsigned i = 8; i < 16; i++)
        CHECK_DBL(p->slots[i].crash_every_s, c, 0);
    CHECK_INT(p->slots[0].crash_every_s, 0);
    struct gp_frame f;
    gp_frame_init(&f);
    sample_at(st, &f, T0_MS);
    sample_run(st, &f, sl, c - 3);
    const struct gp_step_stats *x = steps_of(&f, sl->job, 5);
    CHECK(x != NULL);
    uint64_t last = x->last_step;
    uint32_t pid = x->pid;
    CHECK(last > 100);
    sample_run(st, &f, sl, c + 4); /* its new process loads */
    for (int r = 0; r < 8; r++)
        CHECK(steps_of(&f, sl->job, r) == NULL);
    CHECK(mem_of(&f.gpus[8 + 5]) < 0.6);
    CHECK_INT(f.njobs, 24); /* its job is still there */
    sample_run(st, &f, sl, c + GP_SIM_RESTART_S + 30);
    x = steps_of(&f, sl->job, 5);
    CHECK(x != NULL);
    CHECK(x->pid != pid);
    CHECK(x->last_step < last); /* it repeats steps done before */
    CHECK_DBL((double)x->last_step, floor(30 / p->slots[8 + 5].step_s), 1);
    CHECK_DBL(x->phase_seconds_total[GP_STEPS_PHASE_CHECKPOINT], 0, 0);
    gp_frame_free(&f);
    gp_source_simulate.close(st);
}

/* A power-capped straggler: held at 60 % of its card's limit, at that cap
 * with sw_power_cap set, clocks down, its steps 1.35x its peers'. */
static void test_powercap(void)
{
    void *st = open_sim("1x8xH100", 2, "powercap=sim-node-0/5");
    const struct gp_sim_plan *p = gp_sim_state_plan(st);
    CHECK_INT(gp_sim_gpu_behaviour(st, 5), GP_SIM_POWERCAP);
    struct gp_frame f;
    gp_frame_init(&f);
    sample_at(st, &f, T0_MS);
    sample_run(st, &f, &p->slots[5], 120);
    const struct gp_gpu *g = &f.gpus[5], *peer = &f.gpus[4];
    CHECK_DBL(g->val[GPF_POWER_LIMIT], 0.6 * peer->val[GPF_POWER_LIMIT], 1e-6);
    CHECK(g->val[GPF_POWER_USAGE] > 0.98 * g->val[GPF_POWER_LIMIT]);
    CHECK(g->clock_events_valid && (g->clock_events & 0x4));
    CHECK(!(peer->clock_events & 0x4));
    CHECK(g->val[GPF_SM_CLOCK] < 0.8 * peer->val[GPF_SM_CLOCK]);
    CHECK(g->val[GPF_GPU_UTIL] > 90); /* busy, just slower */
    const struct gp_step_stats *me = steps_of(&f, p->slots[5].job, 5), *other = steps_of(&f, p->slots[4].job, 4);
    double ratio = (me->step_seconds_total / (double)me->steps_total) /
                   (other->step_seconds_total / (double)other->steps_total);
    CHECK(ratio > 1.3 && ratio < 1.4);
    gp_frame_free(&f);
    gp_source_simulate.close(st);
    /* the override's checks of the new kinds */
    char err[256];
    struct gp_sim_plan q;
    CHECK_INT(build("2x8xH100", 1, "hang=sim-node-0/3,leak=sim-node-0/1", &q, err, sizeof err), GP_EUSAGE);
    CHECK_CONTAINS(err, "the hang on sim-node-0/3 is a fault of its whole job, but leak is in that job too");
    CHECK_INT(build("1x3xH100", 1, "powercap=sim-node-0/0,idle=sim-node-0/1", &q, err, sizeof err), GP_EUSAGE);
    CHECK_CONTAINS(err, "the powercap on sim-node-0/0 needs at least two peers");
    CHECK_INT(build("2x8xH100", 1, "restart=sim-node-0/3,idle=sim-node-0/1", &q, err, sizeof err), GP_OK);
    gp_sim_plan_free(&q);
}

const struct gp_test gp_tests_simulate_plan[] = {
    {"plan_issue_spec", test_plan_issue_spec},
    {"faults_parse", test_faults_parse},
    {"faults_override", test_faults_override},
    {"truth_json", test_truth_json},
    {"jobs_and_steps", test_jobs_and_steps},
    {"jobs_source_keeps", test_jobs_source_keeps},
    {"leak_slope", test_leak_slope},
    {"straggler_outlier", test_straggler_outlier},
    {"healthy_plateau", test_healthy_plateau},
    {"checkpoint", test_checkpoint},
    {"hang", test_hang},
    {"crash_loop", test_crash_loop},
    {"powercap", test_powercap},
    {0},
};
