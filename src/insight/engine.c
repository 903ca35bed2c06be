/*
 * engine.c - the evaluation engine (engine.h): the incremental view, the
 * tick (detectors, rules, alerts), its thread, and the detector settings
 * from the server keys.
 *
 * Layout. Every GPU of the view has, after its GP_VGM__COUNT rows, three
 * raw rows (FB_USED and FB_FREE, in bytes, that the MEM_* fallbacks read,
 * and the application XIDs' sum, kept only so their per-code counters
 * reach the view's xids); detectors never index past GP_VGM__COUNT. The engine keeps, parallel
 * to view.gpus and view.procs, an entity record with the series that
 * feed it (store id, row, how it combines, scale). Three open-addressing
 * maps find a series by id and an entity by the 64-bit hash of its key;
 * they are rebuilt whenever entities or series leave (compaction), which
 * is rare next to the ticks that only add.
 *
 * Several servers on one cluster (docs/storage.md): with a server name
 * (gp_storage_server_name), the view holds this server's own GPUs (its
 * window) and, for each job that also has ranks behind other servers and
 * that this server leads (its name sorts first among those servers'
 * gpulse_server values), the other servers' GPUs and ranks of that job,
 * read from the cluster ("peer" entities). Per-GPU, per-node and
 * rank-local detectors speak only of own entities; job-level ones
 * (scope JOB, and straggler) only of jobs this server does not follow,
 * so each alert is raised once, by one server, from the whole job.
 */
#include "insight/engine.h"

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "lib/strset.h"
#include "store/labels.h"
#include "lib/duration.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIB 1048576.0
#define GROW_FB_USED GP_VGM__COUNT
#define GROW_FB_FREE (GP_VGM__COUNT + 1)
#define GROW_XID_APP (GP_VGM__COUNT + 2) /* application XIDs: per code only */
#define GPU_ROWS (GP_VGM__COUNT + 3)
#define PROC_ROWS GP_VPM__COUNT
#define MAX_POINTS 10000

enum combine { C_NEWEST, C_MAX, C_SUM };
enum route { R_GPU, R_PROC, R_REASONS, R_ALLOC, R_PHASE };

/* One metric name the engine selects, and where its series go. */
struct metric {
    const char *name;
    enum route route;
    int row;                   /* R_GPU / R_PROC */
    enum combine comb;
    double scale;
    struct gp_matcher m;
};

struct eser {
    uint32_t id;
    uint32_t xid;              /* an XID counter's code (view.h xids); 0 none */
    uint16_t row;
    uint8_t comb;
    double scale;
    uint64_t seen;             /* tick it was last selected */
};

struct ent {
    uint64_t key;
    struct eser *s;
    unsigned ns, caps;
    uint64_t seen;
    int64_t label_t;           /* last_ms of the series its labels came from */
    bool peer;                 /* another server's, in the view for a job this one leads */
};

/* uint64 -> uint64, open addressing; key UINT64_MAX is the empty slot. */
struct omap {
    uint64_t *k, *v;
    size_t cap, n;
};

struct gp_engine {
    struct gp_engine_options o;
    struct metric *metrics;
    size_t nmetrics;
    struct gp_view view;
    struct ent *gents, *pents;
    struct omap ids, gkeys, pkeys;
    unsigned npoints;
    int64_t lookback_ms, margin_ms;
    int64_t prev_end;
    bool built;
    uint64_t tick_no;
    int64_t *scratch;          /* GPU_ROWS x npoints sample times */
    struct gp_samples smp;
    uint64_t nseries;

    pthread_t thread;
    bool started;
    pthread_mutex_t mu;        /* stats and the stop flag */
    pthread_cond_t cv;
    bool stop;
    struct gp_engine_stats st;

    /* several servers on one cluster (see the top) */
    const char *server;        /* this one's name; NULL: the only server */
    struct omap roles;         /* key_of(job) -> ROLE_*, this tick */
    struct omap jfirst;        /* key_of(job) -> t_end its own part was first seen */
    struct omap pnodes;        /* key_of(node) of peer entities */
    struct gp_store_selection *psel; /* peers' selections, read by fill() */
    size_t npsel;
};

/* A job's role here, from the gpulse_server values the cluster shows for
 * it: SEEN_* bits while gathered, then one of ROLE_*. Until the cluster
 * shows this server's own series of the job, the others' may not be
 * there yet either: the job is not judged (ROLE_WAIT). Nor while it
 * shows fewer ranks than the job's world_size (another server's part may
 * reach the cluster later than this one's: judged alone, its ranks could
 * raise a job-level alert its leader would not), for at most JOB_SETTLE_MS
 * from when this server's own part appeared; a job without world_size
 * waits that long (its parts cannot be counted). */
enum { SEEN_OWN = 1, SEEN_AFTER = 2, SEEN_BEFORE = 4 };
enum { ROLE_WAIT = 8, ROLE_ALONE, ROLE_LEAD, ROLE_FOLLOW };
#define JOB_SETTLE_MS 60000

static void free_peer_selections(struct gp_engine *e);

/* ---- maps ---- */

static void omap_free(struct omap *m)
{
    free(m->k);
    free(m->v);
    memset(m, 0, sizeof *m);
}

static void omap_clear(struct omap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        m->k[i] = UINT64_MAX;
    m->n = 0;
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static uint64_t *omap_get(const struct omap *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    for (size_t i = mix(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->k[i] == key)
            return &m->v[i];
        if (m->k[i] == UINT64_MAX)
            return NULL;
    }
}

static int omap_put(struct omap *m, uint64_t key, uint64_t val)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 1024;
        struct omap n = {malloc(nc * sizeof *n.k), malloc(nc * sizeof *n.v), nc, 0};
        if (!n.k || !n.v) {
            omap_free(&n);
            return GP_ENOMEM;
        }
        omap_clear(&n);
        for (size_t i = 0; i < m->cap; i++)
            if (m->k[i] != UINT64_MAX)
                omap_put(&n, m->k[i], m->v[i]);
        omap_free(m);
        *m = n;
    }
    size_t i = mix(key) & (m->cap - 1);
    while (m->k[i] != UINT64_MAX && m->k[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (m->k[i] == UINT64_MAX)
        m->n++;
    m->k[i] = key;
    m->v[i] = val;
    return GP_OK;
}

static uint64_t fnv(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    h ^= 0x1f;
    return h * 0x100000001b3ULL;
}

/* Keys never reach UINT64_MAX (the empty slot). */
static uint64_t key_of(const char *a, const char *b, const char *c, const char *d)
{
    uint64_t h = fnv(fnv(fnv(fnv(0xcbf29ce484222325ULL, a), b), c), d);
    return h == UINT64_MAX ? h - 1 : h;
}

/* ---- options and setup ---- */

static int add_metric(struct gp_engine *e, const char *name, enum route r, int row, enum combine c,
                      double scale)
{
    for (size_t i = 0; i < e->nmetrics; i++)
        if (!strcmp(e->metrics[i].name, name))
            return GP_OK; /* routed by labels: selected once */
    struct metric *m = &e->metrics[e->nmetrics];
    *m = (struct metric){.name = name, .route = r, .row = row, .comb = c, .scale = scale};
    if (gp_matcher_init(&m->m, GP_MATCH_EQ, "__name__", name, NULL, 0))
        return GP_ENOMEM;
    e->nmetrics++;
    return GP_OK;
}

static int setup_metrics(struct gp_engine *e)
{
    e->metrics = calloc(GP_VGM__COUNT + GP_VPM__COUNT + 4, sizeof *e->metrics);
    if (!e->metrics)
        return GP_ENOMEM;
    static const struct {
        const char *name;
        double scale;
    } gm[] = {
#define GP_ENG_GM_(id, name, scale) {name, scale},
        GP_VIEW_GPU_METRICS(GP_ENG_GM_)
#undef GP_ENG_GM_
    }, pm[] = {
#define GP_ENG_PM_(id, name, scale) {name, scale},
        GP_VIEW_PROC_METRICS(GP_ENG_PM_)
#undef GP_ENG_PM_
    };
    int rc = GP_OK;
    for (int i = 0; i < GP_VGM__COUNT && !rc; i++) {
        if (i == GP_VGM_THROTTLE_THERMAL || i == GP_VGM_THROTTLE_POWER)
            rc = add_metric(e, gm[i].name, R_REASONS, -1, C_MAX, 1);
        else
            rc = add_metric(e, gm[i].name, R_GPU, i, i == GP_VGM_XID_TOTAL ? C_SUM : C_NEWEST,
                            gm[i].scale);
    }
    if (!rc)
        rc = add_metric(e, "DCGM_FI_DEV_FB_USED", R_GPU, GROW_FB_USED, C_NEWEST, MIB);
    if (!rc)
        rc = add_metric(e, "DCGM_FI_DEV_FB_FREE", R_GPU, GROW_FB_FREE, C_NEWEST, MIB);
    for (int i = 0; i < GP_VPM__COUNT && !rc; i++) {
        if (i == GP_VPM_ALLOCATED || i == GP_VPM_RESERVED)
            rc = add_metric(e, pm[i].name, R_ALLOC, -1, C_SUM, 1);
        else if (i == GP_VPM_CHECKPOINT)
            rc = add_metric(e, pm[i].name, R_PHASE, -1, C_NEWEST, 1);
        else
            rc = add_metric(e, pm[i].name, R_PROC, i, C_NEWEST, pm[i].scale);
    }
    return rc;
}

int gp_engine_new(struct gp_engine **out, const struct gp_engine_options *o, char *err,
                  size_t errlen)
{
    *out = NULL;
    if (!o->store || !o->alerts)
        return gp_seterr(err, errlen, GP_EUSAGE, "the engine needs a store and alerts");
    if (o->step_ms < 100 || o->interval_ms < 100)
        return gp_seterr(err, errlen, GP_EUSAGE, "eval_step and eval_interval must be at least 100ms");
    if (o->window_ms < o->step_ms || o->window_ms % o->step_ms)
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "eval_window must be a whole number of eval_step (at least one)");
    if (o->window_ms / o->step_ms + 1 > MAX_POINTS)
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "eval_window / eval_step gives more than %d points", MAX_POINTS);
    if (o->clear_for_ms < 0)
        return gp_seterr(err, errlen, GP_EUSAGE, "alert_clear_for must not be negative");
    struct gp_engine *e = calloc(1, sizeof *e);
    if (!e)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    e->o = *o;
    e->server = gp_storage_server_name(o->store);
    e->npoints = (unsigned)(o->window_ms / o->step_ms + 1);
    e->lookback_ms = 2 * o->step_ms > 60000 ? 2 * o->step_ms : 60000;
    e->margin_ms = 2 * o->step_ms > 30000 ? 2 * o->step_ms : 30000;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    e->scratch = malloc((size_t)GPU_ROWS * e->npoints * sizeof *e->scratch);
    if (!e->scratch || setup_metrics(e) ||
        gp_view_init(&e->view, e->npoints, 0, o->step_ms)) {
        gp_engine_close(e);
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    }
    *out = e;
    return GP_OK;
}

static void *thread_main(void *arg);

int gp_engine_start(struct gp_engine *e)
{
    if (pthread_create(&e->thread, NULL, thread_main, e))
        return GP_ENOMEM;
    e->started = true;
    return GP_OK;
}

static void free_ents(struct ent *a, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        free(a[i].s);
    free(a);
}

void gp_engine_close(struct gp_engine *e)
{
    if (!e)
        return;
    if (e->started) {
        pthread_mutex_lock(&e->mu);
        e->stop = true;
        pthread_cond_signal(&e->cv);
        pthread_mutex_unlock(&e->mu);
        pthread_join(e->thread, NULL);
    }
    for (size_t i = 0; i < e->nmetrics; i++)
        gp_matcher_free(&e->metrics[i].m);
    free(e->metrics);
    free_ents(e->gents, e->view.ngpus);
    free_ents(e->pents, e->view.nprocs);
    gp_view_free(&e->view);
    omap_free(&e->ids);
    omap_free(&e->gkeys);
    omap_free(&e->pkeys);
    free_peer_selections(e);
    omap_free(&e->roles);
    omap_free(&e->jfirst);
    omap_free(&e->pnodes);
    free(e->psel);
    free(e->scratch);
    gp_samples_free(&e->smp);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    free(e);
}

const struct gp_view *gp_engine_view(const struct gp_engine *e) { return &e->view; }

/* ---- the view ---- */

/* Label name as a C string into out ("" when absent or too long). */
static void label(const struct gp_store_series *s, const char *name, char *out, size_t len)
{
    struct gp_str v;
    out[0] = '\0';
    if (gp_labels_get(s->labels, s->labels_len, name, &v) == 1 && v.len < len) {
        memcpy(out, v.ptr, v.len);
        out[v.len] = '\0';
    }
}

static int32_t label_int(const struct gp_store_series *s, const char *name, int32_t def)
{
    char t[24];
    label(s, name, t, sizeof t);
    char *end;
    long x = strtol(t, &end, 10);
    return t[0] && !*end && x >= 0 && x <= INT32_MAX ? (int32_t)x : def;
}

static void node_of(const struct gp_store_series *s, char *out, size_t len)
{
    label(s, "Hostname", out, len);
    if (!out[0])
        label(s, "hostname", out, len);
}

/* The entity for series s (created when new): its index, or -1 when the
 * series cannot be placed (no gpu label), -2 when out of memory. */
static long gpu_entity(struct gp_engine *e, const struct gp_store_series *s)
{
    char node[GP_VIEW_NODE_LEN], gpu[16], uuid[96];
    node_of(s, node, sizeof node);
    label(s, "gpu", gpu, sizeof gpu);
    label(s, "UUID", uuid, sizeof uuid);
    if (!gpu[0])
        return -1;
    uint64_t key = key_of(node, gpu, uuid, "");
    uint64_t *v = omap_get(&e->gkeys, key);
    if (v)
        return (long)*v;
    unsigned n = e->view.ngpus;
    if (!(n & (n - 1)) || n < 8) { /* the view grows by doubling from 8: follow it */
        struct ent *ne = realloc(e->gents, (n < 8 ? 8 : (size_t)n * 2) * sizeof *ne);
        if (!ne)
            return -2;
        e->gents = ne;
    }
    struct gp_view_gpu *g = gp_view_add_gpu(&e->view);
    if (!g)
        return -2;
    double *v2 = realloc(g->v, (size_t)GPU_ROWS * e->npoints * sizeof *v2);
    if (!v2) {
        free(g->v);
        e->view.ngpus--;
        return -2;
    }
    g->v = v2;
    for (size_t i = (size_t)GP_VGM__COUNT * e->npoints; i < (size_t)GPU_ROWS * e->npoints; i++)
        v2[i] = NAN;
    snprintf(g->node, sizeof g->node, "%s", node);
    snprintf(g->gpu, sizeof g->gpu, "%s", gpu);
    snprintf(g->uuid, sizeof g->uuid, "%s", uuid);
    memset(&e->gents[n], 0, sizeof e->gents[n]);
    e->gents[n].key = key;
    e->gents[n].label_t = INT64_MIN;
    if (omap_put(&e->gkeys, key, n))
        return -2;
    return (long)n;
}

static long proc_entity(struct gp_engine *e, const struct gp_store_series *s)
{
    char node[GP_VIEW_NODE_LEN], job[GP_JOB_LEN], rank[24], pid[24];
    node_of(s, node, sizeof node);
    label(s, "job", job, sizeof job);
    label(s, "rank", rank, sizeof rank);
    label(s, "pid", pid, sizeof pid);
    uint64_t key = key_of(job, rank, node, pid);
    uint64_t *v = omap_get(&e->pkeys, key);
    if (v)
        return (long)*v;
    unsigned n = e->view.nprocs;
    if (!(n & (n - 1)) || n < 8) {
        struct ent *ne = realloc(e->pents, (n < 8 ? 8 : (size_t)n * 2) * sizeof *ne);
        if (!ne)
            return -2;
        e->pents = ne;
    }
    struct gp_view_proc *p = gp_view_add_proc(&e->view);
    if (!p)
        return -2;
    snprintf(p->node, sizeof p->node, "%s", node);
    snprintf(p->job, sizeof p->job, "%s", job);
    p->rank = label_int(s, "rank", -1);
    char *end;
    unsigned long x = strtoul(pid, &end, 10);
    p->pid = pid[0] && !*end && x <= UINT32_MAX ? (uint32_t)x : 0;
    memset(&e->pents[n], 0, sizeof e->pents[n]);
    e->pents[n].key = key;
    e->pents[n].label_t = INT64_MIN;
    if (omap_put(&e->pkeys, key, n))
        return -2;
    return (long)n;
}

/* Takes a GPU's identity labels from s when s is its newest series. */
static void gpu_labels(struct gp_engine *e, unsigned gi, const struct gp_store_series *s)
{
    struct ent *en = &e->gents[gi];
    if (s->last_ms <= en->label_t)
        return;
    en->label_t = s->last_ms;
    struct gp_view_gpu *g = &e->view.gpus[gi];
    char model[96];
    label(s, "modelName", model, sizeof model);
    if (model[0] && strcmp(model, g->model)) {
        snprintf(g->model, sizeof g->model, "%s", model);
        g->spec = gp_gpumodel_find(model);
    }
    label(s, "job", g->job, sizeof g->job);
    g->rank = label_int(s, "rank", -1);
    char sim[8];
    label(s, "simulated", sim, sizeof sim);
    g->simulated = !strcmp(sim, "true");
}

/* Where series s of metric m goes: row and combine, or -1 to skip it. */
static int route(const struct metric *m, const struct gp_store_series *s, enum combine *comb)
{
    *comb = m->comb;
    char v[48];
    switch (m->route) {
    case R_GPU:
        /* the agent counts every XID; the row counts hardware XIDs only
         * (an application's XID 13 is no reason to drain a node), the
         * per-code counters (health.h) all of them */
        if (m->row == GP_VGM_XID_TOTAL) {
            label(s, "xid", v, sizeof v);
            char *end;
            double x = strtod(v, &end);
            if (v[0] && !*end && !gp_xid_is_hardware(x))
                return GROW_XID_APP;
        }
        return m->row;
    case R_PROC:
        return m->row;
    case R_REASONS:
        label(s, "reason", v, sizeof v);
        if (!strcmp(v, "hw_thermal_slowdown") || !strcmp(v, "sw_thermal_slowdown"))
            return GP_VGM_THROTTLE_THERMAL;
        if (!strcmp(v, "sw_power_cap") || !strcmp(v, "hw_power_brake_slowdown"))
            return GP_VGM_THROTTLE_POWER;
        return -1;
    case R_ALLOC:
        label(s, "kind", v, sizeof v);
        if (!strcmp(v, "allocated"))
            return GP_VPM_ALLOCATED;
        if (!strcmp(v, "reserved"))
            return GP_VPM_RESERVED;
        return -1;
    case R_PHASE:
        label(s, "phase", v, sizeof v);
        return !strcmp(v, "checkpoint") ? GP_VPM_CHECKPOINT : -1;
    }
    return -1;
}

static int add_series(struct ent *en, uint32_t id, uint32_t xid, int row, enum combine c,
                      double scale, uint64_t tick)
{
    if (en->ns == en->caps) {
        unsigned nc = en->caps ? en->caps * 2 : 8;
        struct eser *n = realloc(en->s, nc * sizeof *n);
        if (!n)
            return GP_ENOMEM;
        en->s = n;
        en->caps = nc;
    }
    en->s[en->ns++] = (struct eser){id, xid, (uint16_t)row, (uint8_t)c, scale, tick};
    return GP_OK;
}

#define IS_PROC (UINT64_C(1) << 63)

/* Places the new series of one metric's selection (peer: another
 * server's, for a job this one leads). */
static int place(struct gp_engine *e, const struct metric *m, const struct gp_store_selection *sel,
                 bool peer)
{
    int rc = GP_OK;
    bool proc = m->route == R_PROC || m->route == R_ALLOC || m->route == R_PHASE;
    for (size_t i = 0; i < sel->n && !rc; i++) {
        const struct gp_store_series *s = &sel->series[i];
        uint64_t *v = omap_get(&e->ids, s->id);
        if (v) {
            unsigned ei = (unsigned)(*v >> 32 & 0x7fffffff), si = (unsigned)*v;
            struct ent *en = (*v & IS_PROC) ? &e->pents[ei] : &e->gents[ei];
            en->s[si].seen = e->tick_no;
            en->seen = e->tick_no;
            if (!(*v & IS_PROC))
                gpu_labels(e, ei, s);
            continue;
        }
        enum combine c;
        int row = route(m, s, &c);
        if (row < 0)
            continue;
        long ei = proc ? proc_entity(e, s) : gpu_entity(e, s);
        if (ei == -1)
            continue;
        if (ei < 0)
            return GP_ENOMEM;
        struct ent *en = proc ? &e->pents[ei] : &e->gents[ei];
        en->seen = e->tick_no;
        en->peer |= peer;
        uint32_t xid = 0;
        if (row == GP_VGM_XID_TOTAL || row == GROW_XID_APP) {
            char code[16], *end;
            label(s, "xid", code, sizeof code);
            unsigned long x = strtoul(code, &end, 10);
            xid = code[0] && !*end && x > 0 && x < UINT32_MAX ? (uint32_t)x : 0;
        }
        if ((rc = add_series(en, s->id, xid, row, c, m->scale, e->tick_no)) ||
            (rc = omap_put(&e->ids, s->id,
                           (proc ? IS_PROC : 0) | (uint64_t)ei << 32 | (en->ns - 1))))
            break;
        e->nseries++;
        if (!proc)
            gpu_labels(e, (unsigned)ei, s);
    }
    return rc;
}

/* Appends s to b as a regular expression that matches it literally. */
static void re_quote(struct gp_buf *b, const char *s)
{
    for (; *s; s++) {
        if (strchr("\\.+*?()|[]{}^$", *s))
            gp_buf_putc(b, '\\');
        gp_buf_putc(b, *s);
    }
}

static void add_job(void *arg, const char *job, size_t len)
{
    struct gp_buf *b = arg;
    char tmp[GP_JOB_LEN];
    if (len >= sizeof tmp)
        return;
    memcpy(tmp, job, len);
    tmp[len] = '\0';
    if (b->len)
        gp_buf_putc(b, '|');
    re_quote(b, tmp);
}

static void free_peer_selections(struct gp_engine *e)
{
    for (size_t i = 0; i < e->npsel; i++)
        gp_storage_selection_free(&e->psel[i]);
    free(e->psel);
    e->psel = NULL;
    e->npsel = 0;
}

/* The nodes of peer entities, for det_emit. */
static int index_peer_nodes(struct gp_engine *e)
{
    omap_clear(&e->pnodes);
    int rc = GP_OK;
    for (unsigned i = 0; !rc && i < e->view.ngpus; i++)
        if (e->gents[i].peer)
            rc = omap_put(&e->pnodes, key_of(e->view.gpus[i].node, "", "", ""), 1);
    for (unsigned i = 0; !rc && i < e->view.nprocs; i++)
        if (e->pents[i].peer)
            rc = omap_put(&e->pnodes, key_of(e->view.procs[i].node, "", "", ""), 1);
    return rc;
}

/*
 * Several servers (see the top): sets each own job's role from the
 * servers the cluster names for it (gpulse_job_info's gpulse_server
 * values over the window), then selects the other servers' series of the
 * jobs this one leads, one request per metric, and places them as peers.
 */
static int select_peers(struct gp_engine *e, int64_t mint, int64_t t_end, int64_t since)
{
    omap_clear(&e->roles);
    struct gp_strset own = {0};
    for (unsigned i = 0; i < e->view.ngpus; i++)
        if (!e->gents[i].peer && e->gents[i].seen == e->tick_no && e->view.gpus[i].job[0])
            gp_strset_add(&own, e->view.gpus[i].job, strlen(e->view.gpus[i].job));
    for (unsigned i = 0; i < e->view.nprocs; i++)
        if (!e->pents[i].peer && e->pents[i].seen == e->tick_no && e->view.procs[i].job[0])
            gp_strset_add(&own, e->view.procs[i].job, strlen(e->view.procs[i].job));
    struct gp_buf jobs;
    gp_buf_init(&jobs, 0);
    gp_strset_each(&own, add_job, &jobs);
    int rc = own.err ? own.err : jobs.err ? GP_ENOMEM : GP_OK;
    gp_strset_free(&own);
    if (rc || !jobs.len) {
        gp_buf_free(&jobs);
        return rc;
    }
    gp_buf_putc(&jobs, '\0');
    char err[256];
    /* pm[0]: the metric (borrowed for the peers' selections), pm[1]: the
     * jobs, pm[2]: not this server */
    struct gp_matcher info, pm[3];
    bool have_info = false, have_jobs = false, have_srv = false;
    rc = jobs.err ? GP_ENOMEM : gp_matcher_init(&info, GP_MATCH_EQ, "__name__", "gpulse_job_info", err, sizeof err);
    have_info = !rc;
    if (!rc && !(rc = gp_matcher_init(&pm[1], GP_MATCH_RE, "job", jobs.data, err, sizeof err)))
        have_jobs = true;
    if (!rc && !(rc = gp_matcher_init(&pm[2], GP_MATCH_NE, "gpulse_server", e->server, err, sizeof err)))
        have_srv = true;
    gp_buf_free(&jobs);
    /* Who holds these jobs: the series' names are enough (since = t_end:
     * no samples move). */
    struct gp_store_selection who = {0};
    if (!rc) {
        pm[0] = info;
        rc = gp_storage_select_since(e->o.store, pm, 2, mint, t_end, t_end, &who);
    }
    struct gp_buf lead;
    gp_buf_init(&lead, 0);
    /* per job: its ranks the cluster shows (keyed job and rank), how
     * many, and the largest world_size they state */
    struct omap rk = {0}, nranks = {0}, world = {0}, first = {0};
    for (size_t i = 0; !rc && i < who.n; i++) {
        char job[GP_JOB_LEN], srv[64], rank[32], ws[32];
        label(&who.series[i], "job", job, sizeof job);
        label(&who.series[i], "gpulse_server", srv, sizeof srv);
        if (!job[0] || !srv[0])
            continue;
        uint64_t k = key_of(job, "", "", "");
        uint64_t *r = omap_get(&e->roles, k);
        int c = strcmp(srv, e->server);
        uint64_t seen = (r ? *r : 0) | (c < 0 ? SEEN_BEFORE : c > 0 ? SEEN_AFTER : SEEN_OWN);
        rc = omap_put(&e->roles, k, seen);
        label(&who.series[i], "rank", rank, sizeof rank);
        label(&who.series[i], "world_size", ws, sizeof ws);
        uint64_t kr = key_of(job, "\x1f", rank, "");
        if (!rc && rank[0] && !omap_get(&rk, kr) && !(rc = omap_put(&rk, kr, 1))) {
            uint64_t *n = omap_get(&nranks, k);
            rc = omap_put(&nranks, k, (n ? *n : 0) + 1);
        }
        long w = strtol(ws, NULL, 10);
        uint64_t *wmax = omap_get(&world, k);
        if (!rc && w > 0 && (!wmax || *wmax < (uint64_t)w))
            rc = omap_put(&world, k, (uint64_t)w);
    }
    if (who.series)
        gp_storage_selection_free(&who);
    for (size_t i = 0; !rc && i < e->roles.cap; i++) {
        uint64_t *v = &e->roles.v[i], k = e->roles.k[i];
        if (k == UINT64_MAX)
            continue;
        if (!(*v & SEEN_OWN)) {
            *v = ROLE_WAIT;
            continue;
        }
        const uint64_t *f = omap_get(&e->jfirst, k), *n = omap_get(&nranks, k),
                       *w = omap_get(&world, k);
        int64_t since_ms = f ? (int64_t)*f : t_end;
        rc = omap_put(&first, k, (uint64_t)since_ms);
        int whole = (w && n && *n >= *w) || t_end - since_ms >= JOB_SETTLE_MS;
        *v = !whole ? ROLE_WAIT : (*v & SEEN_BEFORE) ? ROLE_FOLLOW
             : (*v & SEEN_AFTER) ? ROLE_LEAD : ROLE_ALONE;
    }
    omap_free(&e->jfirst); /* only the jobs seen now */
    e->jfirst = first;
    omap_free(&rk);
    omap_free(&nranks);
    omap_free(&world);
    /* the led jobs' names, as a pattern */
    struct gp_strset led = {0};
    for (unsigned i = 0; !rc && i < e->view.ngpus; i++) {
        const char *j = e->view.gpus[i].job;
        uint64_t *r = j[0] && !e->gents[i].peer ? omap_get(&e->roles, key_of(j, "", "", "")) : NULL;
        if (r && *r == ROLE_LEAD)
            gp_strset_add(&led, j, strlen(j));
    }
    for (unsigned i = 0; !rc && i < e->view.nprocs; i++) {
        const char *j = e->view.procs[i].job;
        uint64_t *r = j[0] && !e->pents[i].peer ? omap_get(&e->roles, key_of(j, "", "", "")) : NULL;
        if (r && *r == ROLE_LEAD)
            gp_strset_add(&led, j, strlen(j));
    }
    gp_strset_each(&led, add_job, &lead);
    if (!rc && led.err)
        rc = led.err;
    gp_strset_free(&led);
    if (!rc && lead.len) {
        gp_buf_putc(&lead, '\0');
        gp_matcher_free(&pm[1]);
        have_jobs = false;
        rc = lead.err ? GP_ENOMEM : gp_matcher_init(&pm[1], GP_MATCH_RE, "job", lead.data, err, sizeof err);
        have_jobs = !rc;
        if (!rc && !(e->psel = calloc(e->nmetrics, sizeof *e->psel)))
            rc = GP_ENOMEM;
        for (size_t mi = 0; !rc && mi < e->nmetrics; mi++) {
            const struct metric *m = &e->metrics[mi];
            pm[0] = m->m;
            rc = gp_storage_select_since(e->o.store, pm, 3, mint, t_end, since, &e->psel[mi]);
            if (!rc) {
                e->npsel = mi + 1;
                rc = place(e, m, &e->psel[mi], true);
            }
        }
    }
    gp_buf_free(&lead);
    if (have_info)
        gp_matcher_free(&info);
    if (have_jobs)
        gp_matcher_free(&pm[1]);
    if (have_srv)
        gp_matcher_free(&pm[2]);
    return rc;
}

/* Selects every metric's series and places the new ones. */
static int select_all(struct gp_engine *e, int64_t t_end, int64_t since)
{
    int64_t mint = t_end - e->o.window_ms - e->lookback_ms;
    for (size_t mi = 0; mi < e->nmetrics; mi++) {
        const struct metric *m = &e->metrics[mi];
        struct gp_store_selection sel;
        /* The tick reads samples since `since` only (fill): a remote
         * storage then moves just those, not the whole window. */
        int rc = gp_storage_select_since(e->o.store, &m->m, 1, mint, t_end, since, &sel);
        if (rc)
            return rc;
        rc = place(e, m, &sel, false);
        gp_storage_selection_free(&sel);
        if (rc)
            return rc;
    }
    return e->server ? select_peers(e, mint, t_end, since) : GP_OK;
}

/* Drops series and entities not selected this tick; rebuilds the maps
 * when anything left. */
static int compact(struct gp_engine *e)
{
    bool changed = false;
    for (int kind = 0; kind < 2; kind++) {
        struct ent *ents = kind ? e->pents : e->gents;
        unsigned *n = kind ? &e->view.nprocs : &e->view.ngpus;
        for (unsigned i = 0; i < *n;) {
            struct ent *en = &ents[i];
            unsigned w = 0;
            for (unsigned k = 0; k < en->ns; k++)
                if (en->s[k].seen == e->tick_no)
                    en->s[w++] = en->s[k];
            changed |= w != en->ns;
            e->nseries -= en->ns - w;
            en->ns = w;
            if (en->seen == e->tick_no && w) {
                i++;
                continue;
            }
            changed = true;
            free(en->s);
            unsigned last = *n - 1;
            if (kind) {
                free(e->view.procs[i].v);
                e->view.procs[i] = e->view.procs[last];
            } else {
                free(e->view.gpus[i].v);
                e->view.gpus[i] = e->view.gpus[last];
            }
            ents[i] = ents[last];
            (*n)--;
        }
    }
    if (!changed)
        return GP_OK;
    omap_clear(&e->ids);
    omap_clear(&e->gkeys);
    omap_clear(&e->pkeys);
    for (int kind = 0; kind < 2; kind++) {
        struct ent *ents = kind ? e->pents : e->gents;
        unsigned n = kind ? e->view.nprocs : e->view.ngpus;
        for (unsigned i = 0; i < n; i++) {
            if (omap_put(kind ? &e->pkeys : &e->gkeys, ents[i].key, i))
                return GP_ENOMEM;
            for (unsigned k = 0; k < ents[i].ns; k++)
                if (omap_put(&e->ids, ents[i].s[k].id,
                             (kind ? IS_PROC : 0) | (uint64_t)i << 32 | k))
                    return GP_ENOMEM;
        }
    }
    return GP_OK;
}

/* Shifts rows left by shift points (all NaN when shift >= npoints). */
static void shift_rows(double *v, unsigned rows, unsigned np, unsigned shift)
{
    for (unsigned r = 0; r < rows; r++) {
        double *row = v + (size_t)r * np;
        if (shift < np)
            memmove(row, row + shift, (size_t)(np - shift) * sizeof *row);
        for (unsigned k = shift < np ? np - shift : 0; k < np; k++)
            row[k] = NAN;
    }
}

/* Keeps an XID counter's value at the newest point in g's per-code
 * list; the newest sample wins where several series carry one code. */
static void note_xid(struct gp_view_gpu *g, int64_t *xt, uint32_t code, double x, int64_t ts)
{
    unsigned i = 0;
    while (i < g->nxids && g->xids[i].code != code)
        i++;
    if (i == g->nxids) {
        if (i == GP_VIEW_XIDS)
            return;
        g->nxids++;
    } else if (xt[i] >= ts) {
        return;
    }
    g->xids[i] = (struct gp_view_xid){code, x};
    xt[i] = ts;
}

/* Recomputes points k0.. of one entity's rows from its series (g: the
 * GPU's view entry, NULL for a process). */
static int fill(struct gp_engine *e, struct ent *en, double *v, unsigned k0, struct gp_view_gpu *g)
{
    bool gpu = g != NULL;
    int64_t xt[GP_VIEW_XIDS];
    if (g)
        g->nxids = 0;
    unsigned np = e->npoints;
    int64_t t0 = gp_view_time(&e->view, k0);
    int64_t mint = t0 - e->lookback_ms;
    for (unsigned k = 0; k < en->ns; k++) {
        double *row = v + (size_t)en->s[k].row * np;
        int64_t *tt = e->scratch + (size_t)en->s[k].row * np;
        for (unsigned p = k0; p < np; p++) {
            row[p] = NAN;
            tt[p] = INT64_MIN;
        }
    }
    if (gpu)
        for (unsigned p = k0; p < np; p++)
            v[(size_t)GP_VGM_MEM_USED * np + p] = v[(size_t)GP_VGM_MEM_TOTAL * np + p] = NAN;
    int rc = GP_OK;
    for (unsigned k = 0; k < en->ns; k++) {
        const struct eser *s = &en->s[k];
        e->smp.n = 0;
        int r = gp_storage_read(e->o.store, s->id, mint, e->view.t_end_ms, &e->smp);
        if (r == GP_ENOMEM || r == GP_EIO || r == GP_ENET) {
            rc = r;
            continue;
        }
        double *row = v + (size_t)s->row * np;
        int64_t *tt = e->scratch + (size_t)s->row * np;
        size_t j = 0;
        for (unsigned p = k0; p < np; p++) {
            int64_t tp = gp_view_time(&e->view, p);
            while (j < e->smp.n && e->smp.t[j] <= tp)
                j++;
            if (!j)
                continue;
            int64_t ts = e->smp.t[j - 1];
            double x = e->smp.v[j - 1];
            if (tp - ts > e->lookback_ms || isnan(x))
                continue; /* too old, a NaN, or the stale marker */
            x *= s->scale;
            if (s->xid && g && p == np - 1)
                note_xid(g, xt, s->xid, x, ts);
            if (s->comb == C_NEWEST) {
                if (ts > tt[p])
                    row[p] = x, tt[p] = ts;
            } else if (isnan(row[p])) {
                row[p] = x;
            } else {
                row[p] = s->comb == C_MAX ? fmax(row[p], x) : row[p] + x;
            }
        }
    }
    if (gpu) {
        double *used = v + (size_t)GP_VGM_MEM_USED * np, *total = v + (size_t)GP_VGM_MEM_TOTAL * np;
        const double *fu = v + (size_t)GROW_FB_USED * np, *ff = v + (size_t)GROW_FB_FREE * np;
        for (unsigned p = k0; p < np; p++) {
            if (isnan(used[p]))
                used[p] = fu[p];
            if (isnan(total[p]))
                total[p] = fu[p] + ff[p];
        }
    }
    return rc;
}

int gp_engine_refresh_view(struct gp_engine *e, int64_t now_ms, char *err, size_t errlen)
{
    int64_t step = e->o.step_ms;
    int64_t t_end = now_ms - ((now_ms % step) + step) % step;
    unsigned np = e->npoints, shift;
    bool full = !e->built || t_end < e->prev_end || t_end - e->prev_end > e->o.window_ms;
    shift = full ? np : (unsigned)((t_end - e->prev_end) / step);
    e->tick_no++;
    e->view.t_end_ms = t_end;
    unsigned margin = (unsigned)((e->margin_ms + step - 1) / step);
    unsigned k0 = full || shift + margin >= np ? 0 : np - shift - margin;
    int rc = select_all(e, t_end, gp_view_time(&e->view, k0) - e->lookback_ms);
    if (!rc)
        rc = compact(e);
    if (!rc && e->server)
        rc = index_peer_nodes(e);
    if (rc) {
        free_peer_selections(e);
        e->built = false; /* the maps may be partial: start over next time */
        return gp_seterr(err, errlen, rc, "building the view: %s", gp_strerror(rc));
    }
    int first = GP_OK;
    for (unsigned i = 0; i < e->view.ngpus; i++) {
        shift_rows(e->view.gpus[i].v, GPU_ROWS, np, shift);
        int r = fill(e, &e->gents[i], e->view.gpus[i].v, k0, &e->view.gpus[i]);
        if (r && !first)
            first = r;
    }
    for (unsigned i = 0; i < e->view.nprocs; i++) {
        shift_rows(e->view.procs[i].v, PROC_ROWS, np, shift);
        int r = fill(e, &e->pents[i], e->view.procs[i].v, k0, NULL);
        if (r && !first)
            first = r;
    }
    free_peer_selections(e); /* fill() has read what they fetched */
    if (!first)
        first = gp_view_index_jobs(&e->view);
    if (!first && e->o.job_costs)
        e->o.job_costs(e->o.job_costs_ctx, &e->view);
    e->prev_end = t_end;
    e->built = true;
    pthread_mutex_lock(&e->mu);
    e->st.last_full_rebuild = full || !k0;
    e->st.gpus = e->view.ngpus;
    e->st.procs = e->view.nprocs;
    e->st.series = e->nseries;
    pthread_mutex_unlock(&e->mu);
    if (first)
        return gp_seterr(err, errlen, first, "reading samples for the view: %s", gp_strerror(first));
    return GP_OK;
}

/* ---- the tick ---- */

struct det_ctx {
    struct gp_engine *e;
    enum gp_detector det;
    uint64_t n;
};

static bool det_active(void *ctx, const struct gp_obs_key *k)
{
    struct det_ctx *c = ctx;
    enum gp_detector d = k->det < GP_DET__COUNT ? k->det : c->det;
    return gp_alerts_active(c->e->o.alerts, gp_detectors[d].name, k, 0);
}

/* Whether this server speaks of o (several servers: see the top). */
static bool det_ours(const struct gp_engine *e, enum gp_detector d, const struct gp_obs_key *k)
{
    if (!e->server)
        return true;
    if ((gp_detectors[d].scope == GP_SCOPE_JOB || d == GP_DET_STRAGGLER) && k->job[0]) {
        const uint64_t *r = omap_get(&e->roles, key_of(k->job, "", "", ""));
        return r && (*r == ROLE_ALONE || *r == ROLE_LEAD);
    }
    return !k->node[0] || !omap_get(&e->pnodes, key_of(k->node, "", "", ""));
}

static int det_emit(void *ctx, const struct gp_observation *o)
{
    struct det_ctx *c = ctx;
    if (!det_ours(c->e, c->det, &o->key))
        return GP_OK;
    const struct gp_detector_cfg *cfg = &c->e->o.det_cfg[c->det];
    struct gp_alert_params p = {
        .kind = gp_detectors[c->det].name,
        .severity = cfg->severity,
        .for_ms = cfg->for_ms,
        .clear_for_ms = c->e->o.clear_for_ms,
        .cooldown_ms = cfg->cooldown_ms,
        .runbook = o->runbook[0] ? o->runbook : gp_detectors[c->det].runbook,
    };
    c->n++;
    if (o->nfaults && c->e->o.health && gp_health_observe(c->e->o.health, o))
        return GP_ENOMEM;
    int rc = gp_alerts_observe(c->e->o.alerts, &p, o);
    return rc == GP_ETOOBIG ? GP_OK : rc; /* a full table is counted, not a detector failure */
}

static int rule_emit(void *ctx, const struct gp_rule_obs *ro)
{
    struct det_ctx *c = ctx;
    struct gp_alert_params p = {
        .kind = ro->rule->name,
        .severity = ro->rule->severity,
        .for_ms = ro->rule->for_ms,
        .clear_for_ms = c->e->o.clear_for_ms,
        .cooldown_ms = ro->rule->cooldown_ms,
        .runbook = ro->rule->runbook,
        .labels_json = ro->labels_json,
        .extra = ro->extra,
    };
    c->n++;
    int rc = gp_alerts_observe(c->e->o.alerts, &p, ro->obs);
    return rc == GP_ETOOBIG ? GP_OK : rc;
}

int gp_engine_tick(struct gp_engine *e, int64_t now_ms, char *err, size_t errlen)
{
    int64_t t0 = gp_mono_ns();
    char detail[256] = "";
    int first = gp_engine_refresh_view(e, now_ms, detail, sizeof detail);
    if (first)
        gp_seterr(err, errlen, first, "%s", detail);
    int64_t t1 = gp_mono_ns();
    struct gp_alerts *a = e->o.alerts;
    gp_alerts_begin(a, now_ms);
    uint64_t nobs = 0, det_err = 0, rule_err = 0;
    for (int d = 0; d < GP_DET__COUNT; d++) {
        if (!e->o.detectors || !e->o.detectors[d] || !e->o.det_cfg[d].enabled)
            continue;
        struct det_ctx c = {e, (enum gp_detector)d, 0};
        struct gp_detect_ctx dc = {
            .view = &e->view,
            .cfg = &e->o.det_cfg[d],
            .active = det_active,
            .active_ctx = &c,
            .emit = det_emit,
            .emit_ctx = &c,
        };
        /* A view that could not be read in full judges nothing: hold. */
        int rc = first ? first : e->o.detectors[d](&dc);
        nobs += c.n;
        if (rc) {
            det_err++;
            gp_alerts_hold(a, gp_detectors[d].name);
            if (!first) {
                first = rc;
                gp_seterr(err, errlen, rc, "detector %s: %s", gp_detectors[d].name, gp_strerror(rc));
            }
        }
    }
    /* the health states take this tick's faults and the view's XIDs;
     * a tick whose detectors did not all run drops no reason */
    if (e->o.health && gp_health_tick(e->o.health, &e->view, now_ms, !det_err && !first) &&
        !first)
        first = gp_seterr(err, errlen, GP_EIO, "health: cannot write the states to state.db");
    int64_t t2 = gp_mono_ns();
    for (size_t i = 0; e->o.rules && i < e->o.rules->n; i++) {
        const struct gp_rule *r = &e->o.rules->r[i];
        struct det_ctx c = {e, GP_DET__COUNT, 0};
        int rc = gp_rule_eval(e->o.store, r, now_ms, &e->o.query_limits, rule_emit, &c, detail, sizeof detail);
        nobs += c.n;
        if (rc) {
            rule_err++;
            gp_alerts_hold(a, r->name);
            if (!first) {
                first = rc;
                gp_seterr(err, errlen, rc, "%s", detail);
            }
        }
    }
    unsigned pr_failed = 0;
    int prc = gp_promrules_tick(e->o.promrules, a, now_ms, &pr_failed, detail, sizeof detail);
    rule_err += pr_failed;
    if (prc && !first) {
        first = prc;
        gp_seterr(err, errlen, prc, "%s", detail);
    }
    gp_rem_tick(e->o.rem, first ? NULL : &e->view, a, now_ms);
    int64_t t3 = gp_mono_ns();
    int rc = gp_alerts_end(a, detail, sizeof detail);
    if (rc && !first) {
        first = rc;
        gp_seterr(err, errlen, rc, "%s", detail);
    }
    int64_t t4 = gp_mono_ns();
    pthread_mutex_lock(&e->mu);
    e->st.ticks++;
    e->st.tick_errors += first != GP_OK;
    e->st.detector_errors += det_err;
    e->st.rule_errors += rule_err;
    e->st.last_view_ns = (uint64_t)(t1 - t0);
    e->st.last_detect_ns = (uint64_t)(t2 - t1);
    e->st.last_rules_ns = (uint64_t)(t3 - t2);
    e->st.last_tick_ns = (uint64_t)(t4 - t0);
    e->st.observations = nobs;
    pthread_mutex_unlock(&e->mu);
    return first;
}

void gp_engine_stats(struct gp_engine *e, struct gp_engine_stats *out)
{
    pthread_mutex_lock(&e->mu);
    *out = e->st;
    pthread_mutex_unlock(&e->mu);
}

/* Waits until next_ms (wall clock) or stop; called and returns with e->mu held. */
static void wait_until_ms(struct gp_engine *e, int64_t next_ms)
{
    struct timespec until = {(time_t)(next_ms / 1000), (long)(next_ms % 1000) * 1000000};
    while (!e->stop && pthread_cond_timedwait(&e->cv, &e->mu, &until) == 0)
        ;
}

/* The first tick waits one interval: after a restart the agents have
 * pushed again by then, so alerts reloaded as firing are judged on fresh
 * samples rather than on the gap of the restart. */
static void *thread_main(void *arg)
{
    struct gp_engine *e = arg;
    pthread_mutex_lock(&e->mu);
    wait_until_ms(e, gp_wall_ms() + e->o.interval_ms);
    while (!e->stop) {
        pthread_mutex_unlock(&e->mu);
        char err[512] = "";
        int64_t now = gp_wall_ms();
        if (gp_engine_tick(e, now, err, sizeof err))
            gp_log(GP_LOG_WARN, "engine", "evaluation tick failed", "error=\"%s\"", err);
        pthread_mutex_lock(&e->mu);
        struct gp_engine_stats s = e->st;
        gp_log(GP_LOG_DEBUG, "engine", "tick", "gpus=%llu procs=%llu series=%llu tick_ms=%.3f",
               (unsigned long long)s.gpus, (unsigned long long)s.procs,
               (unsigned long long)s.series, (double)s.last_tick_ns / 1e6);
        wait_until_ms(e, now + e->o.interval_ms);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

/* ---- detector settings ---- */

static int find_detector(const char *name, size_t len)
{
    for (int i = 0; i < GP_DET__COUNT; i++)
        if (strlen(gp_detectors[i].name) == len && !memcmp(gp_detectors[i].name, name, len))
            return i;
    return -1;
}

/* Trims blanks around [*s, *s + *len). */
static void trim(const char **s, size_t *len)
{
    while (*len && (**s == ' ' || **s == '\t'))
        (*s)++, (*len)--;
    while (*len && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t'))
        (*len)--;
}

/* job_hang's own fields (detect.h); GP_ECONFIG for another detector. */
static int set_hang_field(struct gp_detector_cfg *c, bool hang, const char *field,
                          const char *val, char *err, size_t errlen)
{
    if (!hang)
        return gp_seterr(err, errlen, GP_ECONFIG, "'%s' belongs to job_hang only", field);
    if (!strcmp(field, "step_multiple") || !strcmp(field, "checkpoint_multiple")) {
        char *end;
        double x = strtod(val, &end);
        if (end == val || *end || !isfinite(x) || x <= 0)
            return gp_seterr(err, errlen, GP_ECONFIG, "'%s' must be a number above 0, not '%s'",
                             field, val);
        *(field[0] == 's' ? &c->step_multiple : &c->checkpoint_multiple) = x;
        return GP_OK;
    }
    int64_t ms;
    char detail[128];
    if (gp_parse_duration_ms(val, &ms, detail, sizeof detail))
        return gp_seterr(err, errlen, GP_ECONFIG, "'%s': %s", field, detail);
    *(!strcmp(field, "min_stall") ? &c->min_stall_ms : &c->first_step_ms) = ms;
    return GP_OK;
}

static int set_field(struct gp_detector_cfg *c, bool hang, const char *field, const char *val,
                     char *err, size_t errlen)
{
    char *end;
    if (!strcmp(field, "step_multiple") || !strcmp(field, "min_stall") ||
        !strcmp(field, "first_step") || !strcmp(field, "checkpoint_multiple"))
        return set_hang_field(c, hang, field, val, err, errlen);
    if (!strcmp(field, "threshold") || !strcmp(field, "clear")) {
        double x = strtod(val, &end);
        if (end == val || *end || !isfinite(x))
            return gp_seterr(err, errlen, GP_ECONFIG, "'%s' must be a number, not '%s'", field, val);
        *(field[0] == 't' ? &c->threshold : &c->clear) = x;
        return GP_OK;
    }
    if (!strcmp(field, "for") || !strcmp(field, "cooldown")) {
        int64_t ms;
        char detail[128];
        if (gp_parse_duration_ms(val, &ms, detail, sizeof detail))
            return gp_seterr(err, errlen, GP_ECONFIG, "'%s': %s", field, detail);
        *(field[0] == 'f' ? &c->for_ms : &c->cooldown_ms) = ms;
        return GP_OK;
    }
    if (!strcmp(field, "severity")) {
        if (gp_severity_parse(val, &c->severity))
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "'severity' must be info, warning or critical, not '%s'", val);
        return GP_OK;
    }
    if (!strcmp(field, "enabled")) {
        if (!strcmp(val, "true"))
            c->enabled = true;
        else if (!strcmp(val, "false"))
            c->enabled = false;
        else
            return gp_seterr(err, errlen, GP_ECONFIG, "'enabled' must be true or false, not '%s'", val);
        return GP_OK;
    }
    return gp_seterr(err, errlen, GP_ECONFIG,
                     "unknown field '%s' (use threshold, clear, for, cooldown, severity or "
                     "enabled; job_hang also step_multiple, min_stall, first_step, checkpoint_multiple)",
                     field);
}

int gp_engine_detector_config(const char *disabled, const char *overrides,
                              struct gp_detector_cfg cfg[GP_DET__COUNT], char *err, size_t errlen)
{
    gp_detector_cfg_defaults(cfg);
    for (const char *p = disabled ? disabled : ""; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *s = p;
        trim(&s, &len);
        if (len) {
            int d = find_detector(s, len);
            if (d < 0)
                return gp_seterr(err, errlen, GP_ECONFIG,
                                 "detectors_disabled: unknown detector '%.*s'", (int)(len > 64 ? 64 : len), s);
            cfg[d].enabled = false;
        }
        p = comma ? comma + 1 : p + strlen(p);
    }
    for (const char *p = overrides ? overrides : ""; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *s = p;
        trim(&s, &len);
        p = comma ? comma + 1 : p + strlen(p);
        if (!len)
            continue;
        char entry[256];
        if (len >= sizeof entry)
            return gp_seterr(err, errlen, GP_ECONFIG, "detector_overrides: an entry is too long");
        memcpy(entry, s, len);
        entry[len] = '\0';
        char *dot = strchr(entry, '.'), *eq = strchr(entry, '=');
        if (!dot || !eq || eq < dot)
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "detector_overrides: '%s' is not DETECTOR.FIELD=VALUE", entry);
        *dot = *eq = '\0';
        const char *field = dot + 1, *val = eq + 1;
        size_t nl = strlen(entry);
        const char *name = entry;
        trim(&name, &nl);
        int d = find_detector(name, nl);
        if (d < 0)
            return gp_seterr(err, errlen, GP_ECONFIG, "detector_overrides: unknown detector '%s'", entry);
        while (*val == ' ')
            val++;
        char detail[256];
        if (set_field(&cfg[d], d == GP_DET_HANG, field, val, detail, sizeof detail))
            return gp_seterr(err, errlen, GP_ECONFIG, "detector_overrides: %s: %s",
                             gp_detectors[d].name, detail);
    }
    return GP_OK;
}
