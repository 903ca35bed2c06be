/*
 * bench/detect_cost.c - CPU cost of one evaluation tick of the built-in
 * detectors (`make bench-detect`).
 *
 * Builds a view the way the engine would hand it over: 10,000 GPUs
 * (argv[1] changes the count) on 8-GPU nodes, 40 points 15 s apart, a
 * mix of H100 and A100 cards; jobs of 8 to 64 GPUs with one step
 * reporter per GPU, most compute-bound and healthy, some idle while
 * holding memory, leaking, starved of data, throttled, with hardware
 * errors or a straggler; a tenth of the GPUs free. Then runs every
 * detector over it 10 times and prints the CPU time per detector and per
 * tick (median of the 10), with the observations and the bad ones. The
 * emit callback copies each observation into a preallocated array, as
 * the engine does; `active` answers false. Asserts nothing; the goal is
 * under 100 ms of CPU per tick.
 */
#include "insight/detect.h"
#include "insight/view.h"
#include "lib/err.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NPTS 40
#define STEP_MS 15000
#define REPS 10
#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)

static struct gp_observation *out;
static size_t nout, capout;

static int emit(void *ctx, const struct gp_observation *o)
{
    (void)ctx;
    if (nout == capout)
        return GP_ENOMEM;
    out[nout++] = *o;
    return GP_OK;
}

static bool inactive(void *ctx, const struct gp_obs_key *k)
{
    (void)ctx;
    (void)k;
    return false;
}

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static unsigned seed = 12345;
static double rnd(void) /* [0, 1) */
{
    seed = seed * 1103515245u + 12345u;
    return ((seed >> 8) & 0xffffff) / 16777216.0;
}

enum kind { HEALTHY, IDLE, LEAK, STARVED, THROTTLED, HWERR, STRAGGLER };

static void die(const char *what)
{
    fprintf(stderr, "detect_cost: %s\n", what);
    exit(1);
}

static void gpu_series(struct gp_view *v, struct gp_view_gpu *g, enum kind kind, bool held)
{
    double total = (double)g->spec->memory_bytes;
    double *s[GP_VGM__COUNT];
    for (int m = 0; m < GP_VGM__COUNT; m++)
        s[m] = gp_view_gpu_series(v, g, (enum gp_vgm)m);
    for (unsigned k = 0; k < NPTS; k++) {
        double act = held ? 0.88 + 0.08 * rnd() : 0;
        if (held && k % 9 == 0)
            act = 0.3; /* short dips between batches */
        if (kind == IDLE)
            act = 0.005;
        if (kind == STARVED)
            act = k % 4 == 0 ? 0.9 : 0.03;
        s[GP_VGM_UTIL][k] = act > 0.01 ? 1.0 : 0;
        s[GP_VGM_SM_ACTIVE][k] = g->spec->gpm ? act : NAN;
        s[GP_VGM_SM_OCC][k] = g->spec->gpm ? act * 0.4 : NAN;
        s[GP_VGM_TENSOR][k] = g->spec->gpm ? act * 0.5 : NAN;
        s[GP_VGM_DRAM][k] = g->spec->gpm ? act * 0.35 : NAN;
        double used = held ? 0.7 * total + 0.01 * total * rnd() : 0.005 * total;
        if (kind == LEAK)
            used = 0.5 * total + k * 0.004 * total;
        s[GP_VGM_MEM_USED][k] = used;
        s[GP_VGM_MEM_TOTAL][k] = total;
        s[GP_VGM_POWER][k] = g->spec->power_limit_w * (0.15 + 0.8 * act);
        s[GP_VGM_POWER_LIMIT][k] = g->spec->power_limit_w;
        s[GP_VGM_TEMP][k] = kind == THROTTLED ? 89 : 40 + 30 * act;
        s[GP_VGM_SM_CLOCK][k] = g->spec->sm_clock_max_mhz * 1e6 * (kind == THROTTLED ? 0.7 : 1);
        s[GP_VGM_SM_CLOCK_MAX][k] = g->spec->sm_clock_max_mhz * 1e6;
        s[GP_VGM_PCIE_RX][k] = 1e9 * act;
        s[GP_VGM_PCIE_TX][k] = 0.5e9 * act;
        s[GP_VGM_THROTTLE_THERMAL][k] = kind == THROTTLED;
        s[GP_VGM_THROTTLE_POWER][k] = 0;
        s[GP_VGM_ECC_DBE][k] = kind == HWERR && k > 30;
        s[GP_VGM_XID_TOTAL][k] = kind == HWERR && k > 30 ? 3 : 2;
        s[GP_VGM_XID_LAST][k] = kind == HWERR && k > 30 ? 48 : 13;
        s[GP_VGM_RETIRED_PENDING][k] = 0;
        s[GP_VGM_REMAP_UNC][k] = 0;
        s[GP_VGM_REMAP_FAILURE][k] = 0;
        s[GP_VGM_PCIE_REPLAY][k] = 7;
    }
}

static void proc_series(struct gp_view *v, struct gp_view_proc *p, enum kind kind)
{
    double step_s = kind == STRAGGLER ? 0.42 : 0.30 + 0.004 * rnd();
    double steps = 5000, secs = 1500, alloc = 30 * GIB;
    double *st = gp_view_proc_series(v, p, GP_VPM_STEPS);
    double *ss = gp_view_proc_series(v, p, GP_VPM_STEP_SECONDS);
    double *dw = gp_view_proc_series(v, p, GP_VPM_DATA_WAIT);
    double *sa = gp_view_proc_series(v, p, GP_VPM_SAMPLES);
    double *al = gp_view_proc_series(v, p, GP_VPM_ALLOCATED);
    double *re = gp_view_proc_series(v, p, GP_VPM_RESERVED);
    double *ts = gp_view_proc_series(v, p, GP_VPM_TARGET_STEPS);
    for (unsigned k = 0; k < NPTS; k++) {
        double n = kind == IDLE ? 0 : floor(15 / step_s);
        steps += n;
        secs += n * step_s;
        st[k] = steps;
        ss[k] = secs;
        dw[k] = secs * (kind == STARVED ? 0.6 : 0.03);
        sa[k] = steps * 32;
        if (kind == LEAK)
            alloc += n * 4 * MIB;
        al[k] = alloc;
        re[k] = alloc * 1.1;
        ts[k] = 100000;
    }
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    unsigned ngpus = argc > 1 ? (unsigned)atoi(argv[1]) : 10000;
    struct gp_view v;
    if (!ngpus || gp_view_init(&v, NPTS, 1764000000000LL, STEP_MS) != GP_OK)
        die("bad GPU count");
    const struct gp_gpumodel *models[2] = {gp_gpumodel_find("H100"), gp_gpumodel_find("A100")};
    if (!models[0] || !models[1])
        die("model table lacks H100 or A100");
    unsigned nodes = (ngpus + 7) / 8, gi = 0, jobno = 0;
    double t0 = cpu_ms();
    for (unsigned n = 0; n < nodes && gi < ngpus;) {
        /* a job of 1-8 nodes, or (a tenth of the time) a free node */
        unsigned span = 1 + (unsigned)(rnd() * 8);
        bool free_node = rnd() < 0.1;
        char job[32];
        snprintf(job, sizeof job, "job-%u", jobno++);
        for (unsigned nn = 0; nn < span && n < nodes; nn++, n++) {
            const struct gp_gpumodel *m = models[n % 3 == 2];
            for (unsigned d = 0; d < 8 && gi < ngpus; d++, gi++) {
                double r = rnd();
                enum kind kind = r < 0.80   ? HEALTHY
                                 : r < 0.85 ? IDLE
                                 : r < 0.89 ? LEAK
                                 : r < 0.93 ? STARVED
                                 : r < 0.96 ? THROTTLED
                                 : r < 0.97 ? HWERR
                                            : STRAGGLER;
                struct gp_view_gpu *g = gp_view_add_gpu(&v);
                if (!g)
                    die("out of memory");
                snprintf(g->node, sizeof g->node, "node-%05u", n);
                snprintf(g->gpu, sizeof g->gpu, "%u", d);
                snprintf(g->uuid, sizeof g->uuid, "GPU-%08x-%04u", n * 2654435761u, d);
                snprintf(g->model, sizeof g->model, "%s", m->name);
                g->spec = m;
                int rank = (int)(nn * 8 + d);
                if (!free_node) {
                    snprintf(g->job, sizeof g->job, "%s", job);
                    g->rank = rank;
                }
                gpu_series(&v, g, free_node ? HEALTHY : kind, !free_node);
                if (free_node)
                    continue;
                struct gp_view_proc *p = gp_view_add_proc(&v);
                if (!p)
                    die("out of memory");
                snprintf(p->node, sizeof p->node, "node-%05u", n);
                snprintf(p->job, sizeof p->job, "%s", job);
                p->rank = rank;
                p->pid = 10000u + d;
                proc_series(&v, p, kind);
            }
        }
    }
    if (gp_view_index_jobs(&v) != GP_OK)
        die("out of memory");
    for (unsigned j = 0; j < v.njobs; j++) {
        v.jobs[j].budget = 1000;
        v.jobs[j].cost = j % 20 == 0 ? 1200 : 400;
    }
    double build_ms = cpu_ms() - t0;
    capout = (size_t)GP_DET__COUNT * (v.ngpus + v.nprocs + v.njobs);
    out = malloc(capout * sizeof *out);
    if (!out)
        die("out of memory");

    struct gp_detector_cfg cfg[GP_DET__COUNT];
    gp_detector_cfg_defaults(cfg);
    static double per[GP_DET__COUNT][REPS], total[REPS];
    size_t nobs[GP_DET__COUNT], nbad[GP_DET__COUNT];
    for (int r = 0; r < REPS; r++) {
        total[r] = 0;
        for (int d = 0; d < GP_DET__COUNT; d++) {
            struct gp_detect_ctx c = {&v, &cfg[d], inactive, NULL, emit, NULL};
            nout = 0;
            double a = cpu_ms();
            if (gp_detect_fns[d](&c) != GP_OK)
                die("a detector failed");
            per[d][r] = cpu_ms() - a;
            total[r] += per[d][r];
            nobs[d] = nout;
            nbad[d] = 0;
            for (size_t i = 0; i < nout; i++)
                nbad[d] += out[i].bad;
        }
    }
    printf("detect_cost: %u GPUs on %u nodes, %u step reporters, %u jobs, %d points; view built "
           "in %.0f ms CPU\n",
           v.ngpus, nodes, v.nprocs, v.njobs, NPTS, build_ms);
    printf("%-26s %10s %8s %6s\n", "detector", "ms/tick", "obs", "bad");
    for (int d = 0; d < GP_DET__COUNT; d++) {
        qsort(per[d], REPS, sizeof per[d][0], cmp_d);
        printf("%-26s %10.2f %8zu %6zu\n", gp_detectors[d].name,
               (per[d][REPS / 2 - 1] + per[d][REPS / 2]) / 2, nobs[d], nbad[d]);
    }
    qsort(total, REPS, sizeof total[0], cmp_d);
    printf("%-26s %10.2f   (median of %d ticks; min %.2f, max %.2f; goal < 100 ms)\n", "total",
           (total[REPS / 2 - 1] + total[REPS / 2]) / 2, REPS, total[0], total[REPS - 1]);
    free(out);
    gp_view_free(&v);
    return 0;
}
