/*
 * notify_api.c - the server's notify part (docs/notify.md): the config
 * file's `notify:` section (loaded with the rules, before anything
 * starts, so a bad section fails the start with its line), the outbox
 * with the real channel table (gp_channel_of of every type) and the
 * router registered as an alert listener (opened by alerts_api.c between
 * the alerts and the engine, so no transition is missed), their end
 * (router first, then the outbox, which waits for a send in flight;
 * both before the store closes), GET /api/v1/notifications and the
 * outbox's /metrics families.
 */
#include "server_int.h"

#include "lib/err.h"
#include "lib/log.h"
#include "lib/metrics.h"
#include "notify/config.h"
#include "notify/outbox.h"
#include "notify/router.h"

#include <stdlib.h>
#include <string.h>

#define NOTIFICATIONS_LIMIT_DEFAULT 100
#define NOTIFICATIONS_LIMIT_MAX 1000

struct gp_srv_notify {
    struct gp_notify_config cfg;
    const struct gp_channel_ops *channels[GP_RT__COUNT];
    struct gp_outbox *outbox;
    struct gp_router *router;
};

const struct gp_receiver *gp_srv_notify_receiver(struct gp_server *s, const char *name, size_t len)
{
    for (size_t i = 0; s->notify && i < s->notify->cfg.nrecv; i++) {
        const struct gp_receiver *r = &s->notify->cfg.recv[i];
        if (strlen(r->name) == len && !memcmp(r->name, name, len))
            return r;
    }
    return NULL;
}

const char *gp_srv_notify_external_url(struct gp_server *s)
{
    return s->notify ? s->notify->cfg.external_url : "";
}

int gp_srv_notify_load(struct gp_server *s, char *err, size_t errlen)
{
    s->notify = calloc(1, sizeof *s->notify);
    if (!s->notify)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    gp_notify_config_init(&s->notify->cfg);
    for (int t = 0; t < GP_RT__COUNT; t++)
        s->notify->channels[t] = gp_channel_of((enum gp_receiver_type)t);
    if (!s->cfg.config_file[0])
        return GP_OK;
    char detail[512];
    int rc = gp_notify_config_load_file(s->cfg.config_file, &s->notify->cfg, detail, sizeof detail);
    if (rc)
        return gp_seterr(err, errlen, rc == GP_ENOMEM ? rc : GP_ECONFIG, "%s: notify: %s",
                         s->cfg.config_file, detail);
    return GP_OK;
}

int gp_srv_notify_open(struct gp_server *s, gp_alert_listener *fn, void **ctx, char *err,
                       size_t errlen)
{
    struct gp_srv_notify *n = s->notify;
    struct gp_outbox_options oo = {.dir = s->cfg.data_dir, .cfg = &n->cfg, .channels = n->channels};
    int rc = gp_outbox_open(&n->outbox, &oo, err, errlen);
    if (rc)
        return rc;
    struct gp_router_options ro = {.dir = s->cfg.data_dir, .cfg = &n->cfg, .outbox = n->outbox};
    if ((rc = gp_router_open(&n->router, &ro, err, errlen)))
        return rc;
    if ((rc = gp_outbox_start(n->outbox)) || (rc = gp_router_start(n->router)))
        return gp_seterr(err, errlen, rc, "cannot start the notification threads");
    *fn = gp_router_listener;
    *ctx = n->router;
    struct gp_outbox_stats os;
    gp_outbox_stats(n->outbox, &os);
    gp_log(GP_LOG_INFO, "server", "notifications ready", "receivers=%zu routes=%zu queued=%llu",
           n->cfg.nrecv, n->cfg.nroutes, (unsigned long long)os.queued);
    return GP_OK;
}

void gp_srv_notify_stop(struct gp_server *s)
{
    if (!s->notify)
        return;
    gp_router_close(s->notify->router); /* no notice is written after this */
    s->notify->router = NULL;
    gp_outbox_close(s->notify->outbox); /* waits for a send in flight */
    s->notify->outbox = NULL;
    gp_notify_config_free(&s->notify->cfg);
    free(s->notify);
    s->notify = NULL;
}

void gp_srv_walk_notify_metrics(struct gp_server *s, struct gp_metric_sink *b)
{
    if (!s->notify)
        return;
    if (s->notify->outbox)
        gp_outbox_walk_metrics(s->notify->outbox, b);
    if (!s->notify->router)
        return;
    struct gp_router_stats st;
    gp_router_stats(s->notify->router, &st);
    static const enum gp_metric fam[] = {
        GP_M_NOTIFY_EVENTS,   GP_M_NOTIFY_DROPPED, GP_M_NOTIFY_NOTICES,
        GP_M_NOTIFY_DB_ERRORS, GP_M_NOTIFY_GROUPS, GP_M_NOTIFY_GROUP_ALERTS,
    };
    const uint64_t v[] = {st.events, st.dropped, st.notices, st.db_errors, st.groups, st.alerts};
    for (size_t i = 0; i < sizeof fam / sizeof fam[0]; i++)
        gp_metric_one(b, fam[i], (double)v[i]);
}

void gp_srv_handle_notifications(struct gp_server *s, const struct gp_http_request *req,
                                 struct gp_http_response *resp)
{
    if (!s->notify || !s->notify->outbox) {
        gp_srv_bad(resp, 503, "unavailable", "the notifications are not open");
        return;
    }
    const char *state = gp_http_query(req, "state");
    if (!state || !*state)
        state = "all";
    if (strcmp(state, "queued") && strcmp(state, "done") && strcmp(state, "dead") &&
        strcmp(state, "all")) {
        gp_srv_bad(resp, 400, "bad_data",
                   "invalid parameter 'state': '%.40s' (use queued, done, dead or all)", state);
        return;
    }
    const char *recv = gp_http_query(req, "receiver");
    size_t limit = NOTIFICATIONS_LIMIT_DEFAULT;
    if (!gp_srv_query_limit(req, resp, NOTIFICATIONS_LIMIT_MAX, &limit))
        return;
    int rc = gp_outbox_list_json(s->notify->outbox, state, recv && *recv ? recv : NULL, limit,
                                 &resp->body);
    if (rc == GP_ETOOBIG)
        gp_srv_bad(resp, 400, "bad_data", "the answer is larger than %zu bytes: lower 'limit'",
                   resp->body.max);
    else if (rc == GP_ENOMEM)
        gp_srv_bad(resp, 503, "unavailable", "out of memory listing notifications");
    else if (rc)
        gp_srv_bad(resp, 500, "internal", "cannot read the notifications from state.db");
}
