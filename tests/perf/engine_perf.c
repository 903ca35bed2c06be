/*
 * engine_perf.c - measures the evaluation engine's view build
 * (insight/engine.h) on a fleet: GPUS GPUs (8 per node) each with the 20
 * GPU series an agent sends (the view's metrics, clock-event reasons by
 * reason, XIDs), samples every INTERVAL seconds for the 16 minutes before
 * now; the default window (15m) and step (15s). Times the first (full)
 * build and then ticks of 15 s, each after one more interval's samples
 * are appended: the incremental refresh a running server does.
 *
 * Not part of the test suite (numbers, not checks). Build and run:
 *
 *   make build/rel/libgpulse.a
 *   cc -std=c11 -D_GNU_SOURCE -O2 -Isrc -pthread tests/perf/engine_perf.c build/rel/libgpulse.a \
 *      $(pkg-config --libs sqlite3 snappy yaml-0.1) -lm -o build/engine-perf
 *   build/engine-perf /path/to/scratch/dir [GPUS [INTERVAL_S]]
 */
#include "insight/engine.h"
#include "lib/clock.h"
#include "lib/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const metrics[] = {
    "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_OCCUPANCY",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE", "gpulse_gpu_memory_used_bytes",
    "gpulse_gpu_memory_total_bytes", "DCGM_FI_DEV_POWER_USAGE", "gpulse_gpu_power_limit_watts",
    "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_SM_CLOCK", "gpulse_gpu_sm_clock_max_hertz",
    "DCGM_FI_PROF_PCIE_RX_BYTES", "DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "gpulse_gpu_clock_event_reasons", "gpulse_gpu_clock_event_reasons", "gpulse_gpu_xid_errors_total"};
enum { NM = sizeof metrics / sizeof metrics[0] };

struct fleet {
    struct gp_series *se;
    struct gp_label *l;
    struct gp_sample *smp;
    char (*str)[2][16];
    int ngpu;
};

/* Appends per samples per series, at t0, t0 + step, ... */
static void append(struct gp_storage *st, struct fleet *f, int64_t t0, int64_t step, int per)
{
    size_t n = (size_t)f->ngpu * NM;
    for (size_t i = 0; i < n; i++) {
        struct gp_sample *s = f->smp + i * (size_t)per;
        for (int k = 0; k < per; k++)
            s[k] = (struct gp_sample){(double)((i + (size_t)k) % 97), t0 + k * step};
        f->se[i].samples = s;
        f->se[i].nsamples = (size_t)per;
    }
    struct gp_batch rq = {f->se, n, n * 5, n * (size_t)per, NULL};
    struct gp_append_result res;
    char err[256];
    if (gp_storage_append(st, &rq, &res, err, sizeof err) || res.accepted != n * (size_t)per) {
        fprintf(stderr, "append: %s (%llu accepted)\n", err, (unsigned long long)res.accepted);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: engine-perf DIR [GPUS [INTERVAL_S]]\n");
        return 2;
    }
    int ngpu = argc > 2 ? atoi(argv[2]) : 512;
    int64_t iv = (argc > 3 ? atoi(argv[3]) : 5) * 1000LL;
    int per = (int)(16 * 60 * 1000 / iv);
    struct gp_store_options so = {.dir = argv[1], .no_sync = 1};
    struct gp_storage *st;
    char err[256];
    if (gp_storage_open(&st, &(struct gp_storage_options){.store = so}, err, sizeof err)) {
        fprintf(stderr, "store: %s\n", err);
        return 1;
    }
    struct fleet f = {calloc((size_t)ngpu * NM, sizeof *f.se), calloc((size_t)ngpu * NM * 5, sizeof *f.l),
                      calloc((size_t)ngpu * NM * (size_t)per, sizeof *f.smp),
                      calloc((size_t)ngpu, sizeof *f.str), ngpu};
    if (!f.se || !f.l || !f.smp || !f.str)
        return 1;
    for (int g = 0; g < ngpu; g++) {
        snprintf(f.str[g][0], 16, "node%04d", g / 8);
        snprintf(f.str[g][1], 16, "%d", g % 8);
        for (int m = 0; m < NM; m++) {
            size_t i = (size_t)g * NM + (size_t)m;
            struct gp_label *l = f.l + i * 5;
            size_t nl = 0;
            l[nl++] = (struct gp_label){{"Hostname", 8}, {f.str[g][0], strlen(f.str[g][0])}};
            l[nl++] = (struct gp_label){{"__name__", 8}, {metrics[m], strlen(metrics[m])}};
            l[nl++] = (struct gp_label){{"gpu", 3}, {f.str[g][1], strlen(f.str[g][1])}};
            l[nl++] = (struct gp_label){{"modelName", 9}, {"NVIDIA H100 80GB HBM3", 21}};
            if (m == NM - 3)
                l[nl++] = (struct gp_label){{"reason", 6}, {"hw_thermal_slowdown", 19}};
            else if (m == NM - 2)
                l[nl++] = (struct gp_label){{"reason", 6}, {"sw_power_cap", 12}};
            else if (m == NM - 1)
                l[nl++] = (struct gp_label){{"xid", 3}, {"79", 2}};
            f.se[i] = (struct gp_series){l, nl, NULL, 0};
        }
    }
    int64_t now = gp_wall_ms() / 15000 * 15000;
    int64_t t0 = now - (int64_t)per * iv;
    append(st, &f, t0, iv, per);
    struct gp_alerts *a;
    if (gp_alerts_open(&a, argv[1], now, err, sizeof err)) {
        fprintf(stderr, "alerts: %s\n", err);
        return 1;
    }
    struct gp_engine_options eo = {.store = st, .alerts = a, .interval_ms = 15000, .window_ms = 900000,
                                   .step_ms = 15000, .clear_for_ms = 60000};
    gp_engine_detector_config("", "", eo.det_cfg, err, sizeof err);
    struct gp_engine *e;
    if (gp_engine_new(&e, &eo, err, sizeof err)) {
        fprintf(stderr, "engine: %s\n", err);
        return 1;
    }
    int64_t c0 = gp_mono_ns();
    if (gp_engine_refresh_view(e, now, err, sizeof err)) {
        fprintf(stderr, "refresh: %s\n", err);
        return 1;
    }
    double full = (double)(gp_mono_ns() - c0) / 1e6;
    double sum = 0, worst = 0;
    int ticks = 8, added = (int)(15000 / iv) > 0 ? (int)(15000 / iv) : 1;
    int64_t next = t0 + (int64_t)per * iv;
    for (int i = 1; i <= ticks; i++) {
        append(st, &f, next, iv, added);
        next += (int64_t)added * iv;
        c0 = gp_mono_ns();
        if (gp_engine_refresh_view(e, now + i * 15000LL, err, sizeof err)) {
            fprintf(stderr, "refresh: %s\n", err);
            return 1;
        }
        double ms = (double)(gp_mono_ns() - c0) / 1e6;
        sum += ms;
        worst = ms > worst ? ms : worst;
    }
    struct gp_engine_stats es;
    gp_engine_stats(e, &es);
    printf("engine view: %d GPUs, %llu series, samples every %llds, %u points: full build %.1f ms, "
           "incremental tick mean %.1f ms (worst %.1f ms) over %d ticks\n",
           ngpu, (unsigned long long)es.series, (long long)(iv / 1000), gp_engine_view(e)->npoints, full,
           sum / ticks, worst, ticks);
    gp_engine_close(e);
    gp_alerts_close(a);
    gp_storage_close(st);
    free(f.se);
    free(f.l);
    free(f.smp);
    free(f.str);
    return 0;
}
