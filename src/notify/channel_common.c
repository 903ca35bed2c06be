/*
 * channel_common.c - see channel.h: the helpers the HTTP channels share.
 *
 * Strings from alerts are untrusted text: they may hold any bytes. They
 * are sanitised to valid UTF-8 here (jansson then escapes quotes and
 * control characters), so a hostile summary can neither break the JSON
 * nor make jansson drop a field.
 */
#include "notify/channel.h"

#include "notify/http_post.h"

#include "lib/err.h"
#include "net/httpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

size_t gp_chan_utf8_next(const char *s, uint32_t *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    unsigned char c = u[0];
    size_t n;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if ((c & 0xe0) == 0xc0) {
        n = 2, v = c & 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        n = 3, v = c & 0x0f, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
        n = 4, v = c & 0x07, min = 0x10000;
    } else {
        *cp = 0xfffd;
        return 1;
    }
    for (size_t i = 1; i < n; i++) {
        if ((u[i] & 0xc0) != 0x80) { /* also stops at the NUL */
            *cp = 0xfffd;
            return 1;
        }
        v = (v << 6) | (u[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) {
        *cp = 0xfffd;
        return 1;
    }
    *cp = v;
    return n;
}

json_t *gp_chan_jstr(const char *s)
{
    if (!s)
        s = "";
    size_t len = strlen(s);
    /* Each invalid byte becomes 3 bytes at most. */
    char *t = malloc(len * 3 + 1);
    if (!t)
        return NULL;
    size_t k = 0;
    while (*s) {
        uint32_t cp;
        size_t n = gp_chan_utf8_next(s, &cp);
        if (cp == 0xfffd && n == 1) {
            memcpy(t + k, "\xef\xbf\xbd", 3);
            k += 3;
        } else {
            memcpy(t + k, s, n);
            k += n;
        }
        s += n;
    }
    t[k] = '\0';
    json_t *j = json_stringn(t, k);
    free(t);
    return j;
}

int gp_chan_set_nonempty(json_t *o, const char *key, const char *v)
{
    if (!v || !*v)
        return 0;
    json_t *j = gp_chan_jstr(v);
    return j ? json_object_set_new(o, key, j) : -1;
}

json_t *gp_chan_am_labels(const struct gp_notice_alert *a)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    const char *kv[][2] = {{"alertname", a->kind}, {"severity", a->severity}, {"job", a->job},
                           {"rank", a->rank},      {"node", a->node},         {"gpu", a->gpu}};
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        if (gp_chan_set_nonempty(o, kv[i][0], kv[i][1])) {
            json_decref(o);
            return NULL;
        }
    return o;
}

json_t *gp_chan_am_annotations(const struct gp_notice_alert *a)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    if (gp_chan_set_nonempty(o, "summary", a->summary) ||
        gp_chan_set_nonempty(o, "description", a->evidence) ||
        gp_chan_set_nonempty(o, "runbook_url", a->runbook)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

void gp_chan_rfc3339(int64_t ms, char *out, size_t outlen)
{
    time_t s = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    int frac = (int)(ms - (int64_t)s * 1000);
    struct tm tm;
    if (!gmtime_r(&s, &tm)) {
        snprintf(out, outlen, "0001-01-01T00:00:00Z");
        return;
    }
    char date[24];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, outlen, "%s.%03dZ", date, frac);
}

void gp_chan_link(const char *external_url, const char *prefix, const char *tail, char *out,
                  size_t outlen)
{
    out[0] = '\0';
    if (!external_url || !*external_url || !tail || !*tail)
        return;
    size_t blen = strlen(external_url);
    while (blen > 0 && external_url[blen - 1] == '/')
        blen--;
    char *esc = gp_httpc_escape(tail);
    if (!esc)
        return;
    int w = snprintf(out, outlen, "%.*s%s%s", (int)blen, external_url, prefix, esc);
    if (w < 0 || (size_t)w >= outlen)
        out[0] = '\0';
    free(esc);
}

int gp_chan_post(const struct gp_receiver *r, const struct gp_notice *n, const char *url, bool bearer,
                 char *body, struct gp_send_outcome *out)
{
    memset(out, 0, sizeof *out);
    if (!body) {
        out->result = GP_SEND_RETRY;
        snprintf(out->detail, sizeof out->detail, "out of memory rendering the notification");
        return GP_ENOMEM;
    }
    struct gp_http_post p = {
        .url = url,
        .bearer = bearer ? r->bearer_token : NULL,
        .notice_id = n->id,
        .body = body,
        .len = strlen(body),
        .timeout_ms = r->timeout_ms,
    };
    int rc = gp_http_post_send(&p, out);
    free(body);
    return rc;
}
