/*
 * up.c - `gpulse up`: the server and an agent in one process, for one
 * machine (DESIGN.md "Roles").
 *
 * Settings come from two sections, `server:` then `agent:`, so a flag
 * both have (--listen, --log-level) is the server's: the agent serves no
 * HTTP of its own here. The server starts first (listener, then store
 * recovery); the agent then samples and hands each tick's series to
 * gp_server_append in-process (gp_agent_local_write): the checks, limits,
 * append and answer of POST /api/v1/write, minus the socket, the snappy
 * and the protobuf. The server's /metrics
 * carries the agent's exposition after its own families, and its
 * /api/v1/snapshot the agent's frame (`gpulse top --agent`). Shutdown runs
 * the other way: the agent stops (delivering what it holds), then the
 * server.
 */
#include "agent/agent.h"
#include "lib/err.h"
#include "lib/log.h"
#include "server/server.h"
#include "sources/simulate_plan.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static int up_write(void *ctx, const struct gp_batch *batch, char *msg, size_t msglen)
{
    return gp_server_append(ctx, batch, msg, msglen);
}

static int up_agent_metrics(void *ctx, struct gp_buf *out)
{
    return gp_agent_render_metrics(ctx, out);
}

static int up_agent_snapshot(void *ctx, struct gp_buf *out)
{
    return gp_agent_render_snapshot(ctx, out);
}

/* Flags of the agent that the server's section shadows are not shown. */
static void usage(FILE *out)
{
    fprintf(out, "usage: gpulse up [--config FILE] [flags]\n\n"
                 "Runs the server and an agent in one process: this machine's GPUs (or --simulate)\n"
                 "are sampled, stored in the embedded store under --data, and served by the\n"
                 "server's API and /metrics on --listen (127.0.0.1:9402 by default).\n\n"
                 "  --config FILE\n      YAML configuration file with 'server:' and 'agent:' "
                 "sections; flags override it\n\nserver flags:\n");
    struct gp_server_config sc;
    struct gp_agent_config ac;
    struct gp_cfg_section ss = gp_server_cfg_section(&sc), as = gp_agent_cfg_section(&ac);
    gp_cfg_usage(out, &ss, 1);
    fprintf(out, "\nagent flags (the agent serves no HTTP of its own here):\n");
    struct gp_cfg_key keys[64];
    size_t n = 0;
    for (size_t i = 0; i < as.nkeys && n < sizeof keys / sizeof keys[0]; i++) {
        int shadowed = 0;
        for (size_t j = 0; j < ss.nkeys; j++)
            shadowed |= !strcmp(as.keys[i].flag, ss.keys[j].flag);
        if (!shadowed)
            keys[n++] = as.keys[i];
    }
    as.keys = keys;
    as.nkeys = n;
    gp_cfg_usage(out, &as, 1);
    fprintf(out, "\nexit status: 0 on success, 1 on a runtime failure, 2 on a usage or config error.\n");
}

int gp_up_main(int argc, char **argv)
{
    struct gp_server_config sc;
    struct gp_agent_config ac;
    gp_server_config_defaults(&sc);
    gp_agent_config_defaults(&ac);
    struct gp_cfg_section sec[2] = {gp_server_cfg_section(&sc), gp_agent_cfg_section(&ac)};
    char err[768];
    bool help;
    if (gp_cfg_from_args(sec, 2, "up", argc, argv, sc.config_file, sizeof sc.config_file, &help, err,
                         sizeof err)) {
        fprintf(stderr, "gpulse up: %s\n", err);
        return 2;
    }
    if (help) {
        usage(stdout);
        return 0;
    }
    snprintf(ac.log_level, sizeof ac.log_level, "%s", sc.log_level);
    if (gp_server_config_validate(&sc, err, sizeof err) ||
        gp_agent_config_validate(&ac, err, sizeof err)) {
        fprintf(stderr, "gpulse up: %s\n", err);
        return 2;
    }
    gp_log_parse_level(sc.log_level, &gp_log_min);
    if (!strcmp(ac.simulate_truth, "-")) { /* the simulation's ground truth only */
        int trc = gp_sim_write_truth(ac.simulate, ac.seed, ac.simulate_faults, "-", err, sizeof err);
        if (trc)
            fprintf(stderr, "gpulse up: %s\n", err);
        return trc == GP_OK ? 0 : trc == GP_EUSAGE ? 2 : 1;
    }

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP); /* gp_server_wait reloads on it */
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct gp_server *s;
    int rc = gp_server_start(&s, &sc, err, sizeof err);
    if (rc) {
        fprintf(stderr, "gpulse up: %s\n", err);
        return rc == GP_ECONFIG || rc == GP_EUSAGE ? 2 : 1;
    }
    struct gp_agent_embed e = {.no_http = 1, .write = up_write, .write_ctx = s};
    struct gp_agent *a;
    rc = gp_agent_start_embedded(&a, &ac, &e, err, sizeof err);
    if (rc) {
        fprintf(stderr, "gpulse up: %s\n", err);
        gp_server_stop(s);
        return rc == GP_ECONFIG || rc == GP_EUSAGE ? 2 : 1;
    }
    gp_server_set_metrics_hook(s, up_agent_metrics, a);
    gp_server_set_snapshot_hook(s, up_agent_snapshot, a);
    gp_log(GP_LOG_INFO, "up", "sampling into the embedded server", "interval=%lldms simulate=%s",
           (long long)ac.interval_ms, ac.simulate[0] ? ac.simulate : "no");
    int sig = gp_server_wait(s, &set);
    gp_log(GP_LOG_INFO, "up", "shutting down", "signal=%d", sig);
    gp_server_set_metrics_hook(s, NULL, NULL);
    gp_server_set_snapshot_hook(s, NULL, NULL);
    gp_agent_stop(a);
    gp_server_stop(s);
    gp_log(GP_LOG_INFO, "up", "stopped", "%s", "");
    return 0;
}
