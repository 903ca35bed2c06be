/*
 * funnel.c - the fleet funnel's arithmetic (definitions in funnel.h and
 * docs/api.md "Fleet funnel"). Held time and money are cost.h's
 * accumulators, idle and unused time the job model's gp_jobmodel_busy,
 * so the funnel, /api/v1/cost and the job documents agree on every
 * sample.
 */
#include "query/funnel.h"

#include "lib/err.h"
#include "lib/json.h"
#include "query/jobmodel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gp_funnel_init(struct gp_funnel *f, int64_t start_ms, int64_t end_ms)
{
    memset(f, 0, sizeof *f);
    f->start_ms = start_ms;
    f->end_ms = end_ms;
}

static struct gp_funnel_group *group_of(struct gp_funnel_groups *gs, const char *key)
{
    key = key ? key : "";
    for (size_t i = 0; i < gs->n; i++)
        if (!strncmp(gs->g[i].key, key, GP_FUNNEL_KEY_LEN - 1))
            return &gs->g[i];
    if (gs->n == gs->cap) {
        size_t cap = gs->cap ? gs->cap * 2 : 16;
        struct gp_funnel_group *g = realloc(gs->g, cap * sizeof *g);
        if (!g)
            return NULL;
        gs->g = g;
        gs->cap = cap;
    }
    struct gp_funnel_group *g = &gs->g[gs->n++];
    memset(g, 0, sizeof *g);
    snprintf(g->key, sizeof g->key, "%s", key);
    return g;
}

/* One GPU's time: raw samples (act, n, step_ms: cost.h prices each
 * sample, as /api/v1/cost does) or time already split (rollups). */
struct part {
    const double *act;
    size_t n;
    int64_t step_ms;
    double held, idle, unused, usd_hour;
    const char *job, *user, *team;
};

static void acc_add(struct gp_cost_acc *a, const struct part *p)
{
    if (p->act)
        gp_cost_add_gpu(a, p->act, p->n, p->step_ms, p->usd_hour);
    else
        gp_cost_add_time(a, p->held, p->idle, p->unused, p->usd_hour, true);
}

static int add_part(struct gp_funnel *f, const struct part *p)
{
    acc_add(&f->all, p);
    f->total_s += p->held;
    if (!p->job || !*p->job) {
        acc_add(&f->unallocated, p);
        return GP_OK;
    }
    f->allocated_s += p->held;
    f->active_s += p->held - p->idle;
    f->effective_s += p->held - p->unused;
    acc_add(&f->allocated, p);
    struct gp_funnel_groups *sets[] = {&f->by_job, &f->by_user, &f->by_team};
    const char *keys[] = {p->job, p->user, p->team};
    for (size_t k = 0; k < 3; k++) {
        struct gp_funnel_group *gr = group_of(sets[k], keys[k]);
        if (!gr)
            return GP_ENOMEM;
        gr->gpus++;
        gr->idle_s += p->idle;
        acc_add(&gr->acc, p);
    }
    return GP_OK;
}

int gp_funnel_add(struct gp_funnel *f, const struct gp_funnel_gpu *g)
{
    if (!g->n || g->step_ms <= 0)
        return GP_OK;
    struct part p = {.act = g->act, .n = g->n, .step_ms = g->step_ms,
                     .held = (double)g->n * (double)g->step_ms / 1e3, .idle = NAN, .unused = NAN,
                     .usd_hour = g->usd_hour, .job = g->job, .user = g->user, .team = g->team};
    double step_s = (double)g->step_ms / 1e3;
    for (size_t i = 0; i < g->n; i++)
        gp_jobmodel_busy(&p.idle, &p.unused, g->act[i], step_s);
    return add_part(f, &p);
}

int64_t gp_funnel_rollup_step(const struct gp_rollup *r, size_t n, bool *exact)
{
    uint64_t sum = 0, full = 0, most = 0, first = 0;
    *exact = true;
    for (size_t i = 0; i < n; i++) {
        if (r[i].count > most)
            most = r[i].count;
        if (i == 0 || i + 1 == n || r[i - 1].t != r[i].t - 60000 || r[i + 1].t != r[i].t + 60000)
            continue;
        if (!full)
            first = r[i].count;
        *exact = *exact && r[i].count == first;
        sum += r[i].count;
        full++;
    }
    if (!full) {
        *exact = false; /* a partial minute says nothing of the spacing */
        return most ? (int64_t)llround(60000.0 / (double)most) : 0;
    }
    return (int64_t)llround(60000.0 * (double)full / (double)sum);
}

static double clamp01(double v)
{
    return v < 0 ? 0 : v > 1 ? 1 : v;
}

/* One minute in samples: *idle of them below the idle threshold, *unused
 * the sum of (1 - activity). -1: no usable sample (all NaN, which the raw
 * path drops); 0 exact; 1 estimated (both sides of the threshold, or a
 * NaN or out-of-range sample the sum cannot take apart). */
static int minute_split(const struct gp_rollup *r, double unit, double *idle, double *unused)
{
    if (!r->count || isnan(r->min) || isnan(r->max))
        return -1;
    double c = (double)r->count, lo = r->min / unit, hi = r->max / unit;
    int est = isnan(r->sum) || lo < 0 || hi > 1;
    lo = clamp01(lo);
    hi = clamp01(hi);
    double mean = isnan(r->sum) ? (lo + hi) / 2 : r->sum / unit / c;
    mean = mean < lo ? lo : mean > hi ? hi : mean;
    *unused = (1 - mean) * c;
    if (hi < GP_JOBMODEL_IDLE_ACTIVITY) {
        *idle = c;
    } else if (lo >= GP_JOBMODEL_IDLE_ACTIVITY) {
        *idle = 0;
    } else {
        /* samples at lo and hi with the mean: (mean - lo) / (hi - lo) of
         * them active; at least one on each side */
        double idle_n = (1 - (mean - lo) / (hi - lo)) * c;
        *idle = c >= 2 ? fmin(fmax(idle_n, 1), c - 1) : idle_n;
        est = 1;
    }
    return est;
}

size_t gp_funnel_rollup_cuts(double unit, double cuts[GP_FUNNEL_CUTS])
{
    unit = unit > 0 ? unit : 1;
    /* minute_split's breakpoints: the clamp to 0-1 and the idle threshold */
    cuts[0] = 0;
    cuts[1] = GP_JOBMODEL_IDLE_ACTIVITY * unit;
    cuts[2] = unit;
    return GP_FUNNEL_CUTS;
}

int gp_funnel_add_rollups(struct gp_funnel *f, const struct gp_funnel_gpu_rollups *g)
{
    f->rollups = true;
    bool exact = true;
    int64_t step_ms = g->step_ms > 0 ? g->step_ms : gp_funnel_rollup_step(g->r, g->n, &exact);
    if (step_ms <= 0)
        return GP_OK;
    double step_s = (double)step_ms / 1e3, unsure = 0;
    struct part p = {.usd_hour = g->usd_hour, .job = g->job, .user = g->user, .team = g->team};
    for (size_t i = 0; i < g->n; i++) {
        double idle, unused;
        int est = minute_split(&g->r[i], g->unit > 0 ? g->unit : 1, &idle, &unused);
        if (est < 0)
            continue;
        double held = (double)g->r[i].count * step_s;
        p.held += held;
        p.idle += idle * step_s;
        p.unused += unused * step_s;
        if (est)
            unsure += held;
    }
    if (!exact)
        f->estimated++;
    if (p.held <= 0)
        return GP_OK;
    if (g->job && *g->job)
        f->uncertain_s += unsure;
    return add_part(f, &p);
}

bool gp_funnel_is_zombie(double memory_bytes, int64_t seen_ms, double job_end_s)
{
    return memory_bytes > 0 && isfinite(job_end_s) &&
           (double)seen_ms / 1e3 > job_end_s + GP_FUNNEL_ZOMBIE_GRACE_S;
}

int gp_funnel_zombie(struct gp_funnel *f, const struct gp_funnel_zombie *z)
{
    if (!gp_funnel_is_zombie(z->memory_bytes, z->seen_ms, z->job_end_s))
        return GP_OK;
    if (f->nzombies == f->zcap) {
        size_t cap = f->zcap ? f->zcap * 2 : 8;
        struct gp_funnel_zombie *n = realloc(f->zombies, cap * sizeof *n);
        if (!n)
            return GP_ENOMEM;
        f->zombies = n;
        f->zcap = cap;
    }
    f->zombies[f->nzombies++] = *z;
    return GP_OK;
}

/* The cost (all) or idle cost of an accumulator: 0 without time, NaN
 * when its time had no price. */
static double money(const struct gp_cost_acc *a, int all)
{
    if (a->gpu_seconds <= 0)
        return 0;
    return all ? gp_cost_total(a) : gp_cost_idle(a);
}

double gp_funnel_idle_cost(const struct gp_funnel *f)
{
    double a = money(&f->allocated, 0), u = money(&f->unallocated, 1);
    if (isnan(a) && isnan(u))
        return NAN;
    return (isnan(a) ? 0 : a) + (isnan(u) ? 0 : u);
}

static int group_cmp(const void *pa, const void *pb)
{
    const struct gp_funnel_group *a = pa, *b = pb;
    double x = gp_cost_idle(&a->acc), y = gp_cost_idle(&b->acc);
    x = isnan(x) ? -1 : x;
    y = isnan(y) ? -1 : y;
    if (x != y)
        return x > y ? -1 : 1;
    if (!a->key[0] != !b->key[0])
        return a->key[0] ? -1 : 1; /* unknown last */
    return strcmp(a->key, b->key);
}

static int zombie_cmp(const void *pa, const void *pb)
{
    const struct gp_funnel_zombie *a = pa, *b = pb;
    if (a->memory_bytes != b->memory_bytes)
        return a->memory_bytes > b->memory_bytes ? -1 : 1;
    int c = strcmp(a->node, b->node);
    return c ? c : strcmp(a->pid, b->pid);
}

void gp_funnel_sort(struct gp_funnel *f)
{
    struct gp_funnel_groups *sets[] = {&f->by_job, &f->by_user, &f->by_team};
    for (size_t k = 0; k < 3; k++)
        if (sets[k]->n)
            qsort(sets[k]->g, sets[k]->n, sizeof *sets[k]->g, group_cmp);
    if (f->nzombies)
        qsort(f->zombies, f->nzombies, sizeof *f->zombies, zombie_cmp);
}

static void num(struct gp_buf *b, const char *name, double v)
{
    gp_buf_printf(b, "\"%s\":", name);
    if (isfinite(v))
        gp_buf_put_double(b, v);
    else
        gp_buf_puts(b, "null");
}

static void groups_json(struct gp_buf *b, const char *by, const struct gp_funnel_groups *gs)
{
    gp_buf_printf(b, "\"%s\":[", by);
    for (size_t i = 0; i < gs->n; i++) {
        const struct gp_funnel_group *g = &gs->g[i];
        gp_buf_printf(b, "%s{\"%s\":", i ? "," : "", by);
        if (g->key[0])
            gp_json_str(b, g->key, strlen(g->key));
        else
            gp_buf_puts(b, "null");
        gp_buf_printf(b, ",\"gpus\":%u,", g->gpus);
        num(b, "gpu_hours", g->acc.gpu_seconds / 3600.0);
        gp_buf_putc(b, ',');
        num(b, "idle_gpu_hours", g->idle_s / 3600.0);
        gp_buf_putc(b, ',');
        num(b, "cost", gp_cost_total(&g->acc));
        gp_buf_putc(b, ',');
        num(b, "idle_cost", gp_cost_idle(&g->acc));
        gp_buf_printf(b, ",\"unpriced_gpus\":%u}", g->acc.unpriced);
    }
    gp_buf_putc(b, ']');
}

void gp_funnel_json(const struct gp_funnel *f, struct gp_buf *b)
{
    double range_s = (double)(f->end_ms - f->start_ms) / 1e3;
    const struct {
        const char *name;
        double s;
    } stage[] = {{"total", f->total_s},
                 {"allocated", f->allocated_s},
                 {"active", f->active_s},
                 {"effective", f->effective_s}};
    gp_buf_puts(b, "{\"start\":");
    gp_json_time(b, f->start_ms);
    gp_buf_puts(b, ",\"end\":");
    gp_json_time(b, f->end_ms);
    gp_buf_printf(b, ",\"resolution\":\"%s\",\"approximate\":%s,", f->rollups ? "1m" : "raw",
                  f->uncertain_s > 0 || f->estimated ? "true" : "false");
    num(b, "active_uncertain_gpu_hours", f->uncertain_s / 3600.0);
    gp_buf_puts(b, ",\"gpus\":{");
    for (size_t i = 0; i < 4; i++) {
        if (i)
            gp_buf_putc(b, ',');
        num(b, stage[i].name, range_s > 0 ? stage[i].s / range_s : NAN);
    }
    gp_buf_puts(b, "},\"gpu_hours\":{");
    for (size_t i = 0; i < 4; i++) {
        if (i)
            gp_buf_putc(b, ',');
        num(b, stage[i].name, stage[i].s / 3600.0);
    }
    gp_buf_puts(b, "},");
    num(b, "cost", money(&f->all, 1));
    gp_buf_putc(b, ',');
    num(b, "idle_cost", gp_funnel_idle_cost(f));
    gp_buf_putc(b, ',');
    num(b, "idle_cost_allocated", money(&f->allocated, 0));
    gp_buf_putc(b, ',');
    num(b, "idle_cost_unallocated", money(&f->unallocated, 1));
    gp_buf_printf(b, ",\"unpriced_gpus\":%u,\"currency\":\"USD\",\"idle_cost_by\":{",
                  f->all.unpriced);
    groups_json(b, "job", &f->by_job);
    gp_buf_putc(b, ',');
    groups_json(b, "user", &f->by_user);
    gp_buf_putc(b, ',');
    groups_json(b, "team", &f->by_team);
    double zmem = 0;
    for (size_t i = 0; i < f->nzombies; i++)
        zmem += f->zombies[i].memory_bytes;
    gp_buf_printf(b, "},\"zombie_memory_bytes\":");
    gp_buf_put_double(b, zmem);
    gp_buf_puts(b, ",\"zombies\":[");
    for (size_t i = 0; i < f->nzombies; i++) {
        const struct gp_funnel_zombie *z = &f->zombies[i];
        const struct {
            const char *name, *v;
        } s[] = {{"node", z->node}, {"gpu", z->gpu}, {"pid", z->pid}, {"comm", z->comm}, {"job", z->job}};
        gp_buf_puts(b, i ? ",{" : "{");
        for (size_t k = 0; k < sizeof s / sizeof s[0]; k++) {
            gp_buf_printf(b, "\"%s\":", s[k].name);
            gp_json_str(b, s[k].v, strlen(s[k].v));
            gp_buf_putc(b, ',');
        }
        num(b, "memory_bytes", z->memory_bytes);
        gp_buf_puts(b, ",\"seen\":");
        gp_json_time(b, z->seen_ms);
        gp_buf_puts(b, ",\"job_ended\":");
        gp_json_time(b, (int64_t)llround(z->job_end_s * 1e3));
        gp_buf_putc(b, '}');
    }
    gp_buf_puts(b, "]}");
}

void gp_funnel_free(struct gp_funnel *f)
{
    free(f->by_job.g);
    free(f->by_user.g);
    free(f->by_team.g);
    free(f->zombies);
    memset(f, 0, sizeof *f);
}
