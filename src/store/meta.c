/*
 * meta.c - meta.db, the store's SQLite database: the series registry
 * (series(id, labels), the labels in their reference form, and
 * symbols(id, value): symtab.h) and the store format version
 * (meta(key, value)).
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
 *
 * Format 2 (GP_ST_META_VERSION) keeps each series as ~25 bytes of symbol
 * numbers; a checkpoint inserts the symbols above sym_meta with its
 * series, in its one transaction. A meta.db of format 1 (labels as
 * blobs, ~260 bytes a series) is loaded as it is, then rewritten as 2 in
 * one transaction and vacuumed (migrate): a crash leaves either file
 * whole.
 *
 * Two copies (serieslog.c): every series committed here was appended to
 * series.log first, so damage to either copy is rebuilt from the other.
 * gp_st_meta_start reads series.log, then:
 *   - a meta.db that SQLite cannot open or read, or one missing beside a
 *     store that has data, is set aside as meta.db.damaged-<unix time>
 *     (never deleted) and a new one is built from the rows SQLite can
 *     still read (scanned in id order, probed id by id past a bad page),
 *     series.log and the SERIES records of the whole WAL. Only when
 *     series.log is damaged too can labels be lost: the ids of data no
 *     copy names are counted as lost (store.c) and reserved, so that no
 *     new series inherits their samples;
 *   - series that series.log names above meta.db's highest id (a crash
 *     between the journal's sync and meta.db's commit) are registered;
 *   - a series.log that is missing, damaged, or lacks series meta.db has
 *     is rewritten from the registry (a damaged one set aside first).
 */
#include "store/store_int.h"

#include "lib/err.h"
#include "store/wal.h"
#include "lib/log.h"
#include "store/labels.h"
#include "store/symtab.h"

#include <dirent.h>
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char schema[] =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=FULL;"
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS series(id INTEGER PRIMARY KEY, labels BLOB NOT NULL);"
    "CREATE TABLE IF NOT EXISTS symbols(id INTEGER PRIMARY KEY, value BLOB NOT NULL);";

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
                 GP_ST_META_VERSION);
        if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
            return gp_seterr(err, errlen, GP_EIO, "meta.db: %s", sqlite3_errmsg(db));
        version = GP_ST_META_VERSION;
    } else if (version > GP_ST_META_VERSION || version < 1) {
        return gp_seterr(err, errlen, GP_EUNSUPPORTED,
                         "%s: store format %lld is not one this gpulse reads (it reads 1 to %u); "
                         "use the gpulse version that wrote it",
                         s->dir, (long long)version, GP_ST_META_VERSION);
    }
    s->meta_version = (int)version;
    sqlite3_stmt *ins;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO series(id, labels) VALUES(?, ?)", -1, &ins,
                           NULL) != SQLITE_OK)
        return gp_seterr(err, errlen, GP_EIO, "meta.db: %s", sqlite3_errmsg(db));
    s->db_insert = ins;
    return GP_OK;
}

int gp_st_meta_set(struct gp_store *s, const char *key, int64_t value)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)", -1, &st,
                           NULL) != SQLITE_OK)
        return GP_EIO;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, value);
    int rc = sqlite3_step(st) == SQLITE_DONE ? GP_OK : GP_EIO;
    sqlite3_finalize(st);
    if (rc != GP_OK)
        gp_log(GP_LOG_ERROR, "store", "meta.db write failed", "key=%s error=\"%s\"", key,
               sqlite3_errmsg(s->db));
    return rc;
}

/* What a registry rebuild left: ids reserved for data whose labels were
 * lost, and how many series that is (store.c, count_lost). */
static void load_lost(struct gp_store *s)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT key, value FROM meta WHERE key IN ('reserved_id', 'lost_series')",
                           -1, &st, NULL) != SQLITE_OK)
        return;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(st, 0);
        sqlite3_int64 v = sqlite3_column_int64(st, 1);
        if (!k || v < 0 || v > UINT32_MAX)
            continue;
        if (!strcmp(k, "reserved_id") && gp_st_ser_reserve(s, (uint32_t)v) == GP_OK)
            gp_sindex_reserve(s->idx, (uint32_t)v);
        else if (!strcmp(k, "lost_series"))
            s->series_lost = (uint64_t)v;
    }
    sqlite3_finalize(st);
}

int gp_st_meta_register(struct gp_store *s, uint32_t id, const uint8_t *labels, size_t len)
{
    if (gp_st_ser_reserve(s, id) != GP_OK)
        return GP_ENOMEM;
    uint32_t got;
    int rc = gp_sindex_add(s->idx, labels, len, gp_labels_hash(labels, len), id, &got);
    if (rc != GP_OK)
        return rc;
    struct gp_st_series *se = &s->ser[got];
    memset(se, 0, sizeof *se);
    gp_chunk_init(&se->head, GP_ST_HEAD_BYTES, GP_ST_HEAD_SAMPLES);
    se->exists = 1;
    return GP_OK;
}

/* Loads the symbols table into s->syms (numbers 1, 2, ... in order; a
 * row out of that order is counted in *bad and skipped). */
static int load_symbols(struct gp_store *s, uint64_t *bad, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT id, value FROM symbols ORDER BY id", -1, &st, NULL) !=
        SQLITE_OK)
        return gp_seterr(err, errlen, GP_EIO, "meta.db: %s", sqlite3_errmsg(s->db));
    int rc = GP_OK, step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        sqlite3_int64 id = sqlite3_column_int64(st, 0);
        const void *v = sqlite3_column_blob(st, 1);
        size_t n = (size_t)sqlite3_column_bytes(st, 1);
        int drc = id == (sqlite3_int64)s->syms.n + 1 && v
                      ? gp_st_syms_define(&s->syms, (uint32_t)id, v, n, UINT32_MAX - 1)
                      : GP_EPARSE;
        if (drc == GP_ENOMEM) {
            rc = gp_seterr(err, errlen, drc, "meta.db: out of memory loading symbols");
            break;
        }
        if (drc != GP_OK)
            (*bad)++;
    }
    if (rc == GP_OK && step != SQLITE_DONE)
        rc = gp_seterr(err, errlen, GP_EIO, "meta.db: %s", sqlite3_errmsg(s->db));
    sqlite3_finalize(st);
    s->sym_meta = s->syms.n;
    return rc;
}

int gp_st_meta_load(struct gp_store *s, char *err, size_t errlen)
{
    sqlite3 *db = s->db;
    uint64_t bad = 0;
    int rc = s->meta_version >= 2 ? load_symbols(s, &bad, err, errlen) : GP_OK;
    if (rc != GP_OK)
        return rc;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT id, labels FROM series ORDER BY id", -1, &st, NULL) !=
        SQLITE_OK)
        return gp_seterr(err, errlen, GP_EIO, "meta.db: %s", sqlite3_errmsg(db));
    struct gp_buf lb;
    gp_buf_init(&lb, GP_ST_SYM_MAX * 8u);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        sqlite3_int64 id = sqlite3_column_int64(st, 0);
        const uint8_t *blob = sqlite3_column_blob(st, 1);
        size_t len = (size_t)sqlite3_column_bytes(st, 1);
        if (id <= 0 || id > UINT32_MAX || !blob || id <= gp_sindex_max_id(s->idx)) {
            bad++;
            continue;
        }
        if (s->meta_version >= 2) { /* references: the labels they name */
            const uint8_t *q = blob;
            gp_buf_reset(&lb);
            int drc = gp_st_syms_decode(&s->syms, &q, blob + len, &lb);
            if (drc == GP_ENOMEM) {
                rc = drc;
                break;
            }
            if (drc != GP_OK || q != blob + len) {
                bad++;
                continue;
            }
            blob = (const uint8_t *)lb.data;
            len = lb.len;
        }
        int arc = gp_st_meta_register(s, (uint32_t)id, blob, len);
        if (arc == GP_ENOMEM) {
            rc = arc;
            break;
        }
        if (arc != GP_OK) {
            bad++;
            continue;
        }
        s->persisted_max_id = (uint32_t)id;
    }
    gp_buf_free(&lb);
    if (rc == GP_OK && step != SQLITE_DONE)
        rc = gp_seterr(err, errlen, GP_EIO, "meta.db: %s", sqlite3_errmsg(db));
    else if (rc != GP_OK)
        gp_seterr(err, errlen, rc, "meta.db: out of memory loading series");
    sqlite3_finalize(st);
    if (bad)
        gp_log(GP_LOG_ERROR, "store", "meta.db has invalid series rows; skipped", "rows=%llu",
               (unsigned long long)bad);
    if (rc == GP_OK)
        load_lost(s);
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

/* Inserts the symbols above sym_meta and the series of list, in the
 * caller's transaction; step names what failed. */
static int insert_rows(struct gp_store *s, const struct gp_wal_series *list, size_t n,
                       const char **step)
{
    sqlite3_stmt *ins = s->db_insert, *sym = NULL;
    struct gp_buf b;
    gp_buf_init(&b, SIZE_MAX / 2);
    size_t *end = malloc((n ? n : 1) * sizeof *end);
    int rc = end ? GP_OK : GP_ENOMEM;
    *step = "encode a series' labels";
    /* Encode first: new strings get their numbers before symbols go in. */
    for (size_t i = 0; i < n && rc == GP_OK; i++) {
        if (s->meta_version >= 2)
            rc = gp_st_syms_encode(&s->syms, list[i].labels, list[i].labels_len, &b);
        else /* a format 1 file that could not be migrated: blobs */
            gp_buf_append(&b, list[i].labels, list[i].labels_len), rc = b.err;
        end[i] = b.len;
    }
    if (rc == GP_OK) {
        *step = "insert a symbol";
        rc = sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO symbols(id, value) VALUES(?, ?)",
                                -1, &sym, NULL) == SQLITE_OK
                 ? GP_OK
                 : GP_EIO;
    }
    for (uint32_t id = s->sym_meta + 1; rc == GP_OK && s->meta_version >= 2 && id <= s->syms.n;
         id++) {
        const char *v;
        size_t vn;
        if (!gp_st_syms_get(&s->syms, id, &v, &vn))
            continue;
        sqlite3_bind_int64(sym, 1, id);
        sqlite3_bind_blob(sym, 2, v, (int)vn, SQLITE_STATIC);
        rc = sqlite3_step(sym) == SQLITE_DONE ? GP_OK : GP_EIO;
        sqlite3_reset(sym);
    }
    if (rc == GP_OK)
        *step = "insert a series";
    for (size_t i = 0; i < n && rc == GP_OK; i++) {
        size_t from = i ? end[i - 1] : 0;
        sqlite3_bind_int64(ins, 1, list[i].id);
        sqlite3_bind_blob(ins, 2, b.data + from, (int)(end[i] - from), SQLITE_STATIC);
        rc = sqlite3_step(ins) == SQLITE_DONE ? GP_OK : GP_EIO;
        sqlite3_reset(ins);
    }
    sqlite3_clear_bindings(ins);
    sqlite3_finalize(sym);
    free(end);
    gp_buf_free(&b);
    return rc;
}

int gp_st_meta_insert(struct gp_store *s, const struct gp_wal_series *list, size_t n, char *err,
                      size_t errlen)
{
    sqlite3 *db = s->db;
    const char *step = "begin a transaction";
    int rc = GP_EIO;
    if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    if ((rc = insert_rows(s, list, n, &step)) != GP_OK)
        goto fail;
    step = "commit";
    rc = GP_EIO;
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    if (s->meta_version >= 2)
        s->sym_meta = s->syms.n;
    return GP_OK;
fail:;
    /* The message of the failing statement, before anything else runs. */
    char e[200], q[256];
    snprintf(e, sizeof e, "%s: %s", step,
             rc == GP_EIO ? sqlite3_errmsg(db) : gp_strerror(rc));
    abort_txn(db);
    gp_log(GP_LOG_ERROR, "store", "meta.db write failed; nothing of this checkpoint was registered",
           "series=%zu error=%s", n, gp_log_quote(q, sizeof q, e));
    return gp_seterr(err, errlen, rc == GP_ENOMEM ? rc : GP_EIO, "%s", e);
}

struct gp_wal_series *gp_st_meta_list(const struct gp_store *s, size_t *n)
{
    uint32_t max = gp_sindex_max_id(s->idx);
    struct gp_wal_series *list = malloc((gp_sindex_count(s->idx) + 1) * sizeof *list);
    *n = 0;
    for (uint32_t id = 1; list && id <= max && id < s->ser_cap; id++) {
        size_t l;
        const uint8_t *b = s->ser[id].exists ? gp_sindex_labels(s->idx, id, &l) : NULL;
        if (b)
            list[(*n)++] = (struct gp_wal_series){id, b, l};
    }
    return list;
}

/* Rewrites a meta.db of format 1 (loaded) as format 2: every registered
 * series by reference, in one transaction; then VACUUM gives the freed
 * pages back (a failed VACUUM only leaves the file larger). */
static int migrate(struct gp_store *s, char *err, size_t errlen)
{
    size_t n;
    struct gp_wal_series *list = gp_st_meta_list(s, &n);
    if (!list)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    uint64_t before = gp_st_meta_bytes(s);
    const char *step = "begin a transaction";
    int rc = GP_EIO;
    if (sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    step = "delete the old rows";
    if (sqlite3_exec(s->db, "DELETE FROM series; DELETE FROM symbols", NULL, NULL, NULL) !=
        SQLITE_OK)
        goto fail;
    s->sym_meta = 0;
    s->meta_version = GP_ST_META_VERSION; /* insert_rows writes references */
    if ((rc = insert_rows(s, list, n, &step)) != GP_OK)
        goto fail;
    rc = GP_EIO;
    step = "set the format";
    if (gp_st_meta_set(s, "format", GP_ST_META_VERSION) != GP_OK)
        goto fail;
    step = "commit";
    if (sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    free(list);
    s->sym_meta = s->syms.n;
    if (sqlite3_exec(s->db, "VACUUM", NULL, NULL, NULL) != SQLITE_OK)
        gp_log(GP_LOG_WARN, "store", "meta.db: vacuum after the format change failed",
               "error=\"%s\"", sqlite3_errmsg(s->db));
    gp_log(GP_LOG_INFO, "store", "meta.db: labels now kept by reference to symbols (format 2)",
           "series=%zu symbols=%u bytes_before=%llu bytes_after=%llu", n, s->syms.n,
           (unsigned long long)before, (unsigned long long)gp_st_meta_bytes(s));
    return GP_OK;
fail:;
    char e[200];
    snprintf(e, sizeof e, "%s: %s", step, rc == GP_EIO ? sqlite3_errmsg(s->db) : gp_strerror(rc));
    abort_txn(s->db);
    s->sym_meta = 0;
    s->meta_version = 1;
    free(list);
    return gp_seterr(err, errlen, rc == GP_ENOMEM ? rc : GP_EIO,
                     "meta.db: cannot rewrite format 1 as 2: %s", e);
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

/* ---- damage: set aside and rebuild ---- */

struct row {
    uint32_t id;
    uint8_t *labels;
    size_t len;
};
struct rows {
    struct row *r;
    size_t n, cap;
    int nomem;
};

static void rows_push(struct rows *x, sqlite3_int64 id, const void *labels, size_t len)
{
    if (id <= 0 || id > UINT32_MAX || !labels || !len || x->nomem)
        return;
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 256;
        struct row *p = realloc(x->r, cap * sizeof *p);
        if (!p) {
            x->nomem = 1;
            return;
        }
        x->r = p;
        x->cap = cap;
    }
    uint8_t *b = malloc(len);
    if (!b) {
        x->nomem = 1;
        return;
    }
    memcpy(b, labels, len);
    x->r[x->n++] = (struct row){(uint32_t)id, b, len};
}

static void rows_free(struct rows *x)
{
    for (size_t i = 0; i < x->n; i++)
        free(x->r[i].labels);
    free(x->r);
}

static int row_cmp(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Calls fn for each row (id, value) of table that SQLite can still read
 * from a damaged file: a scan in id order, and past a page it cannot
 * read, point lookups of the following ids up to the highest id it
 * reports. */
static void salvage_table(sqlite3 *db, const char *table, const char *col,
                          void (*fn)(void *ctx, sqlite3_int64 id, const void *v, size_t n),
                          void *ctx)
{
    char q1[96], q2[128], q3[128];
    snprintf(q1, sizeof q1, "SELECT max(id) FROM %s", table);
    snprintf(q2, sizeof q2, "SELECT id, %s FROM %s WHERE id > ?1 ORDER BY id", col, table);
    snprintf(q3, sizeof q3, "SELECT %s FROM %s WHERE id = ?1", col, table);
    sqlite3_stmt *scan = NULL, *one = NULL, *max = NULL;
    sqlite3_int64 last = 0, top = 0;
    if (sqlite3_prepare_v2(db, q1, -1, &max, NULL) == SQLITE_OK && sqlite3_step(max) == SQLITE_ROW)
        top = sqlite3_column_int64(max, 0);
    if (sqlite3_prepare_v2(db, q2, -1, &scan, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, q3, -1, &one, NULL) != SQLITE_OK)
        goto out;
    for (;;) {
        sqlite3_reset(scan);
        sqlite3_bind_int64(scan, 1, last);
        int step;
        while ((step = sqlite3_step(scan)) == SQLITE_ROW) {
            last = sqlite3_column_int64(scan, 0);
            fn(ctx, last, sqlite3_column_blob(scan, 1), (size_t)sqlite3_column_bytes(scan, 1));
        }
        if (step == SQLITE_DONE)
            break;
        /* An unreadable page: find the next id that still reads. */
        sqlite3_int64 id = last + 1;
        for (; id <= top; id++) {
            sqlite3_reset(one);
            sqlite3_bind_int64(one, 1, id);
            if (sqlite3_step(one) == SQLITE_ROW) {
                fn(ctx, id, sqlite3_column_blob(one, 0), (size_t)sqlite3_column_bytes(one, 0));
                break;
            }
        }
        if (id > top)
            break;
        last = id;
    }
out:
    sqlite3_finalize(scan);
    sqlite3_finalize(one);
    sqlite3_finalize(max);
}

struct salvage_ctx {
    struct rows *out;
    struct gp_st_syms syms; /* the damaged file's own numbers */
    int refs;               /* its series rows are references (format 2) */
    struct gp_buf lb;
};

static void salvage_symbol(void *ctx, sqlite3_int64 id, const void *v, size_t n)
{
    struct salvage_ctx *c = ctx;
    if (id > 0 && id < UINT32_MAX && v)
        gp_st_syms_define(&c->syms, (uint32_t)id, v, n, UINT32_MAX - 1);
}

static void salvage_series(void *ctx, sqlite3_int64 id, const void *v, size_t n)
{
    struct salvage_ctx *c = ctx;
    if (!c->refs || !v) {
        rows_push(c->out, id, v, n);
        return;
    }
    const uint8_t *q = v, *end = q + n;
    gp_buf_reset(&c->lb);
    if (gp_st_syms_decode(&c->syms, &q, end, &c->lb) == GP_OK && q == end)
        rows_push(c->out, id, c->lb.data, c->lb.len); /* a series whose symbols are lost is not */
}

/* The series a damaged registry at path still names (labels as blobs,
 * whichever format it is of). */
static void salvage(const char *path, struct rows *out)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return;
    }
    struct salvage_ctx c = {.out = out};
    gp_buf_init(&c.lb, GP_ST_SYM_MAX * 8u);
    sqlite3_stmt *st;
    /* The format when it reads, else: references when there are symbols. */
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='format'", -1, &st, NULL) ==
        SQLITE_OK) {
        c.refs = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) >= 2 : -1;
        sqlite3_finalize(st);
    } else {
        c.refs = -1;
    }
    salvage_table(db, "symbols", "value", salvage_symbol, &c);
    if (c.refs < 0)
        c.refs = c.syms.n > 0;
    salvage_table(db, "series", "labels", salvage_series, &c);
    gp_st_syms_free(&c.syms);
    gp_buf_free(&c.lb);
    sqlite3_close(db);
}

static int wal_series(void *ctx, const struct gp_wal_series *ws)
{
    rows_push(ctx, ws->id, ws->labels, ws->labels_len);
    return 0;
}

/* 1 when meta.db is absent but the store has data it should name. */
static int meta_missing(const struct gp_store *s)
{
    char *p = gp_st_path(s->dir, "meta.db");
    int absent = p && access(p, F_OK) != 0;
    free(p);
    if (!absent)
        return 0;
    char *snap = gp_st_path(s->dir, "head.snap");
    int data = snap && access(snap, F_OK) == 0;
    free(snap);
    const char *dirs[] = {s->block_dir, s->chunk_dir};
    for (size_t i = 0; i < 2 && !data; i++) {
        DIR *d = opendir(dirs[i]);
        struct dirent *de;
        while (d && !data && (de = readdir(d)) != NULL)
            data = de->d_name[0] != '.';
        if (d)
            closedir(d);
    }
    return data;
}

/* Sets meta.db aside and builds a new one from what still names series. */
static int meta_rebuild(struct gp_store *s, const char *why, const struct rows *journal,
                        const struct gp_st_syms *jsyms, char *err, size_t errlen)
{
    gp_st_meta_close(s);
    /* The new file numbers symbols as series.log does, so the journal
     * needs no rewrite: its numbers from 1 on, up to the first gap. */
    gp_st_syms_free(&s->syms);
    s->sym_meta = 0;
    for (uint32_t id = 1; id <= jsyms->n; id++) {
        const char *v;
        size_t vn;
        if (!gp_st_syms_get(jsyms, id, &v, &vn))
            break;
        if (gp_st_syms_define(&s->syms, id, v, vn, UINT32_MAX - 1) != GP_OK)
            return gp_seterr(err, errlen, GP_ENOMEM, "meta.db: out of memory rebuilding the registry");
    }
    char aside[128] = "";
    int rc = gp_st_set_aside(s->dir, "meta.db", aside, sizeof aside);
    if (rc == GP_EIO)
        return gp_seterr(err, errlen, GP_EIO, "meta.db: damaged (%s) and cannot be set aside: %s",
                         why, strerror(errno));
    struct rows rows = {0};
    if (rc == GP_OK) {
        char *p = gp_st_path(s->dir, aside);
        if (p)
            salvage(p, &rows);
        free(p);
    }
    size_t salvaged = rows.n;
    for (size_t i = 0; i < journal->n; i++)
        rows_push(&rows, journal->r[i].id, journal->r[i].labels, journal->r[i].len);
    struct gp_wal_handler h = {wal_series, NULL};
    char e2[256];
    int wrc = gp_wal_replay(s->wal_dir, 0, &h, &rows, NULL, e2, sizeof e2);
    if (wrc != GP_OK && wrc != GP_ENOMEM)
        gp_log(GP_LOG_WARN, "store", "meta.db rebuild: the WAL's series records are incomplete",
               "error=\"%s\"", e2);
    if (rows.nomem || wrc == GP_ENOMEM) {
        rows_free(&rows);
        return gp_seterr(err, errlen, GP_ENOMEM, "meta.db: out of memory rebuilding the registry");
    }
    if ((rc = gp_st_meta_open(s, err, errlen)) != GP_OK) {
        rows_free(&rows);
        return rc;
    }
    if (rows.n)
        qsort(rows.r, rows.n, sizeof *rows.r, row_cmp);
    struct gp_wal_series *list = malloc((rows.n ? rows.n : 1) * sizeof *list);
    size_t n = 0;
    uint64_t bad = 0;
    for (size_t i = 0; list && i < rows.n; i++) {
        const struct row *r = &rows.r[i];
        if (n && list[n - 1].id == r->id)
            continue; /* in both the old file and the WAL */
        int arc = gp_st_meta_register(s, r->id, r->labels, r->len);
        if (arc == GP_ENOMEM) {
            rc = arc;
            break;
        }
        if (arc != GP_OK) {
            bad++;
            continue;
        }
        list[n++] = (struct gp_wal_series){r->id, r->labels, r->len};
    }
    if (!list)
        rc = GP_ENOMEM;
    char ierr[256];
    if (rc == GP_OK && n && gp_st_meta_insert(s, list, n, ierr, sizeof ierr) != GP_OK)
        rc = gp_seterr(err, errlen, GP_EIO, "meta.db: cannot write the rebuilt registry: %s", ierr);
    else if (rc == GP_ENOMEM)
        gp_seterr(err, errlen, rc, "meta.db: out of memory rebuilding the registry");
    if (rc == GP_OK && n)
        s->persisted_max_id = list[n - 1].id;
    free(list);
    rows_free(&rows);
    if (rc != GP_OK)
        return rc;
    s->damage |= GP_STORE_DMG_META_DAMAGED;
    char q[300];
    gp_log(GP_LOG_ERROR, "store",
           "meta.db damaged: set aside; the series registry rebuilt from its readable rows, "
           "series.log and the WAL",
           "set_aside=%s series=%zu from_old_file=%zu from_series_log=%zu bad_rows=%llu error=%s",
           aside[0] ? aside : "none", n, salvaged, journal->n, (unsigned long long)bad,
           gp_log_quote(q, sizeof q, why));
    return GP_OK;
}

static int journal_row(void *ctx, const struct gp_wal_series *ws)
{
    struct rows *x = ctx;
    rows_push(x, ws->id, ws->labels, ws->labels_len);
    return x->nomem ? GP_ENOMEM : 0;
}

/* 1 when meta.db records that this store keeps a series.log (a store of
 * an older gpulse has none, and creating it then is no repair). */
static int meta_has_journal(struct gp_store *s)
{
    sqlite3_stmt *st;
    int yes = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE key='series_log'", -1, &st, NULL) ==
        SQLITE_OK) {
        yes = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) == 1;
        sqlite3_finalize(st);
    }
    return yes;
}

/* Records in meta.db that series.log exists, once. */
static int mark_journal(struct gp_store *s, char *err, size_t errlen)
{
    if (meta_has_journal(s) || gp_st_meta_set(s, "series_log", 1) == GP_OK)
        return GP_OK;
    return gp_seterr(err, errlen, GP_EIO, "meta.db: cannot record that series.log exists");
}

/* Brings the loaded registry and series.log (rows j, read with status
 * jrc and stats js) into agreement; see the top of this file. */
/* Takes series.log's symbols above meta.db's (a crash between the
 * journal's sync and meta.db's commit left them there) and checks that
 * the two agree on every number both hold. Returns how many numbers
 * disagree (the journal is then rewritten from the registry's), or -1
 * when out of memory. */
static long syms_reconcile(struct gp_store *s, const struct gp_st_syms *js)
{
    long conflict = 0;
    for (uint32_t id = 1; id <= js->n; id++) {
        const char *v, *w;
        size_t vn, wn;
        if (!gp_st_syms_get(js, id, &v, &vn)) {
            conflict++; /* a gap: a damaged symbol record */
            continue;
        }
        if (gp_st_syms_get(&s->syms, id, &w, &wn)) {
            conflict += vn != wn || memcmp(v, w, vn);
            continue;
        }
        int rc = id == s->syms.n + 1 ? gp_st_syms_define(&s->syms, id, v, vn, UINT32_MAX - 1)
                                     : GP_EPARSE;
        if (rc == GP_ENOMEM)
            return -1;
        conflict += rc != GP_OK;
    }
    return conflict;
}

static int journal_reconcile(struct gp_store *s, struct rows *j, int jrc,
                             const struct gp_st_slog_stats *js, const struct gp_st_syms *jsyms,
                             char *err, size_t errlen)
{
    long sym_conflict = syms_reconcile(s, jsyms);
    if (sym_conflict < 0)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    s->sym_slog = sym_conflict ? 0 : jsyms->n;
    if (j->n)
        qsort(j->r, j->n, sizeof *j->r, row_cmp);
    struct gp_wal_series *extra = malloc((j->n ? j->n : 1) * sizeof *extra);
    if (!extra)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    size_t matched = 0, nextra = 0, conflict = 0, distinct = 0;
    uint32_t db_max = s->persisted_max_id;
    size_t db_count = gp_sindex_count(s->idx);
    int rc = GP_OK;
    for (size_t i = 0; i < j->n; i++) {
        const struct row *r = &j->r[i];
        if (i && j->r[i - 1].id == r->id)
            continue; /* appended again after a crash before meta.db's commit */
        distinct++;
        size_t l;
        const uint8_t *b =
            r->id < s->ser_cap && s->ser[r->id].exists ? gp_sindex_labels(s->idx, r->id, &l) : NULL;
        if (b) {
            if (l == r->len && !memcmp(b, r->labels, l))
                matched++;
            else
                conflict++;
            continue;
        }
        if (r->id <= gp_sindex_max_id(s->idx)) {
            conflict++; /* an id meta.db skips or reserves: meta.db's word stands */
            continue;
        }
        int arc = gp_st_meta_register(s, r->id, r->labels, r->len);
        if (arc == GP_ENOMEM) {
            free(extra);
            return gp_seterr(err, errlen, arc, "out of memory");
        }
        if (arc != GP_OK) {
            conflict++;
            continue;
        }
        extra[nextra++] = (struct gp_wal_series){r->id, r->labels, r->len};
    }
    char ierr[256];
    if (nextra) {
        if ((rc = gp_st_meta_insert(s, extra, nextra, ierr, sizeof ierr)) != GP_OK) {
            free(extra);
            return gp_seterr(err, errlen, rc, "meta.db: cannot register series.log's series: %s",
                             ierr);
        }
        s->persisted_max_id = extra[nextra - 1].id;
        gp_log(GP_LOG_WARN, "store",
               "series.log names series meta.db lacks (a crash before meta.db's commit): "
               "registered",
               "series=%zu highest_id=%u", nextra, extra[nextra - 1].id);
    }
    free(extra);
    int missing = jrc == GP_ENOTFOUND;
    int damaged =
        js->bad_records || conflict || sym_conflict || (missing && meta_has_journal(s));
    if (!missing && (matched != db_count || damaged))
        gp_log(GP_LOG_ERROR, "store", "series.log and meta.db disagree",
               "series_log_series=%zu series_log_max_id=%u meta_db_series=%zu meta_db_max_id=%u "
               "bad_records=%llu conflicting=%zu conflicting_symbols=%ld",
               distinct, js->max_id, db_count, db_max, (unsigned long long)js->bad_records,
               conflict, sym_conflict);
    if (!missing && !damaged && matched == db_count) {
        /* An older gpulse's journal is rewritten with symbols when it can
         * be; else it stays as it is (new records are appended after its
         * own, both read) and the next start tries again. */
        char rerr[256];
        if (js->old_records && gp_st_slog_rewrite(s, rerr, sizeof rerr) == GP_OK) {
            gp_log(GP_LOG_INFO, "store", "series.log of an older gpulse rewritten with symbols",
                   "series=%zu records_before=%llu", gp_sindex_count(s->idx),
                   (unsigned long long)js->old_records);
        } else {
            if (js->old_records)
                gp_log(GP_LOG_WARN, "store",
                       "series.log of an older gpulse kept as it is: it cannot be rewritten now",
                       "error=\"%s\"", rerr);
            if ((rc = gp_st_slog_open(s, err, errlen)) != GP_OK)
                return rc;
        }
        return mark_journal(s, err, errlen);
    }
    char aside[128] = "";
    if (damaged && !missing && gp_st_set_aside(s->dir, "series.log", aside, sizeof aside) == GP_EIO)
        return gp_seterr(err, errlen, GP_EIO, "series.log: damaged and cannot be set aside: %s",
                         strerror(errno));
    if ((rc = gp_st_slog_rewrite(s, err, errlen)) != GP_OK ||
        (rc = mark_journal(s, err, errlen)) != GP_OK)
        return rc;
    if (damaged) {
        s->damage |= GP_STORE_DMG_SERIES_LOG;
        gp_log(GP_LOG_ERROR, "store",
               missing ? "series.log missing: rebuilt from meta.db"
                       : "series.log damaged: set aside; rebuilt from meta.db",
               "set_aside=%s series=%zu bad_records=%llu conflicting=%zu",
               aside[0] ? aside : "none", gp_sindex_count(s->idx),
               (unsigned long long)js->bad_records, conflict);
    } else {
        gp_log(missing ? GP_LOG_INFO : GP_LOG_WARN, "store",
               missing ? "series.log created from meta.db"
                       : "series.log lacked series: rewritten from meta.db",
               "series=%zu", gp_sindex_count(s->idx));
    }
    return GP_OK;
}

static int meta_start(struct gp_store *s, const struct rows *journal,
                      const struct gp_st_syms *jsyms, char *err, size_t errlen);

int gp_st_meta_start(struct gp_store *s, char *err, size_t errlen)
{
    /* The journal's rows are copies: labels by reference are decoded
     * into a scratch buffer one at a time. */
    struct rows j = {0};
    struct gp_st_syms jsyms = {0};
    struct gp_seg_file f = {0};
    struct gp_st_slog_stats js;
    int jrc = gp_st_slog_read(s, &f, &jsyms, journal_row, &j, &js, err, errlen);
    gp_seg_file_free(&f);
    int rc;
    if (jrc == GP_ENOMEM || j.nomem)
        rc = gp_seterr(err, errlen, GP_ENOMEM, "series.log: out of memory reading it");
    else if (jrc != GP_OK && jrc != GP_ENOTFOUND)
        rc = jrc; /* unreadable (permissions, I/O): stop as for meta.db */
    else if ((rc = meta_start(s, &j, &jsyms, err, errlen)) == GP_OK)
        rc = journal_reconcile(s, &j, jrc, &js, &jsyms, err, errlen);
    rows_free(&j);
    gp_st_syms_free(&jsyms);
    return rc;
}

static int meta_start(struct gp_store *s, const struct rows *journal,
                      const struct gp_st_syms *jsyms, char *err, size_t errlen)
{
    if (meta_missing(s))
        return meta_rebuild(s, "meta.db is missing", journal, jsyms, err, errlen);
    int rc = gp_st_meta_open(s, err, errlen);
    if (rc == GP_OK)
        rc = gp_st_meta_load(s, err, errlen);
    if (rc == GP_OK && s->meta_version < (int)GP_ST_META_VERSION) {
        char merr[256];
        if (migrate(s, merr, sizeof merr) != GP_OK)
            gp_log(GP_LOG_WARN, "store", "meta.db stays in format 1 (labels as blobs) until the next start",
                   "error=\"%s\"", merr);
    }
    if (rc == GP_OK || rc == GP_EUNSUPPORTED || rc == GP_ENOMEM)
        return rc;
    /* Only damage is rebuilt around; a full disk, a lock or a permission
     * error stops the start as before, and the file stays where it is. */
    int code = s->db ? sqlite3_errcode(s->db) : SQLITE_CANTOPEN;
    if (code != SQLITE_CORRUPT && code != SQLITE_NOTADB)
        return rc;
    /* Start over: what the failed load registered goes. */
    char why[256];
    snprintf(why, sizeof why, "%s", err);
    for (size_t i = 0; i < s->ser_cap; i++)
        gp_chunk_free(&s->ser[i].head);
    if (s->ser)
        memset(s->ser, 0, s->ser_cap * sizeof *s->ser);
    gp_sindex_free(s->idx);
    s->idx = NULL;
    s->persisted_max_id = 0;
    if (gp_sindex_new(&s->idx) != GP_OK)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    return meta_rebuild(s, why, journal, jsyms, err, errlen);
}
