/*
 * nvml_abi.h - gpulse's own declaration of the part of the NVML ABI it uses.
 *
 * No nvml.h exists on the build machines (Debian main carries none), so,
 * as nvtop does, gpulse declares the types, constants and function-pointer
 * types itself and resolves every symbol with dlsym at run time. Layouts
 * follow NVML's header exactly (reference/nvml-prometheus-details.md,
 * section A); every struct size and the offsets that matter are pinned by
 * _Static_assert so a slip fails the build instead of corrupting memory.
 * The stand-in library under tests/fakenvml declares the same ABI on its
 * own, so a mistake in one declaration is caught by the other.
 *
 * Types use NVML's own names (nvml*) so call sites read like NVML code;
 * this header is private to src/sources/nvml*.c.
 */
#ifndef GP_NVML_ABI_H
#define GP_NVML_ABI_H

#include <stddef.h>

typedef int nvmlReturn_t; /* an enum in nvml.h: always 4 bytes, unknown values possible */

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_UNKNOWN = 999,
};

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;

#define NVML_STRUCT_VERSION(size, ver) ((unsigned int)(size) | ((unsigned int)(ver) << 24U))

#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
#define NVML_VALUE_NOT_AVAILABLE 0xFFFFFFFFFFFFFFFFull

/* nvmlPciInfo_t as the _v3 call fills it; older calls fill only a prefix. */
typedef struct {
    char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef struct {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used; /* v1: reserved + allocated */
} nvmlMemory_t;

typedef struct {
    unsigned int version; /* nvmlMemory_v2 = 0x02000028, NOT 2 */
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;
#define nvmlMemory_v2 NVML_STRUCT_VERSION(sizeof(nvmlMemory_v2_t), 2)

typedef struct {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;

/* Process info of the plain call (v1) and of _v2/_v3 (v2). */
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;

/* What drivers 535.43-535.86 write from _v3 (32-byte stride, no version bump). */
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
    unsigned long long usedGpuCcProtectedMemory;
} nvmlProcessInfo_r535_t;

typedef struct {
    unsigned int pid;
    unsigned long long timeStamp; /* CPU microseconds */
    unsigned int smUtil;
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

typedef enum {
    NVML_VALUE_TYPE_DOUBLE = 0,
    NVML_VALUE_TYPE_UNSIGNED_INT = 1,
    NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
    NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
    NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
    NVML_VALUE_TYPE_SIGNED_INT = 5,
    NVML_VALUE_TYPE_UNSIGNED_SHORT = 6,
} nvmlValueType_t;

typedef union {
    double dVal;
    int siVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    signed long long sllVal;
    unsigned short usVal;
} nvmlValue_t;

typedef struct {
    unsigned int fieldId;
    unsigned int scopeId;
    long long timestamp;
    long long latencyUsec;
    nvmlValueType_t valueType;
    nvmlReturn_t nvmlReturn;
    nvmlValue_t value;
} nvmlFieldValue_t;

/* Field ids gpulse asks for. */
enum {
    NVML_FI_DEV_ECC_SBE_VOL_TOTAL = 3,
    NVML_FI_DEV_ECC_DBE_VOL_TOTAL = 4,
    NVML_FI_DEV_ECC_SBE_AGG_TOTAL = 5,
    NVML_FI_DEV_ECC_DBE_AGG_TOTAL = 6,
    NVML_FI_DEV_RETIRED_SBE = 29,
    NVML_FI_DEV_RETIRED_DBE = 30,
    NVML_FI_DEV_RETIRED_PENDING = 31,
    NVML_FI_DEV_PERF_POLICY_POWER = 74,   /* ns */
    NVML_FI_DEV_PERF_POLICY_THERMAL = 75, /* ns */
    NVML_FI_DEV_MEMORY_TEMP = 82,
    NVML_FI_DEV_PCIE_REPLAY_COUNTER = 94,
    NVML_FI_DEV_REMAPPED_COR = 142,
    NVML_FI_DEV_REMAPPED_UNC = 143,
    NVML_FI_DEV_REMAPPED_PENDING = 144,
    NVML_FI_DEV_REMAPPED_FAILURE = 145,
    NVML_FI_DEV_PCIE_COUNT_TX_BYTES = 197,
    NVML_FI_DEV_PCIE_COUNT_RX_BYTES = 198,
};

enum { NVML_TEMPERATURE_GPU = 0 };
enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_CLOCK_VIDEO = 3 };
enum { NVML_DEVICE_MIG_DISABLE = 0, NVML_DEVICE_MIG_ENABLE = 1 };
/* nvmlMemoryErrorType_t, nvmlEccCounterType_t (nvmlDeviceGetTotalEccErrors). */
enum { NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
enum { NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1 };
/* nvmlPageRetirementCause_t (nvmlDeviceGetRetiredPages). */
enum {
    NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
    NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1,
};
/* nvmlEnableState_t (nvmlDeviceGetRetiredPagesPendingStatus). */
enum { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 };

#define nvmlEventTypeSingleBitEccError 0x1ull
#define nvmlEventTypeDoubleBitEccError 0x2ull
#define nvmlEventTypeXidCriticalError 0x8ull

typedef struct {
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData; /* the XID for XidCriticalError; 999 = unknown */
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlEventData_t;

/* GPM (Hopper+). Versions are the raw 1, unlike every other NVML struct. */
#define NVML_GPM_SUPPORT_VERSION 1
#define NVML_GPM_METRICS_GET_VERSION 1
#define NVML_GPM_METRIC_MAX 333 /* the largest header's value (98 -> 210 -> 333) */

typedef struct {
    unsigned int version;
    unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

typedef struct {
    unsigned int metricId;
    nvmlReturn_t nvmlReturn;
    double value;
    struct {
        char *shortName;
        char *longName;
        char *unit;
    } metricInfo;
} nvmlGpmMetric_t;

typedef struct {
    unsigned int version;
    unsigned int numMetrics;
    nvmlGpmSample_t sample1;
    nvmlGpmSample_t sample2;
    nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

enum {
    NVML_GPM_METRIC_GRAPHICS_UTIL = 1,
    NVML_GPM_METRIC_SM_UTIL = 2,
    NVML_GPM_METRIC_SM_OCCUPANCY = 3,
    NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,
    NVML_GPM_METRIC_HMMA_TENSOR_UTIL = 7,
    NVML_GPM_METRIC_DRAM_BW_UTIL = 10,
    NVML_GPM_METRIC_FP64_UTIL = 11,
    NVML_GPM_METRIC_FP32_UTIL = 12,
    NVML_GPM_METRIC_FP16_UTIL = 13,
    NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20, /* MiB/s */
    NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21,
    NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC = 60,
    NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC = 61,
};

/* ABI pins (reference A.12, x86-64 / LP64). */
_Static_assert(sizeof(nvmlReturn_t) == 4, "nvmlReturn_t");
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t size");
_Static_assert(offsetof(nvmlPciInfo_t, domain) == 16, "nvmlPciInfo_t.domain");
_Static_assert(offsetof(nvmlPciInfo_t, pciSubSystemId) == 32, "nvmlPciInfo_t.pciSubSystemId");
_Static_assert(offsetof(nvmlPciInfo_t, busId) == 36, "nvmlPciInfo_t.busId");
_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t");
_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t size");
_Static_assert(offsetof(nvmlMemory_v2_t, total) == 8, "nvmlMemory_v2_t.total");
_Static_assert(offsetof(nvmlMemory_v2_t, reserved) == 16, "nvmlMemory_v2_t.reserved");
_Static_assert(offsetof(nvmlMemory_v2_t, free) == 24, "nvmlMemory_v2_t.free");
_Static_assert(offsetof(nvmlMemory_v2_t, used) == 32, "nvmlMemory_v2_t.used");
_Static_assert(nvmlMemory_v2 == 0x02000028u, "nvmlMemory_v2 version word");
_Static_assert(sizeof(nvmlUtilization_t) == 8, "nvmlUtilization_t");
_Static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "nvmlProcessInfo_v1_t");
_Static_assert(sizeof(nvmlProcessInfo_v2_t) == 24, "nvmlProcessInfo_v2_t");
_Static_assert(offsetof(nvmlProcessInfo_v2_t, usedGpuMemory) == 8, "ProcessInfo.usedGpuMemory");
_Static_assert(offsetof(nvmlProcessInfo_v2_t, gpuInstanceId) == 16, "ProcessInfo.gpuInstanceId");
_Static_assert(sizeof(nvmlProcessInfo_r535_t) == 32, "nvmlProcessInfo_r535_t");
_Static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32, "ProcessUtilizationSample");
_Static_assert(offsetof(nvmlProcessUtilizationSample_t, timeStamp) == 8, "Sample.timeStamp");
_Static_assert(offsetof(nvmlProcessUtilizationSample_t, smUtil) == 16, "Sample.smUtil");
_Static_assert(offsetof(nvmlProcessUtilizationSample_t, decUtil) == 28, "Sample.decUtil");
_Static_assert(sizeof(nvmlValue_t) == 8, "nvmlValue_t");
_Static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t size");
_Static_assert(offsetof(nvmlFieldValue_t, timestamp) == 8, "FieldValue.timestamp");
_Static_assert(offsetof(nvmlFieldValue_t, valueType) == 24, "FieldValue.valueType");
_Static_assert(offsetof(nvmlFieldValue_t, nvmlReturn) == 28, "FieldValue.nvmlReturn");
_Static_assert(offsetof(nvmlFieldValue_t, value) == 32, "FieldValue.value");
_Static_assert(sizeof(nvmlEventData_t) == 32, "nvmlEventData_t size");
_Static_assert(offsetof(nvmlEventData_t, eventData) == 16, "EventData.eventData");
_Static_assert(offsetof(nvmlEventData_t, gpuInstanceId) == 24, "EventData.gpuInstanceId");
_Static_assert(sizeof(nvmlGpmSupport_t) == 8, "nvmlGpmSupport_t");
_Static_assert(sizeof(nvmlGpmMetric_t) == 40, "nvmlGpmMetric_t size");
_Static_assert(offsetof(nvmlGpmMetric_t, value) == 8, "GpmMetric.value");
_Static_assert(offsetof(nvmlGpmMetric_t, metricInfo) == 16, "GpmMetric.metricInfo");
_Static_assert(offsetof(nvmlGpmMetricsGet_t, sample1) == 8, "GpmMetricsGet.sample1");
_Static_assert(offsetof(nvmlGpmMetricsGet_t, metrics) == 24, "GpmMetricsGet.metrics");
_Static_assert(sizeof(nvmlGpmMetricsGet_t) == 13344, "GpmMetricsGet with 333 metrics");

/* Function-pointer types, one per signature shape. */
typedef nvmlReturn_t (*nvml_void_fn)(void);
typedef const char *(*nvml_errstr_fn)(nvmlReturn_t);
typedef nvmlReturn_t (*nvml_str_fn)(char *, unsigned int);
typedef nvmlReturn_t (*nvml_uintp_fn)(unsigned int *);
typedef nvmlReturn_t (*nvml_intp_fn)(int *);
typedef nvmlReturn_t (*nvml_handle_fn)(unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*nvml_dev_str_fn)(nvmlDevice_t, char *, unsigned int);
typedef nvmlReturn_t (*nvml_dev_pci_fn)(nvmlDevice_t, nvmlPciInfo_t *);
typedef nvmlReturn_t (*nvml_dev_uint_fn)(nvmlDevice_t, unsigned int *);
typedef nvmlReturn_t (*nvml_dev_ull_fn)(nvmlDevice_t, unsigned long long *);
typedef nvmlReturn_t (*nvml_dev_uint2_fn)(nvmlDevice_t, unsigned int *, unsigned int *);
typedef nvmlReturn_t (*nvml_dev_enum_uint_fn)(nvmlDevice_t, int, unsigned int *);
typedef nvmlReturn_t (*nvml_dev_mem_fn)(nvmlDevice_t, nvmlMemory_t *);
typedef nvmlReturn_t (*nvml_dev_mem2_fn)(nvmlDevice_t, nvmlMemory_v2_t *);
typedef nvmlReturn_t (*nvml_dev_util_fn)(nvmlDevice_t, nvmlUtilization_t *);
typedef nvmlReturn_t (*nvml_dev_fields_fn)(nvmlDevice_t, int, nvmlFieldValue_t *);
/* The dedicated ECC calls, for drivers whose field values lack the ids.
 * Enum parameters are C enums (int-sized), in NVML's argument order. */
typedef nvmlReturn_t (*nvml_dev_ecc_total_fn)(nvmlDevice_t, int errorType, int counterType,
                                              unsigned long long *eccCounts);
typedef nvmlReturn_t (*nvml_dev_retired_fn)(nvmlDevice_t, int cause, unsigned int *pageCount,
                                            unsigned long long *addresses);
typedef nvmlReturn_t (*nvml_dev_retired_pending_fn)(nvmlDevice_t, int *isPending);
typedef nvmlReturn_t (*nvml_dev_remapped_fn)(nvmlDevice_t, unsigned int *corrRows,
                                             unsigned int *uncRows, unsigned int *isPending,
                                             unsigned int *failureOccurred);
typedef nvmlReturn_t (*nvml_dev_procs_fn)(nvmlDevice_t, unsigned int *, void *);
typedef nvmlReturn_t (*nvml_dev_putil_fn)(nvmlDevice_t, nvmlProcessUtilizationSample_t *,
                                          unsigned int *, unsigned long long);
typedef nvmlReturn_t (*nvml_dev_idx_handle_fn)(nvmlDevice_t, unsigned int, nvmlDevice_t *);
typedef nvmlReturn_t (*nvml_evset_create_fn)(nvmlEventSet_t *);
typedef nvmlReturn_t (*nvml_evset_free_fn)(nvmlEventSet_t);
typedef nvmlReturn_t (*nvml_register_fn)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
typedef nvmlReturn_t (*nvml_evwait_fn)(nvmlEventSet_t, nvmlEventData_t *, unsigned int);
typedef nvmlReturn_t (*nvml_gpm_support_fn)(nvmlDevice_t, nvmlGpmSupport_t *);
typedef nvmlReturn_t (*nvml_gpm_alloc_fn)(nvmlGpmSample_t *);
typedef nvmlReturn_t (*nvml_gpm_free_fn)(nvmlGpmSample_t);
typedef nvmlReturn_t (*nvml_gpm_get_fn)(nvmlDevice_t, nvmlGpmSample_t);
typedef nvmlReturn_t (*nvml_gpm_metrics_fn)(nvmlGpmMetricsGet_t *);

#endif
