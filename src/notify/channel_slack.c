/*
 * channel_slack.c - gp_channel_slack: a Slack incoming-webhook message
 * (docs/notify.md, "Payloads").
 *
 * The message is {"text": fallback, "blocks": [...]}:
 *   - text: the plain-text fallback that notifications and old clients
 *     show: the status, the count and the summaries, one per line;
 *   - a header block (plain_text): "[FIRING] 1 firing, 1 resolved" and
 *     the group's label values;
 *   - per alert (at most GP_SLACK_MAX_ALERTS, then an "and N more"
 *     section): a section (mrkdwn) with the status, kind and summary, the
 *     runbook, and a link to the job's dashboard page
 *     (external_url/jobs/<job>) when external_url is set; then a context
 *     block with its labels (job, rank, node, GPU, severity) and one with
 *     its evidence.
 * Slack's limits are kept: 150 for a header, 3000 for a section's text,
 * 50 blocks (20 alerts take 40, plus header and "more"). Texts are cut
 * on a UTF-8 boundary and end with "…" when cut; the limits are counted
 * in bytes, stricter than Slack's characters. mrkdwn text escapes &, <
 * and > as Slack asks, and a cut never splits such an escape.
 */
#include "notify/channel.h"
#include "notify/mime.h"

#include "lib/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ELLIPSIS "\xe2\x80\xa6"

/* A text of at most max bytes (max <= GP_SLACK_SECTION_MAX + 1). */
struct stext {
    char s[GP_SLACK_SECTION_MAX + 8];
    size_t len, max;
    bool cut;
};

static void st_init(struct stext *t, size_t max)
{
    t->len = 0;
    t->max = max < GP_SLACK_SECTION_MAX ? max : GP_SLACK_SECTION_MAX;
    t->cut = false;
    t->s[0] = '\0';
}

/* Appends one unit (a code point or an escape) when it fits with room for the ellipsis. */
static void st_unit(struct stext *t, const char *u, size_t n)
{
    if (t->cut)
        return;
    if (t->len + n + (sizeof ELLIPSIS - 1) > t->max) {
        t->cut = true;
        memcpy(t->s + t->len, ELLIPSIS, sizeof ELLIPSIS);
        t->len += sizeof ELLIPSIS - 1;
        return;
    }
    memcpy(t->s + t->len, u, n);
    t->len += n;
    t->s[t->len] = '\0';
}

/* Appends s, sanitised to UTF-8; with mrkdwn, &, < and > escaped. */
static void st_put(struct stext *t, const char *s, bool mrkdwn)
{
    if (!s)
        return;
    while (*s && !t->cut) {
        uint32_t cp;
        size_t n = gp_chan_utf8_next(s, &cp);
        if (mrkdwn && cp == '&')
            st_unit(t, "&amp;", 5);
        else if (mrkdwn && cp == '<')
            st_unit(t, "&lt;", 4);
        else if (mrkdwn && cp == '>')
            st_unit(t, "&gt;", 4);
        else if (cp == 0xfffd && n == 1)
            st_unit(t, "\xef\xbf\xbd", 3);
        else
            st_unit(t, s, n);
        s += n;
    }
}

/* Appends trusted markup (ASCII written here). */
static void st_raw(struct stext *t, const char *s)
{
    st_unit(t, s, strlen(s));
}

static json_t *text_obj(const char *type, const struct stext *t)
{
    return json_pack("{s:s, s:s%}", "type", type, "text", t->s, t->len);
}

static const char *alert_status(const struct gp_notice_alert *a)
{
    return strcmp(a->status, "resolved") == 0 ? "RESOLVED" : "FIRING";
}

static void counts(const struct gp_notice *n, size_t *firing, size_t *resolved)
{
    *firing = *resolved = 0;
    for (size_t i = 0; i < n->nalerts; i++) {
        if (strcmp(n->alerts[i].status, "resolved") == 0)
            (*resolved)++;
        else
            (*firing)++;
    }
}

static void header_text(const struct gp_notice *n, const char *title, struct stext *t)
{
    if (title && title[0]) { /* the receiver's template (mime.h's placeholders) */
        char c[GP_SLACK_HEADER_MAX * 2];
        gp_mime_subject(n, title, c, sizeof c);
        st_put(t, c, false);
        return;
    }
    size_t firing, resolved;
    counts(n, &firing, &resolved);
    char c[96];
    snprintf(c, sizeof c, "%s[%s] %zu firing, %zu resolved", n->test ? "[TEST] " : "",
             strcmp(n->status, "resolved") == 0 ? "RESOLVED" : "FIRING", firing, resolved);
    st_raw(t, c);
    for (size_t i = 0; i < 8 && n->group_labels[i][0]; i++) {
        st_raw(t, i == 0 ? ": " : ", ");
        st_put(t, n->group_labels[i][0], false);
        st_raw(t, "=");
        st_put(t, n->group_labels[i][1], false);
    }
}

static void section_text(const struct gp_notice *n, const struct gp_notice_alert *a, struct stext *t)
{
    st_raw(t, "*[");
    st_raw(t, alert_status(a));
    st_raw(t, "] ");
    st_put(t, a->kind, true);
    st_raw(t, "*\n");
    st_put(t, a->summary[0] ? a->summary : a->kind, true);
    if (a->runbook[0]) {
        st_raw(t, "\n*Runbook:* ");
        st_put(t, a->runbook, true);
    }
    char link[GP_NOTIFY_URL_LEN + 512];
    gp_chan_link(n->external_url, "/jobs/", a->job, link, sizeof link);
    if (link[0]) {
        /* The job is URL-encoded (no '|' or '>'); the base URL is escaped for mrkdwn. */
        st_raw(t, "\n<");
        st_put(t, link, true);
        st_raw(t, "|Open job ");
        st_put(t, a->job, true);
        st_raw(t, ">");
    }
}

static void labels_text(const struct gp_notice_alert *a, struct stext *t)
{
    const char *kv[][2] = {{"job", a->job},   {"rank", a->rank},         {"node", a->node},
                           {"GPU", a->gpu},   {"severity", a->severity}};
    bool first = true;
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) {
        if (!kv[i][1][0])
            continue;
        st_raw(t, first ? "" : " · ");
        st_raw(t, kv[i][0]);
        st_raw(t, ": *");
        st_put(t, kv[i][1], true);
        st_raw(t, "*");
        first = false;
    }
}

static int push(json_t *blocks, json_t *b)
{
    return b ? json_array_append_new(blocks, b) : -1;
}

static int alert_blocks(const struct gp_notice *n, const struct gp_notice_alert *a, json_t *blocks)
{
    struct stext *tp = malloc(sizeof *tp); /* 3 kB: kept off the sender thread's stack */
    if (!tp)
        return -1;
    st_init(tp, GP_SLACK_SECTION_MAX);
    section_text(n, a, tp);
    int bad = push(blocks, json_pack("{s:s, s:o}", "type", "section", "text", text_obj("mrkdwn", tp)));
    json_t *elems = json_array();
    st_init(tp, GP_SLACK_CONTEXT_MAX);
    labels_text(a, tp);
    if (!elems || (tp->len && push(elems, text_obj("mrkdwn", tp))))
        bad = -1;
    if (a->evidence[0] && !bad) {
        st_init(tp, GP_SLACK_CONTEXT_MAX);
        st_put(tp, a->evidence, true);
        bad |= push(elems, text_obj("mrkdwn", tp));
    }
    if (!bad && json_array_size(elems))
        bad |= push(blocks, json_pack("{s:s, s:O}", "type", "context", "elements", elems));
    json_decref(elems);
    free(tp);
    return bad ? -1 : 0;
}

static void fallback_text(const struct gp_notice *n, const char *title, struct stext *t)
{
    size_t firing, resolved;
    counts(n, &firing, &resolved);
    char c[GP_SLACK_HEADER_MAX * 2];
    if (title && title[0]) {
        gp_mime_subject(n, title, c, sizeof c);
        st_put(t, c, true);
    } else {
        snprintf(c, sizeof c, "%s[%s] %zu alert%s (%zu firing, %zu resolved)", n->test ? "[TEST] " : "",
                 strcmp(n->status, "resolved") == 0 ? "RESOLVED" : "FIRING", n->nalerts,
                 n->nalerts == 1 ? "" : "s", firing, resolved);
        st_raw(t, c);
    }
    for (size_t i = 0; i < n->nalerts && !t->cut; i++) {
        const struct gp_notice_alert *a = &n->alerts[i];
        st_raw(t, "\n- ");
        st_put(t, a->summary[0] ? a->summary : a->kind, true);
    }
}

char *gp_slack_render(const struct gp_notice *n, const char *title)
{
    struct stext *t = malloc(sizeof *t);
    json_t *root = NULL, *blocks = json_array();
    char *out = NULL;
    if (!t || !blocks)
        goto done;
    st_init(t, GP_SLACK_HEADER_MAX);
    header_text(n, title, t);
    json_t *h = text_obj("plain_text", t);
    if (h && json_object_set_new(h, "emoji", json_false())) {
        json_decref(h);
        goto done;
    }
    if (push(blocks, json_pack("{s:s, s:o}", "type", "header", "text", h)))
        goto done;
    size_t take = n->nalerts < GP_SLACK_MAX_ALERTS ? n->nalerts : GP_SLACK_MAX_ALERTS;
    for (size_t i = 0; i < take; i++)
        if (alert_blocks(n, &n->alerts[i], blocks))
            goto done;
    if (n->nalerts > take) {
        char more[64];
        snprintf(more, sizeof more, "_and %zu more_", n->nalerts - take);
        st_init(t, GP_SLACK_SECTION_MAX);
        st_raw(t, more);
        if (push(blocks, json_pack("{s:s, s:o}", "type", "section", "text", text_obj("mrkdwn", t))))
            goto done;
    }
    st_init(t, GP_SLACK_TEXT_MAX);
    fallback_text(n, title, t);
    root = json_pack("{s:s%, s:O}", "text", t->s, t->len, "blocks", blocks);
    if (root)
        out = json_dumps(root, JSON_COMPACT);
done:
    json_decref(root);
    json_decref(blocks);
    free(t);
    return out;
}

static int slack_send(const struct gp_receiver *r, const struct gp_notice *n, struct gp_send_outcome *out)
{
    /* Slack's webhooks take no bearer token: the URL is the credential. */
    return gp_chan_post(r, n, r->url, false, gp_slack_render(n, r->subject_template), out);
}

const struct gp_channel_ops gp_channel_slack = {
    .type = GP_RT_SLACK,
    .send = slack_send,
};
