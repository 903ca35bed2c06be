/*
 * Fuzz target: a remote cluster's answer to the rollups query
 * (storage/storage_rollups.c, gp_storage_rollups_answer): any matrix the
 * parser takes, matched to a selection of three series of one name. The
 * minutes of each series must come out ascending and each with a count;
 * never a crash or a leak, with and without means for min and max.
 */
#include "lib/err.h"
#include "storage/promapi.h"
#include "storage/storage_int.h"
#include "store/labels.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NSEL 3

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gp_promapi_result r;
    char err[256] = "";
    if (gp_promapi_parse_matrix((const char *)data, size, &r, err, sizeof err) != GP_OK) {
        gp_promapi_result_free(&r);
        return 0;
    }
    static const char *const gpus[NSEL] = {"0", "1", "10"};
    struct gp_buf blob[NSEL];
    struct gp_store_series ser[NSEL];
    size_t idx[NSEL];
    for (size_t i = 0; i < NSEL; i++) {
        struct gp_label l[2] = {{{"__name__", 8}, {"util", 4}}, {{"gpu", 3}, {gpus[i], strlen(gpus[i])}}};
        gp_buf_init(&blob[i], 0);
        if (gp_labels_encode(l, 2, &blob[i]))
            abort();
        ser[i] = (struct gp_store_series){.id = (uint32_t)i + 1, .labels = (const uint8_t *)blob[i].data,
                                          .labels_len = blob[i].len};
        idx[i] = i;
    }
    struct gp_store_selection sel = {.series = ser, .n = NSEL};
    for (int means = 0; means < 2; means++) {
        struct gp_rollups out[NSEL];
        memset(out, 0, sizeof out);
        int rc = gp_storage_rollups_answer(&sel, idx, NSEL, &r, means, out);
        for (size_t i = 0; i < NSEL; i++) {
            for (size_t j = 0; rc == GP_OK && j < out[i].n; j++)
                if (!out[i].r[j].count || (j && out[i].r[j].t <= out[i].r[j - 1].t))
                    abort();
            gp_rollups_free(&out[i]);
        }
    }
    for (size_t i = 0; i < NSEL; i++)
        gp_buf_free(&blob[i]);
    gp_promapi_result_free(&r);
    return 0;
}
