/*
 * push.c - see push.h.
 *
 * Threads and what they own:
 *  - the caller of gp_push_tick (the sampling thread) swaps the tick's
 *    series into a small ring of reused builds (no copy) and signals the
 *    encoder; it never touches the disk or the network, so sampling keeps
 *    its pace;
 *  - the encoder thread swaps a ring slot for its own build, adds the
 *    node and external labels, encodes it once for the URL targets and
 *    appends the body to each one's queue (writing and syncing the disk
 *    buffer, under that target's mutex); the local target's queue takes
 *    the build itself, unencoded (swapped again, no copy);
 *  - one thread per target takes the oldest queued batches (joining
 *    several into one request when behind; the local target one tick per
 *    call), sends them without holding the mutex, then acknowledges,
 *    retries later, or drops them.
 * Counters are atomics, so /metrics reads them without waiting for a
 * target that is busy with its disk.
 *
 * Parts: options and targets; the encoder; batching and sending; the
 * target loop with its back-off; metrics; start and stop.
 */
#include "ingest/push.h"

#include "ingest/push_http.h"
#include "ingest/push_queue.h"
#include "ingest/remote_write.h"
#include "ingest/rw_build.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "lib/metrics.h"
#include "lib/token.h"
#include "net/httpc.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <snappy-c.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define RING 8                    /* ticks the encoder may lag behind */
#define LOCAL_TICKS 64            /* ticks the local target may hold (and queue_max bytes) */
#define MAX_REQUEST_RAW (1u << 20) /* uncompressed bytes in one request */
#define MAX_REQUEST_SAMPLES 50000
#define LOG_EVERY_MS 60000        /* one log line per problem per target per minute */
#define DRAIN_MAX_MS 5000
#define RETRY_AFTER_MAX_MS 600000

enum reason { R_REJECTED, R_BUFFER_FULL, R_CORRUPT, R_IO_ERROR, R_ENCODER, R__COUNT };
_Static_assert(R__COUNT == GP_PUSH_NREASONS, "push.h counts the drop reasons");
static const char *const reason_name[R__COUNT] = {"rejected", "buffer_full", "corrupt", "io_error",
                                                  "encoder"};

struct target {
    struct gp_push *p;
    char label[512];
    char key[1024]; /* what the buffer directory's name hashes: the URL without user info */
    struct gp_push_http *http; /* NULL for the local target */
    /* the local target's queue: whole ticks' series in memory, in order
     * (no encoding: the receiver is in this process) */
    struct gp_rw_build *lq;
    int64_t *lq_time;
    size_t lq_head, lq_n;
    struct gp_rw_build lq_cur; /* the tick being delivered, out of the queue */
    int64_t lq_cur_time;
    /* a tick larger than one body goes in parts (push.h): series of
     * lq_cur delivered or dropped, series in the part being sent, lq_cur
     * still open (parts left after a success), series of lq[lq_head]
     * done before a retry put it back */
    size_t lq_done, lq_part, lq_head_done;
    int lq_open;

    pthread_mutex_t mu; /* guards q and the fields below it */
    pthread_cond_t cv;
    struct gp_pushq *q;
    int stopping;
    int64_t drain_until_ms; /* monotonic: stop once this passes */
    int64_t next_try_ms;    /* monotonic: back-off until */
    int64_t backoff_ms;     /* 0 while healthy */
    int failing;

    /* sender's scratch, used by the target thread only */
    struct gp_buf body, one, raw;
    uint64_t rng;
    int64_t last_log_ms[R__COUNT + 1]; /* + one slot for "failing" */
    uint64_t suppressed[R__COUNT + 1];

    atomic_uint_fast64_t sent, retried, dropped[R__COUNT], queue_bytes, buffer_bytes;
    atomic_int_fast64_t last_success_ms; /* wall clock; 0 never */

    pthread_t thread;
    int running;
};

struct enc_part {
    struct gp_buf body;
    uint32_t nsamples, raw_len;
};

struct slot {
    struct gp_rw_build series;
    int64_t time_ms;
};

struct gp_push {
    struct gp_push_options o;
    char *bearer;
    char *dir;
    struct target *t;
    size_t nt;
    size_t nurls; /* t[0..nurls) are URLs; t[nurls], if any, the local target */

    pthread_mutex_t mu; /* guards the ring and stopping */
    pthread_cond_t cv;
    struct slot ring[RING];
    size_t rhead, rn;
    int stopping;
    pthread_t encoder;
    int encoder_running;
    atomic_int cancel; /* cancels requests in flight at the end of a stop */
    int curl_ref;      /* holds a reference on libcurl's global state */

    /* labels added to a tick's series that lack them (options' labels) */
    struct gp_label *add;
    size_t nadd;
    char **add_text; /* what add's views point into */

    /* the encoder's own state */
    struct gp_rw_build work;
    struct enc_part *parts; /* one tick's bodies (one unless it is split) */
    size_t cap_parts;
    struct gp_buf enc_raw;
    int64_t enc_last_log_ms;
    atomic_uint_fast64_t enc_ns_last, enc_ns_total, enc_ticks;
};

/* Waits on cv until the monotonic deadline (ms), or without limit when < 0. */
static void wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ms)
{
    if (deadline_ms < 0) {
        pthread_cond_wait(cv, mu);
        return;
    }
    struct timespec ts = {deadline_ms / 1000, (deadline_ms % 1000) * 1000000};
    pthread_cond_timedwait(cv, mu, &ts);
}

static void cond_init_mono(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}

/* Logs at most once a minute per target and kind; says how many were held back. */
static int should_log(struct target *t, int kind)
{
    int64_t now = gp_mono_ms();
    if (t->last_log_ms[kind] && now - t->last_log_ms[kind] < LOG_EVERY_MS) {
        t->suppressed[kind]++;
        return 0;
    }
    t->last_log_ms[kind] = now;
    return 1;
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * UINT64_C(0x100000001b3);
    return h;
}

/* Bytes the local target holds (ticks queued and the one in delivery). */
static uint64_t local_bytes(const struct target *t)
{
    uint64_t n = gp_rw_build_bytes(&t->lq_cur);
    for (size_t i = 0; i < t->lq_n; i++)
        n += gp_rw_build_bytes(&t->lq[(t->lq_head + i) % LOCAL_TICKS]);
    return n;
}

/* Ticks or batches waiting. Called with t->mu held. */
static size_t queued(const struct target *t)
{
    return t->lq ? t->lq_n + (size_t)t->lq_open : gp_pushq_count(t->q);
}

static void publish_sizes(struct target *t)
{
    if (t->lq) {
        atomic_store(&t->queue_bytes, local_bytes(t));
        return;
    }
    atomic_store(&t->queue_bytes, gp_pushq_bytes(t->q));
    atomic_store(&t->buffer_bytes, gp_pushq_disk_bytes(t->q));
}

/* ---- the encoder --------------------------------------------------------- */

static void drop_all_targets(struct gp_push *p, enum reason r, uint64_t samples)
{
    for (size_t i = 0; i < p->nt; i++)
        atomic_fetch_add(&p->t[i].dropped[r], samples);
}

/* Appends one encoded tick to a target's queue and wakes its thread. */
static void enqueue(struct target *t, const struct gp_buf *body, uint32_t nsamples, uint32_t raw_len,
                    int64_t time_ms)
{
    pthread_mutex_lock(&t->mu);
    uint64_t dropped = 0;
    int rc = gp_pushq_append(t->q, body->data, body->len, nsamples, raw_len, time_ms, &dropped);
    if (dropped) {
        atomic_fetch_add(&t->dropped[R_BUFFER_FULL], dropped);
        if (should_log(t, R_BUFFER_FULL))
            gp_log(GP_LOG_WARN, "push", "buffer full: dropping the oldest samples",
                   "target=%s dropped=%" PRIu64, t->label, dropped);
    }
    if (rc == GP_ETOOBIG) {
        atomic_fetch_add(&t->dropped[R_BUFFER_FULL], nsamples);
        if (should_log(t, R_BUFFER_FULL))
            gp_log(GP_LOG_WARN, "push", "one tick is larger than the whole buffer: dropped",
                   "target=%s bytes=%zu", t->label, body->len);
    } else if (rc) {
        atomic_fetch_add(&t->dropped[R_IO_ERROR], nsamples);
        if (should_log(t, R_IO_ERROR))
            gp_log(GP_LOG_ERROR, "push", "cannot write the push buffer: tick dropped",
                   "target=%s err=\"%s\"", t->label, gp_strerror(rc));
    } else if ((rc = gp_pushq_sync(t->q)) && should_log(t, R_IO_ERROR)) {
        /* Queued and sent from memory, but a crash now would lose it. */
        gp_log(GP_LOG_ERROR, "push", "cannot sync the push buffer", "target=%s err=\"%s\"", t->label,
               gp_strerror(rc));
    }
    publish_sizes(t);
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

/* Moves the tick's series into the local target's queue (no copy: work
 * gets an old build back); the oldest tick goes when the queue is full. */
static void local_enqueue(struct target *t, struct gp_rw_build *work, int64_t time_ms)
{
    pthread_mutex_lock(&t->mu);
    uint64_t max = t->p->o.queue_max ? t->p->o.queue_max : UINT64_MAX;
    while (t->lq_n && (t->lq_n == LOCAL_TICKS || local_bytes(t) + gp_rw_build_bytes(work) > max)) {
        uint64_t n = gp_rw_build_nseries(&t->lq[t->lq_head]) - t->lq_head_done;
        t->lq_head_done = 0;
        atomic_fetch_add(&t->dropped[R_BUFFER_FULL], n);
        if (should_log(t, R_BUFFER_FULL))
            gp_log(GP_LOG_WARN, "push", "queue full: dropping the oldest samples", "target=%s dropped=%" PRIu64,
                   t->label, n);
        gp_rw_build_reset(&t->lq[t->lq_head]);
        t->lq_head = (t->lq_head + 1) % LOCAL_TICKS;
        t->lq_n--;
    }
    size_t at = (t->lq_head + t->lq_n) % LOCAL_TICKS;
    gp_rw_build_swap(&t->lq[at], work);
    t->lq_time[at] = time_ms;
    t->lq_n++;
    publish_sizes(t);
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

/* Series [first, first + n) of req as a request of their own. */
static struct gp_batch part_of(const struct gp_batch *req, size_t first, size_t n)
{
    struct gp_batch b = {req->series + first, n, 0, 0, NULL};
    for (size_t i = 0; i < n; i++) {
        b.nlabels_total += req->series[first + i].nlabels;
        b.nsamples_total += req->series[first + i].nsamples;
    }
    return b;
}

/* Encodes req for the URL targets as one body or, when it is larger than
 * one body may be, as several in series order (p->parts), then appends
 * them to every target's queue: a tick that cannot be encoded is queued
 * not at all rather than in part. */
static int encode_parts(struct gp_push *p, const struct gp_batch *req, int64_t time_ms, char *err,
                        size_t errlen)
{
    size_t np = 0;
    for (size_t first = 0; !np || first < req->nseries; np++) {
        if (np == p->cap_parts) {
            size_t cap = p->cap_parts ? p->cap_parts * 2 : 4;
            struct enc_part *a = realloc(p->parts, cap * sizeof *a);
            if (!a)
                return gp_seterr(err, errlen, GP_ENOMEM, "remote-write encoding: out of memory");
            for (size_t i = p->cap_parts; i < cap; i++) {
                memset(&a[i], 0, sizeof a[i]);
                gp_buf_init(&a[i].body, 0);
            }
            p->parts = a;
            p->cap_parts = cap;
        }
        size_t n = gp_rw_fit(req, first, GP_PUSH_MAX_BODY_RAW, GP_PUSH_MAX_BODY_SERIES);
        struct gp_batch part = part_of(req, first, n);
        int rc = gp_rw_encode(&part, &p->parts[np].body, &p->enc_raw);
        if (rc)
            return gp_seterr(err, errlen, rc, "remote-write encoding: %s", gp_strerror(rc));
        p->parts[np].nsamples = (uint32_t)part.nsamples_total;
        p->parts[np].raw_len = (uint32_t)p->enc_raw.len;
        first += n;
    }
    for (size_t k = 0; k < np; k++)
        for (size_t i = 0; i < p->nurls; i++)
            enqueue(&p->t[i], &p->parts[k].body, p->parts[k].nsamples, p->parts[k].raw_len, time_ms);
    return GP_OK;
}

static void encode_one(struct gp_push *p, int64_t time_ms)
{
    int64_t t0 = gp_mono_ns();
    char err[256] = "";
    const struct gp_batch *req = NULL;
    int rc = gp_rw_build_view(&p->work, time_ms, p->add, p->nadd, &req);
    if (rc)
        snprintf(err, sizeof err, "building the tick's series: %s", gp_strerror(rc));
    if (!rc && p->nurls)
        rc = encode_parts(p, req, time_ms, err, sizeof err);
    if (rc) {
        int64_t now = gp_mono_ms();
        if (!p->enc_last_log_ms || now - p->enc_last_log_ms >= LOG_EVERY_MS) {
            p->enc_last_log_ms = now;
            char q[300];
            gp_log(GP_LOG_ERROR, "push", "cannot encode a tick for remote write", "err=%s",
                   gp_log_quote(q, sizeof q, err));
        }
        drop_all_targets(p, R_ENCODER, gp_rw_build_nseries(&p->work));
        return;
    }
    uint64_t ns = (uint64_t)(gp_mono_ns() - t0);
    atomic_store(&p->enc_ns_last, ns);
    atomic_fetch_add(&p->enc_ns_total, ns);
    atomic_fetch_add(&p->enc_ticks, 1);
    if (p->nt > p->nurls)
        local_enqueue(&p->t[p->nurls], &p->work, time_ms);
}

static void *encoder_main(void *arg)
{
    struct gp_push *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->rn && !p->stopping)
            pthread_cond_wait(&p->cv, &p->mu);
        if (!p->rn)
            break; /* stopping, and every tick handed over is encoded */
        struct slot *s = &p->ring[p->rhead];
        gp_rw_build_swap(&s->series, &p->work);
        int64_t time_ms = s->time_ms;
        p->rhead = (p->rhead + 1) % RING;
        p->rn--;
        pthread_mutex_unlock(&p->mu);
        encode_one(p, time_ms);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

void gp_push_tick(struct gp_push *p, struct gp_rw_build *series, int64_t time_ms)
{
    pthread_mutex_lock(&p->mu);
    if (p->rn == RING) {
        /* The encoder is RING ticks behind: the oldest waiting tick goes. */
        struct slot *old = &p->ring[p->rhead];
        drop_all_targets(p, R_ENCODER, gp_rw_build_nseries(&old->series));
        p->rhead = (p->rhead + 1) % RING;
        p->rn--;
    }
    struct slot *s = &p->ring[(p->rhead + p->rn) % RING];
    gp_rw_build_swap(&s->series, series); /* the caller gets an old build to reuse */
    gp_rw_build_reset(series);
    s->time_ms = time_ms;
    p->rn++;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void gp_push_body(struct gp_push *p, const void *body, size_t len, uint32_t nsamples,
                  uint32_t raw_len, int64_t time_ms)
{
    struct gp_buf b = {.data = (char *)body, .len = len}; /* borrowed: enqueue only reads it */
    for (size_t i = 0; i < p->nurls; i++) /* the local target takes series, not bodies */
        enqueue(&p->t[i], &b, nsamples, raw_len, time_ms);
}

/* ---- batching and sending ------------------------------------------------ */

/*
 * Puts the oldest batches into t->body: one batch as stored, or several
 * joined (a WriteRequest's serialization concatenated with another's is
 * the WriteRequest holding both series lists, so the uncompressed bodies
 * are concatenated and compressed again). Called with t->mu held. Returns
 * the number of batches taken (0 when the first is unreadable: *bad set
 * to its error).
 */
static size_t take_batches(struct target *t, uint64_t *samples, int *bad)
{
    size_t n = gp_pushq_count(t->q), k = 0;
    uint64_t raw = 0, ns = 0;
    *bad = GP_OK;
    while (k < n) {
        struct gp_pushq_info in = gp_pushq_info(t->q, k);
        if (k && (raw + in.raw_len > MAX_REQUEST_RAW || ns + in.nsamples > MAX_REQUEST_SAMPLES))
            break;
        raw += in.raw_len;
        ns += in.nsamples;
        k++;
    }
    gp_buf_reset(&t->body);
    if (k == 1) {
        int rc = gp_pushq_read(t->q, 0, &t->body);
        if (rc) {
            *bad = rc;
            return 0;
        }
        *samples = ns;
        return 1;
    }
    gp_buf_reset(&t->raw);
    if (gp_buf_reserve(&t->raw, (size_t)raw))
        return *bad = GP_ENOMEM, 0;
    size_t used = 0;
    for (size_t i = 0; i < k; i++) {
        struct gp_pushq_info in = gp_pushq_info(t->q, i);
        gp_buf_reset(&t->one);
        int rc = gp_pushq_read(t->q, i, &t->one);
        size_t outlen = in.raw_len;
        if (!rc && (snappy_uncompress(t->one.data, t->one.len, t->raw.data + used, &outlen) != SNAPPY_OK ||
                    outlen != in.raw_len))
            rc = GP_EPARSE;
        if (rc) {
            if (i == 0) {
                *bad = rc;
                return 0;
            }
            k = i; /* send the good ones before it; it comes first next time */
            break;
        }
        used += outlen;
        *samples += in.nsamples;
    }
    size_t clen = snappy_max_compressed_length(used);
    if (gp_buf_reserve(&t->body, clen) ||
        snappy_compress(t->raw.data, used, t->body.data, &clen) != SNAPPY_OK)
        return *bad = GP_ENOMEM, 0;
    t->body.len = clen;
    return k;
}

static int send_body(struct target *t, struct gp_push_result *res)
{
    return gp_push_http_post(t->http, t->body.data, t->body.len, &t->p->cancel, res);
}

/* Hands the next part of the local target's current tick (one body's
 * worth from series t->lq_done on: the receiver checks a remote-write
 * body's limits) to the receiver; t->lq_part says how many series it
 * held. Called without t->mu. */
static void send_local(struct target *t, struct gp_push_result *res)
{
    struct gp_push *p = t->p;
    const struct gp_batch *req;
    memset(res, 0, sizeof *res);
    res->retry_after_ms = -1;
    t->lq_part = gp_rw_build_nseries(&t->lq_cur) - t->lq_done;
    int rc = gp_rw_build_view(&t->lq_cur, t->lq_cur_time, p->add, p->nadd, &req);
    if (rc) {
        res->status = rc == GP_ENOMEM ? 0 : 400; /* out of memory: try again */
        snprintf(res->msg, sizeof res->msg, "building the tick's series: %s", gp_strerror(rc));
        return;
    }
    t->lq_part = gp_rw_fit(req, t->lq_done, GP_PUSH_MAX_BODY_RAW, GP_PUSH_MAX_BODY_SERIES);
    struct gp_batch part = part_of(req, t->lq_done, t->lq_part);
    res->status = p->o.local(p->o.local_ctx, &part, res->msg, sizeof res->msg);
}

/* Settles the batches handed over: delivered or given up (acknowledged
 * and gone; *gone counts their samples), or kept for a retry. Called
 * with t->mu held. */
static void settle(struct target *t, uint64_t last_id, bool keep, uint64_t *gone)
{
    if (!t->lq) {
        if (!keep)
            gp_pushq_ack(t->q, last_id + 1, gone);
        return;
    }
    t->lq_open = 0;
    if (!keep) {
        if (gone)
            *gone = t->lq_part;
        t->lq_done += t->lq_part;
        if (t->lq_done < gp_rw_build_nseries(&t->lq_cur)) {
            t->lq_open = 1; /* its next part goes next */
            return;
        }
        t->lq_done = 0;
        gp_rw_build_reset(&t->lq_cur);
        return;
    }
    /* back at the head; if the queue filled meanwhile, the oldest (this) goes */
    if (t->lq_n == LOCAL_TICKS) {
        atomic_fetch_add(&t->dropped[R_BUFFER_FULL], gp_rw_build_nseries(&t->lq_cur) - t->lq_done);
        t->lq_done = 0;
        gp_rw_build_reset(&t->lq_cur);
        return;
    }
    t->lq_head = (t->lq_head + LOCAL_TICKS - 1) % LOCAL_TICKS;
    gp_rw_build_swap(&t->lq[t->lq_head], &t->lq_cur);
    t->lq_time[t->lq_head] = t->lq_cur_time;
    t->lq_head_done = t->lq_done;
    t->lq_done = 0;
    t->lq_n++;
}

static uint64_t next_rand(struct target *t)
{
    t->rng ^= t->rng << 13;
    t->rng ^= t->rng >> 7;
    t->rng ^= t->rng << 17;
    return t->rng;
}

/* Schedules the next try after a retryable failure. Called with t->mu held. */
static void back_off(struct target *t, const struct gp_push_result *res)
{
    const struct gp_push_options *o = &t->p->o;
    t->backoff_ms = t->backoff_ms ? t->backoff_ms * 2 : o->min_backoff_ms;
    if (t->backoff_ms > o->max_backoff_ms)
        t->backoff_ms = o->max_backoff_ms;
    /* Jitter: somewhere in the upper half, so agents restarted together spread out. */
    int64_t delay = t->backoff_ms / 2 + (int64_t)(next_rand(t) % (uint64_t)(t->backoff_ms / 2 + 1));
    if (res->retry_after_ms > delay)
        delay = res->retry_after_ms < RETRY_AFTER_MAX_MS ? res->retry_after_ms : RETRY_AFTER_MAX_MS;
    t->next_try_ms = gp_mono_ms() + delay;
}

static void handle_result(struct target *t, const struct gp_push_result *res, uint64_t last_id,
                          uint64_t samples)
{
    char q[300];
    if (res->status >= 200 && res->status < 300) {
        int rc = GP_OK;
        if (t->lq)
            settle(t, last_id, false, NULL);
        else
            rc = gp_pushq_ack(t->q, last_id + 1, NULL);
        atomic_fetch_add(&t->sent, samples);
        atomic_store(&t->last_success_ms, gp_wall_ms());
        if (rc && should_log(t, R_IO_ERROR))
            gp_log(GP_LOG_ERROR, "push", "cannot record delivered batches in the buffer checkpoint",
                   "target=%s", t->label);
        if (t->failing)
            gp_log(GP_LOG_INFO, "push", "target accepts samples again", "target=%s queued_batches=%zu",
                   t->label, queued(t));
        t->failing = 0;
        t->backoff_ms = 0;
        t->next_try_ms = 0;
        return;
    }
    int retry = res->status == 0 || res->status == 429 || res->status >= 500;
    if (retry) {
        atomic_fetch_add(&t->retried, 1);
        settle(t, last_id, true, NULL);
        back_off(t, res);
        if (!t->failing || should_log(t, R__COUNT)) {
            if (!t->failing)
                t->last_log_ms[R__COUNT] = gp_mono_ms();
            gp_log(GP_LOG_WARN, "push", "push failed, will retry",
                   "target=%s status=%d err=%s retry_in_ms=%" PRId64 " queued_batches=%zu", t->label,
                   res->status, gp_log_quote(q, sizeof q, res->msg), t->next_try_ms - gp_mono_ms(),
                   queued(t));
        }
        t->failing = 1;
        return;
    }
    /* A final answer (4xx, a redirect): these samples will never be taken. */
    uint64_t dropped = 0; /* less than samples if some went to a full buffer meanwhile */
    settle(t, last_id, false, &dropped);
    atomic_fetch_add(&t->dropped[R_REJECTED], dropped);
    if (should_log(t, R_REJECTED)) {
        gp_log(GP_LOG_WARN, "push", "target rejected samples: dropped",
               "target=%s status=%d samples=%" PRIu64 " err=%s not_logged_since=%" PRIu64, t->label,
               res->status, samples, gp_log_quote(q, sizeof q, res->msg), t->suppressed[R_REJECTED]);
        t->suppressed[R_REJECTED] = 0;
    }
    t->failing = 0;
    t->backoff_ms = 0;
    t->next_try_ms = 0;
}

static void *target_main(void *arg)
{
    struct target *t = arg;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        int64_t now = gp_mono_ms();
        if (t->stopping) {
            /* Drain while delivering works and time is left; a failing
             * target keeps its queue (on disk: for the next start). */
            if (!queued(t) || t->failing || now >= t->drain_until_ms || atomic_load(&t->p->cancel))
                break;
        } else if (!queued(t) || now < t->next_try_ms) {
            wait_until(&t->cv, &t->mu, queued(t) ? t->next_try_ms : -1);
            continue;
        }
        if (t->lq) { /* the local target: the oldest tick, as it is (or its next part) */
            if (!t->lq_open) {
                t->lq_cur_time = t->lq_time[t->lq_head];
                gp_rw_build_swap(&t->lq_cur, &t->lq[t->lq_head]);
                t->lq_done = t->lq_head_done;
                t->lq_head_done = 0;
                t->lq_head = (t->lq_head + 1) % LOCAL_TICKS;
                t->lq_n--;
            }
            pthread_mutex_unlock(&t->mu);
            struct gp_push_result res;
            send_local(t, &res);
            pthread_mutex_lock(&t->mu);
            handle_result(t, &res, 0, t->lq_part);
            publish_sizes(t);
            continue;
        }
        uint64_t samples = 0;
        int bad;
        size_t k = take_batches(t, &samples, &bad);
        if (!k) {
            struct gp_pushq_info in = gp_pushq_info(t->q, 0);
            if (bad == GP_ENOMEM) {
                t->next_try_ms = now + 1000;
                continue;
            }
            /* An unreadable or corrupt batch: skip it. */
            gp_pushq_ack(t->q, in.id + 1, NULL);
            atomic_fetch_add(&t->dropped[R_CORRUPT], in.nsamples);
            if (should_log(t, R_CORRUPT))
                gp_log(GP_LOG_ERROR, "push", "a buffered batch is unreadable: dropped",
                       "target=%s id=%" PRIu64 " err=\"%s\"", t->label, in.id, gp_strerror(bad));
            publish_sizes(t);
            continue;
        }
        uint64_t last_id = gp_pushq_info(t->q, k - 1).id;
        pthread_mutex_unlock(&t->mu);
        struct gp_push_result res;
        if (send_body(t, &res) != GP_OK) {
            res.status = 0;
            snprintf(res.msg, sizeof res.msg, "out of memory");
        }
        pthread_mutex_lock(&t->mu);
        if (res.status == 0 && atomic_load(&t->p->cancel))
            break; /* cancelled by the stop: not a failure of the target */
        handle_result(t, &res, last_id, samples);
        publish_sizes(t);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* ---- metrics ------------------------------------------------------------- */

void gp_push_stats(struct gp_push *p, struct gp_push_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!p)
        return;
    out->nt = p->nt < GP_PUSH_MAX_TARGETS ? p->nt : GP_PUSH_MAX_TARGETS;
    for (size_t i = 0; i < out->nt; i++) {
        struct target *t = &p->t[i];
        struct gp_push_target_stats *o = &out->t[i];
        o->label = t->label;
        o->sent = atomic_load(&t->sent);
        o->retried = atomic_load(&t->retried);
        for (int r = 0; r < R__COUNT; r++)
            o->dropped[r] = atomic_load(&t->dropped[r]);
        o->queue_bytes = atomic_load(&t->queue_bytes);
        o->buffer_bytes = atomic_load(&t->buffer_bytes);
        o->last_success_ms = atomic_load(&t->last_success_ms);
    }
    out->encode_ns_last = atomic_load(&p->enc_ns_last);
}

static void target_sample(struct gp_metric_sink *s, enum gp_metric m, const char *target, const char *reason,
                          double v)
{
    const struct gp_metric_label l[2] = {{"target", target}, {"reason", reason}};
    s->sample(s, gp_metric_name(m), NULL, l, reason ? 2 : 1, v);
}

void gp_push_walk_stats(const struct gp_push_stats *st, struct gp_metric_sink *s)
{
    if (!st->nt)
        return;
    const struct gp_push_target_stats *t = st->t;
    gp_metric_family(s, GP_M_PUSH_SENT);
    for (size_t i = 0; i < st->nt; i++)
        target_sample(s, GP_M_PUSH_SENT, t[i].label, NULL, (double)t[i].sent);
    gp_metric_family(s, GP_M_PUSH_DROPPED);
    for (size_t i = 0; i < st->nt; i++)
        for (int r = 0; r < R__COUNT; r++)
            target_sample(s, GP_M_PUSH_DROPPED, t[i].label, reason_name[r], (double)t[i].dropped[r]);
    gp_metric_family(s, GP_M_PUSH_RETRIED);
    for (size_t i = 0; i < st->nt; i++)
        target_sample(s, GP_M_PUSH_RETRIED, t[i].label, NULL, (double)t[i].retried);
    gp_metric_family(s, GP_M_PUSH_QUEUE);
    for (size_t i = 0; i < st->nt; i++)
        target_sample(s, GP_M_PUSH_QUEUE, t[i].label, NULL, (double)t[i].queue_bytes);
    gp_metric_family(s, GP_M_PUSH_BUFFER);
    for (size_t i = 0; i < st->nt; i++)
        target_sample(s, GP_M_PUSH_BUFFER, t[i].label, NULL, (double)t[i].buffer_bytes);
    gp_metric_family(s, GP_M_PUSH_LAST_SUCCESS);
    for (size_t i = 0; i < st->nt; i++)
        target_sample(s, GP_M_PUSH_LAST_SUCCESS, t[i].label, NULL, (double)t[i].last_success_ms / 1000.0);
    gp_metric_family(s, GP_M_PUSH_ENCODE);
    gp_metric_sample(s, GP_M_PUSH_ENCODE, NULL, NULL, NULL, (double)st->encode_ns_last / 1e9);
}

void gp_push_walk_metrics(struct gp_push *p, struct gp_metric_sink *s)
{
    struct gp_push_stats st;
    gp_push_stats(p, &st);
    gp_push_walk_stats(&st, s);
}

void gp_push_render_metrics(struct gp_push *p, struct gp_buf *out)
{
    struct gp_metric_text_sink t;
    gp_metric_text_sink_init(&t, out);
    gp_push_walk_metrics(p, &t.base);
}

/* ---- start and stop ------------------------------------------------------ */

static int target_init(struct gp_push *p, struct target *t, const char *url, char *err, size_t errlen)
{
    t->p = p;
    pthread_mutex_init(&t->mu, NULL);
    cond_init_mono(&t->cv);
    gp_buf_init(&t->body, 0);
    gp_buf_init(&t->one, 0);
    gp_buf_init(&t->raw, 0);
    t->rng = fnv1a(url ? url : "local") ^ (uint64_t)gp_mono_ns() ^ (uint64_t)(uintptr_t)t;
    if (!t->rng)
        t->rng = 1;
    int rc;
    if (url) {
        gp_httpc_url_label(url, t->label, sizeof t->label);
        /* The buffer belongs to the endpoint (query included: tenants
         * differ there), not to the credentials in the URL. */
        const char *at = strchr(url, '@'), *scheme_end = strstr(url, "://");
        const char *slash = scheme_end ? strchr(scheme_end + 3, '/') : NULL;
        if (at && scheme_end && (!slash || at < slash))
            snprintf(t->key, sizeof t->key, "%.*s%s", (int)(scheme_end + 3 - url), url, at + 1);
        else
            snprintf(t->key, sizeof t->key, "%s", url);
        if ((rc = gp_push_http_open(&t->http, url, p->bearer, p->o.headers, p->o.nheaders, p->o.timeout_ms,
                                    err, errlen)))
            return rc;
    } else {
        /* in this process: whole ticks in memory, never encoded */
        snprintf(t->label, sizeof t->label, "local");
        t->lq = calloc(LOCAL_TICKS, sizeof *t->lq);
        t->lq_time = calloc(LOCAL_TICKS, sizeof *t->lq_time);
        if (!t->lq || !t->lq_time)
            return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        publish_sizes(t);
        return GP_OK;
    }
    char sub[1024] = "";
    struct gp_pushq_recovery rec;
    if (p->dir) {
        snprintf(sub, sizeof sub, "%s/%016" PRIx64, p->dir, fnv1a(t->key));
    }
    rc = gp_pushq_open(&t->q, p->dir ? sub : NULL, p->dir ? p->o.buffer_max : p->o.queue_max, 0, &rec,
                       err, errlen);
    if (rc)
        return rc;
    if (p->dir) {
        /* A note for people looking at the directory: which target this is. */
        char path[1100];
        snprintf(path, sizeof path, "%s/target", sub);
        FILE *f = fopen(path, "w");
        if (f) {
            fprintf(f, "%s\n", t->label);
            fclose(f);
        }
        if (rec.batches || rec.torn_bytes || rec.lost_bytes || rec.lost_records)
            gp_log(GP_LOG_INFO, "push", "push buffer recovered: sending it first",
                   "target=%s batches=%" PRIu64 " samples=%" PRIu64 " bytes=%" PRIu64
                   " torn_bytes=%" PRIu64 " lost_bytes=%" PRIu64 " lost_records=%" PRIu64,
                   t->label, rec.batches, rec.samples, rec.bytes, rec.torn_bytes, rec.lost_bytes,
                   rec.lost_records);
        atomic_fetch_add(&t->dropped[R_BUFFER_FULL], rec.dropped_samples);
    }
    publish_sizes(t);
    return GP_OK;
}

/* Copies the options' "NAME=VALUE" labels into p->add (checked by the caller's config). */
static int copy_labels(struct gp_push *p, const struct gp_push_options *o, char *err, size_t errlen)
{
    if (!o->nlabels)
        return GP_OK;
    p->add = calloc(o->nlabels, sizeof *p->add);
    p->add_text = calloc(o->nlabels, sizeof *p->add_text);
    if (!p->add || !p->add_text)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    for (size_t i = 0; i < o->nlabels; i++) {
        const char *eq = strchr(o->labels[i], '=');
        if (!eq || eq == o->labels[i])
            return gp_seterr(err, errlen, GP_ECONFIG, "push label '%s' is not NAME=VALUE", o->labels[i]);
        if (!(p->add_text[i] = strdup(o->labels[i])))
            return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        size_t nl = (size_t)(eq - o->labels[i]);
        p->add[i].name = (struct gp_str){p->add_text[i], nl};
        p->add[i].value = (struct gp_str){p->add_text[i] + nl + 1, strlen(eq + 1)};
        p->nadd = i + 1;
    }
    return GP_OK;
}

int gp_push_start(struct gp_push **out, const struct gp_push_options *o, char *err, size_t errlen)
{
    struct gp_push *p = calloc(1, sizeof *p);
    if (!p)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    p->o = *o;
    if (!p->o.min_backoff_ms)
        p->o.min_backoff_ms = 250;
    if (!p->o.max_backoff_ms)
        p->o.max_backoff_ms = 30000;
    if (p->o.max_backoff_ms < p->o.min_backoff_ms)
        p->o.max_backoff_ms = p->o.min_backoff_ms;
    if (p->o.timeout_ms <= 0)
        p->o.timeout_ms = 10000;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    gp_buf_init(&p->enc_raw, 0);
    p->t = calloc(o->nurls + 1, sizeof *p->t);
    int rc = p->t ? GP_OK : gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    if (!rc && o->nurls + (o->local != NULL) > GP_PUSH_MAX_TARGETS)
        rc = gp_seterr(err, errlen, GP_ECONFIG, "%zu push targets: at most %d", o->nurls + (o->local != NULL),
                       GP_PUSH_MAX_TARGETS);
    if (!rc)
        rc = copy_labels(p, o, err, errlen);
    if (!rc && gp_httpc_global_init())
        rc = gp_seterr(err, errlen, GP_EINTERNAL, "libcurl failed to initialise");
    else if (!rc)
        p->curl_ref = 1;
    if (!rc && o->bearer_token && *o->bearer_token && o->bearer_token_file && *o->bearer_token_file)
        rc = gp_seterr(err, errlen, GP_ECONFIG,
                       "push_bearer_token and push_bearer_token_file are both set: choose one");
    char token[4096];
    if (!rc)
        rc = gp_token_load(o->bearer_token, o->bearer_token_file, "push_bearer_token", token,
                           sizeof token, err, errlen);
    if (!rc && token[0] && !(p->bearer = strdup(token)))
        rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    memset(token, 0, sizeof token);
    if (!rc && o->buffer_dir && *o->buffer_dir) {
        if (mkdir(o->buffer_dir, 0755) && errno != EEXIST)
            rc = gp_seterr(err, errlen, GP_EIO, "cannot create buffer directory '%s': %s",
                           o->buffer_dir, strerror(errno));
        else if (!(p->dir = strdup(o->buffer_dir)))
            rc = gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    }
    for (size_t i = 0; !rc && i < o->nurls + (o->local != NULL); i++) {
        const char *url = i < o->nurls ? o->urls[i] : NULL;
        for (size_t j = 0; url && j < i; j++)
            if (!strcmp(url, o->urls[j]))
                rc = gp_seterr(err, errlen, GP_ECONFIG, "push target '%s' is given twice",
                               p->t[j].label);
        if (rc)
            break;
        rc = target_init(p, &p->t[i], url, err, errlen);
        p->nt = i + 1;
        /* URLs that differ only in what the label hides (the query) keep
         * distinct labels: the second is "<label>#2", and so on. */
        size_t same = 0;
        for (size_t j = 0; url && j < i; j++) {
            char l[sizeof p->t[j].label];
            gp_httpc_url_label(o->urls[j], l, sizeof l);
            same += !strcmp(l, p->t[i].label);
        }
        if (same) {
            size_t n = strlen(p->t[i].label);
            snprintf(p->t[i].label + (n < sizeof p->t[i].label - 24 ? n : sizeof p->t[i].label - 24),
                     24, "#%zu", same + 1);
        }
    }
    p->nurls = o->nurls;
    if (!rc && pthread_create(&p->encoder, NULL, encoder_main, p))
        rc = gp_seterr(err, errlen, GP_EINTERNAL, "cannot start the push encoder thread");
    else if (!rc)
        p->encoder_running = 1;
    for (size_t i = 0; !rc && i < p->nt; i++) {
        if (pthread_create(&p->t[i].thread, NULL, target_main, &p->t[i]))
            rc = gp_seterr(err, errlen, GP_EINTERNAL, "cannot start a push thread");
        else
            p->t[i].running = 1;
    }
    if (rc) {
        gp_push_stop(p);
        return rc;
    }
    /* The caller's strings were needed only here (the token is copied). */
    p->o.urls = NULL;
    p->o.buffer_dir = p->o.bearer_token = p->o.bearer_token_file = NULL;
    p->o.headers = NULL;
    p->o.nheaders = 0;
    p->o.labels = NULL;
    p->o.nlabels = 0;
    for (size_t i = 0; i < p->nt; i++)
        gp_log(GP_LOG_INFO, "push", "pushing samples", "target=%s buffer=%s queued_batches=%zu",
               p->t[i].label, p->dir && p->t[i].q ? "disk" : "memory", queued(&p->t[i]));
    *out = p;
    return GP_OK;
}

void gp_push_stop(struct gp_push *p)
{
    if (!p)
        return;
    /* 1. Encode what was handed over. */
    if (p->encoder_running) {
        pthread_mutex_lock(&p->mu);
        p->stopping = 1;
        pthread_cond_signal(&p->cv);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->encoder, NULL);
    }
    /* 2. Let healthy targets deliver it, for a bounded time. */
    int64_t drain = p->o.timeout_ms < DRAIN_MAX_MS ? p->o.timeout_ms : DRAIN_MAX_MS;
    int64_t until = gp_mono_ms() + drain;
    for (size_t i = 0; i < p->nt; i++) {
        struct target *t = &p->t[i];
        pthread_mutex_lock(&t->mu);
        t->stopping = 1;
        t->drain_until_ms = until;
        pthread_cond_signal(&t->cv);
        pthread_mutex_unlock(&t->mu);
    }
    /* 3. Past the deadline, cancel what is still in flight. */
    for (size_t i = 0; i < p->nt; i++) {
        struct target *t = &p->t[i];
        if (!t->running)
            continue;
        struct timespec ts = {until / 1000, (until % 1000) * 1000000};
        /* pthread_clockjoin_np is glibc 2.31+; Debian 12 has 2.36. */
        if (pthread_clockjoin_np(t->thread, NULL, CLOCK_MONOTONIC, &ts) == ETIMEDOUT) {
            atomic_store(&p->cancel, 1);
            pthread_join(t->thread, NULL);
        }
        t->running = 0;
    }
    for (size_t i = 0; i < p->nt; i++) {
        struct target *t = &p->t[i];
        gp_push_http_close(t->http);
        gp_pushq_close(t->q);
        for (size_t k = 0; t->lq && k < LOCAL_TICKS; k++)
            gp_rw_build_free(&t->lq[k]);
        free(t->lq);
        free(t->lq_time);
        gp_rw_build_free(&t->lq_cur);
        gp_buf_free(&t->body);
        gp_buf_free(&t->one);
        gp_buf_free(&t->raw);
        pthread_mutex_destroy(&t->mu);
        pthread_cond_destroy(&t->cv);
    }
    if (p->curl_ref)
        gp_httpc_global_cleanup();
    for (int i = 0; i < RING; i++)
        gp_rw_build_free(&p->ring[i].series);
    gp_rw_build_free(&p->work);
    for (size_t i = 0; i < p->cap_parts; i++)
        gp_buf_free(&p->parts[i].body);
    free(p->parts);
    gp_buf_free(&p->enc_raw);
    for (size_t i = 0; p->add_text && i < p->nadd; i++)
        free(p->add_text[i]);
    free(p->add_text);
    free(p->add);
    if (p->bearer) {
        memset(p->bearer, 0, strlen(p->bearer));
        free(p->bearer);
    }
    free(p->dir);
    free(p->t);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
}
