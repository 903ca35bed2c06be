/*
 * channel.h - internals shared by the HTTP channels (channel_slack.c,
 * channel_webhook.c, channel_alertmanager.c) and their tests.
 *
 * Each channel is split in two: a pure renderer (notice -> JSON text,
 * testable without a network) and a send that posts the rendering
 * through http_post.c. The helpers here are the pieces the renderers
 * share: UTF-8 sanitising (jansson refuses invalid UTF-8, and alert text
 * comes from rules and detectors), Alertmanager's labels and annotations
 * of an alert, RFC 3339 times, and the dashboard links.
 */
#ifndef GP_NOTIFY_CHANNEL_H
#define GP_NOTIFY_CHANNEL_H

#include "notify/notify.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Slack's limits (bytes here, which is stricter than Slack's characters). */
#define GP_SLACK_HEADER_MAX 150
#define GP_SLACK_SECTION_MAX 3000
#define GP_SLACK_CONTEXT_MAX 2000
#define GP_SLACK_TEXT_MAX 3000
#define GP_SLACK_MAX_ALERTS 20
/* The webhook's cap on alerts in one payload; the rest count in truncatedAlerts. */
#define GP_WEBHOOK_MAX_ALERTS 500

/*
 * Decodes the UTF-8 sequence at s (not at its NUL): sets *cp, returns its
 * length. An invalid, overlong or truncated sequence reads as one byte of
 * U+FFFD.
 */
size_t gp_chan_utf8_next(const char *s, uint32_t *cp);

/* A JSON string of s with invalid UTF-8 replaced by U+FFFD; NULL s is "". NULL when out of memory. */
json_t *gp_chan_jstr(const char *s);

/* Sets key to gp_chan_jstr(v) in o when v is non-empty; returns -1 when out of memory. */
int gp_chan_set_nonempty(json_t *o, const char *key, const char *v);

/* Alertmanager's labels of a: alertname (kind), severity, job, rank, node, gpu; only non-empty. */
json_t *gp_chan_am_labels(const struct gp_notice_alert *a);
/* Its annotations: summary, description (evidence), runbook_url; only non-empty. */
json_t *gp_chan_am_annotations(const struct gp_notice_alert *a);

/* ms since the epoch as RFC 3339 UTC with milliseconds ("2024-05-01T12:00:00.123Z"); out >= 32 bytes. */
void gp_chan_rfc3339(int64_t ms, char *out, size_t outlen);

/*
 * external_url + prefix + the URL-encoded tail ("" when external_url or
 * tail is empty, or when it does not fit in outlen). A trailing '/' of
 * external_url is dropped.
 */
void gp_chan_link(const char *external_url, const char *prefix, const char *tail, char *out,
                  size_t outlen);

/* The renderers: a NUL-terminated JSON text the caller frees with free(); NULL when out of memory. */
char *gp_slack_render(const struct gp_notice *n, const char *title); /* title: "" default */
char *gp_webhook_render(const struct gp_notice *n);
char *gp_alertmanager_render(const struct gp_notice *n);

/*
 * Posts body (a rendered payload; freed here; NULL: rendering ran out of
 * memory, a RETRY) to url through http_post.c with r's timeout, bearer
 * token (when bearer) and n->id; the shared part of the three sends.
 */
int gp_chan_post(const struct gp_receiver *r, const struct gp_notice *n, const char *url, bool bearer,
                 char *body, struct gp_send_outcome *out);

#endif
