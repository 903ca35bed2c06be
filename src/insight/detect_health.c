/*
 * detect_health.c - the hardware detectors: clocks held down (thermal or
 * power throttling) and errors that mean a node must be drained (ECC
 * double-bit errors, XID errors, pending page retirement, uncorrectable
 * row remaps and remap failures).
 *
 * Throttling is a share of points, so one hot sample does not make a
 * throttled card and the `for` duration does the rest. Errors are
 * counters: any increase within the window is bad, at once (`for` 0s);
 * the persistent states (pending retirement, remapped rows, failure) are
 * bad while they last.
 */
#include "detect_util.h"
#include "faults.h"

#include "lib/err.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Names fault f as found (the health states read it, health.h). */
static void add_fault(struct gp_observation *o, const struct gp_fault *f)
{
    if (o->nfaults < GP_OBS_FAULTS)
        o->faults[o->nfaults++] = f;
}

#define THROTTLE_TEMP_C 87.0   /* slowdown starts near here on data-center cards */
#define THROTTLE_CLOCK 0.8     /* busy with the SM clock below this share of max */
#define THROTTLE_BUSY 0.5

/*
 * THROTTLED (above): share of the points with a reading at which the GPU
 * was held down: a thermal or power clock-event reason set, temperature
 * at 87 °C or more, or busy (activity >= 0.5) with the SM clock below
 * 80 % of its maximum. Judged where at least half the points have one
 * of these readings.
 */
int gp_det_throttled(const struct gp_detect_ctx *c)
{
    const struct gp_view *v = c->view;
    struct gp_observation o;
    for (unsigned i = 0; i < v->ngpus; i++) {
        const struct gp_view_gpu *g = &v->gpus[i];
        const double *th = gp_view_gpu_at(v, g, GP_VGM_THROTTLE_THERMAL);
        const double *pw = gp_view_gpu_at(v, g, GP_VGM_THROTTLE_POWER);
        const double *te = gp_view_gpu_at(v, g, GP_VGM_TEMP);
        const double *ck = gp_view_gpu_at(v, g, GP_VGM_SM_CLOCK);
        const double *ckmax = gp_view_gpu_at(v, g, GP_VGM_SM_CLOCK_MAX);
        const double *sm = gp_view_gpu_at(v, g, GP_VGM_SM_ACTIVE);
        const double *ut = gp_view_gpu_at(v, g, GP_VGM_UTIL);
        double spec_max = g->spec && g->spec->sm_clock_max_mhz ? g->spec->sm_clock_max_mhz * 1e6
                                                               : NAN;
        unsigned n = 0, nbad = 0, nth = 0, npw = 0, nhot = 0, nslow = 0, nbusy = 0;
        double tmax = -INFINITY, cksum = 0, cmax = NAN;
        for (unsigned k = 0; k < v->npoints; k++) {
            bool seen = false, bad = false;
            if (!isnan(th[k])) {
                seen = true;
                if (th[k] >= 0.5) {
                    nth++;
                    bad = true;
                }
            }
            if (!isnan(pw[k])) {
                seen = true;
                if (pw[k] >= 0.5) {
                    npw++;
                    bad = true;
                }
            }
            if (!isnan(te[k])) {
                seen = true;
                tmax = te[k] > tmax ? te[k] : tmax;
                if (te[k] >= THROTTLE_TEMP_C) {
                    nhot++;
                    bad = true;
                }
            }
            if (!isnan(ck[k])) {
                /* gp_view_activity and clock_max, inlined: the hot loop */
                double act = isnan(sm[k]) ? ut[k] : sm[k];
                double mx = !isnan(ckmax[k]) && ckmax[k] > 0 ? ckmax[k] : spec_max;
                if (act >= THROTTLE_BUSY && !isnan(mx)) {
                    seen = true;
                    nbusy++;
                    cksum += ck[k];
                    cmax = mx;
                    if (ck[k] < THROTTLE_CLOCK * mx) {
                        nslow++;
                        bad = true;
                    }
                }
            }
            n += seen;
            nbad += bad;
        }
        if (!n || n * 2 < v->npoints)
            continue;
        double share = (double)nbad / n;
        gp_det_key_gpu(&o, GP_DET_THROTTLED, g);
        if (gp_det_judge(c, &o, share, true)) {
            char who[320], win[96];
            gp_det_gpu_name(g, who, sizeof who);
            gp_det_window_gpu(v, g, 0, win, sizeof win);
            const char *why = nth >= npw && nth >= nhot && nth >= nslow ? "thermal slowdown"
                              : npw >= nhot && npw >= nslow             ? "power capping"
                              : nhot >= nslow                           ? "temperature"
                                                                        : "low SM clock while busy";
            /* only the readings there are: "0 of 0 MHz" says nothing */
            char temp[48] = "", clock[64] = "";
            if (isfinite(tmax))
                snprintf(temp, sizeof temp, "max %.0f °C", tmax);
            if (nbusy && !isnan(cmax))
                snprintf(clock, sizeof clock, "%sSM clock %.0f of %.0f MHz while busy",
                         temp[0] ? ", " : "", cksum / nbusy / 1e6, cmax / 1e6);
            const struct gp_fault *f = gp_fault_cond(GP_FC_THROTTLED);
            if (o.bad)
                gp_det_printf(o.summary, sizeof o.summary, "%s is throttled on %.0f %% of points over %s, "
                              "mostly %s%s%s%s%s: %s",
                              who, 100 * share, win, why, temp[0] || clock[0] ? " (" : "", temp, clock,
                              temp[0] || clock[0] ? ")" : "", gp_fault_action_words[f->action]);
            else
                gp_det_printf(o.summary, sizeof o.summary, "%s is throttled on %.0f %% of points over %s, "
                              "mostly %s%s%s%s%s",
                              who, 100 * share, win, why, temp[0] || clock[0] ? " (" : "", temp, clock,
                              temp[0] || clock[0] ? ")" : "");
            if (o.bad) {
                gp_fault_runbook(f, o.runbook, sizeof o.runbook);
                add_fault(&o, f);
            }
            gp_det_printf(o.evidence, sizeof o.evidence,
                          "over %s, %u points with a reading, %u held down: thermal reason on %u, "
                          "power reason on %u, at or above %.0f °C on %u (max %.0f °C), busy with "
                          "the SM clock under %.0f %% of max on %u of %u busy points; threshold "
                          "%.2f, clear %.2f",
                          win, n, nbad, nth, npw, THROTTLE_TEMP_C, nhot,
                          isfinite(tmax) ? tmax : 0.0, 100 * THROTTLE_CLOCK, nslow, nbusy,
                          c->cfg->threshold, c->cfg->clear);
        }
        int rc = gp_det_emit(c, &o);
        if (rc)
            return rc;
    }
    return GP_OK;
}

#define PCIE_BUSY 0.5 /* the link may train down to save power while idle */

/*
 * PCIE_DEGRADED (above): share of the points with a link reading at
 * which the PCIe link ran below its maximum: narrower than its maximum
 * width (at any time), or a lower generation while the GPU was busy
 * (activity >= 0.5: an idle link steps its speed down to save power,
 * which is no fault). Judged where at least half the points have a
 * width reading.
 */
int gp_det_pcie_degraded(const struct gp_detect_ctx *c)
{
    const struct gp_view *v = c->view;
    struct gp_observation o;
    for (unsigned i = 0; i < v->ngpus; i++) {
        const struct gp_view_gpu *g = &v->gpus[i];
        const double *w = gp_view_gpu_at(v, g, GP_VGM_PCIE_WIDTH);
        const double *wmax = gp_view_gpu_at(v, g, GP_VGM_PCIE_WIDTH_MAX);
        const double *gen = gp_view_gpu_at(v, g, GP_VGM_PCIE_GEN);
        const double *gmax = gp_view_gpu_at(v, g, GP_VGM_PCIE_GEN_MAX);
        unsigned n = 0, nbad = 0, nnarrow = 0, nslow = 0;
        double wlast = NAN, wmlast = NAN, glast = NAN, gmlast = NAN;
        for (unsigned k = 0; k < v->npoints; k++) {
            if (isnan(w[k]) || isnan(wmax[k]))
                continue;
            n++;
            bool narrow = w[k] < wmax[k], slow = false;
            if (!isnan(gen[k]) && !isnan(gmax[k]) && gen[k] < gmax[k]) {
                double act = gp_view_activity(v, g, k, NULL);
                slow = act >= PCIE_BUSY;
            }
            nnarrow += narrow;
            nslow += slow;
            nbad += narrow || slow;
            wlast = w[k], wmlast = wmax[k], glast = gen[k], gmlast = gmax[k];
        }
        if (!n || n * 2 < v->npoints)
            continue;
        double share = (double)nbad / n;
        gp_det_key_gpu(&o, GP_DET_PCIE_DEGRADED, g);
        if (gp_det_judge(c, &o, share, true)) {
            char who[320], win[96];
            gp_det_gpu_name(g, who, sizeof who);
            gp_det_window_gpu(v, g, 0, win, sizeof win);
            const struct gp_fault *f = gp_fault_cond(GP_FC_PCIE_DEGRADED);
            if (o.bad) {
                char gens[64] = "";
                if (!isnan(glast) && !isnan(gmlast))
                    snprintf(gens, sizeof gens, ", gen %.0f of %.0f", glast, gmlast);
                gp_det_printf(o.summary, sizeof o.summary,
                              "%s: PCIe link below its maximum on %.0f %% of points over %s "
                              "(x%.0f of x%.0f%s): %s",
                              who, 100 * share, win, wlast, wmlast, gens,
                              gp_fault_action_words[f->action]);
                gp_fault_runbook(f, o.runbook, sizeof o.runbook);
                add_fault(&o, f);
            } else {
                gp_det_printf(o.summary, sizeof o.summary, "%s: PCIe link at x%.0f of x%.0f", who,
                              wlast, wmlast);
            }
            gp_det_printf(o.evidence, sizeof o.evidence,
                          "over %s, %u points with a link reading: narrower than the maximum "
                          "width on %u, a lower generation while busy (activity >= %.1f) on %u; "
                          "last width x%.0f of x%.0f, generation %.0f of %.0f; threshold %.2f, "
                          "clear %.2f",
                          win, n, nnarrow, PCIE_BUSY, nslow, wlast, wmlast,
                          isnan(glast) ? 0.0 : glast, isnan(gmlast) ? 0.0 : gmlast,
                          c->cfg->threshold, c->cfg->clear);
        }
        int rc = gp_det_emit(c, &o);
        if (rc)
            return rc;
    }
    return GP_OK;
}

/* Appends ", " (after the first) and a formatted part to buf; len is
 * kept at most cap - 1, so a cut list stays terminated. */
static void append(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    if (*len && *len + 2 < cap) {
        memcpy(buf + *len, ", ", 3);
        *len += 2;
    }
    if (*len + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (w > 0)
        *len = *len + (size_t)w < cap ? *len + (size_t)w : cap - 1;
}

/* XID_LAST changes to a hardware XID: the count where no XID counter is
 * kept (XID_TOTAL counts hardware XIDs only, detect.h). */
static double xid_changes(const double *x, unsigned n)
{
    double prev = NAN, cnt = 0;
    for (unsigned k = 0; k < n; k++) {
        if (isnan(x[k]))
            continue;
        if (!isnan(prev) && x[k] != prev && gp_xid_is_hardware(x[k]))
            cnt++;
        prev = x[k];
    }
    return cnt;
}

/* Whether GPU g has any reading other than its XID rows at point k: its
 * agent was reporting then. */
static bool gpu_reporting(const struct gp_view *v, const struct gp_view_gpu *g, unsigned k)
{
    for (int r = 0; r < GP_VGM__COUNT; r++)
        if (r != GP_VGM_XID_TOTAL && r != GP_VGM_XID_LAST && !isnan(gp_view_gpu_at(v, g, r)[k]))
            return true;
    return false;
}

/*
 * The hardware XIDs the XID counter says happened in the window. The
 * agent exports a counter for an XID only once it happens, so the series
 * first appears at 1, and an increase from its first point (as
 * Prometheus's increase() measures it) misses that XID. A counter that
 * first appears while its GPU was already reporting (a reading at the
 * point before) therefore counts from 0, as if a 0 stood at that point.
 * A counter there from the GPU's first point in the window is not
 * counted: it appeared before the window (its XIDs were counted then,
 * while its appearance was in the window), or the server has no older
 * data to tell (a fresh store), so a restart cannot re-alert on old XIDs.
 */
static double xid_increase(const struct gp_view *v, const struct gp_view_gpu *g, const double *x)
{
    unsigned first;
    double x0 = gp_det_first(x, v->npoints, &first);
    double inc = gp_det_increase(x, v->npoints);
    if (x0 > 0 && first > 0 && gpu_reporting(v, g, first - 1))
        inc += x0;
    return inc;
}

/* The catalog row of the hardware XIDs counted: the last XID's code
 * where the agent reports one that points at the hardware, else the
 * catalog's "a hardware XID" row (which code is unknown). */
static const struct gp_fault *xid_fault(double xid_last)
{
    if (!isnan(xid_last) && gp_xid_is_hardware(xid_last))
        return gp_fault_xid((unsigned)xid_last);
    return gp_fault_cond(GP_FC_HW_XID);
}

/*
 * HW_ERRORS (above): the number of error findings: hardware XIDs in the
 * window (counter increase, its first appearance counted: xid_increase;
 * else changes of the last-XID code) + 1 for
 * each state that holds at the newest reading: volatile double-bit ECC
 * errors (the volatile counter goes back to 0 only when the GPU is reset,
 * so the alert holds until then, not just while the increase is in the
 * window), pages pending retirement, a row remap pending, a row remap
 * failure, the GPU fallen off the bus. Judged
 * where any of these has a reading. What to do is the fault catalog's
 * (faults.h): the summary ends with the strongest action of the
 * findings, and the alert's runbook is that fault's explanation.
 */
int gp_det_hw_errors(const struct gp_detect_ctx *c)
{
    const struct gp_view *v = c->view;
    unsigned n = v->npoints;
    struct gp_observation o;
    for (unsigned i = 0; i < v->ngpus; i++) {
        const struct gp_view_gpu *g = &v->gpus[i];
        const double *dbe_s = gp_view_gpu_at(v, g, GP_VGM_ECC_DBE);
        const double *xid_s = gp_view_gpu_at(v, g, GP_VGM_XID_TOTAL);
        const double *last_s = gp_view_gpu_at(v, g, GP_VGM_XID_LAST);
        double pend = gp_det_last(gp_view_gpu_at(v, g, GP_VGM_RETIRED_PENDING), n, NULL);
        double rpend = gp_det_last(gp_view_gpu_at(v, g, GP_VGM_REMAP_PENDING), n, NULL);
        double unc = gp_det_last(gp_view_gpu_at(v, g, GP_VGM_REMAP_UNC), n, NULL);
        double fail = gp_det_last(gp_view_gpu_at(v, g, GP_VGM_REMAP_FAILURE), n, NULL);
        double lost = gp_det_last(gp_view_gpu_at(v, g, GP_VGM_LOST), n, NULL);
        double xid_last = gp_det_last(last_s, n, NULL);
        bool have_xid_total = !isnan(gp_det_first(xid_s, n, NULL));
        bool any = have_xid_total || !isnan(xid_last) || !isnan(pend) || !isnan(rpend) ||
                   !isnan(unc) || !isnan(fail) || !isnan(lost) ||
                   !isnan(gp_det_first(dbe_s, n, NULL));
        if (!any)
            continue;
        double dbe_now = gp_det_last(dbe_s, n, NULL);
        double dbe = isnan(dbe_now) ? 0 : dbe_now; /* volatile: since the last reset */
        double xid = have_xid_total ? xid_increase(v, g, xid_s) : xid_changes(last_s, n);
        bool st_pend = pend > 0, st_rpend = rpend > 0, st_unc = unc > 0, st_fail = fail > 0,
             st_lost = lost > 0;
        /* rows already remapped for uncorrectable errors are history, not
         * a fault (the catalog's REMAP_UNCORRECTABLE: the remap worked):
         * named beside the findings, never one */
        double value = (dbe > 0) + xid + st_pend + st_rpend + st_fail + st_lost;
        gp_det_key_gpu(&o, GP_DET_HW_ERRORS, g);
        if (gp_det_judge(c, &o, value, true)) {
            char who[320], win[96], what[256] = "";
            size_t len = 0;
            const struct gp_fault *top = NULL;
            gp_det_gpu_name(g, who, sizeof who);
            gp_det_window_gpu(v, g, 0, win, sizeof win);
            if (st_lost) {
                append(what, sizeof what, &len, "fallen off the bus");
                top = gp_fault_stronger(top, gp_fault_cond(GP_FC_LOST));
                add_fault(&o, gp_fault_cond(GP_FC_LOST));
            }
            if (dbe > 0) {
                append(what, sizeof what, &len, "%.0f uncorrectable ECC %s since the last reset",
                       dbe, gp_plural(dbe, "error", "errors"));
                top = gp_fault_stronger(top, gp_fault_cond(GP_FC_ECC_DBE));
                add_fault(&o, gp_fault_cond(GP_FC_ECC_DBE));
            }
            if (xid > 0) {
                const struct gp_fault *f = xid_fault(xid_last);
                if (f->xid)
                    append(what, sizeof what, &len, "XID %u %s (%.0f XID %s)", f->xid, f->title, xid,
                           gp_plural(xid, "error", "errors"));
                else
                    append(what, sizeof what, &len, "%.0f XID %s", xid, gp_plural(xid, "error", "errors"));
                top = gp_fault_stronger(top, f);
                /* the health states count XIDs per code from the view
                 * (health.h); without per-code counters (a last-XID
                 * reading only) the finding is the reason */
                if (!g->nxids)
                    add_fault(&o, f);
            }
            if (st_pend) {
                append(what, sizeof what, &len, "%.0f %s pending retirement", pend,
                       gp_plural(pend, "page", "pages"));
                top = gp_fault_stronger(top, gp_fault_cond(GP_FC_RETIRED_PENDING));
                add_fault(&o, gp_fault_cond(GP_FC_RETIRED_PENDING));
            }
            if (st_rpend) {
                append(what, sizeof what, &len, "a row remap pending");
                top = gp_fault_stronger(top, gp_fault_cond(GP_FC_REMAP_PENDING));
                add_fault(&o, gp_fault_cond(GP_FC_REMAP_PENDING));
            }
            if (st_unc && value > 0)
                append(what, sizeof what, &len, "%.0f %s remapped for uncorrectable errors", unc,
                       gp_plural(unc, "row", "rows"));
            if (st_fail) {
                append(what, sizeof what, &len, "a row remap failure");
                top = gp_fault_stronger(top, gp_fault_cond(GP_FC_REMAP_FAILURE));
                add_fault(&o, gp_fault_cond(GP_FC_REMAP_FAILURE));
            }
            if (!o.bad)
                o.nfaults = 0;
            if (o.bad && top) {
                gp_det_printf(o.summary, sizeof o.summary, "%s: %s: %s", who, what,
                              gp_fault_action_words[top->action]);
                gp_fault_runbook(top, o.runbook, sizeof o.runbook);
            } else {
                gp_det_printf(o.summary, sizeof o.summary,
                              "%s: no new hardware errors in %s", who, win);
            }
            gp_det_printf(o.evidence, sizeof o.evidence,
                          "over %s: volatile ECC double-bit errors %.0f, hardware XIDs +%.0f%s (last XID "
                          "%.0f), pages pending retirement %.0f, row remap pending %.0f, uncorrectable "
                          "remapped rows %.0f, row remap failure %.0f, lost %.0f; findings %.0f, "
                          "threshold %.0f",
                          win, dbe, xid, have_xid_total ? "" : " (from last-XID changes)",
                          isnan(xid_last) ? 0.0 : xid_last, isnan(pend) ? 0.0 : pend,
                          isnan(rpend) ? 0.0 : rpend, isnan(unc) ? 0.0 : unc,
                          isnan(fail) ? 0.0 : fail, isnan(lost) ? 0.0 : lost, value,
                          c->cfg->threshold);
        }
        int rc = gp_det_emit(c, &o);
        if (rc)
            return rc;
    }
    return GP_OK;
}
