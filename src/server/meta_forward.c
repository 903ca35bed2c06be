/*
 * meta_forward.c - with `storage: remote`, the families' metadata (TYPE,
 * HELP, unit) sent on to the cluster, as a Prometheus in front of it
 * would (issue 16: the cluster's /api/v1/metadata knows gpulse's and the
 * remote writers' families, not only their samples).
 *
 * What is sent is what /api/v1/metadata lists (gp_srv_metadata_walk:
 * gpulse's own families and those remote write carried), in requests of
 * metadata alone (storage.h's gp_storage_send_metadata: 500 entries
 * each, through the same write queue as the samples). Prometheus's
 * remote write sends its metadata every metadata_config.send_interval
 * (1m); so does this, and besides at the start and within a second of a
 * remote write that brought a new family or changed one (metadata.h's
 * change count), so a new family's type reaches the cluster with its
 * first samples rather than up to a minute later.
 *
 * A failure is logged and tried again at the next round; the samples
 * never wait on it.
 */
#include "server_int.h"

#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "lib/periodic.h"

#include <stdlib.h>
#include <string.h>

#define FORWARD_EVERY_MS 60000 /* Prometheus's metadata send_interval default */
#define FORWARD_LOOK_MS 1000

/* One entry while collecting: offsets into str (the buffer moves as it grows). */
struct fwd_ent {
    size_t name, nlen, help, hlen, unit, ulen;
    enum gp_rw_type type;
};

struct gp_srv_mfwd {
    struct gp_server *srv;
    struct gp_buf str;
    struct fwd_ent *ent;
    size_t nent, cap;
    struct gp_family_meta *m;
    size_t cap_m;
    int oom;
    uint64_t sent_changes;
    int64_t sent_ms; /* monotonic; 0: never */
    struct gp_periodic th;
};

static size_t put(struct gp_buf *b, const char *s, size_t *len)
{
    size_t at = b->len;
    *len = strlen(s);
    gp_buf_append(b, s, *len);
    return at;
}

/* The walk's callback (under the table's lock: copies only). */
static void collect(void *arg, const char *name, const char *type, const char *help, const char *unit)
{
    struct gp_srv_mfwd *x = arg;
    if (x->nent == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 256;
        struct fwd_ent *e = realloc(x->ent, cap * sizeof *e);
        if (!e) {
            x->oom = 1;
            return;
        }
        x->ent = e;
        x->cap = cap;
    }
    struct fwd_ent *e = &x->ent[x->nent++];
    e->name = put(&x->str, name, &e->nlen);
    e->help = put(&x->str, help, &e->hlen);
    e->unit = put(&x->str, unit, &e->ulen);
    e->type = gp_srv_meta_type(type);
}

/* Every family's metadata to the cluster: GP_OK, or the error logged. */
static int forward(struct gp_srv_mfwd *x, struct gp_storage *st)
{
    gp_buf_reset(&x->str);
    x->nent = 0;
    x->oom = 0;
    gp_srv_metadata_walk(x->srv, NULL, collect, x);
    if (!x->oom && !x->str.err && x->nent > x->cap_m) {
        struct gp_family_meta *m = realloc(x->m, x->nent * sizeof *m);
        if (m) {
            x->m = m;
            x->cap_m = x->nent;
        }
    }
    if (x->oom || x->str.err || x->nent > x->cap_m) {
        gp_log(GP_LOG_WARN, "metadata", "metadata not forwarded to the remote storage",
               "families=%zu error=\"out of memory\"", x->nent);
        return GP_ENOMEM;
    }
    const char *s = x->str.data;
    for (size_t i = 0; i < x->nent; i++) {
        const struct fwd_ent *e = &x->ent[i];
        x->m[i] = (struct gp_family_meta){{s + e->name, e->nlen}, {s + e->help, e->hlen},
                                          {s + e->unit, e->ulen}, e->type};
    }
    char err[256] = "";
    int rc = gp_storage_send_metadata(st, x->m, x->nent, err, sizeof err);
    if (rc)
        gp_log(GP_LOG_WARN, "metadata", "metadata not forwarded to the remote storage",
               "families=%zu error=\"%s\"", x->nent, err);
    return rc;
}

static void look(void *arg)
{
    struct gp_srv_mfwd *x = arg;
    struct gp_storage *st = gp_srv_store(x->srv);
    if (!st)
        return;
    uint64_t changes = gp_srv_meta_changes(x->srv->meta);
    int64_t now = gp_mono_ms();
    if (x->sent_ms && changes == x->sent_changes && now - x->sent_ms < FORWARD_EVERY_MS)
        return;
    if (forward(x, st) == GP_OK) {
        x->sent_changes = changes;
        x->sent_ms = now;
    }
}

int gp_srv_meta_forward_start(struct gp_server *s)
{
    struct gp_storage *st = gp_srv_store(s);
    if (!st || gp_storage_kind(st) != GP_STORAGE_REMOTE)
        return GP_OK;
    struct gp_srv_mfwd *x = calloc(1, sizeof *x);
    if (!x)
        return GP_ENOMEM;
    x->srv = s;
    gp_buf_init(&x->str, 0);
    s->mfwd = x;
    return gp_periodic_start(&x->th, FORWARD_LOOK_MS, 1, look, x);
}

void gp_srv_meta_forward_stop(struct gp_server *s)
{
    struct gp_srv_mfwd *x = s->mfwd;
    if (!x)
        return;
    gp_periodic_stop(&x->th);
    gp_buf_free(&x->str);
    free(x->ent);
    free(x->m);
    free(x);
    s->mfwd = NULL;
}
