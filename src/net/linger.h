/*
 * linger.h - a lingering close for sockets answered before their request
 * body was read.
 *
 * When a server answers early (413, 401, 503... before the body) and
 * closes, the body the client is still sending arrives at a closed
 * socket: the kernel answers it with a reset, and the client, still
 * writing, sees EPIPE or ECONNRESET and never reads the answer that was
 * meant for it (its own stack may even drop that answer). Like Apache's
 * and nginx's lingering close, the socket is instead kept open once the
 * answer is sent and its write side shut: what the client still sends is
 * read and discarded until it closes its side (EOF), goes quiet for
 * idle_ms, or max_ms have passed. Then the socket is closed with nothing
 * unread, so the answer is delivered.
 *
 * One thread polls every lingering socket; at most `max` linger at once
 * (beyond that a socket is closed at once, counted as dropped), so a
 * client cannot pile up sockets this way. Nothing read is kept.
 */
#ifndef GP_LINGER_H
#define GP_LINGER_H

#include <stdint.h>

struct gp_linger;

/* Starts the thread. Returns GP_OK with *out set, or GP_ENOMEM. */
int gp_linger_start(struct gp_linger **out, unsigned max, int64_t max_ms, int64_t idle_ms);

/* Takes fd (the caller gives it up: it is closed here, at once when max
 * sockets already linger). The socket's write side should already be
 * shut (libmicrohttpd does so once the answer is sent). */
void gp_linger_add(struct gp_linger *l, int fd);

struct gp_linger_stats {
    uint64_t lingered; /* sockets drained before closing */
    uint64_t dropped;  /* closed at once: max sockets lingered already */
    uint64_t bytes;    /* bytes read and discarded */
};
void gp_linger_stats(struct gp_linger *l, struct gp_linger_stats *out);

/* Stops the thread and closes what still lingers; accepts NULL. */
void gp_linger_stop(struct gp_linger *l);

#endif
