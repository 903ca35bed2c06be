/*
 * config.c - the agent's settings: its key table handed to the settings
 * engine (lib/cfg.h), and the checks across keys that a table cannot say.
 */
#include "config.h"

#include "ingest/remote_write.h"
#include "sources/simulate_plan.h"

#include "lib/duration.h"
#include "lib/err.h"
#include "lib/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct gp_cfg_key keys[] = {
#define GP_KEY_ROW_(field, yaml, flag, type, def, help) \
    GP_CFG_ROW(struct gp_agent_config, field, yaml, flag, type, def, help),
    GP_AGENT_KEYS(GP_KEY_ROW_)
#undef GP_KEY_ROW_
};

struct gp_cfg_section gp_agent_cfg_section(struct gp_agent_config *c)
{
    return (struct gp_cfg_section){"agent", keys, sizeof keys / sizeof keys[0], c};
}

void gp_agent_config_defaults(struct gp_agent_config *c)
{
    memset(c, 0, sizeof *c);
    struct gp_cfg_section s = gp_agent_cfg_section(c);
    gp_cfg_defaults(&s, 1);
}

int gp_agent_config_parse_yaml(struct gp_agent_config *c, const char *yaml, size_t len, char *err,
                               size_t errlen)
{
    struct gp_cfg_section s = gp_agent_cfg_section(c);
    return gp_cfg_parse_yaml(&s, 1, yaml, len, err, errlen);
}

int gp_agent_config_load_file(struct gp_agent_config *c, const char *path, char *err, size_t errlen)
{
    struct gp_cfg_section s = gp_agent_cfg_section(c);
    return gp_cfg_load_file(&s, 1, path, err, errlen);
}

int gp_agent_config_set(struct gp_agent_config *c, const char *flag, const char *value, char *err,
                        size_t errlen)
{
    struct gp_cfg_section s = gp_agent_cfg_section(c);
    return gp_cfg_set(&s, 1, flag, value, err, errlen);
}

unsigned gp_agent_steps_socket_mode(const struct gp_agent_config *c)
{
    const char *p = c->steps_socket_mode;
    unsigned v = 0;
    if (!p[0] || strlen(p) > 4)
        return 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '7')
            return 0;
        v = v * 8 + (unsigned)(*p - '0');
    }
    /* the owner must be able to write: a mode nobody can send to is a typo */
    return v <= 0777 && (v & 0200) ? v : 0;
}

int gp_agent_external_labels_check(const struct gp_agent_config *c, char *err, size_t errlen)
{
    /* Names the agent's own series are told apart by: an external label of
     * that name would be added to some series and silently lose on others. */
    static const char *const reserved[] = {"Hostname", "hostname", "gpu", "UUID",
                                           "job",      "rank",     "pid", "target"};
    for (unsigned i = 0; i < c->external_labels.n; i++) {
        const char *item = c->external_labels.v[i], *eq = strchr(item, '=');
        size_t nl = eq ? (size_t)(eq - item) : 0;
        if (!eq || !eq[1] || !gp_rw_label_valid(item, nl, eq + 1, strlen(eq + 1)))
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "external label '%s' is invalid: the name must match [a-zA-Z_][a-zA-Z0-9_]* "
                             "and the value be non-empty UTF-8",
                             item);
        bool taken = nl >= 2 && !strncmp(item, "__", 2);
        for (size_t r = 0; r < sizeof reserved / sizeof reserved[0] && !taken; r++)
            taken = strlen(reserved[r]) == nl && !strncmp(item, reserved[r], nl);
        if (taken)
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "external label '%.*s' is reserved: names starting with __, Hostname, "
                             "hostname (set by hostname), gpu, UUID, job, rank, pid and target are "
                             "gpulse's own",
                             (int)nl, item);
    }
    return GP_OK;
}

int gp_agent_config_validate(const struct gp_agent_config *c, char *err, size_t errlen)
{
    char host[128];
    unsigned port;
    int rc = gp_parse_listen(c->listen, host, sizeof host, &port, err, errlen);
    if (rc)
        return rc;
    if (c->interval_ms < 100 || c->interval_ms > 60000)
        return gp_seterr(err, errlen, GP_ECONFIG, "interval must be between 100ms and 60s");
    if (strcmp(c->hostname_label, "Hostname") && strcmp(c->hostname_label, "hostname"))
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "hostname_label must be 'Hostname' or 'hostname', not '%s'", c->hostname_label);
    if ((rc = gp_agent_external_labels_check(c, err, errlen)))
        return rc;
    if (strcmp(c->process_series, "gpu") && strcmp(c->process_series, "all") &&
        strcmp(c->process_series, "none"))
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "process_series must be 'gpu', 'all' or 'none', not '%s'", c->process_series);
    if (gp_agent_steps_socket_mode(c) == 0)
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "steps_socket_mode must be an octal mode from 0200 to 0777, not '%s'",
                         c->steps_socket_mode);
    if (c->push_timeout_ms < 1000 || c->push_timeout_ms > 300000)
        return gp_seterr(err, errlen, GP_ECONFIG, "push_timeout must be between 1s and 5m");
    if (c->push_max_backoff_ms < 250 || c->push_max_backoff_ms > 3600000)
        return gp_seterr(err, errlen, GP_ECONFIG, "push_max_backoff must be between 250ms and 1h");
    if (c->buffer_max < ((uint64_t)1 << 20) || c->push_queue_max < ((uint64_t)1 << 20))
        return gp_seterr(err, errlen, GP_ECONFIG, "buffer_max and push_queue_max must be at least 1MiB");
    if ((c->simulate_faults[0] || c->simulate_truth[0]) && !c->simulate[0])
        return gp_seterr(err, errlen, GP_ECONFIG, "%s is set but simulate is not",
                         c->simulate_faults[0] ? "simulate_faults" : "simulate_truth");
    if (c->simulate[0]) {
        /* the spec, and the faults against it, here: a bad one stops `agent`
         * and `up` before anything listens or a directory is created */
        struct gp_sim_spec *spec = malloc(sizeof *spec);
        if (!spec)
            return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
        struct gp_sim_plan plan;
        rc = gp_sim_spec_parse(c->simulate, spec, err, errlen);
        if (rc == GP_OK && c->simulate_faults[0]) {
            rc = gp_sim_plan_build(spec, c->seed, c->simulate_faults, &plan, err, errlen);
            if (rc == GP_OK)
                gp_sim_plan_free(&plan);
        }
        free(spec);
        if (rc != GP_OK)
            return rc == GP_ENOMEM ? rc : GP_ECONFIG;
    }
    if (c->push_bearer_token[0] && c->push_bearer_token_file[0])
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "push_bearer_token and push_bearer_token_file are both set: choose one");
    enum gp_log_level lvl;
    if (gp_log_parse_level(c->log_level, &lvl))
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "log_level must be debug, info, warn or error, not '%s'", c->log_level);
    return GP_OK;
}

int gp_agent_config_from_args(struct gp_agent_config *c, int argc, char **argv, bool *help,
                              char *err, size_t errlen)
{
    struct gp_cfg_section s = gp_agent_cfg_section(c);
    return gp_cfg_from_args(&s, 1, "agent", argc, argv, c->config_file, sizeof c->config_file, help,
                            err, errlen);
}

void gp_agent_config_usage(FILE *out)
{
    fprintf(out, "usage: gpulse agent [--config FILE] [flags]\n\n"
                 "Samples this node's GPUs (NVIDIA through NVML, AMD through sysfs), host CPU,\n"
                 "memory and processes, and serves them as Prometheus metrics with\n"
                 "dcgm-exporter's names on /metrics, and as JSON on /api/v1/snapshot.\n\n"
                 "flags (each also a key under 'agent:' in the YAML config):\n"
                 "  --config FILE\n      YAML configuration file; flags override it\n");
    struct gp_agent_config dummy;
    struct gp_cfg_section s = gp_agent_cfg_section(&dummy);
    gp_cfg_usage(out, &s, 1);
    fprintf(out, "\nenvironment: GPULSE_NVML_LIBRARY and LD_LIBRARY_PATH steer which "
                 "libnvidia-ml.so.1 is loaded.\n"
                 "exit status: 0 on success, 1 on a runtime failure, 2 on a usage or config error.\n");
}
