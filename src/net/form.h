/*
 * form.h - application/x-www-form-urlencoded bodies (and URL query
 * strings, which share the syntax), decoded as Go's url.ParseQuery does,
 * since the clients that POST forms to the query API (Grafana, vmalert,
 * promtool) are written against Prometheus's reading of them:
 *   - pairs separated by '&'; an empty pair is skipped; a pair without
 *     '=' is a key with an empty value;
 *   - '+' is a space, %XX a byte (hex digits of either case);
 *   - a ';' separator, a bad %-escape and a NUL byte are errors (Go
 *     refuses the first two; a NUL cannot live in the C strings handed on).
 * Keys keep their order and repeats (match[]=a&match[]=b).
 */
#ifndef GP_NET_FORM_H
#define GP_NET_FORM_H

#include <stddef.h>

/* Fields one form may hold: more is an error, not a slow request. */
#define GP_FORM_MAX_FIELDS 10000

struct gp_form {
    const char **key, **value; /* n of each, NUL-terminated, into text */
    size_t n;
    char *text;                /* the decoded bytes; owned */
};

/*
 * Decodes s (len bytes, need not be NUL-terminated) into out. GP_OK, or
 * GP_EPARSE with the reason in err ("invalid URL escape \"%zz\" at byte
 * 12"), GP_ETOOBIG (more than GP_FORM_MAX_FIELDS fields), GP_ENOMEM; out
 * is empty on error. Free with gp_form_free either way.
 */
int gp_form_parse(const char *s, size_t len, struct gp_form *out, char *err, size_t errlen);
void gp_form_free(struct gp_form *f); /* accepts zeroed */

/* The first value of key, or NULL. */
const char *gp_form_get(const struct gp_form *f, const char *key);
/* Every value of key in order: up to max into vals; returns how many in all. */
size_t gp_form_get_all(const struct gp_form *f, const char *key, const char **vals, size_t max);

/* 1 when a Content-Type header value names a form body
 * ("application/x-www-form-urlencoded", any case, parameters allowed). */
int gp_form_content_type(const char *content_type);

#endif
