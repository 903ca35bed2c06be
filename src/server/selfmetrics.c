/*
 * selfmetrics.c - the server's own /metrics (Prometheus text 0.0.4).
 *
 * Families: ingest (samples stored, duplicates dropped, samples rejected
 * by reason, whole requests refused by reason, bytes in flight), HTTP
 * (requests by handler and code, request latency histograms: writes in
 * gpulse_server_write_duration_seconds, queries in
 * gpulse_server_query_duration_seconds by handler), the store (series,
 * head chunks and bytes, WAL bytes and syncs, disk bytes, blocks,
 * checkpoints, compactions, sample time range, last recovery), and
 * start time and build info, the dashboard's streams (open, events,
 * drops). Names follow Prometheus's conventions (base units, _total for
 * counters), so `promtool check metrics` is clean.
 * In `gpulse up` the agent's exposition follows (server.h's hook).
 */
#include "server_int.h"

#include "lib/err.h"

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

static void family(struct gp_buf *b, const char *name, const char *type, const char *help)
{
    gp_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void one(struct gp_buf *b, const char *name, const char *type, const char *help, double v)
{
    family(b, name, type, help);
    gp_buf_printf(b, "%s ", name);
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

static void store_families(struct gp_buf *b, struct gp_store *st)
{
    struct gp_store_stats x;
    memset(&x, 0, sizeof x);
    if (st)
        gp_store_stats(st, &x);
    one(b, "gpulse_server_series", "gauge", "Series held by the store.", (double)x.series);
    one(b, "gpulse_server_head_chunks", "gauge", "Open in-memory (head) chunks.", (double)x.head_chunks);
    one(b, "gpulse_server_head_bytes", "gauge", "Bytes of the head chunks.", (double)x.head_bytes);
    one(b, "gpulse_server_wal_bytes", "gauge", "Bytes in the write-ahead log.", (double)x.wal_bytes);
    one(b, "gpulse_server_wal_syncs_total", "counter", "WAL syncs (fdatasync) since start.",
        (double)x.wal_syncs);
    one(b, "gpulse_server_disk_bytes", "gauge",
        "Bytes the store holds on disk (chunks, blocks, rollups, snapshot, metadata).",
        (double)x.disk_bytes);
    one(b, "gpulse_server_blocks", "gauge", "Compacted blocks on disk.", (double)x.blocks);
    one(b, "gpulse_server_checkpoints_total", "counter", "Head checkpoints since start.",
        (double)x.checkpoints);
    one(b, "gpulse_server_compactions_total", "counter", "Compactions since start.",
        (double)x.compactions);
    if (st && x.newest_ms >= x.oldest_ms && x.series) {
        one(b, "gpulse_server_oldest_sample_timestamp_seconds", "gauge",
            "Time of the oldest sample held.", (double)x.oldest_ms / 1e3);
        one(b, "gpulse_server_newest_sample_timestamp_seconds", "gauge",
            "Time of the newest sample held.", (double)x.newest_ms / 1e3);
    }
    one(b, "gpulse_server_recovery_duration_seconds", "gauge",
        "Time the last start spent recovering the store.", x.replay_seconds);
    one(b, "gpulse_server_recovered_samples", "gauge", "Samples replayed from the WAL at the last start.",
        (double)x.replayed_samples);
}

int gp_srv_render_metrics(struct gp_server *s, struct gp_buf *b)
{
    one(b, "gpulse_server_samples_ingested_total", "counter", "Samples stored from remote write.",
        (double)gp_srv_get(&s->samples_ingested));
    one(b, "gpulse_server_samples_duplicate_total", "counter",
        "Samples dropped as exact duplicates of stored ones (a sender's retry).",
        (double)gp_srv_get(&s->samples_duplicate));
    one(b, "gpulse_server_series_created_total", "counter", "Series created by remote write.",
        (double)gp_srv_get(&s->series_created));
    family(b, "gpulse_server_samples_rejected_total", "counter",
           "Samples not stored, by reason (the request was answered 400).");
    for (size_t i = 0; i < GP_SRV_REJ_COUNT; i++)
        gp_buf_printf(b, "gpulse_server_samples_rejected_total{reason=\"%s\"} %llu\n", reject_names[i],
                      (unsigned long long)gp_srv_get(&s->rejected[i]));
    family(b, "gpulse_server_write_requests_refused_total", "counter",
           "Remote-write requests refused whole, by reason.");
    for (size_t i = 0; i < GP_SRV_REF_COUNT; i++)
        gp_buf_printf(b, "gpulse_server_write_requests_refused_total{reason=\"%s\"} %llu\n",
                      refusal_names[i], (unsigned long long)gp_srv_get(&s->refused[i]));
    one(b, "gpulse_server_inflight_bytes", "gauge",
        "Bytes held by write requests being received or decoded.", (double)gp_srv_get(&s->inflight));
    one(b, "gpulse_server_inflight_limit_bytes", "gauge", "max_inflight_bytes: 429 above it.",
        (double)s->cfg.max_inflight_bytes);

    family(b, "gpulse_server_http_requests_total", "counter",
           "HTTP requests by handler and status code (code 0: cut off without an answer).");
    for (size_t r = 0; r < GP_SRV_R_COUNT; r++)
        for (int c = 0; c < 600; c++) {
            uint64_t n = gp_srv_get(&s->requests[r][c]);
            if (n)
                gp_buf_printf(b, "gpulse_server_http_requests_total{handler=\"%s\",code=\"%d\"} %llu\n",
                              route_names[r], c, (unsigned long long)n);
        }
    family(b, "gpulse_server_write_duration_seconds", "histogram",
           "Time to decode, store and sync one remote-write request.");
    hist(b, "gpulse_server_write_duration_seconds", "", &s->route_hist[GP_SRV_R_WRITE]);
    family(b, "gpulse_server_query_duration_seconds", "histogram",
           "Time to answer one query API request, by handler.");
    for (size_t r = GP_SRV_R_QUERY_RANGE; r <= GP_SRV_R_GPUS; r++) {
        char label[64];
        snprintf(label, sizeof label, "handler=\"%s\"", route_names[r]);
        hist(b, "gpulse_server_query_duration_seconds", label, &s->route_hist[r]);
    }

    int state = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
    one(b, "gpulse_server_store_ready", "gauge",
        "1 when the store takes writes; 0 while it starts or after its WAL failed.",
        state == GP_SRV_READY ? 1 : 0);
    store_families(b, gp_srv_store(s));
    gp_srv_render_alert_metrics(s, b);
    gp_srv_render_notify_metrics(s, b);
    gp_srv_render_stream_metrics(s, b);
    one(b, "gpulse_server_start_time_seconds", "gauge", "When the server started (Unix time).",
        (double)s->start_ms / 1e3);

    pthread_mutex_lock(&s->hook_mu);
    int rc = GP_OK;
    if (s->hook) {
        rc = s->hook(s->hook_ctx, b);
    } else {
        family(b, "gpulse_build_info", "gauge", "gpulse version; value 1.");
        gp_buf_printf(b, "gpulse_build_info{version=\"%s\",role=\"server\"} 1\n", GP_VERSION);
    }
    pthread_mutex_unlock(&s->hook_mu);
    return rc ? rc : b->err;
}
