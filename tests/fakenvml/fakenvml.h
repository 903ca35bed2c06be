/*
 * fakenvml.h - the stand-in libnvidia-ml.so.1: its own NVML ABI and its
 * scenario model.
 *
 * Two parts:
 *  - the NVML types the fake exports functions for, declared here
 *    independently of src/sources/nvml_abi.h (on purpose: a wrong offset
 *    in either declaration shows up as a wrong value in the tests), with
 *    their own _Static_asserts;
 *  - the scenario model (scenario.c): simulated GPUs and MIG instances,
 *    a timeline of changes keyed by milliseconds since nvmlInit, fault
 *    injection, and a virtual clock that tests can move forward.
 *
 * Test-only code: it is never linked into gpulse.
 */
#ifndef FAKENVML_H
#define FAKENVML_H

#include <stddef.h>
#include <stdint.h>

/* ---- NVML ABI (independent declaration) ---- */
typedef int nvmlReturn_t;
#define FK_SUCCESS 0
#define FK_E_UNINITIALIZED 1
#define FK_E_INVALID_ARGUMENT 2
#define FK_E_NOT_SUPPORTED 3
#define FK_E_NOT_FOUND 6
#define FK_E_INSUFFICIENT_SIZE 7
#define FK_E_TIMEOUT 10
#define FK_E_FUNCTION_NOT_FOUND 13
#define FK_E_GPU_IS_LOST 15
#define FK_E_MEMORY 20
#define FK_E_ARGUMENT_VERSION_MISMATCH 25
#define FK_E_UNKNOWN 999

typedef struct fk_dev *nvmlDevice_t;
typedef struct fk_evset *nvmlEventSet_t;
typedef struct fk_gpm_sample *nvmlGpmSample_t;

typedef struct {
    char busIdLegacy[16];
    unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
    unsigned version;
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
typedef struct {
    unsigned gpu, memory;
} nvmlUtilization_t;
typedef struct {
    unsigned pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;
typedef struct {
    unsigned pid;
    unsigned long long usedGpuMemory;
    unsigned gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;
typedef struct { /* what 535.43-535.86 wrote from _v3 */
    unsigned pid;
    unsigned long long usedGpuMemory;
    unsigned gpuInstanceId, computeInstanceId;
    unsigned long long usedGpuCcProtectedMemory;
} fk_procinfo_r535_t;
typedef struct {
    unsigned pid;
    unsigned long long timeStamp;
    unsigned smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;
typedef union {
    double dVal;
    int siVal;
    unsigned uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    long long sllVal;
    unsigned short usVal;
} nvmlValue_t;
typedef struct {
    unsigned fieldId, scopeId;
    long long timestamp, latencyUsec;
    int valueType; /* nvmlValueType_t */
    nvmlReturn_t nvmlReturn;
    nvmlValue_t value;
} nvmlFieldValue_t;
typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType, eventData;
    unsigned gpuInstanceId, computeInstanceId;
} nvmlEventData_t;
typedef struct { /* the pre-_v2 event data: no instance ids */
    nvmlDevice_t device;
    unsigned long long eventType, eventData;
} fk_eventdata_v1_t;
typedef struct {
    unsigned version, isSupportedDevice;
} nvmlGpmSupport_t;
typedef struct {
    unsigned metricId;
    nvmlReturn_t nvmlReturn;
    double value;
    struct {
        char *shortName, *longName, *unit;
    } metricInfo;
} nvmlGpmMetric_t;
#define FK_GPM_METRIC_MAX 333
typedef struct {
    unsigned version, numMetrics;
    nvmlGpmSample_t sample1, sample2;
    nvmlGpmMetric_t metrics[FK_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

_Static_assert(sizeof(nvmlPciInfo_t) == 68, "fake nvmlPciInfo_t");
_Static_assert(offsetof(nvmlPciInfo_t, busId) == 36, "fake busId");
_Static_assert(sizeof(nvmlMemory_t) == 24, "fake nvmlMemory_t");
_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "fake nvmlMemory_v2_t");
_Static_assert(offsetof(nvmlMemory_v2_t, reserved) == 16, "fake Memory_v2.reserved");
_Static_assert(offsetof(nvmlMemory_v2_t, used) == 32, "fake Memory_v2.used");
_Static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "fake ProcessInfo v1");
_Static_assert(sizeof(nvmlProcessInfo_t) == 24, "fake ProcessInfo v2");
_Static_assert(sizeof(fk_procinfo_r535_t) == 32, "fake ProcessInfo r535");
_Static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32, "fake ProcessUtilizationSample");
_Static_assert(offsetof(nvmlProcessUtilizationSample_t, smUtil) == 16, "fake sample.smUtil");
_Static_assert(sizeof(nvmlFieldValue_t) == 40, "fake FieldValue");
_Static_assert(offsetof(nvmlFieldValue_t, nvmlReturn) == 28, "fake FieldValue.nvmlReturn");
_Static_assert(offsetof(nvmlFieldValue_t, value) == 32, "fake FieldValue.value");
_Static_assert(sizeof(nvmlEventData_t) == 32, "fake EventData");
_Static_assert(sizeof(fk_eventdata_v1_t) == 24, "fake EventData v1");
_Static_assert(sizeof(nvmlGpmSupport_t) == 8, "fake GpmSupport");
_Static_assert(sizeof(nvmlGpmMetric_t) == 40, "fake GpmMetric");
_Static_assert(offsetof(nvmlGpmMetricsGet_t, metrics) == 24, "fake GpmMetricsGet.metrics");
_Static_assert(sizeof(nvmlGpmMetricsGet_t) == 24 + 40 * 333, "fake GpmMetricsGet");

#define FK_MEMORY_V2_VERSION 0x02000028u

/* ---- scenario model ---- */

/* Integer readings of a device, named as in the scenario file. */
#define FK_KEYS(X)                                                                          \
    X(MINOR, "minor") X(MEM_TOTAL, "mem_total") X(MEM_USED, "mem_used")                     \
    X(MEM_RESERVED, "mem_reserved") X(UTIL_GPU, "util_gpu") X(UTIL_MEM, "util_mem")         \
    X(ENC, "enc") X(DEC, "dec") X(TEMP, "temp") X(MEM_TEMP, "mem_temp") X(POWER, "power")   \
    X(POWER_LIMIT, "power_limit") X(ENERGY, "energy") X(CLOCK_SM, "clock_sm")               \
    X(CLOCK_MEM, "clock_mem") X(CLOCK_SM_MAX, "clock_sm_max")                               \
    X(CLOCK_MEM_MAX, "clock_mem_max") X(CLOCK_EVENTS, "clock_events") X(PCIE_TX, "pcie_tx") \
    X(PCIE_RX, "pcie_rx") X(PCIE_REPLAY, "pcie_replay")                                     \
    X(VIOLATION_POWER, "violation_power") X(VIOLATION_THERMAL, "violation_thermal")         \
    X(FAN, "fan") X(ECC_SBE_VOL, "ecc_sbe_vol") X(ECC_DBE_VOL, "ecc_dbe_vol")               \
    X(ECC_SBE_AGG, "ecc_sbe_agg") X(ECC_DBE_AGG, "ecc_dbe_agg")                             \
    X(RETIRED_SBE, "retired_sbe") X(RETIRED_DBE, "retired_dbe")                             \
    X(RETIRED_PENDING, "retired_pending") X(REMAP_COR, "remap_cor")                         \
    X(REMAP_UNC, "remap_unc") X(REMAP_PENDING, "remap_pending")                             \
    X(REMAP_FAILURE, "remap_failure") X(MIG_MODE, "mig_mode") X(GI, "gi")                   \
    X(PCIE_GEN, "pcie_gen") X(PCIE_GEN_MAX, "pcie_gen_max") X(PCIE_WIDTH, "pcie_width")     \
    X(PCIE_WIDTH_MAX, "pcie_width_max")

enum fk_key {
#define FK_KEY_ENUM_(id, name) FK_##id,
    FK_KEYS(FK_KEY_ENUM_)
#undef FK_KEY_ENUM_
    FK__NKEYS
};

#define FK_MAX_GPUS 32
#define FK_MAX_MIGS 32
#define FK_MAX_MIG_SLOTS 7
#define FK_MAX_PROCS 64
#define FK_MAX_FAILS 32
#define FK_GPM_IDS 334
#define FK_NAME_LEN 96
#define FK_EVQ 256

struct fk_proc {
    unsigned pid;
    unsigned long long mem;
    unsigned sm, memutil;
};

struct fk_fail {
    char name[64]; /* an NVML function name, or "fieldN" for one field value */
    int code;
};

struct fk_dev {
    unsigned magic;
    int is_mig;
    int index;  /* gpu index, or MIG slot */
    int parent; /* MIG: parent gpu index */
    char name[FK_NAME_LEN], uuid[FK_NAME_LEN], bus[32];
    unsigned long long val[FK__NKEYS];
    int lost;
    int gpm;
    unsigned char gpm_has[FK_GPM_IDS];
    unsigned short gpm_ids[FK_GPM_IDS]; /* the ids with gpm_has set, so a sample is cheap */
    unsigned ngpm_ids;
    double gpm_val[FK_GPM_IDS]; /* rate: percent or MiB/s */
    double gpm_acc[FK_GPM_IDS]; /* integral of the rate over seconds */
    long long gpm_t_ns;         /* time gpm_acc is integrated up to */
    unsigned nprocs;
    struct fk_proc procs[FK_MAX_PROCS];
    unsigned nfails;
    struct fk_fail fails[FK_MAX_FAILS];
    struct fk_evset *evset;
    unsigned long long evmask;
};

#define FK_MAX_TOK 10
#define FK_TOK_LEN 96

struct fk_event {
    long long at_ms;
    unsigned line;
    int ntok;
    char tok[FK_MAX_TOK][FK_TOK_LEN];
};

struct fk_scenario {
    char driver[80];
    unsigned cuda;     /* nvmlSystemGetCudaDriverVersion: 12040 = 12.4 */
    int init_error;
    int no_ecc_fields; /* `ecc_fields absent`: a driver whose field values lack ids 3-6, 29-31, 142-145 */
    unsigned ngpus, nmigs;
    struct fk_dev gpus[FK_MAX_GPUS];
    struct fk_dev migs[FK_MAX_MIGS];
    unsigned nfails; /* global faults: any device, and non-device calls */
    struct fk_fail fails[FK_MAX_FAILS];
    unsigned nev, next_ev;
    struct fk_event *ev; /* sorted by at_ms, stable */
};

struct fk_evset {
    unsigned magic;
    unsigned head, tail;
    nvmlEventData_t q[FK_EVQ];
};

struct fk_gpm_sample {
    unsigned magic;
    struct fk_dev *dev;
    long long t_ns;
    double acc[FK_GPM_IDS];
};

#define FK_DEV_MAGIC 0x4e564d4cu
#define FK_EVSET_MAGIC 0x45565354u
#define FK_GPM_MAGIC 0x47504d53u

/*
 * Parses scenario text into *s (zeroed by the caller). Returns 0, or -1
 * with a message "line N: ..." in err. The caller frees with
 * fk_scenario_free. Never reads past len.
 */
int fk_scenario_parse(struct fk_scenario *s, const char *text, size_t len, char *err, size_t errlen);
void fk_scenario_free(struct fk_scenario *s);

/*
 * Applies every timeline event due at or before now_ns (nanoseconds since
 * nvmlInit), integrating GPM counters up to each event's time, then up to
 * now_ns.
 */
void fk_scenario_advance(struct fk_scenario *s, long long now_ns);

/* Finds a device by scenario address; NULL if absent. */
struct fk_dev *fk_scenario_gpu(struct fk_scenario *s, int idx);
struct fk_dev *fk_scenario_mig(struct fk_scenario *s, int parent, int slot);

/* Integrates a device's GPM counters up to t_ns. */
void fk_gpm_integrate(struct fk_dev *d, long long t_ns);

/* Pushes an event to the device's event set if it registered for type. */
void fk_event_push(struct fk_dev *d, unsigned long long type, unsigned long long data);

#endif
