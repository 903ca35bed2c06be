/*
 * cfg.c - the settings engine of cfg.h.
 *
 * The YAML reader walks libyaml's event stream: a top-level mapping whose
 * entries are sections; inside a known section, a mapping of scalar keys
 * to scalar values (or, for LIST keys, a sequence of scalars; for MAP
 * keys, a mapping of scalars, stored as "NAME=VALUE" items). Anything
 * else there (a nested map, an alias) is an error that names its line.
 */
#include "cfg.h"

#include "lib/duration.h"
#include "lib/err.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

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

int gp_parse_bytes(const char *s, uint64_t *out, char *err, size_t errlen)
{
    static const struct {
        const char *unit;
        uint64_t mult;
    } units[] = {{"", 1},
                 {"B", 1},
                 {"KB", 1000},
                 {"MB", 1000000},
                 {"GB", 1000000000},
                 {"TB", 1000000000000},
                 {"KiB", 1ull << 10},
                 {"MiB", 1ull << 20},
                 {"GiB", 1ull << 30},
                 {"TiB", 1ull << 40}};
    char *end;
    errno = 0;
    if (!isdigit((unsigned char)s[0]))
        return gp_seterr(err, errlen, GP_EPARSE, "expected a size such as 512MiB, got '%s'", s);
    unsigned long long n = strtoull(s, &end, 10);
    if (errno)
        return gp_seterr(err, errlen, GP_EPARSE, "size '%s' is too large", s);
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].unit))
            continue;
        if (n > UINT64_MAX / units[i].mult)
            return gp_seterr(err, errlen, GP_EPARSE, "size '%s' is too large", s);
        *out = n * units[i].mult;
        return GP_OK;
    }
    return gp_seterr(err, errlen, GP_EPARSE,
                     "unknown unit in size '%s' (use B, KB, MB, GB, KiB, MiB, GiB, TiB)", s);
}

/* Stores text v into the field described by k. */
static int set_key(void *target, const struct gp_cfg_key *k, const char *v, char *err,
                   size_t errlen)
{
    char *field = (char *)target + k->offset;
    char detail[160];
    switch (k->type) {
    case GP_CFG_STR:
        if (strlen(v) >= k->size)
            return gp_seterr(err, errlen, GP_ECONFIG, "value of '%s' is too long (at most %zu bytes)",
                             k->yaml, k->size - 1);
        memcpy(field, v, strlen(v) + 1);
        return GP_OK;
    case GP_CFG_DURATION: {
        int64_t ms;
        if (gp_parse_duration_ms(v, &ms, detail, sizeof detail))
            return gp_seterr(err, errlen, GP_ECONFIG, "'%s': %s", k->yaml, detail);
        *(int64_t *)field = ms;
        return GP_OK;
    }
    case GP_CFG_UINT: {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(v, &end, 10);
        if (!*v || *end || errno || v[0] == '-')
            return gp_seterr(err, errlen, GP_ECONFIG, "'%s': expected a non-negative integer, got '%s'",
                             k->yaml, v);
        *(uint64_t *)field = n;
        return GP_OK;
    }
    case GP_CFG_BOOL:
        if (parse_bool(v, (bool *)field))
            return gp_seterr(err, errlen, GP_ECONFIG, "'%s': expected true or false, got '%s'", k->yaml,
                             v);
        return GP_OK;
    case GP_CFG_BYTES:
        if (gp_parse_bytes(v, (uint64_t *)field, detail, sizeof detail))
            return gp_seterr(err, errlen, GP_ECONFIG, "'%s': %s", k->yaml, detail);
        return GP_OK;
    case GP_CFG_LIST:
    case GP_CFG_MAP: {
        struct gp_cfg_list *l = (struct gp_cfg_list *)field;
        if (!*v)
            return GP_OK; /* an empty default: the empty list */
        if (k->type == GP_CFG_MAP) {
            const char *eq = strchr(v, '=');
            if (!eq || eq == v)
                return gp_seterr(err, errlen, GP_ECONFIG, "'%s': expected NAME=VALUE, got '%s'",
                                 k->yaml, v);
            size_t nl = (size_t)(eq - v) + 1; /* the name and its '=' */
            for (unsigned i = 0; i < l->n; i++)
                if (!strncmp(l->v[i], v, nl))
                    return gp_seterr(err, errlen, GP_ECONFIG, "'%s': '%.*s' is given twice", k->yaml,
                                     (int)(nl - 1), v);
        }
        if (l->n >= GP_CFG_LIST_MAX)
            return gp_seterr(err, errlen, GP_ECONFIG, "'%s': at most %d values", k->yaml,
                             GP_CFG_LIST_MAX);
        if (strlen(v) >= GP_CFG_LIST_LEN)
            return gp_seterr(err, errlen, GP_ECONFIG, "a value of '%s' is too long (at most %d bytes)",
                             k->yaml, GP_CFG_LIST_LEN - 1);
        memcpy(l->v[l->n++], v, strlen(v) + 1);
        return GP_OK;
    }
    }
    return GP_EINTERNAL;
}

void gp_cfg_defaults(const struct gp_cfg_section *s, size_t ns)
{
    for (size_t i = 0; i < ns; i++)
        for (size_t j = 0; j < s[i].nkeys; j++) {
            const struct gp_cfg_key *k = &s[i].keys[j];
            if (k->type == GP_CFG_LIST || k->type == GP_CFG_MAP)
                ((struct gp_cfg_list *)((char *)s[i].target + k->offset))->n = 0;
            int rc = set_key(s[i].target, k, k->def, NULL, 0);
            (void)rc; /* defaults are checked by the config tests */
        }
}

static const struct gp_cfg_key *find_yaml(const struct gp_cfg_section *s, const char *name)
{
    for (size_t j = 0; j < s->nkeys; j++)
        if (!strcmp(s->keys[j].yaml, name))
            return &s->keys[j];
    return NULL;
}

static const struct gp_cfg_key *find_flag(const struct gp_cfg_section *s, size_t ns,
                                          const char *name, void **target)
{
    for (size_t i = 0; i < ns; i++)
        for (size_t j = 0; j < s[i].nkeys; j++)
            if (!strcmp(s[i].keys[j].flag, name)) {
                *target = s[i].target;
                return &s[i].keys[j];
            }
    return NULL;
}

/* Skips the node whose first event was just consumed as first. */
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

/* Reads a YAML sequence of scalars into a LIST key (replacing it). */
static int parse_list(yaml_parser_t *p, const struct gp_cfg_section *s, const struct gp_cfg_key *k,
                      size_t line, char *err, size_t errlen)
{
    ((struct gp_cfg_list *)((char *)s->target + k->offset))->n = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(p, &ev))
            return yaml_fail(p, err, errlen);
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            return GP_OK;
        }
        if (ev.type != YAML_SCALAR_EVENT) {
            yaml_event_delete(&ev);
            return gp_seterr(err, errlen, GP_ECONFIG, "line %zu: '%s.%s' must be a list of values",
                             line, s->name, k->yaml);
        }
        char detail[256];
        int rc = set_key(s->target, k, (const char *)ev.data.scalar.value, detail, sizeof detail);
        size_t vline = ev.start_mark.line + 1;
        yaml_event_delete(&ev);
        if (rc)
            return gp_seterr(err, errlen, rc, "line %zu: %s", vline, detail);
    }
}

/* Reads a YAML mapping of scalars into a MAP key (replacing it) as
 * "NAME=VALUE" items; its MAPPING_START was consumed. */
static int parse_map(yaml_parser_t *p, const struct gp_cfg_section *s, const struct gp_cfg_key *k,
                     char *err, size_t errlen)
{
    ((struct gp_cfg_list *)((char *)s->target + k->offset))->n = 0;
    for (;;) {
        yaml_event_t kev, vev;
        if (!yaml_parser_parse(p, &kev))
            return yaml_fail(p, err, errlen);
        if (kev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&kev);
            return GP_OK;
        }
        size_t kline = kev.start_mark.line + 1;
        if (kev.type != YAML_SCALAR_EVENT) {
            yaml_event_delete(&kev);
            return gp_seterr(err, errlen, GP_ECONFIG, "line %zu: '%s.%s' must map names to values",
                             kline, s->name, k->yaml);
        }
        if (!yaml_parser_parse(p, &vev)) {
            yaml_event_delete(&kev);
            return yaml_fail(p, err, errlen);
        }
        int rc = GP_OK;
        char item[GP_CFG_LIST_LEN + 1], detail[256];
        if (vev.type != YAML_SCALAR_EVENT)
            rc = gp_seterr(err, errlen, GP_ECONFIG, "line %zu: '%s.%s.%s' must be a single value",
                           kline, s->name, k->yaml, (const char *)kev.data.scalar.value);
        else if (snprintf(item, sizeof item, "%s=%s", (const char *)kev.data.scalar.value,
                          (const char *)vev.data.scalar.value) >= (int)sizeof item)
            rc = gp_seterr(err, errlen, GP_ECONFIG, "line %zu: a value of '%s' is too long (at most %d bytes)",
                           kline, k->yaml, GP_CFG_LIST_LEN - 1);
        else if ((rc = set_key(s->target, k, item, detail, sizeof detail)))
            gp_seterr(err, errlen, rc, "line %zu: %s", kline, detail);
        yaml_event_delete(&kev);
        yaml_event_delete(&vev);
        if (rc)
            return rc;
    }
}

/* Parses the mapping of one section; its MAPPING_START was consumed. */
static int parse_section(yaml_parser_t *p, const struct gp_cfg_section *s, char *err, size_t errlen)
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
            return gp_seterr(err, errlen, GP_ECONFIG, "line %zu: expected a key under '%s'", line,
                             s->name);
        }
        char name[64];
        snprintf(name, sizeof name, "%s", (const char *)kev.data.scalar.value);
        yaml_event_delete(&kev);
        if (!yaml_parser_parse(p, &vev))
            return yaml_fail(p, err, errlen);
        const struct gp_cfg_key *k = find_yaml(s, name);
        if (!k) {
            yaml_event_delete(&vev);
            return gp_seterr(err, errlen, GP_ECONFIG, "line %zu: unknown key '%s.%s'", line, s->name,
                             name);
        }
        int rc;
        if (k->type == GP_CFG_LIST && vev.type == YAML_SEQUENCE_START_EVENT) {
            rc = parse_list(p, s, k, line, err, errlen);
            yaml_event_delete(&vev);
            if (rc)
                return rc;
            continue;
        }
        if (k->type == GP_CFG_MAP && vev.type == YAML_MAPPING_START_EVENT) {
            rc = parse_map(p, s, k, err, errlen);
            yaml_event_delete(&vev);
            if (rc)
                return rc;
            continue;
        }
        if (k->type == GP_CFG_MAP && !(vev.type == YAML_SCALAR_EVENT && !vev.data.scalar.length)) {
            yaml_event_delete(&vev);
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "line %zu: '%s.%s' must be a mapping of names to values", line, s->name,
                             name);
        }
        if (vev.type != YAML_SCALAR_EVENT) {
            yaml_event_delete(&vev);
            return gp_seterr(err, errlen, GP_ECONFIG, "line %zu: '%s.%s' must be a single value",
                             line, s->name, name);
        }
        if (k->type == GP_CFG_LIST || k->type == GP_CFG_MAP) /* a list of one; an empty map */
            ((struct gp_cfg_list *)((char *)s->target + k->offset))->n = 0;
        char detail[256];
        rc = set_key(s->target, k, (const char *)vev.data.scalar.value, detail, sizeof detail);
        yaml_event_delete(&vev);
        if (rc)
            return gp_seterr(err, errlen, rc, "line %zu: %s", line, detail);
    }
}

static const struct gp_cfg_section *find_section(const struct gp_cfg_section *s, size_t ns,
                                                 const char *name)
{
    for (size_t i = 0; i < ns; i++)
        if (!strcmp(s[i].name, name))
            return &s[i];
    return NULL;
}

int gp_cfg_parse_yaml(const struct gp_cfg_section *s, size_t ns, const char *yaml, size_t len,
                      char *err, size_t errlen)
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
            const char *name = (const char *)ev.data.scalar.value;
            const struct gp_cfg_section *sec = find_section(s, ns, name);
            yaml_event_t v;
            if (!yaml_parser_parse(&p, &v)) {
                rc = yaml_fail(&p, err, errlen);
            } else {
                if (sec && v.type == YAML_MAPPING_START_EVENT)
                    rc = parse_section(&p, sec, err, errlen);
                else if (sec && !(v.type == YAML_SCALAR_EVENT && v.data.scalar.length == 0))
                    rc = gp_seterr(err, errlen, GP_ECONFIG, "line %zu: '%s' must be a mapping", line,
                                   sec->name);
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

int gp_cfg_load_file(const struct gp_cfg_section *s, size_t ns, const char *path, char *err,
                     size_t errlen)
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
    else if ((rc = gp_cfg_parse_yaml(s, ns, buf, n, detail, sizeof detail)))
        gp_seterr(err, errlen, GP_ECONFIG, "config '%s': %s", path, detail);
    free(buf);
    return rc ? GP_ECONFIG : GP_OK;
}

int gp_cfg_set(const struct gp_cfg_section *s, size_t ns, const char *flag, const char *value,
               char *err, size_t errlen)
{
    void *target;
    const struct gp_cfg_key *k = find_flag(s, ns, flag, &target);
    if (!k)
        return gp_seterr(err, errlen, GP_EUSAGE, "unknown flag '--%s'", flag);
    return set_key(target, k, value, err, errlen);
}

int gp_cfg_from_args(const struct gp_cfg_section *s, size_t ns, const char *cmd, int argc,
                     char **argv, char *config_file, size_t config_len, bool *help, char *err,
                     size_t errlen)
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
            if (config_file)
                snprintf(config_file, config_len, "%s", path);
            int rc = gp_cfg_load_file(s, ns, path, err, errlen);
            if (rc)
                return rc;
        }
    }
    /* LIST keys given as flags replace the file's list: remember which were cleared. */
    const struct gp_cfg_key *cleared[16];
    size_t ncleared = 0;
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
        void *target;
        const struct gp_cfg_key *k = find_flag(s, ns, name, &target);
        if (!k && !strncmp(name, "no-", 3) && !eq) {
            const struct gp_cfg_key *nk = find_flag(s, ns, name + 3, &target);
            if (nk && nk->type == GP_CFG_BOOL) {
                *(bool *)((char *)target + nk->offset) = false;
                continue;
            }
        }
        if (!k)
            return gp_seterr(err, errlen, GP_EUSAGE, "unknown flag '--%s' (see 'gpulse %s --help')",
                             name, cmd);
        if (!value && k->type == GP_CFG_BOOL) {
            value = "true";
        } else if (!value) {
            if (i + 1 >= argc)
                return gp_seterr(err, errlen, GP_EUSAGE, "flag '--%s' needs a value", name);
            value = argv[++i];
        }
        if (k->type == GP_CFG_LIST || k->type == GP_CFG_MAP) {
            size_t j = 0;
            while (j < ncleared && cleared[j] != k)
                j++;
            if (j == ncleared && ncleared < sizeof cleared / sizeof cleared[0]) {
                ((struct gp_cfg_list *)((char *)target + k->offset))->n = 0;
                cleared[ncleared++] = k;
            }
        }
        int rc = set_key(target, k, value, err, errlen);
        if (rc)
            return GP_EUSAGE;
    }
    return GP_OK;
}

void gp_cfg_usage(FILE *out, const struct gp_cfg_section *s, size_t ns)
{
    for (size_t i = 0; i < ns; i++)
        for (size_t j = 0; j < s[i].nkeys; j++) {
            const struct gp_cfg_key *k = &s[i].keys[j];
            const char *arg = k->type == GP_CFG_BOOL       ? ""
                              : k->type == GP_CFG_DURATION ? " DURATION"
                              : k->type == GP_CFG_UINT     ? " N"
                              : k->type == GP_CFG_BYTES    ? " SIZE"
                              : k->type == GP_CFG_MAP      ? " NAME=VALUE"
                                                           : " VALUE";
            fprintf(out, "  --%s%s   (yaml: %s.%s%s)\n      %s", k->flag, arg, s[i].name, k->yaml,
                    k->type == GP_CFG_LIST  ? ", a list; the flag repeats"
                    : k->type == GP_CFG_MAP ? ", a mapping; the flag repeats"
                                            : "",
                    k->help);
            if (*k->def)
                fprintf(out, " [default: %s]", k->def);
            fputc('\n', out);
        }
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
