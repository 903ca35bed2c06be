/*
 * selfmetrics.c - the server's own /metrics (Prometheus text 0.0.4).
 *
 * Families: ingest (samples stored, duplicates dropped, samples rejected
 * by reason, whole requests refused by reason, bytes in flight), HTTP
 * (requests by handler and code, request latency histograms: writes in
 * gpulse_server_write_duration_seconds, queries in
 * gpulse_server_query_duration_seconds by handler), the store (series,
 * head chunks and bytes, WAL bytes and syncs, disk bytes, blocks,
 * checkpoints, compactions, paused writes and their resumes, sample
 * time range, last recovery), and
 * start time and build info, the dashboard's streams (open, events,
 * drops). Names follow Prometheus's conventions (base units, _total for
 * counters), so `promtool check metrics` is clean.
 * In `gpulse up` the agent's exposition follows (server.h's hook); the
 * self-scrape (selfscrape.c) stores the server's own part only.
 */
#include "server_int.h"

#include "server/metadata.h"

#include "lib/err.h"
#include "lib/metrics.h"
#include "state/state.h"

#include <stdio.h>
#include <string.h>

const double gp_srv_hist_bounds[GP_SRV_HIST_BUCKETS] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};

void gp_srv_observe(struct gp_srv_hist *h, int64_t ns)
{
    if (ns < 0)
        ns = 0;
    double sec = (double)ns / 1e9;
    size_t i = 0;
    while (i < GP_SRV_HIST_BUCKETS && sec > gp_srv_hist_bounds[i])
        i++;
    if (i < GP_SRV_HIST_BUCKETS)
        gp_srv_count(&h->bucket[i], 1);
    gp_srv_count(&h->sum_ns, (uint64_t)ns);
    gp_srv_count(&h->count, 1); /* last: a reader sees count <= the buckets' sum + the +Inf rest */
}

/* A family of one unlabelled series. */
static void one(struct gp_buf *b, enum gp_metric m, double v)
{
    gp_metric_head(b, m);
    gp_buf_printf(b, "%s ", gp_metric_name(m));
    gp_buf_put_double(b, v);
    gp_buf_putc(b, '\n');
}

static void hist(struct gp_buf *b, const char *name, const char *label, const struct gp_srv_hist *h)
{
    uint64_t cum = 0;
    const char *sep = label[0] ? "," : "";
    for (size_t i = 0; i < GP_SRV_HIST_BUCKETS; i++) {
        cum += gp_srv_get(&h->bucket[i]);
        gp_buf_printf(b, "%s_bucket{%s%sle=\"", name, label, sep);
        gp_buf_put_double(b, gp_srv_hist_bounds[i]);
        gp_buf_printf(b, "\"} %llu\n", (unsigned long long)cum);
    }
    uint64_t count = gp_srv_get(&h->count);
    if (count < cum)
        count = cum;
    gp_buf_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, label, sep, (unsigned long long)count);
    gp_buf_printf(b, "%s_sum%s%s%s ", name, label[0] ? "{" : "", label, label[0] ? "}" : "");
    gp_buf_put_double(b, (double)gp_srv_get(&h->sum_ns) / 1e9);
    gp_buf_printf(b, "\n%s_count%s%s%s %llu\n", name, label[0] ? "{" : "", label, label[0] ? "}" : "",
                  (unsigned long long)count);
}

static const char *const route_names[] = {
#define GP_SRV_ROUTE_NAME_(id, name) name,
    GP_SRV_ROUTES(GP_SRV_ROUTE_NAME_)
#undef GP_SRV_ROUTE_NAME_
};
static const char *const reject_names[] = {
#define GP_SRV_REJ_NAME_(id, name) name,
    GP_SRV_REJECTS(GP_SRV_REJ_NAME_)
#undef GP_SRV_REJ_NAME_
};
static const char *const refusal_names[] = {
#define GP_SRV_REF_NAME_(id, name) name,
    GP_SRV_REFUSALS(GP_SRV_REF_NAME_)
#undef GP_SRV_REF_NAME_
};

static void store_families(struct gp_buf *b, struct gp_storage *st)
{
    struct gp_store_stats x;
    memset(&x, 0, sizeof x);
    if (st)
        gp_storage_stats(st, &x);
    one(b, GP_M_SRV_SERIES, (double)x.series);
    one(b, GP_M_SRV_HEAD_CHUNKS, (double)x.head_chunks);
    one(b, GP_M_SRV_HEAD_BYTES, (double)x.head_bytes);
    one(b, GP_M_SRV_WAL_BYTES, (double)x.wal_bytes);
    one(b, GP_M_SRV_WAL_SYNCS,
        (double)x.wal_syncs);
    one(b, GP_M_SRV_DISK_BYTES,
        (double)x.disk_bytes);
    one(b, GP_M_SRV_BLOCKS, (double)x.blocks);
    one(b, GP_M_SRV_CHECKPOINTS,
        (double)x.checkpoints);
    one(b, GP_M_SRV_COMPACTIONS,
        (double)x.compactions);
    one(b, GP_M_SRV_WRITES_PAUSED, x.writes_paused ? 1 : 0);
    one(b, GP_M_SRV_WRITE_ERRORS, (double)x.write_errors);
    one(b, GP_M_SRV_WRITE_RESUMES, (double)x.write_resumes);
    if (st && x.newest_ms >= x.oldest_ms && x.series) {
        one(b, GP_M_SRV_OLDEST, (double)x.oldest_ms / 1e3);
        one(b, GP_M_SRV_NEWEST, (double)x.newest_ms / 1e3);
    }
    one(b, GP_M_SRV_RECOVERY, x.replay_seconds);
    one(b, GP_M_SRV_RECOVERED,
        (double)x.replayed_samples);
    gp_metric_head(b, GP_M_SRV_STORE_DAMAGE);
    for (int i = 0; i < GP_STORE_DMG_COUNT; i++)
        gp_buf_printf(b, "%s{what=\"%s\"} %d\n", gp_metric_name(GP_M_SRV_STORE_DAMAGE),
                      gp_store_damage_label(1u << i), (x.damage >> i) & 1);
    one(b, GP_M_SRV_SERIES_LOST, (double)x.series_lost);
    one(b, GP_M_SRV_WAL_CORRUPT, (double)x.wal_corrupt_records);
    one(b, GP_M_SRV_WAL_RECOVERED, (double)x.wal_recovered_records);
    one(b, GP_M_SRV_DAMAGED_READS, (double)x.damaged_chunks_read);
}

/* The HTTP layer's refusals (net/http.h); zeros before it listens. */
static void http_families(struct gp_buf *b, struct gp_http *h)
{
    struct gp_http_stats x;
    memset(&x, 0, sizeof x);
    if (h)
        gp_http_stats(h, &x);
    gp_metric_head(b, GP_M_SRV_HTTP_FRAMING);
    for (int i = GP_HTTP_FRAME_OK + 1; i < GP_HTTP_FRAME__COUNT; i++)
        gp_buf_printf(b, "%s{reason=\"%s\"} %llu\n", gp_metric_name(GP_M_SRV_HTTP_FRAMING),
                      gp_http_framing_name((enum gp_http_framing)i),
                      (unsigned long long)x.framing[i]);
    gp_metric_head(b, GP_M_SRV_HTTP_CONN_REFUSED);
    const struct {
        const char *reason;
        uint64_t n;
    } conn[] = {{"max_connections", x.refused_max_connections},
                {"max_per_address", x.refused_per_address},
                {"reserve", x.refused_reserve}};
    for (size_t i = 0; i < sizeof conn / sizeof conn[0]; i++)
        gp_buf_printf(b, "%s{reason=\"%s\"} %llu\n", gp_metric_name(GP_M_SRV_HTTP_CONN_REFUSED),
                      conn[i].reason, (unsigned long long)conn[i].n);
    gp_metric_head(b, GP_M_SRV_HTTP_LINGER);
    gp_buf_printf(b, "%s{outcome=\"drained\"} %llu\n%s{outcome=\"too_many\"} %llu\n",
                  gp_metric_name(GP_M_SRV_HTTP_LINGER), (unsigned long long)x.lingered,
                  gp_metric_name(GP_M_SRV_HTTP_LINGER), (unsigned long long)x.linger_dropped);
}

int gp_srv_render_own_metrics(struct gp_server *s, struct gp_buf *b)
{
    one(b, GP_M_SRV_INGESTED,
        (double)gp_srv_get(&s->samples_ingested));
    one(b, GP_M_SRV_DUPLICATE,
        (double)gp_srv_get(&s->samples_duplicate));
    one(b, GP_M_SRV_SERIES_CREATED,
        (double)gp_srv_get(&s->series_created));
    gp_metric_head(b, GP_M_SRV_REJECTED);
    for (size_t i = 0; i < GP_SRV_REJ_COUNT; i++)
        gp_buf_printf(b, "%s{reason=\"%s\"} %llu\n", gp_metric_name(GP_M_SRV_REJECTED), reject_names[i],
                      (unsigned long long)gp_srv_get(&s->rejected[i]));
    gp_metric_head(b, GP_M_SRV_REFUSED);
    for (size_t i = 0; i < GP_SRV_REF_COUNT; i++)
        gp_buf_printf(b, "%s{reason=\"%s\"} %llu\n", gp_metric_name(GP_M_SRV_REFUSED),
                      refusal_names[i], (unsigned long long)gp_srv_get(&s->refused[i]));
    one(b, GP_M_SRV_INFLIGHT, (double)gp_srv_get(&s->inflight));
    one(b, GP_M_SRV_INFLIGHT_LIMIT,
        (double)s->cfg.max_inflight_bytes);

    gp_metric_head(b, GP_M_SRV_HTTP_REQUESTS);
    for (size_t r = 0; r < GP_SRV_R_COUNT; r++)
        for (int c = 0; c < 600; c++) {
            uint64_t n = gp_srv_get(&s->requests[r][c]);
            if (n)
                gp_buf_printf(b, "%s{handler=\"%s\",code=\"%d\"} %llu\n",
                              gp_metric_name(GP_M_SRV_HTTP_REQUESTS),
                              route_names[r], c, (unsigned long long)n);
        }
    http_families(b, s->http);
    gp_metric_head(b, GP_M_SRV_WRITE_DURATION);
    hist(b, gp_metric_name(GP_M_SRV_WRITE_DURATION), "", &s->route_hist[GP_SRV_R_WRITE]);
    gp_metric_head(b, GP_M_SRV_QUERY_DURATION);
    for (size_t r = GP_SRV_R_QUERY_RANGE; r <= GP_SRV_R_GPUS; r++) {
        char label[64];
        snprintf(label, sizeof label, "handler=\"%s\"", route_names[r]);
        hist(b, gp_metric_name(GP_M_SRV_QUERY_DURATION), label, &s->route_hist[r]);
    }

    int state = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
    one(b, GP_M_SRV_STORE_READY,
        state == GP_SRV_READY && !gp_storage_write_paused(gp_srv_store(s), NULL, 0) ? 1 : 0);
    store_families(b, gp_srv_store(s));
    gp_storage_render_metrics(gp_srv_store(s), b);
    gp_srv_render_alert_metrics(s, b);
    gp_srv_render_notify_metrics(s, b);
    gp_srv_render_stream_metrics(s, b);
    one(b, GP_M_SRV_START,
        (double)s->start_ms / 1e3);
    one(b, GP_M_SRV_STATE_DAMAGED, gp_state_damaged(s->cfg.data_dir, NULL, 0));
    size_t meta_families;
    uint64_t meta_dropped = gp_srv_meta_stats(gp_srv_store(s) ? s->meta : NULL, &meta_families);
    one(b, GP_M_SRV_METADATA_FAMILIES, (double)meta_families);
    one(b, GP_M_SRV_METADATA_DROPPED, (double)meta_dropped);
    one(b, GP_M_SRV_SELF_SCRAPES, (double)gp_srv_get(&s->self_scrapes));
    one(b, GP_M_SRV_SELF_SCRAPE_FAILURES, (double)gp_srv_get(&s->self_scrape_failures));
    return b->err;
}

int gp_srv_render_metrics(struct gp_server *s, struct gp_buf *b)
{
    gp_srv_render_own_metrics(s, b);
    pthread_mutex_lock(&s->hook_mu);
    int rc = GP_OK;
    if (s->hook) {
        rc = s->hook(s->hook_ctx, b);
    } else {
        gp_metric_head(b, GP_M_BUILD_INFO);
        gp_buf_printf(b, "%s{version=\"%s\",role=\"server\"} 1\n", gp_metric_name(GP_M_BUILD_INFO),
                      GP_VERSION);
    }
    pthread_mutex_unlock(&s->hook_mu);
    return rc ? rc : b->err;
}
