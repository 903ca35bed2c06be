/*
 * router.c - the router (router.h).
 *
 * Memory mirrors state.db: an array of groups, each with its alerts (a
 * copy of what a notice needs, a firing flag and a sent flag: 1 once the
 * alert's current status went out). Every change is written through to
 * notify_groups / notify_group_alerts: the events of one run in one
 * transaction, each emitted notice with its group's new state in another
 * (gp_outbox_insert on this connection), and memory changes only after
 * that commit succeeded; a failed commit leaves the group due, so the
 * next run tries again rather than losing or repeating the notice.
 *
 * The queue between the listener (evaluation thread) and the router's
 * thread is a linked list under r->mu; the listener only copies and
 * links. Everything else (groups, the connection) belongs to whoever
 * calls gp_router_run: the thread, or a test with no thread.
 */
#include "notify/router.h"

#include "insight/detect.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "notify/notice.h"
#include "state/state.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GROUPS_MAX 10000
#define GROUP_ALERTS_MAX 100000
#define KEY_LEN 2048
#define VAL_LEN 256
#define TICK_MS 200

struct ralert {
    char id[64], kind[128], severity[16], node[128], gpu[16], job[256], rank[16];
    char *summary, *evidence, *runbook; /* owned */
    double value;
    int64_t starts_ms, ends_ms;
    bool firing, sent, pick;
};

struct group {
    char key[KEY_LEN];
    size_t route;
    unsigned nl;
    const char *lname[GP_NL__COUNT];
    char lval[GP_NL__COUNT][VAL_LEN];
    int64_t created, last_sent; /* last_sent 0: never */
    struct ralert *a;           /* owned */
    size_t n, cap;
};

struct qev {
    struct qev *next;
    char id[64], kind[128], severity[16], node[128], gpu[16], job[256], rank[16];
    char *summary, *evidence, *runbook; /* owned */
    double value;
    int64_t at_ms;
    enum gp_alert_state to;
};

struct gp_router {
    struct gp_router_options o;
    sqlite3 *db;
    struct group **g; /* owned */
    size_t ng, gcap;

    pthread_mutex_t mu; /* the queue, the stop flag and the counters */
    pthread_cond_t cv;
    struct qev *head, *tail;
    size_t qn;
    bool stopping, started;
    pthread_t thread;
    struct gp_router_stats st;
};

static int64_t now_of(const struct gp_router *r)
{
    return r->o.now_ms ? r->o.now_ms(r->o.clock_ctx) : gp_wall_ms();
}

static void count(struct gp_router *r, uint64_t *c, uint64_t n)
{
    pthread_mutex_lock(&r->mu);
    *c += n;
    pthread_mutex_unlock(&r->mu);
}

static void free_alert(struct ralert *a)
{
    free(a->summary);
    free(a->evidence);
    free(a->runbook);
}

static void free_group(struct group *g)
{
    for (size_t i = 0; i < g->n; i++)
        free_alert(&g->a[i]);
    free(g->a);
    free(g);
}

static char *dup0(const char *s)
{
    return strdup(s ? s : "");
}

/* ---- SQL ---- */

static int exec(sqlite3 *db, const char *sql)
{
    return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? GP_OK : GP_EIO;
}

/* Ends a failed transaction; returns SQLite's message of the statement
 * that failed, read first: after a failed BEGIN, or a COMMIT that SQLite
 * rolled back itself (a full disk), no transaction is open, and a
 * ROLLBACK's "cannot rollback - no transaction is active" would replace
 * the real reason. */
static const char *abort_txn(sqlite3 *db, char *why, size_t n)
{
    snprintf(why, n, "%s", sqlite3_errmsg(db));
    if (!sqlite3_get_autocommit(db))
        exec(db, "ROLLBACK;");
    return why;
}

/* Runs sql with text binds (NULL-ended list of up to 4) and ints. */
static int run_sql(sqlite3 *db, const char *sql, const char *t1, const char *t2, const char *t3,
                   int64_t i4, int64_t i5)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return GP_EIO;
    int np = sqlite3_bind_parameter_count(st);
    const char *t[3] = {t1, t2, t3};
    for (int i = 0; i < 3 && i < np; i++)
        sqlite3_bind_text(st, i + 1, t[i] ? t[i] : "", -1, SQLITE_STATIC);
    if (np >= 4)
        sqlite3_bind_int64(st, 4, i4);
    if (np >= 5)
        sqlite3_bind_int64(st, 5, i5);
    int rc = sqlite3_step(st) == SQLITE_DONE ? GP_OK : GP_EIO;
    sqlite3_finalize(st);
    return rc;
}

static char *alert_json(const struct ralert *a)
{
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:b}", "id", a->id, "kind",
                          a->kind, "severity", a->severity, "node", a->node, "gpu", a->gpu, "job",
                          a->job, "rank", a->rank, "summary", a->summary, "evidence", a->evidence,
                          "runbook", a->runbook, "starts_ms", (json_int_t)a->starts_ms, "ends_ms",
                          (json_int_t)a->ends_ms, "firing", a->firing);
    if (!o)
        return NULL;
    json_object_set_new(o, "value", json_real(a->value)); /* null when not finite */
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

static void jcopy(char *dst, size_t n, json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    snprintf(dst, n, "%s", s ? s : "");
}

static int alert_from_json(const char *text, struct ralert *a)
{
    memset(a, 0, sizeof *a);
    json_t *o = json_loads(text, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return GP_EPARSE;
    }
    jcopy(a->id, sizeof a->id, o, "id");
    jcopy(a->kind, sizeof a->kind, o, "kind");
    jcopy(a->severity, sizeof a->severity, o, "severity");
    jcopy(a->node, sizeof a->node, o, "node");
    jcopy(a->gpu, sizeof a->gpu, o, "gpu");
    jcopy(a->job, sizeof a->job, o, "job");
    jcopy(a->rank, sizeof a->rank, o, "rank");
    a->summary = dup0(json_string_value(json_object_get(o, "summary")));
    a->evidence = dup0(json_string_value(json_object_get(o, "evidence")));
    a->runbook = dup0(json_string_value(json_object_get(o, "runbook")));
    json_t *v = json_object_get(o, "value");
    a->value = json_is_number(v) ? json_number_value(v) : NAN;
    a->starts_ms = (int64_t)json_integer_value(json_object_get(o, "starts_ms"));
    a->ends_ms = (int64_t)json_integer_value(json_object_get(o, "ends_ms"));
    a->firing = json_is_true(json_object_get(o, "firing"));
    json_decref(o);
    if (!a->summary || !a->evidence || !a->runbook) {
        free_alert(a);
        return GP_ENOMEM;
    }
    return a->id[0] ? GP_OK : GP_EPARSE;
}

static int save_alert(sqlite3 *db, const struct group *g, const struct ralert *a)
{
    char *j = alert_json(a);
    if (!j)
        return GP_ENOMEM;
    int rc = run_sql(db,
                     "INSERT OR REPLACE INTO notify_group_alerts(gkey, id, alert, sent)"
                     " VALUES(?1, ?2, ?3, ?4)",
                     g->key, a->id, j, a->sent, 0);
    free(j);
    return rc;
}

static int save_group(struct gp_router *r, const struct group *g)
{
    json_t *labels = json_array();
    for (unsigned i = 0; labels && i < g->nl; i++)
        json_array_append_new(labels, json_pack("[ss]", g->lname[i], g->lval[i]));
    json_t *o = labels ? json_pack("{s:I,s:o}", "route", (json_int_t)g->route, "labels", labels) : NULL;
    char *j = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!j)
        return GP_ENOMEM;
    const struct gp_notify_route *rt = &r->o.cfg->routes[g->route];
    int rc = run_sql(r->db,
                     "INSERT OR REPLACE INTO notify_groups(key, receiver, labels, created, last_sent)"
                     " VALUES(?1, ?2, ?3, ?4, ?5)",
                     g->key, rt->receiver, j, g->created, g->last_sent);
    free(j);
    return rc;
}

/* ---- loading ---- */

static struct group *find_group(struct gp_router *r, const char *key)
{
    for (size_t i = 0; i < r->ng; i++)
        if (!strcmp(r->g[i]->key, key))
            return r->g[i];
    return NULL;
}

static int add_group(struct gp_router *r, struct group *g)
{
    if (r->ng == r->gcap) {
        size_t cap = r->gcap ? r->gcap * 2 : 16;
        struct group **p = realloc(r->g, cap * sizeof *p);
        if (!p)
            return GP_ENOMEM;
        r->g = p;
        r->gcap = cap;
    }
    r->g[r->ng++] = g;
    return GP_OK;
}

static struct ralert *add_alert(struct group *g)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 4;
        struct ralert *p = realloc(g->a, cap * sizeof *p);
        if (!p)
            return NULL;
        g->a = p;
        g->cap = cap;
    }
    struct ralert *a = &g->a[g->n++];
    memset(a, 0, sizeof *a);
    return a;
}

static int load(struct gp_router *r, char *why, size_t whylen)
{
    const struct gp_notify_config *c = r->o.cfg;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, "SELECT key, receiver, labels, created, last_sent FROM notify_groups",
                           -1, &st, NULL) != SQLITE_OK)
        return GP_EIO;
    int rc = GP_OK;
    while (rc == GP_OK && sqlite3_step(st) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(st, 0);
        const char *recv = (const char *)sqlite3_column_text(st, 1);
        json_t *o = json_loads((const char *)sqlite3_column_text(st, 2), 0, NULL);
        json_int_t route = json_integer_value(json_object_get(o, "route"));
        json_t *labels = json_object_get(o, "labels");
        /* a group of a route that is gone or now names another receiver: dropped */
        if (!key || strlen(key) >= KEY_LEN || !json_is_array(labels) || route < 0 ||
            (size_t)route >= c->nroutes || !recv || strcmp(c->routes[route].receiver, recv)) {
            json_decref(o);
            continue;
        }
        struct group *g = calloc(1, sizeof *g);
        if (!g) {
            json_decref(o);
            rc = GP_ENOMEM;
            break;
        }
        snprintf(g->key, sizeof g->key, "%s", key);
        g->route = (size_t)route;
        for (size_t i = 0; i < json_array_size(labels) && g->nl < GP_NL__COUNT; i++) {
            const char *n = json_string_value(json_array_get(json_array_get(labels, i), 0));
            const char *v = json_string_value(json_array_get(json_array_get(labels, i), 1));
            for (unsigned k = 0; n && v && k < GP_NL__COUNT; k++)
                if (!strcmp(n, gp_notify_label_names[k])) {
                    g->lname[g->nl] = gp_notify_label_names[k];
                    snprintf(g->lval[g->nl++], VAL_LEN, "%s", v);
                    break;
                }
        }
        json_decref(o);
        g->created = sqlite3_column_int64(st, 3);
        g->last_sent = sqlite3_column_int64(st, 4);
        if ((rc = add_group(r, g)))
            free(g);
    }
    sqlite3_finalize(st);
    if (rc)
        return rc;
    if (sqlite3_prepare_v2(r->db, "SELECT gkey, alert, sent FROM notify_group_alerts", -1, &st,
                           NULL) != SQLITE_OK)
        return GP_EIO;
    while (rc == GP_OK && sqlite3_step(st) == SQLITE_ROW) {
        struct group *g = find_group(r, (const char *)sqlite3_column_text(st, 0));
        if (!g)
            continue;
        struct ralert tmp;
        const char *text = (const char *)sqlite3_column_text(st, 1);
        if (!text || alert_from_json(text, &tmp))
            continue;
        tmp.sent = sqlite3_column_int(st, 2) != 0;
        struct ralert *a = add_alert(g);
        if (!a) {
            free_alert(&tmp);
            rc = GP_ENOMEM;
            break;
        }
        *a = tmp;
    }
    sqlite3_finalize(st);
    if (rc)
        return rc;
    /* the database as memory now is: rows of dropped groups and orphans go */
    if (exec(r->db, "BEGIN IMMEDIATE;") ||
        exec(r->db, "DELETE FROM notify_groups; DELETE FROM notify_group_alerts;"))
        goto fail;
    for (size_t i = 0; i < r->ng; i++) {
        struct group *g = r->g[i];
        if ((rc = save_group(r, g)))
            goto fail;
        for (size_t k = 0; k < g->n; k++)
            if ((rc = save_alert(r->db, g, &g->a[k])))
                goto fail;
    }
    if (exec(r->db, "COMMIT;"))
        goto fail;
    return GP_OK;
fail:
    abort_txn(r->db, why, whylen);
    return rc ? rc : GP_EIO;
}

/* ---- events ---- */

static const char *label_of(const struct qev *e, enum gp_notify_label l)
{
    switch (l) {
    case GP_NL_KIND: return e->kind;
    case GP_NL_SEVERITY: return e->severity;
    case GP_NL_JOB: return e->job;
    case GP_NL_NODE: return e->node;
    case GP_NL_GPU: return e->gpu;
    case GP_NL_RANK: return e->rank;
    default: return "";
    }
}

static bool route_matches(const struct gp_notify_route *rt, const struct qev *e)
{
    for (unsigned l = 0; l < GP_NL__COUNT; l++)
        if (rt->has_match[l] && strcmp(rt->match[l], label_of(e, (enum gp_notify_label)l)))
            return false;
    return true;
}

/* The group labels of e under rt: group_by, with node for job when e has no job. */
static void group_labels(const struct gp_notify_route *rt, const struct qev *e, struct group *g)
{
    g->nl = 0;
    for (unsigned i = 0; i < rt->ngroup_by && i < GP_NL__COUNT; i++) {
        enum gp_notify_label l = rt->group_by[i];
        if (l == GP_NL_JOB && !e->job[0])
            l = GP_NL_NODE;
        bool dup = false;
        for (unsigned k = 0; k < g->nl; k++)
            dup |= !strcmp(g->lname[k], gp_notify_label_names[l]);
        if (dup)
            continue;
        g->lname[g->nl] = gp_notify_label_names[l];
        snprintf(g->lval[g->nl++], VAL_LEN, "%s", label_of(e, l));
    }
}

static void group_key(struct group *g)
{
    size_t o = (size_t)snprintf(g->key, sizeof g->key, "{route=\"%zu\"}:{", g->route);
    for (unsigned i = 0; i < g->nl && o < sizeof g->key; i++) {
        o += (size_t)snprintf(g->key + o, sizeof g->key - o, "%s%s=\"", i ? "," : "", g->lname[i]);
        for (const char *p = g->lval[i]; *p && o + 3 < sizeof g->key; p++) {
            if (*p == '"' || *p == '\\')
                g->key[o++] = '\\';
            g->key[o++] = *p;
        }
        if (o + 1 < sizeof g->key)
            g->key[o++] = '"';
        g->key[o < sizeof g->key ? o : sizeof g->key - 1] = '\0';
    }
    if (o + 1 < sizeof g->key)
        strcat(g->key, "}");
}

static void fill_alert(struct ralert *a, const struct qev *e)
{
    snprintf(a->id, sizeof a->id, "%s", e->id);
    snprintf(a->kind, sizeof a->kind, "%s", e->kind);
    snprintf(a->severity, sizeof a->severity, "%s", e->severity);
    snprintf(a->node, sizeof a->node, "%s", e->node);
    snprintf(a->gpu, sizeof a->gpu, "%s", e->gpu);
    snprintf(a->job, sizeof a->job, "%s", e->job);
    snprintf(a->rank, sizeof a->rank, "%s", e->rank);
}

static int set_text(char **dst, const char *s)
{
    char *d = dup0(s);
    if (!d)
        return GP_ENOMEM;
    free(*dst);
    *dst = d;
    return GP_OK;
}

static int on_firing(struct gp_router *r, const struct qev *e, int64_t now)
{
    const struct gp_notify_config *c = r->o.cfg;
    for (size_t i = 0; i < c->nroutes; i++) {
        const struct gp_notify_route *rt = &c->routes[i];
        if (!route_matches(rt, e))
            continue;
        struct group probe;
        memset(&probe, 0, sizeof probe);
        probe.route = i;
        group_labels(rt, e, &probe);
        group_key(&probe);
        struct group *g = find_group(r, probe.key);
        int rc;
        if (!g) {
            if (r->ng >= GROUPS_MAX) {
                count(r, &r->st.dropped, 1);
                goto next;
            }
            if (!(g = malloc(sizeof *g)))
                return GP_ENOMEM;
            *g = probe;
            /* group_wait runs from the first alert's firing, not from when the
             * router got to it */
            g->created = e->at_ms > 0 && e->at_ms <= now ? e->at_ms : now;
            if ((rc = add_group(r, g))) {
                free(g);
                return rc;
            }
            if ((rc = save_group(r, g)))
                return rc;
        }
        struct ralert *a = NULL;
        for (size_t k = 0; k < g->n && !a; k++)
            if (!strcmp(g->a[k].id, e->id))
                a = &g->a[k];
        if (!a) {
            if (g->n >= GROUP_ALERTS_MAX) {
                count(r, &r->st.dropped, 1);
                goto next;
            }
            if (!(a = add_alert(g)))
                return GP_ENOMEM;
            a->value = e->value;
        }
        if (!a->firing || !a->starts_ms) { /* new, or firing again after a resolution */
            a->sent = false;
            a->starts_ms = e->at_ms;
            a->ends_ms = 0;
        }
        a->firing = true;
        a->value = e->value;
        fill_alert(a, e);
        if ((rc = set_text(&a->summary, e->summary)) || (rc = set_text(&a->evidence, e->evidence)) ||
            (rc = set_text(&a->runbook, e->runbook)) || (rc = save_alert(r->db, g, a)))
            return rc;
    next:
        if (!rt->cont)
            break;
    }
    return GP_OK;
}

static int on_resolved(struct gp_router *r, const struct qev *e)
{
    for (size_t i = 0; i < r->ng; i++) {
        struct group *g = r->g[i];
        for (size_t k = 0; k < g->n; k++) {
            struct ralert *a = &g->a[k];
            if (strcmp(a->id, e->id) || !a->firing)
                continue;
            a->firing = false;
            a->sent = false;
            a->ends_ms = e->at_ms > a->starts_ms ? e->at_ms : a->starts_ms + 1;
            a->value = e->value;
            int rc;
            if ((rc = set_text(&a->summary, e->summary)) || (rc = set_text(&a->evidence, e->evidence)) ||
                (rc = save_alert(r->db, g, a)))
                return rc;
        }
    }
    return GP_OK;
}

static void free_qev(struct qev *e)
{
    free(e->summary);
    free(e->evidence);
    free(e->runbook);
    free(e);
}

/* Applies the queued events in one transaction. */
static int apply_events(struct gp_router *r, int64_t now)
{
    pthread_mutex_lock(&r->mu);
    struct qev *e = r->head;
    r->head = r->tail = NULL;
    r->qn = 0;
    pthread_mutex_unlock(&r->mu);
    if (!e)
        return GP_OK;
    int rc = exec(r->db, "BEGIN IMMEDIATE;");
    uint64_t n = 0;
    while (e) {
        struct qev *next = e->next;
        if (!rc)
            rc = e->to == GP_ALERT_FIRING ? on_firing(r, e, now) : on_resolved(r, e);
        free_qev(e);
        e = next;
        n++;
    }
    if (rc || exec(r->db, "COMMIT;")) {
        /* memory stays ahead of the database: the next emission of these
         * groups writes their whole state again (emit's save) */
        char why[200];
        abort_txn(r->db, why, sizeof why);
        count(r, &r->st.db_errors, 1);
        gp_log(GP_LOG_WARN, "notify", "cannot save the router's groups", "error=\"%s\"", why);
        rc = rc ? rc : GP_EIO;
    }
    count(r, &r->st.events, n);
    return rc;
}

/* ---- emission ---- */

/* Whether g is due at now; marks the alerts of its notice (pick). */
static bool pick(struct gp_router *r, struct group *g, int64_t now)
{
    const struct gp_notify_route *rt = &r->o.cfg->routes[g->route];
    bool am = r->o.cfg->recv[rt->recv].type == GP_RT_ALERTMANAGER;
    bool news = false, firing = false;
    for (size_t i = 0; i < g->n; i++) {
        news |= !g->a[i].sent;
        firing |= g->a[i].firing;
    }
    bool due, all_firing;
    if (am) {
        due = news || (firing && now >= g->last_sent + rt->group_interval_ms);
        all_firing = true;
    } else if (news) {
        due = now >= (g->last_sent ? g->last_sent + rt->group_interval_ms : g->created + rt->group_wait_ms);
        all_firing = false;
    } else {
        due = firing && now >= g->last_sent + rt->repeat_interval_ms;
        all_firing = true;
    }
    if (!due)
        return false;
    size_t n = 0;
    for (size_t i = 0; i < g->n; i++) {
        struct ralert *a = &g->a[i];
        a->pick = n < GP_NOTICE_ALERTS_MAX && (!a->sent || (all_firing && a->firing));
        n += a->pick;
    }
    return n > 0;
}

static int emit(struct gp_router *r, struct group *g, int64_t now)
{
    const struct gp_notify_config *c = r->o.cfg;
    const struct gp_notify_route *rt = &c->routes[g->route];
    size_t n = 0;
    for (size_t i = 0; i < g->n; i++)
        n += g->a[i].pick;
    struct gp_notice_alert *na = calloc(n, sizeof *na);
    if (!na)
        return GP_ENOMEM;
    bool firing = false;
    size_t k = 0;
    for (size_t i = 0; i < g->n; i++) {
        const struct ralert *a = &g->a[i];
        if (!a->pick)
            continue;
        firing |= a->firing;
        na[k++] = (struct gp_notice_alert){
            .id = a->id, .kind = a->kind, .severity = a->severity,
            .status = a->firing ? "firing" : "resolved", .node = a->node, .gpu = a->gpu,
            .job = a->job, .rank = a->rank, .summary = a->summary, .evidence = a->evidence,
            .runbook = a->runbook, .value = a->value, .starts_ms = a->starts_ms,
            .ends_ms = a->firing ? 0 : a->ends_ms};
    }
    struct gp_notice nt = {.receiver = rt->receiver, .group_key = g->key,
                           .status = firing ? "firing" : "resolved", .alerts = na, .nalerts = n,
                           .external_url = c->external_url};
    for (unsigned i = 0; i < g->nl && i < 7; i++) {
        nt.group_labels[i][0] = g->lname[i];
        nt.group_labels[i][1] = g->lval[i];
    }
    char id[GP_OUTBOX_ID_LEN];
    int rc = exec(r->db, "BEGIN IMMEDIATE;");
    if (!rc)
        rc = gp_outbox_insert(r->db, &nt, now, id);
    free(na);
    /* the group's state after this notice: sent flags, resolved ones gone */
    size_t left = 0;
    for (size_t i = 0; !rc && i < g->n; i++) {
        struct ralert a = g->a[i];
        if (a.pick)
            a.sent = true;
        if (a.sent && !a.firing)
            rc = run_sql(r->db, "DELETE FROM notify_group_alerts WHERE gkey = ?1 AND id = ?2", g->key,
                         a.id, NULL, 0, 0);
        else {
            left++;
            rc = save_alert(r->db, g, &a);
        }
    }
    int64_t last = g->last_sent;
    g->last_sent = now;
    if (!rc)
        rc = left ? save_group(r, g)
                  : run_sql(r->db, "DELETE FROM notify_groups WHERE key = ?1", g->key, NULL, NULL, 0, 0);
    if (rc || exec(r->db, "COMMIT;")) {
        char why[200];
        abort_txn(r->db, why, sizeof why);
        g->last_sent = last;
        count(r, &r->st.db_errors, 1);
        gp_log(GP_LOG_WARN, "notify", "cannot write a notification", "receiver=%s error=\"%s\"",
               rt->receiver, why);
        return rc ? rc : GP_EIO;
    }
    /* committed: memory follows */
    size_t w = 0;
    for (size_t i = 0; i < g->n; i++) {
        struct ralert *a = &g->a[i];
        if (a->pick)
            a->sent = true;
        a->pick = false;
        if (a->sent && !a->firing)
            free_alert(a);
        else
            g->a[w++] = *a;
    }
    g->n = w;
    count(r, &r->st.notices, 1);
    gp_log(GP_LOG_DEBUG, "notify", "notification queued", "receiver=%s group=%s alerts=%zu id=%s",
           rt->receiver, g->key, k, id);
    return GP_OK;
}

int gp_router_run(struct gp_router *r, int64_t now, size_t *emitted)
{
    size_t n = 0;
    int rc = apply_events(r, now), rc2 = GP_OK;
    for (size_t i = 0; i < r->ng;) {
        struct group *g = r->g[i];
        if (g->n && pick(r, g, now)) {
            int e = emit(r, g, now);
            if (e) {
                rc2 = e;
                for (size_t k = 0; k < g->n; k++)
                    g->a[k].pick = false;
            } else {
                n++;
            }
        }
        if (!g->n) { /* all resolved and notified */
            free_group(g);
            r->g[i] = r->g[--r->ng];
            continue;
        }
        i++;
    }
    if (n && r->o.outbox)
        gp_outbox_wake(r->o.outbox);
    size_t na = 0;
    for (size_t i = 0; i < r->ng; i++)
        na += r->g[i]->n;
    pthread_mutex_lock(&r->mu);
    r->st.groups = r->ng;
    r->st.alerts = na;
    pthread_mutex_unlock(&r->mu);
    if (emitted)
        *emitted = n;
    return rc ? rc : rc2;
}

/* ---- the listener and the thread ---- */

void gp_router_listener(void *ctx, const struct gp_alert_event *ev)
{
    struct gp_router *r = ctx;
    if (ev->to == GP_ALERT_PENDING || (ev->to == GP_ALERT_FIRING && ev->silenced) ||
        (ev->to == GP_ALERT_FIRING && ev->from == GP_ALERT_FIRING))
        return;
    struct qev *e = calloc(1, sizeof *e);
    if (!e) {
        count(r, &r->st.dropped, 1);
        return;
    }
    snprintf(e->id, sizeof e->id, "%s", ev->id ? ev->id : "");
    snprintf(e->kind, sizeof e->kind, "%s", ev->kind ? ev->kind : "");
    snprintf(e->severity, sizeof e->severity, "%s",
             (unsigned)ev->severity < GP_SEV__COUNT ? gp_severity_names[ev->severity] : "");
    if (ev->key) {
        snprintf(e->node, sizeof e->node, "%s", ev->key->node);
        snprintf(e->gpu, sizeof e->gpu, "%s", ev->key->gpu);
        snprintf(e->job, sizeof e->job, "%s", ev->key->job);
        if (ev->key->rank >= 0)
            snprintf(e->rank, sizeof e->rank, "%d", (int)ev->key->rank);
    }
    e->summary = dup0(ev->summary);
    e->evidence = dup0(ev->evidence);
    e->runbook = dup0(ev->runbook);
    e->value = ev->value;
    e->at_ms = ev->at_ms;
    e->to = ev->to;
    pthread_mutex_lock(&r->mu);
    if (!e->summary || !e->evidence || !e->runbook || r->qn >= GP_ROUTER_QUEUE_MAX) {
        r->st.dropped++;
        pthread_mutex_unlock(&r->mu);
        free_qev(e);
        return;
    }
    if (r->tail)
        r->tail->next = e;
    else
        r->head = e;
    r->tail = e;
    r->qn++;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static void *loop(void *arg)
{
    struct gp_router *r = arg;
    pthread_mutex_lock(&r->mu);
    while (!r->stopping) {
        if (!r->head) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += TICK_MS * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&r->cv, &r->mu, &ts);
            if (r->stopping)
                break;
        }
        pthread_mutex_unlock(&r->mu);
        gp_router_run(r, now_of(r), NULL);
        pthread_mutex_lock(&r->mu);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

int gp_router_open(struct gp_router **out, const struct gp_router_options *o, char *err,
                   size_t errlen)
{
    *out = NULL;
    struct gp_router *r = calloc(1, sizeof *r);
    if (!r)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    r->o = *o;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    int rc = gp_state_open(&r->db, o->dir, err, errlen);
    char why[200] = "";
    if (!rc && (rc = load(r, why, sizeof why)))
        gp_seterr(err, errlen, rc, "cannot load the notification groups from state.db: %s",
                  why[0] ? why : sqlite3_errmsg(r->db));
    if (rc) {
        gp_router_close(r);
        return rc;
    }
    size_t na = 0;
    for (size_t i = 0; i < r->ng; i++)
        na += r->g[i]->n;
    r->st.groups = r->ng;
    r->st.alerts = na;
    *out = r;
    return GP_OK;
}

int gp_router_start(struct gp_router *r)
{
    if (pthread_create(&r->thread, NULL, loop, r))
        return GP_ENOMEM;
    r->started = true;
    return GP_OK;
}

void gp_router_close(struct gp_router *r)
{
    if (!r)
        return;
    if (r->started) {
        pthread_mutex_lock(&r->mu);
        r->stopping = true;
        pthread_cond_signal(&r->cv);
        pthread_mutex_unlock(&r->mu);
        pthread_join(r->thread, NULL);
    }
    if (r->db)
        apply_events(r, now_of(r)); /* what was queued is kept for the next start */
    for (struct qev *e = r->head, *next; e; e = next) {
        next = e->next;
        free_qev(e);
    }
    for (size_t i = 0; i < r->ng; i++)
        free_group(r->g[i]);
    free(r->g);
    gp_state_close(r->db);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

void gp_router_stats(struct gp_router *r, struct gp_router_stats *out)
{
    pthread_mutex_lock(&r->mu);
    *out = r->st;
    pthread_mutex_unlock(&r->mu);
}
