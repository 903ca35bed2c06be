/*
 * advise.c - "what to change": fixed rules over the job document's
 * totals and GPUs (the rules and thresholds are listed in report.h and
 * docs/jobs.md). Each rule adds one entry {kind, text, evidence} unless
 * an entry of its kind is already there, so advising twice, or advising
 * a document the server already advised, changes nothing. The evidence
 * names the fields and numbers the rule looked at.
 */
#include "report/report.h"
#include "report/report_int.h"

#include "lib/err.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static bool has_kind(const json_t *adv, const char *kind)
{
    for (size_t i = 0; i < json_array_size(adv); i++) {
        const char *k = gp_rp_str(json_array_get(adv, i), "kind");
        if (k && !strcmp(k, kind))
            return true;
    }
    return false;
}

static int add(json_t *adv, bool first, const char *kind, const char *text, const char *evidence)
{
    json_t *e = json_pack("{s:s, s:s, s:s}", "kind", kind, "text", text, "evidence", evidence);
    if (!e)
        return GP_ENOMEM;
    int rc = first ? json_array_insert_new(adv, 0, e) : json_array_append_new(adv, e);
    return rc ? GP_ENOMEM : GP_OK;
}

/* failed / killed / lost: said first, before any tuning. */
static int rule_ending(const json_t *doc, json_t *adv)
{
    const char *state = gp_rp_str(doc, "state");
    if (!state || (strcmp(state, "failed") && strcmp(state, "killed") && strcmp(state, "lost")) ||
        has_kind(adv, state))
        return GP_OK;
    char sig[64], ev[200], text[320], ex[48], sigraw[64];
    double code;
    bool hx = gp_rp_num(doc, "exit_status", &code);
    const json_t *sj = json_object_get(doc, "signal");
    gp_rp_fmt_signal(sig, sizeof sig, sj);
    if (json_is_string(sj))
        snprintf(sigraw, sizeof sigraw, "%s", json_string_value(sj));
    else if (json_is_number(sj))
        snprintf(sigraw, sizeof sigraw, "%.15g", json_number_value(sj));
    else
        snprintf(sigraw, sizeof sigraw, "null");
    if (hx && fabs(code) < 1e9)
        snprintf(ex, sizeof ex, "%d", (int)code);
    else
        snprintf(ex, sizeof ex, hx ? "%.6g" : "null", code);
    snprintf(ev, sizeof ev, "state=%s exit_status=%s signal=%s", state, ex, sigraw);
    if (!hx)
        snprintf(ex, sizeof ex, GP_RP_NA);
    if (!strcmp(sig, GP_RP_NA))
        snprintf(sig, sizeof sig, "a signal gpulse did not see");
    if (!strcmp(state, "failed"))
        snprintf(text, sizeof text,
                 "The job failed (exit status %s): read its output for the error first; the numbers "
                 "below cover the run up to the failure.",
                 ex);
    else if (!strcmp(state, "killed"))
        snprintf(text, sizeof text,
                 "The job was killed by %s: if nobody stopped it, look for the out-of-memory killer "
                 "(dmesg) or a scheduler time limit; the numbers below cover the run until then.",
                 sig);
    else
        snprintf(text, sizeof text,
                 "gpulse lost track of the job before it ended (a node or agent went away): the numbers "
                 "below are partial.");
    return add(adv, true, state, text, ev);
}

static int rule_memory_high(const json_t *doc, json_t *adv)
{
    const json_t *gpus = gp_rp_arr(doc, "gpus");
    if (has_kind(adv, "memory_high"))
        return GP_OK;
    double worst = 0;
    size_t over = 0, k = 0;
    char list[256] = "";
    for (size_t i = 0; i < json_array_size(gpus); i++) {
        const json_t *g = json_array_get(gpus, i);
        double r;
        if (!gp_rp_gpu_peak_ratio(g, &r) || !(r > GP_REPORT_MEMORY_HIGH))
            continue;
        if (over < 4 && k < sizeof list) {
            const char *node = gp_rp_str(g, "node"), *id = gp_rp_str(g, "gpu");
            k += (size_t)snprintf(list + k, sizeof list - k, "%s%s/%s %.3f", over ? ", " : "",
                                  node ? node : GP_RP_NA, id ? id : GP_RP_NA, r);
        }
        over++;
        if (r > worst)
            worst = r;
    }
    if (!over)
        return GP_OK;
    char text[320], ev[400];
    snprintf(text, sizeof text,
             "GPU memory peaked at %.0f%% of capacity: an out-of-memory error is close. Use activation "
             "checkpointing, a smaller micro-batch with gradient accumulation, or mixed precision.",
             fmin(worst, 1e6) * 100);
    snprintf(ev, sizeof ev, "peak_memory_ratio > %.2f on %zu GPU(s): %s%s", GP_REPORT_MEMORY_HIGH, over,
             list, over > 4 ? ", ..." : "");
    return add(adv, false, "memory_high", text, ev);
}

static int rule_data_wait(const json_t *doc, json_t *adv)
{
    double w;
    if (!gp_rp_num(gp_rp_obj(doc, "totals"), "data_wait_ratio", &w) || !(w > GP_REPORT_DATA_WAIT_HIGH) ||
        has_kind(adv, "data_wait"))
        return GP_OK;
    char text[320], ev[128];
    snprintf(text, sizeof text,
             "Steps spent %.0f%% of their time waiting for data: raise the DataLoader's num_workers, "
             "set pin_memory=True and a prefetch_factor, or move decoding and augmentation out of the "
             "training loop.",
             fmin(w, 1e6) * 100);
    snprintf(ev, sizeof ev, "data_wait_ratio %.2f > %.2f", w, GP_REPORT_DATA_WAIT_HIGH);
    return add(adv, false, "data_wait", text, ev);
}

static int rule_low_activity(const json_t *doc, json_t *adv)
{
    const json_t *t = gp_rp_obj(doc, "totals");
    double a, w, steps;
    if (!gp_rp_num(t, "activity_avg", &a) || !(a < GP_REPORT_ACTIVITY_LOW) ||
        !gp_rp_num(t, "steps", &steps) || !(steps > 0) || !gp_rp_num(t, "data_wait_ratio", &w) ||
        w > GP_REPORT_DATA_WAIT_HIGH || has_kind(adv, "low_activity"))
        return GP_OK;
    char text[320], ev[160];
    snprintf(text, sizeof text,
             "The GPUs were busy only %.0f%% of the time although steps hardly waited for data: the "
             "work per kernel launch is small. Try a larger batch, fused kernels (fused optimizer, "
             "flash attention) or torch.compile.",
             fmax(a, -1e6) * 100);
    snprintf(ev, sizeof ev, "activity_avg %.2f < %.2f, data_wait_ratio %.2f <= %.2f, steps %.0f", a,
             GP_REPORT_ACTIVITY_LOW, w, GP_REPORT_DATA_WAIT_HIGH, fmin(steps, 1e18));
    return add(adv, false, "low_activity", text, ev);
}

static int rule_memory_low(const json_t *doc, json_t *adv)
{
    const json_t *gpus = gp_rp_arr(doc, "gpus");
    size_t n = json_array_size(gpus);
    if (!n || has_kind(adv, "memory_low"))
        return GP_OK;
    double top = -1;
    for (size_t i = 0; i < n; i++) {
        double r;
        if (!gp_rp_gpu_peak_ratio(json_array_get(gpus, i), &r) || !(r < GP_REPORT_MEMORY_LOW))
            return GP_OK;
        if (r > top)
            top = r;
    }
    char text[320], ev[128];
    snprintf(text, sizeof text,
             "GPU memory never passed %.0f%% of capacity on any GPU: a larger batch would use the cards "
             "better, or the job fits a smaller or shared GPU (a MIG slice, MPS).",
             fmax(top, 0) * 100);
    snprintf(ev, sizeof ev, "peak_memory_ratio at most %.2f < %.2f on all %zu GPU(s)", top,
             GP_REPORT_MEMORY_LOW, n);
    return add(adv, false, "memory_low", text, ev);
}

int gp_report_advise(json_t *doc)
{
    if (!json_is_object(doc))
        return GP_EPARSE;
    json_t *adv = json_object_get(doc, "advice");
    if (!json_is_array(adv)) {
        adv = json_array();
        if (!adv || json_object_set_new(doc, "advice", adv))
            return GP_ENOMEM;
    }
    int (*const rules[])(const json_t *, json_t *) = {rule_memory_high, rule_data_wait,
                                                       rule_low_activity, rule_memory_low, rule_ending};
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        int rc = rules[i](doc, adv);
        if (rc)
            return rc;
    }
    return GP_OK;
}
