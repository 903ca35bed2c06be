/*
 * matcher.h - label matchers and series selectors, as PromQL writes them.
 *
 *     metric_name
 *     metric_name{label="v", other!="v", gpu=~"0|1", Hostname!~"dgx-.*"}
 *     {__name__=~"DCGM_FI_DEV_.*", Hostname="n1"}
 *
 * Values are double- or single-quoted strings with PromQL's escapes
 * (\\ \" \' \n \t \r, \xHH, \uHHHH, \UHHHHHHHH, \NNN octal). Regular
 * expressions are fully anchored and RE2 syntax, as in Prometheus,
 * translated to POSIX ERE by lib/re2posix.h: what cannot be translated,
 * and regexes whose expanded cost passes a cap, are refused with a clear
 * error rather than misread. A label
 * that a series lacks has the value "", so {x=""} selects series without
 * x and {x=~".*"} selects every series. Error messages start with
 * "selector: " and give byte offsets counted from 0.
 */
#ifndef GP_STORE_MATCHER_H
#define GP_STORE_MATCHER_H

#include "lib/re2posix.h"

#include <stddef.h>

enum gp_match_op { GP_MATCH_EQ, GP_MATCH_NE, GP_MATCH_RE, GP_MATCH_NRE };

struct gp_matcher {
    enum gp_match_op op;
    char *name;   /* NUL-terminated, owned */
    char *value;  /* NUL-terminated, owned (the pattern for =~ and !~) */
    size_t value_len;
    struct gp_re2 re; /* the anchored translation, for =~ and !~ */
    int has_re;
};

/* Caps; more is GP_ETOOBIG. */
#define GP_SELECTOR_MAX_LEN 16384
#define GP_SELECTOR_MAX_MATCHERS 64

/*
 * Parses one selector into a new array of matchers (*out, *n; the metric
 * name becomes __name__="..."). Returns GP_OK, GP_EPARSE (with the
 * offending position in err), GP_ETOOBIG or GP_ENOMEM. A selector whose
 * matchers all match the empty string (such as {x=~".*"}) is GP_EPARSE,
 * as in Prometheus: it would select every series ever stored.
 */
int gp_selector_parse(const char *s, size_t len, struct gp_matcher **out, size_t *n, char *err,
                      size_t errlen);

/* Builds one matcher (for API callers that have name/op/value apart). */
int gp_matcher_init(struct gp_matcher *m, enum gp_match_op op, const char *name, const char *value,
                    char *err, size_t errlen);

/* 1 when value (len bytes; "" for an absent label) satisfies m. */
int gp_matcher_matches(const struct gp_matcher *m, const char *value, size_t len);

/* Frees one matcher's contents / an array from gp_selector_parse; accept NULL. */
void gp_matcher_free(struct gp_matcher *m);
void gp_matchers_free(struct gp_matcher *m, size_t n);

#endif
