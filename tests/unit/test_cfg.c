/* test_cfg.c - the settings engine: lists, sizes, several sections. */
#include "lib/cfg.h"
#include "lib/err.h"
#include "test.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct one {
    char name[16];
    uint64_t size;
    struct gp_cfg_list urls;
    bool flag;
};
struct two {
    char name[16];
    int64_t every_ms;
};

static const struct gp_cfg_key one_keys[] = {
    GP_CFG_ROW(struct one, name, "name", "name", STR, "first", "a name"),
    GP_CFG_ROW(struct one, size, "size", "size", BYTES, "1MiB", "a size"),
    GP_CFG_ROW(struct one, urls, "urls", "url", LIST, "", "targets"),
    GP_CFG_ROW(struct one, flag, "flag", "flag", BOOL, "false", "a switch"),
};
static const struct gp_cfg_key two_keys[] = {
    GP_CFG_ROW(struct two, name, "name", "name", STR, "second", "shadowed by the first section"),
    GP_CFG_ROW(struct two, every_ms, "every", "every", DURATION, "5m", "a period"),
};

static void sections(struct gp_cfg_section s[2], struct one *a, struct two *b)
{
    s[0] = (struct gp_cfg_section){"one", one_keys, 4, a};
    s[1] = (struct gp_cfg_section){"two", two_keys, 2, b};
    gp_cfg_defaults(s, 2);
}

static void test_bytes(void)
{
    uint64_t v;
    char err[128];
    CHECK_INT(gp_parse_bytes("512MiB", &v, err, sizeof err), GP_OK);
    CHECK(v == 512ull << 20);
    CHECK_INT(gp_parse_bytes("2GB", &v, err, sizeof err), GP_OK);
    CHECK(v == 2000000000ull);
    CHECK_INT(gp_parse_bytes("17", &v, err, sizeof err), GP_OK);
    CHECK(v == 17);
    CHECK_INT(gp_parse_bytes("1XB", &v, err, sizeof err), GP_EPARSE);
    CHECK_CONTAINS(err, "unknown unit");
    CHECK_INT(gp_parse_bytes("-1", &v, err, sizeof err), GP_EPARSE);
    CHECK_INT(gp_parse_bytes("", &v, err, sizeof err), GP_EPARSE);
    CHECK_INT(gp_parse_bytes("99999999999TiB", &v, err, sizeof err), GP_EPARSE);
    CHECK_CONTAINS(err, "too large");
}

static void test_sections_and_lists(void)
{
    struct one a;
    struct two b;
    struct gp_cfg_section s[2];
    sections(s, &a, &b);
    CHECK_STR(a.name, "first");
    CHECK_STR(b.name, "second");
    CHECK(a.size == 1u << 20);
    CHECK_INT(a.urls.n, 0);
    const char *yaml = "one:\n  urls: [http://a, http://b]\n  size: 2KiB\n"
                       "two:\n  name: other\n  every: 1m\nthird:\n  anything: [1, {x: 2}]\n";
    char err[256];
    CHECK_INT(gp_cfg_parse_yaml(s, 2, yaml, strlen(yaml), err, sizeof err), GP_OK);
    CHECK_INT(a.urls.n, 2);
    CHECK_STR(a.urls.v[1], "http://b");
    CHECK(a.size == 2048);
    CHECK_STR(b.name, "other");
    CHECK(b.every_ms == 60000);
    /* A scalar for a list is a list of one. */
    CHECK_INT(gp_cfg_parse_yaml(s, 2, "one:\n  urls: http://c\n", 21, err, sizeof err), GP_OK);
    CHECK_INT(a.urls.n, 1);
    CHECK_STR(a.urls.v[0], "http://c");
    /* A nested map in a list is named by its line. */
    const char *bad = "one:\n  urls:\n    - {x: 1}\n";
    CHECK_INT(gp_cfg_parse_yaml(s, 2, bad, strlen(bad), err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "line 2");
    CHECK_CONTAINS(err, "list of values");
    const char *unknown = "two:\n  nope: 1\n";
    CHECK_INT(gp_cfg_parse_yaml(s, 2, unknown, strlen(unknown), err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "unknown key 'two.nope'");
}

static void test_list_flags_replace_the_file(void)
{
    struct one a;
    struct two b;
    struct gp_cfg_section s[2];
    sections(s, &a, &b);
    char path[512], err[256];
    const char *dir = gp_test_tmpdir();
    gp_test_write_file(dir, "c.yaml", "one:\n  urls: [http://file]\n  name: fromfile\n");
    snprintf(path, sizeof path, "%s/c.yaml", dir);
    char *argv[] = {"--url", "http://x", "--config", path, "--url=http://y", "--name", "flag",
                    "--every", "2s", "--flag"};
    char cfgfile[512];
    bool help;
    CHECK_INT(gp_cfg_from_args(s, 2, "test", 10, argv, cfgfile, sizeof cfgfile, &help, err,
                               sizeof err),
              GP_OK);
    CHECK_STR(cfgfile, path);
    CHECK_INT(a.urls.n, 2);
    CHECK_STR(a.urls.v[0], "http://x");
    CHECK_STR(a.urls.v[1], "http://y");
    CHECK_STR(a.name, "flag"); /* the first section wins a shared flag */
    CHECK_STR(b.name, "second");
    CHECK(b.every_ms == 2000);
    CHECK(a.flag);
    /* More values than a list holds is a clear error. */
    sections(s, &a, &b);
    char *many[2 * (GP_CFG_LIST_MAX + 1)];
    for (int i = 0; i < GP_CFG_LIST_MAX + 1; i++) {
        many[2 * i] = "--url";
        many[2 * i + 1] = "http://z";
    }
    CHECK_INT(gp_cfg_from_args(s, 2, "test", 2 * (GP_CFG_LIST_MAX + 1), many, NULL, 0, &help, err,
                               sizeof err),
              GP_EUSAGE);
    CHECK_CONTAINS(err, "at most");
}

/* A MAP key: a YAML mapping, NAME=VALUE flags that replace the file's map. */
static void test_maps(void)
{
    struct m {
        struct gp_cfg_list labels;
    } m;
    static const struct gp_cfg_key keys[] = {
        GP_CFG_ROW(struct m, labels, "labels", "label", MAP, "", "labels"),
    };
    const struct gp_cfg_section s = {"one", keys, 1, &m};
    gp_cfg_defaults(&s, 1);
    CHECK_INT(m.labels.n, 0);
    char err[256];
    const char *yaml = "one:\n  labels:\n    cluster: a\n    dc: \"x=y\"\n";
    CHECK_INT(gp_cfg_parse_yaml(&s, 1, yaml, strlen(yaml), err, sizeof err), GP_OK);
    CHECK_INT(m.labels.n, 2);
    CHECK_STR(m.labels.v[0], "cluster=a");
    CHECK_STR(m.labels.v[1], "dc=x=y"); /* the value keeps its own '=' */
    /* An empty value is the empty map. */
    const char *empty = "one:\n  labels:\n";
    CHECK_INT(gp_cfg_parse_yaml(&s, 1, empty, strlen(empty), err, sizeof err), GP_OK);
    CHECK_INT(m.labels.n, 0);
    /* A list, a scalar or a nested map is not a map of names to values. */
    const char *list = "one:\n  labels: [a, b]\n";
    CHECK_INT(gp_cfg_parse_yaml(&s, 1, list, strlen(list), err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "line 2: 'one.labels' must be a mapping of names to values");
    const char *scalar = "one:\n  labels: cluster=a\n";
    CHECK_INT(gp_cfg_parse_yaml(&s, 1, scalar, strlen(scalar), err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "must be a mapping");
    const char *nested = "one:\n  labels:\n    cluster: {a: 1}\n";
    CHECK_INT(gp_cfg_parse_yaml(&s, 1, nested, strlen(nested), err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "line 3: 'one.labels.cluster' must be a single value");
    const char *twice = "one:\n  labels:\n    a: 1\n    a: 2\n";
    CHECK_INT(gp_cfg_parse_yaml(&s, 1, twice, strlen(twice), err, sizeof err), GP_ECONFIG);
    CHECK_CONTAINS(err, "line 4: 'labels': 'a' is given twice");
    /* Flags: NAME=VALUE, repeated; they replace the file's map. */
    char path[512];
    const char *dir = gp_test_tmpdir();
    gp_test_write_file(dir, "m.yaml", "one:\n  labels:\n    fromfile: 1\n");
    snprintf(path, sizeof path, "%s/m.yaml", dir);
    char *argv[] = {"--config", path, "--label", "cluster=b", "--label=dc=d1"};
    bool help;
    CHECK_INT(gp_cfg_from_args(&s, 1, "test", 5, argv, NULL, 0, &help, err, sizeof err), GP_OK);
    CHECK_INT(m.labels.n, 2);
    CHECK_STR(m.labels.v[0], "cluster=b");
    CHECK_STR(m.labels.v[1], "dc=d1");
    char *noeq[] = {"--label", "cluster"};
    CHECK_INT(gp_cfg_from_args(&s, 1, "test", 2, noeq, NULL, 0, &help, err, sizeof err), GP_EUSAGE);
    CHECK_CONTAINS(err, "'labels': expected NAME=VALUE, got 'cluster'");
    char *noname[] = {"--label", "=x"};
    CHECK_INT(gp_cfg_from_args(&s, 1, "test", 2, noname, NULL, 0, &help, err, sizeof err), GP_EUSAGE);
    CHECK_CONTAINS(err, "expected NAME=VALUE");
    char *dup[] = {"--label", "a=1", "--label", "a=2"};
    CHECK_INT(gp_cfg_from_args(&s, 1, "test", 4, dup, NULL, 0, &help, err, sizeof err), GP_EUSAGE);
    CHECK_CONTAINS(err, "'a' is given twice");
    /* --help and the man page say how the flag repeats. */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f != NULL);
    gp_cfg_usage(f, &s, 1);
    gp_cfg_man(f, &s, 1, true);
    fclose(f);
    CHECK_CONTAINS(text, "--label NAME=VALUE   (yaml: one.labels, a mapping; the flag repeats)");
    CHECK_CONTAINS(text, "\\fBlabels\\fR: \\fImapping of names to strings\\fR");
    free(text);
}

/* The man pages' entries: flag and key forms, roff escapes, defaults. */
static void test_man_roff(void)
{
    static const struct gp_cfg_key keys[] = {
        GP_CFG_ROW(struct one, name, "name", "the-name", STR, "./x-y", ".dot, a\\b and -z"),
        GP_CFG_ROW(struct one, flag, "flag", "flag", BOOL, "false", "a switch."),
        GP_CFG_ROW(struct one, urls, "urls", "url", LIST, "", "targets"),
    };
    struct one a;
    const struct gp_cfg_section s = {"one", keys, 3, &a};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f != NULL);
    gp_cfg_man(f, &s, 1, false);
    fclose(f);
    CHECK_CONTAINS(text, ".TP\n\\fB\\-\\-the\\-name\\fR \\fIVALUE\\fR\n"
                         "\\&.dot, a\\eb and \\-z.\nDefault: \\fB\\&./x\\-y\\fR.\n"
                         "YAML: \\fBone.name\\fR.\n");
    /* A help that ends in a period gets no second one; a bool its --no- form. */
    CHECK_CONTAINS(text, "\\fB\\-\\-flag\\fR, \\fB\\-\\-no\\-flag\\fR\na switch.\n");
    CHECK_CONTAINS(text, "YAML: \\fBone.urls\\fR (a list; the flag repeats).\n");
    free(text);
    f = open_memstream(&text, &len);
    CHECK(f != NULL);
    gp_cfg_man(f, &s, 1, true);
    fclose(f);
    CHECK_CONTAINS(text, ".TP\n\\fBname\\fR: \\fIstring\\fR\n");
    CHECK_CONTAINS(text, "Flag: \\fB\\-\\-the\\-name\\fR.\n");
    CHECK_CONTAINS(text, "\\fBurls\\fR: \\fIlist of strings\\fR\ntargets.\n"
                         "Flag: \\fB\\-\\-url\\fR (repeated for several).\n");
    free(text);
}

const struct gp_test gp_tests_cfg[] = {
    {"man_roff", test_man_roff},
    {"bytes", test_bytes},
    {"sections_and_lists", test_sections_and_lists},
    {"list_flags_replace_the_file", test_list_flags_replace_the_file},
    {"maps", test_maps},
    {0},
};
