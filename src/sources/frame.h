/*
 * frame.h - one sampling tick: everything the sources saw, in one struct.
 *
 * Sources fill a frame; the agent's outputs (/metrics text, the JSON
 * snapshot, later remote write) only read it. A frame is reused from tick
 * to tick: gp_frame_reset() forgets the contents but keeps every array's
 * memory, so a steady-state tick allocates nothing.
 *
 * "Unsupported" is a state, not 0: every GPU reading has a validity bit,
 * cleared when the GPU is added to the frame and set together with the
 * value. Outputs emit only valid readings.
 *
 * GP_GPU_FIELDS is the single table of per-GPU readings: the source fills
 * them by id, the exposition names them from it, and the docs are tested
 * against it. Values are stored in the unit the metric is exposed in
 * (dcgm-exporter's MiB, MHz, W, mJ, %; ratios 0-1; gpulse's base units).
 */
#ifndef GP_FRAME_H
#define GP_FRAME_H

#include "lib/gpumodels.h"

#include <stdbool.h>
#include <stdint.h>

/* X(id, metric name, type, help) -- type is GAUGE or COUNTER. */
#define GP_GPU_FIELDS(X)                                                                          \
    X(SM_CLOCK, "DCGM_FI_DEV_SM_CLOCK", GAUGE, "SM clock frequency (in MHz).")                      \
    X(MEM_CLOCK, "DCGM_FI_DEV_MEM_CLOCK", GAUGE, "Memory clock frequency (in MHz).")                \
    X(GPU_TEMP, "DCGM_FI_DEV_GPU_TEMP", GAUGE, "GPU temperature (in C).")                           \
    X(MEMORY_TEMP, "DCGM_FI_DEV_MEMORY_TEMP", GAUGE, "Memory temperature (in C).")                  \
    X(POWER_USAGE, "DCGM_FI_DEV_POWER_USAGE", GAUGE, "Power draw (in W).")                          \
    X(TOTAL_ENERGY, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", COUNTER,                                \
      "Total energy consumption since boot (in mJ).")                                               \
    X(PCIE_REPLAY, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", COUNTER, "Total number of PCIe retries.")     \
    X(GPU_UTIL, "DCGM_FI_DEV_GPU_UTIL", GAUGE, "GPU utilization (in %).")                           \
    X(MEM_COPY_UTIL, "DCGM_FI_DEV_MEM_COPY_UTIL", GAUGE, "Memory utilization (in %).")              \
    X(ENC_UTIL, "DCGM_FI_DEV_ENC_UTIL", GAUGE, "Encoder utilization (in %).")                       \
    X(DEC_UTIL, "DCGM_FI_DEV_DEC_UTIL", GAUGE, "Decoder utilization (in %).")                       \
    X(XID_ERRORS, "DCGM_FI_DEV_XID_ERRORS", GAUGE, "Value of the last XID error encountered.")      \
    X(FB_FREE, "DCGM_FI_DEV_FB_FREE", GAUGE, "Frame buffer memory free (in MiB).")                  \
    X(FB_USED, "DCGM_FI_DEV_FB_USED", GAUGE, "Frame buffer memory used (in MiB).")                  \
    X(FB_RESERVED, "DCGM_FI_DEV_FB_RESERVED", GAUGE, "Frame buffer memory reserved (in MiB).")      \
    X(ECC_SBE_VOL, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", COUNTER,                                        \
      "Total number of single-bit volatile ECC errors.")                                            \
    X(ECC_DBE_VOL, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", COUNTER,                                        \
      "Total number of double-bit volatile ECC errors.")                                            \
    X(ECC_SBE_AGG, "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", COUNTER,                                        \
      "Total number of single-bit persistent ECC errors.")                                          \
    X(ECC_DBE_AGG, "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", COUNTER,                                        \
      "Total number of double-bit persistent ECC errors.")                                          \
    X(RETIRED_SBE, "DCGM_FI_DEV_RETIRED_SBE", COUNTER,                                              \
      "Total number of retired pages due to single-bit errors.")                                    \
    X(RETIRED_DBE, "DCGM_FI_DEV_RETIRED_DBE", COUNTER,                                              \
      "Total number of retired pages due to double-bit errors.")                                    \
    X(RETIRED_PENDING, "DCGM_FI_DEV_RETIRED_PENDING", COUNTER,                                      \
      "Total number of pages pending retirement.")                                                  \
    X(REMAP_UNC, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", COUNTER,                                \
      "Number of remapped rows for uncorrectable errors.")                                          \
    X(REMAP_COR, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", COUNTER,                                  \
      "Number of remapped rows for correctable errors.")                                            \
    X(REMAP_FAILURE, "DCGM_FI_DEV_ROW_REMAP_FAILURE", GAUGE,                                        \
      "Whether remapping of rows has failed.")                                                      \
    X(REMAP_PENDING, "DCGM_FI_DEV_ROW_REMAP_PENDING", GAUGE,                                        \
      "Whether remapping of rows is pending (a GPU reset applies it).")                             \
    X(PCIE_LINK_GEN, "DCGM_FI_DEV_PCIE_LINK_GEN", GAUGE, "PCIe current link generation.")          \
    X(PCIE_MAX_LINK_GEN, "DCGM_FI_DEV_PCIE_MAX_LINK_GEN", GAUGE, "PCIe max link generation.")      \
    X(PCIE_LINK_WIDTH, "DCGM_FI_DEV_PCIE_LINK_WIDTH", GAUGE, "PCIe current link width.")           \
    X(PCIE_MAX_LINK_WIDTH, "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", GAUGE, "PCIe max link width.")       \
    X(POWER_VIOLATION, "DCGM_FI_DEV_POWER_VIOLATION", COUNTER,                                      \
      "Throttling duration due to power constraints (in us).")                                      \
    X(THERMAL_VIOLATION, "DCGM_FI_DEV_THERMAL_VIOLATION", COUNTER,                                  \
      "Throttling duration due to thermal constraints (in us).")                                    \
    X(PROF_GR_ACTIVE, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", GAUGE,                                       \
      "Ratio of time the graphics engine is active.")                                               \
    X(PROF_SM_ACTIVE, "DCGM_FI_PROF_SM_ACTIVE", GAUGE,                                              \
      "The ratio of cycles an SM has at least 1 warp assigned.")                                    \
    X(PROF_SM_OCCUPANCY, "DCGM_FI_PROF_SM_OCCUPANCY", GAUGE,                                        \
      "The ratio of number of warps resident on an SM.")                                            \
    X(PROF_TENSOR, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", GAUGE,                                        \
      "Ratio of cycles any tensor pipe is active.")                                                 \
    X(PROF_DRAM, "DCGM_FI_PROF_DRAM_ACTIVE", GAUGE,                                                 \
      "Ratio of cycles the device memory interface is active sending or receiving data.")           \
    X(PROF_FP64, "DCGM_FI_PROF_PIPE_FP64_ACTIVE", GAUGE, "Ratio of cycles the fp64 pipes are active.") \
    X(PROF_FP32, "DCGM_FI_PROF_PIPE_FP32_ACTIVE", GAUGE, "Ratio of cycles the fp32 pipes are active.") \
    X(PROF_FP16, "DCGM_FI_PROF_PIPE_FP16_ACTIVE", GAUGE, "Ratio of cycles the fp16 pipes are active.") \
    X(PROF_PCIE_TX, "DCGM_FI_PROF_PCIE_TX_BYTES", GAUGE,                                            \
      "The rate of data transmitted over the PCIe bus - including both protocol headers and data "  \
      "payloads - in bytes per second.")                                                            \
    X(PROF_PCIE_RX, "DCGM_FI_PROF_PCIE_RX_BYTES", GAUGE,                                            \
      "The rate of data received over the PCIe bus - including both protocol headers and data "     \
      "payloads - in bytes per second.")                                                            \
    X(PROF_NVLINK_TX, "DCGM_FI_PROF_NVLINK_TX_BYTES", GAUGE,                                        \
      "The rate of data transmitted over NVLink, not including protocol headers, in bytes per "     \
      "second.")                                                                                    \
    X(PROF_NVLINK_RX, "DCGM_FI_PROF_NVLINK_RX_BYTES", GAUGE,                                        \
      "The rate of data received over NVLink, not including protocol headers, in bytes per "        \
      "second.")                                                                                    \
    X(TENSOR_HMMA, "gpulse_gpu_tensor_hmma_ratio", GAUGE,                                           \
      "Ratio of cycles the HMMA (fp16/bf16) tensor pipe is active.")                                \
    X(MEMORY_TOTAL, "gpulse_gpu_memory_total_bytes", GAUGE, "Total GPU memory.")                    \
    X(MEMORY_USED, "gpulse_gpu_memory_used_bytes", GAUGE,                                           \
      "GPU memory used (excluding driver-reserved memory where the driver reports it).")            \
    X(POWER_LIMIT, "gpulse_gpu_power_limit_watts", GAUGE, "Enforced power limit.")                  \
    X(SM_CLOCK_MAX, "gpulse_gpu_sm_clock_max_hertz", GAUGE, "Maximum SM clock.")                    \
    X(MEM_CLOCK_MAX, "gpulse_gpu_memory_clock_max_hertz", GAUGE, "Maximum memory clock.")          \
    X(PCIE_TX_TOTAL, "gpulse_gpu_pcie_transmit_bytes_total", COUNTER,                               \
      "Bytes transmitted over PCIe (may wrap on the driver side).")                                 \
    X(PCIE_RX_TOTAL, "gpulse_gpu_pcie_receive_bytes_total", COUNTER,                                \
      "Bytes received over PCIe (may wrap on the driver side).")                                    \
    X(FAN_SPEED, "gpulse_gpu_fan_speed_ratio", GAUGE, "Intended fan speed as a ratio of maximum.")  \
    X(MIG_MODE, "gpulse_gpu_mig_mode", GAUGE, "1 when MIG mode is enabled on the GPU.")

enum gp_gpu_field {
#define GP_FIELD_ENUM_(id, name, type, help) GPF_##id,
    GP_GPU_FIELDS(GP_FIELD_ENUM_)
#undef GP_FIELD_ENUM_
    GPF__COUNT
};

#define GP_VALID_WORDS ((GPF__COUNT + 63) / 64)

enum gp_metric_type { GP_GAUGE, GP_COUNTER };

struct gp_gpu_field_info {
    const char *name;
    enum gp_metric_type type;
    const char *help;
};
extern const struct gp_gpu_field_info gp_gpu_fields[GPF__COUNT];

/* enum gp_vendor lives with the model table (lib/gpumodels.h). */
const char *gp_vendor_name(enum gp_vendor v);

/* Clock-event (throttle) reasons: NVML's bit values, dcgm-exporter's names. */
#define GP_CLOCK_EVENTS(X)              \
    X(0x1, "gpu_idle")                  \
    X(0x4, "sw_power_cap")              \
    X(0x8, "hw_slowdown")               \
    X(0x10, "sync_boost")               \
    X(0x20, "sw_thermal_slowdown")      \
    X(0x40, "hw_thermal_slowdown")      \
    X(0x80, "hw_power_brake_slowdown")  \
    X(0x100, "display_clock_setting")

#define GP_MAX_XIDS 16

struct gp_xid_count {
    uint32_t xid;
    uint64_t count; /* events seen since the agent started */
};

/* A process holding memory or running on one GPU. */
struct gp_gpu_proc {
    uint32_t pid;
    bool mem_valid, util_valid;
    uint64_t mem_bytes;
    double sm_util;  /* percent, 0-100, over the last sample period */
    double mem_util; /* percent */
};

struct gp_gpu {
    /* identity: labels of every series of this GPU */
    enum gp_vendor vendor;
    unsigned index;        /* "gpu" label: NVML index, or DRM card number */
    char uuid[96];
    char pci_bus_id[32];   /* "00000000:18:00.0" */
    char device[32];       /* "nvidia0", "card0" */
    char model[96];        /* "NVIDIA H100 80GB HBM3" */
    char driver[80];
    int cuda_version;      /* the driver's CUDA version, 12040 = 12.4; 0 unknown */
    char node[64];         /* host name of a simulated node; "" = this host */
    bool simulated;
    int mig_gi;            /* MIG GPU instance id, -1 when not a MIG instance */
    char mig_profile[32];

    bool lost;             /* fell off the bus: no readings, gpulse_gpu_lost 1 */

    /* readings of this tick */
    double val[GPF__COUNT];
    uint64_t valid[GP_VALID_WORDS];
    bool clock_events_valid;
    uint64_t clock_events; /* GP_CLOCK_EVENTS bits */
    unsigned nxids;        /* cumulative per-XID counts, kept by the source */
    struct gp_xid_count xids[GP_MAX_XIDS];

    unsigned nprocs, cap_procs;
    struct gp_gpu_proc *procs;

    /* The job whose processes hold the most memory on this GPU (index
     * into the frame's jobs, set by the jobs source; -1: none). Its job
     * and rank label every series of the GPU. */
    int job_idx;
};

static inline void gp_gpu_set(struct gp_gpu *g, enum gp_gpu_field f, double v)
{
    g->val[f] = v;
    g->valid[f / 64] |= 1ull << (f % 64);
}

static inline bool gp_gpu_has(const struct gp_gpu *g, enum gp_gpu_field f)
{
    return (g->valid[f / 64] >> (f % 64)) & 1u;
}

/* Host CPU time per mode, as the "cpu" line of /proc/stat. */
#define GP_CPU_MODES(X) \
    X(USER, "user") X(NICE, "nice") X(SYSTEM, "system") X(IDLE, "idle") X(IOWAIT, "iowait") \
    X(IRQ, "irq") X(SOFTIRQ, "softirq") X(STEAL, "steal")

enum gp_cpu_mode {
#define GP_CPU_ENUM_(id, name) GP_CPU_##id,
    GP_CPU_MODES(GP_CPU_ENUM_)
#undef GP_CPU_ENUM_
    GP_CPU__COUNT
};

/* Host memory kinds: (id, label value, /proc/meminfo key). */
#define GP_MEM_KINDS(X)                                                                  \
    X(TOTAL, "total", "MemTotal") X(FREE, "free", "MemFree")                              \
    X(AVAILABLE, "available", "MemAvailable") X(BUFFERS, "buffers", "Buffers")            \
    X(CACHED, "cached", "Cached") X(SHMEM, "shmem", "Shmem") X(DIRTY, "dirty", "Dirty")   \
    X(SWAP_TOTAL, "swap_total", "SwapTotal") X(SWAP_FREE, "swap_free", "SwapFree")        \
    X(HUGEPAGES_TOTAL, "hugepages_total", "HugePages_Total")

enum gp_mem_kind {
#define GP_MEM_ENUM_(id, label, key) GP_MEM_##id,
    GP_MEM_KINDS(GP_MEM_ENUM_)
#undef GP_MEM_ENUM_
    GP_MEM__COUNT
};

enum gp_psi_resource { GP_PSI_CPU, GP_PSI_MEMORY, GP_PSI_IO, GP_PSI__COUNT };
enum gp_psi_kind { GP_PSI_SOME, GP_PSI_FULL, GP_PSI_KIND__COUNT };

struct gp_host {
    bool cpu_valid;
    unsigned ncpus;
    double cpu_seconds[GP_CPU__COUNT];
    uint32_t mem_valid;              /* bit per gp_mem_kind */
    uint64_t mem_bytes[GP_MEM__COUNT];
    uint8_t psi_valid[GP_PSI__COUNT]; /* bit per gp_psi_kind */
    double psi_seconds[GP_PSI__COUNT][GP_PSI_KIND__COUNT];
    bool load_valid;
    double load[3];                  /* 1, 5, 15 minutes */
};

/*
 * Job identity (DESIGN.md "Jobs"). A process belongs to a job named, in
 * this order, by: gpulse run's id (GPULSE_RUN_ID), GPULSE_JOB, Slurm
 * (SLURM_JOB_ID), torchelastic (TORCHELASTIC_RUN_ID), the Kubernetes pod
 * of its cgroup, its parent's job, else its process group. The scheme
 * says which rule named it; it is the "scheme" label of gpulse_job_info.
 */
#define GP_JOB_SCHEMES(X)                                                                   \
    X(NONE, "none") X(RUN, "gpulse_run") X(ENV, "gpulse_job") X(SLURM, "slurm")            \
    X(TORCHELASTIC, "torchelastic") X(KUBERNETES, "kubernetes") X(PGID, "process_group")

enum gp_job_scheme {
#define GP_JOB_SCHEME_ENUM_(id, name) GP_JOB_##id,
    GP_JOB_SCHEMES(GP_JOB_SCHEME_ENUM_)
#undef GP_JOB_SCHEME_ENUM_
    GP_JOB__COUNT
};
extern const char *const gp_job_scheme_names[GP_JOB__COUNT];

#define GP_JOB_LEN 128

struct gp_job_id {
    char job[GP_JOB_LEN];   /* "" (scheme NONE): no job */
    int32_t rank;           /* -1 when unknown */
    int32_t local_rank;     /* -1 when unknown */
    int32_t world_size;     /* -1 when unknown */
    uint8_t scheme;         /* enum gp_job_scheme */
};

/* One host process. */
struct gp_proc {
    uint32_t pid, ppid, uid;
    char comm[32];
    char state;
    uint32_t threads;
    double utime_s, stime_s;
    double start_time_s;   /* seconds since the epoch */
    uint64_t rss_bytes;
    uint64_t vsize_bytes;
    bool io_valid;         /* /proc/PID/io needs privileges */
    uint64_t io_read_bytes, io_write_bytes;
    uint32_t pgid;         /* process group, field 5 of /proc/PID/stat */
    bool followed;         /* on a GPU, a root to follow, or a descendant of one */
    struct gp_job_id jid;  /* own environment or cgroup (procfs); inherited by the jobs source */
};

/*
 * One job (or one rank of it) on this node: the processes that share a
 * gp_job_id, summed by the jobs source after procfs. CPU time counts the
 * processes that have exited too, so it never goes down.
 */
struct gp_job {
    struct gp_job_id id;
    char node[64];            /* host of a simulated job (simulate source); "": this host */
    double start_time_s;      /* earliest start of its processes, epoch seconds */
    unsigned nprocs;          /* live processes in the tree */
    double cpu_seconds;       /* user + system, live and exited processes */
    uint64_t rss_bytes;       /* resident memory of the live processes */
    unsigned ngpus;           /* GPUs where it holds memory or runs */
    bool gpu_mem_valid, sm_valid;
    uint64_t gpu_memory_bytes; /* summed over its processes and GPUs */
    double sm_ratio;          /* its processes' SM share summed over GPUs (2 busy GPUs: 2) */
};

/* Allocator statistics a training process reported for one device. */
#define GP_STEP_DEVICES 16
struct gp_step_alloc {
    int32_t device;           /* the framework's device index */
    uint64_t allocated, reserved, peak; /* bytes */
};

/*
 * What one process has reported over the step socket since it started
 * reporting (the steps source). Totals are cumulative counters.
 */
#define GP_STEP_PHASES 3 /* checkpoint, evaluation, other */

struct gp_step_stats {
    uint32_t pid;             /* the sender, from SCM_CREDENTIALS */
    uint32_t uid;             /* the sender's uid, from SCM_CREDENTIALS (0: root, or simulated) */
    char node[64];            /* host of a simulated rank (simulate source); "": this host */
    struct gp_job_id jid;     /* the sender's job (jobs source), else what the client named */
    uint64_t steps_total;     /* step records received */
    uint64_t last_step;       /* the caller's own step number */
    double step_seconds_total;
    double last_step_seconds;
    bool data_wait_valid;
    double data_wait_seconds_total;
    bool samples_valid, tokens_valid; /* some step record carried samples= / tokens= */
    double samples_total, tokens_total;
    bool loss_valid;
    double loss;              /* the last loss reported */
    uint64_t target_steps;    /* steps the job means to run; 0: not said */
    /* the model record (MFU): FLOPs per token (6·N from a parameter
     * count) and per sample, 0 when not said; its precision
     * (enum gp_precision) */
    double model_flops_token, model_flops_sample;
    int model_precision;
    int64_t last_ms;          /* wall clock of the last record */
    uint64_t lost_total;      /* records lost: unsent by the client, or missing by sequence */
    unsigned nalloc;
    struct gp_step_alloc alloc[GP_STEP_DEVICES];
    bool client_job;          /* jid came from the client's meta/end record (no job of its own yet) */
    bool ended;               /* an `end` record came; kept 5 minutes after */
    bool exit_status_valid;
    int32_t exit_status;      /* from `end status=` */
    double end_time_s;        /* epoch seconds: `end t=`, else when the agent received it */
    /* PyTorch Flight Recorder dumps of its rank (flightrec.h), set per tick */
    bool fr_missing_valid, fr_waiting_valid;
    int64_t fr_missing;       /* the collective it never entered while others wait in it */
    int64_t fr_waiting;       /* the collective it entered and waits in */
    bool phase_valid;         /* some `phase` record came */
    double phase_seconds_total[GP_STEP_PHASES]; /* by enum gp_steps_phase (steps_proto.h) */
};

#define GP_STEPS_NREFUSED 3 /* reasons of gp_steps_self.refused */

/* The steps source's own counters, cumulative since it opened. */
struct gp_steps_self {
    uint64_t datagrams;       /* datagrams received */
    uint64_t records;         /* good records */
    uint64_t malformed;       /* records (or oversized datagrams) dropped as malformed */
    /* good records refused because the sender may not speak for the job,
     * by reason (steps_trust.h, GP_STEPS_REFUSALS order) */
    uint64_t refused[GP_STEPS_NREFUSED];
};

/* Source ids: index of per-source counters in the frame. */
#define GP_SOURCES(X) X(NVML, "nvml") X(AMDGPU, "amdgpu") X(PROCFS, "procfs") X(SIMULATE, "simulate") \
    X(STEPS, "steps") X(JOBS, "jobs")

enum gp_source_id {
#define GP_SRC_ENUM_(id, name) GP_SRC_##id,
    GP_SOURCES(GP_SRC_ENUM_)
#undef GP_SRC_ENUM_
    GP_SRC__COUNT
};

struct gp_source_stat {
    bool active;           /* opened and sampling */
    uint64_t errors_total; /* cumulative */
    double duration_s;     /* last sample() */
};

struct gp_frame {
    uint64_t seq;          /* tick number, from 1 */
    int64_t time_ms;       /* wall clock at the start of the tick */
    double tick_duration_s;
    char hostname[256];

    unsigned ngpus, cap_gpus;
    struct gp_gpu *gpus;

    unsigned nprocs, cap_procs;
    struct gp_proc *procs;

    struct gp_host host;
    struct gp_source_stat src[GP_SRC__COUNT];

    /* pids procfs follows (with their descendants) besides the GPU
     * processes: step reporters, gpulse run's child. Filled by the
     * sources that sample before procfs. */
    unsigned nroots, cap_roots;
    uint32_t *roots;

    unsigned nsteps, cap_steps;  /* one per reporting process, by pid */
    struct gp_step_stats *steps;
    struct gp_steps_self steps_self; /* set by the steps source each tick */

    unsigned njobs, cap_jobs;    /* one per job id (job + rank) on this node */
    unsigned nsim_jobs;          /* the first nsim_jobs are simulated (simulate source): the
                                  * jobs source keeps them and their GPUs' job_idx */
    struct gp_job *jobs;
};

/* Label values of the enums above, shared by every output. */
struct gp_clock_event_name {
    uint64_t bit;
    const char *name;
};
extern const struct gp_clock_event_name gp_clock_event_names[];
extern const unsigned gp_clock_event_count;
extern const char *const gp_cpu_mode_names[GP_CPU__COUNT];
extern const char *const gp_mem_kind_names[GP_MEM__COUNT];
extern const char *const gp_psi_resource_names[GP_PSI__COUNT];
extern const char *const gp_psi_kind_names[GP_PSI_KIND__COUNT];
extern const char *const gp_source_names[GP_SRC__COUNT];

void gp_frame_init(struct gp_frame *f);
void gp_frame_free(struct gp_frame *f); /* accepts a zeroed frame */
/* Forgets GPUs, processes and host readings; keeps memory and source stats. */
void gp_frame_reset(struct gp_frame *f);
/* Appends a cleared GPU (no valid readings, mig_gi -1). NULL when out of memory. */
struct gp_gpu *gp_frame_add_gpu(struct gp_frame *f);
/* Appends a zeroed process. NULL when out of memory. */
struct gp_proc *gp_frame_add_proc(struct gp_frame *f);
/* Appends a zeroed per-GPU process. NULL when out of memory. */
struct gp_gpu_proc *gp_gpu_add_proc(struct gp_gpu *g);
/* Appends a pid to follow. GP_OK or GP_ENOMEM. */
int gp_frame_add_root(struct gp_frame *f, uint32_t pid);
/* Appends a zeroed step record / job. NULL when out of memory. */
struct gp_step_stats *gp_frame_add_steps(struct gp_frame *f);
struct gp_job *gp_frame_add_job(struct gp_frame *f);
/* Finds a host process by pid (binary search: procs are sorted by pid
 * after gp_frame_sort_procs()). NULL if absent. */
const struct gp_proc *gp_frame_find_proc(const struct gp_frame *f, uint32_t pid);
void gp_frame_sort_procs(struct gp_frame *f);
/* Copies the whole content of src into dst (dst's memory reused). */
int gp_frame_copy(struct gp_frame *dst, const struct gp_frame *src);

#endif
