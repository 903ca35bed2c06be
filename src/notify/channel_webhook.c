/*
 * channel_webhook.c - gp_channel_webhook: POSTs Alertmanager's webhook
 * payload, version 4, so a receiver written for Alertmanager takes
 * gpulse's notifications unchanged (docs/notify.md, "Payloads").
 *
 * The payload, as Alertmanager's notify/webhook sends it:
 *   {"receiver", "status", "alerts": [{"status", "labels",
 *    "annotations", "startsAt", "endsAt", "generatorURL",
 *    "fingerprint"}], "groupLabels", "commonLabels",
 *    "commonAnnotations", "externalURL", "version": "4", "groupKey",
 *    "truncatedAlerts"}
 * A firing alert's endsAt is Go's zero time "0001-01-01T00:00:00Z", as
 * Alertmanager writes it; common labels and annotations are those every
 * alert has with the same value. At most GP_WEBHOOK_MAX_ALERTS alerts go
 * into one payload; the rest are counted in truncatedAlerts.
 * Headers: Content-Type application/json, X-Gpulse-Notification-Id, and
 * Authorization: Bearer when a token is configured.
 */
#include "notify/channel.h"

#include "lib/err.h"

#include <stdlib.h>
#include <string.h>

#define ZERO_TIME "0001-01-01T00:00:00Z"

/* The pairs of o that every later alert object has with the same value (a new object). */
static json_t *common_of(const json_t *alerts, const char *field)
{
    size_t n = json_array_size(alerts);
    json_t *common = n ? json_deep_copy(json_object_get(json_array_get(alerts, 0), field))
                       : json_object();
    if (!common)
        return NULL;
    for (size_t i = 1; i < n; i++) {
        const json_t *o = json_object_get(json_array_get(alerts, i), field);
        const char *k;
        json_t *v, *tmp;
        json_object_foreach_safe(common, tmp, k, v)
        {
            const json_t *w = json_object_get(o, k);
            if (!w || !json_equal(v, w))
                json_object_del(common, k);
        }
    }
    return common;
}

static json_t *alert_json(const struct gp_notice *n, const struct gp_notice_alert *a)
{
    json_t *o = json_object();
    json_t *labels = gp_chan_am_labels(a), *ann = gp_chan_am_annotations(a);
    char starts[40], ends[40], gen[GP_NOTIFY_URL_LEN + 256];
    gp_chan_rfc3339(a->starts_ms, starts, sizeof starts);
    if (a->ends_ms > 0)
        gp_chan_rfc3339(a->ends_ms, ends, sizeof ends);
    else
        strcpy(ends, ZERO_TIME);
    gp_chan_link(n->external_url, "/api/v1/alerts/", a->id, gen, sizeof gen);
    if (!o || !labels || !ann)
        goto nomem;
    int bad = 0;
    bad |= json_object_set_new(o, "status", gp_chan_jstr(a->status));
    bad |= json_object_set_new(o, "labels", labels);
    labels = NULL;
    bad |= json_object_set_new(o, "annotations", ann);
    ann = NULL;
    bad |= json_object_set_new(o, "startsAt", json_string(starts));
    bad |= json_object_set_new(o, "endsAt", json_string(ends));
    bad |= json_object_set_new(o, "generatorURL", gp_chan_jstr(gen));
    bad |= json_object_set_new(o, "fingerprint", gp_chan_jstr(a->id));
    if (bad)
        goto nomem;
    return o;
nomem:
    json_decref(o);
    json_decref(labels);
    json_decref(ann);
    return NULL;
}

char *gp_webhook_render(const struct gp_notice *n)
{
    json_t *root = json_object(), *alerts = json_array(), *group = json_object();
    char *text = NULL;
    if (!root || !alerts || !group)
        goto out;
    size_t take = n->nalerts < GP_WEBHOOK_MAX_ALERTS ? n->nalerts : GP_WEBHOOK_MAX_ALERTS;
    for (size_t i = 0; i < take; i++) {
        json_t *a = alert_json(n, &n->alerts[i]);
        if (!a || json_array_append_new(alerts, a))
            goto out;
    }
    for (size_t i = 0; i < 8 && n->group_labels[i][0]; i++)
        if (json_object_set_new(group, n->group_labels[i][0], gp_chan_jstr(n->group_labels[i][1])))
            goto out;
    json_t *cl = common_of(alerts, "labels"), *ca = common_of(alerts, "annotations");
    int bad = !cl || !ca;
    bad |= json_object_set_new(root, "receiver", gp_chan_jstr(n->receiver));
    bad |= json_object_set_new(root, "status", gp_chan_jstr(n->status));
    bad |= json_object_set_new(root, "alerts", alerts);
    alerts = NULL;
    bad |= json_object_set_new(root, "groupLabels", group);
    group = NULL;
    bad |= json_object_set_new(root, "commonLabels", cl);
    bad |= json_object_set_new(root, "commonAnnotations", ca);
    bad |= json_object_set_new(root, "externalURL", gp_chan_jstr(n->external_url));
    bad |= json_object_set_new(root, "version", json_string("4"));
    bad |= json_object_set_new(root, "groupKey", gp_chan_jstr(n->group_key));
    bad |= json_object_set_new(root, "truncatedAlerts", json_integer((json_int_t)(n->nalerts - take)));
    if (!bad)
        text = json_dumps(root, JSON_COMPACT);
out:
    json_decref(root);
    json_decref(alerts);
    json_decref(group);
    return text;
}

static int webhook_send(const struct gp_receiver *r, const struct gp_notice *n,
                        struct gp_send_outcome *out)
{
    return gp_chan_post(r, n, r->url, true, gp_webhook_render(n), out);
}

const struct gp_channel_ops gp_channel_webhook = {
    .type = GP_RT_WEBHOOK,
    .send = webhook_send,
};
