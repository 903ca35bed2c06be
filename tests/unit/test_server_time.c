/*
 * test_server_time.c - the server's side of issue 15's findings 1 and 6,
 * on a whole gp_server (real store, real HTTP, its maintenance thread):
 *   - a sample beyond max_future is answered 400 naming its series, its
 *     time and the server's clock, counted as too_far_in_future, while
 *     the request's current sample is stored;
 *   - a write error (ENOSPC injected into the store's writes) is answered
 *     503 with Retry-After and the cause, health says writes_paused,
 *     /metrics counts it; once writes work again the store resumes by
 *     itself and the next write is 204, without a restart.
 * The same on a real full tmpfs is tests/integration/test_server_disk_full.sh
 * (it needs root to mount one).
 */
#include "ingest/remote_write.h"
#include "lib/err.h"
#include "server/server.h"
#include "server/server_int.h"
#include "server_testlib.h"
#include "store/segment.h"
#include "test.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* Series {__name__=name, gpu=gpu[i]} with one sample each at t[i]; out is
 * the snappy body. */
static void body_of(struct gp_buf *out, const char *name, const char *const *gpu, const int64_t *t,
                    size_t n)
{
    struct gp_label l[4][2];
    struct gp_sample smp[4];
    struct gp_series se[4];
    for (size_t i = 0; i < n; i++) {
        l[i][0] = (struct gp_label){{"__name__", 8}, {name, strlen(name)}};
        l[i][1] = (struct gp_label){{"gpu", 3}, {gpu[i], strlen(gpu[i])}};
        smp[i] = (struct gp_sample){1.5, t[i]};
        se[i] = (struct gp_series){l[i], 2, &smp[i], 1};
    }
    struct gp_batch rq = {se, n, 2 * n, n, NULL};
    struct gp_buf scratch;
    gp_buf_init(&scratch, 0);
    CHECK_INT(gp_rw_encode(&rq, out, &scratch), GP_OK);
    gp_buf_free(&scratch);
}

static void metrics_contain(struct gp_server *s, const char *want)
{
    struct gp_buf m;
    gp_buf_init(&m, 0);
    CHECK_INT(gp_server_render_metrics(s, &m), GP_OK);
    CHECK_CONTAINS(m.data, want);
    gp_buf_free(&m);
}

static void test_future_sample_answered_400_naming_it(void)
{
    struct gp_server *s = srv_start_plain();
    struct gp_buf b;
    gp_buf_init(&b, 0);
    char msg[1024];
    int64_t now = gp_wall_ms();
    const char *gpu[2] = {"0", "7"};
    int64_t t[2] = {now, now + 3 * 3600 * 1000LL};
    body_of(&b, "clock_probe", gpu, t, 2);
    CHECK_INT(gp_server_write(s, (const uint8_t *)b.data, b.len, msg, sizeof msg), 400);
    CHECK_CONTAINS(msg, "rejected 1 of 2 samples: 1 too far in the future");
    CHECK_CONTAINS(msg, "{__name__=\"clock_probe\",gpu=\"7\"} at ");
    CHECK_CONTAINS(msg, "Z is 10800 s ahead of the server's clock (");
    CHECK_CONTAINS(msg, "max_future is 600 s");
    CHECK_CONTAINS(msg, "the other samples were stored");
    metrics_contain(s, "gpulse_server_samples_rejected_total{reason=\"too_far_in_future\"} 1\n");
    metrics_contain(s, "\ngpulse_server_samples_ingested_total 1\n");
    metrics_contain(s, "gpulse_server_samples_rejected_total{reason=\"too_old\"} 0\n");
    gp_buf_free(&b);
    gp_server_stop(s);
}

static int full; /* 1: the store's writes fail with ENOSPC */

static ssize_t inj_writev(int fd, const struct iovec *iov, int n)
{
    if (full) {
        errno = ENOSPC;
        return -1;
    }
    return writev(fd, iov, n);
}

struct answer {
    long status;
    char retry_after[16];
    char body[2048];
    size_t len;
};

static size_t on_header(char *p, size_t sz, size_t n, void *arg)
{
    struct answer *a = arg;
    size_t k = sz * n;
    if (k > 13 && !strncasecmp(p, "Retry-After: ", 13))
        snprintf(a->retry_after, sizeof a->retry_after, "%.*s", (int)strcspn(p + 13, "\r\n"), p + 13);
    return k;
}

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
    struct answer *a = arg;
    size_t k = sz * n, room = sizeof a->body - 1 - a->len;
    memcpy(a->body + a->len, p, k < room ? k : room);
    a->len += k < room ? k : room;
    a->body[a->len] = '\0';
    return k;
}

/* METHOD path over HTTP, with body (NULL: none) as a remote write. */
static void http(struct gp_server *s, const char *path, const struct gp_buf *body, struct answer *a)
{
    memset(a, 0, sizeof *a);
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", gp_server_port(s), path);
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, a);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    if (body) {
        h = curl_slist_append(h, "Content-Encoding: snappy");
        h = curl_slist_append(h, "Content-Type: application/x-protobuf");
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->data);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)body->len);
    }
    CHECK_INT(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a->status);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
}

static void test_full_disk_503_then_resumes(void)
{
    struct gp_server *s = srv_start_plain();
    gp_seg_sys.writev = inj_writev;
    struct gp_buf b;
    gp_buf_init(&b, 0);
    char msg[1024];
    const char *gpu[1] = {"0"};
    /* At the start of a block window: no head is cut into a chunk file
     * (a write that would fail first, with another message). */
    int64_t t = (gp_wall_ms() - 60000) / 7200000 * 7200000;
    body_of(&b, "disk_probe", gpu, &t, 1);
    CHECK_INT(gp_server_write(s, (const uint8_t *)b.data, b.len, msg, sizeof msg), 204);

    full = 1;
    t += 1000;
    gp_buf_reset(&b);
    body_of(&b, "disk_probe", gpu, &t, 1);
    CHECK_INT(gp_server_write(s, (const uint8_t *)b.data, b.len, msg, sizeof msg), 503);
    CHECK_CONTAINS(msg, "cannot append to the WAL: no space left on device");
    struct answer a;
    http(s, "/api/v1/write", &b, &a); /* refused before the body is read */
    CHECK_INT(a.status, 503);
    CHECK_STR(a.retry_after, "5");
    CHECK_CONTAINS(a.body, "the store's writes are paused (cannot append to the WAL: no space left on device)");
    http(s, "/api/v1/health", NULL, &a);
    CHECK_INT(a.status, 503);
    CHECK_STR(a.retry_after, "5");
    CHECK_CONTAINS(a.body, "\"status\":\"writes_paused\"");
    CHECK_CONTAINS(a.body, "\"write_error\":\"cannot append to the WAL: no space left on device\"");
    metrics_contain(s, "\ngpulse_server_store_writes_paused 1\n");
    metrics_contain(s, "\ngpulse_server_store_write_errors_total 1\n");
    metrics_contain(s, "\ngpulse_server_store_ready 0\n");
    usleep(1500 * 1000); /* the maintenance thread tries, and the disk is still full */
    CHECK_INT(gp_server_write(s, (const uint8_t *)b.data, b.len, msg, sizeof msg), 503);

    full = 0; /* room again: no restart, the store resumes by itself */
    int code = 0;
    for (int i = 0; i < 50 && code != 204; i++) {
        usleep(100 * 1000);
        code = gp_server_write(s, (const uint8_t *)b.data, b.len, msg, sizeof msg);
    }
    CHECK_INT(code, 204);
    http(s, "/api/v1/health", NULL, &a);
    CHECK_INT(a.status, 200);
    metrics_contain(s, "\ngpulse_server_store_writes_paused 0\n");
    metrics_contain(s, "\ngpulse_server_store_write_resumes_total 1\n");
    metrics_contain(s, "\ngpulse_server_store_ready 1\n");
    gp_seg_sys.writev = writev;
    gp_buf_free(&b);
    gp_server_stop(s);
}

const struct gp_test gp_tests_server_time[] = {
    {"future_sample_answered_400_naming_it", test_future_sample_answered_400_naming_it},
    {"full_disk_503_then_resumes", test_full_disk_503_then_resumes},
    {0},
};
