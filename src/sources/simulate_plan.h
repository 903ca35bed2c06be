/*
 * simulate_plan.h - the simulated fleet's jobs and planted faults.
 *
 * A plan is a pure function of (spec, seed, faults override): which job
 * and rank every simulated GPU serves, and where exactly one of each
 * fault is planted (docs/simulate.md). The simulate source plays it; the
 * ground truth (gp_sim_plan_truth_json) is what a fleet check compares
 * the alerts with, so both come from this one table.
 *
 * Jobs: each node's GPUs form one job "sim-job-<k>", each GPU a rank
 * (rank = GPU index). The GPUs of the single-GPU faults (starved,
 * throttled, idle) are taken out of their node's job and become jobs of
 * their own, so a throttled or idle card has no peers to be a straggler
 * of, and the straggler's job never holds the throttled card.
 *
 * Timelines: each slot also carries the numbers its rank's steps follow
 * (step time, data wait, checkpoints, a hang, a crash loop, declared
 * model FLOPs), so the source that plays them and the ground truth that
 * a fleet check computes goodput and MFU from read one table.
 */
#ifndef GP_SIMULATE_PLAN_H
#define GP_SIMULATE_PLAN_H

#include "simulate_spec.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* X(id, name in overrides and truth, alert kinds that must see it, other kinds it may also raise) */
#define GP_SIM_FAULTS(X)                                                                   \
    X(LEAK, "leak", "memory_leak oom_predicted", "memory_near_exhaustion")                \
    X(STRAGGLER, "straggler", "straggler", "gpu_throttled")                              \
    X(STARVED, "starved", "dataloader_starvation", "low_goodput")                         \
    X(THROTTLED, "throttled", "gpu_throttled", "")                                       \
    X(ECC, "ecc", "gpu_hardware_errors", "")                                              \
    X(IDLE, "idle", "idle_gpu_allocated", "")                                             \
    X(POWERCAP, "powercap", "straggler", "gpu_throttled")                                \
    X(HANG, "hang", "job_hang", "low_goodput idle_gpu_allocated")                         \
    X(RESTART, "restart", "low_goodput", "")

enum gp_sim_fault_kind {
#define GP_SIM_FAULT_ENUM_(id, name, expect, allow) GP_SIM_FAULT_##id,
    GP_SIM_FAULTS(GP_SIM_FAULT_ENUM_)
#undef GP_SIM_FAULT_ENUM_
    GP_SIM_FAULT__COUNT
};

struct gp_sim_fault_info {
    const char *name, *expect, *allow; /* kinds: space-separated */
};
extern const struct gp_sim_fault_info gp_sim_fault_infos[GP_SIM_FAULT__COUNT];

/* Uniform in [0, 1) from a key and two words: the hash every simulated constant comes from. */
double gp_sim_unit(uint64_t key, uint64_t a, uint64_t b);

/* Faults of a whole job (hang, restart): their alerts carry the job, not a rank. */
bool gp_sim_fault_job_wide(enum gp_sim_fault_kind k);

#define GP_SIM_LOAD_S 8.0     /* a job's start: memory rises to its plateau, no steps yet */
#define GP_SIM_RESTART_S 10.0 /* a crashed rank's restart: memory low, nothing running */
#define GP_SIM_BATCH 32       /* samples per step per rank */
#define GP_SIM_SEQ 2048       /* tokens per sample */
#define GP_SIM_FR_AFTER_S 60.0 /* a hang's Flight Recorder dumps appear this long after it (NCCL timeout) */

/* One planted fault (an override names kind, node and gpu; the plan adds job and rank). */
struct gp_sim_fault {
    enum gp_sim_fault_kind kind;
    unsigned node, gpu;
    unsigned job;  /* job number: "sim-job-<job>" */
    int rank;
};

/* A parsed `simulate_faults` override: "none", or KIND=sim-node-N/G[,...]. */
struct gp_sim_faults {
    unsigned n;
    struct gp_sim_fault f[GP_SIM_FAULT__COUNT];
};

/*
 * Parses an override into *out (caller's storage). GP_OK, or GP_EUSAGE with
 * a message naming the bad item. Checks syntax and that a kind is given
 * once and a GPU at most once; gp_sim_plan_build checks it against a spec.
 */
int gp_sim_faults_parse(const char *s, struct gp_sim_faults *out, char *err, size_t errlen);

/* What one GPU (frame order) plays. */
struct gp_sim_slot {
    int fault;          /* enum gp_sim_fault_kind, -1: healthy */
    unsigned job;       /* "sim-job-<job>" */
    int rank, world;    /* rank in the job and its size */
    double start_s;     /* the job loads this long (and LOAD_S more) from the first tick, then steps */
    double step_s;      /* the rank's seconds a step (starved: one step a data cycle) */
    double wait_share;  /* share of a step's seconds spent waiting for data */
    double duty;        /* starved: busy share of its data cycle */
    double oom_s;       /* leak: seconds from a process's first step to its OOM */
    double ckpt_every_s, ckpt_s; /* steps ckpt_every_s, then checkpoints ckpt_s, again; 0: never */
    double hang_at_s;   /* hang: every rank stops stepping this long after its first step; 0: never */
    double crash_every_s; /* restart: every rank dies after stepping this long, restarts and
                           * repeats the same steps (it never reached a checkpoint); 0: never */
    double flops_token; /* model FLOPs per token the rank declares (bf16) */
    double peak_flops;  /* its GPU's peak dense bf16 FLOP/s (the model table) */
};

struct gp_sim_plan {
    unsigned ngpus, njobs;
    struct gp_sim_slot *slots; /* ngpus, frame order (node by node, GPU by GPU) */
    unsigned nfaults;
    struct gp_sim_fault faults[GP_SIM_FAULT__COUNT];
};

/*
 * Builds the plan of spec for seed. faults: NULL or "" for the seeded
 * plan (one of each fault where it fits, on distinct nodes where the
 * fleet has nine or more); else an override (gp_sim_faults_parse) that
 * replaces it. Fills *out (caller frees with gp_sim_plan_free). GP_OK;
 * GP_EUSAGE when the override does not fit the spec (no such node or GPU,
 * a straggler or powercap without at least two peers, ECC on a card
 * without ECC, a hang or crash loop sharing its job with another fault);
 * GP_ENOMEM.
 */
int gp_sim_plan_build(const struct gp_sim_spec *spec, uint64_t seed, const char *faults,
                      struct gp_sim_plan *out, char *err, size_t errlen);
void gp_sim_plan_free(struct gp_sim_plan *p); /* accepts a zeroed plan */

/* Formats job number k as "sim-job-<k>" into out. */
void gp_sim_job_name(char *out, size_t outlen, unsigned k);

/*
 * Writes the ground truth as JSON to out: {"spec", "seed", "faults":
 * [{"kind", "node", "gpu", "job", "rank", "expect": [...], "allow":
 * [...]}], "jobs": [{"job", "node", "gpus"}]}. Returns GP_OK or GP_EIO.
 */
int gp_sim_plan_truth_json(const struct gp_sim_plan *p, const struct gp_sim_spec *spec,
                           const char *spec_text, uint64_t seed, FILE *out);

/*
 * The whole path from configuration: parses spec_text, builds the plan
 * and writes the truth to path ("-": stdout). GP_OK, GP_EUSAGE, GP_EIO or
 * GP_ENOMEM with err set.
 */
int gp_sim_write_truth(const char *spec_text, uint64_t seed, const char *faults, const char *path,
                       char *err, size_t errlen);

#endif
