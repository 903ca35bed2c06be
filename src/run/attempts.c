/* attempts.c - a job's earlier attempts, kept between gpulse runs (attempts.h). */
#include "run/attempts.h"

#include "lib/err.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gp_attempts_init(struct gp_attempts *a)
{
    a->attempts = 0;
    a->last_step = -1;
    gp_goodput_figures_init(&a->f);
}

int gp_attempts_path(const char *dir, const char *job, char *out, size_t outlen, char *err,
                     size_t errlen)
{
    int n;
    const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    if (dir[0])
        n = snprintf(out, outlen, "%s/%s.json", dir, job);
    else if (xdg && xdg[0] == '/')
        n = snprintf(out, outlen, "%s/gpulse/jobs/%s.json", xdg, job);
    else if (home && home[0] == '/')
        n = snprintf(out, outlen, "%s/.local/state/gpulse/jobs/%s.json", home, job);
    else
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "no directory for the attempts of job '%s': set attempts_dir, "
                         "XDG_STATE_HOME or HOME", job);
    if (n < 0 || (size_t)n >= outlen)
        return gp_seterr(err, errlen, GP_ECONFIG, "attempts file of job '%s' is too long a path", job);
    return GP_OK;
}

/* A number >= 0 (or >= -1 for last_step) at key of o. */
static bool field(json_t *o, const char *key, double min, double *out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        return false;
    *out = json_number_value(v);
    return isfinite(*out) && *out >= min && *out < 1e15;
}

int gp_attempts_parse(const char *text, size_t len, const char *job, struct gp_attempts *a,
                      char *err, size_t errlen)
{
    gp_attempts_init(a);
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return gp_seterr(err, errlen, GP_EPARSE, "not JSON: %s (line %d)", je.text, je.line);
    int rc = GP_EPARSE;
    double n, last, wall;
    const char *name = json_string_value(json_object_get(root, "job"));
    json_t *secs = json_object_get(root, "seconds");
    if (!json_is_object(root) || !name || strcmp(name, job)) {
        gp_seterr(err, errlen, GP_EPARSE, "not the attempts of job '%s'", job);
    } else if (!field(root, "attempts", 1, &n) || n != floor(n) || n > 1e6) {
        gp_seterr(err, errlen, GP_EPARSE, "'attempts' is not a count of 1 or more");
    } else if (!field(root, "last_step", -1, &last) || !field(root, "wall_seconds", 0, &wall)) {
        gp_seterr(err, errlen, GP_EPARSE, "'last_step' or 'wall_seconds' missing or out of range");
    } else if (!json_is_object(secs)) {
        gp_seterr(err, errlen, GP_EPARSE, "'seconds' is not an object");
    } else {
        rc = GP_OK;
        for (int p = 0; p < GP_GOODPUT_NPARTS && rc == GP_OK; p++)
            if (!field(secs, gp_goodput_part_name(p), 0, &a->f.part[p]))
                rc = gp_seterr(err, errlen, GP_EPARSE, "'seconds.%s' missing or out of range",
                               gp_goodput_part_name(p));
    }
    if (rc == GP_OK) {
        a->attempts = (unsigned)n;
        a->last_step = last;
        a->f.wall = wall;
        gp_goodput_finish(&a->f);
    } else {
        gp_attempts_init(a);
    }
    json_decref(root);
    return rc;
}

void gp_attempts_render(struct gp_buf *out, const char *job, const struct gp_attempts *a)
{
    json_t *o = json_object(), *secs = json_object();
    json_object_set_new(o, "job", json_string(job));
    json_object_set_new(o, "attempts", json_integer(a->attempts));
    json_object_set_new(o, "last_step", json_real(a->last_step));
    json_object_set_new(o, "wall_seconds", json_real(a->f.wall));
    for (int p = 0; p < GP_GOODPUT_NPARTS; p++)
        json_object_set_new(secs, gp_goodput_part_name(p), json_real(a->f.part[p]));
    json_object_set_new(o, "seconds", secs);
    char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17));
    if (s) {
        gp_buf_puts(out, s);
        gp_buf_puts(out, "\n");
    } else {
        out->err = GP_ENOMEM;
    }
    free(s);
    json_decref(o);
}
