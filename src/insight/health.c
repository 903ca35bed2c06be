/*
 * health.c - the health states (health.h): per GPU its reasons and XID
 * history, per node its state and preflight; the tick that moves them;
 * state.db's health_* tables; the JSON the API serves.
 *
 * A reason is a catalog row (faults.h) on a GPU: a condition a detector
 * found this tick (present) or one found earlier and kept (sticky), or
 * an XID from the GPU's per-code counters, whose times within the window
 * are kept per code so "the same XID N times in a day" survives windows
 * far longer than the detectors' view and a restart. A GPU's XID counter
 * that is already there when health first sees the GPU is only a
 * baseline (as the detector's xid_increase): a server that starts on
 * old data does not count old XIDs.
 *
 * GPUs and nodes are found by their view position first (the view
 * keeps its order between ticks), else through a hash index, so a tick
 * is linear in the fleet. What changed is written per GPU (delete and
 * insert its rows) in one transaction at the end of the tick.
 */
#include "insight/health.h"

#include "lib/err.h"
#include "lib/json.h"
#include "lib/log.h"
#include "state/state.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const gp_health_state_names[GP_HS__COUNT] = {
#define GP_HS_NAME_(id, name) name,
    GP_HEALTH_STATES(GP_HS_NAME_)
#undef GP_HS_NAME_
};

#define MAX_REASONS 16
#define MAX_TIMES 32 /* XID times kept per code: enough for any sane repeat */

struct reason {
    const struct gp_fault *f;
    uint32_t xid;   /* the code of an XID reason (the catalog's row may be the generic one) */
    bool repeat;    /* the same XID repeat times in the window */
    bool sticky;    /* kept until marked healthy */
    bool present;   /* found in the newest tick */
    int64_t since, last;
    unsigned count; /* XIDs: times in the window */
};

struct xid {
    uint32_t code;
    double last;    /* the counter's value at the last tick */
    int64_t times[MAX_TIMES];
    unsigned n;
};

struct hgpu {
    char node[GP_VIEW_NODE_LEN], gpu[16], uuid[96];
    struct reason r[MAX_REASONS];
    unsigned nr;
    struct xid x[GP_VIEW_XIDS];
    unsigned nx;
    enum gp_health_state state;
    int64_t since, seen;
    unsigned ni; /* its node's index (forget() renumbers them) */
    bool dirty;
};

struct hnode {
    char node[GP_VIEW_NODE_LEN];
    enum gp_health_state state;
    int64_t since;
    bool pf_have, pf_ok;
    char pf_summary[256];
    int64_t pf_at;
    bool dirty;
};

/* Index of GPUs or nodes by the hash of their name (open addressing;
 * slot value index + 1, 0 empty). Entries are never removed one by one:
 * forget() rebuilds the index. */
struct idx {
    uint32_t *slot;
    size_t cap;
};

/* A fault observed this tick, applied at its end. */
struct pending {
    char node[GP_VIEW_NODE_LEN], gpu[16], uuid[96];
    const struct gp_fault *f;
};

struct gp_health {
    struct gp_health_options o;
    sqlite3 *db; /* NULL: memory only */
    pthread_mutex_t mu;
    struct hgpu *g;
    unsigned ng, capg;
    struct hnode *n;
    unsigned nn, capn;
    struct pending *p;
    unsigned np, capp;
    struct idx gi, ni;
    int64_t view_ms; /* the newest tick whose view had GPUs */
    bool io_failed; /* the last write failed: write everything next tick */
    bool rewrite;   /* GPUs or nodes were forgotten: write everything */
};

/* ---- rules ---- */

/* A node whose last preflight failed is degraded at least, until a
 * passing one: its prolog said no job should start there, whatever the
 * hardware readings say (docs/health.md "Preflight"). */
static enum gp_health_state node_floor(const struct hnode *n)
{
    return n->pf_have && !n->pf_ok ? GP_HS_DEGRADED : GP_HS_HEALTHY;
}

/* Moves n to state s as of now (nothing when it is there already). */
static void node_set(struct hnode *n, enum gp_health_state s, int64_t now)
{
    if (s < node_floor(n))
        s = node_floor(n);
    if (s != n->state || !n->since) {
        n->state = s;
        n->since = now;
        n->dirty = true;
    }
}

/* Kept until an operator marks the node healthy: a hardware fault whose
 * action is a GPU reset or stronger. Throttling clears by itself (its
 * action asks to inspect cooling, but the state follows the clocks). */
static bool sticky(const struct gp_fault *f)
{
    return f->hardware && f->action >= GP_FA_RESET_GPU && f != gp_fault_cond(GP_FC_THROTTLED);
}

static enum gp_health_state reason_state(const struct reason *r)
{
    if (r->repeat || r->f->severity == GP_SEV_CRITICAL)
        return GP_HS_UNHEALTHY;
    return r->f->severity == GP_SEV_WARNING ? GP_HS_DEGRADED : GP_HS_HEALTHY;
}

/* A repeated XID asks to drain and inspect: the catalog's remedy for it
 * did not hold (its explanations say so: "if it recurs..."). */
static enum gp_fault_action reason_action(const struct reason *r)
{
    return r->repeat ? GP_FA_DRAIN_INSPECT : r->f->action;
}

/* Stronger first: state, then action, then the newer. */
static int reason_cmp(const struct reason *a, const struct reason *b)
{
    int d = (int)reason_state(b) - (int)reason_state(a);
    if (!d)
        d = (int)reason_action(b) - (int)reason_action(a);
    if (!d)
        d = a->since < b->since ? 1 : a->since > b->since ? -1 : 0;
    return d;
}

/* ---- finding ---- */

static uint64_t hash2(const char *a, const char *b)
{
    uint64_t x = 0xcbf29ce484222325ULL;
    for (; *a; a++)
        x = (x ^ (unsigned char)*a) * 0x100000001b3ULL;
    x = (x ^ 0xff) * 0x100000001b3ULL;
    for (; *b; b++)
        x = (x ^ (unsigned char)*b) * 0x100000001b3ULL;
    return x ^ x >> 29;
}

/* The slot of key in ix: where eq(index) holds, or the empty slot to
 * fill. ix has room (idx_grow first). */
static uint32_t *idx_find(const struct idx *ix, uint64_t key, bool (*eq)(const void *, unsigned, const char *, const char *),
                          const void *arr, const char *a, const char *b)
{
    for (size_t i = key & (ix->cap - 1);; i = (i + 1) & (ix->cap - 1))
        if (!ix->slot[i] || eq(arr, ix->slot[i] - 1, a, b))
            return &ix->slot[i];
}

static bool gpu_eq(const void *arr, unsigned i, const char *node, const char *gpu)
{
    const struct hgpu *g = (const struct hgpu *)arr + i;
    return !strcmp(g->gpu, gpu) && !strcmp(g->node, node);
}

static bool node_eq(const void *arr, unsigned i, const char *node, const char *unused)
{
    (void)unused;
    return !strcmp(((const struct hnode *)arr)[i].node, node);
}

/* Makes room for one more beside the n entries of arr (rehashing them).
 * GP_OK or GP_ENOMEM. */
static int idx_grow(struct idx *ix, unsigned n, bool gpus, const void *arr)
{
    if ((size_t)(n + 2) * 2 <= ix->cap)
        return GP_OK;
    size_t cap = ix->cap ? ix->cap * 2 : 256;
    while ((size_t)(n + 2) * 2 > cap)
        cap *= 2;
    struct idx nx = {calloc(cap, sizeof *nx.slot), cap};
    if (!nx.slot)
        return GP_ENOMEM;
    for (unsigned i = 0; i < n; i++) {
        const char *a = gpus ? ((const struct hgpu *)arr)[i].node : ((const struct hnode *)arr)[i].node;
        const char *b = gpus ? ((const struct hgpu *)arr)[i].gpu : "";
        *idx_find(&nx, hash2(a, b), gpus ? gpu_eq : node_eq, arr, a, b) = i + 1;
    }
    free(ix->slot);
    *ix = nx;
    return GP_OK;
}

static struct hnode *find_node(struct gp_health *h, const char *node, bool create)
{
    if (!h->ni.cap && h->nn && idx_grow(&h->ni, h->nn, false, h->n))
        return NULL; /* the index is rebuilt after forget() */
    if (h->ni.cap) {
        uint32_t *sl = idx_find(&h->ni, hash2(node, ""), node_eq, h->n, node, "");
        if (*sl)
            return &h->n[*sl - 1];
    }
    if (!create || idx_grow(&h->ni, h->nn, false, h->n))
        return NULL;
    if (h->nn == h->capn) {
        unsigned nc = h->capn ? h->capn * 2 : 16;
        struct hnode *n = realloc(h->n, nc * sizeof *n);
        if (!n)
            return NULL;
        h->n = n;
        h->capn = nc;
    }
    struct hnode *n = &h->n[h->nn++];
    memset(n, 0, sizeof *n);
    snprintf(n->node, sizeof n->node, "%s", node);
    n->state = GP_HS_HEALTHY;
    n->dirty = true;
    *idx_find(&h->ni, hash2(node, ""), node_eq, h->n, node, "") = h->nn;
    return n;
}

/* The GPU (node, gpu); hint: where to look first. *created is set when
 * it is new. NULL when out of memory (create) or absent. */
static struct hgpu *find_gpu(struct gp_health *h, const char *node, const char *gpu, unsigned hint,
                             bool create, bool *created)
{
    if (created)
        *created = false;
    if (hint < h->ng && gpu_eq(h->g, hint, node, gpu))
        return &h->g[hint];
    if (!h->gi.cap && h->ng && idx_grow(&h->gi, h->ng, true, h->g))
        return NULL;
    if (h->gi.cap) {
        uint32_t *sl = idx_find(&h->gi, hash2(node, gpu), gpu_eq, h->g, node, gpu);
        if (*sl)
            return &h->g[*sl - 1];
    }
    struct hnode *n = create ? find_node(h, node, true) : NULL;
    if (!n || idx_grow(&h->gi, h->ng, true, h->g))
        return NULL;
    unsigned ni = (unsigned)(n - h->n);
    if (h->ng == h->capg) {
        unsigned nc = h->capg ? h->capg * 2 : 64;
        struct hgpu *g = realloc(h->g, nc * sizeof *g);
        if (!g)
            return NULL;
        h->g = g;
        h->capg = nc;
    }
    struct hgpu *g = &h->g[h->ng++];
    memset(g, 0, sizeof *g);
    snprintf(g->node, sizeof g->node, "%s", node);
    snprintf(g->gpu, sizeof g->gpu, "%s", gpu);
    g->state = GP_HS_HEALTHY;
    g->ni = ni;
    g->dirty = true;
    *idx_find(&h->gi, hash2(node, gpu), gpu_eq, h->g, node, gpu) = h->ng;
    if (created)
        *created = true;
    return g;
}

static struct reason *find_reason(struct hgpu *g, const struct gp_fault *f, uint32_t xid,
                                  bool repeat, int64_t now, bool create)
{
    for (unsigned i = 0; i < g->nr; i++)
        if (g->r[i].f == f && g->r[i].xid == xid && g->r[i].repeat == repeat)
            return &g->r[i];
    if (!create || g->nr == MAX_REASONS)
        return NULL;
    struct reason *r = &g->r[g->nr++];
    *r = (struct reason){.f = f, .xid = xid, .repeat = repeat, .sticky = repeat || sticky(f),
                         .since = now, .last = now};
    g->dirty = true;
    return r;
}

/* The catalog row named name (xid: its code, for the generic row). */
static const struct gp_fault *fault_named(const char *name, uint32_t xid)
{
    if (xid)
        return gp_fault_xid(xid);
    unsigned n;
    const struct gp_fault *t = gp_fault_table(&n);
    for (unsigned i = 0; i < n; i++)
        if (!strcmp(t[i].name, name))
            return &t[i];
    return NULL;
}

/* ---- state.db ---- */

static int exec(sqlite3 *db, const char *sql)
{
    return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? GP_OK : GP_EIO;
}

/* The statements a save uses, prepared once per save. */
enum { S_DEL_G, S_DEL_R, S_DEL_X, S_INS_G, S_INS_R, S_INS_X, S_NODE, S__COUNT };
static const char *const save_sql[S__COUNT] = {
    "DELETE FROM health_gpus WHERE node=?1 AND gpu=?2",
    "DELETE FROM health_reasons WHERE node=?1 AND gpu=?2",
    "DELETE FROM health_xids WHERE node=?1 AND gpu=?2",
    "INSERT INTO health_gpus VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    "INSERT INTO health_reasons VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    "INSERT INTO health_xids VALUES(?1, ?2, ?3, ?4, ?5)",
    "INSERT OR REPLACE INTO health_nodes VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
};

/* Binds node and gpu, then steps st; GP_OK or GP_EIO. The caller binds
 * the rest first. */
static int run(sqlite3_stmt *st, const struct hgpu *g)
{
    sqlite3_bind_text(st, 1, g->node, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, g->gpu, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? GP_OK : GP_EIO;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc;
}

static int save_gpu(sqlite3_stmt *const *st, const struct hgpu *g)
{
    int rc = run(st[S_DEL_G], g);
    if (!rc)
        rc = run(st[S_DEL_R], g);
    if (!rc)
        rc = run(st[S_DEL_X], g);
    if (!rc) {
        sqlite3_bind_text(st[S_INS_G], 3, g->uuid, -1, SQLITE_STATIC);
        sqlite3_bind_text(st[S_INS_G], 4, gp_health_state_names[g->state], -1, SQLITE_STATIC);
        sqlite3_bind_int64(st[S_INS_G], 5, g->since);
        sqlite3_bind_int64(st[S_INS_G], 6, g->seen);
        rc = run(st[S_INS_G], g);
    }
    for (unsigned i = 0; i < g->nr && !rc; i++) {
        const struct reason *r = &g->r[i];
        sqlite3_stmt *q = st[S_INS_R];
        sqlite3_bind_text(q, 3, r->f->name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 4, r->xid);
        sqlite3_bind_int(q, 5, r->repeat);
        sqlite3_bind_int(q, 6, r->sticky);
        sqlite3_bind_int(q, 7, r->present);
        sqlite3_bind_int64(q, 8, r->since);
        sqlite3_bind_int64(q, 9, r->last);
        sqlite3_bind_int64(q, 10, r->count);
        rc = run(q, g);
    }
    /* times as text "t1,t2,...": our own rows, read back by load_times */
    for (unsigned i = 0; i < g->nx && !rc; i++) {
        const struct xid *x = &g->x[i];
        char times[MAX_TIMES * 21 + 1] = "";
        size_t len = 0;
        for (unsigned k = 0; k < x->n; k++)
            len += (size_t)snprintf(times + len, sizeof times - len, "%s%lld", k ? "," : "",
                                    (long long)x->times[k]);
        sqlite3_bind_int64(st[S_INS_X], 3, x->code);
        sqlite3_bind_double(st[S_INS_X], 4, x->last);
        sqlite3_bind_text(st[S_INS_X], 5, times, -1, SQLITE_TRANSIENT);
        rc = run(st[S_INS_X], g);
    }
    return rc;
}

static int save_node(sqlite3_stmt *st, const struct hnode *n)
{
    sqlite3_bind_text(st, 1, n->node, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, gp_health_state_names[n->state], -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, n->since);
    if (n->pf_have) {
        sqlite3_bind_int(st, 4, n->pf_ok);
        sqlite3_bind_text(st, 5, n->pf_summary, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 6, n->pf_at);
    }
    int rc = sqlite3_step(st) == SQLITE_DONE ? GP_OK : GP_EIO;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc;
}

/* Writes what is dirty (everything after a failed write). */
static int save(struct gp_health *h)
{
    if (!h->db)
        return GP_OK;
    bool all = h->io_failed || h->rewrite;
    sqlite3_stmt *st[S__COUNT] = {0};
    int rc = exec(h->db, "BEGIN IMMEDIATE");
    for (int i = 0; i < S__COUNT && !rc; i++)
        if (sqlite3_prepare_v2(h->db, save_sql[i], -1, &st[i], NULL) != SQLITE_OK)
            rc = GP_EIO;
    if (all && !rc)
        rc = exec(h->db, "DELETE FROM health_gpus; DELETE FROM health_reasons;"
                         " DELETE FROM health_xids; DELETE FROM health_nodes");
    for (unsigned i = 0; i < h->ng && !rc; i++)
        if (all || h->g[i].dirty)
            rc = save_gpu(st, &h->g[i]);
    for (unsigned i = 0; i < h->nn && !rc; i++)
        if (all || h->n[i].dirty)
            rc = save_node(st[S_NODE], &h->n[i]);
    for (int i = 0; i < S__COUNT; i++)
        sqlite3_finalize(st[i]);
    if (!rc)
        rc = exec(h->db, "COMMIT");
    if (rc) {
        if (!sqlite3_get_autocommit(h->db))
            exec(h->db, "ROLLBACK");
        if (!h->io_failed)
            gp_log(GP_LOG_WARN, "health", "cannot write the health states to state.db",
                   "error=\"%s\"", sqlite3_errmsg(h->db));
        h->io_failed = true;
        return GP_EIO;
    }
    h->io_failed = h->rewrite = false;
    for (unsigned i = 0; i < h->ng; i++)
        h->g[i].dirty = false;
    for (unsigned i = 0; i < h->nn; i++)
        h->n[i].dirty = false;
    return GP_OK;
}

static const char *col_text(sqlite3_stmt *st, int i)
{
    const char *s = (const char *)sqlite3_column_text(st, i);
    return s ? s : "";
}

static enum gp_health_state state_named(const char *s)
{
    for (int i = 0; i < GP_HS__COUNT; i++)
        if (!strcmp(s, gp_health_state_names[i]))
            return (enum gp_health_state)i;
    return GP_HS_HEALTHY;
}

static void load_times(struct xid *x, const char *s)
{
    while (*s && x->n < MAX_TIMES) {
        char *end;
        long long t = strtoll(s, &end, 10);
        if (end == s)
            break;
        x->times[x->n++] = t;
        s = *end == ',' ? end + 1 : end;
    }
}

/* Reads the tables back. A row naming a fault this binary's catalog
 * lacks is skipped. */
static int load(struct gp_health *h)
{
    sqlite3_stmt *st;
    int rc;
    if (sqlite3_prepare_v2(h->db, "SELECT node, gpu, uuid, state, since, seen FROM health_gpus", -1,
                           &st, NULL) != SQLITE_OK)
        return GP_EIO;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct hgpu *g = find_gpu(h, col_text(st, 0), col_text(st, 1), 0, true, NULL);
        if (!g)
            break;
        snprintf(g->uuid, sizeof g->uuid, "%s", col_text(st, 2));
        g->state = state_named(col_text(st, 3));
        g->since = sqlite3_column_int64(st, 4);
        g->seen = sqlite3_column_int64(st, 5);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return rc == SQLITE_ROW ? GP_ENOMEM : GP_EIO;
    if (sqlite3_prepare_v2(h->db,
                           "SELECT node, gpu, fault, xid, repeat, sticky, present, since, last, count"
                           " FROM health_reasons",
                           -1, &st, NULL) != SQLITE_OK)
        return GP_EIO;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct hgpu *g = find_gpu(h, col_text(st, 0), col_text(st, 1), 0, false, NULL);
        uint32_t xid = (uint32_t)sqlite3_column_int64(st, 3);
        const struct gp_fault *f = fault_named(col_text(st, 2), xid);
        struct reason *r = g && f ? find_reason(g, f, xid, sqlite3_column_int(st, 4), 0, true) : NULL;
        if (!r)
            continue;
        r->sticky = sqlite3_column_int(st, 5);
        r->present = sqlite3_column_int(st, 6);
        r->since = sqlite3_column_int64(st, 7);
        r->last = sqlite3_column_int64(st, 8);
        r->count = (unsigned)sqlite3_column_int64(st, 9);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return GP_EIO;
    if (sqlite3_prepare_v2(h->db, "SELECT node, gpu, code, last, times FROM health_xids", -1, &st,
                           NULL) != SQLITE_OK)
        return GP_EIO;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct hgpu *g = find_gpu(h, col_text(st, 0), col_text(st, 1), 0, false, NULL);
        if (!g || g->nx == GP_VIEW_XIDS)
            continue;
        struct xid *x = &g->x[g->nx++];
        memset(x, 0, sizeof *x);
        x->code = (uint32_t)sqlite3_column_int64(st, 2);
        x->last = sqlite3_column_double(st, 3);
        load_times(x, col_text(st, 4));
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return GP_EIO;
    if (sqlite3_prepare_v2(h->db,
                           "SELECT node, state, since, preflight_ok, preflight_summary, preflight_at"
                           " FROM health_nodes",
                           -1, &st, NULL) != SQLITE_OK)
        return GP_EIO;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct hnode *n = find_node(h, col_text(st, 0), true);
        if (!n)
            break;
        n->state = state_named(col_text(st, 1));
        n->since = sqlite3_column_int64(st, 2);
        n->pf_have = sqlite3_column_type(st, 3) != SQLITE_NULL;
        n->pf_ok = sqlite3_column_int(st, 3);
        snprintf(n->pf_summary, sizeof n->pf_summary, "%s", col_text(st, 4));
        n->pf_at = sqlite3_column_int64(st, 5);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return rc == SQLITE_ROW ? GP_ENOMEM : GP_EIO;
    for (unsigned i = 0; i < h->ng; i++)
        h->g[i].dirty = false;
    for (unsigned i = 0; i < h->nn; i++)
        h->n[i].dirty = false;
    return GP_OK;
}

int gp_health_open(struct gp_health **out, const char *dir, const struct gp_health_options *o,
                   char *err, size_t errlen)
{
    *out = NULL;
    if (o->xid_window_ms <= 0)
        return gp_seterr(err, errlen, GP_EUSAGE, "health_xid_window must be above 0");
    if (o->xid_repeat > MAX_TIMES)
        return gp_seterr(err, errlen, GP_EUSAGE, "health_xid_repeat must be at most %d", MAX_TIMES);
    struct gp_health *h = calloc(1, sizeof *h);
    if (!h)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    h->o = *o;
    pthread_mutex_init(&h->mu, NULL);
    if (dir) {
        int rc = gp_state_open(&h->db, dir, err, errlen);
        if (!rc && (rc = load(h)))
            gp_seterr(err, errlen, rc, "reading the health states from state.db: %s",
                      sqlite3_errmsg(h->db));
        if (rc) {
            gp_health_close(h);
            return rc;
        }
    }
    *out = h;
    return GP_OK;
}

void gp_health_close(struct gp_health *h)
{
    if (!h)
        return;
    gp_state_close(h->db);
    free(h->g);
    free(h->n);
    free(h->p);
    free(h->gi.slot);
    free(h->ni.slot);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

/* ---- leaving the fleet ---- */

static bool gpu_left(const struct gp_health *h, const struct hgpu *g, int64_t cutoff, const char *node)
{
    return node ? !strcmp(g->node, node) && g->seen < h->view_ms : g->seen < cutoff;
}

/* Forgets the GPUs that left: those not seen since cutoff, or (node
 * given: a mark-healthy) those of node the newest view lacks; then the
 * nodes left without GPUs whose last preflight is older than cutoff (node
 * given: that node). Compacts the arrays and rebuilds the indexes; the
 * next save rewrites state.db. Rare (a GPU leaves once), so linear. */
static void forget(struct gp_health *h, int64_t cutoff, const char *node)
{
    unsigned ng = 0, nn = 0, gone_g = 0, gone_n = 0;
    unsigned *gpus = calloc(h->nn ? h->nn : 1, sizeof *gpus), *to = calloc(h->nn ? h->nn : 1, sizeof *to);
    if (!gpus || !to)
        goto out; /* out of memory: tried again next tick */
    for (unsigned i = 0; i < h->ng; i++) {
        if (!gpu_left(h, &h->g[i], cutoff, node))
            gpus[h->g[i].ni]++;
    }
    for (unsigned i = 0; i < h->nn; i++) {
        const struct hnode *n = &h->n[i];
        bool gone = !gpus[i] && (node ? !strcmp(n->node, node) : !n->pf_have || n->pf_at < cutoff);
        to[i] = nn; /* a forgotten node's: no GPU of it is left to read it */
        if (gone) {
            gone_n++;
            continue;
        }
        if (nn != i)
            h->n[nn] = *n;
        nn++;
    }
    for (unsigned i = 0; i < h->ng; i++) {
        const struct hgpu *g = &h->g[i];
        if (gpu_left(h, g, cutoff, node)) {
            gone_g++;
            continue;
        }
        if (ng != i)
            h->g[ng] = *g;
        h->g[ng].ni = to[h->g[ng].ni];
        ng++;
    }
    if (!gone_g && !gone_n)
        goto out;
    h->ng = ng;
    h->nn = nn;
    free(h->gi.slot);
    free(h->ni.slot);
    h->gi = h->ni = (struct idx){0};
    /* rebuilt from the arrays (out of memory: by the next find) */
    if (idx_grow(&h->gi, h->ng, true, h->g) || idx_grow(&h->ni, h->nn, false, h->n))
        gp_log(GP_LOG_WARN, "health", "out of memory rebuilding the health index", "gpus=%u", h->ng);
    h->rewrite = true;
    gp_log(GP_LOG_INFO, "health", "forgot GPUs and nodes that left the fleet", "gpus=%u nodes=%u%s%s%s",
           gone_g, gone_n, node ? " node=\"" : "", node ? node : "", node ? "\"" : "");
out:
    free(gpus);
    free(to);
}

/* ---- the tick ---- */

int gp_health_observe(struct gp_health *h, const struct gp_observation *o)
{
    pthread_mutex_lock(&h->mu);
    int rc = GP_OK;
    for (unsigned i = 0; i < o->nfaults && i < GP_OBS_FAULTS; i++) {
        if (o->faults[i]->severity == GP_SEV_INFO)
            continue;
        if (h->np == h->capp) {
            unsigned nc = h->capp ? h->capp * 2 : 64;
            struct pending *p = realloc(h->p, nc * sizeof *p);
            if (!p) {
                rc = GP_ENOMEM;
                break;
            }
            h->p = p;
            h->capp = nc;
        }
        struct pending *p = &h->p[h->np++];
        snprintf(p->node, sizeof p->node, "%s", o->key.node);
        snprintf(p->gpu, sizeof p->gpu, "%s", o->key.gpu);
        snprintf(p->uuid, sizeof p->uuid, "%s", o->uuid);
        p->f = o->faults[i];
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

/* New XIDs of GPU g from the view's per-code counters; known: g was
 * there before this tick (else its counters are a baseline). */
static void count_xids(struct hgpu *g, const struct gp_view_gpu *vg, bool known, int64_t now)
{
    for (unsigned i = 0; i < vg->nxids; i++) {
        const struct gp_view_xid *vx = &vg->xids[i];
        struct xid *x = NULL;
        for (unsigned k = 0; k < g->nx && !x; k++)
            if (g->x[k].code == vx->code)
                x = &g->x[k];
        double inc;
        if (!x) {
            if (g->nx == GP_VIEW_XIDS)
                continue;
            x = &g->x[g->nx++];
            memset(x, 0, sizeof *x);
            x->code = vx->code;
            inc = known ? vx->count : 0;
        } else {
            inc = vx->count >= x->last ? vx->count - x->last : vx->count; /* a reset */
        }
        if (vx->count != x->last)
            g->dirty = true;
        x->last = vx->count;
        for (double k = 0; k < inc && k < MAX_TIMES; k++) {
            if (x->n == MAX_TIMES) {
                memmove(x->times, x->times + 1, (MAX_TIMES - 1) * sizeof x->times[0]);
                x->n--;
            }
            x->times[x->n++] = now;
        }
    }
}

/* Forgets XID times older than the window and makes the XID reasons. */
static void xid_reasons(struct gp_health *h, struct hgpu *g, int64_t now)
{
    for (unsigned k = 0; k < g->nx; k++) {
        struct xid *x = &g->x[k];
        unsigned drop = 0;
        while (drop < x->n && x->times[drop] < now - h->o.xid_window_ms)
            drop++;
        if (drop) {
            memmove(x->times, x->times + drop, (x->n - drop) * sizeof x->times[0]);
            x->n -= drop;
            g->dirty = true;
        }
        const struct gp_fault *f = gp_fault_xid(x->code);
        if (!x->n || f->severity == GP_SEV_INFO)
            continue;
        bool rep = h->o.xid_repeat && x->n >= h->o.xid_repeat;
        struct reason *r = find_reason(g, f, x->code, rep, x->times[0], true);
        if (!r)
            continue;
        r->present = true;
        if (r->count != x->n)
            g->dirty = true;
        r->count = x->n;
        r->last = x->times[x->n - 1];
        if (rep) /* the repeat says it all: no second line for the same code */
            for (unsigned i = 0; i < g->nr; i++)
                if (g->r[i].xid == x->code && !g->r[i].repeat) {
                    g->r[i] = g->r[--g->nr];
                    break;
                }
    }
}

/* Drops the reasons not found again that do not stick, and sets the
 * state; judged: the detectors all ran, so a missing condition is gone. */
static void settle(struct hgpu *g, bool judged, int64_t now)
{
    enum gp_health_state s = GP_HS_HEALTHY;
    for (unsigned i = 0; i < g->nr;) {
        struct reason *r = &g->r[i];
        if (!r->present && !r->sticky && (judged || r->xid)) {
            *r = g->r[--g->nr];
            g->dirty = true;
            continue;
        }
        if (reason_state(r) > s)
            s = reason_state(r);
        i++;
    }
    if (s != g->state) {
        g->state = s;
        g->since = now;
        g->dirty = true;
    }
}

int gp_health_tick(struct gp_health *h, const struct gp_view *v, int64_t now, bool judged)
{
    pthread_mutex_lock(&h->mu);
    for (unsigned i = 0; i < h->ng; i++)
        for (unsigned k = 0; k < h->g[i].nr; k++)
            h->g[i].r[k].present = false;
    for (unsigned i = 0; v && i < v->ngpus; i++) {
        const struct gp_view_gpu *vg = &v->gpus[i];
        bool created;
        struct hgpu *g = find_gpu(h, vg->node, vg->gpu, i, true, &created);
        if (!g)
            continue; /* out of memory: judged again next tick */
        if (created || !g->since)
            g->since = now;
        if (strcmp(g->uuid, vg->uuid)) {
            snprintf(g->uuid, sizeof g->uuid, "%s", vg->uuid);
            g->dirty = true;
        }
        g->seen = now;
        count_xids(g, vg, !created, now);
    }
    for (unsigned i = 0; i < h->np; i++) {
        const struct pending *p = &h->p[i];
        struct hgpu *g = find_gpu(h, p->node, p->gpu, h->ng, true, NULL);
        struct reason *r = g ? find_reason(g, p->f, p->f->xid, false, now, true) : NULL;
        if (!r)
            continue;
        if (!g->uuid[0])
            snprintf(g->uuid, sizeof g->uuid, "%s", p->uuid);
        if (!g->seen)
            g->seen = now; /* found by a detector only: seen all the same */
        r->present = true;
        r->last = now;
    }
    h->np = 0;
    if (v && v->ngpus)
        h->view_ms = now;
    if (h->o.forget_ms)
        forget(h, now - h->o.forget_ms, NULL);
    for (unsigned i = 0; i < h->ng; i++) {
        xid_reasons(h, &h->g[i], now);
        settle(&h->g[i], judged, now);
    }
    /* a node is as bad as its worst GPU */
    enum gp_health_state *worst = calloc(h->nn ? h->nn : 1, sizeof *worst);
    if (!worst) {
        pthread_mutex_unlock(&h->mu);
        return GP_ENOMEM;
    }
    for (unsigned k = 0; k < h->ng; k++)
        if (h->g[k].state > worst[h->g[k].ni])
            worst[h->g[k].ni] = h->g[k].state;
    for (unsigned i = 0; i < h->nn; i++)
        node_set(&h->n[i], worst[i], now);
    free(worst);
    int rc = save(h);
    pthread_mutex_unlock(&h->mu);
    return rc;
}

/* ---- operators ---- */

static void reasons_text(const struct gp_health *h, const char *node, char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    for (unsigned i = 0; i < h->ng; i++) {
        const struct hgpu *g = &h->g[i];
        if (strcmp(g->node, node))
            continue;
        for (unsigned k = 0; k < g->nr && n + 1 < len; k++) {
            int w = snprintf(out + n, len - n, "%sGPU %s %s%s", n ? ", " : "", g->gpu,
                             g->r[k].f->name, g->r[k].repeat ? " repeated" : "");
            n = w > 0 && n + (size_t)w < len ? n + (size_t)w : len - 1;
        }
    }
}

static int audit(sqlite3 *db, int64_t now, const char *node, const char *detail)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO audit(at_ms, kind, severity, node, decision, detail)"
                           " VALUES(?1, 'mark_healthy', 'info', ?2, 'marked_healthy', ?3)",
                           -1, &st, NULL) != SQLITE_OK)
        return GP_EIO;
    sqlite3_bind_int64(st, 1, now);
    sqlite3_bind_text(st, 2, node, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, detail, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? GP_OK : GP_EIO;
    sqlite3_finalize(st);
    return rc;
}

int gp_health_mark_healthy(struct gp_health *h, const char *node, const char *by,
                           const char *comment, int64_t now)
{
    pthread_mutex_lock(&h->mu);
    struct hnode *n = find_node(h, node, false);
    if (!n) {
        pthread_mutex_unlock(&h->mu);
        return GP_ENOTFOUND;
    }
    char was[512], detail[1024];
    reasons_text(h, node, was, sizeof was);
    snprintf(detail, sizeof detail, "marked healthy by %s%s%s; was %s%s%s%s",
             by && by[0] ? by : "(anonymous)", comment && comment[0] ? ": " : "",
             comment ? comment : "", gp_health_state_names[n->state], was[0] ? " (" : "", was,
             was[0] ? ")" : "");
    int rc = h->db ? audit(h->db, now, node, detail) : GP_OK;
    if (!rc) {
        for (unsigned i = 0; i < h->ng; i++) {
            struct hgpu *g = &h->g[i];
            if (strcmp(g->node, node))
                continue;
            g->nr = 0;
            for (unsigned k = 0; k < g->nx; k++)
                g->x[k].n = 0; /* the counters' values stay: only new XIDs count */
            g->state = GP_HS_HEALTHY;
            g->since = now;
            g->dirty = true;
        }
        n->state = GP_HS_HEALTHY;
        n->since = now;
        n->dirty = true;
        node_set(n, GP_HS_HEALTHY, now); /* a failed preflight stays until a passing one */
        forget(h, 0, node);
        rc = save(h);
    }
    pthread_mutex_unlock(&h->mu);
    if (!rc)
        gp_log(GP_LOG_INFO, "health", "node marked healthy", "node=\"%s\" detail=\"%s\"", node,
               detail);
    return rc;
}

int gp_health_note_preflight(struct gp_health *h, const char *node, bool ok, const char *summary,
                             int64_t at_ms)
{
    pthread_mutex_lock(&h->mu);
    struct hnode *n = find_node(h, node, true);
    int rc = GP_ENOMEM;
    if (n) {
        if (!n->since)
            n->since = at_ms;
        n->pf_have = true;
        n->pf_ok = ok;
        snprintf(n->pf_summary, sizeof n->pf_summary, "%s", summary ? summary : "");
        n->pf_at = at_ms;
        n->dirty = true;
        /* now, not at the next tick: the GPUs' worst is the state less the floor */
        enum gp_health_state worst = GP_HS_HEALTHY;
        for (unsigned i = 0; i < h->ng; i++)
            if (!strcmp(h->g[i].node, node) && h->g[i].state > worst)
                worst = h->g[i].state;
        node_set(n, worst, at_ms);
        rc = save(h);
    }
    pthread_mutex_unlock(&h->mu);
    return rc;
}

void gp_health_stats(struct gp_health *h, struct gp_health_stats *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&h->mu);
    for (unsigned i = 0; i < h->nn; i++) {
        out->nodes[h->n[i].state]++;
        out->preflight_failed += h->n[i].pf_have && !h->n[i].pf_ok;
    }
    for (unsigned i = 0; i < h->ng; i++)
        out->gpus[h->g[i].state]++;
    pthread_mutex_unlock(&h->mu);
}

bool gp_health_knows(struct gp_health *h, const char *node)
{
    pthread_mutex_lock(&h->mu);
    bool known = find_node(h, node, false) != NULL;
    pthread_mutex_unlock(&h->mu);
    return known;
}

enum gp_health_state gp_health_node_state(struct gp_health *h, const char *node)
{
    pthread_mutex_lock(&h->mu);
    const struct hnode *n = find_node(h, node, false);
    enum gp_health_state s = n ? n->state : GP_HS_HEALTHY;
    pthread_mutex_unlock(&h->mu);
    return s;
}

/* ---- JSON ---- */

static void json_reason(struct gp_buf *b, const struct hgpu *g, const struct reason *r)
{
    const struct gp_fault *f = r->f;
    enum gp_fault_action a = reason_action(r);
    char title[160];
    if (r->repeat)
        snprintf(title, sizeof title, "XID %u %s, %u times in the window", r->xid, f->title, r->count);
    else if (r->xid)
        snprintf(title, sizeof title, "XID %u %s", r->xid, f->title);
    else
        snprintf(title, sizeof title, "%s", f->title);
    gp_buf_puts(b, "{\"gpu\":");
    gp_json_str(b, g->gpu, strlen(g->gpu));
    gp_buf_puts(b, ",\"uuid\":");
    gp_json_str(b, g->uuid, strlen(g->uuid));
    gp_buf_puts(b, ",\"fault\":");
    if (r->xid && !f->xid)
        gp_buf_printf(b, "\"xid_%u\"", r->xid); /* a code the catalog lacks */
    else
        gp_json_str(b, f->name, strlen(f->name));
    gp_buf_printf(b, ",\"xid\":%u,\"repeat\":%s,\"count\":%u,\"state\":\"%s\",\"severity\":\"%s\","
                     "\"action\":\"%s\",\"action_text\":\"%s\",\"sticky\":%s,\"present\":%s,"
                     "\"title\":",
                  r->xid, r->repeat ? "true" : "false", r->count,
                  gp_health_state_names[reason_state(r)], gp_severity_names[f->severity],
                  gp_fault_action_names[a], gp_fault_action_words[a], r->sticky ? "true" : "false",
                  r->present ? "true" : "false");
    gp_json_str(b, title, strlen(title));
    gp_buf_puts(b, ",\"explanation\":");
    gp_json_str(b, f->explanation, strlen(f->explanation));
    gp_buf_puts(b, ",\"since\":");
    gp_json_time(b, r->since);
    gp_buf_puts(b, ",\"last\":");
    gp_json_time(b, r->last);
    gp_buf_putc(b, '}');
}

struct ref {
    const struct hgpu *g;
    const struct reason *r;
};

static int ref_cmp(const void *a, const void *b)
{
    const struct ref *x = a, *y = b;
    int d = reason_cmp(x->r, y->r);
    return d ? d : strcmp(x->g->gpu, y->g->gpu);
}

static int gpu_cmp(const void *a, const void *b)
{
    const struct hgpu *x = *(const struct hgpu *const *)a, *y = *(const struct hgpu *const *)b;
    size_t lx = strlen(x->gpu), ly = strlen(y->gpu); /* "2" before "10" */
    return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x->gpu, y->gpu);
}

static int json_node(const struct gp_health *h, const struct hnode *n, struct gp_buf *b)
{
    unsigned ng = 0, nr = 0;
    for (unsigned i = 0; i < h->ng; i++)
        if (!strcmp(h->g[i].node, n->node))
            ng++, nr += h->g[i].nr;
    const struct hgpu **gs = malloc((ng ? ng : 1) * sizeof *gs);
    struct ref *rs = malloc((nr ? nr : 1) * sizeof *rs);
    if (!gs || !rs) {
        free(gs);
        free(rs);
        return GP_ENOMEM;
    }
    ng = nr = 0;
    for (unsigned i = 0; i < h->ng; i++) {
        if (strcmp(h->g[i].node, n->node))
            continue;
        gs[ng++] = &h->g[i];
        for (unsigned k = 0; k < h->g[i].nr; k++)
            rs[nr++] = (struct ref){&h->g[i], &h->g[i].r[k]};
    }
    qsort(gs, ng, sizeof *gs, gpu_cmp);
    qsort(rs, nr, sizeof *rs, ref_cmp);
    gp_buf_puts(b, "{\"node\":");
    gp_json_str(b, n->node, strlen(n->node));
    gp_buf_printf(b, ",\"state\":\"%s\",\"since\":", gp_health_state_names[n->state]);
    gp_json_time(b, n->since);
    enum gp_fault_action a = nr ? reason_action(rs[0].r) : GP_FA_NONE;
    gp_buf_printf(b, ",\"action\":\"%s\",\"action_text\":\"%s\",\"reasons\":[",
                  gp_fault_action_names[a], gp_fault_action_words[a]);
    for (unsigned i = 0; i < nr; i++) {
        if (i)
            gp_buf_putc(b, ',');
        json_reason(b, rs[i].g, rs[i].r);
    }
    gp_buf_puts(b, "],\"preflight\":");
    if (n->pf_have) {
        gp_buf_printf(b, "{\"ok\":%s,\"summary\":", n->pf_ok ? "true" : "false");
        gp_json_str(b, n->pf_summary, strlen(n->pf_summary));
        gp_buf_puts(b, ",\"at\":");
        gp_json_time(b, n->pf_at);
        gp_buf_putc(b, '}');
    } else {
        gp_buf_puts(b, "null");
    }
    gp_buf_puts(b, ",\"gpus\":[");
    for (unsigned i = 0; i < ng; i++) {
        const struct hgpu *g = gs[i];
        const struct reason *top = NULL;
        for (unsigned k = 0; k < g->nr; k++)
            if (!top || reason_cmp(&g->r[k], top) < 0)
                top = &g->r[k];
        enum gp_fault_action ga = top ? reason_action(top) : GP_FA_NONE;
        gp_buf_printf(b, "%s{\"gpu\":", i ? "," : "");
        gp_json_str(b, g->gpu, strlen(g->gpu));
        gp_buf_puts(b, ",\"uuid\":");
        gp_json_str(b, g->uuid, strlen(g->uuid));
        gp_buf_printf(b, ",\"state\":\"%s\",\"since\":", gp_health_state_names[g->state]);
        gp_json_time(b, g->since);
        gp_buf_printf(b, ",\"action\":\"%s\",\"reasons\":%u}", gp_fault_action_names[ga], g->nr);
    }
    gp_buf_puts(b, "]}");
    free(gs);
    free(rs);
    return GP_OK;
}

static int node_cmp(const void *a, const void *b)
{
    const struct hnode *x = *(const struct hnode *const *)a, *y = *(const struct hnode *const *)b;
    return strcmp(x->node, y->node);
}

int gp_health_json(struct gp_health *h, const char *node, struct gp_buf *out)
{
    pthread_mutex_lock(&h->mu);
    int rc = GP_OK;
    if (node) {
        const struct hnode *n = find_node(h, node, false);
        rc = n ? json_node(h, n, out) : GP_ENOTFOUND;
    } else {
        const struct hnode **ns = malloc((h->nn ? h->nn : 1) * sizeof *ns);
        if (!ns) {
            rc = GP_ENOMEM;
        } else {
            for (unsigned i = 0; i < h->nn; i++)
                ns[i] = &h->n[i];
            qsort(ns, h->nn, sizeof *ns, node_cmp);
            gp_buf_putc(out, '[');
            for (unsigned i = 0; i < h->nn && !rc; i++) {
                if (i)
                    gp_buf_putc(out, ',');
                rc = json_node(h, ns[i], out);
            }
            gp_buf_putc(out, ']');
            free(ns);
        }
    }
    pthread_mutex_unlock(&h->mu);
    return rc ? rc : out->err;
}
