/*
 * write.c - POST /api/v1/write: Prometheus remote write 1.0 into the store.
 *
 * One path for HTTP and for in-process bodies (gp_server_write): check
 * the encoding, check the declared decompressed size against
 * max_uncompressed and the in-flight budget before anything is
 * allocated, decode (ingest/remote_write.h: exact caps, labels
 * validated), append (store.h: durable before it returns), answer.
 * `gpulse up`'s agent hands over batches it built, with no snappy or
 * protobuf (gp_server_append): checked as a decode checks (gp_rw_check),
 * under the same limits, then the same append and answer.
 *
 * Answers, as Prometheus's receiver gives them and senders expect them:
 *   204  stored (duplicates of stored samples are dropped silently: a
 *        sender's retry of a batch that landed)
 *   400  malformed body, or some samples rejected (out of order, another
 *        value at a stored timestamp, older than retention, series limit,
 *        dated beyond max_future ahead of the server's clock: the first
 *        such series is named with its time and the server's): the good
 *        samples are stored, the rejects counted by reason, and the
 *        sender drops the batch instead of retrying it forever
 *   413  body over max_body (http.c) or its decompressed size over
 *        max_uncompressed
 *   415  not snappy, or not remote write 1.0 (a 2.0 sender falls back)
 *   429  too many bytes in flight: Retry-After 1
 *   503  store starting (Retry-After 5), or its writes paused after a
 *        write error such as a full disk (Retry-After 5: the store
 *        resumes them by itself within a second of the disk having room)
 */
#include "server_int.h"

#include "ingest/remote_write.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "server/metadata.h"

#include <ctype.h>
#include <inttypes.h>
#include <snappy-c.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Trims blanks from both ends of [*p, *p + *n). */
static void trim(const char **p, size_t *n)
{
    while (*n && isspace((unsigned char)**p))
        (*p)++, (*n)--;
    while (*n && isspace((unsigned char)(*p)[*n - 1]))
        (*n)--;
}

/* 0 when the Content-Type is remote write 1.0 (or absent), else 415 with msg. */
static int check_content_type(const char *ct, char *msg, size_t msglen)
{
    if (!ct || !*ct)
        return 0;
    const char *semi = strchr(ct, ';');
    const char *mt = ct;
    size_t mn = semi ? (size_t)(semi - ct) : strlen(ct);
    trim(&mt, &mn);
    if (mn != strlen("application/x-protobuf") || strncasecmp(mt, "application/x-protobuf", mn)) {
        snprintf(msg, msglen, "unsupported Content-Type '%.60s': expected application/x-protobuf", ct);
        return 415;
    }
    for (const char *p = semi; p && *p; p = strchr(p + 1, ';')) {
        const char *k = p + 1;
        while (*k == ' ')
            k++;
        if (strncasecmp(k, "proto=", 6))
            continue;
        const char *v = k + 6;
        size_t vn = strcspn(v, ";");
        trim(&v, &vn);
        if (vn && *v == '"' && v[vn - 1] == '"' && vn >= 2)
            v++, vn -= 2;
        if (vn != strlen("prometheus.WriteRequest") || strncmp(v, "prometheus.WriteRequest", vn)) {
            snprintf(msg, msglen,
                     "unsupported remote write message 'proto=%.*s': this receiver speaks remote write "
                     "1.0 (prometheus.WriteRequest)",
                     (int)(vn > 60 ? 60 : vn), v);
            return 415;
        }
    }
    return 0;
}

static void refuse(struct gp_server *s, enum gp_srv_refusal why)
{
    gp_srv_count(&s->refused[why], 1);
}

/* Retry-After of a write refused while the store's writes are paused. */
#define PAUSED_RETRY_S 5

/* RFC 3339 UTC with milliseconds of a ms timestamp into out. */
static void rfc3339(char *out, size_t n, int64_t ms)
{
    time_t sec = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    struct tm tm;
    if (!gmtime_r(&sec, &tm) ||
        !strftime(out, n, "%Y-%m-%dT%H:%M:%S", &tm))
        snprintf(out, n, "%" PRId64 "ms", ms);
    else
        snprintf(out + strlen(out), n - strlen(out), ".%03dZ", (int)(ms - (int64_t)sec * 1000));
}

/* "the sample of {a="b",...} at TIME is N s ahead of the server's clock
 * (TIME; max_future S)": the first too-far-in-future sample, named for
 * the sender's log. Labels are cut at a few hundred bytes. */
static void future_detail(char *out, size_t n, const struct gp_batch *rq,
                          const struct gp_append_result *res, int64_t bound_ms)
{
    const struct gp_series *rs = &rq->series[res->future_series];
    char labels[320];
    size_t k = 0;
    labels[k++] = '{';
    for (size_t i = 0; i < rs->nlabels && k < sizeof labels - 8; i++) {
        int w = snprintf(labels + k, sizeof labels - k, "%s%.*s=\"%.*s\"", i ? "," : "",
                         (int)rs->labels[i].name.len, rs->labels[i].name.ptr,
                         (int)rs->labels[i].value.len, rs->labels[i].value.ptr);
        if (w < 0 || (size_t)w >= sizeof labels - k) {
            k = sizeof labels - 5;
            memcpy(labels + k, "...", 3);
            k += 3;
            break;
        }
        k += (size_t)w;
    }
    labels[k++] = '}';
    labels[k] = '\0';
    char ts[48], now[48];
    rfc3339(ts, sizeof ts, res->future_t_ms);
    rfc3339(now, sizeof now, res->now_ms);
    snprintf(out, n, "%s at %s is %.0f s ahead of the server's clock (%s); max_future is %.0f s", labels,
             ts, (double)(res->future_t_ms - res->now_ms) / 1e3, now, (double)bound_ms / 1e3);
}

/* 0 when the store takes writes, else 503 with msg and *retry_after. */
static int store_ready(struct gp_server *s, char *msg, size_t msglen, int *retry_after)
{
    msg[0] = '\0';
    *retry_after = 0;
    struct gp_storage *st = gp_srv_store(s);
    char paused[160];
    if (gp_storage_write_paused(st, paused, sizeof paused)) {
        refuse(s, GP_SRV_REF_UNAVAILABLE);
        snprintf(msg, msglen, "the store's writes are paused (%s); retry later", paused);
        *retry_after = PAUSED_RETRY_S;
        return 503;
    }
    if (!st) {
        refuse(s, GP_SRV_REF_UNAVAILABLE);
        snprintf(msg, msglen, "the store is starting (recovering its data)");
        *retry_after = 5;
        return 503;
    }
    return 0;
}

/* A write of `size` uncompressed bytes (what the limits count): 0 with
 * the bytes reserved from the in-flight budget, or the refusal's status
 * (413 over max_uncompressed, 429 while the budget is spent) with msg. */
static int admit(struct gp_server *s, size_t size, const char *what, char *msg, size_t msglen,
                 int *retry_after)
{
    if (size > s->cfg.max_uncompressed) {
        refuse(s, GP_SRV_REF_TOO_LARGE);
        snprintf(msg, msglen, "%s of %zu bytes is over the limit of %llu bytes", what, size,
                 (unsigned long long)s->cfg.max_uncompressed);
        return 413;
    }
    if (!gp_srv_reserve(s, size)) {
        refuse(s, GP_SRV_REF_OVERLOADED);
        snprintf(msg, msglen, "too many write requests in flight; retry later");
        *retry_after = 1;
        return 429;
    }
    return 0;
}

static int store_batch(struct gp_server *s, const struct gp_batch *rq, char *msg, size_t msglen,
                       int *retry_after);

/* The whole write; returns the status with msg and *retry_after (s). */
static int write_core(struct gp_server *s, const uint8_t *body, size_t len, const char *encoding,
                      const char *ctype, char *msg, size_t msglen, int *retry_after)
{
    int ready = store_ready(s, msg, msglen, retry_after);
    if (ready)
        return ready;
    if (encoding && *encoding && strcasecmp(encoding, "snappy")) {
        refuse(s, GP_SRV_REF_UNSUPPORTED);
        snprintf(msg, msglen, "unsupported Content-Encoding '%.40s': remote write bodies are snappy",
                 encoding);
        return 415;
    }
    int code = check_content_type(ctype, msg, msglen);
    if (code) {
        refuse(s, GP_SRV_REF_UNSUPPORTED);
        return code;
    }
    if (!len) {
        refuse(s, GP_SRV_REF_MALFORMED);
        snprintf(msg, msglen, "empty body: expected a snappy-compressed WriteRequest");
        return 400;
    }
    if (len > s->cfg.max_body) { /* HTTP checked it already; the in-process path here */
        refuse(s, GP_SRV_REF_TOO_LARGE);
        snprintf(msg, msglen, "body of %zu bytes is over the limit of %llu bytes", len,
                 (unsigned long long)s->cfg.max_body);
        return 413;
    }
    char derr[256];
    size_t ulen = 0;
    if (snappy_uncompressed_length((const char *)body, len, &ulen) == SNAPPY_OK) {
        code = admit(s, ulen, "decompressed body", msg, msglen, retry_after);
        if (code)
            return code;
    } else {
        ulen = 0; /* the decoder names the problem below */
    }
    struct gp_batch rq;
    int rc = gp_rw_decode(body, len, (size_t)s->cfg.max_uncompressed, &rq, derr, sizeof derr);
    if (rc) {
        gp_srv_release(s, ulen);
        if (rc == GP_ENOMEM) {
            refuse(s, GP_SRV_REF_OVERLOADED);
            snprintf(msg, msglen, "out of memory decoding the request; retry later");
            *retry_after = 5;
            return 503;
        }
        refuse(s, GP_SRV_REF_MALFORMED);
        snprintf(msg, msglen, "%s", derr);
        return 400;
    }
    const struct gp_family_meta *meta;
    size_t nmeta = gp_rw_metadata(&rq, &meta);
    gp_srv_meta_put(s->meta, meta, nmeta); /* kept apart from the samples: never refuses them */
    code = store_batch(s, &rq, msg, msglen, retry_after);
    gp_rw_decoded_free(&rq);
    gp_srv_release(s, ulen);
    return code;
}

/* Appends a checked batch and answers as the write does: the counters,
 * the rejections by reason, the status with msg and *retry_after. */
static int store_batch(struct gp_server *s, const struct gp_batch *rq, char *msg, size_t msglen,
                       int *retry_after)
{
    char derr[256];
    struct gp_append_result res;
    memset(&res, 0, sizeof res);
    int rc = gp_storage_append(gp_srv_store(s), rq, &res, derr, sizeof derr);
    size_t nsamples = rq->nsamples_total;
    char future[600] = "";
    if (rc == GP_OK && res.too_far_in_future)
        future_detail(future, sizeof future, rq, &res, s->cfg.max_future_ms);
    if (rc == GP_EIO) {
        /* The store logged the cause and resumes by itself (store.h). */
        refuse(s, GP_SRV_REF_UNAVAILABLE);
        snprintf(msg, msglen, "%s; retry later", derr);
        *retry_after = PAUSED_RETRY_S;
        return 503;
    }
    if (rc) {
        refuse(s, GP_SRV_REF_OVERLOADED);
        snprintf(msg, msglen, "cannot store the samples now (%s); retry later", gp_strerror(rc));
        *retry_after = 5;
        return 503;
    }
    gp_srv_count(&s->samples_ingested, res.accepted);
    gp_srv_count(&s->samples_duplicate, res.duplicate);
    gp_srv_count(&s->series_created, res.series_created);
    gp_srv_count(&s->rejected[GP_SRV_REJ_OUT_OF_ORDER], res.out_of_order);
    gp_srv_count(&s->rejected[GP_SRV_REJ_CONFLICT], res.conflict);
    gp_srv_count(&s->rejected[GP_SRV_REJ_TOO_OLD], res.too_old);
    gp_srv_count(&s->rejected[GP_SRV_REJ_SERIES_LIMIT], res.series_limit);
    gp_srv_count(&s->rejected[GP_SRV_REJ_TOO_FAR_IN_FUTURE], res.too_far_in_future);
    if (res.too_far_in_future) /* a wrong clock: worth a line at info, once per request */
        gp_log(GP_LOG_INFO, "write", "samples dated too far ahead of the server's clock rejected",
               "samples=%llu first=\"%s\"", (unsigned long long)res.too_far_in_future, future);
    uint64_t bad = res.out_of_order + res.conflict + res.too_old + res.series_limit +
                   res.too_far_in_future;
    if (!bad)
        return 204;
    /* One line, the reasons that occurred, as Prometheus's receiver does. */
    int n = snprintf(msg, msglen, "rejected %llu of %zu samples:", (unsigned long long)bad, nsamples);
    const char *sep = " ";
    const struct {
        uint64_t n;
        const char *what;
    } why[] = {{res.out_of_order, "out of order (older than the series' newest sample)"},
               {res.conflict, "duplicate timestamp with a different value"},
               {res.too_old, "older than the raw retention"},
               {res.series_limit, "of new series over max_series"},
               {res.too_far_in_future, "too far in the future"}};
    for (size_t i = 0; i < sizeof why / sizeof why[0]; i++) {
        if (!why[i].n || n < 0 || (size_t)n >= msglen)
            continue;
        n += snprintf(msg + n, msglen - (size_t)n, "%s%llu %s", sep, (unsigned long long)why[i].n,
                      why[i].what);
        sep = ", ";
    }
    if (res.too_far_in_future && n >= 0 && (size_t)n < msglen)
        n += snprintf(msg + n, msglen - (size_t)n, " (the first: %s)", future);
    if (n >= 0 && (size_t)n < msglen)
        snprintf(msg + n, msglen - (size_t)n, "; the other samples were stored");
    return 400;
}

void gp_srv_handle_write(struct gp_server *s, const struct gp_http_request *req,
                         struct gp_http_response *resp)
{
    size_t len;
    const uint8_t *body = gp_http_body(req, &len);
    char msg[1024];
    int retry;
    const char *ver = gp_http_header(req, "X-Prometheus-Remote-Write-Version");
    if (ver && !strncmp(ver, "2.", 2) && !gp_http_header(req, "Content-Type")) {
        /* A 2.0 sender without a proto= parameter: say so rather than misparse. */
        resp->status = 415;
        gp_buf_printf(&resp->body, "remote write %s is not supported: send remote write 1.0\n", ver);
        refuse(s, GP_SRV_REF_UNSUPPORTED);
        return;
    }
    int code = write_core(s, body, len, gp_http_header(req, "Content-Encoding"),
                          gp_http_header(req, "Content-Type"), msg, sizeof msg, &retry);
    resp->status = code;
    if (retry)
        gp_http_add_header(resp, "Retry-After", "%d", retry);
    if (code != 204) {
        gp_buf_printf(&resp->body, "%s\n", msg);
        gp_log(code >= 500 ? GP_LOG_WARN : GP_LOG_DEBUG, "write", "write refused", "code=%d reason=\"%s\"",
               code, msg);
    }
}

/* The in-process batch: checked as a body's decode checks it, under the
 * same size limit and in-flight budget (its encoded size stands for the
 * decompressed body's). */
static int append_core(struct gp_server *s, const struct gp_batch *rq, char *msg, size_t msglen,
                       int *retry_after)
{
    int code = store_ready(s, msg, msglen, retry_after);
    if (code)
        return code;
    size_t size;
    char derr[256];
    if (gp_rw_check(rq, &size, derr, sizeof derr)) {
        refuse(s, GP_SRV_REF_MALFORMED);
        snprintf(msg, msglen, "%s", derr);
        return 400;
    }
    if ((code = admit(s, size, "batch (as remote write)", msg, msglen, retry_after)))
        return code;
    code = store_batch(s, rq, msg, msglen, retry_after);
    gp_srv_release(s, size);
    return code;
}

int gp_server_append(struct gp_server *s, const struct gp_batch *rq, char *msg, size_t msglen)
{
    char local[8];
    if (!msg || !msglen) {
        msg = local;
        msglen = sizeof local;
    }
    int64_t t0 = gp_mono_ns();
    int retry;
    int code = append_core(s, rq, msg, msglen, &retry);
    gp_srv_observe(&s->route_hist[GP_SRV_R_WRITE], gp_mono_ns() - t0);
    gp_srv_count(&s->requests[GP_SRV_R_WRITE][code], 1);
    return code;
}

int gp_server_write(struct gp_server *s, const uint8_t *body, size_t len, char *msg, size_t msglen)
{
    char local[8];
    if (!msg || !msglen) {
        msg = local;
        msglen = sizeof local;
    }
    int64_t t0 = gp_mono_ns();
    int retry;
    int code;
    if (!gp_srv_reserve(s, len)) { /* the body, as HTTP would hold it */
        refuse(s, GP_SRV_REF_OVERLOADED);
        snprintf(msg, msglen, "too many write requests in flight; retry later");
        code = 429;
    } else {
        code = write_core(s, body, len, NULL, NULL, msg, msglen, &retry);
        gp_srv_release(s, len);
    }
    gp_srv_observe(&s->route_hist[GP_SRV_R_WRITE], gp_mono_ns() - t0);
    gp_srv_count(&s->requests[GP_SRV_R_WRITE][code], 1);
    return code;
}
