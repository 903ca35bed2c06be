/*
 * remediate.c - remediation hooks (remediate.h): the template parser,
 * the placeholder substitution, the worker that decides, rate-limits,
 * runs and audits.
 *
 * Threads: the alert engine's thread calls gp_rem_listener, which only
 * copies the event into a fixed ring under the mutex. One worker thread
 * takes events off the ring and does everything that can take time:
 * the rate-limit bookkeeping (only it touches it, so it needs no lock),
 * posix_spawnp of the command in its own process group with stdin and
 * stdout on /dev/null and stderr on a pipe, a poll loop that reads the
 * first line of stderr until the child ends or the timeout passes
 * (then SIGKILL to the group), and the audit row. `busy` tells flush
 * that an event taken off the ring is still being handled.
 *
 * Rate limits: per (kind, node) and per kind, a ring of the times of
 * the last actions (dry runs included); an action is allowed when fewer
 * than the limit fall within the last hour. The key tables are bounded;
 * when full, the key whose newest action is oldest is reused.
 */
#include "insight/remediate.h"

#include "insight/alert_event.h"
#include "insight/alerts.h"
#include "insight/view.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "lib/plural.h"
#include "net/httpc.h"
#include "state/state.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define HOUR_MS (3600 * 1000LL)
#define RATE_KEYS 256
#define STDERR_KEEP 256

static const char *const placeholders[] = {"node", "gpu", "job", "rank", "kind", "severity"};
#define NPH (sizeof placeholders / sizeof placeholders[0])

/* The first NPH reasons are the placeholders, in their order. */
const char *const gp_rem_refusal_names[GP_REM_REFUSE__COUNT] = {
    "node", "gpu", "job", "rank", "kind", "severity", "too_long", "path"};
_Static_assert(GP_REM_REFUSE_LONG == NPH, "refusal reasons follow the placeholders");

static const char *const decisions[] = {"skipped", "refused", "rate_limited", "dry_run",
                                        "ran",     "failed",  "timed_out",    "breaker_open"};

const char *const gp_rem_action_names[GP_REM_ACTION__COUNT] = {
    "command", "slurm_drain", "kubernetes_cordon", "slurm_resume", "kubernetes_uncordon"};

/* The built-in actions a rule names after '@'. */
static const struct {
    const char *name;
    enum gp_rem_action action;
} builtins[] = {{"@slurm-drain", GP_REM_SLURM_DRAIN}, {"@kubernetes-cordon", GP_REM_K8S_CORDON}};

int gp_rem_decision_check(const char *s)
{
    for (size_t i = 0; s && i < sizeof decisions / sizeof decisions[0]; i++)
        if (!strcmp(s, decisions[i]))
            return GP_OK;
    return GP_EPARSE;
}

/* --- templates ------------------------------------------------------------ */

/* Length of the placeholder name at p (after '{'), or 0 when none fits. */
static size_t placeholder_at(const char *p, size_t *which)
{
    for (size_t i = 0; i < NPH; i++) {
        size_t n = strlen(placeholders[i]);
        if (!strncmp(p, placeholders[i], n) && p[n] == '}') {
            *which = i;
            return n;
        }
    }
    return 0;
}

static bool kind_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == ':' || c == '-';
}

int gp_rem_parse_rule(const char *line, struct gp_rem_rule *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *p = line;
    while (*p == ' ' || *p == '\t')
        p++;
    size_t k = 0;
    while (kind_char(p[k]))
        k++;
    if (!k || p[k] != '=')
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "remediation entry must be KIND=COMMAND ARG... with a kind of letters, "
                         "digits, '_', '.', ':' or '-'");
    if (k >= sizeof out->kind)
        return gp_seterr(err, errlen, GP_ECONFIG, "remediation kind longer than %d bytes",
                         GP_REM_KIND_LEN - 1);
    memcpy(out->kind, p, k);
    p += k + 1;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '@') {
        size_t n = strcspn(p, " \t");
        for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
            if (strlen(builtins[i].name) == n && !strncmp(p, builtins[i].name, n)) {
                if (p[n + strspn(p + n, " \t")])
                    return gp_seterr(err, errlen, GP_ECONFIG,
                                     "remediation for '%s': %s takes no arguments", out->kind,
                                     builtins[i].name);
                out->action = builtins[i].action;
                return GP_OK;
            }
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "remediation for '%s': unknown built-in action '%.*s' (use @slurm-drain or "
                         "@kubernetes-cordon)",
                         out->kind, (int)(n > 40 ? 40 : n), p);
    }
    for (const char *c = p; *c; c++)
        if ((unsigned char)*c < 0x20 && *c != '\t')
            return gp_seterr(err, errlen, GP_ECONFIG,
                             "remediation for '%s': control character in the command", out->kind);
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        if (out->argc == GP_REM_MAX_ARGS)
            return gp_seterr(err, errlen, GP_ECONFIG, "remediation for '%s': more than %d arguments",
                             out->kind, GP_REM_MAX_ARGS);
        char *a = out->argv[out->argc];
        size_t n = 0;
        char quote = 0;
        while (*p && (quote || (*p != ' ' && *p != '\t'))) {
            char c = *p++;
            if (quote == '\'') {
                if (c == '\'') {
                    quote = 0;
                    continue;
                }
            } else if (quote == '"') {
                if (c == '"') {
                    quote = 0;
                    continue;
                }
                if (c == '\\' && (*p == '"' || *p == '\\'))
                    c = *p++;
            } else if (c == '"' || c == '\'') {
                quote = c;
                continue;
            } else if (c == '\\') {
                if (!*p)
                    return gp_seterr(err, errlen, GP_ECONFIG,
                                     "remediation for '%s': '\\' at the end", out->kind);
                c = *p++;
            }
            if (n + 1 >= GP_REM_ARG_LEN)
                return gp_seterr(err, errlen, GP_ECONFIG,
                                 "remediation for '%s': an argument longer than %d bytes", out->kind,
                                 GP_REM_ARG_LEN - 1);
            a[n++] = c;
        }
        if (quote)
            return gp_seterr(err, errlen, GP_ECONFIG, "remediation for '%s': unterminated %c quote",
                             out->kind, quote);
        a[n] = 0;
        for (char *b = strchr(a, '{'); b; b = strchr(b + 1, '{')) {
            size_t which;
            if (!placeholder_at(b + 1, &which))
                return gp_seterr(err, errlen, GP_ECONFIG,
                                 "remediation for '%s': unknown placeholder at '%.20s' (use {node}, "
                                 "{gpu}, {job}, {rank}, {kind} or {severity})",
                                 out->kind, b);
            if (!out->argc)
                return gp_seterr(err, errlen, GP_ECONFIG,
                                 "remediation for '%s': the command name cannot hold a placeholder",
                                 out->kind);
        }
        out->argc++;
    }
    if (!out->argc || !out->argv[0][0])
        return gp_seterr(err, errlen, GP_ECONFIG, "remediation for '%s': no command", out->kind);
    if (out->argv[0][0] == '-')
        return gp_seterr(err, errlen, GP_ECONFIG,
                         "remediation for '%s': the command name cannot start with '-'", out->kind);
    return GP_OK;
}

/* --- placeholder values (remediate.h "Values") ------------------------------ */

static bool alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* RFC 1123: dot-separated labels of letters, digits and '-', each 1-63
 * long, not starting or ending with '-'; at most 253 in all. */
static const char *node_problem(const char *v, size_t n)
{
    if (n > 253)
        return "a host name is at most 253 characters";
    size_t label = 0;
    for (size_t i = 0; i <= n; i++) {
        char c = i < n ? v[i] : '.';
        if (c == '.') {
            if (!label)
                return "a host name has no empty label (no leading '.', '..' or trailing '.')";
            if (v[i - 1] == '-')
                return "a host name label does not end with '-'";
            label = 0;
        } else if (alnum(c) || c == '-') {
            if (!label && c == '-')
                return "a host name label does not start with '-'";
            if (++label > 63)
                return "a host name label is at most 63 characters";
        } else {
            return "a host name holds only letters, digits, '-' and '.'";
        }
    }
    return NULL;
}

/* An index (decimal, no sign or leading zero) or a UUID as NVML writes
 * it: GPU- or MIG- and hex digits and dashes. */
static const char *gpu_problem(const char *v, size_t n)
{
    bool digits = true;
    for (size_t i = 0; i < n; i++)
        digits &= v[i] >= '0' && v[i] <= '9';
    if (digits)
        return n <= 5 && (n == 1 || v[0] != '0') ? NULL : "a GPU index is 0-99999 without leading zeros";
    if (strncmp(v, "GPU-", 4) && strncmp(v, "MIG-", 4))
        return "a GPU is an index or a GPU-/MIG- UUID";
    if (n == 4)
        return "a GPU UUID has hex digits after its prefix";
    for (size_t i = 4; i < n; i++)
        if (!((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f') ||
              (v[i] >= 'A' && v[i] <= 'F') || v[i] == '-'))
            return "a GPU UUID holds only hex digits and '-' after its prefix";
    return NULL;
}

/* Printable ASCII of a file-name-safe set: no '/', no blanks, quotes,
 * shell or glob characters, no control bytes, no leading '.' or '-'. */
static const char *job_problem(const char *v, size_t n)
{
    if (v[0] == '.' || v[0] == '-')
        return "a job does not start with '.' or '-'";
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        if (c == '/')
            return "a job holds no '/'";
        if (!(alnum(c) || c == '.' || c == '_' || c == ':' || c == '@' || c == '+' || c == '-'))
            return "a job holds only letters, digits and . _ : @ + -";
    }
    return NULL;
}

static const char *rank_problem(const char *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] < '0' || v[i] > '9')
            return "a rank is a decimal number";
    return n <= 10 && (n == 1 || v[0] != '0') ? NULL : "a rank is 0-2147483647 without leading zeros";
}

static const char *kind_problem(const char *v, size_t n)
{
    if (v[0] == '.' || v[0] == '-')
        return "a kind does not start with '.' or '-'";
    for (size_t i = 0; i < n; i++)
        if (!kind_char(v[i]))
            return "a kind holds only letters, digits and _ . : -";
    return NULL;
}

static const char *severity_problem(const char *v, size_t n)
{
    (void)n;
    for (int i = 0; i < GP_SEV__COUNT; i++)
        if (!strcmp(v, gp_severity_names[i]))
            return NULL;
    return "not a severity name";
}

const char *gp_rem_value_problem(const char *placeholder, const char *v)
{
    static const char *(*const check[NPH])(const char *, size_t) = {
        node_problem, gpu_problem, job_problem, rank_problem, kind_problem, severity_problem};
    size_t n = v ? strlen(v) : 0;
    if (!n)
        return "empty (not known for this alert)";
    if (n > GP_REM_VALUE_MAX)
        return "longer than 128 characters";
    for (size_t i = 0; i < NPH; i++)
        if (placeholder && !strcmp(placeholder, placeholders[i]))
            return check[i](v, n);
    return "not a placeholder";
}

bool gp_rem_value_ok(const char *placeholder, const char *v)
{
    return gp_rem_value_problem(placeholder, v) == NULL;
}

/* --- paths (remediate.h "Paths") -------------------------------------------- */

/* Lexically normalises the absolute path p in place: '//' and '.' go,
 * '..' takes the component before it away (never above '/'). */
static void normalise(char *p)
{
    char *out = p, *in = p;
    while (*in) {
        while (*in == '/')
            in++;
        if (!*in)
            break;
        char *end = strchr(in, '/');
        size_t len = end ? (size_t)(end - in) : strlen(in);
        if (len == 1 && in[0] == '.') {
            /* nothing */
        } else if (len == 2 && in[0] == '.' && in[1] == '.') {
            while (out > p && *--out != '/')
                ;
        } else {
            *out++ = '/';
            memmove(out, in, len);
            out += len;
        }
        in += len;
    }
    if (out == p)
        *out++ = '/';
    *out = '\0';
}

/* path (absolute, normalised) with the symbolic links of its longest
 * existing prefix resolved, into out. false when too long. */
static bool resolve(const char *path, char *out, size_t outlen)
{
    char pre[PATH_MAX];
    if (strlen(path) >= sizeof pre)
        return false;
    strcpy(pre, path);
    size_t cut = strlen(pre);
    for (;;) {
        char real[PATH_MAX];
        if (realpath(pre[0] ? pre : "/", real)) {
            const char *rest = path + cut;
            int n = snprintf(out, outlen, "%s%s", strcmp(real, "/") || !rest[0] ? real : "", rest);
            if (n < 0 || (size_t)n >= outlen)
                return false;
            normalise(out);
            return true;
        }
        char *slash = strrchr(pre, '/');
        if (!slash)
            return false;
        cut = (size_t)(slash - pre);
        *slash = '\0';
    }
}

int gp_rem_check_paths(const struct gp_rem_rule *r, char args[][GP_REM_ARG_LEN], const char *root,
                       char *err, size_t errlen)
{
    if (!root || !root[0])
        return GP_OK;
    char base[PATH_MAX];
    if (!realpath(root, base))
        return gp_seterr(err, errlen, GP_EPARSE, "remediation_path_root '%s': %s", root,
                         strerror(errno));
    size_t bl = strlen(base);
    for (unsigned i = 1; i < r->argc; i++) {
        if (!strchr(r->argv[i], '{'))
            continue; /* the template's own text: the operator wrote it */
        /* a URL is no path; --out=/x/{job} and key=/x/{job}: the path is after the '=' */
        const char *a = args[i], *eq = strchr(a, '='), *sl = strchr(a, '/'), *url = strstr(r->argv[i], "://");
        if (url && url < strchr(r->argv[i], '{'))
            continue;
        const char *path = eq && (!sl || eq < sl) ? eq + 1 : a;
        if (!strchr(path, '/'))
            continue;
        char abs[PATH_MAX], real[PATH_MAX];
        int n;
        if (path[0] == '/') {
            n = snprintf(abs, sizeof abs, "%s", path);
        } else {
            char cwd[PATH_MAX];
            if (!getcwd(cwd, sizeof cwd))
                return gp_seterr(err, errlen, GP_EPARSE, "argument %u: cannot read the working directory", i);
            n = snprintf(abs, sizeof abs, "%s/%s", cwd, path);
        }
        if (n < 0 || (size_t)n >= sizeof abs)
            return gp_seterr(err, errlen, GP_EPARSE, "argument %u: path too long", i);
        normalise(abs);
        if (!resolve(abs, real, sizeof real))
            return gp_seterr(err, errlen, GP_EPARSE, "argument %u: path too long", i);
        bool under = bl == 1 ? real[0] == '/' : !strncmp(real, base, bl) && (!real[bl] || real[bl] == '/');
        if (!under)
            return gp_seterr(err, errlen, GP_EPARSE,
                             "argument %u: path '%.100s' resolves to '%.100s', outside "
                             "remediation_path_root '%.100s'",
                             i, path, real, base);
    }
    return GP_OK;
}

/* v with control and non-ASCII bytes as '?', for a message. */
static const char *printable(const char *v, char *out, size_t outlen)
{
    size_t i = 0;
    for (; v[i] && i + 1 < outlen; i++)
        out[i] = (unsigned char)v[i] < 0x20 || (unsigned char)v[i] >= 0x7f ? '?' : v[i];
    out[i] = '\0';
    return out;
}

int gp_rem_expand(const struct gp_rem_rule *r, const struct gp_alert_event *ev,
                  char out[][GP_REM_ARG_LEN], int *bad, char *err, size_t errlen)
{
    char shown[64];
    if (bad)
        *bad = -1;
    char rank[24] = "";
    if (ev->key && ev->key->rank >= 0)
        snprintf(rank, sizeof rank, "%d", (int)ev->key->rank);
    const char *vals[NPH] = {
        ev->key ? ev->key->node : "", ev->key ? ev->key->gpu : "", ev->key ? ev->key->job : "",
        rank, ev->kind ? ev->kind : "",
        (unsigned)ev->severity < GP_SEV__COUNT ? gp_severity_names[ev->severity] : ""};
    for (unsigned i = 0; i < r->argc; i++) {
        const char *t = r->argv[i];
        size_t n = 0;
        while (*t) {
            size_t which, len;
            if (*t == '{' && (len = placeholder_at(t + 1, &which))) {
                const char *v = vals[which];
                const char *why = gp_rem_value_problem(placeholders[which], v);
                if (why) {
                    if (bad)
                        *bad = (int)which;
                    return gp_seterr(err, errlen, GP_EPARSE, "label %s '%.60s%s': %s",
                                     placeholders[which], printable(v, shown, sizeof shown),
                                     strlen(v) > 60 ? "..." : "", why);
                }
                size_t vl = strlen(v);
                if (n + vl >= GP_REM_ARG_LEN)
                    return gp_seterr(err, errlen, GP_ETOOBIG, "argument %u longer than %d bytes", i,
                                     GP_REM_ARG_LEN - 1);
                memcpy(out[i] + n, v, vl);
                n += vl;
                t += len + 2;
                continue;
            }
            if (n + 1 >= GP_REM_ARG_LEN)
                return gp_seterr(err, errlen, GP_ETOOBIG, "argument %u longer than %d bytes", i,
                                 GP_REM_ARG_LEN - 1);
            out[i][n++] = *t++;
        }
        out[i][n] = 0;
    }
    return GP_OK;
}

/* --- the worker's state ---------------------------------------------------- */

struct event {
    bool healthy; /* gp_rem_node_healthy's: undo, not an alert */
    char reason[256]; /* the alert's summary, or the operator's words */
    char id[64], kind[GP_REM_KIND_LEN];
    enum gp_severity severity;
    struct gp_obs_key key;
    int64_t at_ms; /* when the listener took it: the rate limits' and audit's time */
    bool silenced;
};

struct rate {
    char kind[GP_REM_KIND_LEN];
    char node[GP_VIEW_NODE_LEN];
    int64_t t[GP_REM_RATE_MAX];
    unsigned n, head; /* ring of the newest n times */
    int64_t newest;
};

struct gp_rem {
    struct gp_rem_opts o;
    struct gp_rem_rule rules[GP_REM_MAX_RULES];
    sqlite3 *db;
    pthread_mutex_t mu;
    pthread_cond_t cv, idle;
    struct event q[GP_REM_QUEUE];
    size_t qhead, qlen;
    bool stop, busy, started, http;
    pthread_t th;
    struct gp_rem_stats st;
    struct rate node_rates[RATE_KEYS], kind_rates[RATE_KEYS];
    char argv[GP_REM_MAX_ARGS][GP_REM_ARG_LEN]; /* the worker's expansion */
    char path_root[1024];
    char scontrol[GP_REM_ARG_LEN], k8s_api[512], k8s_token[1024], k8s_ca[1024], k8s_taint[256];
    /* the breaker (under mu): nodes acted on and when, the fleet's size,
     * the newest refusal */
    struct acted {
        char node[GP_VIEW_NODE_LEN];
        int64_t at;
    } acted[GP_REM_BREAKER_NODES];
    unsigned fleet;
    int64_t tripped_ms;
};

static int64_t now_of(struct gp_rem *r)
{
    return r->o.now_ms ? r->o.now_ms(r->o.clock_ctx) : gp_wall_ms();
}

/* The key's entry in tab, created (or the stalest reused) when absent. */
static struct rate *rate_of(struct rate *tab, const char *kind, const char *node)
{
    struct rate *stale = &tab[0];
    for (size_t i = 0; i < RATE_KEYS; i++) {
        struct rate *e = &tab[i];
        if (e->kind[0] && !strcmp(e->kind, kind) && !strcmp(e->node, node))
            return e;
        if (!e->kind[0] ? stale->kind[0] : (stale->kind[0] && e->newest < stale->newest))
            stale = e;
    }
    memset(stale, 0, sizeof *stale);
    snprintf(stale->kind, sizeof stale->kind, "%s", kind);
    snprintf(stale->node, sizeof stale->node, "%s", node);
    return stale;
}

static unsigned rate_count(const struct rate *e, int64_t now)
{
    unsigned c = 0;
    for (unsigned i = 0; i < e->n; i++)
        if (e->t[i] > now - HOUR_MS)
            c++;
    return c;
}

static void rate_note(struct rate *e, int64_t now)
{
    e->t[e->head] = now;
    e->head = (e->head + 1) % GP_REM_RATE_MAX;
    if (e->n < GP_REM_RATE_MAX)
        e->n++;
    e->newest = now;
}

/* --- running a command ------------------------------------------------------ */

struct outcome {
    const char *decision;
    enum gp_rem_action action;
    const char *command_json; /* instead of the argv (the Kubernetes request); NULL: argv */
    int exit_status; /* -1 unknown */
    char stderr_line[STDERR_KEEP];
    char detail[256];
    int64_t duration_ms;
};

static void keep_stderr(struct outcome *oc, size_t *kept, bool *done, const char *b, size_t n)
{
    for (size_t i = 0; i < n && !*done; i++) {
        if (b[i] == '\n' || *kept + 1 >= sizeof oc->stderr_line) {
            *done = true;
            break;
        }
        oc->stderr_line[(*kept)++] = (unsigned char)b[i] < 0x20 ? '?' : b[i];
        oc->stderr_line[*kept] = 0;
    }
}

static void run_command(char argv[][GP_REM_ARG_LEN], unsigned argc, int64_t timeout_ms,
                        struct outcome *oc)
{
    char *av[GP_REM_MAX_ARGS + 1];
    for (unsigned i = 0; i < argc; i++)
        av[i] = argv[i];
    av[argc] = NULL;
    int fds[2];
    oc->exit_status = -1;
    if (pipe2(fds, O_CLOEXEC)) {
        oc->decision = "failed";
        snprintf(oc->detail, sizeof oc->detail, "cannot make a pipe: %s", strerror(errno));
        return;
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
    sigset_t none, dfl;
    sigemptyset(&none);
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGPIPE);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dfl);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    int64_t t0 = gp_mono_ms();
    int rc = posix_spawnp(&pid, av[0], &fa, &at, av, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(fds[1]);
    if (rc) {
        close(fds[0]);
        oc->decision = "failed";
        snprintf(oc->detail, sizeof oc->detail, "cannot run '%.100s': %s", av[0], strerror(rc));
        return;
    }
    size_t kept = 0;
    bool done = false, eof = false, timed_out = false;
    int status = 0;
    for (;;) {
        int64_t left = t0 + timeout_ms - gp_mono_ms();
        if (left <= 0) {
            timed_out = true;
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        if (!eof) {
            struct pollfd pf = {fds[0], POLLIN, 0};
            int pr = poll(&pf, 1, (int)(left < 50 ? left : 50));
            if (pr > 0) {
                char b[512];
                ssize_t n = read(fds[0], b, sizeof b);
                if (n > 0)
                    keep_stderr(oc, &kept, &done, b, (size_t)n);
                else if (n == 0 || errno != EINTR)
                    eof = true;
            }
        } else {
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
    }
    close(fds[0]);
    oc->duration_ms = gp_mono_ms() - t0;
    if (timed_out) {
        oc->decision = "timed_out";
        snprintf(oc->detail, sizeof oc->detail, "killed after %lld ms", (long long)timeout_ms);
    } else if (WIFEXITED(status)) {
        oc->exit_status = WEXITSTATUS(status);
        oc->decision = oc->exit_status ? "failed" : "ran";
    } else if (WIFSIGNALED(status)) {
        oc->exit_status = 128 + WTERMSIG(status);
        oc->decision = "failed";
        snprintf(oc->detail, sizeof oc->detail, "killed by signal %d", WTERMSIG(status));
    }
}

/* --- audit -------------------------------------------------------------------- */

static void audit(struct gp_rem *r, const struct event *ev, const struct outcome *oc,
                  char argv[][GP_REM_ARG_LEN], unsigned argc, int64_t at_ms)
{
    char *cmd = NULL;
    if (oc->command_json) {
        cmd = strdup(oc->command_json);
    } else if (argv) {
        json_t *a = json_array();
        for (unsigned i = 0; a && i < argc; i++)
            json_array_append_new(a, json_string(argv[i]));
        cmd = a ? json_dumps(a, JSON_COMPACT) : NULL;
        json_decref(a);
    }
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(
        r->db,
        "INSERT INTO audit(at_ms, alert_id, kind, severity, node, gpu, job, rank, decision, command,"
        " exit_status, stderr, detail, duration_ms, action, reason)"
        " VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, at_ms);
        sqlite3_bind_text(st, 2, ev->id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, ev->kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, gp_severity_names[ev->severity], -1, SQLITE_STATIC);
        const char *txt[3] = {ev->key.node, ev->key.gpu, ev->key.job};
        for (int i = 0; i < 3; i++)
            if (txt[i][0])
                sqlite3_bind_text(st, 5 + i, txt[i], -1, SQLITE_STATIC);
        if (ev->key.rank >= 0)
            sqlite3_bind_int64(st, 8, ev->key.rank);
        sqlite3_bind_text(st, 9, oc->decision, -1, SQLITE_STATIC);
        if (cmd)
            sqlite3_bind_text(st, 10, cmd, -1, SQLITE_STATIC);
        if (oc->exit_status >= 0)
            sqlite3_bind_int(st, 11, oc->exit_status);
        if (oc->stderr_line[0])
            sqlite3_bind_text(st, 12, oc->stderr_line, -1, SQLITE_STATIC);
        if (oc->detail[0])
            sqlite3_bind_text(st, 13, oc->detail, -1, SQLITE_STATIC);
        if (oc->duration_ms >= 0)
            sqlite3_bind_int64(st, 14, oc->duration_ms);
        sqlite3_bind_text(st, 15, gp_rem_action_names[oc->action], -1, SQLITE_STATIC);
        if (ev->reason[0])
            sqlite3_bind_text(st, 16, ev->reason, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        pthread_mutex_lock(&r->mu);
        r->st.audit_errors++;
        pthread_mutex_unlock(&r->mu);
        gp_log(GP_LOG_ERROR, "remediate", "cannot write audit row", "err=\"%s\"", sqlite3_errmsg(r->db));
    }
    char q[300];
    gp_log(GP_LOG_INFO, "remediate", "decision",
           "kind=%s node=%s action=%s decision=%s command=%s exit=%d", ev->kind,
           ev->key.node[0] ? ev->key.node : "-", gp_rem_action_names[oc->action], oc->decision,
           gp_log_quote(q, sizeof q, cmd ? cmd : ""), oc->exit_status);
    free(cmd);
}

/* Counts and logs a refusal (the audit row follows). */
static void refuse(struct gp_rem *r, const struct event *ev, size_t reason, const char *detail)
{
    pthread_mutex_lock(&r->mu);
    r->st.refused[reason]++;
    pthread_mutex_unlock(&r->mu);
    char q[300];
    gp_log(GP_LOG_WARN, "remediate", "remediation refused, nothing was run",
           "kind=%s alert=%s reason=%s detail=%s", ev->kind, ev->id, gp_rem_refusal_names[reason],
           gp_log_quote(q, sizeof q, detail));
}

/* --- the circuit breaker (remediate.h "Circuit breaker"); under mu ---------- */

static unsigned breaker_limit(const struct gp_rem *r)
{
    unsigned lim = r->o.breaker_max_nodes;
    if (r->o.breaker_max_percent > 0 && r->fleet) {
        double p = r->o.breaker_max_percent * r->fleet / 100.0 + 1e-9;
        unsigned n = p < 1 ? 1 : (unsigned)p;
        if (n < lim)
            lim = n;
    }
    return lim;
}

/* Nodes acted on in the hour before now; *slot: node's entry, else the
 * entry to reuse (free, expired or oldest). */
static unsigned breaker_count(struct gp_rem *r, int64_t now, const char *node, struct acted **slot)
{
    unsigned n = 0;
    struct acted *mine = NULL, *reuse = &r->acted[0];
    for (size_t i = 0; i < GP_REM_BREAKER_NODES; i++) {
        struct acted *a = &r->acted[i];
        bool live = a->node[0] && a->at > now - HOUR_MS;
        n += live;
        if (a->node[0] && !strcmp(a->node, node))
            mine = a;
        if (!live ? reuse->node[0] && reuse->at > now - HOUR_MS : a->at < reuse->at)
            reuse = a;
    }
    *slot = mine ? mine : reuse;
    return n;
}

/* True when node may be acted on now (and notes it); else records the
 * refusal and writes why into detail. */
static bool breaker_pass(struct gp_rem *r, const char *node, int64_t now, char *detail, size_t len)
{
    pthread_mutex_lock(&r->mu);
    struct acted *slot;
    unsigned n = breaker_count(r, now, node, &slot), lim = breaker_limit(r);
    bool known = slot->node[0] && !strcmp(slot->node, node) && slot->at > now - HOUR_MS;
    bool pass = known || n < lim;
    if (pass) {
        snprintf(slot->node, sizeof slot->node, "%s", node);
        slot->at = now;
    } else {
        r->tripped_ms = now;
        r->st.breaker_refused++;
        snprintf(detail, len,
                 "circuit breaker open: %u %s acted on in the last hour, at most %u (%u nodes "
                 "or %g%% of %u in the fleet)",
                 n, gp_plural(n, "node", "nodes"), lim, r->o.breaker_max_nodes,
                 r->o.breaker_max_percent, r->fleet);
    }
    pthread_mutex_unlock(&r->mu);
    if (!pass)
        gp_log(GP_LOG_WARN, "remediate", "circuit breaker open, nothing was done", "node=%s acted=%u limit=%u",
               node, n, lim);
    return pass;
}

/* --- built-in actions ----------------------------------------------------------- */

/* The taint's value from kind: a label value ([A-Za-z0-9._-], at most 63,
 * alphanumeric at both ends). */
static void taint_value(const char *kind, char out[64])
{
    size_t n = 0;
    for (const char *p = kind; *p && n < 63; p++)
        out[n++] = alnum(*p) || *p == '.' || *p == '_' || *p == '-' ? *p : '.';
    while (n && !alnum(out[n - 1]))
        n--;
    out[n] = '\0';
    if (!n)
        snprintf(out, 64, "gpulse");
}

/* argv of scontrol for node: drain (with the reason) or resume. */
static unsigned slurm_argv(struct gp_rem *r, char argv[][GP_REM_ARG_LEN], const char *node, bool drain,
                           const struct event *ev)
{
    snprintf(argv[0], GP_REM_ARG_LEN, "%.255s", r->scontrol[0] ? r->scontrol : "scontrol");
    snprintf(argv[1], GP_REM_ARG_LEN, "update");
    snprintf(argv[2], GP_REM_ARG_LEN, "nodename=%s", node);
    snprintf(argv[3], GP_REM_ARG_LEN, "state=%s", drain ? "drain" : "resume");
    if (!drain)
        return 4;
    char why[200];
    printable(ev->reason, why, sizeof why);
    snprintf(argv[4], GP_REM_ARG_LEN, "reason=gpulse %.60s%s%.150s", ev->kind, why[0] ? ": " : "", why);
    return 5;
}

/* The Kubernetes action; a dry run only says what it would do. */
static void k8s_act(struct gp_rem *r, const struct event *ev, bool cordon, struct outcome *oc,
                    char **cmd_json)
{
    char value[64];
    taint_value(ev->kind, value);
    struct gp_rem_k8s_result kr;
    if (r->o.dry_run) {
        json_t *a = json_pack("[s, s, s, s]", "kubernetes", cordon ? "cordon" : "uncordon", ev->key.node,
                              cordon ? "taint" : "untaint");
        char t[400];
        snprintf(t, sizeof t, "%s%s%s%s", r->k8s_taint, cordon ? "=" : "", cordon ? value : "",
                 cordon ? ":NoSchedule" : "");
        json_array_append_new(a, json_string(t));
        *cmd_json = json_dumps(a, JSON_COMPACT);
        json_decref(a);
        oc->decision = "dry_run";
        snprintf(oc->detail, sizeof oc->detail, "remediation_dry_run is on: nothing was done");
        return;
    }
    int rc = gp_rem_k8s_node(&r->o.k8s, ev->key.node, cordon, value, r->o.timeout_ms, &kr);
    json_t *a = json_pack("[s, s]", kr.body[0] ? "PATCH" : "GET", kr.url);
    if (kr.body[0])
        json_array_append_new(a, json_string(kr.body));
    *cmd_json = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    oc->decision = rc ? "failed" : "ran";
    oc->exit_status = -1;
    oc->duration_ms = kr.duration_ms;
    if (rc)
        snprintf(oc->detail, sizeof oc->detail, "%s", kr.detail);
    else
        snprintf(oc->detail, sizeof oc->detail, "HTTP %d", kr.http_status);
}

/* Runs (or, in shadow mode, describes) a built-in action and audits it. */
static void act_builtin(struct gp_rem *r, const struct event *ev, enum gp_rem_action act, int64_t now)
{
    struct outcome oc = {.exit_status = -1, .duration_ms = -1, .action = act};
    char (*argv)[GP_REM_ARG_LEN] = r->argv;
    if (act == GP_REM_K8S_CORDON || act == GP_REM_K8S_UNCORDON) {
        char *cmd = NULL;
        k8s_act(r, ev, act == GP_REM_K8S_CORDON, &oc, &cmd);
        oc.command_json = cmd;
        audit(r, ev, &oc, NULL, 0, now);
        free(cmd);
        return;
    }
    unsigned argc = slurm_argv(r, argv, ev->key.node, act == GP_REM_SLURM_DRAIN, ev);
    if (r->o.dry_run) {
        oc.decision = "dry_run";
        snprintf(oc.detail, sizeof oc.detail, "remediation_dry_run is on: nothing was run");
    } else {
        run_command(argv, argc, r->o.timeout_ms, &oc);
    }
    audit(r, ev, &oc, argv, argc, now);
}

/* Decides what to do with one alert event, does it, audits it. */
static void handle(struct gp_rem *r, const struct event *ev)
{
    const struct gp_rem_rule *rule = NULL;
    for (size_t i = 0; i < r->o.nrules; i++)
        if (!strcmp(r->rules[i].kind, ev->kind))
            rule = &r->rules[i];
    if (!rule)
        return;
    struct outcome oc = {.exit_status = -1, .duration_ms = -1, .action = rule->action};
    int64_t now = ev->at_ms;
    char (*argv)[GP_REM_ARG_LEN] = r->argv; /* the worker's alone */
    if (ev->silenced) {
        oc.decision = "skipped";
        snprintf(oc.detail, sizeof oc.detail, "the alert is silenced");
        audit(r, ev, &oc, NULL, 0, now);
        return;
    }
    unsigned argc = rule->argc;
    if (rule->action != GP_REM_COMMAND) {
        const char *why = gp_rem_value_problem("node", ev->key.node);
        if (why) {
            oc.decision = "refused";
            snprintf(oc.detail, sizeof oc.detail, "label node: %s", why);
            refuse(r, ev, 0, oc.detail);
            audit(r, ev, &oc, NULL, 0, now);
            return;
        }
        argc = 0;
    } else {
        struct gp_alert_event e = {.id = ev->id, .kind = ev->kind, .severity = ev->severity,
                                   .key = &ev->key};
        int bad;
        if (gp_rem_expand(rule, &e, argv, &bad, oc.detail, sizeof oc.detail)) {
            oc.decision = "refused";
            refuse(r, ev, bad >= 0 ? (size_t)bad : GP_REM_REFUSE_LONG, oc.detail);
            audit(r, ev, &oc, NULL, 0, now);
            return;
        }
        if (gp_rem_check_paths(rule, argv, r->o.path_root, oc.detail, sizeof oc.detail)) {
            oc.decision = "refused";
            refuse(r, ev, GP_REM_REFUSE_PATH, oc.detail);
            audit(r, ev, &oc, argv, rule->argc, now);
            return;
        }
    }
    struct rate *kr = rate_of(r->kind_rates, ev->kind, "");
    struct rate *nr = rate_of(r->node_rates, ev->kind, ev->key.node);
    unsigned kc = rate_count(kr, now), nc = rate_count(nr, now);
    if (nc >= r->o.max_per_hour || kc >= r->o.max_per_kind_per_hour) {
        oc.decision = "rate_limited";
        if (nc >= r->o.max_per_hour)
            snprintf(oc.detail, sizeof oc.detail, "%u %s for %s on node '%s' in the last hour (at most %u)",
                     nc, gp_plural(nc, "action", "actions"), ev->kind, ev->key.node, r->o.max_per_hour);
        else
            snprintf(oc.detail, sizeof oc.detail, "%u %s for %s in the last hour (at most %u)", kc,
                     gp_plural(kc, "action", "actions"), ev->kind, r->o.max_per_kind_per_hour);
        audit(r, ev, &oc, argc ? argv : NULL, argc, now);
        return;
    }
    if (!breaker_pass(r, ev->key.node, now, oc.detail, sizeof oc.detail)) {
        oc.decision = "breaker_open";
        audit(r, ev, &oc, argc ? argv : NULL, argc, now);
        return;
    }
    rate_note(kr, now);
    rate_note(nr, now);
    if (rule->action != GP_REM_COMMAND) {
        act_builtin(r, ev, rule->action, now);
        return;
    }
    if (r->o.dry_run) {
        oc.decision = "dry_run";
        snprintf(oc.detail, sizeof oc.detail, "remediation_dry_run is on: nothing was run");
        audit(r, ev, &oc, argv, rule->argc, now);
        return;
    }
    run_command(argv, rule->argc, r->o.timeout_ms, &oc);
    audit(r, ev, &oc, argv, rule->argc, now);
}

/* True when the node's newest drain-or-resume (cordon-or-uncordon) row
 * that acted (or, in shadow mode, would have) is gpulse's drain (cordon). */
static bool undo_due(struct gp_rem *r, const char *node, enum gp_rem_action did, enum gp_rem_action undo)
{
    sqlite3_stmt *st = NULL;
    bool due = false;
    if (sqlite3_prepare_v2(r->db,
                           "SELECT action FROM audit WHERE node = ?1 AND action IN (?2, ?3)"
                           " AND (decision = 'ran' OR (?4 AND decision = 'dry_run'))"
                           " ORDER BY id DESC LIMIT 1",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, gp_rem_action_names[did], -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, gp_rem_action_names[undo], -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 4, r->o.dry_run);
        due = sqlite3_step(st) == SQLITE_ROW &&
              !strcmp((const char *)sqlite3_column_text(st, 0), gp_rem_action_names[did]);
    }
    sqlite3_finalize(st);
    return due;
}

/* A node marked healthy: undo what gpulse did to it (remediate.h). */
static void handle_healthy(struct gp_rem *r, const struct event *ev)
{
    static const enum gp_rem_action pairs[][2] = {{GP_REM_SLURM_DRAIN, GP_REM_SLURM_RESUME},
                                                  {GP_REM_K8S_CORDON, GP_REM_K8S_UNCORDON}};
    for (size_t p = 0; p < 2; p++) {
        if (!undo_due(r, ev->key.node, pairs[p][0], pairs[p][1]))
            continue;
        if (!r->o.undo_on_healthy) {
            struct outcome oc = {.exit_status = -1, .duration_ms = -1, .action = pairs[p][1],
                                 .decision = "skipped"};
            snprintf(oc.detail, sizeof oc.detail, "remediation_undo_on_healthy is off: undo by hand");
            audit(r, ev, &oc, NULL, 0, ev->at_ms);
            continue;
        }
        act_builtin(r, ev, pairs[p][1], ev->at_ms);
    }
}

static void *worker(void *arg)
{
    struct gp_rem *r = arg;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!r->qlen && !r->stop)
            pthread_cond_wait(&r->cv, &r->mu);
        if (!r->qlen && r->stop)
            break;
        struct event ev = r->q[r->qhead];
        r->qhead = (r->qhead + 1) % GP_REM_QUEUE;
        r->qlen--;
        r->busy = true;
        pthread_mutex_unlock(&r->mu);
        if (ev.healthy)
            handle_healthy(r, &ev);
        else
            handle(r, &ev);
        pthread_mutex_lock(&r->mu);
        r->busy = false;
        r->st.decided++;
        pthread_cond_broadcast(&r->idle);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

void gp_rem_listener(void *ctx, const struct gp_alert_event *ev)
{
    struct gp_rem *r = ctx;
    if (!r || !ev || ev->to != GP_ALERT_FIRING || ev->from == GP_ALERT_FIRING || !ev->kind)
        return;
    bool known = false;
    for (size_t i = 0; i < r->o.nrules && !known; i++)
        known = !strcmp(r->rules[i].kind, ev->kind);
    if (!known)
        return;
    pthread_mutex_lock(&r->mu);
    if (r->qlen == GP_REM_QUEUE || r->stop) {
        r->st.dropped++;
        pthread_mutex_unlock(&r->mu);
        return;
    }
    struct event *e = &r->q[(r->qhead + r->qlen) % GP_REM_QUEUE];
    memset(e, 0, sizeof *e);
    snprintf(e->id, sizeof e->id, "%s", ev->id ? ev->id : "");
    snprintf(e->kind, sizeof e->kind, "%s", ev->kind);
    e->severity = (unsigned)ev->severity < GP_SEV__COUNT ? ev->severity : GP_SEV_WARNING;
    if (ev->key)
        e->key = *ev->key;
    else
        e->key.rank = -1;
    e->key.node[sizeof e->key.node - 1] = 0;
    e->key.gpu[sizeof e->key.gpu - 1] = 0;
    e->key.job[sizeof e->key.job - 1] = 0;
    e->at_ms = now_of(r); /* read here: the queue's wait is not the decision's time */
    e->silenced = ev->silenced;
    if (ev->summary)
        printable(ev->summary, e->reason, sizeof e->reason);
    r->qlen++;
    r->st.queued++;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

int gp_rem_node_healthy(struct gp_rem *r, const char *node, const char *by, const char *comment)
{
    if (!gp_rem_value_ok("node", node))
        return GP_EPARSE;
    pthread_mutex_lock(&r->mu);
    if (r->qlen == GP_REM_QUEUE || r->stop) {
        r->st.dropped++;
        pthread_mutex_unlock(&r->mu);
        return GP_ETOOBIG;
    }
    struct event *e = &r->q[(r->qhead + r->qlen) % GP_REM_QUEUE];
    memset(e, 0, sizeof *e);
    e->healthy = true;
    snprintf(e->kind, sizeof e->kind, "node_healthy");
    e->severity = GP_SEV_INFO;
    e->key.rank = -1;
    snprintf(e->key.node, sizeof e->key.node, "%s", node);
    char who[64], why[180];
    printable(by && by[0] ? by : "an operator", who, sizeof who);
    printable(comment ? comment : "", why, sizeof why);
    snprintf(e->reason, sizeof e->reason, "marked healthy by %.63s%s%.170s", who, why[0] ? ": " : "", why);
    e->at_ms = now_of(r);
    r->qlen++;
    r->st.queued++;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return GP_OK;
}

void gp_rem_breaker_state(struct gp_rem *r, struct gp_rem_breaker *out)
{
    int64_t now = now_of(r);
    pthread_mutex_lock(&r->mu);
    struct acted *slot;
    out->acted = breaker_count(r, now, "", &slot);
    out->limit = breaker_limit(r);
    out->fleet = r->fleet;
    out->tripped_ms = r->tripped_ms;
    pthread_mutex_unlock(&r->mu);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void gp_rem_tick(struct gp_rem *r, const struct gp_view *v, struct gp_alerts *a, int64_t now_ms)
{
    if (!r)
        return;
    /* distinct node names, sorted: a tick over 10,000 GPUs stays cheap */
    const char **names = v && v->ngpus ? malloc(v->ngpus * sizeof *names) : NULL;
    bool counted = v && (names || !v->ngpus);
    unsigned fleet = 0;
    if (names) {
        for (unsigned i = 0; i < v->ngpus; i++)
            names[i] = v->gpus[i].node;
        qsort(names, v->ngpus, sizeof *names, cmp_names);
        for (unsigned i = 0; i < v->ngpus; i++)
            fleet += !i || strcmp(names[i], names[i - 1]) != 0;
        free(names);
    }
    struct gp_rem_breaker b;
    pthread_mutex_lock(&r->mu);
    if (counted)
        r->fleet = fleet; /* out of memory: the last size stands */
    pthread_mutex_unlock(&r->mu);
    gp_rem_breaker_state(r, &b);
    if (!a || !b.tripped_ms || b.tripped_ms <= now_ms - HOUR_MS)
        return; /* not observed: a firing alert resolves */
    struct gp_alert_params p = {.kind = GP_REM_BREAKER_KIND, .severity = GP_SEV_CRITICAL};
    struct gp_observation o = {.key = {.det = GP_DET__COUNT, .rank = -1}, .bad = true,
                               .value = b.acted};
    snprintf(o.summary, sizeof o.summary,
             "remediation circuit breaker open: %u of %u nodes acted on in the last hour, at most %u; "
             "nothing more is done",
             b.acted, b.fleet, b.limit);
    snprintf(o.evidence, sizeof o.evidence,
             "%u nodes acted on in the last hour (dry runs included); limit %u = the smaller of "
             "remediation_breaker_max_nodes and remediation_breaker_max_percent of %u nodes; "
             "newest refusal at %lld ms; see GET /api/v1/audit?decision=breaker_open",
             b.acted, b.limit, b.fleet, (long long)b.tripped_ms);
    gp_alerts_observe(a, &p, &o);
}

void gp_rem_flush(struct gp_rem *r)
{
    pthread_mutex_lock(&r->mu);
    while (r->qlen || r->busy)
        pthread_cond_wait(&r->idle, &r->mu);
    pthread_mutex_unlock(&r->mu);
}

void gp_rem_stats(struct gp_rem *r, struct gp_rem_stats *out)
{
    pthread_mutex_lock(&r->mu);
    *out = r->st;
    pthread_mutex_unlock(&r->mu);
}

int gp_rem_open(struct gp_rem **out, const char *dir, const struct gp_rem_opts *o, char *err,
                size_t errlen)
{
    *out = NULL;
    if (o->nrules > GP_REM_MAX_RULES)
        return gp_seterr(err, errlen, GP_EUSAGE, "more than %d remediation entries", GP_REM_MAX_RULES);
    if (o->max_per_hour < 1 || o->max_per_hour > GP_REM_RATE_MAX || o->max_per_kind_per_hour < 1 ||
        o->max_per_kind_per_hour > GP_REM_RATE_MAX)
        return gp_seterr(err, errlen, GP_EUSAGE, "remediation rate limits must be between 1 and %d",
                         GP_REM_RATE_MAX);
    if (o->timeout_ms < 1)
        return gp_seterr(err, errlen, GP_EUSAGE, "remediation timeout must be positive");
    if (o->breaker_max_nodes > GP_REM_BREAKER_NODES ||
        !(o->breaker_max_percent >= 0 && o->breaker_max_percent <= 100))
        return gp_seterr(err, errlen, GP_EUSAGE,
                         "remediation breaker: at most 0-%d nodes and 0-100 %% of the fleet",
                         GP_REM_BREAKER_NODES);
    struct gp_rem *r = calloc(1, sizeof *r);
    if (!r)
        return gp_seterr(err, errlen, GP_ENOMEM, "out of memory");
    r->o = *o;
    if (!r->o.breaker_max_nodes)
        r->o.breaker_max_nodes = GP_REM_BREAKER_NODES;
    for (size_t i = 0; i < o->nrules; i++)
        r->rules[i] = o->rules[i];
    r->o.rules = r->rules;
    if (o->path_root && o->path_root[0]) {
        if (o->path_root[0] != '/' || strlen(o->path_root) >= sizeof r->path_root) {
            free(r);
            return gp_seterr(err, errlen, GP_EUSAGE,
                             "remediation_path_root must be an absolute path shorter than %d bytes",
                             (int)sizeof r->path_root);
        }
        snprintf(r->path_root, sizeof r->path_root, "%s", o->path_root);
        r->o.path_root = r->path_root;
    } else {
        r->o.path_root = NULL;
    }
    if (o->scontrol && strlen(o->scontrol) >= sizeof r->scontrol) {
        free(r);
        return gp_seterr(err, errlen, GP_EUSAGE, "remediation_scontrol is longer than %d bytes",
                         (int)sizeof r->scontrol - 1);
    }
    /* the strings the worker reads later are its own copies */
    snprintf(r->scontrol, sizeof r->scontrol, "%s", o->scontrol ? o->scontrol : "");
    snprintf(r->k8s_api, sizeof r->k8s_api, "%s", o->k8s.api ? o->k8s.api : "");
    snprintf(r->k8s_token, sizeof r->k8s_token, "%s", o->k8s.token_file ? o->k8s.token_file : "");
    snprintf(r->k8s_ca, sizeof r->k8s_ca, "%s", o->k8s.ca_file ? o->k8s.ca_file : "");
    snprintf(r->k8s_taint, sizeof r->k8s_taint, "%s",
             o->k8s.taint_key && o->k8s.taint_key[0] ? o->k8s.taint_key : "gpulse.io/unhealthy");
    r->o.scontrol = r->scontrol;
    r->o.k8s = (struct gp_rem_k8s){r->k8s_api, r->k8s_token, r->k8s_ca, r->k8s_taint};
    int rc = gp_state_open(&r->db, dir, err, errlen);
    if (rc) {
        free(r);
        return rc;
    }
    if (gp_httpc_global_init()) {
        gp_state_close(r->db);
        free(r);
        return gp_seterr(err, errlen, GP_EINTERNAL, "cannot set up the HTTP client");
    }
    r->http = true;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    pthread_cond_init(&r->idle, NULL);
    if (pthread_create(&r->th, NULL, worker, r)) {
        gp_rem_close(r);
        return gp_seterr(err, errlen, GP_ENOMEM, "cannot start the remediation worker");
    }
    r->started = true;
    *out = r;
    return GP_OK;
}

void gp_rem_close(struct gp_rem *r)
{
    if (!r)
        return;
    if (r->started) {
        pthread_mutex_lock(&r->mu);
        r->stop = true;
        pthread_cond_signal(&r->cv);
        pthread_mutex_unlock(&r->mu);
        pthread_join(r->th, NULL);
    }
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    pthread_cond_destroy(&r->idle);
    gp_state_close(r->db);
    if (r->http)
        gp_httpc_global_cleanup();
    free(r);
}

/* --- GET /api/v1/audit -------------------------------------------------------- */

static json_t *col(sqlite3_stmt *st, int i)
{
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER:
        return json_integer(sqlite3_column_int64(st, i));
    case SQLITE_TEXT:
        return json_string((const char *)sqlite3_column_text(st, i));
    default:
        return json_null();
    }
}

int gp_rem_audit_json(struct gp_rem *r, const struct gp_audit_filter *f, struct gp_buf *out)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(r->db,
                           "SELECT id, at_ms, alert_id, kind, severity, node, gpu, job, rank, decision,"
                           " command, exit_status, stderr, detail, duration_ms, action, reason FROM audit"
                           " WHERE (?1 IS NULL OR kind = ?1) AND (?2 IS NULL OR node = ?2)"
                           " AND (?3 IS NULL OR job = ?3) AND (?4 IS NULL OR decision = ?4)"
                           " AND at_ms >= ?5 ORDER BY at_ms DESC, id DESC LIMIT ?6",
                           -1, &st, NULL) != SQLITE_OK)
        return GP_EIO;
    const char *txt[4] = {f->kind, f->node, f->job, f->decision};
    for (int i = 0; i < 4; i++)
        if (txt[i])
            sqlite3_bind_text(st, i + 1, txt[i], -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, f->since_ms);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)f->limit);
    json_t *arr = json_array();
    int rc = arr ? SQLITE_ROW : SQLITE_NOMEM;
    static const char *const names[] = {"id",     "at",      "alert_id", "kind",     "severity",
                                        "node",   "gpu",     "job",      "rank",     "decision",
                                        "command", "exit_status", "stderr", "detail",
                                        "duration_seconds", "action", "reason"};
    while (arr && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *o = json_object();
        if (!o || json_array_append_new(arr, o)) {
            rc = SQLITE_NOMEM;
            break;
        }
        for (int i = 0; i < 17; i++) {
            json_t *v;
            if (i == 1)
                v = json_real((double)sqlite3_column_int64(st, i) / 1000.0);
            else if (i == 14 && sqlite3_column_type(st, i) == SQLITE_INTEGER)
                v = json_real((double)sqlite3_column_int64(st, i) / 1000.0);
            else if (i == 10 && sqlite3_column_type(st, i) == SQLITE_TEXT)
                v = json_loads((const char *)sqlite3_column_text(st, i), 0, NULL);
            else
                v = col(st, i);
            if (json_object_set_new(o, names[i], v ? v : json_null())) {
                rc = SQLITE_NOMEM;
                break;
            }
        }
        if (rc == SQLITE_NOMEM)
            break;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        json_decref(arr);
        return rc == SQLITE_NOMEM ? GP_ENOMEM : GP_EIO;
    }
    char *s = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    if (!s)
        return GP_ENOMEM;
    size_t mark = out->len;
    gp_buf_puts(out, "{\"status\":\"success\",\"data\":");
    gp_buf_puts(out, s);
    gp_buf_puts(out, "}\n");
    free(s);
    if (out->err) {
        out->len = mark;
        return out->err;
    }
    return GP_OK;
}
