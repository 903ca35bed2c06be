/*
 * meta.c - meta.db, the store's SQLite database: the series registry
 * (series(id, labels)) and the store format version (meta(key, value)).
 *
 * Series are inserted by each checkpoint, in one transaction, before the
 * WAL segments that define them are removed. journal_mode=WAL as the
 * design asks; synchronous=FULL rather than NORMAL because the store
 * deletes its own WAL segments right after this commit returns, so the
 * commit itself must survive a power cut (NORMAL may lose the last
 * transactions then). It costs one fsync per checkpoint.
 *
 * Only the maintenance path (and open/close) touches the connection, so
 * it is opened without SQLite's own mutexes.
 */
#include "store/store_int.h"

#include "lib/err.h"
#include "lib/log.h"
#include "store/labels.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char schema[] =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=FULL;"
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS series(id INTEGER PRIMARY KEY, labels BLOB NOT NULL);";

int gp_st_meta_open(struct gp_store *s, char *err, size_t errlen)
{
    char *path = gp_st_path(s->dir, "meta.db");
    if (!path)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    free(path);
    s->db = db;
    if (rc != SQLITE_OK)
        return gp_seterr(err, errlen, GP_EIO, "meta.db: %s", db ? sqlite3_errmsg(db) : "cannot open");
    sqlite3_busy_timeout(db, 5000);
    char *msg = NULL;
    if (sqlite3_exec(db, schema, NULL, NULL, &msg) != SQLITE_OK) {
        rc = gp_seterr(err, errlen, GP_EIO, "meta.db: %s", msg ? msg : "schema");
        sqlite3_free(msg);
        return rc;
    }
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='format'", -1, &st, NULL) !=
        SQLITE_OK)
        return gp_seterr(err, errlen, GP_EIO, "meta.db: %s", sqlite3_errmsg(db));
    rc = sqlite3_step(st);
    sqlite3_int64 version = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return gp_seterr(err, errlen, GP_EIO, "meta.db: %s", sqlite3_errmsg(db));
    if (rc == SQLITE_DONE) {
        char sql[96];
        snprintf(sql, sizeof sql, "INSERT INTO meta(key, value) VALUES('format', %u)",
                 GP_ST_FORMAT_VERSION);
        if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
            return gp_seterr(err, errlen, GP_EIO, "meta.db: %s", sqlite3_errmsg(db));
    } else if (version > GP_ST_FORMAT_VERSION || version < 1) {
        return gp_seterr(err, errlen, GP_EUNSUPPORTED,
                         "%s: store format %lld is not one this gpulse reads (it reads %u); "
                         "use the gpulse version that wrote it",
                         s->dir, (long long)version, GP_ST_FORMAT_VERSION);
    }
    sqlite3_stmt *ins;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO series(id, labels) VALUES(?, ?)", -1, &ins,
                           NULL) != SQLITE_OK)
        return gp_seterr(err, errlen, GP_EIO, "meta.db: %s", sqlite3_errmsg(db));
    s->db_insert = ins;
    return GP_OK;
}

int gp_st_meta_load(struct gp_store *s, char *err, size_t errlen)
{
    sqlite3 *db = s->db;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT id, labels FROM series ORDER BY id", -1, &st, NULL) !=
        SQLITE_OK)
        return gp_seterr(err, errlen, GP_EIO, "meta.db: %s", sqlite3_errmsg(db));
    int rc = GP_OK, step;
    uint64_t bad = 0;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        sqlite3_int64 id = sqlite3_column_int64(st, 0);
        const uint8_t *blob = sqlite3_column_blob(st, 1);
        size_t len = (size_t)sqlite3_column_bytes(st, 1);
        if (id <= 0 || id > UINT32_MAX || !blob || id <= gp_sindex_max_id(s->idx)) {
            bad++;
            continue;
        }
        if ((rc = gp_st_ser_reserve(s, (uint32_t)id)) != GP_OK)
            break;
        uint32_t got;
        int arc = gp_sindex_add(s->idx, blob, len, gp_labels_hash(blob, len), (uint32_t)id, &got);
        if (arc == GP_ENOMEM) {
            rc = arc;
            break;
        }
        if (arc != GP_OK) {
            bad++;
            continue;
        }
        struct gp_st_series *se = &s->ser[got];
        memset(se, 0, sizeof *se);
        gp_chunk_init(&se->head, GP_ST_HEAD_BYTES, GP_ST_HEAD_SAMPLES);
        se->exists = 1;
        s->persisted_max_id = got;
    }
    if (rc == GP_OK && step != SQLITE_DONE)
        rc = gp_seterr(err, errlen, GP_EIO, "meta.db: %s", sqlite3_errmsg(db));
    else if (rc != GP_OK)
        gp_seterr(err, errlen, rc, "meta.db: out of memory loading series");
    sqlite3_finalize(st);
    if (bad)
        gp_log(GP_LOG_ERROR, "store", "meta.db has invalid series rows; skipped", "rows=%llu",
               (unsigned long long)bad);
    return rc;
}

/* Ends a failed transaction. SQLite has already rolled it back itself
 * after some errors (SQLITE_FULL, SQLITE_IOERR at COMMIT): a ROLLBACK
 * then fails with "no transaction is active" and its message would hide
 * the real one, so only an open transaction is rolled back. */
static void abort_txn(sqlite3 *db)
{
    if (!sqlite3_get_autocommit(db))
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}

int gp_st_meta_insert(struct gp_store *s, const struct gp_wal_series *list, size_t n, char *err,
                      size_t errlen)
{
    sqlite3 *db = s->db;
    sqlite3_stmt *ins = s->db_insert;
    const char *step = "begin a transaction";
    if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    step = "insert a series";
    for (size_t i = 0; i < n; i++) {
        sqlite3_bind_int64(ins, 1, list[i].id);
        sqlite3_bind_blob(ins, 2, list[i].labels, (int)list[i].labels_len, SQLITE_STATIC);
        int rc = sqlite3_step(ins);
        sqlite3_reset(ins);
        if (rc != SQLITE_DONE)
            goto fail;
    }
    sqlite3_clear_bindings(ins);
    step = "commit";
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    return GP_OK;
fail:
    /* The message of the failing statement, before anything else runs. */
    char e[200], q[256];
    snprintf(e, sizeof e, "%s: %s", step, sqlite3_errmsg(db));
    sqlite3_clear_bindings(ins);
    abort_txn(db);
    gp_log(GP_LOG_ERROR, "store", "meta.db write failed; nothing of this checkpoint was registered",
           "series=%zu error=%s", n, gp_log_quote(q, sizeof q, e));
    return gp_seterr(err, errlen, GP_EIO, "%s", e);
}

void gp_st_meta_close(struct gp_store *s)
{
    if (s->db_insert)
        sqlite3_finalize(s->db_insert);
    if (s->db)
        sqlite3_close(s->db);
    s->db_insert = NULL;
    s->db = NULL;
}

uint64_t gp_st_meta_bytes(const struct gp_store *s)
{
    uint64_t total = 0;
    static const char *const names[] = {"meta.db", "meta.db-wal"};
    for (size_t i = 0; i < 2; i++) {
        char *p = gp_st_path(s->dir, names[i]);
        struct stat st;
        if (p && stat(p, &st) == 0)
            total += (uint64_t)st.st_size;
        free(p);
    }
    return total;
}
