/*
 * Fuzz target: the parser of Prometheus HTTP API answers (storage/promapi.h),
 * the JSON a remote storage cluster sends back. Any bytes must give GP_OK
 * with canonical label sets and increasing sample times, or an error with
 * a message; never a crash or a leak. Each input goes through all three
 * entry points.
 */
#include "lib/err.h"
#include "storage/promapi.h"
#include "store/labels.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void count(void *arg, const char *s, size_t n)
{
    (void)s;
    *(size_t *)arg += n;
}

static void check(int rc, const struct gp_promapi_result *r, const char *err)
{
    if (rc != GP_OK) {
        if (!err[0])
            abort(); /* every error says what */
        return;
    }
    for (size_t i = 0; i < r->n; i++) {
        if (gp_labels_validate(r->s[i].labels, r->s[i].labels_len) != GP_OK)
            abort();
        for (size_t j = 1; j < r->s[i].n; j++)
            if (r->s[i].t[j] <= r->s[i].t[j - 1])
                abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data;
    struct gp_promapi_result r;
    char err[256] = "";
    int rc = gp_promapi_parse_matrix(body, size, &r, err, sizeof err);
    check(rc, &r, err);
    gp_promapi_result_free(&r);
    err[0] = '\0';
    rc = gp_promapi_parse_series(body, size, &r, err, sizeof err);
    check(rc, &r, err);
    gp_promapi_result_free(&r);
    size_t n = 0;
    err[0] = '\0';
    rc = gp_promapi_parse_strings(body, size, count, &n, err, sizeof err);
    if (rc != GP_OK && !err[0])
        abort();
    return 0;
}
