/*
 * test_remediate.c - remediation hooks: the template parser, placeholder
 * substitution against hostile label values, rate limits on a fake
 * clock, dry runs, real commands (success, failure, missing, timeout),
 * silenced and non-firing transitions, and the audit rows. The built-in
 * actions (issue 20): Slurm drain and resume against a stand-in scontrol
 * that records its arguments, Kubernetes cordon and uncordon against
 * tests/integration/k8s_api_standin.py, shadow mode acting on nothing,
 * and the circuit breaker tripping with 20 nodes failing at once.
 */
#include "insight/alert_event.h"
#include "insight/alerts.h"
#include "insight/remediate.h"
#include "insight/view.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "test.h"

#include <jansson.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void test_parse(void)
{
    struct gp_rem_rule r;
    char err[256];
    CHECK_INT(gp_rem_parse_rule("gpu_hardware_errors=scontrol update nodename={node} state=drain "
                                "reason=\"gpulse {kind}\"",
                                &r, err, sizeof err),
              GP_OK);
    CHECK_STR(r.kind, "gpu_hardware_errors");
    CHECK_INT(r.argc, 5);
    CHECK_STR(r.argv[0], "scontrol");
    CHECK_STR(r.argv[2], "nodename={node}");
    CHECK_STR(r.argv[4], "reason=gpulse {kind}");
    CHECK_INT(gp_rem_parse_rule("k=a 'b c' \"d \\\"e\\\\\" f\\ g", &r, err, sizeof err), GP_OK);
    CHECK_INT(r.argc, 4);
    CHECK_STR(r.argv[1], "b c");
    CHECK_STR(r.argv[2], "d \"e\\");
    CHECK_STR(r.argv[3], "f g");
    const char *bad[] = {"", "=cmd", "k=", "k=   ", "k=cmd {host}", "k={node} x", "k=-rf /",
                         "k=cmd \"open", "k=cmd 'open", "k=cmd\nrm", "k=cmd \\", "bad kind=cmd"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (gp_rem_parse_rule(bad[i], &r, err, sizeof err) != GP_ECONFIG)
            gp_test_fail(__FILE__, __LINE__, "accepted '%s'", bad[i]);
    CHECK_INT(gp_rem_parse_rule("k=cmd {host}", &r, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "unknown placeholder");
}

static struct gp_obs_key key(const char *node, const char *gpu, const char *job, int rank)
{
    struct gp_obs_key k = {.det = GP_DET_HW_ERRORS, .rank = rank};
    snprintf(k.node, sizeof k.node, "%s", node);
    snprintf(k.gpu, sizeof k.gpu, "%s", gpu);
    snprintf(k.job, sizeof k.job, "%s", job);
    return k;
}

static void test_expand_hostile_values(void)
{
    struct gp_rem_rule r;
    char err[256], out[GP_REM_MAX_ARGS][GP_REM_ARG_LEN];
    CHECK_INT(gp_rem_parse_rule("k=drain {node} gpu={gpu} --job={job} r{rank} {kind} {severity}", &r, err,
                                sizeof err),
              GP_OK);
    struct gp_obs_key k = key("n1.example", "1", "bert-1@host", 3);
    struct gp_alert_event ev = {.kind = "k", .severity = GP_SEV_CRITICAL, .key = &k,
                                .to = GP_ALERT_FIRING};
    CHECK_INT(gp_rem_expand(&r, &ev, out, NULL, err, sizeof err), GP_OK);
    CHECK_STR(out[1], "n1.example");
    CHECK_STR(out[2], "gpu=1");
    CHECK_STR(out[3], "--job=bert-1@host");
    CHECK_STR(out[4], "r3");
    CHECK_STR(out[5], "k");
    CHECK_STR(out[6], "critical");
    const char *hostile[] = {"a b", "a\"b", "a'b", "-rf", "--force", "a;rm -rf /", "$(reboot)", "`id`",
                             "a\nb", "", "a|b", "a>b", "a&b", "*"};
    for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
        CHECK(!gp_rem_value_ok("node", hostile[i]) && !gp_rem_value_ok("job", hostile[i]));
        k = key(hostile[i], "0", "j", 0);
        int bad = -2;
        if (gp_rem_expand(&r, &ev, out, &bad, err, sizeof err) != GP_EPARSE)
            gp_test_fail(__FILE__, __LINE__, "node '%s' was substituted", hostile[i]);
        CHECK_CONTAINS(err, "label node");
        CHECK_INT(bad, 0);
        k = key("n1", "0", hostile[i], 0);
        CHECK_INT(gp_rem_expand(&r, &ev, out, &bad, err, sizeof err), GP_EPARSE);
        CHECK_INT(bad, 2);
    }
    /* an unknown rank cannot be substituted */
    k = key("n1", "0", "j", -1);
    CHECK_INT(gp_rem_expand(&r, &ev, out, NULL, err, sizeof err), GP_EPARSE);
    CHECK_CONTAINS(err, "label rank");
    char longv[200];
    memset(longv, 'a', sizeof longv - 1);
    longv[sizeof longv - 1] = 0;
    CHECK(!gp_rem_value_ok("job", longv));
}

/* Every placeholder's own rule, class by class (issue 15: a job label
 * "../../../../tmp/x" used to reach a path). */
static void test_value_rules(void)
{
    static const struct {
        const char *ph, *v;
        bool ok;
    } cases[] = {
        /* node: RFC 1123 */
        {"node", "n1", true}, {"node", "gpu-node-07.cluster.example", true}, {"node", "A1-b2", true},
        {"node", "../../../../tmp/x", false}, {"node", "a/b", false}, {"node", ".hidden", false},
        {"node", "a..b", false}, {"node", "a.", false}, {"node", "-x", false}, {"node", "a-.b", false},
        {"node", "a_b", false}, {"node", "a b", false}, {"node", "a\nb", false}, {"node", "n\xc3\xa9", false},
        {"node", "host:9401", false}, {"node", "", false},
        {"node", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.b", false}, /* label of 64 */
        /* gpu: an index or a UUID */
        {"gpu", "0", true}, {"gpu", "17", true}, {"gpu", "GPU-8f2d1c3a-1b2c-4d5e-8f90-aabbccddeeff", true},
        {"gpu", "MIG-5c4f3e2d-1a2b-3c4d-5e6f-708192a3b4c5", true}, {"gpu", "01", false},
        {"gpu", "-1", false}, {"gpu", "0/1", false}, {"gpu", "GPU-", false}, {"gpu", "GPU-../x", false},
        {"gpu", "123456", false}, {"gpu", "nvidia0", false},
        /* job */
        {"job", "bert-1@host", true}, {"job", "pg-123@node1", true}, {"job", "pod-5c4f3e2d-1a2b", true},
        {"job", "12345", true}, {"job", "a.b_c:d+e", true}, {"job", "../../../../tmp/x", false},
        {"job", "a/b", false}, {"job", ".", false}, {"job", "..", false}, {"job", ".bashrc", false},
        {"job", "-rf", false}, {"job", "--force", false}, {"job", "a b", false}, {"job", "a\tb", false},
        {"job", "a\nb", false}, {"job", "a\x7f", false}, {"job", "caf\xc3\xa9", false},
        {"job", "\xe2\x80\xae", false}, {"job", "a*", false}, {"job", "~root", false}, {"job", "$HOME", false},
        /* rank */
        {"rank", "0", true}, {"rank", "2147483647", true}, {"rank", "-1", false}, {"rank", "07", false},
        {"rank", "1e3", false}, {"rank", "12345678901", false},
        /* kind */
        {"kind", "gpu_hardware_errors", true}, {"kind", "rule:HighTemp", true}, {"kind", "-x", false},
        {"kind", ".x", false}, {"kind", "a/b", false},
        /* severity */
        {"severity", "critical", true}, {"severity", "warning", true}, {"severity", "info", true},
        {"severity", "fatal", false}, {"severity", "critical ", false},
        {"nosuch", "x", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *why = gp_rem_value_problem(cases[i].ph, cases[i].v);
        if ((why == NULL) != cases[i].ok)
            gp_test_fail(__FILE__, __LINE__, "%s '%s': %s", cases[i].ph, cases[i].v,
                         why ? why : "accepted");
    }
}

/* remediation_path_root: paths built from placeholders are normalised,
 * their symbolic links resolved, and must stay in the root. */
static void test_path_root(void)
{
    const char *dir = gp_test_tmpdir();
    char root[200], line[1400], outside[300], link[300];
    snprintf(root, sizeof root, "%s/out", dir);
    CHECK_INT(mkdir(root, 0755), 0);
    snprintf(outside, sizeof outside, "%s/elsewhere", dir);
    CHECK_INT(mkdir(outside, 0755), 0);
    snprintf(link, sizeof link, "%s/escape", root);
    CHECK_INT(symlink(outside, link), 0);
    struct gp_rem_rule r;
    char err[512], out[GP_REM_MAX_ARGS][GP_REM_ARG_LEN];
    snprintf(line, sizeof line,
             "k=touch %s/{job}_{node} --out=%s/sub/../{job} %s/../out/{node} http://x/{job} %s/escape/{job}",
             root, root, root, root);
    CHECK_INT(gp_rem_parse_rule(line, &r, err, sizeof err), GP_OK);
    struct gp_obs_key k = key("n1", "0", "j1", 0);
    struct gp_alert_event ev = {.kind = "k", .severity = GP_SEV_CRITICAL, .key = &k};
    CHECK_INT(gp_rem_expand(&r, &ev, out, NULL, err, sizeof err), GP_OK);
    /* the first four stay in (a URL is no path); the symlink leaves */
    CHECK_INT(gp_rem_check_paths(&r, out, root, err, sizeof err), GP_EPARSE);
    CHECK_CONTAINS(err, "argument 5");
    CHECK_CONTAINS(err, "outside remediation_path_root");
    r.argc = 5;
    CHECK_INT(gp_rem_check_paths(&r, out, root, err, sizeof err), GP_OK);
    CHECK_INT(gp_rem_check_paths(&r, out, NULL, err, sizeof err), GP_OK);
    /* a template that climbs out itself, with a placeholder in it */
    snprintf(line, sizeof line, "k=touch %s/../{job}", root);
    CHECK_INT(gp_rem_parse_rule(line, &r, err, sizeof err), GP_OK);
    CHECK_INT(gp_rem_expand(&r, &ev, out, NULL, err, sizeof err), GP_OK);
    CHECK_INT(gp_rem_check_paths(&r, out, root, err, sizeof err), GP_EPARSE);
    /* a root that is a prefix of a sibling's name is no parent of it */
    snprintf(line, sizeof line, "k=touch %s-x/{job}", root);
    CHECK_INT(gp_rem_parse_rule(line, &r, err, sizeof err), GP_OK);
    CHECK_INT(gp_rem_expand(&r, &ev, out, NULL, err, sizeof err), GP_OK);
    CHECK_INT(gp_rem_check_paths(&r, out, root, err, sizeof err), GP_EPARSE);
}

/* --- the worker ---------------------------------------------------------- */

static int64_t fake_now;
static int64_t fake_clock(void *ctx)
{
    (void)ctx;
    return fake_now;
}

static struct gp_rem *open_rem(const char *const *lines, size_t n, bool dry, unsigned per_node,
                               unsigned per_kind, int64_t timeout_ms)
{
    static struct gp_rem_rule rules[GP_REM_MAX_RULES];
    char err[256];
    for (size_t i = 0; i < n; i++)
        if (gp_rem_parse_rule(lines[i], &rules[i], err, sizeof err))
            gp_test_fail(__FILE__, __LINE__, "%s", err);
    struct gp_rem_opts o = {.rules = rules, .nrules = n, .dry_run = dry, .max_per_hour = per_node,
                            .max_per_kind_per_hour = per_kind, .timeout_ms = timeout_ms,
                            .now_ms = fake_clock};
    struct gp_rem *r;
    if (gp_rem_open(&r, gp_test_tmpdir(), &o, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "%s", err);
    return r;
}

static void fire(struct gp_rem *r, const char *kind, const char *node, bool silenced)
{
    struct gp_obs_key k = key(node, "0", "job-1", 2);
    struct gp_alert_event ev = {.id = "9f2c41d0a3b5e617", .kind = kind, .severity = GP_SEV_CRITICAL,
                                .from = GP_ALERT_PENDING, .to = GP_ALERT_FIRING, .key = &k,
                                .silenced = silenced};
    gp_rem_listener(r, &ev);
}

/* The audit rows (newest first) as JSON; caller decrefs. */
static json_t *rows(struct gp_rem *r, const char *decision)
{
    gp_rem_flush(r);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    struct gp_audit_filter f = {.decision = decision, .since_ms = INT64_MIN, .limit = 100};
    CHECK_INT(gp_rem_audit_json(r, &f, &b), GP_OK);
    json_t *d = json_loadb(b.data, b.len, 0, NULL);
    gp_buf_free(&b);
    CHECK(d);
    json_t *data = json_incref(json_object_get(d, "data"));
    json_decref(d);
    CHECK(json_is_array(data));
    return data;
}

static const char *rs(const json_t *rows_, size_t i, const char *k)
{
    return json_string_value(json_object_get(json_array_get(rows_, i), k));
}

static void test_dry_run_and_rate_limits(void)
{
    const char *lines[] = {"gpu_hardware_errors=scontrol update nodename={node} state=drain "
                           "reason=\"gpulse {kind}\""};
    fake_now = 1000000000;
    struct gp_rem *r = open_rem(lines, 1, true, 1, 2, 5000);
    fire(r, "gpu_hardware_errors", "n1", false);
    fire(r, "gpu_hardware_errors", "n1", false);  /* same node within the hour */
    fire(r, "gpu_hardware_errors", "n2", false);  /* second for the kind */
    fire(r, "gpu_hardware_errors", "n3", false);  /* third for the kind: over 2 */
    fire(r, "memory_leak", "n1", false);          /* no command for it: nothing */
    json_t *a = rows(r, NULL);
    CHECK_INT(json_array_size(a), 4);
    /* newest first */
    CHECK_STR(rs(a, 0, "decision"), "rate_limited");
    CHECK_STR(rs(a, 0, "node"), "n3");
    CHECK_CONTAINS(rs(a, 0, "detail"), "2 actions for gpu_hardware_errors in the last hour (at most 2)");
    CHECK_STR(rs(a, 1, "decision"), "dry_run");
    CHECK_STR(rs(a, 2, "decision"), "rate_limited");
    CHECK_STR(rs(a, 2, "detail"), "1 action for gpu_hardware_errors on node 'n1' in the last hour (at most 1)");
    CHECK_STR(rs(a, 3, "decision"), "dry_run");
    const json_t *cmd = json_object_get(json_array_get(a, 3), "command");
    CHECK_INT(json_array_size(cmd), 5);
    CHECK_STR(json_string_value(json_array_get(cmd, 2)), "nodename=n1");
    CHECK_STR(json_string_value(json_array_get(cmd, 4)), "reason=gpulse gpu_hardware_errors");
    CHECK_STR(rs(a, 3, "job"), "job-1");
    CHECK_INT(json_integer_value(json_object_get(json_array_get(a, 3), "rank")), 2);
    CHECK(json_is_null(json_object_get(json_array_get(a, 3), "exit_status")));
    json_decref(a);
    /* an hour later the node may act again */
    fake_now += 3600 * 1000 + 1;
    fire(r, "gpu_hardware_errors", "n1", false);
    a = rows(r, "dry_run");
    CHECK_INT(json_array_size(a), 3);
    json_decref(a);
    struct gp_rem_stats st;
    gp_rem_stats(r, &st);
    CHECK_INT(st.queued, 5);
    CHECK_INT(st.decided, 5);
    gp_rem_close(r);
}

static void test_silenced_and_transitions(void)
{
    const char *lines[] = {"k=true"};
    struct gp_rem *r = open_rem(lines, 1, false, 5, 5, 5000);
    fire(r, "k", "n1", true);
    struct gp_obs_key kk = key("n1", "0", "j", 0);
    struct gp_alert_event ev = {.kind = "k", .from = GP_ALERT_FIRING, .to = GP_ALERT_RESOLVED, .key = &kk};
    gp_rem_listener(r, &ev);
    ev.from = GP_ALERT_PENDING;
    ev.to = GP_ALERT_PENDING;
    gp_rem_listener(r, &ev);
    json_t *a = rows(r, NULL);
    CHECK_INT(json_array_size(a), 1);
    CHECK_STR(rs(a, 0, "decision"), "skipped");
    CHECK(json_is_null(json_object_get(json_array_get(a, 0), "command")));
    json_decref(a);
    gp_rem_close(r);
}

static void test_hostile_label_refused(void)
{
    const char *lines[] = {"k=true {node}"};
    struct gp_rem *r = open_rem(lines, 1, false, 5, 5, 5000);
    fire(r, "k", "n1;reboot", false);
    fire(r, "k", "-rf", false);
    json_t *a = rows(r, "refused");
    CHECK_INT(json_array_size(a), 2);
    CHECK_CONTAINS(rs(a, 0, "detail"), "label node");
    json_decref(a);
    gp_rem_close(r);
}

/* The finding: a job label "../../../../tmp/x" with `touch DIR/{job}_{node}`
 * created a file outside DIR and was audited `ran`. Now each hostile
 * value is refused, audited with its reason, counted, and nothing is
 * created anywhere; a good value runs and lands inside DIR. */
static void test_traversal_creates_nothing_outside(void)
{
    const char *dir = gp_test_tmpdir();
    char out[600], line[1400];
    snprintf(out, sizeof out, "%s/a/b/c/out", dir);
    char cmd[800];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", out);
    CHECK_INT(system(cmd), 0);
    snprintf(line, sizeof line, "k=touch %s/{job}_{node}", out);
    static struct gp_rem_rule rules[1];
    char err[256];
    CHECK_INT(gp_rem_parse_rule(line, &rules[0], err, sizeof err), GP_OK);
    struct gp_rem_opts o = {.rules = rules, .nrules = 1, .dry_run = false, .max_per_hour = 64,
                            .max_per_kind_per_hour = 64, .timeout_ms = 5000, .path_root = out};
    struct gp_rem *r;
    CHECK_INT(gp_rem_open(&r, dir, &o, err, sizeof err), GP_OK);
    static const struct {
        const char *job, *node;
        const char *reason;
    } bad[] = {
        {"../../../../x", "n1", "job"}, {"../../../../tmp/x", "n1", "job"}, {"-rf", "n1", "job"},
        {"a\nb", "n1", "job"},          {"a b", "n1", "job"},               {"caf\xc3\xa9", "n1", "job"},
        {".x", "n1", "job"},             {"j", "../../x", "node"},           {"j", "n1/../../x", "node"},
        {"j", ".", "node"},
    };
    const size_t nbad = sizeof bad / sizeof bad[0];
    for (size_t i = 0; i < nbad; i++) {
        struct gp_obs_key k = key(bad[i].node, "0", bad[i].job, 0);
        char id[32];
        snprintf(id, sizeof id, "bad%zu", i);
        struct gp_alert_event ev = {.id = id, .kind = "k", .severity = GP_SEV_CRITICAL,
                                    .from = GP_ALERT_PENDING, .to = GP_ALERT_FIRING, .key = &k};
        gp_rem_listener(r, &ev);
    }
    struct gp_obs_key k = key("n1", "0", "good-job", 0);
    struct gp_alert_event ev = {.id = "good", .kind = "k", .severity = GP_SEV_CRITICAL,
                                .from = GP_ALERT_PENDING, .to = GP_ALERT_FIRING, .key = &k};
    gp_rem_listener(r, &ev);
    json_t *a = rows(r, "refused");
    CHECK_INT(json_array_size(a), nbad);
    for (size_t i = 0; i < nbad; i++) {
        const char *d = rs(a, nbad - 1 - i, "detail"); /* newest first */
        char want[32];
        snprintf(want, sizeof want, "label %s", bad[i].reason);
        if (!d || !strstr(d, want))
            gp_test_fail(__FILE__, __LINE__, "case %zu: detail '%s', want '%s'", i, d ? d : "(null)", want);
        CHECK(json_is_null(json_object_get(json_array_get(a, i), "command"))); /* nothing substituted */
    }
    json_decref(a);
    a = rows(r, "ran");
    CHECK_INT(json_array_size(a), 1);
    json_decref(a);
    struct gp_rem_stats st;
    gp_rem_stats(r, &st);
    CHECK_INT(st.refused[2], 7); /* job */
    CHECK_INT(st.refused[0], 3); /* node */
    gp_rem_close(r);
    /* only the good file exists, in out/; nothing anywhere else in the tree */
    snprintf(cmd, sizeof cmd, "cd '%s' && find . -type f ! -name 'state.db*' ! -name files.txt | sort > '%s/files.txt'", dir, dir);
    CHECK_INT(system(cmd), 0);
    char files[512] = "", fpath[700];
    snprintf(fpath, sizeof fpath, "%s/files.txt", dir);
    FILE *f = fopen(fpath, "r");
    CHECK(f);
    files[fread(files, 1, sizeof files - 1, f)] = 0;
    fclose(f);
    CHECK_STR(files, "./a/b/c/out/good-job_n1\n");
    struct stat sb;
    CHECK(stat("/tmp/x_n1", &sb) != 0 || sb.st_mtime < time(NULL) - 60);
}

static void test_real_commands(void)
{
    const char *dir = gp_test_tmpdir();
    char script[512], argsfile[600], line_ok[1400], line_fail[700], line_slow[700];
    snprintf(script, sizeof script, "%s/hook.sh", dir);
    snprintf(argsfile, sizeof argsfile, "%s/args.txt", dir);
    char body[1200];
    snprintf(body, sizeof body,
             "#!/bin/sh\nfor a in \"$@\"; do printf '%%s|' \"$a\" >> '%s'; done\n"
             "echo 'first line of stderr' >&2\necho second >&2\n"
             "if [ \"$1\" = fail ]; then exit 3; fi\nif [ \"$1\" = slow ]; then sleep 30; fi\nexit 0\n",
             argsfile);
    gp_test_write_file(dir, "hook.sh", body);
    CHECK_INT(chmod(script, 0755), 0);
    snprintf(line_ok, sizeof line_ok, "ok_kind=%s ok \"node {node}\" --gpu={gpu} {kind}", script);
    snprintf(line_fail, sizeof line_fail, "fail_kind=%s fail", script);
    snprintf(line_slow, sizeof line_slow, "slow_kind=%s slow", script);
    const char *lines[] = {line_ok, line_fail, line_slow, "false_kind=false", "missing_kind=/nonexistent/cmd"};
    struct gp_rem *r = open_rem(lines, 5, false, 5, 5, 500);
    fire(r, "ok_kind", "n1", false);
    json_t *a = rows(r, NULL);
    CHECK_STR(rs(a, 0, "decision"), "ran");
    CHECK_INT(json_integer_value(json_object_get(json_array_get(a, 0), "exit_status")), 0);
    CHECK_STR(rs(a, 0, "stderr"), "first line of stderr");
    json_decref(a);
    char args[256] = "";
    FILE *af = fopen(argsfile, "r");
    CHECK(af);
    args[fread(args, 1, sizeof args - 1, af)] = 0;
    fclose(af);
    CHECK_STR(args, "ok|node n1|--gpu=0|ok_kind|");
    fire(r, "fail_kind", "n1", false);
    fire(r, "false_kind", "n1", false);
    fire(r, "missing_kind", "n1", false);
    fire(r, "slow_kind", "n1", false);
    a = rows(r, NULL);
    CHECK_STR(rs(a, 0, "decision"), "timed_out");
    CHECK_CONTAINS(rs(a, 0, "detail"), "killed after 500 ms");
    double dur = json_number_value(json_object_get(json_array_get(a, 0), "duration_seconds"));
    CHECK(dur >= 0.5 && dur < 5);
    CHECK_STR(rs(a, 1, "decision"), "failed");
    CHECK_CONTAINS(rs(a, 1, "detail"), "cannot run '/nonexistent/cmd'");
    CHECK_STR(rs(a, 2, "decision"), "failed");
    CHECK_INT(json_integer_value(json_object_get(json_array_get(a, 2), "exit_status")), 1);
    CHECK_STR(rs(a, 3, "decision"), "failed");
    CHECK_INT(json_integer_value(json_object_get(json_array_get(a, 3), "exit_status")), 3);
    CHECK_STR(rs(a, 3, "stderr"), "first line of stderr");
    json_decref(a);
    gp_rem_close(r);
}

static void test_audit_filters(void)
{
    const char *lines[] = {"a=true", "b=true"};
    fake_now = 5000000;
    struct gp_rem *r = open_rem(lines, 2, true, 5, 5, 5000);
    fire(r, "a", "n1", false);
    fake_now = 6000000;
    fire(r, "b", "n2", false);
    gp_rem_flush(r);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    struct gp_audit_filter f = {.kind = "b", .since_ms = INT64_MIN, .limit = 10};
    CHECK_INT(gp_rem_audit_json(r, &f, &b), GP_OK);
    CHECK_CONTAINS(b.data, "\"kind\":\"b\"");
    CHECK(!strstr(b.data, "\"kind\":\"a\""));
    gp_buf_reset(&b);
    f = (struct gp_audit_filter){.since_ms = 5500000, .limit = 10};
    CHECK_INT(gp_rem_audit_json(r, &f, &b), GP_OK);
    CHECK_CONTAINS(b.data, "\"node\":\"n2\"");
    CHECK(!strstr(b.data, "\"node\":\"n1\""));
    CHECK_CONTAINS(b.data, "\"at\":6000");
    gp_buf_reset(&b);
    f = (struct gp_audit_filter){.node = "n1", .since_ms = INT64_MIN, .limit = 1};
    CHECK_INT(gp_rem_audit_json(r, &f, &b), GP_OK);
    CHECK_CONTAINS(b.data, "\"node\":\"n1\"");
    gp_buf_free(&b);
    CHECK_INT(gp_rem_decision_check("dry_run"), GP_OK);
    CHECK_INT(gp_rem_decision_check("drop"), GP_EPARSE);
    gp_rem_close(r);
}

static void test_open_checks_limits(void)
{
    char err[256];
    struct gp_rem *r;
    struct gp_rem_opts o = {.max_per_hour = 0, .max_per_kind_per_hour = 1, .timeout_ms = 1};
    CHECK_INT(gp_rem_open(&r, gp_test_tmpdir(), &o, err, sizeof err), GP_EUSAGE);
    o.max_per_hour = GP_REM_RATE_MAX + 1;
    CHECK_INT(gp_rem_open(&r, gp_test_tmpdir(), &o, err, sizeof err), GP_EUSAGE);
    o.max_per_hour = 1;
    o.timeout_ms = 0;
    CHECK_INT(gp_rem_open(&r, gp_test_tmpdir(), &o, err, sizeof err), GP_EUSAGE);
}

/* --- built-in actions (issue 20) ----------------------------------------- */

static void test_builtin_parse(void)
{
    struct gp_rem_rule r;
    char err[256];
    CHECK_INT(gp_rem_parse_rule("gpu_xid= @slurm-drain ", &r, err, sizeof err), GP_OK);
    CHECK_INT(r.action, GP_REM_SLURM_DRAIN);
    CHECK_INT(r.argc, 0);
    CHECK_INT(gp_rem_parse_rule("gpu_xid=@kubernetes-cordon", &r, err, sizeof err), GP_OK);
    CHECK_INT(r.action, GP_REM_K8S_CORDON);
    CHECK_INT(gp_rem_parse_rule("gpu_xid=scontrol update", &r, err, sizeof err), GP_OK);
    CHECK_INT(r.action, GP_REM_COMMAND);
    CHECK_INT(gp_rem_parse_rule("k=@slurm-drain now", &r, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "@slurm-drain takes no arguments");
    CHECK_INT(gp_rem_parse_rule("k=@reboot", &r, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "unknown built-in action '@reboot' (use @slurm-drain or @kubernetes-cordon)");
    CHECK_INT(gp_rem_parse_rule("k=@", &r, err, sizeof err), GP_ECONFIG);
}

/* A stand-in scontrol in dir that appends its arguments, '|'-separated,
 * one call a line, to dir/scontrol.log; its path into out. */
static void standin_scontrol(const char *dir, char *out, size_t len)
{
    char body[1024];
    snprintf(body, sizeof body,
             "#!/bin/sh\nfor a in \"$@\"; do printf '%%s|' \"$a\" >> '%s/scontrol.log'; done\n"
             "echo >> '%s/scontrol.log'\nexit 0\n",
             dir, dir);
    gp_test_write_file(dir, "scontrol", body);
    snprintf(out, len, "%s/scontrol", dir);
    CHECK_INT(chmod(out, 0755), 0);
}

/* The text of dir/name, "" when absent (static buffer). */
static const char *slurp(const char *dir, const char *name)
{
    static char text[65536];
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    text[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f) {
        text[fread(text, 1, sizeof text - 1, f)] = '\0';
        fclose(f);
    }
    return text;
}

static unsigned lines_of(const char *t)
{
    unsigned n = 0;
    for (; *t; t++)
        n += *t == '\n';
    return n;
}

static struct gp_rem *open_with(const char *const *lines, size_t n, const struct gp_rem_opts *base)
{
    static struct gp_rem_rule rules[GP_REM_MAX_RULES];
    char err[256];
    for (size_t i = 0; i < n; i++)
        if (gp_rem_parse_rule(lines[i], &rules[i], err, sizeof err))
            gp_test_fail(__FILE__, __LINE__, "%s", err);
    struct gp_rem_opts o = *base;
    o.rules = rules;
    o.nrules = n;
    o.now_ms = fake_clock;
    if (!o.max_per_hour)
        o.max_per_hour = 1;
    if (!o.max_per_kind_per_hour)
        o.max_per_kind_per_hour = GP_REM_RATE_MAX;
    if (!o.timeout_ms)
        o.timeout_ms = 5000;
    struct gp_rem *r;
    if (gp_rem_open(&r, gp_test_tmpdir(), &o, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "%s", err);
    return r;
}

static void fire_with(struct gp_rem *r, const char *kind, const char *node, const char *summary)
{
    struct gp_obs_key k = key(node, "3", "job-1", 0);
    struct gp_alert_event ev = {.id = "0123456789abcdef", .kind = kind, .severity = GP_SEV_CRITICAL,
                                .from = GP_ALERT_PENDING, .to = GP_ALERT_FIRING, .key = &k,
                                .summary = summary};
    gp_rem_listener(r, &ev);
}

static void test_slurm_drain_and_resume(void)
{
    const char *dir = gp_test_tmpdir();
    char sc[600];
    standin_scontrol(dir, sc, sizeof sc);
    const char *lines[] = {"gpu_xid=@slurm-drain"};
    fake_now = 2000000000;
    struct gp_rem_opts o = {.scontrol = sc, .breaker_max_nodes = 5, .undo_on_healthy = true};
    struct gp_rem *r = open_with(lines, 1, &o);
    fire_with(r, "gpu_xid", "gpu-node-7", "XID 79 on GPU 3: fallen off the bus\nreboot the node");
    json_t *a = rows(r, NULL);
    CHECK_INT(json_array_size(a), 1);
    CHECK_STR(rs(a, 0, "decision"), "ran");
    CHECK_STR(rs(a, 0, "action"), "slurm_drain");
    CHECK_STR(rs(a, 0, "reason"), "XID 79 on GPU 3: fallen off the bus?reboot the node");
    json_decref(a);
    CHECK_STR(slurp(dir, "scontrol.log"),
              "update|nodename=gpu-node-7|state=drain|reason=gpulse gpu_xid: XID 79 on GPU 3: fallen off "
              "the bus?reboot the node|\n");
    /* marked healthy: resumed, audited with the operator's words */
    fake_now += 60000;
    CHECK_INT(gp_rem_node_healthy(r, "gpu-node-7", "alice", "GPU 3 replaced"), GP_OK);
    a = rows(r, NULL);
    CHECK_INT(json_array_size(a), 2);
    CHECK_STR(rs(a, 0, "decision"), "ran");
    CHECK_STR(rs(a, 0, "action"), "slurm_resume");
    CHECK_STR(rs(a, 0, "kind"), "node_healthy");
    CHECK_STR(rs(a, 0, "reason"), "marked healthy by alice: GPU 3 replaced");
    json_decref(a);
    CHECK_CONTAINS(slurp(dir, "scontrol.log"), "\nupdate|nodename=gpu-node-7|state=resume|\n");
    /* marked healthy again: nothing of gpulse's is left to undo */
    CHECK_INT(gp_rem_node_healthy(r, "gpu-node-7", "alice", ""), GP_OK);
    /* a node gpulse never drained is not resumed */
    CHECK_INT(gp_rem_node_healthy(r, "gpu-node-8", "bob", ""), GP_OK);
    CHECK_INT(gp_rem_node_healthy(r, "bad node;", "bob", ""), GP_EPARSE);
    a = rows(r, NULL);
    CHECK_INT(json_array_size(a), 2);
    json_decref(a);
    CHECK_INT(lines_of(slurp(dir, "scontrol.log")), 2);
    /* an alert without a valid node is refused, nothing runs */
    fire_with(r, "gpu_xid", "", "x");
    a = rows(r, "refused");
    CHECK_INT(json_array_size(a), 1);
    CHECK_CONTAINS(rs(a, 0, "detail"), "label node: empty");
    json_decref(a);
    gp_rem_close(r);
}

static void test_undo_off_is_audited(void)
{
    const char *dir = gp_test_tmpdir();
    char sc[600];
    standin_scontrol(dir, sc, sizeof sc);
    const char *lines[] = {"gpu_xid=@slurm-drain"};
    struct gp_rem_opts o = {.scontrol = sc, .breaker_max_nodes = 5};
    struct gp_rem *r = open_with(lines, 1, &o);
    fire_with(r, "gpu_xid", "n1", "xid");
    CHECK_INT(gp_rem_node_healthy(r, "n1", "alice", "fixed"), GP_OK);
    json_t *a = rows(r, NULL);
    CHECK_INT(json_array_size(a), 2);
    CHECK_STR(rs(a, 0, "decision"), "skipped");
    CHECK_STR(rs(a, 0, "action"), "slurm_resume");
    CHECK_CONTAINS(rs(a, 0, "detail"), "remediation_undo_on_healthy is off");
    json_decref(a);
    CHECK_INT(lines_of(slurp(dir, "scontrol.log")), 1);
    gp_rem_close(r);
    /* the audit is durable: a restart reads the same rows */
    r = open_with(lines, 1, &o);
    a = rows(r, NULL);
    CHECK_INT(json_array_size(a), 2);
    CHECK_STR(rs(a, 1, "action"), "slurm_drain");
    CHECK_STR(rs(a, 1, "reason"), "xid");
    json_decref(a);
    gp_rem_close(r);
}

/* --- the stand-in API server ------------------------------------------------ */

struct standin {
    pid_t pid;
    char url[64], log[600];
};

/* Starts tests/integration/k8s_api_standin.py with nodes n1, n2, node-x
 * (node-x answers 409 once) and the token "tok-123"; the Nodes it ends
 * with and its request log go to $GPULSE_K8S_OUT when set
 * (test_remediate_k8s.sh validates the Nodes and checks the requests
 * against deploy/'s ClusterRole), else to the test's directory. */
static void standin_start(struct standin *k, const char *dir)
{
    char script[1024], port_file[600], token_file[600];
    const char *out = getenv("GPULSE_K8S_OUT");
    snprintf(script, sizeof script, "%s/../integration/k8s_api_standin.py", GP_TEST_DATA_DIR);
    snprintf(port_file, sizeof port_file, "%s/port", dir);
    snprintf(k->log, sizeof k->log, "%s/requests.jsonl", out ? out : dir);
    snprintf(token_file, sizeof token_file, "%s/token", dir);
    gp_test_write_file(dir, "token", "tok-123\n");
    char *const argv[] = {"python3", script, port_file, k->log, "--nodes", "n1,n2,node-x", "--token",
                          "tok-123", "--conflict-once", "node-x", "--out", (char *)(out ? out : dir),
                          NULL};
    /* no pipe of the runner's stays open in it, should this test fail
     * before standin_stop (the stand-in also ends when its parent does) */
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    int src = posix_spawnp(&k->pid, "python3", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    CHECK_INT(src, 0);
    for (int i = 0; i < 200; i++) {
        const char *p = slurp(dir, "port");
        if (p[0]) {
            snprintf(k->url, sizeof k->url, "http://127.0.0.1:%d", atoi(p));
            return;
        }
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    kill(k->pid, SIGKILL);
    waitpid(k->pid, NULL, 0);
    gp_test_fail(__FILE__, __LINE__, "the stand-in API server did not start");
}

static void standin_stop(struct standin *k)
{
    kill(k->pid, SIGTERM);
    waitpid(k->pid, NULL, 0);
}

/* Request i of the stand-in's log (caller decrefs); NULL past the end. */
static json_t *request(const struct standin *k, unsigned i)
{
    FILE *f = fopen(k->log, "r");
    if (!f)
        return NULL;
    char line[16384];
    json_t *j = NULL;
    for (unsigned n = 0; fgets(line, sizeof line, f); n++)
        if (n == i) {
            j = json_loads(line, 0, NULL);
            break;
        }
    fclose(f);
    return j;
}

static const char *js(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static void test_kubernetes_cordon(void)
{
    const char *dir = gp_test_tmpdir();
    struct standin k;
    standin_start(&k, dir);
    char token[600];
    snprintf(token, sizeof token, "%s/token", dir);
    const char *lines[] = {"gpu_row_remap_pending=@kubernetes-cordon"};
    struct gp_rem_opts o = {.breaker_max_nodes = 5, .undo_on_healthy = true,
                            .k8s = {.api = k.url, .token_file = token, .taint_key = "gpulse.io/unhealthy"}};
    fake_now = 3000000000;
    struct gp_rem *r = open_with(lines, 1, &o);
    fire_with(r, "gpu_row_remap_pending", "n1", "row remap pending on GPU 3: reset the GPU");
    json_t *a = rows(r, NULL);
    CHECK_STR(rs(a, 0, "decision"), "ran");
    CHECK_STR(rs(a, 0, "action"), "kubernetes_cordon");
    CHECK_STR(rs(a, 0, "detail"), "HTTP 200");
    const json_t *cmd = json_object_get(json_array_get(a, 0), "command");
    CHECK_STR(json_string_value(json_array_get(cmd, 0)), "PATCH");
    json_decref(a);
    /* GET the node, then PATCH it as a JSON merge patch with the token */
    json_t *g = request(&k, 0), *p = request(&k, 1), *none = request(&k, 2);
    CHECK(g && p && !none);
    CHECK_STR(js(g, "method"), "GET");
    CHECK_STR(js(g, "path"), "/api/v1/nodes/n1");
    CHECK_STR(js(g, "authorization"), "Bearer tok-123");
    CHECK_STR(js(p, "method"), "PATCH");
    CHECK_STR(js(p, "path"), "/api/v1/nodes/n1");
    CHECK_STR(js(p, "content_type"), "application/merge-patch+json");
    CHECK_STR(js(p, "authorization"), "Bearer tok-123");
    json_t *body = json_loads(js(p, "body"), 0, NULL);
    CHECK(body);
    CHECK_STR(json_string_value(json_object_get(json_object_get(body, "metadata"), "resourceVersion")), "41");
    json_t *spec = json_object_get(body, "spec");
    CHECK(json_is_true(json_object_get(spec, "unschedulable")));
    json_t *taints = json_object_get(spec, "taints");
    CHECK_INT(json_array_size(taints), 2);
    CHECK_STR(js(json_array_get(taints, 0), "key"), "nvidia.com/gpu"); /* the node's own is kept */
    CHECK_STR(js(json_array_get(taints, 1), "key"), "gpulse.io/unhealthy");
    CHECK_STR(js(json_array_get(taints, 1), "value"), "gpu_row_remap_pending");
    CHECK_STR(js(json_array_get(taints, 1), "effect"), "NoSchedule");
    json_decref(body);
    json_decref(g);
    json_decref(p);
    /* the node changed between GET and PATCH: 409, read again, patched */
    fire_with(r, "gpu_row_remap_pending", "node-x", "x");
    a = rows(r, NULL);
    CHECK_STR(rs(a, 0, "decision"), "ran");
    json_decref(a);
    json_t *last = request(&k, 5);
    CHECK(last);
    CHECK_STR(js(last, "method"), "PATCH");
    CHECK_CONTAINS(js(last, "body"), "\"resourceVersion\":\"42\"");
    json_decref(last);
    /* an unknown node: failed, the API's answer in the detail */
    fire_with(r, "gpu_row_remap_pending", "n9", "x");
    a = rows(r, NULL);
    CHECK_STR(rs(a, 0, "decision"), "failed");
    CHECK_CONTAINS(rs(a, 0, "detail"), "cannot read node 'n9': answered ");
    CHECK_CONTAINS(rs(a, 0, "detail"), "(HTTP 404)");
    json_decref(a);
    /* marked healthy: uncordoned, gpulse's taint taken away, the node's own kept */
    CHECK_INT(gp_rem_node_healthy(r, "n1", "alice", "reset done"), GP_OK);
    a = rows(r, NULL);
    CHECK_STR(rs(a, 0, "decision"), "ran");
    CHECK_STR(rs(a, 0, "action"), "kubernetes_uncordon");
    json_decref(a);
    json_t *u = request(&k, 8);
    CHECK(u);
    CHECK_STR(js(u, "method"), "PATCH");
    body = json_loads(js(u, "body"), 0, NULL);
    spec = json_object_get(body, "spec");
    CHECK(json_is_false(json_object_get(spec, "unschedulable")));
    CHECK_INT(json_array_size(json_object_get(spec, "taints")), 1);
    CHECK_STR(js(json_array_get(json_object_get(spec, "taints"), 0), "key"), "nvidia.com/gpu");
    json_decref(body);
    json_decref(u);
    gp_rem_close(r);
    /* a wrong token: the API's 401 is a failure, audited */
    gp_test_write_file(dir, "token", "stale\n");
    r = open_with(lines, 1, &o);
    fire_with(r, "gpu_row_remap_pending", "n2", "x");
    a = rows(r, NULL);
    CHECK_STR(rs(a, 0, "decision"), "failed");
    CHECK_CONTAINS(rs(a, 0, "detail"), "(HTTP 401)");
    json_decref(a);
    gp_rem_close(r);
    standin_stop(&k);
}

static void test_shadow_acts_on_nothing(void)
{
    const char *dir = gp_test_tmpdir();
    struct standin k;
    standin_start(&k, dir);
    char sc[600], token[600];
    standin_scontrol(dir, sc, sizeof sc);
    snprintf(token, sizeof token, "%s/token", dir);
    const char *lines[] = {"gpu_xid=@slurm-drain", "gpu_row_remap_pending=@kubernetes-cordon"};
    struct gp_rem_opts o = {.dry_run = true, .scontrol = sc, .breaker_max_nodes = 5,
                            .undo_on_healthy = true,
                            .k8s = {.api = k.url, .token_file = token, .taint_key = "gpulse.io/unhealthy"}};
    struct gp_rem *r = open_with(lines, 2, &o);
    fire_with(r, "gpu_xid", "n1", "xid 79");
    fire_with(r, "gpu_row_remap_pending", "n2", "remap");
    CHECK_INT(gp_rem_node_healthy(r, "n1", "alice", ""), GP_OK);
    CHECK_INT(gp_rem_node_healthy(r, "n2", "alice", ""), GP_OK);
    json_t *a = rows(r, NULL);
    CHECK_INT(json_array_size(a), 4);
    for (size_t i = 0; i < 4; i++)
        CHECK_STR(rs(a, i, "decision"), "dry_run");
    CHECK_STR(rs(a, 0, "action"), "kubernetes_uncordon");
    CHECK_STR(rs(a, 1, "action"), "slurm_resume");
    CHECK_STR(rs(a, 2, "action"), "kubernetes_cordon");
    CHECK_STR(rs(a, 3, "action"), "slurm_drain");
    /* what would have been done is recorded */
    const json_t *cmd = json_object_get(json_array_get(a, 2), "command");
    CHECK_STR(json_string_value(json_array_get(cmd, 4)), "gpulse.io/unhealthy=gpu_row_remap_pending:NoSchedule");
    cmd = json_object_get(json_array_get(a, 3), "command");
    CHECK_STR(json_string_value(json_array_get(cmd, 2)), "nodename=n1");
    json_decref(a);
    /* and nothing was: no scontrol call, no request to the API */
    CHECK_STR(slurp(dir, "scontrol.log"), "");
    json_t *none = request(&k, 0);
    CHECK(!none);
    gp_rem_close(r);
    standin_stop(&k);
}

static void test_breaker_twenty_nodes(void)
{
    const char *dir = gp_test_tmpdir();
    char sc[600], err[256];
    standin_scontrol(dir, sc, sizeof sc);
    const char *lines[] = {"gpu_xid=@slurm-drain"};
    struct gp_rem_opts o = {.scontrol = sc, .breaker_max_nodes = 5, .breaker_max_percent = 10};
    fake_now = 4000000000;
    struct gp_rem *r = open_with(lines, 1, &o);
    /* a fleet of 20 nodes, 2 GPUs each, listed out of order: 10 % allows 2 */
    struct gp_view_gpu gpus[40];
    memset(gpus, 0, sizeof gpus);
    for (int i = 0; i < 40; i++)
        snprintf(gpus[i].node, sizeof gpus[i].node, "node-%02d", (i * 7) % 20);
    struct gp_view v = {.gpus = gpus, .ngpus = 40};
    struct gp_alerts *al;
    CHECK_INT(gp_alerts_open(&al, dir, fake_now, err, sizeof err), GP_OK);
    gp_alerts_begin(al, fake_now);
    gp_rem_tick(r, &v, al, fake_now);
    CHECK_INT(gp_alerts_end(al, err, sizeof err), GP_OK);
    struct gp_obs_key fleet_key = {.det = GP_DET__COUNT, .rank = -1};
    CHECK(!gp_alerts_active(al, GP_REM_BREAKER_KIND, &fleet_key, 0));
    struct gp_rem_breaker b;
    gp_rem_breaker_state(r, &b);
    CHECK_INT(b.fleet, 20);
    CHECK_INT(b.limit, 2);
    /* all 20 fail at once */
    for (int i = 0; i < 20; i++) {
        char node[32];
        snprintf(node, sizeof node, "node-%02d", i);
        fire_with(r, "gpu_xid", node, "xid 79");
    }
    json_t *a = rows(r, "ran");
    CHECK_INT(json_array_size(a), 2);
    json_decref(a);
    a = rows(r, "breaker_open");
    CHECK_INT(json_array_size(a), 18);
    CHECK_STR(rs(a, 0, "detail"),
              "circuit breaker open: 2 nodes acted on in the last hour, at most 2 (5 nodes or 10% of 20 "
              "in the fleet)");
    json_decref(a);
    CHECK_INT(lines_of(slurp(dir, "scontrol.log")), 2);
    struct gp_rem_stats st;
    gp_rem_stats(r, &st);
    CHECK_INT(st.breaker_refused, 18);
    /* the alert says so */
    gp_alerts_begin(al, fake_now);
    gp_rem_tick(r, &v, al, fake_now);
    CHECK_INT(gp_alerts_end(al, err, sizeof err), GP_OK);
    CHECK(gp_alerts_active(al, GP_REM_BREAKER_KIND, &fleet_key, 0));
    struct gp_buf buf;
    gp_buf_init(&buf, 0);
    struct gp_alerts_filter f = {.state = -1, .kind = GP_REM_BREAKER_KIND, .since_ms = INT64_MIN,
                                 .limit = 10};
    CHECK_INT(gp_alerts_list_json(al, &f, &buf), GP_OK);
    CHECK_CONTAINS(buf.data, "remediation circuit breaker open: 2 of 20 nodes acted on in the last hour, at most 2");
    gp_buf_free(&buf);
    /* without a fleet size the node count alone limits: 5 */
    struct gp_view empty = {0};
    gp_rem_tick(r, &empty, NULL, fake_now);
    gp_rem_breaker_state(r, &b);
    CHECK_INT(b.limit, 5);
    /* an hour on, the breaker has closed and the alert resolves */
    fake_now += 3600 * 1000 + 1;
    gp_rem_tick(r, &v, NULL, fake_now);
    fire_with(r, "gpu_xid", "node-19", "xid 79");
    a = rows(r, "ran");
    CHECK_INT(json_array_size(a), 3);
    json_decref(a);
    gp_alerts_begin(al, fake_now);
    gp_rem_tick(r, &v, al, fake_now);
    CHECK_INT(gp_alerts_end(al, err, sizeof err), GP_OK);
    CHECK(!gp_alerts_active(al, GP_REM_BREAKER_KIND, &fleet_key, 0));
    gp_alerts_close(al);
    gp_rem_close(r);
}

static void test_breaker_counts_shadow_and_nodes_once(void)
{
    const char *lines[] = {"a=true", "b=true"};
    struct gp_rem_opts o = {.dry_run = true, .breaker_max_nodes = 2, .max_per_hour = 5};
    fake_now = 5000000000;
    struct gp_rem *r = open_with(lines, 2, &o);
    fire_with(r, "a", "n1", "");
    fire_with(r, "b", "n1", ""); /* the same node again: not a new node */
    fire_with(r, "a", "n2", "");
    fire_with(r, "a", "n3", ""); /* a third node: over 2 */
    json_t *a = rows(r, NULL);
    CHECK_INT(json_array_size(a), 4);
    CHECK_STR(rs(a, 0, "decision"), "breaker_open");
    CHECK_STR(rs(a, 0, "action"), "command");
    for (size_t i = 1; i < 4; i++)
        CHECK_STR(rs(a, i, "decision"), "dry_run");
    json_decref(a);
    gp_rem_close(r);
}

static void test_k8s_answer_malformed(void)
{
    const struct gp_rem_k8s k = {.taint_key = "gpulse.io/unhealthy"};
    char rv[16];
    const char *bad[] = {"", "[", "null", "[]", "{\"kind\":\"Status\",\"code\":404}",
                         "{\"metadata\":{\"resourceVersion\":41}}", "{\"metadata\":[]}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (gp_rem_k8s_taints(bad[i], strlen(bad[i]), &k, true, "v", rv, sizeof rv))
            gp_test_fail(__FILE__, __LINE__, "took '%s' for a Node", bad[i]);
    /* taints that are not objects are not sent back; gpulse's own is replaced */
    const char *odd = "{\"metadata\":{\"resourceVersion\":\"5\"},\"spec\":{\"taints\":[1,\"x\",{\"key\":"
                      "\"gpulse.io/unhealthy\",\"value\":\"old\",\"effect\":\"NoSchedule\"},{\"key\":\"a\","
                      "\"effect\":\"NoExecute\"}]}}";
    json_t *t = gp_rem_k8s_taints(odd, strlen(odd), &k, true, "new", rv, sizeof rv);
    CHECK(t);
    CHECK_STR(rv, "5");
    char *dump = json_dumps(t, JSON_COMPACT);
    CHECK_STR(dump, "[{\"key\":\"a\",\"effect\":\"NoExecute\"},{\"key\":\"gpulse.io/unhealthy\",\"value\":"
                    "\"new\",\"effect\":\"NoSchedule\"}]");
    free(dump);
    json_decref(t);
    t = gp_rem_k8s_taints(odd, strlen(odd), &k, false, "new", rv, sizeof rv);
    CHECK_INT(json_array_size(t), 1);
    json_decref(t);
}

const struct gp_test gp_tests_remediate[] = {
    {"parse", test_parse},
    {"expand_hostile_values", test_expand_hostile_values},
    {"dry_run_and_rate_limits", test_dry_run_and_rate_limits},
    {"silenced_and_transitions", test_silenced_and_transitions},
    {"hostile_label_refused", test_hostile_label_refused},
    {"value_rules", test_value_rules},
    {"path_root", test_path_root},
    {"traversal_creates_nothing_outside", test_traversal_creates_nothing_outside},
    {"real_commands", test_real_commands},
    {"audit_filters", test_audit_filters},
    {"open_checks_limits", test_open_checks_limits},
    {"builtin_parse", test_builtin_parse},
    {"k8s_answer_malformed", test_k8s_answer_malformed},
    {"slurm_drain_and_resume", test_slurm_drain_and_resume},
    {"undo_off_is_audited", test_undo_off_is_audited},
    {"kubernetes_cordon", test_kubernetes_cordon},
    {"shadow_acts_on_nothing", test_shadow_acts_on_nothing},
    {"breaker_twenty_nodes", test_breaker_twenty_nodes},
    {"breaker_counts_shadow_and_nodes_once", test_breaker_counts_shadow_and_nodes_once},
    {0},
};
