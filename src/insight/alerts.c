/*
 * alerts.c - the alert state machine, its SQLite rows and its JSON
 * (alerts.h).
 *
 * In memory: a hash table of alerts by fingerprint (chained, 4096
 * buckets, at most GP_ALERTS_MAX entries) holding the pending and firing
 * alerts and the resolved ones still in cool-down; the silences not yet
 * ended. A tick marks what it observes; gp_alerts_end judges the rest,
 * drops resolved alerts whose cool-down is over, and then, outside the
 * lock, writes the tick's transitions (copies queued during the tick) in
 * one transaction and calls the listeners. The API reads rows from
 * SQLite (history, filters, transitions) and takes the live value,
 * summary, evidence and silenced flag of active alerts from memory, since
 * rows are only written at transitions.
 */
#include "insight/alerts.h"

#include "lib/err.h"
#include "lib/log.h"
#include "lib/json.h"
#include "state/state.h"

#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

const char *const gp_alert_state_names[3] = {"pending", "firing", "resolved"};

#define NBUCKETS 4096
#define TRANSITIONS_MAX 1000

struct alert {
    struct alert *next;        /* bucket chain */
    uint64_t fp;
    char id[17];
    char kind[GP_ALERT_KIND_LEN];
    enum gp_severity severity;
    enum gp_alert_state state;
    struct gp_obs_key key;
    char labels[GP_ALERT_LABELS_LEN]; /* full JSON object */
    char group[GP_VIEW_NODE_LEN + 16];
    char summary[256], evidence[768], runbook[GP_ALERT_RUNBOOK_LEN];
    double value;
    int64_t started, firing_since, resolved; /* ms; 0: not yet */
    int64_t clear_since;       /* firing and not bad since; 0: bad */
    int64_t for_ms, clear_for_ms, cooldown_ms;
    bool silenced;
    int64_t seen_tick;         /* tick number of the last observation */
    bool seen_bad;
};

/* One queued transition: a copy of the alert after it, and where from. */
struct transition {
    struct alert a;
    int from;                  /* -1: a new alert */
};

struct gp_alerts {
    pthread_mutex_t mu;
    /* Orders writers of the connection: a tick's transaction and the
     * silences' statements (which would otherwise join it, and go with
     * its rollback). Taken after mu when both are held. */
    pthread_mutex_t dbmu;
    sqlite3 *db;
    struct alert *bucket[NBUCKETS];
    size_t nalerts;
    struct gp_silence *sil;
    size_t nsil;
    struct {
        gp_alert_listener fn;
        void *ctx;
    } lis[GP_ALERTS_MAX_LISTENERS];
    size_t nlis;
    int64_t now, tick;
    char held[16][GP_ALERT_KIND_LEN];
    size_t nheld;
    struct transition *q;
    size_t nq, capq;
    struct gp_alerts_stats st;
};

/* ---- keys ---- */

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static uint64_t fingerprint(const char *kind, const struct gp_obs_key *k, uint64_t extra)
{
    char tail[96];
    int n = snprintf(tail, sizeof tail, "%d\x1f%u\x1f%016llx", (int)k->rank, (unsigned)k->pid,
                     (unsigned long long)extra);
    uint64_t h = 0xcbf29ce484222325ULL;
    const char *parts[] = {kind, k->node, k->gpu, k->job};
    for (size_t i = 0; i < 4; i++) {
        h = fnv(h, parts[i], strlen(parts[i]));
        h = fnv(h, "\x1f", 1);
    }
    return fnv(h, tail, (size_t)n);
}

void gp_alert_fingerprint(const char *kind, const struct gp_obs_key *k, uint64_t extra,
                          char out[17])
{
    snprintf(out, 17, "%016llx", (unsigned long long)fingerprint(kind, k, extra));
}

static struct alert *find(struct gp_alerts *a, uint64_t fp)
{
    for (struct alert *x = a->bucket[fp % NBUCKETS]; x; x = x->next)
        if (x->fp == fp)
            return x;
    return NULL;
}

static void unlink_alert(struct gp_alerts *a, struct alert *al)
{
    struct alert **pp = &a->bucket[al->fp % NBUCKETS];
    while (*pp && *pp != al)
        pp = &(*pp)->next;
    if (*pp)
        *pp = al->next;
    a->nalerts--;
    free(al);
}

/* The labels object of an alert: the key's labels that apply, then extra. */
static void build_labels(struct alert *al, const char *extra)
{
    struct gp_buf b;
    gp_buf_init(&b, sizeof al->labels - 1);
    gp_buf_putc(&b, '{');
    const char *sep = "";
    const struct {
        const char *name, *v;
    } s[] = {{"node", al->key.node}, {"gpu", al->key.gpu}, {"job", al->key.job}};
    for (size_t i = 0; i < 3; i++)
        if (s[i].v[0]) {
            gp_buf_printf(&b, "%s\"%s\":", sep, s[i].name);
            gp_json_str(&b, s[i].v, strlen(s[i].v));
            sep = ",";
        }
    if (al->key.rank >= 0) {
        gp_buf_printf(&b, "%s\"rank\":\"%d\"", sep, (int)al->key.rank);
        sep = ",";
    }
    if (al->key.pid) {
        gp_buf_printf(&b, "%s\"pid\":\"%u\"", sep, (unsigned)al->key.pid);
        sep = ",";
    }
    if (extra && extra[0])
        gp_buf_printf(&b, "%s%s", sep, extra);
    gp_buf_putc(&b, '}');
    if (b.err || !b.data)
        snprintf(al->labels, sizeof al->labels, "{}");
    else
        snprintf(al->labels, sizeof al->labels, "%s", b.data);
    gp_buf_free(&b);
    if (al->key.job[0])
        snprintf(al->group, sizeof al->group, "job:%s", al->key.job);
    else if (al->key.node[0])
        snprintf(al->group, sizeof al->group, "node:%s", al->key.node);
    else
        snprintf(al->group, sizeof al->group, "kind:%s", al->kind);
}

void gp_alerts_each_active(struct gp_alerts *a, gp_alerts_each_fn fn, void *ctx)
{
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < NBUCKETS; i++)
        for (struct alert *x = a->bucket[i]; x; x = x->next)
            if (x->state != GP_ALERT_RESOLVED)
                fn(ctx, &x->key, x->state, x->severity);
    pthread_mutex_unlock(&a->mu);
}

/* ---- silences ---- */

static bool silence_matches(const struct gp_silence *s, const char *kind,
                            const struct gp_obs_key *k, enum gp_severity sev, int64_t now)
{
    if (now < s->starts_ms || now >= s->ends_ms)
        return false;
    return (!s->kind[0] || !strcmp(s->kind, kind)) && (!s->job[0] || !strcmp(s->job, k->job)) &&
           (!s->node[0] || !strcmp(s->node, k->node)) && (!s->gpu[0] || !strcmp(s->gpu, k->gpu)) &&
           (!s->severity[0] || !strcmp(s->severity, gp_severity_names[sev]));
}

static bool silenced_locked(struct gp_alerts *a, const char *kind, const struct gp_obs_key *k,
                            enum gp_severity sev, int64_t now)
{
    for (size_t i = 0; i < a->nsil; i++)
        if (silence_matches(&a->sil[i], kind, k, sev, now))
            return true;
    return false;
}

bool gp_alerts_silenced(struct gp_alerts *a, const char *kind, const struct gp_obs_key *k,
                        enum gp_severity sev, int64_t now_ms)
{
    pthread_mutex_lock(&a->mu);
    bool r = silenced_locked(a, kind, k, sev, now_ms);
    pthread_mutex_unlock(&a->mu);
    return r;
}

/* ---- opening and reloading ---- */

static void col_text(sqlite3_stmt *st, int col, char *out, size_t len)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    snprintf(out, len, "%s", t ? (const char *)t : "");
}

static int64_t col_ms(sqlite3_stmt *st, int col)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, col);
}

static int reload(struct gp_alerts *a, int64_t now)
{
    sqlite3_stmt *st;
    const char *sql =
        "SELECT id, kind, severity, state, node, gpu, job, rank, pid, labels, grp, summary,"
        " evidence, runbook, value, started, firing_since, resolved, silenced, for_ms,"
        " clear_for_ms, cooldown_ms FROM alerts WHERE state IN ('pending','firing')"
        " OR (state = 'resolved' AND firing_since IS NOT NULL AND resolved + cooldown_ms > ?)"
        " ORDER BY seq";
    if (sqlite3_prepare_v2(a->db, sql, -1, &st, NULL) != SQLITE_OK)
        return GP_EIO;
    sqlite3_bind_int64(st, 1, now);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct alert *al = calloc(1, sizeof *al);
        if (!al) {
            sqlite3_finalize(st);
            return GP_ENOMEM;
        }
        char buf[32];
        col_text(st, 0, al->id, sizeof al->id);
        al->fp = strtoull(al->id, NULL, 16);
        col_text(st, 1, al->kind, sizeof al->kind);
        col_text(st, 2, buf, sizeof buf);
        if (gp_severity_parse(buf, &al->severity))
            al->severity = GP_SEV_WARNING;
        col_text(st, 3, buf, sizeof buf);
        al->state = !strcmp(buf, "pending") ? GP_ALERT_PENDING
                    : !strcmp(buf, "firing") ? GP_ALERT_FIRING
                                             : GP_ALERT_RESOLVED;
        al->key.det = GP_DET__COUNT;
        for (int d = 0; d < GP_DET__COUNT; d++)
            if (!strcmp(gp_detectors[d].name, al->kind))
                al->key.det = (enum gp_detector)d;
        col_text(st, 4, al->key.node, sizeof al->key.node);
        col_text(st, 5, al->key.gpu, sizeof al->key.gpu);
        col_text(st, 6, al->key.job, sizeof al->key.job);
        al->key.rank = sqlite3_column_int(st, 7);
        al->key.pid = (uint32_t)sqlite3_column_int64(st, 8);
        col_text(st, 9, al->labels, sizeof al->labels);
        col_text(st, 10, al->group, sizeof al->group);
        col_text(st, 11, al->summary, sizeof al->summary);
        col_text(st, 12, al->evidence, sizeof al->evidence);
        col_text(st, 13, al->runbook, sizeof al->runbook);
        al->value = sqlite3_column_type(st, 14) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 14);
        al->started = col_ms(st, 15);
        al->firing_since = col_ms(st, 16);
        al->resolved = col_ms(st, 17);
        al->silenced = sqlite3_column_int(st, 18) != 0;
        al->for_ms = sqlite3_column_int64(st, 19);
        al->clear_for_ms = sqlite3_column_int64(st, 20);
        al->cooldown_ms = sqlite3_column_int64(st, 21);
        al->seen_tick = -1;
        struct alert *old = find(a, al->fp);
        if (old)
            unlink_alert(a, old); /* a newer instance of the same key */
        al->next = a->bucket[al->fp % NBUCKETS];
        a->bucket[al->fp % NBUCKETS] = al;
        a->nalerts++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return GP_EIO;
    if (sqlite3_prepare_v2(a->db,
                           "SELECT id, kind, job, node, gpu, severity, comment, created, starts_at,"
                           " ends_at FROM silences WHERE ends_at > ? ORDER BY created",
                           -1, &st, NULL) != SQLITE_OK)
        return GP_EIO;
    sqlite3_bind_int64(st, 1, now);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && a->nsil < GP_SILENCES_MAX) {
        struct gp_silence *s = &a->sil[a->nsil++];
        col_text(st, 0, s->id, sizeof s->id);
        col_text(st, 1, s->kind, sizeof s->kind);
        col_text(st, 2, s->job, sizeof s->job);
        col_text(st, 3, s->node, sizeof s->node);
        col_text(st, 4, s->gpu, sizeof s->gpu);
        col_text(st, 5, s->severity, sizeof s->severity);
        col_text(st, 6, s->comment, sizeof s->comment);
        s->created_ms = sqlite3_column_int64(st, 7);
        s->starts_ms = sqlite3_column_int64(st, 8);
        s->ends_ms = sqlite3_column_int64(st, 9);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? GP_OK : GP_EIO;
}

int gp_alerts_open(struct gp_alerts **out, const char *dir, int64_t now_ms, char *err,
                   size_t errlen)
{
    *out = NULL;
    struct gp_alerts *a = calloc(1, sizeof *a);
    if (!a)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    a->sil = calloc(GP_SILENCES_MAX, sizeof *a->sil);
    if (!a->sil) {
        free(a);
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&a->mu, NULL);
    pthread_mutex_init(&a->dbmu, NULL);
    int rc = gp_state_open(&a->db, dir, err, errlen);
    if (rc) {
        gp_alerts_close(a);
        return rc;
    }
    rc = reload(a, now_ms);
    if (rc) {
        gp_seterr(err, errlen, rc, "reading alerts from %s/state.db: %s", dir,
                  rc == GP_EIO ? sqlite3_errmsg(a->db) : gp_strerror(rc));
        gp_alerts_close(a);
        return rc;
    }
    a->tick = 0;
    *out = a;
    return GP_OK;
}

void gp_alerts_close(struct gp_alerts *a)
{
    if (!a)
        return;
    for (size_t i = 0; i < NBUCKETS; i++)
        for (struct alert *x = a->bucket[i], *n; x; x = n) {
            n = x->next;
            free(x);
        }
    gp_state_close(a->db);
    free(a->sil);
    free(a->q);
    pthread_mutex_destroy(&a->mu);
    pthread_mutex_destroy(&a->dbmu);
    free(a);
}

int gp_alerts_add_listener(struct gp_alerts *a, gp_alert_listener fn, void *ctx)
{
    pthread_mutex_lock(&a->mu);
    int rc = GP_ETOOBIG;
    if (a->nlis < GP_ALERTS_MAX_LISTENERS) {
        a->lis[a->nlis].fn = fn;
        a->lis[a->nlis].ctx = ctx;
        a->nlis++;
        rc = GP_OK;
    }
    pthread_mutex_unlock(&a->mu);
    return rc;
}

/* ---- the tick ---- */

/* Queues a transition of al (now in its new state) from `from`. */
static void queue(struct gp_alerts *a, const struct alert *al, int from)
{
    if (a->nq == a->capq) {
        size_t nc = a->capq ? a->capq * 2 : 64;
        struct transition *n = realloc(a->q, nc * sizeof *n);
        if (!n) {
            a->st.dropped++; /* the row is written at the next transition */
            return;
        }
        a->q = n;
        a->capq = nc;
    }
    a->q[a->nq].a = *al;
    a->q[a->nq].a.next = NULL;
    a->q[a->nq].from = from;
    a->nq++;
    a->st.transitions++;
}

static void set_state(struct gp_alerts *a, struct alert *al, enum gp_alert_state to)
{
    int from = (int)al->state;
    al->state = to;
    if (to == GP_ALERT_FIRING)
        al->firing_since = a->now;
    if (to == GP_ALERT_RESOLVED)
        al->resolved = a->now;
    al->silenced = silenced_locked(a, al->kind, &al->key, al->severity, a->now);
    queue(a, al, from);
}

void gp_alerts_begin(struct gp_alerts *a, int64_t now_ms)
{
    pthread_mutex_lock(&a->mu);
    a->now = now_ms;
    a->tick++;
    a->nheld = 0;
    a->nq = 0;
    pthread_mutex_unlock(&a->mu);
}

void gp_alerts_hold(struct gp_alerts *a, const char *kind)
{
    pthread_mutex_lock(&a->mu);
    if (a->nheld < sizeof a->held / sizeof a->held[0])
        snprintf(a->held[a->nheld++], GP_ALERT_KIND_LEN, "%s", kind);
    pthread_mutex_unlock(&a->mu);
}

static void copy_obs(struct alert *al, const struct gp_alert_params *p, const struct gp_observation *o)
{
    al->value = o->value;
    snprintf(al->summary, sizeof al->summary, "%s", o->summary);
    snprintf(al->evidence, sizeof al->evidence, "%s", o->evidence);
    al->severity = p->severity;
    al->for_ms = p->for_ms;
    al->clear_for_ms = p->clear_for_ms;
    al->cooldown_ms = p->cooldown_ms;
    if (p->runbook)
        snprintf(al->runbook, sizeof al->runbook, "%s", p->runbook);
}

int gp_alerts_observe(struct gp_alerts *a, const struct gp_alert_params *p,
                      const struct gp_observation *o)
{
    uint64_t fp = fingerprint(p->kind, &o->key, p->extra);
    int rc = GP_OK;
    pthread_mutex_lock(&a->mu);
    struct alert *al = find(a, fp);
    if (al && al->seen_tick == a->tick && (al->seen_bad || !o->bad))
        goto out; /* a duplicate of this tick's observation */
    if (al && al->state == GP_ALERT_RESOLVED) {
        bool cooling = al->firing_since && a->now < al->resolved + al->cooldown_ms;
        if (!o->bad || cooling) {
            if (o->bad)
                a->st.suppressed_cooldown++;
            goto out;
        }
        unlink_alert(a, al); /* a new instance of the key */
        al = NULL;
    }
    if (!al) {
        if (!o->bad)
            goto out;
        if (a->nalerts >= GP_ALERTS_MAX) {
            a->st.dropped++;
            rc = GP_ETOOBIG;
            goto out;
        }
        al = calloc(1, sizeof *al);
        if (!al) {
            a->st.dropped++;
            rc = GP_ENOMEM;
            goto out;
        }
        al->fp = fp;
        snprintf(al->id, sizeof al->id, "%016llx", (unsigned long long)fp);
        snprintf(al->kind, sizeof al->kind, "%s", p->kind);
        al->key = o->key;
        al->started = a->now;
        al->state = GP_ALERT_PENDING;
        copy_obs(al, p, o);
        build_labels(al, p->labels_json);
        al->next = a->bucket[fp % NBUCKETS];
        a->bucket[fp % NBUCKETS] = al;
        a->nalerts++;
        al->silenced = silenced_locked(a, al->kind, &al->key, al->severity, a->now);
        queue(a, al, -1);
    }
    al->seen_tick = a->tick;
    al->seen_bad = o->bad;
    if (o->bad || al->state == GP_ALERT_PENDING)
        copy_obs(al, p, o);
    else
        al->severity = p->severity;
    if (o->bad) {
        al->clear_since = 0;
        if (al->state == GP_ALERT_PENDING && a->now - al->started >= al->for_ms)
            set_state(a, al, GP_ALERT_FIRING);
    }
out:
    pthread_mutex_unlock(&a->mu);
    return rc;
}

static bool held(const struct gp_alerts *a, const char *kind)
{
    for (size_t i = 0; i < a->nheld; i++)
        if (!strcmp(a->held[i], kind))
            return true;
    return false;
}

/* Judges one alert at the end of the tick; may free it. */
static void judge(struct gp_alerts *a, struct alert *al)
{
    if (al->state == GP_ALERT_RESOLVED) {
        if (!al->firing_since || a->now >= al->resolved + al->cooldown_ms)
            unlink_alert(a, al);
        return;
    }
    bool bad = al->seen_tick == a->tick && al->seen_bad;
    if (!bad && held(a, al->kind))
        return;
    al->silenced = silenced_locked(a, al->kind, &al->key, al->severity, a->now);
    if (bad)
        return;
    if (al->state == GP_ALERT_PENDING) {
        set_state(a, al, GP_ALERT_RESOLVED);
        unlink_alert(a, al); /* never fired: no cool-down */
        return;
    }
    if (!al->clear_since)
        al->clear_since = a->now;
    if (a->now - al->clear_since >= al->clear_for_ms)
        set_state(a, al, GP_ALERT_RESOLVED);
}

static int bind_text(sqlite3_stmt *st, int i, const char *s)
{
    return sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
}

static int bind_ms(sqlite3_stmt *st, int i, int64_t ms)
{
    return ms ? sqlite3_bind_int64(st, i, ms) : sqlite3_bind_null(st, i);
}

static int bind_value(sqlite3_stmt *st, int i, double v)
{
    return isfinite(v) ? sqlite3_bind_double(st, i, v) : sqlite3_bind_null(st, i);
}

/* Writes one transition: the alert's row (inserted when new) and a
 * transition row. SQLITE_DONE on success. */
static int write_transition(sqlite3 *db, const struct transition *t)
{
    const struct alert *al = &t->a;
    sqlite3_stmt *st;
    int rc;
    if (t->from < 0) {
        rc = sqlite3_prepare_v2(
            db,
            "INSERT INTO alerts(id, kind, severity, state, node, gpu, job, rank, pid, labels, grp,"
            " summary, evidence, runbook, value, started, firing_since, resolved, silenced, for_ms,"
            " clear_for_ms, cooldown_ms) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            -1, &st, NULL);
        if (rc != SQLITE_OK)
            return rc;
        bind_text(st, 1, al->id);
        bind_text(st, 2, al->kind);
        bind_text(st, 3, gp_severity_names[al->severity]);
        bind_text(st, 4, gp_alert_state_names[al->state]);
        bind_text(st, 5, al->key.node);
        bind_text(st, 6, al->key.gpu);
        bind_text(st, 7, al->key.job);
        sqlite3_bind_int(st, 8, al->key.rank);
        sqlite3_bind_int64(st, 9, al->key.pid);
        bind_text(st, 10, al->labels);
        bind_text(st, 11, al->group);
        bind_text(st, 12, al->summary);
        bind_text(st, 13, al->evidence);
        bind_text(st, 14, al->runbook);
        bind_value(st, 15, al->value);
        sqlite3_bind_int64(st, 16, al->started);
        bind_ms(st, 17, al->firing_since);
        bind_ms(st, 18, al->resolved);
        sqlite3_bind_int(st, 19, al->silenced);
        sqlite3_bind_int64(st, 20, al->for_ms);
        sqlite3_bind_int64(st, 21, al->clear_for_ms);
        sqlite3_bind_int64(st, 22, al->cooldown_ms);
    } else {
        rc = sqlite3_prepare_v2(db,
                                "UPDATE alerts SET state=?, severity=?, summary=?, evidence=?, value=?,"
                                " firing_since=?, resolved=?, silenced=? WHERE id=? AND started=?",
                                -1, &st, NULL);
        if (rc != SQLITE_OK)
            return rc;
        bind_text(st, 1, gp_alert_state_names[al->state]);
        bind_text(st, 2, gp_severity_names[al->severity]);
        bind_text(st, 3, al->summary);
        bind_text(st, 4, al->evidence);
        bind_value(st, 5, al->value);
        bind_ms(st, 6, al->firing_since);
        bind_ms(st, 7, al->resolved);
        sqlite3_bind_int(st, 8, al->silenced);
        bind_text(st, 9, al->id);
        sqlite3_bind_int64(st, 10, al->started);
    }
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return rc;
    rc = sqlite3_prepare_v2(db,
                            "INSERT INTO alert_transitions(id, started, from_state, to_state, at, value,"
                            " silenced, summary, evidence) VALUES(?,?,?,?,?,?,?,?,?)",
                            -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    bind_text(st, 1, al->id);
    sqlite3_bind_int64(st, 2, al->started);
    if (t->from < 0)
        sqlite3_bind_null(st, 3);
    else
        bind_text(st, 3, gp_alert_state_names[t->from]);
    bind_text(st, 4, gp_alert_state_names[al->state]);
    sqlite3_bind_int64(st, 5, al->state == GP_ALERT_PENDING   ? al->started
                              : al->state == GP_ALERT_FIRING ? al->firing_since
                                                             : al->resolved);
    bind_value(st, 6, al->value);
    sqlite3_bind_int(st, 7, al->silenced);
    bind_text(st, 8, al->summary);
    bind_text(st, 9, al->evidence);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc;
}

int gp_alerts_end(struct gp_alerts *a, char *err, size_t errlen)
{
    pthread_mutex_lock(&a->mu);
    for (size_t i = 0; i < NBUCKETS; i++)
        for (struct alert *x = a->bucket[i], *n; x; x = n) {
            n = x->next;
            judge(a, x);
        }
    struct transition *q = a->q;
    size_t nq = a->nq;
    a->q = NULL;
    a->nq = a->capq = 0;
    pthread_mutex_unlock(&a->mu);

    int rc = GP_OK;
    if (nq) {
        pthread_mutex_lock(&a->dbmu);
        int s = sqlite3_exec(a->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        for (size_t i = 0; s == SQLITE_OK && i < nq; i++) {
            s = write_transition(a->db, &q[i]);
            if (s == SQLITE_DONE)
                s = SQLITE_OK;
        }
        if (s == SQLITE_OK)
            s = sqlite3_exec(a->db, "COMMIT", NULL, NULL, NULL);
        if (s != SQLITE_OK) {
            rc = gp_seterr(err, errlen, GP_EIO, "writing %zu alert transitions: %s", nq,
                           sqlite3_errmsg(a->db));
            sqlite3_exec(a->db, "ROLLBACK", NULL, NULL, NULL);
        }
        pthread_mutex_unlock(&a->dbmu);
    }
    pthread_mutex_lock(&a->mu);
    a->st.db_errors += rc != GP_OK;
    size_t nlis = a->nlis;
    __typeof__(a->lis[0]) lis[GP_ALERTS_MAX_LISTENERS];
    memcpy(lis, a->lis, sizeof lis);
    pthread_mutex_unlock(&a->mu);
    for (size_t i = 0; i < nq; i++) {
        const struct alert *al = &q[i].a;
        struct gp_alert_event ev = {
            .id = al->id,
            .kind = al->kind,
            .severity = al->severity,
            .from = q[i].from < 0 ? GP_ALERT_RESOLVED : (enum gp_alert_state)q[i].from,
            .to = al->state,
            .key = &al->key,
            .summary = al->summary,
            .evidence = al->evidence,
            .runbook = al->runbook,
            .value = al->value,
            .at_ms = al->state == GP_ALERT_PENDING  ? al->started
                     : al->state == GP_ALERT_FIRING ? al->firing_since
                                                    : al->resolved,
            .silenced = al->silenced,
        };
        for (size_t k = 0; k < nlis; k++)
            lis[k].fn(lis[k].ctx, &ev);
    }
    free(q);
    return rc;
}

bool gp_alerts_active(struct gp_alerts *a, const char *kind, const struct gp_obs_key *k,
                      uint64_t extra)
{
    uint64_t fp = fingerprint(kind, k, extra);
    pthread_mutex_lock(&a->mu);
    struct alert *al = find(a, fp);
    bool r = al && al->state != GP_ALERT_RESOLVED;
    pthread_mutex_unlock(&a->mu);
    return r;
}

void gp_alerts_stats(struct gp_alerts *a, struct gp_alerts_stats *out)
{
    pthread_mutex_lock(&a->mu);
    *out = a->st;
    out->active = out->pending = out->firing = 0;
    for (size_t i = 0; i < NBUCKETS; i++)
        for (struct alert *x = a->bucket[i]; x; x = x->next) {
            out->pending += x->state == GP_ALERT_PENDING;
            out->firing += x->state == GP_ALERT_FIRING;
        }
    out->active = out->pending + out->firing;
    pthread_mutex_unlock(&a->mu);
}

/* ---- silences ---- */

static void random_id(char out[17])
{
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        static uint64_t ctr;
        r = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^
            (__atomic_add_fetch(&ctr, 1, __ATOMIC_RELAXED) * 0x9e3779b97f4a7c15ULL);
    }
    snprintf(out, 17, "%016llx", (unsigned long long)r);
}

int gp_alerts_silence_add(struct gp_alerts *a, struct gp_silence *s, int64_t now_ms, char *err,
                          size_t errlen)
{
    if (!s->kind[0] && !s->job[0] && !s->node[0] && !s->gpu[0] && !s->severity[0])
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "a silence needs at least one matcher (kind, job, node, gpu or severity)");
    enum gp_severity sev;
    if (s->severity[0] && gp_severity_parse(s->severity, &sev))
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "unknown severity '%.20s' (use info, warning or critical)", s->severity);
    if (!s->starts_ms)
        s->starts_ms = now_ms;
    if (s->ends_ms <= s->starts_ms || s->ends_ms <= now_ms)
        return gp_seterr(err, errlen, GP_EUSAGE, "a silence must end in the future, after it starts");
    s->created_ms = now_ms;
    random_id(s->id);
    pthread_mutex_lock(&a->mu);
    /* Ended silences make room. */
    size_t w = 0;
    for (size_t i = 0; i < a->nsil; i++)
        if (a->sil[i].ends_ms > now_ms)
            a->sil[w++] = a->sil[i];
    a->nsil = w;
    if (a->nsil >= GP_SILENCES_MAX) {
        pthread_mutex_unlock(&a->mu);
        return gp_seterr(err, errlen, GP_ETOOBIG, "too many silences (at most %d)", GP_SILENCES_MAX);
    }
    sqlite3_stmt *st;
    pthread_mutex_lock(&a->dbmu);
    int rc = sqlite3_prepare_v2(a->db,
                                "INSERT INTO silences(id, kind, job, node, gpu, severity, comment,"
                                " created, starts_at, ends_at) VALUES(?,?,?,?,?,?,?,?,?,?)",
                                -1, &st, NULL);
    if (rc == SQLITE_OK) {
        bind_text(st, 1, s->id);
        bind_text(st, 2, s->kind);
        bind_text(st, 3, s->job);
        bind_text(st, 4, s->node);
        bind_text(st, 5, s->gpu);
        bind_text(st, 6, s->severity);
        bind_text(st, 7, s->comment);
        sqlite3_bind_int64(st, 8, s->created_ms);
        sqlite3_bind_int64(st, 9, s->starts_ms);
        sqlite3_bind_int64(st, 10, s->ends_ms);
        rc = sqlite3_step(st);
        sqlite3_finalize(st);
    }
    if (rc != SQLITE_DONE) {
        rc = gp_seterr(err, errlen, GP_EIO, "storing the silence: %s", sqlite3_errmsg(a->db));
        pthread_mutex_unlock(&a->dbmu);
        pthread_mutex_unlock(&a->mu);
        return rc;
    }
    pthread_mutex_unlock(&a->dbmu);
    a->sil[a->nsil++] = *s;
    /* Active alerts learn at once, not only at the next tick. */
    for (size_t i = 0; i < NBUCKETS; i++)
        for (struct alert *x = a->bucket[i]; x; x = x->next)
            if (x->state != GP_ALERT_RESOLVED && silence_matches(s, x->kind, &x->key, x->severity, now_ms))
                x->silenced = true;
    pthread_mutex_unlock(&a->mu);
    return GP_OK;
}

int gp_alerts_silence_delete(struct gp_alerts *a, const char *id, int64_t now_ms)
{
    pthread_mutex_lock(&a->mu);
    size_t i = 0;
    while (i < a->nsil && (strcmp(a->sil[i].id, id) || a->sil[i].ends_ms <= now_ms))
        i++;
    if (i == a->nsil) {
        pthread_mutex_unlock(&a->mu);
        return GP_ENOTFOUND;
    }
    sqlite3_stmt *st;
    pthread_mutex_lock(&a->dbmu);
    int rc = sqlite3_prepare_v2(a->db, "UPDATE silences SET ends_at=? WHERE id=?", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, now_ms);
        bind_text(st, 2, id);
        rc = sqlite3_step(st);
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&a->dbmu);
    if (rc != SQLITE_DONE) {
        pthread_mutex_unlock(&a->mu);
        return GP_EIO;
    }
    a->sil[i] = a->sil[--a->nsil];
    for (size_t b = 0; b < NBUCKETS; b++)
        for (struct alert *x = a->bucket[b]; x; x = x->next)
            if (x->state != GP_ALERT_RESOLVED)
                x->silenced = silenced_locked(a, x->kind, &x->key, x->severity, now_ms);
    pthread_mutex_unlock(&a->mu);
    return GP_OK;
}

/* ---- JSON ---- */

static void json_text(struct gp_buf *b, const char *s) { gp_json_str(b, s, strlen(s)); }

static void json_num_or_null(struct gp_buf *b, double v)
{
    if (isfinite(v))
        gp_buf_put_double(b, v);
    else
        gp_buf_puts(b, "null");
}

static void json_ms_or_null(struct gp_buf *b, int64_t ms)
{
    if (ms)
        gp_json_time(b, ms);
    else
        gp_buf_puts(b, "null");
}

static void silence_json(struct gp_buf *b, const struct gp_silence *s, int64_t now)
{
    gp_buf_puts(b, "{\"id\":");
    json_text(b, s->id);
    gp_buf_puts(b, ",\"matchers\":{");
    const char *sep = "";
    const struct {
        const char *n, *v;
    } m[] = {{"kind", s->kind}, {"job", s->job}, {"node", s->node}, {"gpu", s->gpu},
             {"severity", s->severity}};
    for (size_t i = 0; i < 5; i++)
        if (m[i].v[0]) {
            gp_buf_printf(b, "%s\"%s\":", sep, m[i].n);
            json_text(b, m[i].v);
            sep = ",";
        }
    gp_buf_puts(b, "},\"comment\":");
    json_text(b, s->comment);
    gp_buf_puts(b, ",\"created\":");
    gp_json_time(b, s->created_ms);
    gp_buf_puts(b, ",\"starts_at\":");
    gp_json_time(b, s->starts_ms);
    gp_buf_puts(b, ",\"ends_at\":");
    gp_json_time(b, s->ends_ms);
    gp_buf_printf(b, ",\"active\":%s}",
                  now >= s->starts_ms && now < s->ends_ms ? "true" : "false");
}

/* Ends an answer appended to out from mark: GP_OK, or the first error
 * (the query's as GP_EIO, the buffer's own) with out cut back to mark so
 * the caller can answer an error instead. */
static int end_answer(struct gp_buf *out, size_t mark, int sqlite_rc)
{
    if (sqlite_rc == SQLITE_DONE && !out->err)
        return GP_OK;
    int e = out->err ? out->err : GP_EIO;
    out->len = mark;
    out->err = 0;
    return e;
}

int gp_alerts_silences_json(struct gp_alerts *a, int64_t now_ms, bool all, struct gp_buf *out)
{
    size_t mark = out->len;
    gp_buf_puts(out, "{\"status\":\"success\",\"data\":[");
    sqlite3_stmt *st;
    pthread_mutex_lock(&a->mu);
    int rc = sqlite3_prepare_v2(a->db,
                                "SELECT id, kind, job, node, gpu, severity, comment, created,"
                                " starts_at, ends_at FROM silences WHERE ? OR ends_at > ?"
                                " ORDER BY created DESC, id LIMIT 1000",
                                -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int(st, 1, all);
        sqlite3_bind_int64(st, 2, now_ms);
        int first = 1;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            struct gp_silence s;
            memset(&s, 0, sizeof s);
            col_text(st, 0, s.id, sizeof s.id);
            col_text(st, 1, s.kind, sizeof s.kind);
            col_text(st, 2, s.job, sizeof s.job);
            col_text(st, 3, s.node, sizeof s.node);
            col_text(st, 4, s.gpu, sizeof s.gpu);
            col_text(st, 5, s.severity, sizeof s.severity);
            col_text(st, 6, s.comment, sizeof s.comment);
            s.created_ms = sqlite3_column_int64(st, 7);
            s.starts_ms = sqlite3_column_int64(st, 8);
            s.ends_ms = sqlite3_column_int64(st, 9);
            if (!first)
                gp_buf_putc(out, ',');
            first = 0;
            silence_json(out, &s, now_ms);
        }
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&a->mu);
    gp_buf_puts(out, "]}\n");
    return end_answer(out, mark, rc);
}

#define ALERT_COLS                                                                              \
    "id, kind, severity, state, labels, grp, summary, evidence, runbook, value, started,"       \
    " firing_since, resolved, silenced, ack_by, ack_at, ack_comment, seq"

/* Writes the alert of the current row; live fields from memory when the
 * same instance is active. Caller holds the lock. */
static void alert_row_json(struct gp_alerts *a, sqlite3_stmt *st, struct gp_buf *b)
{
    char id[17];
    col_text(st, 0, id, sizeof id);
    int64_t started = col_ms(st, 10);
    const struct alert *live = find(a, strtoull(id, NULL, 16));
    if (live && (live->started != started || strcmp(live->id, id)))
        live = NULL;
    const char *state = live ? gp_alert_state_names[live->state] : (const char *)sqlite3_column_text(st, 3);
    gp_buf_puts(b, "{\"id\":");
    json_text(b, id);
    gp_buf_puts(b, ",\"kind\":");
    json_text(b, (const char *)sqlite3_column_text(st, 1));
    gp_buf_puts(b, ",\"severity\":");
    json_text(b, live ? gp_severity_names[live->severity] : (const char *)sqlite3_column_text(st, 2));
    gp_buf_puts(b, ",\"state\":");
    json_text(b, state ? state : "");
    gp_buf_printf(b, ",\"labels\":%s,\"group\":", (const char *)sqlite3_column_text(st, 4));
    json_text(b, (const char *)sqlite3_column_text(st, 5));
    gp_buf_puts(b, ",\"summary\":");
    json_text(b, live ? live->summary : (const char *)sqlite3_column_text(st, 6));
    gp_buf_puts(b, ",\"evidence\":");
    json_text(b, live ? live->evidence : (const char *)sqlite3_column_text(st, 7));
    gp_buf_puts(b, ",\"runbook\":");
    json_text(b, (const char *)sqlite3_column_text(st, 8));
    gp_buf_puts(b, ",\"value\":");
    json_num_or_null(b, live ? live->value
                             : sqlite3_column_type(st, 9) == SQLITE_NULL ? NAN
                                                                        : sqlite3_column_double(st, 9));
    gp_buf_puts(b, ",\"started\":");
    gp_json_time(b, started);
    gp_buf_puts(b, ",\"firing_since\":");
    json_ms_or_null(b, live ? live->firing_since : col_ms(st, 11));
    gp_buf_puts(b, ",\"resolved\":");
    json_ms_or_null(b, live ? live->resolved : col_ms(st, 12));
    gp_buf_printf(b, ",\"silenced\":%s",
                  (live ? live->silenced : sqlite3_column_int(st, 13) != 0) ? "true" : "false");
    if (sqlite3_column_type(st, 15) == SQLITE_NULL) {
        gp_buf_puts(b, ",\"acknowledged\":null");
    } else {
        gp_buf_puts(b, ",\"acknowledged\":{\"by\":");
        json_text(b, (const char *)sqlite3_column_text(st, 14) ? (const char *)sqlite3_column_text(st, 14) : "");
        gp_buf_puts(b, ",\"at\":");
        gp_json_time(b, sqlite3_column_int64(st, 15));
        gp_buf_puts(b, ",\"comment\":");
        json_text(b, (const char *)sqlite3_column_text(st, 16) ? (const char *)sqlite3_column_text(st, 16) : "");
        gp_buf_putc(b, '}');
    }
}

int gp_alerts_list_json(struct gp_alerts *a, const struct gp_alerts_filter *f, struct gp_buf *out)
{
    char sql[1024];
    int n = snprintf(sql, sizeof sql, "SELECT " ALERT_COLS " FROM alerts WHERE 1");
    if (f->state == -1)
        n += snprintf(sql + n, sizeof sql - (size_t)n, " AND state IN ('pending','firing')");
    else if (f->state >= 0)
        n += snprintf(sql + n, sizeof sql - (size_t)n, " AND state = ?1");
    if (f->kind)
        n += snprintf(sql + n, sizeof sql - (size_t)n, " AND kind = ?2");
    if (f->severity)
        n += snprintf(sql + n, sizeof sql - (size_t)n, " AND severity = ?3");
    if (f->job)
        n += snprintf(sql + n, sizeof sql - (size_t)n, " AND job = ?4");
    if (f->node)
        n += snprintf(sql + n, sizeof sql - (size_t)n, " AND node = ?5");
    if (f->since_ms != INT64_MIN)
        n += snprintf(sql + n, sizeof sql - (size_t)n, " AND (resolved IS NULL OR resolved >= ?6)");
    snprintf(sql + n, sizeof sql - (size_t)n, " ORDER BY started DESC, seq DESC LIMIT ?7");
    size_t mark = out->len;
    gp_buf_puts(out, "{\"status\":\"success\",\"data\":[");
    sqlite3_stmt *st;
    pthread_mutex_lock(&a->mu);
    int rc = sqlite3_prepare_v2(a->db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        if (f->state >= 0)
            bind_text(st, 1, gp_alert_state_names[f->state]);
        if (f->kind)
            bind_text(st, 2, f->kind);
        if (f->severity)
            bind_text(st, 3, f->severity);
        if (f->job)
            bind_text(st, 4, f->job);
        if (f->node)
            bind_text(st, 5, f->node);
        if (f->since_ms != INT64_MIN)
            sqlite3_bind_int64(st, 6, f->since_ms);
        sqlite3_bind_int64(st, 7, (sqlite3_int64)f->limit);
        int first = 1;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            if (!first)
                gp_buf_putc(out, ',');
            first = 0;
            alert_row_json(a, st, out);
            gp_buf_putc(out, '}');
        }
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&a->mu);
    gp_buf_puts(out, "]}\n");
    return end_answer(out, mark, rc);
}

/* Steps *st to the row of the newest alert of fingerprint id: SQLITE_ROW,
 * SQLITE_DONE (none) or an error; *st (NULL when unprepared) is the
 * caller's to finalize. Caller holds the lock. */
static int newest_row(struct gp_alerts *a, const char *id, sqlite3_stmt **st)
{
    int rc = sqlite3_prepare_v2(a->db,
                                "SELECT " ALERT_COLS " FROM alerts WHERE id = ? ORDER BY started DESC,"
                                " seq DESC LIMIT 1",
                                -1, st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    bind_text(*st, 1, id);
    return sqlite3_step(*st);
}

int gp_alerts_ack(struct gp_alerts *a, const char *id, const char *by, const char *comment,
                  int64_t now_ms)
{
    sqlite3_stmt *st = NULL, *up = NULL, *tr = NULL;
    pthread_mutex_lock(&a->mu);
    pthread_mutex_lock(&a->dbmu); /* one transaction of its own, not a tick's */
    int rc = newest_row(a, id, &st);
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(st);
        pthread_mutex_unlock(&a->dbmu);
        pthread_mutex_unlock(&a->mu);
        return rc == SQLITE_DONE ? GP_ENOTFOUND : GP_EIO;
    }
    int64_t started = col_ms(st, 10), seq = sqlite3_column_int64(st, 17);
    const struct alert *live = find(a, strtoull(id, NULL, 16));
    if (live && (live->started != started || strcmp(live->id, id)))
        live = NULL;
    char state[16], summary[256], evidence[768];
    col_text(st, 3, state, sizeof state);
    col_text(st, 6, summary, sizeof summary);
    col_text(st, 7, evidence, sizeof evidence);
    double value = sqlite3_column_type(st, 9) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 9);
    int silenced = sqlite3_column_int(st, 13);
    if (live) { /* its row is written at transitions only: memory is newer */
        snprintf(state, sizeof state, "%s", gp_alert_state_names[live->state]);
        value = live->value;
        silenced = live->silenced;
    }
    sqlite3_finalize(st);
    rc = sqlite3_exec(a->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(a->db, "UPDATE alerts SET ack_by=?, ack_at=?, ack_comment=? WHERE seq=?",
                                -1, &up, NULL);
    if (rc == SQLITE_OK) {
        bind_text(up, 1, by);
        sqlite3_bind_int64(up, 2, now_ms);
        bind_text(up, 3, comment);
        sqlite3_bind_int64(up, 4, seq);
        rc = sqlite3_step(up) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(a->db,
                                "INSERT INTO alert_transitions(id, started, from_state, to_state, at,"
                                " value, silenced, summary, evidence)"
                                " VALUES(?,?,?,'acknowledged',?,?,?,?,?)",
                                -1, &tr, NULL);
    if (rc == SQLITE_OK) {
        bind_text(tr, 1, id);
        sqlite3_bind_int64(tr, 2, started);
        bind_text(tr, 3, state);
        sqlite3_bind_int64(tr, 4, now_ms);
        bind_value(tr, 5, value);
        sqlite3_bind_int(tr, 6, silenced);
        bind_text(tr, 7, summary);
        bind_text(tr, 8, evidence);
        rc = sqlite3_step(tr) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    sqlite3_finalize(up);
    sqlite3_finalize(tr);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(a->db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        gp_log(GP_LOG_ERROR, "alerts", "cannot store an acknowledgement", "id=%s err=\"%s\"", id,
               sqlite3_errmsg(a->db));
        sqlite3_exec(a->db, "ROLLBACK", NULL, NULL, NULL);
        a->st.db_errors++;
    }
    pthread_mutex_unlock(&a->dbmu);
    pthread_mutex_unlock(&a->mu);
    return rc == SQLITE_OK ? GP_OK : GP_EIO;
}

int gp_alerts_one_json(struct gp_alerts *a, const char *id, struct gp_buf *out)
{
    size_t mark = out->len;
    sqlite3_stmt *st = NULL;
    pthread_mutex_lock(&a->mu);
    int rc = newest_row(a, id, &st);
    if (rc == SQLITE_ROW) {
        alert_row_json(a, st, out);
        gp_buf_putc(out, '}');
        rc = SQLITE_DONE;
    } else if (rc == SQLITE_DONE) {
        rc = SQLITE_NOTFOUND;
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&a->mu);
    return rc == SQLITE_NOTFOUND ? GP_ENOTFOUND : end_answer(out, mark, rc);
}

int gp_alerts_get_json(struct gp_alerts *a, const char *id, struct gp_buf *out)
{
    size_t mark = out->len;
    sqlite3_stmt *st = NULL;
    pthread_mutex_lock(&a->mu);
    int rc = newest_row(a, id, &st);
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(st);
        pthread_mutex_unlock(&a->mu);
        return rc == SQLITE_DONE ? GP_ENOTFOUND : GP_EIO;
    }
    gp_buf_puts(out, "{\"status\":\"success\",\"data\":");
    alert_row_json(a, st, out);
    sqlite3_finalize(st);
    gp_buf_puts(out, ",\"transitions\":[");
    rc = sqlite3_prepare_v2(a->db,
                            "SELECT from_state, to_state, at, value, silenced, started FROM"
                            " alert_transitions WHERE id = ? ORDER BY at, rowid LIMIT 1000",
                            -1, &st, NULL);
    if (rc != SQLITE_OK)
        goto fail;
    bind_text(st, 1, id);
    int first = 1;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        gp_buf_puts(out, first ? "{\"from\":" : ",{\"from\":");
        first = 0;
        if (sqlite3_column_type(st, 0) == SQLITE_NULL)
            gp_buf_puts(out, "null");
        else
            json_text(out, (const char *)sqlite3_column_text(st, 0));
        gp_buf_puts(out, ",\"to\":");
        json_text(out, (const char *)sqlite3_column_text(st, 1));
        gp_buf_puts(out, ",\"at\":");
        gp_json_time(out, sqlite3_column_int64(st, 2));
        gp_buf_puts(out, ",\"value\":");
        json_num_or_null(out, sqlite3_column_type(st, 3) == SQLITE_NULL ? NAN
                                                                        : sqlite3_column_double(st, 3));
        gp_buf_printf(out, ",\"silenced\":%s,\"started\":",
                      sqlite3_column_int(st, 4) ? "true" : "false");
        gp_json_time(out, sqlite3_column_int64(st, 5));
        gp_buf_putc(out, '}');
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        goto fail;
    pthread_mutex_unlock(&a->mu);
    gp_buf_puts(out, "]}}\n");
    if (out->err) {
        int e = out->err;
        out->len = mark;
        out->err = 0;
        return e;
    }
    return GP_OK;
fail:
    pthread_mutex_unlock(&a->mu);
    out->len = mark;
    out->err = 0;
    return GP_EIO;
}
