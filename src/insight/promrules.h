/*
 * promrules.h - Prometheus rule files inside `gpulse server` (the server
 * key rule_files, docs/config.md): the loader of Prometheus 2.42's
 * rule-file format and the evaluation of its groups.
 *
 *   groups:
 *     - name: gpulse.detectors          # unique within its file
 *       interval: 15s                   # (the server's eval_interval)
 *       limit: 0                        # alerts / series at most; 0: none
 *       rules:
 *         - record: job:gpu_util:avg    # a metric name
 *           expr: avg by (job) (DCGM_FI_DEV_GPU_UTIL)
 *           labels: {team: ml}
 *         - alert: GpuHot               # the alert's name (its kind here)
 *           expr: DCGM_FI_DEV_GPU_TEMP > 85
 *           for: 2m
 *           keep_firing_for: 5m
 *           labels: {severity: critical}            # templates allowed
 *           annotations:
 *             summary: "GPU {{ $labels.gpu }} at {{ $value }} °C"
 *
 * Loading (promrules.c) checks what promtool checks: only 2.42's keys,
 * a non-empty group name not repeated in its file, exactly one of record
 * and alert, a recording name that is a metric name, no for,
 * keep_firing_for or annotations on a recording rule, label and
 * annotation names, expressions that parse (gp_promql_parse), and
 * templates that parse (promtmpl.h). An alert name of a built-in
 * detector is refused (they would share alerts). Errors read
 * "FILE:LINE: group \"g\", rule N, \"name\": what", the first one wins.
 *
 * Evaluation (promrules_eval.c), per group on its interval and its rules
 * in order, at one timestamp per round, as Prometheus's rule manager:
 *   - a recording rule's vector (a scalar: one series without labels)
 *     gets __name__ and the rule's labels and is appended to the storage
 *     at the round's time, so the later rules of the group read it;
 *     series it stops returning get a stale marker;
 *   - an alerting rule's samples become alerts keyed by their labels
 *     (the sample's without __name__, the rule's templated labels,
 *     alertname): pending, firing once active for `for`, held firing for
 *     keep_firing_for after the expression stops returning them, and
 *     gone when not returned. Their ALERTS{alertstate} and
 *     ALERTS_FOR_STATE series are written like recorded ones (from the
 *     second round: after the first, an alert with `for` >= 10m takes
 *     its start back from ALERTS_FOR_STATE, Prometheus's restore after
 *     a restart), so rules that read ALERTS (gpulse-rules.yml) work;
 *   - every pending or firing alert is an observation of the server's
 *     alert engine (alerts.h) with kind = alertname, the key (node,
 *     gpu, job, rank, pid) from its labels (as custom rules,
 *     rules.h), for = the rule's, clear_for 0, no cool-down: the alerts
 *     API, silences, acknowledgements, notifications and the dashboard
 *     see them as any other. Severity: the label `severity` when it is
 *     info, warning or critical (page: critical), else warning. Summary:
 *     the summary annotation; evidence: description (else the
 *     expression and value); runbook: runbook_url (else runbook).
 * A group whose round is not due in an engine tick holds its alerts
 * (gp_alerts_hold). Groups are evaluated in the engine's ticks, so an
 * interval shorter than eval_interval runs at eval_interval.
 */
#ifndef GP_INSIGHT_PROMRULES_H
#define GP_INSIGHT_PROMRULES_H

#include "insight/alerts.h"
#include "lib/buf.h"
#include "lib/metric_sink.h"
#include "query/promql.h"
#include "storage/storage.h"

#include <stddef.h>
#include <stdint.h>

#define GP_PROMRULES_MAX_FILES 256
#define GP_PROMRULES_MAX_RULES 10000 /* over all files */

struct gp_promrule {
    int alert;                 /* 1: alerting, 0: recording */
    char *name;                /* record: or alert: */
    char *expr;                /* as written */
    struct gp_pq_node *ast;
    int64_t for_ms, keep_firing_for_ms;
    char **label_names, **label_values; /* sorted by name */
    size_t nlabels;
    char **ann_names, **ann_values; /* sorted by name */
    size_t nann;
    unsigned line;
};

struct gp_promrule_group {
    char *name;
    char *file;
    int64_t interval_ms;       /* 0: not given (the default applies) */
    int64_t limit;
    struct gp_promrule *rules;
    size_t n;
    unsigned line;
};

struct gp_promrules {
    struct gp_promrule_group *g;
    size_t n;
};

/*
 * Parses one rule file's text (file names it in errors and in the API)
 * and appends its groups to *out. GP_OK; GP_EPARSE (not YAML) or
 * GP_ECONFIG (a rule file promtool would refuse), with
 * "FILE:LINE: ..." in err; GP_ENOMEM. On error *out keeps what it had
 * before the call.
 */
int gp_promrules_parse(const char *yaml, size_t len, const char *file, struct gp_promrules *out,
                       char *err, size_t errlen);

/*
 * Loads the files the patterns name (glob(3) patterns, as Prometheus's
 * rule_files; relative ones under base_dir when it is not NULL or "")
 * in pattern order, each pattern's matches sorted. A pattern without
 * glob characters must name a file; one with them may match none. Same
 * returns as gp_promrules_parse, GP_ECONFIG naming a file that cannot
 * be read.
 */
int gp_promrules_load(const char *const *patterns, size_t n, const char *base_dir,
                      struct gp_promrules *out, char *err, size_t errlen);

void gp_promrules_free(struct gp_promrules *r); /* accepts a zeroed set */

/* ---- evaluation ---- */

struct gp_promrules_options {
    struct gp_storage *store;          /* borrowed */
    int64_t default_interval_ms;       /* groups without interval: */
    int64_t tick_ms;                   /* the engine's interval: a round is due within half */
    struct gp_promql_limits limits;
};

struct gp_promrules_run;

/* Takes *rules (left zeroed) and makes their evaluation state. GP_OK or
 * GP_ENOMEM. Free with gp_promrules_run_free. */
int gp_promrules_run_new(struct gp_promrules_run **out, struct gp_promrules *rules,
                         const struct gp_promrules_options *o, char *err, size_t errlen);
void gp_promrules_run_free(struct gp_promrules_run *r); /* accepts NULL */

/*
 * Replaces the rules a run evaluates with *rules (taken, left zeroed),
 * as Prometheus does on a reload: a group that keeps its file and name
 * keeps its schedule, a rule that keeps its kind, name and labels within
 * it keeps its state (pending and firing alerts, the series it wrote),
 * whatever its new expression; the series of a rule that is gone get
 * stale markers now. GP_OK, or GP_ENOMEM with the run unchanged.
 */
int gp_promrules_run_reload(struct gp_promrules_run *r, struct gp_promrules *rules, char *err,
                            size_t errlen);

/*
 * The engine tick's part (between gp_alerts_begin and gp_alerts_end):
 * evaluates the groups due at now_ms with now_ms as their round's time,
 * hands their alerts to a and holds the alert kinds of the others.
 * GP_OK, or the first rule's error (the other rules still ran), with
 * detail; *failed (may be NULL) gets how many rules failed.
 */
int gp_promrules_tick(struct gp_promrules_run *r, struct gp_alerts *a, int64_t now_ms,
                      unsigned *failed, char *err, size_t errlen);

/* Rules and alerts loaded, for the server's log. */
size_t gp_promrules_count(const struct gp_promrules_run *r);

/* Whether an alerting rule has this alert name (custom rules must not). */
int gp_promrules_has_alert(const struct gp_promrules *r, const char *name);

/* GET /api/v1/rules: Prometheus's whole answer ({"status":"success",
 * "data":{"groups":[...]}}) appended to out; type: 0 all, 'a' alerting
 * rules only, 'r' recording rules only (every group is listed, with
 * the rules that pass, as 2.42 does). r NULL: no groups. GP_OK or out's error. */
int gp_promrules_json(struct gp_promrules_run *r, int type, struct gp_buf *out);

/* The rule groups' families of /metrics (gpulse_rule_group_*,
 * gpulse_rule_evaluation*), walked into k; nothing for r NULL. */
void gp_promrules_walk_metrics(struct gp_promrules_run *r, struct gp_metric_sink *k);

#endif
