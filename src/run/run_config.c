/* run_config.c - see run_config.h. */
#include "run_config.h"

#include "lib/err.h"
#include "lib/log.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct gp_cfg_key keys[] = {
#define GP_KEY_ROW_(field, yaml, flag, type, def, help) \
    GP_CFG_ROW(struct gp_run_config, field, yaml, flag, type, def, help),
    GP_RUN_KEYS(GP_KEY_ROW_)
#undef GP_KEY_ROW_
};

struct gp_cfg_section gp_run_cfg_section(struct gp_run_config *r)
{
    return (struct gp_cfg_section){"run", keys, sizeof keys / sizeof keys[0], r};
}

void gp_run_config_defaults(struct gp_run_config *r, struct gp_agent_config *a)
{
    memset(r, 0, sizeof *r);
    struct gp_cfg_section s = gp_run_cfg_section(r);
    gp_cfg_defaults(&s, 1);
    gp_agent_config_defaults(a);
    snprintf(a->log_level, sizeof a->log_level, "error");
}

/* A job id becomes a label value, a file name part and a URL path
 * segment: printable ASCII without blanks or '/', so it reads the same
 * everywhere. */
static int check_job(const char *job, char *err, size_t errlen)
{
    for (const char *p = job; *p; p++)
        if (*p <= ' ' || *p > '~' || *p == '/' || *p == '"' || *p == '\\')
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "job '%s': use letters, digits and punctuation, without blanks, "
                             "quotes, '/' or '\\'", job);
    return GP_OK;
}

int gp_run_config_validate(const struct gp_run_config *r, const struct gp_agent_config *a,
                           double *price, char *err, size_t errlen)
{
    int rc = gp_agent_config_validate(a, err, errlen);
    if (rc)
        return rc;
    if ((rc = check_job(r->job, err, errlen)))
        return rc;
    if (r->status_interval_ms < 1000 || r->status_interval_ms > 3600000)
        return gp_seterr(err, errlen, GP_ECONFIG, "status_interval must be between 1s and 1h");
    if (r->server[0] && strncmp(r->server, "http://", 7) && strncmp(r->server, "https://", 8))
        return gp_seterr(err, errlen, GP_ECONFIG, "server '%s' must start with http:// or https://",
                         r->server);
    *price = 0;
    if (r->gpu_hour_price[0]) {
        char *end;
        errno = 0;
        double p = strtod(r->gpu_hour_price, &end);
        if (errno || *end || !isfinite(p) || p < 0 || p > 1e6)
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "gpu_hour_price '%s' is not a price (a number of dollars per GPU-hour)",
                             r->gpu_hour_price);
        *price = p;
    }
    return GP_OK;
}

void gp_run_config_usage(FILE *out)
{
    fprintf(out,
            "usage: gpulse run [--config FILE] [flags] -- CMD [ARG...]\n\n"
            "Runs CMD as a tracked training job: its processes, GPUs and steps are sampled\n"
            "in-process from the first second, a status line shows progress on stderr, and\n"
            "when CMD ends a report says what the job used, what it cost and what to change.\n"
            "CMD's exit status is gpulse run's (a signal death is passed on as the same signal).\n"
            "CMD gets GPULSE_RUN_ID (the job id) and GPULSE_STEPS_SOCKET (where the gpulse\n"
            "Python and C clients send step telemetry) in its environment.\n\n"
            "flags (each also a key under 'run:' in the YAML config):\n"
            "  --config FILE\n      YAML configuration file with 'run:' and 'agent:' sections; "
            "flags override it\n");
    struct gp_run_config r;
    struct gp_cfg_section s = gp_run_cfg_section(&r);
    gp_cfg_usage(out, &s, 1);
    fprintf(out, "\nsampling flags (keys under 'agent:'; --steps-socket names the node agent's\n"
                 "socket, which gpulse run forwards steps to when an agent listens there):\n");
    struct gp_agent_config a;
    struct gp_cfg_section as = gp_agent_cfg_section(&a);
    static const char *const used[] = {"interval", "simulate", "seed", "nvml-library", "gpm",
                                       "proc-root", "sysfs-root", "hostname", "hostname-label",
                                       "steps-socket", "log-level", "buffer-dir"};
    struct gp_cfg_key ks[sizeof used / sizeof used[0]];
    size_t n = 0;
    for (size_t i = 0; i < as.nkeys; i++)
        for (size_t j = 0; j < sizeof used / sizeof used[0]; j++)
            if (!strcmp(as.keys[i].flag, used[j]) && n < sizeof ks / sizeof ks[0])
                ks[n++] = as.keys[i];
    as.keys = ks;
    as.nkeys = n;
    gp_cfg_usage(out, &as, 1);
    fprintf(out, "\nexit status: CMD's; 127 when CMD is not found, 126 when it cannot run;\n"
                 "2 on a usage or config error of gpulse run itself.\n");
}
