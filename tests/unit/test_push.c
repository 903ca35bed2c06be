/*
 * test_push.c - the remote-write sender end to end, without a real
 * database: ticks go in through gp_push_tick (series built with
 * ingest/rw_build.h, as the agent builds them), and come out either at an
 * in-process target (the `gpulse up` path, a function that answers
 * scripted statuses) or at a small libmicrohttpd server on 127.0.0.1 that
 * records the headers. Checked: delivery in order and exactly once, retry
 * with back-off on 503/429 (Retry-After honoured), drop-and-count on 400,
 * batching while behind, drop-oldest at the queue bound, the disk buffer
 * across a restart, the /metrics families, URL labels without secrets,
 * configuration errors, a stop that does not hang on a dead server, and
 * ticks larger than one body split into several (each sample once).
 */
#include "agent/config.h"
#include "ingest/push.h"
#include "ingest/push_http.h"
#include "ingest/remote_write.h"
#include "ingest/rw_build.h"
#include "ingest/textparse.h"
#include "lib/err.h"
#include "net/httpc.h"
#include "test.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_TS 4096

/* ---- a receiver that records what it got ---------------------------------- */

struct fake {
    pthread_mutex_t mu;
    int script[32]; /* statuses answered in turn, then `then` */
    size_t nscript, next;
    int then;
    int64_t ts[MAX_TS]; /* timestamps of series m{i="0"}, in arrival order */
    size_t nts;
    size_t requests, accepted_requests, max_ticks_per_request;
    size_t samples;
    char headers[8][256];
    /* series "big": samples by value (the series' index) and order */
    unsigned *hits;
    int64_t *last_ts;
    size_t nhits, max_series_per_request, big_out_of_order;
};

static void fake_init(struct fake *f, int then)
{
    memset(f, 0, sizeof *f);
    pthread_mutex_init(&f->mu, NULL);
    f->then = then;
}

static int next_status(struct fake *f)
{
    return f->next < f->nscript ? f->script[f->next++] : f->then;
}

/* Records a request if the answer is a success. */
static int receive_req(struct fake *f, const struct gp_batch *rq, char *msg, size_t msglen)
{
    const struct gp_batch req = *rq;
    pthread_mutex_lock(&f->mu);
    f->requests++;
    int status = next_status(f);
    if (status >= 200 && status < 300) {
        f->accepted_requests++;
        if (req.nseries > f->max_series_per_request)
            f->max_series_per_request = req.nseries;
        size_t ticks = 0;
        for (size_t i = 0; i < req.nseries; i++) {
            const struct gp_series *s = &req.series[i];
            f->samples += s->nsamples;
            if (f->hits && s->labels[0].value.len == 3 && !memcmp(s->labels[0].value.ptr, "big", 3))
                for (size_t k = 0; k < s->nsamples; k++) {
                    size_t v = (size_t)s->samples[k].value;
                    if (v >= f->nhits)
                        continue;
                    f->hits[v]++;
                    if (s->samples[k].timestamp_ms <= f->last_ts[v])
                        f->big_out_of_order++;
                    f->last_ts[v] = s->samples[k].timestamp_ms;
                }
            /* labels sorted: __name__, i */
            if (s->nlabels == 2 && s->labels[0].value.len == 1 && s->labels[0].value.ptr[0] == 'm' &&
                s->labels[1].value.len == 1 && s->labels[1].value.ptr[0] == '0')
                for (size_t k = 0; k < s->nsamples && f->nts < MAX_TS; k++, ticks++)
                    f->ts[f->nts++] = s->samples[k].timestamp_ms;
        }
        if (ticks > f->max_ticks_per_request)
            f->max_ticks_per_request = ticks;
    } else {
        snprintf(msg, msglen, "scripted %d", status);
    }
    pthread_mutex_unlock(&f->mu);
    return status;
}

/* Decodes a body (HTTP) and records it as receive_req does. */
static int receive(struct fake *f, const uint8_t *body, size_t len, char *msg, size_t msglen)
{
    struct gp_batch req;
    char err[256];
    if (gp_rw_decode(body, len, 64 << 20, &req, err, sizeof err)) {
        snprintf(msg, msglen, "%s", err);
        return 400;
    }
    int status = receive_req(f, &req, msg, msglen);
    gp_rw_decoded_free(&req);
    return status;
}

/* The in-process target (`gpulse up`): series, never a body. */
static int local_write(void *ctx, const struct gp_batch *req, char *msg, size_t msglen)
{
    return receive_req(ctx, req, msg, msglen);
}

static size_t fake_nts(struct fake *f)
{
    pthread_mutex_lock(&f->mu);
    size_t n = f->nts;
    pthread_mutex_unlock(&f->mu);
    return n;
}

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&t, NULL);
}

static int wait_nts(struct fake *f, size_t n, long timeout_ms)
{
    for (long waited = 0; waited < timeout_ms; waited += 10) {
        if (fake_nts(f) >= n)
            return 1;
        sleep_ms(10);
    }
    return fake_nts(f) >= n;
}

/* Hands one tick at time_ms to p: series names[i] with labels[i]
 * ("a=1;b=2", "" for none) and values[i]. */
static void tick_series(struct gp_push *p, const char *const *names, const char *const *labels,
                        const double *values, size_t n, int64_t time_ms)
{
    struct gp_rw_build b = {0};
    for (size_t i = 0; i < n; i++) {
        gp_rw_build_begin(&b, names[i]);
        for (const char *l = labels[i]; l && *l;) {
            char name[64], value[64];
            const char *eq = strchr(l, '='), *end = strchr(l, ';');
            size_t ln = end ? (size_t)(end - l) : strlen(l);
            snprintf(name, sizeof name, "%.*s", (int)(eq - l), l);
            snprintf(value, sizeof value, "%.*s", (int)(l + ln - eq - 1), eq + 1);
            gp_rw_build_label(&b, name, value);
            l = end ? end + 1 : l + ln;
        }
        gp_rw_build_end(&b, values[i]);
    }
    gp_push_tick(p, &b, time_ms);
    CHECK_INT(gp_rw_build_nseries(&b), 0); /* the pusher took them */
    gp_rw_build_free(&b);
}

/* One tick: two series, m{i="0"} and m{i="1"}, with value n. */
static void tick(struct gp_push *p, unsigned n)
{
    const char *names[] = {"m", "m"}, *labels[] = {"i=0", "i=1"};
    const double v[] = {n, n};
    tick_series(p, names, labels, v, 2, 1000 * (int64_t)n);
}

/* The timestamps of ticks first..first+count-1, each once, in order. */
static void expect_ticks(struct fake *f, unsigned first, unsigned count)
{
    pthread_mutex_lock(&f->mu);
    size_t n = f->nts;
    pthread_mutex_unlock(&f->mu);
    if (n != count)
        gp_test_fail(__FILE__, __LINE__, "want %u ticks, got %zu", count, n);
    for (unsigned i = 0; i < count; i++)
        if (f->ts[i] != 1000 * (int64_t)(first + i))
            gp_test_fail(__FILE__, __LINE__, "tick %u: want ts %lld, got %lld", i,
                         (long long)(1000 * (int64_t)(first + i)), (long long)f->ts[i]);
}

static struct gp_push_options local_opts(struct fake *f)
{
    return (struct gp_push_options){.local = local_write,
                                    .local_ctx = f,
                                    .buffer_max = 1 << 20,
                                    .queue_max = 1 << 20,
                                    .timeout_ms = 2000,
                                    .min_backoff_ms = 20,
                                    .max_backoff_ms = 80};
}

/* The value of one metric line (exact name+labels text) in the pusher's /metrics. */
static double metric(struct gp_push *p, const char *series)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_push_render_metrics(p, &b);
    const char *at = b.data ? strstr(b.data, series) : NULL;
    double v = at ? strtod(at + strlen(series) + 1, NULL) : -1;
    gp_buf_free(&b);
    return v;
}

/* ---- tests ------------------------------------------------------------------ */

static void test_delivers_every_tick_in_order(void)
{
    struct fake f;
    fake_init(&f, 204);
    struct gp_push_options o = local_opts(&f);
    struct gp_push *p;
    char err[256] = "";
    CHECK_INT(gp_push_start(&p, &o, err, sizeof err), GP_OK);
    for (unsigned i = 1; i <= 30; i++) {
        tick(p, i);
        sleep_ms(2);
    }
    CHECK(wait_nts(&f, 30, 5000));
    expect_ticks(&f, 1, 30);
    CHECK_DBL(metric(p, "gpulse_push_samples_sent_total{target=\"local\"}"), 60, 0);
    CHECK(metric(p, "gpulse_push_last_success_timestamp_seconds{target=\"local\"}") > 1.6e9);
    CHECK_DBL(metric(p, "gpulse_push_queue_bytes{target=\"local\"}"), 0, 0);
    gp_push_stop(p);
    gp_push_stop(NULL);
}

/* A 400 drops that batch (counted) and delivery goes on with the next. */
static void test_rejected_batch_is_dropped_and_counted(void)
{
    struct fake f;
    fake_init(&f, 204);
    f.script[f.nscript++] = 400;
    struct gp_push_options o = local_opts(&f);
    struct gp_push *p;
    char err[256] = "";
    CHECK_INT(gp_push_start(&p, &o, err, sizeof err), GP_OK);
    tick(p, 1);
    for (int i = 0; i < 500 && metric(p, "gpulse_push_samples_dropped_total{target=\"local\",reason=\"rejected\"}") < 2; i++)
        sleep_ms(10);
    CHECK_DBL(metric(p, "gpulse_push_samples_dropped_total{target=\"local\",reason=\"rejected\"}"), 2, 0);
    tick(p, 2);
    tick(p, 3);
    CHECK(wait_nts(&f, 2, 5000));
    expect_ticks(&f, 2, 2);
    CHECK_DBL(metric(p, "gpulse_push_batches_retried_total{target=\"local\"}"), 0, 0);
    gp_push_stop(p);
}

/* A memory queue at its bound drops the oldest ticks; what is delivered
 * afterwards is the newest ones, contiguous and in order. */
static void test_full_queue_drops_oldest(void)
{
    struct fake f;
    fake_init(&f, 503);
    struct gp_push_options o = local_opts(&f);
    o.queue_max = 2000; /* about a dozen of these small ticks */
    struct gp_push *p;
    char err[256] = "";
    CHECK_INT(gp_push_start(&p, &o, err, sizeof err), GP_OK);
    for (unsigned i = 1; i <= 100; i++) {
        tick(p, i);
        sleep_ms(3);
    }
    /* Wait until every tick is encoded and queued (the count settles). */
    const char *full = "gpulse_push_samples_dropped_total{target=\"local\",reason=\"buffer_full\"}";
    double dropped = -1;
    for (int i = 0; i < 100 && metric(p, full) != dropped; i++) {
        dropped = metric(p, full);
        sleep_ms(300);
    }
    CHECK(dropped > 0);
    CHECK_DBL(metric(p, "gpulse_push_samples_dropped_total{target=\"local\",reason=\"encoder\"}"), 0, 0);
    CHECK(metric(p, "gpulse_push_queue_bytes{target=\"local\"}") <= 2000);
    pthread_mutex_lock(&f.mu);
    f.then = 204;
    pthread_mutex_unlock(&f.mu);
    unsigned kept = 100 - (unsigned)(dropped / 2);
    CHECK(wait_nts(&f, kept, 10000));
    sleep_ms(50);
    expect_ticks(&f, 100 - kept + 1, kept);
    gp_push_stop(p);
}

/* The metrics are a valid exposition, one series per target and reason. */
static void test_metrics_render(void)
{
    struct fake f;
    fake_init(&f, 204);
    struct gp_push_options o = local_opts(&f);
    const char *urls[] = {"http://user:secret@127.0.0.1:1/api/v1/write?tenant=a",
                          "http://127.0.0.1:1/api/v1/write?tenant=b"};
    o.urls = urls;
    o.nurls = 2;
    struct gp_push *p;
    char err[256] = "";
    CHECK_INT(gp_push_start(&p, &o, err, sizeof err), GP_OK);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_push_render_metrics(p, &b);
    CHECK(strstr(b.data, "secret") == NULL && strstr(b.data, "tenant") == NULL);
    CHECK_CONTAINS(b.data, "gpulse_push_samples_sent_total{target=\"http://127.0.0.1:1/api/v1/write\"} 0\n");
    CHECK_CONTAINS(b.data, "gpulse_push_samples_sent_total{target=\"http://127.0.0.1:1/api/v1/write#2\"} 0\n");
    CHECK_CONTAINS(b.data, "gpulse_push_samples_sent_total{target=\"local\"} 0\n");
    CHECK_CONTAINS(b.data, "reason=\"buffer_full\"");
    CHECK_CONTAINS(b.data, "# TYPE gpulse_push_last_success_timestamp_seconds gauge\n");
    struct gp_text_parser tp = {0};
    CHECK_INT(gp_text_parse(&tp, b.data, b.len, 0, err, sizeof err), GP_OK);
    CHECK_INT(tp.req.nseries, 3 * (1 + 5 + 1 + 1 + 1 + 1) + 1);
    gp_text_parser_free(&tp);
    gp_buf_free(&b);
    gp_push_stop(p);
}

static void test_url_labels_hide_secrets(void)
{
    char l[512];
    gp_httpc_url_label("https://u:p@example.com:8443/api/v1/push?tenant=x&token=y#frag", l, sizeof l);
    CHECK_STR(l, "https://example.com:8443/api/v1/push");
    gp_httpc_url_label("http://127.0.0.1:9402/api/v1/write", l, sizeof l);
    CHECK_STR(l, "http://127.0.0.1:9402/api/v1/write");
    gp_httpc_url_label("http://[::1]:8428/api/v1/write", l, sizeof l);
    CHECK_STR(l, "http://[::1]:8428/api/v1/write");
    gp_httpc_url_label("not a url", l, sizeof l);
    CHECK_STR(l, "invalid-url");
}

static void expect_start_error(struct gp_push_options *o, int code, const char *msg)
{
    struct gp_push *p = NULL;
    char err[256] = "";
    int rc = gp_push_start(&p, o, err, sizeof err);
    if (rc != code || !strstr(err, msg))
        gp_test_fail(__FILE__, __LINE__, "want %d '%s', got %d '%s'", code, msg, rc, err);
    CHECK(p == NULL);
}

static void test_config_errors(void)
{
    struct fake f;
    fake_init(&f, 204);
    struct gp_push_options o = local_opts(&f);
    const char *bad_scheme[] = {"ftp://127.0.0.1/x"};
    o.urls = bad_scheme;
    o.nurls = 1;
    expect_start_error(&o, GP_ECONFIG, "the scheme must be http or https");
    const char *garbage[] = {"::::"};
    o.urls = garbage;
    expect_start_error(&o, GP_ECONFIG, "push URL");
    const char *twice[] = {"http://127.0.0.1:1/w", "http://127.0.0.1:1/w"};
    o.urls = twice;
    o.nurls = 2;
    expect_start_error(&o, GP_ECONFIG, "given twice");
    o.nurls = 0;
    o.bearer_token = "abc";
    o.bearer_token_file = "/nonexistent";
    expect_start_error(&o, GP_ECONFIG, "both set");
    o.bearer_token = NULL;
    expect_start_error(&o, GP_ECONFIG, "cannot read push_bearer_token_file '/nonexistent'");
    o.bearer_token_file = NULL;
    o.bearer_token = "two words";
    expect_start_error(&o, GP_ECONFIG, "push_bearer_token must be visible ASCII characters without spaces");
    o.bearer_token = NULL;
    char dir[600];
    gp_test_write_file(gp_test_tmpdir(), "plainfile", "x");
    snprintf(dir, sizeof dir, "%s/plainfile/sub", gp_test_tmpdir());
    o.buffer_dir = dir;
    expect_start_error(&o, GP_EIO, "cannot create buffer directory");
}

/* ---- over HTTP ---------------------------------------------------------------- */

struct server {
    struct MHD_Daemon *d;
    struct fake *f;
    unsigned port;
    int retry_after; /* sent with 429/503 answers */
    struct timespec when[32];
    size_t nwhen;
};

struct upload {
    char *data;
    size_t len;
};

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *size, void **state)
{
    (void)url, (void)method, (void)version;
    struct server *s = cls;
    struct upload *u = *state;
    if (!u) {
        *state = calloc(1, sizeof *u);
        return *state ? MHD_YES : MHD_NO;
    }
    if (*size) {
        char *d = realloc(u->data, u->len + *size);
        if (!d)
            return MHD_NO;
        memcpy(d + u->len, data, *size);
        u->data = d;
        u->len += *size;
        *size = 0;
        return MHD_YES;
    }
    const char *names[] = {"Content-Encoding", "Content-Type", "X-Prometheus-Remote-Write-Version",
                           "User-Agent", "Authorization"};
    pthread_mutex_lock(&s->f->mu);
    for (int i = 0; i < 5; i++) {
        const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, names[i]);
        snprintf(s->f->headers[i], sizeof s->f->headers[i], "%s", v ? v : "");
    }
    if (s->nwhen < 32)
        clock_gettime(CLOCK_MONOTONIC, &s->when[s->nwhen++]);
    pthread_mutex_unlock(&s->f->mu);
    char msg[256] = "";
    int status = receive(s->f, (const uint8_t *)u->data, u->len, msg, sizeof msg);
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(msg), msg, MHD_RESPMEM_MUST_COPY);
    if (s->retry_after && (status == 429 || status == 503)) {
        char ra[16];
        snprintf(ra, sizeof ra, "%d", s->retry_after);
        MHD_add_response_header(r, "Retry-After", ra);
    }
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

static void on_done(void *cls, struct MHD_Connection *c, void **state, enum MHD_RequestTerminationCode t)
{
    (void)cls, (void)c, (void)t;
    struct upload *u = *state;
    if (u) {
        free(u->data);
        free(u);
    }
    *state = NULL;
}

static void server_start(struct server *s, struct fake *f)
{
    memset(s, 0, sizeof *s);
    s->f = f;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, on_request, s,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a, MHD_OPTION_NOTIFY_COMPLETED,
                            on_done, NULL, MHD_OPTION_END);
    CHECK(s->d != NULL);
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    CHECK(i != NULL);
    s->port = i->port;
}

static double since_ms(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) * 1e3 + (double)(b->tv_nsec - a->tv_nsec) / 1e6;
}

/* The remote-write headers and the bearer token go out; a 429 with
 * Retry-After: 1 holds the retry back for a second although the
 * back-off alone would retry after 20 ms. */
static void test_http_headers_and_retry_after(void)
{
    struct fake f;
    fake_init(&f, 204);
    f.script[f.nscript++] = 429;
    struct server s;
    server_start(&s, &f);
    s.retry_after = 1;
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/api/v1/write?x=1", s.port);
    const char *urls[] = {url};
    char tokfile[600];
    snprintf(tokfile, sizeof tokfile, "%s/token", gp_test_tmpdir());
    gp_test_write_file(gp_test_tmpdir(), "token", "s3cr3t-token\n");
    struct gp_push_options o = {.urls = urls, .nurls = 1, .queue_max = 1 << 20, .timeout_ms = 3000,
                                .min_backoff_ms = 20, .max_backoff_ms = 40,
                                .bearer_token_file = tokfile};
    struct gp_push *p;
    char err[256] = "";
    CHECK_INT(gp_push_start(&p, &o, err, sizeof err), GP_OK);
    tick(p, 1);
    CHECK(wait_nts(&f, 1, 8000));
    expect_ticks(&f, 1, 1);
    CHECK_INT(s.nwhen, 2);
    CHECK(since_ms(&s.when[0], &s.when[1]) >= 900);
    CHECK_STR(f.headers[0], "snappy");
    CHECK_STR(f.headers[1], "application/x-protobuf");
    CHECK_STR(f.headers[2], "0.1.0");
    CHECK(strncmp(f.headers[3], "gpulse/", 7) == 0);
    CHECK_STR(f.headers[4], "Bearer s3cr3t-token");
    char series[200];
    snprintf(series, sizeof series, "gpulse_push_batches_retried_total{target=\"http://127.0.0.1:%u/api/v1/write\"}",
             s.port);
    CHECK_DBL(metric(p, series), 1, 0);
    gp_push_stop(p);
    MHD_stop_daemon(s.d);
}

/* A target that refuses connections is retried; once it listens, the
 * queued ticks arrive in order. */
static void test_http_connection_refused_then_up(void)
{
    struct fake f;
    fake_init(&f, 204);
    struct server s;
    server_start(&s, &f);
    unsigned port = s.port;
    MHD_stop_daemon(s.d); /* the port is now closed */
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/api/v1/write", port);
    const char *urls[] = {url};
    struct gp_push_options o = {.urls = urls, .nurls = 1, .queue_max = 1 << 20, .timeout_ms = 2000,
                                .min_backoff_ms = 20, .max_backoff_ms = 50};
    struct gp_push *p;
    char err[256] = "";
    CHECK_INT(gp_push_start(&p, &o, err, sizeof err), GP_OK);
    for (unsigned i = 1; i <= 5; i++) {
        tick(p, i);
        sleep_ms(40);
    }
    char series[200];
    snprintf(series, sizeof series, "gpulse_push_batches_retried_total{target=\"%s\"}", url);
    CHECK(metric(p, series) >= 2);
    /* Listen on the same port again. */
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    s.d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, (uint16_t)port, NULL, NULL, on_request, &s,
                           MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a, MHD_OPTION_NOTIFY_COMPLETED,
                           on_done, NULL, MHD_OPTION_END);
    CHECK(s.d != NULL);
    CHECK(wait_nts(&f, 5, 5000));
    expect_ticks(&f, 1, 5);
    gp_push_stop(p);
    MHD_stop_daemon(s.d);
}

/* A server that accepts the connection and never answers: the stop gives
 * up after its drain time (5 s at most), not after the 60 s timeout. */
static void test_stop_does_not_hang(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    CHECK(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(listen(fd, 16) == 0);
    CHECK(getsockname(fd, (struct sockaddr *)&a, &al) == 0);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/api/v1/write", ntohs(a.sin_port));
    const char *urls[] = {url};
    struct gp_push_options o = {.urls = urls, .nurls = 1, .queue_max = 1 << 20, .timeout_ms = 60000};
    struct gp_push *p;
    char err[256] = "";
    CHECK_INT(gp_push_start(&p, &o, err, sizeof err), GP_OK);
    tick(p, 1);
    sleep_ms(300); /* the request is in flight, waiting for an answer */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    gp_push_stop(p);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK(since_ms(&t0, &t1) < 7000);
    close(fd);
}

/* The agent's push keys: defaults, a YAML list, repeated flags, checks. */
static void test_agent_push_keys(void)
{
    struct gp_agent_config c;
    char err[256] = "";
    gp_agent_config_defaults(&c);
    CHECK_INT(c.push.n, 0);
    CHECK_INT(c.buffer_max, 256ull << 20);
    CHECK_INT(c.push_queue_max, 64ull << 20);
    CHECK_INT(c.push_timeout_ms, 10000);
    CHECK_INT(c.push_max_backoff_ms, 30000);
    CHECK_STR(c.buffer_dir, "");
    CHECK_INT(gp_agent_config_validate(&c, err, sizeof err), GP_OK);
    const char *yaml = "agent:\n  push:\n    - http://a:9402/api/v1/write\n    - https://b/api/v1/push\n"
                       "  buffer_dir: /var/lib/gpulse/buffer\n  buffer_max: 1GiB\n  push_timeout: 30s\n";
    CHECK_INT(gp_agent_config_parse_yaml(&c, yaml, strlen(yaml), err, sizeof err), GP_OK);
    CHECK_INT(c.push.n, 2);
    CHECK_STR(c.push.v[1], "https://b/api/v1/push");
    CHECK_INT(c.buffer_max, 1ull << 30);
    CHECK_INT(c.push_timeout_ms, 30000);
    /* Flags replace the file's list. */
    char *argv[] = {"--push", "http://x/w", "--push=http://y/w", "--buffer-max", "2MiB"};
    bool help;
    CHECK_INT(gp_agent_config_from_args(&c, 5, argv, &help, err, sizeof err), GP_OK);
    CHECK_INT(c.push.n, 2);
    CHECK_STR(c.push.v[0], "http://x/w");
    CHECK_INT(c.buffer_max, 2ull << 20);
    CHECK_INT(gp_agent_config_validate(&c, err, sizeof err), GP_OK);
    c.buffer_max = 1000;
    CHECK_INT(gp_agent_config_validate(&c, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "at least 1MiB");
    c.buffer_max = 1 << 20;
    c.push_timeout_ms = 500;
    CHECK_INT(gp_agent_config_validate(&c, err, sizeof err), GP_ECONFIG);
    c.push_timeout_ms = 10000;
    c.push_max_backoff_ms = 100;
    CHECK_INT(gp_agent_config_validate(&c, err, sizeof err), GP_ECONFIG);
    c.push_max_backoff_ms = 1000;
    snprintf(c.push_bearer_token, sizeof c.push_bearer_token, "t");
    snprintf(c.push_bearer_token_file, sizeof c.push_bearer_token_file, "/f");
    CHECK_INT(gp_agent_config_validate(&c, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "choose one");
    /* At most 8 targets. */
    const char *many = "agent:\n  push: [a, b, c, d, e, f, g, h, i]\n";
    CHECK_INT(gp_agent_config_parse_yaml(&c, many, strlen(many), err, sizeof err), GP_ECONFIG);
}

/* local_opts' settings with one HTTP target on a fake server for f
 * instead of the local target: the queue machinery of URL targets
 * (joined requests, the disk buffer, the encoder). */
struct http_target {
    struct server srv;
    char url[128];
    const char *urls[1];
};

static struct gp_push_options http_opts(struct http_target *h, struct fake *f)
{
    server_start(&h->srv, f);
    snprintf(h->url, sizeof h->url, "http://127.0.0.1:%u/api/v1/write", h->srv.port);
    h->urls[0] = h->url;
    struct gp_push_options o = local_opts(f);
    o.local = NULL;
    o.local_ctx = NULL;
    o.urls = h->urls;
    o.nurls = 1;
    return o;
}

static void http_stop(struct http_target *h)
{
    MHD_stop_daemon(h->srv.d);
}

/* metric() of family{target=h's URL[,reason=...]}. */
static double tmetric(struct gp_push *p, const char *family, const struct http_target *h, const char *reason)
{
    char series[400];
    snprintf(series, sizeof series, "%s{target=\"%s\"%s%s%s}", family, h->url, reason ? ",reason=\"" : "",
             reason ? reason : "", reason ? "\"" : "");
    return metric(p, series);
}

/* 503s retry the same batch; newer ticks queue behind it; when the target
 * is back they arrive in order, exactly once, several to a request. */
static void test_retries_then_delivers_in_order(void)
{
    struct fake f;
    fake_init(&f, 204);
    for (int i = 0; i < 6; i++)
        f.script[f.nscript++] = i % 2 ? 500 : 503;
    struct http_target h;
    struct gp_push_options o = http_opts(&h, &f);
    o.min_backoff_ms = 60;
    o.max_backoff_ms = 120;
    struct gp_push *p;
    char err[256] = "";
    CHECK_INT(gp_push_start(&p, &o, err, sizeof err), GP_OK);
    for (unsigned i = 1; i <= 40; i++) {
        tick(p, i);
        sleep_ms(5);
    }
    CHECK(wait_nts(&f, 40, 10000));
    expect_ticks(&f, 1, 40);
    CHECK_DBL(tmetric(p, "gpulse_push_batches_retried_total", &h, NULL), 6, 0);
    CHECK_DBL(tmetric(p, "gpulse_push_samples_sent_total", &h, NULL), 80, 0);
    CHECK(f.max_ticks_per_request > 1); /* caught up with joined requests */
    CHECK(f.accepted_requests < 40);
    gp_push_stop(p);
    http_stop(&h);
}

/* The local target: 503s retry the same tick; newer ticks queue behind
 * it; when the receiver is back they arrive in order, exactly once, one
 * tick to a call (nothing to gain from joining them in process). */
static void test_local_retries_in_order(void)
{
    struct fake f;
    fake_init(&f, 204);
    for (int i = 0; i < 6; i++)
        f.script[f.nscript++] = i % 2 ? 500 : 503;
    struct gp_push_options o = local_opts(&f);
    o.min_backoff_ms = 60;
    o.max_backoff_ms = 120;
    struct gp_push *p;
    char err[256] = "";
    CHECK_INT(gp_push_start(&p, &o, err, sizeof err), GP_OK);
    for (unsigned i = 1; i <= 40; i++) {
        tick(p, i);
        sleep_ms(5);
    }
    CHECK(wait_nts(&f, 40, 10000));
    expect_ticks(&f, 1, 40);
    CHECK_DBL(metric(p, "gpulse_push_batches_retried_total{target=\"local\"}"), 6, 0);
    CHECK_DBL(metric(p, "gpulse_push_samples_sent_total{target=\"local\"}"), 80, 0);
    CHECK_INT(f.max_ticks_per_request, 1);
    CHECK_INT(f.accepted_requests, 40);
    gp_push_stop(p);
}

/* With a buffer directory, ticks a dead target never took are sent first
 * by the next pusher on the same directory, in order, exactly once. */
static void test_disk_buffer_survives_restart(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/buffer", gp_test_tmpdir());
    struct fake down;
    fake_init(&down, 503);
    struct http_target h;
    struct gp_push_options o = http_opts(&h, &down);
    o.buffer_dir = dir;
    struct gp_push *p;
    char err[256] = "";
    CHECK_INT(gp_push_start(&p, &o, err, sizeof err), GP_OK);
    for (unsigned i = 1; i <= 12; i++) {
        tick(p, i);
        sleep_ms(10);
    }
    for (int i = 0; i < 500 && tmetric(p, "gpulse_push_batches_retried_total", &h, NULL) < 2; i++)
        sleep_ms(10);
    CHECK(tmetric(p, "gpulse_push_buffer_bytes", &h, NULL) > 0);
    CHECK_DBL(tmetric(p, "gpulse_push_samples_dropped_total", &h, "encoder"), 0, 0);
    gp_push_stop(p); /* a failing target does not hold the stop up */
    CHECK_INT(down.nts, 0);

    struct fake up;
    fake_init(&up, 204);
    h.srv.f = &up; /* the same URL, so the same buffer; no request is in flight */
    CHECK_INT(gp_push_start(&p, &o, err, sizeof err), GP_OK);
    CHECK(wait_nts(&up, 12, 5000));
    tick(p, 13);
    tick(p, 14);
    CHECK(wait_nts(&up, 14, 5000));
    expect_ticks(&up, 1, 14);
    gp_push_stop(p);

    /* Delivered: a third start sends nothing again. */
    struct fake again;
    fake_init(&again, 204);
    h.srv.f = &again;
    CHECK_INT(gp_push_start(&p, &o, err, sizeof err), GP_OK);
    sleep_ms(200);
    CHECK_INT(fake_nts(&again), 0);
    gp_push_stop(p);
    http_stop(&h);
}

/* A tick the protocol refuses (a label name it rejects) is counted as
 * dropped (reason encoder), not sent; the next tick goes. */
static void test_bad_series_counted(void)
{
    struct fake f;
    fake_init(&f, 204);
    struct http_target h;
    struct gp_push_options o = http_opts(&h, &f);
    struct gp_push *p;
    char err[256] = "";
    CHECK_INT(gp_push_start(&p, &o, err, sizeof err), GP_OK);
    const char *names[] = {"m", "m"}, *labels[] = {"i=0", "1bad=x"};
    const double v[] = {1, 2};
    tick_series(p, names, labels, v, 2, 5000);
    tick(p, 6);
    CHECK(wait_nts(&f, 1, 5000));
    expect_ticks(&f, 6, 1);
    CHECK_DBL(tmetric(p, "gpulse_push_samples_dropped_total", &h, "encoder"), 2, 0);
    gp_push_stop(p);
    http_stop(&h);
}

/* Records every series the local target hands over as "name{a=x,b=y,}" (labels sorted). */
struct seen {
    pthread_mutex_t mu;
    char text[4096];
};

static int record_series(void *ctx, const struct gp_batch *rq, char *msg, size_t msglen)
{
    struct seen *w = ctx;
    const struct gp_batch req = *rq;
    (void)msg, (void)msglen;
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < req.nseries; i++) {
        const struct gp_series *s = &req.series[i];
        char name[64] = "", rest[512] = "";
        size_t n = 0;
        for (size_t j = 0; j < s->nlabels && n < sizeof rest - 64; j++) {
            const struct gp_label *l = &s->labels[j];
            if (l->name.len == 8 && !memcmp(l->name.ptr, "__name__", 8))
                snprintf(name, sizeof name, "%.*s", (int)l->value.len, l->value.ptr);
            else
                n += (size_t)snprintf(rest + n, sizeof rest - n, "%.*s=%.*s,", (int)l->name.len,
                                      l->name.ptr, (int)l->value.len, l->value.ptr);
        }
        size_t used = strlen(w->text);
        snprintf(w->text + used, sizeof w->text - used, "%s{%s}\n", name, rest);
    }
    pthread_mutex_unlock(&w->mu);
    return 204;
}

/* The node and external labels go on every series that lacks a label of
 * that name; a series keeps its own (a GPU's host label, its own cluster). */
static void test_labels_added_where_missing(void)
{
    struct seen w = {.mu = PTHREAD_MUTEX_INITIALIZER};
    const char *labels[] = {"Hostname=node-a", "cluster=east"};
    struct gp_push_options o = {.local = record_series,
                                .local_ctx = &w,
                                .queue_max = 1 << 20,
                                .timeout_ms = 2000,
                                .labels = labels,
                                .nlabels = 2};
    struct gp_push *p;
    char err[256] = "";
    CHECK_INT(gp_push_start(&p, &o, err, sizeof err), GP_OK);
    const char *names[] = {"gpulse_host_cpus", "DCGM_FI_DEV_GPU_TEMP", "own"};
    const char *lab[] = {"", "gpu=0;Hostname=sim-node-0", "cluster=mine;x=1"};
    const double v[] = {8, 40, 1};
    tick_series(p, names, lab, v, 3, 5000);
    gp_push_stop(p); /* encodes and delivers what was handed over */
    CHECK_CONTAINS(w.text, "gpulse_host_cpus{Hostname=node-a,cluster=east,}\n");
    CHECK_CONTAINS(w.text, "DCGM_FI_DEV_GPU_TEMP{Hostname=sim-node-0,cluster=east,gpu=0,}\n");
    CHECK_CONTAINS(w.text, "own{Hostname=node-a,cluster=mine,x=1,}\n");
    /* Without labels, the series go as /metrics shows them. */
    struct seen plain = {.mu = PTHREAD_MUTEX_INITIALIZER};
    o.local_ctx = &plain;
    o.nlabels = 0;
    CHECK_INT(gp_push_start(&p, &o, err, sizeof err), GP_OK);
    tick_series(p, names, lab, v, 3, 5000);
    gp_push_stop(p);
    CHECK_CONTAINS(plain.text, "gpulse_host_cpus{}\n");
    /* A label that is not NAME=VALUE is a configuration error. */
    const char *bad[] = {"=x"};
    o.labels = bad;
    o.nlabels = 1;
    CHECK_INT(gp_push_start(&p, &o, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "push label '=x' is not NAME=VALUE");
}

/* One tick of n series big{i="K",pad="..."} = K at time_ms (pad: bytes of padding). */
static void big_tick(struct gp_push *p, size_t n, size_t pad, int64_t time_ms)
{
    struct gp_rw_build b = {0};
    char *padv = malloc(pad + 1), num[32];
    memset(padv, 'x', pad);
    padv[pad] = '\0';
    for (size_t i = 0; i < n; i++) {
        gp_rw_build_begin(&b, "big");
        snprintf(num, sizeof num, "%zu", i);
        gp_rw_build_label(&b, "i", num);
        gp_rw_build_label(&b, "pad", padv);
        gp_rw_build_end(&b, (double)i);
    }
    gp_push_tick(p, &b, time_ms);
    gp_rw_build_free(&b);
    free(padv);
}

static size_t fake_samples(struct fake *f)
{
    pthread_mutex_lock(&f->mu);
    size_t n = f->samples;
    pthread_mutex_unlock(&f->mu);
    return n;
}

/* Every one of n series got `ticks` samples, each once, in time order. */
static void expect_big(struct fake *f, size_t n, unsigned ticks)
{
    for (long waited = 0; waited < 20000 && fake_samples(f) < n * ticks; waited += 10)
        sleep_ms(10);
    CHECK_INT(fake_samples(f), n * ticks);
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++)
        wrong += f->hits[i] != ticks;
    CHECK_INT(wrong, 0);
    CHECK_INT(f->big_out_of_order, 0);
}

static void fake_track(struct fake *f, size_t n)
{
    f->hits = calloc(n, sizeof *f->hits);
    f->last_ts = calloc(n, sizeof *f->last_ts);
    f->nhits = n;
}

static void fake_untrack(struct fake *f)
{
    free(f->hits);
    free(f->last_ts);
}

/* Starts a pusher on o with a queue for large ticks, hands it two ticks
 * of n big series, and checks every sample arrived once, in order, in
 * requests within the limit. Returns the pusher (caller stops it). */
static struct gp_push *push_two_big_ticks(struct gp_push_options *o, struct fake *f, size_t n)
{
    o->queue_max = 256 << 20;
    struct gp_push *p;
    char err[256] = "";
    CHECK_INT(gp_push_start(&p, o, err, sizeof err), GP_OK);
    big_tick(p, n, 0, 1000);
    big_tick(p, n, 0, 2000);
    expect_big(f, n, 2);
    CHECK(f->max_series_per_request <= GP_PUSH_MAX_BODY_SERIES);
    return p;
}

/* A tick of one series more than a body holds (a simulating agent of
 * 2,048 GPUs) goes as several bodies, each within the limit, through a
 * retry: every sample arrives once, each series' in order. */
static void test_tick_over_the_series_limit_is_split(void)
{
    size_t n = GP_PUSH_MAX_BODY_SERIES + 1;
    struct fake f;
    fake_init(&f, 204);
    f.script[f.nscript++] = 503;
    fake_track(&f, n);
    struct http_target h;
    struct gp_push_options o = http_opts(&h, &f);
    struct gp_push *p = push_two_big_ticks(&o, &f, n);
    CHECK(f.accepted_requests >= 3); /* two ticks of two bodies; some may be joined */
    CHECK_DBL(tmetric(p, "gpulse_push_samples_sent_total", &h, NULL), (double)(2 * n), 0);
    CHECK_DBL(tmetric(p, "gpulse_push_samples_dropped_total", &h, "encoder"), 0, 0);
    CHECK_DBL(tmetric(p, "gpulse_push_batches_retried_total", &h, NULL), 1, 0);
    gp_push_stop(p);
    http_stop(&h);
    fake_untrack(&f);
}

/* Few series with long labels: the byte limit splits the tick too. */
static void test_tick_over_the_byte_limit_is_split(void)
{
    size_t pad = 4000, n = GP_PUSH_MAX_BODY_RAW / pad + 1;
    struct fake f;
    fake_init(&f, 204);
    fake_track(&f, n);
    struct http_target h;
    struct gp_push_options o = http_opts(&h, &f);
    o.queue_max = 64 << 20;
    struct gp_push *p;
    char err[256] = "";
    CHECK_INT(gp_push_start(&p, &o, err, sizeof err), GP_OK);
    big_tick(p, n, pad, 1000);
    expect_big(&f, n, 1);
    CHECK_INT(f.accepted_requests, 2);
    CHECK(f.max_series_per_request < n);
    gp_push_stop(p);
    http_stop(&h);
    fake_untrack(&f);
}

/* The local target (`gpulse up --simulate` of thousands of GPUs): the
 * receiver takes one body's worth a call; a 503 on the second part
 * retries that part only, and the ticks behind wait. */
static void test_local_tick_over_the_limit_is_split(void)
{
    size_t n = GP_PUSH_MAX_BODY_SERIES + 1;
    struct fake f;
    fake_init(&f, 204);
    f.script[f.nscript++] = 204;
    f.script[f.nscript++] = 503;
    fake_track(&f, n);
    struct gp_push_options o = local_opts(&f);
    struct gp_push *p = push_two_big_ticks(&o, &f, n);
    CHECK_INT(f.accepted_requests, 4);
    CHECK_DBL(metric(p, "gpulse_push_samples_sent_total{target=\"local\"}"), (double)(2 * n), 0);
    CHECK_DBL(metric(p, "gpulse_push_batches_retried_total{target=\"local\"}"), 1, 0);
    gp_push_stop(p);
    fake_untrack(&f);
}

/* A simulating agent of 4,096 GPUs builds more than 64 MiB of label
 * text a tick: the build holds it, and its view is whole. */
static void test_build_holds_a_large_tick(void)
{
    size_t n = 17000, pad = 4000;
    struct gp_rw_build b = {0};
    char *padv = malloc(pad + 1);
    memset(padv, 'x', pad);
    padv[pad] = '\0';
    for (size_t i = 0; i < n; i++) {
        gp_rw_build_begin(&b, "big");
        gp_rw_build_label(&b, "pad", padv);
        gp_rw_build_end(&b, (double)i);
    }
    CHECK_INT(b.err, GP_OK);
    CHECK(b.str.len > (64u << 20));
    const struct gp_batch *req = NULL;
    CHECK_INT(gp_rw_build_view(&b, 1000, NULL, 0, &req), GP_OK);
    CHECK_INT(req->nseries, n);
    CHECK(req->series[n - 1].samples[0].value == (double)(n - 1));
    gp_rw_build_free(&b);
    free(padv);
}

const struct gp_test gp_tests_push[] = {
    {"labels_added_where_missing", test_labels_added_where_missing},
    {"agent_push_keys", test_agent_push_keys},
    {"delivers_every_tick_in_order", test_delivers_every_tick_in_order},
    {"retries_then_delivers_in_order", test_retries_then_delivers_in_order},
    {"rejected_batch_is_dropped_and_counted", test_rejected_batch_is_dropped_and_counted},
    {"full_queue_drops_oldest", test_full_queue_drops_oldest},
    {"disk_buffer_survives_restart", test_disk_buffer_survives_restart},
    {"metrics_render", test_metrics_render},
    {"url_labels_hide_secrets", test_url_labels_hide_secrets},
    {"config_errors", test_config_errors},
    {"http_headers_and_retry_after", test_http_headers_and_retry_after},
    {"http_connection_refused_then_up", test_http_connection_refused_then_up},
    {"stop_does_not_hang", test_stop_does_not_hang},
    {"bad_series_counted", test_bad_series_counted},
    {"local_retries_in_order", test_local_retries_in_order},
    {"tick_over_the_series_limit_is_split", test_tick_over_the_series_limit_is_split},
    {"tick_over_the_byte_limit_is_split", test_tick_over_the_byte_limit_is_split},
    {"local_tick_over_the_limit_is_split", test_local_tick_over_the_limit_is_split},
    {"build_holds_a_large_tick", test_build_holds_a_large_tick},
    {0},
};
