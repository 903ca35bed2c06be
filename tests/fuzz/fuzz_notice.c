/* Fuzz target: a notice as the outbox stores it (notify/notice.h): parse,
 * and write back what parsed. */
#include "notify/notice.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gp_notice_doc d;
    char err[256];
    if (gp_notice_from_json((const char *)data, size, &d, err, sizeof err) == 0) {
        char *j;
        if (gp_notice_to_json(&d.n, &j) == 0)
            free(j);
    }
    gp_notice_doc_free(&d);
    return 0;
}
