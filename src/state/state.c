/*
 * state.c - opens and migrates <data>/state.db (state.h). The
 * migrations are one table, applied in order from the database's
 * user_version; add a row to change the schema, never edit a row.
 */
#include "state/state.h"

#include "lib/err.h"
#include "lib/log.h"

#include <pthread.h>
#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* migrations[i] takes a database from version i to i + 1. */
static const char *const migrations[GP_STATE_VERSION] = {
    /* 1: the jobs registry (server/jobs.c). Times are Unix milliseconds;
     * NULL where unknown. Ranks are keyed by node and rank, -1 when the
     * rank is unknown (a NULL would not be unique in a key). */
    "CREATE TABLE jobs(id TEXT PRIMARY KEY, scheme TEXT, first_seen INTEGER NOT NULL,"
    " last_seen INTEGER NOT NULL, start_ms INTEGER, end_ms INTEGER, exit_status INTEGER,"
    " state TEXT NOT NULL);"
    "CREATE TABLE job_ranks(job TEXT NOT NULL, node TEXT NOT NULL, rank INTEGER NOT NULL,"
    " local_rank INTEGER, world_size INTEGER, first_seen INTEGER NOT NULL,"
    " last_seen INTEGER NOT NULL, PRIMARY KEY(job, node, rank));"
    "CREATE TABLE job_gpus(job TEXT NOT NULL, node TEXT NOT NULL, gpu TEXT NOT NULL,"
    " PRIMARY KEY(job, node, gpu));"
    "CREATE TABLE kv(key TEXT PRIMARY KEY, value INTEGER NOT NULL);",
    /* 2: alerts (insight/alerts.c). One row per alert instance (a key that
     * fires again after resolving gets a new row with the same id, the
     * fingerprint); every transition; silences. Times are Unix ms. */
    "CREATE TABLE alerts(seq INTEGER PRIMARY KEY, id TEXT NOT NULL, kind TEXT NOT NULL,"
    " severity TEXT NOT NULL, state TEXT NOT NULL, node TEXT NOT NULL, gpu TEXT NOT NULL,"
    " job TEXT NOT NULL, rank INTEGER NOT NULL, pid INTEGER NOT NULL, labels TEXT NOT NULL,"
    " grp TEXT NOT NULL, summary TEXT NOT NULL, evidence TEXT NOT NULL, runbook TEXT NOT NULL,"
    " value REAL, started INTEGER NOT NULL, firing_since INTEGER, resolved INTEGER,"
    " silenced INTEGER NOT NULL, for_ms INTEGER NOT NULL, clear_for_ms INTEGER NOT NULL,"
    " cooldown_ms INTEGER NOT NULL);"
    "CREATE INDEX alerts_by_id ON alerts(id, started);"
    "CREATE INDEX alerts_by_state ON alerts(state);"
    "CREATE INDEX alerts_by_started ON alerts(started);"
    "CREATE TABLE alert_transitions(id TEXT NOT NULL, started INTEGER NOT NULL,"
    " from_state TEXT, to_state TEXT NOT NULL, at INTEGER NOT NULL, value REAL,"
    " silenced INTEGER NOT NULL, summary TEXT NOT NULL, evidence TEXT NOT NULL);"
    "CREATE INDEX alert_transitions_by_id ON alert_transitions(id, at);"
    "CREATE TABLE silences(id TEXT PRIMARY KEY, kind TEXT NOT NULL, job TEXT NOT NULL,"
    " node TEXT NOT NULL, gpu TEXT NOT NULL, severity TEXT NOT NULL, comment TEXT NOT NULL,"
    " created INTEGER NOT NULL, starts_at INTEGER NOT NULL, ends_at INTEGER NOT NULL);",
    /* 3: the remediation audit log (insight/remediate.c): one row per
     * decision on an alert that started firing, with what ran (argv as a
     * JSON array) and its outcome; NULL where it does not apply. */
    "CREATE TABLE audit(id INTEGER PRIMARY KEY AUTOINCREMENT, at_ms INTEGER NOT NULL,"
    " alert_id TEXT, kind TEXT NOT NULL, severity TEXT, node TEXT, gpu TEXT, job TEXT,"
    " rank INTEGER, decision TEXT NOT NULL, command TEXT, exit_status INTEGER, stderr TEXT,"
    " detail TEXT, duration_ms INTEGER);"
    "CREATE INDEX audit_at ON audit(at_ms);",
    /* 4: notifications (notify/outbox.c, notify/router.c). The outbox: one
     * row per notification, written before it is sent (state queued, done
     * or dead; the notice as JSON). The router's groups and what each has
     * notified (sent: 1 once the alert's current status went out), so a
     * restart neither repeats nor forgets. Times are Unix ms. */
    "CREATE TABLE notifications(seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,"
    " receiver TEXT NOT NULL, group_key TEXT NOT NULL, notice TEXT NOT NULL,"
    " created INTEGER NOT NULL, attempts INTEGER NOT NULL, next_attempt INTEGER NOT NULL,"
    " state TEXT NOT NULL, last_status INTEGER, detail TEXT NOT NULL, updated INTEGER NOT NULL);"
    "CREATE INDEX notifications_due ON notifications(state, next_attempt);"
    "CREATE TABLE notify_groups(key TEXT PRIMARY KEY, receiver TEXT NOT NULL,"
    " labels TEXT NOT NULL, created INTEGER NOT NULL, last_sent INTEGER NOT NULL);"
    "CREATE TABLE notify_group_alerts(gkey TEXT NOT NULL, id TEXT NOT NULL, alert TEXT NOT NULL,"
    " sent INTEGER NOT NULL, PRIMARY KEY(gkey, id));",
    /* 5: acknowledging an alert (the dashboard, POST /api/v1/alerts/ID/ack):
     * who, when (Unix ms; NULL: not acknowledged) and why, on the alert
     * instance's row; each ack is also a transition to 'acknowledged'. */
    "ALTER TABLE alerts ADD COLUMN ack_by TEXT;"
    "ALTER TABLE alerts ADD COLUMN ack_at INTEGER;"
    "ALTER TABLE alerts ADD COLUMN ack_comment TEXT;",
    /* 6: the metric families' metadata remote write carried
     * (server/metadata.c): the latest TYPE, HELP and unit per family;
     * updated is Unix ms. */
    "CREATE TABLE IF NOT EXISTS metric_metadata(family TEXT PRIMARY KEY, type TEXT NOT NULL,"
    " help TEXT NOT NULL, unit TEXT NOT NULL, updated INTEGER NOT NULL);",
    /* 7: remediation actions (insight/remediate.c): which action a row is
     * (command, slurm_drain, kubernetes_cordon and their undoing on
     * mark-healthy) and the reason it was taken (the alert's summary, or
     * the operator's words); NULL on older rows. */
    "ALTER TABLE audit ADD COLUMN action TEXT;"
    "ALTER TABLE audit ADD COLUMN reason TEXT;",
    /* 8: health states (insight/health.c): per GPU its state and when it
     * began, its reasons (catalog faults; xid 0 for a condition) and its
     * per-code XID counters (the last value and the times, "t1,t2,...",
     * within the repeat window); per node its state and the last
     * preflight (NULL: none). Times are Unix ms. */
    "CREATE TABLE IF NOT EXISTS health_gpus(node TEXT NOT NULL, gpu TEXT NOT NULL, uuid TEXT NOT NULL,"
    " state TEXT NOT NULL, since INTEGER NOT NULL, seen INTEGER NOT NULL, PRIMARY KEY(node, gpu));"
    "CREATE TABLE IF NOT EXISTS health_reasons(node TEXT NOT NULL, gpu TEXT NOT NULL, fault TEXT NOT NULL,"
    " xid INTEGER NOT NULL, repeat INTEGER NOT NULL, sticky INTEGER NOT NULL,"
    " present INTEGER NOT NULL, since INTEGER NOT NULL, last INTEGER NOT NULL,"
    " count INTEGER NOT NULL);"
    "CREATE INDEX IF NOT EXISTS health_reasons_by_gpu ON health_reasons(node, gpu);"
    "CREATE TABLE IF NOT EXISTS health_xids(node TEXT NOT NULL, gpu TEXT NOT NULL, code INTEGER NOT NULL,"
    " last REAL NOT NULL, times TEXT NOT NULL, PRIMARY KEY(node, gpu, code));"
    "CREATE TABLE IF NOT EXISTS health_nodes(node TEXT PRIMARY KEY, state TEXT NOT NULL, since INTEGER NOT NULL,"
    " preflight_ok INTEGER, preflight_summary TEXT, preflight_at INTEGER);",
    /* 9: the last preflight result of each node as it was sent (server/
     * preflight.c: GET /api/v1/health/preflight), with the time it came
     * (Unix ms), so a restart does not forget why a node failed. */
    "CREATE TABLE IF NOT EXISTS preflight(node TEXT PRIMARY KEY, received INTEGER NOT NULL,"
    " doc TEXT NOT NULL);",
};

static int user_version(sqlite3 *db, int *v)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
        return GP_EIO;
    int rc = sqlite3_step(st);
    *v = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? GP_OK : GP_EIO;
}

/* The verdict on the last state.db checked in this process. The server's
 * modules each open their own connection: the file is checked again only
 * when it is another file or has changed since (WAL mode leaves the main
 * file alone between checkpoints), and once damaged it stays damaged (it
 * is not written again). Guarded by verdict_mu. */
static pthread_mutex_t verdict_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char path[1024];
    struct stat st; /* the file as checked; st_ino 0: absent */
    int damaged;
    char detail[256];
} verdict;

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Applies the missing migrations. GP_OK, or GP_EIO with SQLite's message
 * in *msg (sqlite3_free'd by the caller) or in the connection. */
static int migrate(sqlite3 *db, int v, char **msg)
{
    for (; v < GP_STATE_VERSION; v++) {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA user_version=%d; COMMIT;", v + 1);
        if (sqlite3_exec(db, "BEGIN IMMEDIATE;", NULL, NULL, msg) != SQLITE_OK)
            return GP_EIO;
        if (sqlite3_exec(db, migrations[v], NULL, NULL, msg) != SQLITE_OK ||
            sqlite3_exec(db, sql, NULL, NULL, msg) != SQLITE_OK) {
            /* A failed COMMIT may have ended the transaction already. */
            if (!sqlite3_get_autocommit(db))
                sqlite3_exec(db, "ROLLBACK;", NULL, NULL, NULL);
            return GP_EIO;
        }
    }
    return GP_OK;
}

static int is_damage(int code)
{
    code &= 0xff;
    return code == SQLITE_CORRUPT || code == SQLITE_NOTADB;
}

/* SQLite's own check of every page and index ("quick": no index-to-table
 * comparison, linear in the file's size). 1 damaged (detail says how),
 * 0 sound, -1 the check itself failed for another reason (I/O...). */
static int check_damage(sqlite3 *db, char *detail, size_t len)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    int out;
    if (rc == SQLITE_ROW) {
        const char *r = (const char *)sqlite3_column_text(st, 0);
        out = !r || strcmp(r, "ok") != 0;
        if (out)
            snprintf(detail, len, "integrity check: %s", r ? r : "no answer");
    } else {
        out = is_damage(sqlite3_extended_errcode(db)) ? 1 : -1;
        snprintf(detail, len, "%s", sqlite3_errmsg(db));
    }
    sqlite3_finalize(st);
    return out;
}

/* Opens and migrates path; *damaged is set when SQLite finds the file
 * damaged (not a database, corrupt pages), as opposed to other errors. */
static int open_path(sqlite3 **out, const char *path, int check, int *damaged, char *err,
                     size_t errlen)
{
    *out = NULL;
    *damaged = 0;
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                             NULL);
    if (rc != SQLITE_OK) {
        rc = gp_seterr(err, errlen, rc == SQLITE_NOMEM ? GP_ENOMEM : GP_EIO, "%s: %s", path,
                       db ? sqlite3_errmsg(db) : "cannot open");
        sqlite3_close(db);
        return rc;
    }
    sqlite3_busy_timeout(db, 5000);
    char *msg = NULL;
    if (sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL, NULL, &msg) !=
        SQLITE_OK)
        goto sqlfail;
    if (check) {
        char detail[200];
        int d = check_damage(db, detail, sizeof detail);
        if (d != 0) {
            *damaged = d > 0;
            rc = gp_seterr(err, errlen, GP_EIO, "%s: %s", path, detail);
            sqlite3_close(db);
            return rc;
        }
    }
    int v;
    if (user_version(db, &v))
        goto sqlfail;
    if (v > GP_STATE_VERSION) {
        sqlite3_close(db);
        return gp_seterr(err, errlen, GP_EUNSUPPORTED,
                         "%s: schema version %d is newer than this gpulse reads (%d); use the gpulse "
                         "version that wrote it",
                         path, v, GP_STATE_VERSION);
    }
    if (migrate(db, v, &msg) != GP_OK)
        goto sqlfail;
    *out = db;
    return GP_OK;
sqlfail:
    *damaged = is_damage(sqlite3_extended_errcode(db));
    rc = gp_seterr(err, errlen, GP_EIO, "%s: %s", path, msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    sqlite3_close(db);
    return rc;
}

int gp_state_open(sqlite3 **out, const char *dir, char *err, size_t errlen)
{
    *out = NULL;
    char path[1024];
    if ((size_t)snprintf(path, sizeof path, "%s/state.db", dir) >= sizeof path)
        return gp_seterr(err, errlen, GP_EUSAGE, "data directory path too long");
    struct stat now;
    if (stat(path, &now) != 0)
        memset(&now, 0, sizeof now);
    pthread_mutex_lock(&verdict_mu);
    int known = strcmp(verdict.path, path) == 0, damaged = known && verdict.damaged;
    int first = !known || (!damaged && (!now.st_ino || !same_file(&now, &verdict.st)));
    char detail[sizeof verdict.detail] = "";
    int rc = GP_OK;
    if (!damaged) {
        rc = open_path(out, path, first, &damaged, detail, sizeof detail);
        if (first) {
            snprintf(verdict.path, sizeof verdict.path, "%s", path);
            if (stat(path, &verdict.st) != 0)
                memset(&verdict.st, 0, sizeof verdict.st);
            verdict.damaged = damaged;
            /* The detail without the "path: " the error starts with. */
            const char *d = detail;
            if (!strncmp(d, path, strlen(path)) && !strncmp(d + strlen(path), ": ", 2))
                d += strlen(path) + 2;
            snprintf(verdict.detail, sizeof verdict.detail, "%s", damaged ? d : "");
            if (damaged)
                gp_log(GP_LOG_ERROR, "state",
                       "state.db is damaged; running on an empty in-memory state until it is repaired",
                       "path=%s error=\"%s\" lost_on_restart=\"jobs alerts silences notifications "
                       "audit\" samples=unaffected repair=\"stop the server, gpulse repair --data %s\"",
                       path, verdict.detail, dir);
        }
    }
    pthread_mutex_unlock(&verdict_mu);
    if (!damaged) {
        if (rc != GP_OK)
            gp_seterr(err, errlen, rc, "%s", detail);
        return rc;
    }
    /* Damaged: the file is left as it is (gpulse repair sets it aside) and
     * this connection gets a private, empty database of the same schema,
     * so the server's other work (ingestion, queries, detectors) goes on. */
    int ignored;
    return open_path(out, ":memory:", 0, &ignored, err, errlen);
}

int gp_state_damaged(const char *dir, char *detail, size_t len)
{
    char path[1024];
    if ((size_t)snprintf(path, sizeof path, "%s/state.db", dir) >= sizeof path)
        return 0;
    pthread_mutex_lock(&verdict_mu);
    int d = strcmp(verdict.path, path) == 0 && verdict.damaged;
    if (d && detail && len)
        snprintf(detail, len, "%s", verdict.detail);
    pthread_mutex_unlock(&verdict_mu);
    return d;
}

void gp_state_close(sqlite3 *db)
{
    if (db)
        sqlite3_close(db);
}
