/* yamldoc.c - see yamldoc.h. */
#include "yamldoc.h"

#include "lib/duration.h"
#include "lib/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

unsigned gp_yaml_line(const yaml_node_t *n) { return n ? (unsigned)n->start_mark.line + 1 : 0; }

const char *gp_yaml_scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

int gp_yaml_section(const char *yaml, size_t len, const char *name, yaml_document_t *d,
                    const yaml_node_t **sec, char *err, size_t errlen)
{
    *sec = NULL;
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return gp_seterr(err, errlen, GP_ENOMEM, "cannot start the YAML parser");
    yaml_parser_set_input_string(&p, (const unsigned char *)yaml, len);
    if (!yaml_parser_load(&p, d)) {
        int rc = gp_seterr(err, errlen, GP_EPARSE, "line %zu: %s", p.problem_mark.line + 1,
                           p.problem ? p.problem : "invalid YAML");
        yaml_parser_delete(&p);
        return rc;
    }
    yaml_parser_delete(&p);
    const yaml_node_t *root = yaml_document_get_root_node(d);
    if (!root || root->type != YAML_MAPPING_NODE)
        return GP_OK;
    for (yaml_node_pair_t *q = root->data.mapping.pairs.start; q < root->data.mapping.pairs.top; q++) {
        const yaml_node_t *key = yaml_document_get_node(d, q->key);
        const char *k = gp_yaml_scalar(key);
        if (!k || strcmp(k, name))
            continue;
        if (*sec) {
            yaml_document_delete(d);
            *sec = NULL;
            return gp_seterr(err, errlen, GP_ECONFIG, "line %u: '%s' is given twice", gp_yaml_line(key),
                             name);
        }
        *sec = yaml_document_get_node(d, q->value);
    }
    return GP_OK;
}

int gp_yaml_text(const yaml_node_t *v, const char *what, char *out, size_t len, char *err,
                 size_t errlen)
{
    const char *s = gp_yaml_scalar(v);
    if (!s)
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: '%s' must be a single value",
                         gp_yaml_line(v), what);
    if (strlen(s) >= len)
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: '%s' is longer than %zu bytes",
                         gp_yaml_line(v), what, len - 1);
    memcpy(out, s, strlen(s) + 1);
    return GP_OK;
}

int gp_yaml_duration(const yaml_node_t *v, const char *what, int64_t *out, char *err,
                     size_t errlen)
{
    char text[64], detail[128];
    int rc = gp_yaml_text(v, what, text, sizeof text, err, errlen);
    if (rc)
        return rc;
    if (gp_parse_duration_ms(text, out, detail, sizeof detail) || *out < 0)
        return gp_seterr(err, errlen, GP_ECONFIG, "line %u: '%s': %s", gp_yaml_line(v), what, detail);
    return GP_OK;
}

int gp_yaml_read_file(const char *path, char **out, size_t *len, char *err, size_t errlen)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return gp_seterr(err, errlen, GP_ECONFIG, "cannot open config '%s': %s", path,
                         strerror(errno));
    enum { MAX = 1 << 20 };
    char *b = malloc(MAX + 2);
    if (!b) {
        fclose(f);
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    }
    size_t n = fread(b, 1, MAX + 1, f);
    fclose(f);
    if (n > MAX) {
        free(b);
        return gp_seterr(err, errlen, GP_ECONFIG, "config '%s' is larger than 1 MiB", path);
    }
    b[n] = '\0';
    *out = b;
    *len = n;
    return GP_OK;
}
