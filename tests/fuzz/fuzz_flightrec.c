/*
 * Fuzz target: PyTorch Flight Recorder dumps (src/sources/flightrec.c)
 * and the pickle reader under them (src/lib/pickle.c).
 *
 * The input is one dump file, copied into a buffer of exactly its size
 * so ASan catches any read past len. A parse either fails with
 * GP_EPARSE, GP_ETOOBIG or GP_ENOMEM, or gives a dump that is sane: a
 * rank >= 0, at most GP_FR_MAX_PGS groups with NUL-terminated names,
 * sequence numbers ordered (completed <= entered, a waiting one <=
 * entered); and the comparison of the dump with itself names nothing
 * missing (a rank cannot be behind itself).
 */
#include "lib/err.h"
#include "lib/pickle.h"
#include "sources/flightrec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    struct gp_pickle p;
    char err[160];
    int rc = gp_pickle_parse(buf, size, &p, err, sizeof err);
    if (rc == GP_OK && p.root >= p.nv)
        abort();
    if (rc != GP_OK && rc != GP_EPARSE && rc != GP_ETOOBIG && rc != GP_ENOMEM)
        abort();
    gp_pickle_free(&p);
    struct gp_fr_dump d[2];
    rc = gp_fr_parse(buf, size, 3, &d[0], err, sizeof err);
    if (rc == GP_OK) {
        if (d[0].rank < 0 || d[0].npg > GP_FR_MAX_PGS)
            abort();
        for (unsigned i = 0; i < d[0].npg; i++) {
            const struct gp_fr_pg *g = &d[0].pg[i];
            if (!memchr(g->name, '\0', sizeof g->name) || !memchr(g->op, '\0', sizeof g->op))
                abort();
            if (g->last_completed > g->last_entered || g->waiting > g->last_entered)
                abort();
        }
        d[1] = d[0];
        struct gp_fr_verdict v[2];
        gp_fr_analyze(d, 2, v);
        if (v[0].missing >= 0 || v[1].missing >= 0)
            abort();
    } else if (rc != GP_EPARSE && rc != GP_ETOOBIG && rc != GP_ENOMEM) {
        abort();
    }
    free(buf);
    return 0;
}
