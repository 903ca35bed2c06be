/*
 * notice.c - notices to JSON and back (notice.h), with jansson. Parsing
 * is strict about types (a string where a string belongs) and lenient
 * about absence (a missing string reads "", so the strings of a notice
 * are never NULL, as notify.h promises); the parsed strings borrow from
 * the jansson tree the doc owns.
 */
#include "notify/notice.h"

#include "lib/err.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int set_str(json_t *o, const char *k, const char *v)
{
    return json_object_set_new(o, k, json_string(v ? v : ""));
}

int gp_notice_to_json(const struct gp_notice *n, char **out)
{
    *out = NULL;
    json_t *o = json_object(), *gl = json_array(), *al = json_array();
    int bad = !o || !gl || !al;
    bad |= set_str(o, "receiver", n->receiver) | set_str(o, "group_key", n->group_key) |
           set_str(o, "status", n->status);
    for (size_t i = 0; i < 8 && n->group_labels[i][0]; i++)
        bad |= json_array_append_new(gl, json_pack("[ss]", n->group_labels[i][0],
                                                   n->group_labels[i][1] ? n->group_labels[i][1] : ""));
    bad |= json_object_set(o, "group_labels", gl);
    bad |= set_str(o, "external_url", n->external_url);
    bad |= json_object_set_new(o, "test", json_boolean(n->test));
    for (size_t i = 0; i < n->nalerts && !bad; i++) {
        const struct gp_notice_alert *a = &n->alerts[i];
        json_t *x = json_object();
        bad |= !x;
        if (bad)
            break;
        bad |= set_str(x, "id", a->id) | set_str(x, "kind", a->kind) |
               set_str(x, "severity", a->severity) | set_str(x, "status", a->status) |
               set_str(x, "node", a->node) | set_str(x, "gpu", a->gpu) | set_str(x, "job", a->job) |
               set_str(x, "rank", a->rank) | set_str(x, "summary", a->summary) |
               set_str(x, "evidence", a->evidence) | set_str(x, "runbook", a->runbook);
        bad |= json_object_set_new(x, "value", isfinite(a->value) ? json_real(a->value) : json_null());
        bad |= json_object_set_new(x, "starts_ms", json_integer(a->starts_ms));
        bad |= json_object_set_new(x, "ends_ms", json_integer(a->ends_ms));
        bad |= json_array_append_new(al, x);
    }
    bad |= json_object_set(o, "alerts", al);
    if (!bad)
        *out = json_dumps(o, JSON_COMPACT);
    json_decref(gl);
    json_decref(al);
    json_decref(o);
    return *out ? GP_OK : GP_ENOMEM;
}

void gp_notice_doc_free(struct gp_notice_doc *d)
{
    if (!d)
        return;
    free(d->alerts);
    json_decref(d->root);
    memset(d, 0, sizeof *d);
}

/* The string member k of o into *out ("" when absent): 0, or -1 when not a string. */
static int get_str(json_t *o, const char *k, const char **out)
{
    json_t *v = json_object_get(o, k);
    *out = "";
    if (!v)
        return 0;
    if (!json_is_string(v))
        return -1;
    *out = json_string_value(v);
    return 0;
}

static int get_int(json_t *o, const char *k, int64_t *out)
{
    json_t *v = json_object_get(o, k);
    *out = 0;
    if (!v)
        return 0;
    if (!json_is_integer(v))
        return -1;
    *out = (int64_t)json_integer_value(v);
    return 0;
}

int gp_notice_from_json(const char *text, size_t len, struct gp_notice_doc *d, char *err,
                        size_t errlen)
{
    memset(d, 0, sizeof *d);
    if (len > GP_NOTICE_JSON_MAX)
        return gp_seterr(err, errlen, GP_EPARSE, "notice: larger than %u bytes", GP_NOTICE_JSON_MAX);
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!o)
        return gp_seterr(err, errlen, GP_EPARSE, "notice: %s", je.text);
    d->root = o;
    struct gp_notice *n = &d->n;
    if (!json_is_object(o))
        return gp_seterr(err, errlen, GP_EPARSE, "notice: not an object");
    if (get_str(o, "receiver", &n->receiver) || get_str(o, "group_key", &n->group_key) ||
        get_str(o, "status", &n->status) || get_str(o, "external_url", &n->external_url))
        return gp_seterr(err, errlen, GP_EPARSE, "notice: a field that must be a string is not");
    json_t *t = json_object_get(o, "test");
    if (t && !json_is_boolean(t))
        return gp_seterr(err, errlen, GP_EPARSE, "notice: 'test' must be true or false");
    n->test = t && json_is_true(t);
    json_t *gl = json_object_get(o, "group_labels");
    if (gl && !json_is_array(gl))
        return gp_seterr(err, errlen, GP_EPARSE, "notice: 'group_labels' must be a list");
    if (gl && json_array_size(gl) > 7)
        return gp_seterr(err, errlen, GP_EPARSE, "notice: at most 7 group labels");
    for (size_t i = 0; gl && i < json_array_size(gl); i++) {
        json_t *p = json_array_get(gl, i);
        if (!json_is_array(p) || json_array_size(p) != 2 || !json_is_string(json_array_get(p, 0)) ||
            !json_is_string(json_array_get(p, 1)))
            return gp_seterr(err, errlen, GP_EPARSE, "notice: a group label must be [name, value]");
        n->group_labels[i][0] = json_string_value(json_array_get(p, 0));
        n->group_labels[i][1] = json_string_value(json_array_get(p, 1));
    }
    json_t *al = json_object_get(o, "alerts");
    if (al && !json_is_array(al))
        return gp_seterr(err, errlen, GP_EPARSE, "notice: 'alerts' must be a list");
    size_t na = al ? json_array_size(al) : 0;
    if (na > GP_NOTICE_ALERTS_MAX)
        return gp_seterr(err, errlen, GP_EPARSE, "notice: at most %d alerts", GP_NOTICE_ALERTS_MAX);
    if (na && !(d->alerts = calloc(na, sizeof *d->alerts)))
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    for (size_t i = 0; i < na; i++) {
        json_t *x = json_array_get(al, i);
        struct gp_notice_alert *a = &d->alerts[i];
        if (!json_is_object(x))
            return gp_seterr(err, errlen, GP_EPARSE, "notice: alert %zu is not an object", i);
        if (get_str(x, "id", &a->id) || get_str(x, "kind", &a->kind) ||
            get_str(x, "severity", &a->severity) || get_str(x, "status", &a->status) ||
            get_str(x, "node", &a->node) || get_str(x, "gpu", &a->gpu) ||
            get_str(x, "job", &a->job) || get_str(x, "rank", &a->rank) ||
            get_str(x, "summary", &a->summary) || get_str(x, "evidence", &a->evidence) ||
            get_str(x, "runbook", &a->runbook) || get_int(x, "starts_ms", &a->starts_ms) ||
            get_int(x, "ends_ms", &a->ends_ms))
            return gp_seterr(err, errlen, GP_EPARSE, "notice: alert %zu has a field of the wrong type",
                             i);
        json_t *v = json_object_get(x, "value");
        if (v && !json_is_number(v) && !json_is_null(v))
            return gp_seterr(err, errlen, GP_EPARSE, "notice: alert %zu: 'value' must be a number", i);
        a->value = v && json_is_number(v) ? json_number_value(v) : NAN;
    }
    n->alerts = d->alerts;
    n->nalerts = na;
    return GP_OK;
}
