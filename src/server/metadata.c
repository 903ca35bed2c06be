/*
 * metadata.c - the metric families' metadata (TYPE, HELP, unit) that
 * remote write carried, for /api/v1/metadata (prom_api.c).
 *
 * A Prometheus sender (metadata_config.send: true) sends every family of
 * its targets again every send_interval (1 m by default), in requests of
 * their own. Kept: the latest entry per family name, in memory (sorted
 * by name, for the answer's sorted keys and for lookups) and in
 * state.db's metric_metadata table, so that a restarted server answers
 * at once rather than after the senders' next round. The steady resend
 * costs one lookup and comparison per family; the database is written
 * only for an entry that is new or changed, in one transaction per
 * request. A failed write is logged and the entry kept in memory: the
 * next resend writes it again.
 *
 * Bounded: at most GP_SRV_META_MAX_FAMILIES families and
 * GP_SRV_META_MAX_BYTES bytes of names, help and units (each entry is at
 * most 3 x GP_RW_MAX_META_LEN, the decoder's cap). A new family past
 * either limit is dropped (counted, logged once per process); families
 * already kept still update.
 *
 * Both storage kinds keep it here: state.db lives under the data
 * directory with storage: remote too. The cluster is not sent the
 * metadata (docs/api.md).
 */
#include "server/metadata.h"

#include "lib/err.h"
#include "lib/clock.h"
#include "lib/log.h"
#include "state/state.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

struct meta_ent {
    char *name; /* one allocation: name, help, unit, each NUL-terminated */
    const char *help, *unit;
    size_t size; /* bytes counted against the limit */
    enum gp_rw_type type;
};

struct gp_srv_meta {
    pthread_mutex_t mu;
    sqlite3 *db;
    struct meta_ent *e; /* sorted by name */
    size_t n, cap;
    size_t bytes;
    uint64_t dropped;
    uint64_t changes; /* puts that changed something */
    int full_logged;
};

/* Index of name in m->e, or -(insertion point) - 1. */
static long find(const struct gp_srv_meta *m, const char *name, size_t len)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *x = m->e[mid].name;
        int c = strncmp(x, name, len);
        if (!c)
            c = x[len] != '\0'; /* x is longer: after name */
        if (!c)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -(long)lo - 1;
}

/* Fills *x with a copy of the strings: GP_OK, or GP_ENOMEM. */
static int ent_make(struct meta_ent *x, const char *name, size_t nl, const char *help, size_t hl,
                    const char *unit, size_t ul, enum gp_rw_type type)
{
    char *p = malloc(nl + hl + ul + 3);
    if (!p)
        return GP_ENOMEM;
    memcpy(p, name, nl);
    p[nl] = '\0';
    memcpy(p + nl + 1, help, hl);
    p[nl + 1 + hl] = '\0';
    memcpy(p + nl + hl + 2, unit, ul);
    p[nl + hl + 2 + ul] = '\0';
    *x = (struct meta_ent){p, p + nl + 1, p + nl + hl + 2, nl + hl + ul, type};
    return GP_OK;
}

static int same(const struct meta_ent *x, const struct gp_family_meta *f)
{
    return x->type == f->type && strlen(x->help) == f->help.len &&
           !memcmp(x->help, f->help.ptr, f->help.len) && strlen(x->unit) == f->unit.len &&
           !memcmp(x->unit, f->unit.ptr, f->unit.len);
}

/* Puts one entry in memory: 1 when new or changed (to be written), 0
 * when unchanged or dropped. */
static int put_one(struct gp_srv_meta *m, const struct gp_family_meta *f)
{
    long at = find(m, f->name.ptr, f->name.len);
    if (at >= 0 && same(&m->e[at], f))
        return 0;
    size_t size = f->name.len + f->help.len + f->unit.len;
    size_t old = at >= 0 ? m->e[at].size : 0;
    if ((at < 0 && m->n >= GP_SRV_META_MAX_FAMILIES) || m->bytes - old + size > GP_SRV_META_MAX_BYTES) {
        m->dropped++;
        if (!m->full_logged) {
            m->full_logged = 1;
            gp_log(GP_LOG_WARN, "metadata", "metadata limit reached; new families are not kept",
                   "families=%zu bytes=%zu max_families=%d max_bytes=%d family=%.*s", m->n, m->bytes,
                   GP_SRV_META_MAX_FAMILIES, GP_SRV_META_MAX_BYTES,
                   (int)(f->name.len > 128 ? 128 : f->name.len), f->name.ptr);
        }
        return 0;
    }
    struct meta_ent x;
    if (ent_make(&x, f->name.ptr, f->name.len, f->help.ptr, f->help.len, f->unit.ptr, f->unit.len,
                 f->type))
        return 0;
    if (at >= 0) {
        free(m->e[at].name);
        m->e[at] = x;
    } else {
        if (m->n == m->cap) {
            size_t cap = m->cap ? m->cap * 2 : 64;
            struct meta_ent *e = realloc(m->e, cap * sizeof *e);
            if (!e) {
                free(x.name);
                return 0;
            }
            m->e = e;
            m->cap = cap;
        }
        size_t i = (size_t)(-at - 1);
        memmove(m->e + i + 1, m->e + i, (m->n - i) * sizeof *m->e);
        m->e[i] = x;
        m->n++;
    }
    m->bytes = m->bytes - old + size;
    return 1;
}

enum gp_rw_type gp_srv_meta_type(const char *s)
{
    for (int t = 0; t < GP_MT__COUNT; t++)
        if (!strcmp(s, gp_rw_metric_type_name((enum gp_rw_type)t)))
            return (enum gp_rw_type)t;
    return GP_MT_UNKNOWN;
}

/* Reads the kept entries (name order, as the table's key sorts). */
static int load(struct gp_srv_meta *m, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(m->db, "SELECT family, type, help, unit FROM metric_metadata ORDER BY family",
                           -1, &st, NULL) != SQLITE_OK)
        return gp_seterr(err, errlen, GP_EIO, "state.db: reading metric metadata: %s",
                         sqlite3_errmsg(m->db));
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        const char *type = (const char *)sqlite3_column_text(st, 1);
        const char *help = (const char *)sqlite3_column_text(st, 2);
        const char *unit = (const char *)sqlite3_column_text(st, 3);
        if (!name || !type || !help || !unit)
            continue;
        struct gp_family_meta f = {{name, strlen(name)}, {help, strlen(help)}, {unit, strlen(unit)},
                                   gp_srv_meta_type(type)};
        put_one(m, &f);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return gp_seterr(err, errlen, GP_EIO, "state.db: reading metric metadata: %s",
                         sqlite3_errmsg(m->db));
    return GP_OK;
}

int gp_srv_meta_open(struct gp_srv_meta **out, const char *dir, char *err, size_t errlen)
{
    *out = NULL;
    struct gp_srv_meta *m = calloc(1, sizeof *m);
    if (!m)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    pthread_mutex_init(&m->mu, NULL);
    int rc = gp_state_open(&m->db, dir, err, errlen);
    if (!rc)
        rc = load(m, err, errlen);
    if (rc) {
        gp_srv_meta_close(m);
        return rc;
    }
    *out = m;
    return GP_OK;
}

void gp_srv_meta_close(struct gp_srv_meta *m)
{
    if (!m)
        return;
    gp_state_close(m->db);
    for (size_t i = 0; i < m->n; i++)
        free(m->e[i].name);
    free(m->e);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

/* Writes the entries of names in one transaction (under m->mu). */
static int save(struct gp_srv_meta *m, const struct gp_family_meta *f, const unsigned char *changed,
                size_t n, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int64_t now = gp_wall_ms();
    if (sqlite3_exec(m->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(m->db,
                           "INSERT INTO metric_metadata(family, type, help, unit, updated)"
                           " VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT(family) DO UPDATE SET"
                           " type=excluded.type, help=excluded.help, unit=excluded.unit,"
                           " updated=excluded.updated",
                           -1, &st, NULL) != SQLITE_OK)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        if (!changed[i])
            continue;
        long at = find(m, f[i].name.ptr, f[i].name.len);
        if (at < 0) /* not reached: a changed entry is kept */
            continue;
        const struct meta_ent *x = &m->e[at];
        sqlite3_bind_text(st, 1, x->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, gp_rw_metric_type_name(x->type), -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, x->help, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, x->unit, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, now);
        if (sqlite3_step(st) != SQLITE_DONE)
            goto fail;
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    if (sqlite3_exec(m->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        st = NULL;
        goto fail;
    }
    return GP_OK;
fail:
    gp_seterr(err, errlen, GP_EIO, "state.db: writing metric metadata: %s", sqlite3_errmsg(m->db));
    sqlite3_finalize(st);
    sqlite3_exec(m->db, "ROLLBACK", NULL, NULL, NULL);
    return GP_EIO;
}

void gp_srv_meta_put(struct gp_srv_meta *m, const struct gp_family_meta *f, size_t n)
{
    if (!m || !n)
        return;
    unsigned char small[512], *changed = n <= sizeof small ? small : malloc(n);
    if (!changed)
        return; /* out of memory: the sender's next round tries again */
    pthread_mutex_lock(&m->mu);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += changed[i] = (unsigned char)put_one(m, &f[i]);
    m->changes += k > 0;
    char err[256];
    if (k && save(m, f, changed, n, err, sizeof err))
        gp_log(GP_LOG_WARN, "metadata", "metric metadata not saved", "families=%zu error=\"%s\"", k,
               err);
    pthread_mutex_unlock(&m->mu);
    if (changed != small)
        free(changed);
}

void gp_srv_meta_walk(struct gp_srv_meta *m, const char *metric, gp_srv_meta_fn fn, void *arg)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->mu);
    if (metric && *metric) {
        long at = find(m, metric, strlen(metric));
        if (at >= 0)
            fn(arg, m->e[at].name, gp_rw_metric_type_name(m->e[at].type), m->e[at].help,
               m->e[at].unit);
    } else {
        for (size_t i = 0; i < m->n; i++)
            fn(arg, m->e[i].name, gp_rw_metric_type_name(m->e[i].type), m->e[i].help, m->e[i].unit);
    }
    pthread_mutex_unlock(&m->mu);
}

uint64_t gp_srv_meta_changes(struct gp_srv_meta *m)
{
    if (!m)
        return 0;
    pthread_mutex_lock(&m->mu);
    uint64_t n = m->changes;
    pthread_mutex_unlock(&m->mu);
    return n;
}

uint64_t gp_srv_meta_stats(struct gp_srv_meta *m, size_t *families)
{
    *families = 0;
    if (!m)
        return 0;
    pthread_mutex_lock(&m->mu);
    *families = m->n;
    uint64_t dropped = m->dropped;
    pthread_mutex_unlock(&m->mu);
    return dropped;
}
