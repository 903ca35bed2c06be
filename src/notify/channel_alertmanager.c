/*
 * channel_alertmanager.c - gp_channel_alertmanager: forwards alerts to a
 * Prometheus Alertmanager through its API, POST {url}/api/v2/alerts
 * (docs/notify.md, "Payloads").
 *
 * The body is a list of postable alerts, as Prometheus sends them:
 *   [{"labels": {"alertname": kind, ...}, "annotations": {...},
 *     "startsAt", "endsAt" (only on resolution), "generatorURL"}]
 * Alertmanager keeps a firing alert until its resolve_timeout unless it
 * is re-sent, which the router does every group_interval; a resolution
 * carries endsAt, after which Alertmanager drops it from the active
 * alerts. Alertmanager groups itself, so every alert of the notice is
 * sent (no cap). generatorURL is left out when no external_url is set:
 * Alertmanager validates it as a URI.
 */
#include "notify/channel.h"

#include "lib/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *postable(const struct gp_notice *n, const struct gp_notice_alert *a)
{
    json_t *o = json_object(), *labels = gp_chan_am_labels(a), *ann = gp_chan_am_annotations(a);
    char t[40], gen[GP_NOTIFY_URL_LEN + 256];
    if (!o || !labels || !ann) {
        json_decref(o);
        json_decref(labels);
        json_decref(ann);
        return NULL;
    }
    int bad = json_object_set_new(o, "labels", labels);
    bad |= json_object_set_new(o, "annotations", ann);
    if (a->starts_ms > 0) {
        gp_chan_rfc3339(a->starts_ms, t, sizeof t);
        bad |= json_object_set_new(o, "startsAt", json_string(t));
    }
    if (a->ends_ms > 0) {
        gp_chan_rfc3339(a->ends_ms, t, sizeof t);
        bad |= json_object_set_new(o, "endsAt", json_string(t));
    }
    gp_chan_link(n->external_url, "/api/v1/alerts/", a->id, gen, sizeof gen);
    bad |= gp_chan_set_nonempty(o, "generatorURL", gen);
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

char *gp_alertmanager_render(const struct gp_notice *n)
{
    json_t *list = json_array();
    char *text = NULL;
    if (!list)
        return NULL;
    for (size_t i = 0; i < n->nalerts; i++) {
        json_t *a = postable(n, &n->alerts[i]);
        if (!a || json_array_append_new(list, a))
            goto out;
    }
    text = json_dumps(list, JSON_COMPACT);
out:
    json_decref(list);
    return text;
}

static int am_send(const struct gp_receiver *r, const struct gp_notice *n, struct gp_send_outcome *out)
{
    char url[GP_NOTIFY_URL_LEN + 32];
    size_t blen = strnlen(r->url, sizeof r->url);
    while (blen > 0 && r->url[blen - 1] == '/')
        blen--;
    snprintf(url, sizeof url, "%.*s/api/v2/alerts", (int)blen, r->url);
    int rc = gp_chan_post(r, n, url, true, gp_alertmanager_render(n), out);
    memset(url, 0, sizeof url); /* the base URL may carry credentials */
    return rc;
}

const struct gp_channel_ops gp_channel_alertmanager = {
    .type = GP_RT_ALERTMANAGER,
    .send = am_send,
};
