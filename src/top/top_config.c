/* top_config.c - see top_config.h. */
#include "top_config.h"

#include "lib/err.h"
#include "top/layout.h"

#include <stdlib.h>
#include <string.h>

static const struct gp_cfg_key keys[] = {
#define GP_KEY_ROW_(field, yaml, flag, type, def, help) \
    GP_CFG_ROW(struct gp_top_config, field, yaml, flag, type, def, help),
    GP_TOP_KEYS(GP_KEY_ROW_)
#undef GP_KEY_ROW_
};

struct gp_cfg_section gp_top_cfg_section(struct gp_top_config *t)
{
    return (struct gp_cfg_section){"top", keys, sizeof keys / sizeof keys[0], t};
}

void gp_top_config_defaults(struct gp_top_config *t, struct gp_agent_config *a)
{
    memset(t, 0, sizeof *t);
    struct gp_cfg_section s = gp_top_cfg_section(t);
    gp_cfg_defaults(&s, 1);
    gp_agent_config_defaults(a);
    /* log lines would tear the screen; the step socket is the node agent's */
    snprintf(a->log_level, sizeof a->log_level, "error");
    a->steps_socket[0] = '\0';
}

int gp_top_config_from_args(struct gp_top_config *t, struct gp_agent_config *a, int argc, char **argv,
                            bool *help, char *err, size_t errlen)
{
    char **args = calloc((size_t)argc + 1, sizeof *args);
    if (!args)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    for (int i = 0; i < argc; i++)
        args[i] = strcmp(argv[i], "-n") ? argv[i] : (char *)"--iterations"; /* top's -n N */
    struct gp_cfg_section s[2] = {gp_top_cfg_section(t), gp_agent_cfg_section(a)};
    int rc = gp_cfg_from_args(s, 2, "top", argc, args, t->config_file, sizeof t->config_file, help, err,
                              errlen);
    free(args);
    return rc;
}

int gp_top_config_validate(const struct gp_top_config *t, const struct gp_agent_config *a, char *err,
                           size_t errlen)
{
    int rc = gp_agent_config_validate(a, err, errlen);
    if (rc)
        return rc;
    if (t->server[0] && strncmp(t->server, "http://", 7) && strncmp(t->server, "https://", 8))
        return gp_seterr(err, errlen, GP_ECONFIG, "server '%s' must start with http:// or https://",
                         t->server);
    if (t->agent[0] && strncmp(t->agent, "http://", 7) && strncmp(t->agent, "https://", 8))
        return gp_seterr(err, errlen, GP_ECONFIG, "agent '%s' must start with http:// or https://",
                         t->agent);
    if (t->agent[0] && a->simulate[0])
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "agent and simulate are both set: show the agent's view or simulate here, not both");
    if (t->alerts_interval_ms < 1000 || t->alerts_interval_ms > 600000)
        return gp_seterr(err, errlen, GP_ECONFIG, "alerts_interval must be between 1s and 10m");
    if (gp_top_col_parse(t->sort) < 0)
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "sort '%s': use pid, user, job, rank, gpu, gpumem, sm, cpu, rss or command",
                         t->sort);
    if (t->width && (t->width < 20 || t->width > 1000))
        return gp_seterr(err, errlen, GP_ECONFIG, "width must be between 20 and 1000");
    if (t->iterations > 1000000)
        return gp_seterr(err, errlen, GP_ECONFIG, "iterations must be at most 1000000");
    return GP_OK;
}

void gp_top_config_usage(FILE *out)
{
    fprintf(out,
            "usage: gpulse top [--config FILE] [flags]\n\n"
            "A live terminal view of this node's GPUs (utilization, SM activity, memory,\n"
            "power, temperature, clocks, throttling, ECC/XID), their processes with job and\n"
            "rank, host CPU and memory, and this node's active alerts when a server is given.\n"
            "It samples through the agent's own sources (NVML, amdgpu, --simulate), or shows\n"
            "a running agent's view with --agent URL. Keys: h for help, q to quit. --once\n"
            "(or -n N) prints plain-text frames instead.\n\n"
            "flags (each also a key under 'top:' in the YAML config):\n"
            "  --config FILE\n      YAML configuration file with 'top:' and 'agent:' sections; "
            "flags override it\n"
            "  -n N\n      same as --iterations N\n");
    struct gp_top_config t;
    struct gp_cfg_section s = gp_top_cfg_section(&t);
    gp_cfg_usage(out, &s, 1);
    fprintf(out, "\nsampling flags (keys under 'agent:'):\n");
    struct gp_agent_config a;
    struct gp_cfg_section as = gp_agent_cfg_section(&a);
    static const char *const used[] = {"interval", "simulate", "simulate-faults", "seed", "nvml-library",
                                       "gpm", "proc-root", "sysfs-root", "hostname", "log-level"};
    struct gp_cfg_key ks[sizeof used / sizeof used[0]];
    size_t n = 0;
    for (size_t i = 0; i < as.nkeys; i++)
        for (size_t j = 0; j < sizeof used / sizeof used[0]; j++)
            if (!strcmp(as.keys[i].flag, used[j]) && n < sizeof ks / sizeof ks[0])
                ks[n++] = as.keys[i];
    as.keys = ks;
    as.nkeys = n;
    gp_cfg_usage(out, &as, 1);
    fprintf(out, "\nexit status: 0; 1 on a runtime failure; 2 on a usage or config error, or when\n"
                 "stdout is not a terminal and neither --once nor -n is given.\n");
}
