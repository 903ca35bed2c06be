/*
 * preflight.c - /api/v1/health/preflight: the last `gpulse check` result
 * of each node (docs/health.md "Preflight", docs/api.md).
 *
 * POST (write token) takes the document `gpulse check --json --push`
 * writes; it is checked field by field (the same shape the command
 * writes: check/check.c), so a node's health view never shows a
 * half-formed result, and kept as sent, per node, with the time it came.
 * GET (read token) lists them by node (?node=NAME: one node), less those
 * of nodes the health states forgot (they left the fleet). They are
 * kept in state.db too (table preflight), so a restart does not forget
 * why a node failed its prolog: the node stays degraded until a passing
 * one (insight/health.h), and the operator must still see what failed.
 */
#include "server_int.h"

#include "insight/faults.h"
#include "insight/health.h"
#include "lib/log.h"
#include "lib/clock.h"
#include "lib/json.h"
#include "lib/err.h"
#include "state/state.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define PF_MAX_NODES 65536
#define PF_MAX_CHECKS 4096
#define PF_TEXT_MAX 1024

static bool one_of(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; s && i < n; i++)
        if (!strcmp(s, list[i]))
            return true;
    return false;
}

static bool action_name(const char *s)
{
    return one_of(s, gp_fault_action_names, GP_FA__COUNT);
}

/* A string of 1..max bytes without control bytes. */
static bool text_ok(json_t *v, size_t max)
{
    const char *s = json_string_value(v);
    size_t n = s ? json_string_length(v) : 0;
    if (!s || !n || n > max || strlen(s) != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

/* NULL when doc is a preflight result; else what is wrong. */
static const char *invalid(json_t *doc, char *why, size_t len)
{
    static const char *const top[] = {"node", "time", "status", "action", "gpus", "failed", "skipped", "checks"};
    static const char *const fields[] = {"check", "status", "gpu", "uuid", "reason", "action", "fault", "severity"};
    static const char *const status[] = {"ok", "failed"};
    static const char *const cstatus[] = {"ok", "failed", "skipped"};
    if (!json_is_object(doc))
        return "the body must be a JSON object";
    const char *key;
    json_t *v;
    json_object_foreach(doc, key, v) if (!one_of(key, top, sizeof top / sizeof top[0]))
    {
        snprintf(why, len, "unknown field '%.64s'", key);
        return why;
    }
    if (!text_ok(json_object_get(doc, "node"), 253))
        return "node must be the node's name (1 to 253 printable bytes)";
    if (!json_is_number(json_object_get(doc, "time")))
        return "time must be a number (Unix seconds)";
    if (!one_of(json_string_value(json_object_get(doc, "status")), status, 2))
        return "status must be ok or failed";
    if (!action_name(json_string_value(json_object_get(doc, "action"))))
        return "action must be one of the fault catalog's actions";
    json_t *checks = json_object_get(doc, "checks");
    if (!json_is_array(checks) || json_array_size(checks) > PF_MAX_CHECKS)
        return "checks must be a list (of at most 4096)";
    size_t i;
    json_t *c;
    json_array_foreach(checks, i, c)
    {
        if (!json_is_object(c)) {
            snprintf(why, len, "checks[%zu] must be an object", i);
            return why;
        }
        json_object_foreach(c, key, v) if (!one_of(key, fields, sizeof fields / sizeof fields[0]))
        {
            snprintf(why, len, "checks[%zu]: unknown field '%.64s'", i, key);
            return why;
        }
        json_t *act = json_object_get(c, "action");
        if (!text_ok(json_object_get(c, "check"), 64) ||
            !one_of(json_string_value(json_object_get(c, "status")), cstatus, 3) ||
            !text_ok(json_object_get(c, "reason"), PF_TEXT_MAX) || (act && !action_name(json_string_value(act)))) {
            snprintf(why, len, "checks[%zu] needs check, status (ok, failed or skipped), reason, and a known action",
                     i);
            return why;
        }
    }
    return NULL;
}

static const char *action_words(const char *name)
{
    for (int i = 0; i < GP_FA__COUNT; i++)
        if (!strcmp(name, gp_fault_action_names[i]))
            return gp_fault_action_words[i];
    return name;
}

/* Shows the result with the node's health (insight/health.h): ok or
 * not, and "N checks failed: the first's reason: its action". */
static void note_health(struct gp_server *s, json_t *doc, const char *node)
{
    if (!s->health)
        return;
    bool ok = !strcmp(json_string_value(json_object_get(doc, "status")), "ok");
    char sum[256] = "all checks passed";
    if (!ok) {
        const char *reason = "", *action = json_string_value(json_object_get(doc, "action"));
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(doc, "checks"), i, c) {
            if (!strcmp(json_string_value(json_object_get(c, "status")), "failed")) {
                const char *r = json_string_value(json_object_get(c, "reason"));
                reason = r ? r : "";
                break;
            }
        }
        json_int_t n = json_integer_value(json_object_get(doc, "failed"));
        snprintf(sum, sizeof sum, "%lld %s failed%s%s%s%s", (long long)n, n == 1 ? "check" : "checks",
                 reason[0] ? ": " : "", reason, action && strcmp(action, "none") ? ": " : "",
                 action && strcmp(action, "none") ? action_words(action) : "");
    }
    if (gp_health_note_preflight(s->health, node, ok, sum, gp_wall_ms()))
        gp_log(GP_LOG_WARN, "health", "cannot keep a preflight result with the node's health",
               "node=\"%s\"", node);
}

/* The index of node's result, or p->n. */
static unsigned find(const struct gp_srv_preflight *p, const char *node)
{
    unsigned i = 0;
    while (i < p->n && strcmp(p->v[i].node, node))
        i++;
    return i;
}

/* Keeps text (taken on success) as node's result; false when out of
 * memory or, *room false, when 65536 nodes have one already. Under mu. */
static bool keep(struct gp_srv_preflight *p, const char *node, char *text, int64_t received_ms, bool *room)
{
    unsigned i = find(p, node);
    *room = i < p->n || p->n < PF_MAX_NODES;
    if (*room && i == p->n && p->n == p->cap) {
        unsigned cap = p->cap ? p->cap * 2 : 64;
        void *nv = realloc(p->v, cap * sizeof *p->v);
        if (nv) {
            p->v = nv;
            p->cap = cap;
        }
    }
    if (!*room || i >= p->cap)
        return false;
    if (i == p->n) {
        snprintf(p->v[i].node, sizeof p->v[i].node, "%s", node);
        p->v[i].doc = NULL;
        p->n++;
    }
    free(p->v[i].doc);
    p->v[i].doc = text;
    p->v[i].received_ms = received_ms;
    return true;
}

static int save(sqlite3 *db, const char *node, int64_t received_ms, const char *doc)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO preflight(node, received, doc) VALUES(?1, ?2, ?3)", -1,
                           &st, NULL) != SQLITE_OK)
        return GP_EIO;
    sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, received_ms);
    sqlite3_bind_text(st, 3, doc, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? GP_OK : GP_EIO;
    sqlite3_finalize(st);
    return rc;
}

static void post(struct gp_server *s, const struct gp_http_request *req, struct gp_http_response *resp)
{
    size_t len;
    const uint8_t *body = gp_http_body(req, &len);
    json_error_t je;
    json_t *doc = json_loadb((const char *)body, len, JSON_REJECT_DUPLICATES, &je);
    char why[256];
    const char *bad = doc ? invalid(doc, why, sizeof why) : NULL;
    if (!doc || bad) {
        if (!doc)
            snprintf(why, sizeof why, "the body is not JSON: %s (line %d)", je.text, je.line);
        gp_srv_bad(resp, 400, "bad_data", "preflight result: %s", bad ? bad : why);
        json_decref(doc);
        return;
    }
    char *text = json_dumps(doc, JSON_COMPACT);
    const char *node = json_string_value(json_object_get(doc, "node"));
    note_health(s, doc, node);
    struct gp_srv_preflight *p = &s->preflight;
    int64_t now = gp_wall_ms();
    pthread_mutex_lock(&p->mu);
    bool room = true;
    char *kept = text;
    bool ok = text && keep(p, node, text, now, &room);
    if (ok) {
        text = NULL;
        if (p->db && save(p->db, node, now, kept))
            gp_log(GP_LOG_WARN, "preflight", "cannot keep a preflight result in state.db",
                   "node=\"%s\" error=\"%s\"", node, sqlite3_errmsg(p->db));
    }
    pthread_mutex_unlock(&p->mu);
    free(text);
    json_decref(doc);
    if (!ok) {
        gp_srv_bad(resp, room ? 503 : 413, room ? "unavailable" : "bad_data",
                   room ? "out of memory" : "preflight results of 65536 nodes are kept already");
        return;
    }
    resp->status = 204;
}

static int by_node(const void *a, const void *b)
{
    return strcmp(((const struct gp_srv_preflight_node *)a)->node, ((const struct gp_srv_preflight_node *)b)->node);
}

/* A result goes with its node: when the health states forgot the node
 * (it left the fleet, insight/health.h), so does its result. Under mu. */
static void drop_forgotten(struct gp_server *s, struct gp_srv_preflight *p)
{
    for (unsigned i = 0; s->health && i < p->n;) {
        if (gp_health_knows(s->health, p->v[i].node)) {
            i++;
            continue;
        }
        sqlite3_stmt *st;
        if (p->db && sqlite3_prepare_v2(p->db, "DELETE FROM preflight WHERE node=?1", -1, &st, NULL) == SQLITE_OK) {
            sqlite3_bind_text(st, 1, p->v[i].node, -1, SQLITE_STATIC);
            if (sqlite3_step(st) != SQLITE_DONE)
                gp_log(GP_LOG_WARN, "preflight", "cannot delete a forgotten node's result from state.db",
                       "node=\"%s\" error=\"%s\"", p->v[i].node, sqlite3_errmsg(p->db));
            sqlite3_finalize(st);
        }
        free(p->v[i].doc);
        p->v[i] = p->v[--p->n];
    }
}

static void get(struct gp_server *s, const struct gp_http_request *req, struct gp_http_response *resp)
{
    const char *want = gp_http_query(req, "node");
    struct gp_srv_preflight *p = &s->preflight;
    resp->content_type = "application/json";
    gp_buf_puts(&resp->body, "{\"status\":\"success\",\"data\":[");
    pthread_mutex_lock(&p->mu);
    drop_forgotten(s, p);
    if (p->n)
        qsort(p->v, p->n, sizeof *p->v, by_node);
    unsigned k = 0;
    for (unsigned i = 0; i < p->n; i++) {
        if (want && strcmp(want, p->v[i].node))
            continue;
        /* the stored object, with the time it came: {"received":T,...} */
        gp_buf_puts(&resp->body, k++ ? ",{\"received\":" : "{\"received\":");
        gp_json_time(&resp->body, p->v[i].received_ms);
        gp_buf_printf(&resp->body, ",%s", p->v[i].doc + 1);
    }
    pthread_mutex_unlock(&p->mu);
    gp_buf_puts(&resp->body, "]}");
}

void gp_srv_handle_preflight(struct gp_server *s, const struct gp_http_request *req, struct gp_http_response *resp)
{
    if (!strcmp(gp_http_method(req), "POST"))
        post(s, req, resp);
    else
        get(s, req, resp);
}

void gp_srv_preflight_init(struct gp_srv_preflight *p)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
}

int gp_srv_preflight_load(struct gp_srv_preflight *p, const char *dir, char *err, size_t errlen)
{
    int rc = gp_state_open(&p->db, dir, err, errlen);
    sqlite3_stmt *st = NULL;
    if (rc)
        return rc;
    if (sqlite3_prepare_v2(p->db, "SELECT node, received, doc FROM preflight", -1, &st, NULL) != SQLITE_OK)
        return gp_seterr(err, errlen, GP_EIO, "reading the preflight results from state.db: %s",
                         sqlite3_errmsg(p->db));
    pthread_mutex_lock(&p->mu);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *node = (const char *)sqlite3_column_text(st, 0);
        const char *doc = (const char *)sqlite3_column_text(st, 2);
        bool room;
        /* our own rows: a JSON object as post() kept it */
        if (!node || !doc || doc[0] != '{')
            continue;
        char *text = strdup(doc);
        if (!text || !keep(p, node, text, sqlite3_column_int64(st, 1), &room)) {
            free(text);
            break;
        }
    }
    pthread_mutex_unlock(&p->mu);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return rc == SQLITE_ROW ? gp_seterr(err, errlen, GP_ENOMEM, "out of memory reading the preflight results")
                                : gp_seterr(err, errlen, GP_EIO, "reading the preflight results from state.db: %s",
                                            sqlite3_errmsg(p->db));
    return GP_OK;
}

void gp_srv_preflight_free(struct gp_srv_preflight *p)
{
    gp_state_close(p->db);
    for (unsigned i = 0; i < p->n; i++)
        free(p->v[i].doc);
    free(p->v);
    pthread_mutex_destroy(&p->mu);
}
