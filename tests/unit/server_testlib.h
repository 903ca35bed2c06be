/*
 * server_testlib.h - talking to a whole gp_server over real HTTP from a
 * unit test: a request with an optional bearer token and JSON body, and
 * a remote-written GPU temperature. Static functions in a header included
 * by one test file each (as store_testlib.h).
 */
#ifndef GP_SERVER_TESTLIB_H
#define GP_SERVER_TESTLIB_H

#include "ingest/remote_write.h"
#include "lib/buf.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "server/config.h"
#include "server/server.h"
#include "test.h"

#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

struct reply {
    long status;
    char body[1 << 16];
    size_t len;
};

static inline size_t srv_on_data(char *p, size_t sz, size_t n, void *arg)
{
    struct reply *r = arg;
    size_t k = sz * n, room = sizeof r->body - 1 - r->len;
    memcpy(r->body + r->len, p, k < room ? k : room);
    r->len += k < room ? k : room;
    r->body[r->len] = '\0';
    return k;
}

/* METHOD path with a bearer token (NULL: none) and a body (NULL: none)
 * of the given content type. The reply is static: valid until the next
 * call. */
static inline struct reply *srv_request_as(struct gp_server *s, const char *method, const char *path,
                                           const char *body, const char *token,
                                           const char *content_type)
{
    static struct reply r;
    memset(&r, 0, sizeof r);
    char url[1024], auth[128], ct[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", gp_server_port(s), path);
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    if (token) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
        h = curl_slist_append(h, auth);
    }
    if (body) {
        snprintf(ct, sizeof ct, "Content-Type: %s", content_type);
        h = curl_slist_append(h, ct);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, srv_on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    CHECK_INT(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    return &r;
}

/* The same with a JSON body. */
static inline struct reply *srv_request(struct gp_server *s, const char *method, const char *path,
                                        const char *body, const char *token)
{
    return srv_request_as(s, method, path, body, token, "application/json");
}

/* Remote-writes the series se[0..n) with the write token "w-tok"; the
 * write must answer 204. Labels must be sorted by name. */
static inline void srv_write(struct gp_server *s, struct gp_series *se, size_t n)
{
    size_t nl = 0, ns = 0;
    for (size_t i = 0; i < n; i++) {
        nl += se[i].nlabels;
        ns += se[i].nsamples;
    }
    struct gp_batch rq = {se, n, nl, ns, NULL};
    struct gp_buf body, scratch;
    gp_buf_init(&body, 0);
    gp_buf_init(&scratch, 0);
    CHECK_INT(gp_rw_encode(&rq, &body, &scratch), GP_OK);
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/api/v1/write", gp_server_port(s));
    CURL *c = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Encoding: snappy");
    h = curl_slist_append(h, "Content-Type: application/x-protobuf");
    h = curl_slist_append(h, "Authorization: Bearer w-tok");
    static struct reply r;
    memset(&r, 0, sizeof r);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)body.len);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, srv_on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    CHECK_INT(curl_easy_perform(c), CURLE_OK);
    long code;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(c);
    curl_slist_free_all(h);
    gp_buf_free(&body);
    gp_buf_free(&scratch);
    CHECK_INT(code, 204);
}

/* DCGM_FI_DEV_GPU_TEMP{Hostname="n1",gpu="0"[,job=JOB]} = v now, remote
 * written with the write token "w-tok"; the write must answer 204. */
static inline void srv_put_temp(struct gp_server *s, double v, const char *job)
{
    struct gp_label l[4] = {{{"Hostname", 8}, {"n1", 2}},
                               {{"__name__", 8}, {"DCGM_FI_DEV_GPU_TEMP", 20}},
                               {{"gpu", 3}, {"0", 1}},
                               {{"job", 3}, {job ? job : "", job ? strlen(job) : 0}}};
    size_t nl = job ? 4 : 3;
    struct gp_sample smp = {v, gp_wall_ms()};
    struct gp_series se = {l, nl, &smp, 1};
    srv_write(s, &se, 1);
}

/* A custom rule that fires on srv_put_temp(s, 90, ...) within 200 ms. */
static const char srv_hot_rule[] = "rules:\n"
                                   "  - name: gpu_hot\n"
                                   "    expr: DCGM_FI_DEV_GPU_TEMP\n"
                                   "    agg: last\n"
                                   "    window: 5s\n"
                                   "    op: '>'\n"
                                   "    threshold: 85\n"
                                   "    for: 200ms\n"
                                   "    severity: critical\n";

/* A server's settings for the tests: its config file at <tmp>/gpulse.yaml
 * (the caller writes it), data under <tmp>/data, 127.0.0.1, tokens
 * "w-tok"/"r-tok", and a fast evaluation (every 100 ms over 10 s of 1 s
 * points, alerts resolving at the first clear tick). */
static inline void srv_eval_config(struct gp_server_config *c)
{
    gp_server_config_defaults(c);
    CHECK(snprintf(c->config_file, sizeof c->config_file, "%s/gpulse.yaml", gp_test_tmpdir()) <
          (int)sizeof c->config_file);
    snprintf(c->listen, sizeof c->listen, "127.0.0.1:0");
    snprintf(c->data_dir, sizeof c->data_dir, "%s/data", gp_test_tmpdir());
    snprintf(c->log_level, sizeof c->log_level, "error");
    snprintf(c->write_token, sizeof c->write_token, "w-tok");
    snprintf(c->read_token, sizeof c->read_token, "r-tok");
    c->eval_interval_ms = 100;
    c->eval_step_ms = 1000;
    c->eval_window_ms = 10000;
    c->alert_clear_for_ms = 0;
}

/* A server with the default settings but for data under <tmp>/data,
 * 127.0.0.1 and quiet logs; the caller stops it. */
static inline struct gp_server *srv_start_plain(void)
{
    struct gp_server_config c;
    gp_server_config_defaults(&c);
    snprintf(c.listen, sizeof c.listen, "127.0.0.1:0");
    snprintf(c.data_dir, sizeof c.data_dir, "%s/data", gp_test_tmpdir());
    snprintf(c.log_level, sizeof c.log_level, "error");
    struct gp_server *s;
    char err[512];
    if (gp_server_start(&s, &c, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "start: %s", err);
    return s;
}

/* A server started with srv_eval_config's settings; the caller stops it. */
static inline struct gp_server *srv_start_eval(void)
{
    struct gp_server_config c;
    srv_eval_config(&c);
    struct gp_server *s;
    char err[512];
    if (gp_server_start(&s, &c, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "start: %s", err);
    return s;
}

#endif
