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
 *
 * Built-in actions (issue 20). An entry "KIND=@slurm-drain" runs
 *   SCONTROL update nodename=NODE state=drain reason="gpulse KIND: SUMMARY"
 * (remediation_scontrol; resume: state=resume); "KIND=@kubernetes-cordon"
 * cordons the node and taints it KEY=KIND:NoSchedule through the API
 * server (remediate_k8s.c). Both need a valid {node} and run through the
 * same queue, limits, shadow mode and audit as a command.
 *
 * Shadow mode is remediation_dry_run (on by default): every decision is
 * made and audited as `dry_run`, nothing is run and no API is called.
 *
 * Circuit breaker. Before a node not yet acted on in the last hour is
 * acted on, the nodes acted on in the last hour (dry runs included) are
 * counted; at breaker_max_nodes, or at breaker_max_percent of the fleet
 * (nodes with GPUs in the evaluation window, at least one node), the
 * action is `breaker_open` and nothing runs. gp_rem_tick raises the
 * alert remediation_breaker_open while a refusal of the last hour stands.
 *
 * Mark healthy. gp_rem_node_healthy queues the undoing of what gpulse did
 * to the node (resume, uncordon) when remediation_undo_on_healthy is on
 * and the node's newest drain or cordon in the audit is gpulse's own,
 * not yet undone; audited with the operator's words as its reason.
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

/* What an audit row did; the first three are what a rule may name. */
enum gp_rem_action {
    GP_REM_COMMAND,
    GP_REM_SLURM_DRAIN,
    GP_REM_K8S_CORDON,
    GP_REM_SLURM_RESUME,
    GP_REM_K8S_UNCORDON,
    GP_REM_ACTION__COUNT
};
extern const char *const gp_rem_action_names[GP_REM_ACTION__COUNT];

#define GP_REM_BREAKER_NODES 4096 /* distinct nodes the breaker remembers */
#define GP_REM_BREAKER_KIND "remediation_breaker_open"

struct gp_rem_rule {
    char kind[GP_REM_KIND_LEN];
    enum gp_rem_action action; /* GP_REM_COMMAND: argv; else argc is 0 */
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

/* Where the Kubernetes action goes. Strings borrowed by gp_rem_open,
 * copied there. */
struct gp_rem_k8s {
    const char *api;        /* base URL; NULL or "": https://$KUBERNETES_SERVICE_HOST:PORT */
    const char *token_file; /* bearer token, read at each action; "": none */
    const char *ca_file;    /* CA bundle for https; "": the system's */
    const char *taint_key;  /* the taint gpulse puts and takes away */
};

/* One Kubernetes action's outcome. */
struct gp_rem_k8s_result {
    int http_status;  /* the last answer's; 0: none */
    char url[640];
    char body[2048];  /* the PATCH sent (truncated); "" when none */
    char detail[256];
    int64_t duration_ms;
};

/* remediate_k8s.c: cordons and taints node (cordon) with value, or takes
 * both away. GP_OK when the PATCH answered 200; else GP_ECONFIG (no API
 * server), GP_EIO (token), GP_EPARSE (not a Node), GP_ENET, with
 * res->detail. */
/* The taints to send for a node (answer: the GET's body): the node's own
 * without k->taint_key, with {key, value, NoSchedule} added when cordon;
 * *rv gets metadata.resourceVersion. NULL when the answer is not a Node
 * with a string resourceVersion. The caller decrefs. */
typedef struct json_t json_t;
json_t *gp_rem_k8s_taints(const char *answer, size_t len, const struct gp_rem_k8s *k, bool cordon,
                          const char *value, char *rv, size_t rvlen);

int gp_rem_k8s_node(const struct gp_rem_k8s *k, const char *node, bool cordon, const char *value,
                    int64_t timeout_ms, struct gp_rem_k8s_result *res);

struct gp_rem_opts {
    const struct gp_rem_rule *rules; /* copied */
    size_t nrules;
    bool dry_run;
    unsigned max_per_hour;           /* per kind and node, 1..GP_REM_RATE_MAX */
    unsigned max_per_kind_per_hour;  /* per kind over all nodes, 1..GP_REM_RATE_MAX */
    int64_t timeout_ms;              /* a command's run time at most */
    const char *path_root;           /* remediation_path_root; NULL or "": paths unchecked */
    const char *scontrol;            /* NULL or "": "scontrol" */
    struct gp_rem_k8s k8s;
    unsigned breaker_max_nodes;      /* 1..GP_REM_BREAKER_NODES; 0: GP_REM_BREAKER_NODES */
    double breaker_max_percent;      /* of the fleet, 0 (off)..100 */
    bool undo_on_healthy;
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

/*
 * An operator marked node healthy (by, comment: who and why, for the
 * audit). Queues the undoing (module comment "Mark healthy"); never
 * blocks. GP_OK, GP_EPARSE (node fails the {node} rule), GP_ETOOBIG
 * (queue full).
 */
int gp_rem_node_healthy(struct gp_rem *r, const char *node, const char *by, const char *comment);

/* The fleet's nodes (those of v's GPUs) for the breaker, and the alert
 * GP_REM_BREAKER_KIND observed into a (inside its tick) while the
 * breaker refused an action in the last hour. Accepts r NULL. */
struct gp_view;
struct gp_alerts;
void gp_rem_tick(struct gp_rem *r, const struct gp_view *v, struct gp_alerts *a, int64_t now_ms);

struct gp_rem_breaker {
    unsigned acted;   /* distinct nodes acted on in the last hour */
    unsigned limit;   /* what the breaker allows now */
    unsigned fleet;   /* nodes, as gp_rem_tick last saw them */
    int64_t tripped_ms; /* the newest refusal; 0: none */
};
void gp_rem_breaker_state(struct gp_rem *r, struct gp_rem_breaker *out);

struct gp_rem_stats {
    uint64_t queued, dropped, decided, audit_errors, breaker_refused;
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
 * "stderr","detail","duration_seconds","action","reason"} (unknown: null). GP_OK, GP_EIO,
 * GP_ENOMEM or out's latched error.
 */
int gp_rem_audit_json(struct gp_rem *r, const struct gp_audit_filter *f, struct gp_buf *out);

/* The decision words, for filters: GP_OK when s is one. */
int gp_rem_decision_check(const char *s);

#endif
