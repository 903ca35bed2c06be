/*
 * storage_refill.c - refills a remote-mode server's local window
 * (storage_window.c) from the cluster at start (docs/storage.md "The local
 * window", "Restart").
 *
 * The window is a cache and the cluster the record: at every start it is
 * wiped, and each metric name's raw samples of the last window are asked
 * of the cluster (one name at a time, to bound an answer's size) and
 * stored. What the cluster is asked goes through the remote backend
 * (storage_remote.c), which lends this module its requests as a
 * gp_refill_src: a raw fetch and the name lookups. This module holds only
 * the plan (names, then shards of a name the cluster refuses) and its
 * progress log.
 */
#include "storage/storage_int.h"

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "lib/strset.h"
#include "storage/promapi.h"

#include <inttypes.h>
#include <string.h>

/*
 * A query the cluster refuses for the number of series it touches
 * (VictoriaMetrics: 422 "... exceeds -search.maxUniqueTimeseries";
 * Prometheus: 422 "... too many samples") is split, not given up: by
 * metric name first, then by the first characters of the values of
 * SHARD_LABELS in turn (the node labels the fleet's series carry):
 * {L=~"p[class].*"} with the class of next characters halved until a
 * shard is answered, a class of one character extending the prefix p,
 * and L="p" (the value p itself; "" also the series without L) and
 * L=~"p[^ALPHA].*" (other characters) asked apart, split by the next
 * label. Regex matchers on label values are what VictoriaMetrics and
 * Prometheus both answer, and each shard is one disjoint part, so the
 * refill holds every series once.
 */
static const char *const SHARD_LABELS[] = {"Hostname", "hostname", "instance", "gpu", "UUID"};
#define NSHARD_LABELS (sizeof SHARD_LABELS / sizeof SHARD_LABELS[0])
/* Sorted, the characters of host names, numbers and UUIDs. */
static const char ALPHA[] = "-.0123456789:ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz";
#define NALPHA (sizeof ALPHA - 1)
#define MAX_PREFIX 128 /* deeper than any host name: past it a shard fails */

struct refill {
    const struct gp_refill_src *src;
    struct gp_rwin *win;
    const char *name; /* this server's gpulse_server value; NULL: the only one */
    int64_t qmin, qmax;
    int rc;
    uint64_t queries, splits, series, names, names_done;
    int64_t logged_ms;
};

/* A regex-safe character: Go's RE2 takes any punctuation escaped. */
static void put_re_char(struct gp_buf *b, char c)
{
    if (!(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z'))
        gp_buf_putc(b, '\\');
    gp_buf_putc(b, c);
}

/* The raw samples of the window of selector sel, into the window. */
static int fetch_fill(struct refill *f, const char *sel)
{
    struct gp_promapi_result res = {0};
    int rc = f->src->fetch(f->src->arg, sel, f->qmin, f->qmax, &res);
    f->queries++;
    if (!rc) {
        f->series += res.n;
        rc = gp_rwin_fill(f->win, &res);
    }
    gp_promapi_result_free(&res);
    return rc;
}

static void shard_prefix(struct refill *f, const char *base, size_t li, const char *p, size_t plen);

/* Fetches the shard {base} into the window; too many series: split by
 * SHARD_LABELS[li] on. Sets f->rc on a failure. */
static void refill_one(struct refill *f, const char *base, size_t li)
{
    if (f->rc)
        return;
    struct gp_buf sel;
    gp_buf_init(&sel, 0);
    gp_buf_printf(&sel, "{%s}", base);
    int rc = sel.err ? GP_ENOMEM : fetch_fill(f, sel.data);
    gp_buf_free(&sel);
    if (gp_storage_remote_refused(rc) && li < NSHARD_LABELS) {
        gp_storage_clear_error();
        f->splits++;
        shard_prefix(f, base, li, "", 0);
        return;
    }
    f->rc = rc;
}

/* The series whose SHARD_LABELS[li] starts with p and then one of
 * ALPHA[lo..hi). */
static void shard_class(struct refill *f, const char *base, size_t li, const char *p, size_t plen,
                        size_t lo, size_t hi)
{
    if (f->rc)
        return;
    struct gp_buf sel, re;
    gp_buf_init(&sel, 0);
    gp_buf_init(&re, 0);
    for (size_t i = 0; i < plen; i++)
        put_re_char(&re, p[i]);
    gp_buf_putc(&re, '[');
    for (size_t i = lo; i < hi; i++)
        put_re_char(&re, ALPHA[i]);
    gp_buf_puts(&re, "].*");
    gp_buf_printf(&sel, "{%s,%s=~", base, SHARD_LABELS[li]);
    if (!re.err)
        gp_storage_put_quoted(&sel, re.data, re.len);
    gp_buf_putc(&sel, '}');
    int rc = sel.err || re.err ? GP_ENOMEM : fetch_fill(f, sel.data);
    gp_buf_free(&sel);
    gp_buf_free(&re);
    if (gp_storage_remote_refused(rc) && (hi - lo > 1 || plen < MAX_PREFIX)) {
        gp_storage_clear_error();
        f->splits++;
        if (hi - lo > 1) {
            shard_class(f, base, li, p, plen, lo, lo + (hi - lo) / 2);
            shard_class(f, base, li, p, plen, lo + (hi - lo) / 2, hi);
        } else {
            char q[MAX_PREFIX + 1];
            memcpy(q, p, plen);
            q[plen] = ALPHA[lo];
            shard_prefix(f, base, li, q, plen + 1);
        }
        return;
    }
    if (rc && !f->rc)
        f->rc = rc;
}

static void shard_prefix(struct refill *f, const char *base, size_t li, const char *p, size_t plen)
{
    const char *l = SHARD_LABELS[li];
    struct gp_buf b, re;
    gp_buf_init(&b, 0);
    gp_buf_init(&re, 0);
    gp_buf_printf(&b, "%s,%s=", base, l); /* the value p itself */
    gp_storage_put_quoted(&b, p, plen);
    if (!b.err)
        refill_one(f, b.data, li + 1);
    gp_buf_reset(&b);
    for (size_t i = 0; i < plen; i++) /* p, then a character ALPHA lacks */
        put_re_char(&re, p[i]);
    gp_buf_puts(&re, "[^");
    for (size_t i = 0; i < NALPHA; i++)
        put_re_char(&re, ALPHA[i]);
    gp_buf_puts(&re, "].*");
    gp_buf_printf(&b, "%s,%s=~", base, l);
    if (!re.err)
        gp_storage_put_quoted(&b, re.data, re.len);
    if (!b.err && !re.err)
        refill_one(f, b.data, li + 1);
    if ((b.err || re.err) && !f->rc)
        f->rc = GP_ENOMEM;
    gp_buf_free(&b);
    gp_buf_free(&re);
    shard_class(f, base, li, p, plen, 0, NALPHA);
}

/* One metric name's raw samples of the window, into the window. */
static void refill_name(void *arg, const char *name, size_t len)
{
    struct refill *f = arg;
    if (f->rc)
        return;
    struct gp_buf sel;
    gp_buf_init(&sel, 0);
    gp_buf_puts(&sel, "__name__=");
    gp_storage_put_quoted(&sel, name, len);
    if (f->name) { /* this server's own part, not the fleet's */
        gp_buf_puts(&sel, "," GP_STORAGE_SERVER_LABEL "=");
        gp_storage_put_quoted(&sel, f->name, strlen(f->name));
    }
    if (sel.err)
        f->rc = GP_ENOMEM;
    else
        refill_one(f, sel.data, 0);
    gp_buf_free(&sel);
    f->names_done++;
    /* The progress of a long refill, every 5 s and at the end. */
    if (gp_mono_ms() - f->logged_ms >= 5000 || f->names_done == f->names) {
        f->logged_ms = gp_mono_ms();
        gp_log(GP_LOG_INFO, "storage", "remote window refill progress",
               "names=%" PRIu64 "/%" PRIu64 " series=%" PRIu64 " queries=%" PRIu64 " splits=%" PRIu64,
               f->names_done, f->names, f->series, f->queries, f->splits);
    }
}

static void count_name(void *arg, const char *name, size_t len)
{
    (void)name;
    (void)len;
    ((struct refill *)arg)->names++;
}

/*
 * Refills the window from the cluster before the server takes writes
 * (so what is refilled is older than what comes next; the caller first
 * gave its write queue's backlog time to reach the cluster): each metric
 * name's raw samples of the last window_ms are fetched (one name at a
 * time, to bound the answer's size) and stored. On success the window is
 * whole; on a failure it stays complete only from now, logged, and reads
 * before now go to the cluster until window_ms has passed.
 */
void gp_rwin_refill(struct gp_rwin *w, const char *server_name, const struct gp_refill_src *src,
                    int64_t t0)
{
    int64_t now = gp_wall_ms();
    struct refill f = {.src = src, .win = w, .name = server_name,
                       .qmin = now - gp_rwin_window_ms(w), .qmax = now};
    struct gp_strset names = {0};
    struct gp_matcher own;
    size_t nown = 0;
    char merr[128];
    if (server_name &&
        !(f.rc = gp_matcher_init(&own, GP_MATCH_EQ, GP_STORAGE_SERVER_LABEL, server_name, merr, sizeof merr)))
        nown = 1;
    if (!f.rc)
        f.rc = src->names(src->arg, &own, nown, f.qmin, f.qmax, gp_strset_add, &names);
    if (gp_storage_remote_refused(f.rc)) { /* the names of the whole index, which counts no series */
        gp_log(GP_LOG_INFO, "storage", "remote window refill asks the names without match[]",
               "err=\"%s\"", gp_storage_last_error()); /* the lookup touched too many series */
        gp_storage_clear_error();
        f.rc = src->names(src->arg, NULL, GP_REFILL_NO_MATCH, f.qmin, f.qmax, gp_strset_add, &names);
    }
    if (nown)
        gp_matcher_free(&own);
    if (!f.rc)
        f.rc = names.err;
    if (!f.rc) {
        gp_strset_each(&names, count_name, &f);
        f.logged_ms = gp_mono_ms();
        gp_strset_each(&names, refill_name, &f);
    }
    gp_strset_free(&names);
    if (f.rc) {
        gp_log(GP_LOG_WARN, "storage", "remote window refill failed",
               "err=\"%s\" complete_from=now window_ms=%" PRId64,
               f.rc == GP_ENET ? gp_storage_last_error() : gp_strerror(f.rc), gp_rwin_window_ms(w));
        return;
    }
    gp_rwin_held_from(w, f.qmin);
    uint64_t reads, samples;
    int64_t held;
    gp_rwin_counts(w, &reads, &samples, &held);
    gp_log(GP_LOG_INFO, "storage", "remote window refilled",
           "samples=%" PRIu64 " series=%" PRIu64 " queries=%" PRIu64 " splits=%" PRIu64
           " window_ms=%" PRId64 " seconds=%.3f",
           samples, f.series, f.queries, f.splits, gp_rwin_window_ms(w),
           (double)(gp_mono_ms() - t0) / 1e3);
}
