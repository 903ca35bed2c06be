/*
 * push.h - the remote-write sender: every tick, to every target.
 *
 * The agent pushes through it and the remote store (storage/) writes
 * through it, so it sits with the codec below both, not in agent/.
 *
 * Each tick the agent hands the pusher the tick's series (rw_build.h:
 * built by the same walk of the frame that renders /metrics, never as
 * text) and its frame time. An encoder thread stamps every sample with
 * the frame time, encodes one remote-write body (ingest/remote_write.h)
 * and appends it to every
 * target's queue (push_queue.h: memory, or a disk buffer that survives a
 * restart). Each target has its own thread that sends its queue in order:
 * 2xx acknowledges; 5xx, 429 and connection errors retry the same batch
 * with exponential back-off (250 ms doubling to max_backoff, jittered,
 * Retry-After honoured) while newer ticks queue behind; other answers drop
 * the batch and count it. A target that fell behind catches up with
 * requests that join several queued ticks (up to 1 MiB uncompressed).
 * A tick larger than one body may be (GP_PUSH_MAX_BODY_SERIES series or
 * GP_PUSH_MAX_BODY_RAW bytes uncompressed: a single simulating agent of
 * thousands of GPUs) is split, in order, into several bodies, each
 * queued, sent, retried and acknowledged as a tick of its own; each
 * series is in one of them, so a series' samples keep their order.
 *
 * Targets (at most GP_PUSH_MAX_TARGETS) are http:// or https:// URLs
 * (push_http.h), or, under `gpulse up`, the server in the same process
 * ("local"), handed each tick's series through a function without
 * encoding them: its queue holds whole ticks in memory (at most 64, and
 * queue_max bytes; never on disk: the receiver's own WAL is the durable
 * copy), one tick per call, with the same retry, back-off and drop rules.
 *
 * Labels given in the options (the node label and the user's external
 * labels, "NAME=VALUE") are added to every series of a tick that lacks a
 * label of that name, so two nodes' host, process and job series stay
 * apart at the receiver; /metrics is left as it is (docs/metrics.md).
 *
 * The pusher's own counters join the agent's exposition
 * (gp_push_walk_metrics: /metrics and the push alike), labelled by
 * target = the URL without credentials or query.
 */
#ifndef GP_PUSH_H
#define GP_PUSH_H

#include "ingest/rw_build.h"
#include "lib/buf.h"
#include "lib/metric_sink.h"

#include <stddef.h>
#include <stdint.h>

struct gp_push;

/* One body's size at most: within every receiver's default (gpulse's
 * server: 100,000 series and 128 MiB uncompressed; VictoriaMetrics's
 * -maxInsertRequestSize 32 MiB; vmagent sends 8 MiB blocks). */
#define GP_PUSH_MAX_BODY_SERIES 50000
#define GP_PUSH_MAX_BODY_RAW (8u << 20)

/* The in-process receiver (`gpulse up`'s server): one tick's series in
 * (canonical form, owned by the pusher, valid during the call), the HTTP
 * status a remote-write receiver would answer out, with a reason in msg.
 * Same contract as gp_agent_local_write (agent.h). */
struct gp_batch;
typedef int (*gp_push_local_write)(void *ctx, const struct gp_batch *req, char *msg, size_t msglen);

struct gp_push_options {
    const char *const *urls; /* remote-write endpoints */
    size_t nurls;
    gp_push_local_write local; /* NULL: no in-process target */
    void *local_ctx;
    const char *buffer_dir;   /* NULL or "": queues in memory */
    uint64_t buffer_max;      /* bytes per target on disk */
    uint64_t queue_max;       /* bytes per target in memory (no buffer_dir) */
    const char *bearer_token; /* NULL or "" */
    const char *bearer_token_file;
    int64_t timeout_ms;       /* one request */
    int64_t min_backoff_ms;   /* 0: 250 */
    int64_t max_backoff_ms;   /* 0: 30 s */
    const char *const *headers; /* "Name: value" sent with every request (server's remote storage) */
    size_t nheaders;
    const char *const *labels; /* "NAME=VALUE" added to each tick's series that lack NAME (copied) */
    size_t nlabels;
};

/*
 * Opens every target's queue (recovering a disk buffer) and starts the
 * threads. Returns GP_OK with *out set (caller stops it), GP_ECONFIG for a
 * bad URL, token file or duplicate target, GP_EIO for a buffer directory
 * that cannot be used, with detail in err.
 */
int gp_push_start(struct gp_push **out, const struct gp_push_options *o, char *err, size_t errlen);

/*
 * Hands one tick's series to the pusher: it takes series' contents and
 * leaves series empty (holding memory of an earlier tick, to reuse); the
 * call never waits for the network or the disk. If the encoder is several
 * ticks behind, the oldest tick not yet encoded is dropped (counted,
 * reason "encoder"); a tick whose series cannot be encoded (an error
 * while building, a label the protocol refuses) is dropped the same way.
 */
void gp_push_tick(struct gp_push *p, struct gp_rw_build *series, int64_t time_ms);

/*
 * Hands one already encoded remote-write body (snappy + protobuf, as
 * POSTed) straight to every target's queue, skipping the encoder: the
 * server's remote storage (storage/storage.h) forwards what it receives
 * this way. Waits for the disk buffer's write and sync, never for the
 * network.
 */
void gp_push_body(struct gp_push *p, const void *body, size_t len, uint32_t nsamples,
                  uint32_t raw_len, int64_t time_ms);

/* The pusher's counters at one moment, as its families show them. */
#define GP_PUSH_MAX_TARGETS 16
#define GP_PUSH_NREASONS 5 /* rejected, buffer_full, corrupt, io_error, encoder */
struct gp_push_target_stats {
    const char *label; /* the pusher's: valid until gp_push_stop */
    uint64_t sent, retried, dropped[GP_PUSH_NREASONS], queue_bytes, buffer_bytes;
    int64_t last_success_ms;
};
struct gp_push_stats {
    size_t nt;
    struct gp_push_target_stats t[GP_PUSH_MAX_TARGETS];
    uint64_t encode_ns_last;
};

/* Reads the counters into *out (none for p NULL). Never blocks on a target. */
void gp_push_stats(struct gp_push *p, struct gp_push_stats *out);

/* Walks the gpulse_push_* families (one series per target) of st into s.
 * The agent takes the counters once per frame, so its /metrics and its
 * push of that frame show the same values. */
void gp_push_walk_stats(const struct gp_push_stats *st, struct gp_metric_sink *s);

/* gp_push_stats then gp_push_walk_stats into s, or as text into out. */
void gp_push_walk_metrics(struct gp_push *p, struct gp_metric_sink *s);
void gp_push_render_metrics(struct gp_push *p, struct gp_buf *out);

/*
 * Encodes the ticks handed over so far, gives each target a few seconds
 * (at most the request timeout, at most 5 s) to deliver what it holds
 * while it is succeeding, then cancels requests in flight, stops the
 * threads and closes the queues (a disk buffer keeps what was not
 * delivered for the next start). Accepts NULL.
 */
void gp_push_stop(struct gp_push *p);

#endif
