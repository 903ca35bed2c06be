/*
 * config.h - the agent's configuration: defaults, YAML file, flags.
 *
 * One table (GP_AGENT_KEYS) names every setting once: its YAML key under
 * `agent:`, its flag, its type, its default and its help. The YAML
 * loader, the flag parser, `--help` and docs/config.md all come from it,
 * and a test checks that the docs name every key. Precedence: defaults,
 * then the file given by --config, then flags.
 */
#ifndef GP_CONFIG_H
#define GP_CONFIG_H

#include "lib/cfg.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GP_PATH_LEN 512

/* Default of buffer_max: one hour of a busy 8-GPU node at a 1 s interval,
 * with margin (see docs/config.md for the measurement). */
#define GP_PUSH_BUFFER_MAX_DEFAULT "256MiB"

struct gp_agent_config {
    char config_file[GP_PATH_LEN];
    char listen[128];
    int64_t interval_ms;
    char simulate[512];
    char simulate_faults[512];
    char simulate_truth[GP_PATH_LEN];
    uint64_t seed;
    char nvml_library[GP_PATH_LEN];
    bool gpm;
    char proc_root[GP_PATH_LEN];
    char sysfs_root[GP_PATH_LEN];
    char hostname[256];
    char hostname_label[16];
    struct gp_cfg_list external_labels; /* "NAME=VALUE" */
    char process_series[8];
    char log_level[8];
    struct gp_cfg_list push;
    char buffer_dir[GP_PATH_LEN];
    uint64_t buffer_max;
    uint64_t push_queue_max;
    char push_bearer_token[4096];
    char push_bearer_token_file[GP_PATH_LEN];
    int64_t push_timeout_ms;
    int64_t push_max_backoff_ms;
    char steps_socket[GP_PATH_LEN];
    char steps_socket_mode[8];
    char steps_socket_group[64];
    char flight_recorder_dir[GP_PATH_LEN];
};

/* X(field, yaml key, flag, type, default, help). Types: STR, DURATION, UINT, BOOL, BYTES, LIST. */
#define GP_AGENT_KEYS(X)                                                                          \
    X(listen, "listen", "listen", STR, "0.0.0.0:9401",                                            \
      "address and port to serve /metrics and /api/v1/snapshot on (ADDR:PORT, [IPv6]:PORT)")      \
    X(interval_ms, "interval", "interval", DURATION, "1s",                                        \
      "sampling interval, from 100ms to 60s")                                                     \
    X(simulate, "simulate", "simulate", STR, "",                                                  \
      "serve simulated nodes instead of the hardware: NODESxGPUSxMODEL[,...], e.g. 2x8xH100")     \
    X(simulate_faults, "simulate_faults", "simulate-faults", STR, "",                             \
      "faults planted in the simulation instead of the seeded plan: none, or "                    \
      "KIND=sim-node-N/GPU[,...] with KIND leak, straggler, starved, throttled, ecc, idle")        \
    X(simulate_truth, "simulate_truth", "simulate-truth", STR, "",                                \
      "write the simulation's planted faults and jobs (JSON) to this file at start; '-': print "  \
      "them and exit")                                                                            \
    X(seed, "seed", "seed", UINT, "1", "seed of the simulation (same seed, same series)")         \
    X(nvml_library, "nvml_library", "nvml-library", STR, "",                                      \
      "path of libnvidia-ml.so.1 (default: $GPULSE_NVML_LIBRARY, else the dynamic loader's search)") \
    X(gpm, "gpm", "gpm", BOOL, "true",                                                            \
      "read NVML GPM profiling metrics (SM active, tensor, DRAM) on Hopper and later")            \
    X(proc_root, "proc_root", "proc-root", STR, "/proc", "where procfs is mounted")              \
    X(sysfs_root, "sysfs_root", "sysfs-root", STR, "/sys", "where sysfs is mounted")             \
    X(hostname, "hostname", "hostname", STR, "", "host name in the Hostname label (default: this host's name)") \
    X(hostname_label, "hostname_label", "hostname-label", STR, "Hostname",                        \
      "spelling of the host label on GPU series: Hostname (dcgm-exporter until 2026-05, Grafana dashboard 12239) or hostname") \
    X(external_labels, "external_labels", "external-label", MAP, "",                              \
      "labels added to every pushed series that lacks them, e.g. cluster=a (as Prometheus's "   \
      "external_labels); the host label is always added")                                       \
    X(process_series, "process_series", "process-series", STR, "gpu",                             \
      "which host processes get series: gpu (processes on a GPU and their descendants), all, none") \
    X(log_level, "log_level", "log-level", STR, "info", "debug, info, warn or error")              \
    X(push, "push", "push", LIST, "",                                                             \
      "remote-write URL to push every sample to (http:// or https://, e.g. "                      \
      "http://server:9402/api/v1/write); repeat for several targets")                              \
    X(buffer_dir, "buffer_dir", "buffer-dir", STR, "",                                            \
      "directory for the on-disk push buffer (a subdirectory per target) that keeps samples "     \
      "while a target is down and across restarts; empty: a memory queue only")                  \
    X(buffer_max, "buffer_max", "buffer-max", BYTES, GP_PUSH_BUFFER_MAX_DEFAULT,                    \
      "bytes of the on-disk push buffer per target; when full the oldest samples are dropped")   \
    X(push_queue_max, "push_queue_max", "push-queue-max", BYTES, "64MiB",                          \
      "bytes queued in memory per target when buffer_dir is empty; oldest dropped when full")    \
    X(push_bearer_token, "push_bearer_token", "push-bearer-token", STR, "",                       \
      "bearer token sent to the push targets (prefer push_bearer_token_file)")                   \
    X(push_bearer_token_file, "push_bearer_token_file", "push-bearer-token-file", STR, "",        \
      "file holding the bearer token for the push targets, read at start")                       \
    X(push_timeout_ms, "push_timeout", "push-timeout", DURATION, "10s",                           \
      "time limit of one remote-write request, from 1s to 5m")                                   \
    X(push_max_backoff_ms, "push_max_backoff", "push-max-backoff", DURATION, "30s",               \
      "longest wait between retries of a failing target (from 250ms doubling up to this)")        \
    X(steps_socket, "steps_socket", "steps-socket", STR, "/run/gpulse/steps.sock",                 \
      "local datagram socket where training code reports steps (docs/jobs.md); empty: off")    \
    X(steps_socket_mode, "steps_socket_mode", "steps-socket-mode", STR, "0666",                    \
      "octal mode of the step socket; 0666 lets any user's training code report (a sender "      \
      "counts only for a job of its own uid, docs/steps.md)")                                     \
    X(steps_socket_group, "steps_socket_group", "steps-socket-group", STR, "",                     \
      "group (name or gid) of the step socket, e.g. with steps_socket_mode 0660; empty: root's")  \
    X(flight_recorder_dir, "flight_recorder_dir", "flight-recorder-dir", STR, "",                  \
      "directory of PyTorch Flight Recorder dumps (TORCH_NCCL_DEBUG_INFO_TEMP_FILE's), read to "   \
      "name the ranks missing from a stuck collective (docs/jobs.md \"Hangs\"); empty: off")

void gp_agent_config_defaults(struct gp_agent_config *c);

/*
 * Parses a YAML document (the whole file) into c. Keys live under a
 * top-level `agent:` mapping; other top-level sections are ignored (they
 * belong to other roles). Unknown keys and bad values are errors that
 * name the line. Returns GP_OK, GP_EPARSE or GP_ECONFIG.
 */
int gp_agent_config_parse_yaml(struct gp_agent_config *c, const char *yaml, size_t len, char *err,
                               size_t errlen);

/* Reads and parses a file (at most 1 MiB). */
int gp_agent_config_load_file(struct gp_agent_config *c, const char *path, char *err, size_t errlen);

/* Sets one key by its flag name ("interval") from text. */
int gp_agent_config_set(struct gp_agent_config *c, const char *flag, const char *value, char *err,
                        size_t errlen);

/* The steps_socket_mode key as a mode; 0 when it is not an octal mode
 * 0200..0777 with the owner's write bit. */
unsigned gp_agent_steps_socket_mode(const struct gp_agent_config *c);

/* Checks cross-field rules and ranges after everything is applied,
 * external_labels included (gp_agent_external_labels_check). */
int gp_agent_config_validate(const struct gp_agent_config *c, char *err, size_t errlen);

/*
 * Parses argv (after the "agent" word): --config FILE is applied first,
 * then every other flag in order. `--flag value` and `--flag=value` both
 * work; booleans accept `--gpm`, `--no-gpm`, `--gpm=false`. Sets *help
 * when --help/-h is given. Returns GP_OK or GP_EUSAGE/GP_ECONFIG.
 */
int gp_agent_config_from_args(struct gp_agent_config *c, int argc, char **argv, bool *help,
                              char *err, size_t errlen);

/*
 * Checks external_labels: each name a valid label name that is not
 * reserved (`__` prefixed, either host label spelling, or a label by which
 * gpulse tells its own series apart: gpu, UUID, job, rank, pid, target),
 * each value non-empty UTF-8. GP_OK or GP_ECONFIG naming the label.
 */
int gp_agent_external_labels_check(const struct gp_agent_config *c, char *err, size_t errlen);

/* Prints the --help text generated from the key table. */
void gp_agent_config_usage(FILE *out);

/* The agent's section for commands that combine roles (`gpulse up`). */
struct gp_cfg_section gp_agent_cfg_section(struct gp_agent_config *c);

#endif
