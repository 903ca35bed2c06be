/*
 * outbox.c - the persisted outbox (outbox.h).
 *
 * One SQLite connection to state.db, used under ob->mu by the sender
 * thread, enqueue, the API and /metrics; the mutex is never held while a
 * channel sends, so a slow far end never stalls a scrape or the router.
 * The sender loop: send what is due (gp_outbox_run_due), then sleep
 * until the earliest next_attempt, at most 1 s, or until woken by an
 * enqueue or a stop. Each send is judged and written before the next:
 * done, queued again with a later next_attempt (attempts + 1), or dead.
 * A crash between a send and its update re-sends that one notification
 * after the restart; receivers drop the repeat by its id
 * (X-Gpulse-Notification-Id), which is why every row has a stable one.
 */
#include "notify/outbox.h"

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "lib/metrics.h"
#include "notify/notice.h"
#include "state/state.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

enum { R_DONE, R_RETRY, R_DEAD, R__COUNT };
static const char *const result_names[R__COUNT] = {"done", "retry", "dead"};

#define BATCH 64
#define NO_CHANNEL_WAIT_MS 60000
#define MIN_BACKOFF_MS 100

struct gp_outbox {
    struct gp_outbox_options o;
    sqlite3 *db;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool started, stopping, woken;
    uint64_t rng;
    uint64_t results[GP_NOTIFY_RECEIVERS_MAX][R__COUNT];
    uint64_t sends;
};

static int64_t now_of(const struct gp_outbox *ob)
{
    return ob->o.now_ms ? ob->o.now_ms(ob->o.clock_ctx) : gp_wall_ms();
}

int gp_outbox_open(struct gp_outbox **out, const struct gp_outbox_options *o, char *err,
                   size_t errlen)
{
    *out = NULL;
    struct gp_outbox *ob = calloc(1, sizeof *ob);
    if (!ob)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    ob->o = *o;
    ob->rng = o->seed ? o->seed : (uint64_t)gp_mono_ns() | 1;
    int rc = gp_state_open(&ob->db, o->dir, err, errlen);
    if (rc) {
        free(ob);
        return rc;
    }
    sqlite3_busy_timeout(ob->db, 5000);
    pthread_mutex_init(&ob->mu, NULL);
    pthread_cond_init(&ob->cv, NULL);
    *out = ob;
    return GP_OK;
}

static void *sender(void *arg);

int gp_outbox_start(struct gp_outbox *ob)
{
    if (pthread_create(&ob->thread, NULL, sender, ob))
        return GP_ENOMEM;
    ob->started = true;
    return GP_OK;
}

void gp_outbox_close(struct gp_outbox *ob)
{
    if (!ob)
        return;
    pthread_mutex_lock(&ob->mu);
    ob->stopping = true;
    pthread_cond_broadcast(&ob->cv);
    pthread_mutex_unlock(&ob->mu);
    if (ob->started)
        pthread_join(ob->thread, NULL);
    gp_state_close(ob->db);
    pthread_cond_destroy(&ob->cv);
    pthread_mutex_destroy(&ob->mu);
    free(ob);
}

int gp_outbox_insert(sqlite3 *db, const struct gp_notice *n, int64_t now_ms,
                     char id_out[GP_OUTBOX_ID_LEN])
{
    unsigned char rnd[16];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        uint64_t x = (uint64_t)gp_mono_ns() ^ (uint64_t)now_ms * 0x9E3779B97F4A7C15ull;
        for (size_t i = 0; i < sizeof rnd; i++, x = x * 6364136223846793005ull + 1442695040888963407ull)
            rnd[i] = (unsigned char)(x >> 56);
    }
    for (size_t i = 0; i < sizeof rnd; i++)
        snprintf(id_out + 2 * i, 3, "%02x", rnd[i]);
    char *json;
    int rc = gp_notice_to_json(n, &json);
    if (rc)
        return rc;
    sqlite3_stmt *st;
    rc = GP_EIO;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO notifications(id, receiver, group_key, notice, created,"
                           " attempts, next_attempt, state, last_status, detail, updated)"
                           " VALUES(?1, ?2, ?3, ?4, ?5, 0, ?5, 'queued', NULL, '', ?5)",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, id_out, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, n->receiver, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, n->group_key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, json, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, now_ms);
        if (sqlite3_step(st) == SQLITE_DONE)
            rc = GP_OK;
        sqlite3_finalize(st);
    }
    free(json);
    return rc;
}

void gp_outbox_wake(struct gp_outbox *ob)
{
    pthread_mutex_lock(&ob->mu);
    ob->woken = true;
    pthread_cond_broadcast(&ob->cv);
    pthread_mutex_unlock(&ob->mu);
}

int gp_outbox_enqueue(struct gp_outbox *ob, const struct gp_notice *n, char id_out[GP_OUTBOX_ID_LEN])
{
    pthread_mutex_lock(&ob->mu);
    int rc = gp_outbox_insert(ob->db, n, now_of(ob), id_out);
    ob->woken = true;
    pthread_cond_broadcast(&ob->cv);
    pthread_mutex_unlock(&ob->mu);
    return rc;
}

/* ---- sending ---- */

struct due_row {
    char id[GP_OUTBOX_ID_LEN];
    char receiver[GP_NOTIFY_NAME_LEN];
    char *notice;
    int64_t created;
    int attempts;
};

/* A uniform random number in [0, n]. */
static int64_t jitter(struct gp_outbox *ob, int64_t n)
{
    ob->rng ^= ob->rng << 13;
    ob->rng ^= ob->rng >> 7;
    ob->rng ^= ob->rng << 17;
    return n > 0 ? (int64_t)(ob->rng % ((uint64_t)n + 1)) : 0;
}

/* The delay before attempt `attempts + 1` after `attempts` failures. */
static int64_t backoff(struct gp_outbox *ob, int attempts, int64_t retry_after_ms)
{
    int64_t cap = ob->o.cfg->retry_max_backoff_ms, base = 1000;
    for (int i = 1; i < attempts && base < cap; i++)
        base *= 2;
    if (base > cap)
        base = cap;
    int64_t d = jitter(ob, base);
    if (d < MIN_BACKOFF_MS)
        d = MIN_BACKOFF_MS;
    if (retry_after_ms > d)
        d = retry_after_ms;
    return d;
}

/* Writes the outcome of a row. Called with ob->mu held. */
static void update_row(struct gp_outbox *ob, const char *id, const char *state, int attempts,
                       int64_t next, int status, const char *detail, int64_t now)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(ob->db,
                           "UPDATE notifications SET state=?2, attempts=?3, next_attempt=?4,"
                           " last_status=?5, detail=?6, updated=?7 WHERE id=?1",
                           -1, &st, NULL) != SQLITE_OK) {
        gp_log(GP_LOG_ERROR, "notify", "cannot update the outbox", "id=%s error=\"%s\"", id,
               sqlite3_errmsg(ob->db));
        return;
    }
    sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, state, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, attempts);
    sqlite3_bind_int64(st, 4, next);
    if (status)
        sqlite3_bind_int(st, 5, status);
    else
        sqlite3_bind_null(st, 5);
    sqlite3_bind_text(st, 6, detail, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 7, now);
    if (sqlite3_step(st) != SQLITE_DONE)
        gp_log(GP_LOG_ERROR, "notify", "cannot update the outbox", "id=%s error=\"%s\"", id,
               sqlite3_errmsg(ob->db));
    sqlite3_finalize(st);
}

static const struct gp_receiver *receiver_of(struct gp_outbox *ob, const char *name, size_t *idx)
{
    const struct gp_receiver *r = gp_notify_receiver(ob->o.cfg, name);
    if (r)
        *idx = (size_t)(r - ob->o.cfg->recv);
    return r;
}

/* Sends one row (ob->mu not held) and writes its outcome. */
static void send_row(struct gp_outbox *ob, struct due_row *row, int64_t now)
{
    const struct gp_notify_config *cfg = ob->o.cfg;
    size_t idx = 0;
    const struct gp_receiver *r = receiver_of(ob, row->receiver, &idx);
    struct gp_send_outcome oc;
    memset(&oc, 0, sizeof oc);
    char detail[sizeof oc.detail];
    const char *state;
    int64_t next = now;
    int attempts = row->attempts;
    if (!r) {
        state = "dead";
        snprintf(detail, sizeof detail, "receiver '%s' is no longer configured", row->receiver);
        pthread_mutex_lock(&ob->mu);
        update_row(ob, row->id, state, attempts, next, 0, detail, now);
        pthread_mutex_unlock(&ob->mu);
        return;
    }
    const struct gp_channel_ops *ch = ob->o.channels ? ob->o.channels[r->type] : NULL;
    if (!ch || !ch->send) { /* keep it: the channel may come with the next version */
        snprintf(detail, sizeof detail, "no channel for %s receivers in this build",
                 gp_receiver_type_names[r->type]);
        pthread_mutex_lock(&ob->mu);
        update_row(ob, row->id, "queued", attempts, now + NO_CHANNEL_WAIT_MS, 0, detail, now);
        pthread_mutex_unlock(&ob->mu);
        return;
    }
    struct gp_notice_doc doc;
    char perr[200];
    int rc = gp_notice_from_json(row->notice, strlen(row->notice), &doc, perr, sizeof perr);
    if (rc) {
        state = "dead";
        snprintf(detail, sizeof detail, "the stored notice does not parse: %s", perr);
        attempts++;
    } else {
        doc.n.id = row->id; /* the stable id: X-Gpulse-Notification-Id, Message-ID */
        rc = ch->send(r, &doc.n, &oc);
        attempts++;
        __atomic_add_fetch(&ob->sends, 1, __ATOMIC_RELAXED);
        gp_notify_redact(cfg->recv, cfg->nrecv, rc ? gp_strerror(rc) : oc.detail, detail,
                         sizeof detail);
        if (rc) /* could not even try: a local problem, worth retrying */
            oc.result = GP_SEND_RETRY;
        if (oc.result == GP_SEND_OK)
            state = "done";
        else if (oc.result == GP_SEND_FAIL)
            state = "dead";
        else {
            next = now + backoff(ob, attempts, oc.retry_after_ms);
            state = next - row->created > cfg->retry_max_age_ms ? "dead" : "queued";
        }
    }
    gp_notice_doc_free(&doc);
    int res = !strcmp(state, "done") ? R_DONE : !strcmp(state, "dead") ? R_DEAD : R_RETRY;
    __atomic_add_fetch(&ob->results[idx][res], 1, __ATOMIC_RELAXED);
    gp_log(res == R_DONE ? GP_LOG_INFO : GP_LOG_WARN, "notify", "notification sent",
           "id=%s receiver=%s result=%s attempts=%d status=%d detail=\"%s\"", row->id, r->name,
           result_names[res], attempts, oc.status, detail);
    pthread_mutex_lock(&ob->mu);
    update_row(ob, row->id, state, attempts, next, oc.status, detail, now);
    pthread_mutex_unlock(&ob->mu);
}

int gp_outbox_run_due(struct gp_outbox *ob, int64_t now_ms, size_t *sent)
{
    if (sent)
        *sent = 0;
    struct due_row rows[BATCH];
    size_t n = 0;
    int rc = GP_OK;
    pthread_mutex_lock(&ob->mu);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(ob->db,
                           "SELECT id, receiver, notice, created, attempts FROM notifications"
                           " WHERE state='queued' AND next_attempt<=?1 ORDER BY next_attempt, seq"
                           " LIMIT ?2",
                           -1, &st, NULL) != SQLITE_OK)
        rc = GP_EIO;
    else {
        sqlite3_bind_int64(st, 1, now_ms);
        sqlite3_bind_int(st, 2, BATCH);
        while (n < BATCH && sqlite3_step(st) == SQLITE_ROW) {
            struct due_row *r = &rows[n];
            snprintf(r->id, sizeof r->id, "%s", (const char *)sqlite3_column_text(st, 0));
            snprintf(r->receiver, sizeof r->receiver, "%s", (const char *)sqlite3_column_text(st, 1));
            r->notice = strdup((const char *)sqlite3_column_text(st, 2));
            r->created = sqlite3_column_int64(st, 3);
            r->attempts = sqlite3_column_int(st, 4);
            if (!r->notice) {
                rc = GP_ENOMEM;
                break;
            }
            n++;
        }
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&ob->mu);
    for (size_t i = 0; i < n; i++) {
        pthread_mutex_lock(&ob->mu);
        bool stop = ob->stopping;
        pthread_mutex_unlock(&ob->mu);
        if (!stop) {
            send_row(ob, &rows[i], now_ms);
            if (sent)
                (*sent)++;
        }
        free(rows[i].notice);
    }
    return rc;
}

/* The earliest next_attempt of a queued row, or INT64_MAX. ob->mu held. */
static int64_t next_due(struct gp_outbox *ob)
{
    sqlite3_stmt *st;
    int64_t t = INT64_MAX;
    if (sqlite3_prepare_v2(ob->db, "SELECT min(next_attempt) FROM notifications WHERE state='queued'",
                           -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
            t = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    return t;
}

static void *sender(void *arg)
{
    struct gp_outbox *ob = arg;
    pthread_mutex_lock(&ob->mu);
    while (!ob->stopping) {
        ob->woken = false;
        pthread_mutex_unlock(&ob->mu);
        size_t sent;
        gp_outbox_run_due(ob, now_of(ob), &sent);
        pthread_mutex_lock(&ob->mu);
        if (ob->stopping || ob->woken || sent == BATCH)
            continue;
        int64_t wait = next_due(ob) - now_of(ob);
        if (wait <= 0)
            continue;
        if (wait > 1000)
            wait = 1000;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += wait / 1000;
        ts.tv_nsec += (wait % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        while (!ob->stopping && !ob->woken &&
               pthread_cond_timedwait(&ob->cv, &ob->mu, &ts) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&ob->mu);
    return NULL;
}

/* ---- reading ---- */

int gp_outbox_list_json(struct gp_outbox *ob, const char *state, const char *receiver, size_t limit,
                        struct gp_buf *out)
{
    if (state && !strcmp(state, "all"))
        state = NULL;
    json_t *arr = json_array();
    if (!arr)
        return GP_ENOMEM;
    int rc = GP_OK;
    pthread_mutex_lock(&ob->mu);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(ob->db,
                           "SELECT id, receiver, group_key, notice, created, attempts, next_attempt,"
                           " state, last_status, detail, updated FROM notifications"
                           " WHERE (?1 IS NULL OR state=?1) AND (?2 IS NULL OR receiver=?2)"
                           " ORDER BY seq DESC LIMIT ?3",
                           -1, &st, NULL) != SQLITE_OK)
        rc = GP_EIO;
    else {
        if (state)
            sqlite3_bind_text(st, 1, state, -1, SQLITE_STATIC);
        if (receiver)
            sqlite3_bind_text(st, 2, receiver, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)limit);
        int s;
        while ((s = sqlite3_step(st)) == SQLITE_ROW) {
            const char *notice = (const char *)sqlite3_column_text(st, 3);
            json_t *nj = json_loads(notice ? notice : "null", JSON_DECODE_ANY, NULL);
            json_t *o = json_pack(
                "{s:s, s:s, s:s, s:o, s:f, s:i, s:f, s:s, s:o, s:s, s:f}", "id",
                (const char *)sqlite3_column_text(st, 0), "receiver",
                (const char *)sqlite3_column_text(st, 1), "group_key",
                (const char *)sqlite3_column_text(st, 2), "notice", nj ? nj : json_null(), "created",
                (double)sqlite3_column_int64(st, 4) / 1e3, "attempts", sqlite3_column_int(st, 5),
                "next_attempt", (double)sqlite3_column_int64(st, 6) / 1e3, "state",
                (const char *)sqlite3_column_text(st, 7), "last_status",
                sqlite3_column_type(st, 8) == SQLITE_NULL ? json_null()
                                                          : json_integer(sqlite3_column_int(st, 8)),
                "detail", (const char *)sqlite3_column_text(st, 9), "updated",
                (double)sqlite3_column_int64(st, 10) / 1e3);
            if (!o || json_array_append_new(arr, o)) {
                rc = GP_ENOMEM;
                break;
            }
        }
        if (!rc && s != SQLITE_DONE)
            rc = GP_EIO;
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&ob->mu);
    if (!rc) {
        json_t *env = json_pack("{s:s, s:o}", "status", "success", "data", arr);
        arr = NULL;
        char *text = env ? json_dumps(env, JSON_COMPACT) : NULL;
        json_decref(env);
        if (!text)
            rc = GP_ENOMEM;
        else {
            /* the stored notices and details are redacted; this is a last guard */
            size_t len = strlen(text);
            char *red = malloc(len + 1);
            if (!red)
                rc = GP_ENOMEM;
            else {
                gp_notify_redact(ob->o.cfg->recv, ob->o.cfg->nrecv, text, red, len + 1);
                gp_buf_puts(out, red);
                rc = out->err;
                free(red);
            }
            free(text);
        }
    }
    json_decref(arr);
    return rc;
}

static uint64_t count_state(struct gp_outbox *ob, const char *state)
{
    sqlite3_stmt *st;
    uint64_t n = 0;
    if (sqlite3_prepare_v2(ob->db, "SELECT count(*) FROM notifications WHERE state=?1", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, state, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW)
            n = (uint64_t)sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    return n;
}

void gp_outbox_stats(struct gp_outbox *ob, struct gp_outbox_stats *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&ob->mu);
    out->queued = count_state(ob, "queued");
    out->done = count_state(ob, "done");
    out->dead = count_state(ob, "dead");
    pthread_mutex_unlock(&ob->mu);
    out->sends = __atomic_load_n(&ob->sends, __ATOMIC_RELAXED);
    for (size_t i = 0; i < GP_NOTIFY_RECEIVERS_MAX; i++) {
        out->retries += __atomic_load_n(&ob->results[i][R_RETRY], __ATOMIC_RELAXED);
        out->failures += __atomic_load_n(&ob->results[i][R_DEAD], __ATOMIC_RELAXED);
    }
}

void gp_outbox_walk_metrics(struct gp_outbox *ob, struct gp_metric_sink *b)
{
    struct gp_outbox_stats s;
    gp_outbox_stats(ob, &s);
    const struct gp_notify_config *c = ob->o.cfg;
    gp_metric_family(b, GP_M_NOTIFICATIONS);
    for (size_t i = 0; i < c->nrecv && i < GP_NOTIFY_RECEIVERS_MAX; i++)
        for (int r = 0; r < R__COUNT; r++) {
            const struct gp_metric_label l[] = {{"receiver", c->recv[i].name}, {"result", result_names[r]}};
            b->sample(b, gp_metric_name(GP_M_NOTIFICATIONS), NULL, l, 2,
                      (double)__atomic_load_n(&ob->results[i][r], __ATOMIC_RELAXED));
        }
    gp_metric_one(b, GP_M_NOTIFICATIONS_QUEUED, (double)s.queued);
    gp_metric_one(b, GP_M_NOTIFICATIONS_DEAD, (double)s.dead);
}
