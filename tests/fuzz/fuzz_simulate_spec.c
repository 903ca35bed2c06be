/* Fuzz target: --simulate specs (NODESxGPUSxMODEL[,...]). */
#include "lib/err.h"
#include "sources/simulate_spec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    struct gp_sim_spec spec;
    char err[512];
    err[0] = '\0';
    int rc = gp_sim_spec_parse(s, &spec, err, sizeof err);
    if (rc == GP_OK) {
        /* an accepted spec respects every limit */
        unsigned total = 0;
        if (spec.ngroups < 1 || spec.ngroups > GP_SIM_MAX_GROUPS)
            abort();
        for (unsigned i = 0; i < spec.ngroups; i++) {
            const struct gp_sim_group *g = &spec.groups[i];
            if (!g->model || g->nodes < 1 || g->nodes > GP_SIM_MAX_NODES || g->gpus < 1 ||
                g->gpus > GP_SIM_MAX_GPUS_PER_NODE)
                abort();
            total += g->nodes * g->gpus;
        }
        if (total != spec.total_gpus || total > GP_SIM_MAX_TOTAL_GPUS)
            abort();
    } else if (rc != GP_EUSAGE || strncmp(err, "invalid --simulate spec '", 25) != 0 ||
               strlen(err) >= sizeof err) {
        abort(); /* every rejection explains itself */
    }
    free(s);
    return 0;
}
