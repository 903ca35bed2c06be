/*
 * promtmpl.h - the templates of Prometheus alerting rules' labels and
 * annotations, rendered as Prometheus 2.42 renders them (Go's
 * text/template with Prometheus's functions), for the subset that alert
 * texts use:
 *
 *   text {{ $labels.NAME }} {{ .Labels.NAME }} {{ $value }} {{ .Value }}
 *   {{ $externalLabels.NAME }} {{ $externalURL }}          (none here: "")
 *   {{ $value | humanize }}  humanize1024, humanizePercentage,
 *       humanizeDuration, humanizeTimestamp, toUpper, toLower, title
 *   {{ $value | printf "%.2f" }}  {{ printf "%s=%g" $labels.x $value }}
 *   {{- trims -}}, comments ({{ slash-star ... star-slash }}), "strings",
 *   `raw strings`, numbers
 *
 * $value prints as Go's %v prints a float64 (the shortest digits that
 * read back the same; an exponent below 1e-4 and from 1e6: "0.5",
 * "123456", "1.234567e+06"), a label the alert lacks as "<no value>"
 * (Go's default for a missing map key). Control actions (if, range, with,
 * define, template), variables of one's own and the query functions are
 * refused when the rule file loads, naming what is not supported: a rule
 * file that loads renders the same text as in Prometheus.
 */
#ifndef GP_INSIGHT_PROMTMPL_H
#define GP_INSIGHT_PROMTMPL_H

#include "lib/buf.h"

#include <stddef.h>
#include <stdint.h>

/* What a template sees. labels: canonical blob (store/labels.h) or NULL. */
struct gp_ptmpl_data {
    const uint8_t *labels;
    size_t labels_len;
    double value;
};

/*
 * Expands tmpl (NUL-terminated) with d, appending to out. GP_OK;
 * GP_EPARSE for a template that does not parse ("unclosed action",
 * "function \"foo\" not defined", ...); GP_EUNSUPPORTED for Go template
 * features outside the subset; GP_EUSAGE for a failure while executing
 * (a function given a string that is not a number...). The message in
 * err. What was appended before an error stays in out.
 */
int gp_ptmpl_expand(const char *tmpl, const struct gp_ptmpl_data *d, struct gp_buf *out, char *err,
                    size_t errlen);

/* Checks tmpl as a rule file loads (parse errors and unsupported
 * features; execution errors do not count). GP_OK, GP_EPARSE or
 * GP_EUNSUPPORTED with the message. */
int gp_ptmpl_check(const char *tmpl, char *err, size_t errlen);

/* A float64 as Go formats it: verb 'v' (fmt's %v: shortest digits, %e
 * style below 1e-4 and from 1e6, else %f style) or 'e'
 * (strconv.FormatFloat(v, 'e', -1, 64): "1.5e+00", what Prometheus's
 * API shows as an alert's value). out: at least 32 bytes. */
void gp_go_float(double v, char verb, char *out, size_t len);

#endif
