/*
 * main.c - `gpulse COMMAND ...`: dispatch to the role.
 */
#include "agent/agent.h"
#include "notify/notify_cmd.h"
#include "report/report.h"
#include "run/run.h"
#include "server/server.h"
#include "top/top.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(out, "usage: gpulse COMMAND [ARGS]\n\n"
                 "commands:\n"
                 "  agent     sample this node's GPUs, host and processes; serve /metrics\n"
                 "  server    receive remote write, store the series, serve the query API\n"
                 "  up        server and agent in one process, for one machine\n"
                 "  run       run a training command as a tracked job, report on it when it ends\n"
                 "  top       live terminal view of this node's GPUs, processes, jobs and alerts\n"
                 "  report    the end-of-run report of a training job, from the server\n"
                 "  notify    notifications: 'notify test RECEIVER' sends a test message\n"
                 "  version   print the version\n"
                 "  help      this text\n\n"
                 "'gpulse COMMAND --help' describes each command.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "agent"))
        return gp_agent_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "server"))
        return gp_server_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "up"))
        return gp_up_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "run"))
        return gp_run_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "top"))
        return gp_top_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "report"))
        return gp_report_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "notify"))
        return gp_notify_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("gpulse %s\n", GP_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "gpulse: unknown command '%s' (see 'gpulse help')\n", cmd);
    return 2;
}
