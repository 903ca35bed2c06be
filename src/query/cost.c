/*
 * cost.c - prices per model, cost arithmetic and fleet totals (cost.h).
 *
 * The price list parser works on a bounded copy of each entry (names at
 * most GP_PRICE_NAME_LEN - 1 bytes, at most GP_PRICES_MAX entries) and
 * leaves *p empty on any error, so a half-read list never prices a job.
 * Lookups resolve the GPU's modelName through the model table once and
 * compare rows, so "H100", "h100-sxm" and "NVIDIA H100 80GB HBM3" are one
 * entry.
 */
#include "query/cost.h"

#include "lib/err.h"
#include "lib/gpumodels.h"
#include "lib/json.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PRICE_MAX 1e6

/* s[0..n) with blanks cut from both ends. */
static void trim(const char **s, size_t *n)
{
    while (*n && isspace((unsigned char)**s))
        (*s)++, (*n)--;
    while (*n && isspace((unsigned char)(*s)[*n - 1]))
        (*n)--;
}

/* A price in USD from s[0..n): GP_OK or GP_ECONFIG. */
static int parse_usd(const char *s, size_t n, double *out)
{
    char buf[64];
    if (!n || n >= sizeof buf)
        return GP_ECONFIG;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (!isdigit((unsigned char)buf[0]) && buf[0] != '.')
        return GP_ECONFIG; /* no sign, no "nan"/"inf" */
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (*end || errno || !isfinite(v) || v < 0 || v > PRICE_MAX)
        return GP_ECONFIG;
    *out = v;
    return GP_OK;
}

int gp_prices_parse(struct gp_prices *p, const char *list, double gpu_hour_price, char *err,
                    size_t errlen)
{
    memset(p, 0, sizeof *p);
    int have_default = 0;
    const char *s = list ? list : "";
    size_t idx = 0;
    for (int more = *s != '\0'; more;) {
        const char *comma = strchr(s, ',');
        more = comma != NULL;
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        const char *item = s;
        trim(&item, &n);
        idx++;
        s = comma ? comma + 1 : s + strlen(s);
        if (!n) {
            if (!comma && idx == 1)
                break; /* only blanks */
            memset(p, 0, sizeof *p);
            return gp_seterr(err, errlen, GP_ECONFIG, "gpu_prices: entry %zu is empty (stray comma?)",
                             idx);
        }
        const char *eq = memchr(item, '=', n);
        if (!eq) {
            memset(p, 0, sizeof *p);
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "gpu_prices: entry %zu '%.*s' is not MODEL=USD", idx, (int)(n > 60 ? 60 : n),
                             item);
        }
        const char *name = item, *val = eq + 1;
        size_t nlen = (size_t)(eq - item), vlen = n - nlen - 1;
        trim(&name, &nlen);
        trim(&val, &vlen);
        if (!nlen) {
            memset(p, 0, sizeof *p);
            return gp_seterr(err, errlen, GP_ECONFIG, "gpu_prices: entry %zu has no model before '='",
                             idx);
        }
        if (nlen >= GP_PRICE_NAME_LEN) {
            memset(p, 0, sizeof *p);
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "gpu_prices: entry %zu: model name longer than %d bytes", idx,
                             GP_PRICE_NAME_LEN - 1);
        }
        double usd;
        if (parse_usd(val, vlen, &usd)) {
            memset(p, 0, sizeof *p);
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "gpu_prices: price of '%.*s' must be a number of USD from 0 to 1000000, "
                             "not '%.*s'",
                             (int)nlen, name, (int)(vlen > 40 ? 40 : vlen), val);
        }
        char nm[GP_PRICE_NAME_LEN];
        memcpy(nm, name, nlen);
        nm[nlen] = '\0';
        if (!strcasecmp(nm, "default")) {
            if (have_default++) {
                memset(p, 0, sizeof *p);
                return gp_seterr(err, errlen, GP_ECONFIG, "gpu_prices: 'default' is given twice");
            }
            p->fallback = usd;
            continue;
        }
        const struct gp_gpumodel *m = gp_gpumodel_find(nm);
        if (!m && !memchr(nm, ' ', nlen)) {
            char known[512];
            gp_gpumodel_names(known, sizeof known, ", ");
            memset(p, 0, sizeof *p);
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "gpu_prices: unknown model '%s' (known: %s, default; or a driver's full "
                             "device name such as 'NVIDIA Foo 48GB')",
                             nm, known);
        }
        for (size_t i = 0; i < p->n; i++)
            if (m ? p->e[i].model == m : (!p->e[i].model && !strcasecmp(p->e[i].name, nm))) {
                memset(p, 0, sizeof *p);
                return gp_seterr(err, errlen, GP_ECONFIG,
                                 "gpu_prices: model '%s' is priced twice ('%s' is the same model)", nm,
                                 p->e[i].name);
            }
        if (p->n == GP_PRICES_MAX) {
            memset(p, 0, sizeof *p);
            return gp_seterr(err, errlen, GP_ECONFIG, "gpu_prices: more than %d entries",
                             GP_PRICES_MAX);
        }
        struct gp_price *e = &p->e[p->n++];
        memcpy(e->name, nm, nlen + 1);
        e->model = m;
        e->usd = usd;
    }
    if (!have_default)
        p->fallback = gpu_hour_price > 0 && isfinite(gpu_hour_price) ? gpu_hour_price : 0;
    return GP_OK;
}

double gp_prices_of(const struct gp_prices *p, const char *model, size_t len)
{
    char nm[GP_PRICE_NAME_LEN];
    if (!model || len >= sizeof nm)
        len = 0;
    if (len)
        memcpy(nm, model, len);
    nm[len] = '\0';
    const struct gp_gpumodel *m = len ? gp_gpumodel_find(nm) : NULL;
    if (p)
        for (size_t i = 0; i < p->n; i++)
            if (m ? p->e[i].model == m : (len && !p->e[i].model && !strcasecmp(p->e[i].name, nm)))
                return p->e[i].usd;
    if (m && m->price_usd_hour > 0)
        return m->price_usd_hour;
    return p ? p->fallback : 0;
}

static double clamp01(double v) { return v < 0 ? 0 : v > 1 ? 1 : v; }

void gp_cost_add_gpu(struct gp_cost_acc *a, const double *act, size_t n, int64_t step_ms,
                     double usd_hour)
{
    if (!n || step_ms <= 0)
        return;
    double step_s = (double)step_ms / 1e3;
    double held = (double)n * step_s;
    a->gpu_seconds += held;
    int priced = usd_hour > 0 && isfinite(usd_hour);
    if (!priced)
        a->unpriced++;
    if (act)
        a->activity = true;
    if (!priced)
        return;
    double per_s = usd_hour / 3600.0;
    a->priced_seconds += held;
    a->cost += held * per_s;
    if (!act)
        return;
    for (size_t i = 0; i < n; i++) {
        double v = isnan(act[i]) ? 0 : clamp01(act[i]);
        if (v < GP_COST_IDLE_ACTIVITY)
            a->cost_idle += step_s * per_s;
        a->cost_unused += (1 - v) * step_s * per_s;
    }
}

void gp_cost_add_time(struct gp_cost_acc *a, double held_s, double idle_s, double unused_s,
                      double usd_hour, bool activity)
{
    if (!(held_s > 0))
        return;
    a->gpu_seconds += held_s;
    int priced = usd_hour > 0 && isfinite(usd_hour);
    if (!priced)
        a->unpriced++;
    if (activity)
        a->activity = true;
    if (!priced)
        return;
    double per_s = usd_hour / 3600.0;
    a->priced_seconds += held_s;
    a->cost += held_s * per_s;
    if (!activity)
        return;
    a->cost_idle += idle_s * per_s;
    a->cost_unused += unused_s * per_s;
}

double gp_cost_total(const struct gp_cost_acc *a)
{
    return a->priced_seconds > 0 ? a->cost : NAN;
}

double gp_cost_idle(const struct gp_cost_acc *a)
{
    return a->priced_seconds > 0 && a->activity ? a->cost_idle : NAN;
}

double gp_cost_unused(const struct gp_cost_acc *a)
{
    return a->priced_seconds > 0 && a->activity ? a->cost_unused : NAN;
}

int gp_cost_project(double cost_so_far, double cost_per_hour, double target, double step,
                    double steps_per_second, double *seconds_left, double *cost_total)
{
    *seconds_left = *cost_total = NAN;
    if (!(target > 0) || !isfinite(target) || !isfinite(step) || !isfinite(cost_so_far) ||
        !isfinite(cost_per_hour) || cost_per_hour < 0)
        return 0;
    if (step >= target) {
        *seconds_left = 0;
        *cost_total = cost_so_far;
        return 1;
    }
    if (!(steps_per_second > 0) || !isfinite(steps_per_second))
        return 0;
    *seconds_left = (target - step) / steps_per_second;
    *cost_total = cost_so_far + *seconds_left / 3600.0 * cost_per_hour;
    return 1;
}

static void fleet_add_to(struct gp_fleet_totals *t, const struct gp_fleet_gpu *g,
                         const struct gp_gpumodel *m, double price)
{
    t->gpus++;
    double act = isfinite(g->activity) ? clamp01(g->activity) : NAN;
    if (!m)
        t->unknown_model++;
    if (g->allocated)
        t->allocated++;
    if (isnan(act)) {
        t->unknown_activity++;
    } else if (act >= GP_COST_IDLE_ACTIVITY) {
        t->busy++;
    } else {
        t->idle++;
        if (g->allocated)
            t->allocated_idle++;
    }
    double eff = isfinite(g->effective_tflops) ? g->effective_tflops
                 : m && !isnan(act)             ? act * m->tensor_tflops
                                                : 0;
    t->effective_tflops += eff;
    if (m) {
        double h = gp_gpumodel_h100_equivalents(m);
        t->peak_tflops += m->tensor_tflops;
        t->h100_total += h;
        if (g->allocated)
            t->h100_allocated += h;
        if (!isnan(act))
            t->h100_used += h * act;
    }
    if (price > 0) {
        t->cost_per_hour += price;
        if (!isnan(act)) {
            if (act < GP_COST_IDLE_ACTIVITY)
                t->idle_cost_per_hour += price;
            t->wasted_cost_per_hour += price * (1 - act);
        }
    } else {
        t->unpriced++;
    }
}

int gp_fleet_add(struct gp_fleet *fl, const struct gp_fleet_gpu *g, const struct gp_prices *p)
{
    const char *name = g->model ? g->model : "";
    const struct gp_gpumodel *m = *name ? gp_gpumodel_find(name) : NULL;
    char key[GP_PRICE_NAME_LEN];
    snprintf(key, sizeof key, "%s", m ? m->short_name : *name ? name : "unknown");
    struct gp_fleet_totals *t = NULL;
    for (size_t i = 0; i < fl->nmodels && !t; i++)
        if (!strcmp(fl->models[i].model, key))
            t = &fl->models[i];
    if (!t) {
        if (fl->nmodels == fl->cap) {
            size_t nc = fl->cap ? fl->cap * 2 : 8;
            struct gp_fleet_totals *nm = realloc(fl->models, nc * sizeof *nm);
            if (!nm)
                return GP_ENOMEM;
            fl->models = nm;
            fl->cap = nc;
        }
        t = &fl->models[fl->nmodels++];
        memset(t, 0, sizeof *t);
        memcpy(t->model, key, sizeof key);
    }
    double price = gp_prices_of(p, name, strlen(name));
    fleet_add_to(t, g, m, price);
    fleet_add_to(&fl->all, g, m, price);
    return GP_OK;
}

static void num(struct gp_buf *b, const char *name, double v)
{
    gp_buf_printf(b, ",\"%s\":", name);
    if (isfinite(v))
        gp_buf_put_double(b, v);
    else
        gp_buf_puts(b, "null");
}

static void totals_json(const struct gp_fleet_totals *t, struct gp_buf *b, int with_model)
{
    gp_buf_putc(b, '{');
    if (with_model) {
        gp_buf_puts(b, "\"model\":");
        gp_json_str(b, t->model, strlen(t->model));
        gp_buf_putc(b, ',');
    }
    gp_buf_printf(b,
                  "\"gpus\":%u,\"busy\":%u,\"idle\":%u,\"allocated\":%u,\"allocated_idle\":%u,"
                  "\"unknown_activity\":%u,\"unknown_model\":%u",
                  t->gpus, t->busy, t->idle, t->allocated, t->allocated_idle, t->unknown_activity,
                  t->unknown_model);
    num(b, "effective_tflops", t->effective_tflops);
    num(b, "peak_tflops", t->peak_tflops);
    num(b, "h100_equivalents", t->h100_total);
    num(b, "h100_equivalents_allocated", t->h100_allocated);
    num(b, "h100_equivalents_used", t->h100_used);
    /* With no price at all the spend is unknown, not 0. */
    int priced = t->unpriced < t->gpus;
    num(b, "cost_per_hour", priced ? t->cost_per_hour : NAN);
    num(b, "idle_cost_per_hour", priced ? t->idle_cost_per_hour : NAN);
    num(b, "wasted_cost_per_hour", priced ? t->wasted_cost_per_hour : NAN);
    gp_buf_printf(b, ",\"unpriced\":%u,\"currency\":\"USD\"}", t->unpriced);
}

void gp_fleet_json_members(const struct gp_fleet *fl, struct gp_buf *out)
{
    gp_buf_puts(out, "\"overall\":");
    totals_json(&fl->all, out, 0);
    gp_buf_puts(out, ",\"models\":[");
    for (size_t i = 0; i < fl->nmodels; i++) {
        if (i)
            gp_buf_putc(out, ',');
        totals_json(&fl->models[i], out, 1);
    }
    gp_buf_putc(out, ']');
}

void gp_fleet_json(const struct gp_fleet *fl, struct gp_buf *out)
{
    gp_buf_putc(out, '{');
    gp_fleet_json_members(fl, out);
    gp_buf_putc(out, '}');
}

void gp_fleet_free(struct gp_fleet *fl)
{
    if (!fl)
        return;
    free(fl->models);
    memset(fl, 0, sizeof *fl);
}
