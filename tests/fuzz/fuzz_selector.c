/*
 * Fuzz target: PromQL selectors (src/store/matcher.c) as the query API
 * receives them. Any bytes go to gp_selector_parse. When they parse:
 *   - each matcher is run on a few values (empty, digits, its own value,
 *     a slice of the input); = must accept its own value and != refuse it;
 *   - the matchers select from a small fixed index of GPU series
 *     (src/store/series.c), and the ids must equal a brute-force
 *     evaluation of every series, label names and values of the
 *     selection must be sorted and distinct.
 * abort() on any disagreement.
 */
#include "lib/err.h"
#include "store/labels.h"
#include "store/matcher.h"
#include "store/series.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { NSERIES = 60 };
static struct gp_sindex *idx; /* built once, kept for the whole run */
static uint32_t ids[NSERIES];

static void build_index(void)
{
    static const char *const metrics[] = {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "up",
                                          "node_load1"};
    if (gp_sindex_new(&idx) != GP_OK)
        abort();
    struct gp_buf b;
    gp_buf_init(&b, 0);
    for (unsigned i = 0; i < NSERIES; i++) {
        char host[16], gpu[8], uuid[24];
        snprintf(host, sizeof host, "n%u", i % 5);
        snprintf(gpu, sizeof gpu, "%u", i % 11);
        snprintf(uuid, sizeof uuid, "GPU-%04x", i * 7919u);
        struct gp_label l[5];
        size_t n = 0;
        l[n++] = (struct gp_label){{"Hostname", 8}, {host, strlen(host)}};
        if (i % 3)
            l[n++] = (struct gp_label){{"UUID", 4}, {uuid, strlen(uuid)}};
        l[n++] = (struct gp_label){{"__name__", 8}, {metrics[i % 4], strlen(metrics[i % 4])}};
        if (i % 4 < 2)
            l[n++] = (struct gp_label){{"gpu", 3}, {gpu, strlen(gpu)}};
        if (i % 7 == 0)
            l[n++] = (struct gp_label){{"mig", 3}, {"1g.10gb", 7}};
        gp_buf_reset(&b);
        if (gp_labels_encode(l, n, &b) != GP_OK)
            abort();
        const uint8_t *p = (const uint8_t *)b.data;
        if (gp_sindex_add(idx, p, b.len, gp_labels_hash(p, b.len), i * 3 + 1, &ids[i]) != GP_OK)
            abort();
    }
    gp_buf_free(&b);
}

struct order {
    char prev[256];
    size_t prevlen;
    int first;
};

static void check_order(void *arg, const char *s, size_t len)
{
    struct order *o = arg;
    if (!o->first) {
        size_t k = len < o->prevlen ? len : o->prevlen;
        int c = memcmp(o->prev, s, k);
        if (c > 0 || (c == 0 && len <= o->prevlen))
            abort(); /* not strictly increasing */
    }
    o->first = 0;
    o->prevlen = len < sizeof o->prev ? len : sizeof o->prev;
    memcpy(o->prev, s, o->prevlen);
}

static void check_select(const struct gp_matcher *m, size_t nm)
{
    if (!idx)
        build_index();
    uint32_t *got;
    size_t n;
    if (gp_sindex_select(idx, m, nm, &got, &n) != GP_OK || !got)
        abort();
    size_t k = 0;
    for (unsigned i = 0; i < NSERIES; i++) {
        size_t len;
        const uint8_t *b = gp_sindex_labels(idx, ids[i], &len);
        int all = 1;
        for (size_t j = 0; j < nm && all; j++) {
            struct gp_str v;
            gp_labels_get(b, len, m[j].name, &v);
            all = gp_matcher_matches(&m[j], v.ptr, v.len);
        }
        if (all && (k >= n || got[k++] != ids[i]))
            abort();
    }
    if (k != n)
        abort();
    struct order o = {.first = 1};
    gp_sindex_label_names(idx, got, n, check_order, &o);
    for (size_t j = 0; j < nm; j++) {
        struct order ov = {.first = 1};
        gp_sindex_label_values(idx, m[j].name, got, n, check_order, &ov);
    }
    free(got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gp_matcher *m;
    size_t n;
    char err[256];
    int rc = gp_selector_parse((const char *)data, size, &m, &n, err, sizeof err);
    if (rc != GP_OK) {
        if (m != NULL || n != 0 || err[0] == '\0')
            abort();
        return 0;
    }
    if (n == 0 || n > GP_SELECTOR_MAX_MATCHERS)
        abort();
    const char *vals[] = {"", "0", "1", "10", "abc", "\n"};
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < sizeof vals / sizeof vals[0]; k++)
            gp_matcher_matches(&m[i], vals[k], strlen(vals[k]));
        gp_matcher_matches(&m[i], (const char *)data, size < 64 ? size : 64);
        int own = gp_matcher_matches(&m[i], m[i].value, m[i].value_len);
        if ((m[i].op == GP_MATCH_EQ && !own) || (m[i].op == GP_MATCH_NE && own))
            abort();
    }
    check_select(m, n);
    gp_matchers_free(m, n);
    return 0;
}
