/*
 * top_alerts.h - the active alerts of this node, from a gpulse server,
 * for `gpulse top`.
 *
 * GET SERVER/api/v1/alerts?node=HOST (read token as a bearer token). A
 * thread polls, so a slow or dead server never stalls the screen; the
 * screen takes the latest answer, or the latest error, whenever it draws.
 */
#ifndef GP_TOP_ALERTS_H
#define GP_TOP_ALERTS_H

#include "top/layout.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Parses the server's answer (the JSON envelope of docs/api.md) into out:
 * the first GP_TOP_MAX_ALERTS alerts, their count and how many fire.
 * Text is kept to printable ASCII. GP_OK, or GP_EPARSE with detail
 * (including the server's own error of an error envelope).
 */
int gp_top_alerts_parse(const char *json, size_t len, struct gp_top_alerts *out, char *err,
                        size_t errlen);

/* One synchronous fetch (--once). GP_OK, GP_ENET or GP_EPARSE with detail. */
int gp_top_alerts_fetch(const char *server, const char *node, const char *token,
                        struct gp_top_alerts *out, char *err, size_t errlen);

struct gp_top_poller;

/* Starts polling every every_ms; the first fetch starts at once. The
 * strings are copied. GP_OK or an error with detail. */
int gp_top_poller_start(struct gp_top_poller **out, const char *server, const char *node,
                        const char *token, int64_t every_ms, char *err, size_t errlen);

/* Copies the latest answer (alerts, alerts_valid) and error (alerts_err)
 * into v when a fetch has ended since the generation *gen (updated);
 * returns whether it copied (the screen then needs a repaint). */
bool gp_top_poller_get(struct gp_top_poller *p, struct gp_top_view *v, uint64_t *gen);

/* Stops the thread (waits at most one request's timeout) and frees. Accepts NULL. */
void gp_top_poller_stop(struct gp_top_poller *p);

#endif
