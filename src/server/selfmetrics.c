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
#include "lib/metric_sink.h"
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

/* A histogram's series (name_bucket per bound and +Inf, _sum, _count),
 * with the label l when l->name is set. */
static void hist(struct gp_metric_sink *k, const char *name, const struct gp_metric_label *l,
                 const struct gp_srv_hist *h)
{
    char bucket[96], sum[96], cnt[96], le[32];
    snprintf(bucket, sizeof bucket, "%s_bucket", name);
    snprintf(sum, sizeof sum, "%s_sum", name);
    snprintf(cnt, sizeof cnt, "%s_count", name);
    struct gp_metric_label ls[2] = {l->name ? *l : (struct gp_metric_label){"le", le}, {"le", le}};
    size_t nl = l->name ? 2 : 1;
    uint64_t cum = 0;
    for (size_t i = 0; i < GP_SRV_HIST_BUCKETS; i++) {
        cum += gp_srv_get(&h->bucket[i]);
        snprintf(le, sizeof le, "%.15g", gp_srv_hist_bounds[i]); /* the bounds are short decimals */
        k->sample(k, bucket, NULL, ls, nl, (double)cum);
    }
    uint64_t count = gp_srv_get(&h->count);
    if (count < cum)
        count = cum;
    snprintf(le, sizeof le, "+Inf");
    k->sample(k, bucket, NULL, ls, nl, (double)count);
    k->sample(k, sum, NULL, ls, nl - 1, (double)gp_srv_get(&h->sum_ns) / 1e9);
    k->sample(k, cnt, NULL, ls, nl - 1, (double)count);
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

static void store_families(struct gp_metric_sink *b, struct gp_storage *st)
{
    struct gp_store_stats x;
    memset(&x, 0, sizeof x);
    if (st)
        gp_storage_stats(st, &x);
    gp_metric_one(b, GP_M_SRV_SERIES, (double)x.series);
    gp_metric_one(b, GP_M_SRV_HEAD_CHUNKS, (double)x.head_chunks);
    gp_metric_one(b, GP_M_SRV_HEAD_BYTES, (double)x.head_bytes);
    gp_metric_one(b, GP_M_SRV_WAL_BYTES, (double)x.wal_bytes);
    gp_metric_one(b, GP_M_SRV_WAL_SYNCS,
        (double)x.wal_syncs);
    gp_metric_one(b, GP_M_SRV_DISK_BYTES,
        (double)x.disk_bytes);
    gp_metric_one(b, GP_M_SRV_BLOCKS, (double)x.blocks);
    gp_metric_one(b, GP_M_SRV_CHECKPOINTS,
        (double)x.checkpoints);
    gp_metric_one(b, GP_M_SRV_COMPACTIONS,
        (double)x.compactions);
    gp_metric_one(b, GP_M_SRV_WRITES_PAUSED, x.writes_paused ? 1 : 0);
    gp_metric_one(b, GP_M_SRV_WRITE_ERRORS, (double)x.write_errors);
    gp_metric_one(b, GP_M_SRV_WRITE_RESUMES, (double)x.write_resumes);
    if (st && x.newest_ms >= x.oldest_ms && x.series) {
        gp_metric_one(b, GP_M_SRV_OLDEST, (double)x.oldest_ms / 1e3);
        gp_metric_one(b, GP_M_SRV_NEWEST, (double)x.newest_ms / 1e3);
    }
    gp_metric_one(b, GP_M_SRV_RECOVERY, x.replay_seconds);
    gp_metric_one(b, GP_M_SRV_RECOVERED,
        (double)x.replayed_samples);
    gp_metric_family(b, GP_M_SRV_STORE_DAMAGE);
    for (int i = 0; i < GP_STORE_DMG_COUNT; i++)
        gp_metric_sample(b, GP_M_SRV_STORE_DAMAGE, NULL, "what", gp_store_damage_label(1u << i),
                         (x.damage >> i) & 1);
    gp_metric_one(b, GP_M_SRV_SERIES_LOST, (double)x.series_lost);
    gp_metric_one(b, GP_M_SRV_WAL_CORRUPT, (double)x.wal_corrupt_records);
    gp_metric_one(b, GP_M_SRV_WAL_RECOVERED, (double)x.wal_recovered_records);
    gp_metric_one(b, GP_M_SRV_DAMAGED_READS, (double)x.damaged_chunks_read);
}

/* The HTTP layer's refusals (net/http.h); zeros before it listens. */
static void http_families(struct gp_metric_sink *k, struct gp_http *h)
{
    struct gp_http_stats x;
    memset(&x, 0, sizeof x);
    if (h)
        gp_http_stats(h, &x);
    gp_metric_family(k, GP_M_SRV_HTTP_FRAMING);
    for (int i = GP_HTTP_FRAME_OK + 1; i < GP_HTTP_FRAME__COUNT; i++)
        gp_metric_sample(k, GP_M_SRV_HTTP_FRAMING, NULL, "reason",
                         gp_http_framing_name((enum gp_http_framing)i), (double)x.framing[i]);
    gp_metric_family(k, GP_M_SRV_HTTP_CONN_REFUSED);
    const struct {
        const char *reason;
        uint64_t n;
    } conn[] = {{"max_connections", x.refused_max_connections},
                {"max_per_address", x.refused_per_address},
                {"reserve", x.refused_reserve}};
    for (size_t i = 0; i < sizeof conn / sizeof conn[0]; i++)
        gp_metric_sample(k, GP_M_SRV_HTTP_CONN_REFUSED, NULL, "reason", conn[i].reason, (double)conn[i].n);
    gp_metric_family(k, GP_M_SRV_HTTP_LINGER);
    gp_metric_sample(k, GP_M_SRV_HTTP_LINGER, NULL, "outcome", "drained", (double)x.lingered);
    gp_metric_sample(k, GP_M_SRV_HTTP_LINGER, NULL, "outcome", "too_many", (double)x.linger_dropped);
}

void gp_srv_walk_own_metrics(struct gp_server *s, struct gp_metric_sink *b)
{
    gp_metric_one(b, GP_M_SRV_INGESTED,
        (double)gp_srv_get(&s->samples_ingested));
    gp_metric_one(b, GP_M_SRV_DUPLICATE,
        (double)gp_srv_get(&s->samples_duplicate));
    gp_metric_one(b, GP_M_SRV_SERIES_CREATED,
        (double)gp_srv_get(&s->series_created));
    gp_metric_family(b, GP_M_SRV_REJECTED);
    for (size_t i = 0; i < GP_SRV_REJ_COUNT; i++)
        gp_metric_sample(b, GP_M_SRV_REJECTED, NULL, "reason", reject_names[i],
                         (double)gp_srv_get(&s->rejected[i]));
    gp_metric_family(b, GP_M_SRV_REFUSED);
    for (size_t i = 0; i < GP_SRV_REF_COUNT; i++)
        gp_metric_sample(b, GP_M_SRV_REFUSED, NULL, "reason", refusal_names[i],
                         (double)gp_srv_get(&s->refused[i]));
    gp_metric_one(b, GP_M_SRV_INFLIGHT, (double)gp_srv_get(&s->inflight));
    gp_metric_one(b, GP_M_SRV_INFLIGHT_LIMIT,
        (double)s->cfg.max_inflight_bytes);

    gp_metric_family(b, GP_M_SRV_HTTP_REQUESTS);
    for (size_t r = 0; r < GP_SRV_R_COUNT; r++)
        for (int c = 0; c < 600; c++) {
            uint64_t n = gp_srv_get(&s->requests[r][c]);
            if (!n)
                continue;
            char code[12];
            snprintf(code, sizeof code, "%d", c);
            const struct gp_metric_label l[] = {{"handler", route_names[r]}, {"code", code}};
            b->sample(b, gp_metric_name(GP_M_SRV_HTTP_REQUESTS), NULL, l, 2, (double)n);
        }
    http_families(b, s->http);
    gp_metric_family(b, GP_M_SRV_WRITE_DURATION);
    hist(b, gp_metric_name(GP_M_SRV_WRITE_DURATION), &(struct gp_metric_label){NULL, NULL},
         &s->route_hist[GP_SRV_R_WRITE]);
    gp_metric_family(b, GP_M_SRV_QUERY_DURATION);
    for (size_t r = GP_SRV_R_QUERY_RANGE; r <= GP_SRV_R_GPUS; r++)
        hist(b, gp_metric_name(GP_M_SRV_QUERY_DURATION), &(struct gp_metric_label){"handler", route_names[r]},
             &s->route_hist[r]);

    int state = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
    gp_metric_one(b, GP_M_SRV_STORE_READY,
        state == GP_SRV_READY && !gp_storage_write_paused(gp_srv_store(s), NULL, 0) ? 1 : 0);
    store_families(b, gp_srv_store(s));
    gp_storage_walk_metrics(gp_srv_store(s), b);
    gp_srv_walk_alert_metrics(s, b);
    gp_srv_walk_notify_metrics(s, b);
    gp_srv_walk_stream_metrics(s, b);
    gp_metric_one(b, GP_M_SRV_START,
        (double)s->start_ms / 1e3);
    gp_metric_one(b, GP_M_SRV_STATE_DAMAGED, gp_state_damaged(s->cfg.data_dir, NULL, 0));
    size_t meta_families;
    uint64_t meta_dropped = gp_srv_meta_stats(gp_srv_store(s) ? s->meta : NULL, &meta_families);
    gp_metric_one(b, GP_M_SRV_METADATA_FAMILIES, (double)meta_families);
    gp_metric_one(b, GP_M_SRV_METADATA_DROPPED, (double)meta_dropped);
    gp_metric_one(b, GP_M_SRV_SELF_SCRAPES, (double)gp_srv_get(&s->self_scrapes));
    gp_metric_one(b, GP_M_SRV_SELF_SCRAPE_FAILURES, (double)gp_srv_get(&s->self_scrape_failures));
}

int gp_srv_render_metrics(struct gp_server *s, struct gp_buf *b)
{
    struct gp_metric_text_sink t;
    gp_metric_text_sink_init(&t, b);
    gp_srv_walk_own_metrics(s, &t.base);
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
