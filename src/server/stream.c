/*
 * stream.c - GET /api/v1/stream: Server-Sent Events for the dashboard
 * (docs/dashboard.md). Each open stream gets `retry: 2000`, then every
 * interval a `fleet` event (the data of GET /api/v1/fleet) and a `gpus`
 * event (GET /api/v1/fleet/gpus with the stream's filters), an `alert`
 * event at once for every alert transition (and acknowledgement), and a
 * `: keepalive` comment after 15 s of silence. `id:` counts up per stream.
 *
 * Threads. A stream is a connection thread of the HTTP server running
 * the producer below (http.h's gp_http_stream_fn), which waits on the
 * hub's condition variable at most STREAM_WAIT_MS at a time. Alert
 * events arrive on the evaluation thread (an alert listener): the event
 * is rendered once and copied into each stream's small queue; a stream
 * whose queue is full (a client that reads slower than alerts come) loses
 * the event, which is counted; it re-reads /api/v1/alerts on reconnect.
 *
 * Cost. The fleet and gpus documents are rendered at most once per
 * STREAM_CACHE_MS for every stream with the same filters (a few cached
 * renderings, under one lock so that streams ticking together render
 * once), so a hundred open streams cost about what one does.
 *
 * Stopping: gp_srv_stream_close wakes every producer, which ends its
 * stream, and waits up to STREAM_CLOSE_GRACE_MS for them to end cleanly;
 * the HTTP server's stop then cuts the rest (stream_free unlinks each).
 */
#include "server_int.h"

#include "insight/alerts.h"
#include "lib/clock.h"
#include "lib/duration.h"
#include "lib/err.h"
#include "lib/log.h"
#include "lib/metrics.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STREAM_QUEUE 64            /* alert events waiting per stream */
#define STREAM_WAIT_MS 250         /* longest wait of one producer call */
#define STREAM_KEEPALIVE_MS 15000
#define STREAM_CACHE_MS 200        /* a rendering serves every stream this long */
#define STREAM_CACHE_GPUS 8        /* distinct gpus filters cached */
#define STREAM_INTERVAL_MIN_MS 250
#define STREAM_INTERVAL_MAX_MS 60000
#define STREAM_FILTER_LEN 256
#define STREAM_CLOSE_GRACE_MS 1000

struct cached {
    char key[3 * STREAM_FILTER_LEN + 3]; /* the filters, NUL-separated ("" for fleet) */
    int64_t at_ms;                       /* mono; 0: empty */
    int ok;
    struct gp_buf doc;
};

struct stream {
    struct gp_srv_streams *hub;
    struct stream *prev, *next;
    int64_t interval_ms, next_tick_ms, last_sent_ms; /* mono */
    uint64_t id;
    int started;
    char node[STREAM_FILTER_LEN], job[STREAM_FILTER_LEN], model[STREAM_FILTER_LEN];
    char *q[STREAM_QUEUE]; /* alert event data, owned */
    size_t qhead, qn;
};

struct gp_srv_streams {
    struct gp_server *s;
    pthread_mutex_t mu; /* the list, the queues, closing */
    pthread_cond_t cv;
    struct stream *list;
    int closing;
    uint64_t open, opened, dropped, events; /* read by /metrics with relaxed atomics */
    pthread_mutex_t render_mu; /* the cache */
    struct cached fleet, gpus[STREAM_CACHE_GPUS];
};

int gp_srv_stream_open(struct gp_server *s)
{
    struct gp_srv_streams *h = calloc(1, sizeof *h);
    if (!h)
        return GP_ENOMEM;
    h->s = s;
    pthread_mutex_init(&h->mu, NULL);
    pthread_mutex_init(&h->render_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* waits use gp_mono_ms deadlines */
    pthread_cond_init(&h->cv, &ca);
    pthread_condattr_destroy(&ca);
    gp_buf_init(&h->fleet.doc, 0);
    for (size_t i = 0; i < STREAM_CACHE_GPUS; i++)
        gp_buf_init(&h->gpus[i].doc, 0);
    s->streams = h;
    return GP_OK;
}

void gp_srv_stream_close(struct gp_server *s)
{
    struct gp_srv_streams *h = s->streams;
    if (!h)
        return;
    /* Wakes the producers, then gives their streams a moment to end
     * cleanly (the last chunk sent) before the HTTP server cuts them; a
     * stalled client's is cut. */
    pthread_mutex_lock(&h->mu);
    h->closing = 1;
    pthread_cond_broadcast(&h->cv);
    int64_t until = gp_mono_ms() + STREAM_CLOSE_GRACE_MS;
    while (h->list && gp_mono_ms() < until) {
        struct timespec ts = {(time_t)(until / 1000), (long)(until % 1000) * 1000000L};
        pthread_cond_timedwait(&h->cv, &h->mu, &ts);
    }
    pthread_mutex_unlock(&h->mu);
}

void gp_srv_stream_free(struct gp_server *s)
{
    struct gp_srv_streams *h = s->streams;
    if (!h)
        return;
    /* every stream is gone: the HTTP server stopped before */
    gp_buf_free(&h->fleet.doc);
    for (size_t i = 0; i < STREAM_CACHE_GPUS; i++)
        gp_buf_free(&h->gpus[i].doc);
    pthread_mutex_destroy(&h->mu);
    pthread_mutex_destroy(&h->render_mu);
    pthread_cond_destroy(&h->cv);
    free(h);
    s->streams = NULL;
}

/* ---- events ---- */

/* One event; a data line per line of data (SSE ends a field at a newline). */
static void put_event(struct stream *st, struct gp_buf *out, const char *name, const char *data,
                      size_t len)
{
    gp_buf_printf(out, "id: %llu\nevent: %s\n", (unsigned long long)++st->id, name);
    for (size_t i = 0; i <= len;) {
        const char *nl = memchr(data + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - data) : len;
        if (end > i || !nl) {
            gp_buf_puts(out, "data: ");
            gp_buf_append(out, data + i, end - i);
            gp_buf_putc(out, '\n');
        }
        i = end + 1;
    }
    gp_buf_putc(out, '\n');
    gp_srv_count(&st->hub->events, 1);
}

/* The cached rendering of key (fleet when gpus is NULL), made anew when
 * older than STREAM_CACHE_MS; appended to out as an event. */
static void put_doc(struct stream *st, struct gp_buf *out, const struct gp_srv_gpu_filter *gpus)
{
    struct gp_srv_streams *h = st->hub;
    struct gp_storage *store = gp_srv_store(h->s);
    if (!store)
        return; /* starting: the next tick */
    char key[sizeof h->fleet.key] = "";
    if (gpus)
        snprintf(key, sizeof key, "%s%c%s%c%s", st->node, 0x1f, st->job, 0x1f, st->model);
    int64_t now = gp_mono_ms();
    pthread_mutex_lock(&h->render_mu);
    struct cached *c = &h->fleet;
    if (gpus) { /* the slot of these filters, else the oldest (an empty one first) */
        c = NULL;
        for (size_t i = 0; i < STREAM_CACHE_GPUS && !c; i++)
            if (h->gpus[i].at_ms && !strcmp(h->gpus[i].key, key))
                c = &h->gpus[i];
        if (!c) {
            c = &h->gpus[0];
            for (size_t i = 1; i < STREAM_CACHE_GPUS; i++)
                if (h->gpus[i].at_ms < c->at_ms)
                    c = &h->gpus[i];
        }
    }
    if (!c->at_ms || now - c->at_ms >= STREAM_CACHE_MS || strcmp(c->key, key)) {
        char err[256];
        gp_buf_reset(&c->doc);
        snprintf(c->key, sizeof c->key, "%s", key);
        int rc = gpus ? gp_srv_fleet_gpus_data(h->s, store, gpus, &c->doc, err, sizeof err)
                      : gp_srv_fleet_data(h->s, store, &c->doc, err, sizeof err);
        c->ok = !rc && !c->doc.err;
        c->at_ms = now;
        if (!c->ok)
            gp_log(GP_LOG_WARN, "stream", "cannot render an event", "event=%s err=\"%s\"",
                   gpus ? "gpus" : "fleet", rc ? err : gp_strerror(c->doc.err));
    }
    if (c->ok)
        put_event(st, out, gpus ? "gpus" : "fleet", c->doc.data, c->doc.len);
    pthread_mutex_unlock(&h->render_mu);
}

void gp_srv_stream_alert(struct gp_server *s, const char *id)
{
    struct gp_srv_streams *h = s->streams;
    if (!h || !s->alerts || !__atomic_load_n(&h->open, __ATOMIC_RELAXED))
        return;
    struct gp_buf b;
    gp_buf_init(&b, 0);
    if (gp_alerts_one_json(s->alerts, id, &b) || b.err || !b.len) {
        gp_buf_free(&b);
        return;
    }
    pthread_mutex_lock(&h->mu);
    for (struct stream *st = h->list; st; st = st->next) {
        char *copy = st->qn < STREAM_QUEUE ? strdup(b.data) : NULL;
        if (!copy) {
            gp_srv_count(&h->dropped, 1);
            continue;
        }
        st->q[(st->qhead + st->qn++) % STREAM_QUEUE] = copy;
    }
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    gp_buf_free(&b);
}

void gp_srv_stream_on_alert(void *ctx, const struct gp_alert_event *ev)
{
    gp_srv_stream_alert(ctx, ev->id);
}

/* ---- one stream ---- */

/* The producer (http.h): what is due now, or a short wait. */
static int produce(void *arg, struct gp_buf *out)
{
    struct stream *st = arg;
    struct gp_srv_streams *h = st->hub;
    if (!st->started) {
        st->started = 1;
        gp_buf_puts(out, "retry: 2000\n\n");
    }
    int64_t now = gp_mono_ms();
    pthread_mutex_lock(&h->mu);
    if (!h->closing && !st->qn && now < st->next_tick_ms &&
        now - st->last_sent_ms < STREAM_KEEPALIVE_MS) {
        int64_t until = st->next_tick_ms < now + STREAM_WAIT_MS ? st->next_tick_ms : now + STREAM_WAIT_MS;
        struct timespec ts = {(time_t)(until / 1000), (long)(until % 1000) * 1000000L};
        pthread_cond_timedwait(&h->cv, &h->mu, &ts);
        now = gp_mono_ms();
    }
    if (h->closing) {
        pthread_mutex_unlock(&h->mu);
        return -1;
    }
    while (st->qn) {
        char *ev = st->q[st->qhead];
        st->q[st->qhead] = NULL;
        st->qhead = (st->qhead + 1) % STREAM_QUEUE;
        st->qn--;
        put_event(st, out, "alert", ev, strlen(ev));
        free(ev);
    }
    pthread_mutex_unlock(&h->mu);
    if (now >= st->next_tick_ms) {
        struct gp_srv_gpu_filter f = {st->node[0] ? st->node : NULL, st->job[0] ? st->job : NULL,
                                      st->model[0] ? st->model : NULL};
        put_doc(st, out, NULL);
        put_doc(st, out, &f);
        st->next_tick_ms += st->interval_ms;
        if (st->next_tick_ms <= now) /* fell behind: no burst to catch up */
            st->next_tick_ms = now + st->interval_ms;
    }
    if (!out->len && now - st->last_sent_ms >= STREAM_KEEPALIVE_MS)
        gp_buf_puts(out, ": keepalive\n\n");
    if (out->len)
        st->last_sent_ms = now;
    return 0;
}

static void stream_free(void *arg)
{
    struct stream *st = arg;
    struct gp_srv_streams *h = st->hub;
    pthread_mutex_lock(&h->mu);
    if (st->prev)
        st->prev->next = st->next;
    else
        h->list = st->next;
    if (st->next)
        st->next->prev = st->prev;
    while (st->qn) {
        free(st->q[st->qhead]);
        st->qhead = (st->qhead + 1) % STREAM_QUEUE;
        st->qn--;
    }
    __atomic_fetch_sub(&h->open, 1, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&h->cv); /* a closing hub waits for the list to empty */
    pthread_mutex_unlock(&h->mu);
    free(st);
}

/* Copies filter `name` into out; 0 with the answer filled when too long. */
static int filter_copy(const char *v, const char *name, char *out, struct gp_http_response *resp)
{
    if (v && strlen(v) >= STREAM_FILTER_LEN) {
        gp_srv_bad(resp, 400, "bad_data", "invalid parameter '%s': longer than %d bytes", name,
                   STREAM_FILTER_LEN - 1);
        return 0;
    }
    snprintf(out, STREAM_FILTER_LEN, "%s", v ? v : "");
    return 1;
}

void gp_srv_handle_stream(struct gp_server *s, const struct gp_http_request *req,
                          struct gp_http_response *resp)
{
    struct gp_srv_streams *h = s->streams;
    int64_t interval = 1000;
    const char *v = gp_http_query(req, "interval");
    if (v && *v) {
        char err[128];
        if (gp_parse_duration_ms(v, &interval, err, sizeof err) || interval < STREAM_INTERVAL_MIN_MS ||
            interval > STREAM_INTERVAL_MAX_MS) {
            gp_srv_bad(resp, 400, "bad_data",
                       "invalid parameter 'interval': '%.40s' (a duration from 250ms to 1m)", v);
            return;
        }
    }
    struct gp_srv_gpu_filter f;
    gp_srv_gpu_filter_parse(req, &f);
    struct stream *st = calloc(1, sizeof *st);
    if (!st) {
        gp_srv_bad(resp, 503, "unavailable", "out of memory");
        return;
    }
    if (!filter_copy(f.node, "node", st->node, resp) || !filter_copy(f.job, "job", st->job, resp) ||
        !filter_copy(f.model, "model", st->model, resp)) {
        free(st);
        return;
    }
    st->hub = h;
    st->interval_ms = interval;
    st->next_tick_ms = st->last_sent_ms = gp_mono_ms();
    pthread_mutex_lock(&h->mu);
    if (h->closing) {
        pthread_mutex_unlock(&h->mu);
        free(st);
        gp_srv_bad(resp, 503, "unavailable", "the server is stopping");
        return;
    }
    st->next = h->list;
    if (h->list)
        h->list->prev = st;
    h->list = st;
    __atomic_fetch_add(&h->open, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&h->mu);
    gp_srv_count(&h->opened, 1);
    resp->content_type = "text/event-stream; charset=utf-8";
    gp_http_add_header(resp, "Cache-Control", "no-cache");
    gp_http_add_header(resp, "X-Accel-Buffering", "no"); /* a proxy in front must not hold events */
    resp->stream = produce;
    resp->stream_free = stream_free;
    resp->stream_arg = st;
}

void gp_srv_walk_stream_metrics(struct gp_server *s, struct gp_metric_sink *b)
{
    struct gp_srv_streams *h = s->streams;
    if (!h)
        return;
    gp_metric_one(b, GP_M_SRV_STREAMS_OPEN, (double)gp_srv_get(&h->open));
    gp_metric_one(b, GP_M_SRV_STREAMS_OPENED, (double)gp_srv_get(&h->opened));
    gp_metric_one(b, GP_M_SRV_STREAM_EVENTS, (double)gp_srv_get(&h->events));
    gp_metric_one(b, GP_M_SRV_STREAM_DROPPED, (double)gp_srv_get(&h->dropped));
}
