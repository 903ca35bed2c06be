/*
 * storage_remote.c - the storage.h backend over a Prometheus-compatible
 * cluster (DESIGN.md "Outgrowing one machine"; docs/storage.md).
 *
 * Writes: each accepted request is encoded again (ingest/remote_write.h)
 * and handed to the remote-write sender the agent uses too (ingest/push.h) with one
 * target, the cluster: the same queue, disk buffer (data_dir/remote-buffer),
 * retry and back-off as an agent's push. An outage of the cluster delays
 * samples, never loses them while the buffer has room.
 *
 * Reads: a selection asks the cluster once for the raw samples of every
 * matching series over the selection's window, an instant query of a
 * range selector (POST /api/v1/query, query={...}[Dms], time=END), which
 * Prometheus, VictoriaMetrics, Mimir and Thanos all answer with the raw
 * samples as a matrix. The selection keeps them; reads of its series
 * within its window (what the API, the detectors and the dashboard do
 * right after selecting) are answered from them without another request.
 * Other reads ask for the one series (an exact-match selector). Label
 * names and values go to /api/v1/labels and /api/v1/label/NAME/values.
 *
 * The local window (storage_window.c): with one, every write is stored
 * there too, and a selection or bounded label lookup whose range starts
 * within what it holds is its to answer, as are the reads of the series
 * such a selection returned (ids without the RID bit). It is refilled
 * from the cluster at open, before the server takes writes
 * (storage_refill.c, through this backend's requests).
 *
 * PromQL from the API (gp_storage_promql) goes to the cluster as it is,
 * and its answer, success or Prometheus error, comes back as it is.
 *
 * Ids: a registry of the label sets seen hands out ids from 1, stable for
 * the process's life (a hash table under a mutex).
 *
 * Errors: a request that fails (no connection, timeout, an HTTP error,
 * an answer that does not parse) is GP_ENET; gp_storage_last_error gives
 * this thread's detail and gp_storage_last_error_status 503 (no answer)
 * or 502 (a bad answer), which the API returns.
 */
#include "storage/storage_int.h"

#include "ingest/push.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "lib/metrics.h"
#include "lib/strset.h"
#include "lib/token.h"
#include "net/httpc.h"
#include "storage/promapi.h"
#include "store/labels.h"
#include "store/store_fmt.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define POOL 8                         /* idle HTTP handles kept for reuse */
#define MAX_ANSWER (512u << 20)        /* bytes of one answer at most */
#define CACHE_AGE_MS 10000             /* a selection's samples serve reads this long */
#define FUTURE_MS 60000                /* open-ended windows reach this far past now */
#define TAIL_MS 120000                 /* unbounded selections fetch this much of each series */
/* Ids of series the cluster named carry this bit; those without it are
 * the local window's own (its store's ids stay far below). */
#define RID 0x80000000u
#define DRAIN_MS 10000 /* at start, the write queue gets this long to empty before the refill */

struct regent {
    uint8_t *labels;
    size_t len;
    uint64_t hash;
};

struct remote {
    struct gp_storage_remote_options o;
    char *query_root; /* without a trailing slash */
    char *write_url;
    char *hdr_store[GP_STORAGE_MAX_HEADERS + 1]; /* what headers holds, for the push too */
    size_t nhdr;
    struct gp_push *push;
    struct gp_rwin *win; /* the recent window, NULL when off */
    char *name;          /* this server's gpulse_server value; NULL: the only one */

    pthread_mutex_t reg_mu;
    struct regent *ent; /* by id; [0] unused */
    size_t nent, ent_cap;
    uint32_t *slots; /* open addressing: ids, 0 empty */
    size_t nslots;

    pthread_mutex_t pool_mu;
    struct gp_httpc *pool[POOL];
    size_t npool;

    atomic_uint_fast64_t queries, errors, query_ns, samples_read, forwarded, cache_hits;
    atomic_uint_fast64_t answer_bytes, pushdowns;
};

/* The samples of one selection, kept for the reads that follow it. */
struct rsel {
    struct rsel *prev, *next; /* the live list */
    struct gp_storage *owner;
    int64_t qmin, qmax, made_ms;
    int open_end;
    size_t n;
    struct gp_store_series *series; /* == the selection's, ascending id */
    struct gp_promapi_series *data; /* parallel to series: labels and samples */
    int64_t *from;                  /* parallel: each series' samples are all of [from, qmax] */
};

static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static struct rsel *live;

static _Thread_local char last_err[512];
static _Thread_local int last_status;
static _Thread_local long last_http; /* HTTP status of this thread's last non-2xx answer */

const char *gp_storage_last_error(void) { return last_err; }
void gp_storage_clear_error(void)
{
    last_err[0] = '\0';
    last_status = 0;
}
int gp_storage_last_error_status(void) { return last_status ? last_status : 503; }

static struct remote *R(struct gp_storage *s) { return s->impl; }

static int fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_err, sizeof last_err, fmt, ap);
    va_end(ap);
    last_status = status;
    return GP_ENET;
}

/* ---- HTTP ---------------------------------------------------------------- */

/* An idle handle, or a new one with the cluster's headers; NULL when out of memory. */
static struct gp_httpc *take_handle(struct remote *r)
{
    struct gp_httpc *c = NULL;
    pthread_mutex_lock(&r->pool_mu);
    if (r->npool)
        c = r->pool[--r->npool];
    pthread_mutex_unlock(&r->pool_mu);
    if (!c) {
        struct gp_httpc_opts o = {.timeout_ms = r->o.query_timeout_ms,
                                  .headers = (const char *const *)r->hdr_store,
                                  .nheaders = r->nhdr,
                                  .gzip = true}; /* gzip when the cluster offers it */
        char err[128];
        if (gp_httpc_open(&c, &o, err, sizeof err))
            return NULL;
    }
    return c;
}

static void give_handle(struct remote *r, struct gp_httpc *c)
{
    pthread_mutex_lock(&r->pool_mu);
    if (r->npool < POOL) {
        r->pool[r->npool++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&r->pool_mu);
    gp_httpc_close(c);
}

/* The request of api_call; GP_OK with *code set whenever the cluster
 * answered, whatever the status. timeout_ms 0: the configured one. */
static int api_request(struct remote *r, const char *path, const char *form, int get,
                       int64_t timeout_ms, struct gp_buf *out, long *code_out)
{
    gp_buf_init(out, MAX_ANSWER);
    if (!timeout_ms || timeout_ms > r->o.query_timeout_ms)
        timeout_ms = r->o.query_timeout_ms;
    char url[2048];
    int n = snprintf(url, sizeof url, "%s%s%s%s", r->query_root, path, get && *form ? "?" : "",
                     get ? form : "");
    if (n < 0 || (size_t)n >= sizeof url)
        return fail(502, "%s%s: the request is too long for a GET", r->query_root, path);
    struct gp_httpc *c = take_handle(r);
    if (!c)
        return GP_ENOMEM;
    int64_t t0 = gp_mono_ns();
    struct gp_httpc_req req = {.url = url, .body = get ? NULL : form, .len = get ? 0 : strlen(form),
                               .timeout_ms = timeout_ms, .answer = out};
    struct gp_httpc_res res;
    int hrc = gp_httpc_do(c, &req, &res);
    long code = res.status;
    give_handle(r, c);
    atomic_fetch_add(&r->queries, 1);
    atomic_fetch_add(&r->query_ns, (uint64_t)(gp_mono_ns() - t0));
    atomic_fetch_add(&r->answer_bytes, out->len);
    int rc = GP_OK;
    if (hrc || out->err == GP_ENOMEM)
        rc = GP_ENOMEM;
    else if (out->err)
        rc = fail(502, "%s%s: the answer is over %u MiB", r->query_root, path, MAX_ANSWER >> 20);
    else if (res.err[0])
        rc = fail(503, "%s%s: %s", r->query_root, path, res.err);
    *code_out = code;
    if (rc)
        atomic_fetch_add(&r->errors, 1);
    return rc;
}

/*
 * One request to the query API: GET path?form when get, else POST form.
 * The answer's body lands in out (caller frees). GP_OK for a 2xx, else
 * GP_ENET with the detail set (the body's Prometheus error when it has
 * one), GP_ENOMEM.
 */
static int api_call(struct remote *r, const char *path, const char *form, int get, struct gp_buf *out)
{
    long code = 0;
    int rc = api_request(r, path, form, get, 0, out, &code);
    if (rc)
        return rc;
    if (code < 200 || code > 299) {
        last_http = code;
        /* A Prometheus error body names the problem; else the body's start. */
        struct gp_promapi_result x;
        char perr[300] = "";
        if (gp_promapi_parse_series(out->data ? out->data : "", out->len, &x, perr, sizeof perr) !=
            GP_ENET) {
            size_t k = 0;
            for (size_t i = 0; i < out->len && k < 120; i++)
                perr[k++] = out->data[i] >= 0x20 && out->data[i] < 0x7f ? out->data[i] : ' ';
            perr[k] = '\0';
        }
        gp_promapi_result_free(&x);
        rc = fail(code >= 500 ? 503 : 502, "%s%s: HTTP %ld: %s", r->query_root, path, code, perr);
    }
    if (rc)
        atomic_fetch_add(&r->errors, 1);
    return rc;
}

/* Appends name=value, URL-encoded, to a form. */
static void form_add(struct gp_buf *f, const char *name, const char *value)
{
    char *e = gp_httpc_escape(value);
    if (!e) {
        f->err = GP_ENOMEM;
        return;
    }
    gp_buf_printf(f, "%s%s=%s", f->len ? "&" : "", name, e);
    free(e);
}

void gp_storage_put_quoted(struct gp_buf *b, const char *s, size_t n)
{
    gp_buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '"' || c == '\\')
            gp_buf_putc(b, '\\');
        if (c == '\n')
            gp_buf_puts(b, "\\n");
        else
            gp_buf_putc(b, c);
    }
    gp_buf_putc(b, '"');
}

/* The PromQL selector of matchers, {a="b",c=~"d"}; a __name__=~".+" is
 * added unless a matcher names the metric, so the selector is never one
 * PromQL refuses as matching the empty label set. */
static void selector_of(struct gp_buf *b, const struct gp_matcher *m, size_t nm)
{
    static const char *const op[] = {[GP_MATCH_EQ] = "=", [GP_MATCH_NE] = "!=",
                                     [GP_MATCH_RE] = "=~", [GP_MATCH_NRE] = "!~"};
    int named = 0;
    gp_buf_putc(b, '{');
    for (size_t i = 0; i < nm; i++) {
        gp_buf_printf(b, "%s%s%s", i ? "," : "", m[i].name, op[m[i].op]);
        gp_storage_put_quoted(b, m[i].value, m[i].value_len);
        named |= m[i].op == GP_MATCH_EQ && !strcmp(m[i].name, "__name__") && m[i].value_len;
    }
    if (!named)
        gp_buf_printf(b, "%s__name__=~\".+\"", nm ? "," : "");
    gp_buf_putc(b, '}');
}

/* The exact selector of one canonical label set. */
static void selector_exact(struct gp_buf *b, const uint8_t *l, size_t len)
{
    struct gp_labels_iter it;
    struct gp_str name, value;
    gp_labels_iter_init(&it, l, len);
    gp_buf_putc(b, '{');
    int first = 1;
    while (gp_labels_next(&it, &name, &value) == 1) {
        gp_buf_printf(b, "%s%.*s=", first ? "" : ",", (int)name.len, name.ptr);
        gp_storage_put_quoted(b, value.ptr, value.len);
        first = 0;
    }
    gp_buf_putc(b, '}');
}

/* The matrix of a 2xx answer's body into res. */
static int parse_matrix(struct remote *r, const char *path, const struct gp_buf *body,
                        struct gp_promapi_result *res)
{
    char perr[400];
    int rc = gp_promapi_parse_matrix(body->data ? body->data : "", body->len, res, perr, sizeof perr);
    if (rc && rc != GP_ENOMEM) {
        atomic_fetch_add(&r->errors, 1);
        rc = fail(502, "%s%s: %s", r->query_root, path, perr);
    }
    return rc;
}

/* Raw samples of the series sel chooses with qmin <= t <= qmax: one
 * instant query of a range selector at qmax. Samples outside are dropped
 * (range selectors differ in whether their left end is open), series
 * left empty too. */
static int fetch(struct remote *r, const char *sel, int64_t qmin, int64_t qmax,
                 struct gp_promapi_result *res)
{
    memset(res, 0, sizeof *res);
    struct gp_buf q, f, body;
    gp_buf_init(&q, 0);
    gp_buf_init(&f, 0);
    gp_buf_init(&body, 0);
    gp_buf_printf(&q, "%s[%" PRId64 "ms]", sel, qmax - qmin + 1);
    char t[64];
    snprintf(t, sizeof t, "%" PRId64 ".%03d", qmax / 1000 - (qmax % 1000 < 0),
             (int)(((qmax % 1000) + 1000) % 1000));
    if (!q.err)
        form_add(&f, "query", q.data);
    form_add(&f, "time", t);
    int rc = q.err || f.err ? GP_ENOMEM : api_call(r, "/api/v1/query", f.data, 0, &body);
    gp_buf_free(&q);
    gp_buf_free(&f);
    rc = rc ? rc : parse_matrix(r, "/api/v1/query", &body, res);
    gp_buf_free(&body); /* with what came before a failure */
    if (rc)
        return rc;
    for (size_t i = 0; i < res->n; i++)
        if (!res->s[i].labels_len) { /* a selector's series has a name at least */
            atomic_fetch_add(&r->errors, 1);
            return fail(502, "%s/api/v1/query: a series has no labels", r->query_root);
        }
    size_t k = 0;
    for (size_t i = 0; i < res->n; i++) {
        struct gp_promapi_series *s = &res->s[i];
        size_t m = 0;
        for (size_t j = 0; j < s->n; j++)
            if (s->t[j] >= qmin && s->t[j] <= qmax) {
                s->t[m] = s->t[j];
                s->v[m++] = s->v[j];
            }
        s->n = m;
        atomic_fetch_add(&r->samples_read, m);
        if (m)
            res->s[k++] = *s;
        else {
            free(s->labels);
            free(s->t);
            free(s->v);
        }
    }
    res->n = k;
    return GP_OK;
}

/* The label sets of the series sel chooses with samples in [qmin, qmax]
 * (POST /api/v1/series): an index lookup, no samples. */
static int series_of(struct remote *r, const char *sel, int64_t qmin, int64_t qmax,
                     struct gp_promapi_result *res)
{
    memset(res, 0, sizeof *res);
    struct gp_buf f, body;
    gp_buf_init(&f, 0);
    gp_buf_init(&body, 0);
    char t[64];
    form_add(&f, "match[]", sel);
    snprintf(t, sizeof t, "%.3f", (double)qmin / 1000.0);
    form_add(&f, "start", t);
    snprintf(t, sizeof t, "%.3f", (double)qmax / 1000.0);
    form_add(&f, "end", t);
    int rc = f.err ? GP_ENOMEM : api_call(r, "/api/v1/series", f.data, 0, &body);
    gp_buf_free(&f);
    if (rc) {
        gp_buf_free(&body); /* what came before a failure */
        return rc;
    }
    char perr[400];
    rc = gp_promapi_parse_series(body.data ? body.data : "", body.len, res, perr, sizeof perr);
    gp_buf_free(&body);
    if (rc && rc != GP_ENOMEM) {
        atomic_fetch_add(&r->errors, 1);
        rc = fail(502, "%s/api/v1/series: %s", r->query_root, perr);
    }
    return rc;
}

static int cmp_series_labels(const void *a, const void *b)
{
    const struct gp_promapi_series *x = a, *y = b;
    return gp_labels_cmp(x->labels, x->labels_len, y->labels, y->labels_len);
}

static void series_free(struct gp_promapi_series *d)
{
    free(d->labels);
    free(d->t);
    free(d->v);
}

/*
 * An unbounded selection: every series with samples in the last lookback
 * [qmin, qmax], without moving all of their samples. The newest TAIL_MS
 * of every series is fetched (what the newest-value reads need: most
 * series have their newest number there); the series API names the
 * series seen in the whole lookback, and only when some of them have
 * nothing in the tail is the older part fetched too, for those. On
 * return from[i] says from when each series' samples are complete.
 */
static int fetch_unbounded(struct remote *r, const char *sel, int64_t qmin, int64_t qmax,
                           struct gp_promapi_result *res, int64_t **from)
{
    int64_t tmin = qmax - TAIL_MS + 1;
    *from = NULL;
    int rc = fetch(r, sel, tmin, qmax, res);
    struct gp_promapi_result all = {0}, old = {0};
    if (!rc)
        rc = series_of(r, sel, qmin, qmax, &all);
    size_t missing = 0;
    if (!rc) {
        if (res->n)
            qsort(res->s, res->n, sizeof *res->s, cmp_series_labels);
        for (size_t i = 0; i < all.n; i++)
            missing += !res->n ||
                       !bsearch(&all.s[i], res->s, res->n, sizeof *res->s, cmp_series_labels);
    }
    if (!rc && missing)
        rc = fetch(r, sel, qmin, tmin - 1, &old);
    size_t n0 = res->n;
    if (!rc && old.n) {
        struct gp_promapi_series *ns = realloc(res->s, (res->n + old.n) * sizeof *ns);
        if (!ns)
            rc = GP_ENOMEM;
        else
            res->s = ns;
        for (size_t i = 0; !rc && i < old.n; i++) {
            if (n0 && bsearch(&old.s[i], res->s, n0, sizeof *res->s, cmp_series_labels)) {
                series_free(&old.s[i]); /* it has a tail: its older samples are not needed */
            } else {
                res->s[res->n++] = old.s[i];
                res->nsamples += old.s[i].n;
            }
            memset(&old.s[i], 0, sizeof old.s[i]);
        }
    }
    if (!rc && !(*from = malloc((res->n ? res->n : 1) * sizeof **from)))
        rc = GP_ENOMEM;
    for (size_t i = 0; !rc && i < res->n; i++)
        (*from)[i] = i < n0 ? tmin : qmin;
    gp_promapi_result_free(&all);
    gp_promapi_result_free(&old);
    return rc;
}

/*
 * A selection whose caller reads only samples at or after since: the
 * samples of [since, qmax], and the series API's list of [qmin, qmax]
 * for the series with nothing since (listed with no samples). The
 * detectors' incremental ticks select this way. from[i] is since.
 */
static int fetch_since(struct remote *r, const char *sel, int64_t qmin, int64_t qmax, int64_t since,
                       struct gp_promapi_result *res, int64_t **from)
{
    *from = NULL;
    int rc = fetch(r, sel, since, qmax, res);
    struct gp_promapi_result all = {0};
    if (!rc)
        rc = series_of(r, sel, qmin, qmax, &all);
    if (!rc && res->n)
        qsort(res->s, res->n, sizeof *res->s, cmp_series_labels);
    size_t n0 = res->n;
    if (!rc && all.n) {
        struct gp_promapi_series *ns = realloc(res->s, (res->n + all.n) * sizeof *ns);
        if (!ns)
            rc = GP_ENOMEM;
        else
            res->s = ns;
        for (size_t i = 0; !rc && i < all.n; i++) {
            if (!n0 || !bsearch(&all.s[i], res->s, n0, sizeof *res->s, cmp_series_labels)) {
                res->s[res->n++] = all.s[i]; /* labels only: nothing since */
                memset(&all.s[i], 0, sizeof all.s[i]);
            }
        }
    }
    if (!rc && !(*from = malloc((res->n ? res->n : 1) * sizeof **from)))
        rc = GP_ENOMEM;
    for (size_t i = 0; !rc && i < res->n; i++)
        (*from)[i] = since;
    gp_promapi_result_free(&all);
    return rc;
}

/* ---- the id registry ------------------------------------------------------ */

/* The id of a label set, registered if new (0: over max_series or no memory). */
static uint32_t reg_id(struct remote *r, const uint8_t *l, size_t len)
{
    uint64_t h = gp_labels_hash(l, len);
    uint32_t id = 0;
    pthread_mutex_lock(&r->reg_mu);
    if ((r->nent + 1) * 2 > r->nslots) {
        size_t ns = r->nslots ? r->nslots * 2 : 1024;
        uint32_t *sl = calloc(ns, sizeof *sl);
        if (!sl)
            goto out;
        for (size_t i = 1; i < r->nent; i++) {
            size_t k = r->ent[i].hash & (ns - 1);
            while (sl[k])
                k = (k + 1) & (ns - 1);
            sl[k] = (uint32_t)i;
        }
        free(r->slots);
        r->slots = sl;
        r->nslots = ns;
    }
    size_t k = h & (r->nslots - 1);
    for (; r->slots[k]; k = (k + 1) & (r->nslots - 1)) {
        const struct regent *e = &r->ent[r->slots[k]];
        if (e->hash == h && e->len == len && !memcmp(e->labels, l, len)) {
            id = r->slots[k] | RID;
            goto out;
        }
    }
    if (!r->nent)
        r->nent = 1; /* id 0 is "none" */
    if (r->nent - 1 >= r->o.max_series)
        goto out;
    if (r->nent >= r->ent_cap) {
        size_t nc = r->ent_cap ? r->ent_cap * 2 : 1024;
        struct regent *ne = realloc(r->ent, nc * sizeof *ne);
        if (!ne)
            goto out;
        r->ent = ne;
        r->ent_cap = nc;
    }
    uint8_t *copy = malloc(len);
    if (!copy)
        goto out;
    memcpy(copy, l, len);
    r->ent[r->nent] = (struct regent){copy, len, h};
    id = (uint32_t)r->nent++;
    r->slots[k] = id;
    id |= RID;
out:
    pthread_mutex_unlock(&r->reg_mu);
    return id;
}

/* A copy of id's labels into b; 0 when id is unknown. */
static int reg_labels(struct remote *r, uint32_t id, struct gp_buf *b)
{
    pthread_mutex_lock(&r->reg_mu);
    id &= ~RID;
    int ok = id && id < r->nent;
    if (ok)
        gp_buf_append(b, (const char *)r->ent[id].labels, r->ent[id].len);
    pthread_mutex_unlock(&r->reg_mu);
    return ok && !b->err;
}

/* ---- selections ------------------------------------------------------------ */

struct pair {
    struct gp_store_series s;
    struct gp_promapi_series d;
    int64_t from;
};

static int cmp_pair(const void *a, const void *b)
{
    const struct pair *x = a, *y = b;
    return (x->s.id > y->s.id) - (x->s.id < y->s.id);
}

/* The window a selection asks for: [*qmin, *qmax]. */
static void window(struct remote *r, int64_t mint, int64_t maxt, int64_t *qmin, int64_t *qmax,
                   int *open_end)
{
    int64_t now = gp_wall_ms();
    *open_end = maxt >= now;
    *qmax = maxt > now + FUTURE_MS ? now + FUTURE_MS : maxt;
    *qmin = mint < *qmax - r->o.lookback_ms && mint == INT64_MIN ? *qmax - r->o.lookback_ms : mint;
    if (*qmin < *qmax - 400LL * 86400000)
        *qmin = *qmax - 400LL * 86400000; /* the longest window that is asked for */
}

int gp_storage_is_remote_selection(const struct gp_store_selection *sel)
{
    const struct rsel *x = sel->arena;
    return x && (const void *)x != (const void *)sel->series;
}

static void rsel_free(struct rsel *x)
{
    for (size_t i = 0; i < x->n; i++) {
        free(x->data[i].labels);
        free(x->data[i].t);
        free(x->data[i].v);
    }
    free(x->data);
    free(x->series);
    free(x->from);
    free(x);
}

void gp_storage_remote_selection_free(struct gp_store_selection *sel)
{
    struct rsel *x = sel->arena;
    pthread_mutex_lock(&live_mu);
    if (x->prev)
        x->prev->next = x->next;
    else
        live = x->next;
    if (x->next)
        x->next->prev = x->prev;
    pthread_mutex_unlock(&live_mu);
    rsel_free(x);
    memset(sel, 0, sizeof *sel);
}

/* With several servers on the cluster, a read that names the job label
 * is about a job, whose ranks may write through any server: the cluster
 * answers it, not this server's window. */
static int job_scoped(const struct remote *r, const struct gp_matcher *m, size_t nm)
{
    for (size_t i = 0; r->name && i < nm; i++)
        if (!strcmp(m[i].name, "job"))
            return 1;
    return 0;
}

static int r_select_since(struct gp_storage *s, const struct gp_matcher *m, size_t nm, int64_t mint,
                          int64_t maxt, int64_t since, struct gp_store_selection *out)
{
    struct remote *r = R(s);
    memset(out, 0, sizeof *out);
    int64_t qmin, qmax;
    int open_end;
    window(r, mint, maxt, &qmin, &qmax, &open_end);
    if (qmin > qmax)
        return GP_OK;
    /* Within the window: its store answers, at embedded speed. An
     * unbounded start keeps remote mode's lookback. */
    if (r->win && !job_scoped(r, m, nm) && gp_rwin_covers(r->win, qmin))
        return gp_storage_select_since(gp_rwin_storage(r->win), m, nm, qmin, maxt, since, out);
    struct gp_buf sel;
    gp_buf_init(&sel, 0);
    selector_of(&sel, m, nm);
    if (sel.err) {
        gp_buf_free(&sel);
        return GP_ENOMEM;
    }
    struct gp_promapi_result res;
    int64_t *from = NULL;
    int rc = since > qmin && since <= qmax ? fetch_since(r, sel.data, qmin, qmax, since, &res, &from)
             : mint == INT64_MIN && qmax - qmin > TAIL_MS
                 ? fetch_unbounded(r, sel.data, qmin, qmax, &res, &from)
                 : fetch(r, sel.data, qmin, qmax, &res);
    gp_buf_free(&sel);
    if (rc || !res.n) {
        free(from);
        gp_promapi_result_free(&res);
        return rc;
    }
    struct pair *p = calloc(res.n, sizeof *p);
    struct rsel *x = calloc(1, sizeof *x);
    if (!p || !x) {
        free(p);
        free(x);
        free(from);
        gp_promapi_result_free(&res);
        return GP_ENOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < res.n; i++) {
        struct gp_promapi_series *d = &res.s[i];
        uint32_t id = reg_id(r, d->labels, d->labels_len);
        if (!id) { /* over max_series: not selectable, as the store would not hold it */
            free(d->labels);
            free(d->t);
            free(d->v);
            continue;
        }
        p[n].d = *d;
        p[n].from = from ? from[i] : qmin;
        /* A series with nothing since `since` (gp_storage_select_since):
         * its times are bounds, not sample times. */
        p[n].s = (struct gp_store_series){.id = id,
                                          .labels = d->labels,
                                          .labels_len = d->labels_len,
                                          .first_ms = d->n ? d->t[0] : qmin,
                                          .last_ms = d->n ? d->t[d->n - 1] : since - 1};
        n++;
    }
    free(res.s);
    free(from);
    qsort(p, n, sizeof *p, cmp_pair);
    x->series = malloc((n ? n : 1) * sizeof *x->series);
    x->data = malloc((n ? n : 1) * sizeof *x->data);
    x->from = malloc((n ? n : 1) * sizeof *x->from);
    if (!x->series || !x->data || !x->from) {
        for (size_t i = 0; i < n; i++) {
            free(p[i].d.labels);
            free(p[i].d.t);
            free(p[i].d.v);
        }
        free(p);
        free(x->series);
        free(x->data);
        free(x->from);
        free(x);
        return GP_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        x->series[i] = p[i].s;
        x->data[i] = p[i].d;
        x->from[i] = p[i].from;
    }
    free(p);
    x->n = n;
    x->owner = s;
    x->qmin = qmin;
    x->qmax = qmax;
    x->open_end = open_end;
    x->made_ms = gp_mono_ms();
    pthread_mutex_lock(&live_mu);
    x->next = live;
    if (live)
        live->prev = x;
    live = x;
    pthread_mutex_unlock(&live_mu);
    out->series = x->series;
    out->n = n;
    out->arena = x;
    return GP_OK;
}

static int r_select(struct gp_storage *s, const struct gp_matcher *m, size_t nm, int64_t mint,
                    int64_t maxt, struct gp_store_selection *out)
{
    return r_select_since(s, m, nm, mint, maxt, INT64_MIN, out);
}

/* Appends the samples in [mint, maxt] of one fetched series. */
static int append_range(const struct gp_promapi_series *d, int64_t mint, int64_t maxt,
                        struct gp_samples *out)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->t[i] >= mint && d->t[i] <= maxt && gp_st_samples_push(out, d->t[i], d->v[i]))
            return GP_ENOMEM;
    return GP_OK;
}

/* The live selection of s holding id (lock held): its index in *at. */
static struct rsel *find_live(struct gp_storage *s, uint32_t id, size_t *at)
{
    int64_t now = gp_mono_ms();
    for (struct rsel *x = live; x; x = x->next) {
        if (x->owner != s || now - x->made_ms > CACHE_AGE_MS)
            continue;
        size_t lo = 0, hi = x->n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (x->series[mid].id < id)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < x->n && x->series[lo].id == id) {
            *at = lo;
            return x;
        }
    }
    return NULL;
}

/* Answers from a live selection: 1 found (rc set), 0 not covered. */
static int from_cache(struct gp_storage *s, uint32_t id, int64_t mint, int64_t maxt,
                      struct gp_samples *out, int *rc)
{
    int found = 0;
    size_t i;
    pthread_mutex_lock(&live_mu);
    struct rsel *x = find_live(s, id, &i);
    if (x && mint >= x->from[i] && (maxt <= x->qmax || x->open_end)) {
        *rc = append_range(&x->data[i], mint, maxt, out);
        found = 1;
    }
    pthread_mutex_unlock(&live_mu);
    if (found)
        atomic_fetch_add(&R(s)->cache_hits, 1);
    return found;
}

/*
 * The newest number in [last_ms - lookback_ms, last_ms] from a live
 * selection: 1 when it answers (*v set, NaN for none). The fetched part
 * need not cover the whole lookback: a number found in it is the newest,
 * as everything after it up to last_ms was fetched too.
 */
static int newest_from_cache(struct gp_storage *s, uint32_t id, int64_t last_ms, int64_t lookback_ms,
                             double *v)
{
    int found = 0;
    size_t i;
    pthread_mutex_lock(&live_mu);
    struct rsel *x = find_live(s, id, &i);
    if (x && last_ms >= x->from[i] && (last_ms <= x->qmax || x->open_end)) {
        const struct gp_promapi_series *d = &x->data[i];
        *v = NAN;
        for (size_t k = d->n; k-- > 0 && d->t[k] >= last_ms - lookback_ms;) {
            if (d->t[k] <= last_ms && !isnan(d->v[k])) {
                *v = d->v[k];
                found = 1;
                break;
            }
        }
        if (!found && last_ms - lookback_ms >= x->from[i])
            found = 1; /* the whole lookback was fetched: none */
    }
    pthread_mutex_unlock(&live_mu);
    if (found)
        atomic_fetch_add(&R(s)->cache_hits, 1);
    return found;
}

static int r_read(struct gp_storage *s, uint32_t id, int64_t mint, int64_t maxt, struct gp_samples *out)
{
    struct remote *r = R(s);
    int rc;
    /* A series selected from the window: every read of it is the window's
     * (a selection is made there only when its range is held). */
    if (r->win && !(id & RID))
        return gp_storage_read(gp_rwin_storage(r->win), id, mint, maxt, out);
    if (mint > maxt || from_cache(s, id, mint, maxt, out, &rc))
        return mint > maxt ? GP_OK : rc;
    struct gp_buf l, sel;
    gp_buf_init(&l, 0);
    gp_buf_init(&sel, 0);
    if (!reg_labels(r, id, &l)) {
        gp_buf_free(&l);
        return l.err ? GP_ENOMEM : GP_OK; /* unknown id: no samples, as the store */
    }
    selector_exact(&sel, (const uint8_t *)l.data, l.len);
    int64_t qmin, qmax;
    int open_end;
    window(r, mint, maxt, &qmin, &qmax, &open_end);
    struct gp_promapi_result res = {0};
    rc = sel.err ? GP_ENOMEM : qmin > qmax ? GP_OK : fetch(r, sel.data, qmin, qmax, &res);
    for (size_t i = 0; !rc && i < res.n; i++)
        if (res.s[i].labels_len == l.len && !memcmp(res.s[i].labels, l.data, l.len))
            rc = append_range(&res.s[i], mint, maxt, out);
    gp_promapi_result_free(&res);
    gp_buf_free(&l);
    gp_buf_free(&sel);
    return rc;
}

static int r_read_rollups(struct gp_storage *s, uint32_t id, int64_t mint, int64_t maxt,
                          struct gp_rollups *out)
{
    if (R(s)->win && !(id & RID))
        return gp_storage_read_rollups(gp_rwin_storage(R(s)->win), id, mint, maxt, out);
    if (mint > maxt)
        return GP_OK;
    int64_t from, to;
    gp_storage_rollup_span(mint, maxt, &from, &to);
    struct gp_samples x = {0};
    int rc = r_read(s, id, from, to, &x);
    if (!rc)
        rc = gp_storage_rollups_of(&x, mint, maxt, out);
    gp_samples_free(&x);
    return rc;
}

static double r_newest_value(struct gp_storage *s, uint32_t id, int64_t last_ms, int64_t lookback_ms,
                             struct gp_samples *scratch)
{
    if (R(s)->win && !(id & RID))
        return gp_storage_newest_value(gp_rwin_storage(R(s)->win), id, last_ms, lookback_ms, scratch);
    scratch->n = 0;
    double v;
    if (newest_from_cache(s, id, last_ms, lookback_ms, &v))
        return v;
    if (r_read(s, id, last_ms - lookback_ms, last_ms, scratch))
        return NAN;
    for (size_t i = scratch->n; i-- > 0;)
        if (!isnan(scratch->v[i]))
            return scratch->v[i];
    return NAN;
}

/* ---- labels ----------------------------------------------------------------- */

/* "1700000000.250": ms as the API's seconds. */
static void form_time(struct gp_buf *f, const char *name, int64_t ms)
{
    char v[40];
    uint64_t a = ms < 0 ? 0 - (uint64_t)ms : (uint64_t)ms;
    snprintf(v, sizeof v, "%s%" PRIu64 ".%03" PRIu64, ms < 0 ? "-" : "", a / 1000, a % 1000);
    form_add(f, name, v);
}

#define NO_MATCH GP_REFILL_NO_MATCH /* as strings()'s nm: no match[] (the refill's fallback) */

/* GET or POST path with a match[] (none when nm is NO_MATCH) and the
 * span (start and end when bounded), the strings sorted and unique to fn. */
static int strings(struct gp_storage *s, const char *path, int get, const struct gp_matcher *m,
                   size_t nm, int64_t start, int64_t end,
                   void (*fn)(void *arg, const char *v, size_t len), void *arg)
{
    struct remote *r = R(s);
    struct gp_buf f, sel, body;
    gp_buf_init(&f, 0);
    gp_buf_init(&sel, 0);
    gp_buf_init(&body, 0);
    /* Always a match[]: without one, VictoriaMetrics 1.79 leaves out
     * names its per-day index has not seen in a label-name lookup. */
    if (nm != NO_MATCH)
        selector_of(&sel, m, nm);
    if (nm != NO_MATCH && !sel.err)
        form_add(&f, "match[]", sel.data);
    if (start != INT64_MIN)
        form_time(&f, "start", start);
    if (end != INT64_MAX)
        form_time(&f, "end", end);
    int rc = sel.err || f.err ? GP_ENOMEM : api_call(r, path, f.data, get, &body);
    gp_buf_free(&f);
    gp_buf_free(&sel);
    if (rc) {
        gp_buf_free(&body); /* what came before a failure */
        return rc;
    }
    struct gp_strset x = {0};
    char perr[400];
    rc = gp_promapi_parse_strings(body.data ? body.data : "", body.len, gp_strset_add, &x, perr,
                                  sizeof perr);
    gp_buf_free(&body);
    if (!rc && x.err)
        rc = x.err;
    if (rc && rc != GP_ENOMEM) {
        atomic_fetch_add(&r->errors, 1);
        rc = fail(502, "%s%s: %s", r->query_root, path, perr);
    }
    if (!rc)
        gp_strset_each(&x, fn, arg);
    gp_strset_free(&x);
    return rc;
}

static int r_label_names(struct gp_storage *s, const struct gp_matcher *m, size_t nm, int64_t start,
                         int64_t end, void (*fn)(void *arg, const char *name, size_t len), void *arg)
{
    /* Bounded and held: the window's index (unbounded means the
     * cluster's whole index, which only the cluster has). */
    if (R(s)->win && start != INT64_MIN && !job_scoped(R(s), m, nm) && gp_rwin_covers(R(s)->win, start))
        return gp_storage_label_names(gp_rwin_storage(R(s)->win), m, nm, start, end, fn, arg);
    return strings(s, "/api/v1/labels", 0, m, nm, start, end, fn, arg);
}

static int r_label_values(struct gp_storage *s, const char *name, const struct gp_matcher *m,
                          size_t nm, int64_t start, int64_t end,
                          void (*fn)(void *arg, const char *value, size_t len), void *arg)
{
    if (R(s)->win && start != INT64_MIN && !job_scoped(R(s), m, nm) &&
        gp_rwin_covers(R(s)->win, start))
        return gp_storage_label_values(gp_rwin_storage(R(s)->win), name, m, nm, start, end, fn, arg);
    char path[320];
    char *e = gp_httpc_escape(name);
    if (!e)
        return GP_ENOMEM;
    snprintf(path, sizeof path, "/api/v1/label/%.256s/values", e);
    free(e);
    return strings(s, path, 1, m, nm, start, end, fn, arg);
}

/* ---- PromQL, computed by the cluster ----------------------------------------------- */

/* The form of q: query, the times, the step and the timeout. */
static void promql_form(const struct gp_storage_promql *q, struct gp_buf *f)
{
    form_add(f, "query", q->query);
    if (q->range) {
        form_time(f, "start", q->start_ms);
        form_time(f, "end", q->end_ms);
        char step[40];
        snprintf(step, sizeof step, "%.3f", (double)q->step_ms / 1e3);
        form_add(f, "step", step);
    } else {
        form_time(f, "time", q->time_ms);
    }
    if (q->timeout_ms > 0) {
        char to[40];
        snprintf(to, sizeof to, "%.3f", (double)q->timeout_ms / 1e3);
        form_add(f, "timeout", to);
    }
    if (q->exact_grid)
        form_add(f, "nocache", "1");
}

static int r_promql(struct gp_storage *s, const struct gp_storage_promql *q, struct gp_buf *out,
                    int *status)
{
    struct remote *r = R(s);
    const char *path = q->range ? "/api/v1/query_range" : "/api/v1/query";
    struct gp_buf f, body;
    gp_buf_init(&f, 0);
    promql_form(q, &f);
    long code = 0;
    /* POST: a long expression fits no URL. */
    int rc = f.err ? GP_ENOMEM : api_request(r, path, f.data, 0, q->timeout_ms, &body, &code);
    gp_buf_free(&f);
    if (!rc && (code < 200 || code > 299)) {
        /* Relay the cluster's own Prometheus error (bad_data with the
         * position, execution, timeout); anything else is the cluster
         * failing, not the query. */
        struct gp_promapi_result x;
        char perr[300] = "";
        int prc = gp_promapi_parse_series(body.data ? body.data : "", body.len, &x, perr, sizeof perr);
        gp_promapi_result_free(&x);
        if (prc != GP_ENET || code < 400) {
            atomic_fetch_add(&r->errors, 1);
            rc = fail(code >= 500 ? 503 : 502, "%s%s: HTTP %ld without a Prometheus error", r->query_root,
                      path, code);
        }
    }
    if (!rc) {
        *status = (int)code;
        gp_buf_append(out, body.data ? body.data : "", body.len);
        if (out->err)
            rc = GP_ENOMEM;
    }
    gp_buf_free(&body);
    return rc;
}

/* Reads the window does not hold move raw samples: an aggregate of them
 * is better asked of the cluster (storage.h gp_storage_pushdown). */
static int r_pushdown(struct gp_storage *s, const struct gp_matcher *m, size_t nm, int64_t mint)
{
    struct remote *r = R(s);
    return !r->win || job_scoped(r, m, nm) || !gp_rwin_holds(r->win, mint);
}

int gp_storage_promql_matrix(struct gp_storage *s, const struct gp_storage_promql *q,
                             struct gp_promapi_result *out)
{
    memset(out, 0, sizeof *out);
    if (!s || s->kind != GP_STORAGE_REMOTE || !q->range)
        return GP_EUNSUPPORTED;
    struct remote *r = R(s);
    struct gp_buf f, body;
    gp_buf_init(&f, 0);
    gp_buf_init(&body, 0);
    promql_form(q, &f);
    int rc = f.err ? GP_ENOMEM : api_call(r, "/api/v1/query_range", f.data, 0, &body);
    gp_buf_free(&f);
    rc = rc ? rc : parse_matrix(r, "/api/v1/query_range", &body, out);
    gp_buf_free(&body);
    if (!rc)
        atomic_fetch_add(&r->pushdowns, 1);
    return rc;
}

/* ---- writes, stats, metrics ---------------------------------------------------- */

#define SERVER_LABEL GP_STORAGE_SERVER_LABEL

/*
 * A copy of req whose every series carries gpulse_server=name, in its
 * sorted place (a value the writer sent is replaced: the receiving server
 * is what the label names). Labels and samples stay views into req; the
 * caller frees out->series and *lab. GP_OK or GP_ENOMEM.
 */
static int name_batch(const char *name, const struct gp_batch *req, struct gp_batch *out,
                      struct gp_label **lab)
{
    *out = *req;
    out->series = calloc(req->nseries ? req->nseries : 1, sizeof *out->series);
    *lab = calloc(req->nlabels_total + req->nseries + 1, sizeof **lab);
    if (!out->series || !*lab) {
        free(out->series);
        free(*lab);
        out->series = NULL;
        *lab = NULL;
        return GP_ENOMEM;
    }
    const struct gp_str key = {SERVER_LABEL, sizeof SERVER_LABEL - 1};
    const struct gp_str val = {name, strlen(name)};
    struct gp_label *l = *lab;
    size_t total = 0;
    for (size_t i = 0; i < req->nseries; i++) {
        const struct gp_series *x = &req->series[i];
        struct gp_series *o = &out->series[i];
        *o = *x;
        o->labels = l;
        int put = 0;
        for (size_t j = 0; j < x->nlabels; j++) {
            const struct gp_str *n = &x->labels[j].name;
            size_t m = n->len < key.len ? n->len : key.len;
            int c = memcmp(n->ptr, key.ptr, m);
            c = c ? c : (n->len > key.len) - (n->len < key.len);
            if (!put && c >= 0) {
                *l++ = (struct gp_label){key, val};
                put = 1;
            }
            if (c)
                *l++ = x->labels[j];
        }
        if (!put)
            *l++ = (struct gp_label){key, val};
        o->nlabels = (size_t)(l - o->labels);
        total += o->nlabels;
    }
    out->nlabels_total = total;
    return GP_OK;
}

const char *gp_storage_server_name(struct gp_storage *s)
{
    return s && s->kind == GP_STORAGE_REMOTE ? R(s)->name : NULL;
}

static int r_append(struct gp_storage *s, const struct gp_batch *req,
                    struct gp_append_result *res, char *err, size_t errlen)
{
    struct remote *r = R(s);
    memset(res, 0, sizeof *res);
    if (!req->nsamples_total)
        return GP_OK;
    struct gp_batch named;
    struct gp_label *lab = NULL;
    if (r->name) {
        if (name_batch(r->name, req, &named, &lab))
            return gp_seterr(err, errlen, GP_ENOMEM, "out of memory labelling a write");
        req = &named;
    }
    struct gp_buf body, raw;
    gp_buf_init(&body, (size_t)1 << 28); /* the largest request max_uncompressed lets in, with room */
    gp_buf_init(&raw, (size_t)1 << 28);
    int rc = gp_rw_encode(req, &body, &raw);
    if (rc) {
        gp_buf_free(&body);
        gp_buf_free(&raw);
        free(named.series);
        free(lab);
        return gp_seterr(err, errlen, rc == GP_EUSAGE ? GP_EUSAGE : GP_ENOMEM,
                         "cannot encode the samples for the remote storage: %s", gp_strerror(rc));
    }
    gp_push_body(r->push, body.data, body.len, (uint32_t)req->nsamples_total, (uint32_t)raw.len,
                 gp_wall_ms());
    gp_buf_free(&body);
    gp_buf_free(&raw);
    res->accepted = req->nsamples_total;
    atomic_fetch_add(&r->forwarded, req->nsamples_total);
    if (r->win)
        gp_rwin_append(r->win, req); /* queued for the cluster already: a failure here costs reads only */
    if (r->name) {
        free(named.series);
        free(lab);
    }
    return GP_OK;
}

static void r_stats(struct gp_storage *s, struct gp_store_stats *st)
{
    struct remote *r = R(s);
    pthread_mutex_lock(&r->reg_mu);
    st->series = r->nent ? r->nent - 1 : 0;
    pthread_mutex_unlock(&r->reg_mu);
    st->samples_appended = atomic_load(&r->forwarded);
    if (r->win) { /* the window's store: what this server holds itself */
        struct gp_store_stats w;
        gp_storage_stats(gp_rwin_storage(r->win), &w);
        st->head_chunks = w.head_chunks;
        st->head_bytes = w.head_bytes;
        if (w.series > st->series)
            st->series = w.series;
    }
}

static int r_send_metadata(struct gp_storage *s, const struct gp_family_meta *m, size_t n, char *err,
                           size_t errlen)
{
    struct remote *r = R(s);
    struct gp_buf body, raw;
    gp_buf_init(&body, 0);
    gp_buf_init(&raw, 0);
    int rc = GP_OK;
    for (size_t at = 0; at < n && !rc; at += GP_STORAGE_META_PER_REQUEST) {
        size_t k = n - at < GP_STORAGE_META_PER_REQUEST ? n - at : GP_STORAGE_META_PER_REQUEST;
        if ((rc = gp_rw_encode_metadata(m + at, k, &body, &raw)))
            gp_seterr(err, errlen, rc, "cannot encode the metadata of '%.*s' and %zu more for the remote storage: %s",
                      (int)(m[at].name.len > 64 ? 64 : m[at].name.len), m[at].name.ptr, k - 1, gp_strerror(rc));
        else
            gp_push_body(r->push, body.data, body.len, 0, (uint32_t)raw.len, gp_wall_ms());
    }
    gp_buf_free(&body);
    gp_buf_free(&raw);
    return rc;
}

static void r_walk_metrics(struct gp_storage *s, struct gp_metric_sink *b)
{
    struct remote *r = R(s);
    uint64_t wreads = 0, wfilled = 0;
    int64_t wheld = 0;
    if (r->win)
        gp_rwin_counts(r->win, &wreads, &wfilled, &wheld);
    const struct {
        int m;
        double v;
    } rows[] = {
        {GP_M_STORAGE_REMOTE_QUERIES, (double)atomic_load(&r->queries)},
        {GP_M_STORAGE_REMOTE_QUERY_ERRORS, (double)atomic_load(&r->errors)},
        {GP_M_STORAGE_REMOTE_QUERY_SECONDS, (double)atomic_load(&r->query_ns) / 1e9},
        {GP_M_STORAGE_REMOTE_SAMPLES_READ, (double)atomic_load(&r->samples_read)},
        {GP_M_STORAGE_REMOTE_CACHE_HITS, (double)atomic_load(&r->cache_hits)},
        {GP_M_STORAGE_REMOTE_FORWARDED, (double)atomic_load(&r->forwarded)},
        {GP_M_STORAGE_REMOTE_ANSWER_BYTES, (double)atomic_load(&r->answer_bytes)},
        {GP_M_STORAGE_REMOTE_PUSHDOWNS, (double)atomic_load(&r->pushdowns)},
        {GP_M_STORAGE_REMOTE_WINDOW_READS, (double)wreads},
        {GP_M_STORAGE_REMOTE_WINDOW_REFILLED, (double)wfilled},
        {GP_M_STORAGE_REMOTE_WINDOW_HELD, (double)wheld / 1e3},
    };
    size_t nrows = sizeof rows / sizeof rows[0];
    if (!r->win)
        nrows -= 3; /* the window's rows, last */
    for (size_t i = 0; i < nrows; i++)
        gp_metric_one(b, rows[i].m, rows[i].v);
    gp_push_walk_metrics(r->push, b);
}

/* ---- the local window's refill (storage_refill.c) ------------------------------ */

int gp_storage_remote_refused(int rc)
{
    return rc == GP_ENET && last_http == 422 &&
           (strstr(last_err, "exceed") || strstr(last_err, "too many") ||
            strstr(last_err, "limit"));
}

static int refill_fetch(void *arg, const char *sel, int64_t qmin, int64_t qmax,
                        struct gp_promapi_result *res)
{
    last_http = 0;
    return fetch(R(arg), sel, qmin, qmax, res);
}

static int refill_names(void *arg, const struct gp_matcher *m, size_t nm, int64_t qmin, int64_t qmax,
                        void (*fn)(void *fnarg, const char *name, size_t len), void *fnarg)
{
    last_http = 0;
    if (nm == NO_MATCH)
        return strings(arg, "/api/v1/label/__name__/values", 1, NULL, NO_MATCH, qmin, qmax, fn, fnarg);
    return r_label_values(arg, "__name__", m, nm, qmin, qmax, fn, fnarg);
}

/* Gives the write queue's backlog from before the restart DRAIN_MS to
 * reach the cluster, then refills the window (storage_refill.c). */
static void refill(struct gp_storage *s)
{
    struct remote *r = R(s);
    int64_t t0 = gp_mono_ms();
    for (;;) {
        struct gp_push_stats ps;
        gp_push_stats(r->push, &ps);
        uint64_t left = 0;
        for (size_t i = 0; i < ps.nt; i++)
            left += ps.t[i].queue_bytes; /* not yet delivered (the disk's files may lag) */
        if (!left || gp_mono_ms() - t0 > DRAIN_MS)
            break;
        nanosleep(&(struct timespec){.tv_nsec = 100000000}, NULL);
    }
    struct gp_refill_src src = {.arg = s, .fetch = refill_fetch, .names = refill_names};
    gp_rwin_refill(r->win, r->name, &src, t0);
}

/* ---- open and close ---------------------------------------------------------- */

static void r_close(struct gp_storage *s)
{
    struct remote *r = R(s);
    if (!r)
        return;
    gp_push_stop(r->push);
    gp_rwin_close(r->win);
    for (size_t i = 0; i < r->npool; i++)
        gp_httpc_close(r->pool[i]);
    for (size_t i = 0; i < r->nhdr; i++) {
        memset(r->hdr_store[i], 0, strlen(r->hdr_store[i])); /* credentials */
        free(r->hdr_store[i]);
    }
    for (size_t i = 1; i < r->nent; i++)
        free(r->ent[i].labels);
    free(r->ent);
    free(r->slots);
    free(r->query_root);
    free(r->write_url);
    free(r->name);
    pthread_mutex_destroy(&r->reg_mu);
    pthread_mutex_destroy(&r->pool_mu);
    gp_httpc_global_cleanup();
    free(r);
}

static int add_header(struct remote *r, const char *h)
{
    if (r->nhdr >= sizeof r->hdr_store / sizeof r->hdr_store[0])
        return GP_ETOOBIG;
    if (!(r->hdr_store[r->nhdr] = strdup(h)))
        return GP_ENOMEM;
    r->nhdr++;
    return GP_OK;
}

static void base64(const unsigned char *in, size_t n, char *out)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t k = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) |
                     (i + 2 < n ? in[i + 2] : 0);
        out[k++] = a[v >> 18 & 63];
        out[k++] = a[v >> 12 & 63];
        out[k++] = i + 1 < n ? a[v >> 6 & 63] : '=';
        out[k++] = i + 2 < n ? a[v & 63] : '=';
    }
    out[k] = '\0';
}

/* Authorization (bearer token file, or basic auth) and the extra headers. */
static int auth_headers(struct remote *r, const struct gp_storage_remote_options *o, char *err,
                        size_t errlen)
{
    char tok[4096], h[8192];
    int rc = GP_OK;
    if (o->bearer_token_file && *o->bearer_token_file) {
        rc = gp_token_load(NULL, o->bearer_token_file, "remote_bearer_token_file", tok, sizeof tok,
                           err, errlen);
        if (!rc) {
            snprintf(h, sizeof h, "Authorization: Bearer %s", tok);
            rc = add_header(r, h);
        }
    } else if (o->basic_user && *o->basic_user) {
        rc = gp_token_load(NULL, o->basic_password_file, "remote_basic_password_file", tok,
                           sizeof tok, err, errlen);
        char up[4400], b64[6000];
        if (!rc) {
            int n = snprintf(up, sizeof up, "%s:%s", o->basic_user, tok);
            base64((const unsigned char *)up, (size_t)n, b64);
            snprintf(h, sizeof h, "Authorization: Basic %s", b64);
            rc = add_header(r, h);
            memset(up, 0, sizeof up);
            memset(b64, 0, sizeof b64);
        }
    }
    memset(tok, 0, sizeof tok);
    memset(h, 0, sizeof h);
    for (size_t i = 0; !rc && i < o->nheaders; i++)
        rc = add_header(r, o->headers[i]);
    if (rc && rc != GP_ECONFIG)
        rc = gp_seterr(err, errlen, rc, "remote storage headers: %s", gp_strerror(rc));
    return rc;
}

int gp_storage_remote_open(struct gp_storage *s, const struct gp_storage_remote_options *o, char *err,
                           size_t errlen)
{
    if (!o->write_url || !*o->write_url || !o->query_url || !*o->query_url)
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "remote storage needs remote_write_url and remote_query_url");
    if (gp_httpc_global_init())
        return gp_seterr(err, errlen, GP_EINTERNAL, "libcurl failed to initialise");
    struct remote *r = calloc(1, sizeof *r);
    if (!r) {
        gp_httpc_global_cleanup();
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    }
    s->impl = r;
    r->o = *o;
    if (!r->o.query_timeout_ms)
        r->o.query_timeout_ms = 30000;
    if (!r->o.write_timeout_ms)
        r->o.write_timeout_ms = 30000;
    if (!r->o.lookback_ms)
        r->o.lookback_ms = 15 * 60000;
    if (!r->o.max_series)
        r->o.max_series = 10000000;
    if (!r->o.buffer_max)
        r->o.buffer_max = 1ull << 30;
    pthread_mutex_init(&r->reg_mu, NULL);
    pthread_mutex_init(&r->pool_mu, NULL);
    r->query_root = strdup(o->query_url);
    r->write_url = strdup(o->write_url);
    if (o->server_name && *o->server_name)
        r->name = strdup(o->server_name);
    int rc = r->query_root && r->write_url && (r->name || !o->server_name || !*o->server_name) ? GP_OK : gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    if (!rc) {
        size_t n = strlen(r->query_root);
        while (n && r->query_root[n - 1] == '/')
            r->query_root[--n] = '\0';
        if (strncmp(r->query_root, "http://", 7) && strncmp(r->query_root, "https://", 8))
            rc = gp_seterr(err, errlen, GP_ECONFIG,
                           "remote_query_url must be an http:// or https:// URL, not '%s'",
                           o->query_url);
    }
    if (!rc)
        rc = auth_headers(r, o, err, errlen);
    if (!rc) {
        const char *urls[1] = {r->write_url};
        struct gp_push_options po = {
            .urls = urls,
            .nurls = 1,
            .buffer_dir = o->buffer_dir,
            .buffer_max = r->o.buffer_max,
            .queue_max = r->o.buffer_max,
            .timeout_ms = r->o.write_timeout_ms,
            .headers = (const char *const *)r->hdr_store,
            .nheaders = r->nhdr,
        };
        rc = gp_push_start(&r->push, &po, err, errlen);
    }
    if (!rc && o->window_ms > 0 && o->window_dir && *o->window_dir)
        rc = gp_rwin_open(&r->win, o->window_dir, o->window_ms, err, errlen);
    if (rc) {
        r_close(s);
        s->impl = NULL;
        return rc;
    }
    /* The caller's strings were needed only here (what is kept is copied). */
    r->o.write_url = r->o.query_url = r->o.buffer_dir = r->o.window_dir = r->o.server_name = NULL;
    r->o.bearer_token_file = r->o.basic_user = r->o.basic_password_file = NULL;
    memset(r->o.headers, 0, sizeof r->o.headers);
    char label[512];
    gp_httpc_url_label(r->query_root, label, sizeof label);
    gp_log(GP_LOG_INFO, "storage", "remote storage", "query=%s lookback_ms=%" PRId64 " window_ms=%" PRId64,
           label, r->o.lookback_ms, r->win ? r->o.window_ms : 0);
    if (r->win)
        refill(s);
    return GP_OK;
}

/* The window's series without a copy when it covers the range (as
 * r_select_since decides), else the cluster's selection visited. */
static int r_select_each(struct gp_storage *s, const struct gp_matcher *m, size_t nm, int64_t mint,
                         int64_t maxt, gp_store_series_fn fn, void *arg)
{
    struct remote *r = R(s);
    int64_t qmin, qmax;
    int open_end;
    window(r, mint, maxt, &qmin, &qmax, &open_end);
    if (qmin <= qmax && r->win && !job_scoped(r, m, nm) && gp_rwin_covers(r->win, qmin))
        return gp_storage_select_each(gp_rwin_storage(r->win), m, nm, qmin, maxt, fn, arg);
    return gp_storage_each_of_select(s, m, nm, mint, maxt, fn, arg);
}

const struct gp_storage_ops gp_storage_remote_ops = {
    .name = "remote",
    .append = r_append,
    .select = r_select,
    .select_since = r_select_since,
    .select_each = r_select_each,
    .read = r_read,
    .read_rollups = r_read_rollups,
    .newest_value = r_newest_value,
    .label_names = r_label_names,
    .label_values = r_label_values,
    .promql = r_promql,
    .pushdown = r_pushdown,
    .stats = r_stats,
    .walk_metrics = r_walk_metrics,
    .send_metadata = r_send_metadata,
    .close = r_close,
};
