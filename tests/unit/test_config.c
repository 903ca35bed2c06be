#include "agent/config.h"
#include "lib/err.h"
#include "test.h"

#include <stdio.h>
#include <stdlib.h>

static int parse(struct gp_agent_config *c, const char *yaml, char *err, size_t n)
{
    gp_agent_config_defaults(c);
    return gp_agent_config_parse_yaml(c, yaml, strlen(yaml), err, n);
}

static void test_defaults(void)
{
    struct gp_agent_config c;
    char err[256];
    gp_agent_config_defaults(&c);
    CHECK_STR(c.listen, "0.0.0.0:9401");
    CHECK_INT(c.interval_ms, 1000);
    CHECK(c.gpm);
    CHECK_STR(c.hostname_label, "Hostname");
    CHECK_STR(c.proc_root, "/proc");
    CHECK_INT(gp_agent_config_validate(&c, err, sizeof err), GP_OK);
}

static void test_yaml_sets_keys(void)
{
    struct gp_agent_config c;
    char err[256] = "";
    const char *y = "# comment\n"
                    "server:\n  data: /var/lib/gpulse\n  nested: {a: [1, 2]}\n"
                    "agent:\n"
                    "  listen: \"127.0.0.1:9500\"\n"
                    "  interval: 250ms\n"
                    "  gpm: no\n"
                    "  seed: 42\n"
                    "  simulate: 2x8xH100\n"
                    "  hostname_label: hostname\n";
    CHECK_INT(parse(&c, y, err, sizeof err), GP_OK);
    CHECK_STR(c.listen, "127.0.0.1:9500");
    CHECK_INT(c.interval_ms, 250);
    CHECK(!c.gpm);
    CHECK_INT(c.seed, 42);
    CHECK_STR(c.simulate, "2x8xH100");
    CHECK_STR(c.hostname_label, "hostname");
    CHECK_INT(parse(&c, "", err, sizeof err), GP_OK);
    CHECK_INT(parse(&c, "agent:\n", err, sizeof err), GP_OK);
}

static void test_yaml_errors_name_the_line(void)
{
    static const struct {
        const char *yaml, *want;
    } bad[] = {
        {"agent:\n  interval: 1s\n  nope: 1\n", "line 3: unknown key 'agent.nope'"},
        {"agent:\n  interval: soon\n", "line 2: 'interval': invalid duration"},
        {"agent:\n  gpm: perhaps\n", "line 2: 'gpm': expected true or false"},
        {"agent:\n  seed: -1\n", "line 2: 'seed': expected a non-negative integer"},
        {"agent:\n  listen: [a, b]\n", "line 2: 'agent.listen' must be a single value"},
        {"agent: 3\n", "line 1: 'agent' must be a mapping"},
        {"- a\n- b\n", "must be a mapping"},
        {"agent:\n  listen: \"unterminated\n", "line"},
        {"agent:\n  a: &x 1\n  b: *x\n", "unknown key"},
        {"a: 1\n---\nb: 2\n", "only one YAML document"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct gp_agent_config c;
        char err[256] = "";
        int rc = parse(&c, bad[i].yaml, err, sizeof err);
        if (rc == GP_OK)
            gp_test_fail(__FILE__, __LINE__, "accepted: %s", bad[i].yaml);
        CHECK_CONTAINS(err, bad[i].want);
    }
}

static void test_long_string_rejected(void)
{
    struct gp_agent_config c;
    char err[256] = "";
    char y[2000];
    char big[1200];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    snprintf(y, sizeof y, "agent:\n  proc_root: %s\n", big);
    CHECK(parse(&c, y, err, sizeof err) != GP_OK);
    CHECK_CONTAINS(err, "too long");
    CHECK_STR(c.proc_root, "/proc"); /* untouched */
}

static void test_flags(void)
{
    struct gp_agent_config c;
    char err[256] = "";
    bool help;
    const char *path = gp_test_tmpdir();
    char file[512];
    snprintf(file, sizeof file, "%s/a.yaml", path);
    gp_test_write_file(path, "a.yaml", "agent:\n  interval: 5s\n  listen: 127.0.0.1:1\n");
    char *argv[] = {"--interval=200ms", "--config", file, "--no-gpm", "--seed", "7"};
    gp_agent_config_defaults(&c);
    CHECK_INT(gp_agent_config_from_args(&c, 6, argv, &help, err, sizeof err), GP_OK);
    CHECK(!help);
    CHECK_INT(c.interval_ms, 200); /* the flag beats the file */
    CHECK_STR(c.listen, "127.0.0.1:1");
    CHECK(!c.gpm);
    CHECK_INT(c.seed, 7);
    char *bad[] = {"--interval"};
    CHECK_INT(gp_agent_config_from_args(&c, 1, bad, &help, err, sizeof err), GP_EUSAGE);
    CHECK_CONTAINS(err, "needs a value");
    char *pos[] = {"stray"};
    CHECK_INT(gp_agent_config_from_args(&c, 1, pos, &help, err, sizeof err), GP_EUSAGE);
    char *h[] = {"--help"};
    CHECK_INT(gp_agent_config_from_args(&c, 1, h, &help, err, sizeof err), GP_OK);
    CHECK(help);
}

static void test_listen_parsing(void)
{
    char host[64], err[128];
    unsigned port;
    CHECK_INT(gp_parse_listen("0.0.0.0:9401", host, sizeof host, &port, err, sizeof err), GP_OK);
    CHECK_STR(host, "0.0.0.0");
    CHECK_INT(port, 9401);
    CHECK_INT(gp_parse_listen("[::1]:80", host, sizeof host, &port, err, sizeof err), GP_OK);
    CHECK_STR(host, "::1");
    CHECK_INT(gp_parse_listen(":9401", host, sizeof host, &port, err, sizeof err), GP_OK);
    CHECK_STR(host, "");
    const char *bad[] = {"9401", "host:", "host:70000", "[::1]80", "[::1", "a:-1", "a:1x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(gp_parse_listen(bad[i], host, sizeof host, &port, err, sizeof err) != GP_OK);
}

/* Every key of the table is documented in docs/config.md and the example config. */
static void test_docs_name_every_key(void)
{
    static const char *const yaml_keys[] = {
#define GP_DOC_KEY_(field, yaml, flag, type, def, help) yaml,
        GP_AGENT_KEYS(GP_DOC_KEY_)
#undef GP_DOC_KEY_
    };
    const char *docs[] = {"/../../docs/config.md", "/../../gpulse.example.yaml"};
    for (size_t d = 0; d < 2; d++) {
        char path[1024];
        snprintf(path, sizeof path, "%s%s", GP_TEST_DATA_DIR, docs[d]);
        FILE *f = fopen(path, "r");
        CHECK(f != NULL);
        static char text[1 << 16];
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = '\0';
        fclose(f);
        for (size_t i = 0; i < sizeof yaml_keys / sizeof yaml_keys[0]; i++) {
            char needle[80];
            snprintf(needle, sizeof needle, "%s:", yaml_keys[i]);
            if (d == 0)
                snprintf(needle, sizeof needle, "`%s`", yaml_keys[i]);
            if (!strstr(text, needle))
                gp_test_fail(__FILE__, __LINE__, "%s does not document %s", docs[d], needle);
        }
    }
    /* And the example file itself is a valid configuration. */
    struct gp_agent_config c;
    char err[256], path[1024];
    gp_agent_config_defaults(&c);
    snprintf(path, sizeof path, "%s/../../gpulse.example.yaml", GP_TEST_DATA_DIR);
    CHECK_INT(gp_agent_config_load_file(&c, path, err, sizeof err), GP_OK);
    CHECK_INT(gp_agent_config_validate(&c, err, sizeof err), GP_OK);
}

/* simulate_faults and simulate_truth: only with simulate, the override checked against the spec. */
static void test_simulate_faults_validated(void)
{
    struct gp_agent_config c;
    char err[512];
    gp_agent_config_defaults(&c);
    CHECK_INT(gp_agent_config_set(&c, "simulate-faults", "leak=sim-node-0/1", err, sizeof err), GP_OK);
    CHECK_INT(gp_agent_config_validate(&c, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "simulate_faults is set but simulate is not");
    CHECK_INT(gp_agent_config_set(&c, "simulate", "2x8xH100", err, sizeof err), GP_OK);
    CHECK_INT(gp_agent_config_validate(&c, err, sizeof err), GP_OK);
    CHECK_INT(gp_agent_config_set(&c, "simulate-faults", "leak=sim-node-2/1", err, sizeof err), GP_OK);
    CHECK_INT(gp_agent_config_validate(&c, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "the fleet has nodes 0 to 1");
    CHECK_INT(gp_agent_config_set(&c, "simulate-faults", "leak=sim-node-1/1,leak=sim-node-0/0", err, sizeof err),
              GP_OK);
    CHECK_INT(gp_agent_config_validate(&c, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "given twice");
    gp_agent_config_defaults(&c);
    CHECK_INT(gp_agent_config_set(&c, "simulate-truth", "-", err, sizeof err), GP_OK);
    CHECK_INT(gp_agent_config_validate(&c, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "simulate_truth is set but simulate is not");
}

/* external_labels: a YAML mapping or repeated flags, checked by validate. */
static void test_external_labels(void)
{
    struct gp_agent_config c;
    char err[512] = "";
    const char *y = "agent:\n  external_labels:\n    cluster: east\n    datacenter: \"dc 1\"\n";
    CHECK_INT(parse(&c, y, err, sizeof err), GP_OK);
    CHECK_INT(c.external_labels.n, 2);
    CHECK_STR(c.external_labels.v[0], "cluster=east");
    CHECK_STR(c.external_labels.v[1], "datacenter=dc 1");
    CHECK_INT(gp_agent_config_validate(&c, err, sizeof err), GP_OK);
    bool help;
    char *argv[] = {"--external-label", "cluster=west", "--external-label=region=eu-1"};
    gp_agent_config_defaults(&c);
    CHECK_INT(gp_agent_config_from_args(&c, 3, argv, &help, err, sizeof err), GP_OK);
    CHECK_INT(c.external_labels.n, 2);
    CHECK_STR(c.external_labels.v[1], "region=eu-1");
    CHECK_INT(gp_agent_config_validate(&c, err, sizeof err), GP_OK);
    static const struct {
        const char *label, *want;
    } bad[] = {
        {"1cluster=a", "external label '1cluster=a' is invalid: the name must match"},
        {"clus-ter=a", "external label 'clus-ter=a' is invalid"},
        {"cluster=", "external label 'cluster=' is invalid"},
        {"cluster=\xff", "is invalid"},
        {"__name__=x", "external label '__name__' is reserved"},
        {"__meta=x", "external label '__meta' is reserved"},
        {"Hostname=n1", "external label 'Hostname' is reserved"},
        {"hostname=n1", "external label 'hostname' is reserved"},
        {"UUID=x", "external label 'UUID' is reserved"},
        {"job=x", "external label 'job' is reserved"},
        {"gpu=0", "external label 'gpu' is reserved"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gp_agent_config_defaults(&c);
        CHECK_INT(gp_agent_config_set(&c, "external-label", bad[i].label, err, sizeof err), GP_OK);
        CHECK_INT(gp_agent_config_validate(&c, err, sizeof err), GP_ECONFIG);
        CHECK_CONTAINS(err, bad[i].want);
    }
    /* A name given twice is refused as it is set. */
    gp_agent_config_defaults(&c);
    char *twice[] = {"--external-label", "a=1", "--external-label", "a=2"};
    CHECK_INT(gp_agent_config_from_args(&c, 4, twice, &help, err, sizeof err), GP_EUSAGE);
    CHECK_CONTAINS(err, "'external_labels': 'a' is given twice");
}

const struct gp_test gp_tests_config[] = {
    {"external_labels", test_external_labels},
    {"simulate_faults_validated", test_simulate_faults_validated},
    {"defaults", test_defaults},
    {"yaml_sets_keys", test_yaml_sets_keys},
    {"yaml_errors_name_the_line", test_yaml_errors_name_the_line},
    {"long_string_rejected", test_long_string_rejected},
    {"flags", test_flags},
    {"listen_parsing", test_listen_parsing},
    {"docs_name_every_key", test_docs_name_every_key},
    {0},
};
