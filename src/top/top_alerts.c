/* top_alerts.c - see top_alerts.h. */
#include "top_alerts.h"

#include "lib/buf.h"
#include "lib/err.h"
#include "net/httpc.h"
#include "top/top_http.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* An answer of 100 alerts with their evidence is a few hundred KiB. */
#define MAX_ANSWER (4u << 20)

/* Copies a JSON string member as printable ASCII (a hostile server must
 * not write terminal escapes through us); "" when absent or not a string. */
static void text(char *out, size_t n, const json_t *o, const char *key)
{
    const json_t *s = json_object_get(o, key);
    snprintf(out, n, "%s", json_is_string(s) ? json_string_value(s) : "");
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
            *p = ' ';
}

/* "gpu 0 job x rank 1" from the labels that apply. */
static void where(char *out, size_t n, const json_t *labels)
{
    static const char *const keys[] = {"gpu", "job", "rank", "pid"};
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof keys / sizeof keys[0] && len < n; i++) {
        char v[64];
        text(v, sizeof v, labels, keys[i]);
        if (v[0])
            len += (size_t)snprintf(out + len, n - len, "%s%s %s", len ? " " : "", keys[i], v);
    }
}

int gp_top_alerts_parse(const char *json, size_t len, struct gp_top_alerts *out, char *err,
                        size_t errlen)
{
    memset(out, 0, sizeof *out);
    json_error_t je;
    json_t *root = json_loadb(json, len, 0, &je);
    if (!root)
        return gp_seterr(err, errlen, GP_EPARSE, "not JSON: %s", je.text);
    int rc = GP_OK;
    const json_t *st = json_object_get(root, "status"), *data = json_object_get(root, "data");
    if (!json_is_string(st) || strcmp(json_string_value(st), "success")) {
        char e[200];
        text(e, sizeof e, root, "error");
        rc = gp_seterr(err, errlen, GP_EPARSE, "%s", e[0] ? e : "not an answer of the alerts API");
        goto done;
    }
    if (!json_is_array(data)) {
        rc = gp_seterr(err, errlen, GP_EPARSE, "'data' is not a list of alerts");
        goto done;
    }
    size_t i;
    json_t *a;
    json_array_foreach(data, i, a) {
        if (!json_is_object(a)) {
            rc = gp_seterr(err, errlen, GP_EPARSE, "alert %zu is not an object", i);
            goto done;
        }
        struct gp_top_alert tmp, *d = out->n < GP_TOP_MAX_ALERTS ? &out->a[out->n] : &tmp;
        text(d->severity, sizeof d->severity, a, "severity");
        text(d->state, sizeof d->state, a, "state");
        text(d->kind, sizeof d->kind, a, "kind");
        text(d->summary, sizeof d->summary, a, "summary");
        const json_t *labels = json_object_get(a, "labels");
        if (json_is_object(labels))
            where(d->where, sizeof d->where, labels);
        else
            d->where[0] = '\0';
        out->firing += !strcmp(d->state, "firing");
        out->total++;
        if (out->n < GP_TOP_MAX_ALERTS)
            out->n++;
    }
done:
    json_decref(root);
    return rc;
}

int gp_top_alerts_fetch(const char *server, const char *node, const char *token,
                        struct gp_top_alerts *out, char *err, size_t errlen)
{
    char *qnode = gp_httpc_escape(node);
    size_t sl = strlen(server);
    while (sl && server[sl - 1] == '/')
        sl--;
    char url[1024];
    struct gp_buf body;
    gp_buf_init(&body, MAX_ANSWER);
    int rc = GP_OK;
    long status = 0;
    if (!qnode || (size_t)snprintf(url, sizeof url, "%.*s/api/v1/alerts?node=%s", (int)sl, server, qnode) >=
                      sizeof url) {
        rc = gp_seterr(err, errlen, GP_ECONFIG, "server URL too long");
        goto done;
    }
    if ((rc = gp_top_http_get("alerts", url, token, &body, &status, err, errlen)))
        goto done;
    char detail[400];
    rc = gp_top_alerts_parse(body.data ? body.data : "", body.len, out, detail, sizeof detail);
    if (status != 200)
        rc = gp_seterr(err, errlen, GP_ENET, "alerts: the server answered %ld%s%s", status,
                       rc && body.len ? ": " : "", rc && body.len ? detail : "");
    else if (rc)
        gp_seterr(err, errlen, rc, "alerts: %s", detail);
done:
    free(qnode);
    gp_buf_free(&body);
    return rc;
}

struct gp_top_poller {
    char *server, *node, *token;
    int64_t every_ms;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stopping;
    bool valid;
    uint64_t gen;             /* fetches ended */
    struct gp_top_alerts alerts;
    char err[200];
};

static void *poll_loop(void *arg)
{
    struct gp_top_poller *p = arg;
    struct gp_top_alerts *a = malloc(sizeof *a);
    pthread_mutex_lock(&p->mu);
    while (!p->stopping && a) {
        pthread_mutex_unlock(&p->mu);
        char err[200] = "";
        int rc = gp_top_alerts_fetch(p->server, p->node, p->token, a, err, sizeof err);
        pthread_mutex_lock(&p->mu);
        if (rc == GP_OK) {
            p->alerts = *a;
            p->valid = true;
            p->err[0] = '\0';
        } else {
            snprintf(p->err, sizeof p->err, "%s", err); /* the last good answer stays shown */
        }
        p->gen++;
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += p->every_ms / 1000;
        until.tv_nsec += (p->every_ms % 1000) * 1000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        while (!p->stopping && pthread_cond_timedwait(&p->cv, &p->mu, &until) != ETIMEDOUT)
            ;
    }
    if (!a)
        snprintf(p->err, sizeof p->err, "alerts: out of memory");
    pthread_mutex_unlock(&p->mu);
    free(a);
    return NULL;
}

static void poller_free(struct gp_top_poller *p)
{
    if (p->token)
        memset(p->token, 0, strlen(p->token));
    free(p->server);
    free(p->node);
    free(p->token);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
}

int gp_top_poller_start(struct gp_top_poller **out, const char *server, const char *node,
                        const char *token, int64_t every_ms, char *err, size_t errlen)
{
    struct gp_top_poller *p = calloc(1, sizeof *p);
    if (!p)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    p->server = strdup(server);
    p->node = strdup(node);
    p->token = strdup(token ? token : "");
    p->every_ms = every_ms;
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (!p->server || !p->node || !p->token) {
        poller_free(p);
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    }
    if (pthread_create(&p->thread, NULL, poll_loop, p)) {
        poller_free(p);
        return gp_seterr(err, errlen, GP_EINTERNAL, "cannot start the alerts thread");
    }
    *out = p;
    return GP_OK;
}

bool gp_top_poller_get(struct gp_top_poller *p, struct gp_top_view *v, uint64_t *gen)
{
    pthread_mutex_lock(&p->mu);
    bool news = p->gen != *gen;
    if (news) {
        v->alerts_valid = p->valid;
        if (p->valid)
            v->alerts = p->alerts;
        snprintf(v->alerts_err, sizeof v->alerts_err, "%s", p->err);
        *gen = p->gen;
    }
    pthread_mutex_unlock(&p->mu);
    return news;
}

void gp_top_poller_stop(struct gp_top_poller *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    poller_free(p);
}
