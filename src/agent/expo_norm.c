/*
 * expo_norm.c - normalized per-GPU series (docs/metrics.md "Normalized"):
 * the readings of a GPU as fractions of what that GPU can do, so an A100
 * at 0.6 and an MI300X at 0.6 mean the same, and its compute in TFLOP/s
 * and H100-equivalents so that cards of different sizes add up.
 *
 * Where the capability comes from: the live driver value when the frame
 * has it (memory total, power limit, maximum SM clock: a MIG instance or
 * a power-capped card differs from its data sheet), else the model table
 * (lib/gpumodels.h). Peak FLOP/s come only from the table: a GPU whose
 * model the table does not know gets gpulse_gpu_model_known 0 and no
 * peak, effective TFLOP/s or H100-equivalent series; its ratios that the
 * driver can give are still there.
 *
 * Each ratio says where its activity came from in a `source` label, so a
 * dashboard can tell the precise GPM figure from the coarse one:
 *   compute    sm_active (DCGM_FI_PROF_SM_ACTIVE, GPM) | gpu_util (/100)
 *   bandwidth  dram_active (DCGM_FI_PROF_DRAM_ACTIVE) | mem_copy_util (/100)
 * and effective TFLOP/s its `basis`:
 *   pipes          tensor active x peak tensor + fp32 active x peak fp32
 *   compute_ratio  compute ratio x peak tensor (an upper bound)
 *
 * Cost: each GPU is normalized once per render (up to 64 GPUs, on the
 * stack), its model found through a small per-thread cache keyed by the
 * name (the table is static); then each family is one pass over the GPUs
 * handing its samples to the sink.
 */
#include "expo.h"

#include "lib/err.h"
#include "lib/gpumodels.h"
#include "lib/metrics.h"

#include <stdio.h>
#include <string.h>

/* Recently seen model names and their rows (NULL: unknown), per thread. */
#define NORM_CACHE 16
static _Thread_local struct {
    char name[96];
    const struct gp_gpumodel *m;
} cache[NORM_CACHE];
static _Thread_local unsigned cache_n, cache_next;

static const struct gp_gpumodel *model_of(const char *name)
{
    for (unsigned i = 0; i < cache_n; i++)
        if (!strcmp(cache[i].name, name))
            return cache[i].m;
    const struct gp_gpumodel *m = gp_gpumodel_find(name);
    unsigned k = cache_n < NORM_CACHE ? cache_n++ : cache_next++ % NORM_CACHE;
    snprintf(cache[k].name, sizeof cache[k].name, "%s", name);
    cache[k].m = m;
    return m;
}

static double clamp01(double v) { return v < 0 ? 0 : v > 1 ? 1 : v; }

void gp_expo_normalize(const struct gp_gpu *g, struct gp_expo_norm *out)
{
    const struct gp_gpumodel *m = model_of(g->model);
    memset(out, 0, sizeof *out);
    out->model = m;
    out->compute = out->memory = out->bandwidth = out->power = out->clock = out->effective_tflops = -1;
    if (gp_gpu_has(g, GPF_PROF_SM_ACTIVE)) {
        out->compute = clamp01(g->val[GPF_PROF_SM_ACTIVE]);
        out->compute_source = "sm_active";
    } else if (gp_gpu_has(g, GPF_GPU_UTIL)) {
        out->compute = clamp01(g->val[GPF_GPU_UTIL] / 100.0);
        out->compute_source = "gpu_util";
    }
    double used = -1, total = -1;
    if (gp_gpu_has(g, GPF_MEMORY_USED))
        used = g->val[GPF_MEMORY_USED];
    else if (gp_gpu_has(g, GPF_FB_USED))
        used = g->val[GPF_FB_USED] * 1048576.0;
    if (gp_gpu_has(g, GPF_MEMORY_TOTAL))
        total = g->val[GPF_MEMORY_TOTAL];
    else if (gp_gpu_has(g, GPF_FB_USED) && gp_gpu_has(g, GPF_FB_FREE))
        total = (g->val[GPF_FB_USED] + g->val[GPF_FB_FREE] +
                 (gp_gpu_has(g, GPF_FB_RESERVED) ? g->val[GPF_FB_RESERVED] : 0)) * 1048576.0;
    else if (m)
        total = (double)m->memory_bytes;
    if (used >= 0 && total > 0)
        out->memory = clamp01(used / total);
    if (gp_gpu_has(g, GPF_PROF_DRAM)) {
        out->bandwidth = clamp01(g->val[GPF_PROF_DRAM]);
        out->bandwidth_source = "dram_active";
    } else if (gp_gpu_has(g, GPF_MEM_COPY_UTIL)) {
        out->bandwidth = clamp01(g->val[GPF_MEM_COPY_UTIL] / 100.0);
        out->bandwidth_source = "mem_copy_util";
    }
    double limit = gp_gpu_has(g, GPF_POWER_LIMIT) ? g->val[GPF_POWER_LIMIT] : m ? m->power_limit_w : 0;
    if (gp_gpu_has(g, GPF_POWER_USAGE) && limit > 0)
        out->power = g->val[GPF_POWER_USAGE] / limit; /* may pass 1 briefly: not clamped */
    double cmax = gp_gpu_has(g, GPF_SM_CLOCK_MAX) ? g->val[GPF_SM_CLOCK_MAX] / 1e6
                  : m                             ? (double)m->sm_clock_max_mhz
                                                  : 0;
    if (gp_gpu_has(g, GPF_SM_CLOCK) && cmax > 0)
        out->clock = g->val[GPF_SM_CLOCK] / cmax;
    if (m && gp_gpu_has(g, GPF_PROF_TENSOR)) {
        out->effective_tflops = clamp01(g->val[GPF_PROF_TENSOR]) * m->tensor_tflops +
                                (gp_gpu_has(g, GPF_PROF_FP32) ? clamp01(g->val[GPF_PROF_FP32]) : 0) *
                                    m->fp32_tflops;
        out->effective_basis = "pipes";
    } else if (m && out->compute >= 0) {
        out->effective_tflops = out->compute * m->tensor_tflops;
        out->effective_basis = "compute_ratio";
    }
}

enum nfam {
    NF_COMPUTE, NF_MEMORY, NF_BW, NF_POWER, NF_CLOCK, NF_EFF, NF_PEAK, NF_H100, NF_KNOWN, NF__COUNT
};

/* The families in nfam order (their rows in lib/metrics.h). */
static const enum gp_metric fams[NF__COUNT] = {
    [NF_COMPUTE] = GP_M_NORM_COMPUTE, [NF_MEMORY] = GP_M_NORM_MEMORY, [NF_BW] = GP_M_NORM_BANDWIDTH,
    [NF_POWER] = GP_M_NORM_POWER,     [NF_CLOCK] = GP_M_NORM_CLOCK,   [NF_EFF] = GP_M_NORM_EFFECTIVE,
    [NF_PEAK] = GP_M_NORM_PEAK,       [NF_H100] = GP_M_NORM_H100,     [NF_KNOWN] = GP_M_NORM_KNOWN,
};

/* GPUs normalized once per render into a stack array; a frame with more
 * (a large simulated node) normalizes each GPU once per family instead. */
#define NORM_ONCE 64

int gp_expo_walk_norm(const struct gp_expo *x, struct gp_metric_sink *s, const struct gp_frame *f)
{
    struct gp_expo_norm once[NORM_ONCE];
    int pre = f->ngpus <= NORM_ONCE;
    for (unsigned i = 0; pre && i < f->ngpus; i++)
        if (!f->gpus[i].lost)
            gp_expo_normalize(&f->gpus[i], &once[i]);
    for (int k = 0; k < NF__COUNT; k++) {
        int any = 0;
        for (unsigned i = 0; i < f->ngpus; i++) {
            const struct gp_gpu *g = &f->gpus[i];
            if (g->lost)
                continue;
            struct gp_expo_norm n;
            if (pre)
                n = once[i];
            else
                gp_expo_normalize(g, &n);
            double v = -1, v2 = -1;
            const char *lk = NULL, *lv = NULL;
            switch ((enum nfam)k) {
            case NF_COMPUTE: v = n.compute, lk = "source", lv = n.compute_source; break;
            case NF_MEMORY: v = n.memory; break;
            case NF_BW: v = n.bandwidth, lk = "source", lv = n.bandwidth_source; break;
            case NF_POWER: v = n.power; break;
            case NF_CLOCK: v = n.clock; break;
            case NF_EFF: v = n.effective_tflops, lk = "basis", lv = n.effective_basis; break;
            case NF_PEAK:
                if (n.model)
                    v = n.model->tensor_tflops, v2 = n.model->fp32_tflops;
                lk = "precision", lv = "bf16";
                break;
            case NF_H100: v = n.model ? gp_gpumodel_h100_equivalents(n.model) : -1; break;
            case NF_KNOWN: v = n.model ? 1 : 0; break;
            case NF__COUNT: break;
            }
            if (v < 0)
                continue;
            if (!any)
                gp_metric_family(s, fams[k]);
            any = 1;
            /* GPU i's own label set, with its job (expo.c builds both). */
            gp_metric_sample(s, fams[k], &x->gpus[i].own, lk, lv, v);
            if (v2 >= 0)
                gp_metric_sample(s, fams[k], &x->gpus[i].own, "precision", "fp32", v2);
        }
    }
    return s->err;
}
