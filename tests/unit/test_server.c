/*
 * test_server.c - the server's settings and auth rules: defaults, YAML
 * and flags (alone and combined with the agent's section as `gpulse up`
 * does), cross-key checks, docs naming every key, bearer tokens, token
 * files, the loopback rule.
 */
#include "agent/config.h"
#include "lib/err.h"
#include "server/auth.h"
#include "lib/token.h"
#include "server/config.h"
#include "test.h"

#include <stdio.h>
#include <string.h>

static void test_config_defaults(void)
{
    struct gp_server_config c;
    char err[256];
    gp_server_config_defaults(&c);
    CHECK_INT(gp_server_config_validate(&c, err, sizeof err), GP_OK);
    CHECK_STR(c.listen, "127.0.0.1:9402");
    CHECK_STR(c.data_dir, "./gpulse-data");
    CHECK_INT(c.retention_raw_ms, 15LL * 86400 * 1000);
    CHECK_INT(c.retention_rollup_ms, 400LL * 86400 * 1000);
    CHECK_INT(c.max_body, 16 << 20);
    CHECK_INT(c.max_uncompressed, 128 << 20);
    CHECK_INT(c.max_inflight_bytes, 512 << 20);
    CHECK_INT(c.read_timeout_ms, 30000);
    CHECK_INT(c.max_future_ms, 10 * 60 * 1000);
    CHECK_STR(c.write_token, "");
    CHECK_STR(c.log_level, "info");
    /* PromQL limits: Prometheus's defaults. */
    CHECK_INT(c.query_lookback_delta_ms, 5 * 60 * 1000);
    CHECK_INT(c.query_max_samples, 50000000);
    CHECK_INT(c.query_timeout_ms, 2 * 60 * 1000);
    CHECK_INT(c.query_subquery_step_ms, 60 * 1000);
    CHECK(!c.query_prom3_windows);
}

static void test_config_yaml_and_flags(void)
{
    struct gp_server_config c;
    char err[256];
    gp_server_config_defaults(&c);
    struct gp_cfg_section s = gp_server_cfg_section(&c);
    const char *y = "agent:\n  interval: 2s\n"
                    "server:\n  listen: 0.0.0.0:9999\n  data_dir: /var/lib/gpulse\n"
                    "  retention_raw: 2d\n  max_body: 1MiB\n  write_token: abc\n";
    CHECK_INT(gp_cfg_parse_yaml(&s, 1, y, strlen(y), err, sizeof err), GP_OK);
    CHECK_STR(c.listen, "0.0.0.0:9999");
    CHECK_STR(c.data_dir, "/var/lib/gpulse");
    CHECK_INT(c.retention_raw_ms, 2 * 86400 * 1000);
    CHECK_INT(c.max_body, 1 << 20);
    CHECK_STR(c.write_token, "abc");
    CHECK_INT(gp_cfg_parse_yaml(&s, 1, "server:\n  nope: 1\n", 18, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "unknown key 'server.nope'");
    CHECK_CONTAINS(err, "line 2");
    CHECK_INT(gp_cfg_parse_yaml(&s, 1, "server:\n  max_body: lots\n", 24, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "max_body");

    /* `gpulse up`: server first, then agent; a shared flag is the server's. */
    struct gp_agent_config a;
    gp_server_config_defaults(&c);
    gp_agent_config_defaults(&a);
    struct gp_cfg_section two[2] = {gp_server_cfg_section(&c), gp_agent_cfg_section(&a)};
    char *argv[] = {"--listen", "127.0.0.1:7000", "--data=/tmp/d", "--interval", "500ms",
                    "--simulate", "1x2xH100", "--log-level", "debug"};
    bool help;
    CHECK_INT(gp_cfg_from_args(two, 2, "up", 9, argv, c.config_file, sizeof c.config_file, &help, err,
                               sizeof err),
              GP_OK);
    CHECK_STR(c.listen, "127.0.0.1:7000");
    CHECK_STR(a.listen, "0.0.0.0:9401");
    CHECK_STR(c.data_dir, "/tmp/d");
    CHECK_INT(a.interval_ms, 500);
    CHECK_STR(a.simulate, "1x2xH100");
    CHECK_STR(c.log_level, "debug");

    /* The PromQL limits take Prometheus's flag names, and YAML keys. */
    gp_server_config_defaults(&c);
    struct gp_cfg_section one = gp_server_cfg_section(&c);
    char *qargv[] = {"--query.lookback-delta", "1m", "--query.max-samples=1000", "--query.timeout", "10s",
                     "--query.prom3-windows", "--query.subquery-step", "30s"};
    CHECK_INT(gp_cfg_from_args(&one, 1, "server", 8, qargv, c.config_file, sizeof c.config_file, &help,
                               err, sizeof err),
              GP_OK);
    CHECK_INT(c.query_lookback_delta_ms, 60000);
    CHECK_INT(c.query_max_samples, 1000);
    CHECK_INT(c.query_timeout_ms, 10000);
    CHECK(c.query_prom3_windows);
    CHECK_INT(c.query_subquery_step_ms, 30000);
    CHECK_INT(gp_server_config_validate(&c, err, sizeof err), GP_OK);
    const char *qy = "server:\n  query_lookback_delta: 2m\n  query_prom3_windows: false\n";
    CHECK_INT(gp_cfg_parse_yaml(&one, 1, qy, strlen(qy), err, sizeof err), GP_OK);
    CHECK_INT(c.query_lookback_delta_ms, 120000);
    CHECK(!c.query_prom3_windows);
}

static void test_config_cross_checks(void)
{
    struct gp_server_config c;
    char err[256];
    struct {
        const char *flag, *value, *msg;
    } bad[] = {
        {"write-token-file", "/x", "write_token or write_token_file"},
        {"tls-cert", "/c.pem", "tls_cert and tls_key"},
        {"max-inflight-bytes", "100MiB", "max_inflight_bytes must be at least"},
        {"retention-rollup", "1d", "retention_rollup must be at least retention_raw"},
        {"retention-raw", "10m", "retention_raw must be at least 1h"},
        {"max-future", "400d", "max_future must be between 0s (no bound) and 365d"},
        {"read-timeout", "50ms", "read_timeout"},
        {"max-body", "10", "max_body"},
        {"log-level", "loud", "log_level"},
        {"listen", "nowhere", "listen"},
        {"max-connections", "0", "max_connections"},
        {"data", "", "data_dir"},
        {"query.lookback-delta", "500ms", "query_lookback_delta must be between 1s and 7d"},
        {"query.lookback-delta", "8d", "query_lookback_delta must be between 1s and 7d"},
        {"query.max-samples", "0", "query_max_samples must be at least 1"},
        {"query.timeout", "2h", "query_timeout must be between 1s and 1h"},
        {"query.subquery-step", "2d", "query_subquery_step must be between 1ms and 1d"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gp_server_config_defaults(&c);
        snprintf(c.write_token, sizeof c.write_token, "t");
        struct gp_cfg_section s = gp_server_cfg_section(&c);
        CHECK_INT(gp_cfg_set(&s, 1, bad[i].flag, bad[i].value, err, sizeof err), GP_OK);
        if (gp_server_config_validate(&c, err, sizeof err) != GP_ECONFIG)
            gp_test_fail(__FILE__, __LINE__, "--%s %s was accepted", bad[i].flag, bad[i].value);
        CHECK_CONTAINS(err, bad[i].msg);
    }
}

/* docs/config.md and gpulse.example.yaml name every server key, and the
 * example's server section is valid. */
static void test_docs_name_every_key(void)
{
    static const char *const yaml_keys[] = {
#define GP_DOC_KEY_(field, yaml, flag, type, def, help) yaml,
        GP_SERVER_KEYS(GP_DOC_KEY_)
#undef GP_DOC_KEY_
    };
    const char *docs = gp_test_repo_text("docs/config.md");
    const char *sec = strstr(docs, "## Server");
    if (!sec)
        gp_test_fail(__FILE__, __LINE__, "docs/config.md has no '## Server' section");
    for (size_t i = 0; i < sizeof yaml_keys / sizeof yaml_keys[0]; i++) {
        char needle[80];
        snprintf(needle, sizeof needle, "| `%s` |", yaml_keys[i]);
        if (!strstr(sec, needle))
            gp_test_fail(__FILE__, __LINE__, "docs/config.md's server section does not document %s",
                         needle);
    }
    const char *ex = gp_test_repo_text("gpulse.example.yaml");
    const char *ssec = strstr(ex, "\nserver:\n");
    if (!ssec)
        gp_test_fail(__FILE__, __LINE__, "gpulse.example.yaml has no server: section");
    for (size_t i = 0; i < sizeof yaml_keys / sizeof yaml_keys[0]; i++) {
        char needle[80];
        snprintf(needle, sizeof needle, "\n  %s:", yaml_keys[i]);
        if (!strstr(ssec, needle))
            gp_test_fail(__FILE__, __LINE__, "gpulse.example.yaml's server section lacks %s",
                         yaml_keys[i]);
    }
    struct gp_server_config c;
    char err[256], path[1024];
    gp_server_config_defaults(&c);
    struct gp_cfg_section s = gp_server_cfg_section(&c);
    snprintf(path, sizeof path, "%s/../../gpulse.example.yaml", GP_TEST_DATA_DIR);
    CHECK_INT(gp_cfg_load_file(&s, 1, path, err, sizeof err), GP_OK);
    CHECK_INT(gp_server_config_validate(&c, err, sizeof err), GP_OK);
}

static void test_bearer(void)
{
    CHECK(gp_auth_bearer_ok("Bearer s3cret", "s3cret"));
    CHECK(gp_auth_bearer_ok("bearer s3cret", "s3cret"));
    CHECK(gp_auth_bearer_ok("Bearer   s3cret  ", "s3cret"));
    CHECK(!gp_auth_bearer_ok("Bearer s3cre", "s3cret"));
    CHECK(!gp_auth_bearer_ok("Bearer s3cret2", "s3cret"));
    CHECK(!gp_auth_bearer_ok("Bearer s3cres", "s3cret"));
    CHECK(!gp_auth_bearer_ok("Bearer s3crets3cret", "s3cret")); /* the cycling comparison */
    CHECK(!gp_auth_bearer_ok("Bearer ", "s3cret"));
    CHECK(!gp_auth_bearer_ok("Basic czNjcmV0", "s3cret"));
    CHECK(!gp_auth_bearer_ok("s3cret", "s3cret"));
    CHECK(!gp_auth_bearer_ok(NULL, "s3cret"));
    CHECK(!gp_auth_bearer_ok("Bearer ", ""));
    CHECK(!gp_auth_bearer_ok("Bearer x", ""));
}

static void test_token_files(void)
{
    const char *d = gp_test_tmpdir();
    char out[GP_SERVER_TOKEN_LEN], err[256], p[600];
    gp_test_write_file(d, "ok", "tok-123_ABC\n");
    snprintf(p, sizeof p, "%s/ok", d);
    CHECK_INT(gp_token_load("", p, "write_token", out, sizeof out, err, sizeof err), GP_OK);
    CHECK_STR(out, "tok-123_ABC");
    CHECK_INT(gp_token_load("inline", p, "write_token", out, sizeof out, err, sizeof err), GP_OK);
    CHECK_STR(out, "inline");
    CHECK_INT(gp_token_load("", "", "write_token", out, sizeof out, err, sizeof err), GP_OK);
    CHECK_STR(out, "");
    gp_test_write_file(d, "crlf", "abc \r\nsecond line\n");
    snprintf(p, sizeof p, "%s/crlf", d);
    CHECK_INT(gp_token_load("", p, "read_token", out, sizeof out, err, sizeof err), GP_OK);
    CHECK_STR(out, "abc");
    gp_test_write_file(d, "empty", "\n");
    snprintf(p, sizeof p, "%s/empty", d);
    CHECK_INT(gp_token_load("", p, "read_token", out, sizeof out, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "is empty");
    gp_test_write_file(d, "space", "a b\n");
    snprintf(p, sizeof p, "%s/space", d);
    CHECK_INT(gp_token_load("", p, "read_token", out, sizeof out, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "without spaces");
    static char big[1000];
    memset(big, 'x', sizeof big - 1);
    gp_test_write_file(d, "big", big);
    snprintf(p, sizeof p, "%s/big", d);
    CHECK_INT(gp_token_load("", p, "read_token", out, sizeof out, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "too long");
    snprintf(p, sizeof p, "%s/absent", d);
    CHECK_INT(gp_token_load("", p, "read_token", out, sizeof out, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "cannot read read_token_file");
    CHECK_INT(gp_token_load(big, "", "read_token", out, sizeof out, err, sizeof err), GP_ECONFIG);
}

static void test_loopback_rule(void)
{
    CHECK(gp_auth_is_loopback("127.0.0.1"));
    CHECK(gp_auth_is_loopback("127.9.8.7"));
    CHECK(gp_auth_is_loopback("::1"));
    CHECK(gp_auth_is_loopback("::ffff:127.0.0.1"));
    CHECK(!gp_auth_is_loopback("0.0.0.0"));
    CHECK(!gp_auth_is_loopback("10.1.2.3"));
    CHECK(!gp_auth_is_loopback("::"));
    CHECK(!gp_auth_is_loopback(""));
    CHECK(!gp_auth_is_loopback("128.0.0.1"));

    char out[160], why[128];
    int fb;
    CHECK_INT(gp_auth_bind_address("0.0.0.0:9402", 0, 0, out, sizeof out, &fb, why, sizeof why), GP_OK);
    CHECK_INT(fb, 1);
    CHECK_STR(out, "127.0.0.1:9402");
    CHECK_STR(why, "write_token and read_token not set");
    CHECK_INT(gp_auth_bind_address("[::]:81", 1, 0, out, sizeof out, &fb, why, sizeof why), GP_OK);
    CHECK_INT(fb, 1);
    CHECK_STR(out, "127.0.0.1:81");
    CHECK_STR(why, "read_token not set");
    CHECK_INT(gp_auth_bind_address(":82", 0, 1, out, sizeof out, &fb, why, sizeof why), GP_OK);
    CHECK_STR(out, "127.0.0.1:82");
    CHECK_STR(why, "write_token not set");
    CHECK_INT(gp_auth_bind_address("0.0.0.0:9402", 1, 1, out, sizeof out, &fb, why, sizeof why), GP_OK);
    CHECK_INT(fb, 0);
    CHECK_STR(out, "0.0.0.0:9402");
    CHECK_INT(gp_auth_bind_address("127.0.0.1:0", 0, 0, out, sizeof out, &fb, why, sizeof why), GP_OK);
    CHECK_INT(fb, 0);
    CHECK_STR(out, "127.0.0.1:0");
    CHECK_INT(gp_auth_bind_address("[::1]:5", 0, 0, out, sizeof out, &fb, why, sizeof why), GP_OK);
    CHECK_INT(fb, 0);
    CHECK_INT(gp_auth_bind_address("bad", 0, 0, out, sizeof out, &fb, why, sizeof why), GP_ECONFIG);
}

const struct gp_test gp_tests_server[] = {
    {"config_defaults", test_config_defaults},
    {"config_yaml_and_flags", test_config_yaml_and_flags},
    {"config_cross_checks", test_config_cross_checks},
    {"docs_name_every_key", test_docs_name_every_key},
    {"bearer", test_bearer},
    {"token_files", test_token_files},
    {"loopback_rule", test_loopback_rule},
    {0},
};
