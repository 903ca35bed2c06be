/*
 * linger.c - the lingering close; see linger.h.
 *
 * The sockets live in an array guarded by mu; gp_linger_add appends and
 * wakes the thread through an eventfd. The thread polls a snapshot of the
 * first n entries; only it changes or removes them (removal swaps the
 * last one in, walking down from the top, under mu), so the snapshot's
 * indexes stay valid while others append. Each readable socket is
 * drained without blocking and without the lock (at most 1 MiB a round,
 * so one fast sender cannot starve the rest).
 */
#include "net/linger.h"

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

struct ent {
    int fd;
    int64_t until_ms, quiet_until_ms;
};

struct gp_linger {
    pthread_mutex_t mu;
    pthread_t thread;
    int wake; /* eventfd */
    int stopping;
    unsigned max, n;
    int64_t max_ms, idle_ms;
    struct ent *ents;
    struct pollfd *pfd; /* max + 1: the thread's */
    uint64_t lingered, dropped, bytes;
    int64_t dropped_logged_ms; /* the log names drops once a second at most */
    uint64_t dropped_unlogged;
};

static void drop_at(struct gp_linger *l, unsigned i)
{
    close(l->ents[i].fd);
    l->ents[i] = l->ents[--l->n];
}

/* Reads and discards what fd holds. Returns 1 while the socket stays
 * open (nothing more yet), 0 once the client closed or it failed. */
static int drain(int fd, int64_t *got)
{
    static __thread char sink[65536];
    for (int i = 0; i < 16; i++) {
        ssize_t k = recv(fd, sink, sizeof sink, MSG_DONTWAIT);
        if (k > 0) {
            *got += k;
            continue;
        }
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return 1;
        return 0;
    }
    return 1;
}

static void *linger_main(void *arg)
{
    struct gp_linger *l = arg;
    struct pollfd *p = l->pfd;
    pthread_mutex_lock(&l->mu);
    while (!l->stopping) {
        unsigned n = l->n;
        int64_t now = gp_mono_ms(), next = now + 1000;
        for (unsigned i = 0; i < n; i++) {
            p[i] = (struct pollfd){.fd = l->ents[i].fd, .events = POLLIN};
            int64_t t = l->ents[i].until_ms < l->ents[i].quiet_until_ms ? l->ents[i].until_ms
                                                                          : l->ents[i].quiet_until_ms;
            if (t < next)
                next = t;
        }
        struct pollfd *w = &p[n];
        *w = (struct pollfd){.fd = l->wake, .events = POLLIN};
        pthread_mutex_unlock(&l->mu);
        int timeout = next > now ? (int)(next - now) : 0;
        poll(p, n + 1, timeout);
        if (w->revents & POLLIN) {
            uint64_t v;
            if (read(l->wake, &v, sizeof v) < 0) { /* nothing: it is only a wake-up */
            }
        }
        /* Drained without the lock (entries below n are this thread's
         * alone), so gp_linger_add never waits on a fast sender. */
        now = gp_mono_ms();
        int64_t got = 0;
        for (unsigned i = 0; i < n; i++) {
            if (!p[i].revents)
                continue;
            int64_t before = got;
            if (!drain(p[i].fd, &got))
                p[i].fd = -1; /* the client closed, or the socket failed */
            else if (got > before)
                l->ents[i].quiet_until_ms = now + l->idle_ms;
        }
        pthread_mutex_lock(&l->mu);
        for (unsigned i = n; i-- > 0;) {
            struct ent *e = &l->ents[i];
            if (p[i].fd < 0 || now >= e->until_ms || now >= e->quiet_until_ms)
                drop_at(l, i);
        }
        l->bytes += (uint64_t)got;
    }
    while (l->n)
        drop_at(l, l->n - 1);
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

int gp_linger_start(struct gp_linger **out, unsigned max, int64_t max_ms, int64_t idle_ms)
{
    struct gp_linger *l = calloc(1, sizeof *l);
    if (!l)
        return GP_ENOMEM;
    l->max = max ? max : 1;
    l->max_ms = max_ms;
    l->idle_ms = idle_ms;
    l->ents = calloc(l->max, sizeof *l->ents);
    l->pfd = calloc((size_t)l->max + 1, sizeof *l->pfd);
    l->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    pthread_mutex_init(&l->mu, NULL);
    if (!l->ents || !l->pfd || l->wake < 0 || pthread_create(&l->thread, NULL, linger_main, l)) {
        if (l->wake >= 0)
            close(l->wake);
        pthread_mutex_destroy(&l->mu);
        free(l->ents);
        free(l->pfd);
        free(l);
        return GP_ENOMEM;
    }
    *out = l;
    return GP_OK;
}

void gp_linger_add(struct gp_linger *l, int fd)
{
    pthread_mutex_lock(&l->mu);
    if (l->stopping || l->n >= l->max) {
        l->dropped++;
        int64_t now = gp_mono_ms();
        int log = !l->stopping && now - l->dropped_logged_ms >= 1000;
        uint64_t unlogged = l->dropped_unlogged;
        if (log) {
            l->dropped_logged_ms = now;
            l->dropped_unlogged = 0;
        } else {
            l->dropped_unlogged++;
        }
        unsigned max = l->max;
        pthread_mutex_unlock(&l->mu);
        close(fd);
        if (log)
            gp_log(GP_LOG_WARN, "http",
                   "too many connections lingering: closed at once, the client may miss its answer",
                   "lingering=%u dropped_unlogged=%llu", max, (unsigned long long)unlogged);
        return;
    }
    int64_t now = gp_mono_ms();
    l->ents[l->n++] = (struct ent){fd, now + l->max_ms, now + l->idle_ms};
    l->lingered++;
    pthread_mutex_unlock(&l->mu);
    uint64_t one = 1;
    if (write(l->wake, &one, sizeof one) < 0) { /* full: the thread is awake anyway */
    }
}

void gp_linger_stats(struct gp_linger *l, struct gp_linger_stats *out)
{
    pthread_mutex_lock(&l->mu);
    *out = (struct gp_linger_stats){l->lingered, l->dropped, l->bytes};
    pthread_mutex_unlock(&l->mu);
}

void gp_linger_stop(struct gp_linger *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    l->stopping = 1;
    pthread_mutex_unlock(&l->mu);
    uint64_t one = 1;
    if (write(l->wake, &one, sizeof one) < 0) {
    }
    pthread_join(l->thread, NULL);
    close(l->wake);
    pthread_mutex_destroy(&l->mu);
    free(l->ents);
    free(l->pfd);
    free(l);
}
