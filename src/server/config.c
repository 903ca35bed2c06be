/*
 * config.c - the server's settings: its key table handed to the settings
 * engine (lib/cfg.h), and the checks across keys that a table cannot say.
 */
#include "config.h"

#include "insight/remediate.h"
#include "query/cost.h"
#include "insight/engine.h"
#include "lib/err.h"
#include "lib/log.h"
#include "net/httpc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct gp_cfg_key keys[] = {
#define GP_KEY_ROW_(field, yaml, flag, type, def, help) \
    GP_CFG_ROW(struct gp_server_config, field, yaml, flag, type, def, help),
    GP_SERVER_KEYS(GP_KEY_ROW_)
#undef GP_KEY_ROW_
};

struct gp_cfg_section gp_server_cfg_section(struct gp_server_config *c)
{
    return (struct gp_cfg_section){"server", keys, sizeof keys / sizeof keys[0], c};
}

void gp_server_config_defaults(struct gp_server_config *c)
{
    memset(c, 0, sizeof *c);
    struct gp_cfg_section s = gp_server_cfg_section(c);
    gp_cfg_defaults(&s, 1);
}

/* storage: and the remote_* keys. */
static int validate_storage(const struct gp_server_config *c, char *err, size_t errlen)
{
    if (!strcmp(c->storage, "embedded"))
        return GP_OK;
    if (strcmp(c->storage, "remote"))
        return gp_seterr(err, errlen, GP_ECONFIG, "storage must be embedded or remote, not '%s'",
                         c->storage);
    const struct {
        const char *key, *url;
    } u[] = {{"remote_write_url", c->remote_write_url}, {"remote_query_url", c->remote_query_url}};
    for (size_t i = 0; i < 2; i++) {
        if (!u[i].url[0])
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "storage: remote needs %s (the cluster's %s)", u[i].key,
                             i ? "Prometheus HTTP API root, e.g. http://vm:8428"
                               : "remote-write endpoint, e.g. http://vm:8428/api/v1/write");
        if (strncmp(u[i].url, "http://", 7) && strncmp(u[i].url, "https://", 8))
            return gp_seterr(err, errlen, GP_ECONFIG, "%s must be an http:// or https:// URL, not '%s'",
                             u[i].key, u[i].url);
    }
    if (c->remote_timeout_ms < 100 || c->remote_timeout_ms > 600000 ||
        c->remote_write_timeout_ms < 100 || c->remote_write_timeout_ms > 600000)
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "remote_timeout and remote_write_timeout must be between 100ms and 10m");
    if (c->remote_lookback_ms < 60000 || c->remote_lookback_ms > 7 * 86400000LL)
        return gp_seterr(err, errlen, GP_ECONFIG, "remote_lookback must be between 1m and 7d");
    if (c->remote_window_ms && (c->remote_window_ms < 60000 || c->remote_window_ms > 86400000LL))
        return gp_seterr(err, errlen, GP_ECONFIG, "remote_window must be 0s (off) or between 1m and 1d");
    for (const char *q = c->remote_server_name; *q; q++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-", *q))
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "remote_server_name '%s' may hold only letters, digits and . _ : -",
                             c->remote_server_name);
    if (c->remote_buffer_max < 1024 * 1024)
        return gp_seterr(err, errlen, GP_ECONFIG, "remote_buffer_max must be at least 1MiB");
    if (!c->remote_basic_user[0] != !c->remote_basic_password_file[0])
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "remote_basic_user and remote_basic_password_file go together");
    if (c->remote_basic_user[0] && c->remote_bearer_token_file[0])
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "set remote_bearer_token_file or remote basic auth, not both");
    for (unsigned i = 0; i < c->remote_headers.n && i < GP_CFG_LIST_MAX; i++) {
        const char *h = c->remote_headers.v[i], *colon = strchr(h, ':');
        if (!colon || colon == h || strpbrk(h, "\r\n"))
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "remote_headers: '%s' is not \"Name: value\"", h);
        for (const char *p = h; p < colon; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                  *p == '-' || *p == '_'))
                return gp_seterr(err, errlen, GP_ECONFIG,
                                 "remote_headers: '%s' has an invalid header name", h);
    }
    return GP_OK;
}

int gp_server_config_validate(const struct gp_server_config *c, char *err, size_t errlen)
{
    char host[128];
    unsigned port;
    int rc = gp_parse_listen(c->listen, host, sizeof host, &port, err, errlen);
    if (rc)
        return rc;
    if (!c->data_dir[0])
        return gp_seterr(err, errlen, GP_ECONFIG, "data_dir must not be empty");
    if (c->retention_raw_ms < 3600 * 1000)
        return gp_seterr(err, errlen, GP_ECONFIG, "retention_raw must be at least 1h");
    if (c->retention_rollup_ms < c->retention_raw_ms)
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "retention_rollup must be at least retention_raw (rollups outlive raw data)");
    if (c->write_token[0] && c->write_token_file[0])
        return gp_seterr(err, errlen, GP_ECONFIG, "set write_token or write_token_file, not both");
    if (c->read_token[0] && c->read_token_file[0])
        return gp_seterr(err, errlen, GP_ECONFIG, "set read_token or read_token_file, not both");
    if (!c->tls_cert[0] != !c->tls_key[0])
        return gp_seterr(err, errlen, GP_ECONFIG, "tls_cert and tls_key go together: set both or neither");
    if (c->max_body < 1024)
        return gp_seterr(err, errlen, GP_ECONFIG, "max_body must be at least 1KiB");
    if (c->max_uncompressed < 1024)
        return gp_seterr(err, errlen, GP_ECONFIG, "max_uncompressed must be at least 1KiB");
    if (c->max_inflight_bytes < c->max_body + c->max_uncompressed)
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "max_inflight_bytes must be at least max_body + max_uncompressed, "
                         "or the largest request could never be taken");
    if (c->read_timeout_ms < 100 || c->read_timeout_ms > 600000)
        return gp_seterr(err, errlen, GP_ECONFIG, "read_timeout must be between 100ms and 10m");
    if (c->max_connections < 1 || c->max_connections > 65536)
        return gp_seterr(err, errlen, GP_ECONFIG, "max_connections must be between 1 and 65536");
    if (c->max_connections_per_address > 65536)
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "max_connections_per_address must be between 0 (no limit) and 65536");
    if (c->max_series < 1)
        return gp_seterr(err, errlen, GP_ECONFIG, "max_series must be at least 1");
    if (c->max_future_ms < 0 || c->max_future_ms > 365 * 86400000LL)
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "max_future must be between 0s (no bound) and 365d");
    if (c->checkpoint_interval_ms < 1000)
        return gp_seterr(err, errlen, GP_ECONFIG, "checkpoint_interval must be at least 1s");
    if (c->jobs_scan_interval_ms < 100 || c->jobs_scan_interval_ms > 3600 * 1000)
        return gp_seterr(err, errlen, GP_ECONFIG, "jobs_scan_interval must be between 100ms and 1h");
    if (c->self_scrape_interval_ms &&
        (c->self_scrape_interval_ms < 100 || c->self_scrape_interval_ms > 3600 * 1000))
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "self_scrape_interval must be 0s (off) or between 100ms and 1h");
    char *end;
    double price = strtod(c->gpu_hour_price, &end);
    if (end == c->gpu_hour_price || *end || !isfinite(price) || price < 0 || price > 1e6)
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "gpu_hour_price must be a number of USD between 0 and 1000000, not '%s'",
                         c->gpu_hour_price);
    double budget = strtod(c->job_budget, &end);
    if (end == c->job_budget || *end || !isfinite(budget) || budget < 0 || budget > 1e9)
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "job_budget must be a number of USD between 0 and 1000000000, not '%s'",
                         c->job_budget);
    struct gp_prices *p = malloc(sizeof *p);
    if (!p)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory checking gpu_prices");
    rc = gp_server_config_prices(c, p, err, errlen);
    free(p);
    if (rc)
        return rc;
    if (c->eval_interval_ms < 100 || c->eval_interval_ms > 3600 * 1000)
        return gp_seterr(err, errlen, GP_ECONFIG, "eval_interval must be between 100ms and 1h");
    if (c->eval_step_ms < 100)
        return gp_seterr(err, errlen, GP_ECONFIG, "eval_step must be at least 100ms");
    if (c->eval_window_ms < c->eval_step_ms || c->eval_window_ms % c->eval_step_ms ||
        c->eval_window_ms / c->eval_step_ms >= 10000)
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "eval_window must be a whole number (1 to 9999) of eval_step");
    if (c->alert_clear_for_ms > 24 * 3600 * 1000)
        return gp_seterr(err, errlen, GP_ECONFIG, "alert_clear_for must be at most 24h");
    if (c->health_xid_repeat > 32)
        return gp_seterr(err, errlen, GP_ECONFIG, "health_xid_repeat must be at most 32 (0: off)");
    if (c->health_xid_window_ms < 1000 || c->health_xid_window_ms > 30LL * 24 * 3600 * 1000)
        return gp_seterr(err, errlen, GP_ECONFIG, "health_xid_window must be between 1s and 30d");
    if (c->health_forget_after_ms && c->health_forget_after_ms < 60 * 1000)
        return gp_seterr(err, errlen, GP_ECONFIG, "health_forget_after must be 0 (never) or at least 1m");
    struct gp_detector_cfg dc[GP_DET__COUNT];
    int drc = gp_engine_detector_config(c->detectors_disabled, c->detector_overrides, dc, err, errlen);
    if (drc)
        return drc;
    enum gp_log_level lvl;
    if (gp_log_parse_level(c->log_level, &lvl))
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "log_level must be debug, info, warn or error, not '%s'", c->log_level);
    struct gp_rem_rule rules[GP_CFG_LIST_MAX];
    size_t n;
    if ((rc = gp_server_config_remediation(c, rules, &n, err, errlen)))
        return rc;
    if (c->remediation_max_per_hour < 1 || c->remediation_max_per_hour > GP_REM_RATE_MAX ||
        c->remediation_max_per_kind_per_hour < 1 || c->remediation_max_per_kind_per_hour > GP_REM_RATE_MAX)
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "remediation_max_per_hour and remediation_max_per_kind_per_hour must be "
                         "between 1 and %d",
                         GP_REM_RATE_MAX);
    if (c->remediation_timeout_ms < 100 || c->remediation_timeout_ms > 600000)
        return gp_seterr(err, errlen, GP_ECONFIG, "remediation_timeout must be between 100ms and 10m");
    if (c->remediation_breaker_max_nodes < 1 || c->remediation_breaker_max_nodes > GP_REM_BREAKER_NODES)
        return gp_seterr(err, errlen, GP_ECONFIG, "remediation_breaker_max_nodes must be between 1 and %d",
                         GP_REM_BREAKER_NODES);
    if (c->remediation_breaker_max_percent > 100)
        return gp_seterr(err, errlen, GP_ECONFIG, "remediation_breaker_max_percent must be between 0 and 100");
    if (c->remediation_kubernetes_api[0] &&
        (rc = gp_httpc_check_url("remediation_kubernetes_api", c->remediation_kubernetes_api, err, errlen)))
        return rc;
    if (c->remediation_path_root[0] && c->remediation_path_root[0] != '/')
        return gp_seterr(err, errlen, GP_ECONFIG, "remediation_path_root must be an absolute path, not '%s'",
                         c->remediation_path_root);
    if (c->query_lookback_delta_ms < 1000 || c->query_lookback_delta_ms > 7 * 86400000LL)
        return gp_seterr(err, errlen, GP_ECONFIG, "query_lookback_delta must be between 1s and 7d");
    if (c->query_max_samples < 1)
        return gp_seterr(err, errlen, GP_ECONFIG, "query_max_samples must be at least 1");
    if (c->query_timeout_ms < 1000 || c->query_timeout_ms > 3600000)
        return gp_seterr(err, errlen, GP_ECONFIG, "query_timeout must be between 1s and 1h");
    if (c->query_subquery_step_ms < 1 || c->query_subquery_step_ms > 86400000)
        return gp_seterr(err, errlen, GP_ECONFIG, "query_subquery_step must be between 1ms and 1d");
    return validate_storage(c, err, errlen);
}

int gp_server_config_remediation(const struct gp_server_config *c, struct gp_rem_rule *rules,
                                 size_t *n, char *err, size_t errlen)
{
    *n = 0;
    for (unsigned i = 0; i < c->remediation.n && i < GP_CFG_LIST_MAX; i++) {
        if (!c->remediation.v[i][0])
            continue;
        int rc = gp_rem_parse_rule(c->remediation.v[i], &rules[*n], err, errlen);
        if (rc)
            return rc;
        for (size_t j = 0; j < *n; j++)
            if (!strcmp(rules[j].kind, rules[*n].kind))
                return gp_seterr(err, errlen, GP_ECONFIG, "remediation for '%s' is given twice",
                                 rules[j].kind);
        (*n)++;
    }
    return GP_OK;
}

double gp_server_config_price(const struct gp_server_config *c)
{
    char *end;
    double price = strtod(c->gpu_hour_price, &end);
    return end != c->gpu_hour_price && !*end && isfinite(price) && price > 0 ? price : 0;
}

int gp_server_config_prices(const struct gp_server_config *c, struct gp_prices *p, char *err,
                            size_t errlen)
{
    return gp_prices_parse(p, c->gpu_prices, gp_server_config_price(c), err, errlen);
}

double gp_server_config_budget(const struct gp_server_config *c)
{
    char *end;
    double b = strtod(c->job_budget, &end);
    return end != c->job_budget && !*end && isfinite(b) && b > 0 ? b : 0;
}

void gp_server_config_usage(FILE *out)
{
    fprintf(out,
            "usage: gpulse server [--config FILE] [flags]\n\n"
            "Receives Prometheus remote write (POST /api/v1/write) from gpulse agents, Prometheus\n"
            "or vmagent, keeps the samples in an embedded crash-safe time-series store, and\n"
            "serves them through Prometheus's HTTP API with PromQL (/api/v1/query, /query_range,\n"
            "/series, /labels, /label/NAME/values, /metadata; also under /prometheus for\n"
            "Grafana), gpulse's own routes (/nodes, /gpus, /jobs, /alerts, /health) and /metrics.\n\n"
            "flags (each also a key under 'server:' in the YAML config):\n"
            "  --config FILE\n      YAML configuration file; flags override it\n");
    struct gp_server_config dummy;
    struct gp_cfg_section s = gp_server_cfg_section(&dummy);
    gp_cfg_usage(out, &s, 1);
    fprintf(out, "\nexit status: 0 on success, 1 on a runtime failure, 2 on a usage or config error.\n");
}
