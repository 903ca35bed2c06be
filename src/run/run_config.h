/*
 * run_config.h - the settings of `gpulse run`: its own keys (section
 * `run:`), then the agent's (section `agent:`), whose sampling keys
 * (interval, nvml_library, proc_root, steps_socket...) it uses for its
 * in-process sampling. One table, as for the other roles: the YAML
 * loader, the flags, --help and docs/config.md come from it.
 */
#ifndef GP_RUN_CONFIG_H
#define GP_RUN_CONFIG_H

#include "agent/config.h"
#include "lib/cfg.h"

#define GP_JOB_ID_LEN 128

struct gp_run_config {
    char config_file[GP_PATH_LEN];
    char server[512];
    char server_token_file[GP_PATH_LEN];
    char job[GP_JOB_ID_LEN];
    char html[GP_PATH_LEN];
    char json[GP_PATH_LEN];
    bool quiet;
    bool report;
    int64_t status_interval_ms;
    char gpu_hour_price[32];
    char attempts_dir[GP_PATH_LEN];
};

/* X(field, yaml key, flag, type, default, help) */
#define GP_RUN_KEYS(X)                                                                            \
    X(server, "server", "server", STR, "",                                                        \
      "gpulse server URL (http://host:9402): when no node agent runs here, the job's samples "   \
      "are pushed there (a node agent, when there is one, reports the job itself)")             \
    X(server_token_file, "server_token_file", "server-token-file", STR, "",                       \
      "file holding the server's write token")                                                   \
    X(job, "job", "job", STR, "",                                                                 \
      "job id: the job label of its series and the name `gpulse report` takes "                  \
      "(default run-YYYYmmddTHHMMSS-PID)")                                                       \
    X(html, "html", "html", STR, "", "also write the report as one HTML file with charts")        \
    X(json, "json", "json", STR, "", "also write the job document (JSON) to this file")           \
    X(quiet, "quiet", "quiet", BOOL, "false", "no live status line on stderr")                    \
    X(report, "report", "report", BOOL, "true", "print the report on stderr when the command ends") \
    X(status_interval_ms, "status_interval", "status-interval", DURATION, "30s",                  \
      "how often the status line is printed when stderr is not a terminal (on a terminal it "    \
      "is redrawn every sample)")                                                                \
    X(gpu_hour_price, "gpu_hour_price", "gpu-hour-price", STR, "",                                \
      "price of one GPU-hour (USD) for the report's cost; empty: each GPU model's default price") \
    X(attempts_dir, "attempts_dir", "attempts-dir", STR, "",                                      \
      "where a job named with --job keeps its earlier attempts, so a restart reports goodput "   \
      "across restarts and its repeated steps as lost work; empty: "                              \
      "$XDG_STATE_HOME/gpulse/jobs, else ~/.local/state/gpulse/jobs")

/* Defaults of both sections (the agent's log level is lowered to error:
 * the terminal belongs to the training command). */
void gp_run_config_defaults(struct gp_run_config *r, struct gp_agent_config *a);

/* The run section for the settings engine. */
struct gp_cfg_section gp_run_cfg_section(struct gp_run_config *r);

/* Checks both sections; *price is the parsed gpu_hour_price (0 when
 * empty). GP_OK or GP_ECONFIG with detail. */
int gp_run_config_validate(const struct gp_run_config *r, const struct gp_agent_config *a,
                           double *price, char *err, size_t errlen);

void gp_run_config_usage(FILE *out);

#endif
