/*
 * top_config.h - the settings of `gpulse top`: its own keys (section
 * `top:`), then the agent's sampling keys (section `agent:`: interval,
 * simulate, nvml_library, ...), so top samples exactly what the agent on
 * the same node would. One table, as for the other roles: the YAML
 * loader, the flags, --help and docs/top.md come from it.
 */
#ifndef GP_TOP_CONFIG_H
#define GP_TOP_CONFIG_H

#include "agent/config.h"
#include "lib/cfg.h"

struct gp_top_config {
    char config_file[GP_PATH_LEN];
    char server[512];
    char agent[512];
    char read_token[4096];
    char read_token_file[GP_PATH_LEN];
    int64_t alerts_interval_ms;
    bool once;
    uint64_t iterations;
    uint64_t width;
    char sort[16];
    bool color;
};

/* X(field, yaml key, flag, type, default, help) */
#define GP_TOP_KEYS(X)                                                                            \
    X(server, "server", "server", STR, "",                                                        \
      "gpulse server URL (http://host:9402): show this node's active alerts from it; empty: none") \
    X(agent, "agent", "agent", STR, "",                                                           \
      "show a running agent's view (http://host:9401) instead of sampling here; empty: sample here") \
    X(read_token, "read_token", "read-token", STR, "",                                            \
      "the server's read token (prefer read_token_file)")                                        \
    X(read_token_file, "read_token_file", "read-token-file", STR, "",                             \
      "file holding the server's read token")                                                    \
    X(alerts_interval_ms, "alerts_interval", "alerts-interval", DURATION, "5s",                   \
      "how often the alerts are fetched from the server, from 1s to 10m")                         \
    X(once, "once", "once", BOOL, "false",                                                        \
      "print one plain-text frame on stdout and exit (no terminal needed); same as -n 1")         \
    X(iterations, "iterations", "iterations", UINT, "0",                                          \
      "print this many plain-text frames, one every interval, and exit (-n N); 0: the live view") \
    X(width, "width", "width", UINT, "0",                                                         \
      "width of the plain-text frames (0: the terminal's, else $COLUMNS, else 160)")             \
    X(sort, "sort", "sort", STR, "gpumem",                                                        \
      "first sort column: pid, user, job, rank, gpu, gpumem, sm, cpu, rss, command")             \
    X(color, "color", "color", BOOL, "true",                                                      \
      "colours on a terminal that has them (NO_COLOR set to anything non-empty turns them off)")

/* Defaults of both sections (the agent's log level is lowered to error,
 * and no step socket: the node agent owns it). */
void gp_top_config_defaults(struct gp_top_config *t, struct gp_agent_config *a);

struct gp_cfg_section gp_top_cfg_section(struct gp_top_config *t);

/* Parses argv (after "top"), `-n N` read as --iterations N. GP_OK,
 * GP_EUSAGE or GP_ECONFIG with detail; *help for --help. */
int gp_top_config_from_args(struct gp_top_config *t, struct gp_agent_config *a, int argc, char **argv,
                            bool *help, char *err, size_t errlen);

/* Checks both sections. GP_OK or GP_ECONFIG with detail. */
int gp_top_config_validate(const struct gp_top_config *t, const struct gp_agent_config *a, char *err,
                           size_t errlen);

void gp_top_config_usage(FILE *out);

#endif
