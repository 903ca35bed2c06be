/*
 * recommend.c - the diagnosis tree of recommend.h over a job document.
 *
 * The document is read into one flat struct of facts first (every
 * number NaN when unknown), then each branch of the tree is a small
 * function of those facts that either stays silent or builds one entry:
 * text for a person, the numbers it judged by (as a line and as an
 * object), the series they come from, a saving with the way it was
 * estimated, and a confidence. Keeping the reading apart from the
 * judging lets the tests drive each branch from a few JSON fields and
 * check the arithmetic of its saving.
 */
#include "insight/recommend.h"

#include "query/cost.h"
#include "insight/detect.h"
#include "lib/gpumodels.h"
#include "lib/err.h"
#include "lib/plural.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

struct facts {
    double activity, data_wait, steps, stepping_s, wall_s, gpu_hours, doc_price;
    double occupancy, tensor, dram, link, spread;
    double peak_max_ratio, peak_min_ratio_all, peak_bytes;
    size_t ngpus, nranks, ngpus_high, ngpus_ratio_known;
    const struct gp_gpumodel *model; /* the first GPU's model, when the table knows it */
    bool any_tensor_cards;
    char high_list[256];
};

/* --- reading ------------------------------------------------------------ */

static double num(const json_t *o, const char *key)
{
    const json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    double d = json_is_number(v) ? json_number_value(v) : NAN;
    return isfinite(d) ? d : NAN;
}

static const char *str(const json_t *o, const char *key)
{
    const json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static double peak_ratio(const json_t *g)
{
    double r = num(g, "peak_memory_ratio");
    if (!isnan(r))
        return r;
    double p = num(g, "peak_memory_bytes"), t = num(g, "memory_total_bytes");
    return t > 0 && !isnan(p) ? p / t : NAN;
}

static void read_facts(const json_t *doc, struct facts *f)
{
    const json_t *t = json_object_get(doc, "totals");
    f->activity = num(t, "activity_avg");
    f->data_wait = num(t, "data_wait_ratio");
    f->steps = num(t, "steps");
    f->stepping_s = num(t, "stepping_seconds");
    f->wall_s = num(doc, "wall_seconds");
    f->gpu_hours = num(t, "gpu_hours");
    f->doc_price = num(t, "price_per_gpu_hour");
    f->occupancy = num(t, "sm_occupancy_avg");
    f->tensor = num(t, "tensor_active_avg");
    f->dram = num(t, "dram_active_avg");
    f->link = num(t, "link_busy_avg");
    f->spread = num(t, "rank_step_spread");
    f->peak_bytes = num(t, "peak_gpu_memory_bytes");
    f->peak_max_ratio = NAN;
    f->peak_min_ratio_all = NAN;
    f->high_list[0] = 0;
    const json_t *gpus = json_object_get(doc, "gpus");
    f->ngpus = json_is_array(gpus) ? json_array_size(gpus) : 0;
    const json_t *ranks = json_object_get(doc, "ranks");
    f->nranks = json_is_array(ranks) ? json_array_size(ranks) : 0;
    size_t k = 0;
    double top = -INFINITY;
    for (size_t i = 0; i < f->ngpus; i++) {
        const json_t *g = json_array_get(gpus, i);
        const struct gp_gpumodel *m = gp_gpumodel_find(str(g, "model"));
        if (m && !f->model)
            f->model = m;
        if (m && m->tensor_cores)
            f->any_tensor_cards = true;
        double pb = num(g, "peak_memory_bytes");
        if (!isnan(pb) && (isnan(f->peak_bytes) || pb > f->peak_bytes) &&
            isnan(num(t, "peak_gpu_memory_bytes")))
            f->peak_bytes = pb;
        double r = peak_ratio(g);
        if (isnan(r))
            continue;
        f->ngpus_ratio_known++;
        if (r > top)
            top = r;
        if (r > GP_REC_MEMORY_HIGH) {
            if (f->ngpus_high < 4 && k < sizeof f->high_list) {
                const char *node = str(g, "node"), *id = str(g, "gpu");
                k += (size_t)snprintf(f->high_list + k, sizeof f->high_list - k, "%s%s/%s %.3f",
                                      f->ngpus_high ? ", " : "", node ? node : "n/a",
                                      id ? id : "n/a", r);
            }
            f->ngpus_high++;
        }
    }
    if (f->ngpus_ratio_known) {
        f->peak_max_ratio = top;
        /* "every GPU below": only when every GPU's ratio is known */
        f->peak_min_ratio_all = f->ngpus_ratio_known == f->ngpus ? top : NAN;
    }
}

/* Is an alert of this kind firing (or a bad observation of it) for the job? */
static const struct gp_observation *observed(const struct gp_rec_in *in, enum gp_detector d)
{
    for (size_t i = 0; i < in->nobs; i++)
        if (in->obs[i].key.det == d && in->obs[i].bad)
            return &in->obs[i];
    return NULL;
}

static bool firing(const struct gp_rec_in *in, enum gp_detector d)
{
    for (size_t i = 0; i < in->nfiring; i++)
        if (in->firing[i] && !strcmp(in->firing[i], gp_detectors[d].name))
            return true;
    return observed(in, d) != NULL;
}

/* --- building an entry -------------------------------------------------- */

struct saving {
    const char *type; /* "time", "money", "none" */
    double fraction, seconds, usd, usd_per_gpu_hour;
    char method[384];
};

static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static bool has_kind(const json_t *adv, const char *kind)
{
    for (size_t i = 0; i < json_array_size(adv); i++) {
        const char *k = str(json_array_get(adv, i), "kind");
        if (k && !strcmp(k, kind))
            return true;
    }
    return false;
}

/* numbers: NULL-terminated name list with values, series likewise. */
static int add(json_t *adv, const char *kind, const char *title, const char *text,
               const char *evidence, const char *const *names, const double *vals,
               const char *const *series, const struct saving *sv, double confidence,
               const struct gp_observation *ob)
{
    json_t *e = json_object(), *nums = json_object(), *ser = json_array(), *s = json_object();
    /* the containers go into e first: from then on e owns them (set_new
     * releases its value even when it fails), and one decref frees all */
    if (!e || !nums || !ser || !s) {
        json_decref(nums);
        json_decref(ser);
        json_decref(s);
        goto oom;
    }
    if (json_object_set_new(e, "numbers", nums) | json_object_set_new(e, "series", ser) |
        json_object_set_new(e, "saving", s))
        goto oom;
    for (size_t i = 0; names && names[i]; i++)
        if (json_object_set_new(nums, names[i], jnum(vals[i])))
            goto oom;
    for (size_t i = 0; series && series[i]; i++)
        if (json_array_append_new(ser, json_string(series[i])))
            goto oom;
    char ev[1024];
    snprintf(ev, sizeof ev, "%s%s%s", evidence, ob ? "; detector: " : "", ob ? ob->summary : "");
    if (json_object_set_new(s, "type", json_string(sv->type)) ||
        json_object_set_new(s, "fraction", jnum(sv->fraction)) ||
        json_object_set_new(s, "seconds", jnum(sv->seconds)) ||
        json_object_set_new(s, "usd", jnum(sv->usd)) ||
        json_object_set_new(s, "usd_per_gpu_hour", jnum(sv->usd_per_gpu_hour)) ||
        json_object_set_new(s, "method", json_string(sv->method)) ||
        json_object_set_new(e, "kind", json_string(kind)) ||
        json_object_set_new(e, "title", json_string(title)) ||
        json_object_set_new(e, "text", json_string(text)) ||
        json_object_set_new(e, "evidence", json_string(ev)) ||
        json_object_set_new(e, "confidence", json_real(round(confidence * 100) / 100)))
        goto oom;
    return json_array_append_new(adv, e) ? GP_ENOMEM : GP_OK;
oom:
    json_decref(e);
    return GP_ENOMEM;
}

/* A time saving of `fraction` of the job's stepping (else wall) time. */
static void time_saving(struct saving *sv, const struct facts *f, double fraction, const char *how)
{
    double span = !isnan(f->stepping_s) ? f->stepping_s : f->wall_s;
    sv->type = "time";
    sv->fraction = fmax(0, fmin(1, fraction));
    sv->seconds = !isnan(span) && !isnan(fraction) ? sv->fraction * span : NAN;
    sv->usd = NAN;
    sv->usd_per_gpu_hour = NAN;
    snprintf(sv->method, sizeof sv->method, "%s; seconds = fraction x %s", how,
             !isnan(f->stepping_s) ? "stepping_seconds" : "wall_seconds");
}

static void no_saving(struct saving *sv, const char *why)
{
    *sv = (struct saving){.type = "none", .fraction = NAN, .seconds = NAN, .usd = NAN,
                          .usd_per_gpu_hour = NAN};
    snprintf(sv->method, sizeof sv->method, "%s", why);
}

/* --- the branches ------------------------------------------------------- */

static int rule_memory_high(const struct gp_rec_in *in, const struct facts *f, json_t *adv)
{
    (void)in;
    if (!f->ngpus_high || has_kind(adv, "memory_high"))
        return GP_OK;
    char text[400], ev[400];
    snprintf(text, sizeof text,
             "GPU memory peaked at %.0f%% of capacity: an out-of-memory error is close. Use activation "
             "checkpointing, a smaller micro-batch with gradient accumulation, or mixed precision.",
             fmin(f->peak_max_ratio, 1e6) * 100);
    snprintf(ev, sizeof ev, "peak_memory_ratio > %.2f on %zu %s: %s%s", GP_REC_MEMORY_HIGH,
             f->ngpus_high, gp_plural((double)f->ngpus_high, "GPU", "GPUs"), f->high_list, f->ngpus_high > 4 ? ", ..." : "");
    static const char *const names[] = {"peak_memory_ratio_max", "gpus_over", NULL};
    double vals[] = {f->peak_max_ratio, (double)f->ngpus_high};
    static const char *const series[] = {"DCGM_FI_DEV_FB_USED", "gpulse_gpu_memory_used_bytes", NULL};
    struct saving sv;
    no_saving(&sv, "avoids a crash and a restart from the last checkpoint; not a speed-up");
    return add(adv, "memory_high", "Close to out of GPU memory", text, ev, names, vals, series, &sv,
               fmin(0.95, 0.6 + (f->peak_max_ratio - GP_REC_MEMORY_HIGH) * 4), NULL);
}

static bool data_bound(const struct gp_rec_in *in, const struct facts *f)
{
    return f->data_wait > GP_REC_DATA_WAIT_HIGH || firing(in, GP_DET_DATA_STARVED);
}

static int rule_data_wait(const struct gp_rec_in *in, const struct facts *f, json_t *adv)
{
    if (!data_bound(in, f) || has_kind(adv, "data_wait"))
        return GP_OK;
    const struct gp_observation *ob = observed(in, GP_DET_DATA_STARVED);
    char text[400], ev[256];
    if (!isnan(f->data_wait))
        snprintf(text, sizeof text,
                 "Steps spent %.0f%% of their time waiting for data: raise the DataLoader's "
                 "num_workers, set pin_memory=True and a prefetch_factor, or move decoding and "
                 "augmentation out of the training loop.",
                 fmin(f->data_wait, 1e6) * 100);
    else
        snprintf(text, sizeof text,
                 "The GPUs wait for input: raise the DataLoader's num_workers, set pin_memory=True "
                 "and a prefetch_factor, or move decoding and augmentation out of the training loop.");
    if (!isnan(f->data_wait))
        snprintf(ev, sizeof ev, "data_wait_ratio %.2f %s %.2f%s", f->data_wait,
                 f->data_wait > GP_REC_DATA_WAIT_HIGH ? ">" : "<=", GP_REC_DATA_WAIT_HIGH,
                 firing(in, GP_DET_DATA_STARVED) ? ", dataloader_starvation firing" : "");
    else
        snprintf(ev, sizeof ev, "data_wait_ratio unknown, dataloader_starvation firing");
    static const char *const names[] = {"data_wait_ratio", "activity_avg", NULL};
    double vals[] = {f->data_wait, f->activity};
    static const char *const series[] = {"gpulse_job_data_wait_seconds_total",
                                         "gpulse_job_step_seconds_total", NULL};
    struct saving sv;
    if (!isnan(f->data_wait))
        time_saving(&sv, f, f->data_wait,
                    "upper bound: if the input pipeline kept up, no step would wait; fraction = "
                    "data_wait_ratio");
    else
        no_saving(&sv, "the document has no data_wait_ratio to size the wait");
    double conf = !isnan(f->data_wait) ? fmin(0.95, 0.6 + f->data_wait * 0.7) : 0.5;
    return add(adv, "data_wait", "Data loading is the bottleneck", text, ev, names, vals, series, &sv,
               conf, ob);
}

static bool comm_bound(const struct gp_rec_in *in, const struct facts *f)
{
    return f->activity < GP_REC_ACTIVITY_LOW && !data_bound(in, f) && f->link > GP_REC_LINK_BUSY &&
           f->nranks >= 2 && !firing(in, GP_DET_STRAGGLER) &&
           (isnan(f->spread) || f->spread <= GP_REC_RANK_SPREAD_EVEN);
}

static int rule_comm(const struct gp_rec_in *in, const struct facts *f, json_t *adv)
{
    if (!comm_bound(in, f) || has_kind(adv, "communication_bound"))
        return GP_OK;
    char text[480], ev[256];
    snprintf(text, sizeof text,
             "The GPUs computed only %.0f%% of the time while NVLink/PCIe ran at %.0f%% of peak and "
             "every rank was equally slow: collectives dominate. Raise the compute per "
             "communication: gradient accumulation (fewer all-reduces), a larger micro-batch, "
             "overlapping communication with the backward pass (DDP bucket_cap_mb, FSDP prefetch).",
             f->activity * 100, f->link * 100);
    snprintf(ev, sizeof ev,
             "activity_avg %.2f < %.2f, link_busy_avg %.2f > %.2f, %zu %s, rank_step_spread %.2f, "
             "no straggler firing",
             f->activity, GP_REC_ACTIVITY_LOW, f->link, GP_REC_LINK_BUSY, f->nranks,
             gp_plural((double)f->nranks, "rank", "ranks"), f->spread);
    static const char *const names[] = {"activity_avg", "link_busy_avg", "ranks", "rank_step_spread",
                                        NULL};
    double vals[] = {f->activity, f->link, (double)f->nranks, f->spread};
    static const char *const series[] = {"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_NVLINK_TX_BYTES",
                                         "DCGM_FI_PROF_PCIE_TX_BYTES", "gpulse_job_step_seconds_total",
                                         NULL};
    struct saving sv;
    time_saving(&sv, f, (1 - f->activity) * 0.5,
                "estimate: overlap or fewer collectives hide about half of the time the GPUs "
                "wait on links; fraction = (1 - activity_avg) x 0.5");
    return add(adv, "communication_bound", "Communication bound", text, ev, names, vals, series, &sv,
               isnan(f->spread) ? 0.55 : 0.7, NULL);
}

static int rule_low_activity(const struct gp_rec_in *in, const struct facts *f, json_t *adv)
{
    if (!(f->activity < GP_REC_ACTIVITY_LOW) || !(f->steps > 0) || isnan(f->data_wait) ||
        data_bound(in, f) || comm_bound(in, f) || f->occupancy >= GP_REC_OCCUPANCY_LOW ||
        has_kind(adv, "low_activity"))
        return GP_OK;
    char text[400], ev[256];
    snprintf(text, sizeof text,
             "The GPUs were busy only %.0f%% of the time although steps hardly waited for data: the "
             "work per kernel launch is small. Try a larger batch, fused kernels (fused optimizer, "
             "flash attention) or torch.compile.",
             fmax(f->activity, -1e6) * 100);
    char occ[24] = "n/a"; /* no occupancy series: the rule still fires, less confident */
    if (!isnan(f->occupancy))
        snprintf(occ, sizeof occ, "%.2f", f->occupancy);
    snprintf(ev, sizeof ev,
             "activity_avg %.2f < %.2f, data_wait_ratio %.2f <= %.2f, steps %.0f, sm_occupancy_avg %s",
             f->activity, GP_REC_ACTIVITY_LOW, f->data_wait, GP_REC_DATA_WAIT_HIGH, fmin(f->steps, 1e18),
             occ);
    static const char *const names[] = {"activity_avg", "data_wait_ratio", "steps", "sm_occupancy_avg",
                                        NULL};
    double vals[] = {f->activity, f->data_wait, f->steps, f->occupancy};
    static const char *const series[] = {"DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_OCCUPANCY",
                                         "gpulse_job_data_wait_seconds_total", NULL};
    struct saving sv;
    time_saving(&sv, f, 1 - fmax(f->activity, 0) / GP_REC_ACTIVITY_TARGET,
                "estimate: the same work at the activity of a well-fed job (0.8); fraction = 1 - "
                "activity_avg / 0.8");
    return add(adv, "low_activity", "Low GPU occupancy", text, ev, names, vals, series, &sv,
               isnan(f->occupancy) ? 0.5 : 0.7, NULL);
}

static int rule_tensor(const struct gp_rec_in *in, const struct facts *f, json_t *adv)
{
    bool fired = firing(in, GP_DET_NO_TENSOR_CORES);
    bool measured = f->any_tensor_cards && f->tensor < GP_REC_TENSOR_UNUSED &&
                    f->activity >= GP_REC_TENSOR_BUSY;
    if (!(fired || measured) || has_kind(adv, "no_tensor_cores"))
        return GP_OK;
    const struct gp_gpumodel *m = f->model;
    char text[480], ev[256];
    snprintf(text, sizeof text,
             "The %s has tensor cores but the job used none of them: train in bf16 or fp16 "
             "(torch.autocast, or the trainer's mixed-precision flag), allow TF32 for fp32 matmuls, "
             "and keep matrix dimensions (hidden size, batch x sequence, vocabulary) multiples of 8.",
             m ? m->short_name : "card");
    snprintf(ev, sizeof ev, "tensor_active_avg %.3f < %.2f at activity_avg %.2f%s", f->tensor,
             GP_REC_TENSOR_UNUSED, f->activity, fired ? ", tensor_cores_unused firing" : "");
    static const char *const names[] = {"tensor_active_avg", "activity_avg", "tensor_tflops",
                                        "fp32_tflops", NULL};
    double vals[] = {f->tensor, f->activity, m ? m->tensor_tflops : NAN, m ? m->fp32_tflops : NAN};
    static const char *const series[] = {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE",
                                         NULL};
    struct saving sv;
    if (m && m->tensor_tflops > 0 && !isnan(f->activity))
        time_saving(&sv, f, fmin(0.5, f->activity * (1 - m->fp32_tflops / m->tensor_tflops)),
                    "estimate: the busy share runs at the tensor-core rate instead of fp32 "
                    "(activity_avg x (1 - fp32_tflops / tensor_tflops)), at most half since not "
                    "every kernel is a matmul");
    else
        no_saving(&sv, "the card's model or the activity is unknown");
    return add(adv, "no_tensor_cores", "Tensor cores unused", text, ev, names, vals, series, &sv,
               measured ? 0.8 : 0.6, observed(in, GP_DET_NO_TENSOR_CORES));
}

static int rule_memory_bound(const struct gp_rec_in *in, const struct facts *f, json_t *adv)
{
    bool fired = firing(in, GP_DET_MEMORY_BOUND);
    if (!(fired || f->dram > GP_REC_DRAM_BUSY) || has_kind(adv, "memory_bound"))
        return GP_OK;
    char text[400], ev[256];
    snprintf(text, sizeof text,
             "Memory bandwidth, not compute, limits the kernels: use lower precision (bf16 moves "
             "half the bytes of fp32), fuse element-wise kernels (torch.compile), and if memory is "
             "also tight, activation checkpointing frees room for a larger, more efficient batch.");
    snprintf(ev, sizeof ev, "dram_active_avg %.2f (> %.2f), activity_avg %.2f%s", f->dram,
             GP_REC_DRAM_BUSY, f->activity, fired ? ", memory_bandwidth_bound firing" : "");
    static const char *const names[] = {"dram_active_avg", "activity_avg", NULL};
    double vals[] = {f->dram, f->activity};
    static const char *const series[] = {"DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE", NULL};
    struct saving sv;
    if (!isnan(f->dram) && !isnan(f->activity))
        time_saving(&sv, f, 0.5 * f->dram * f->activity,
                    "estimate: halving the bytes halves the DRAM-bound share of busy time; "
                    "fraction = 0.5 x dram_active_avg x activity_avg");
    else
        no_saving(&sv, "DRAM activity or GPU activity unknown");
    return add(adv, "memory_bound", "Memory-bandwidth bound", text, ev, names, vals, series, &sv,
               !isnan(f->dram) ? 0.7 : 0.55, observed(in, GP_DET_MEMORY_BOUND));
}

static int rule_small_job(const struct gp_rec_in *in, const struct facts *f, json_t *adv)
{
    if (!f->ngpus || !(f->peak_min_ratio_all < GP_REC_MEMORY_LOW))
        return GP_OK;
    double top = f->peak_max_ratio;
    char text[560], ev[320];
    struct saving sv;
    if (!(f->activity < GP_REC_SMALL_ACTIVITY)) {
        if (has_kind(adv, "memory_low") || has_kind(adv, "oversized_gpu"))
            return GP_OK;
        snprintf(text, sizeof text,
                 "GPU memory never passed %.0f%% of capacity on any GPU: a larger batch would use "
                 "the cards better, or the job fits a smaller or shared GPU (a MIG slice, MPS).",
                 fmax(top, 0) * 100);
        snprintf(ev, sizeof ev, "peak_memory_ratio at most %.2f < %.2f on %s %zu %s", top,
                 GP_REC_MEMORY_LOW, gp_plural((double)f->ngpus, "the", "all"), f->ngpus,
                 gp_plural((double)f->ngpus, "GPU", "GPUs"));
        static const char *const names[] = {"peak_memory_ratio_max", "gpus", NULL};
        double vals[] = {top, (double)f->ngpus};
        static const char *const series[] = {"DCGM_FI_DEV_FB_USED", NULL};
        no_saving(&sv, "a larger batch shortens the run by an amount the document cannot tell");
        return add(adv, "memory_low", "GPU memory mostly unused", text, ev, names, vals, series, &sv,
                   0.5, NULL);
    }
    if (has_kind(adv, "oversized_gpu") || has_kind(adv, "memory_low"))
        return GP_OK;
    const struct gp_gpumodel *m = f->model, *alt = NULL;
    double cur = gp_rec_price_of(in->prices, m);
    if (isnan(cur))
        cur = f->doc_price;
    double diff = NAN;
    if (!isnan(cur) && !isnan(f->peak_bytes))
        diff = gp_rec_smaller_card(in->prices, f->peak_bytes, cur, &alt);
    char share[128] = "";
    if (m && m->mig)
        snprintf(share, sizeof share, " The %s can be split with MIG.", m->short_name);
    if (alt && diff > 0) {
        sv = (struct saving){.type = "money", .fraction = diff / cur, .seconds = NAN,
                             .usd_per_gpu_hour = diff,
                             .usd = !isnan(f->gpu_hours) ? diff * f->gpu_hours : NAN};
        snprintf(sv.method, sizeof sv.method,
                 "(%.2f USD/h for the %s - %.2f USD/h for the %s, the cheapest card holding the "
                 "peak %.1f GiB with %.0f%% headroom) x %.3g GPU-hours",
                 cur, m ? m->short_name : "job's card", cur - diff, alt->short_name,
                 f->peak_bytes / 1073741824.0, GP_REC_HEADROOM * 100, f->gpu_hours);
        snprintf(text, sizeof text,
                 "The job used at most %.0f%% of GPU memory and was busy %.0f%% of the time: it fits a "
                 "smaller card (%s, %.2f USD less per GPU-hour) or a share of this one (MIG, MPS).%s",
                 fmax(top, 0) * 100, f->activity * 100, alt->short_name, diff, share);
    } else {
        no_saving(&sv, isnan(cur)                ? "no price for the job's card"
                       : isnan(f->peak_bytes)    ? "the job's peak memory in bytes is unknown"
                                                 : "no cheaper priced card holds the peak with headroom");
        snprintf(text, sizeof text,
                 "The job used at most %.0f%% of GPU memory and was busy %.0f%% of the time: it fits a "
                 "smaller card, or a share of this one (a MIG slice, MPS) next to other work.%s",
                 fmax(top, 0) * 100, f->activity * 100, share);
    }
    snprintf(ev, sizeof ev,
             "peak_memory_ratio at most %.2f < %.2f on %s %zu %s, activity_avg %.2f < %.2f, "
             "peak %.0f bytes",
             top, GP_REC_MEMORY_LOW, gp_plural((double)f->ngpus, "the", "all"), f->ngpus,
             gp_plural((double)f->ngpus, "GPU", "GPUs"), f->activity, GP_REC_SMALL_ACTIVITY, f->peak_bytes);
    static const char *const names[] = {"peak_memory_ratio_max", "activity_avg", "peak_gpu_memory_bytes",
                                        "gpu_hours", "price_per_gpu_hour", NULL};
    double vals[] = {top, f->activity, f->peak_bytes, f->gpu_hours, cur};
    static const char *const series[] = {"DCGM_FI_DEV_FB_USED", "DCGM_FI_PROF_SM_ACTIVE", NULL};
    return add(adv, "oversized_gpu", "A smaller or shared GPU would do", text, ev, names, vals, series,
               &sv, 0.75, NULL);
}

/* --- prices --------------------------------------------------------------- */

double gp_rec_price_of(const struct gp_prices *prices, const struct gp_gpumodel *m)
{
    if (!m)
        return NAN;
    double p = gp_prices_of(prices, m->name, strlen(m->name));
    return p > 0 ? p : NAN;
}

double gp_rec_smaller_card(const struct gp_prices *prices, double peak_bytes, double cur_price,
                           const struct gp_gpumodel **alt)
{
    *alt = NULL;
    double best = cur_price;
    for (size_t i = 0; i < gp_gpumodel_count(); i++) {
        const struct gp_gpumodel *m = gp_gpumodel_at(i);
        double p = gp_rec_price_of(prices, m);
        if (isnan(p) || (double)m->memory_bytes < peak_bytes * (1 + GP_REC_HEADROOM) || !(p < best))
            continue;
        best = p;
        *alt = m;
    }
    return *alt ? cur_price - best : 0;
}

int gp_recommend(const struct gp_rec_in *in, json_t *advice)
{
    if (!in || !json_is_object(in->doc) || !json_is_array(advice))
        return GP_EPARSE;
    struct facts f = {0};
    read_facts(in->doc, &f);
    int (*const rules[])(const struct gp_rec_in *, const struct facts *, json_t *) = {
        rule_memory_high, rule_data_wait,  rule_comm,        rule_low_activity,
        rule_tensor,      rule_memory_bound, rule_small_job,
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        int rc = rules[i](in, &f, advice);
        if (rc)
            return rc;
    }
    return GP_OK;
}
