/*
 * hosts.c - each node's host figures now: the `hosts` of GET
 * /api/v1/fleet and of the stream's `fleet` event (docs/dashboard.md).
 * The dashboard shows them when the fleet has no GPU, so a machine
 * without one still shows what its agent collects.
 *
 * From the agent's gpulse_host_* series of the last 5 minutes, per node:
 * online CPUs, the share of CPU time not idle (idle and iowait are idle),
 * memory used (total - available) and total, the share of time some task
 * stalled on CPU, memory and I/O (Linux PSI "some"), the 1-minute load,
 * and when the node last reported. A node is the series' Hostname, else
 * hostname, else instance (gpu_series.h); an agent that sends none of
 * them is one node named null.
 *
 * Counters (CPU and stall seconds) become rates over their newest
 * HOSTS_RATE_MS: the increase (a reset counts from zero, as Prometheus's
 * rate) over the time between the first and last sample; null with fewer
 * than two samples. Of several series of one figure (a node's agent
 * relabelled), the newest wins.
 *
 * Cost: one selection of five names for all nodes, then a few reads per
 * node, within what the selection fetched.
 */
#include "server_int.h"

#include "lib/err.h"
#include "lib/metrics.h"
#include "lib/json.h"
#include "server/gpu_series.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HOSTS_LOOKBACK_MS (5 * 60 * 1000)
#define HOSTS_RATE_MS 60000

enum kind { K_CPU, K_CPUS, K_MEM, K_PSI, K_LOAD, K_COUNT };
enum psi { PSI_CPU, PSI_MEMORY, PSI_IO, PSI_COUNT };
static const char *const psi_names[PSI_COUNT] = {"cpu", "memory", "io"};
static const char *const psi_fields[PSI_COUNT] = {"cpu_pressure", "memory_pressure", "io_pressure"};

struct host {
    double cpus, cpu_all, cpu_idle, mem_total, mem_avail, psi[PSI_COUNT], load1;
    int64_t last_seen;
};

static int is(struct gp_str a, const char *b)
{
    return a.len == strlen(b) && !memcmp(a.ptr, b, a.len);
}

/* The per-second increase of counter series id over its newest
 * HOSTS_RATE_MS; NAN with fewer than two samples. */
static double rate(struct gp_storage *st, const struct gp_store_series *s, struct gp_samples *x)
{
    x->n = 0;
    if (gp_storage_read(st, s->id, s->last_ms - HOSTS_RATE_MS, s->last_ms, x) || x->n < 2 ||
        x->t[x->n - 1] <= x->t[0])
        return NAN;
    double inc = 0;
    for (size_t i = 1; i < x->n; i++)
        inc += x->v[i] >= x->v[i - 1] ? x->v[i] - x->v[i - 1] : x->v[i];
    return inc * 1000.0 / (double)(x->t[x->n - 1] - x->t[0]);
}

static double newest(struct gp_storage *st, const struct gp_store_series *s, struct gp_samples *x)
{
    return gp_storage_newest_value(st, s->id, s->last_ms, HOSTS_LOOKBACK_MS, x);
}

/* The node c[i..j): its kinds in order, newest series first. */
static void read_host(struct gp_storage *st, const struct gp_srv_cand *c, size_t i, size_t j,
                      struct gp_samples *x, struct host *h)
{
    *h = (struct host){.cpus = NAN, .mem_total = NAN, .mem_avail = NAN, .psi = {NAN, NAN, NAN},
                       .load1 = NAN};
    struct gp_str modes[16];
    size_t nmodes = 0;
    int cpu_ok = 0;
    for (size_t k = i; k < j; k++) {
        const struct gp_store_series *s = c[k].s;
        if (s->last_ms > h->last_seen)
            h->last_seen = s->last_ms;
        switch (c[k].kind) {
        case K_CPU: {
            struct gp_str mode = gp_srv_label(s, "mode");
            size_t m = 0;
            while (m < nmodes && gp_srv_rw_cmp(modes[m], mode))
                m++;
            if (m < nmodes || nmodes == sizeof modes / sizeof modes[0])
                break; /* an older series of a mode already read */
            modes[nmodes++] = mode;
            double r = rate(st, s, x);
            cpu_ok = (nmodes == 1 || cpu_ok) && isfinite(r); /* every mode's rate, or none */
            if (isfinite(r)) {
                h->cpu_all += r;
                h->cpu_idle += is(mode, "idle") || is(mode, "iowait") ? r : 0;
            }
            break;
        }
        case K_CPUS:
            if (isnan(h->cpus))
                h->cpus = newest(st, s, x);
            break;
        case K_MEM: {
            struct gp_str kind = gp_srv_label(s, "kind");
            double *dst = is(kind, "total") ? &h->mem_total : is(kind, "available") ? &h->mem_avail : NULL;
            if (dst && isnan(*dst))
                *dst = newest(st, s, x);
            break;
        }
        case K_PSI: {
            struct gp_str res = gp_srv_label(s, "resource");
            if (!is(gp_srv_label(s, "kind"), "some"))
                break;
            for (int p = 0; p < PSI_COUNT; p++)
                if (is(res, psi_names[p]) && isnan(h->psi[p]))
                    h->psi[p] = rate(st, s, x);
            break;
        }
        case K_LOAD:
            if (is(gp_srv_label(s, "window"), "1m") && isnan(h->load1))
                h->load1 = newest(st, s, x);
            break;
        }
    }
    if (!cpu_ok || !(h->cpu_all > 0))
        h->cpu_all = NAN;
}

static void host_json(struct gp_buf *b, struct gp_str node, const struct host *h)
{
    gp_buf_puts(b, "{\"node\":");
    if (node.len)
        gp_json_str(b, node.ptr, node.len);
    else
        gp_buf_puts(b, "null");
    gp_srv_put_num(b, "cpus", h->cpus);
    /* shares are clamped: counters read a tick apart can pass 1 by a hair */
    double busy = (h->cpu_all - h->cpu_idle) / h->cpu_all;
    gp_srv_put_num(b, "cpu_busy", isfinite(busy) ? fmin(1, fmax(0, busy)) : NAN);
    double used = h->mem_total - h->mem_avail;
    gp_srv_put_num(b, "memory_used_bytes", used >= 0 ? used : NAN);
    gp_srv_put_num(b, "memory_total_bytes", h->mem_total);
    for (int p = 0; p < PSI_COUNT; p++)
        gp_srv_put_num(b, psi_fields[p], isfinite(h->psi[p]) ? fmin(1, fmax(0, h->psi[p])) : NAN);
    gp_srv_put_num(b, "load1", h->load1);
    gp_buf_puts(b, ",\"last_seen\":");
    gp_json_time(b, h->last_seen);
    gp_buf_putc(b, '}');
}

int gp_srv_hosts_json(struct gp_storage *st, int64_t now, struct gp_buf *out, char *err,
                      size_t errlen)
{
    const char *names[K_COUNT] = {
        [K_CPU] = gp_metric_name(GP_M_HOST_CPU),     [K_CPUS] = gp_metric_name(GP_M_HOST_CPUS),
        [K_MEM] = gp_metric_name(GP_M_HOST_MEMORY),  [K_PSI] = gp_metric_name(GP_M_HOST_PRESSURE),
        [K_LOAD] = gp_metric_name(GP_M_HOST_LOAD),
    };
    struct gp_store_selection sel = {0};
    struct gp_srv_cand *c = NULL;
    struct gp_samples x = {0};
    size_t n = 0;
    int rc = gp_srv_host_series(st, names, K_COUNT, now - HOSTS_LOOKBACK_MS, now, &sel, &c, &n, err,
                                errlen);
    if (!rc) {
        gp_buf_putc(out, '[');
        for (size_t i = 0; i < n;) {
            size_t j = gp_srv_gpu_run(c, n, i, 0);
            struct host h;
            read_host(st, c, i, j, &x, &h);
            if (i)
                gp_buf_putc(out, ',');
            host_json(out, c[i].node, &h);
            i = j;
        }
        gp_buf_putc(out, ']');
    }
    gp_samples_free(&x);
    free(c);
    gp_storage_selection_free(&sel);
    return rc;
}
