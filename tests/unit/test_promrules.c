/*
 * test_promrules.c - Prometheus rule files (insight/promrules.h,
 * insight/promtmpl.h): a rule file and its defaults, the project's own
 * deploy/prometheus/gpulse-rules.yml, every malformed file promtool
 * refuses named with its file and line, rule_files globs, the alert
 * templates as Prometheus renders them (Go's float formatting, the
 * humanize functions, printf), and the evaluation over an embedded
 * store: a recorded series read by the next rule of the same round,
 * `for` and keep_firing_for timing, ALERTS and stale markers written
 * back, limits, duplicate label sets, the alerts handed to the alert
 * engine, and /api/v1/rules's answer.
 */
#include "insight/alerts.h"
#include "insight/promrules.h"
#include "insight/promtmpl.h"
#include "lib/bits.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "store/labels.h"
#include "store/matcher.h"
#include "store_testlib.h"
#include "test.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#define S 1000LL

static const char good[] =
    "groups:\n"
    "  - name: gpu\n"
    "    interval: 30s\n"
    "    limit: 10\n"
    "    rules:\n"
    "      - record: node:util:avg\n"
    "        expr: avg by (Hostname) (gpu_util)\n"
    "        labels: {tier: b, app: x}\n"
    "      - alert: NodeBusy\n"
    "        expr: node:util:avg > 50\n"
    "        for: 2m\n"
    "        keep_firing_for: 5m\n"
    "        labels:\n"
    "          severity: critical\n"
    "        annotations:\n"
    "          summary: \"{{ $labels.Hostname }} at {{ $value | humanizePercentage }}\"\n"
    "          description: busy\n"
    "  - name: other\n"
    "    rules:\n";

static void parse_ok(const char *yaml, const char *file, struct gp_promrules *rs)
{
    char err[512] = "";
    if (gp_promrules_parse(yaml, strlen(yaml), file, rs, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "parse: %s", err);
}

static void test_parse(void)
{
    struct gp_promrules rs = {0};
    parse_ok(good, "a.yml", &rs);
    CHECK_INT(rs.n, 2);
    const struct gp_promrule_group *g = &rs.g[0];
    CHECK_STR(g->name, "gpu");
    CHECK_STR(g->file, "a.yml");
    CHECK_INT(g->interval_ms, 30000);
    CHECK_INT(g->limit, 10);
    CHECK_INT(g->n, 2);
    const struct gp_promrule *r = &g->rules[0];
    CHECK_INT(r->alert, 0);
    CHECK_STR(r->name, "node:util:avg");
    CHECK_STR(r->expr, "avg by (Hostname) (gpu_util)");
    CHECK(r->ast != NULL);
    CHECK_INT(r->nlabels, 2);
    CHECK_STR(r->label_names[0], "app"); /* sorted */
    CHECK_STR(r->label_values[1], "b");
    CHECK_INT(r->line, 6);
    r = &g->rules[1];
    CHECK_INT(r->alert, 1);
    CHECK_STR(r->name, "NodeBusy");
    CHECK_INT(r->for_ms, 120000);
    CHECK_INT(r->keep_firing_for_ms, 300000);
    CHECK_INT(r->nann, 2);
    CHECK_STR(r->ann_names[0], "description");
    CHECK_INT(rs.g[1].n, 0);
    CHECK_INT(rs.g[1].interval_ms, 0); /* the default applies */
    CHECK(gp_promrules_has_alert(&rs, "NodeBusy"));
    CHECK(!gp_promrules_has_alert(&rs, "node:util:avg"));
    /* a second file appends; the same group name in another file is fine */
    parse_ok("groups:\n  - name: gpu\n    rules: []\n", "b.yml", &rs);
    CHECK_INT(rs.n, 3);
    CHECK_STR(rs.g[2].file, "b.yml");
    /* empty files and empty groups lists hold nothing */
    parse_ok("", "c.yml", &rs);
    parse_ok("groups:\n", "c.yml", &rs);
    parse_ok("groups: []\n", "c.yml", &rs);
    CHECK_INT(rs.n, 3);
    gp_promrules_free(&rs);
    gp_promrules_free(&rs); /* twice is fine */
}

/* Rules in a rule file's text: its "- alert:" and "- record:" lines. */
static int count_rule_lines(const char *text)
{
    int n = 0;
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        l += strspn(l, " ");
        if (!strncmp(l, "- alert:", 8) || !strncmp(l, "- record:", 9))
            n++;
    }
    return n;
}

/* The project's own rule file loads unchanged: 2 groups, every rule. */
static void test_deploy_rules(void)
{
    struct gp_promrules rs = {0};
    const char *text = gp_test_repo_text("deploy/prometheus/gpulse-rules.yml");
    int want = count_rule_lines(text);
    CHECK(want >= 41);
    parse_ok(text, "gpulse-rules.yml", &rs);
    CHECK_INT(rs.n, 2);
    CHECK_INT(rs.g[0].n + rs.g[1].n, want);
    CHECK_INT(rs.g[0].interval_ms, 15000);
    CHECK_INT(rs.g[1].interval_ms, 30000);
    CHECK(gp_promrules_has_alert(&rs, "GpulseStraggler"));
    gp_promrules_free(&rs);
}

static void expect_error(const char *yaml, const char *msg)
{
    struct gp_promrules rs = {0};
    char err[512] = "";
    int rc = gp_promrules_parse(yaml, strlen(yaml), "r.yml", &rs, err, sizeof err);
    if (rc != GP_ECONFIG && rc != GP_EPARSE)
        gp_test_fail(__FILE__, __LINE__, "accepted or wrong code %d: %s", rc, yaml);
    if (!strstr(err, msg))
        gp_test_fail(__FILE__, __LINE__, "error \"%s\" lacks \"%s\"", err, msg);
    CHECK_INT(rs.n, 0); /* nothing kept from a bad file */
    gp_promrules_free(&rs);
}

#define RULE(x) "groups:\n  - name: g\n    rules:\n      - " x

static void test_malformed(void)
{
    expect_error("groups: [\n", "r.yml: line");
    expect_error("- a\n- b\n", "r.yml:1: a rule file must be a mapping");
    expect_error("groups: []\nextra: 1\n", "r.yml:2: field extra not found");
    expect_error("groups: {a: 1}\n", "r.yml:1: 'groups' must be a list");
    expect_error("groups:\n  - rules: []\n", "r.yml:2: Groupname must not be empty");
    expect_error("groups:\n  - name: a\n  - name: a\n", "r.yml:3: groupname: \"a\" is repeated in the same file");
    expect_error("groups:\n  - name: a\n    labels: {x: y}\n", "r.yml:3: field labels not found in type rulefmt.RuleGroup");
    expect_error("groups:\n  - name: a\n    interval: soon\n", "r.yml:3: 'interval': not a valid duration");
    expect_error("groups:\n  - name: a\n    interval: 0s\n", "'interval' must be more than 0");
    expect_error("groups:\n  - name: a\n    limit: -1\n", "r.yml:3: 'limit' must be a whole number");
    expect_error("groups:\n  - name: a\n    rules: 3\n", "'rules' must be a list");
    expect_error(RULE("record: a\n        alert: b\n        expr: up\n"),
                 "r.yml:4: group \"g\", rule 1, \"a\": only one of 'record' and 'alert' must be set");
    expect_error(RULE("expr: up\n"), "r.yml:4: group \"g\", rule 1, \"\": one of 'record' or 'alert' must be set");
    expect_error(RULE("record: a\n"), "rule 1, \"a\": field 'expr' must be set in rule");
    expect_error(RULE("record: a\n        expr: sum(\n"), "r.yml:5: group \"g\", rule 1, \"a\": could not parse expression: ");
    expect_error(RULE("record: a\n        expr: up[5m]\n"), "invalid rule expression");
    expect_error(RULE("record: a\n        expr: up\n        for: 1m\n"), "invalid field 'for' in recording rule");
    expect_error(RULE("record: a\n        expr: up\n        keep_firing_for: 1m\n"),
                 "invalid field 'keep_firing_for' in recording rule");
    expect_error(RULE("record: a\n        expr: up\n        annotations: {x: y}\n"),
                 "invalid field 'annotations' in recording rule");
    expect_error(RULE("record: 1a\n        expr: up\n"), "invalid recording rule name: 1a");
    expect_error(RULE("record: 'a{b=\"c\"}'\n        expr: up\n"), "invalid recording rule name");
    expect_error(RULE("alert: a-b\n        expr: up\n"), "invalid alert name: a-b");
    expect_error(RULE("alert: straggler\n        expr: up\n"), "is a built-in detector's");
    expect_error(RULE("alert: A\n        expr: up\n        for: 1x\n"), "'for': not a valid duration");
    expect_error(RULE("alert: A\n        expr: up\n        labels: {1x: y}\n"), "invalid label name: 1x");
    expect_error(RULE("alert: A\n        expr: up\n        labels: {__name__: y}\n"), "invalid label name: __name__");
    expect_error(RULE("alert: A\n        expr: up\n        labels: {a: [1]}\n"), "mapping of names to strings");
    expect_error(RULE("alert: A\n        expr: up\n        annotations: {a-b: y}\n"), "invalid annotation name: a-b");
    expect_error(RULE("alert: A\n        expr: up\n        annotations: {s: \"{{ $value \"}\n"),
                 "annotation \"s\": template: __alert_A: unclosed action");
    expect_error(RULE("alert: A\n        expr: up\n        labels: {s: \"{{ nope $value }}\"}\n"),
                 "label \"s\": template: __alert_A: function \"nope\" not defined");
    expect_error(RULE("alert: A\n        expr: up\n        annotations: {s: \"{{ if $value }}x{{ end }}\"}\n"),
                 "template action \"if\" is not supported");
    expect_error(RULE("alert: A\n        expr: up\n        extra: 1\n"), "field extra not found in type rulefmt.RuleNode");
    expect_error(RULE("alert: A\n        expr: up\n        expr: down\n"), "field expr given twice");
    /* the templates of recording rules' labels are not templates */
    struct gp_promrules rs = {0};
    parse_ok(RULE("record: a\n        expr: up\n        labels: {s: \"{{ nope\"}\n"), "r.yml", &rs);
    gp_promrules_free(&rs);
}

static void test_load_files(void)
{
    const char *dir = gp_test_tmpdir();
    gp_test_write_file(dir, "rules/a.yml", "groups:\n  - name: a\n    rules:\n      - record: x\n        expr: up\n");
    gp_test_write_file(dir, "rules/b.yml", "groups:\n  - name: b\n    rules: []\n");
    gp_test_write_file(dir, "bad.yml", "groups:\n  - name: c\n    rules:\n      - record: 1\n        expr: up\n");
    struct gp_promrules rs = {0};
    char err[512] = "";
    const char *pats[] = {"rules/*.yml", "none/*.yml"};
    CHECK_INT(gp_promrules_load(pats, 2, dir, &rs, err, sizeof err), GP_OK);
    CHECK_INT(rs.n, 2);
    CHECK_STR(rs.g[0].name, "a"); /* sorted matches */
    CHECK_CONTAINS(rs.g[1].file, "rules/b.yml");
    gp_promrules_free(&rs);
    const char *missing[] = {"rules/none.yml"};
    CHECK_INT(gp_promrules_load(missing, 1, dir, &rs, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "rules/none.yml");
    const char *bad[] = {"rules/a.yml", "bad.yml"};
    CHECK_INT(gp_promrules_load(bad, 2, dir, &rs, err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "bad.yml:4: group \"c\", rule 1, \"1\": invalid recording rule name: 1");
    gp_promrules_free(&rs);
}

/* ---- templates ---- */

static void expect_tmpl(const char *tmpl, double v, const char *want)
{
    struct gp_label l[3] = {{{"Hostname", 8}, {"n1", 2}}, {{"__name__", 8}, {"up", 2}}, {{"gpu", 3}, {"3", 1}}};
    struct gp_buf lb, b;
    gp_buf_init(&lb, 0);
    gp_buf_init(&b, 0);
    CHECK_INT(gp_labels_encode(l, 3, &lb), GP_OK);
    struct gp_ptmpl_data d = {(const uint8_t *)lb.data, lb.len, v};
    char err[256] = "";
    if (gp_ptmpl_expand(tmpl, &d, &b, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "%s: %s", tmpl, err);
    gp_buf_putc(&b, '\0');
    if (strcmp(b.data, want))
        gp_test_fail(__FILE__, __LINE__, "%s with %g: \"%s\" != \"%s\"", tmpl, v, b.data, want);
    CHECK_INT(gp_ptmpl_check(tmpl, err, sizeof err), GP_OK);
    gp_buf_free(&b);
    gp_buf_free(&lb);
}

/* Expected texts: what Prometheus 2.42 renders (Go's fmt and its
 * template functions). */
static void test_templates(void)
{
    expect_tmpl("GPU {{ $labels.gpu }} on {{$labels.Hostname}} at {{ $value }}", 86.5, "GPU 3 on n1 at 86.5");
    expect_tmpl("{{ .Labels.gpu }}/{{ .Value }}/{{ $labels.__name__ }}", 2, "3/2/up");
    expect_tmpl("[{{ $labels.nope }}]", 1, "[<no value>]");
    expect_tmpl("{{ $externalURL }}|{{ $externalLabels.x }}", 1, "|<no value>");
    expect_tmpl("{{ $value }}", 123456, "123456");
    expect_tmpl("{{ $value }}", 1234567, "1.234567e+06");
    expect_tmpl("{{ $value }}", 0.0001, "0.0001");
    expect_tmpl("{{ $value }}", 0.00001, "1e-05");
    expect_tmpl("{{ $value }}", 0.1 + 0.2, "0.30000000000000004");
    expect_tmpl("{{ $value }}", -0.5, "-0.5");
    expect_tmpl("{{ $value }}", NAN, "NaN");
    expect_tmpl("{{ $value }}", -INFINITY, "-Inf");
    expect_tmpl("{{ $value | humanize }}", 1234567, "1.235M");
    expect_tmpl("{{ $value | humanize }}", 0.00123, "1.23m");
    expect_tmpl("{{ $value | humanize }}", 0, "0");
    expect_tmpl("{{ $value | humanize }}", 999, "999");
    expect_tmpl("{{ humanize $value }}", 1e12, "1T");
    expect_tmpl("{{ $value | humanize1024 }}", 1073741824, "1Gi");
    expect_tmpl("{{ $value | humanize1024 }}", 0.5, "0.5");
    expect_tmpl("{{ $value | humanizePercentage }}", 0.9612, "96.12%");
    expect_tmpl("{{ $value | humanizePercentage }}", 1.5, "150%");
    expect_tmpl("{{ $value | humanizeDuration }}", 93784.5, "1d 2h 3m 4s");
    expect_tmpl("{{ $value | humanizeDuration }}", 3725, "1h 2m 5s");
    expect_tmpl("{{ $value | humanizeDuration }}", 61, "1m 1s");
    expect_tmpl("{{ $value | humanizeDuration }}", 42.123456, "42.12s");
    expect_tmpl("{{ $value | humanizeDuration }}", 0.0123, "12.3ms");
    expect_tmpl("{{ $value | humanizeDuration }}", 0, "0s");
    expect_tmpl("{{ $value | humanizeDuration }}", -90, "-1m 30s");
    expect_tmpl("{{ $value | humanizeTimestamp }}", 1700000000.5, "2023-11-14 22:13:20.5 +0000 UTC");
    expect_tmpl("{{ $value | printf \"%.1f\" }}", 3.14159, "3.1");
    expect_tmpl("{{ printf \"%s=%.2f %5.1f|%-4s|\" $labels.gpu $value $value \"ab\" }}", 2.5, "3=2.50   2.5|ab  |");
    expect_tmpl("{{ printf \"%d\" $value }}", 1.5, "%!d(float64=1.5)");
    expect_tmpl("{{ printf \"%.0f%%\" $value }}", 99.5, "100%");
    expect_tmpl("{{ printf \"%g|%v\" $value $value }}", 1e6, "1e+06|1e+06");
    expect_tmpl("{{ printf \"x\" $value }}", 1, "x%!(EXTRA float64=1)");
    expect_tmpl("{{ printf \"%s %s\" \"a\" }}", 1, "a %!s(MISSING)");
    expect_tmpl("{{ $labels.Hostname | toUpper }} {{ \"Ab\" | toLower }} {{ title \"gpu hot\" }}", 1, "N1 ab Gpu Hot");
    expect_tmpl("{{ \"42\" | humanize }}", 1, "42");
    expect_tmpl("a  {{- $value -}}  b {{/* note */}}c", 1, "a1b c");
    expect_tmpl("{{ \"}}\" }} {{ `raw\\n` }} {{ \"esc\\tq\\\"\" }}", 1, "}} raw\\n esc\tq\"");
    expect_tmpl("no actions at all", 1, "no actions at all");
    /* execution errors: the rule loads (as in Prometheus), rendering fails */
    char err[256];
    struct gp_buf b;
    gp_buf_init(&b, 0);
    struct gp_ptmpl_data d = {NULL, 0, 1};
    CHECK_INT(gp_ptmpl_expand("{{ $value | toUpper }}", &d, &b, err, sizeof err), GP_EUSAGE);
    CHECK_CONTAINS(err, "expected string; got float64");
    CHECK_INT(gp_ptmpl_check("{{ $value | toUpper }}", err, sizeof err), GP_OK);
    CHECK_INT(gp_ptmpl_expand("{{ \"x\" | humanize }}", &d, &b, err, sizeof err), GP_EUSAGE);
    CHECK_CONTAINS(err, "error calling humanize");
    CHECK_INT(gp_ptmpl_expand("{{ $labels.none | humanize }}", &d, &b, err, sizeof err), GP_EUSAGE);
    /* parse errors and what is not supported */
    static const struct {
        const char *t;
        int rc;
        const char *msg;
    } bad[] = {
        {"{{ $value", GP_EPARSE, "unclosed action"},
        {"{{ }}", GP_EPARSE, "missing value for command"},
        {"{{ $x }}", GP_EPARSE, "undefined variable \"$x\""},
        {"{{ nope }}", GP_EPARSE, "function \"nope\" not defined"},
        {"{{ $value | }}", GP_EPARSE, "missing command"},
        {"{{ $value $value }}", GP_EPARSE, "can't give argument to non-function"},
        {"{{ $value | $value }}", GP_EPARSE, "non executable command"},
        {"{{ \"abc }}", GP_EPARSE, "unterminated quoted string"},
        {"{{ \"a\\q\" }}", GP_EPARSE, "invalid syntax in quoted string"},
        {"{{ 1x }}", GP_EPARSE, "bad number syntax"},
        {"{{ humanize }}", GP_EPARSE, "wrong number of args for humanize"},
        {"{{ printf }}", GP_EPARSE, "wrong number of args for printf"},
        {"{{/* open }}", GP_EPARSE, "comment ends before closing delimiter"},
        {"{{ # }}", GP_EPARSE, "unexpected \"#\""},
        {"{{ if $value }}x{{ end }}", GP_EUNSUPPORTED, "template action \"if\" is not supported"},
        {"{{ range $labels }}{{ end }}", GP_EUNSUPPORTED, "\"range\" is not supported"},
        {"{{ query \"up\" }}", GP_EUNSUPPORTED, "template function \"query\" is not supported"},
        {"{{ $x := 1 }}", GP_EUNSUPPORTED, "':=' in templates is not supported"},
        {"{{ humanize ($value) }}", GP_EUNSUPPORTED, "'(' in templates is not supported"},
        {"{{ $labels }}", GP_EUNSUPPORTED, "printing all of $labels"},
        {"{{ . }}", GP_EUNSUPPORTED, "the template's data '.'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        int rc = gp_ptmpl_check(bad[i].t, err, sizeof err);
        if (rc != bad[i].rc || !strstr(err, bad[i].msg))
            gp_test_fail(__FILE__, __LINE__, "%s: rc %d err \"%s\", want %d \"%s\"", bad[i].t, rc, err,
                         bad[i].rc, bad[i].msg);
        CHECK_INT(gp_ptmpl_expand(bad[i].t, &d, &b, err, sizeof err), bad[i].rc);
    }
    gp_buf_free(&b);
    char f[40];
    gp_go_float(86, 'e', f, sizeof f);
    CHECK_STR(f, "8.6e+01");
    gp_go_float(1, 'e', f, sizeof f);
    CHECK_STR(f, "1e+00");
    gp_go_float(0.000123, 'e', f, sizeof f);
    CHECK_STR(f, "1.23e-04");
    gp_go_float(0, 'e', f, sizeof f);
    CHECK_STR(f, "0e+00");
    gp_go_float(100, 'v', f, sizeof f);
    CHECK_STR(f, "100");
}

/* ---- evaluation over a store ---- */

static int64_t T0; /* an hour ago, a multiple of 15 s */

static int lab_cmp(const void *a, const void *b)
{
    const struct gp_label *x = a, *y = b;
    size_t n = x->name.len < y->name.len ? x->name.len : y->name.len;
    int c = memcmp(x->name.ptr, y->name.ptr, n);
    return c ? c : (int)x->name.len - (int)y->name.len;
}

/* Appends name{"k=v;k=v"} = v at t. */
static void put(struct gp_storage *st, const char *name, const char *labels, int64_t t, double v)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", labels);
    struct gp_label l[8];
    size_t nl = 0;
    l[nl++] = (struct gp_label){{"__name__", 8}, {name, strlen(name)}};
    for (char *save = NULL, *p = strtok_r(buf, ";", &save); p; p = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(p, '=');
        CHECK(eq && nl < 8);
        *eq = '\0';
        l[nl++] = (struct gp_label){{p, strlen(p)}, {eq + 1, strlen(eq + 1)}};
    }
    qsort(l, nl, sizeof l[0], lab_cmp);
    struct gp_sample s = {v, t};
    struct gp_series se = {l, nl, &s, 1};
    struct gp_batch rq = {&se, 1, nl, 1, NULL};
    struct gp_append_result res;
    char err[256];
    CHECK_INT(gp_storage_append(st, &rq, &res, err, sizeof err), GP_OK);
    CHECK_INT(res.accepted, 1);
}

/* The newest sample at or before t of the one series sel selects: 1
 * and *v, 0 when none (more than one fails the test). */
static int sample_at(struct gp_storage *st, const char *sel, int64_t t, double *v)
{
    struct gp_matcher *m;
    size_t nm;
    char err[256];
    CHECK_INT(gp_selector_parse(sel, strlen(sel), &m, &nm, err, sizeof err), GP_OK);
    struct gp_store_selection s;
    CHECK_INT(gp_storage_select(st, m, nm, t - 600 * S, t, &s), GP_OK);
    gp_matchers_free(m, nm);
    if (s.n > 1)
        gp_test_fail(__FILE__, __LINE__, "%s selects %zu series", sel, s.n);
    int found = 0;
    if (s.n) {
        struct gp_samples smp = {0};
        CHECK_INT(gp_storage_read(st, s.series[0].id, t - 600 * S, t, &smp), GP_OK);
        if (smp.n && smp.t[smp.n - 1] == t) {
            *v = smp.v[smp.n - 1];
            found = 1;
        }
        gp_samples_free(&smp);
    }
    gp_storage_selection_free(&s);
    return found;
}

struct fixture {
    struct gp_storage *st;
    struct gp_alerts *a;
    struct gp_promrules_run *run;
};

static void fixture_open(struct fixture *f, const char *yaml)
{
    T0 = gp_wall_ms() / 15000 * 15000 - 3600 * S;
    f->st = sopen_tmp();
    char err[512];
    if (gp_alerts_open(&f->a, gp_test_tmpdir(), T0, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "alerts: %s", err);
    struct gp_promrules rs = {0};
    parse_ok(yaml, "t.yml", &rs);
    struct gp_promrules_options o = {.store = f->st, .default_interval_ms = 15000, .tick_ms = 15000};
    CHECK_INT(gp_promrules_run_new(&f->run, &rs, &o, err, sizeof err), GP_OK);
    CHECK_INT(rs.n, 0); /* taken */
}

static void fixture_close(struct fixture *f)
{
    gp_promrules_run_free(f->run);
    gp_alerts_close(f->a);
    gp_storage_close(f->st);
}

/* One engine tick at t: the rules' part between begin and end. */
static int tick(struct fixture *f, int64_t t, unsigned *failed, char *err, size_t errlen)
{
    gp_alerts_begin(f->a, t);
    int rc = gp_promrules_tick(f->run, f->a, t, failed, err, errlen);
    char e2[256];
    CHECK_INT(gp_alerts_end(f->a, e2, sizeof e2), GP_OK);
    return rc;
}

static void tick_ok(struct fixture *f, int64_t t)
{
    char err[512] = "";
    unsigned failed = 9;
    if (tick(f, t, &failed, err, sizeof err))
        gp_test_fail(__FILE__, __LINE__, "tick at T0%+llds: %s", (long long)((t - T0) / S), err);
    CHECK_INT(failed, 0);
}

/* The alert engine's alerts (state=all) as JSON text. */
static char *alerts_json(struct fixture *f, int state)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    struct gp_alerts_filter flt = {.state = state, .since_ms = INT64_MIN, .limit = 100};
    CHECK_INT(gp_alerts_list_json(f->a, &flt, &b), GP_OK);
    gp_buf_putc(&b, '\0');
    size_t n;
    return gp_buf_steal(&b, &n);
}

static json_t *rules_json(struct fixture *f, int type)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_promrules_json(f->run, type, &b), GP_OK);
    json_error_t je;
    json_t *j = json_loadb(b.data, b.len, 0, &je);
    if (!j)
        gp_test_fail(__FILE__, __LINE__, "not JSON: %s", je.text);
    gp_buf_free(&b);
    CHECK_STR(json_string_value(json_object_get(j, "status")), "success");
    return j;
}

static const char chain[] =
    "groups:\n"
    "  - name: g\n"
    "    interval: 15s\n"
    "    rules:\n"
    "      - record: node:util:avg\n"
    "        expr: avg by (Hostname) (gpu_util)\n"
    "      - record: node:util:double\n"
    "        expr: node:util:avg * 2\n"
    "        labels: {tier: x}\n"
    "      - alert: NodeBusy\n"
    "        expr: node:util:double > 100\n"
    "        for: 30s\n"
    "        labels: {severity: critical, where: \"{{ $labels.Hostname }}\"}\n"
    "        annotations:\n"
    "          summary: \"node {{ $labels.Hostname }} at {{ $value | printf \\\"%.1f\\\" }}\"\n"
    "          runbook_url: http://runbook/busy\n"
    "      - record: answer\n"
    "        expr: 42\n";

/* A recorded series is read by the next rule of the same round; `for`
 * holds the alert pending, then firing; ALERTS and the alert engine
 * agree; the pending ALERTS series ends with a stale marker. */
static void test_eval_chain(void)
{
    struct fixture f;
    fixture_open(&f, chain);
    for (int64_t t = T0 - 60 * S; t <= T0 + 60 * S; t += 15 * S) {
        put(f.st, "gpu_util", "Hostname=n1;gpu=0", t, 50);
        put(f.st, "gpu_util", "Hostname=n1;gpu=1", t, 70);
        put(f.st, "gpu_util", "Hostname=n2;gpu=0", t, 10);
    }
    double v;
    tick_ok(&f, T0);
    /* no earlier round: node:util:double exists only if it read node:util:avg at T0 */
    CHECK(sample_at(f.st, "node:util:avg{Hostname=\"n1\"}", T0, &v));
    CHECK_DBL(v, 60, 1e-9);
    CHECK(sample_at(f.st, "node:util:double{Hostname=\"n1\",tier=\"x\"}", T0, &v));
    CHECK_DBL(v, 120, 1e-9);
    CHECK(sample_at(f.st, "node:util:double{Hostname=\"n2\"}", T0, &v));
    CHECK_DBL(v, 20, 1e-9);
    CHECK(sample_at(f.st, "answer", T0, &v)); /* a scalar: one series, no labels */
    CHECK_DBL(v, 42, 0);
    /* the first round writes no ALERTS, as Prometheus (restoring `for` comes first) */
    CHECK(!sample_at(f.st, "ALERTS{alertname=\"NodeBusy\"}", T0, &v));
    char *js = alerts_json(&f, -2);
    CHECK_CONTAINS(js, "\"kind\":\"NodeBusy\"");
    CHECK_CONTAINS(js, "\"state\":\"pending\"");
    CHECK_CONTAINS(js, "node n1 at 120.0");
    CHECK_CONTAINS(js, "\"severity\":\"critical\"");
    CHECK_CONTAINS(js, "http://runbook/busy");
    CHECK_CONTAINS(js, "\"where\":\"n1\"");
    free(js);
    /* a tick before the interval passed holds the group */
    tick_ok(&f, T0 + 5 * S);
    CHECK(!sample_at(f.st, "node:util:avg{Hostname=\"n1\"}", T0 + 5 * S, &v));
    tick_ok(&f, T0 + 15 * S);
    CHECK(sample_at(f.st, "ALERTS{alertname=\"NodeBusy\",alertstate=\"pending\",Hostname=\"n1\","
                          "where=\"n1\",severity=\"critical\",tier=\"x\"}",
                    T0 + 15 * S, &v));
    CHECK_DBL(v, 1, 0);
    CHECK(sample_at(f.st, "ALERTS_FOR_STATE{alertname=\"NodeBusy\"}", T0 + 15 * S, &v));
    CHECK_DBL(v, (double)(T0 / 1000), 0);
    CHECK(!sample_at(f.st, "ALERTS{alertname=\"NodeBusy\",Hostname=\"n2\"}", T0 + 15 * S, &v));
    tick_ok(&f, T0 + 30 * S); /* active 30s = for: firing */
    CHECK(sample_at(f.st, "ALERTS{alertname=\"NodeBusy\",alertstate=\"firing\"}", T0 + 30 * S, &v));
    CHECK_DBL(v, 1, 0);
    CHECK(sample_at(f.st, "ALERTS{alertname=\"NodeBusy\",alertstate=\"pending\"}", T0 + 30 * S, &v));
    CHECK_INT(gp_f64_bits(v), GP_STALE_NAN_BITS); /* the pending series ended */
    js = alerts_json(&f, GP_ALERT_FIRING);
    CHECK_CONTAINS(js, "\"kind\":\"NodeBusy\"");
    free(js);
    /* /api/v1/rules */
    json_t *j = rules_json(&f, 0);
    json_t *g = json_array_get(json_object_get(json_object_get(j, "data"), "groups"), 0);
    CHECK_STR(json_string_value(json_object_get(g, "name")), "g");
    CHECK_STR(json_string_value(json_object_get(g, "file")), "t.yml");
    CHECK_DBL(json_number_value(json_object_get(g, "interval")), 15, 0);
    json_t *rules = json_object_get(g, "rules");
    CHECK_INT(json_array_size(rules), 4);
    json_t *rec = json_array_get(rules, 1), *al = json_array_get(rules, 2);
    CHECK_STR(json_string_value(json_object_get(rec, "type")), "recording");
    CHECK_STR(json_string_value(json_object_get(rec, "health")), "ok");
    CHECK_STR(json_string_value(json_object_get(json_object_get(rec, "labels"), "tier")), "x");
    CHECK(json_object_get(rec, "lastError") == NULL);
    CHECK(json_is_string(json_object_get(rec, "lastEvaluation")));
    CHECK(json_is_number(json_object_get(rec, "evaluationTime")));
    CHECK_STR(json_string_value(json_object_get(al, "type")), "alerting");
    CHECK_STR(json_string_value(json_object_get(al, "name")), "NodeBusy");
    CHECK_STR(json_string_value(json_object_get(al, "state")), "firing");
    CHECK_DBL(json_number_value(json_object_get(al, "duration")), 30, 0);
    json_t *alerts = json_object_get(al, "alerts");
    CHECK_INT(json_array_size(alerts), 1);
    json_t *a0 = json_array_get(alerts, 0);
    CHECK_STR(json_string_value(json_object_get(a0, "state")), "firing");
    CHECK_STR(json_string_value(json_object_get(a0, "value")), "1.2e+02");
    CHECK_STR(json_string_value(json_object_get(json_object_get(a0, "labels"), "alertname")), "NodeBusy");
    CHECK_STR(json_string_value(json_object_get(json_object_get(a0, "annotations"), "summary")),
              "node n1 at 120.0");
    CHECK(json_is_string(json_object_get(a0, "activeAt")));
    json_decref(j);
    j = rules_json(&f, 'a');
    rules = json_object_get(json_array_get(json_object_get(json_object_get(j, "data"), "groups"), 0), "rules");
    CHECK_INT(json_array_size(rules), 1);
    json_decref(j);
    j = rules_json(&f, 'r');
    rules = json_object_get(json_array_get(json_object_get(json_object_get(j, "data"), "groups"), 0), "rules");
    CHECK_INT(json_array_size(rules), 3);
    json_decref(j);
    /* n1 calms down: the alert resolves at once (no keep_firing_for) */
    for (int64_t t = T0 + 75 * S; t <= T0 + 90 * S; t += 15 * S)
        put(f.st, "gpu_util", "Hostname=n1;gpu=1", t, 10);
    put(f.st, "gpu_util", "Hostname=n1;gpu=0", T0 + 90 * S, 10);
    put(f.st, "gpu_util", "Hostname=n2;gpu=0", T0 + 90 * S, 10);
    tick_ok(&f, T0 + 90 * S);
    CHECK(sample_at(f.st, "ALERTS{alertname=\"NodeBusy\",alertstate=\"firing\"}", T0 + 90 * S, &v));
    CHECK_INT(gp_f64_bits(v), GP_STALE_NAN_BITS);
    js = alerts_json(&f, -1);
    CHECK(!strstr(js, "NodeBusy"));
    free(js);
    fixture_close(&f);
}

/* keep_firing_for: the expression returns the alert until T0 + 30s;
 * it keeps firing for 30s more, then resolves. */
static void test_eval_keep_firing(void)
{
    char yaml[1024];
    T0 = gp_wall_ms() / 15000 * 15000 - 3600 * S;
    snprintf(yaml, sizeof yaml,
             "groups:\n"
             "  - name: k\n"
             "    rules:\n"
             "      - alert: Flap\n"
             "        expr: vector(time()) < %lld\n"
             "        keep_firing_for: 30s\n"
             "        annotations: {summary: \"at {{ $value }}\"}\n",
             (long long)((T0 + 30 * S) / 1000));
    struct fixture f;
    fixture_open(&f, yaml);
    double v;
    tick_ok(&f, T0); /* for 0: firing at once (ALERTS from the second round) */
    char *js = alerts_json(&f, GP_ALERT_FIRING);
    CHECK_CONTAINS(js, "\"kind\":\"Flap\"");
    free(js);
    tick_ok(&f, T0 + 15 * S);
    CHECK(sample_at(f.st, "ALERTS{alertname=\"Flap\",alertstate=\"firing\"}", T0 + 15 * S, &v));
    tick_ok(&f, T0 + 30 * S); /* not returned: kept firing */
    CHECK(sample_at(f.st, "ALERTS{alertname=\"Flap\",alertstate=\"firing\"}", T0 + 30 * S, &v));
    CHECK_DBL(v, 1, 0);
    json_t *j = rules_json(&f, 'a');
    json_t *a0 = json_array_get(json_object_get(json_array_get(json_object_get(json_array_get(
                                    json_object_get(json_object_get(j, "data"), "groups"), 0), "rules"), 0),
                                    "alerts"), 0);
    CHECK(json_is_string(json_object_get(a0, "keepFiringSince")));
    json_decref(j);
    js = alerts_json(&f, GP_ALERT_FIRING);
    CHECK_CONTAINS(js, "\"kind\":\"Flap\"");
    free(js);
    tick_ok(&f, T0 + 45 * S); /* 15s of 30s */
    CHECK(sample_at(f.st, "ALERTS{alertname=\"Flap\",alertstate=\"firing\"}", T0 + 45 * S, &v));
    CHECK_DBL(v, 1, 0);
    tick_ok(&f, T0 + 60 * S); /* 30s: resolved */
    CHECK(sample_at(f.st, "ALERTS{alertname=\"Flap\",alertstate=\"firing\"}", T0 + 60 * S, &v));
    CHECK_INT(gp_f64_bits(v), GP_STALE_NAN_BITS);
    js = alerts_json(&f, -1);
    CHECK(!strstr(js, "Flap"));
    free(js);
    js = alerts_json(&f, GP_ALERT_RESOLVED);
    CHECK_CONTAINS(js, "\"kind\":\"Flap\"");
    free(js);
    fixture_close(&f);
}

/* Errors: a limit passed, two samples with one label set, a query that
 * fails. The rule's health says so, its alerts are held, the other
 * rules run. */
static void test_eval_errors(void)
{
    static const char yaml[] =
        "groups:\n"
        "  - name: lim\n"
        "    limit: 1\n"
        "    rules:\n"
        "      - alert: Many\n"
        "        expr: gpu_util > 0\n"
        "      - record: same\n"
        "        expr: gpu_util\n"
        "        labels: {gpu: x}\n"
        "      - record: fine\n"
        "        expr: count(gpu_util)\n";
    struct fixture f;
    fixture_open(&f, yaml);
    put(f.st, "gpu_util", "Hostname=n1;gpu=0", T0, 50);
    put(f.st, "gpu_util", "Hostname=n1;gpu=1", T0, 70);
    char err[512] = "";
    unsigned failed = 0;
    CHECK(tick(&f, T0, &failed, err, sizeof err) != GP_OK);
    CHECK_INT(failed, 2);
    CHECK_CONTAINS(err, "rule group \"lim\", rule \"Many\": exceeded limit of 1 with 2 alerts");
    double v;
    CHECK(sample_at(f.st, "fine", T0, &v));
    CHECK_DBL(v, 2, 0);
    CHECK(!sample_at(f.st, "ALERTS", T0, &v));
    json_t *j = rules_json(&f, 0);
    json_t *rules = json_object_get(json_array_get(json_object_get(json_object_get(j, "data"), "groups"), 0), "rules");
    CHECK_STR(json_string_value(json_object_get(json_array_get(rules, 0), "health")), "err");
    CHECK_STR(json_string_value(json_object_get(json_array_get(rules, 1), "lastError")),
              "vector contains metrics with the same labelset after applying rule labels");
    CHECK_STR(json_string_value(json_object_get(json_array_get(rules, 2), "health")), "ok");
    CHECK_INT(json_array_size(json_object_get(json_array_get(rules, 0), "alerts")), 0);
    json_decref(j);
    fixture_close(&f);
}

/* A restart: an alert with `for` of at least 10 minutes takes its start
 * back from the ALERTS_FOR_STATE the previous run wrote (last at
 * T0 - 5m), as Prometheus's RestoreForState does. */
static void test_eval_restore(void)
{
    static const char yaml[] =
        "groups:\n"
        "  - name: r\n"
        "    rules:\n"
        "      - alert: Long\n"
        "        expr: gpu_util > 0\n"
        "        for: 20m\n";
    struct fixture f;
    fixture_open(&f, yaml);
    /* gpu 0 was active since T0-30m (it had fired), gpu 1 since T0-10m
     * (15m left: moved by the 5m down), gpu 2 since T0-20m (5m left,
     * under the grace period: fires 10m from now), gpu 3 has no state */
    static const int64_t since_min[] = {30, 10, 20};
    for (int k = 0; k < 3; k++) {
        char l[64];
        snprintf(l, sizeof l, "Hostname=n1;alertname=Long;gpu=%d", k);
        put(f.st, "ALERTS_FOR_STATE", l, T0 - 5 * 60 * S, (double)((T0 - since_min[k] * 60 * S) / 1000));
    }
    static const int64_t at[] = {0, 15 * S, 10 * 60 * S, 15 * 60 * S};
    for (size_t i = 0; i < 4; i++)
        for (int k = 0; k < 4; k++) {
            char l[64];
            snprintf(l, sizeof l, "Hostname=n1;gpu=%d", k);
            put(f.st, "gpu_util", l, T0 + at[i], 50);
        }
    static const char *const firing[] = {"1000", "1000", "1010", "1110"}; /* gpu 0..3 at each tick */
    for (size_t i = 0; i < 4; i++) {
        tick_ok(&f, T0 + at[i]);
        for (int k = 0; i && k < 4; k++) {
            char sel[128];
            double v;
            snprintf(sel, sizeof sel, "ALERTS{alertname=\"Long\",alertstate=\"firing\",gpu=\"%d\"}", k);
            int got = sample_at(f.st, sel, T0 + at[i], &v) && v == 1;
            if (got != (firing[i][k] == '1'))
                gp_test_fail(__FILE__, __LINE__, "tick %zu gpu %d: firing %d", i, k, got);
        }
    }
    fixture_close(&f);
}

/* The newest sample of the one series sel selects at or before t: 1 with
 * *v, 0 when none. */
static int newest(struct gp_storage *st, const char *sel, int64_t t, double *v)
{
    struct gp_matcher *m;
    size_t nm;
    char err[256];
    CHECK_INT(gp_selector_parse(sel, strlen(sel), &m, &nm, err, sizeof err), GP_OK);
    struct gp_store_selection s;
    CHECK_INT(gp_storage_select(st, m, nm, T0 - 600 * S, t, &s), GP_OK);
    gp_matchers_free(m, nm);
    int found = 0;
    if (s.n == 1) {
        struct gp_samples smp = {0};
        CHECK_INT(gp_storage_read(st, s.series[0].id, T0 - 600 * S, t, &smp), GP_OK);
        if (smp.n) {
            *v = smp.v[smp.n - 1];
            found = 1;
        }
        gp_samples_free(&smp);
    }
    gp_storage_selection_free(&s);
    return found;
}

/* A reload (SIGHUP): a rule that keeps its name and labels keeps its
 * state whatever its new expression (the pending alert goes on to fire
 * at its old activeAt + for), its new annotations apply, a rule that is
 * gone ends its series with a stale marker, a new group runs, and the
 * group's counters carry over. */
static void test_eval_reload(void)
{
    static const char before[] = "groups:\n"
                                 "  - name: g\n"
                                 "    rules:\n"
                                 "      - record: node:max\n"
                                 "        expr: avg by (Hostname) (gpu_util)\n"
                                 "      - record: gone\n"
                                 "        expr: sum(gpu_util)\n"
                                 "      - alert: Busy\n"
                                 "        expr: gpu_util > 60\n"
                                 "        for: 30s\n"
                                 "        annotations: {summary: a}\n";
    static const char after[] = "groups:\n"
                                "  - name: g\n"
                                "    rules:\n"
                                "      - record: node:max\n"
                                "        expr: max by (Hostname) (gpu_util)\n"
                                "      - alert: Busy\n"
                                "        expr: gpu_util > 65\n"
                                "        for: 30s\n"
                                "        annotations: {summary: \"b {{ $value }}\", description: d}\n"
                                "  - name: h\n"
                                "    rules:\n"
                                "      - record: answer\n"
                                "        expr: 42\n";
    struct fixture f;
    fixture_open(&f, before);
    for (int64_t t = T0 - 60 * S; t <= T0 + 60 * S; t += 15 * S) {
        put(f.st, "gpu_util", "Hostname=n1;gpu=0", t, 50);
        put(f.st, "gpu_util", "Hostname=n1;gpu=1", t, 70);
    }
    tick_ok(&f, T0);
    tick_ok(&f, T0 + 15 * S);
    double v;
    CHECK(sample_at(f.st, "node:max", T0 + 15 * S, &v));
    CHECK_DBL(v, 60, 0);
    CHECK(sample_at(f.st, "gone", T0 + 15 * S, &v));
    CHECK_DBL(v, 120, 0);

    struct gp_promrules rs = {0};
    parse_ok(after, "t.yml", &rs);
    char err[256];
    CHECK_INT(gp_promrules_run_reload(f.run, &rs, err, sizeof err), GP_OK);
    CHECK_INT(rs.n, 0); /* taken */
    CHECK_INT(gp_promrules_count(f.run), 3);
    /* the removed rule's series ended at the reload */
    CHECK(newest(f.st, "gone", gp_wall_ms() + 1000, &v));
    CHECK_INT(gp_f64_bits(v), GP_STALE_NAN_BITS);
    /* still pending until its old activeAt (T0) + 30s: the state carried */
    json_t *j = rules_json(&f, 'a');
    json_t *groups = json_object_get(json_object_get(j, "data"), "groups");
    CHECK_INT(json_array_size(groups), 2);
    json_t *busy = json_array_get(json_object_get(json_array_get(groups, 0), "rules"), 0);
    CHECK_STR(json_string_value(json_object_get(busy, "state")), "pending");
    CHECK_STR(json_string_value(json_object_get(busy, "query")), "gpu_util > 65");
    json_decref(j);
    tick_ok(&f, T0 + 30 * S);
    CHECK(sample_at(f.st, "node:max", T0 + 30 * S, &v));
    CHECK_DBL(v, 70, 0); /* the new expression */
    CHECK(sample_at(f.st, "answer", T0 + 30 * S, &v));
    CHECK(sample_at(f.st, "ALERTS{alertname=\"Busy\",alertstate=\"firing\"}", T0 + 30 * S, &v));
    CHECK_DBL(v, 1, 0);
    char *js = alerts_json(&f, GP_ALERT_FIRING);
    CHECK_CONTAINS(js, "\"kind\":\"Busy\"");
    CHECK_CONTAINS(js, "b 70");
    free(js);
    /* /metrics: three rounds of group g (3, 3, 2 rules), one of h */
    struct gp_buf b;
    gp_buf_init(&b, 0);
    {
        struct gp_metric_text_sink t;
        gp_metric_text_sink_init(&t, &b);
        gp_promrules_walk_metrics(f.run, &t.base);
    }
    gp_buf_putc(&b, '\0');
    CHECK_CONTAINS(b.data, "gpulse_rule_group_rules{rule_group=\"t.yml;g\"} 2\n");
    CHECK_CONTAINS(b.data, "gpulse_rule_evaluations_total{rule_group=\"t.yml;g\"} 8\n");
    CHECK_CONTAINS(b.data, "gpulse_rule_evaluations_total{rule_group=\"t.yml;h\"} 1\n");
    CHECK_CONTAINS(b.data, "gpulse_rule_evaluation_failures_total{rule_group=\"t.yml;g\"} 0\n");
    gp_buf_free(&b);
    fixture_close(&f);
}

/* A run without rule files answers an empty list; NULL too. */
static void test_empty(void)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_promrules_json(NULL, 0, &b), GP_OK);
    gp_buf_putc(&b, '\0');
    CHECK_STR(b.data, "{\"status\":\"success\",\"data\":{\"groups\":[]}}\n");
    gp_buf_free(&b);
    CHECK_INT(gp_promrules_tick(NULL, NULL, 0, NULL, NULL, 0), GP_OK);
    CHECK_INT(gp_promrules_count(NULL), 0);
}

const struct gp_test gp_tests_promrules[] = {
    {"parse", test_parse},
    {"deploy_rules", test_deploy_rules},
    {"malformed", test_malformed},
    {"load_files", test_load_files},
    {"templates", test_templates},
    {"eval_chain", test_eval_chain},
    {"eval_keep_firing", test_eval_keep_firing},
    {"eval_errors", test_eval_errors},
    {"eval_restore", test_eval_restore},
    {"eval_reload", test_eval_reload},
    {"empty", test_empty},
    {0},
};
