/*
 * Fuzz target: --simulate specs (NODESxGPUSxMODEL[,...]) and the
 * simulate_faults override. An input "SPEC" is a spec alone; "SPEC|FAULTS"
 * adds an override. An accepted spec gets its fault plan built (seeded, or
 * from the override when that parses), and the plan must keep its
 * invariants: each fault kind at most once, on a GPU of the fleet, every
 * rank inside its job.
 */
#include "lib/err.h"
#include "sources/simulate_plan.h"
#include "sources/simulate_spec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Builds the plan of an accepted spec and checks its invariants. */
static void check_plan(const struct gp_sim_spec *spec, const char *faults)
{
    char err[512];
    err[0] = '\0';
    if (faults) {
        struct gp_sim_faults o;
        int rc = gp_sim_faults_parse(faults, &o, err, sizeof err);
        if (rc != GP_OK && (rc != GP_EUSAGE || strncmp(err, "invalid simulate_faults ", 24) != 0))
            abort();
        if (rc == GP_OK && o.n > GP_SIM_FAULT__COUNT)
            abort();
    }
    struct gp_sim_plan p;
    int rc = gp_sim_plan_build(spec, 7, faults, &p, err, sizeof err);
    if (rc != GP_OK) {
        if (rc != GP_EUSAGE || !faults || !err[0])
            abort(); /* the seeded plan always fits; a misfit override says why */
        return;
    }
    unsigned seen[GP_SIM_FAULT__COUNT] = {0}, marked = 0;
    if (p.ngpus != spec->total_gpus || p.nfaults > GP_SIM_FAULT__COUNT)
        abort();
    for (unsigned i = 0; i < p.nfaults; i++)
        if (p.faults[i].kind >= GP_SIM_FAULT__COUNT || seen[p.faults[i].kind]++ || p.faults[i].job >= p.njobs)
            abort();
    for (unsigned i = 0; i < p.ngpus; i++) {
        const struct gp_sim_slot *sl = &p.slots[i];
        marked += sl->fault >= 0;
        if (sl->rank < 0 || sl->rank >= sl->world || sl->job >= p.njobs)
            abort();
    }
    if (marked != p.nfaults)
        abort();
    gp_sim_plan_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    char *faults = memchr(s, '|', size);
    if (faults)
        *faults++ = '\0';
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
        check_plan(&spec, faults);
    } else if (rc != GP_EUSAGE || strncmp(err, "invalid --simulate spec '", 25) != 0 ||
               strlen(err) >= sizeof err) {
        abort(); /* every rejection explains itself */
    }
    free(s);
    return 0;
}
