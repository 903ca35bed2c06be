/*
 * simulate_spec.h - the --simulate SPEC parser.
 *
 * A spec is a comma-separated list of NODESxGPUSxMODEL items
 * ("4x8xH100", "2x8xH100,1x8xMI300X"): NODES simulated hosts, each with
 * GPUS GPUs of MODEL (a short name from the model table, any case). Blanks
 * around items and around each part are allowed; empty items are not.
 * This is the parser alone, free of any sampling state, so the fuzz target
 * and the tests call it directly.
 */
#ifndef GP_SIMULATE_SPEC_H
#define GP_SIMULATE_SPEC_H

#include "lib/gpumodels.h"

#include <stddef.h>

#define GP_SIM_MAX_NODES 1024        /* per item */
#define GP_SIM_MAX_GPUS_PER_NODE 16
#define GP_SIM_MAX_TOTAL_GPUS 8192   /* over the whole spec */
#define GP_SIM_MAX_GROUPS 64         /* items in one spec */
#define GP_SIM_MAX_SPEC_LEN 4096

struct gp_sim_group {
    unsigned nodes;
    unsigned gpus; /* per node */
    const struct gp_gpumodel *model;
};

struct gp_sim_spec {
    unsigned ngroups;
    struct gp_sim_group groups[GP_SIM_MAX_GROUPS];
    unsigned total_nodes, total_gpus;
};

/*
 * Parses s into *out (caller's storage). Returns GP_OK, or GP_EUSAGE with
 * a message in err naming the bad part, e.g. "invalid --simulate spec
 * '2x8': expected NODESxGPUSxMODEL"; *out is unspecified on error.
 */
int gp_sim_spec_parse(const char *s, struct gp_sim_spec *out, char *err, size_t errlen);

#endif
