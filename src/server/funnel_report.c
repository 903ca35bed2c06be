/*
 * funnel_report.c - the weekly fleet funnel e-mail (docs/api.md "The
 * weekly report"): at funnel_report_schedule ("mon 08:00", UTC) the
 * funnel of the 7 days before that time (gp_srv_funnel_data, the API's
 * own document, so the mail's figures are the API's) is rendered by the
 * report layer (report/funnel.c) and sent to each receiver named in
 * funnel_report_receivers (notify receivers of type email) with the
 * email channel's transport.
 *
 * A thread looks every 30 s for the newest slot at or before now. A slot
 * not yet sent (data_dir/funnel-report.last holds the last one sent) and
 * less than a day old is sent: a server down at 08:00 sends when it comes
 * back that day; one down all day skips that week rather than mailing a
 * stale week later. A receiver that failed is tried again at the next
 * look, the others not; the slot is recorded once every receiver took it.
 */
#include "server_int.h"

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "lib/periodic.h"
#include "notify/notify.h"
#include "report/report.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define REPORT_RANGE_MS (7LL * 24 * 3600 * 1000)
#define REPORT_LATE_MS (24LL * 3600 * 1000)
#define REPORT_LOOK_MS 30000
#define WEEK_MS (7LL * 24 * 3600 * 1000)

struct gp_srv_freport {
    struct gp_server *srv;
    const struct gp_receiver *to[GP_NOTIFY_TO_MAX];
    bool done[GP_NOTIFY_TO_MAX]; /* this slot, per receiver */
    size_t nto;
    int dow, minute;             /* 0 = Monday; minutes after midnight UTC */
    int64_t last_slot, pending_slot;
    char path[GP_SERVER_PATH_LEN + 32];
    struct gp_periodic th;
};

int gp_srv_funnel_schedule(const char *s, int *dow, int *minute, char *err, size_t errlen)
{
    static const char *const days[] = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};
    char day[8];
    unsigned hh, mm;
    int n = 0;
    if (sscanf(s, "%7s %u:%u%n", day, &hh, &mm, &n) == 3 && !s[n] && hh < 24 && mm < 60)
        for (int d = 0; d < 7; d++)
            if (!strcasecmp(day, days[d])) {
                *dow = d;
                *minute = (int)(hh * 60 + mm);
                return GP_OK;
            }
    return gp_seterr(err, errlen, GP_ECONFIG,
                     "funnel_report_schedule: '%.40s' is not DAY HH:MM (mon..sun, UTC, e.g. mon 08:00)",
                     s);
}

int64_t gp_srv_funnel_slot(int dow, int minute, int64_t now_ms)
{
    /* 1970-01-05 00:00 UTC was a Monday */
    const int64_t monday = 4LL * 24 * 3600 * 1000;
    int64_t off = (int64_t)dow * 24 * 3600 * 1000 + (int64_t)minute * 60000;
    int64_t since = now_ms - monday - off;
    int64_t weeks = since >= 0 ? since / WEEK_MS : -((-since + WEEK_MS - 1) / WEEK_MS);
    return monday + off + weeks * WEEK_MS;
}

static int64_t read_last(const char *path)
{
    FILE *f = fopen(path, "r");
    long long v = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%lld", &v) != 1)
        v = 0;
    fclose(f);
    return v;
}

static void write_last(const char *path, int64_t slot)
{
    char tmp[sizeof ((struct gp_srv_freport *)0)->path + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%lld\n", (long long)slot) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        gp_log(GP_LOG_WARN, "funnel-report", "cannot record the report sent", "path=%s err=\"%s\"",
               path, strerror(errno));
        if (f)
            remove(tmp);
    }
}

/* Renders the funnel ending at slot and sends it to the receivers not yet
 * done; 1 when all took it. */
static int send_slot(struct gp_srv_freport *x, int64_t slot)
{
    struct gp_server *s = x->srv;
    struct gp_storage *st = gp_srv_store(s);
    if (!st)
        return 0;
    struct gp_buf doc, text, html;
    gp_buf_init(&doc, 0);
    gp_buf_init(&text, 0);
    gp_buf_init(&html, 0);
    char err[256] = "", subject[256] = "", link[GP_NOTIFY_URL_LEN + 64] = "";
    int rc = gp_srv_funnel_data(s, st, slot - REPORT_RANGE_MS, slot, GP_SRV_FUNNEL_AUTO, &doc, err, sizeof err);
    json_t *d = NULL;
    if (!rc) {
        json_error_t je;
        d = doc.err ? NULL : json_loadb(doc.data, doc.len, 0, &je);
        rc = d ? GP_OK : GP_ENOMEM;
    }
    const char *base = gp_srv_notify_external_url(s);
    if (base && *base)
        snprintf(link, sizeof link, "%.*s/#/fleet?funnel_end=%lld",
                 (int)(strlen(base) - (base[strlen(base) - 1] == '/')), base, (long long)(slot / 1000));
    if (!rc)
        rc = gp_report_funnel(d, link, subject, sizeof subject, &text, &html);
    json_decref(d);
    int all = !rc;
    for (size_t i = 0; !rc && i < x->nto; i++) {
        if (x->done[i])
            continue;
        struct gp_send_outcome out;
        gp_email_send_doc(x->to[i], subject, text.data ? text.data : "", html.data ? html.data : "",
                          &out);
        x->done[i] = out.result == GP_SEND_OK;
        all &= x->done[i];
        gp_log(x->done[i] ? GP_LOG_INFO : GP_LOG_WARN, "funnel-report",
               x->done[i] ? "weekly funnel report sent" : "weekly funnel report not sent",
               "receiver=%s slot=%lld status=%d detail=\"%s\"", x->to[i]->name, (long long)(slot / 1000),
               out.status, out.detail);
    }
    if (rc)
        gp_log(GP_LOG_WARN, "funnel-report", "cannot build the weekly funnel report",
               "slot=%lld err=\"%s\"", (long long)(slot / 1000), err[0] ? err : gp_strerror(rc));
    gp_buf_free(&doc);
    gp_buf_free(&text);
    gp_buf_free(&html);
    return all;
}

static void look(void *arg)
{
    struct gp_srv_freport *x = arg;
    int64_t now = gp_wall_ms(), slot = gp_srv_funnel_slot(x->dow, x->minute, now);
    if (slot <= x->last_slot || now - slot >= REPORT_LATE_MS)
        return;
    if (slot != x->pending_slot) {
        x->pending_slot = slot;
        memset(x->done, 0, sizeof x->done);
    }
    if (send_slot(x, slot)) {
        x->last_slot = slot;
        write_last(x->path, slot);
    }
}

int gp_srv_funnel_report_start(struct gp_server *s, char *err, size_t errlen)
{
    const char *names = s->cfg.funnel_report_receivers;
    if (!names[0])
        return GP_OK;
    struct gp_srv_freport *x = calloc(1, sizeof *x);
    if (!x)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    s->freport = x;
    x->srv = s;
    int rc = gp_srv_funnel_schedule(s->cfg.funnel_report_schedule, &x->dow, &x->minute, err, errlen);
    for (const char *p = names; !rc && *p;) {
        size_t n = strcspn(p, ",");
        const char *name = p;
        size_t len = n;
        while (len && *name == ' ')
            name++, len--;
        while (len && name[len - 1] == ' ')
            len--;
        const struct gp_receiver *r = gp_srv_notify_receiver(s, name, len);
        if (!r)
            rc = gp_seterr(err, errlen, GP_ECONFIG,
                           "funnel_report_receivers: no notify receiver named '%.*s'", (int)len, name);
        else if (r->type != GP_RT_EMAIL)
            rc = gp_seterr(err, errlen, GP_ECONFIG,
                           "funnel_report_receivers: receiver '%.*s' is not of type email", (int)len, name);
        else if (x->nto == GP_NOTIFY_TO_MAX)
            rc = gp_seterr(err, errlen, GP_ECONFIG, "funnel_report_receivers: more than %d receivers",
                           GP_NOTIFY_TO_MAX);
        else
            x->to[x->nto++] = r;
        p += n + (p[n] == ',');
    }
    if (rc)
        return rc;
    snprintf(x->path, sizeof x->path, "%s/funnel-report.last", s->cfg.data_dir);
    x->last_slot = read_last(x->path);
    if (gp_periodic_start(&x->th, REPORT_LOOK_MS, 1, look, x))
        return gp_seterr(err, errlen, GP_ENOMEM, "cannot start the funnel report thread");
    gp_log(GP_LOG_INFO, "funnel-report", "weekly funnel report on", "schedule=\"%s UTC\" receivers=%zu",
           s->cfg.funnel_report_schedule, x->nto);
    return GP_OK;
}

void gp_srv_funnel_report_stop(struct gp_server *s)
{
    struct gp_srv_freport *x = s->freport;
    if (!x)
        return;
    gp_periodic_stop(&x->th);
    free(x);
    s->freport = NULL;
}
