/*
 * config.c - the `notify:` section (config.h, docs/notify.md).
 *
 * The parser walks libyaml's document tree, so each node knows its line
 * and every error reads "line N: 'key': why". Receivers are parsed key
 * by key against one table of known keys; secrets come from exactly one
 * of KEY, KEY_file, KEY_env, and an error about a secret names the key
 * (and the file or variable), never the value. Validation after the
 * walk: names unique, routes name known receivers, each type has what it
 * needs (a URL; for email smtp, from and to).
 */
#include "notify/config.h"

#include "lib/duration.h"
#include "lib/err.h"
#include "lib/yamldoc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

const char *const gp_receiver_type_names[GP_RT__COUNT] = {
#define GP_RT_NAME_(id, name) name,
    GP_NOTIFY_TYPES(GP_RT_NAME_)
#undef GP_RT_NAME_
};

const char *const gp_notify_label_names[GP_NL__COUNT] = {
#define GP_NL_NAME_(id, name) name,
    GP_NOTIFY_LABELS(GP_NL_NAME_)
#undef GP_NL_NAME_
};

#define SECRET_FILE_MAX 4096

int gp_receiver_type_parse(const char *s, enum gp_receiver_type *out)
{
    for (int i = 0; i < GP_RT__COUNT; i++)
        if (!strcmp(s, gp_receiver_type_names[i])) {
            *out = (enum gp_receiver_type)i;
            return GP_OK;
        }
    return GP_ECONFIG;
}

void gp_notify_config_init(struct gp_notify_config *c)
{
    memset(c, 0, sizeof *c);
    c->retry_max_backoff_ms = 10 * 60 * 1000;
    c->retry_max_age_ms = 24LL * 3600 * 1000;
}

void gp_notify_config_free(struct gp_notify_config *c)
{
    if (!c)
        return;
    if (c->recv) /* wipe the secrets before giving the memory back */
        memset(c->recv, 0, c->nrecv * sizeof *c->recv);
    free(c->recv);
    free(c->routes);
    gp_notify_config_init(c);
}

const struct gp_receiver *gp_notify_receiver(const struct gp_notify_config *c, const char *name)
{
    for (size_t i = 0; i < c->nrecv; i++)
        if (!strcmp(c->recv[i].name, name))
            return &c->recv[i];
    return NULL;
}

/* ---- YAML helpers ---- */


static int take_bool(const yaml_node_t *v, const char *what, bool *out, char *err, size_t errlen)
{
    const char *s = gp_yaml_scalar(v);
    if (s && (!strcmp(s, "true") || !strcmp(s, "yes") || !strcmp(s, "on")))
        *out = true;
    else if (s && (!strcmp(s, "false") || !strcmp(s, "no") || !strcmp(s, "off")))
        *out = false;
    else
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: '%s' must be true or false",
                         gp_yaml_line(v), what);
    return GP_OK;
}

static bool empty(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE && !n->data.scalar.length &&
           n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

/* ---- secrets ---- */

/* Reads a secret file into out, one final newline (\n or \r\n) trimmed. */
static int read_secret_file(const char *path, const char *key, unsigned line, char *out,
                            size_t len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: '%s_file': cannot open '%s': %s", line,
                         key, path, strerror(errno));
    char buf[SECRET_FILE_MAX + 1];
    size_t n = fread(buf, 1, sizeof buf, f);
    int bad = ferror(f);
    fclose(f);
    if (bad)
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: '%s_file': cannot read '%s'", line, key,
                         path);
    if (n && buf[n - 1] == '\n')
        n--;
    if (n && buf[n - 1] == '\r')
        n--;
    if (n >= len || n > SECRET_FILE_MAX - 1)
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: '%s_file': '%s' is longer than %zu bytes",
                         line, key, path, len - 1);
    if (memchr(buf, '\0', n) || memchr(buf, '\n', n))
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "line %u: '%s_file': '%s' must hold one line without NUL bytes", line, key,
                         path);
    if (!n)
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: '%s_file': '%s' is empty", line, key, path);
    memcpy(out, buf, n);
    out[n] = '\0';
    memset(buf, 0, sizeof buf);
    return GP_OK;
}

/* One secret's three possible sources, as seen while walking a receiver. */
struct secret_src {
    const char *key;            /* "url", "password", "bearer_token" */
    const yaml_node_t *v[3];    /* KEY, KEY_file, KEY_env */
};

static int resolve_secret(const struct secret_src *s, char *out, size_t len, unsigned rline,
                          char *err, size_t errlen)
{
    int n = 0, which = -1;
    for (int i = 0; i < 3; i++)
        if (s->v[i] && !(gp_yaml_scalar(s->v[i]) && !*gp_yaml_scalar(s->v[i]))) {
            n++;
            which = i;
        }
    if (n > 1)
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "line %u: '%s': give exactly one of '%s', '%s_file' and '%s_env'", rline,
                         s->key, s->key, s->key, s->key);
    out[0] = '\0';
    if (which < 0)
        return GP_OK;
    const yaml_node_t *v = s->v[which];
    const char *text = gp_yaml_scalar(v);
    if (!text)
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: '%s%s' must be a single value",
                         gp_yaml_line(v), s->key, which == 1 ? "_file" : which == 2 ? "_env" : "");
    if (which == 0) {
        if (strlen(text) >= len)
            return gp_seterr(err, errlen, GP_ECONFIG, "line %u: '%s' is longer than %zu bytes",
                             gp_yaml_line(v), s->key, len - 1);
        memcpy(out, text, strlen(text) + 1);
        return GP_OK;
    }
    if (which == 1)
        return read_secret_file(text, s->key, gp_yaml_line(v), out, len, err, errlen);
    const char *e = getenv(text);
    if (!e || !*e)
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "line %u: '%s_env': the environment variable '%.64s' is not set or empty",
                         gp_yaml_line(v), s->key, text);
    if (strlen(e) >= len)
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "line %u: '%s_env': the value of '%.64s' is longer than %zu bytes",
                         gp_yaml_line(v), s->key, text, len - 1);
    memcpy(out, e, strlen(e) + 1);
    return GP_OK;
}

/* ---- receivers ---- */

enum { S_URL, S_PASSWORD, S_TOKEN, S__COUNT };
static const char *const secret_keys[S__COUNT] = {"url", "password", "bearer_token"};

static int parse_to(yaml_document_t *d, const yaml_node_t *v, struct gp_receiver *r, char *err,
                    size_t errlen)
{
    if (gp_yaml_scalar(v)) {
        r->nto = 1;
        return gp_yaml_text(v, "to", r->to[0], sizeof r->to[0], err, errlen);
    }
    if (v->type != YAML_SEQUENCE_NODE)
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: 'to' must be an address or a list",
                         gp_yaml_line(v));
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
        if (r->nto >= GP_NOTIFY_TO_MAX)
            return gp_seterr(err, errlen, GP_ECONFIG, "line %u: 'to': at most %d addresses",
                             gp_yaml_line(v), GP_NOTIFY_TO_MAX);
        int rc = gp_yaml_text(yaml_document_get_node(d, *it), "to", r->to[r->nto], sizeof r->to[0],
                           err, errlen);
        if (rc)
            return rc;
        if (!strchr(r->to[r->nto], '@'))
            return gp_seterr(err, errlen, GP_ECONFIG, "line %u: 'to': '%s' is not an address",
                             gp_yaml_line(v), r->to[r->nto]);
        r->nto++;
    }
    return GP_OK;
}

static int parse_receiver(yaml_document_t *d, const yaml_node_t *n, struct gp_receiver *r,
                          char *err, size_t errlen)
{
    if (n->type != YAML_MAPPING_NODE)
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: a receiver must be a mapping",
                         gp_yaml_line(n));
    memset(r, 0, sizeof *r);
    r->timeout_ms = 10000;
    struct secret_src sec[S__COUNT] = {{.key = "url"}, {.key = "password"}, {.key = "bearer_token"}};
    const yaml_node_t *type = NULL, *tls = NULL;
    bool has_name = false;
    int rc = GP_OK;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top && !rc;
         p++) {
        const yaml_node_t *kn = yaml_document_get_node(d, p->key);
        const yaml_node_t *v = yaml_document_get_node(d, p->value);
        const char *k = gp_yaml_scalar(kn);
        if (!k || !v)
            return gp_seterr(err, errlen, GP_ECONFIG, "line %u: receiver keys must be plain names",
                             gp_yaml_line(n));
        bool done = false;
        for (int s = 0; s < S__COUNT && !done; s++) {
            size_t kl = strlen(secret_keys[s]);
            if (strncmp(k, secret_keys[s], kl))
                continue;
            int which = !k[kl] ? 0 : !strcmp(k + kl, "_file") ? 1 : !strcmp(k + kl, "_env") ? 2 : -1;
            if (which < 0)
                continue;
            if (sec[s].v[which])
                return gp_seterr(err, errlen, GP_ECONFIG, "line %u: '%s' is given twice",
                                 gp_yaml_line(kn), k);
            sec[s].v[which] = v;
            done = true;
        }
        if (done)
            continue;
        if (!strcmp(k, "name")) {
            rc = gp_yaml_text(v, k, r->name, sizeof r->name, err, errlen);
            has_name = true;
        } else if (!strcmp(k, "type"))
            type = v;
        else if (!strcmp(k, "timeout"))
            rc = gp_yaml_duration(v, k, &r->timeout_ms, err, errlen);
        else if (!strcmp(k, "smtp"))
            rc = gp_yaml_text(v, k, r->smtp_url, sizeof r->smtp_url, err, errlen);
        else if (!strcmp(k, "tls"))
            tls = v;
        else if (!strcmp(k, "username"))
            rc = gp_yaml_text(v, k, r->username, sizeof r->username, err, errlen);
        else if (!strcmp(k, "insecure_skip_verify"))
            rc = take_bool(v, k, &r->insecure_skip_verify, err, errlen);
        else if (!strcmp(k, "ca_file"))
            rc = gp_yaml_text(v, k, r->ca_file, sizeof r->ca_file, err, errlen);
        else if (!strcmp(k, "from"))
            rc = gp_yaml_text(v, k, r->from, sizeof r->from, err, errlen);
        else if (!strcmp(k, "to"))
            rc = parse_to(d, v, r, err, errlen);
        else if (!strcmp(k, "title") || !strcmp(k, "subject")) /* subject: email's word */
            rc = gp_yaml_text(v, k, r->subject_template, sizeof r->subject_template, err, errlen);
        else
            return gp_seterr(err, errlen, GP_ECONFIG, "line %u: unknown receiver key '%.64s'",
                             gp_yaml_line(kn), k);
    }
    if (rc)
        return rc;
    if (!has_name || !r->name[0])
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: a receiver needs a 'name'", gp_yaml_line(n));
    if (!type)
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: receiver '%s' needs a 'type' (slack, "
                         "email, webhook or alertmanager)", gp_yaml_line(n), r->name);
    if (!gp_yaml_scalar(type) || gp_receiver_type_parse(gp_yaml_scalar(type), &r->type))
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "line %u: 'type': '%.32s' is not slack, email, webhook or alertmanager",
                         gp_yaml_line(type), gp_yaml_scalar(type) ? gp_yaml_scalar(type) : "");
    if ((rc = resolve_secret(&sec[S_URL], r->url, sizeof r->url, gp_yaml_line(n), err, errlen)) ||
        (rc = resolve_secret(&sec[S_PASSWORD], r->password, sizeof r->password, gp_yaml_line(n), err,
                             errlen)) ||
        (rc = resolve_secret(&sec[S_TOKEN], r->bearer_token, sizeof r->bearer_token, gp_yaml_line(n), err,
                             errlen)))
        return rc;
    if (r->type == GP_RT_EMAIL) {
        if (r->url[0])
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "line %u: receiver '%s': 'url' is not for email (use 'smtp')",
                             gp_yaml_line(n), r->name);
        if (!r->smtp_url[0] || !r->from[0] || !r->nto)
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "line %u: email receiver '%s' needs 'smtp', 'from' and 'to'",
                             gp_yaml_line(n), r->name);
        bool smtps = !strncmp(r->smtp_url, "smtps://", 8);
        if (!smtps && strncmp(r->smtp_url, "smtp://", 7))
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "line %u: 'smtp' must start with smtp:// or smtps://", gp_yaml_line(n));
        if (tls) {
            int trc = gp_yaml_text(tls, "tls", r->smtp_tls, sizeof r->smtp_tls, err, errlen);
            if (trc)
                return trc;
            if (strcmp(r->smtp_tls, "starttls") && strcmp(r->smtp_tls, "implicit") &&
                strcmp(r->smtp_tls, "none"))
                return gp_seterr(err, errlen, GP_ECONFIG,
                                 "line %u: 'tls': '%s' is not starttls, implicit or none",
                                 gp_yaml_line(tls), r->smtp_tls);
        } else
            snprintf(r->smtp_tls, sizeof r->smtp_tls, "%s", smtps ? "implicit" : "starttls");
        if (smtps != !strcmp(r->smtp_tls, "implicit"))
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "line %u: receiver '%s': use smtps:// with tls: implicit (and only then)",
                             gp_yaml_line(n), r->name);
        if (r->password[0] && !r->username[0])
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "line %u: receiver '%s': a password needs a 'username'", gp_yaml_line(n),
                             r->name);
        if (!strchr(r->from, '@'))
            return gp_seterr(err, errlen, GP_ECONFIG, "line %u: 'from': '%s' is not an address",
                             gp_yaml_line(n), r->from);
    } else {
        if (!r->url[0])
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "line %u: %s receiver '%s' needs 'url', 'url_file' or 'url_env'",
                             gp_yaml_line(n), gp_receiver_type_names[r->type], r->name);
        if (strncmp(r->url, "http://", 7) && strncmp(r->url, "https://", 8))
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "line %u: receiver '%s': the url must start with http:// or https:// "
                             "(value not shown: it is a secret)",
                             gp_yaml_line(n), r->name);
        if (r->smtp_url[0] || r->from[0] || r->nto || tls || r->password[0])
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "line %u: receiver '%s': smtp, tls, from, to and password are for email",
                             gp_yaml_line(n), r->name);
        if (r->subject_template[0] && r->type != GP_RT_SLACK)
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "line %u: receiver '%s': 'title' is for slack and email (a webhook or "
                             "Alertmanager payload has no title)",
                             gp_yaml_line(n), r->name);
        if (r->bearer_token[0] && r->type == GP_RT_SLACK)
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "line %u: receiver '%s': slack takes no bearer_token", gp_yaml_line(n),
                             r->name);
    }
    return GP_OK;
}

/* ---- routes ---- */

static int label_of(const char *s, enum gp_notify_label *out)
{
    for (int i = 0; i < GP_NL__COUNT; i++)
        if (!strcmp(s, gp_notify_label_names[i])) {
            *out = (enum gp_notify_label)i;
            return 1;
        }
    return 0;
}

static int parse_route(yaml_document_t *d, const yaml_node_t *n, struct gp_notify_route *r,
                       char *err, size_t errlen)
{
    if (n->type != YAML_MAPPING_NODE)
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: a route must be a mapping", gp_yaml_line(n));
    memset(r, 0, sizeof *r);
    r->line = gp_yaml_line(n);
    r->group_wait_ms = 30000;
    r->group_interval_ms = 5 * 60000;
    r->repeat_interval_ms = 4 * 3600000LL;
    r->group_by_default = true;
    int rc = GP_OK;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top && !rc;
         p++) {
        const yaml_node_t *kn = yaml_document_get_node(d, p->key);
        const yaml_node_t *v = yaml_document_get_node(d, p->value);
        const char *k = gp_yaml_scalar(kn);
        if (!k || !v)
            return gp_seterr(err, errlen, GP_ECONFIG, "line %u: route keys must be plain names",
                             gp_yaml_line(n));
        if (!strcmp(k, "receiver"))
            rc = gp_yaml_text(v, k, r->receiver, sizeof r->receiver, err, errlen);
        else if (!strcmp(k, "group_wait"))
            rc = gp_yaml_duration(v, k, &r->group_wait_ms, err, errlen);
        else if (!strcmp(k, "group_interval"))
            rc = gp_yaml_duration(v, k, &r->group_interval_ms, err, errlen);
        else if (!strcmp(k, "repeat_interval"))
            rc = gp_yaml_duration(v, k, &r->repeat_interval_ms, err, errlen);
        else if (!strcmp(k, "continue"))
            rc = take_bool(v, k, &r->cont, err, errlen);
        else if (!strcmp(k, "match")) {
            if (empty(v))
                continue;
            if (v->type != YAML_MAPPING_NODE)
                return gp_seterr(err, errlen, GP_ECONFIG, "line %u: 'match' must be a mapping",
                                 gp_yaml_line(v));
            for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top;
                 q++) {
                const yaml_node_t *mk = yaml_document_get_node(d, q->key);
                const yaml_node_t *mv = yaml_document_get_node(d, q->value);
                enum gp_notify_label l;
                if (!gp_yaml_scalar(mk) || !label_of(gp_yaml_scalar(mk), &l))
                    return gp_seterr(err, errlen, GP_ECONFIG,
                                     "line %u: 'match': '%.64s' is not kind, severity, job, node, "
                                     "gpu or rank",
                                     gp_yaml_line(mk), gp_yaml_scalar(mk) ? gp_yaml_scalar(mk) : "");
                if (r->has_match[l])
                    return gp_seterr(err, errlen, GP_ECONFIG, "line %u: 'match': '%s' is given twice",
                                     gp_yaml_line(mk), gp_notify_label_names[l]);
                if ((rc = gp_yaml_text(mv, "match", r->match[l], sizeof r->match[l], err, errlen)))
                    return rc;
                r->has_match[l] = true;
            }
        } else if (!strcmp(k, "group_by")) {
            r->group_by_default = false;
            if (empty(v))
                continue;
            if (v->type != YAML_SEQUENCE_NODE)
                return gp_seterr(err, errlen, GP_ECONFIG, "line %u: 'group_by' must be a list",
                                 gp_yaml_line(v));
            for (yaml_node_item_t *it = v->data.sequence.items.start;
                 it < v->data.sequence.items.top; it++) {
                const yaml_node_t *g = yaml_document_get_node(d, *it);
                enum gp_notify_label l;
                if (!gp_yaml_scalar(g) || !label_of(gp_yaml_scalar(g), &l))
                    return gp_seterr(err, errlen, GP_ECONFIG,
                                     "line %u: 'group_by': '%.64s' is not kind, severity, job, node, "
                                     "gpu or rank",
                                     gp_yaml_line(g), gp_yaml_scalar(g) ? gp_yaml_scalar(g) : "");
                for (unsigned j = 0; j < r->ngroup_by; j++)
                    if (r->group_by[j] == l)
                        return gp_seterr(err, errlen, GP_ECONFIG,
                                         "line %u: 'group_by': '%s' is given twice", gp_yaml_line(g),
                                         gp_notify_label_names[l]);
                r->group_by[r->ngroup_by++] = l;
            }
        } else
            return gp_seterr(err, errlen, GP_ECONFIG, "line %u: unknown route key '%.64s'",
                             gp_yaml_line(kn), k);
    }
    if (rc)
        return rc;
    if (!r->receiver[0])
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: a route needs a 'receiver'", r->line);
    if (r->group_by_default) {
        r->group_by[0] = GP_NL_JOB;
        r->ngroup_by = 1;
    }
    if (r->group_interval_ms < 1000 || r->repeat_interval_ms < 1000)
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "line %u: 'group_interval' and 'repeat_interval' must be at least 1s",
                         r->line);
    return GP_OK;
}

static int parse_list(yaml_document_t *d, const yaml_node_t *v, const char *what, size_t max,
                      size_t elem, void **out, size_t *nout, char *err, size_t errlen)
{
    if (empty(v))
        return GP_OK;
    if (v->type != YAML_SEQUENCE_NODE)
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: '%s' must be a list", gp_yaml_line(v), what);
    size_t n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
    if (n > max)
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: '%s': at most %zu", gp_yaml_line(v), what,
                         max);
    if (!n)
        return GP_OK;
    *out = calloc(n, elem);
    if (!*out)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const yaml_node_t *item = yaml_document_get_node(d, v->data.sequence.items.start[i]);
        if (!item)
            return gp_seterr(err, errlen, GP_ECONFIG, "line %u: '%s': a broken item", gp_yaml_line(v),
                             what);
        int rc = elem == sizeof(struct gp_receiver)
                     ? parse_receiver(d, item, (struct gp_receiver *)*out + i, err, errlen)
                     : parse_route(d, item, (struct gp_notify_route *)*out + i, err, errlen);
        *nout = i + 1;
        if (rc)
            return rc;
    }
    return GP_OK;
}

static int parse_section(yaml_document_t *d, const yaml_node_t *sec, struct gp_notify_config *c,
                         char *err, size_t errlen)
{
    c->present = true;
    if (empty(sec))
        return GP_OK;
    if (sec->type != YAML_MAPPING_NODE)
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: 'notify' must be a mapping",
                         gp_yaml_line(sec));
    int rc = GP_OK;
    const yaml_node_t *routes = NULL;
    for (yaml_node_pair_t *p = sec->data.mapping.pairs.start; p < sec->data.mapping.pairs.top && !rc;
         p++) {
        const yaml_node_t *kn = yaml_document_get_node(d, p->key);
        const yaml_node_t *v = yaml_document_get_node(d, p->value);
        const char *k = gp_yaml_scalar(kn);
        if (!k || !v)
            return gp_seterr(err, errlen, GP_ECONFIG, "line %u: 'notify' keys must be plain names",
                             gp_yaml_line(sec));
        if (!strcmp(k, "external_url")) {
            rc = gp_yaml_text(v, k, c->external_url, sizeof c->external_url, err, errlen);
            if (!rc && c->external_url[0] && strncmp(c->external_url, "http://", 7) &&
                strncmp(c->external_url, "https://", 8))
                rc = gp_seterr(err, errlen, GP_ECONFIG,
                               "line %u: 'external_url' must start with http:// or https://",
                               gp_yaml_line(v));
        } else if (!strcmp(k, "retry_max_backoff"))
            rc = gp_yaml_duration(v, k, &c->retry_max_backoff_ms, err, errlen);
        else if (!strcmp(k, "retry_max_age"))
            rc = gp_yaml_duration(v, k, &c->retry_max_age_ms, err, errlen);
        else if (!strcmp(k, "receivers")) {
            if (c->recv)
                return gp_seterr(err, errlen, GP_ECONFIG, "line %u: 'receivers' is given twice",
                                 gp_yaml_line(kn));
            rc = parse_list(d, v, k, GP_NOTIFY_RECEIVERS_MAX, sizeof *c->recv, (void **)&c->recv,
                            &c->nrecv, err, errlen);
        } else if (!strcmp(k, "routes")) {
            if (routes)
                return gp_seterr(err, errlen, GP_ECONFIG, "line %u: 'routes' is given twice",
                                 gp_yaml_line(kn));
            routes = v;
        } else
            return gp_seterr(err, errlen, GP_ECONFIG, "line %u: unknown key 'notify.%.64s'",
                             gp_yaml_line(kn), k);
    }
    if (rc)
        return rc;
    if (c->retry_max_backoff_ms < 1000)
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: 'retry_max_backoff' must be at least 1s",
                         gp_yaml_line(sec));
    if (c->retry_max_age_ms < 1000)
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: 'retry_max_age' must be at least 1s",
                         gp_yaml_line(sec));
    for (size_t i = 0; i < c->nrecv; i++)
        for (size_t j = 0; j < i; j++)
            if (!strcmp(c->recv[i].name, c->recv[j].name))
                return gp_seterr(err, errlen, GP_ECONFIG, "line %u: receiver name '%s' is used twice",
                                 gp_yaml_line(sec), c->recv[i].name);
    if (routes && (rc = parse_list(d, routes, "routes", GP_NOTIFY_ROUTES_MAX, sizeof *c->routes,
                                   (void **)&c->routes, &c->nroutes, err, errlen)))
        return rc;
    for (size_t i = 0; i < c->nroutes; i++) {
        struct gp_notify_route *r = &c->routes[i];
        const struct gp_receiver *rv = gp_notify_receiver(c, r->receiver);
        if (!rv)
            return gp_seterr(err, errlen, GP_ECONFIG, "line %u: route: no receiver named '%s'",
                             r->line, r->receiver);
        r->recv = (size_t)(rv - c->recv);
    }
    return GP_OK;
}

int gp_notify_config_parse(const char *yaml, size_t len, struct gp_notify_config *out, char *err,
                           size_t errlen)
{
    gp_notify_config_free(out);
    yaml_document_t d;
    const yaml_node_t *sec;
    int rc = gp_yaml_section(yaml, len, "notify", &d, &sec, err, errlen);
    if (rc)
        return rc;
    if (sec)
        rc = parse_section(&d, sec, out, err, errlen);
    yaml_document_delete(&d);
    if (rc)
        gp_notify_config_free(out);
    return rc;
}

int gp_notify_config_load_file(const char *path, struct gp_notify_config *out, char *err,
                               size_t errlen)
{
    char *b;
    size_t n;
    int rc = gp_yaml_read_file(path, &b, &n, err, errlen);
    if (rc)
        return rc;
    rc = gp_notify_config_parse(b, n, out, err, errlen);
    free(b);
    return rc;
}
