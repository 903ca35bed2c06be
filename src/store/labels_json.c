/*
 * labels_json.c - a canonical label set as a JSON object (labels.h).
 *
 * Kept in store, not beside the JSON writer in lib: it walks the store's
 * blob form, and lib knows nothing of the store.
 */
#include "store/labels.h"

#include "lib/err.h"
#include "lib/json.h"

int gp_json_labels(struct gp_buf *b, const uint8_t *blob, size_t len)
{
    struct gp_labels_iter it;
    struct gp_str name, value;
    int rc, first = 1;
    gp_labels_iter_init(&it, blob, len);
    gp_buf_putc(b, '{');
    while ((rc = gp_labels_next(&it, &name, &value)) == 1) {
        if (!first)
            gp_buf_putc(b, ',');
        first = 0;
        gp_json_str(b, name.ptr, name.len);
        gp_buf_putc(b, ':');
        gp_json_str(b, value.ptr, value.len);
    }
    gp_buf_putc(b, '}');
    return rc < 0 ? GP_EPARSE : GP_OK;
}
