/*
 * nvml_int.h - internals shared by the NVIDIA source's two files.
 *
 * nvml.c loads the library, resolves symbols, enumerates devices (GPUs
 * and MIG instances), owns the event set and GPM samples, and drives a
 * tick; nvml_read.c reads one device's readings and processes into a
 * frame GPU. Names with the gp_nvml__ prefix are private to these files.
 */
#ifndef GP_NVML_INT_H
#define GP_NVML_INT_H

#include "frame.h"
#include "nvml_abi.h"

#include <stdbool.h>
#include <stdint.h>

/* Every NVML entry point gpulse uses; NULL = absent from this library. */
struct gp_nvml_syms {
    nvml_void_fn init, shutdown;
    nvml_errstr_fn error_string;
    nvml_str_fn driver_version;
    nvml_intp_fn cuda_version;
    nvml_uintp_fn count;
    nvml_handle_fn handle;
    nvml_dev_str_fn name, uuid;
    nvml_dev_uint_fn minor;
    nvml_dev_pci_fn pci;
    int pci_ver; /* 3, 2 or 1: which layout pci fills */
    nvml_dev_mem2_fn mem2;
    nvml_dev_mem_fn mem1;
    nvml_dev_util_fn util;
    nvml_dev_uint2_fn enc, dec;
    nvml_dev_enum_uint_fn temp, clock, max_clock;
    nvml_dev_uint_fn power, power_limit, fan;
    nvml_dev_uint_fn pcie_gen, pcie_gen_max, pcie_width, pcie_width_max;
    nvml_dev_ull_fn energy, clock_events;
    nvml_dev_fields_fn fields;
    nvml_dev_ecc_total_fn ecc_total;
    nvml_dev_retired_fn retired;
    nvml_dev_retired_pending_fn retired_pending;
    nvml_dev_remapped_fn remapped;
    nvml_dev_uint2_fn mig_mode;
    nvml_dev_uint_fn max_mig, gi_id;
    nvml_dev_idx_handle_fn mig_handle;
    nvml_dev_procs_fn procs;
    int procs_ver; /* 3, 2 (24-byte entries) or 1 (16-byte entries) */
    nvml_dev_putil_fn proc_util;
    nvml_evset_create_fn ev_create;
    nvml_evset_free_fn ev_free;
    nvml_register_fn ev_register;
    nvml_evwait_fn ev_wait;
    nvml_gpm_support_fn gpm_support;
    nvml_gpm_alloc_fn gpm_alloc;
    nvml_gpm_free_fn gpm_free;
    nvml_gpm_get_fn gpm_get;
    nvml_gpm_metrics_fn gpm_metrics;
};

/* Calls whose NOT_SUPPORTED answer is remembered per device. */
enum gp_nvml_call {
    GP_NC_UTIL, GP_NC_ENC, GP_NC_DEC, GP_NC_MEM2, GP_NC_MEM1, GP_NC_TEMP, GP_NC_POWER,
    GP_NC_PLIMIT, GP_NC_ENERGY, GP_NC_CLK_SM, GP_NC_CLK_MEM, GP_NC_CLKMAX_SM, GP_NC_CLKMAX_MEM,
    GP_NC_EVENTS, GP_NC_FAN, GP_NC_FIELDS, GP_NC_PROCS, GP_NC_PUTIL, GP_NC_GPM,
    GP_NC_ECC, GP_NC_RETIRED, GP_NC_RETIRED_PENDING, GP_NC_REMAP, /* the slow fields' own calls */
    GP_NC_PCIE_GEN, GP_NC_PCIE_GEN_MAX, GP_NC_PCIE_WIDTH, GP_NC_PCIE_WIDTH_MAX,
    GP_NC__COUNT
};

struct gp_nvml_dev {
    nvmlDevice_t h;
    int parent;            /* index in gp_nvml.dev of the parent GPU; -1 for a GPU */
    unsigned index;        /* "gpu" label: NVML index (the parent's for MIG) */
    char uuid[96], bus[32], device[32], model[96];
    int mig_gi;
    char mig_profile[32];
    bool lost, mig_enabled;
    uint32_t unsup;        /* GP_NC_* bits answered NOT_SUPPORTED (or symbol missing) */
    uint32_t fast_unsup, slow_unsup; /* per entry of the field-value lists */
    bool said_dedicated;   /* logged that slow readings come from their own calls */
    /* slow readings carried between refreshes */
    double carry[GPF__COUNT];
    uint64_t carry_valid[GP_VALID_WORDS];
    /* XID events, cumulative since open */
    bool has_xid;
    double last_xid;
    unsigned nxids;
    struct gp_xid_count xids[GP_MAX_XIDS];
    /* GPM ping-pong */
    bool gpm_on, gpm_have_prev;
    unsigned gpm_cur;
    nvmlGpmSample_t gpm[2];
    /* processes */
    unsigned long long last_seen_ts; /* newest process-utilization sample seen */
    unsigned long long mem_total;    /* last known total, for process sanity */
};

struct gp_nvml {
    void *lib;
    char path[256];
    struct gp_nvml_syms s;
    bool inited;
    char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
    int cuda;                     /* CUDA driver API version (12040 = 12.4); 0 unknown */
    unsigned ndev, cap_dev;
    struct gp_nvml_dev *dev;
    nvmlEventSet_t evset;
    bool xid_on;
    nvmlGpmMetricsGet_t *gpm_req; /* 13 KB, reused */
    unsigned char *procbuf;       /* proc_cap entries of up to 32 bytes */
    unsigned proc_cap;
    nvmlProcessUtilizationSample_t *ubuf;
    unsigned ucap;
    int64_t last_slow_ms;
    bool slow_done, warned_stride;
};

/* Name of an NVML return code (never NULL). */
const char *gp_nvml__errstr(const struct gp_nvml *st, nvmlReturn_t rc);

/*
 * Classifies rc for device d: 0 success; 1 unsupported (remembered in
 * d->unsup when call < GP_NC__COUNT); -1 error (counted in *errors);
 * -2 the GPU is lost (d marked lost, logged once, counted).
 */
int gp_nvml__check(struct gp_nvml *st, struct gp_nvml_dev *d, nvmlReturn_t rc, int call,
                   const char *what, unsigned *errors);

/* Marks d (and a GPU's MIG instances) lost; logs and counts once. */
void gp_nvml__mark_lost(struct gp_nvml *st, struct gp_nvml_dev *d, unsigned *errors);

/* Reads every reading of d into g (slow: refresh the slow set). */
void gp_nvml__read_device(struct gp_nvml *st, struct gp_nvml_dev *d, struct gp_gpu *g, bool slow,
                          unsigned *errors);

#endif
