/*
 * test_metrics_ref.c - the metric table (lib/metrics.h) is sound, and
 * docs/metrics.md's reference section is exactly what the code generates
 * from it (agent/metrics_ref.c): a family added, renamed or re-described
 * in the code without `scripts/docs.sh` fails here.
 */
#include "test.h"

#include "agent/metrics_ref.h"
#include "lib/metrics.h"
#include "sources/frame.h"

#include <stdlib.h>

/* The first line where a and b differ, for a readable failure. */
static void first_difference(const char *a, const char *b, char *out, size_t outlen)
{
    int line = 1;
    const char *la = a, *lb = b;
    while (*a && *a == *b) {
        if (*a == '\n') {
            line++;
            la = a + 1;
            lb = b + 1;
        }
        a++, b++;
    }
    snprintf(out, outlen, "line %d of the section:\n  docs: %.*s\n  code: %.*s", line,
             (int)strcspn(lb, "\n"), lb, (int)strcspn(la, "\n"), la);
}

static void test_docs_match_code(void)
{
    const char *page = gp_test_repo_text("docs/metrics.md");
    const char *begin = strstr(page, GP_METRICS_REF_BEGIN);
    const char *end = begin ? strstr(begin, GP_METRICS_REF_END) : NULL;
    if (!begin || !end)
        gp_test_fail(__FILE__, __LINE__, "docs/metrics.md lacks the metrics-reference markers");
    begin += strlen(GP_METRICS_REF_BEGIN);
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_metrics_reference(&b), 0);
    size_t n = (size_t)(end - begin);
    if (n != b.len || memcmp(begin, b.data, n)) {
        char *docs = strndup(begin, n), diff[1024];
        first_difference(b.data, docs, diff, sizeof diff);
        free(docs);
        gp_test_fail(__FILE__, __LINE__,
                     "docs/metrics.md differs from the code's metric tables; run scripts/docs.sh\n%s", diff);
    }
    gp_buf_free(&b);
}

/* Every name once, valid, with help; counters named _total (but
 * dcgm-exporter's own names, which are the GPU table's). */
static void test_table_sound(void)
{
    for (int i = 0; i < GP_M__COUNT; i++) {
        const struct gp_metric_info *m = &gp_metrics[i];
        CHECK(m->name && !strncmp(m->name, "gpulse_", 7));
        CHECK(strspn(m->name, "abcdefghijklmnopqrstuvwxyz0123456789_") == strlen(m->name));
        CHECK(m->help && m->help[0] && m->help[strlen(m->help) - 1] == '.');
        CHECK(!strchr(m->help, '\n') && !strchr(m->help, '\\'));
        CHECK(m->labels != NULL);
        CHECK((int)m->section >= 0 && m->section < GP_MS__COUNT);
        size_t len = strlen(m->name);
        int total = len > 6 && !strcmp(m->name + len - 6, "_total");
        if (m->kind == GP_MK_COUNTER && !total)
            gp_test_fail(__FILE__, __LINE__, "counter %s does not end in _total", m->name);
        if (m->kind != GP_MK_COUNTER && total)
            gp_test_fail(__FILE__, __LINE__, "%s %s ends in _total", gp_metric_kind_name(m->kind), m->name);
        for (int j = 0; j < i; j++)
            if (!strcmp(gp_metrics[j].name, m->name))
                gp_test_fail(__FILE__, __LINE__, "%s twice in GP_METRICS", m->name);
        for (int j = 0; j < GPF__COUNT; j++)
            if (!strcmp(gp_gpu_fields[j].name, m->name))
                gp_test_fail(__FILE__, __LINE__, "%s in both GP_METRICS and GP_GPU_FIELDS", m->name);
    }
    for (int s = 0; s < GP_MS__COUNT; s++)
        CHECK(gp_metric_section_titles[s] && gp_metric_section_titles[s][0]);
}

/* The reference names every family of both tables, each once. */
static void test_reference_names_every_family(void)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    CHECK_INT(gp_metrics_reference(&b), 0);
    char needle[160];
    for (int i = 0; i < GP_M__COUNT + GPF__COUNT; i++) {
        const char *name = i < GP_M__COUNT ? gp_metrics[i].name : gp_gpu_fields[i - GP_M__COUNT].name;
        snprintf(needle, sizeof needle, "| `%s` |", name);
        const char *at = strstr(b.data, needle);
        if (!at || strstr(at + 1, needle))
            gp_test_fail(__FILE__, __LINE__, "the reference names %s %s", name, at ? "twice" : "nowhere");
    }
    gp_buf_free(&b);
}

/* HELP and TYPE come from the row, in the text format's order. */
static void test_head(void)
{
    struct gp_buf b;
    gp_buf_init(&b, 0);
    gp_metric_head(&b, GP_M_SRV_WRITE_DURATION);
    CHECK_STR(b.data, "# HELP gpulse_server_write_duration_seconds Time to decode, store and sync one "
                      "remote-write request.\n# TYPE gpulse_server_write_duration_seconds histogram\n");
    gp_buf_free(&b);
}

/* docs/migrate-from-dcgm-exporter.md's side-by-side table has a row for
 * every dcgm-exporter name gpulse exposes, with gpulse's type. */
static void test_migration_page_names_every_dcgm_field(void)
{
    const char *page = gp_test_repo_text("docs/migrate-from-dcgm-exporter.md");
    char needle[160];
    for (int i = 0; i < GPF__COUNT; i++) {
        const char *name = gp_gpu_fields[i].name;
        if (strncmp(name, "DCGM_", 5))
            continue;
        snprintf(needle, sizeof needle, "\n| `%s` | ", name);
        const char *row = strstr(page, needle + 1);
        if (!row)
            gp_test_fail(__FILE__, __LINE__, "the migration page's table has no row for %s", name);
        const char *type = gp_gpu_fields[i].type == GP_COUNTER ? "counter" : "gauge";
        const char *unit_end = strstr(row + strlen(needle) - 1, " | "); /* after the unit cell */
        CHECK(unit_end != NULL);
        if (strncmp(unit_end + 3, type, strlen(type)) || unit_end[3 + strlen(type)] != ' ')
            gp_test_fail(__FILE__, __LINE__, "the migration page gives %s another type than %s", name, type);
    }
}

const struct gp_test gp_tests_metrics_ref[] = {
    {"docs_match_code", test_docs_match_code},
    {"table_sound", test_table_sound},
    {"reference_names_every_family", test_reference_names_every_family},
    {"head", test_head},
    {"migration_page_names_every_dcgm_field", test_migration_page_names_every_dcgm_field},
    {0},
};
