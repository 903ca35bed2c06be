/*
 * advise.c - "what to change": the recommendations of the diagnosis
 * tree (insight/recommend.h, the same module the server's
 * /api/v1/recommendations answers from), and the report's own first
 * word on how the job ended. Each adds one entry {kind, text, evidence,
 * ...} unless an entry of its kind is already there, so advising twice,
 * or advising a document the server already advised, changes nothing.
 * The evidence names the fields and numbers the rule looked at.
 */
#include "report/report.h"
#include "report/report_int.h"

#include "insight/recommend.h"
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
    struct gp_rec_in in = {.doc = doc};
    int rc = gp_recommend(&in, adv);
    return rc ? rc : rule_ending(doc, adv);
}
