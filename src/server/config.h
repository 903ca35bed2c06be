/*
 * config.h - the server's settings: one table (GP_SERVER_KEYS) under the
 * YAML section `server:`, handed to the settings engine (lib/cfg.h),
 * which derives the YAML reader, the flags and --help from it; a unit
 * test checks that docs/config.md and gpulse.example.yaml name every key.
 * `gpulse up` takes this section first, then the agent's, so a flag both
 * have (--listen, --log-level) sets the server's.
 */
#ifndef GP_SERVER_CONFIG_H
#define GP_SERVER_CONFIG_H

#include "lib/cfg.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GP_SERVER_PATH_LEN 512
#define GP_SERVER_TOKEN_LEN 256

struct gp_server_config {
    char config_file[GP_SERVER_PATH_LEN];
    char listen[128];
    char data_dir[GP_SERVER_PATH_LEN];
    int64_t retention_raw_ms;
    int64_t retention_rollup_ms;
    char write_token[GP_SERVER_TOKEN_LEN];
    char write_token_file[GP_SERVER_PATH_LEN];
    char read_token[GP_SERVER_TOKEN_LEN];
    char read_token_file[GP_SERVER_PATH_LEN];
    char tls_cert[GP_SERVER_PATH_LEN];
    char tls_key[GP_SERVER_PATH_LEN];
    uint64_t max_body;
    uint64_t max_uncompressed;
    uint64_t max_inflight_bytes;
    int64_t read_timeout_ms;
    uint64_t max_connections;
    uint64_t max_connections_per_address;
    uint64_t max_series;
    int64_t max_future_ms;
    int64_t checkpoint_interval_ms;
    int64_t jobs_scan_interval_ms;
    int64_t self_scrape_interval_ms; /* 0: off */
    char gpu_hour_price[32]; /* decimal text; parsed by gp_server_config_price */
    char gpu_prices[1024];   /* MODEL=USD,...; parsed by gp_server_config_prices */
    char job_budget[32];     /* decimal text, USD; 0 none */
    char funnel_report_receivers[512]; /* notify receivers (email) of the weekly funnel; "" off */
    char funnel_report_schedule[32];   /* "mon 08:00" (UTC) */
    int64_t eval_interval_ms;
    int64_t eval_window_ms;
    int64_t eval_step_ms;
    int64_t alert_clear_for_ms;
    char detectors_disabled[512];
    char detector_overrides[1024];
    uint64_t health_xid_repeat;
    int64_t health_xid_window_ms;
    int64_t health_forget_after_ms;
    char log_level[8];
    struct gp_cfg_list remediation;  /* "KIND=COMMAND ARG..." (insight/remediate.h) */
    bool remediation_dry_run;
    uint64_t remediation_max_per_hour;
    uint64_t remediation_max_per_kind_per_hour;
    int64_t remediation_timeout_ms;
    char remediation_path_root[GP_SERVER_PATH_LEN];
    char remediation_scontrol[GP_SERVER_PATH_LEN];
    char remediation_kubernetes_api[GP_SERVER_PATH_LEN];
    char remediation_kubernetes_token_file[GP_SERVER_PATH_LEN];
    char remediation_kubernetes_ca_file[GP_SERVER_PATH_LEN];
    char remediation_kubernetes_taint[254];
    uint64_t remediation_breaker_max_nodes;
    uint64_t remediation_breaker_max_percent;
    bool remediation_undo_on_healthy;
    char storage[16];                       /* embedded | remote */
    char remote_write_url[GP_SERVER_PATH_LEN];
    char remote_query_url[GP_SERVER_PATH_LEN];
    int64_t remote_timeout_ms;
    int64_t remote_write_timeout_ms;
    int64_t remote_lookback_ms;
    int64_t remote_window_ms;
    char remote_server_name[64];            /* "": the only server on its cluster */
    uint64_t remote_buffer_max;
    char remote_bearer_token_file[GP_SERVER_PATH_LEN];
    char remote_basic_user[GP_SERVER_TOKEN_LEN];
    char remote_basic_password_file[GP_SERVER_PATH_LEN];
    struct gp_cfg_list remote_headers; /* "Name: value" */
    int64_t query_lookback_delta_ms;   /* PromQL limits (query/promql.h) */
    uint64_t query_max_samples;
    int64_t query_timeout_ms;
    bool query_prom3_windows;
    int64_t query_subquery_step_ms;
    struct gp_cfg_list rule_files;     /* Prometheus rule files: paths or globs */
};

/* X(field, yaml key, flag, type, default, help). */
#define GP_SERVER_KEYS(X)                                                                          \
    X(listen, "listen", "listen", STR, "127.0.0.1:9402",                                           \
      "address and port of the API, remote write and /metrics (ADDR:PORT, [IPv6]:PORT); without "  \
      "both tokens the server binds 127.0.0.1 only")                                              \
    X(data_dir, "data_dir", "data", STR, "./gpulse-data",                                          \
      "directory of the time-series store (created if absent)")                                   \
    X(retention_raw_ms, "retention_raw", "retention-raw", DURATION, "15d",                         \
      "how long raw samples are kept")                                                            \
    X(retention_rollup_ms, "retention_rollup", "retention-rollup", DURATION, "400d",               \
      "how long 1-minute rollups (min, max, sum, count) are kept")                                \
    X(write_token, "write_token", "write-token", STR, "",                                          \
      "bearer token that POST /api/v1/write requires")                                            \
    X(write_token_file, "write_token_file", "write-token-file", STR, "",                           \
      "file holding the write token (instead of write_token)")                                    \
    X(read_token, "read_token", "read-token", STR, "",                                             \
      "bearer token that the query API and /metrics require")                                     \
    X(read_token_file, "read_token_file", "read-token-file", STR, "",                              \
      "file holding the read token (instead of read_token)")                                      \
    X(tls_cert, "tls_cert", "tls-cert", STR, "", "PEM certificate (chain) file: serve HTTPS")      \
    X(tls_key, "tls_key", "tls-key", STR, "", "PEM private key file of tls_cert")                 \
    X(max_body, "max_body", "max-body", BYTES, "16MiB",                                            \
      "largest remote-write body accepted, compressed (413 above)")                               \
    X(max_uncompressed, "max_uncompressed", "max-uncompressed", BYTES, "128MiB",                   \
      "largest remote-write body accepted once decompressed (413 above)")                         \
    X(max_inflight_bytes, "max_inflight_bytes", "max-inflight-bytes", BYTES, "512MiB",             \
      "memory that write requests being received and decoded, and query form bodies, may hold "   \
      "together (429 above)")      \
    X(read_timeout_ms, "read_timeout", "read-timeout", DURATION, "30s",                            \
      "time a client has to send a whole request body")                                           \
    X(max_connections, "max_connections", "max-connections", UINT, "512",                          \
      "open client connections at most")                                                          \
    X(max_connections_per_address, "max_connections_per_address",                                 \
      "max-connections-per-address", UINT, "64",                                                   \
      "open connections from one client address (an IPv6 /64) at most; 0: no limit")             \
    X(max_series, "max_series", "max-series", UINT, "10000000",                                    \
      "series the store holds at most; samples of new series beyond are rejected")               \
    X(max_future_ms, "max_future", "max-future", DURATION, "10m",                                  \
      "samples dated further ahead of the server's clock are rejected (400, too_far_in_future); "  \
      "0s: no bound, for backfilling synthetic data")                                              \
    X(checkpoint_interval_ms, "checkpoint_interval", "checkpoint-interval", DURATION, "5m",        \
      "how often the head is snapshotted and the WAL truncated")                                  \
    X(jobs_scan_interval_ms, "jobs_scan_interval", "jobs-scan-interval", DURATION, "5s",          \
      "how often the jobs registry is updated from new gpulse_job_* samples")                     \
    X(self_scrape_interval_ms, "self_scrape_interval", "self-scrape-interval", DURATION, "15s",    \
      "how often the server stores its own /metrics families in its store, labelled "             \
      "job=\"gpulse-server\" and instance=\"HOST:PORT\", with up (100ms-1h; 0s: off)")            \
    X(gpu_hour_price, "gpu_hour_price", "gpu-hour-price", STR, "0",                                \
      "price of one GPU-hour in USD for models without a price of their own in gpu_prices or "    \
      "the model table (0: none, their cost is null)")                                            \
    X(gpu_prices, "gpu_prices", "gpu-prices", STR, "",                                             \
      "USD per GPU-hour by model, overriding the model table's defaults: "                        \
      "\"H100=2.9,A100=1.8,default=2.0\" (default: models without a price)")                        \
    X(job_budget, "job_budget", "job-budget", STR, "0",                                            \
      "budget of each job in USD: the job document's budget and budget_ratio, the budget "        \
      "detector's limit (0: none)")                                                                \
    X(funnel_report_receivers, "funnel_report_receivers", "funnel-report-receivers", STR, "",      \
      "notify receivers (type email, comma-separated) that get the weekly fleet funnel report "   \
      "(docs/api.md; empty: none)")                                                                \
    X(funnel_report_schedule, "funnel_report_schedule", "funnel-report-schedule", STR,             \
      "mon 08:00", "when the weekly fleet funnel report goes out: DAY HH:MM in UTC (mon..sun); "   \
      "it covers the 7 days before")                                                               \
    X(eval_interval_ms, "eval_interval", "eval-interval", DURATION, "15s",                         \
      "how often detectors and custom rules are evaluated and alerts move")                      \
    X(eval_window_ms, "eval_window", "eval-window", DURATION, "15m",                               \
      "how much recent history the detectors see (a whole number of eval_step)")                 \
    X(eval_step_ms, "eval_step", "eval-step", DURATION, "15s",                                     \
      "spacing of the points of the detectors' window")                                           \
    X(alert_clear_for_ms, "alert_clear_for", "alert-clear-for", DURATION, "1m",                    \
      "how long a firing alert must be clear before it resolves (0s: at the first clear tick)")   \
    X(detectors_disabled, "detectors_disabled", "detectors-disabled", STR, "",                     \
      "comma-separated built-in detectors not to run (e.g. gpu_saturated,tensor_cores_unused)")  \
    X(detector_overrides, "detector_overrides", "detector-overrides", STR, "",                     \
      "detector settings, DETECTOR.FIELD=VALUE,... with FIELD threshold, clear, for, cooldown, "  \
      "severity or enabled (e.g. memory_near_exhaustion.threshold=0.9,oom_predicted.for=2m)")   \
    X(health_xid_repeat, "health_xid_repeat", "health-xid-repeat", UINT, "3",                       \
      "the same XID this many times on a GPU within health_xid_window makes it unhealthy "         \
      "(drain and inspect; 0: off, at most 32)")                                                   \
    X(health_xid_window_ms, "health_xid_window", "health-xid-window", DURATION, "24h",             \
      "how long an XID counts toward a GPU's health state (repeats, and an XID that clears by "   \
      "itself)")                                                                                    \
    X(health_forget_after_ms, "health_forget_after", "health-forget-after", DURATION, "7d",       \
      "a GPU not seen this long, and then a node with no GPUs and no newer preflight, leave the "  \
      "health states and state.db (0: never)")                                                     \
    X(log_level, "log_level", "log-level", STR, "info", "debug, info, warn or error")             \
    X(remediation, "remediation", "remediation", LIST, "",                                         \
      "KIND=COMMAND ARG...: a command run (no shell) when an alert of KIND starts firing; "        \
      "placeholders {node} {gpu} {job} {rank} {kind} {severity}, each value checked")             \
    X(remediation_dry_run, "remediation_dry_run", "remediation-dry-run", BOOL, "true",             \
      "log and audit the remediation commands instead of running them")                           \
    X(remediation_max_per_hour, "remediation_max_per_hour", "remediation-max-per-hour", UINT, "1", \
      "remediation actions per alert kind and node in any hour, at most (1-64)")                 \
    X(remediation_max_per_kind_per_hour, "remediation_max_per_kind_per_hour",                      \
      "remediation-max-per-kind-per-hour", UINT, "5",                                              \
      "remediation actions per alert kind over all nodes in any hour, at most (1-64)")           \
    X(remediation_timeout_ms, "remediation_timeout", "remediation-timeout", DURATION, "30s",       \
      "a remediation command still running after this is killed (100ms-10m)")                     \
    X(remediation_path_root, "remediation_path_root", "remediation-path-root", STR, "",             \
      "directory every path argument built from a placeholder must resolve into (absolute); "     \
      "empty: unchecked")                                                                          \
    X(remediation_scontrol, "remediation_scontrol", "remediation-scontrol", STR, "scontrol",      \
      "the scontrol the @slurm-drain action runs (a name on PATH or a path)")                     \
    X(remediation_kubernetes_api, "remediation_kubernetes_api", "remediation-kubernetes-api", STR, \
      "", "the API server @kubernetes-cordon patches nodes through; empty: "                      \
      "https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (in a pod)")                    \
    X(remediation_kubernetes_token_file, "remediation_kubernetes_token_file",                      \
      "remediation-kubernetes-token-file", STR,                                                    \
      "/var/run/secrets/kubernetes.io/serviceaccount/token",                                       \
      "the service account token @kubernetes-cordon sends, read at each action; empty: none")     \
    X(remediation_kubernetes_ca_file, "remediation_kubernetes_ca_file",                            \
      "remediation-kubernetes-ca-file", STR, "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt", \
      "the CA bundle the API server's certificate is checked with (when the file exists)")        \
    X(remediation_kubernetes_taint, "remediation_kubernetes_taint", "remediation-kubernetes-taint", \
      STR, "gpulse.io/unhealthy", "the taint key @kubernetes-cordon puts (value: the alert kind, " \
      "effect NoSchedule)")                                                                        \
    X(remediation_breaker_max_nodes, "remediation_breaker_max_nodes",                              \
      "remediation-breaker-max-nodes", UINT, "5",                                                  \
      "circuit breaker: distinct nodes acted on in any hour, at most (1-4096)")                   \
    X(remediation_breaker_max_percent, "remediation_breaker_max_percent",                          \
      "remediation-breaker-max-percent", UINT, "10",                                               \
      "circuit breaker: percent of the fleet's nodes acted on in any hour, at most "              \
      "(0: no percent limit; at least one node)")                                                 \
    X(remediation_undo_on_healthy, "remediation_undo_on_healthy", "remediation-undo-on-healthy",   \
      BOOL, "false", "resume or uncordon a node gpulse drained or cordoned when it is marked "     \
      "healthy again")                                                                             \
    X(storage, "storage", "storage", STR, "embedded",                                              \
      "where samples live: embedded (the store under data_dir) or remote (a Prometheus-compatible " \
      "cluster written by remote write and read through its HTTP API; docs/storage.md)")          \
    X(remote_write_url, "remote_write_url", "remote-write-url", STR, "",                           \
      "storage: remote: the cluster's remote-write endpoint "                                     \
      "(e.g. http://vm:8428/api/v1/write)")                                                       \
    X(remote_query_url, "remote_query_url", "remote-query-url", STR, "",                           \
      "storage: remote: the root of the cluster's Prometheus HTTP API, /api/v1/... appended "      \
      "(e.g. http://vm:8428, http://mimir/prometheus)")                                           \
    X(remote_timeout_ms, "remote_timeout", "remote-timeout", DURATION, "30s",                      \
      "storage: remote: time one query to the cluster may take")                                  \
    X(remote_write_timeout_ms, "remote_write_timeout", "remote-write-timeout", DURATION, "30s",    \
      "storage: remote: time one remote-write request may take")                                  \
    X(remote_lookback_ms, "remote_lookback", "remote-lookback", DURATION, "15m",                   \
      "storage: remote: how far back the inventory and the jobs scanner look for series")        \
    X(remote_window_ms, "remote_window", "remote-window", DURATION, "20m",                         \
      "storage: remote: recent window kept locally and read without the cluster (raised to "      \
      "remote_lookback and eval_window; 0s: off, every read asks the cluster)")                   \
    X(remote_server_name, "remote_server_name", "remote-server-name", STR, "",                     \
      "storage: remote: this server's name among several sharing one cluster; labels what it "    \
      "forwards gpulse_server=NAME, and job-level reads and detectors then see every server's "   \
      "ranks (\"\": the only server)")                                                          \
    X(remote_buffer_max, "remote_buffer_max", "remote-buffer-max", BYTES, "1GiB",                  \
      "storage: remote: disk buffer (under data_dir/remote-buffer) for writes the cluster has "    \
      "not taken yet; the oldest are dropped beyond")                                             \
    X(remote_bearer_token_file, "remote_bearer_token_file", "remote-bearer-token-file", STR, "",   \
      "storage: remote: file holding a bearer token sent with every request to the cluster")     \
    X(remote_basic_user, "remote_basic_user", "remote-basic-user", STR, "",                        \
      "storage: remote: basic-auth user name for the cluster (with remote_basic_password_file)")  \
    X(remote_basic_password_file, "remote_basic_password_file", "remote-basic-password-file", STR, \
      "", "storage: remote: file holding the basic-auth password")                                \
    X(remote_headers, "remote_headers", "remote-header", LIST, "",                                 \
      "storage: remote: extra header \"Name: value\" on every request to the cluster, e.g. "       \
      "\"X-Scope-OrgID: team-a\" for Mimir (repeatable, up to 8)")                                  \
    X(query_lookback_delta_ms, "query_lookback_delta", "query.lookback-delta", DURATION, "5m",    \
      "PromQL: how far back an instant vector looks for a series' newest sample (1s-7d), as "      \
      "Prometheus's --query.lookback-delta")                                                       \
    X(query_max_samples, "query_max_samples", "query.max-samples", UINT, "50000000",              \
      "PromQL: samples one query may hold in memory at once; more is refused (422), as "          \
      "Prometheus's --query.max-samples")                                                          \
    X(query_timeout_ms, "query_timeout", "query.timeout", DURATION, "2m",                         \
      "PromQL: the longest a query may run (503 timeout); a request's timeout= may only "          \
      "shorten it (1s-1h)")                                                                         \
    X(query_prom3_windows, "query_prom3_windows", "query.prom3-windows", BOOL, "false",           \
      "PromQL: Prometheus 3's left-open windows, (t - range, t] for range vectors and the "       \
      "lookback, instead of 2.42's closed [t - range, t]")                                        \
    X(query_subquery_step_ms, "query_subquery_step", "query.subquery-step", DURATION, "1m",       \
      "PromQL: the step of a subquery written without one, expr[5m:] (1ms-1d), as Prometheus's "   \
      "evaluation_interval")                                                                   \
    X(rule_files, "rule_files", "rule-file", LIST, "",                                             \
      "Prometheus rule files (paths or globs, relative ones under the config file's directory) "  \
      "whose groups the server evaluates: recorded series written back, alerts in the alerts API " \
      "(repeatable, up to 8; docs/config.md)")

void gp_server_config_defaults(struct gp_server_config *c);

/* Checks ranges and cross-key rules after everything is applied. GP_OK or
 * GP_ECONFIG with detail. */
int gp_server_config_validate(const struct gp_server_config *c, char *err, size_t errlen);

/* The gpu_hour_price key as a number: 0 when not configured. The key is
 * checked by gp_server_config_validate, so this cannot fail after it. */
double gp_server_config_price(const struct gp_server_config *c);

/* The remediation entries parsed into rules (at most GP_CFG_LIST_MAX);
 * *n gets their count. GP_OK or GP_ECONFIG with detail. */
struct gp_rem_rule;
int gp_server_config_remediation(const struct gp_server_config *c, struct gp_rem_rule *rules,
                                 size_t *n, char *err, size_t errlen);
/* The price list (gpu_prices over the model table, gpu_hour_price the
 * fallback) into *p. Checked by gp_server_config_validate. GP_OK or
 * GP_ECONFIG with detail. */
struct gp_prices;
int gp_server_config_prices(const struct gp_server_config *c, struct gp_prices *p, char *err,
                            size_t errlen);

/* The job_budget key in USD: 0 when none. */
double gp_server_config_budget(const struct gp_server_config *c);

/* The server's section, for gp_cfg_* and commands that combine roles. */
struct gp_cfg_section gp_server_cfg_section(struct gp_server_config *c);

/* Prints the --help text of `gpulse server`. */
void gp_server_config_usage(FILE *out);

#endif
