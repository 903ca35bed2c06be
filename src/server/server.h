/*
 * server.h - `gpulse server`: the store behind an HTTP front.
 *
 * A gp_server owns the embedded time-series store (store/store.h), the
 * HTTP listener (net/http.h) and the routes:
 *
 *   POST /api/v1/write               remote write 1.0 (write.c)
 *   GET  /api/v1/query_range, /series, /labels, /label/NAME/values,
 *        /nodes, /gpus               the query API (api.c over query/query.h)
 *   GET, POST /api/v1/query, query_range?query=, metadata, status/buildinfo,
 *        query_exemplars             Prometheus's API (prom_api.c over
 *                                    query/promql.h), also under /prometheus
 *   GET  /api/v1/health              ok / starting / failed (open to all)
 *   GET  /metrics                    the server's own metrics (selfmetrics.c)
 *
 * Start order: the listener comes up first, answering 503 with
 * Retry-After (and health "starting") while the store recovers, so
 * senders back off instead of failing; then the store opens and writes
 * are taken. Stop order: the listener (waiting for running handlers),
 * then the store (checkpoint, close).
 */
#ifndef GP_SERVER_H
#define GP_SERVER_H

#include "lib/buf.h"
#include "server/config.h"

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct gp_server;

/*
 * Resolves tokens and TLS files, listens, then opens (recovers) the store
 * and logs what it found. Returns GP_OK with *out set; GP_ECONFIG (token
 * or TLS files, bad address), GP_ENET (address in use), or the store's
 * error (GP_EIO, GP_EPARSE, GP_ENOMEM), with detail. c is copied.
 */
int gp_server_start(struct gp_server **out, const struct gp_server_config *c, char *err,
                    size_t errlen);

/* Stops serving, then checkpoints and closes the store. Accepts NULL. */
void gp_server_stop(struct gp_server *s);

/* The bound port (useful with port 0). */
unsigned gp_server_port(const struct gp_server *s);

/*
 * Takes one remote-write body (snappy + protobuf, exactly what would be
 * POSTed) in-process, as POST /api/v1/write would, with the same limits
 * and accounting; returns the HTTP status (204, 400, 413, 429, 503) and a
 * one-line reason in msg (empty on 204).
 */
int gp_server_write(struct gp_server *s, const uint8_t *body, size_t len, char *msg, size_t msglen);

/*
 * Takes one decoded batch (rq: labels in canonical form, as gp_rw_decode
 * gives them) in-process, as POST /api/v1/write takes a body after its
 * decode: the same checks (gp_rw_check), limits (its encoded size against
 * max_uncompressed and the in-flight budget), rejections, counters and
 * answer, with no snappy or protobuf. rq stays the caller's. For `gpulse
 * up`, whose agent appends its samples this way.
 */
struct gp_batch;
int gp_server_append(struct gp_server *s, const struct gp_batch *rq, char *msg, size_t msglen);

/*
 * Appends fn's exposition after the server's own families on /metrics
 * (`gpulse up` passes the agent's). The hook's families must not reuse
 * gpulse_server_* names; with a hook set the server leaves
 * gpulse_build_info to it. fn returns GP_OK or an error code; NULL clears.
 */
typedef int (*gp_server_metrics_hook)(void *ctx, struct gp_buf *out);
void gp_server_set_metrics_hook(struct gp_server *s, gp_server_metrics_hook fn, void *ctx);

/*
 * Serves fn's JSON on GET /api/v1/snapshot (`gpulse up` passes its
 * agent's, so `gpulse top --agent` can show it); without one the route
 * answers 404. Same signature as the metrics hook; NULL clears.
 */
void gp_server_set_snapshot_hook(struct gp_server *s, gp_server_metrics_hook fn, void *ctx);

/* Appends the server's /metrics text (its families, then the hook's). */
int gp_server_render_metrics(struct gp_server *s, struct gp_buf *out);

/*
 * What SIGHUP does: reads rule_files again, as Prometheus reloads its
 * rule files; a file that no longer loads is logged and counted, and the
 * rules already running stay. The rest of the config needs a restart.
 * GP_OK or the load's error.
 */
int gp_server_reload(struct gp_server *s);

/* Waits for SIGINT or SIGTERM among the blocked signals in set,
 * reloading on each SIGHUP; returns the signal that ends the wait. */
int gp_server_wait(struct gp_server *s, const sigset_t *set);

/* The `gpulse server` and `gpulse up` commands: parse args, run until
 * SIGINT/SIGTERM, reloading on SIGHUP. Return the exit status (0, 1 runtime, 2 usage/config). */
int gp_server_main(int argc, char **argv);
int gp_up_main(int argc, char **argv);

#endif
