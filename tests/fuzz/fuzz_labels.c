/*
 * Fuzz target: label blobs as read back from disk (src/store/labels.c).
 * Any bytes go to gp_labels_validate and the iterator. For a blob that
 * validates: iteration ends cleanly with names strictly increasing and
 * values non-empty; gp_labels_get finds every label; re-encoding the
 * labels gives the same bytes (the canonical form); and the series index
 * takes it, finds it by hash and gives the same bytes back. For one that
 * does not, the index refuses it as malformed. abort() on any violation.
 */
#include "lib/err.h"
#include "store/labels.h"
#include "store/series.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAXL = 256 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int valid = gp_labels_validate(data, size) == GP_OK;
    struct gp_labels_iter it;
    struct gp_label l[MAXL];
    struct gp_str n, v;
    size_t nl = 0;
    int rc;
    gp_labels_iter_init(&it, data, size);
    while ((rc = gp_labels_next(&it, &n, &v)) == 1) {
        if (n.ptr < (const char *)data || n.ptr + n.len > (const char *)data + size ||
            v.ptr < (const char *)data || v.ptr + v.len > (const char *)data + size)
            abort(); /* a view outside the blob */
        if (nl < MAXL)
            l[nl] = (struct gp_label){n, v};
        nl++;
    }
    if (rc != 0 && rc != GP_EPARSE)
        abort();
    if (gp_labels_next(&it, &n, &v) != 0)
        abort(); /* a finished (or failed) iterator stays finished */
    if (valid && rc != 0)
        abort();

    struct gp_sindex *x;
    if (gp_sindex_new(&x) != GP_OK)
        abort();
    uint64_t h = gp_labels_hash(data, size);
    if (h != gp_labels_hash(data, size))
        abort();
    uint32_t id;
    int arc = gp_sindex_add(x, data, size, h, 0, &id);
    if (!valid) {
        if (arc != GP_EPARSE)
            abort();
        gp_sindex_free(x);
        return 0;
    }
    if (arc != GP_OK || id != 1 || gp_sindex_find(x, data, size, h) != 1)
        abort();
    size_t len;
    const uint8_t *back = gp_sindex_labels(x, 1, &len);
    if (len != size || memcmp(back, data, size) != 0)
        abort();
    if (gp_sindex_add(x, data, size, h, 0, &id) != GP_EUSAGE)
        abort(); /* a duplicate */
    gp_sindex_free(x);

    if (nl > MAXL)
        return 0;
    for (size_t i = 0; i < nl; i++) {
        if (l[i].name.len == 0 || l[i].value.len == 0)
            abort();
        if (l[i].name.len < 200 && !memchr(l[i].name.ptr, '\0', l[i].name.len)) {
            char name[200];
            memcpy(name, l[i].name.ptr, l[i].name.len);
            name[l[i].name.len] = '\0';
            struct gp_str got;
            if (gp_labels_get(data, size, name, &got) != 1 || got.ptr != l[i].value.ptr ||
                got.len != l[i].value.len)
                abort();
        }
    }
    struct gp_buf b;
    gp_buf_init(&b, 0);
    if (gp_labels_encode(l, nl, &b) != GP_OK || b.len != size || memcmp(b.data, data, size) != 0)
        abort();
    gp_buf_free(&b);
    return 0;
}
