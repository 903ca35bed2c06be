/*
 * Fuzz target: series.log, the series registry's journal
 * (src/store/serieslog.c). The input is parsed as a whole file, as the
 * store's start does; every record the parser hands out must hold what it
 * promises: a nonzero id, labels that validate, and counts that add up.
 * Both forms of records: one series with its labels (older files) and
 * symbol ranges with series by reference (symtab.h).
 */
#include "lib/err.h"
#include "store/labels.h"
#include "store/store_int.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_series(void *arg, const struct gp_wal_series *ws)
{
    uint64_t *n = arg;
    if (ws->id == 0 || gp_labels_validate(ws->labels, ws->labels_len) != GP_OK)
        abort();
    (*n)++;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gp_st_slog_stats st;
    struct gp_st_syms syms = {0};
    uint64_t n = 0;
    int rc = gp_st_slog_parse(data, size, &syms, on_series, &n, &st);
    if ((rc != GP_OK && rc != GP_ENOMEM) || (rc == GP_OK && n != st.records) ||
        st.torn_bytes > size || st.old_records > st.records || syms.n > size)
        abort();
    gp_st_syms_free(&syms);
    return 0;
}
