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

int gp_funnel_add(struct gp_funnel *f, const struct gp_funnel_gpu *g)
{
    if (!g->n || g->step_ms <= 0)
        return GP_OK;
    gp_cost_add_gpu(&f->all, g->act, g->n, g->step_ms, g->usd_hour);
    double held = (double)g->n * (double)g->step_ms / 1e3;
    f->total_s += held;
    if (!g->job || !*g->job) {
        gp_cost_add_gpu(&f->unallocated, g->act, g->n, g->step_ms, g->usd_hour);
        return GP_OK;
    }
    double idle = NAN, unused = NAN, step_s = (double)g->step_ms / 1e3;
    for (size_t i = 0; i < g->n; i++)
        gp_jobmodel_busy(&idle, &unused, g->act[i], step_s);
    f->allocated_s += held;
    f->active_s += held - idle;
    f->effective_s += held - unused;
    gp_cost_add_gpu(&f->allocated, g->act, g->n, g->step_ms, g->usd_hour);
    struct gp_funnel_groups *sets[] = {&f->by_job, &f->by_user, &f->by_team};
    const char *keys[] = {g->job, g->user, g->team};
    for (size_t k = 0; k < 3; k++) {
        struct gp_funnel_group *gr = group_of(sets[k], keys[k]);
        if (!gr)
            return GP_ENOMEM;
        gr->gpus++;
        gr->idle_s += idle;
        gp_cost_add_gpu(&gr->acc, g->act, g->n, g->step_ms, g->usd_hour);
    }
    return GP_OK;
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
