/*
 * main.c - `gpulse COMMAND ...`: dispatch to the role.
 *
 * `gpulse help-man` (not listed in help) prints the settings tables as
 * man(7) roff; the build pastes its output into the man pages (man/).
 * `gpulse promql-parse [EXPR]` (not listed either) parses PromQL, EXPR or
 * each line of stdin, and prints its type and canonical text or the parse
 * error: the parser oracle test compares it with Prometheus's promtool.
 */
#include "agent/agent.h"
#include "agent/config.h"
#include "agent/metrics_ref.h"
#include "check/check.h"
#include "lib/buf.h"
#include "lib/cfg.h"
#include "notify/notify_cmd.h"
#include "query/promql.h"
#include "report/report.h"
#include "run/run.h"
#include "run/run_config.h"
#include "server/config.h"
#include "server/repair.h"
#include "server/server.h"
#include "top/top.h"
#include "top/top_config.h"

#include <stdio.h>
#include <stdlib.h>
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
                 "  check     preflight: is this node's GPU hardware fit for a job (exit 0/1/2)\n"
                 "  repair    check a stopped server's data directory, rebuild what is damaged\n"
                 "  version   print the version\n"
                 "  help      this text\n\n"
                 "'gpulse COMMAND --help' describes each command.\n");
}

/* `gpulse help-man flags|keys SECTION`: SECTION's table as roff entries. */
static int help_man(int argc, char **argv)
{
    struct gp_agent_config ac;
    struct gp_server_config sc;
    struct gp_run_config rc;
    struct gp_top_config tc;
    const struct gp_cfg_section all[] = {gp_agent_cfg_section(&ac), gp_server_cfg_section(&sc),
                                         gp_run_cfg_section(&rc), gp_top_cfg_section(&tc),
                                         gp_check_cfg_section()};
    if (argc == 2 && (!strcmp(argv[0], "flags") || !strcmp(argv[0], "keys")))
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            if (!strcmp(argv[1], all[i].name)) {
                gp_cfg_man(stdout, &all[i], 1, argv[0][0] == 'k');
                return fflush(stdout) ? 1 : 0;
            }
    fprintf(stderr, "usage: gpulse help-man flags|keys agent|server|run|top|check\n");
    return 2;
}

/* Hidden: prints docs/metrics.md's generated reference (scripts/docs.sh). */
static int metrics_reference(void)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    int rc = gp_metrics_reference(&b);
    if (!rc)
        fwrite(b.data, 1, b.len, stdout);
    gp_buf_free(&b);
    if (rc)
        fprintf(stderr, "gpulse: metrics-reference: out of memory\n");
    return rc ? 1 : 0;
}

/* One expression: "ok\tTYPE\tTEXT" or "error\tMESSAGE" (newlines in
 * messages flattened). 0 when it parsed. */
static int promql_parse_one(const char *q, size_t len)
{
    static const char *const types[] = {"scalar", "vector", "matrix", "string"};
    struct gp_pq_node *e;
    char err[512];
    int rc = gp_promql_parse(q, len, &e, err, sizeof err);
    if (rc) {
        for (char *c = err; *c; c++)
            if (*c == '\n' || *c == '\t')
                *c = ' ';
        printf("error\t%s\n", err);
        return 1;
    }
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_promql_format(e, &b);
    printf("ok\t%s\t%.*s\n", types[e->type], (int)b.len, b.len ? b.data : "");
    gp_buf_free(&b);
    gp_promql_free(e);
    return 0;
}

static int promql_parse_cmd(int argc, char **argv)
{
    if (argc == 1)
        return promql_parse_one(argv[0], strlen(argv[0]));
    if (argc != 0) {
        fprintf(stderr, "usage: gpulse promql-parse [EXPR]  (no EXPR: one per line of stdin)\n");
        return 2;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        if (n > 0 && line[n - 1] == '\n')
            n--;
        promql_parse_one(line, (size_t)n);
    }
    free(line);
    return fflush(stdout) ? 1 : 0;
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
    if (!strcmp(cmd, "check"))
        return gp_check_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "repair"))
        return gp_repair_main(argc - 2, argv + 2);
    if (!strcmp(cmd, "help-man"))
        return help_man(argc - 2, argv + 2);
    if (!strcmp(cmd, "promql-parse"))
        return promql_parse_cmd(argc - 2, argv + 2);
    if (!strcmp(cmd, "metrics-reference"))
        return metrics_reference();
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
