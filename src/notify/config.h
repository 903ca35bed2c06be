/*
 * config.h - the `notify:` section of the server's config file
 * (docs/notify.md): receivers with their secrets resolved, routes,
 * retry settings and the external URL.
 *
 * lib/cfg.c skips top-level sections it has no table for, so config.c
 * reads the file again with libyaml's document API (as insight/rules.c
 * does for `rules:`) and takes only `notify:`; every error names its
 * line and key, never a secret's value.
 */
#ifndef GP_NOTIFY_CONFIG_H
#define GP_NOTIFY_CONFIG_H

#include "notify/notify.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GP_NOTIFY_RECEIVERS_MAX 32
#define GP_NOTIFY_ROUTES_MAX 64
#define GP_NOTIFY_MATCH_LEN 128

/* The labels routes match on and group by. */
#define GP_NOTIFY_LABELS(X) X(KIND, "kind") X(SEVERITY, "severity") X(JOB, "job") \
    X(NODE, "node") X(GPU, "gpu") X(RANK, "rank")
enum gp_notify_label {
#define GP_NL_ENUM_(id, name) GP_NL_##id,
    GP_NOTIFY_LABELS(GP_NL_ENUM_)
#undef GP_NL_ENUM_
    GP_NL__COUNT
};
extern const char *const gp_notify_label_names[GP_NL__COUNT];

struct gp_notify_route {
    char receiver[GP_NOTIFY_NAME_LEN];
    size_t recv;                          /* index into the receivers */
    bool has_match[GP_NL__COUNT];
    char match[GP_NL__COUNT][GP_NOTIFY_MATCH_LEN]; /* exact values */
    enum gp_notify_label group_by[GP_NL__COUNT];
    unsigned ngroup_by;                   /* default: job (node when the alert has no job) */
    bool group_by_default;
    int64_t group_wait_ms, group_interval_ms, repeat_interval_ms;
    bool cont;                            /* continue: true */
    unsigned line;
};

struct gp_notify_config {
    bool present;                         /* the file has a notify: section */
    char external_url[GP_NOTIFY_URL_LEN];
    int64_t retry_max_backoff_ms;         /* 10m */
    int64_t retry_max_age_ms;             /* 24h */
    struct gp_receiver *recv;             /* owned */
    size_t nrecv;
    struct gp_notify_route *routes;       /* owned */
    size_t nroutes;
};

/* Defaults (no receivers, no routes). */
void gp_notify_config_init(struct gp_notify_config *c);

/*
 * Parses the `notify:` section of a whole config file's text into out
 * (freed first; the caller frees with gp_notify_config_free). Secrets
 * from *_file are read (one final newline trimmed) and from *_env
 * looked up now. GP_OK, GP_EPARSE (not YAML), GP_ECONFIG or GP_ENOMEM
 * with detail ("line N: 'key': why").
 */
int gp_notify_config_parse(const char *yaml, size_t len, struct gp_notify_config *out, char *err,
                           size_t errlen);

/* Reads path (at most 1 MiB) and parses it as above. */
int gp_notify_config_load_file(const char *path, struct gp_notify_config *out, char *err,
                               size_t errlen);

/* Frees what parse allocated; accepts NULL; leaves the defaults. */
void gp_notify_config_free(struct gp_notify_config *c);

/* The receiver named name, or NULL. Borrowed from c. */
const struct gp_receiver *gp_notify_receiver(const struct gp_notify_config *c, const char *name);

/* The receiver type named s: GP_OK or GP_ECONFIG. */
int gp_receiver_type_parse(const char *s, enum gp_receiver_type *out);

#endif
