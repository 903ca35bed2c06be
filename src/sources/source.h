/*
 * source.h - the one interface every sampling source implements.
 *
 * A source is a small ops table (nvtop's vendor table): open probes and
 * prepares, sample appends this tick's readings to the frame, close
 * releases. The rest of the agent never knows which vendor it talks to.
 * Sources are listed in one explicit table (sources.c), not registered
 * by constructors.
 *
 * Every host path a source reads is built from a configurable root, so
 * tests run a source against a fake /proc or /sys tree.
 */
#ifndef GP_SOURCE_H
#define GP_SOURCE_H

#include "frame.h"

struct gp_steps_record; /* steps_proto.h */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gp_source_config {
    const char *proc_root;    /* "/proc" */
    const char *sysfs_root;   /* "/sys" */
    const char *nvml_library; /* NULL or "": libnvidia-ml.so.1 through the loader */
    const char *simulate;     /* --simulate spec, NULL when off */
    const char *simulate_faults; /* simulate: fault plan override (simulate_plan.h); NULL: seeded */
    const char *hostname;     /* this host's name */
    uint64_t seed;            /* simulate: same seed, same series */
    int64_t interval_ms;      /* sampling interval */
    bool gpm;                 /* NVML GPM (profiling metrics) on Hopper+ */
    bool all_processes;       /* procfs: read every process each tick, not only GPU process trees */
    const char *steps_socket; /* steps: path of the step datagram socket; NULL or "": none */
    unsigned steps_socket_mode; /* steps: the socket file's mode; 0: 0666 */
    const char *steps_socket_group; /* steps: the socket file's group, a name or a gid; NULL or "": as created */
    const char *flight_recorder_dir; /* steps: PyTorch Flight Recorder dumps (flightrec.h); NULL or "": none */
    /* steps: the socket is gpulse run's own (per job): a sender counts when
     * it is root, of gpulse run's uid, or in the tree of a follow pid */
    bool steps_per_job;
    /* steps: called from the socket's receiver thread for every good
     * record with the sender's pid (from the kernel), e.g. by `gpulse run`
     * to see each step; r is valid only during the call. NULL: none. */
    void (*step_observer)(void *ctx, uint32_t pid, const struct gp_steps_record *r);
    void *step_observer_ctx;
    const uint32_t *follow;   /* procfs: pids followed with their descendants besides the GPU */
    size_t nfollow;           /*   processes (gpulse run's child); the array outlives the source */
};

struct gp_source_ops {
    const char *name;
    enum gp_source_id id;
    /*
     * Probes and prepares. Returns GP_OK with *state set; GP_ENODEV when
     * there is nothing for this source on this machine (no driver, no
     * card: the agent says so once and goes on without it); any other
     * code is a failure described in err.
     */
    int (*open)(const struct gp_source_config *cfg, void **state, char *err, size_t errlen);
    /*
     * Appends this tick's readings to f. Problems that lose one reading
     * (a process that exited mid-read, a garbled file, a lost GPU) are
     * counted in *errors and skipped; the return value is GP_OK unless the
     * whole source broke.
     */
    int (*sample)(void *state, struct gp_frame *f, unsigned *errors);
    void (*close)(void *state); /* accepts NULL */
};

extern const struct gp_source_ops gp_source_nvml;
extern const struct gp_source_ops gp_source_amdgpu;
extern const struct gp_source_ops gp_source_procfs;
extern const struct gp_source_ops gp_source_simulate;
extern const struct gp_source_ops gp_source_steps;
extern const struct gp_source_ops gp_source_jobs;

#endif
