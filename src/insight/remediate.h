/*
 * remediate.h - remediation hooks: a configured command per alert kind,
 * run when an alert of that kind starts firing (issue 5 part 6).
 *
 * Configuration (server section, docs/config.md):
 *   remediation: a list of "KIND=COMMAND ARG...", e.g.
 *     gpu_hardware_errors=scontrol update nodename={node} state=drain reason="gpulse {kind}"
 *   remediation_dry_run (default true), remediation_max_per_hour (per
 *   kind and node), remediation_max_per_kind_per_hour (per kind, all
 *   nodes), remediation_timeout.
 *
 * Safety. The command never goes through a shell: the template is split
 * into arguments once, when the config is read (blanks separate; "..."
 * groups with \" and \\ escapes; '...' groups literally; \ escapes one
 * character outside quotes), and run with posix_spawnp. Placeholders
 * {node} {gpu} {job} {rank} {kind} {severity} are substituted inside
 * each argument, never splitting or joining arguments, and the command
 * name itself cannot hold one. Any other '{' in a template is a config
 * error.
 *
 * Values. Each placeholder's value is checked by its own rule before any
 * command runs (1-128 characters for all):
 *   {node}      an RFC 1123 host name: labels of letters, digits and '-'
 *               (not first or last), 1-63 long, joined by single '.'
 *               (no leading, trailing or double '.')
 *   {gpu}       an index (0-99999) or a UUID: GPU-/MIG- then hex and '-'
 *   {job}       letters, digits and . _ : @ + -, not starting with '.'
 *               or '-' (no '/', blanks, quotes, controls, non-ASCII)
 *   {rank}      a decimal number 0-2147483647
 *   {kind}      letters, digits and _ . : -, not starting with '.' or '-'
 *   {severity}  info, warning or critical
 * A value that fails is never substituted: the action is refused,
 * audited as `refused` with the placeholder and the rule, logged and
 * counted (gpulse_remediation_refused_total{reason=PLACEHOLDER}).
 *
 * Paths. With remediation_path_root set, every argument built from a
 * placeholder that holds a '/' (after a leading "NAME=" when the '='
 * comes first) is a path: made absolute against the working directory,
 * normalised ('.', '..', '//'), the symbolic links of its longest
 * existing prefix resolved, and it must then lie in the root (itself
 * resolved); else the action is refused (reason "path").
 *
 * Flow. gp_rem_listener is a gp_alert_listener: it acts on transitions
 * to firing only, copies the event into a bounded queue and returns; a
 * worker thread decides and runs. Decisions, each one audit row in
 * state.db's `audit` table: skipped (the alert is silenced), refused (a
 * label value fails the check above), rate_limited, dry_run (what would
 * run), ran (exit status 0), failed (another exit status, a signal, or
 * the command could not start), timed_out (killed, with its process
 * group, after remediation_timeout). Rows keep the argv, exit status,
 * the first line of stderr and the run time. Dry runs count against the
 * rate limits, so a dry run predicts what a live one would do.
 */
#ifndef GP_INSIGHT_REMEDIATE_H
#define GP_INSIGHT_REMEDIATE_H

#include "lib/buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GP_REM_MAX_RULES 8     /* the config list's capacity */
#define GP_REM_MAX_ARGS 32
#define GP_REM_ARG_LEN 256
#define GP_REM_KIND_LEN 64
#define GP_REM_VALUE_MAX 128
#define GP_REM_RATE_MAX 64     /* largest per-hour limit */
#define GP_REM_QUEUE 64        /* events waiting for the worker */

/* insight/alert_event.h; only pointers to it are needed here. */
struct gp_alert_event;

struct gp_rem_rule {
    char kind[GP_REM_KIND_LEN];
    unsigned argc;
    char argv[GP_REM_MAX_ARGS][GP_REM_ARG_LEN]; /* templates, unquoted */
};

/*
 * Parses one "KIND=COMMAND ARG..." entry into *out. GP_OK, or GP_ECONFIG
 * with detail (empty kind or command, unknown placeholder, placeholder
 * in the command name, option-like command name, unterminated quote,
 * control character, too many or too long arguments).
 */
int gp_rem_parse_rule(const char *line, struct gp_rem_rule *out, char *err, size_t errlen);

/* Why v may not stand for the placeholder ("node", "gpu"...: the module
 * comment's rules), as a static text; NULL when it may. */
const char *gp_rem_value_problem(const char *placeholder, const char *v);
bool gp_rem_value_ok(const char *placeholder, const char *v);

/* Reasons of a refusal: the placeholders in template order, then these. */
enum { GP_REM_REFUSE_LONG = 6, GP_REM_REFUSE_PATH = 7, GP_REM_REFUSE__COUNT = 8 };
extern const char *const gp_rem_refusal_names[GP_REM_REFUSE__COUNT];

/*
 * Substitutes ev's labels into r's arguments: out[0..r->argc). GP_OK,
 * or GP_EPARSE with detail naming the label that failed its check (*bad:
 * its placeholder's index; -1 otherwise), or GP_ETOOBIG for an argument
 * over GP_REM_ARG_LEN. bad may be NULL.
 */
int gp_rem_expand(const struct gp_rem_rule *r, const struct gp_alert_event *ev,
                  char out[][GP_REM_ARG_LEN], int *bad, char *err, size_t errlen);

/*
 * Checks the paths of an expansion (args, from r) against root (module
 * comment "Paths"); NULL or "" checks nothing. GP_OK, or GP_EPARSE with
 * detail naming the argument and where it resolves.
 */
int gp_rem_check_paths(const struct gp_rem_rule *r, char args[][GP_REM_ARG_LEN], const char *root,
                       char *err, size_t errlen);

struct gp_rem_opts {
    const struct gp_rem_rule *rules; /* copied */
    size_t nrules;
    bool dry_run;
    unsigned max_per_hour;           /* per kind and node, 1..GP_REM_RATE_MAX */
    unsigned max_per_kind_per_hour;  /* per kind over all nodes, 1..GP_REM_RATE_MAX */
    int64_t timeout_ms;              /* a command's run time at most */
    const char *path_root;           /* remediation_path_root; NULL or "": paths unchecked */
    int64_t (*now_ms)(void *ctx);    /* NULL: the wall clock */
    void *clock_ctx;
};

struct gp_rem;

/*
 * Opens dir/state.db (its own connection; state/state.h migrates it)
 * and starts the worker. *out is closed with gp_rem_close. GP_OK,
 * GP_EUSAGE (limits out of range), the errors of gp_state_open, or
 * GP_ENOMEM, with detail.
 */
int gp_rem_open(struct gp_rem **out, const char *dir, const struct gp_rem_opts *o, char *err,
                size_t errlen);

/* Waits for the queue to empty and the worker to finish, stops it,
 * closes the database, frees. Accepts NULL. */
void gp_rem_close(struct gp_rem *r);

/* The gp_alert_listener: ctx is the struct gp_rem. Never blocks on a
 * command or the database; a full queue drops the event (counted). */
void gp_rem_listener(void *ctx, const struct gp_alert_event *ev);

/* Waits until everything queued so far is decided and audited. */
void gp_rem_flush(struct gp_rem *r);

struct gp_rem_stats {
    uint64_t queued, dropped, decided, audit_errors;
    uint64_t refused[GP_REM_REFUSE__COUNT]; /* by gp_rem_refusal_names */
};
void gp_rem_stats(struct gp_rem *r, struct gp_rem_stats *out);

struct gp_audit_filter {
    const char *kind, *node, *job, *decision; /* NULL: any */
    int64_t since_ms;                          /* INT64_MIN: any */
    size_t limit;
};

/*
 * Appends GET /api/v1/audit's answer to out: the envelope and the rows
 * passing f, newest first, each {"id","at","alert_id","kind","severity",
 * "node","gpu","job","rank","decision","command":[...],"exit_status",
 * "stderr","detail","duration_seconds"} (unknown: null). GP_OK, GP_EIO,
 * GP_ENOMEM or out's latched error.
 */
int gp_rem_audit_json(struct gp_rem *r, const struct gp_audit_filter *f, struct gp_buf *out);

/* The decision words, for filters: GP_OK when s is one. */
int gp_rem_decision_check(const char *s);

#endif
