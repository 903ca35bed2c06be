/*
 * config.c - agent settings from the key table: defaults, YAML, flags.
 *
 * The YAML reader walks libyaml's event stream: a top-level mapping whose
 * `agent:` entry is a mapping of scalar keys to scalar values. Anything
 * else under `agent:` (a list, a nested map, an alias) is an error that
 * names its line; other top-level sections are skipped whole, since they
 * configure other roles.
 */
#include "config.h"

#include "lib/duration.h"
#include "lib/err.h"
#include "lib/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

enum key_type { T_STR, T_DURATION, T_UINT, T_BOOL };

struct key {
    const char *yaml, *flag;
    enum key_type type;
    size_t offset, size;
    const char *def, *help;
};

static const struct key keys[] = {
#define GP_KEY_ROW_(field, yaml, flag, type, def, help)                                     \
    {yaml, flag, T_##type, offsetof(struct gp_agent_config, field),                        \
     sizeof(((struct gp_agent_config *)0)->field), def, help},
    GP_AGENT_KEYS(GP_KEY_ROW_)
#undef GP_KEY_ROW_
};
#define NKEYS (sizeof keys / sizeof keys[0])

static int parse_bool(const char *v, bool *out)
{
    if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "on") || !strcmp(v, "1"))
        *out = true;
    else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "off") || !strcmp(v, "0"))
        *out = false;
    else
        return GP_EPARSE;
    return GP_OK;
}

/* Stores text v into the field described by k. */
static int set_key(struct gp_agent_config *c, const struct key *k, const char *v, char *err,
                   size_t errlen)
{
    char *field = (char *)c + k->offset;
    char detail[160];
    switch (k->type) {
    case T_STR:
        if (strlen(v) >= k->size)
            return gp_seterr(err, errlen, GP_ECONFIG, "value of '%s' is too long (at most %zu bytes)",
                             k->yaml, k->size - 1);
        memcpy(field, v, strlen(v) + 1);
        return GP_OK;
    case T_DURATION: {
        int64_t ms;
        if (gp_parse_duration_ms(v, &ms, detail, sizeof detail))
            return gp_seterr(err, errlen, GP_ECONFIG, "'%s': %s", k->yaml, detail);
        *(int64_t *)field = ms;
        return GP_OK;
    }
    case T_UINT: {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(v, &end, 10);
        if (!*v || *end || errno || v[0] == '-')
            return gp_seterr(err, errlen, GP_ECONFIG, "'%s': expected a non-negative integer, got '%s'",
                             k->yaml, v);
        *(uint64_t *)field = n;
        return GP_OK;
    }
    case T_BOOL:
        if (parse_bool(v, (bool *)field))
            return gp_seterr(err, errlen, GP_ECONFIG, "'%s': expected true or false, got '%s'", k->yaml,
                             v);
        return GP_OK;
    }
    return GP_EINTERNAL;
}

void gp_agent_config_defaults(struct gp_agent_config *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < NKEYS; i++) {
        int rc = set_key(c, &keys[i], keys[i].def, NULL, 0);
        (void)rc;
    }
}

static const struct key *find_yaml(const char *name)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (!strcmp(keys[i].yaml, name))
            return &keys[i];
    return NULL;
}

static const struct key *find_flag(const char *name)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (!strcmp(keys[i].flag, name))
            return &keys[i];
    return NULL;
}

/* Skips the node whose first event was just consumed as ev. */
static int skip_node(yaml_parser_t *p, const yaml_event_t *first)
{
    if (first->type != YAML_MAPPING_START_EVENT && first->type != YAML_SEQUENCE_START_EVENT)
        return GP_OK;
    int depth = 1;
    while (depth > 0) {
        yaml_event_t ev;
        if (!yaml_parser_parse(p, &ev))
            return GP_EPARSE;
        if (ev.type == YAML_MAPPING_START_EVENT || ev.type == YAML_SEQUENCE_START_EVENT)
            depth++;
        else if (ev.type == YAML_MAPPING_END_EVENT || ev.type == YAML_SEQUENCE_END_EVENT)
            depth--;
        else if (ev.type == YAML_STREAM_END_EVENT)
            depth = 0;
        yaml_event_delete(&ev);
    }
    return GP_OK;
}

static int yaml_fail(yaml_parser_t *p, char *err, size_t errlen)
{
    return gp_seterr(err, errlen, GP_EPARSE, "line %zu: %s", p->problem_mark.line + 1,
                     p->problem ? p->problem : "invalid YAML");
}

/* Parses the mapping under `agent:`; its MAPPING_START was consumed. */
static int parse_agent_map(yaml_parser_t *p, struct gp_agent_config *c, char *err, size_t errlen)
{
    for (;;) {
        yaml_event_t kev, vev;
        if (!yaml_parser_parse(p, &kev))
            return yaml_fail(p, err, errlen);
        if (kev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&kev);
            return GP_OK;
        }
        size_t line = kev.start_mark.line + 1;
        if (kev.type != YAML_SCALAR_EVENT) {
            yaml_event_delete(&kev);
            return gp_seterr(err, errlen, GP_ECONFIG, "line %zu: expected a key under 'agent'", line);
        }
        char name[64];
        snprintf(name, sizeof name, "%s", (const char *)kev.data.scalar.value);
        yaml_event_delete(&kev);
        if (!yaml_parser_parse(p, &vev))
            return yaml_fail(p, err, errlen);
        const struct key *k = find_yaml(name);
        if (!k) {
            yaml_event_delete(&vev);
            return gp_seterr(err, errlen, GP_ECONFIG, "line %zu: unknown key 'agent.%s'", line, name);
        }
        if (vev.type != YAML_SCALAR_EVENT) {
            yaml_event_delete(&vev);
            return gp_seterr(err, errlen, GP_ECONFIG, "line %zu: 'agent.%s' must be a single value",
                             line, name);
        }
        char detail[256];
        int rc = set_key(c, k, (const char *)vev.data.scalar.value, detail, sizeof detail);
        yaml_event_delete(&vev);
        if (rc)
            return gp_seterr(err, errlen, rc, "line %zu: %s", line, detail);
    }
}

int gp_agent_config_parse_yaml(struct gp_agent_config *c, const char *yaml, size_t len, char *err,
                               size_t errlen)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return gp_seterr(err, errlen, GP_ENOMEM, "cannot start the YAML parser");
    yaml_parser_set_input_string(&p, (const unsigned char *)yaml, len);
    int rc = GP_OK, state = 0; /* 0 before the root map, 1 inside it, 2 after */
    while (rc == GP_OK) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            rc = yaml_fail(&p, err, errlen);
            break;
        }
        yaml_event_type_t t = ev.type;
        size_t line = ev.start_mark.line + 1;
        if (t == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if (state == 0 && t == YAML_MAPPING_START_EVENT) {
            state = 1;
        } else if (state == 0 && t == YAML_SCALAR_EVENT && ev.data.scalar.length == 0) {
            /* an empty document */
        } else if (state == 0 && t != YAML_STREAM_START_EVENT && t != YAML_DOCUMENT_START_EVENT &&
                   t != YAML_DOCUMENT_END_EVENT) {
            rc = gp_seterr(err, errlen, GP_ECONFIG, "line %zu: the configuration must be a mapping",
                           line);
        } else if (state == 1 && t == YAML_MAPPING_END_EVENT) {
            state = 2;
        } else if (state == 1 && t == YAML_SCALAR_EVENT) {
            int is_agent = !strcmp((const char *)ev.data.scalar.value, "agent");
            yaml_event_t v;
            if (!yaml_parser_parse(&p, &v)) {
                rc = yaml_fail(&p, err, errlen);
            } else {
                if (is_agent && v.type == YAML_MAPPING_START_EVENT)
                    rc = parse_agent_map(&p, c, err, errlen);
                else if (is_agent && !(v.type == YAML_SCALAR_EVENT && v.data.scalar.length == 0))
                    rc = gp_seterr(err, errlen, GP_ECONFIG, "line %zu: 'agent' must be a mapping", line);
                else if (skip_node(&p, &v))
                    rc = yaml_fail(&p, err, errlen);
                yaml_event_delete(&v);
            }
        } else if (state == 1) {
            rc = gp_seterr(err, errlen, GP_ECONFIG, "line %zu: expected a section name", line);
        } else if (state == 2 && t == YAML_DOCUMENT_START_EVENT) {
            rc = gp_seterr(err, errlen, GP_ECONFIG, "line %zu: only one YAML document is allowed", line);
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    return rc;
}

int gp_agent_config_load_file(struct gp_agent_config *c, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return gp_seterr(err, errlen, GP_ECONFIG, "cannot open config '%s': %s", path, strerror(errno));
    enum { MAX = 1 << 20 };
    char *buf = malloc(MAX + 1);
    if (!buf) {
        fclose(f);
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory reading '%s'", path);
    }
    size_t n = fread(buf, 1, MAX + 1, f);
    int rerr = ferror(f);
    fclose(f);
    int rc;
    char detail[384];
    if (rerr)
        rc = gp_seterr(err, errlen, GP_ECONFIG, "cannot read config '%s'", path);
    else if (n > MAX)
        rc = gp_seterr(err, errlen, GP_ECONFIG, "config '%s' is larger than 1 MiB", path);
    else if ((rc = gp_agent_config_parse_yaml(c, buf, n, detail, sizeof detail)))
        gp_seterr(err, errlen, GP_ECONFIG, "config '%s': %s", path, detail);
    free(buf);
    return rc ? GP_ECONFIG : GP_OK;
}

int gp_agent_config_set(struct gp_agent_config *c, const char *flag, const char *value, char *err,
                        size_t errlen)
{
    const struct key *k = find_flag(flag);
    if (!k)
        return gp_seterr(err, errlen, GP_EUSAGE, "unknown flag '--%s'", flag);
    return set_key(c, k, value, err, errlen);
}

int gp_parse_listen(const char *s, char *host, size_t hostlen, unsigned *port, char *err,
                    size_t errlen)
{
    const char *colon;
    size_t hl;
    const char *h = s;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':')
            return gp_seterr(err, errlen, GP_ECONFIG, "invalid listen address '%s': expected [IPV6]:PORT",
                             s);
        h = s + 1;
        hl = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return gp_seterr(err, errlen, GP_ECONFIG, "invalid listen address '%s': expected ADDR:PORT", s);
        hl = (size_t)(colon - s);
    }
    if (hl >= hostlen)
        return gp_seterr(err, errlen, GP_ECONFIG, "invalid listen address '%s': address too long", s);
    memcpy(host, h, hl);
    host[hl] = '\0';
    char *end;
    errno = 0;
    unsigned long p = strtoul(colon + 1, &end, 10);
    if (!colon[1] || *end || errno || p > 65535)
        return gp_seterr(err, errlen, GP_ECONFIG, "invalid listen address '%s': bad port", s);
    *port = (unsigned)p;
    return GP_OK;
}

int gp_agent_config_validate(const struct gp_agent_config *c, char *err, size_t errlen)
{
    char host[128];
    unsigned port;
    int rc = gp_parse_listen(c->listen, host, sizeof host, &port, err, errlen);
    if (rc)
        return rc;
    if (c->interval_ms < 100 || c->interval_ms > 60000)
        return gp_seterr(err, errlen, GP_ECONFIG, "interval must be between 100ms and 60s");
    if (strcmp(c->hostname_label, "Hostname") && strcmp(c->hostname_label, "hostname"))
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "hostname_label must be 'Hostname' or 'hostname', not '%s'", c->hostname_label);
    if (strcmp(c->process_series, "gpu") && strcmp(c->process_series, "all") &&
        strcmp(c->process_series, "none"))
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "process_series must be 'gpu', 'all' or 'none', not '%s'", c->process_series);
    enum gp_log_level lvl;
    if (gp_log_parse_level(c->log_level, &lvl))
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "log_level must be debug, info, warn or error, not '%s'", c->log_level);
    return GP_OK;
}

int gp_agent_config_from_args(struct gp_agent_config *c, int argc, char **argv, bool *help,
                              char *err, size_t errlen)
{
    *help = false;
    /* --config first, so flags override the file wherever they stand. */
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *path = NULL;
        if (!strcmp(a, "--config")) {
            if (i + 1 >= argc)
                return gp_seterr(err, errlen, GP_EUSAGE, "flag '--config' needs a value");
            path = argv[i + 1];
        } else if (!strncmp(a, "--config=", 9)) {
            path = a + 9;
        }
        if (path) {
            snprintf(c->config_file, sizeof c->config_file, "%s", path);
            int rc = gp_agent_config_load_file(c, path, err, errlen);
            if (rc)
                return rc;
        }
    }
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            *help = true;
            return GP_OK;
        }
        if (strncmp(a, "--", 2) != 0)
            return gp_seterr(err, errlen, GP_EUSAGE, "unexpected argument '%s'", a);
        char name[64];
        const char *eq = strchr(a + 2, '=');
        size_t nl = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
        if (nl >= sizeof name)
            return gp_seterr(err, errlen, GP_EUSAGE, "unknown flag '%s'", a);
        memcpy(name, a + 2, nl);
        name[nl] = '\0';
        if (!strcmp(name, "config")) {
            if (!eq)
                i++;
            continue;
        }
        const char *value = eq ? eq + 1 : NULL;
        const struct key *k = find_flag(name);
        if (!k && !strncmp(name, "no-", 3) && !eq) {
            const struct key *nk = find_flag(name + 3);
            if (nk && nk->type == T_BOOL) {
                *(bool *)((char *)c + nk->offset) = false;
                continue;
            }
        }
        if (!k)
            return gp_seterr(err, errlen, GP_EUSAGE, "unknown flag '--%s' (see 'gpulse agent --help')",
                             name);
        if (!value && k->type == T_BOOL) {
            value = "true";
        } else if (!value) {
            if (i + 1 >= argc)
                return gp_seterr(err, errlen, GP_EUSAGE, "flag '--%s' needs a value", name);
            value = argv[++i];
        }
        int rc = set_key(c, k, value, err, errlen);
        if (rc)
            return GP_EUSAGE;
    }
    return GP_OK;
}

void gp_agent_config_usage(FILE *out)
{
    fprintf(out, "usage: gpulse agent [--config FILE] [flags]\n\n"
                 "Samples this node's GPUs (NVIDIA through NVML, AMD through sysfs), host CPU,\n"
                 "memory and processes, and serves them as Prometheus metrics with\n"
                 "dcgm-exporter's names on /metrics, and as JSON on /api/v1/snapshot.\n\n"
                 "flags (each also a key under 'agent:' in the YAML config):\n"
                 "  --config FILE\n      YAML configuration file; flags override it\n");
    for (size_t i = 0; i < NKEYS; i++) {
        const char *arg = keys[i].type == T_BOOL ? "" : keys[i].type == T_DURATION ? " DURATION" :
                          keys[i].type == T_UINT ? " N" : " VALUE";
        fprintf(out, "  --%s%s   (yaml: %s)\n      %s", keys[i].flag, arg, keys[i].yaml, keys[i].help);
        if (*keys[i].def)
            fprintf(out, " [default: %s]", keys[i].def);
        fputc('\n', out);
    }
    fprintf(out, "\nenvironment: GPULSE_NVML_LIBRARY and LD_LIBRARY_PATH steer which "
                 "libnvidia-ml.so.1 is loaded.\n"
                 "exit status: 0 on success, 1 on a runtime failure, 2 on a usage or config error.\n");
}
